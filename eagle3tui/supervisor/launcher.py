"""Detached, nohup-style launch of one stage attempt.

The stage runs under ``stagewrap.py`` in a new session with stdin from
/dev/null and stdout/stderr appended to its log, so it survives the
supervisor's exit and an SSH hang-up, and its outcome is recorded by the
wrapper even when nobody is watching.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import psutil

from eagle3tui.config import StageConfig
from eagle3tui.supervisor.deadlines import deadline, seconds_left
from eagle3tui.supervisor.elastic_error import ENV as ELASTIC_ENV
from eagle3tui.supervisor.elastic_error import error_file_env
from eagle3tui.supervisor.fingerprint import FINGERPRINT, fingerprint
from eagle3tui.supervisor.procs import create_time
from eagle3tui.supervisor.records import RunRecord, RunStore
from eagle3tui.trusted import NotRegularFile, append_regular, open_regular, private_dir

WRAPPER = Path(__file__).with_name("stagewrap.py")
LAUNCH_CLOCK = "launched_clock"  # the record's extra: the launch as a deadline of 0 s

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
    # Not inherited from a driver's own environment: a stage's run id is its own.
    env.pop("EAGLE3TUI_RUN_ID", None)
    return env


def fallback_result_path(store: RunStore, stage: str, attempt: int) -> str:
    """Where the wrapper writes the result when the state directory refuses it.

    Outside the state directory (its filesystem may be full or read-only), in
    an owner-only directory with a random name (see records.fallback_dir): a
    predictable path in a world-writable /tmp would let another user plant a
    result there first.
    """
    return str(store.fallback_dir() / f"{stage}.{attempt:04d}.result.json")


def wrapper_argv(stage: StageConfig, store: RunStore, rec: RunRecord,
                 driver: dict[str, Any] | None) -> list[str]:
    """The wrapper's command line for ``rec`` (its prefix identifies the attempt)."""
    argv = [sys.executable, "-I", str(WRAPPER), "--record", store.prefix(stage.name, rec.attempt),
            "--grace", repr(float(stage.stop_grace_s)),
            "--fallback", str(rec.extra.get("result_fallback") or "")]
    if driver:
        argv += ["--driver", json.dumps(driver)]
    return [*argv, "--", *rec.argv]


def ensure_keeper(state_dir: Path, driver: dict[str, Any]) -> None:
    """Start the state directory's keeper unless one runs (see stagewrap.keep)."""
    lock = Path(state_dir) / "keeper.lock"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
    except BlockingIOError:
        return  # held: a keeper runs
    finally:
        os.close(fd)
    env = {k: v for k, v in os.environ.items() if not k.startswith("EAGLE3TUI_")}
    env["EAGLE3TUI_DRIVER_SPAWNED_BY"] = str(os.getpid())
    proc = subprocess.Popen([sys.executable, "-I", str(WRAPPER), "--keep", str(state_dir),
                             "--driver", json.dumps(driver)], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, close_fds=True)
    _wrappers.append(proc)


def find_wrapper(prefix: str) -> int | None:
    """The pid of a live wrapper started for ``prefix``, found by its command line.

    Used when a driver died between starting the wrapper and saving its pid:
    the attempt is then running and must not be launched again.
    """
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info.get("cmdline") or []
        if str(WRAPPER) in cmd and "--record" in cmd:
            i = cmd.index("--record")
            if i + 1 < len(cmd) and cmd[i + 1] == prefix:
                try:
                    if p.status() != psutil.STATUS_ZOMBIE:
                        return p.pid
                except psutil.Error:
                    continue
    return None


def new_attempt(stage: StageConfig, store: RunStore, *, resume: bool, resumed_from: int | None,
                trigger: str) -> RunRecord:
    """A new (unsaved) record of ``stage``, its log and run directories made."""
    argv = stage.argv(resume=resume)
    log = Path(stage.log)  # its directory is made by write_header, which reports why not
    private_dir(store.runs_dir)  # 0700 whatever the umask
    private_dir(store.stage_dir(stage.name))
    rec = store.new_record(stage.name, argv=argv, cwd=str(stage.cwd), log=str(log),
                           resume=resume, resumed_from=resumed_from, trigger=trigger)
    # Saved with the record before the process starts: a success is always
    # known together with what it was made from (supervisor/fingerprint.py).
    rec.extra[FINGERPRINT] = fingerprint(stage)
    return rec


def write_header(rec: RunRecord, stage: StageConfig, resumed_from: int | None, how: str = "") -> None:
    """The attempt's header line in the stage log; its output starts after it (``log_offset``)."""
    Path(rec.log).parent.mkdir(parents=True, exist_ok=True)
    with os.fdopen(append_regular(rec.log), "ab") as f:
        stamp = datetime.now().astimezone().isoformat(timespec="seconds")
        what = f"resume of attempt {resumed_from}" if rec.resume and resumed_from else "start"
        f.write(f"[eagle3tui] {stamp} stage {stage.name} attempt {rec.attempt} ({what}){how}: "
                f"{' '.join(rec.argv)}\n".encode("utf-8", "replace"))
        rec.log_offset = f.tell()
    rec.log_line = lines_before(rec.log, rec.log_offset)
    rec.launched_at = time.time()
    # The launch on the monotonic clock too (within this boot): how long an
    # attempt has run survives a wall-clock step (see attempt_age_s).
    rec.extra[LAUNCH_CLOCK] = deadline(0.0)


def attempt_age_s(rec: RunRecord) -> float:
    """Seconds since ``rec`` was launched: monotonic within the boot it was launched in."""
    clock = rec.extra.get(LAUNCH_CLOCK)
    if isinstance(clock, dict):
        return max(0.0, -seconds_left(clock))
    return max(0.0, time.time() - (rec.started_at or rec.launched_at))


def lines_before(path: str, offset: int) -> int:
    """How many lines the file holds before ``offset`` (where the attempt's output starts)."""
    lines = 0
    with os.fdopen(open_regular(path), "rb") as f:
        left = offset
        while left > 0:
            block = f.read(min(1 << 20, left))
            if not block:
                break
            lines += block.count(b"\n")
            left -= len(block)
    return lines


def launch(stage: StageConfig, store: RunStore, *, resume: bool = False,
           resumed_from: int | None = None, trigger: str = "user",
           driver: dict[str, Any] | None = None) -> RunRecord:
    """Start one attempt of ``stage`` detached; return its saved record.

    The record is saved before the process starts, so a supervisor that dies
    half-way leaves an attempt that ``resume_interrupted`` finishes launching
    (or that is reported as lost), never nothing. ``driver`` tells the wrapper
    how to start a driver when none runs (see stagewrap.py).

    It returns once the wrapper is started and its pid saved, without waiting
    for the stage's own pid: waiting made a pass that starts 200 stages take 200 wrapper start-ups in
    a row. The stage's pid reaches the record from ``started.json`` when the
    record is next read (``RunStore.merge_wrapper_files``); a stop sent before
    then reaches the wrapper, which has not started the stage yet or passes
    the signal on.
    """
    rec = new_attempt(stage, store, resume=resume, resumed_from=resumed_from, trigger=trigger)
    rec.extra["result_fallback"] = fallback_result_path(store, stage.name, rec.attempt)
    if driver:
        rec.extra["driver"] = driver
    try:
        write_header(rec, stage, resumed_from)
    except OSError as e:
        # A FIFO or a link at the log path (never blocked on), a directory that
        # cannot be made, a full log disk: the attempt fails and says why, and
        # the driver goes on with the other stages. (A full *state* directory
        # makes the save below fail too: the driver then waits for space.)
        why = str(e) if isinstance(e, NotRegularFile) else f"{e.filename or rec.log}: {e.strerror or e}"
        rec.error, rec.exit_code, rec.ended_at = f"cannot write the log: {why}", 127, time.time()
        store.save(rec)
        return rec
    # Write-ahead: the attempt exists on disk before any process does.
    store.save(rec)
    return _start_wrapper(stage, store, rec)


def resume_interrupted(stage: StageConfig, store: RunStore, rec: RunRecord) -> RunRecord | None:
    """Finish a launch a dead driver left half-done; None when there is nothing to do.

    An attempt whose record was saved but whose wrapper pid was not is either
    running (its wrapper is found by command line, and adopted) or never
    started (it is started now, as the same attempt). Launch is idempotent per
    (stage, attempt): this never creates a second process for one attempt.
    """
    if rec.wrapper_pid is not None or rec.pid is not None or rec.finished or rec.error:
        return None
    prefix = store.prefix(stage.name, rec.attempt)
    if Path(prefix + ".started.json").exists() or Path(prefix + ".result.json").exists():
        return None
    pid = find_wrapper(prefix)
    if pid is not None:
        rec.wrapper_pid = pid
        rec.wrapper_create_time = create_time(pid)
        store.save(rec)
        return rec
    _append(Path(rec.log), f"[eagle3tui] the driver died before attempt {rec.attempt} started; "
                           "starting it now\n")
    return _start_wrapper(stage, store, rec)


def _start_wrapper(stage: StageConfig, store: RunStore, rec: RunRecord) -> RunRecord:
    log = Path(rec.log)
    if not stage.cwd.is_dir():
        rec.error = f"working directory {stage.cwd} does not exist"
        rec.exit_code = 127
        rec.ended_at = time.time()
        _append(log, f"[eagle3tui] cannot start: {rec.error}\n")
        store.save(rec)
        return rec
    env = stage_env(stage, rec.attempt)
    env["EAGLE3TUI_RUN_ID"] = rec.run_id
    elastic = error_file_env(rec.argv, env, store.prefix(stage.name, rec.attempt))
    if elastic:  # torchrun records its first failed child's exception there
        env.update(elastic)
        rec.extra["elastic_error_file"] = elastic[ELASTIC_ENV]
    with os.fdopen(append_regular(log), "ab") as out:
        proc = subprocess.Popen(
            wrapper_argv(stage, store, rec, rec.extra.get("driver")),
            cwd=str(stage.cwd), env=env, stdin=subprocess.DEVNULL,
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True, close_fds=True,
        )
    rec.wrapper_pid = proc.pid
    rec.wrapper_create_time = create_time(proc.pid)
    # Not fsynced: a power loss that would lose it ends the wrapper too, and a
    # record without a wrapper pid is finished by resume_interrupted (the
    # record above, written ahead of the process, is fsynced).
    store.save(rec, durable=False)
    # Reaped by the driver's passes (reap_wrappers), never here: launches of
    # one pass run in several threads, and only appending is safe among them.
    _wrappers.append(proc)
    return rec


def _append(log: Path, text: str) -> None:
    try:
        with os.fdopen(append_regular(log), "ab") as f:
            f.write(text.encode("utf-8", "replace"))
    except OSError:
        pass
