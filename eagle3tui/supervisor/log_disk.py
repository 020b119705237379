"""Whether a stage's log sits on a full (or read-only) filesystem.

A full log disk is the stage's trouble, not the state directory's: the
driver must say which file and which filesystem, keep supervising the other
stages, and give a failed attempt that cause (its own error may never have
reached the log).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from eagle3tui.telemetry.disk import nearest_existing

# Below this a log cannot take a traceback: the filesystem counts as full.
FULL_BELOW_BYTES = 64 * 1024
STORAGE_ERRNOS = (errno.ENOSPC, errno.EROFS, errno.EDQUOT)


def log_disk_problem(log: str | os.PathLike[str]) -> str | None:
    """"the filesystem of LOG (at MOUNT) is full: N bytes free" (or read-only); None if neither."""
    where = nearest_existing(Path(log))
    try:
        st = os.statvfs(where)
    except OSError:
        return None
    mount = _mount_of(where)
    if st.f_flag & os.ST_RDONLY:
        return f"the filesystem of {log} ({mount}) is read-only"
    free = st.f_bavail * st.f_frsize
    if free < FULL_BELOW_BYTES:
        return f"the filesystem of {log} ({mount}) is full: {free} bytes free"
    return None


def refused_by_log_disk(e: OSError, log: str | os.PathLike[str], state_dir: Path) -> str | None:
    """The log-disk problem behind ``e`` (raised while starting a stage), or None when
    the error is another one (the state directory's own, a bug)."""
    if e.errno not in STORAGE_ERRNOS:
        return None
    if e.filename and Path(str(e.filename)).absolute().is_relative_to(state_dir):
        return None
    if Path(log).absolute().is_relative_to(state_dir):
        return None  # the state directory's filesystem: the driver waits for it as a whole
    return log_disk_problem(log)


def _mount_of(path: Path) -> Path:
    p = path.resolve()
    while not os.path.ismount(p) and p.parent != p:
        p = p.parent
    return p
