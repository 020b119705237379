"""The read model: one answer to "what does the pipeline look like now?".

``load_view(config)`` builds a :class:`PipelineView` from what the driver
leaves on disk: the run records, the intent, and ``state.json`` (live
figures, waiting reasons, the last GPU sample with its attribution and a short
memory history per GPU). The TUI, ``--watch`` and every CLI command ask this
one question, so they cannot disagree; none of them samples NVML or
classifies log lines of its own.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from eagle3tui.config import PipelineConfig
from eagle3tui.supervisor.lock import driver_info
from eagle3tui.supervisor.records import RunStore
from eagle3tui.supervisor.state import (
    Intent,
    StageState,
    StageStatus,
    derive_statuses,
    gpu_activity,
)
from eagle3tui.telemetry.node_report import report_is_stale
from eagle3tui.telemetry.sampler import GpuInfo

SCHEMA_VERSION = 1
_DONE = (StageState.SUCCEEDED, StageState.SKIPPED)
_GPU_FIELDS = [f.name for f in fields(GpuInfo)]


@dataclass(frozen=True)
class GpuRow(GpuInfo):
    """One GPU as the front ends show it: the sample's figures, who holds its
    memory (stage, bytes) and its recent memory use (bytes, oldest first)."""

    holders: list[tuple[str, int]] = field(default_factory=list)
    other_bytes: int = 0
    history: list[float] = field(default_factory=list)
    # A GPU of another node, reported from inside a stage's Slurm job (None: this host).
    node: str | None = None
    # The node's report is older than a few of its intervals: the figures are the last known.
    stale: bool = False
    # The last NVIDIA Xid event of this GPU (telemetry/xid.py): code, action, stage, text.
    xid: dict[str, Any] | None = None

    @property
    def label(self) -> str:
        """``3`` for this host's GPU 3, ``node7:3`` for another node's."""
        return f"{self.node}:{self.index}" if self.node else str(self.index)


@dataclass(frozen=True)
class Verdict:
    """How a set of stages ended: ``ok``, or the stages that did not succeed."""

    ok: bool
    wanted: list[str]
    not_done: list[StageStatus] = field(default_factory=list)


@dataclass
class PipelineView:
    """Everything a front end shows, read once from the state directory."""

    config: PipelineConfig
    time: float
    statuses: list[StageStatus]
    intent: Intent
    driver: dict[str, Any]
    gpu: dict[str, Any] | None
    problems: list[str]

    # -- stages ------------------------------------------------------------------------
    def stage(self, name: str) -> StageStatus:
        """The status of stage ``name`` (KeyError if there is none)."""
        for s in self.statuses:
            if s.name == name:
                return s
        raise KeyError(name)

    @property
    def driver_alive(self) -> bool:
        return bool(self.driver.get("alive"))

    @property
    def figures_stale(self) -> bool:
        """True when the live figures come from a driver that is no longer running."""
        return bool(self.driver.get("figures_stale"))

    @property
    def driver_pid(self) -> int | None:
        return self.driver.get("pid") if self.driver_alive else None

    def active(self) -> list[StageStatus]:
        return [s for s in self.statuses if s.state.active]

    def work_left(self) -> list[str]:
        """Stages still running, scheduled for a relaunch, or wanted and not blocked."""
        left = []
        for s in self.statuses:
            queued = (s.wanted and s.state in (StageState.PENDING, StageState.WAITING)
                      and "blocked" not in (s.reason or ""))
            if s.state.active or s.name in self.intent.relaunch or queued:
                left.append(s.name)
        return left

    def settled(self, names: Iterable[str]) -> bool | None:
        """For ``start --wait``: True when ``names`` all succeeded or were skipped,
        False when one failed for good (a driver settled it, no retry is queued and
        what is left is blocked by it), None while the outcome can still change."""
        sts = [self.stage(n) for n in names]
        if all(s.state in _DONE for s in sts):
            return True
        ended = [s for s in sts if s.state in (StageState.FAILED, StageState.STOPPED)]
        if ended and all(s.settled for s in ended) and not any(s.state.active for s in sts) \
                and not self.intent.relaunch:
            stuck = [s for s in sts if s.state in (StageState.PENDING, StageState.WAITING)]
            if all("blocked" in (s.reason or "") for s in stuck):
                return False
        return None

    def verdict(self) -> Verdict:
        """The wanted stages' outcome once nothing is left to do."""
        wanted = [s for s in self.statuses if s.wanted]
        bad = [s for s in wanted if s.state not in _DONE]
        return Verdict(ok=not bad, wanted=[s.name for s in wanted], not_done=bad)

    # -- GPUs ----------------------------------------------------------------------------
    def gpu_note(self) -> str | None:
        """Why there are no GPU rows (None when there are)."""
        g = self.gpu
        if g is None:
            return ("GPU: waiting for the driver's first sample…" if self.driver_alive
                    else "GPU: no driver running (figures appear while one runs)")
        if self._remote_gpu_rows():
            return None  # other nodes' GPUs are rows even when this host has none
        note = None
        if not g.get("available", False):
            note = str(g.get("error") or "NVML unavailable")
        elif not g.get("gpus"):
            note = "NVML sees no GPUs on this host"
        # A node that could not sample says why, beside this host's reason.
        remote = [f"{name} on {report.get('node') or '?'}: {report.get('error') or 'no GPUs'}"
                  for name, report in sorted((g.get("remote") or {}).items())]
        return "; ".join(([note] if note else []) + remote) or None

    def gpu_rows(self) -> list[GpuRow]:
        """One row per GPU of the driver's last sample."""
        g = self.gpu or {}
        holders: dict[int, list[tuple[str, int]]] = {}
        for name, use in (g.get("stages") or {}).items():
            for idx, b in (use.get("bytes_by_gpu") or {}).items():
                holders.setdefault(int(idx), []).append((name, int(b or 0)))
        others: dict[int, int] = {}
        for p in g.get("other") or []:
            others[int(p.get("gpu", -1))] = others.get(int(p.get("gpu", -1)), 0) + int(p.get("bytes") or 0)
        history = g.get("history") or {}
        rows = []
        for d in g.get("gpus") or []:
            idx = int(d.get("index", 0))
            figures = {k: d.get(k) for k in _GPU_FIELDS if k != "index"}
            rows.append(GpuRow(
                index=idx, **figures,
                holders=sorted(holders.get(idx, [])), other_bytes=others.get(idx, 0),
                history=[float(v) for v in history.get(str(idx), [])],
                xid=(g.get("xid") or {}).get(str(idx))))
        return rows + self._remote_gpu_rows()

    def _remote_gpu_rows(self) -> list[GpuRow]:
        """The GPUs of other nodes, from the node reports of stages running there."""
        rows = []
        for name, report in sorted(((self.gpu or {}).get("remote") or {}).items()):
            held = (report.get("stage") or {}).get("bytes_by_gpu") or {}
            others = report.get("other_bytes_by_gpu") or {}
            stale = report_is_stale(report, self.time)
            for d in report.get("gpus") or []:
                idx = int(d.get("index", 0))
                figures = {k: d.get(k) for k in _GPU_FIELDS if k != "index"}
                b = int(held.get(str(idx)) or 0)
                rows.append(GpuRow(index=idx, **figures, holders=[(name, b)] if b else [],
                                   other_bytes=int(others.get(str(idx)) or 0),
                                   node=str(report.get("node") or "?"), stale=stale))
        return rows

    def held_gpus(self) -> dict[str, str]:
        """Stage -> the GPUs it holds memory on ("0,1"), from the last sample."""
        out = {}
        for name, use in ((self.gpu or {}).get("stages") or {}).items():
            if use.get("gpus"):
                out[name] = ",".join(str(i) for i in sorted(use["gpus"]))
        for name, report in ((self.gpu or {}).get("remote") or {}).items():
            gpus = (report.get("stage") or {}).get("gpus")
            if gpus and name not in out:
                out[name] = f"{report.get('node') or '?'}:" + ",".join(str(i) for i in sorted(gpus))
        return out

    def stage_gpu_activity(self, name: str) -> dict[str, Any] | None:
        """What stage ``name``'s GPUs do now: ``{"gpus", "bytes", "util_pct"}`` or None."""
        return gpu_activity(self.gpu, name)

    def failing(self, name: str) -> dict[str, Any] | None:
        """For a failing stage: its fatal event, how long ago, and its GPUs; else None."""
        st = self.stage(name)
        fatal = (st.live or {}).get("failing")
        if st.state != StageState.FAILING or not isinstance(fatal, dict):
            return None
        at = fatal.get("at")
        return {**fatal, "ago_s": max(0.0, self.time - at) if isinstance(at, (int, float)) else None,
                "gpu": self.stage_gpu_activity(name)}

    def stage_roots(self) -> dict[str, int]:
        """Running stages' root pids, for attributing GPU processes."""
        return {s.name: s.pid for s in self.statuses if s.state.active and s.pid}

    # -- output -----------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The ``status --json`` document (schema in README: "status --json")."""
        return {
            "schema": SCHEMA_VERSION,
            "pipeline": self.config.name,
            "config": str(self.config.path),
            "state_dir": str(self.config.state_dir),
            "time": self.time,
            "driver": self.driver,
            "stages": [self._stage_json(s) for s in self.statuses],
            "gpu": self.gpu,
            "problems": list(self.problems),
        }

    def _stage_json(self, st: StageStatus) -> dict[str, Any]:
        doc = st.to_json()
        failing = self.failing(st.name)
        if failing is not None:
            doc["failing"] = failing
        return doc


def remaining_now(eta: dict[str, Any], now: float) -> float | None:
    """A live ETA's remaining seconds counted down to ``now`` between updates."""
    remaining = eta.get("remaining_s")
    if remaining is None:
        return None
    at = eta.get("at")
    return max(0.0, float(remaining) - (max(0.0, now - float(at)) if at else 0.0))


def describe_figures(figures: dict[str, Any] | None) -> str:
    """A server's live figures as a note: ``412 tok/s · 12 running · 3 queued · KV 43% · accept len 2.92 (64%)``."""
    f = figures or {}
    parts = []
    if f.get("throughput_tok_s") is not None:
        parts.append(f"{float(f['throughput_tok_s']):.0f} tok/s")
    if f.get("running_reqs") is not None:
        parts.append(f"{int(f['running_reqs'])} running")
    if f.get("queued_reqs"):
        parts.append(f"{int(f['queued_reqs'])} queued")
    if f.get("kv_usage") is not None:
        parts.append(f"KV {float(f['kv_usage']):.0%}")
    if f.get("acceptance_length") is not None:
        # Speculative decoding: mean tokens per verification step, and the draft tokens kept.
        rate = f.get("acceptance_rate")
        parts.append(f"accept len {float(f['acceptance_length']):.2f}"
                     + (f" ({float(rate):.0%})" if rate is not None else ""))
    elif f.get("acceptance_rate") is not None:
        parts.append(f"accept {float(f['acceptance_rate']):.0%}")
    return " · ".join(parts)


def read_state_file(config: PipelineConfig) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The driver's last ``state.json``: (document, per-stage live entries)."""
    try:
        data = json.loads((config.state_dir / "state.json").read_text())
    except (OSError, ValueError):
        return {}, {}
    if not isinstance(data, dict):
        return {}, {}
    stages = {s["name"]: s for s in data.get("stages", []) if isinstance(s, dict) and "name" in s}
    return data, stages


def load_view(config: PipelineConfig, store: RunStore | None = None) -> PipelineView:
    """Read the pipeline's state once: records, intent, the driver's live figures and GPUs."""
    store = store or RunStore(config.state_dir)
    doc, live = read_state_file(config)
    intent = Intent.load(config.state_dir)
    statuses = derive_statuses(config, store, intent, live)
    gpu = doc.get("gpu") if isinstance(doc.get("gpu"), dict) else None
    driver = driver_info(config.state_dir)
    if not driver.get("alive") and doc:
        # The figures (progress, ETA, GPU) are the last a now-dead driver
        # wrote: say so, with their age, rather than show them as current.
        stamp = doc.get("time")
        driver["figures_stale"] = True
        driver["figures_time"] = stamp
        for st in statuses:
            if st.live:
                st.live = dict(st.live, stale=True, as_of=stamp)
        if gpu is not None:
            gpu = dict(gpu, stale=True, as_of=stamp)
    for st in statuses:
        failing = st.live.get("failing")
        if st.state == StageState.FAILING and isinstance(failing, dict):
            # Every front end shows a failing stage with what its GPUs do.
            st.live["failing"] = {**failing, "gpu": gpu_activity(gpu, st.name)}
    return PipelineView(config=config, time=time.time(), statuses=statuses, intent=intent,
                        driver=driver, gpu=gpu, problems=list(store.problems))
