"""Stall and hang detection: quiet log, no progress, optional GPU witness."""

from __future__ import annotations

from dataclasses import dataclass

from eagle3tui.witness import GpuWitness

__all__ = ["GpuWitness", "StallDetector", "StallVerdict"]


@dataclass(frozen=True, slots=True)
class StallVerdict:
    """Result of a stall check: ``rule`` is stalled / hang-suspected / quiet-but-working."""

    rule: str
    kind: str
    quiet_s: float
    threshold_s: float
    message: str


class StallDetector:
    """No output and no progress for longer than ``max(k * time_per_item, floor_s)``.

    Reports once per quiet episode; any new output re-arms it. The one
    exception: "quiet but working" can still become "hang suspected" later in
    the same episode, once the GPU goes flat too (a load that finished and
    then hung must not stay hidden behind the earlier verdict).
    """

    def __init__(self, floor_s: float = 300.0, k: float = 10.0) -> None:
        self.floor_s = floor_s
        self.k = k
        self.last_activity: float | None = None
        self._reported: str | None = None

    def note_activity(self, now: float) -> None:
        """Output or progress was seen at ``now``."""
        self.last_activity = now
        self._reported = None

    def threshold(self, time_per_item: float | None) -> float:
        """Seconds of quiet that count as a stall."""
        if time_per_item and time_per_item > 0:
            return max(self.k * time_per_item, self.floor_s)
        return self.floor_s

    def check(
        self,
        now: float,
        time_per_item: float | None = None,
        gpu: GpuWitness | None = None,
        last_progress: str | None = None,
    ) -> StallVerdict | None:
        """A verdict the first time the quiet period passes the threshold."""
        if self.last_activity is None or self._reported in ("stalled", "hang-suspected"):
            return None
        quiet = now - self.last_activity
        limit = self.threshold(time_per_item)
        if quiet <= limit:
            return None
        working = gpu is not None and (gpu.busy or gpu.memory_changing)
        if self._reported == "quiet-but-working" and (gpu is None or working):
            return None
        self._reported = "stalled" if gpu is None else ("quiet-but-working" if working else "hang-suspected")
        seen = f"last progress: {last_progress}" if last_progress else "no progress seen yet"
        head = f"no output for {_fmt(quiet)} (limit {_fmt(limit)}); {seen}"
        if gpu is None:
            return StallVerdict("stalled", "warning", quiet, limit, f"Stalled: {head}.")
        if gpu.busy or gpu.memory_changing:
            return StallVerdict(
                "quiet-but-working",
                "info",
                quiet,
                limit,
                f"Quiet but working: {head}; the GPU is still busy, so it is probably computing.",
            )
        return StallVerdict(
            "hang-suspected",
            "warning",
            quiet,
            limit,
            f"Hang suspected: {head}; GPU memory and utilisation are flat too.",
        )


def _fmt(seconds: float) -> str:
    s = round(seconds)
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"
