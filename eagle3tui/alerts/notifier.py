"""Run the user's ``[alerts] command`` once per alert, safely and without blocking.

The command is an argv list, never a shell string: the alert (whose message
and details carry untrusted log text) reaches it only as JSON on stdin and
as plain environment variables, so nothing in a log line can be executed.

``Notifier.submit`` is called from the driver loop (through the alert hub)
and only filters and enqueues; a worker thread runs the command with a
timeout, kills a hanging one (its process group, every descendant, and every
process carrying that run's mark in its environment: a child that called
``setsid`` leaves the group, not its parent or its environment), and reports failures
back as alerts of kind ``notifier-*`` (which it never sends to itself, so a
broken notifier cannot feed a loop). A bounded queue and a per-minute rate
limit keep a flood from piling up processes; what is dropped is counted and
said so, and is still in the alerts file.

One failure, one page. A stage that dies of an error logs the error (a
``fatal-log-event`` alert, written at once to the alerts file) and then ends
(a ``stage-failed`` alert that leads with that error). Sending both would
page a person twice for one failure, seconds apart. So the page of a fatal
line waits up to ``hold_s`` for the attempt to end: if it fails meanwhile,
its ``stage-failed`` alert is the one page; if it is still alive when the
hold runs out (a process hung after its error, still holding its GPUs), the
fatal line pages then. The hold delays the command only, never the record.

A harmless line never pages. A WARNING line read from a log (``log-warning``)
is the classifier's reading of one line; a harmless ERROR it does not know
lands there too. So unless ``log_warnings`` is set, those go to the alerts
file and stdout only; the command gets fatal lines and the supervisor's own
findings (a stall, a failing stage, a retry, lost GPU memory).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING

import psutil

from eagle3tui.alerts import Alert, level_at_least
from eagle3tui.alerts.kinds import alert_kind
from eagle3tui.textsafe import printable

if TYPE_CHECKING:  # pragma: no cover
    from eagle3tui.config import AlertsConfig

ENV_PREFIX = "EAGLE3TUI_ALERT_"
# Set to a fresh token in each run of the command: how a timeout finds the
# run's processes that left its group and lost their parent (a double fork).
RUN_MARK_ENV = ENV_PREFIX + "RUN"
OWN_KIND_PREFIX = "notifier-"
_MAX_ENV_MESSAGE = 2000
_MAX_OUTPUT = 1000
_STOP = object()
_WAKE = object()  # a hold was added: the worker recomputes when to wake
# Alerts of a failure still unfolding: their page waits for the attempt's end
# (a stage's GPU fault too: its stage-failed alert leads with it).
HELD_KINDS = frozenset(map(alert_kind, ("fatal-log-event", "stage-failing", "gpu-xid")))
# Alerts that say an attempt ended; the held pages of that attempt are settled by them.
ENDING_KINDS = frozenset(map(alert_kind, ("stage-failed", "stage-succeeded", "stage-stopped")))
# News a person waits for, though no warning: sent like a warning (so at the default
# min_level); a min_level of "critical" still keeps only criticals.
NEWS_KINDS = frozenset({alert_kind("pipeline-complete")})
LOG_WARNING_KIND = alert_kind("log-warning")  # a WARNING line of a log: sent only with log_warnings


def alert_env(alert: Alert) -> dict[str, str]:
    """The environment variables a notifier command gets for ``alert`` (values are printable)."""
    rule = alert.details.get("rule")
    return {
        ENV_PREFIX + "LEVEL": alert.level,
        ENV_PREFIX + "KIND": printable(alert.kind),
        ENV_PREFIX + "STAGE": printable(alert.stage or ""),
        ENV_PREFIX + "ATTEMPT": "" if alert.attempt is None else str(alert.attempt),
        ENV_PREFIX + "MESSAGE": printable(alert.message)[:_MAX_ENV_MESSAGE],
        ENV_PREFIX + "RULE": printable(rule) if isinstance(rule, str) else "",
        ENV_PREFIX + "COUNT": str(alert.count),
        ENV_PREFIX + "TIME": datetime.fromtimestamp(alert.time, timezone.utc).isoformat(),
    }


class Notifier:
    """Runs ``command`` per alert in a worker thread; ``submit`` never blocks.

    What to filter, hold, rate-limit and queue is decided here; how one alert
    is delivered is ``_run_one`` (the command here; Apprise's services in
    eagle3tui/alerts/apprise_notify.py, with the same semantics).
    """

    # The [alerts] key this notifier delivers to, as its own reports name it.
    target = "alerts.command"

    def __init__(self, command: Sequence[str], *, min_level: str = "warning",
                 rate_limit_per_min: int = 30, timeout_s: float = 10.0, queue_size: int = 64,
                 hold_s: float = 0.0, log_warnings: bool = True,
                 report: Callable[[Alert], None] | None = None) -> None:
        if not command:
            raise ValueError(f"{self.target} is empty")
        self.command = [str(x) for x in command]
        self.min_level = min_level
        self.rate_limit_per_min = max(1, int(rate_limit_per_min))
        self.timeout_s = float(timeout_s)
        self.report = report
        self.sent = 0
        self.failed = 0
        self.timed_out = 0
        self.dropped_rate = 0
        self.dropped_queue = 0
        self.hold_s = max(0.0, float(hold_s))
        self.log_warnings = log_warnings
        self.coalesced = 0  # pages of a fatal line not sent: the stage-failed alert was the page
        # (stage, attempt) -> the alerts whose page waits, and when the wait ends (monotonic).
        self._held: dict[tuple[str | None, int | None], tuple[list[Alert], float]] = {}
        self._queue: queue.Queue[object] = queue.Queue(maxsize=max(1, queue_size))
        self._sends: deque[float] = deque()
        self._unreported_drops = 0
        self._last_drop_report = 0.0
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._work, daemon=True, name="alert-notifier")
        self._thread.start()

    @classmethod
    def from_config(cls, cfg: AlertsConfig, report: Callable[[Alert], None] | None = None
                    ) -> Notifier:
        """A notifier for the ``[alerts]`` table (``command`` must be set)."""
        assert cfg.command, "from_config needs alerts.command"
        return cls(cfg.command, min_level=cfg.min_level, rate_limit_per_min=cfg.rate_limit_per_min,
                   timeout_s=cfg.timeout_s, hold_s=cfg.hold_fatal_s,
                   log_warnings=cfg.log_warnings, report=report)

    # -- called from the driver loop: filter and enqueue only -------------------
    def submit(self, alert: Alert) -> None:
        """Queue ``alert`` for the command if it passes min_level and the rate limit."""
        if self._closed or alert.kind.startswith(OWN_KIND_PREFIX):
            return
        # Settled before the level filter: the end of an attempt is often an
        # info alert (stage-stopped), and it still releases that attempt's holds.
        if alert.kind in ENDING_KINDS:
            self._settle(alert)
        level = "warning" if alert.kind in NEWS_KINDS and alert.level == "info" else alert.level
        if not level_at_least(level, self.min_level):
            return
        if alert.kind == LOG_WARNING_KIND and not self.log_warnings:
            return
        if self._hold(alert):
            return
        self._enqueue(alert)

    def _hold(self, alert: Alert) -> bool:
        """Keep ``alert``'s page back while its attempt may still end; True if kept."""
        # A merged record (the count of a fatal line's repeats) is held too: it
        # goes out just before the attempt's end and would otherwise page again.
        if self.hold_s <= 0 or alert.kind not in HELD_KINDS or alert.stage is None:
            return False
        key = (alert.stage, alert.attempt)
        with self._lock:
            held = self._held.get(key)
            if held is None:
                self._held[key] = ([alert], time.monotonic() + self.hold_s)
            else:
                held[0].append(alert)
        self._put(_WAKE)
        return True

    def _settle(self, ending: Alert) -> None:
        """The attempt ended: drop its held pages if it failed (``ending`` pages), else send them."""
        with self._lock:
            held = self._held.pop((ending.stage, ending.attempt), None)
        if held is None:
            return
        if ending.kind == "stage-failed" and level_at_least(ending.level, self.min_level):
            # Its message leads with the fatal line that was held: one page says both.
            with self._lock:
                self.coalesced += len(held[0])
            return
        for alert in held[0]:
            self._enqueue(alert)

    def _release_due(self, force: bool = False) -> float | None:
        """Send the holds whose wait is over; return seconds until the next one ends.

        ``force`` (closing): every hold is sent now, from the worker itself,
        since nothing will read the queue after the stop.
        """
        now = time.monotonic()
        due: list[Alert] = []
        with self._lock:
            for key, (alerts, until) in list(self._held.items()):
                if force or until <= now:
                    del self._held[key]
                    due += alerts
            nxt = min((until for _, until in self._held.values()), default=None)
        for alert in due:
            if force:
                self._run_safely(alert)
            else:
                self._enqueue(alert)
        return None if nxt is None else max(0.0, nxt - now)

    def _put(self, item: object) -> None:
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            pass  # the worker is busy and will recompute its wake-up when it gets to the queue

    def _enqueue(self, alert: Alert) -> None:
        """Queue ``alert`` for the command, subject to the rate limit and the queue's size."""
        now = time.monotonic()
        with self._lock:
            while self._sends and now - self._sends[0] >= 60:
                self._sends.popleft()
            if len(self._sends) >= self.rate_limit_per_min:
                self.dropped_rate += 1
                self._unreported_drops += 1
                drop_reason = (f"rate limit of {self.rate_limit_per_min} alerts per minute "
                               "(alerts.rate_limit)")
            else:
                drop_reason = ""
                self._sends.append(now)
        if not drop_reason:
            try:
                self._queue.put_nowait(alert)
                return
            except queue.Full:
                with self._lock:
                    self.dropped_queue += 1
                    self._unreported_drops += 1
                drop_reason = f"a full queue: {self.target} is slower than the alerts coming in"
        self._report_drops(drop_reason)

    def _report_drops(self, why: str) -> None:
        # One report per minute at most, or the report would be a flood itself.
        with self._lock:
            now = time.monotonic()
            if now - self._last_drop_report < 60:
                return
            n, self._unreported_drops = self._unreported_drops, 0
            self._last_drop_report = now
        self._problem("notifier-dropped",
                      f"{n} alert(s) not sent to {self.target} because of {why}; "
                      "every alert is still in the alerts file", dropped=n)

    # -- the worker -------------------------------------------------------------
    def _work(self) -> None:
        wait: float | None = None
        while True:
            try:
                item = self._queue.get(timeout=wait)
            except queue.Empty:
                item = None  # a hold's wait ran out
            try:
                if item is _STOP:
                    self._release_due(force=True)
                    self._drain()
                    return
                if isinstance(item, Alert):
                    self._run_safely(item)
                wait = self._release_due()
            finally:
                if item is not None:
                    self._queue.task_done()

    def _drain(self) -> None:
        # A hold released by the worker just before the stop was queued behind it.
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, Alert):
                self._run_safely(item)
            self._queue.task_done()

    def _run_safely(self, alert: Alert) -> None:
        try:
            self._run_one(alert)
        except Exception as e:  # noqa: BLE001 - the worker must outlive any one alert
            self.failed += 1
            self._problem("notifier-failed", f"internal error delivering to {self.target}: {e!r}")

    def _run_one(self, alert: Alert) -> None:
        payload = json.dumps(alert.to_json(), ensure_ascii=False, default=str).encode("utf-8")
        env = dict(os.environ)
        env.update(alert_env(alert))
        env[RUN_MARK_ENV] = mark = os.urandom(8).hex()
        shown = " ".join(self.command)
        try:
            # A new session, so a timeout kills the command and its children together.
            proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                    close_fds=True)
        except OSError as e:
            self.failed += 1
            self._problem("notifier-failed",
                          f"could not run alerts.command [{shown}]: {e.strerror or e}; "
                          "fix alerts.command in pipeline.toml (an argv list of an executable)",
                          alert_kind=alert.kind)
            return
        try:
            out, _ = proc.communicate(payload, timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            self._kill(proc, mark)
            self.timed_out += 1
            self.failed += 1
            self._problem("notifier-timeout",
                          f"alerts.command [{shown}] did not finish within {self.timeout_s:g}s and "
                          "was killed; supervision goes on (raise alerts.timeout if it is slow)",
                          alert_kind=alert.kind, timeout_s=self.timeout_s)
            return
        if proc.returncode != 0:
            self.failed += 1
            text = printable(out[-_MAX_OUTPUT:].decode("utf-8", "replace"), keep_newlines=True)
            self._problem("notifier-failed",
                          f"alerts.command [{shown}] exited with {proc.returncode}",
                          alert_kind=alert.kind, exit_code=proc.returncode, output=text)
            return
        self.sent += 1

    @staticmethod
    def _kill(proc: subprocess.Popen[bytes], mark: str) -> None:
        # Found before any is killed: a killed parent's children re-parent to init
        # and no longer show as its descendants.
        doomed = _run_processes(proc.pid, mark)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for p in doomed:
            try:
                p.kill()  # psutil refuses a pid reused since it was found
            except psutil.Error:
                pass
        try:
            proc.communicate(timeout=2)
        except subprocess.TimeoutExpired:
            # A child that left the group still holds the pipes: stop reading them.
            for f in (proc.stdin, proc.stdout):
                try:
                    if f:
                        f.close()
                except OSError:
                    pass
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass

    def _problem(self, kind: str, message: str, **details: object) -> None:
        if self.report is None:
            return
        self.report(Alert(level="warning", kind=kind, message=message,
                          details={k: v for k, v in details.items() if v is not None}))

    # -- shutdown ---------------------------------------------------------------
    def close(self, wait_s: float | None = None) -> bool:
        """Send what is queued, then stop; True if the queue drained within ``wait_s``.

        The default wait covers one hanging command plus a few quick ones, so a
        driver exiting after the last stage still notifies about it.
        """
        if self._closed:
            return True
        self._closed = True
        wait_s = self.timeout_s + 5 if wait_s is None else wait_s
        deadline = time.monotonic() + wait_s
        while True:
            try:
                self._queue.put(_STOP, timeout=max(0.01, deadline - time.monotonic()))
                break
            except queue.Full:
                if time.monotonic() >= deadline:
                    return False
        self._thread.join(timeout=max(0.0, deadline - time.monotonic()))
        return not self._thread.is_alive()


def _run_processes(pid: int, mark: str) -> list[psutil.Process]:
    """One run of the command: ``pid``'s descendants, and processes carrying its mark.

    Parentage catches a child that called ``setsid`` and scrubbed its
    environment while its parent lives; the mark catches one orphaned by a
    double fork. One that did both escapes (docs/reliability.md).
    """
    found: dict[int, psutil.Process] = {}
    try:
        for p in psutil.Process(pid).children(recursive=True):
            found[p.pid] = p
    except psutil.Error:
        pass
    for p in psutil.process_iter():
        if p.pid in found or p.pid == os.getpid():
            continue
        try:
            if p.environ().get(RUN_MARK_ENV) == mark:
                found[p.pid] = p
        except (psutil.Error, OSError):
            continue
    return list(found.values())
