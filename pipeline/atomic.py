"""Crash-safe file writes for the pipeline stages.

A file is written to a temporary sibling, fsynced, renamed over the target and
the directory entry fsynced, so a stage killed at any instant leaves either the
old file or the new one, never a truncated file under the final name. (The
supervisor has its own copy of this idea; ``pipeline`` is a separate product
and imports nothing from it.)
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write_bytes", "fsync_dir", "fsync_file"]


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """fsync a directory, so a rename inside it survives a power cut (best effort)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on directories; the rename is still atomic
    finally:
        os.close(fd)


def fsync_file(path: str | os.PathLike[str]) -> None:
    """fsync an existing file's contents."""
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, fsync: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically (creating its parent directories)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if fsync:
        fsync_dir(target.parent)
