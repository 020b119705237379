"""Alerts: the record of what a person should know (schema: docs/alerts.md)."""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from eagle3tui.textsafe import printable

LEVEL_ORDER = {"info": 0, "warning": 1, "critical": 2}
LEVELS = tuple(LEVEL_ORDER)
# Numbers in a log line (sizes, ranks, addresses, times): blanked for merging.
_NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\d+(?:\.\d+)?")


def level_at_least(level: str, minimum: str) -> bool:
    """True when ``level`` is as severe as ``minimum`` or more (unknown levels count as info)."""
    return LEVEL_ORDER.get(level, 0) >= LEVEL_ORDER.get(minimum, 0)


@dataclass
class Alert:
    """One alert; the JSON schema is documented in docs/alerts.md."""

    level: str
    kind: str
    message: str
    stage: str | None = None
    attempt: int | None = None
    details: dict[str, Any] = field(default_factory=dict)
    time: float = field(default_factory=time.time)
    count: int = 1

    def to_json(self) -> dict[str, Any]:
        """The alert as a JSON-ready dict (the alerts file and the notifier's stdin)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Alert:
        """Rebuild an alert read back from an alerts file; raises ValueError if it is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
            raise ValueError("not an alert object (no 'kind')")  # noqa: TRY004 - callers catch ValueError for any bad line
        details = data.get("details")
        return cls(level=str(data.get("level", "info")), kind=data["kind"],
                   message=str(data.get("message", "")),
                   stage=data.get("stage") if isinstance(data.get("stage"), str) else None,
                   attempt=data.get("attempt") if isinstance(data.get("attempt"), int) else None,
                   details=details if isinstance(details, dict) else {},
                   time=float(data.get("time") or time.time()),
                   count=int(data.get("count") or 1))

    def human(self) -> str:
        """One timestamped line for stdout; never contains control characters."""
        stamp = datetime.fromtimestamp(self.time).strftime("%Y-%m-%d %H:%M:%S")
        where = f"{self.stage}#{self.attempt}" if self.stage else "pipeline"
        if self.details.get("merged"):
            since = self.details.get("first_at")
            since_s = (datetime.fromtimestamp(since).strftime("%H:%M:%S")
                       if isinstance(since, (int, float)) else "?")
            more = f" (repeated {self.count} more times since {since_s})"
        else:
            more = f" (x{self.count})" if self.count > 1 else ""
        quote = self._quote()
        text = f"{stamp} {self.level.upper():8} {where:16} {self.kind}: {self.message}{more}{quote}"
        # Messages carry log text, which is untrusted: no escapes, no newlines.
        return printable(text)

    def _quote(self) -> str:
        # The log line behind the alert, so a person reading stdout sees the
        # error itself and not only its explanation.
        text = self.details.get("text")
        line = self.details.get("line")
        if not isinstance(text, str):
            errs = self.details.get("last_errors")
            if isinstance(errs, list) and errs and isinstance(errs[0], dict):
                text, line = errs[0].get("text"), errs[0].get("line")
        if not isinstance(text, str) or not text.strip():
            return ""
        last = [ln for ln in text.splitlines() if ln.strip()][-1].strip()
        if last in self.message:
            return ""
        if len(last) > 160:
            last = last[:157] + "..."
        return f" | line {line}: {last}" if isinstance(line, int) else f" | {last}"

    def dedup_key(self) -> tuple[Any, ...]:
        """What makes two alerts "the same" for merging: not the time, line number or figures.

        Warnings and info merge by rule and message, so a flood of different
        lines of one kind (a warning per step) still merges; a critical alert
        also keys on its log text, because two different fatal errors both
        matter, but with numbers blanked: 10,000 OOM lines that differ only in
        byte counts, ranks or addresses are one error, merged per rule per
        stage per window with a count.
        """
        rule = self.details.get("rule")
        message = self.message
        if rule is not None:
            message = _NUMBERS.sub("#", message)
        key: tuple[Any, ...] = (self.level, self.kind, self.stage, self.attempt, message, rule)
        if self.level == "critical":
            key += (_NUMBERS.sub("#", str(self.details.get("text", ""))[-500:]),)
        return key
