"""Fanning alerts out to sinks, merging repeats.

``AlertHub`` fans alerts out to sinks (the alert log, stdout, the notifier).
It merges repeats: the first alert of a kind goes out at once; identical
ones that follow within ``dedup_window_s`` are only counted, and when the
window closes one merged alert carries the count (``details.merged``). A
flapping condition or a storm of identical log lines therefore costs two
lines per window, not thousands. The schema is documented in docs/alerts.md.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from eagle3tui.alerts.model import Alert

if TYPE_CHECKING:  # pragma: no cover
    from eagle3tui.config import PipelineConfig


AlertSink = Callable[[Alert], None]


@dataclass
class _Window:
    """Repeats of one alert inside the current dedup window."""

    opened: float  # monotonic time the first alert went out
    first_at: float  # wall time of that first alert
    last: Alert  # the latest repeat (its details are the freshest)
    repeats: int = 0
    # The log line of the first repeat held back: until the merged alert is
    # written, a driver must not mark that line (or any later) as alerted.
    first_held_line: int | None = None


class AlertHub:
    """Fans alerts out to sinks (the alert log, stdout, a notifier...), merging repeats.

    Thread-safe: the driver and the notifier's worker thread both emit. A
    sink that raises is reported on stderr and does not stop the others (the
    alert log failing must not take supervision down with it).
    """

    def __init__(self, dedup_window_s: float = 0.0) -> None:
        self.sinks: list[AlertSink] = []
        self.recent: list[Alert] = []
        self.dedup_window_s = float(dedup_window_s)
        self.suppressed = 0  # repeats merged so far, for tests and status
        self._windows: dict[tuple[Any, ...], _Window] = {}
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._closed = False
        self._flusher: threading.Thread | None = None
        self._sink_errors: dict[int, float] = {}
        self._closers: list[Callable[[], object]] = []
        self.notifier: Any = None  # set by build_hub when [alerts] command is configured

    def add_sink(self, sink: AlertSink) -> None:
        """Send every alert (after merging) to ``sink``."""
        with self._lock:
            self.sinks.append(sink)

    def emit(self, alert: Alert) -> None:
        """Deliver ``alert`` now, or count it if it repeats one inside the window."""
        now = time.monotonic()
        with self._lock:
            if self.dedup_window_s > 0 and not alert.details.get("merged"):
                key = alert.dedup_key()
                win = self._windows.get(key)
                if win is not None and now - win.opened < self.dedup_window_s:
                    win.repeats += 1
                    win.last = alert
                    line = alert.details.get("line")
                    if win.first_held_line is None and isinstance(line, int):
                        win.first_held_line = line
                    self.suppressed += 1
                    self._start_flusher()
                    return
                if win is not None:
                    self._close_window(key, win)
                self._windows[key] = _Window(opened=now, first_at=alert.time, last=alert)
                if not self._deliver(alert):
                    # Not delivered (a full disk): a repeat must go out in full, not merge.
                    self._windows.pop(key, None)
                return
            self._deliver(alert)

    def flush(self, force: bool = False) -> int:
        """Emit merged alerts for windows that have closed (all of them if ``force``)."""
        now = time.monotonic()
        n = 0
        with self._lock:
            for key, win in list(self._windows.items()):
                if force or now - win.opened >= self.dedup_window_s:
                    n += self._close_window(key, win)
        return n

    def flush_attempt(self, stage: str | None, attempt: int | None) -> int:
        """Emit the merged alerts of one stage attempt now (it has ended).

        Without this, a repeat count of a finished attempt would arrive when
        its window closes, minutes later, stamped while another stage runs.
        """
        with self._lock:
            return sum(self._close_window(key, win) for key, win in list(self._windows.items())
                       if win.last.stage == stage and win.last.attempt == attempt)

    def first_held_line(self, stage: str | None, attempt: int | None) -> int | None:
        """The earliest log line of ``stage``/``attempt`` whose alert is only in memory."""
        with self._lock:
            lines = [w.first_held_line for w in self._windows.values()
                     if w.repeats and w.first_held_line is not None
                     and w.last.stage == stage and w.last.attempt == attempt]
        return min(lines) if lines else None

    def on_close(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` at ``close()``, after the pending merged alerts went out."""
        self._closers.append(fn)

    def close(self) -> None:
        """Flush every pending merged alert, stop the flusher thread, then run closers."""
        if self._closed:
            return
        self.flush(force=True)
        self._closed = True
        self._wake.set()
        t = self._flusher
        if t is not None and t is not threading.current_thread():
            t.join(timeout=2)
        for fn in self._closers:
            fn()

    # -- internals ----------------------------------------------------------
    def _close_window(self, key: tuple[Any, ...], win: _Window) -> int:
        del self._windows[key]
        if win.repeats == 0:
            return 0
        last = win.last
        details = dict(last.details)
        details.update(merged=True, first_at=win.first_at, last_at=last.time,
                       window_s=self.dedup_window_s)
        self._deliver(Alert(level=last.level, kind=last.kind, message=last.message,
                            stage=last.stage, attempt=last.attempt, details=details,
                            time=time.time(), count=win.repeats))
        return 1

    def _deliver(self, alert: Alert) -> bool:
        self.recent.append(alert)
        del self.recent[:-200]
        ok = True
        for sink in list(self.sinks):
            try:
                sink(alert)
            except Exception as e:  # noqa: BLE001 - a broken sink must not stop supervision
                ok = False
                # At most one report per sink per minute: a full disk would
                # otherwise print on every alert.
                last = self._sink_errors.get(id(sink), 0.0)
                if time.monotonic() - last > 60:
                    self._sink_errors[id(sink)] = time.monotonic()
                    try:
                        print(f"eagle3tui: alert sink {getattr(sink, '__qualname__', sink)!s} "
                              f"failed: {e!r}", file=sys.stderr, flush=True)
                    except (OSError, ValueError):
                        pass
        return ok

    def _start_flusher(self) -> None:
        if self._flusher is None and not self._closed:
            self._flusher = threading.Thread(target=self._flush_loop, daemon=True,
                                             name="alert-dedup-flush")
            self._flusher.start()

    def _flush_loop(self) -> None:
        # Windows close on time even when no new alert arrives to close them.
        period = max(0.05, min(1.0, self.dedup_window_s / 4))
        while not self._closed:
            self._wake.wait(period)
            if self._closed:
                return
            self.flush()


def stdout_sink(stream: Any = None) -> AlertSink:
    """A sink printing ``Alert.human()`` lines, flushed; a closed stdout is ignored."""

    def sink(alert: Alert) -> None:
        out = stream or sys.stdout
        try:
            out.write(alert.human() + "\n")
            out.flush()
        except (OSError, ValueError):
            # stdout went away (pipe to `head`, closed terminal): the file and
            # the notifier still get the alert.
            pass

    return sink


def build_hub(config: PipelineConfig, extra_sinks: Iterable[AlertSink] = (),
              notify: bool = True) -> AlertHub:
    """The hub every driver uses: dedup from ``[alerts]``, ``extra_sinks``, then the notifier.

    The driver adds its own ``AlertLog`` sink for ``<state_dir>/alerts.jsonl``.
    Call ``hub.close()`` when done so pending merged alerts are written and
    the notifier drains its queue.
    """
    from eagle3tui.alerts.notifier import Notifier

    hub = AlertHub(dedup_window_s=config.alerts.dedup_window_s)
    for sink in extra_sinks:
        hub.add_sink(sink)
    if notify and config.alerts.command:
        notifier = Notifier.from_config(config.alerts, report=hub.emit)
        hub.add_sink(notifier.submit)
        hub.notifier = notifier
        # Closing the hub flushes merged alerts first, so they reach the
        # notifier before it drains its queue and stops.
        hub.on_close(notifier.close)
    if notify and (config.alerts.notify or config.alerts.notify_file):
        _add_apprise(hub, config)
    return hub


def _add_apprise(hub: AlertHub, config: PipelineConfig) -> None:
    """``[alerts] notify``: the same pages through Apprise; a bad URL or secret is said, not fatal."""
    from eagle3tui.alerts.apprise_notify import AppriseNotifier
    from eagle3tui.errors import ConfigError

    try:
        pager = AppriseNotifier.from_alerts(config.alerts, config.name, report=hub.emit)
    except ConfigError as e:
        # Said with the first alert, when every sink (the alerts file too) is in place.
        why = str(e)
        said: list[bool] = []

        def say_once(_alert: Alert) -> None:
            if not said:
                said.append(True)
                hub.emit(Alert(level="warning", kind="notifier-off",
                               message=f"no notifications through alerts.notify: {why}"))

        hub.add_sink(say_once)
        return
    hub.add_sink(pager.submit)
    hub.on_close(pager.close)
