"""The driver: the one process per state directory that advances the pipeline.

It launches stages when their dependencies and GPUs allow, follows their
logs, turns what it sees into alerts, stops services nobody needs any more,
enforces stop grace periods, schedules retries, and writes ``state.json``
for the front ends. Front ends never launch anything themselves: they drop
command files in ``commands/`` (see protocol.py) and read the state.

It is started on demand as a detached process (``python -m eagle3tui.supervisor.driver``)
by any front end, or runs in the foreground under ``--watch``. It exits
when nothing is left to do; the run records and the wrapper's result files
mean nothing is lost while no driver runs, and the next one reattaches.
"""

from __future__ import annotations

import argparse
import errno
import hashlib
import json
import os
import signal
import sys
import threading
import time
import traceback
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from eagle3tui.alerts import Alert, AlertHub, AlertLog, build_hub
from eagle3tui.atomic import atomic_write_json
from eagle3tui.config import PipelineConfig, StageConfig, load_config, parse_overrides
from eagle3tui.durations import format_duration
from eagle3tui.errors import ConfigError
from eagle3tui.supervisor import completion, elastic_error
from eagle3tui.supervisor.acceptance_alert import ALERT_KIND as ACCEPTANCE_LOW
from eagle3tui.supervisor.acceptance_alert import AcceptanceGuard
from eagle3tui.supervisor.deadlines import deadline, due, seconds_left
from eagle3tui.supervisor.executors import Executors, is_slurm
from eagle3tui.supervisor.last_config import record_config
from eagle3tui.supervisor.log_disk import log_disk_problem
from eagle3tui.supervisor.launcher import (
    ensure_keeper,
    reap_wrappers,
    resume_interrupted,
)
from eagle3tui.supervisor.lock import DriverLock
from eagle3tui.supervisor.metrics_host import MetricsHost
from eagle3tui.supervisor.procs import is_alive, signal_name
from eagle3tui.supervisor.protocol import (
    COMMANDS_DIR,
    REPLIES_DIR,
    command_dirs,
    driver_spec,
    read_command,
)
from eagle3tui.supervisor.records import RunRecord, RunStore
from eagle3tui.supervisor.scheduler import dependency_closure, plan
from eagle3tui.supervisor.slurm_state import SLURM
from eagle3tui.supervisor.stage_alerts import StageWatch, ruleset_for
from eagle3tui.supervisor.wakeups import DriverWakeups
from eagle3tui.supervisor.state import (
    ON_FATAL_STOP,
    Intent,
    StageState,
    StageStatus,
    derive_statuses,
    describe_gpu_activity,
    gpu_activity,
)
from eagle3tui.telemetry.collector import (
    GpuMonitor,
    TelemetryUpdate,
    memory_history,
    summarize,
)
from eagle3tui.telemetry.node_report import read_report, witness_of
from eagle3tui.telemetry.oom_kill import failure_lead as oom_lead
from eagle3tui.telemetry.xid import XidWatch, failure_lead
from eagle3tui.trusted import NotRegularFile, UntrustedFile

# A stage's GPU memory freed while it still runs is reported only if the stage
# is still running this long after: a launcher outlives its dying or stopped
# workers for a moment, and that teardown is not news.
MEMORY_FREED_SETTLE_S = 5.0
# A fatal error with the process still alive this long is announced as failing.
FAILING_ANNOUNCE_S = 5.0
# Wake-ups of busy logs are coalesced: a pass over the followed logs runs at most
# this often while they keep writing (tqdm at 10 Hz on 8 ranks is one pass, not
# eighty), and at once after a quiet spell. Meanwhile the unread bytes are looked
# at every PEEK_S for a fatal rule's keyword, which runs the pass at once, that
# log first. A pass costs a progress parse per busy log whatever its length, so
# on 8 chatty ranks the pass rate is much of the driver's CPU. Not longer: the
# watch decides "failing, or progress since the error?" once per read, so progress
# and a later fatal line read together fold that line into the first failure
# (0.25 s did, in bench_follow's latency8, where they are 0.2 s apart).
COALESCE_S = 0.1
# A full pass (records, GPU witness, Xid, stalls, a renamed log's old file) every 1 s,
# woken at once by a result file; stage roots are refreshed after a launch and a
# launched stage's log is opened at launch, so neither waits for this pass.
FULL_EVERY_S_INOTIFY = 1.0
PEEK_S = 0.004
# Launches of one pass: this many local starts at once, and the running
# stages' logs are read this often while they go on.
LAUNCH_WORKERS = 8
LAUNCH_READ_EVERY_S = 0.2

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
                 nvml: Any | None = None, gpu: bool = True, use_inotify: bool = True,
                 keep_alive: bool = False) -> None:
        self.config = config
        # Stage wrappers start a driver when none runs (see stagewrap.py); off
        # for drivers embedded in tests and benchmarks, which end on purpose.
        self.keep_alive = keep_alive
        self._config_stamp = self._config_files_stamp()
        self._config_digest = self._config_files_digest()
        self._config_rejected: str | None = None
        # The last reload's note, told once to the next command's sender too.
        self._reload_note: str | None = None
        # Since when the state directory refuses writes (full, read-only), and why.
        self._storage_error: tuple[float, str] | None = None
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
        self.wakeups = DriverWakeups(poll_interval=tick_s, use_inotify=use_inotify)
        self.exit_when_idle = exit_when_idle
        self.idle_grace_s = idle_grace_s
        self.rules = ruleset_for(config)
        self.acceptance = AcceptanceGuard(config)
        self.xids = XidWatch.from_env()  # GPU faults from the kernel log (telemetry/xid.py)
        self.watches: dict[str, StageWatch] = {}
        self._watch_recs: dict[str, RunRecord] = {}
        # A full pass (records, scheduling, state.json) runs this often; with inotify
        # a stage's result file wakes one at once, so it is needed less often.
        self.full_every_s = 0.25
        self.full_every_s_inotify = FULL_EVERY_S_INOTIFY
        self._last_full = 0.0
        self._last_full_mono = 0.0
        self._logs_read_at = 0.0  # when _read_running_logs last ran (monotonic)
        self._pids_unsaved: dict[str, str] = {}  # stage -> run id launched, its pid not yet saved
        self.coalesce_s = COALESCE_S
        # Followed stages whose unread bytes hold a fatal rule's keyword: read first.
        self._fatal_first: list[str] = []
        self._peeked_at = 0.0  # monotonic time of the last look at every followed log
        self._commands_key: tuple[int, int, int] | None = None  # the commands directory as last listed
        self._last_pass = 0.0  # monotonic end of the last tick
        self._busy = True
        self.probers: dict[str, ServiceProber] = {}
        self.waiting: dict[str, str] = {}
        self._last_state = ""
        self._last_state_write = 0.0
        self._problems_seen: set[str] = set()
        self._announced: list[Any] | None = completion.announced(self.state_dir)
        # Where stages run: this host, or Slurm (executor = "slurm").
        self.executors = Executors(
            on_event=lambda level, msg, rec: self._alert(level, "slurm", msg, rec),
            gpu_interval=config.gpu_interval_s)
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
        # Stage -> the node report of a running Slurm stage (telemetry/node_report.py).
        self._remote_reports: dict[str, dict[str, Any]] = {}
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
        record_config(self.config)  # for `status` and `stop` while the file on disk is broken
        stop = stop or threading.Event()
        idle_marker = self.state_dir / "driver.idle"
        metrics = None
        try:
            idle_marker.unlink(missing_ok=True)
            if self.keep_alive:
                ensure_keeper(self.state_dir, driver_spec(self.config))
            command_dirs(self.state_dir)
            if self.alert_log.repaired:
                self._alert("warning", "alerts-repaired", self.alert_log.repaired)
            if self.gpu is not None:
                self.gpu.start()
            metrics = MetricsHost(self.config)
            why = metrics.start()
            if why:
                self._alert("warning", "metrics-off", why)
            why = self.xids.open()
            if why and any(not s.gpus.empty for s in self.config.stages):
                self._alert("info", "xid-off", why)  # once per driver, where GPUs are used
            self.wakeups.start()
            self.wakeups.add_dir(self.commands_dir)
            if self.wakeups.mode == "inotify":
                self.full_every_s = self.full_every_s_inotify
            idle_since: float | None = None
            failures = 0
            while not stop.is_set():
                try:
                    if not self.lock.still_held() and not self._relock():
                        return 4
                    busy = self.tick()
                    failures = 0
                    if self._storage_error is not None:
                        self._storage_recovered()
                except OSError as e:
                    if e.errno not in _STORAGE_ERRNOS:
                        raise
                    # A full or read-only state directory is not a bug: wait
                    # for space without giving up, and explain once it returns.
                    if self._storage_error is None:
                        self._storage_error = (time.time(), f"{e.strerror or e}: {e.filename or ''}")
                        try:  # driver.log may sit on the same full filesystem
                            print(f"eagle3tui driver: state directory not writable: {e}",
                                  file=sys.stderr, flush=True)
                        except (OSError, ValueError):
                            pass
                    stop.wait(1.0)
                    continue
                except Exception:  # noqa: BLE001
                    self._last_pass = time.monotonic()
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
                self._last_pass = now
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
            self._save_marks()
            # Idle, or stopped on purpose (SIGTERM): the keeper need not start another.
            idle_marker.write_text(f"{time.time()}\n")
            self.store.discard_fallback_dir()  # made again at the next launch
        finally:
            if metrics is not None:
                metrics.close()
            self.xids.close()
            self.wakeups.stop()
            for p in self.probers.values():
                p.stop()
            if self.gpu is not None:
                self.gpu.close()
            self.executors.close()
            self.lock.release()
        return 0

    def _wait_for_work(self, stop: threading.Event) -> None:
        """Sleep until a followed log or a command changes, or the next full pass.

        A log with a backlog (its last poll stopped at its byte bound) is read
        on at once. Wake-ups closer than ``coalesce_s`` to the last pass wait
        for it, unless a command or a fatal-looking line arrives meanwhile.
        """
        if any(w.behind for w in self.watches.values()):
            return
        if self.wakeups.mode != "inotify":
            stop.wait(self.tick_s)
            return
        self.wakeups.wait(max(0.0, self._last_full_mono + self.full_every_s - time.monotonic()))
        deadline = min(self._last_pass + self.coalesce_s, self._last_full_mono + self.full_every_s)
        while not stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0 or self._urgent():
                return
            stop.wait(min(PEEK_S, left))

    def _urgent(self) -> bool:
        """A command waits, or a followed log's unread bytes may hold a fatal line."""
        return self._commands_arrived() or self._peek_fatal()

    def _commands_arrived(self) -> bool:
        """Whether a command file waits, listed only when the directory changed since the last look.

        Asked every PEEK_S while passes are coalesced: one ``stat``, not a listing. A
        change the directory's time cannot show (within its granularity) waits at most
        for the coalesced pass, which lists the directory anyway."""
        try:
            st = os.stat(self.commands_dir)
        except OSError:
            return False
        key = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
        if key == self._commands_key:
            return False
        self._commands_key = key
        return bool(self._command_files())

    def _peek_fatal(self) -> bool:
        """Look at every followed log's unread bytes; remember those that may hold a fatal line."""
        for name, w in self.watches.items():
            # A log behind is read on at once anyway, a bounded read a pass.
            if not w.behind and name not in self._fatal_first and w.fatal_ahead():
                self._fatal_first.append(name)
        return bool(self._fatal_first)

    def _poll_fatal_first(self, now: float, force: bool = False) -> list[str]:
        """Read the logs that may hold a fatal line, and write their alerts, before anything else.

        Between the reads of one pass the logs are looked at once per PEEK_S at most (64
        quiet stages would otherwise cost 64 looks per stage read). Returns the stages read."""
        mono = time.monotonic()
        if force or mono - self._peeked_at >= PEEK_S:
            self._peeked_at = mono
            self._peek_fatal()  # what arrived during the last pass, too
        names, self._fatal_first = self._fatal_first, []
        for name in names:
            w = self.watches.get(name)
            rec = self._watch_recs.get(name)
            if w is not None and rec is not None:
                self._emit_watch(w, w.poll(now), rec)
        return names

    def _save_marks(self) -> None:
        """Save every followed attempt's alerted mark now (the driver stops)."""
        for name, w in self.watches.items():
            rec = self._watch_recs.get(name)
            if rec is not None:
                w.commit_seen(self.hub.first_held_line(rec.stage, rec.attempt))

    # -- one tick -------------------------------------------------------
    def tick(self) -> bool:
        """One pass; True while anything is running, scheduled or queued."""
        now = time.time()
        read_first = self._poll_fatal_first(now, force=True)
        handled = self.process_commands()
        # The pass cadence is a duration: monotonic, or a clock step stops full passes.
        mono = time.monotonic()
        if not handled and not self.wakeups.take_full() and mono - self._last_full < self.full_every_s:
            # Between full passes only the logs of running attempts are read,
            # which keeps a fatal line's alert fast and an idle driver cheap.
            self._read_running_logs(skip=read_first)
            return self._busy
        self._last_full = mono
        self._last_full_mono = mono
        reap_wrappers()
        if not self._intent_readable():
            return True
        self._check_config()
        self._restore_lost_records()
        self._settle_relaunches()
        self.executors.poll(self.config, self.store)
        latest: dict[str, RunRecord] = {}
        statuses = self.statuses(latest)
        self._save_started_pids(latest)
        self._report_problems()
        # This pass's roots: the last pass's predate a stage launched at its end.
        self._stage_roots = self._local_roots(statuses)
        for ev in self.xids.poll(self.gpu_summary, self._stage_roots):  # before a failure is settled
            self._alert("critical" if ev.hardware else "warning", "gpu-xid", ev.describe(),
                        latest.get(ev.stage) if ev.stage else None, **ev.to_json())
        for st in statuses.values():
            rec = latest.get(st.name)
            if rec is None:
                continue
            stage = self.config.stage(st.name)
            if self._finish_interrupted_launch(stage, rec, now):
                continue
            if st.state.active:
                # A queued job has no output yet (nor stalls); an unreadable record
                # has no log position to follow from.
                if st.state != StageState.QUEUED and not rec.extra.get("unreadable"):
                    self._poll_fatal_first(now)  # a fatal line elsewhere waits for no log's read
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
        self._launch_all(p.start)
        if p.start or p.stop_services:
            statuses = self.statuses()
            # The sampler follows a stage from its launch, not from the next full pass.
            self._stage_roots = self._local_roots(statuses)
        self.write_state(statuses)
        self._announce_completion(statuses)
        active = any(s.state.active for s in statuses.values())
        scheduled = any(
            not due(r) for r in self.intent.relaunch.values())
        waiting_on_active = bool(p.waiting) and active
        backlog = any(w.behind for w in self.watches.values())  # an ended stage's log still being read
        self._busy = bool(handled or active or scheduled or p.start or waiting_on_active or backlog)
        return self._busy

    def _save_started_pids(self, latest: dict[str, RunRecord]) -> None:
        """Write into the records of this driver's launches the stage pids their wrappers reported.

        A launch does not wait for them (``_launch_all``); the store folds a
        wrapper's ``started.json`` into every record it reads, and this puts it
        in the record's own file as soon as a pass sees it.
        """
        for name, run_id in list(self._pids_unsaved.items()):
            rec = latest.get(name)
            if rec is None or rec.run_id != run_id:
                del self._pids_unsaved[name]
            elif rec.pid is not None or rec.ended_at is not None:
                del self._pids_unsaved[name]
                self.store.save(rec, durable=False)  # a power loss ends the process it names

    def _read_running_logs(self, names: set[str] | None = None, skip: list[str] | None = None) -> None:
        """Read the followed logs of running attempts (of ``names``, or all); alert what they hold.

        ``skip``: logs this pass already read. Between two logs' reads, a log
        that may hold a fatal line is read first: a fatal line waits for one
        busy log's read, not for all of them."""
        self._logs_read_at = time.monotonic()
        now = time.time()
        done = list(skip or ())
        for name, w in list(self.watches.items()):
            rec = self._watch_recs.get(name) if names is None or name in names else None
            if rec is not None and name not in done:
                self._emit_watch(w, w.poll(now), rec)
                done += self._poll_fatal_first(now)

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

    def _local_roots(self, statuses: dict[str, StageStatus]) -> dict[str, int]:
        """Each active local stage's root pid (a Slurm stage's pid lives on its node: none here)."""
        return {n: s.pid for n, s in statuses.items() if s.state.active and s.pid
                and self.config.stage(n).executor == "local"}

    def _telemetry_tick(self, statuses: dict[str, StageStatus], now: float) -> None:
        """Feed stage pids to the sampler; turn its events into alerts."""
        self._stage_roots = self._local_roots(statuses)
        ends: dict[str, float] = {}
        for n, s in statuses.items():
            remaining = ((s.live or {}).get("eta") or {}).get("remaining_s")
            if s.state.active and remaining is not None:
                for path in self.config.stage(n).disk:
                    ends[str(path)] = now + float(remaining)
        self._projected_end = ends
        # Read once a pass: the witness below and state.json's GPU document share them.
        self._remote_reports = self._remote_gpu_reports(statuses)
        for name, w in self.watches.items():
            rec = self._watch_recs.get(name)
            if rec is not None and is_slurm(rec):
                # Its GPUs are on the job's node: the node's own report testifies.
                w.gpu_witness = witness_of(self._remote_reports.get(name), now)
            elif self.gpu is not None:
                w.gpu_witness = self.gpu.witness(name)
        if self.gpu is None:
            return
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
        """The last GPU sample with per-stage attribution and history, for ``state.json``,
        and under ``remote`` the node reports of running stages on other nodes (as read
        in the last full pass)."""
        doc = None
        if self.gpu is not None and self.gpu.latest is not None:
            doc = summarize(self.gpu.latest, memory_history(self.gpu))
            if self.xids.by_gpu:
                doc["xid"] = dict(self.xids.by_gpu)  # the last Xid event per GPU
        if self._remote_reports:
            doc = dict(doc or {"available": False, "error": "no GPU sample on this host yet"},
                       remote=dict(self._remote_reports))
        return doc

    def _remote_gpu_reports(self, statuses: dict[str, StageStatus]) -> dict[str, Any]:
        """Stage -> its node report, for the active attempts of Slurm stages."""
        out = {}
        for s in statuses.values():
            if s.state.active and s.attempt and self.config.stage(s.name).executor == SLURM:
                report = read_report(self.store.gpu_report_path(s.name, s.attempt))
                if report is not None:
                    out[s.name] = report
        return out

    # -- launching and stopping -------------------------------------------
    def _launch_all(self, starts: list[tuple[str, bool]]) -> None:
        """Start this pass's stages together; the running stages' logs are read meanwhile.

        Each start is mostly waiting (fsyncs of its write-ahead record, a fork):
        local stages start in a few threads at once, so the waits overlap (200
        in about a second, where one by one took 32 s), and every
        LAUNCH_READ_EVERY_S the logs of running stages are read, so a fatal
        line waits for no launch. The threads touch only the stage's own
        files; the intent, the alerts and the watches stay on this thread
        (``_prepare_launch`` before, ``_finish_launch`` after). Slurm
        submissions go one by one, as before: their failures alert at once.
        """
        jobs = [(name, resume, prep) for name, resume in starts
                if (prep := self._prepare_launch(name, resume)) is not None]
        local = [j for j in jobs if self.config.stage(j[0]).executor != SLURM]
        workers = min(LAUNCH_WORKERS, len(local))
        pool = ThreadPoolExecutor(workers, thread_name_prefix="launch") if workers > 1 else None
        futures = {j[0]: pool.submit(self._start_attempt, j[0], j[1], j[2]) for j in local} if pool else {}
        failure: BaseException | None = None
        # The stages that ran before this pass: a stage launched now had its
        # log read at its launch (_finish_launch), and reading 200 logs every
        # 0.2 s would slow the launches down.
        running = set(self.watches)
        self._logs_read_at = time.monotonic()
        try:
            with self.alert_log.one_sync():  # 200 stage-started alerts, one fsync
                for name, resume, prep in jobs:
                    fut = futures.get(name)
                    try:
                        rec = (self._wait_reading_logs(fut, running) if fut
                               else self._start_attempt(name, resume, prep))
                    except Exception as e:  # the others still get their alert and watch
                        failure = failure or e
                        continue
                    self._finish_launch(name, resume, prep, rec)
                    if time.monotonic() - self._logs_read_at >= LAUNCH_READ_EVERY_S:
                        self._read_running_logs(running)
        finally:
            if pool is not None:
                pool.shutdown(wait=True)
        if failure is not None:
            raise failure

    def _wait_reading_logs(self, fut: Future[RunRecord], running: set[str]) -> RunRecord:
        """``fut``'s record, the logs of ``running`` read while it is not done."""
        while True:
            try:
                return fut.result(timeout=max(0.0, self._logs_read_at + LAUNCH_READ_EVERY_S - time.monotonic()))
            except FutureTimeout:
                self._read_running_logs(running)

    def _prepare_launch(self, name: str, resume: bool) -> dict[str, Any] | None:
        """What a launch of ``name`` needs, its relaunch written ahead; None when it must not run."""
        known = self._watch_recs.get(name)
        if known is not None and (is_alive(known.pid, known.create_time)
                                  or is_alive(known.wrapper_pid, known.wrapper_create_time)):
            # Its record vanished from disk (a deleted state directory) but this
            # driver watches it running: write it back, never launch a second copy.
            self._restore_lost_records()
            return None
        relaunch = self.intent.relaunch.get(name)
        prev = self.store.latest(name)
        trigger = (relaunch or {}).get("trigger", "pipeline" if prev is None else "user")
        if relaunch is not None:
            # Write-ahead: the relaunch names the attempt that fulfils it before
            # that attempt exists, so a driver killed right after the launch
            # finds the attempt on disk and never launches the stage again.
            relaunch["attempt"] = self.store.next_attempt(name)
            self.intent.save(self.state_dir)
        return {"relaunch": relaunch, "prev": prev, "trigger": trigger,
                "driver": driver_spec(self.config) if self.keep_alive else None}

    def _start_attempt(self, name: str, resume: bool, prep: dict[str, Any]) -> RunRecord:
        """Start the attempt (any thread: it touches only the stage's own files)."""
        stage, prev = self.config.stage(name), prep["prev"]
        return self.executors.for_stage(stage).launch(
            stage, self.store, resume=resume,
            resumed_from=prev.attempt if (resume and prev) else None, trigger=prep["trigger"],
            driver=prep["driver"])

    def _finish_launch(self, name: str, resume: bool, prep: dict[str, Any], rec: RunRecord) -> None:
        """The started attempt's intent, alerts and watch."""
        stage, relaunch, trigger = self.config.stage(name), prep["relaunch"], prep["trigger"]
        if relaunch is not None:
            self.intent.relaunch.pop(name, None)
            self.intent.save(self.state_dir)
        if rec.ended_at is None:
            self._watch_recs[name] = rec  # known running from now on (see _restore_lost_records)
            if rec.pid is None:
                self._pids_unsaved[name] = rec.run_id
        if rec.ended_at is not None and rec.error:
            # One critical for a start that cannot happen, and the retry policy
            # decided (a full log disk passes): both are on disk before the attempt
            # is marked settled, so a driver killed in between repeats them (the
            # retry once: _maybe_retry knows the attempt it follows) and loses none;
            # once settled, _finalize adds no early-exit or second failure.
            self._alert("critical", "stage-failed", f"could not start: {rec.error}", rec,
                        exit_code=rec.exit_code)
            self._maybe_retry(stage, rec, self._exit_reasons(rec), time.time())
            rec.extra["finalized"] = True
            self.store.save(rec)
            return
        if resume:
            # A resume the user asked for is news, not a warning; one the retry policy
            # chose means something failed.
            self._alert("warning" if trigger == "retry" else "info", "stage-resumed",
                        f"resumed (attempt {rec.attempt}, resuming attempt {rec.resumed_from})"
                        + (" by retry policy" if trigger == "retry" else ""), rec,
                        argv=rec.argv)
        else:
            self._alert("info", "stage-started", f"started (attempt {rec.attempt})", rec,
                        argv=rec.argv, pid=rec.pid, wrapper_pid=rec.wrapper_pid)
        if rec.ended_at is None and not is_slurm(rec):
            # Its log is opened now, not at the next full pass (up to a second
            # away): a log renamed before then (logrotate) is still the one the
            # stage writes, and only a descriptor held from before follows it.
            self._follow(stage, rec, time.time())

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
            # The grace is a duration: a wall-clock step must not SIGKILL at once.
            rec.extra["stop_deadline"] = deadline(self.config.stage(name).stop_grace_s)
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
        until = rec.extra.get("stop_deadline")
        left = seconds_left(until) if isinstance(until, dict) else \
            stage.stop_grace_s - (now - rec.stop_requested_at)
        if left <= 0:
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
            # The wrapper writes it when the stage ends: a full pass settles the attempt now.
            self.wakeups.add(self.store.prefix(rec.stage, rec.attempt) + ".result.json", full=True)
        self._watch_recs[stage.name] = rec
        self._emit_watch(w, w.poll(now), rec)
        self._announce_failing(stage, rec, w, now)
        low = self.acceptance.observe(stage, rec.run_id, w.monitor.figures, w.monitor.figures_line, now,
                                      bool(rec.extra.get("acceptance_alerted")))
        if low is not None:  # once per attempt, kept with the record
            self._alert("warning", ACCEPTANCE_LOW, low[0], rec, **low[1])
            rec.extra["acceptance_alerted"] = True
            self.store.save(rec)

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
            if (w := self.watches.get(stage.name)) is not None:
                w.mark_ready(now)  # a ready server that is idle is not stalled
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
        # Every alert and the retry decision are written before the record is
        # marked finalized: a driver killed half-way repeats them (at least
        # once), and never loses them.
        if rec.extra.get("finalized") or rec.extra.get("unreadable"):
            return
        w = self.watches.get(stage.name)
        if w is None or w.run_id != rec.run_id:
            w = StageWatch(stage, rec, self.config, self.state_dir, self.rules)
        alerts = w.poll(now)
        if w.behind:
            # It ended with a backlog of log (a burst at its end, or a driver that
            # reattached late): read it over the next passes, POLL_BYTES at a time,
            # as while it ran (bounded memory, other stages served), then settle.
            self.watches[stage.name] = w
            self._watch_recs[stage.name] = rec
            self._emit_watch(w, alerts, rec)
            return
        self.watches.pop(stage.name, None)
        self._watch_recs.pop(stage.name, None)
        self.wakeups.remove(rec.log)
        self.wakeups.remove(self.store.prefix(rec.stage, rec.attempt) + ".result.json")
        self._emit_watch(w, alerts + w.finish(rec), rec)
        pr = self.probers.pop(rec.run_id, None)
        if pr:
            pr.stop()
        if rec.extra.get("wrapper_killed_after_grace") and not rec.killed_after_grace:
            rec.killed_after_grace = True
            self._alert("warning", "stage-killed",
                        f"processes of the stage outlived SIGTERM by {stage.stop_grace_s:.0f}s: "
                        "the stage wrapper sent SIGKILL", rec)
        if rec.extra.get("result_write_errors") and not rec.extra.get("write_errors_alerted"):
            rec.extra["write_errors_alerted"] = True
            self._alert("critical", "result-write-failed",
                        "the state directory refused the stage's result; it was recovered "
                        "from a fallback: " + "; ".join(map(str, rec.extra["result_write_errors"])),
                        rec, fix="free space on the state directory's filesystem or make it writable")
        if rec.ended_at is None:
            rec.ended_at = now
            if st.state == StageState.FAILED and not rec.error:
                # "lost" has no exit code: keep the reason and its hint with the
                # record, or it later reads "exit None" with no advice.
                rec.error = st.reason + (f" ({st.hint})" if st.hint else "")
        # Repeats held back for this attempt go out now, before the line that says it ended.
        self.hub.flush_attempt(rec.stage, rec.attempt)
        xids = self.xids.take(stage.name)
        ooms = self.xids.ooms.take(stage.name)
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
            cause = elastic_error.explain(w.cause(), rec.extra)  # torchrun's record leads, when it wrote one
            if cause is not None:
                # The quote under the message is the cause, not the last warning.
                details.update(cause=cause, line=cause.get("line"), text=cause.get("text"),
                               rule=cause.get("rule"))
            # Kept with the record so every front end can show why, later too.
            errs = details["last_errors"][-3:]
            if cause is not None and not any(e.get("line") == cause.get("line") for e in errs):
                errs = [{k: cause.get(k) for k in ("line", "rule", "text")}] + errs[-2:]
            rec.extra["last_errors"] = errs
            disk = log_disk_problem(rec.log)
            if disk:  # the stage's own error may never have reached its log
                details["log_disk"] = disk
                st.hint = f"{disk}, so its last output may be lost" + (f"; {st.hint}" if st.hint else "")
            if st.hint:
                details["hint"] = st.hint
            message = failure_message(st, cause)
            oom = oom_lead(ooms)
            if oom:  # the kernel killed one of its processes for memory: that is why it died
                details["oom_kill"] = [k.to_json() for k in ooms]
                w.rules_seen.add("oom")  # the attempt's cause is the oom family (retry.on = ["oom"])
                message = f"failed: {oom}; {message.removeprefix('failed: ')}"
            xid = failure_lead(xids)
            if xid:  # the GPU's fault explains what the log shows
                details["xid"] = xid
                message = f"{xid}; {message}"
            self._alert("critical", "stage-failed", message, rec, **details)
            self._maybe_retry(stage, rec, set(w.rule_ids()) | self._exit_reasons(rec), now)
        rec.extra["finalized"] = True
        self.store.save(rec)

    @staticmethod
    def _exit_reasons(rec: RunRecord) -> set[str]:
        """``exit:N`` and ``signal:N`` of an ended attempt, as ``retry.on`` names them."""
        reasons = set()
        if rec.exit_code is not None:
            reasons.add(f"exit:{rec.exit_code}")
        if rec.signal is not None:
            reasons.add(f"signal:{rec.signal}")
        return reasons

    def _maybe_retry(self, stage: StageConfig, rec: RunRecord, reasons: set[str], now: float) -> None:
        pol = stage.retry
        if pol is None:
            return
        if (self.intent.relaunch.get(stage.name) or {}).get("after_attempt") == rec.attempt:
            return  # an earlier driver decided this retry before it died
        attempts = self.store.records(stage.name)
        # Attempts since the user last launched it by hand (the first included).
        chain = 0
        for r in reversed(attempts):
            chain += 1
            if r.trigger != "retry":
                break
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
                                            **deadline(pol.backoff_s), "trigger": "retry",
                                            "after_attempt": rec.attempt}
        self.intent.save(self.state_dir)
        self._alert("warning", "retry-scheduled",
                    f"will resume in {pol.backoff_s:.0f}s (attempt {rec.attempt + 1} of at most "
                    f"{rec.attempt - chain + pol.max_attempts})", rec)

    def _announce_completion(self, statuses: dict[str, StageStatus]) -> None:
        """One ``pipeline-complete`` alert per completion (supervisor/completion.py)."""
        done = completion.completion(self.config, list(statuses.values()), self.intent)
        if done is None or done.key == self._announced:
            return
        result = done.result()
        message = done.message(result)
        self._alert("info", completion.KIND, message, None, succeeded=done.succeeded,
                    skipped=done.skipped or None, elapsed_s=done.elapsed_s,
                    last_stage=done.last_stage, result=result or None)
        # On disk after the alert: a driver killed in between announces it again, never not at all.
        completion.mark_announced(self.state_dir, done, time.time(), message)
        self._announced = done.key

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
                cmd = read_command(path)
                reply = self.execute(cmd)
            except (UntrustedFile, NotRegularFile) as e:
                # Not ours to obey (another user's file, a link): never executed.
                path.unlink(missing_ok=True)
                self._alert("critical", "command-refused", f"command {path.name} refused: {e}")
                continue
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
        if self.intent.problem and op != "ping":
            return {"ok": False, "message": self.intent.problem}
        reload_note = self._adopt_overrides(cmd)
        if reload_note and reload_note.startswith("refused") and op != "stop":
            # A stop never needs the new configuration: it works under the one kept.
            return {"ok": False, "message": reload_note[len("refused: "):]}
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
                    msgs.append(f"{n}: {'changed' if st.changed else 'stale'} "
                                f"({st.changed or st.stale}); rerun queued (attempt {st.attempt + 1})")
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
            if cmd.get("all") and not msgs:
                msgs.append("nothing to do: every stage succeeded with the current settings and "
                            "nothing it uses changed since; to run a stage again anyway, use "
                            "`restart NAME` (R in the TUI)")
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
        if reload_note:
            msgs.insert(0, reload_note)
        return {"ok": ok, "message": "\n".join(msgs)}

    # -- durability (issue 13) ---------------------------------------------------
    def _emit_watch(self, w: StageWatch, alerts: list[Any], rec: RunRecord) -> None:
        """Emit a watch's alerts, then mark their lines alerted: never the other way round.

        The mark stops short of lines whose repeats the hub still holds in a
        merge window (in memory), so a driver killed now re-reads them.
        """
        for level, kind, message, details in alerts:
            self._alert(level, kind, message, rec, **details)
        # Saved (fsynced) now when an alert went out; otherwise at most every
        # few hundred ms (commit_seen): never one fsync per wake-up.
        w.commit_seen(self.hub.first_held_line(rec.stage, rec.attempt), alerted=bool(alerts))

    def _intent_readable(self) -> bool:
        """False (and one critical alert) while intent.json exists but cannot be believed.

        It may hold a retry that is due: acting on an empty intent would lose
        it, and saving one would overwrite it. Running stages keep being
        followed between full passes; nothing is launched or settled.
        """
        if self.intent.problem:
            self.intent = Intent.load(self.state_dir)
        if not self.intent.problem:
            self._intent_alerted = None
            return True
        if getattr(self, "_intent_alerted", None) != self.intent.problem:
            self._intent_alerted = self.intent.problem
            self._alert("critical", "intent-unreadable", self.intent.problem)
        return False

    def _settle_relaunches(self) -> None:
        """Drop relaunches whose attempt was created before a driver died (see _launch)."""
        done = [n for n, r in self.intent.relaunch.items() if r.get("attempt") and Path(
            self.store.prefix(n, int(r["attempt"])) + ".json").exists()]
        for n in done:
            del self.intent.relaunch[n]
        if done:
            self.intent.save(self.state_dir)

    def _finish_interrupted_launch(self, stage: StageConfig, rec: RunRecord, now: float) -> bool:
        """Start (or adopt) an attempt a dead driver saved but did not start; True if it did."""
        if rec.wrapper_pid is not None or rec.pid is not None or rec.finished or rec.error \
                or rec.stop_requested_at or rec.extra.get("unreadable"):
            return False
        if is_slurm(rec):
            return False  # a queued job has no pid yet; the Slurm executor recovers its own submissions
        if now - rec.launched_at < 1.0:
            return False  # the wrapper may still be exec'ing: give it a moment
        started = resume_interrupted(stage, self.store, rec)
        if started is None:
            return False
        self._alert("warning", "launch-completed",
                    f"attempt {rec.attempt} was saved but not started by a driver that died; "
                    + ("adopted its running wrapper" if started.pid and started.launched_at < now - 1
                       else "started it now (same attempt, no duplicate)"), started)
        return True

    def _restore_lost_records(self) -> None:
        """Write back the records of running attempts that vanished from disk.

        A deleted state directory (or runs/) would otherwise make a running
        stage look never run, and the next pass would launch it a second time.
        """
        lost = [rec for rec in self._watch_recs.values()
                if not Path(self.store.prefix(rec.stage, rec.attempt) + ".json").exists()]
        for rec in lost:
            self.store.save(rec)
        if lost:
            self.intent.save(self.state_dir)
            self._alert("critical", "state-dir-recreated",
                        f"run records of running stage(s) {', '.join(r.stage for r in lost)} were "
                        f"deleted from {self.state_dir}; the driver wrote back what it knows")

    def _relock(self) -> bool:
        """The lock file vanished (state directory deleted): take it again or step down."""
        self.lock.release()
        if not self.lock.acquire(timeout=0.0):
            print("eagle3tui driver: the state directory was replaced and another driver "
                  "holds its lock; exiting", file=sys.stderr, flush=True)
            return False
        command_dirs(self.state_dir)
        # What this driver knows survives: the running attempts and the intent,
        # so no later driver sees those stages as never run and launches them twice.
        for rec in self._watch_recs.values():
            self.store.save(rec)
        self.intent.save(self.state_dir)
        self._alert("critical", "state-dir-recreated",
                    f"the state directory {self.state_dir} was deleted under the running driver; "
                    f"recreated it with {len(self._watch_recs)} running attempt(s). Older run "
                    "records and alerts are gone.")
        return True

    def _storage_recovered(self) -> None:
        since, why = self._storage_error or (time.time(), "")
        self._storage_error = None
        self._alert("critical", "state-dir-unwritable",
                    f"the state directory {self.state_dir} refused writes for "
                    f"{time.time() - since:.0f}s ({why}); supervision paused meanwhile and has "
                    "resumed", None, since=since,
                    fix="keep free space on the state directory's filesystem")

    def _check_config(self) -> None:
        """Reload the configuration file when it changed, and say so (or why not)."""
        stamp = self._config_files_stamp()
        if stamp == self._config_stamp:
            return
        self._config_stamp = stamp
        digest = self._config_files_digest()
        if digest == self._config_digest:
            return
        note = self._reload(self.config.overrides, digest)
        self._reload_note = note
        if note:
            level = "warning" if note.startswith("refused") else "info"
            self._alert(level, "config-reloaded" if level == "info" else "config-not-reloaded", note)

    def _config_files(self) -> list[Path]:
        """pipeline.toml and its learned-rules file: an edit of either reloads."""
        return [self.config.path] + ([self.config.learned_rules] if self.config.learned_rules else [])

    def _config_files_stamp(self) -> tuple[tuple[int, int] | None, ...]:
        return tuple(_file_stamp(p) for p in self._config_files())

    def _config_files_digest(self) -> str:
        return "/".join(str(_file_digest(p)) for p in self._config_files())

    def _adopt_overrides(self, cmd: dict[str, Any]) -> str | None:
        """A command sent with other --set values (or after an edit): reload with them."""
        self._check_config()
        note, self._reload_note = self._reload_note, None
        overrides = cmd.get("overrides")
        if not isinstance(overrides, dict) or overrides == dict(self.config.overrides):
            return note
        wanted = {str(k): str(v) for k, v in overrides.items()}
        note = self._reload(wanted, self._config_files_digest())
        if note is None and wanted != dict(self.config.overrides):
            # Refused before (the alert is not repeated): the command is refused again,
            # never run with the configuration it did not ask for.
            note = self._config_rejected
        return note

    def _reload(self, overrides: dict[str, str], digest: str | None) -> str | None:
        """Load the configuration again; a note for the user, "refused: ..." on failure."""
        path = self.config.path
        try:
            new = load_config(path, overrides)
        except ConfigError as e:
            msg = f"refused: {path} changed but is invalid, so the driver keeps the previous " \
                  f"configuration: {e}"
            if msg == self._config_rejected:
                return None
            self._config_rejected = msg
            return msg
        if new.state_dir != self.config.state_dir:
            return (f"refused: the new configuration uses state_dir {new.state_dir}, this driver "
                    f"owns {self.config.state_dir}; stop its stages first")
        running = [n for n in self.watches if n not in new.names]
        if running:
            return (f"refused: stage(s) {', '.join(running)} are running but missing from the new "
                    "configuration; stop them first, then edit the file")
        self.config = new
        record_config(new)
        self.rules = ruleset_for(new)
        for w in self.watches.values():
            w.monitor.set_rules(self.rules)  # a rule taught in the TUI applies to running stages too
        self._config_digest = digest
        self._config_rejected = None
        sets = " ".join(f"--set {k}={v}" for k, v in overrides.items())
        return (f"configuration reloaded from {path}" + (f" with {sets}" if sets else "")
                + "; stages launched from now on use it (running ones keep their command; "
                "rules apply to them at once)")

    # -- output ----------------------------------------------------------------
    def _alert(self, level: str, kind: str, message: str, rec: RunRecord | None = None,
               **details: Any) -> None:
        self.hub.emit(Alert(level=level, kind=kind, message=message,
                            stage=rec.stage if rec else None, attempt=rec.attempt if rec else None,
                            details={k: v for k, v in details.items() if v is not None}))
        failed = self.alert_log.take_error()
        if failed is not None:
            # Not on disk: stop this pass before anything is marked done, so
            # the alert is made again once the alerts file can be written.
            raise failed

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
    who = f"{cause['who']}: " if cause.get("who") else ""  # the rank it came from (logs.ranks)
    folded = "".join(f"; {cause[k]}" for k in ("consequences", "earlier") if cause.get(k))
    return f"failed: {who}{head} (line {cause.get('line')}, {cause.get('rule')}){root}{folded}; {how}{hint}"


_STORAGE_ERRNOS = (errno.ENOSPC, errno.EROFS, errno.EDQUOT)


def _file_stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _file_digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


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
        return Driver(config, hub=hub, keep_alive=True).run(stop)
    finally:
        hub.close()


if __name__ == "__main__":
    raise SystemExit(main())
