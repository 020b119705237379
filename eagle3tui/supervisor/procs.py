"""Process identity and process-group signalling.

A pid alone is not an identity: after a reboot or a long run the kernel
reuses pids. Every process eagle3tui tracks is recorded as (pid,
create_time), and is only taken as alive when both match.
"""

from __future__ import annotations

import os
import signal
import time

import psutil

# psutil reports create_time with 10 ms resolution on Linux (clock ticks).
_CREATE_TIME_TOLERANCE = 0.05


def create_time(pid: int) -> float | None:
    """The process's start time (epoch seconds), or None if it is gone."""
    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, ValueError):
        return None


def is_alive(pid: int | None, created: float | None) -> bool:
    """True when ``pid`` runs and is the same process that started at ``created``."""
    if not pid or created is None:
        return False
    try:
        p = psutil.Process(pid)
        if p.status() == psutil.STATUS_ZOMBIE:
            return False
        return abs(p.create_time() - created) <= _CREATE_TIME_TOLERANCE
    except (psutil.NoSuchProcess, psutil.ZombieProcess, ValueError):
        return False
    except psutil.AccessDenied:
        return True


def group_alive(pgid: int) -> bool:
    """True while any process of process group ``pgid`` exists."""
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to a whole process group; False when it no longer exists."""
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False


def wait_group_gone(pgid: int, timeout: float) -> bool:
    """Poll until process group ``pgid`` is empty or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not group_alive(pgid):
            return True
        time.sleep(0.05)
    return not group_alive(pgid)


def run_processes(run_id: str, spare: int | None = None) -> list[int]:
    """Live processes carrying ``EAGLE3TUI_RUN_ID=run_id`` (set by the launcher), but ``spare``.

    Finds a stage's processes that left its process group (``setsid``), even
    after the wrapper that could have found them by parentage is gone.
    """
    me = os.getpid()
    out = []
    for p in psutil.process_iter():
        if p.pid in (me, spare):
            continue
        try:
            if p.environ().get("EAGLE3TUI_RUN_ID") == run_id and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p.pid)
        except (psutil.Error, OSError):
            continue
    return out


def kill_run(run_id: str, pgid: int | None, spare: int | None = None,
             sig: int = signal.SIGKILL) -> int:
    """Send ``sig`` to a stage's group and to every process of its run; how many got it."""
    n = 0
    if pgid:
        n += signal_group(pgid, sig)
    for pid in run_processes(run_id, spare):
        try:
            os.kill(pid, sig)
            n += 1
        except OSError:
            pass
    return n


def signal_name(sig: int | None) -> str | None:
    if sig is None:
        return None
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def process_tree(pid: int) -> list[int]:
    """``pid`` and all of its descendants that can be seen."""
    try:
        p = psutil.Process(pid)
        return [pid] + [c.pid for c in p.children(recursive=True)]
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return []
