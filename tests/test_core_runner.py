"""The supervisor core with real processes: detached runs, reattach, stop,
races, PID reuse, GPU exclusivity, and clear errors for bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from conftest import wait_for
from eagle3tui.config import load_config
from eagle3tui.supervisor.records import RunRecord, RunStore
from eagle3tui.supervisor.state import Intent, StageState, derive_statuses


def states(p) -> dict[str, str]:
    return {s["name"]: s["state"] for s in p.status()["stages"]}


def test_exit_code_recorded_after_supervisor_exits(pipeline):
    pipeline.write("""
        [[stage]]
        name = "sleeper"
        command = ["sh", "-c", "sleep 1.5; exit 3"]
    """)
    r = pipeline.cli("start", "sleeper", check=True)
    assert "queued" in r.stdout
    # Kill the driver that launched it: the wrapper alone must record exit 3.
    wait_for(lambda: pipeline.records("sleeper") and pipeline.records("sleeper")[0].get("pid"),
             what="stage launched")
    os.kill(pipeline.driver_pid(), signal.SIGKILL)
    result = pipeline.state_dir / "runs/sleeper/0001.result.json"
    wait_for(result.exists, what="wrapper result file")
    assert json.loads(result.read_text())["exit_code"] == 3
    st = pipeline.stage("sleeper")
    assert st["state"] == "failed" and st["exit_code"] == 3 and st["reason"] == "exit 3"


def test_driver_killed_mid_run_reattaches_and_continues(pipeline):
    out = pipeline.root / "out"
    pipeline.write(f"""
        [[stage]]
        name = "first"
        command = ["sh", "-c", "while [ ! -e {out}.gate ]; do sleep 0.05; done; echo one > {out}.1"]
        outputs = ["{out}.1"]

        [[stage]]
        name = "second"
        depends_on = ["first"]
        command = ["sh", "-c", "cat {out}.1 > {out}.2; echo two >> {out}.2"]

        [[stage]]
        name = "third"
        depends_on = ["second"]
        command = ["sh", "-c", "echo three >> {out}.2"]
    """)
    pipeline.cli("start", "--all", check=True)
    wait_for(lambda: states(pipeline)["first"] == "running", what="first running")
    first_driver = pipeline.driver_pid()
    os.kill(first_driver, signal.SIGKILL)
    wait_for(lambda: not psutil.pid_exists(first_driver)
             or psutil.Process(first_driver).status() == psutil.STATUS_ZOMBIE, what="driver gone")
    # "first" keeps running without any driver; a new front end reattaches.
    assert states(pipeline)["first"] == "running"
    (pipeline.root / "out.gate").touch()  # let "first" finish while no driver runs
    r = pipeline.cli("start", "--all", "--wait", "--timeout", "60")
    assert r.returncode == 0, r.stderr
    assert (pipeline.root / "out.2").read_text() == "one\ntwo\nthree\n"
    assert pipeline.driver_pid() != first_driver
    # --wait reads the run records; the driver writes its alert a tick later.
    wait_for(lambda: ("third", "stage-succeeded") in [(a["stage"], a["kind"]) for a in pipeline.alerts()],
             what="the last stage's alert")
    kinds = [(a["stage"], a["kind"]) for a in pipeline.alerts()]
    assert ("first", "stage-succeeded") in kinds
    # Order of launches follows dependencies.
    started = [a["stage"] for a in pipeline.alerts() if a["kind"] == "stage-started"]
    assert started == ["first", "second", "third"]


def test_pid_reuse_is_not_taken_as_running(pipeline):
    pipeline.write("""
        [[stage]]
        name = "a"
        command = ["true"]
    """)
    cfg = load_config(pipeline.config)
    store = RunStore(cfg.state_dir)
    # A record pointing at a live pid (this test process) with another start time.
    me = psutil.Process(os.getpid())
    rec = RunRecord(stage="a", attempt=1, run_id="x", argv=["true"], cwd=str(pipeline.root),
                    log=str(pipeline.root / "a.log"), pid=os.getpid(), pgid=os.getpid(),
                    create_time=me.create_time() - 1000, wrapper_pid=os.getpid(),
                    wrapper_create_time=me.create_time() - 1000, launched_at=time.time() - 100,
                    started_at=time.time() - 100)
    (cfg.state_dir / "runs/a").mkdir(parents=True)
    store.save(rec)
    st = derive_statuses(cfg, store, Intent())[0]
    assert st.state == StageState.FAILED and st.reason.startswith("lost")
    # The same record with the true create time is running.
    rec.create_time = me.create_time()
    store.save(rec)
    assert derive_statuses(cfg, store, Intent())[0].state == StageState.RUNNING


def test_stop_kills_the_whole_group_grandchildren_included(pipeline):
    pids = pipeline.root / "pids"
    pipeline.write(f"""
        [pipeline]
        stop_grace = "3s"

        [[stage]]
        name = "tree"
        command = ["sh", "-c", "sh -c 'sleep 300 & echo $! >> {pids}; wait' & echo $! >> {pids}; sleep 300"]
    """)
    pipeline.cli("start", "tree", check=True)
    wait_for(lambda: pids.exists() and len(pids.read_text().split()) == 2, what="grandchildren")
    stage_pid = wait_for(lambda: pipeline.stage("tree")["pid"], what="pid recorded")
    tree = [stage_pid] + [int(x) for x in pids.read_text().split()]
    assert all(psutil.pid_exists(p) for p in tree)
    r = pipeline.cli("stop", "tree", check=True)
    assert "stopping tree" in r.stdout

    def gone(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    wait_for(lambda: all(gone(p) for p in tree), timeout=15, what="whole tree gone")
    wait_for(lambda: pipeline.stage("tree")["state"] == "stopped", what="recorded as stopped")
    assert pipeline.stage("tree")["signal"] == "SIGTERM"


def test_stop_escalates_to_sigkill_after_grace(pipeline):
    pipeline.write("""
        [[stage]]
        name = "stubborn"
        stop_grace = "1s"
        command = ["sh", "-c", "trap '' TERM; echo ready; while true; do sleep 0.1; done"]
    """)
    pipeline.cli("start", "stubborn", check=True)
    wait_for(lambda: "ready" in (pipeline.state_dir / "logs/stubborn.log").read_text(), what="trap set")
    pipeline.cli("stop", "stubborn", check=True)
    wait_for(lambda: pipeline.stage("stubborn")["state"] == "stopped", timeout=15, what="stopped")
    assert pipeline.stage("stubborn")["signal"] == "SIGKILL"
    assert any(a["kind"] == "stage-killed" for a in pipeline.alerts())


def test_two_front_ends_racing_produce_one_run(pipeline):
    pipeline.write("""
        [[stage]]
        name = "once"
        command = ["sh", "-c", "sleep 2"]
    """)
    cmd = [sys.executable, "-m", "eagle3tui", "--config", str(pipeline.config), "start", "once"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    wait_for(lambda: pipeline.stage("once")["state"] == "succeeded", what="ran")
    assert len(pipeline.records("once")) == 1


def test_gpu_exclusivity_stage_waits_for_service(pipeline):
    flag = pipeline.root / "served"
    pipeline.write(f"""
        [[stage]]
        name = "server"
        kind = "service"
        gpus = [0]
        command = ["sh", "-c", "echo listening; touch {flag}; sleep 300"]
        ready = {{ log = "listening" }}

        [[stage]]
        name = "client"
        depends_on = ["server"]
        command = ["sh", "-c", "sleep 5"]

        [[stage]]
        name = "gpu-job"
        depends_on = ["client"]
        gpus = [0]
        command = ["sh", "-c", "test ! -e /proc/$(cat {flag}.pid 2>/dev/null || echo 0)/status; echo gpu-job ran"]
    """)
    pipeline.cli("start", "--all", check=True)
    wait_for(lambda: states(pipeline)["client"] == "running", what="client running")
    s = {x["name"]: x for x in pipeline.status()["stages"]}
    assert s["server"]["state"] == "running" and s["server"]["ready"] is True
    wait_for(lambda: states(pipeline)["gpu-job"] == "succeeded", timeout=60, what="gpu-job done")
    # The service was stopped as soon as no pending stage needed it, and only
    # then did the GPU job start.
    alerts = pipeline.alerts()
    order = [(a["stage"], a["kind"]) for a in alerts]
    stop_i = order.index(("server", "stage-stopping"))
    start_i = order.index(("gpu-job", "stage-started"))
    assert stop_i < start_i
    server_end = next(a["time"] for a in alerts if a["stage"] == "server" and a["kind"] in ("stage-succeeded",))
    job_start = next(a["time"] for a in alerts if a["stage"] == "gpu-job" and a["kind"] == "stage-started")
    assert server_end <= job_start
    assert states(pipeline)["server"] == "succeeded"


def test_resume_appends_resume_args_and_restart_does_not(pipeline):
    marker = pipeline.root / "m"
    pipeline.write(f"""
        [[stage]]
        name = "flaky"
        command = ["sh", "-c", "if [ \\"$1\\" = --resume ]; then echo resumed; else exit 5; fi", "sh"]
        resume = ["--resume"]
    """)
    pipeline.cli("start", "flaky", check=True)
    wait_for(lambda: pipeline.stage("flaky")["state"] == "failed", what="failed")
    r = pipeline.cli("start", "flaky")
    assert r.returncode == 1 and "use resume or restart" in r.stderr
    pipeline.cli("resume", "flaky", check=True)
    wait_for(lambda: pipeline.stage("flaky")["state"] == "succeeded", what="resumed ok")
    recs = pipeline.records("flaky")
    assert recs[1]["argv"][-1] == "--resume" and recs[1]["resume"] and recs[1]["resumed_from"] == 1
    # The user asked for it: news, not a warning (a retry policy's resume stays a warning).
    resumed = [a for a in pipeline.alerts() if a["kind"] == "stage-resumed"]
    assert [a["level"] for a in resumed] == ["info"], resumed
    pipeline.cli("restart", "flaky", check=True)
    wait_for(lambda: len(pipeline.records("flaky")) == 3 and pipeline.stage("flaky")["state"] == "failed",
             what="restart ran fresh")
    assert pipeline.records("flaky")[2]["argv"][-1] != "--resume"


def test_sigkilled_stage_gets_oom_hint(pipeline):
    pipeline.write("""
        [[stage]]
        name = "victim"
        command = ["sh", "-c", "echo loading; kill -9 $$"]
    """)
    pipeline.cli("start", "victim", check=True)
    wait_for(lambda: pipeline.stage("victim")["state"] == "failed", what="failed")
    st = pipeline.stage("victim")
    assert st["signal"] == "SIGKILL" and "OOM killer" in st["hint"]
    failed = wait_for(lambda: [a for a in pipeline.alerts() if a["kind"] == "stage-failed"], what="alert")
    assert "OOM killer" in failed[0]["message"]


def test_skip_lets_dependents_run(pipeline):
    pipeline.write("""
        [[stage]]
        name = "slow"
        command = ["sh", "-c", "exit 1"]
        [[stage]]
        name = "after"
        depends_on = ["slow"]
        command = ["true"]
    """)
    pipeline.cli("skip", "slow", check=True)
    r = pipeline.cli("start", "--all", "--wait", "--timeout", "30")
    assert r.returncode == 0, r.stderr
    assert states(pipeline) == {"slow": "skipped", "after": "succeeded"}
    assert pipeline.records("slow") == []


def test_missing_outputs_fail_the_stage(pipeline):
    pipeline.write("""
        [[stage]]
        name = "liar"
        command = ["true"]
        outputs = ["never-written.bin"]
    """)
    r = pipeline.cli("start", "liar", "--wait", "--timeout", "30")
    assert r.returncode == 1
    assert "outputs are missing" in pipeline.stage("liar")["reason"]


# --- clear errors, exit 2 -------------------------------------------------------

def test_invalid_toml_exit_2(pipeline):
    pipeline.config.write_text("[[stage]\nname=1\n")
    r = pipeline.cli("start", "--all")
    assert r.returncode == 2 and "invalid TOML" in r.stderr and "pipeline.toml" in r.stderr
    assert not pipeline.state_dir.exists()  # nothing launched


def test_cycle_exit_2(pipeline):
    pipeline.write("""
        [[stage]]
        name = "a"
        command = ["true"]
        depends_on = ["b"]
        [[stage]]
        name = "b"
        command = ["true"]
        depends_on = ["a"]
    """)
    r = pipeline.cli("check")
    assert r.returncode == 2 and "dependency cycle" in r.stderr and "fix:" in r.stderr


def test_missing_executable_exit_2(pipeline):
    pipeline.write("""
        [[stage]]
        name = "a"
        command = ["definitely-not-a-program-xyz", "--flag"]
    """)
    for args in (("check",), ("start", "a")):
        r = pipeline.cli(*args)
        assert r.returncode == 2
        assert "definitely-not-a-program-xyz" in r.stderr and "not found" in r.stderr
    assert not (pipeline.state_dir / "runs").exists()


def test_corrupt_state_file_reported(pipeline):
    pipeline.write("""
        [[stage]]
        name = "a"
        command = ["true"]
    """)
    d = pipeline.state_dir / "runs/a"
    d.mkdir(parents=True)
    (d / "0001.json").write_text('{"stage": "a", "attempt": 1, "run_')  # torn write
    r = pipeline.cli("check")
    assert r.returncode == 2 and "0001.json" in r.stderr and "unreadable run record" in r.stderr
    # status still works and says so; the supervisor keeps going.
    r = pipeline.cli("status")
    assert "unreadable run record" in r.stdout and "Traceback" not in r.stderr
    # An unreadable record is never a reason to launch (issue 13 finding 8):
    # start refuses, a deliberate restart runs attempt 2.
    r = pipeline.cli("start", "a", "--wait", "--timeout", "30")
    assert r.returncode != 0 and "restart" in r.stdout + r.stderr
    assert not (d / "0002.json").exists()
    r = pipeline.cli("restart", "a")
    assert r.returncode == 0, r.stderr
    wait_for(lambda: pipeline.stage("a")["state"] == "succeeded", what="attempt 2 succeeded")
    # The torn record is left alone for inspection; the new run is attempt 2.
    assert json.loads((d / "0002.json").read_text())["attempt"] == 2
    assert (d / "0001.json").read_text().endswith('"run_')


def test_unknown_stage_exit_2(pipeline):
    pipeline.write("""
        [[stage]]
        name = "a"
        command = ["true"]
    """)
    r = pipeline.cli("stop", "nope")
    assert r.returncode == 2 and "no stage named 'nope'" in r.stderr and "stages: a" in r.stderr


def test_wait_follows_a_retry_to_success(pipeline):
    pipeline.write("""
        [[stage]]
        name = "flaky"
        command = ["sh", "-c", "if [ \\"$1\\" = --resume ]; then echo ok; else echo 'RuntimeError: NCCL error: unhandled system error'; exit 1; fi", "sh"]
        resume = ["--resume"]
        retry = { max_attempts = 2, backoff = "1s", on = ["nccl"] }
    """)
    r = pipeline.cli("start", "flaky", "--wait", "--timeout", "60")
    assert r.returncode == 0, r.stderr
    recs = pipeline.records("flaky")
    assert [x["trigger"] for x in recs] == ["pipeline", "retry"] and recs[1]["argv"][-1] == "--resume"
