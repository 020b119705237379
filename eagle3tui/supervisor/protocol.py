"""How front ends talk to the driver: command files in, reply files out.

A command is a JSON file dropped atomically into ``<state_dir>/commands/``;
the driver executes commands one at a time in name order (so two front ends
racing to start the same stage produce exactly one run) and answers in
``commands/replies/``. If no driver holds the lock, one is started detached.

A command runs with the owner's rights, so both directories are owner-only
(0700, whatever the umask) and a command file is read only when it is a
regular file of the driver's own user that no one else can write
(:func:`read_command`); any other is refused, removed and alerted.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from eagle3tui.atomic import atomic_write_json
from eagle3tui.config import PipelineConfig
from eagle3tui.supervisor.lock import lock_held
from eagle3tui.trusted import UntrustedFile, private_dir, read_trusted_json

# Where commands and their replies live, under the state directory.
COMMANDS_DIR = "commands"
REPLIES_DIR = "replies"

def command_dirs(state_dir: Path) -> tuple[Path, Path]:
    """``commands/`` and ``commands/replies/`` under ``state_dir``, made owner-only."""
    cdir = private_dir(Path(state_dir) / COMMANDS_DIR)
    return cdir, private_dir(cdir / REPLIES_DIR)


def read_command(path: Path) -> dict[str, Any]:
    """One command file, if it is ours to obey.

    Raises UntrustedFile (another user's file, or one others could write),
    NotRegularFile (a FIFO, a symlink), ValueError (not a JSON object).
    """
    cmd = read_trusted_json(path)
    if not isinstance(cmd, dict):
        raise ValueError("a command is a JSON object")
    return cmd


def driver_argv(config: PipelineConfig) -> list[str]:
    """The command line of a detached driver for ``config``."""
    argv = [sys.executable, "-m", "eagle3tui.supervisor.driver", "--config", str(config.path)]
    for k, v in config.overrides.items():
        argv += ["--set", f"{k}={v}"]
    return argv


def driver_spec(config: PipelineConfig) -> dict[str, Any]:
    """What a stage wrapper needs to start a driver when none runs (see stagewrap.py)."""
    return {"argv": driver_argv(config), "cwd": str(config.path.parent),
            "lock": str(config.state_dir / "driver.lock"),
            "log": str(config.state_dir / "driver.log")}


def spawn_driver(config: PipelineConfig) -> None:
    """Start a detached driver for ``config`` (it exits at once if one already runs)."""
    private_dir(config.state_dir)
    fd = os.open(config.state_dir / "driver.log",
                 os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "ab") as log:
        proc = subprocess.Popen(driver_argv(config), cwd=str(config.path.parent),
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True)
    # Reap it whenever it exits, so a long-lived front end (the TUI) keeps no zombie.
    threading.Thread(target=proc.wait, daemon=True, name=f"reap driver {proc.pid}").start()


def ensure_driver(config: PipelineConfig) -> bool:
    """Start a driver unless one holds the lock; True if one was started."""
    if lock_held(config.state_dir):
        return False
    spawn_driver(config)
    return True


def send_command(config: PipelineConfig, op: str, stages: list[str] | None = None,
                 timeout: float = 20.0, **extra: Any) -> dict[str, Any]:
    """Queue a command, make sure a driver runs, and wait for its reply."""
    private_dir(config.state_dir)
    cdir, _ = command_dirs(config.state_dir)
    # Names sort by time, so the driver runs commands in the order they were sent.
    name = f"{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:6]}.json"
    # The sender's --set values travel with the command: a driver started with
    # other values reloads with these (and says so) rather than ignoring them.
    atomic_write_json(cdir / name, {"op": op, "stages": list(stages or []),
                                    "overrides": dict(config.overrides), **extra}, fsync=False)
    reply_path = cdir / REPLIES_DIR / name
    deadline = time.monotonic() + timeout
    next_spawn = 0.0
    while time.monotonic() < deadline:
        if reply_path.exists():
            try:
                reply = read_trusted_json(reply_path)
            except UntrustedFile as e:
                return {"ok": False, "message": str(e)}
            except (ValueError, FileNotFoundError):
                time.sleep(0.02)
                continue
            reply_path.unlink(missing_ok=True)
            return reply
        # The driver may have exited idle just before our command arrived:
        # keep making sure one runs until we have an answer.
        if time.monotonic() >= next_spawn and not lock_held(config.state_dir):
            spawn_driver(config)
            next_spawn = time.monotonic() + 1.0
        time.sleep(0.02)
    # Withdraw the command if nobody picked it up, so it cannot run by surprise later.
    (cdir / name).unlink(missing_ok=True)
    return {"ok": False, "message": f"no answer from the driver within {timeout:.0f}s; "
            f"see {config.state_dir / 'driver.log'}"}
