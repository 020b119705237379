"""Actual stage durations, kept in the state dir, as the default estimate."""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

from eagle3tui.atomic import atomic_write_json

HISTORY_FILE = "stage_durations.json"
_KEEP = 20  # recent runs per stage: enough for a median, small enough to adapt


class StageHistory:
    """``{stage: [seconds, ...]}`` in ``<state_dir>/stage_durations.json``."""

    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        self.path = Path(state_dir) / HISTORY_FILE

    def load(self) -> dict[str, list[float]]:
        """All recorded durations; an unreadable file counts as empty."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {
            str(k): [float(x) for x in v if isinstance(x, (int, float))]
            for k, v in data.items()
            if isinstance(v, list)
        }

    def record(self, stage: str, seconds: float) -> None:
        """Add one successful attempt's duration for ``stage``."""
        data = self.load()
        runs = data.setdefault(stage, [])
        runs.append(round(float(seconds), 3))
        data[stage] = runs[-_KEEP:]
        atomic_write_json(self.path, data)

    def median(self, stage: str) -> float | None:
        """Median recorded duration of ``stage``, or None if never recorded."""
        runs = self.load().get(stage)
        return statistics.median(runs) if runs else None

    def estimate(self, stage: str, configured: float | None) -> float | None:
        """The configured estimate if any, else the history's median."""
        return configured if configured is not None else self.median(stage)
