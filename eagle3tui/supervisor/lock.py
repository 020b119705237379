"""One driver per state directory, enforced by an flock on ``driver.lock``.

The lock dies with its process (the kernel releases it), so a driver killed
with SIGKILL never leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import Any

from eagle3tui.atomic import atomic_write_json
from eagle3tui.supervisor.procs import create_time, is_alive
from eagle3tui.trusted import open_regular, private_dir, read_trusted_json


class DriverLock:
    """Holds ``<state_dir>/driver.lock`` while a driver runs."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = Path(state_dir)
        self.path = self.state_dir / "driver.lock"
        self.fd: int | None = None

    def acquire(self, timeout: float = 0.0) -> bool:
        # Owner-only whatever the umask: what lies inside decides what runs as us.
        private_dir(self.state_dir)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    return False
                time.sleep(0.05)
        self.fd = fd
        atomic_write_json(self.state_dir / "driver.json", {
            "pid": os.getpid(), "create_time": create_time(os.getpid()), "started_at": time.time(),
        }, fsync=False)
        return True

    def still_held(self) -> bool:
        """False once ``driver.lock`` on disk is no longer the file we locked.

        Deleting the state directory (or the lock file) under a live driver
        would otherwise let a second driver lock a new file and run the same
        stages again.
        """
        if self.fd is None:
            return False
        try:
            mine = os.fstat(self.fd)
            there = os.stat(self.path)
        except OSError:
            return False
        return (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino)

    def release(self) -> None:
        if self.fd is not None:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            finally:
                os.close(self.fd)
                self.fd = None


def lock_held(state_dir: Path) -> bool:
    """True when some process holds the driver lock of ``state_dir``."""
    path = Path(state_dir) / "driver.lock"
    if not path.exists():
        return False
    try:
        fd = open_regular(path)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # cannot tell: never start a second driver on a guess
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def driver_info(state_dir: Path) -> dict[str, Any]:
    """``{"alive": bool, "pid": int|None, "started_at": float|None}`` for status output."""
    try:
        data = read_trusted_json(Path(state_dir) / "driver.json")
        if not isinstance(data, dict):
            data = {}
    except (OSError, ValueError):
        data = {}
    alive = lock_held(state_dir) and is_alive(data.get("pid"), data.get("create_time"))
    return {"alive": alive, "pid": data.get("pid") if alive else None,
            "started_at": data.get("started_at") if alive else None}
