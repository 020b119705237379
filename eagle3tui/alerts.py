"""Alerts: what a person should know, as one JSON object per line.

``AlertLog`` appends to a JSONL file with one ``write`` + ``fsync`` per alert,
so a process killed at any moment leaves whole lines only; a torn last line
left by an earlier crash is cut off (and reported) when the log is opened.

``AlertHub`` fans alerts out to sinks (the alert log, stdout, the notifier).
It merges repeats: the first alert of a kind goes out at once; identical
ones that follow within ``dedup_window_s`` are only counted, and when the
window closes one merged alert carries the count (``details.merged``). A
flapping condition or a storm of identical log lines therefore costs two
lines per window, not thousands. The schema is documented in docs/alerts.md.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle3tui.textsafe import printable

if TYPE_CHECKING:  # pragma: no cover
    from eagle3tui.config import PipelineConfig

LEVEL_ORDER = {"info": 0, "warning": 1, "critical": 2}
LEVELS = tuple(LEVEL_ORDER)


def level_at_least(level: str, minimum: str) -> bool:
    """True when ``level`` is as severe as ``minimum`` or more (unknown levels count as info)."""
    return LEVEL_ORDER.get(level, 0) >= LEVEL_ORDER.get(minimum, 0)


@dataclass
class Alert:
    """One alert; the JSON schema is documented in docs/alerts.md."""

    level: str
    kind: str
    message: str
    stage: str | None = None
    attempt: int | None = None
    details: dict[str, Any] = field(default_factory=dict)
    time: float = field(default_factory=time.time)
    count: int = 1

    def to_json(self) -> dict[str, Any]:
        """The alert as a JSON-ready dict (the alerts file and the notifier's stdin)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Alert:
        """Rebuild an alert read back from an alerts file; raises ValueError if it is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
            raise ValueError("not an alert object (no 'kind')")  # noqa: TRY004 - callers catch ValueError for any bad line
        details = data.get("details")
        return cls(level=str(data.get("level", "info")), kind=data["kind"],
                   message=str(data.get("message", "")),
                   stage=data.get("stage") if isinstance(data.get("stage"), str) else None,
                   attempt=data.get("attempt") if isinstance(data.get("attempt"), int) else None,
                   details=details if isinstance(details, dict) else {},
                   time=float(data.get("time") or time.time()),
                   count=int(data.get("count") or 1))

    def human(self) -> str:
        """One timestamped line for stdout; never contains control characters."""
        stamp = datetime.fromtimestamp(self.time).strftime("%Y-%m-%d %H:%M:%S")
        where = f"{self.stage}#{self.attempt}" if self.stage else "pipeline"
        if self.details.get("merged"):
            since = self.details.get("first_at")
            since_s = (datetime.fromtimestamp(since).strftime("%H:%M:%S")
                       if isinstance(since, (int, float)) else "?")
            more = f" (repeated {self.count} more times since {since_s})"
        else:
            more = f" (x{self.count})" if self.count > 1 else ""
        quote = self._quote()
        text = f"{stamp} {self.level.upper():8} {where:16} {self.kind}: {self.message}{more}{quote}"
        # Messages carry log text, which is untrusted: no escapes, no newlines.
        return printable(text)

    def _quote(self) -> str:
        # The log line behind the alert, so a person reading stdout sees the
        # error itself and not only its explanation.
        text = self.details.get("text")
        line = self.details.get("line")
        if not isinstance(text, str):
            errs = self.details.get("last_errors")
            if isinstance(errs, list) and errs and isinstance(errs[0], dict):
                text, line = errs[0].get("text"), errs[0].get("line")
        if not isinstance(text, str) or not text.strip():
            return ""
        last = [ln for ln in text.splitlines() if ln.strip()][-1].strip()
        if last in self.message:
            return ""
        if len(last) > 160:
            last = last[:157] + "..."
        return f" | line {line}: {last}" if isinstance(line, int) else f" | {last}"

    def dedup_key(self) -> tuple[Any, ...]:
        """What makes two alerts "the same" for merging: not the time, line number or figures.

        Warnings and info merge by rule and message, so a flood of different
        lines of one kind (a warning per step) still merges; a critical alert
        also keys on its log text, because two different fatal errors both matter.
        """
        key: tuple[Any, ...] = (self.level, self.kind, self.stage, self.attempt, self.message,
                                self.details.get("rule"))
        if self.level == "critical":
            key += (str(self.details.get("text", ""))[-500:],)
        return key


class AlertLog:
    """Append-only, crash-safe JSONL file of alerts."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.repaired: str | None = None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._repair()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()

    def _repair(self) -> None:
        # A torn last line (a crash mid-write on a filesystem that does not
        # make appends atomic) is cut so every remaining line parses.
        try:
            with open(self.path, "rb+") as f:
                size = f.seek(0, os.SEEK_END)
                if size == 0:
                    return
                # Only the tail can be torn: look back for the last newline
                # instead of reading a file that may be large.
                back = min(size, 1 << 16)
                while True:
                    f.seek(size - back)
                    tail = f.read(back)
                    if tail.endswith(b"\n"):
                        return
                    nl = tail.rfind(b"\n")
                    if nl >= 0 or back == size:
                        break
                    back = min(size, back * 4)
                cut = size - back + nl + 1
                f.truncate(cut)
                self.repaired = (f"{self.path}: removed a partial last line of {size - cut} bytes "
                                 "left by an earlier crash")
        except FileNotFoundError:
            return

    def append(self, alert: Alert) -> None:
        """Write one line and fsync it; one ``write`` call so readers never see half a line."""
        line = json.dumps(alert.to_json(), ensure_ascii=True, separators=(",", ":"),
                          default=str) + "\n"
        with self._lock:
            os.write(self._fd, line.encode("ascii"))
            os.fsync(self._fd)

    def close(self) -> None:
        """Close the file (idempotent)."""
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


def read_alerts(path: str | os.PathLike[str]) -> list[Alert]:
    """Every whole, parseable alert of a JSONL file (a torn last line is skipped)."""
    out: list[Alert] = []
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return out
    for raw in data.split(b"\n")[:-1] if data else []:
        try:
            out.append(Alert.from_json(json.loads(raw)))
        except ValueError:
            continue
    return out


AlertSink = Callable[[Alert], None]


@dataclass
class _Window:
    """Repeats of one alert inside the current dedup window."""

    opened: float  # monotonic time the first alert went out
    first_at: float  # wall time of that first alert
    last: Alert  # the latest repeat (its details are the freshest)
    repeats: int = 0


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
                    self.suppressed += 1
                    self._start_flusher()
                    return
                if win is not None:
                    self._close_window(key, win)
                self._windows[key] = _Window(opened=now, first_at=alert.time, last=alert)
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

    def _deliver(self, alert: Alert) -> None:
        self.recent.append(alert)
        del self.recent[:-200]
        for sink in list(self.sinks):
            try:
                sink(alert)
            except Exception as e:  # noqa: BLE001 - a broken sink must not stop supervision
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
    from eagle3tui.notifier import Notifier

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
    return hub


def read_new_alerts(path: Path, offset: int | None,
                    tail_bytes: int = 1 << 20) -> tuple[list[dict[str, Any]], int]:
    """Alerts appended to ``path`` since ``offset`` (None: the last ``tail_bytes``).

    Stateless (the caller keeps the offset), for a front end that polls.
    """
    try:
        size = path.stat().st_size
    except OSError:
        return [], 0
    if offset is None:
        offset = max(0, size - tail_bytes)
    if size < offset:
        offset = 0  # the file was replaced or truncated
    if size == offset:
        return [], offset
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read(size - offset)
    if offset and data and not data.startswith(b"{"):
        # Started mid-line (the tail of a big file): skip to the next line.
        cut = data.find(b"\n") + 1
        offset += cut
        data = data[cut:]
    end = data.rfind(b"\n") + 1  # only whole lines; a torn last line waits
    out: list[dict[str, Any]] = []
    for raw in data[:end].splitlines():
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out, offset + end
