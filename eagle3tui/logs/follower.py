"""Follow a growing log file: incremental reads, ``\\r`` progress bars, rotation.

Two ways to read:

* :meth:`LogFollower.poll` returns one :class:`LogLine` per ``\\r`` segment of
  every new physical line (convenient, a Python object per segment);
* :meth:`LogFollower.read_chunk` returns a :class:`Chunk` of raw complete
  lines as bytes (ANSI already stripped), for the monitor's fast path that
  touches only the few lines a rule or progress marker points at.

Memory is bounded whatever the file holds: reads are at most ``block_size``
bytes, and an unfinished last line longer than ``max_line`` (a progress bar
that only ever writes ``\\r``, a 5 MB ``state_dict`` key list written in 4 KiB
pieces) keeps its head (what it is: ``RuntimeError: Error(s) in loading
state_dict``) and its tail (the latest state of what is drawn), joined by " … ".

What is opened is a regular file, never followed through a symlink and never
blocked on (``O_NOFOLLOW | O_NONBLOCK``, :func:`eagle3tui.trusted.open_regular`):
a FIFO or a link at the log's path is refused and said in :attr:`LogFollower.problem`.

A log renamed away with a new file created at its path (logrotate without
``copytruncate``) is followed as ``tail -F`` does, with one difference: the
old file is finished by its descriptor while any process still holds it open
for writing (a stage's stdout keeps writing to the renamed file), and only
then is the new file read from its start. So no line is lost either way.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from eagle3tui.textsafe import strip_ansi, strip_ansi_bytes
from eagle3tui.trusted import NotRegularFile, open_regular

# Joins the head and the tail of a line too long to keep whole.
CUT_MARK = " \u2026 ".encode()


def head_size(max_line: int) -> int:
    """Bytes kept from the start of an over-long line: enough to say what it is."""
    return max_line // 4


@dataclass(slots=True)
class LogLine:
    """One displayable piece of a log.

    ``no`` is the 1-based physical line. A tqdm bar writes many ``\\r``
    segments into one physical line: each is a LogLine, all but the last have
    ``is_update=True`` (superseded on screen by the next one).
    """

    no: int
    text: str
    is_update: bool
    offset: int


@dataclass(slots=True)
class Chunk:
    """Complete physical lines read in one go (the monitor's fast path).

    ``data`` holds whole lines, each ending in ``\\n``, ANSI stripped, still
    bytes (decoded only where needed). ``first_no`` is the line number of its
    first line. ``updates`` are ``\\r`` segments of the still-open last line.
    """

    data: bytes
    first_no: int
    start_offset: int
    end_offset: int
    updates: list[LogLine] = field(default_factory=list)
    reset: bool = False  # the file was truncated or replaced before this chunk
    counted: bool = True  # its lines are already in the follower's line_no


class LogFollower:
    """Read a log file incrementally from a byte offset.

    ``offset`` is the number of bytes consumed so far (what a restarted
    supervisor passes back in); ``line_no`` counts complete physical lines.
    Truncation (size < offset: copytruncate, or the job re-created the file)
    restarts at 0. Rotation (the path now names another inode) finishes the
    old file, then starts the new one from 0. Line numbers restart with the
    new file so they match what a person sees when opening it.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        offset: int = 0,
        *,
        line_no: int = 0,
        max_line: int = 64 * 1024,
        block_size: int = 1 << 20,
        max_updates: int = 256,
        clock: Callable[[], float] = time.monotonic,
        writer_check_s: float = 1.0,
    ) -> None:
        self.path = os.fspath(path)
        self.offset = offset
        self.line_no = line_no
        self.max_line = max_line
        self.block_size = block_size
        self.max_updates = max_updates
        self.resets = 0  # truncations + rotations seen
        self.cut_bytes = 0  # bytes dropped from over-long lines
        self._fh: object | None = None
        self._ident: tuple[int, int] | None = None
        self._pending = b""  # unfinished last line (raw, not yet stripped); its tail once cut
        self._pending_head = b""  # the first bytes of an unfinished line that was cut
        self._pending_cut = False
        # Why the log's path cannot be read (a FIFO, a symlink), or None.
        self.problem: str | None = None
        self._clock = clock
        self.writer_check_s = writer_check_s
        # After a rename: when the old file was last seen held open for writing.
        self._writer_seen: tuple[float, bool] | None = None
        self._writer_at: str | None = None  # /proc/PID/fd/N of the writer found last
        self._writers_gone = False
        self._pending_start = offset  # file offset where the pending bytes begin
        self._reset_flag = False
        self._rotated_tail = b""
        # The last bytes read and the file position they end at: when they are
        # no longer there, the file was truncated and rewritten past our offset
        # between two polls (copytruncate followed by fast writes).
        self._sig = b""
        self._sig_end = 0

    # -- file handling -------------------------------------------------
    def close(self) -> None:
        """Close the underlying file (reopened on the next read)."""
        if self._fh is not None:
            self._fh.close()  # type: ignore[attr-defined]
            self._fh = None

    def fileno(self) -> int | None:
        """The descriptor of the file being read (None before it is opened)."""
        return None if self._fh is None else self._fh.fileno()  # type: ignore[attr-defined]

    def __enter__(self) -> LogFollower:  # noqa: PYI034 - typing.Self needs 3.11
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _restart(self) -> None:
        self.offset = 0
        self.line_no = 0
        self._pending = b""
        self._pending_head = b""
        self._pending_cut = False
        self._pending_start = 0
        self.resets += 1
        self._reset_flag = True
        self._sig = b""

    def _open(self) -> bool:
        try:
            fh = os.fdopen(open_regular(self.path), "rb")  # kept open across polls
        except NotRegularFile as e:
            self.problem = str(e)
            return False
        except OSError:  # missing, unreadable: it may appear later
            return False
        self.problem = None
        st = os.fstat(fh.fileno())
        self._fh = fh
        self._ident = (st.st_dev, st.st_ino)
        if st.st_size < self.offset:
            # Shorter than where we stopped: the file was re-created or
            # truncated while nobody was looking.
            self._restart()
        fh.seek(self.offset)
        return True

    def _read_raw(self) -> bytes:
        """Next raw bytes, handling truncation and rotation; b"" if none."""
        if self._fh is None and not self._open():
            return b""
        fh = self._fh
        assert fh is not None
        try:
            # lstat: a symlink put at the path is not the file we follow.
            st = os.lstat(self.path)
            ident: tuple[int, int] | None = (st.st_dev, st.st_ino)
        except OSError:
            st = None
            ident = None
        if ident is not None and ident == self._ident:
            if st is not None and st.st_size < self.offset:
                self._restart()
                fh.seek(0)  # type: ignore[attr-defined]
            elif self._sig and st is not None and st.st_size > self._sig_end \
                    and not self._sig_still_there(fh):
                self._restart()
                fh.seek(0)  # type: ignore[attr-defined]
            data: bytes = fh.read(self.block_size)  # type: ignore[attr-defined]
            self._remember(fh, data)
            return data
        # Rotated (renamed away, new file at the path) or deleted: finish the
        # old file through the descriptor we still hold, then switch.
        data = fh.read(self.block_size)  # type: ignore[attr-defined]
        if data:
            self._writer_seen = None  # it is being written: look again once it is quiet
            return data
        if ident is None:
            return b""  # deleted, nothing new yet: keep the old descriptor
        if st is not None and not stat.S_ISREG(st.st_mode):
            # A link or a FIFO now at the path: keep reading the file we hold.
            self.problem = (f"{self.path} was replaced by a "
                            f"{'symlink' if stat.S_ISLNK(st.st_mode) else 'non-regular file'}; "
                            "refusing to follow it (still reading the file it replaced)")
            return b""
        if self._old_file_written():
            return b""  # a writer still appends to the renamed file: finish it first
        self.close()
        tail = self._flush_pending_as_line()
        self._restart()
        if not self._open():
            return b""
        self._rotated_tail = tail
        return b""

    def writers_ended(self) -> None:
        """The processes writing this log have ended: a renamed file is finished once read."""
        self._writers_gone = True

    def _old_file_written(self) -> bool:
        """True while some process holds the (renamed) file we read open for writing.

        Looked up in /proc at most every ``writer_check_s`` (only after a rename,
        so a quiet log costs nothing); a process we may not inspect is not ours.
        """
        if self._writers_gone or self._fh is None:
            return False
        now = self._clock()
        if self._writer_seen is not None and now - self._writer_seen[0] < self.writer_check_s:
            return self._writer_seen[1]
        # The writer found last time is asked first: one stat, not a scan of /proc.
        if self._writer_at is None or not _writes_to(self._writer_at, self._ident):
            self._writer_at = _open_for_writing(self._ident)
        held = self._writer_at is not None
        self._writer_seen = (now, held)
        return held

    def _remember(self, fh: object, data: bytes) -> None:
        if not data:
            return
        self._sig = (self._sig + data)[-16:] if len(data) < 16 else data[-16:]
        self._sig_end = fh.tell()  # type: ignore[attr-defined]

    def _sig_still_there(self, fh: object) -> bool:
        try:
            got = os.pread(fh.fileno(), len(self._sig),  # type: ignore[attr-defined]
                           self._sig_end - len(self._sig))
        except OSError:
            return True
        return got == self._sig

    def _flush_pending_as_line(self) -> bytes:
        # The old file ended without a newline: its last line is complete now.
        if not self._pending and not self._pending_head:
            return b""
        head = self._pending_head + CUT_MARK if self._pending_head else b""
        data = head + self._pending + b"\n"
        self._pending = b""
        self._pending_head = b""
        return data

    # -- fast path --------------------------------------------------------
    def read_chunk(self, count_lines: bool = True) -> Chunk | None:
        """Read up to ``block_size`` new bytes; None when nothing is new.

        With ``count_lines=False`` the caller counts the chunk's newlines and
        adds them to :attr:`line_no` itself (the monitor does, while scanning,
        to avoid counting every byte twice).
        """
        self._rotated_tail = b""
        start_no = self.line_no
        raw = self._read_raw()
        rotated_tail = self._rotated_tail
        if rotated_tail:
            # Lines of the old file's unfinished last line, numbered in the old
            # file; report them before the new file's first chunk (which then
            # carries reset=True).
            return Chunk(
                data=strip_ansi_bytes(rotated_tail),
                first_no=start_no + 1,
                start_offset=0,
                end_offset=0,
            )
        if self._reset_flag:
            start_no = self.line_no
        if not raw:
            if self._reset_flag:
                self._reset_flag = False
                return Chunk(b"", 1, 0, 0, reset=True)
            return None
        read_start = self.offset
        self.offset += len(raw)
        pend = self._pending
        buf_start = self._pending_start if pend else read_start
        rcut = raw.rfind(b"\n")
        updates: list[LogLine] = []
        end_offset = read_start
        if rcut < 0:
            complete = b""
            self._pending = pend + raw if pend else raw
        else:
            # One copy of the block: the pending start joined to the complete
            # lines of ``raw`` (not pending + raw, then a slice of that).
            head = (self._pending_head, CUT_MARK) if self._pending_head else ()
            complete = b"".join((*head, pend, memoryview(raw)[: rcut + 1])) if pend or head \
                else raw[: rcut + 1]
            self._pending = raw[rcut + 1 :]
            self._pending_head = b""
            end_offset = self._pending_start = read_start + rcut + 1
            self._pending_cut = False
            if count_lines:
                self.line_no += complete.count(b"\n")
        if self._pending:
            updates = self._take_pending_updates()
        reset = self._reset_flag
        self._reset_flag = False
        return Chunk(
            data=strip_ansi_bytes(complete),
            first_no=start_no + 1,
            start_offset=buf_start,
            end_offset=end_offset,
            updates=updates,
            reset=reset,
            counted=count_lines,
        )

    def end_of_output(self) -> Chunk | None:
        """The writer ended: its unfinished last line (no newline) is a complete line now.

        Call after reading everything (``read_chunk`` until None)."""
        if not self._pending and not self._pending_head:
            return None
        start = self._pending_start
        data = self._flush_pending_as_line()
        no = self.line_no + 1
        self.line_no += 1
        return Chunk(data=strip_ansi_bytes(data), first_no=no, start_offset=start,
                     end_offset=start + len(data), counted=True)

    def _take_pending_updates(self) -> list[LogLine]:
        """Emit finished ``\\r`` segments of the open line; bound its size."""
        pend = self._pending
        updates: list[LogLine] = []
        r = pend.rfind(b"\r")
        if r >= 0:
            # Everything before the last \r has been overwritten on screen:
            # each segment is an update. Only the newest few are kept, since
            # only the latest matters for display.
            head = pend[:r]
            segs = head.split(b"\r")
            if len(segs) > self.max_updates:
                segs = segs[-self.max_updates :]
            no = self.line_no + 1
            for seg in segs:
                if seg.strip():
                    text = strip_ansi(seg.decode("utf-8", "replace"))
                    updates.append(LogLine(no, text, True, self._pending_start))
            self._pending_start += r
            pend = pend[r:]
            self._pending_head = b""  # the head was of a segment now overwritten on screen
        keep = self.max_line - (len(self._pending_head) + len(CUT_MARK) if self._pending_head else 0)
        if len(pend) > keep:
            # A "line" too long to keep whole: its head says what it is (an
            # error before a 5 MB key list), its tail holds the latest state
            # of whatever is being drawn. Both stay; the middle goes.
            if not self._pending_head:
                self._pending_head = pend[: head_size(self.max_line)]
                keep = self.max_line - len(self._pending_head) - len(CUT_MARK)
            drop = len(pend) - keep
            self.cut_bytes += drop - (len(self._pending_head) if not self._pending_cut else 0)
            pend = pend[drop:]
            self._pending_cut = True
        self._pending = pend
        return updates

    def pending_text(self) -> str:
        """The unfinished last segment, as it currently shows on screen."""
        seg = self._pending.rsplit(b"\r", 1)[-1]
        return strip_ansi(seg.decode("utf-8", "replace")).rstrip("\n")

    # -- convenience path -------------------------------------------------
    def poll(self) -> list[LogLine]:
        """Read everything new; one LogLine per ``\\r`` segment.

        A complete line ending ``\\r\\n`` counts as a plain line. Invalid
        UTF-8 becomes U+FFFD; ANSI sequences are removed.
        """
        out: list[LogLine] = []
        while True:
            chunk = self.read_chunk()
            if chunk is None:
                return out
            out.extend(iter_chunk_lines(chunk, self.max_line))
            out.extend(chunk.updates)


def split_segments(line: str) -> list[str]:
    """Non-empty ``\\r`` segments of one physical line (no trailing newline)."""
    if "\r" not in line:
        return [line] if line else []
    return [s for s in line.split("\r") if s.strip()]


def tail_lines(path: str, nbytes: int) -> list[str]:
    """The last lines of the file at ``path`` within its last ``nbytes``, as a terminal shows them.

    ANSI sequences removed, a ``\r``-redrawn line reduced to its last segment;
    a line cut by the ``nbytes`` boundary is left out, and so is the empty
    string after a final newline, so the last item is the file's last line.
    Empty if the file cannot be read.
    """
    try:
        with os.fdopen(open_regular(path), "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - nbytes))
            data = f.read()
    except OSError:
        return []
    lines = strip_ansi(data.decode("utf-8", "replace")).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if size > nbytes and lines:
        lines.pop(0)  # cut by the boundary
    return [(split_segments(ln) or [""])[-1] for ln in lines]


def iter_chunk_lines(chunk: Chunk, max_line: int = 64 * 1024) -> Iterable[LogLine]:
    """Expand a chunk into LogLines (every segment of every line)."""
    no = chunk.first_no
    offset = chunk.start_offset
    for raw in chunk.data.split(b"\n")[:-1]:
        text = raw.decode("utf-8", "replace")
        if len(text) > max_line:
            head = head_size(max_line)
            text = text[:head] + " \u2026 " + text[-(max_line - head - 3):]
        segs = split_segments(text)
        last = len(segs) - 1
        for i, seg in enumerate(segs):
            yield LogLine(no, seg, i < last, offset)
        no += 1
        offset += len(raw) + 1


def _writes_to(fd_path: str, ident: tuple[int, int] | None) -> bool:
    """True if ``/proc/PID/fd/N`` still names the file ``ident``, open for writing."""
    try:
        st = os.stat(fd_path)
    except OSError:
        return False
    if (st.st_dev, st.st_ino) != ident:
        return False
    try:
        with open(fd_path.replace("/fd/", "/fdinfo/")) as info:
            flags = next((int(ln.split()[1], 8) for ln in info if ln.startswith("flags:")), 0)
    except (OSError, ValueError):
        return True  # cannot tell: assume it writes, keep the old file
    return bool(flags & (os.O_WRONLY | os.O_RDWR))


def _open_for_writing(ident: tuple[int, int] | None) -> str | None:
    """The ``/proc/PID/fd/N`` of a process (that we may inspect) writing the file ``ident``."""
    if ident is None:
        return None
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    for pid in pids:
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue  # gone, or not ours to look at
        for fd in fds:
            if _writes_to(f"{fd_dir}/{fd}", ident):
                return f"{fd_dir}/{fd}"
    return None


class LogWatcher:
    """Sets :attr:`changed` when any watched file changes.

    Uses watchdog (inotify on Linux) on the files' directories; where that is
    unavailable (no watchdog, out of inotify watches, a network filesystem)
    it falls back to a thread that stats the files every ``poll_interval``.
    ``mode`` says which one is in use.
    """

    def __init__(
        self,
        paths: Iterable[str | os.PathLike[str]] = (),
        *,
        poll_interval: float = 0.25,
        use_inotify: bool = True,
    ) -> None:
        self.changed = threading.Event()
        self.poll_interval = poll_interval
        self._paths: set[str] = {os.path.abspath(os.fspath(p)) for p in paths}
        # Directories in which any change counts (e.g. a command file arriving).
        self._dirs: set[str] = set()
        self._lock = threading.Lock()
        self._observer: object | None = None
        self._watched_dirs: dict[str, object] = {}
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._use_inotify = use_inotify
        self.mode = "stopped"

    def start(self) -> LogWatcher:
        """Start watching; returns self."""
        if self._use_inotify and self._start_watchdog():
            self.mode = "inotify"
        else:
            self.mode = "polling"
        # The stat thread runs in both modes (slowly with inotify) so that a
        # missed event (e.g. a file on NFS) costs a delay, not a hang.
        interval = self.poll_interval if self.mode == "polling" else max(self.poll_interval, 1.0)
        self._thread = threading.Thread(
            target=self._poll_loop, args=(interval,), name="LogWatcher", daemon=True
        )
        self._thread.start()
        self._ready.wait(5)
        return self

    def _start_watchdog(self) -> bool:
        try:
            from watchdog.events import FileSystemEvent, FileSystemEventHandler
            from watchdog.observers import Observer
        except ImportError:
            return False
        watcher = self

        class _Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                paths = {os.fsdecode(event.src_path)}
                dest = getattr(event, "dest_path", "")
                if dest:
                    paths.add(os.fsdecode(dest))
                with watcher._lock:
                    hit = bool(paths & watcher._paths) or any(
                        os.path.dirname(p) in watcher._dirs for p in paths)
                if hit:
                    watcher.changed.set()

        try:
            obs = Observer()
            self._handler = _Handler()
            self._observer = obs
            with self._lock:
                dirs = {os.path.dirname(p) for p in self._paths}
            for d in dirs:
                self._watch_dir(d)
            obs.start()
        except OSError:
            self._observer = None
            return False
        return True

    def _watch_dir(self, d: str) -> None:
        if self._observer is None or d in self._watched_dirs or not os.path.isdir(d):
            return
        self._watched_dirs[d] = self._observer.schedule(  # type: ignore[attr-defined]
            self._handler, d, recursive=False
        )

    def add(self, path: str | os.PathLike[str]) -> None:
        """Watch one more file (its directory must exist for inotify)."""
        p = os.path.abspath(os.fspath(path))
        with self._lock:
            self._paths.add(p)
        try:
            self._watch_dir(os.path.dirname(p))
        except OSError:
            pass  # the stat thread still covers it
        self.changed.set()

    def add_dir(self, path: str | os.PathLike[str]) -> None:
        """Wake on any change inside directory ``path`` (with inotify; polling mode
        callers keep their own cadence for directories)."""
        d = os.path.abspath(os.fspath(path))
        with self._lock:
            self._dirs.add(d)
        try:
            self._watch_dir(d)
        except OSError:
            pass

    def remove(self, path: str | os.PathLike[str]) -> None:
        """Stop watching a file."""
        with self._lock:
            self._paths.discard(os.path.abspath(os.fspath(path)))

    def wait(self, timeout: float | None = None) -> bool:
        """Block until a change or ``timeout``; True if something changed."""
        hit = self.changed.wait(timeout)
        self.changed.clear()
        return hit

    def _poll_loop(self, interval: float) -> None:
        last: dict[str, tuple[int, int, int]] = {}

        def sweep(report: bool) -> None:
            with self._lock:
                paths = list(self._paths)
            for p in paths:
                try:
                    st = os.stat(p)
                    sig = (st.st_ino, st.st_size, st.st_mtime_ns)
                except OSError:
                    sig = (0, -1, 0)
                if last.get(p) != sig:
                    # A path added later counts as changed when first seen.
                    if report:
                        self.changed.set()
                    last[p] = sig

        sweep(report=False)  # baseline before start() returns to the caller
        self._ready.set()
        while not self._stop.wait(interval):
            sweep(report=True)

    def stop(self) -> None:
        """Stop the observer and the stat thread."""
        self._stop.set()
        if self._observer is not None:
            self._observer.stop()  # type: ignore[attr-defined]
            self._observer.join(timeout=5)  # type: ignore[attr-defined]
            self._observer = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self.mode = "stopped"

    def __enter__(self) -> LogWatcher:  # noqa: PYI034 - typing.Self needs 3.11
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
