"""``eagle3tui --watch``: the supervisor without a screen.

One process per pipeline drives (holds the state directory's lock and
advances the stages); any other front end observes. ``--watch`` drives in the
foreground when nobody holds the lock, and otherwise observes by tailing
``<state_dir>/alerts.jsonl``; if the driver it observes goes away while work
is left, it takes over. Either way stdout gets one timestamped line per
alert, and ``--alerts PATH`` gets a JSONL copy (the state directory's
alerts file is always written, because the other front ends read it).

Exit codes: 0 when every wanted stage succeeded or was skipped; 1 when a
stage failed with no retry left (or a stage was stopped, or is blocked by
one that failed); 2 on a configuration error; 130 on SIGINT/SIGTERM/SIGHUP,
after handing the pipeline to a detached driver so the stages keep running.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from eagle3tui.alerts import Alert, AlertLog, JsonlTail, build_hub, stdout_sink
from eagle3tui.config import PipelineConfig, load_config, parse_overrides
from eagle3tui.frontends.invocation import invocation
from eagle3tui.supervisor.lock import driver_info, lock_held
from eagle3tui.supervisor.state import StageState
from eagle3tui.textsafe import printable
from eagle3tui.view import load_view

EXIT_OK, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 130
_OBSERVE_POLL_S = 0.05
_FINISHED_CHECK_S = 0.5
_FINISHED_GRACE_S = 1.5
_DONE = (StageState.SUCCEEDED, StageState.SKIPPED)


def run_watch(args: argparse.Namespace) -> int:
    """Entry point from the CLI: ``args`` has ``.config``, ``.set``, ``.alerts``, ``.run_all``.

    Optional ``args.alerts_from_start`` (observe mode): print the alerts file
    from its beginning instead of from its current end.
    """
    config = load_config(args.config, parse_overrides(getattr(args, "set", None) or []))
    watch = Watch(config, alerts_path=getattr(args, "alerts", None),
                  run_all=bool(getattr(args, "run_all", False)),
                  from_start=bool(getattr(args, "alerts_from_start", False)))
    restore = watch.install_signal_handlers()
    try:
        return watch.run()
    finally:
        restore()


class Watch:
    """Drive or observe one pipeline until it is finished or a signal arrives."""

    def __init__(self, config: PipelineConfig, *, alerts_path: str | os.PathLike[str] | None = None,
                 run_all: bool = False, from_start: bool = False, out: TextIO | None = None) -> None:
        self.config = config
        self.state_dir = config.state_dir
        self.alerts_file = self.state_dir / "alerts.jsonl"
        self.run_all = run_all
        self.from_start = from_start
        self.out = out or sys.stdout
        self.stop = threading.Event()
        self.signal_name: str | None = None
        self.mirror: AlertLog | None = None
        if alerts_path:
            mirror = Path(alerts_path).expanduser()
            # The state directory's file is written anyway; a second sink on
            # the same file would write every alert twice.
            if mirror.resolve() != self.alerts_file.resolve():
                self.mirror = AlertLog(mirror)
                if self.mirror.repaired:
                    self.say(self.mirror.repaired)
        self._started = False  # --run-all sent already

    # -- signals -----------------------------------------------------------------
    def install_signal_handlers(self) -> Any:
        """SIGINT/SIGTERM/SIGHUP stop watching; returns a function restoring the old handlers."""
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        old: dict[int, Any] = {}

        def handler(signum: int, _frame: Any) -> None:
            self.signal_name = signal.Signals(signum).name
            self.stop.set()

        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            old[sig] = signal.signal(sig, handler)

        def restore() -> None:
            for sig, h in old.items():
                signal.signal(sig, h)

        return restore

    # -- output --------------------------------------------------------------------
    def say(self, text: str) -> None:
        """One line of the watch's own (not an alert), in the same columns as alerts."""
        stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        try:
            self.out.write(printable(f"{stamp} {'WATCH':8} {'pipeline':16} {text}") + "\n")
            self.out.flush()
        except (OSError, ValueError):
            pass

    def _print_alert(self, alert: Alert) -> None:
        try:
            self.out.write(alert.human() + "\n")
            self.out.flush()
        except (OSError, ValueError):
            pass

    # -- the loop ----------------------------------------------------------------------
    def run(self) -> int:
        """Drive when the lock is free, observe when it is not, until finished or stopped."""
        took_over = False
        while True:
            if not lock_held(self.state_dir):
                rc = self._drive(took_over)
                if rc is not None:
                    return rc
            rc = self._observe()
            if rc is not None:
                return rc
            took_over = True  # the driver we observed went away with work left

    # -- driving -----------------------------------------------------------------------
    def _drive(self, took_over: bool) -> int | None:
        """Run a driver in this thread; None if another one got the lock first."""
        from eagle3tui.supervisor.driver import Driver

        sinks = [stdout_sink(self.out)]
        if self.mirror is not None:
            sinks.append(self.mirror.append)
        hub = build_hub(self.config, sinks)
        # keep_alive: if --watch is killed, stage wrappers and the keeper start a detached driver.
        driver = Driver(self.config, hub=hub, keep_alive=True)
        try:
            if self.run_all and not self._started:
                self._started = True
                reply = driver.execute({"op": "start", "all": True})
                self.say("start --all: " + "; ".join(reply["message"].splitlines()))
            # Stages running while nobody holds the lock: their driver was lost.
            orphans = [s.name for s in load_view(self.config).active()]
            if took_over or orphans:
                hub.emit(Alert("warning", "driver-reacquired",
                               f"the driver of {self.state_dir} went away while stages were "
                               f"running or wanted ({', '.join(orphans) or 'queued stages'}); "
                               f"this watch (pid {os.getpid()}) took over",
                               details={"pid": os.getpid(), "running": orphans}))
            if not took_over:
                self.say(f"driving {self.config.path} (state in {self.state_dir}, pid {os.getpid()})")
            rc = driver.run(self.stop)
        finally:
            hub.close()
            driver.alert_log.close()
        if rc == 3:
            return None
        if self.stop.is_set():
            return self._hand_over()
        if rc != 0:
            self.say(f"the driver gave up after repeated internal errors; see "
                     f"{self.state_dir / 'driver.log'} and {self.alerts_file}")
            return EXIT_FAILED
        return self._outcome()

    def _hand_over(self) -> int:
        """Stopped by a signal while driving: keep the pipeline advancing without us."""
        from eagle3tui.supervisor.protocol import spawn_driver

        left = self._work_left()
        if left:
            spawn_driver(self.config)
            self.say(f"stopped watching ({self.signal_name or 'signal'}); "
                     f"{len(left)} stage(s) keep running or queued ({', '.join(left)}) under a "
                     f"detached driver. Come back with: {self._come_back()}")
        else:
            self.say(f"stopped watching ({self.signal_name or 'signal'}); no stage was running. "
                     f"Come back with: {self._come_back()}")
        return EXIT_INTERRUPTED

    def _command(self) -> str:
        """The words that run eagle3tui on this pipeline from where the user is."""
        return f"{invocation()} --config {shlex.quote(str(self.config.path))}"

    def _come_back(self) -> str:
        cmd = self._command()
        return f"`{cmd}` (TUI), `{cmd} status` or `{cmd} --watch`"

    # -- observing ----------------------------------------------------------------------
    def _observe(self) -> int | None:
        """Tail the alerts file while another process drives; None if we should take over."""
        from eagle3tui.supervisor.protocol import send_command

        info = driver_info(self.state_dir)
        self.say(f"observing: another driver (pid {info.get('pid') or '?'}) drives {self.state_dir}; "
                 f"printing alerts from {self.alerts_file}")
        tail = JsonlTail(self.alerts_file, from_start=self.from_start)
        self.from_start = False  # a later round continues where this one stopped
        if self.run_all and not self._started:
            self._started = True
            reply = send_command(self.config, "start", all=True)
            self.say("start --all: " + "; ".join(str(reply.get("message", "")).splitlines()))
        finished_since: float | None = None
        next_check = 0.0
        while not self.stop.is_set():
            self._relay(tail)
            if not lock_held(self.state_dir):
                self._relay(tail)  # what the driver wrote before it let go
                if self._work_left():
                    return None
                return self._outcome()
            now = time.monotonic()
            if now >= next_check:
                # A driver that stays up when idle (a TUI's) never lets go of the
                # lock: the pipeline is finished when nothing is left for a while
                # (the grace lets the driver write the last alerts first).
                next_check = now + _FINISHED_CHECK_S
                if self._work_left():
                    finished_since = None
                elif finished_since is None:
                    finished_since = now
                elif now - finished_since >= _FINISHED_GRACE_S:
                    self._relay(tail)
                    return self._outcome()
            self.stop.wait(_OBSERVE_POLL_S)
        self._relay(tail)
        left = self._work_left()
        work = (f": {len(left)} stage(s) keep running or queued ({', '.join(left)})" if left else "")
        self.say(f"stopped watching ({self.signal_name or 'signal'}); the driver (pid "
                 f"{info.get('pid') or '?'}) keeps running the pipeline{work}. Come back with: "
                 f"{self._come_back()}")
        return EXIT_INTERRUPTED

    def _relay(self, tail: JsonlTail) -> None:
        for obj in tail.read():
            try:
                alert = Alert.from_json(obj)
            except (ValueError, TypeError):
                continue
            self._print_alert(alert)
            if self.mirror is not None:
                self.mirror.append(alert)
        for problem in tail.problems:
            self.say(problem)
        tail.problems.clear()

    # -- outcome --------------------------------------------------------------------------
    def _work_left(self) -> list[str]:
        """Stages still running, or wanted and not finished, or scheduled for a retry."""
        return load_view(self.config).work_left()

    def _outcome(self) -> int:
        """Exit code and a closing line once nothing is left to do."""
        view = load_view(self.config)
        verdict = view.verdict()
        if not verdict.wanted:
            done = [s for s in view.statuses if s.state in _DONE]
            if done and len(done) == len(view.statuses):
                self.say("pipeline complete: every stage succeeded or was skipped")
            else:
                self.say("nothing to do: no stage is wanted; pass --run-all, or start stages "
                         f"with `{self._command()} start NAME`")
            return EXIT_OK
        if verdict.ok:
            self.say(f"pipeline complete: {len(verdict.wanted)} stage(s) succeeded or skipped")
            return EXIT_OK
        parts = []
        for s in verdict.not_done:
            why = s.reason or s.state.value
            parts.append(f"{s.name}: {s.state.value}" + (f" ({why})" if why != s.state.value else ""))
        self.say("pipeline finished with failures: " + "; ".join(parts)
                 + f". Logs: `{self._command()} logs NAME`")
        return EXIT_FAILED
