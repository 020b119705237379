"""A full *log* disk is one stage's trouble: the others stay supervised, the alert
names the file, and an attempt that died of it says so.

"Full" is real: a 1 MiB tmpfs mounted for the test (CI runs as root), filled
until ENOSPC by a file, or by the stage itself writing its log.
"""

from __future__ import annotations

import errno
import subprocess
import sys
import textwrap

import pytest

from conftest import wait_for


@pytest.fixture
def log_fs(tmp_path):
    mnt = tmp_path / "logs"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True)
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(directory) -> None:
    for name, chunk in (("filler", 65536), ("filler2", 512)):
        with open(directory / name, "wb", buffering=0) as f:
            try:
                while True:
                    f.write(b"\0" * chunk)
            except OSError as e:
                assert e.errno == errno.ENOSPC


def _kinds(pipeline) -> list[str]:
    return [a["kind"] for a in pipeline.alerts()]


def test_full_log_disk_holds_back_one_stage_and_names_its_log(pipeline, log_fs):
    go = pipeline.root / "go"
    steady = pipeline.root / "steady.py"
    steady.write_text(textwrap.dedent(f"""
        import os, time
        print("working", flush=True)
        while not os.path.exists({str(go)!r}):
            time.sleep(0.05)
        print("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB", flush=True)
        time.sleep(600)
    """))
    pipeline.write(f"""
        [[stage]]
        name = "steady"
        command = ["{sys.executable}", "{steady}"]
        log = "{pipeline.root}/steady.log"
        stop_grace = "1s"

        [[stage]]
        name = "late"
        command = ["true"]
        log = "{log_fs}/late.log"
    """)
    pipeline.cli("start", "steady", check=True)
    wait_for(lambda: pipeline.records("steady") and pipeline.records("steady")[0].get("pid"),
             what="steady running")
    _fill(log_fs)
    pipeline.cli("start", "late", check=True)
    wait_for(lambda: "log-disk-full" in _kinds(pipeline), timeout=20,
             what="an alert that late's log disk is full")
    alert = next(a for a in pipeline.alerts() if a["kind"] == "log-disk-full")
    assert f"{log_fs}/late.log" in alert["message"] and "state directory" not in alert["message"]
    assert "state-dir-unwritable" not in _kinds(pipeline)
    # The disk is still full: the other stage is supervised all the same.
    go.touch()
    wait_for(lambda: any(a["kind"] == "fatal-log-event" and a["stage"] == "steady"
                         for a in pipeline.alerts()), timeout=15,
             what="steady's fatal line alerted while late's log disk is full")
    assert pipeline.stage("late")["state"] != "failed"
    (log_fs / "filler").unlink()
    (log_fs / "filler2").unlink()
    wait_for(lambda: pipeline.stage("late")["state"] == "succeeded", timeout=30,
             what="late started once space returned")
    pipeline.cli("stop", "steady")


def test_attempt_that_died_of_a_full_log_disk_says_so(pipeline, log_fs):
    pipeline.write(f"""
        [[stage]]
        name = "chatty"
        command = ["{sys.executable}", "-c", "while True: print('x' * 1000)"]
        log = "{log_fs}/chatty.log"
    """)
    pipeline.cli("start", "chatty", check=True)
    wait_for(lambda: pipeline.stage("chatty")["state"] == "failed", timeout=30,
             what="the stage dying of its full log disk")
    failed = wait_for(lambda: [a for a in pipeline.alerts() if a["kind"] == "stage-failed"],
                      what="the stage-failed alert")
    assert "is full" in failed[0]["message"] and str(log_fs) in failed[0]["message"], failed[0]
    assert "full" in failed[0]["details"]["log_disk"]
