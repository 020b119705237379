"""Attribute GPU processes to pipeline stages through process trees.

A stage is known by the pid of the process the supervisor started (its
root). The processes that hold GPU memory are usually not that pid but its
children or grandchildren (a shell wrapper, vLLM's tensor-parallel
workers), so each GPU pid's parents are walked up until a stage root is met.
GPU processes that belong to no stage are reported as ``"other"`` with their
command line: someone else's job holding memory is what users need to see.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import psutil

from eagle3tui.telemetry.sampler import GpuProcess, GpuSnapshot

OTHER = "other"

# A parent chain deeper than this is a loop or a pathological tree; stop.
_MAX_DEPTH = 64

_HAVE_PROC = os.path.exists("/proc/self/stat")


@dataclass
class StageUsage:
    """GPU use of one stage in one snapshot."""

    stage: str
    root_pid: int
    gpus: list[int] = field(default_factory=list)
    bytes: int = 0
    pids: list[int] = field(default_factory=list)
    bytes_by_gpu: dict[int, int] = field(default_factory=dict)


@dataclass
class Attribution:
    """Per-stage GPU use, plus the GPU processes of no stage (``other``)."""

    time: float
    stages: dict[str, StageUsage]
    other: list[GpuProcess]
    stage_by_pid: dict[int, str]

    def stage_of(self, pid: int) -> str:
        """The stage name holding ``pid`` on a GPU, or ``"other"``."""
        return self.stage_by_pid.get(pid, OTHER)

    @property
    def other_bytes(self) -> int:
        """GPU memory held by processes of no stage."""
        return sum(p.used_bytes or 0 for p in self.other)


def _proc_ppid(pid: int) -> int | None:
    """Parent pid from /proc/<pid>/stat (Linux): one small read per level,
    about 10x cheaper than building psutil.Process objects. None when the
    pid is not visible here; raises OSError when /proc is not available."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name (field 2) may contain spaces and ')': split after the last ')'.
    fields = data[data.rindex(b")") + 2 :].split()
    return int(fields[1])


def _ancestors(pid: int) -> list[int]:
    """pid and its parents, nearest first; empty if the pid cannot be seen
    (gone, or in another PID namespace)."""
    if _HAVE_PROC:
        chain: list[int] = []
        current: int | None = pid
        while current is not None and current > 0 and len(chain) < _MAX_DEPTH:
            try:
                parent = _proc_ppid(current)
            except (OSError, ValueError, IndexError):
                break  # unreadable entry: keep what we walked so far
            if parent is None:
                break
            chain.append(current)
            current = parent
        return chain
    return _ancestors_psutil(pid)


def _ancestors_psutil(pid: int) -> list[int]:
    """Portable version of :func:`_ancestors` (macOS, BSD)."""
    chain: list[int] = []
    try:
        proc: psutil.Process | None = psutil.Process(pid)
        while proc is not None and len(chain) < _MAX_DEPTH:
            chain.append(proc.pid)
            if proc.pid <= 1:
                break
            proc = proc.parent()
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        # Gone, or in another PID namespace: keep what we walked so far.
        pass
    return chain


def attribute(snapshot: GpuSnapshot, stage_roots: dict[str, int]) -> Attribution:
    """Map each GPU process of ``snapshot`` to a stage of ``stage_roots``.

    ``stage_roots`` maps stage name to the pid of its root process. Every
    stage named there appears in the result (with 0 bytes if it holds none),
    so consumers can see a stage's memory drop to zero.
    """
    root_to_stage = {pid: name for name, pid in stage_roots.items()}
    stages = {
        name: StageUsage(stage=name, root_pid=pid) for name, pid in stage_roots.items()
    }
    other: list[GpuProcess] = []
    stage_by_pid: dict[int, str] = {}
    chain_cache: dict[int, str | None] = {}
    for proc in snapshot.processes:
        if proc.pid in chain_cache:
            stage = chain_cache[proc.pid]
        else:
            stage = None
            for ancestor in _ancestors(proc.pid) if root_to_stage else ():
                if ancestor in root_to_stage:
                    stage = root_to_stage[ancestor]
                    break
            chain_cache[proc.pid] = stage
        if stage is None:
            other.append(proc)
            continue
        stage_by_pid[proc.pid] = stage
        usage = stages[stage]
        used = proc.used_bytes or 0
        usage.bytes += used
        usage.bytes_by_gpu[proc.gpu_index] = (
            usage.bytes_by_gpu.get(proc.gpu_index, 0) + used
        )
        if proc.gpu_index not in usage.gpus:
            usage.gpus.append(proc.gpu_index)
        if proc.pid not in usage.pids:
            usage.pids.append(proc.pid)
    for usage in stages.values():
        usage.gpus.sort()
        usage.pids.sort()
    return Attribution(
        time=snapshot.time, stages=stages, other=other, stage_by_pid=stage_by_pid
    )
