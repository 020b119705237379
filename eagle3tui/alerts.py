"""Alerts: what a person should know, as one JSON object per line.

``AlertLog`` appends to a JSONL file with one ``write`` + ``fsync`` per alert,
so a process killed at any moment leaves whole lines only; a torn last line
left by an earlier crash is cut off (and reported) when the log is opened.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

LEVEL_ORDER = {"info": 0, "warning": 1, "critical": 2}


@dataclass
class Alert:
    """One alert; the JSON schema is documented in the README."""

    level: str
    kind: str
    message: str
    stage: str | None = None
    attempt: int | None = None
    details: dict[str, Any] = field(default_factory=dict)
    time: float = field(default_factory=time.time)
    count: int = 1

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def human(self) -> str:
        """One timestamped line for stdout; never contains control characters."""
        stamp = datetime.fromtimestamp(self.time).strftime("%Y-%m-%d %H:%M:%S")
        where = f"{self.stage}#{self.attempt}" if self.stage else "pipeline"
        more = f" (x{self.count})" if self.count > 1 else ""
        text = f"{stamp} {self.level.upper():8} {where:16} {self.kind}: {self.message}{more}"
        return "".join(ch if ch.isprintable() else " " for ch in text)


class AlertLog:
    """Append-only, crash-safe JSONL file of alerts."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.repaired: str | None = None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._repair()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def _repair(self) -> None:
        # A torn last line (a crash mid-write on a filesystem that does not
        # make appends atomic) is cut so every remaining line parses.
        try:
            with open(self.path, "rb+") as f:
                data = f.read()
                if not data or data.endswith(b"\n"):
                    return
                cut = data.rfind(b"\n") + 1
                f.truncate(cut)
                self.repaired = (f"{self.path}: removed a partial last line of {len(data) - cut} bytes "
                                 "left by an earlier crash")
        except FileNotFoundError:
            return

    def append(self, alert: Alert) -> None:
        line = json.dumps(alert.to_json(), ensure_ascii=True, separators=(",", ":")) + "\n"
        os.write(self._fd, line.encode("ascii"))
        os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)


AlertSink = Callable[[Alert], None]


class AlertHub:
    """Fans alerts out to sinks (the alert log, stdout, a notifier...)."""

    def __init__(self) -> None:
        self.sinks: list[AlertSink] = []
        self.recent: list[Alert] = []

    def add_sink(self, sink: AlertSink) -> None:
        self.sinks.append(sink)

    def emit(self, alert: Alert) -> None:
        self.recent.append(alert)
        del self.recent[:-200]
        for sink in self.sinks:
            sink(alert)
