"""The keeper gives up on a driver that fails at every start, and says so.

Real processes throughout: a pipeline whose retry back-off leaves only the
state directory's keeper to start drivers, a driver killed with SIGKILL, and
a pipeline file broken on disk so that every driver the keeper starts exits
with an error (exit 2, the invalid configuration).
"""

from __future__ import annotations

import json
import os
import signal
import time

import psutil
from conftest import alive, wait_for

# The documented number (docs/reliability.md): written out, so the test checks the promise.
KEEPER_MAX_CRASHES = 5
STARTING = "no driver holds the lock: starting one"


def _drivers(pipeline) -> list[int]:
    """Live driver processes of this pipeline (a front end may have started spares that
    wait for the lock a moment, then exit)."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
        except OSError:
            continue
        if b"eagle3tui.supervisor.driver" in cmd and str(pipeline.config).encode() in cmd \
                and alive(int(pid)):
            out.append(int(pid))
    return out


def test_keeper_gives_up_on_a_driver_that_crashes_at_every_start(pipeline):
    pipeline.write("""
        [[stage]]
        name = "flaky"
        command = ["sh", "-c", "exit 1"]
        retry = { max_attempts = 3, backoff = "1h", on = ["exit:1"] }
    """)
    pipeline.cli("start", "flaky", check=True)
    wait_for(lambda: "retry-scheduled" in [a["kind"] for a in pipeline.alerts()], what="retry scheduled")
    keeper = wait_for(lambda: alive(k := json.loads((pipeline.state_dir / "keeper.json").read_text())["pid"])
                      and k, what="the keeper running")
    wait_for(lambda: _drivers(pipeline) == [pipeline.driver_pid()], what="one driver left")
    pipeline.config.write_text("[[stage]\nname = \n")  # broken on disk: every driver exits 2
    os.kill(pipeline.driver_pid(), signal.SIGKILL)
    wait_for(lambda: not alive(keeper), timeout=120, interval=0.2,
             what="the keeper to give up (it restarts a failing driver forever)")
    log = (pipeline.state_dir / "driver.log").read_text()
    assert log.count(STARTING) == KEEPER_MAX_CRASHES, log
    gave_up = [a for a in pipeline.alerts() if a["kind"] == "driver-keeps-crashing"]
    assert len(gave_up) == 1 and gave_up[0]["level"] == "critical", pipeline.alerts()
    assert gave_up[0]["details"]["exit_codes"] == [2] * KEEPER_MAX_CRASHES
    assert str(pipeline.state_dir / "driver.log") in gave_up[0]["message"]


def test_keeper_goes_on_restarting_drivers_that_are_killed(pipeline):
    """SIGKILLed drivers (OOM killer, a person) are what the keeper is for: never a reason to stop."""
    pipeline.write("""
        [[stage]]
        name = "flaky"
        command = ["sh", "-c", "exit 1"]
        retry = { max_attempts = 3, backoff = "1h", on = ["exit:1"] }
    """)
    pipeline.cli("start", "flaky", check=True)
    wait_for(lambda: "retry-scheduled" in [a["kind"] for a in pipeline.alerts()], what="retry scheduled")
    keeper = json.loads((pipeline.state_dir / "keeper.json").read_text())["pid"]
    seen: set[int] = set()
    for _ in range(KEEPER_MAX_CRASHES + 2):
        pid = wait_for(lambda: (p := pipeline.driver_pid()) not in seen and p and alive(p) and p,
                       timeout=30, what="a driver started by the keeper")
        seen.add(pid)
        # The keeper looks every 0.5 s; a driver it never saw alive makes it back off
        # longer (up to 5 min): let it see this one before the kill.
        wait_for(lambda pid=pid: time.time() - psutil.Process(pid).create_time() > 1.5,
                 what="the driver seen alive by the keeper")
        os.kill(pid, signal.SIGKILL)
    wait_for(lambda: (p := pipeline.driver_pid()) not in seen and p and alive(p), timeout=30,
             what="the keeper starting a driver again after every kill")
    assert alive(keeper)
    assert "driver-keeps-crashing" not in [a["kind"] for a in pipeline.alerts()]
