"""Issue 13, finding 1: a stop ends every process the stage ever started.

Real processes: a stage whose main process exits at once on SIGTERM, with
children that ignore SIGTERM, in its group, in a session of their own
(``setsid``), and orphaned by a double fork. All must be gone after the
grace period, with or without a driver alive.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap


from conftest import alive, wait_for

STUBBORN = textwrap.dedent("""
    import os, signal, subprocess, sys, time
    out = sys.argv[1]
    ignore = "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"
    same_group = subprocess.Popen([sys.executable, "-c", ignore])
    own_session = subprocess.Popen([sys.executable, "-c", ignore], start_new_session=True)
    # A double fork: the grandchild is orphaned at once and leaves the group.
    orphan = ("import os,signal,time,sys\\n"
              "if os.fork() == 0:\\n"
              "    os.setsid(); signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
              "    open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(300)\\n"
              "os._exit(0)\\n")
    subprocess.Popen([sys.executable, "-c", orphan, out + ".orphan"]).wait()
    while not os.path.exists(out + ".orphan") or not open(out + ".orphan").read():
        time.sleep(0.01)
    with open(out, "w") as f:
        f.write(f"{same_group.pid} {own_session.pid} {open(out + '.orphan').read()}")
    print("children started", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    time.sleep(300)
""")


def _setup(pipeline, grace: str = "1s"):
    script = pipeline.root / "stubborn.py"
    script.write_text(STUBBORN)
    pids_file = pipeline.root / "pids"
    pipeline.write(f"""
        [[stage]]
        name = "gpu"
        command = ["{sys.executable}", "{script}", "{pids_file}"]
        stop_grace = "{grace}"
    """)
    pipeline.cli("start", "gpu", check=True)
    wait_for(lambda: pids_file.exists() and len(pids_file.read_text().split()) == 3,
             what="the stage's children")
    pids = [int(x) for x in pids_file.read_text().split()]
    assert all(alive(p) for p in pids)
    main_pid = pipeline.records("gpu")[0]["pid"]
    return pids, main_pid


def test_stop_kills_children_that_ignore_sigterm_and_left_the_group(pipeline):
    pids, main_pid = _setup(pipeline)
    r = pipeline.cli("stop", "gpu")
    assert r.returncode == 0, r.stderr
    wait_for(lambda: not alive(main_pid), timeout=5, what="main process gone on SIGTERM")
    wait_for(lambda: not any(alive(p) for p in pids), timeout=15,
             what="every descendant gone after the grace period")
    wait_for(lambda: pipeline.stage("gpu")["state"] == "stopped", what="stage stopped")
    wait_for(lambda: "stage-killed" in [a["kind"] for a in pipeline.alerts()],
             what="the stage-killed alert")


def test_stop_completes_without_any_driver(pipeline):
    """The driver dies right after sending the stop: the wrapper alone finishes it."""
    pids, main_pid = _setup(pipeline)
    r = pipeline.cli("stop", "gpu")
    assert r.returncode == 0, r.stderr
    os.kill(pipeline.driver_pid(), signal.SIGKILL)
    wait_for(lambda: not any(alive(p) for p in pids + [main_pid]), timeout=20,
             what="every descendant gone with no driver")
    result = pipeline.state_dir / "runs/gpu/0001.result.json"
    wait_for(result.exists, what="the wrapper's result")
    assert json.loads(result.read_text())["stop_signalled"] is True
    wait_for(lambda: pipeline.stage("gpu")["state"] == "stopped", what="stage stopped")


def test_leftovers_end_with_the_stage(pipeline):
    """A stage that exits on its own leaves no process behind (GPU memory held by orphans)."""
    marker = pipeline.root / "leftover"
    pipeline.write(f"""
        [[stage]]
        name = "leaky"
        command = ["sh", "-c", "setsid sh -c 'echo $$ > {marker}; trap \\"\\" TERM; sleep 300; :' & sleep 0.5; exit 0"]
        stop_grace = "1s"
    """)
    r = pipeline.cli("start", "leaky", "--wait", "--timeout", "40")
    assert r.returncode == 0, r.stdout + r.stderr
    pid = int(marker.read_text())
    assert not alive(pid), "the stage's orphan outlived the stage"
