"""Issue 29, findings 18 and 20: a step of the wall clock changes no duration.

The driver is a real process whose wall clock (``time.time``) steps by an
hour at a chosen alert, as an NTP correction would; the monotonic clock goes
on. A 2 s retry back-off still ends after about 2 s when the clock steps
back (it used to wait an hour), a stop's 20 s grace is still granted when
it steps forwards (it used to SIGKILL at once), and a step forwards during a
quiet spell raises no stall (quiet time was wall-clock time: an hour).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from conftest import ROOT, wait_for

CLOCK_STEP_AT_ALERT = textwrap.dedent("""
    import sys, time
    from eagle3tui.alerts import AlertHub
    from eagle3tui.config import load_config
    from eagle3tui.supervisor.driver import Driver
    config_path, kind, step = sys.argv[1], sys.argv[2], float(sys.argv[3])
    real = time.time
    def on_alert(alert):
        if alert.kind == kind:
            time.time = lambda: real() + step  # the wall clock steps; monotonic time goes on
    hub = AlertHub()
    driver = Driver(load_config(config_path), hub=hub, gpu=False)
    hub.add_sink(on_alert)
    raise SystemExit(driver.run())
""")

# The same driver, whose wall clock steps once a file exists (a stage makes it
# in the middle of a quiet spell).
CLOCK_STEP_AT_FILE = textwrap.dedent("""
    import os, sys, threading, time
    from eagle3tui.alerts import AlertHub
    from eagle3tui.config import load_config
    from eagle3tui.supervisor.driver import Driver
    config_path, flag, step = sys.argv[1], sys.argv[2], float(sys.argv[3])
    real = time.time
    def step_when_flagged():
        while not os.path.exists(flag):
            time.sleep(0.01)
        time.time = lambda: real() + step  # the wall clock steps; monotonic time goes on
    threading.Thread(target=step_when_flagged, daemon=True).start()
    raise SystemExit(Driver(load_config(config_path), hub=AlertHub(), gpu=False).run())
""")

@pytest.mark.parametrize("step", [-3600.0])
def test_wall_clock_step_during_retry_backoff(pipeline, step):
    pipeline.write("""
        [[stage]]
        name = "flaky"
        command = ["sh", "-c", "[ $EAGLE3TUI_ATTEMPT -ge 2 ]"]
        retry = { max_attempts = 3, backoff = "2s", on = ["exit:1"] }

        [[stage]]
        name = "after"
        depends_on = ["flaky"]
        command = ["true"]
    """)
    pipeline.state_dir.mkdir(mode=0o700)
    (pipeline.state_dir / "intent.json").write_text(
        '{"wanted": ["flaky", "after"], "skipped": [], "relaunch": {}}')
    script = pipeline.root / "clock_step.py"
    script.write_text(CLOCK_STEP_AT_ALERT)
    driver = subprocess.Popen([sys.executable, str(script), str(pipeline.config), "retry-scheduled",
                               str(step)], env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH") or str(ROOT)},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: "retry-scheduled" in [a["kind"] for a in pipeline.alerts()],
                 what="retry scheduled")
        wait_for(lambda: len(pipeline.records("flaky")) == 2, timeout=20,
                 what="the retry, 2 s after it was scheduled whatever the wall clock says")
        wait_for(lambda: (pipeline.state_dir / "runs/after/0001.result.json").exists(),
                 timeout=20, what="the next stage")
        assert driver.wait(timeout=30) == 0, driver.stdout.read() if driver.stdout else ""
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()


def test_wall_clock_step_during_stop_grace_sends_no_early_sigkill(pipeline):
    """One hour forwards right after SIGTERM: the stage still gets its whole grace."""
    ended = pipeline.root / "ended-cleanly"
    pipeline.write(f"""
        [[stage]]
        name = "job"
        command = ["sh", "-c", "trap 'sleep 2; touch {ended}; exit 0' TERM; while true; do sleep 0.1; done"]
        stop_grace = "20s"
    """)
    pipeline.state_dir.mkdir(mode=0o700)
    (pipeline.state_dir / "intent.json").write_text(
        '{"wanted": ["job"], "skipped": [], "relaunch": {}}')
    script = pipeline.root / "clock_step.py"
    script.write_text(CLOCK_STEP_AT_ALERT)
    driver = subprocess.Popen([sys.executable, str(script), str(pipeline.config), "stage-stopping",
                               "3600"],
                              env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH") or str(ROOT)},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        pipeline.running("job")
        got = pipeline.cli("stop", "job", timeout=30)
        assert got.returncode == 0, got.stderr
        wait_for(lambda: pipeline.stage("job")["state"] == "stopped", timeout=30, what="job stopped")
        assert ended.exists(), "SIGKILLed before its grace was over"
        kinds = [a["kind"] for a in pipeline.alerts()]
        assert "stage-killed" not in kinds, kinds
    finally:
        driver.kill()
        driver.wait()


def test_wall_clock_step_forwards_raises_no_false_stall(pipeline):
    """One hour forwards while a stage is quiet for a few seconds: no ``stall`` alert.

    The stall floor is 60 s; the stage prints a line, steps the driver's wall
    clock (a flag file), is quiet for 5 s, then ends. Quiet time measured on
    the wall clock was an hour at the first pass after the step, and the
    driver alerted a stall.
    """
    flag = pipeline.root / "step-now"
    pipeline.write(f"""
        [pipeline]
        stall_floor = "60s"

        [[stage]]
        name = "quiet"
        command = ["sh", "-c", "echo working; sleep 1; touch {flag}; sleep 5; echo done"]
    """)
    pipeline.state_dir.mkdir(mode=0o700)
    (pipeline.state_dir / "intent.json").write_text(
        '{"wanted": ["quiet"], "skipped": [], "relaunch": {}}')
    script = pipeline.root / "clock_step.py"
    script.write_text(CLOCK_STEP_AT_FILE)
    driver = subprocess.Popen([sys.executable, str(script), str(pipeline.config), str(flag), "3600"],
                              env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH") or str(ROOT)},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: (pipeline.state_dir / "runs/quiet/0001.result.json").exists(), timeout=40,
                 what="the quiet stage to end")
        assert driver.wait(timeout=30) == 0, driver.stdout.read() if driver.stdout else ""
        kinds = [a["kind"] for a in pipeline.alerts()]
        assert "stage-succeeded" in kinds, kinds
        assert "stall" not in kinds, [a for a in pipeline.alerts() if a["kind"] == "stall"]
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
