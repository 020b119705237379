"""GPU telemetry from inside a stage that runs on another node (a Slurm job).

The driver's own sampler sees only its host. A stage submitted to Slurm runs
on a compute node, so its wrapper samples NVML there and writes one small
JSON document, the *node report*, beside the attempt's record on the shared
state directory (``runs/<stage>/<attempt>.gpu.json``), replaced atomically
every interval. The driver reads the reports of its running remote stages
and puts them in the GPU document of ``state.json`` under ``remote``; the
front ends show those GPUs under the stage, labelled with the node.

Attribution on the node is the same as on the driver's host: a GPU process
belongs to the stage when the wrapper is among its ancestors (the wrapper is
a child subreaper, so even processes that left the stage's session count).

A report never affects the stage: any failure (no NVML, no GPU, a full
disk) becomes the report's ``error`` text or is dropped.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict
from typing import Any

from eagle3tui.telemetry.attribution import Attribution, attribute
from eagle3tui.telemetry.sampler import GpuSampler, GpuSnapshot
from eagle3tui.telemetry.signals import SignalTracker, Thresholds
from eagle3tui.witness import GpuWitness

#: Environment variable naming a JSON file for the NVML stand-in
#: (:class:`eagle3tui.telemetry.fakenvml.FileNvml`): for tests and demos on
#: machines without GPUs. Unset, the real ``pynvml`` is used.
STANDIN_ENV = "EAGLE3TUI_NVML_STANDIN"

#: The name the stage's tree is attributed under on its node (the node knows one stage).
STAGE = "stage"

#: How many intervals a report may lag before front ends call it stale.
STALE_INTERVALS = 3


def nvml_from_env(env: dict[str, str] | None = None) -> Any | None:
    """The NVML object to sample with: the stand-in the environment names, else None (pynvml)."""
    path = (os.environ if env is None else env).get(STANDIN_ENV)
    if not path:
        return None
    from eagle3tui.telemetry.fakenvml import FileNvml

    return FileNvml(path)


def build_report(snap: GpuSnapshot, att: Attribution, node: str, interval: float,
                 witness: GpuWitness | None = None) -> dict[str, Any]:
    """The node report for one snapshot: the node's GPUs, what the stage (attributed
    as :data:`STAGE`) holds, and the node's testimony for the stall detector."""
    use = att.stages.get(STAGE)
    by_gpu = dict(use.bytes_by_gpu) if use else {}
    other: dict[int, int] = {}
    for p in att.other:
        other[p.gpu_index] = other.get(p.gpu_index, 0) + int(p.used_bytes or 0)
    return {
        "node": node,
        "time": snap.time,
        "interval_s": interval,
        "available": snap.available,
        "error": snap.error,
        "gpus": [asdict(g) for g in snap.gpus] if snap.available else [],
        "stage": {"gpus": sorted(by_gpu), "bytes": sum(by_gpu.values()),
                  "pids": sorted(use.pids) if use else [],
                  "bytes_by_gpu": {str(i): b for i, b in sorted(by_gpu.items())}},
        "other_bytes_by_gpu": {str(i): b for i, b in sorted(other.items())},
        "witness": None if witness is None else {"memory_changing": witness.memory_changing,
                                                 "busy": witness.busy},
    }


def witness_of(report: dict[str, Any] | None, now: float) -> GpuWitness | None:
    """The node's testimony about its stage, or None when there is none or it is stale."""
    w = (report or {}).get("witness")
    if not isinstance(w, dict) or report is None or report_is_stale(report, now):
        return None
    return GpuWitness(memory_changing=bool(w.get("memory_changing")), busy=bool(w.get("busy")))


def write_report(path: str, report: dict[str, Any]) -> None:
    """Replace ``path`` with ``report`` atomically (no fsync: a lost sample is harmless)."""
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(report, f)
    os.replace(tmp, path)


def read_report(path: str) -> dict[str, Any] | None:
    """A node report as written; None when absent or unreadable.

    A report is replaced atomically, so an unreadable one is not torn: it is
    garbage, and it is ignored like a missing one.
    """
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("time"), (int, float)):
        return None
    return doc


def report_is_stale(report: dict[str, Any], now: float) -> bool:
    """Whether the node stopped reporting (the job's node is gone or the wrapper hangs)."""
    interval = report.get("interval_s")
    interval = float(interval) if isinstance(interval, (int, float)) and interval > 0 else 2.0
    return now - float(report.get("time") or 0) > STALE_INTERVALS * interval + 5


class NodeReporter:
    """Samples this node's GPUs every ``interval`` seconds on a daemon thread
    and writes the report of ``root_pid``'s tree to ``path``."""

    def __init__(self, path: str, *, root_pid: int, node: str, interval: float = 2.0,
                 nvml: Any | None = None) -> None:
        self.path = path
        self.root_pid = root_pid
        self.node = node
        self.interval = interval
        self.sampler = GpuSampler(nvml=nvml, interval=interval, history_s=interval)
        # The same signals as the driver's own GPUs: "busy" and "memory moving" over
        # the window, judged here where the samples are.
        thresholds = Thresholds()
        self.tracker = SignalTracker(thresholds, history_s=3 * thresholds.window_s)
        self.write_error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="eagle3tui-node-report", daemon=True)

    def start(self) -> None:
        """Start reporting in the background."""
        self._thread.start()

    def stop(self) -> None:
        """Stop after the current sample (the last report stays on disk)."""
        self._stop.set()
        self._thread.join(self.interval + 5)

    def report_once(self) -> dict[str, Any]:
        """Sample, write, and return one report."""
        snap = self.sampler.sample()
        att = attribute(snap, {STAGE: self.root_pid})
        self.tracker.update(snap, att)
        report = build_report(snap, att, self.node, self.interval, self.tracker.stage_witness(STAGE))
        try:
            write_report(self.path, report)
            self.write_error = None
        except OSError as e:
            self.write_error = str(e)  # the next interval tries again
        return report

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            self.report_once()
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))
