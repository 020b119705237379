"""Processes that try to slip out of a stop, or out of a timed-out alert command.

Real processes: a stage whose child rewrites ``EAGLE3TUI_RUN_ID`` (the mark
the wrapper and the driver look for in a process's environment), calls
``setsid`` (leaves the stage's process group and session) and ignores
SIGTERM, once while its parent lives and once orphaned by a double fork;
and an ``[alerts] command`` that hangs after starting ``setsid`` children.
"""

from __future__ import annotations

import os
import sys
import textwrap
import time

import psutil
from conftest import alive, wait_for

from eagle3tui.alerts.model import Alert
from eagle3tui.alerts.notifier import Notifier

# argv: PIDFILE MODE; MODE "child" keeps the escaper as the stage's child,
# "orphan" double-forks so that it is re-parented at once.
ESCAPER = textwrap.dedent("""
    import os, signal, sys, time
    pidfile, mode = sys.argv[1], sys.argv[2]
    if os.fork() == 0:
        if mode == "orphan" and os.fork() != 0:
            os._exit(0)
        os.setsid()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        env = dict(os.environ, EAGLE3TUI_RUN_ID="somebody-else")
        os.execve(sys.executable, [sys.executable, "-c",
                  "import os, signal, sys, time\\n"
                  "signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
                  "open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid()))\\n"
                  "os.replace(sys.argv[1] + '.tmp', sys.argv[1])\\n"
                  "time.sleep(600)\\n", pidfile], env)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    while True:
        time.sleep(1)
""")


def _escaper(pipeline, mode: str) -> int:
    script = pipeline.root / "escaper.py"
    script.write_text(ESCAPER)
    pidfile = pipeline.root / "escaper.pid"
    pipeline.write(f"""
        [[stage]]
        name = "train"
        command = ["{sys.executable}", "{script}", "{pidfile}", "{mode}"]
        stop_grace = "1s"
    """)
    pipeline.cli("start", "train", check=True)
    wait_for(pidfile.exists, what="the escaping child")
    pid = int(pidfile.read_text())
    env = psutil.Process(pid).environ()
    assert env["EAGLE3TUI_RUN_ID"] == "somebody-else" and os.getsid(pid) == pid
    return pid


def _stop_ends_it(pipeline, pid: int) -> None:
    r = pipeline.cli("stop", "train")
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: pipeline.stage("train")["state"] not in ("running", "stopping"), timeout=30,
             what="the stage to end")
    st = pipeline.stage("train")
    # Reported stopped only once nothing of it runs: at that moment the escaper is gone.
    assert not alive(pid), f"the stage is {st['state']} but its child {pid} survived the stop"
    assert st["state"] == "stopped", st


def test_stop_ends_a_child_that_rewrote_its_run_id_and_called_setsid(pipeline):
    _stop_ends_it(pipeline, _escaper(pipeline, "child"))


def test_stop_ends_an_orphan_that_rewrote_its_run_id_and_called_setsid(pipeline):
    _stop_ends_it(pipeline, _escaper(pipeline, "orphan"))


def test_timed_out_alert_command_leaves_no_setsid_children(tmp_path):
    hang = tmp_path / "hang.py"
    hang.write_text(textwrap.dedent("""
        import os, subprocess, sys, time
        sys.stdin.read()
        sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
        # One in a session of its own, one in a new session with its environment scrubbed.
        a = subprocess.Popen(sleeper, start_new_session=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        b = subprocess.Popen(sleeper, start_new_session=True, env={}, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        open(sys.argv[1] + ".tmp", "w").write(f"{os.getpid()} {a.pid} {b.pid}")
        os.replace(sys.argv[1] + ".tmp", sys.argv[1])
        time.sleep(600)
    """))
    pidfile = tmp_path / "pids"
    problems: list[Alert] = []
    n = Notifier([sys.executable, str(hang), str(pidfile)], min_level="info", timeout_s=1.0,
                 report=problems.append)
    n.submit(Alert("critical", "stage-failed", "x"))
    wait_for(pidfile.exists, timeout=15, what="the hanging command and its children")
    pids = [int(x) for x in pidfile.read_text().split()]
    wait_for(lambda: problems, timeout=20, what="the timeout")
    assert [p.kind for p in problems] == ["notifier-timeout"]
    try:
        wait_for(lambda: not any(alive(p) for p in pids), timeout=10,
                 what="the command and its setsid children gone")
    finally:
        for p in pids:
            try:
                os.kill(p, 9)
            except OSError:
                pass
        deadline = time.monotonic() + 10
        while not n.close(wait_s=1) and time.monotonic() < deadline:
            pass
