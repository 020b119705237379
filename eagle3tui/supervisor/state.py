"""The one state model every front end shows.

``derive_statuses`` turns the configuration, the run records and the
driver's intent into a ``StageStatus`` per stage. It reads only files, so the
CLI, ``--watch`` and the TUI get the same answer with or without a driver
alive. The driver adds live figures (progress, ETA, readiness, waiting
reasons) through ``state.json``, which ``eagle3tui.view`` overlays.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from eagle3tui.atomic import atomic_write_json
from eagle3tui.config import PipelineConfig, StageConfig, topo_order
from eagle3tui.durations import format_duration
from eagle3tui.supervisor.fingerprint import FINGERPRINT, what_changed
from eagle3tui.supervisor.procs import is_alive, signal_name
from eagle3tui.supervisor.records import RunRecord, RunStore
from eagle3tui.supervisor.slurm_state import slurm_record_state
from eagle3tui.trusted import read_trusted_json


class StageState(str, Enum):
    PENDING = "pending"
    WAITING = "waiting"
    # Launched into a scheduler's queue (Slurm) and not running yet.
    QUEUED = "queued"
    RUNNING = "running"
    STALLED = "stalled"
    # A fatal error was logged but the process is still alive (a hung
    # collective, a launcher waiting on dead ranks): not progress, not done.
    FAILING = "failing"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    STOPPED = "stopped"
    SKIPPED = "skipped"

    @property
    def terminal(self) -> bool:
        return self in (StageState.SUCCEEDED, StageState.FAILED, StageState.STOPPED,
                        StageState.SKIPPED)

    @property
    def active(self) -> bool:
        return self in (StageState.RUNNING, StageState.STALLED, StageState.FAILING,
                        StageState.QUEUED)


# ``RunRecord.stop_reason`` of a stop made by the ``on_fatal`` policy.
ON_FATAL_STOP = "on-fatal"


def on_fatal_reason(fatal: dict[str, Any]) -> str:
    """The failure reason of an attempt stopped by the ``on_fatal`` policy."""
    where = f" at line {fatal['line']}" if fatal.get("line") else ""
    rule = f" ({fatal['rule']})" if fatal.get("rule") else ""
    return f"stopped by the on_fatal policy: no progress after the fatal error{where}{rule}"


def failing_reason(failing: dict[str, Any], now: float | None = None) -> str:
    """The note of a failing stage: which fatal event, how long ago."""
    at = failing.get("at")
    ago = ""
    if isinstance(at, (int, float)):
        ago = f" {format_duration(max(0.0, (now or time.time()) - at))} ago"
    where = f"line {failing['line']}" if failing.get("line") else "the log"
    rule = f" ({failing['rule']})" if failing.get("rule") else ""
    stop_at = failing.get("stop_at")
    then = ""
    if isinstance(stop_at, (int, float)):
        then = f"; stop in {format_duration(max(0.0, stop_at - (now or time.time())))} unless it progresses"
    return f"fatal error at {where}{rule}{ago}, process still alive{then}"


def gpu_activity(gpu_doc: dict[str, Any] | None, stage: str) -> dict[str, Any] | None:
    """What the GPUs of ``stage`` are doing, from the driver's GPU document in state.json.

    ``{"gpus": [0, 1], "bytes": held, "util_pct": mean utilisation of those
    GPUs or None}``; None when the last sample attributes no GPU memory to it.
    """
    use = ((gpu_doc or {}).get("stages") or {}).get(stage)
    node = None
    devices = (gpu_doc or {}).get("gpus") or []
    if not isinstance(use, dict) or not use.get("gpus"):
        # A stage on another node: its wrapper's node report (telemetry/node_report.py).
        report = ((gpu_doc or {}).get("remote") or {}).get(stage)
        use = report.get("stage") if isinstance(report, dict) else None
        if not isinstance(use, dict) or not use.get("gpus"):
            return None
        node, devices = report.get("node"), report.get("gpus") or []
    gpus = sorted(int(i) for i in use["gpus"])
    utils = [float(d["util_pct"]) for d in devices
             if isinstance(d, dict) and d.get("index") in gpus and d.get("util_pct") is not None]
    out = {"gpus": gpus, "bytes": int(use.get("bytes") or 0),
           "util_pct": sum(utils) / len(utils) if utils else None}
    if node:
        out["node"] = node
    return out


def describe_gpu_activity(activity: dict[str, Any] | None) -> str:
    """``GPU 0,1: 70.2 GiB held, 100% busy``; "" when unknown."""
    if not activity:
        return ""
    held = f"{activity['bytes'] / (1 << 30):.1f} GiB held"
    util = activity.get("util_pct")
    busy = f", {util:.0f}% busy" if util is not None else ""
    where = f" on {activity['node']}" if activity.get("node") else ""
    return f"GPU {','.join(str(i) for i in activity['gpus'])}{where}: {held}{busy}"


SIGKILL_HINT = ("killed by SIGKILL: the kernel OOM killer is a common cause "
                "(check `dmesg | grep -i oom` or `journalctl -k`)")


@dataclass
class Intent:
    """What the user asked for, persisted by the driver (``intent.json``)."""

    wanted: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    # Launches asked for on a finished stage: stage -> {"mode": "resume" or
    # "restart", "not_before": epoch seconds, "trigger": "user" or "retry"}.
    relaunch: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Why intent.json exists but cannot be believed (unreadable, corrupt,
    # another user's): then nothing is saved over it, so a pending retry it
    # holds is kept until someone fixes the file. Never written to disk.
    problem: str | None = field(default=None, compare=False)

    @classmethod
    def load(cls, state_dir: Path) -> Intent:
        path = Path(state_dir) / "intent.json"
        try:
            data = read_trusted_json(path)
            return cls(wanted=list(data.get("wanted", [])), skipped=list(data.get("skipped", [])),
                       relaunch={k: dict(v) for k, v in data.get("relaunch", {}).items()})
        except FileNotFoundError:
            return cls()
        except (OSError, ValueError, TypeError, AttributeError) as e:
            why = str(e) if "refused" in str(e) else f"unreadable ({e})"
            return cls(problem=f"{path}: {why}. It may hold a pending retry or launch, so it is "
                               "kept as it is and nothing is launched until it can be read: fix "
                               "its permissions or content, or move it away to start with "
                               "no pending launches")

    def save(self, state_dir: Path) -> None:
        if self.problem:
            raise ValueError(self.problem)  # never replace what we could not read
        data = asdict(self)
        del data["problem"]
        atomic_write_json(state_dir / "intent.json", data)


@dataclass
class StageStatus:
    """One stage as every front end shows it."""

    name: str
    kind: str
    state: StageState
    attempt: int = 0
    run_id: str | None = None
    pid: int | None = None
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    signal: str | None = None
    resume: bool = False
    log: str = ""
    log_offset: int = 0
    log_line: int = 0  # lines before log_offset: the attempt's line numbers are the file's
    depends_on: list[str] = field(default_factory=list)
    gpus: str = "-"
    estimate_s: float | None = None
    wanted: bool = False
    ready: bool | None = None
    reason: str = ""
    hint: str = ""
    # For a failed attempt: the last error events of its log (line, rule, text).
    errors: list[dict[str, Any]] = field(default_factory=list)
    # A driver has processed the attempt's end (alerts sent, retry decided).
    settled: bool = False
    # Succeeded, but on inputs that have changed since: why ("extract was rerun
    # after it"), or "" when up to date. Run-all reruns stale stages.
    stale: str = ""
    # Succeeded, but its own settings (a --set variable, the command) or those of a
    # stage it depends on differ from what it ran with: what ("samples 40 → 400",
    # "prepare changed: samples 40 → 400"), or "". A changed stage is also stale.
    changed: str = ""
    live: dict[str, Any] = field(default_factory=dict)

    def elapsed(self, now: float | None = None) -> float | None:
        if self.started_at is None:
            return None
        end = self.ended_at if self.ended_at is not None else (now or time.time())
        return max(0.0, end - self.started_at)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["state"] = self.state.value
        return d


def record_state(rec: RunRecord, stage: StageConfig) -> tuple[StageState, str, str]:
    """The state of a stage from its latest record: (state, reason, hint)."""
    if rec.extra.get("executor") == "slurm":
        # A Slurm job: its processes are on another node, so the scheduler's
        # last word stands in for "is the pid alive" (see slurm_state.py).
        state, reason, hint = slurm_record_state(rec, stage, local_record_state)
        return StageState(state), reason, hint
    return local_record_state(rec, stage)


def local_record_state(rec: RunRecord, stage: StageConfig) -> tuple[StageState, str, str]:
    """record_state for an attempt that runs on this host."""
    if not rec.finished:
        if rec.error:
            return StageState.FAILED, rec.error, ""
        if is_alive(rec.pid, rec.create_time) or is_alive(rec.wrapper_pid, rec.wrapper_create_time):
            if rec.stop_requested_at:
                return StageState.RUNNING, "stopping", ""
            return StageState.RUNNING, "", ""
        if rec.pid is None and rec.wrapper_pid is None and time.time() - rec.launched_at < 15:
            return StageState.RUNNING, "launching", ""
        if rec.stop_requested_at:
            return StageState.STOPPED, "stopped", ""
        return (StageState.FAILED,
                "lost: the stage ended without a recorded exit code",
                "the wrapper that records exit codes was killed, or the machine rebooted")
    if rec.stop_requested_at:
        if rec.stop_reason == "no-longer-needed":
            return StageState.SUCCEEDED, "service stopped: no pending stage needs it", ""
        if rec.stop_reason == ON_FATAL_STOP:
            # The supervisor stopped a stage that was already failing: the
            # attempt failed (dependents wait, the retry policy applies).
            return StageState.FAILED, on_fatal_reason(rec.extra.get("fatal") or {}), ""
        return StageState.STOPPED, f"stopped by {rec.stop_reason or 'user'}", ""
    if rec.error:
        return StageState.FAILED, rec.error, ""
    if rec.signal is not None:
        hint = SIGKILL_HINT if rec.signal == 9 else ""
        return StageState.FAILED, f"killed by {signal_name(rec.signal)}", hint
    if rec.exit_code == 0:
        if stage.is_service:
            return StageState.FAILED, "service exited on its own (exit 0)", \
                "a service should run until the supervisor stops it"
        missing = [str(p) for p in stage.outputs if not p.exists()]
        if missing:
            return StageState.FAILED, "exit 0 but outputs are missing: " + ", ".join(missing), \
                "the stage claimed success without writing its outputs"
        return StageState.SUCCEEDED, "", ""
    return StageState.FAILED, f"exit {rec.exit_code}", ""


def derive_statuses(config: PipelineConfig, store: RunStore, intent: Intent | None = None,
                    live: dict[str, dict[str, Any]] | None = None,
                    records: dict[str, RunRecord] | None = None) -> list[StageStatus]:
    """A StageStatus for each stage, in configuration order.

    ``records``, when given, receives each stage's latest RunRecord, so a
    caller that acts on them does not read them from disk a second time.
    """
    intent = intent or Intent.load(config.state_dir)
    live = live or {}
    out = []
    for stage in config.stages:
        rec = store.latest(stage.name)
        if records is not None and rec is not None:
            records[stage.name] = rec
        st = StageStatus(
            name=stage.name, kind=stage.kind, state=StageState.PENDING,
            depends_on=list(stage.depends_on), gpus=stage.gpus.describe(),
            estimate_s=stage.estimate_s, wanted=stage.name in intent.wanted, log=str(stage.log),
        )
        if rec is not None:
            st.attempt = rec.attempt
            st.run_id = rec.run_id
            st.pid = rec.pid
            st.started_at = rec.started_at or rec.launched_at
            st.ended_at = rec.ended_at
            st.exit_code = rec.exit_code
            st.signal = signal_name(rec.signal)
            st.resume = rec.resume
            st.log = rec.log
            st.log_offset = rec.log_offset
            st.log_line = rec.log_line
            st.state, st.reason, st.hint = record_state(rec, stage)
            if st.state == StageState.FAILED:
                st.errors = list(rec.extra.get("last_errors", []))
            st.settled = bool(rec.extra.get("finalized"))
            if st.state == StageState.SUCCEEDED:
                st.changed = what_changed(rec.extra.get(FINGERPRINT), stage)
            if stage.is_service:
                st.ready = bool(rec.extra.get("ready_at")) if st.state.active else None
        if stage.name in intent.skipped and not st.state.active:
            st.state, st.reason = StageState.SKIPPED, "skipped by user"
        lv = live.get(stage.name)
        if lv and lv.get("run_id") == st.run_id:
            st.live = dict(lv.get("live", {}))
            if st.state == StageState.RUNNING and lv.get("stalled"):
                st.state = StageState.STALLED
            failing = st.live.get("failing")
            if st.state.active and isinstance(failing, dict):
                # Failing wins over stalled: after a fatal error, silence is
                # the hang itself, not a quiet phase of work.
                st.state = StageState.FAILING
                if st.reason != "stopping":
                    st.reason = failing_reason(failing)
        if lv and st.state == StageState.PENDING and lv.get("waiting"):
            st.state, st.reason = StageState.WAITING, lv["waiting"]
        out.append(st)
    mark_stale(config, out)
    return out


def mark_stale(config: PipelineConfig, statuses: list[StageStatus]) -> None:
    """Mark succeeded stages that are out of date, and say why.

    A stage is *changed* when its own settings differ from what it ran with
    (``changed`` is set by derive_statuses) or a dependency is changed; it is
    *stale* when a (non-service) dependency succeeded again after the stage's
    own last attempt started, or a dependency is stale. A service passes on
    only its own changes (a new model behind the same port). Derived from the
    run records and the configuration alone, so every front end agrees.
    """
    by_name = {s.name: s for s in statuses}
    inherited: set[str] = set()  # changed because a dependency is
    for stage in topo_order(config.stages):
        st = by_name[stage.name]
        if st.state != StageState.SUCCEEDED or st.started_at is None:
            st.changed = ""
            continue
        if st.changed:
            st.stale = f"changed: {st.changed}"
        for d in stage.depends_on if not st.changed else ():
            dep = by_name[d]
            if dep.state != StageState.SUCCEEDED:
                continue
            if dep.changed:
                st.changed = dep.changed if d in inherited else f"{d} changed: {dep.changed}"
                st.stale = st.changed
                inherited.add(stage.name)
            elif dep.kind == "service":
                continue
            elif dep.stale:
                st.stale = f"{d} is stale"
            elif dep.ended_at is not None and dep.ended_at > st.started_at:
                st.stale = f"{d} was rerun after it"
            if st.stale:
                break
        if st.changed:
            what = st.changed if stage.name in inherited else f"changed: {st.changed}"
            st.reason = f"{what}; run all to rerun it"
        elif st.stale:
            st.reason = f"stale: {st.stale}; run all to bring it up to date"
