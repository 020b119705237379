"""Detached, nohup-style launch of one stage attempt.

The stage runs under ``stagewrap.py`` in a new session with stdin from
/dev/null and stdout/stderr appended to its log, so it survives the
supervisor's exit and an SSH hang-up, and its outcome is recorded by the
wrapper even when nobody is watching.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from eagle3tui.config import StageConfig
from eagle3tui.supervisor.procs import create_time
from eagle3tui.supervisor.records import RunRecord, RunStore

WRAPPER = Path(__file__).with_name("stagewrap.py")

# Wrappers started by this process. They are our children until we exit, so
# a long-lived driver must reap the ones that ended or they linger as zombies.
_wrappers: list[subprocess.Popen[bytes]] = []


def reap_wrappers() -> None:
    """Collect the exit status of wrappers that have ended (never blocks)."""
    _wrappers[:] = [p for p in _wrappers if p.poll() is None]


def stage_env(stage: StageConfig, attempt: int) -> dict[str, str]:
    """The environment a stage runs with."""
    env = dict(os.environ)
    # Unbuffered Python output, or a stage's log trails minutes behind its work.
    env.setdefault("PYTHONUNBUFFERED", "1")
    if stage.gpus.indices and not stage.gpus.all and "CUDA_VISIBLE_DEVICES" not in stage.env:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in sorted(stage.gpus.indices))
    env.update(stage.env)
    env["EAGLE3TUI_STAGE"] = stage.name
    env["EAGLE3TUI_ATTEMPT"] = str(attempt)
    return env


def launch(stage: StageConfig, store: RunStore, *, resume: bool = False,
           resumed_from: int | None = None, trigger: str = "user",
           wait_started: float = 10.0) -> RunRecord:
    """Start one attempt of ``stage`` detached; return its saved record.

    The record is saved before the process starts, so a supervisor that dies
    half-way leaves an attempt that is reported as lost rather than nothing.
    """
    argv = stage.argv(resume=resume)
    log = Path(stage.log)
    log.parent.mkdir(parents=True, exist_ok=True)
    store.stage_dir(stage.name).mkdir(parents=True, exist_ok=True)
    rec = store.new_record(stage.name, argv=argv, cwd=str(stage.cwd), log=str(log),
                           resume=resume, resumed_from=resumed_from, trigger=trigger)
    with open(log, "ab") as f:
        stamp = datetime.now().astimezone().isoformat(timespec="seconds")
        what = f"resume of attempt {resumed_from}" if resume and resumed_from else "start"
        f.write(f"[eagle3tui] {stamp} stage {stage.name} attempt {rec.attempt} ({what}): "
                f"{' '.join(argv)}\n".encode("utf-8", "replace"))
        # The attempt's output starts after our header line.
        rec.log_offset = f.tell()
    rec.launched_at = time.time()
    store.save(rec)
    prefix = store.prefix(stage.name, rec.attempt)
    if not stage.cwd.is_dir():
        rec.error = f"working directory {stage.cwd} does not exist"
        rec.exit_code = 127
        rec.ended_at = time.time()
        _append(log, f"[eagle3tui] cannot start: {rec.error}\n")
        store.save(rec)
        return rec
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-I", str(WRAPPER), "--record", prefix, "--", *argv],
            cwd=str(stage.cwd), env=stage_env(stage, rec.attempt), stdin=subprocess.DEVNULL,
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True, close_fds=True,
        )
    rec.wrapper_pid = proc.pid
    rec.wrapper_create_time = create_time(proc.pid)
    store.save(rec)
    # Wait briefly for the wrapper to report the stage's pid, so callers can
    # show it and stop it at once. The wrapper is never waited on for exit.
    deadline = time.monotonic() + wait_started
    while time.monotonic() < deadline:
        if store.merge_wrapper_files(rec) and (rec.pid or rec.ended_at):
            break
        if proc.poll() is not None:
            store.merge_wrapper_files(rec)
            break
        time.sleep(0.005)
    store.save(rec)
    _wrappers.append(proc)
    reap_wrappers()
    return rec


def _append(log: Path, text: str) -> None:
    with open(log, "ab") as f:
        f.write(text.encode("utf-8", "replace"))
