"""Fatal but still alive, and quiet stops, with real processes and real logs.

Both replays print lines copied from public issue threads (the fixtures'
``.source`` files name them):

- a hung collective: a training script draws a progress bar, prints the NCCL
  watchdog report of https://github.com/snowflakedb/ArcticTraining/issues/219
  and then stays alive, silent (as the processes of that thread did for eight
  minutes). The stage must show as ``failing`` with a stale ETA within the
  on_fatal grace; the policy then stops it, and ``retry.on = ["nccl"]``
  starts attempt 2.
- a stop: on SIGTERM a script prints torchrun's teardown and ChildFailedError
  box (https://github.com/pytorch/pytorch/issues/150916 and
  https://github.com/Vision-CAIR/MiniGPT-4/issues/237) and exits 1, as
  torchrun does when its process group is stopped. No warning or critical
  alert may result.
"""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path

import psutil
from conftest import TORCHRUN_ON_SIGTERM, Pipeline, wait_for

FIXTURES = Path(__file__).parent / "fixtures" / "logs" / "issues"
HANG_LOG = FIXTURES / "nccl_hang_alive.log"
TEARDOWN_LOG = FIXTURES / "torchrun_sigterm_teardown.log"
PY = json.dumps(sys.executable)

TRAIN = textwrap.dedent("""
    import sys, time
    if "--resume" in sys.argv:
        print("Training: 100%|##########| 10/10 [00:01<00:00,  9.00it/s]", flush=True)
        sys.exit(0)
    for i in range(4):
        print(f"Training:  {i * 10:2d}%|####      | {i}/10 [00:0{i}<00:0{9 - i},  1.00it/s]", flush=True)
        time.sleep(0.2)
    sys.stdout.write(open(sys.argv[1]).read())
    sys.stdout.flush()
    while True:  # the hung collective: alive, silent
        time.sleep(1)
""")


def _stage(p: Pipeline, name: str) -> dict:
    return next(s for s in p.status()["stages"] if s["name"] == name)


def _alerts(p: Pipeline, stage: str) -> list[dict]:
    return [a for a in p.alerts() if a.get("stage") == stage]


def test_hung_collective_is_failing_then_stopped_and_retried(pipeline: Pipeline) -> None:
    script = pipeline.root / "train.py"
    script.write_text(TRAIN)
    p = pipeline.write(f"""
        [[stage]]
        name = "train"
        command = [{PY}, {json.dumps(str(script))}, {json.dumps(str(HANG_LOG))}]
        resume = ["--resume"]
        estimate = "5s"
        on_fatal = {{ action = "stop", grace = "6s" }}
        retry = {{ max_attempts = 2, backoff = "0s", on = ["nccl"] }}
    """)
    p.cli("start", "train", check=True)
    # Within the grace: failing, carrying the fatal event; the ETA is stale.
    st = wait_for(lambda: (lambda s: s if s["state"] == "failing" else None)(_stage(p, "train")),
                  timeout=30, what="train failing")
    assert st["attempt"] == 1
    failing = st["failing"]
    assert failing["rule"] == "nccl" and failing["line"] == 7, failing  # the file's line: the header is line 1
    assert "failure detected by watchdog" in failing["text"]
    assert failing["ago_s"] is not None and failing["ago_s"] < 6
    assert st["live"]["eta"]["stale"] is True
    pid = st["pid"]
    assert psutil.pid_exists(pid)  # fatal seen, process alive: that is "failing"
    text = p.cli("status").stdout
    row = next(ln for ln in text.splitlines() if ln.startswith("train"))
    assert "failing" in row and "stale" in row and "fatal error at line 7 (nccl)" in row, text
    # The policy stops it after the grace and the retry policy starts attempt 2.
    wait_for(lambda: len(p.records("train")) == 2, timeout=40, what="attempt 2")
    first = p.records("train")[0]
    assert first["stop_reason"] == "on-fatal" and first["extra"]["fatal"]["rule"] == "nccl"
    assert first["stop_requested_at"] - first["started_at"] >= 6
    wait_for(lambda: _stage(p, "train")["state"] == "succeeded", timeout=30, what="attempt 2 done")
    kinds = [(a["attempt"], a["kind"], a["level"]) for a in _alerts(p, "train")]
    assert (1, "on-fatal-stop", "warning") in kinds
    failed = [a for a in _alerts(p, "train") if a["kind"] == "stage-failed"]
    assert len(failed) == 1 and failed[0]["attempt"] == 1
    # Its message starts with the cause: the NCCL line, not the stop.
    # The message starts with its cause: the first fatal line, the watchdog's report.
    assert "failure detected by watchdog" in failed[0]["message"].split(";")[0], failed[0]["message"]
    assert (1, "retry-scheduled", "warning") in kinds and (2, "stage-resumed", "warning") in kinds
    assert p.records("train")[1]["trigger"] == "retry"
    # Exactly one critical for the fatal line itself, one for the failure.
    crit = [k for k in kinds if k[2] == "critical"]
    assert [k[1] for k in crit].count("stage-failed") == 1, crit


def test_failing_with_wait_policy_is_left_running(pipeline: Pipeline) -> None:
    script = pipeline.root / "train.py"
    script.write_text(TRAIN)
    p = pipeline.write(f"""
        [[stage]]
        name = "train"
        command = [{PY}, {json.dumps(str(script))}, {json.dumps(str(HANG_LOG))}]
        estimate = "5s"
        on_fatal = {{ action = "wait", grace = "1s" }}
    """)
    p.cli("start", "train", check=True)
    wait_for(lambda: _stage(p, "train")["state"] == "failing", timeout=30, what="failing")
    wait_for(lambda: "stage-failing" in [a["kind"] for a in _alerts(p, "train")], timeout=20,
             what="the failing announcement")
    time.sleep(2.5)  # well past the grace: "wait" must not stop it
    st = _stage(p, "train")
    assert st["state"] == "failing" and psutil.pid_exists(st["pid"])
    assert p.records("train")[0].get("stop_requested_at") is None
    p.cli("stop", "train", check=True)
    wait_for(lambda: _stage(p, "train")["state"] == "stopped", timeout=30, what="stopped")



def test_stop_of_a_torchrun_style_stage_raises_no_warning_or_critical(pipeline: Pipeline) -> None:
    script = pipeline.root / "torchrun_like.py"
    script.write_text(TORCHRUN_ON_SIGTERM)
    p = pipeline.write(f"""
        [[stage]]
        name = "train"
        command = [{PY}, {json.dumps(str(script))}, {json.dumps(str(TEARDOWN_LOG))}]
        estimate = "1h"
    """)
    p.cli("start", "train", check=True)
    wait_for(lambda: (_stage(p, "train").get("live") or {}).get("progress"), timeout=30,
             what="progress")
    p.cli("stop", "train", check=True)
    wait_for(lambda: _stage(p, "train")["state"] == "stopped", timeout=30, what="stopped")
    wait_for(lambda: "stage-stopped" in [a["kind"] for a in _alerts(p, "train")], timeout=20,
             what="stage-stopped alert")
    # The box really was printed, and exit 1 recorded (it ran < 60 s: early-exit territory).
    st = _stage(p, "train")  # the record merged with the wrapper's result, as every front end sees it
    log = Path(st["log"]).read_text()
    assert "ChildFailedError" in log and "Root Cause (first observed failure)" in log
    assert st["exit_code"] == 1 and st["ended_at"] - st["started_at"] < 60
    loud = [a for a in p.alerts() if a["level"] in ("warning", "critical")]
    assert not loud, loud
    # The log pane still marks the box as fatal: shown, not alerted.
    verdicts = (p.state_dir / "runs" / "train" / "0001.verdicts.jsonl").read_text()
    assert "torchrun-child-failed" in verdicts


def test_a_start_that_cannot_happen_is_one_critical(pipeline: Pipeline) -> None:
    p = pipeline.write(f"""
        [[stage]]
        name = "nowhere"
        cwd = "{pipeline.root / 'missing-dir'}"
        command = ["true"]
    """)
    p.cli("start", "nowhere")
    wait_for(lambda: _stage(p, "nowhere")["state"] == "failed", timeout=30, what="failed")
    wait_for(lambda: p.driver_pid() is None or not psutil.pid_exists(p.driver_pid()), timeout=30,
             what="the driver to exit")
    crit = [a for a in _alerts(p, "nowhere") if a["level"] == "critical"]
    assert len(crit) == 1 and "could not start" in crit[0]["message"], crit
