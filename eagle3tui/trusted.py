"""Files the supervisor trusts, and files it only reads.

Two kinds of file cross the supervisor's path:

* **Control files** (run records, the wrapper's started/result files,
  commands, the intent): what they say decides what runs next, as the
  pipeline's owner. They live in an owner-only state directory and are read
  only when they are regular files, reached without a symlink, owned by the
  user running the supervisor and writable by no one else
  (:func:`read_trusted`). Anything else is refused with :class:`UntrustedFile`,
  whose message names the file, who owns it, its mode and the fix.
* **Logs** a stage writes: text to judge, never to obey. They are opened with
  ``O_NOFOLLOW | O_NONBLOCK`` and refused unless regular
  (:func:`open_regular`): a FIFO would block the reader forever, a symlink
  could point anywhere (``/etc/shadow`` when the supervisor runs as root).

Directories the supervisor makes for itself are created ``0700`` whatever the
umask (:func:`private_dir`); a state directory an earlier version created
group-writable is tightened, one owned by somebody else is refused.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

# Bits that let someone other than the owner change a file or a directory's entries.
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


class UntrustedFile(PermissionError):
    """A control file or directory the supervisor refuses to believe (message says why)."""


class NotRegularFile(OSError):
    """A log path that names a FIFO, a device, a socket, a directory or a symlink."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symlink")):
        if test(mode):
            return name
    return "not a regular file"


def _owner(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (KeyError, ImportError):
        return f"uid {uid}"


def open_regular(path: str | os.PathLike[str], flags: int = os.O_RDONLY, mode: int = 0o666) -> int:
    """Open ``path`` without following a final symlink or blocking; a descriptor of a regular file.

    Raises :class:`NotRegularFile` (with the reason) for anything else, and
    the usual ``OSError`` (``FileNotFoundError``...) when it cannot be opened.
    """
    p = os.fspath(path)
    try:
        fd = os.open(p, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise NotRegularFile(f"{p} is a symlink; refusing to follow it (a log must be a "
                                 "regular file: remove the link)") from None
        if e.errno == errno.ENXIO:  # a FIFO opened for writing without a reader, a socket
            raise NotRegularFile(f"{p} is not a regular file (a FIFO or socket); refusing to "
                                 "read it: remove it so the stage writes a regular file") from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotRegularFile(f"{p} is {_kind(st.st_mode)}, not a regular file; refusing to read "
                             "it (it could block or point anywhere): remove it so the stage "
                             "writes a regular file")
    return fd


def append_regular(path: str | os.PathLike[str]) -> int:
    """A descriptor to append to the log at ``path`` (created as the umask says), never blocking.

    Opening a FIFO for writing blocks until someone reads it; here it fails
    at once with :class:`NotRegularFile`, and so does a symlink.
    """
    fd = open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.set_blocking(fd, True)
    return fd


def check_owned(st: os.stat_result, path: str | os.PathLike[str], what: str = "file") -> None:
    """Raise :class:`UntrustedFile` unless ``st`` is ours and writable by no one else."""
    me = os.geteuid()
    if st.st_uid != me:
        raise UntrustedFile(f"{os.fspath(path)}: refused: the {what} is owned by {_owner(st.st_uid)}, "
                            f"not by {_owner(me)} who runs the supervisor; only its own files "
                            "are trusted. Remove it (and find out who wrote it)")
    if st.st_mode & _OTHERS_WRITE:
        raise UntrustedFile(f"{os.fspath(path)}: refused: the {what} has mode "
                            f"{stat.S_IMODE(st.st_mode):04o}, writable by others; "
                            f"run chmod go-w {os.fspath(path)} if you wrote it")


def read_trusted(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a control file, after checking it is regular, ours and owner-writable only."""
    fd = open_regular(path)
    try:
        check_owned(os.fstat(fd), path)
        chunks = []
        while True:
            b = os.read(fd, 1 << 16)
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_trusted_json(path: str | os.PathLike[str]) -> Any:
    """:func:`read_trusted`, parsed as UTF-8 JSON (``ValueError`` when it is not)."""
    return json.loads(read_trusted(path).decode("utf-8"))


def private_dir(path: str | os.PathLike[str]) -> Path:
    """Make ``path`` an owner-only directory (0700), whatever the umask; returns it.

    Parents are created as the umask says (they are the user's own tree). An
    existing directory of ours that others can enter or write is tightened;
    one that is a symlink, or owned by somebody else, raises UntrustedFile.
    """
    p = Path(path)
    try:
        p.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        pass
    st = os.lstat(p)
    if stat.S_ISLNK(st.st_mode):
        # A link the user made on purpose (state on a bigger disk) is theirs to
        # keep: the directory it names must pass the same checks.
        st = os.stat(p)
    if not stat.S_ISDIR(st.st_mode):
        raise UntrustedFile(f"{p} is {_kind(st.st_mode)}, not a directory")
    if st.st_uid != os.geteuid():
        check_owned(st, p, "directory")  # raises, naming the owner
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(p, 0o700)
    return p
