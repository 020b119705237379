"""Crash-safe file writes for the pipeline stages.

A file is written to a temporary sibling, fsynced, renamed over the target and
the directory entry fsynced, so a stage killed at any instant leaves either the
old file or the new one, never a truncated file under the final name.

``mkstemp`` and ``mkdtemp`` create owner-only entries (0600, 0700) whatever the
umask; what is renamed into place gets the mode an ordinary ``open`` or
``mkdir`` would have given it (0644 and 0755 under umask 022), so a server
running as another user can read what the pipeline made. (The
supervisor has its own copy of this idea; ``pipeline`` is a separate product
and imports nothing from it.)
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write_bytes", "current_umask", "fsync_dir", "fsync_file", "temp_dir_for",
           "umask_mode"]


def current_umask() -> int:
    """The process's umask, read without changing it (Linux), else set and restored."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def umask_mode(path: str | os.PathLike[str]) -> None:
    """Give a file the mode ``open`` would have (0644 under umask 022).

    For files a library writes owner-only (safetensors' ``save_file`` makes 0600).
    """
    os.chmod(path, 0o666 & ~current_umask())


def temp_dir_for(target: str | os.PathLike[str]) -> Path:
    """A new temporary sibling directory of ``target``, with the umask's mode (for a rename)."""
    target = Path(target)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent))
    os.chmod(tmp, 0o777 & ~current_umask())
    return tmp


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
        os.fchmod(fd, 0o666 & ~current_umask())
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
