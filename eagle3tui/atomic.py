"""Atomic file writes: temp file in the same directory, fsync, rename.

A reader (or a supervisor restarted after a crash) sees either the old
content or the new, never half of a record. Files are written 0600 and the
directories made for them 0700, whatever the umask.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, fsync: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically."""
    path = Path(path)
    # Directories made here hold the supervisor's own files: owner-only (the
    # file itself is 0600, as mkstemp makes it).
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if fsync:
        fsync_dir(path.parent)


def atomic_write_json(path: str | os.PathLike[str], obj: Any, *, fsync: bool = True) -> None:
    """Write ``obj`` as indented JSON, atomically."""
    data = json.dumps(obj, indent=2, sort_keys=False).encode() + b"\n"
    atomic_write_bytes(path, data, fsync=fsync)


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """fsync a directory: a rename inside it is only durable once its entry is synced."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
