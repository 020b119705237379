"""``eagle3tui --watch`` as a real subprocess on real pipelines of small scripts.

Real failures (a traceback, a non-zero exit, SIGKILL, a stall), exit codes
0/1/130, hand-over to a detached driver, observing another driver, taking
over from a lost one, crash safety of the alerts file, dedup of a storm,
a hostile log line reaching the notifier, a hanging notifier, retries.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from conftest import Pipeline, wait_for

PY = json.dumps(sys.executable)
LINE_RE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (INFO|WARNING|CRITICAL|WATCH) +\S+ +\S")


class Watch:
    """A ``--watch`` process with stdout going to a file (a full pipe would block it)."""

    def __init__(self, p: Pipeline, *args: str, name: str = "watch") -> None:
        self.out = p.root / f"{name}.out"
        with open(self.out, "w") as f:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "eagle3tui", "--config", str(p.config), "--watch", *args],
                stdout=f, stderr=subprocess.STDOUT, cwd=p.root, stdin=subprocess.DEVNULL)

    def wait(self, timeout: float = 60) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"watch did not exit within {timeout}s:\n{self.text()}") from None

    def text(self) -> str:
        return self.out.read_text(errors="replace")

    def lines(self) -> list[str]:
        return self.text().splitlines()


def gated(p: Pipeline, then: str) -> str:
    """A shell command that waits until the test opens its gate (no timing races)."""
    gate = p.root / "gate"
    return json.dumps(f"while [ ! -e '{gate}' ]; do sleep 0.05; done; {then}")


def open_gate(p: Pipeline) -> None:
    (p.root / "gate").touch()


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def kinds(p: Pipeline, stage: str | None = None) -> list[str]:
    return [a["kind"] for a in p.alerts() if stage is None or a.get("stage") == stage]


def one(p: Pipeline, kind: str, stage: str | None = None) -> dict:
    found = [a for a in p.alerts() if a["kind"] == kind and (stage is None or a["stage"] == stage)]
    assert found, f"no {kind} alert in {kinds(p)}"
    return found[-1]


def test_success_exits_0_with_timestamped_lines_and_mirror(pipeline: Pipeline) -> None:
    p = pipeline.write("""
        [[stage]]
        name = "a"
        command = ["sh", "-c", "echo hello from a"]
        [[stage]]
        name = "b"
        command = ["sh", "-c", "echo hello from b"]
        depends_on = ["a"]
    """)
    mirror = p.root / "copy" / "alerts.jsonl"
    w = Watch(p, "--run-all", "--alerts", str(mirror))
    assert w.wait() == 0, w.text()
    lines = w.lines()
    assert all(LINE_RE.match(ln) for ln in lines), lines
    assert "pipeline complete" in lines[-1]
    assert kinds(p) == ["stage-started", "stage-succeeded"] * 2 + ["pipeline-complete"]
    assert [json.loads(x) for x in mirror.read_text().splitlines()] == p.alerts()
    out = w.text()
    assert re.search(r"INFO +a#1 +stage-succeeded", out) and re.search(r"INFO +b#1 +stage-started", out)


def test_real_traceback_fails_with_exit_1_and_blocks_dependents(pipeline: Pipeline) -> None:
    p = pipeline.write(f"""
        [[stage]]
        name = "train"
        command = [{PY}, "-c", "print('step 1'); x = 0; print(1 / x)"]
        [[stage]]
        name = "export"
        command = ["sh", "-c", "echo never"]
        depends_on = ["train"]
    """)
    w = Watch(p, "--run-all")
    assert w.wait() == 1, w.text()
    fatal = [a for a in p.alerts() if a["kind"] == "fatal-log-event" and a["details"]["rule"] == "traceback"]
    assert fatal and fatal[0]["level"] == "critical"
    assert fatal[0]["details"]["text"].endswith("ZeroDivisionError: division by zero")
    failed = one(p, "stage-failed", "train")
    assert failed["level"] == "critical" and failed["details"]["exit_code"] == 1
    assert any("ZeroDivisionError" in e["text"] for e in failed["details"]["last_errors"])
    assert "export" not in {a["stage"] for a in p.alerts()}
    assert "ZeroDivisionError: division by zero" in w.text()
    assert "pipeline finished with failures: train: failed" in w.lines()[-1]


def test_nonzero_exit(pipeline: Pipeline) -> None:
    p = pipeline.write("""
        [[stage]]
        name = "prep"
        command = ["sh", "-c", "echo working; exit 3"]
    """)
    w = Watch(p, "--run-all")
    assert w.wait() == 1, w.text()
    failed = one(p, "stage-failed", "prep")
    assert failed["details"]["exit_code"] == 3 and "exit 3" in failed["message"]


def test_sigkill_says_oom_killer_is_a_common_cause(pipeline: Pipeline) -> None:
    p = pipeline.write("""
        [[stage]]
        name = "extract"
        command = ["sh", "-c", "echo loading; kill -9 $$"]
    """)
    w = Watch(p, "--run-all")
    assert w.wait() == 1, w.text()
    failed = one(p, "stage-failed", "extract")
    assert failed["details"]["signal"] == "SIGKILL"
    assert "OOM" in failed["details"]["hint"] and "OOM" in failed["message"]


def test_stall_is_alerted(pipeline: Pipeline) -> None:
    p = pipeline.write(f"""
        [pipeline]
        stall_floor = "1s"
        [[stage]]
        name = "train"
        command = [{PY}, "-c", "import sys, time; sys.stderr.write('train:  10%|#   | 10/100 [00:01<00:09, 10.00it/s]\\\\n'); sys.stderr.flush(); time.sleep(4)"]
    """)
    w = Watch(p, "--run-all")
    assert w.wait() == 0, w.text()
    stall = one(p, "stall", "train")
    assert stall["level"] == "warning" and "no output" in stall["message"]
    assert kinds(p, "train")[-1] == "stage-succeeded"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_exits_130_and_stages_keep_running(pipeline: Pipeline, sig: int) -> None:
    p = pipeline.write(f"""
        [[stage]]
        name = "long"
        command = ["sh", "-c", {gated(pipeline, "echo long done")}]
        [[stage]]
        name = "after"
        command = ["sh", "-c", "echo after done"]
        depends_on = ["long"]
    """)
    w = Watch(p, "--run-all")
    wait_for(lambda: "stage-started" in kinds(p, "long"), timeout=30, what="long to start")
    w.proc.send_signal(sig)
    assert w.wait() == 130, w.text()
    last = w.lines()[-1]
    assert "keep running" in last and "long" in last and "status" in last, last
    open_gate(p)
    # A detached driver took over: the running stage finishes and the next one runs.
    wait_for(lambda: "stage-succeeded" in kinds(p, "after"), timeout=40,
             what="the pipeline to go on after the watch left")
    assert "stage-succeeded" in kinds(p, "long")


def test_second_watch_observes_and_exits_with_the_pipeline(pipeline: Pipeline) -> None:
    p = pipeline.write(f"""
        [[stage]]
        name = "slow"
        command = ["sh", "-c", {gated(pipeline, "echo done")}]
    """)
    driving = Watch(p, "--run-all", name="driving")
    wait_for(lambda: "stage-started" in kinds(p), timeout=30, what="slow to start")
    mirror = p.root / "observed.jsonl"
    observing = Watch(p, "--alerts", str(mirror), name="observing")
    wait_for(lambda: "observing" in observing.text(), timeout=30, what="second watch to observe")
    open_gate(p)
    assert driving.wait() == 0, driving.text()
    assert observing.wait() == 0, observing.text()
    out = observing.text()
    assert "observing: another driver" in out
    assert re.search(r"INFO +slow#1 +stage-succeeded", out), out
    assert "pipeline complete" in observing.lines()[-1]
    assert [a["kind"] for a in map(json.loads, mirror.read_text().splitlines())] == \
        ["stage-succeeded", "pipeline-complete"]


def test_watch_takes_over_when_the_driver_is_lost(pipeline: Pipeline) -> None:
    p = pipeline.write(f"""
        [[stage]]
        name = "slow"
        command = ["sh", "-c", {gated(pipeline, "echo done")}]
    """)
    p.cli("start", "--all", check=True)  # a detached driver
    wait_for(lambda: "stage-started" in kinds(p), timeout=30, what="slow to start")
    w = Watch(p)
    wait_for(lambda: "observing" in w.text(), timeout=30, what="watch to observe")
    os.kill(p.driver_pid(), signal.SIGKILL)
    wait_for(lambda: "driver-reacquired" in kinds(p), timeout=30, what="the watch to take over")
    open_gate(p)
    assert w.wait() == 0, w.text()
    assert kinds(p, "slow")[-1] == "stage-succeeded"


def test_kill_9_of_watch_while_writing_alerts_leaves_valid_jsonl(pipeline: Pipeline) -> None:
    p = pipeline.write(f"""
        [alerts]
        dedup_window = 0
        [[stage]]
        name = "noisy"
        command = [{PY}, "-c", "import time\\nfor i in range(200000):\\n    print('WARNING: item', i, 'is odd', flush=True); time.sleep(0.0005)"]
    """)
    w = Watch(p, "--run-all")
    alerts = p.state_dir / "alerts.jsonl"
    wait_for(lambda: alerts.exists() and alerts.stat().st_size > 100_000, timeout=60,
             what="a stream of alerts")
    w.proc.kill()
    w.proc.wait()
    data = alerts.read_bytes()
    assert data.endswith(b"\n")
    rows = [json.loads(x) for x in data.splitlines()]
    assert len(rows) > 100 and {r["kind"] for r in rows} >= {"stage-started", "log-warning"}
    p.kill_everything()


def test_storm_of_10000_identical_lines_is_one_alert_with_a_count(pipeline: Pipeline) -> None:
    p = pipeline.write(f"""
        [[stage]]
        name = "storm"
        command = [{PY}, "-c", "for i in range(10000): print('WARNING: disk is slow', flush=i % 50 == 0)"]
    """)
    w = Watch(p, "--run-all")
    assert w.wait() == 0, w.text()
    warn = [a for a in p.alerts() if a["kind"] == "log-warning"]
    assert len(warn) == 2, warn  # the first at once, the merged rest when the window closed
    assert warn[0]["count"] == 1 and warn[1]["details"]["merged"] is True
    assert warn[0]["count"] + warn[1]["count"] == 10_000
    assert "repeated 9999 more times" in w.text()


def test_hostile_log_line_reaches_the_notifier_as_data_only(pipeline: Pipeline) -> None:
    evil = "ERROR: $(touch pwned1) `touch pwned2` \"; touch pwned3; \" '; touch pwned4; '"
    rec = pipeline.root / "record.py"
    rec.write_text(textwrap.dedent("""
        import json, os, sys, time
        data = sys.stdin.read()
        env = {k: v for k, v in os.environ.items() if k.startswith("EAGLE3TUI_ALERT_")}
        with open(sys.argv[1], "a") as f:
            f.write(json.dumps({"alert": json.loads(data), "env": env}) + "\\n")
    """))
    evil_file = pipeline.root / "evil.txt"
    evil_file.write_text(evil + "\n")
    p = pipeline.write(f"""
        [alerts]
        command = [{PY}, {json.dumps(str(rec))}, {json.dumps(str(pipeline.root / "got.jsonl"))}]
        min_level = "warning"
        log_warnings = true
        [[stage]]
        name = "evil"
        command = ["cat", {json.dumps(str(evil_file))}]
    """)
    w = Watch(p, "--run-all")
    assert w.wait() == 0, w.text()
    got = [json.loads(x) for x in (p.root / "got.jsonl").read_text().splitlines()]
    hit = [g for g in got if g["alert"]["kind"] == "log-warning"]
    assert hit, got
    assert hit[0]["alert"]["details"]["text"] == evil
    assert hit[0]["env"]["EAGLE3TUI_ALERT_KIND"] == "log-warning"
    # min_level = warning: no info alert but the pipeline's completion, which is news.
    assert "info" not in {g["alert"]["level"] for g in got if g["alert"]["kind"] != "pipeline-complete"}
    assert not list(p.root.rglob("pwned*")) and not list(Path.cwd().glob("pwned*"))


def test_hanging_notifier_is_timed_out_and_supervision_goes_on(pipeline: Pipeline) -> None:
    p = pipeline.write("""
        [alerts]
        command = ["sleep", "1000"]
        min_level = "info"
        timeout = "1s"
        [[stage]]
        name = "a"
        command = ["sh", "-c", "echo a"]
        [[stage]]
        name = "b"
        command = ["sh", "-c", "echo b"]
        depends_on = ["a"]
    """)
    t0 = time.monotonic()
    w = Watch(p, "--run-all")
    assert w.wait(timeout=90) == 0, w.text()
    assert kinds(p, "b")[-2:] == ["stage-started", "stage-succeeded"]
    timeouts = [a for a in p.alerts() if a["kind"] == "notifier-timeout"]
    assert timeouts and "did not finish within 1s" in timeouts[0]["message"]
    # b ran although every notification hung: the driver never waited on the notifier.
    a_done = one(p, "stage-succeeded", "a")["time"]
    b_start = one(p, "stage-started", "b")["time"]
    assert b_start - a_done < 5
    assert time.monotonic() - t0 < 60


def test_retry_resumes_after_an_nccl_timeout(pipeline: Pipeline) -> None:
    script = pipeline.root / "train.py"
    script.write_text(textwrap.dedent("""
        import sys
        if "--resume" in sys.argv:
            print("resumed from checkpoint; step 100/100 done")
            sys.exit(0)
        print("step 10/100")
        print("[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation "
              "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600030 "
              "milliseconds before timing out.", flush=True)
        sys.exit(1)
    """))
    p = pipeline.write(f"""
        [[stage]]
        name = "train"
        command = [{PY}, {json.dumps(str(script))}]
        resume = ["--resume"]
        retry = {{ max_attempts = 3, backoff = "0s", on = ["nccl"] }}
    """)
    w = Watch(p, "--run-all")
    assert w.wait() == 0, w.text()
    k = kinds(p, "train")
    assert "retry-scheduled" in k and "stage-resumed" in k, k
    assert one(p, "fatal-log-event", "train")["details"]["rule"] == "nccl"
    recs = p.records("train")
    assert len(recs) == 2 and recs[1]["resume"] and recs[1]["trigger"] == "retry"
    assert recs[1]["argv"][-1] == "--resume"
    assert k[-1] == "stage-succeeded"


def test_retry_is_not_applied_to_other_failures_and_gives_up(pipeline: Pipeline) -> None:
    p = pipeline.write(f"""
        [[stage]]
        name = "other"
        command = [{PY}, "-c", "raise ValueError('bad config value')"]
        retry = {{ max_attempts = 3, backoff = "0s", on = ["nccl"] }}
        [[stage]]
        name = "flaky"
        command = ["sh", "-c", "echo 'RuntimeError: NCCL error: unhandled system error'; exit 1"]
        retry = {{ max_attempts = 2, backoff = "0s", on = ["nccl", "exit:7"] }}
    """)
    w = Watch(p, "--run-all")
    assert w.wait() == 1, w.text()
    assert len(p.records("other")) == 1
    assert "retry-not-applicable" in kinds(p, "other")
    assert len(p.records("flaky")) == 2
    exhausted = one(p, "retries-exhausted", "flaky")
    assert exhausted["level"] == "critical" and "2 attempts" in exhausted["message"]


def test_config_error_names_file_and_key(pipeline: Pipeline) -> None:
    p = pipeline.write("""
        [alerts]
        command = "notify-send hi"
        [[stage]]
        name = "a"
        command = ["true"]
    """)
    w = Watch(p, "--run-all")
    assert w.wait() == 2
    text = w.text()
    assert "pipeline.toml" in text and "alerts.command" in text and "argv list" in text


def test_nothing_wanted_exits_0_and_says_what_to_do(pipeline: Pipeline) -> None:
    p = pipeline.write("""
        [[stage]]
        name = "a"
        command = ["true"]
    """)
    w = Watch(p)
    assert w.wait() == 0, w.text()
    assert "--run-all" in w.lines()[-1]
    assert not (p.state_dir / "runs").exists() or not list((p.state_dir / "runs").iterdir())


@pytest.mark.parametrize("command,rc", [("echo ok", 0), ("exit 4", 1)])
def test_observer_exits_when_finished_although_the_driver_stays_up(
        pipeline: Pipeline, command: str, rc: int) -> None:
    """A TUI's driver does not exit when idle: the observer must still notice the end."""
    import threading

    from eagle3tui.config import load_config
    from eagle3tui.supervisor.driver import Driver

    p = pipeline.write(f"""
        [[stage]]
        name = "job"
        command = ["sh", "-c", {gated(pipeline, command)}]
    """)
    driver = Driver(load_config(p.config), exit_when_idle=False)
    stop = threading.Event()
    t = threading.Thread(target=driver.run, args=(stop,), daemon=True)
    t.start()
    try:
        wait_for(lambda: (p.state_dir / "commands").exists(), timeout=20, what="driver up")
        w = Watch(p, "--run-all")
        wait_for(lambda: "stage-started" in w.text(), timeout=30, what="the observer to see the start")
        open_gate(p)
        assert w.wait() == rc, w.text()
        out = w.text()
        assert "observing" in out
        assert ("stage-succeeded" if rc == 0 else "stage-failed") in out
        assert t.is_alive()  # the driver is still up: the watch did not wait for the lock
    finally:
        stop.set()
        t.join(timeout=10)
        driver.alert_log.close()


def test_watch_started_after_a_lost_driver_reattaches_and_says_so(pipeline: Pipeline) -> None:
    p = pipeline.write(f"""
        [[stage]]
        name = "slow"
        command = ["sh", "-c", {gated(pipeline, "echo done")}]
    """)
    p.cli("start", "--all", check=True)
    wait_for(lambda: "stage-started" in kinds(p), timeout=30, what="slow to start")
    pid = p.driver_pid()
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: _gone(pid), timeout=10, what="driver gone")
    w = Watch(p)
    wait_for(lambda: "driver-reacquired" in kinds(p), timeout=30, what="the watch to reattach")
    open_gate(p)
    assert w.wait() == 0, w.text()
    re_alert = one(p, "driver-reacquired")
    assert re_alert["details"]["running"] == ["slow"]
    assert kinds(p, "slow")[-1] == "stage-succeeded"
