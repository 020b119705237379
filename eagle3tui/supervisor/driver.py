"""The driver: the one process per state directory that advances the pipeline.

It launches stages when their dependencies and GPUs allow, follows their
logs, turns what it sees into alerts, stops services nobody needs any more,
enforces stop grace periods, schedules retries, and writes ``state.json``
for the front ends. Front ends never launch anything themselves: they drop
command files in ``commands/`` (see control.py) and read the state.

It is started on demand as a detached process (``python -m eagle3tui.supervisor.driver``)
by any front end, or runs in the foreground under ``--watch``. It exits
when nothing is left to do; the run records and the wrapper's result files
mean nothing is lost while no driver runs, and the next one reattaches.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
import traceback
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from eagle3tui.alerts import Alert, AlertHub, AlertLog, build_hub
from eagle3tui.atomic import atomic_write_json
from eagle3tui.config import PipelineConfig, StageConfig, load_config, parse_overrides
from eagle3tui.supervisor.lock import DriverLock
from eagle3tui.errors import ConfigError
from eagle3tui.logs.follower import LogWatcher
from eagle3tui.telemetry.collector import GpuMonitor, TelemetryUpdate, memory_history, summarize
from eagle3tui.supervisor.executors import Executors
from eagle3tui.supervisor.launcher import reap_wrappers
from eagle3tui.supervisor.protocol import COMMANDS_DIR, REPLIES_DIR
from eagle3tui.supervisor.procs import signal_name
from eagle3tui.supervisor.records import RunRecord, RunStore
from eagle3tui.supervisor.scheduler import dependency_closure, plan
from eagle3tui.supervisor.stage_alerts import StageWatch, ruleset_for
from eagle3tui.supervisor.state import (
    ON_FATAL_STOP,
    Intent,
    StageState,
    StageStatus,
    derive_statuses,
    describe_gpu_activity,
    gpu_activity,
)
from eagle3tui.durations import format_duration

# A stage's GPU memory freed while it still runs is reported only if the stage
# is still running this long after: a launcher outlives its dying or stopped
# workers for a moment, and that teardown is not news.
MEMORY_FREED_SETTLE_S = 5.0
# A fatal error with the process still alive this long is announced as failing.
FAILING_ANNOUNCE_S = 5.0

class ServiceProber:
    """Polls a service's HTTP readiness URL in a thread, never blocking the driver."""

    def __init__(self, url: str, interval: float) -> None:
        self.url = url
        self.interval = interval
        self.ready = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name=f"probe {url}")
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set() and not self.ready.is_set():
            try:
                with urllib.request.urlopen(self.url, timeout=min(2.0, self.interval * 2)) as r:
                    if r.status == 200:
                        self.ready.set()
                        return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()


class Driver:
    """Advances one pipeline. ``run()`` loops until idle (or stopped)."""

    def __init__(self, config: PipelineConfig, *, hub: AlertHub | None = None,
                 alerts_path: Path | None = None, tick_s: float = 0.05,
                 exit_when_idle: bool = True, idle_grace_s: float = 1.0,
                 nvml: Any | None = None, gpu: bool = True, use_inotify: bool = True) -> None:
        self.config = config
        self.state_dir = config.state_dir
        self.store = RunStore(self.state_dir)
        self.intent = Intent.load(self.state_dir)
        self.lock = DriverLock(self.state_dir)
        self.hub = hub or AlertHub()
        self.alert_log = AlertLog(alerts_path or self.state_dir / "alerts.jsonl")
        self.hub.add_sink(self.alert_log.append)
        # Without inotify the driver looks every tick_s; with it, it sleeps until a
        # followed log or the commands directory changes, or the next full pass.
        self.tick_s = tick_s
        self.wakeups = LogWatcher(poll_interval=tick_s, use_inotify=use_inotify)
        self.exit_when_idle = exit_when_idle
        self.idle_grace_s = idle_grace_s
        self.rules = ruleset_for(config)
        self.watches: dict[str, StageWatch] = {}
        self._watch_recs: dict[str, RunRecord] = {}
        self.full_every_s = 0.25
        self._last_full = 0.0
        self._busy = True
        self.probers: dict[str, ServiceProber] = {}
        self.waiting: dict[str, str] = {}
        self._last_state = ""
        self._last_state_write = 0.0
        self._problems_seen: set[str] = set()
        # Where stages run: this host, or Slurm (executor = "slurm").
        self.executors = Executors(
            on_event=lambda level, msg, rec: self._alert(level, "slurm", msg, rec))
        self.commands_dir = self.state_dir / COMMANDS_DIR
        self.replies_dir = self.commands_dir / REPLIES_DIR
        # GPU telemetry runs on its own thread; it reads these two dicts
        # (replaced whole each tick, never mutated) and queues its events.
        self._stage_roots: dict[str, int] = {}
        self._projected_end: dict[str, float] = {}
        self._telemetry: list[TelemetryUpdate] = []
        self._telemetry_lock = threading.Lock()
        # stage -> (when, event) of a "memory freed" waiting to settle.
        self._freed_pending: dict[str, tuple[float, Any]] = {}
        self.gpu: GpuMonitor | None = None
        if gpu:
            disks = sorted({str(p) for s in config.stages for p in s.disk})
            self.gpu = GpuMonitor(stage_roots=lambda: self._stage_roots, disk_paths=disks,
                                  projected_end=lambda: self._projected_end,
                                  interval=config.gpu_interval_s, nvml=nvml,
                                  on_update=self._on_telemetry)

    # -- life cycle -----------------------------------------------------
    def run(self, stop: threading.Event | None = None, lock_timeout: float = 2.0) -> int:
        """Drive until idle or ``stop`` is set. Returns 0, or 3 if another driver holds the lock."""
        if not self.lock.acquire(timeout=lock_timeout):
            return 3
        # Another driver may have changed the intent while we waited for the
        # lock (and execute() before run() saved its own change): start from disk.
        self.intent = Intent.load(self.state_dir)
        stop = stop or threading.Event()
        try:
            self.commands_dir.mkdir(parents=True, exist_ok=True)
            self.replies_dir.mkdir(parents=True, exist_ok=True)
            if self.alert_log.repaired:
                self._alert("warning", "alerts-repaired", self.alert_log.repaired)
            if self.gpu is not None:
                self.gpu.start()
            self.wakeups.start()
            self.wakeups.add_dir(self.commands_dir)
            idle_since: float | None = None
            failures = 0
            while not stop.is_set():
                try:
                    busy = self.tick()
                    failures = 0
                except Exception:  # noqa: BLE001
                    # A bug must not take supervision down with it: report it,
                    # back off, and give up only if it repeats every tick.
                    failures += 1
                    traceback.print_exc()
                    if failures == 1:
                        self._alert("critical", "driver-error",
                                    "internal error in the driver; see driver.log: "
                                    + traceback.format_exc(limit=1).strip().splitlines()[-1])
                    if failures >= 20:
                        return 1
                    stop.wait(0.5)
                    continue
                now = time.monotonic()
                if busy:
                    idle_since = None
                elif idle_since is None:
                    idle_since = now
                elif self.exit_when_idle and now - idle_since >= self.idle_grace_s:
                    # A command may have arrived since the tick: handle it first.
                    if not self._command_files():
                        break
                self._wait_for_work(stop)
            self.write_state(force=True)
        finally:
            self.wakeups.stop()
            for p in self.probers.values():
                p.stop()
            if self.gpu is not None:
                self.gpu.close()
            self.executors.close()
            self.lock.release()
        return 0

    def _wait_for_work(self, stop: threading.Event) -> None:
        """Sleep until a followed log or a command changes, or the next full pass."""
        if self.wakeups.mode == "inotify":
            self.wakeups.wait(self.full_every_s)
        else:
            stop.wait(self.tick_s)

    # -- one tick -------------------------------------------------------
    def tick(self) -> bool:
        """One pass; True while anything is running, scheduled or queued."""
        now = time.time()
        handled = self.process_commands()
        if not handled and now - self._last_full < self.full_every_s:
            # Between full passes only the logs of running attempts are read,
            # which keeps a fatal line's alert fast and an idle driver cheap.
            for name, w in list(self.watches.items()):
                rec_stub = self._watch_recs.get(name)
                if rec_stub is not None:
                    for level, kind, message, details in w.poll(now):
                        self._alert(level, kind, message, rec_stub, **details)
            return self._busy
        self._last_full = now
        reap_wrappers()
        self.executors.poll(self.config, self.store)
        latest: dict[str, RunRecord] = {}
        statuses = self.statuses(latest)
        self._report_problems()
        for st in statuses.values():
            rec = latest.get(st.name)
            if rec is None:
                continue
            stage = self.config.stage(st.name)
            if st.state.active:
                if st.state != StageState.QUEUED:  # a queued job has no output yet (nor stalls)
                    self._follow(stage, rec, now)
                    self._enforce_fatal_policy(stage, rec, now)
                self._enforce_stop(stage, rec, now)
                if stage.is_service:
                    self._check_ready(stage, rec, now)
            elif rec.finished or st.state in (StageState.FAILED, StageState.STOPPED):
                self._finalize(stage, rec, st, now)
        statuses = self.statuses()
        self._telemetry_tick(statuses, now)
        p = plan(self.config, statuses, self.intent, now)
        self.waiting = p.waiting
        for name in p.stop_services:
            self.stop_stage(name, reason="no-longer-needed")
        for name, resume in p.start:
            self._launch(name, resume)
        if p.start or p.stop_services:
            statuses = self.statuses()
        self.write_state(statuses)
        active = any(s.state.active for s in statuses.values())
        scheduled = any(
            float(r.get("not_before", 0)) > now for r in self.intent.relaunch.values())
        waiting_on_active = bool(p.waiting) and active
        self._busy = bool(handled or active or scheduled or p.start or waiting_on_active)
        return self._busy

    def statuses(self, records: dict[str, RunRecord] | None = None) -> dict[str, StageStatus]:
        """Every stage's status; ``records`` receives the latest run records read for it."""
        live = {n: {"run_id": w.run_id, "live": w.live(), "stalled": w.stalled}
                for n, w in self.watches.items()}
        for n, reason in self.waiting.items():
            live.setdefault(n, {})["waiting"] = reason
        sts = derive_statuses(self.config, self.store, self.intent, live, records)
        return {s.name: s for s in sts}

    # -- GPU and disk telemetry ---------------------------------------------
    def _on_telemetry(self, update: TelemetryUpdate) -> None:
        # Called on the sampler thread: hand over, never touch driver state.
        with self._telemetry_lock:
            self._telemetry.append(update)
            del self._telemetry[:-10]

    def _telemetry_tick(self, statuses: dict[str, StageStatus], now: float) -> None:
        """Feed stage pids to the sampler; turn its events into alerts."""
        # A Slurm stage's pid lives on its node: it names no process here.
        self._stage_roots = {n: s.pid for n, s in statuses.items() if s.state.active and s.pid
                             and self.config.stage(n).executor == "local"}
        ends: dict[str, float] = {}
        for n, s in statuses.items():
            remaining = ((s.live or {}).get("eta") or {}).get("remaining_s")
            if s.state.active and remaining is not None:
                for path in self.config.stage(n).disk:
                    ends[str(path)] = now + float(remaining)
        self._projected_end = ends
        if self.gpu is None:
            return
        for name, w in self.watches.items():
            w.gpu_witness = self.gpu.witness(name)
        with self._telemetry_lock:
            updates, self._telemetry = self._telemetry, []
        for up in updates:
            for ev in up.events:
                stage = ev.subject[len("stage "):] if ev.subject.startswith("stage ") else None
                rec = self.store.latest(stage) if stage in self.config.names else None
                if ev.kind == "memory_freed":
                    # Memory released when a stage ends (or a GPU's total when
                    # anything ends) is normal; only a running stage losing its
                    # memory is news, and only once teardown would have ended.
                    if stage is not None and stage in self.config.names:
                        self._freed_pending[stage] = (now, ev)
                elif ev.kind == "memory_full":
                    self._alert("warning", "gpu-memory-full", ev.message, rec, **ev.figures)
                elif ev.kind == "gpu_error":
                    self._alert("warning", "gpu-driver", ev.message, rec, **ev.figures)
            for dev in up.disk_events:
                owner = next((n for n, s in statuses.items() if s.state.active and any(
                    str(p) == dev.path for p in self.config.stage(n).disk)), None)
                self._alert("critical", "disk-full-forecast", dev.message,
                            self.store.latest(owner) if owner else None, path=dev.path,
                            full_at=dev.full_at, projected_end=dev.projected_end)
        self._settle_memory_freed(statuses, now)

    def _settle_memory_freed(self, statuses: dict[str, StageStatus], now: float) -> None:
        """Warn of memory freed under a stage still running, normal, unstopped, after the settle time."""
        for stage, (seen, ev) in list(self._freed_pending.items()):
            st = statuses.get(stage)
            rec = self.store.latest(stage)
            w = self.watches.get(stage)
            quiet = (st is None or not st.state.active or rec is None or rec.finished
                     or rec.stop_requested_at is not None or (w is not None and w.failing))
            if quiet:
                del self._freed_pending[stage]  # it ended, was stopped, or already failed
            elif now - seen >= MEMORY_FREED_SETTLE_S:
                del self._freed_pending[stage]
                self._alert("warning", "gpu-memory-freed",
                            ev.message + " while the stage still runs", rec, **ev.figures)

    def gpu_summary(self) -> dict[str, Any] | None:
        """The last GPU sample with per-stage attribution and history, for ``state.json``."""
        if self.gpu is None or self.gpu.latest is None:
            return None
        return summarize(self.gpu.latest, memory_history(self.gpu))

    # -- launching and stopping -------------------------------------------
    def _launch(self, name: str, resume: bool) -> None:
        stage = self.config.stage(name)
        relaunch = self.intent.relaunch.pop(name, None)
        prev = self.store.latest(name)
        trigger = (relaunch or {}).get("trigger", "pipeline" if prev is None else "user")
        rec = self.executors.for_stage(stage).launch(
            stage, self.store, resume=resume,
            resumed_from=prev.attempt if (resume and prev) else None, trigger=trigger)
        self.intent.save(self.state_dir)
        if rec.ended_at is not None and rec.error:
            # One critical for a start that cannot happen: the attempt is
            # settled here, so _finalize adds no early-exit or second failure.
            rec.extra["finalized"] = True
            self.store.save(rec)
            self._alert("critical", "stage-failed", f"could not start: {rec.error}", rec,
                        exit_code=rec.exit_code)
            return
        if resume:
            self._alert("warning", "stage-resumed",
                        f"resumed (attempt {rec.attempt}, resuming attempt {rec.resumed_from})"
                        + (" by retry policy" if trigger == "retry" else ""), rec,
                        argv=rec.argv)
        else:
            self._alert("info", "stage-started", f"started (attempt {rec.attempt})", rec,
                        argv=rec.argv, pid=rec.pid)

    def stop_stage(self, name: str, reason: str = "user") -> str:
        """SIGTERM the stage's process group; what it prints from now on is not alerted."""
        rec = self.store.latest(name)
        if rec is None or rec.finished:
            return f"{name} is not running"
        if rec.stop_requested_at is None:
            w = self.watches.get(name)
            if (w is None or w.run_id != rec.run_id) and rec.pid:
                # No tick has followed it yet (a driver that just started):
                # read its log up to now, so the stop line is drawn right.
                self._follow(self.config.stage(name), rec, time.time())
                w = self.watches.get(name)
            if w is not None and w.run_id == rec.run_id:
                # What the stage printed before the stop is judged as usual;
                # the line reached is written down before the signal goes out.
                for level, kind, message, details in w.poll(time.time()):
                    self._alert(level, kind, message, rec, **details)
                rec.extra["stop_line"] = w.mark_stopping()
            rec.stop_requested_at = time.time()
            rec.stop_reason = reason
            self.store.save(rec)
        done = self.executors.for_record(rec).stop(rec)
        on_slurm = rec.extra.get("executor") == "slurm"
        what = {"no-longer-needed": "service no longer needed",
                ON_FATAL_STOP: "stopped by the on_fatal policy"}.get(reason, f"stop requested by {reason}")
        self._alert("info", "stage-stopping", f"{what}: {done}, "
                    f"{'scancel' if on_slurm else 'SIGKILL'} after {self.config.stage(name).stop_grace_s:.0f}s", rec)
        return f"stopping {name} ({'scancel' if on_slurm else 'SIGTERM to its process group'})"

    def _enforce_fatal_policy(self, stage: StageConfig, rec: RunRecord, now: float) -> None:
        """``on_fatal``: stop a stage that logged a fatal error and made no progress for the grace."""
        w = self.watches.get(stage.name)
        pol = stage.on_fatal
        if (w is None or w.run_id != rec.run_id or w.fatal is None or pol.action != "stop"
                or rec.stop_requested_at is not None):
            return
        if w.failing_for(now) < pol.grace_s:
            return
        # The reason is on disk before the signal: a driver that dies in
        # between still reports the attempt as stopped by the policy.
        rec.extra["fatal"] = {k: w.fatal.get(k) for k in ("line", "rule", "text", "at")}
        self.store.save(rec)
        self._alert("warning", "on-fatal-stop",
                    f"no progress for {format_duration(w.failing_for(now))} after the fatal error at "
                    f"line {w.fatal.get('line')} ({w.fatal.get('rule')}); stopping it "
                    f"(on_fatal: action = \"stop\", grace = {format_duration(pol.grace_s)})", rec,
                    line=w.fatal.get("line"), rule=w.fatal.get("rule"), text=w.fatal.get("text"))
        self.stop_stage(stage.name, reason=ON_FATAL_STOP)

    def _enforce_stop(self, stage: StageConfig, rec: RunRecord, now: float) -> None:
        if rec.stop_requested_at is None or rec.killed_after_grace:
            return
        if now - rec.stop_requested_at >= stage.stop_grace_s:
            if not self.executors.for_record(rec).kill(rec):
                return
            rec.killed_after_grace = True
            self.store.save(rec)
            self._alert("warning", "stage-killed",
                        f"did not stop within {stage.stop_grace_s:.0f}s of SIGTERM: "
                        + ("cancelled the Slurm job" if rec.extra.get("executor") == "slurm" else "sent SIGKILL"), rec)

    # -- following ---------------------------------------------------------
    def _follow(self, stage: StageConfig, rec: RunRecord, now: float) -> None:
        w = self.watches.get(stage.name)
        if w is None or w.run_id != rec.run_id:
            w = StageWatch(stage, rec, self.config, self.state_dir, self.rules)
            self.watches[stage.name] = w
            self.wakeups.add(rec.log)
        self._watch_recs[stage.name] = rec
        for level, kind, message, details in w.poll(now):
            self._alert(level, kind, message, rec, **details)
        self._announce_failing(stage, rec, w, now)

    def _announce_failing(self, stage: StageConfig, rec: RunRecord, w: StageWatch, now: float) -> None:
        """Once per fatal event: the stage logged it but its process lives on (with its GPUs)."""
        fatal = w.fatal
        if fatal is None or rec.stop_requested_at is not None or fatal.get("announced"):
            return
        # A process that dies of its error within seconds is an ordinary
        # failure; one still alive after this is failing, GPUs and all.
        settle = min(FAILING_ANNOUNCE_S, stage.on_fatal.grace_s / 2)
        if w.failing_for(now) < settle:
            return
        fatal["announced"] = True
        gpus = describe_gpu_activity(gpu_activity(self.gpu_summary(), stage.name))
        pol = stage.on_fatal
        then = (f"on_fatal stops it in {format_duration(max(0.0, pol.grace_s - w.failing_for(now)))} "
                "unless it makes progress" if pol.action == "stop"
                else "on_fatal = wait: stop it yourself if it is hung")
        self._alert("warning", "stage-failing",
                    f"fatal error at line {fatal.get('line')} ({fatal.get('rule')}) "
                    f"{format_duration(w.failing_for(now))} ago and the process is still alive"
                    + (f"; {gpus}" if gpus else "") + f"; ETA stale; {then}", rec,
                    line=fatal.get("line"), rule=fatal.get("rule"), text=fatal.get("text"))

    def _check_ready(self, stage: StageConfig, rec: RunRecord, now: float) -> None:
        if rec.extra.get("ready_at") or stage.ready is None:
            if stage.ready is None and not rec.extra.get("ready_at") and rec.pid:
                # A service without a probe is ready once it runs.
                rec.extra["ready_at"] = now
                self.store.save(rec)
            return
        ready = False
        if stage.ready.url:
            pr = self.probers.get(rec.run_id)
            if pr is None:
                pr = self.probers[rec.run_id] = ServiceProber(stage.ready.url, stage.ready.interval_s)
            ready = pr.ready.is_set()
        elif stage.ready.log_pattern:
            w = self.watches.get(stage.name)
            ready = bool(w and w.seen_pattern(stage.ready.log_pattern))
        if ready:
            rec.extra["ready_at"] = now
            self.store.save(rec)
            waited = now - (rec.started_at or rec.launched_at)
            self._alert("info", "service-ready", f"ready after {waited:.0f}s", rec, waited_s=waited)
        elif not rec.extra.get("ready_timeout_alerted") and \
                now - (rec.started_at or rec.launched_at) > stage.ready.timeout_s:
            rec.extra["ready_timeout_alerted"] = True
            self.store.save(rec)
            self._alert("warning", "service-not-ready",
                        f"not ready within {stage.ready.timeout_s:.0f}s "
                        f"({stage.ready.url or 'log pattern ' + repr(stage.ready.log_pattern)})", rec)

    def _finalize(self, stage: StageConfig, rec: RunRecord, st: StageStatus, now: float) -> None:
        if rec.extra.get("finalized"):
            return
        w = self.watches.pop(stage.name, None)
        self._watch_recs.pop(stage.name, None)
        self.wakeups.remove(rec.log)
        if w is None or w.run_id != rec.run_id:
            w = StageWatch(stage, rec, self.config, self.state_dir, self.rules)
        for level, kind, message, found in w.poll(now) + w.finish(rec):
            self._alert(level, kind, message, rec, **found)
        pr = self.probers.pop(rec.run_id, None)
        if pr:
            pr.stop()
        rec.extra["finalized"] = True
        if rec.ended_at is None:
            rec.ended_at = now
        self.store.save(rec)
        duration = (rec.ended_at or now) - (rec.started_at or rec.launched_at)
        details: dict[str, Any] = {"exit_code": rec.exit_code, "signal": signal_name(rec.signal),
                                   "duration_s": round(duration, 3)}
        if st.state == StageState.SUCCEEDED:
            self._alert("info", "stage-succeeded", st.reason or f"succeeded in {duration:.0f}s", rec,
                        **details)
        elif st.state == StageState.STOPPED:
            self._alert("info", "stage-stopped", st.reason or "stopped", rec, **details)
        elif st.state == StageState.FAILED:
            details["last_errors"] = w.tail_errors(8)
            cause = w.cause()
            if cause is not None:
                # The quote under the message is the cause, not the last warning.
                details.update(cause=cause, line=cause.get("line"), text=cause.get("text"),
                               rule=cause.get("rule"))
            # Kept with the record so every front end can show why, later too.
            errs = details["last_errors"][-3:]
            if cause is not None and not any(e.get("line") == cause.get("line") for e in errs):
                errs = [{k: cause.get(k) for k in ("line", "rule", "text")}] + errs[-2:]
            rec.extra["last_errors"] = errs
            self.store.save(rec)
            if st.hint:
                details["hint"] = st.hint
            self._alert("critical", "stage-failed", failure_message(st, cause), rec, **details)
            self._maybe_retry(stage, rec, w, now)

    def _maybe_retry(self, stage: StageConfig, rec: RunRecord, w: StageWatch, now: float) -> None:
        pol = stage.retry
        if pol is None:
            return
        attempts = self.store.records(stage.name)
        # Attempts since the user last launched it by hand (the first included).
        chain = 0
        for r in reversed(attempts):
            chain += 1
            if r.trigger != "retry":
                break
        reasons = set(w.rule_ids())
        if rec.exit_code is not None:
            reasons.add(f"exit:{rec.exit_code}")
        if rec.signal is not None:
            reasons.add(f"signal:{rec.signal}")
        qualifies = "any" in pol.on or bool(reasons & set(pol.on))
        if not qualifies:
            self._alert("info", "retry-not-applicable",
                        f"retry policy does not cover this failure (saw {sorted(reasons)}; "
                        f"policy on {list(pol.on)})", rec)
            return
        if chain >= pol.max_attempts:
            self._alert("critical", "retries-exhausted",
                        f"gave up after {chain} attempts (retry.max_attempts = {pol.max_attempts})", rec)
            return
        self.intent.relaunch[stage.name] = {"mode": "resume" if stage.resume else "restart",
                                            "not_before": now + pol.backoff_s, "trigger": "retry"}
        self.intent.save(self.state_dir)
        self._alert("warning", "retry-scheduled",
                    f"will resume in {pol.backoff_s:.0f}s (attempt {rec.attempt + 1} of at most "
                    f"{rec.attempt - chain + pol.max_attempts})", rec)

    # -- commands ------------------------------------------------------------
    def _command_files(self) -> list[Path]:
        try:
            return sorted(p for p in self.commands_dir.glob("*.json") if p.is_file())
        except OSError:
            return []

    def process_commands(self) -> int:
        files = self._command_files()
        for path in files:
            try:
                cmd = json.loads(path.read_text())
                reply = self.execute(cmd)
            except (OSError, ValueError) as e:
                cmd, reply = {}, {"ok": False, "message": f"unreadable command {path.name}: {e}"}
            except KeyError as e:
                reply = {"ok": False, "message": str(e).strip('"')}
            atomic_write_json(self.replies_dir / path.name, reply, fsync=False)
            try:
                path.unlink()
            except FileNotFoundError:
                pass
        return len(files)

    def execute(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """Run one front-end command; returns ``{"ok": bool, "message": str}``."""
        op = cmd.get("op")
        names: list[str] = list(cmd.get("stages", []))
        for n in names:
            self.config.stage(n)  # KeyError with the list of known stages
        statuses = self.statuses()
        msgs: list[str] = []
        ok = True
        if op == "start":
            targets = self.config.names if cmd.get("all") else dependency_closure(self.config, names)
            for n in targets:
                if n in self.intent.skipped:
                    continue
                st = statuses[n]
                if n not in self.intent.wanted:
                    self.intent.wanted.append(n)
                if st.state == StageState.SUCCEEDED and st.stale and not st.state.active:
                    # Bring it up to date: its inputs changed after it ran.
                    self.intent.relaunch[n] = {"mode": "restart", "not_before": 0, "trigger": "user"}
                    msgs.append(f"{n}: stale ({st.stale}); rerun queued (attempt {st.attempt + 1})")
                elif n in names or cmd.get("all"):
                    if st.state.active:
                        msgs.append(f"{n}: already running")
                    elif st.state == StageState.SUCCEEDED and n in names:
                        msgs.append(f"{n}: already succeeded (use restart to run it again)")
                    elif st.state in (StageState.FAILED, StageState.STOPPED):
                        msgs.append(f"{n}: {st.state.value}; use resume or restart to run it again")
                        ok = ok and not (n in names)
                    elif st.state in (StageState.PENDING, StageState.WAITING):
                        msgs.append(f"{n}: queued")
            self.intent.save(self.state_dir)
        elif op in ("restart", "resume"):
            for n in names:
                st = statuses[n]
                stage = self.config.stage(n)
                if st.state.active:
                    ok = False
                    msgs.append(f"{n}: running; stop it first")
                    continue
                if op == "resume" and st.attempt == 0:
                    ok = False
                    msgs.append(f"{n}: has never run; use start")
                    continue
                if op == "resume" and st.state == StageState.SUCCEEDED:
                    ok = False
                    msgs.append(f"{n}: succeeded; there is nothing to resume "
                                f"(restart runs it again from scratch)")
                    continue
                if op == "resume" and not stage.resume:
                    msgs.append(f"{n}: has no resume arguments; relaunching it as configured")
                self.intent.relaunch[n] = {"mode": op, "not_before": 0, "trigger": "user"}
                if n in self.intent.skipped:
                    self.intent.skipped.remove(n)
                if n not in self.intent.wanted:
                    self.intent.wanted.append(n)
                msgs.append(f"{n}: {op} queued (attempt {st.attempt + 1})")
            self.intent.save(self.state_dir)
        elif op == "stop":
            for n in names:
                self.intent.relaunch.pop(n, None)
                if n in self.intent.wanted and not statuses[n].state.active:
                    self.intent.wanted.remove(n)
                msgs.append(self.stop_stage(n, reason=str(cmd.get("by", "user"))))
            self.intent.save(self.state_dir)
        elif op == "skip":
            for n in names:
                if statuses[n].state.active:
                    ok = False
                    msgs.append(f"{n}: running; stop it before skipping")
                    continue
                if n not in self.intent.skipped:
                    self.intent.skipped.append(n)
                self.intent.relaunch.pop(n, None)
                msgs.append(f"{n}: skipped (dependents treat it as done)")
            self.intent.save(self.state_dir)
        elif op == "unskip":
            for n in names:
                if n in self.intent.skipped:
                    self.intent.skipped.remove(n)
                msgs.append(f"{n}: no longer skipped")
            self.intent.save(self.state_dir)
        elif op == "ping":
            msgs.append("driver alive")
        else:
            return {"ok": False, "message": f"unknown command {op!r}"}
        return {"ok": ok, "message": "\n".join(msgs)}

    # -- output ----------------------------------------------------------------
    def _alert(self, level: str, kind: str, message: str, rec: RunRecord | None = None,
               **details: Any) -> None:
        self.hub.emit(Alert(level=level, kind=kind, message=message,
                            stage=rec.stage if rec else None, attempt=rec.attempt if rec else None,
                            details={k: v for k, v in details.items() if v is not None}))

    def _report_problems(self) -> None:
        for p in self.store.problems:
            if p not in self._problems_seen:
                self._problems_seen.add(p)
                self._alert("warning", "state-problem", p)

    def write_state(self, statuses: dict[str, StageStatus] | None = None, force: bool = False) -> None:
        statuses = statuses or self.statuses()
        doc = {
            "schema": 1,
            "pipeline": self.config.name,
            "driver_pid": os.getpid(),
            "gpu": self.gpu_summary(),
            "stages": [
                {"name": s.name, "run_id": s.run_id, "live": s.live,
                 "stalled": s.state == StageState.STALLED, "waiting": self.waiting.get(s.name)}
                for s in statuses.values()
            ],
        }
        text = json.dumps(doc, sort_keys=True)
        now = time.monotonic()
        if force or text != self._last_state or now - self._last_state_write > 5:
            doc["time"] = time.time()
            atomic_write_json(self.state_dir / "state.json", doc, fsync=False)
            self._last_state = text
            self._last_state_write = now


def failure_message(st: StageStatus, cause: dict[str, Any] | None) -> str:
    """A failed attempt's alert text: its cause first, then how it ended and the hint."""
    how = st.reason or "failed"
    hint = f" — {st.hint}" if st.hint else ""
    if cause is None or cause.get("rule") == "early-exit":
        return f"failed: {how}{hint}"
    text = [ln for ln in str(cause.get("text") or "").splitlines() if ln.strip()]
    head = text[-1].strip() if text else str(cause.get("rule") or "fatal error")
    if len(head) > 200:
        head = head[:197] + "..."
    root = f"; root cause {cause['root_cause']}" if cause.get("root_cause") else ""
    return f"failed: {head} (line {cause.get('line')}, {cause.get('rule')}){root}; {how}{hint}"


def main(argv: list[str] | None = None) -> int:
    """``python -m eagle3tui.supervisor.driver --config PATH [--set k=v]``: the detached driver."""
    ap = argparse.ArgumentParser(prog="eagle3tui-driver")
    ap.add_argument("--config", required=True)
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        config = load_config(args.config, parse_overrides(args.set))
    except ConfigError as e:
        print(f"eagle3tui driver: {e}", file=sys.stderr)
        return 2
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    # The detached driver gets the same dedup and [alerts] command as --watch.
    hub = build_hub(config)
    try:
        return Driver(config, hub=hub).run(stop)
    finally:
        hub.close()


if __name__ == "__main__":
    raise SystemExit(main())
