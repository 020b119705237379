"""The event a log monitor reports: what a line (or a traceback) means."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eagle3tui.logs.progress import ProgressUpdate


@dataclass(slots=True)
class LogEvent:
    """One classified finding in a log.

    ``line``/``end_line`` are 1-based physical lines (a traceback spans
    several). ``kind`` is fatal, benign, warning, progress or info; ``rule``
    names the rule (or a built-in detector: ``traceback``, ``eta-drift``,
    ``stalled``, ``hang-suspected``, ``quiet-but-working``, ``early-exit``).
    ``text`` is log text: untrusted, display it literally.
    """

    line: int
    end_line: int
    kind: str
    rule: str
    text: str
    worker: str | None = None
    explanation: str = ""
    action: str = ""
    progress: ProgressUpdate | None = None
    projected_s: float | None = None
    drift: float | None = None
    has_estimate: bool = False  # a stage estimate was known (JSON adds projected_s, drift)
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The ``eagle3tui classify --json`` object for this event."""
        out: dict[str, Any] = {
            "line": self.line,
            "end_line": self.end_line,
            "kind": self.kind,
            "rule": self.rule,
            "text": self.text,
            "worker": self.worker,
            "explanation": self.explanation,
        }
        p = self.progress
        if p is not None:
            out.update(
                desc=p.desc,
                n=p.n,
                total=p.total,
                elapsed_s=p.elapsed_s,
                remaining_s=p.remaining_s,
                rate=p.rate,
                unit=p.unit,
            )
            if self.has_estimate:
                out.update(projected_s=self.projected_s, drift=self.drift)
        return out
