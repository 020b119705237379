"""Issue 13, findings 2, 3, 7 and 8: kill -9 of the driver never runs a stage
twice, never loses a retry, never stops the pipeline; an unreadable record
never causes a launch. Every kill here is a real SIGKILL at the worst moment."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, wait_for
from eagle3tui.supervisor.lock import lock_held

# A driver in a process of its own that SIGKILLs itself the moment it emits
# an alert of a given kind: a kill exactly between two durable steps.
KILL_AT_ALERT = textwrap.dedent("""
    import os, signal, sys
    from eagle3tui.alerts import AlertHub
    from eagle3tui.config import load_config
    from eagle3tui.supervisor.driver import Driver
    config_path, kind = sys.argv[1], sys.argv[2]
    hub = AlertHub()
    driver = Driver(load_config(config_path), hub=hub, gpu=False)
    def die(alert):
        if alert.kind == kind:
            os.kill(os.getpid(), signal.SIGKILL)
    hub.add_sink(die)  # after the driver's own AlertLog sink: the alert is on disk
    raise SystemExit(driver.run())
""")


def _driver_killed_at(pipeline, kind: str) -> None:
    script = pipeline.root / "kill_at_alert.py"
    script.write_text(KILL_AT_ALERT)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(script), str(pipeline.config), kind], env=env,
                          timeout=60, capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stdout + proc.stderr


def _runs(marker) -> list[str]:
    return marker.read_text().split() if marker.exists() else []


@pytest.mark.parametrize("kill_at", ["stage-failed", "retry-scheduled"])
def test_retry_survives_kill_between_settle_and_schedule(pipeline, kill_at):
    marker = pipeline.root / "runs.txt"
    pipeline.write(f"""
        [[stage]]
        name = "flaky"
        command = ["sh", "-c", "echo $EAGLE3TUI_ATTEMPT >> {marker}; [ $EAGLE3TUI_ATTEMPT -ge 2 ]"]
        retry = {{ max_attempts = 3, backoff = "0s", on = ["exit:1"] }}

        [[stage]]
        name = "after"
        depends_on = ["flaky"]
        command = ["true"]
    """)
    (pipeline.state_dir).mkdir()
    (pipeline.state_dir / "intent.json").write_text(json.dumps(
        {"wanted": ["flaky", "after"], "skipped": [], "relaunch": {}}))
    _driver_killed_at(pipeline, kill_at)
    # A fresh driver (started by the CLI) must pick the retry up.
    r = pipeline.cli("start", "--all", "--wait", "--timeout", "60")
    assert r.returncode == 0, r.stdout + r.stderr
    assert _runs(marker) == ["1", "2"]
    kinds = [a["kind"] for a in pipeline.alerts()]
    assert kinds.count("retry-scheduled") >= 1


def test_kill_right_after_relaunch_never_runs_twice(pipeline):
    """The restarted stage itself SIGKILLs the driver that launched it."""
    marker = pipeline.root / "runs.txt"
    kill = ("import json,os,signal,sys; "
            "os.getenv('EAGLE3TUI_ATTEMPT') == '2' and os.kill(json.load(open(sys.argv[1]))['pid'], 9)")
    pipeline.write(f"""
        [[stage]]
        name = "once"
        command = ["sh", "-c", "echo $EAGLE3TUI_ATTEMPT >> {marker}; {sys.executable} -c \\"{kill}\\" {pipeline.state_dir}/driver.json"]
    """)
    r = pipeline.cli("start", "once", "--wait", "--timeout", "30")
    assert r.returncode == 0, r.stdout + r.stderr
    first = pipeline.driver_pid()
    pipeline.cli("restart", "once", check=True)
    wait_for(lambda: len(_runs(marker)) >= 2, what="the restart ran")
    # The wrapper starts a new driver when the stage ends; it must settle, not relaunch.
    wait_for(lambda: pipeline.driver_pid() not in (None, first), timeout=30, what="a new driver")
    wait_for(lambda: not lock_held(pipeline.state_dir), timeout=30, what="the new driver idle")
    r = pipeline.cli("start", "--all", "--wait", "--timeout", "30")
    assert _runs(marker) == ["1", "2"], "a stage ran more than once per launch"
    assert [rec["attempt"] for rec in pipeline.records("once")] == [1, 2]
    assert json.loads((pipeline.state_dir / "intent.json").read_text())["relaunch"] == {}


def test_pipeline_advances_after_driver_kill_without_front_end(pipeline):
    gate = pipeline.root / "gate"
    pipeline.write(f"""
        [[stage]]
        name = "first"
        command = ["sh", "-c", "while [ ! -e {gate} ]; do sleep 0.05; done"]

        [[stage]]
        name = "second"
        depends_on = ["first"]
        command = ["true"]
    """)
    pipeline.cli("start", "--all", check=True)
    pipeline.running("first")
    dead = pipeline.driver_pid()
    os.kill(dead, signal.SIGKILL)
    gate.touch()
    # No front end from here on: only files are read.
    result = pipeline.state_dir / "runs/second/0001.result.json"
    wait_for(result.exists, timeout=40, what="second stage run by a driver nobody started by hand")
    assert json.loads(result.read_text())["exit_code"] == 0
    wait_for(lambda: pipeline.records("second")[0].get("extra", {}).get("finalized"), timeout=30,
             what="second settled")
    # Drivers started by wrappers may overlap for a moment; in the end none is left.
    doc = wait_for(lambda: (lambda d: d if not d["driver"]["alive"] else None)(pipeline.status()),
                   timeout=30, what="no driver left, nothing to do")
    assert doc["driver"]["figures_stale"] is True
    assert not lock_held(pipeline.state_dir)


def test_zero_byte_record_of_running_stage_never_launches_again(pipeline):
    marker = pipeline.root / "runs.txt"
    gate = pipeline.root / "gate"
    pipeline.write(f"""
        [[stage]]
        name = "long"
        command = ["sh", "-c", "echo x >> {marker}; while [ ! -e {gate} ]; do sleep 0.05; done"]
    """)
    pipeline.cli("start", "long", check=True)
    pipeline.running("long")
    os.kill(pipeline.driver_pid(), signal.SIGKILL)
    (pipeline.state_dir / "runs/long/0001.json").write_bytes(b"")
    r = pipeline.cli("start", "long")
    assert "already running" in r.stdout, r.stdout + r.stderr
    st = pipeline.stage("long")
    assert st["state"] == "running"
    assert any("unreadable" in p for p in pipeline.status()["problems"])
    gate.touch()
    wait_for(lambda: pipeline.stage("long")["state"] == "succeeded", what="the one run ended")
    assert _runs(marker) == ["x"]
    assert not (pipeline.state_dir / "runs/long/0002.json").exists()


def test_garbage_record_of_succeeded_stage_is_not_rerun(pipeline):
    marker = pipeline.root / "runs.txt"
    pipeline.write(f"""
        [[stage]]
        name = "done"
        command = ["sh", "-c", "echo x >> {marker}"]
    """)
    pipeline.cli("start", "done", "--wait", "--timeout", "30", check=True)
    wait_for(lambda: not lock_held(pipeline.state_dir), what="driver idle")
    (pipeline.state_dir / "runs/done/0001.json").write_bytes(b"\x00garbage{")
    r = pipeline.cli("start", "--all", "--wait", "--timeout", "30")
    assert r.returncode == 0, r.stdout + r.stderr
    assert pipeline.stage("done")["state"] == "succeeded"
    assert _runs(marker) == ["x"]


def test_driver_killed_during_retry_backoff_still_finishes(pipeline):
    """No stage runs during a back-off: the state directory's keeper restarts the driver."""
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
    pipeline.cli("start", "--all", check=True)
    wait_for(lambda: "retry-scheduled" in [a["kind"] for a in pipeline.alerts()], what="retry scheduled")
    os.kill(pipeline.driver_pid(), signal.SIGKILL)
    result = pipeline.state_dir / "runs/after/0001.result.json"
    wait_for(result.exists, timeout=40, what="the pipeline finished with no front end")
    assert [r["attempt"] for r in pipeline.records("flaky")] == [1, 2]


def test_driver_killed_before_saving_wrapper_pid_is_not_lost(pipeline):
    """Found by the kill storm: the record on disk lacks the wrapper's pid (the
    driver died right after starting it); while the wrapper ends the stage's
    leftovers, the stage must not be declared lost and its retry dropped."""
    gate = pipeline.root / "gate"
    pipeline.write(f"""
        [[stage]]
        name = "flaky"
        command = ["sh", "-c", "setsid sh -c 'trap \\"\\" TERM; sleep 600' & while [ ! -e {gate} ]; do sleep 0.05; done; [ $EAGLE3TUI_ATTEMPT -ge 2 ]"]
        stop_grace = "1s"
        retry = {{ max_attempts = 3, backoff = "0s", on = ["exit:1"] }}
    """)
    pipeline.cli("start", "flaky", check=True)
    pipeline.running("flaky")
    os.kill(pipeline.driver_pid(), signal.SIGKILL)
    path = pipeline.state_dir / "runs/flaky/0001.json"
    rec = json.loads(path.read_text())
    rec.update(wrapper_pid=None, wrapper_create_time=None, pid=None, pgid=None, create_time=None)
    path.write_text(json.dumps(rec))  # what a driver killed right after Popen leaves
    gate.touch()
    r = pipeline.cli("start", "flaky", "--wait", "--timeout", "60")
    assert [x["attempt"] for x in pipeline.records("flaky")] == [1, 2], r.stdout + r.stderr
    first = pipeline.records("flaky")[0]
    assert first["exit_code"] == 1 and "lost" not in (first.get("error") or "")
