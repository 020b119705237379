"""The tiny wrapper that outlives every supervisor.

The launcher starts this wrapper in a new session; the wrapper starts the
stage in a process group of its own, writes ``<record>.started.json`` (pid,
create time, pgid), waits, and writes ``<record>.result.json`` (exit code or
signal, end time) atomically. So an exit code is recorded even when no
supervisor is alive at the moment the stage ends.

The wrapper ignores SIGHUP and SIGINT (an SSH hang-up must not end it) and
passes SIGTERM on to the stage's group: stopping is done by signalling the
stage's group, which leaves the wrapper free to record the outcome.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

# This file runs as a script under ``python -I`` (see launcher.py), so it
# imports nothing from eagle3tui: the stage's environment (PYTHONPATH, cwd)
# can never break the wrapper.


def atomic_write_json(path: str, obj: object) -> None:
    tmp = f"{path}.{os.getpid()}.partial"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 3 or args[0] != "--record" or "--" not in args:
        print("usage: python -I stagewrap.py --record PREFIX -- ARGV...", file=sys.stderr)
        return 2
    prefix = args[1]
    cmd = args[args.index("--") + 1:]
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        # New session for the stage too: its pgid is its pid, so stopping the
        # stage signals exactly the stage's tree and never the wrapper.
        child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, start_new_session=True,
                                 close_fds=True)
    except OSError as e:
        # Show the reason in the stage log (our stdout) and record exit 127 like a shell.
        print(f"eagle3tui: cannot start {cmd[0]!r}: {e.strerror or e}", flush=True)
        atomic_write_json(prefix + ".result.json", {
            "exit_code": 127, "signal": None, "ended_at": time.time(),
            "error": f"cannot start {cmd[0]!r}: {e.strerror or e}",
        })
        return 127
    try:
        import psutil

        created = psutil.Process(child.pid).create_time()
    except Exception:  # psutil missing or the child already gone
        created = None
    atomic_write_json(prefix + ".started.json", {
        "pid": child.pid, "pgid": child.pid, "create_time": created,
        "wrapper_pid": os.getpid(), "started_at": time.time(),
    })

    def forward(signum: int, _frame: object) -> None:
        try:
            os.killpg(child.pid, signum)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGTERM, forward)
    while True:
        try:
            rc = child.wait()
            break
        except InterruptedError:  # pragma: no cover - PEP 475 retries for us
            continue
    result = {
        "exit_code": rc if rc >= 0 else None,
        "signal": -rc if rc < 0 else None,
        "ended_at": time.time(),
    }
    atomic_write_json(prefix + ".result.json", result)
    sys.stdout.flush()
    # The stage's own status, as a shell reports it: under Slurm the wrapper is
    # the batch step, and Slurm's ExitCode/state (FAILED for exit 3) come from it.
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    raise SystemExit(main())
