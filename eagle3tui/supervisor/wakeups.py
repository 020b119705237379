"""What wakes the driver: a followed log or the commands directory changed.

One inotify descriptor (``inotify_simple``), read only when the driver is ready
for its next pass. Meanwhile the kernel queues the events of many small writes
(and merges repeats of the same one); one read drains them all. There is no
thread and no Python object per write: watchdog's observer thread, which the
driver used before, made several per write, and on eight chatty ranks that was
half of the driver's CPU.

Where inotify is unavailable (not Linux, out of watches, disabled) the
follower's :class:`~eagle3tui.logs.follower.LogWatcher` polls by ``stat``.
The driver reads every followed log on its full pass anyway, so a missed event
costs at most that pass's period, never a hang.
"""

from __future__ import annotations

import os
import select
import time
from typing import Any

from eagle3tui.logs.follower import LogWatcher

try:
    import inotify_simple as _inotify
except ImportError:  # pragma: no cover - a declared dependency (Linux only)
    _inotify = None  # type: ignore[assignment]

# A drained queue this big is a storm of writes: woken, without looking at each event.
_PARSE_BYTES = 64 * 1024


class DriverWakeups:
    """``wait(timeout)`` returns when a watched file or directory changed (or the timeout)."""

    def __init__(self, poll_interval: float = 0.25, use_inotify: bool = True) -> None:
        self.poll_interval = poll_interval
        self._use_inotify = use_inotify and _inotify is not None
        self._ino: Any = None
        self._poller: Any = None
        self._fallback: LogWatcher | None = None
        self._files: dict[str, set[str]] = {}  # directory -> names of followed files in it
        self._dirs: set[str] = set()  # directories in which any change counts
        self._wd: dict[str, int] = {}  # directory -> watch descriptor
        self._wd_dir: dict[int, str] = {}
        self._full: set[str] = set()  # files whose change asks for a full pass (a stage's result)
        self._full_hit = False
        self.mode = "stopped"

    def start(self) -> DriverWakeups:
        """Start watching; returns self."""
        if self._use_inotify:
            try:
                self._ino = _inotify.INotify(nonblocking=True)
                self._poller = select.poll()
                self._poller.register(self._ino.fileno(), select.POLLIN)
                self.mode = "inotify"
                for d in [*self._files, *self._dirs]:
                    self._watch(d)
                return self
            except OSError:
                self._close_inotify()
        self._fallback = LogWatcher(poll_interval=self.poll_interval, use_inotify=False).start()
        for d, names in self._files.items():
            for n in names:
                self._fallback.add(os.path.join(d, n))
        self.mode = "polling"
        return self

    def _watch(self, d: str) -> None:
        if self._ino is None or d in self._wd:
            return
        f = _inotify.flags
        try:
            wd = self._ino.add_watch(d, f.MODIFY | f.CREATE | f.MOVED_TO | f.MOVED_FROM | f.DELETE
                                     | f.CLOSE_WRITE | f.ATTRIB)
        except OSError:
            return  # the directory is gone, or no watches left: the full pass still reads it
        self._wd[d] = wd
        self._wd_dir[wd] = d

    def _unwatch(self, d: str) -> None:
        wd = self._wd.pop(d, None)
        if wd is None:
            return
        self._wd_dir.pop(wd, None)
        try:
            self._ino.rm_watch(wd)
        except OSError:
            pass  # removed by the kernel already (the directory was deleted)

    def add(self, path: str | os.PathLike[str], full: bool = False) -> None:
        """Wake when the file at ``path`` changes (or is created, replaced, removed).

        ``full``: its change also asks for a full pass (see :meth:`take_full`)."""
        p = os.path.abspath(os.fspath(path))
        d, name = os.path.split(p)
        if full:
            self._full.add(p)
        self._files.setdefault(d, set()).add(name)
        if self._fallback is not None:
            self._fallback.add(p)
        self._watch(d)

    def add_dir(self, path: str | os.PathLike[str]) -> None:
        """Wake on any change inside directory ``path``."""
        d = os.path.abspath(os.fspath(path))
        self._dirs.add(d)
        self._watch(d)

    def remove(self, path: str | os.PathLike[str]) -> None:
        """Stop watching a file."""
        p = os.path.abspath(os.fspath(path))
        d, name = os.path.split(p)
        self._full.discard(p)
        names = self._files.get(d)
        if names is not None:
            names.discard(name)
            if not names:
                del self._files[d]
                if d not in self._dirs:
                    self._unwatch(d)
        if self._fallback is not None:
            self._fallback.remove(p)

    def take_full(self) -> bool:
        """Whether a ``full`` file changed since the last call (drains what is queued)."""
        if self._ino is not None:
            self._drain()
        hit, self._full_hit = self._full_hit, False
        return hit

    def wait(self, timeout: float | None = None) -> bool:
        """Block until a change or ``timeout`` seconds; True if something watched changed."""
        if self._fallback is not None:
            return self._fallback.wait(timeout)
        if self._ino is None:
            return False
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._drain():
                return True
            ms = -1 if deadline is None else int((deadline - time.monotonic()) * 1000)
            if deadline is not None and ms <= 0:
                return False
            if not self._poller.poll(ms):
                return False

    def _drain(self) -> bool:
        """Read every queued event; True if one concerns a watched file or directory."""
        chunks = []
        fd = self._ino.fileno()
        while True:
            try:
                got = os.read(fd, 1 << 16)
            except BlockingIOError:
                break
            except OSError:
                return False
            if not got:
                break
            chunks.append(got)
            if len(got) < (1 << 16) - 4096:
                break  # the queue is empty (a read returns whole events only)
        raw = b"".join(chunks)
        if not raw:
            return False
        if len(raw) > _PARSE_BYTES:
            self._full_hit = True  # a storm of writes: some of them are ours, maybe a result
            return True
        overflow = _inotify.flags.Q_OVERFLOW
        hit = False
        for e in _inotify.parse_events(raw):
            if e.mask & overflow:
                self._full_hit = True
                return True
            d = self._wd_dir.get(e.wd)
            if d is not None and (d in self._dirs or e.name in self._files.get(d, ())):
                hit = True
                if self._full and os.path.join(d, e.name) in self._full:
                    self._full_hit = True
        return hit

    def _close_inotify(self) -> None:
        if self._ino is not None:
            try:
                self._ino.close()
            except OSError:
                pass
        self._ino = None
        self._poller = None
        self._wd.clear()
        self._wd_dir.clear()

    def stop(self) -> None:
        """Release the descriptor (or stop the polling thread)."""
        self._close_inotify()
        if self._fallback is not None:
            self._fallback.stop()
            self._fallback = None
        self.mode = "stopped"
