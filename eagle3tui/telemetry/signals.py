"""Signals from GPU history: is memory rising (loading), flat, freed, full?

These tell a hang (memory flat, log flat) from an OOM risk (memory full, no
progress) from progress (memory rising while weights load), and a crash or
exit (the stage's memory dropped to ~0). ``GpuWitness`` is the small answer
the stall detector consumes; ``GpuEvent`` is a one-off happening for the
event log ("stage extract: GPU memory freed, 80.1 GiB -> 0 B").

"Full" is news only when memory climbs into the top of the card: a caching
allocator or vLLM's ``gpu_memory_utilization`` holds 90-97% as the normal
state of a healthy job, so a GPU that sits (or is first seen) there says
nothing. One ``memory_full`` event per episode, for the stage that holds the
GPU (or the GPU when no stage does); the next needs memory to fall below
``rearm_fraction`` first. An allocation that failed is the log's to report
(``torch.OutOfMemoryError`` is a fatal log event), not NVML's.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from eagle3tui.telemetry.attribution import Attribution
from eagle3tui.telemetry.sampler import GpuSnapshot
from eagle3tui.witness import GpuWitness

MiB = 1 << 20
GiB = 1 << 30


class MemoryTrend(str, Enum):
    """What memory has been doing over the recent window."""

    UNKNOWN = "unknown"  # fewer than two samples
    RISING = "rising"  # loading
    FLAT = "flat"
    FALLING = "falling"
    FREED = "freed"  # held a lot before, now ~0: exit, crash or explicit free
    FULL = "full"  # at or above the full fraction of the GPU: OOM risk


@dataclass(frozen=True)
class GpuEvent:
    """Something that happened, worth a line in the event log."""

    time: float
    kind: str  # "memory_freed", "memory_full", "memory_rising", "gpu_error"
    subject: str  # "stage <name>" or "GPU <index>"
    message: str
    figures: dict[str, Any] = field(default_factory=dict)


def format_bytes(n: float | None) -> str:
    """1.5 GiB style; '?' for unknown."""
    if n is None:
        return "?"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover - loop always returns


@dataclass(frozen=True)
class Thresholds:
    """Tunable limits for the signals; defaults suit multi-GiB model stages."""

    window_s: float = 20.0  # "recent" for trend and busy
    change_bytes: int = 64 * MiB  # less than this over the window is "flat"
    held_bytes: int = 512 * MiB  # a peak above this counts as "held memory"
    near_zero_bytes: int = 256 * MiB  # at or below this counts as "~0"
    full_fraction: float = 0.97  # used/total at or above this: OOM risk
    # ... and news only when memory rose this share of the card over the window to get there
    full_rise_fraction: float = 0.01
    rearm_fraction: float = 0.90  # after a full event, the next needs memory below this
    busy_pct: float = 10.0  # mean utilisation at or above this: busy


def classify_memory(
    series: Sequence[tuple[float, int]],
    total: int | None = None,
    thresholds: Thresholds = Thresholds(),
    full: bool | None = None,
) -> MemoryTrend:
    """Classify a (time, bytes) series, oldest first.

    ``total`` enables the FULL test (used / total); ``full`` overrides it
    (a stage is full when one of its GPUs is). ``FREED`` needs a peak of at
    least ``held_bytes`` somewhere in the series and a last value at or below
    ``near_zero_bytes``.
    """
    if not series:
        return MemoryTrend.UNKNOWN
    last_t, last = series[-1]
    if full is None:
        full = bool(total) and last / total >= thresholds.full_fraction  # type: ignore[operator]
    if full:
        return MemoryTrend.FULL
    peak = max(v for _, v in series)
    if peak >= thresholds.held_bytes and last <= thresholds.near_zero_bytes:
        return MemoryTrend.FREED
    if len(series) < 2:
        return MemoryTrend.UNKNOWN
    delta = last - _window_start(series, last_t - thresholds.window_s)
    if delta >= thresholds.change_bytes:
        return MemoryTrend.RISING
    if delta <= -thresholds.change_bytes:
        return MemoryTrend.FALLING
    return MemoryTrend.FLAT


def _window_start(series: Sequence[tuple[float, int]], since: float) -> int:
    """The first value at or after ``since`` (the series is short: linear)."""
    for t, v in series:
        if t >= since:
            return v
    return series[-1][1]


class SignalTracker:
    """Feeds on snapshots (and attributions) and answers trend questions.

    Call :meth:`update` once per sample; it returns the events that
    happened with that sample. Keeps its own bounded history per GPU and per
    stage, so it works with or without the sampler's ring buffer.
    """

    def __init__(
        self, thresholds: Thresholds = Thresholds(), history_s: float = 600.0
    ) -> None:
        self.thresholds = thresholds
        self.history_s = history_s
        self._gpu: dict[int, deque[tuple[float, int, float | None]]] = {}
        self._gpu_total: dict[int, int] = {}
        self._gpu_error: dict[int, str | None] = {}
        self._stage: dict[str, deque[tuple[float, int]]] = {}
        self._stage_gpus: dict[str, set[int]] = {}  # every GPU the stage ever used
        self._stage_now: dict[str, list[int]] = {}  # GPUs it uses in the last sample
        self._gpu_state: dict[int, MemoryTrend] = {}
        self._stage_state: dict[str, MemoryTrend] = {}
        self._full_told: set[int] = set()  # GPUs whose full episode was reported

    # ---------------------------------------------------------------- update

    def update(
        self, snapshot: GpuSnapshot, attribution: Attribution | None = None
    ) -> list[GpuEvent]:
        """Add one sample; returns the events it caused (transitions only)."""
        events: list[GpuEvent] = []
        if not snapshot.available:
            return events  # no evidence either way: do not invent a "freed"
        now = snapshot.time
        complete = True  # every GPU answered its process list
        filling: list[int] = []  # GPUs that climbed into the top of the card now
        for g in snapshot.gpus:
            if g.error != self._gpu_error.get(g.index) and g.error:
                events.append(GpuEvent(now, "gpu_error", f"GPU {g.index}", g.error))
            self._gpu_error[g.index] = g.error
            if g.error or g.processes_error:
                complete = False
            if g.mem_used is None:
                continue
            if g.mem_total:
                self._gpu_total[g.index] = g.mem_total
            ring = self._gpu.setdefault(g.index, deque())
            ring.append((now, g.mem_used, g.util_pct))
            self._trim(ring, now)
            events.extend(self._gpu_transition(g.index, now))
            if self._filling(g.index):
                filling.append(g.index)
        if attribution is not None and complete:
            for name, usage in attribution.stages.items():
                ring_s = self._stage.setdefault(name, deque())
                ring_s.append((now, usage.bytes))
                self._trim(ring_s, now)
                self._stage_gpus.setdefault(name, set()).update(usage.gpus)
                self._stage_now[name] = list(usage.gpus)
                events.extend(self._stage_transition(name, now))
        events.extend(self._full_events(filling, now, attribution if complete else None))
        return events

    def _filling(self, index: int) -> bool:
        """Whether GPU ``index`` climbed into the top of the card just now (news once
        per episode); a GPU below ``rearm_fraction`` may be reported again later."""
        series, total = self._gpu.get(index), self._gpu_total.get(index)
        if not series or not total:
            return False
        last_t, last = series[-1][0], series[-1][1]
        if last < self.thresholds.rearm_fraction * total:
            self._full_told.discard(index)
            return False
        if index in self._full_told or last < self.thresholds.full_fraction * total:
            return False
        start = _window_start([(t, v) for t, v, _ in series], last_t - self.thresholds.window_s)
        rise = max(self.thresholds.change_bytes, self.thresholds.full_rise_fraction * total)
        if len(series) < 2 or last - start < rise:
            return False  # sits there (a caching allocator's reserve), or first seen there
        self._full_told.add(index)
        return True

    def _full_events(self, indices: list[int], now: float,
                     attribution: Attribution | None) -> list[GpuEvent]:
        """One ``memory_full`` event per stage holding GPUs in ``indices`` (the GPU's own
        when no stage holds it): one happening is one event, never one per subject."""
        if not indices:
            return []
        by_stage: dict[str, list[int]] = {}
        unheld = list(indices)
        if attribution is not None:
            for name, usage in attribution.stages.items():
                mine = [i for i in indices if i in usage.gpus]
                if mine:
                    by_stage[name] = mine
                    unheld = [i for i in unheld if i not in mine]
        events = []
        for name, gpus in by_stage.items():
            events.append(self._full_event(now, f"stage {name}", gpus, name))
        for index in unheld:
            events.append(self._full_event(now, f"GPU {index}", [index], None))
        return events

    def _full_event(self, now: float, subject: str, gpus: list[int],
                    stage: str | None) -> GpuEvent:
        parts = []
        figures: dict[str, Any] = {"gpus": gpus}
        for index in gpus:
            last, total = self._gpu[index][-1][1], self._gpu_total[index]
            start = _window_start([(t, v) for t, v, _ in self._gpu[index]],
                                  now - self.thresholds.window_s)
            pct = 100.0 * last / total
            parts.append(f"GPU {index} {pct:.0f}% ({format_bytes(last)} of "
                         f"{format_bytes(total)}, up {format_bytes(last - start)} in "
                         f"{self.thresholds.window_s:.0f}s)")
            figures.setdefault("used_bytes", last)
            figures.setdefault("total_bytes", total)
            figures.setdefault("pct", pct)
        if stage is not None:
            figures["stage"] = stage
        return GpuEvent(now, "memory_full", subject,
                        f"{subject}: memory climbing to the limit: {'; '.join(parts)}: "
                        "out-of-memory risk", figures)

    def _trim(self, ring: deque[Any], now: float) -> None:
        horizon = now - self.history_s
        while ring and ring[0][0] < horizon:
            ring.popleft()

    def _gpu_transition(self, index: int, now: float) -> list[GpuEvent]:
        trend = self.gpu_trend(index)
        before = self._gpu_state.get(index, MemoryTrend.UNKNOWN)
        self._gpu_state[index] = trend
        if trend == before:
            return []
        series = self._gpu[index]
        last = series[-1][1]
        subject = f"GPU {index}"
        if trend == MemoryTrend.FREED:
            peak = max(v for _, v, _ in series)
            return [
                GpuEvent(
                    now,
                    "memory_freed",
                    subject,
                    f"{subject}: memory freed ({format_bytes(peak)} -> {format_bytes(last)})",
                    {"peak_bytes": peak, "now_bytes": last},
                )
            ]
        return []

    def _stage_transition(self, stage: str, now: float) -> list[GpuEvent]:
        trend = self.stage_trend(stage)
        before = self._stage_state.get(stage, MemoryTrend.UNKNOWN)
        self._stage_state[stage] = trend
        if trend == before:
            return []
        series = self._stage[stage]
        last = series[-1][1]
        subject = f"stage {stage}"
        gpus = sorted(self._stage_gpus.get(stage, ()))
        on = f" on GPU {','.join(map(str, gpus))}" if gpus else ""
        if trend == MemoryTrend.FREED:
            peak = max(v for _, v in series)
            return [
                GpuEvent(
                    now,
                    "memory_freed",
                    subject,
                    f"{subject}: GPU memory freed ({format_bytes(peak)} -> "
                    f"{format_bytes(last)}){on}",
                    {
                        "stage": stage,
                        "peak_bytes": peak,
                        "now_bytes": last,
                        "gpus": gpus,
                    },
                )
            ]
        if trend == MemoryTrend.RISING and before in (
            MemoryTrend.UNKNOWN,
            MemoryTrend.FLAT,
            MemoryTrend.FREED,
        ):
            return [
                GpuEvent(
                    now,
                    "memory_rising",
                    subject,
                    f"{subject}: GPU memory rising ({format_bytes(last)}){on}: loading",
                    {"stage": stage, "bytes": last, "gpus": gpus},
                )
            ]
        return []

    # --------------------------------------------------------------- queries

    def gpu_trend(self, index: int) -> MemoryTrend:
        """Trend of GPU ``index``'s used memory."""
        series = self._gpu.get(index)
        if not series:
            return MemoryTrend.UNKNOWN
        return classify_memory(
            [(t, v) for t, v, _ in series], self._gpu_total.get(index), self.thresholds
        )

    def stage_trend(self, stage: str) -> MemoryTrend:
        """Trend of the GPU memory attributed to ``stage``."""
        series = self._stage.get(stage)
        if not series:
            return MemoryTrend.UNKNOWN
        return classify_memory(
            list(series), thresholds=self.thresholds, full=self._stage_full(stage)
        )

    def _stage_full(self, stage: str) -> bool:
        # Only the latest point matters for "full": no need to classify the
        # GPUs' whole history again.
        for index in self._stage_now.get(stage, ()):
            series, total = self._gpu.get(index), self._gpu_total.get(index)
            if (
                series
                and total
                and series[-1][1] / total >= self.thresholds.full_fraction
            ):
                return True
        return False

    def _changing(self, series: Sequence[tuple[float, int]]) -> bool:
        if len(series) < 2:
            return False
        last_t, _last = series[-1]
        since = last_t - self.thresholds.window_s
        window = [v for t, v in series if t >= since]
        return max(window) - min(window) >= self.thresholds.change_bytes

    def _busy(self, indices: Sequence[int] | set[int]) -> bool:
        for index in indices:
            series = self._gpu.get(index)
            if not series:
                continue
            since = series[-1][0] - self.thresholds.window_s
            utils = [u for t, _, u in series if t >= since and u is not None]
            if utils and sum(utils) / len(utils) >= self.thresholds.busy_pct:
                return True
        return False

    def gpu_witness(self, index: int) -> GpuWitness | None:
        """Witness for one GPU, or None before any sample of it."""
        series = self._gpu.get(index)
        if not series:
            return None
        return GpuWitness(
            memory_changing=self._changing([(t, v) for t, v, _ in series]),
            busy=self._busy([index]),
        )

    def stage_witness(self, stage: str) -> GpuWitness | None:
        """Witness for a stage (its attributed memory and its GPUs' load), or
        None when the stage was never seen in an attribution."""
        series = self._stage.get(stage)
        if not series:
            return None
        return GpuWitness(
            memory_changing=self._changing(list(series)),
            busy=self._busy(self._stage_now.get(stage, [])),
        )

    def stage_history(self, stage: str) -> list[tuple[float, int]]:
        """(time, bytes) attributed to ``stage``, oldest first."""
        return list(self._stage.get(stage, ()))
