"""Issue 29, findings 12 and 13: state files that cannot be believed.

12. An ``intent.json`` that exists but cannot be read (corrupt here) used to
    be taken as empty: a pending retry was dropped, the next stage never ran,
    and nothing said so. Now the driver alerts, keeps the file as it is and
    launches nothing until it can read it; once fixed, the retry runs.
13. A run record whose ``attempt`` is a string made ``status`` crash with a
    traceback; now it is refused by name (file and field) and the stage is
    shown from the wrapper's own files.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from conftest import wait_for


def test_unreadable_intent_keeps_the_pending_retry_and_alerts(pipeline):
    pipeline.write("""
        [[stage]]
        name = "flaky"
        command = ["sh", "-c", "[ $EAGLE3TUI_ATTEMPT -ge 2 ]"]
        retry = { max_attempts = 3, backoff = "3s", on = ["exit:1"] }

        [[stage]]
        name = "after"
        depends_on = ["flaky"]
        command = ["true"]
    """)
    pipeline.cli("start", "--all", check=True)
    wait_for(lambda: "retry-scheduled" in [a["kind"] for a in pipeline.alerts()], what="retry scheduled")
    # During the back-off no stage runs: only the keeper and the driver are alive.
    keeper = json.loads((pipeline.state_dir / "keeper.json").read_text())["pid"]
    os.kill(keeper, signal.SIGKILL)
    os.kill(pipeline.driver_pid(), signal.SIGKILL)
    intent = pipeline.state_dir / "intent.json"
    good = intent.read_bytes()
    assert b"flaky" in json.loads(good)["relaunch"].__repr__().encode()
    intent.write_bytes(good[: len(good) // 2])  # torn by a disk error or a bad edit
    driver = subprocess.Popen([sys.executable, "-m", "eagle3tui.supervisor.driver",
                               "--config", str(pipeline.config)], cwd=pipeline.root,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        alert = wait_for(lambda: next((a for a in pipeline.alerts() if a["kind"] == "intent-unreadable"),
                                      None), what="the intent-unreadable alert")
        assert alert["level"] == "critical" and "intent.json" in alert["message"]
        assert "move it away" in alert["message"]
        assert intent.read_bytes() == good[: len(good) // 2], "the unreadable file was overwritten"
        assert [r["attempt"] for r in pipeline.records("flaky")] == [1]
        intent.write_bytes(good)  # fixed
        result = pipeline.state_dir / "runs/after/0001.result.json"
        wait_for(result.exists, timeout=40, what="the retry ran and the next stage after it")
        assert [r["attempt"] for r in pipeline.records("flaky")] == [1, 2]
    finally:
        driver.kill()
        driver.wait()


def test_record_with_a_string_attempt_gives_a_clear_error(pipeline):
    pipeline.write("""
        [[stage]]
        name = "job"
        command = ["echo", "done"]
    """)
    pipeline.cli("start", "job", check=True)
    wait_for(lambda: pipeline.stage("job")["state"] == "succeeded", what="job succeeded")
    path = pipeline.state_dir / "runs" / "job" / "0001.json"
    rec = json.loads(path.read_text())
    rec["attempt"] = "1"
    path.write_text(json.dumps(rec))
    os.chmod(path, 0o600)
    for args in (("status",), ("status", "--json")):
        got = pipeline.cli(*args, timeout=30)
        assert "Traceback" not in got.stderr + got.stdout, got.stderr
        assert got.returncode in (0, 1), got.stderr
        assert "0001.json" in got.stdout + got.stderr and "'attempt'" in got.stdout + got.stderr
    st = pipeline.stage("job")
    assert st["state"] == "succeeded" and st["attempt"] == 1, st
