"""GPU and disk telemetry: NVML sampling, per-stage attribution, signals.

Pure core: nothing here imports Textual (or watchdog). ``pynvml`` (package
``nvidia-ml-py``) is imported lazily by :class:`GpuSampler`, so importing
this package works on machines without the NVIDIA driver.
"""

from __future__ import annotations

from eagle3tui.gpu.attribution import OTHER, Attribution, StageUsage, attribute
from eagle3tui.gpu.disk import DiskEvent, DiskStatus, DiskWatcher
from eagle3tui.gpu.monitor import GpuMonitor, TelemetryUpdate
from eagle3tui.gpu.sampler import GpuInfo, GpuProcess, GpuSampler, GpuSnapshot
from eagle3tui.gpu.signals import GpuEvent, GpuWitness, MemoryTrend, SignalTracker

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
