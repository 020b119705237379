"""Whether a stage's log sits on a full (or read-only) filesystem.

A stage that dies because its log's filesystem filled up may never have
got its own error into the log: the failed attempt then gets that cause
(which file, which filesystem, how much was free), or it reads "exit 1"
with nothing to explain it.
"""

from __future__ import annotations

import os
from pathlib import Path

from eagle3tui.telemetry.disk import nearest_existing

# Below this a log cannot take a traceback: the filesystem counts as full.
FULL_BELOW_BYTES = 64 * 1024


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


def _mount_of(path: Path) -> Path:
    p = path.resolve()
    while not os.path.ismount(p) and p.parent != p:
        p = p.parent
    return p
