"""Alert semantics under ``--watch``, on logs nobody on this project wrote.

- The seed's extraction start (benign Triton ERROR, Marlin init, a 64-shard load
  slower than its estimate: tests/fixtures/logs/issues/seed_extraction.log)
  ending in a vLLM worker's out-of-memory error (vllm_worker_oom.log, from
  https://github.com/vllm-project/vllm/issues/14095): the Triton line is not
  critical, no drift warning fires (4 of 64 shards is no evidence), the OOM is critical, the one stage-failed
  alert names the out-of-memory cause, and --watch exits 1.
- A stop asked for while --watch drives: the stage prints torchrun's teardown
  box on SIGTERM and exits 1 (torchrun_sigterm_teardown.log, from
  https://github.com/pytorch/pytorch/issues/150916 and
  https://github.com/Vision-CAIR/MiniGPT-4/issues/237); no warning or
  critical alert, on stdout or in the alerts file.
"""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import TORCHRUN_ON_SIGTERM, Pipeline, wait_for
from test_watch_e2e import Watch

FIXTURES = Path(__file__).parent / "fixtures" / "logs" / "issues"
PY = json.dumps(sys.executable)

REPLAY = textwrap.dedent("""
    import sys, time
    for path in sys.argv[1:]:
        for line in open(path):
            sys.stdout.write(line)
            sys.stdout.flush()
            time.sleep(0.02)
    sys.exit(1)
""")


def test_seed_extraction_start_ending_in_a_worker_oom(pipeline: Pipeline) -> None:
    script = pipeline.root / "replay.py"
    script.write_text(REPLAY)
    logs = [str(FIXTURES / "seed_extraction.log"), str(FIXTURES / "vllm_worker_oom.log")]
    p = pipeline.write(f"""
        [[stage]]
        name = "extract"
        command = [{PY}, {json.dumps(str(script))}, {", ".join(json.dumps(x) for x in logs)}]
        estimate = "2h15m"
        phases = {{ "Loading safetensors checkpoint shards" = "22m" }}
    """)
    w = Watch(p, "--run-all")
    assert w.wait(timeout=90) == 1, w.text()
    alerts = [a for a in p.alerts() if a.get("stage") == "extract"]
    triton = [a for a in alerts if "Triton" in str(a["details"].get("text", ""))
              and a["kind"] != "stage-failed"]
    assert triton and all(a["level"] == "info" for a in triton), triton
    # 4 of 64 shards is no evidence of an overshoot (logs/eta.py): no drift warning.
    assert not any(a["kind"] == "eta-drift" for a in alerts), alerts
    oom = [a for a in alerts if a["kind"] == "fatal-log-event"]
    assert oom and oom[0]["level"] == "critical" and "OutOfMemoryError" in oom[0]["details"]["text"]
    failed = [a for a in alerts if a["kind"] == "stage-failed"]
    assert len(failed) == 1, failed
    msg = failed[0]["message"]
    assert msg.startswith("failed: ") and "OutOfMemoryError" in msg and "exit 1" in msg, msg
    # The line quoted under it on stdout is the OOM, not the drift warning.
    out = [ln for ln in w.lines() if "stage-failed" in ln]
    assert out and "Loading safetensors" not in out[0] and "OutOfMemoryError" in out[0], out
    # Its line number is the one the TUI's log pane, the verdicts file and grep -n use
    # (the attempt's header line counts).
    seed_lines = len((FIXTURES / "seed_extraction.log").read_text().splitlines())
    assert failed[0]["details"]["line"] == 1 + seed_lines + 1



def test_stop_while_watch_drives_raises_no_warning_or_critical(pipeline: Pipeline) -> None:
    script = pipeline.root / "torchrun_like.py"
    script.write_text(TORCHRUN_ON_SIGTERM)
    teardown = FIXTURES / "torchrun_sigterm_teardown.log"
    p = pipeline.write(f"""
        [[stage]]
        name = "train"
        command = [{PY}, {json.dumps(str(script))}, {json.dumps(str(teardown))}]
    """)
    w = Watch(p, "--run-all")
    wait_for(lambda: "stage-started" in w.text(), timeout=30, what="the stage to start")
    wait_for(lambda: "| 5/1000" in Path(p.records("train")[0]["log"]).read_text(), timeout=30,
             what="output")
    r = p.cli("stop", "train")
    assert r.returncode == 0, r.stdout + r.stderr
    assert w.wait(timeout=60) == 1, w.text()  # a stopped wanted stage is not a success
    assert "ChildFailedError" in Path(p.records("train")[0]["log"]).read_text()
    assert not [ln for ln in w.lines() if " WARNING " in ln or " CRITICAL " in ln], w.text()
    assert not [a for a in p.alerts() if a["level"] in ("warning", "critical")]
    assert "stage-stopped" in w.text()


def test_a_rank_death_is_one_alert_with_the_launchers_root_cause(pipeline: Pipeline) -> None:
    # torchrun's box (https://github.com/Vision-CAIR/MiniGPT-4/issues/237) printed
    # when a rank really dies, not because of a stop.
    script = pipeline.root / "replay.py"
    script.write_text(REPLAY)
    box = FIXTURES / "torchrun_child_failed.log"
    p = pipeline.write(f"""
        [[stage]]
        name = "train"
        command = [{PY}, {json.dumps(str(script))}, {json.dumps(str(box))}]
    """)
    w = Watch(p, "--run-all")
    assert w.wait(timeout=60) == 1, w.text()
    crit = [a for a in p.alerts() if a["level"] == "critical"]
    assert [a["kind"] for a in crit] == ["fatal-log-event", "stage-failed"], crit
    assert crit[0]["details"]["rule"] == "torchrun-child-failed"
    assert crit[1]["message"].startswith("failed: rank 0 (pid 78970) exited with code 1"), crit[1]["message"]


HELD_THEN_EXIT = textwrap.dedent("""
    import sys, time
    print("2026-12-01 10:00:00,001 ERROR loader: the frobnicator could not open shard 3", flush=True)
    print("2026-12-01 10:00:00,002 WARNING loader: reading shard 3 took 41.0s", flush=True)
    time.sleep(2.5)  # the driver reads both lines in a poll; the error is held, the warning goes out
    sys.exit(1)
""")


def test_an_error_held_past_a_later_line_still_alerts_when_the_exit_settles_it(pipeline: Pipeline) -> None:
    """The error is judged only at the exit, after a later line was already alerted: its alert must not be dropped."""
    script = pipeline.root / "held.py"
    script.write_text(HELD_THEN_EXIT)
    p = pipeline.write(f"""
        [[stage]]
        name = "load"
        command = [{PY}, {json.dumps(str(script))}]
    """)
    w = Watch(p, "--run-all")
    assert w.wait(timeout=60) == 1, w.text()
    alerts = [a for a in p.alerts() if a.get("stage") == "load"]
    fatal = [a for a in alerts if a["kind"] == "fatal-log-event"]
    assert len(fatal) == 1 and "frobnicator" in fatal[0]["details"]["text"], alerts
    assert fatal[0]["details"]["line"] == 2 and fatal[0]["level"] == "critical"  # line 1 is the header
    failed = [a for a in alerts if a["kind"] == "stage-failed"]
    assert len(failed) == 1 and "frobnicator" in failed[0]["message"], failed


HELD_THEN_STOPPED = textwrap.dedent("""
    import signal, sys, time
    # Like most servers and launchers: SIGTERM is caught and the process exits with a status of its own.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(sys.argv[1], flush=True)
    time.sleep(120)
""")
UNRECOGNISED_ERROR = "2026-12-01 10:00:00,001 ERROR loader: the frobnicator could not open shard 3"
# A traceback the process may survive (it is judged by whether the process goes on).
LOGGED_TRACEBACK = ('Traceback (most recent call last):\n  File "/srv/load.py", line 7, in <module>\n'
                    '    open_shard(3)\nRuntimeError: the frobnicator could not open shard 3')


@pytest.mark.parametrize("text", [UNRECOGNISED_ERROR, LOGGED_TRACEBACK], ids=["held-error", "pending-traceback"])
def test_a_stop_while_an_error_waits_for_its_verdict_does_not_make_it_fatal(pipeline: Pipeline, text: str) -> None:
    """The user stops the stage seconds after an error still being judged: the stop ended it, not the error."""
    script = pipeline.root / "held_stop.py"
    script.write_text(HELD_THEN_STOPPED)
    p = pipeline.write(f"""
        [[stage]]
        name = "load"
        command = [{PY}, {json.dumps(str(script))}, {json.dumps(text)}]
    """)
    w = Watch(p, "--run-all")
    wait_for(lambda: p.records("load") and "frobnicator" in Path(p.records("load")[0]["log"]).read_text(),
             timeout=30, what="the error line")
    # The driver reads a new line within milliseconds (inotify); the error stays held for 10 s, so a stop
    # 1.5 s after it is printed arrives while it is held.
    time.sleep(1.5)
    assert "frobnicator" not in w.text()  # not settled yet: no alert for it so far
    r = p.cli("stop", "load")
    assert r.returncode == 0, r.stdout + r.stderr
    assert w.wait(timeout=60) == 1, w.text()
    assert not [a for a in p.alerts() if a["level"] == "critical"], p.alerts()
    assert "stage-stopped" in w.text()
