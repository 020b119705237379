"""The alerts file: append-only, crash-safe JSONL, and readers of it.

``AlertLog`` appends to a JSONL file with one ``write`` + ``fsync`` per alert,
so a process killed at any moment leaves whole lines only; a torn last line
left by an earlier crash is cut off (and reported) when the log is opened.
A write that fails part-way (a full disk stops it after the page it could
still fill) is cut off at once, and should the cut fail too, the next alert
starts on a line of its own: a torn line is never glued to the next one.
Readers skip a line that does not parse and say so.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from eagle3tui.alerts.model import Alert
from eagle3tui.textsafe import printable


class AlertLog:
    """Append-only, crash-safe JSONL file of alerts."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.repaired: str | None = None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._repair()
        # Read-write: the last byte tells whether the file ends on a line break.
        self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()
        self.reopened = 0  # times the file was deleted or rotated away under us
        self._error: OSError | None = None
        self._synced_later = 0  # > 0 inside one_sync(): appends wait for its fsync
        self._unsynced = False

    @contextmanager
    def one_sync(self) -> Iterator[None]:
        """Appends inside are written at once (readers see them) and fsynced once, at the end.

        For a burst such as 200 stage-started alerts of one pass: an fsync each
        made the burst take seconds on a busy disk. A kill inside loses no line
        (they are written); a power loss can lose the burst's lines.
        """
        with self._lock:
            self._synced_later += 1
        try:
            yield
        finally:
            with self._lock:
                self._synced_later -= 1
                if not self._synced_later and self._unsynced:
                    self._unsynced = False
                    try:
                        os.fsync(self._fd)
                    except OSError as e:
                        self._error = type(e)(e.errno, e.strerror, str(self.path))

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
        """Write one line and fsync it; on failure leave the file as it was, and raise.

        One ``write`` call, so that a reader sees the line whole in the usual case. The
        kernel may still stop a write of several pages part-way (a short count, or SIGKILL
        between two pages); the rest is written by the loop, and a line torn by a kill is
        cut by the next open (``_repair``). A write that fails part-way (ENOSPC after a
        short count) is cut back to where it began; when even that fails, the next line
        is written after a line break, so the torn bytes stay a line of their own that
        readers skip. The error raised names the alerts file.
        """
        data = (json.dumps(alert.to_json(), ensure_ascii=True, separators=(",", ":"),
                           default=str) + "\n").encode("ascii")
        with self._lock:
            start = None
            try:
                self._follow_path()
                start = os.fstat(self._fd).st_size
                if start and not self._ends_with_newline(start):
                    data = b"\n" + data  # a torn line from elsewhere: start a fresh one
                view = memoryview(data)
                while view:
                    view = view[os.write(self._fd, view):]
                if self._synced_later:
                    self._unsynced = True
                else:
                    os.fsync(self._fd)
            except OSError as e:
                if start is not None:
                    self._cut_back(start)
                if e.filename is None:  # os.write names no file: say which one refused
                    e = type(e)(e.errno, e.strerror, str(self.path))
                self._error = e
                raise e from None

    def _ends_with_newline(self, size: int) -> bool:
        try:
            return os.pread(self._fd, 1, size - 1) == b"\n"
        except OSError:
            return True  # cannot tell: never add a blank line on a guess

    def _cut_back(self, size: int) -> None:
        # Truncating frees blocks, so it works on a full disk; if it fails,
        # _ends_with_newline makes the next append begin on a fresh line.
        try:
            if os.fstat(self._fd).st_size > size:
                os.ftruncate(self._fd, size)
        except OSError:
            pass

    def take_error(self) -> OSError | None:
        """The error of the last failed append since the last call (then cleared)."""
        with self._lock:
            err, self._error = self._error, None
        return err

    def _follow_path(self) -> None:
        # Deleted or rotated (renamed away) since we opened it: writing on
        # would go to a file nobody reads. Open the path again.
        try:
            there = os.stat(self.path)
            mine = os.fstat(self._fd)
            if (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino):
                return
        except FileNotFoundError:
            pass
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        os.close(self._fd)
        self._fd = fd
        self.reopened += 1

    def close(self) -> None:
        """Close the file (idempotent)."""
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


def read_alerts(path: str | os.PathLike[str], problems: list[str] | None = None) -> list[Alert]:
    """Every whole, parseable alert of a JSONL file.

    A torn last line (still being written) is skipped silently; any other line
    that does not parse is skipped and described in ``problems`` when given.
    """
    out: list[Alert] = []
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return out
    for n, raw in enumerate(data.split(b"\n")[:-1] if data else [], 1):
        if not raw.strip():
            continue
        try:
            out.append(Alert.from_json(json.loads(raw)))
        except (ValueError, TypeError, KeyError, AttributeError):
            if problems is not None:
                problems.append(f"{path}:{n}: skipped a line that is not an alert "
                                f"({printable(raw[:80].decode('utf-8', 'replace'))!r})")
    return out


class JsonlTail:
    """Reads whole new lines appended to a JSONL file (a partial last line waits).

    The position stays at the start of an incomplete line, so when a new
    driver's ``AlertLog`` cuts that torn line off and appends after it, the
    new lines are read from exactly where they begin.
    """

    def __init__(self, path: Path, from_start: bool = False, tail_bytes: int = 0) -> None:
        """Start at the file's end, its start (``from_start``), or at the first whole
        line of its last ``tail_bytes`` (what a front end shows on opening)."""
        self.path = Path(path)
        self.problems: list[str] = []
        self._ino: int | None = None
        self._pos = 0
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return
        self._ino = st.st_ino
        if from_start:
            return
        self._pos = st.st_size
        if tail_bytes and st.st_size:
            start = max(0, st.st_size - tail_bytes)
            if start:
                with open(self.path, "rb") as f:
                    f.seek(start - 1)
                    start += len(f.readline()) - 1  # begin at a line start
            self._pos = start

    def read(self) -> list[dict[str, Any]]:
        """The objects of the lines completed since the last call."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return []
        if st.st_ino != self._ino:
            # Replaced by another file: read the new one from its start.
            self._pos = 0
            self._ino = st.st_ino
        elif st.st_size < self._pos:
            self._pos = st.st_size  # cut shorter than what we read: go on from its end
        if st.st_size == self._pos:
            return []
        with open(self.path, "rb") as f:
            f.seek(self._pos)
            data = f.read()
        cut = data.rfind(b"\n") + 1
        self._pos += cut
        out = []
        for raw in data[:cut].split(b"\n"):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                self.problems.append(f"{self.path}: skipped a line that is not JSON "
                                     f"({printable(raw[:80].decode('utf-8', 'replace'))!r})")
                continue
            if isinstance(obj, dict):
                out.append(obj)
        return out
