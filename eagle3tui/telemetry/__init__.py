"""GPU and disk telemetry: NVML sampling, per-stage attribution, signals.

Pure core: nothing here imports Textual (or watchdog). ``pynvml`` (package
``nvidia-ml-py``) is imported lazily by :class:`GpuSampler`, so importing
this package works on machines without the NVIDIA driver.
"""

from __future__ import annotations

from eagle3tui.telemetry.attribution import OTHER, Attribution, StageUsage, attribute
from eagle3tui.telemetry.disk import DiskEvent, DiskStatus, DiskWatcher
from eagle3tui.telemetry.collector import GpuMonitor, TelemetryUpdate
from eagle3tui.telemetry.sampler import GpuInfo, GpuProcess, GpuSampler, GpuSnapshot
from eagle3tui.telemetry.signals import GpuEvent, GpuWitness, MemoryTrend, SignalTracker

__all__ = [
    "OTHER",
    "Attribution",
    "DiskEvent",
    "DiskStatus",
    "DiskWatcher",
    "GpuEvent",
    "GpuInfo",
    "GpuMonitor",
    "GpuProcess",
    "GpuSampler",
    "GpuSnapshot",
    "GpuWitness",
    "MemoryTrend",
    "SignalTracker",
    "StageUsage",
    "TelemetryUpdate",
    "attribute",
]
