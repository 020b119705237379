"""Where a stage attempt runs: on this host, or as a Slurm job.

The driver talks to one small interface, :class:`Executor` (launch, poll,
stop, kill); :class:`LocalExecutor` is the detached launch of ``launcher.py``
and process-group signals, :class:`SlurmExecutor` submits through ``sbatch``
and asks Slurm. A pipeline may mix them (``executor = "slurm"`` per stage).

A Slurm attempt keeps what Slurm said about it in its run record
(``rec.extra["slurm"]``: job name and id, the last state, reason, expected
start, nodes and GPU indices), so every front end and a driver that restarts
read the same last known state. The order of truth for an attempt's outcome:
the wrapper's result file (the stage's own exit code), then Slurm (scontrol,
then sacct), which alone knows about a job killed with its wrapper (time
limit, node failure, OOM, preemption, scancel after the grace). An
unreachable controller keeps the last known state: a job is never declared
lost because Slurm could not be asked.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol

from eagle3tui.config import PipelineConfig, StageConfig
from eagle3tui.supervisor import slurm
from eagle3tui.supervisor.launcher import (
    WRAPPER,
    launch,
    new_attempt,
    stage_env,
    write_header,
)
from eagle3tui.supervisor.procs import is_alive, kill_run, signal_group
from eagle3tui.supervisor.records import RunRecord, RunStore, gpu_report_path
from eagle3tui.supervisor.slurm_state import RESULT_GRACE_S, SLURM, short_duration


class Executor(Protocol):
    """What the driver needs from a place where stages run."""

    def launch(self, stage: StageConfig, store: RunStore, *, resume: bool,
               resumed_from: int | None, trigger: str,
               driver: dict[str, Any] | None = None) -> RunRecord:
        """Start one attempt; return its saved record (saved before any side effect).

        ``driver``: how the attempt's wrapper restarts a driver (keep-alive)."""

    def stop(self, rec: RunRecord) -> str:
        """Ask the attempt to stop (SIGTERM); returns what was done, for the alert."""

    def kill(self, rec: RunRecord) -> bool:
        """End the attempt after the stop grace; False when there was nothing to do."""


class LocalExecutor:
    """Stages on this host: detached under the stage wrapper, stopped by process group."""

    def launch(self, stage: StageConfig, store: RunStore, *, resume: bool,
               resumed_from: int | None, trigger: str,
               driver: dict[str, Any] | None = None) -> RunRecord:
        return launch(stage, store, resume=resume, resumed_from=resumed_from, trigger=trigger,
                      driver=driver)

    def stop(self, rec: RunRecord) -> str:
        if is_alive(rec.wrapper_pid, rec.wrapper_create_time):
            # The wrapper passes SIGTERM to the group and to descendants that left
            # it, once each (a second SIGTERM can cut a stage's own clean-up
            # short), and kills what is left after the grace even with no driver.
            os.kill(rec.wrapper_pid, signal.SIGTERM)  # type: ignore[arg-type]
        elif rec.pgid:
            signal_group(rec.pgid, signal.SIGTERM)
        return f"SIGTERM sent to process group {rec.pgid}"

    def kill(self, rec: RunRecord) -> bool:
        # The group, and every process of the run that left it (the wrapper
        # stays: it records the outcome once the tree is empty).
        kill_run(rec.run_id, rec.pgid, spare=rec.wrapper_pid)
        return True


# ------------------------------------------------------------------ Slurm ----

def is_slurm(rec: RunRecord | None) -> bool:
    """True for an attempt submitted to Slurm."""
    return rec is not None and rec.extra.get("executor") == SLURM


def job_name(stage: str, rec: RunRecord) -> str:
    """The Slurm job name of an attempt: stage, attempt and a piece of the run
    id, so that ``squeue --name`` finds this attempt and no other pipeline's."""
    return f"e3t-{stage}-{rec.attempt}-{rec.run_id[:8]}"




class SlurmPoller:
    """Asks Slurm about the jobs the driver follows, on a thread of its own.

    ``squeue`` and ``scontrol`` wait ~18 s for a controller that is down: the
    driver's tick must never wait for them. One ``squeue`` per round covers all
    jobs; ``scontrol show job -d`` (then ``sacct``, then ``sacct -c``) is asked
    only for a job that squeue no longer lists or lists as ended (its exit
    code), or that just started running (its nodes' GPU indices).
    """

    def __init__(self, *, interval: float = 2.0, timeout: float = 30.0,
                 env: Mapping[str, str] | None = None) -> None:
        self.interval = interval
        self.timeout = timeout
        self.env = env
        self._lock = threading.Lock()
        self._wanted: frozenset[int] = frozenset()
        self._jobs: dict[int, tuple[slurm.SlurmJobState | None, float]] = {}
        self._detailed: dict[int, str] = {}
        self.unreachable: str | None = None
        self.rounds = 0
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def follow(self, job_ids: set[int]) -> None:
        """The jobs to ask about from now on (replaces the previous set)."""
        ids = frozenset(job_ids)
        if ids == self._wanted:
            return
        new = bool(ids - self._wanted)
        with self._lock:
            self._wanted = ids
            self._jobs = {j: v for j, v in self._jobs.items() if j in ids}
        if ids and self._thread is None:
            self._thread = threading.Thread(target=self._loop, daemon=True, name="slurm poller")
            self._thread.start()
        if new:
            self._wake.set()

    def get(self, job_id: int) -> tuple[slurm.SlurmJobState | None, float] | None:
        """(state, when asked) of the last answer about ``job_id``; None before
        the first; (None, t) when Slurm no longer knows the job at all."""
        with self._lock:
            return self._jobs.get(job_id)

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def _loop(self) -> None:
        while not self._stop.is_set():
            ids = sorted(self._wanted)
            if ids:
                try:
                    self._round(ids)
                    self.unreachable = None
                except slurm.SlurmUnavailable as e:
                    self.unreachable = e.message
                except slurm.SlurmError as e:
                    self.unreachable = e.message
                self.rounds += 1
            self._wake.wait(self.interval)
            self._wake.clear()

    def _round(self, ids: list[int]) -> None:
        listed = slurm.query_jobs(ids, timeout=self.timeout, env=self.env)
        now = time.time()
        for jid in ids:
            st = listed.get(jid)
            need_detail = st is None or st.terminal or (
                st.active and self._detailed.get(jid) != st.state)
            if need_detail:
                detail = self._detail(jid)
                if detail is not None and st is not None and detail.state != st.state \
                        and not detail.terminal:
                    detail = None  # it moved on between the two calls: squeue's is newer
                if detail is not None:
                    self._detailed[jid] = detail.state
                    if st is not None:
                        # Keep squeue's expected start and reason where scontrol lacks them.
                        detail = slurm.SlurmJobState(**{**st.__dict__, **{
                            k: v for k, v in detail.__dict__.items() if v is not None}})
                    st = detail
            with self._lock:
                if jid in self._wanted:
                    self._jobs[jid] = (st, now)

    def _detail(self, jid: int) -> slurm.SlurmJobState | None:
        st = slurm.job_state(jid, timeout=self.timeout, env=self.env)
        if st is None:
            # No slurmdbd: the job-completion log still knows (sacct -c).
            st = slurm.job_state(jid, sacct_completion=True, timeout=self.timeout, env=self.env)
        return st


def _state_doc(st: slurm.SlurmJobState) -> dict[str, Any]:
    return {"state": st.state, "reason": st.reason, "start": st.start, "end": st.end,
            "nodes": st.nodes, "gpu_indices": list(st.gpu_indices) if st.gpu_indices else None,
            "exit_code": st.exit_code, "signal": st.signal, "source": st.source}


class SlurmExecutor:
    """Stages as Slurm jobs: ``sbatch`` to launch, ``squeue``/``scontrol``/``sacct``
    to watch, ``scancel`` to stop. :meth:`poll` is called once per driver tick."""

    def __init__(self, *, poll_interval: float = 2.0, timeout: float = 30.0,
                 env: Mapping[str, str] | None = None, result_grace_s: float = RESULT_GRACE_S,
                 on_event: Callable[[str, str, RunRecord | None], None] | None = None,
                 gpu_interval: float = 2.0) -> None:
        self.timeout = timeout
        self.gpu_interval = gpu_interval
        self.env = env
        self.result_grace_s = result_grace_s
        self.poller = SlurmPoller(interval=poll_interval, timeout=timeout, env=env)
        # (level, message, record) for the driver's alerts.
        self.on_event = on_event or (lambda level, message, rec: None)
        self._reported_unreachable: str | None = None

    # -- launching ------------------------------------------------------------
    def launch(self, stage: StageConfig, store: RunStore, *, resume: bool,
               resumed_from: int | None, trigger: str,
               driver: dict[str, Any] | None = None) -> RunRecord:
        # ``driver`` is unused: a node of the cluster cannot start this host's driver.
        assert stage.slurm is not None, f"stage {stage.name} has no Slurm options"
        rec = new_attempt(stage, store, resume=resume, resumed_from=resumed_from, trigger=trigger)
        argv = rec.argv
        name = job_name(stage.name, rec)
        write_header(rec, stage, resumed_from, how=f" as Slurm job {name}")
        log = Path(rec.log)
        rec.extra["executor"] = SLURM
        rec.extra[SLURM] = {"job_name": name, "job_id": None, "submitted_at": None}
        # Written before sbatch: a driver killed during the submission leaves an
        # attempt whose job is found again by its name (poll), never a stray job.
        store.save(rec)
        prefix = store.prefix(stage.name, rec.attempt)
        sub = slurm.build_submission(
            stage.slurm, job_name=name, stage_argv=argv,
            # The job's node is not this host: its wrapper samples the node's GPUs for the panel.
            wrapper_argv=[sys.executable, "-I", str(WRAPPER), "--record", prefix,
                          "--gpu-report", gpu_report_path(prefix), "--gpu-interval", f"{self.gpu_interval:g}",
                          "--"],
            log_path=str(log), workdir=str(stage.cwd), script_path=prefix + ".sbatch.sh")
        env = stage_env(stage, rec.attempt)
        try:
            job_id = slurm.submit(sub, env={**env, **(self.env or {})}, timeout=self.timeout)
        except slurm.SlurmUnavailable as e:
            # sbatch may have queued the job before it timed out: look before failing.
            try:
                found = slurm.find_job_by_name(name, timeout=self.timeout, env=self.env)
            except slurm.SlurmError:
                found = []
            if not found:
                return self._submit_failed(rec, store, log, f"could not submit to Slurm: {e.message}",
                                           e.fix)
            job_id = found[-1]
        except slurm.SlurmError as e:
            return self._submit_failed(rec, store, log, e.message, e.fix)
        except OSError as e:  # the batch script could not be written
            return self._submit_failed(rec, store, log, f"could not write the batch script: {e}", None)
        rec.extra[SLURM].update(job_id=job_id, submitted_at=time.time())
        store.save(rec)
        self.poller.follow(self.poller._wanted | {job_id})
        return rec

    @staticmethod
    def _submit_failed(rec: RunRecord, store: RunStore, log: Path, message: str,
                       fix: str | None) -> RunRecord:
        rec.error = message
        rec.ended_at = time.time()
        with open(log, "ab") as f:
            f.write(f"[eagle3tui] cannot start: {message}\n".encode("utf-8", "replace"))
            if fix:
                f.write(f"[eagle3tui]   fix: {fix}\n".encode("utf-8", "replace"))
        store.save(rec)
        return rec

    # -- stopping ---------------------------------------------------------------
    def stop(self, rec: RunRecord) -> str:
        info = rec.extra.get(SLURM, {})
        jid = info.get("job_id")
        if jid is None:
            return "stop recorded; the job is cancelled once sbatch names it"
        try:
            if info.get("state") in slurm.PENDING_STATES or info.get("state") is None:
                # Nothing runs yet: there is nothing to ask gently.
                slurm.cancel(jid, term_only=False, timeout=self.timeout, env=self.env)
                return f"Slurm job {jid} cancelled while queued (scancel)"
            slurm.cancel(jid, term_only=True, timeout=self.timeout, env=self.env)
        except slurm.SlurmError as e:
            return f"could not signal Slurm job {jid} ({e.message}); scancel follows after the grace"
        return f"SIGTERM sent to Slurm job {jid} (scancel --full --signal=TERM)"

    def kill(self, rec: RunRecord) -> bool:
        jid = rec.extra.get(SLURM, {}).get("job_id")
        if jid is None:
            return False
        try:
            slurm.cancel(jid, term_only=False, timeout=self.timeout, env=self.env)
        except slurm.SlurmError:
            return False
        return True

    # -- watching -----------------------------------------------------------------
    def poll(self, config: PipelineConfig, store: RunStore) -> None:
        """Fold what Slurm said since the last tick into the Slurm attempts' records."""
        now = time.time()
        wanted: set[int] = set()
        for stage in config.stages:
            if stage.executor != SLURM:
                continue
            rec = store.latest(stage.name)
            if not is_slurm(rec):
                continue
            assert rec is not None
            info = rec.extra[SLURM]
            if rec.finished and "final" in info:
                continue
            jid = info.get("job_id")
            if jid is None:
                self._find_lost_submission(rec, store, info, now)
                continue
            wanted.add(int(jid))
            if self._apply(rec, info, now):
                store.save(rec)
        self.poller.follow(wanted)
        msg = self.poller.unreachable
        if msg != self._reported_unreachable:
            self._reported_unreachable = msg
            if msg:
                self.on_event("warning", f"Slurm cannot be asked ({msg}); "
                                         "keeping the jobs' last known states", None)

    def _find_lost_submission(self, rec: RunRecord, store: RunStore, info: dict[str, Any],
                              now: float) -> None:
        """A record saved before sbatch whose job id was never written (the
        driver died during the submission): find the job by its name."""
        if rec.finished or now - rec.launched_at < self.timeout + 5:
            return
        try:
            found = slurm.find_job_by_name(info["job_name"], timeout=self.timeout, env=self.env)
        except slurm.SlurmError:
            return  # ask again next tick
        if found:
            info.update(job_id=found[-1], submitted_at=rec.launched_at, recovered=True)
        else:
            rec.error = (f"the submission of Slurm job {info['job_name']} was interrupted and "
                         "Slurm has no job of that name")
            rec.ended_at = now
        store.save(rec)

    def _apply(self, rec: RunRecord, info: dict[str, Any], now: float) -> bool:
        """Update ``info`` (and finish ``rec``) from the poller; True if changed."""
        before = dict(info)
        got = self.poller.get(int(info["job_id"]))
        info["unreachable"] = self.poller.unreachable
        if got is not None:
            st, asked = got
            if st is None:
                info.setdefault("unknown_since", asked)
            else:
                info.pop("unknown_since", None)
                # An ended job's scontrol/sacct rows lack its nodes' GPU indices: keep the known ones.
                info.update({k: v for k, v in _state_doc(st).items()
                             if v is not None or k not in ("gpu_indices", "nodes")})
                if st.terminal:
                    info.setdefault("terminal_seen_at", asked)
                else:
                    info.pop("terminal_seen_at", None)
        self._report_change(rec, before, info)
        if rec.stop_requested_at and not info.get("cancel_sent") and info.get("state") in (
                None, *slurm.PENDING_STATES) and now - rec.stop_requested_at > 1:
            # Stopped while the job id was unknown or the job queued: cancel it now.
            try:
                slurm.cancel(int(info["job_id"]), term_only=False, timeout=self.timeout, env=self.env)
                info["cancel_sent"] = True
            except slurm.SlurmError:
                pass
        if rec.finished:
            # The wrapper's result is in; Slurm's verdict (TIMEOUT, PREEMPTED...)
            # is kept with it once seen, or given up on after the grace.
            if info.get("terminal_seen_at") or now - (rec.ended_at or now) > 2 * self.result_grace_s:
                info["final"] = info.get("state") if info.get("terminal_seen_at") else None
        else:
            since = info.get("terminal_seen_at") or info.get("unknown_since")
            if since is not None and now - since >= self.result_grace_s and not info.get("unreachable"):
                self._finish_from_slurm(rec, info, now)
        return info != before

    def _report_change(self, rec: RunRecord, before: dict[str, Any], info: dict[str, Any]) -> None:
        """An alert when the job changes state, or Slurm first gives a start estimate."""
        jid, state = info["job_id"], info.get("state")
        if state is None:
            return
        if state != before.get("state"):
            if state in slurm.PENDING_STATES:
                why = info.get("reason")
                msg = f"queued as Slurm job {jid}" + (f" ({why})" if why and why != "None" else "")
            elif state in slurm.ACTIVE_STATES:
                if before.get("state") in slurm.ACTIVE_STATES:
                    return  # RUNNING -> COMPLETING: the end is reported with the result
                gpus = info.get("gpu_indices")
                msg = (f"Slurm job {jid} {state.lower()} on {info.get('nodes') or '?'}"
                       + (f", GPUs {','.join(str(g) for g in gpus)}" if gpus else ""))
            else:
                msg = f"Slurm job {jid} ended: {state}"
            self.on_event("info", msg, rec)
        elif state in slurm.PENDING_STATES and info.get("start") and not before.get("start"):
            start = float(info["start"])
            self.on_event("info", f"Slurm expects job {jid} to start at "
                                  f"{datetime.fromtimestamp(start).strftime('%H:%M:%S')} "
                                  f"(in {short_duration(start - time.time())})", rec)

    def _finish_from_slurm(self, rec: RunRecord, info: dict[str, Any], now: float) -> None:
        """The job ended without a result file: take the outcome from Slurm."""
        jid, state = info["job_id"], info.get("state")
        rec.ended_at = info.get("end") or now
        info["final"] = state if info.get("terminal_seen_at") else None
        if info.get("unknown_since"):
            rec.error = (f"lost: Slurm no longer knows job {jid} and its wrapper wrote no result "
                         "(configure sacct, or raise MinJobAge, to keep finished jobs' outcomes)")
            return
        rec.exit_code, rec.signal = info.get("exit_code"), info.get("signal")
        if state in ("COMPLETED", "FAILED"):
            rec.error = (f"Slurm job {jid} ended ({state}, exit {rec.exit_code}, signal {rec.signal}) "
                         "but its wrapper's result file never appeared: is the state directory on "
                         "storage the compute nodes share?")
        elif state == "CANCELLED" and rec.stop_requested_at:
            pass  # our own scancel after the grace: record_state says "stopped"
        else:
            job = slurm.SlurmJobState(job_id=int(jid), state=str(state))
            rec.error = f"{job.describe()} (Slurm job {jid}: {state})"


class Executors:
    """The driver's executors: one local, one Slurm (created when first needed)."""

    def __init__(self, *, slurm_env: Mapping[str, str] | None = None,
                 on_event: Callable[[str, str, RunRecord | None], None] | None = None,
                 gpu_interval: float = 2.0) -> None:
        self.local = LocalExecutor()
        self.gpu_interval = gpu_interval
        self._slurm: SlurmExecutor | None = None
        self._slurm_env = slurm_env
        self._on_event = on_event
        # Tests shorten these (EAGLE3TUI_SLURM_POLL_S); clusters are asked every 2 s.
        self.poll_interval = float(os.environ.get("EAGLE3TUI_SLURM_POLL_S", "2") or 2)

    @property
    def slurm(self) -> SlurmExecutor:
        if self._slurm is None:
            self._slurm = SlurmExecutor(poll_interval=self.poll_interval, env=self._slurm_env,
                                        on_event=self._on_event, gpu_interval=self.gpu_interval)
        return self._slurm

    def for_stage(self, stage: StageConfig) -> Executor:
        return self.slurm if stage.executor == SLURM else self.local

    def for_record(self, rec: RunRecord) -> Executor:
        return self.slurm if is_slurm(rec) else self.local

    def poll(self, config: PipelineConfig, store: RunStore) -> None:
        """Once per driver tick: what the schedulers say about running attempts."""
        if self._slurm is not None or any(s.executor == SLURM for s in config.stages):
            self.slurm.poll(config, store)

    def close(self) -> None:
        if self._slurm is not None:
            self._slurm.poller.close()


# ------------------------------------------------------------ shared storage ----

#: Filesystems that live on one machine: a job on another node cannot see them.
LOCAL_FILESYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "overlay", "f2fs",
                               "vfat", "ramfs", "devtmpfs"})


def filesystem_of(path: Path, mounts: str = "/proc/mounts") -> tuple[str, str] | None:
    """(mount point, filesystem type) holding ``path`` (or its nearest existing
    parent); None when the mount table cannot be read."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    p = p.resolve()
    try:
        with open(mounts, encoding="utf-8", errors="replace") as f:
            rows = [line.split() for line in f]
    except OSError:
        return None
    best: tuple[str, str] | None = None
    for row in rows:
        if len(row) < 3:
            continue
        mnt = row[1].replace("\\040", " ")
        if (str(p) == mnt or str(p).startswith(mnt.rstrip("/") + "/")) and \
                (best is None or len(mnt) >= len(best[0])):
            best = (mnt, row[2])
    return best


def storage_warnings(config: PipelineConfig, mounts: str = "/proc/mounts") -> list[str]:
    """For ``check``: the paths a Slurm job must share with this host that sit
    on a filesystem of this machine only (the state directory for the result
    files, each Slurm stage's log)."""
    slurm_stages = [s for s in config.stages if s.executor == SLURM]
    if not slurm_stages:
        return []
    paths = [("the state directory", config.state_dir)] + [
        (f"stage {s.name}'s log", Path(s.log)) for s in slurm_stages]
    local: dict[tuple[str, str], list[str]] = {}
    for what, path in paths:
        fs = filesystem_of(path, mounts)
        if fs is not None and fs[1] in LOCAL_FILESYSTEMS:
            local.setdefault(fs, []).append(f"{what} ({path})")
    for fs, items in local.items():
        if len(items) > 3:
            local[fs] = items[:2] + [f"{len(items) - 2} more Slurm stage logs"]
    return [f"{'; '.join(items)} are on a local {fstype} filesystem (mounted at {mnt}): Slurm jobs "
            f"on other nodes cannot write their result files and output there, so their outcome "
            f"would come from Slurm alone. Fix: put [pipeline] state_dir (and the logs) on storage "
            f"the compute nodes share (NFS, Lustre, GPFS...); fine as it is when the jobs run on "
            f"this host" for (mnt, fstype), items in local.items()]
