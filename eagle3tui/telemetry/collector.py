"""One object for front ends: sample GPUs and disks, attribute, track signals.

``GpuMonitor`` runs the sampler's thread and, after each sample, attributes
GPU processes to the stages the supervisor reports, updates the signal
tracker, polls the disk watcher, and hands one ``TelemetryUpdate`` to
``on_update`` (called in the sampler thread: a TUI should post a message
from it, not touch widgets). Queries (``witness``, ``latest``) are safe from
any thread.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from eagle3tui.telemetry.attribution import Attribution, attribute
from eagle3tui.telemetry.disk import DiskEvent, DiskStatus, DiskWatcher
from eagle3tui.telemetry.sampler import GpuSampler, GpuSnapshot
from eagle3tui.telemetry.signals import (
    GpuEvent,
    GpuWitness,
    MemoryTrend,
    SignalTracker,
    Thresholds,
)

ProjectedEnd = float | dict[str, float] | None


@dataclass(frozen=True)
class TelemetryUpdate:
    """Everything one tick produced."""

    snapshot: GpuSnapshot
    attribution: Attribution
    events: list[GpuEvent] = field(default_factory=list)
    disk: list[DiskStatus] = field(default_factory=list)
    disk_events: list[DiskEvent] = field(default_factory=list)


class GpuMonitor:
    """Sampler + attribution + signals + disk, on one background thread.

    ``stage_roots()`` returns the running stages' root pids (name -> pid) and
    is called once per tick; ``projected_end()`` returns when the running
    stage is expected to end (epoch seconds, or per disk path), for the
    disk-full forecast events.
    """

    def __init__(
        self,
        *,
        stage_roots: Callable[[], dict[str, int]] = dict,
        disk_paths: Iterable[str | os.PathLike[str]] = (),
        projected_end: Callable[[], ProjectedEnd] | None = None,
        interval: float = 1.0,
        history_s: float = 600.0,
        nvml: Any | None = None,
        thresholds: Thresholds | None = None,
        on_update: Callable[[TelemetryUpdate], None] | None = None,
        disk_rescan_s: float = 10.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._stage_roots = stage_roots
        self._projected_end = projected_end
        self._on_update = on_update
        self._clock = clock
        self._disk_rescan_s = disk_rescan_s
        self._lock = threading.Lock()
        self.sampler = GpuSampler(
            nvml=nvml,
            interval=interval,
            history_s=history_s,
            clock=clock,
            on_sample=self._process,
        )
        self.tracker = SignalTracker(thresholds or Thresholds(), history_s=history_s)
        self._disk = DiskWatcher(disk_paths, rescan_s=disk_rescan_s, clock=clock)
        self._latest: TelemetryUpdate | None = None
        self.callback_error: str | None = None

    # ---------------------------------------------------------------- control

    def start(self) -> None:
        """Start sampling in the background (daemon thread)."""
        self.sampler.start()

    def stop(self) -> None:
        """Stop the background thread promptly."""
        self.sampler.stop()

    def close(self) -> None:
        """Stop and release NVML."""
        self.sampler.close()

    def tick(self) -> TelemetryUpdate:
        """One synchronous step (what the thread does each interval)."""
        return self._process(self.sampler.sample())

    def set_disk_paths(self, paths: Iterable[str | os.PathLike[str]]) -> None:
        """Watch a new set of directories (e.g. a new run's output dirs)."""
        with self._lock:
            self._disk = DiskWatcher(
                paths, rescan_s=self._disk_rescan_s, clock=self._clock
            )

    # ---------------------------------------------------------------- queries

    @property
    def latest(self) -> TelemetryUpdate | None:
        """The last update, or None before the first tick."""
        return self._latest

    def witness(self, stage: str) -> GpuWitness | None:
        """The stall detector's view of ``stage`` (None: no GPU evidence)."""
        with self._lock:
            return self.tracker.stage_witness(stage)

    def stage_trend(self, stage: str) -> MemoryTrend:
        """Memory trend of ``stage``."""
        with self._lock:
            return self.tracker.stage_trend(stage)

    # ---------------------------------------------------------------- work

    def _process(self, snap: GpuSnapshot) -> TelemetryUpdate:
        try:
            roots = dict(self._stage_roots())
        except Exception as exc:  # noqa: BLE001 (the supervisor's callback must not stop telemetry)
            self.callback_error = f"stage_roots: {type(exc).__name__}: {exc}"
            roots = {}
        att = attribute(snap, roots)
        end: ProjectedEnd = None
        if self._projected_end is not None:
            try:
                end = self._projected_end()
            except Exception as exc:  # noqa: BLE001 (as for stage_roots)
                self.callback_error = f"projected_end: {type(exc).__name__}: {exc}"
        with self._lock:
            events = self.tracker.update(snap, att)
            disk = self._disk.poll()
            disk_events = self._disk.forecast_events(disk, end)
        update = TelemetryUpdate(snap, att, events, disk, disk_events)
        self._latest = update
        if self._on_update is not None:
            try:
                self._on_update(update)
            except Exception as exc:  # noqa: BLE001 (a consumer's bug must not stop sampling)
                self.callback_error = f"on_update: {type(exc).__name__}: {exc}"
        return update


# Memory points per GPU kept in state.json for the front ends' sparklines.
HISTORY_POINTS = 48


def summarize(update: TelemetryUpdate, history: dict[int, list[float]]) -> dict[str, Any]:
    """The telemetry document the driver writes into ``state.json`` (schema: docs/gpu.md).

    It is everything a front end shows about GPUs and disks: the snapshot,
    who holds what (per stage and per GPU), the processes of no stage, the
    disk forecasts and a short memory history per GPU. Front ends read it
    and never sample NVML themselves.
    """
    doc = update.snapshot.to_dict()
    doc["stages"] = {n: {"gpus": sorted(u.gpus), "bytes": u.bytes, "pids": u.pids,
                         "bytes_by_gpu": {str(i): b for i, b in sorted(u.bytes_by_gpu.items())}}
                     for n, u in update.attribution.stages.items()}
    doc["other"] = [{"pid": p.pid, "gpu": p.gpu_index, "bytes": p.used_bytes, "cmdline": p.cmdline}
                    for p in update.attribution.other]
    doc["disk"] = [{"path": d.path, "free_bytes": d.free_bytes, "write_bps": d.write_bps,
                    "forecast": d.forecast_text()} for d in update.disk]
    doc["history"] = {str(i): [round(v) for v in pts[-HISTORY_POINTS:]]
                      for i, pts in sorted(history.items())}
    return doc


def memory_history(monitor: GpuMonitor) -> dict[int, list[float]]:
    """Per GPU, the memory used (bytes) of the last samples, oldest first."""
    latest = monitor.latest
    if latest is None:
        return {}
    return {g.index: [float(used) for _, used, _ in monitor.sampler.history(g.index)]
            for g in latest.snapshot.gpus}
