"""Issue 29, finding 10 (the launch part): a full *log* disk fails the attempt
whose log is on it, with the disk named as the cause, and pauses nothing else.

The log directory is a real 1 MiB tmpfs filled to ENOSPC (the tests run as
root, as in CI); the state directory is elsewhere and has room.
"""

from __future__ import annotations

import errno
import subprocess

import pytest

from conftest import free_filled, wait_for


@pytest.fixture
def full_fs(tmp_path):
    mnt = tmp_path / "logs"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True)
    try:
        with open(mnt / "filler", "wb") as f:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
    except OSError as e:
        assert e.errno == errno.ENOSPC
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_full_log_disk_fails_that_attempt_with_the_cause_and_holds_up_nothing(pipeline, full_fs):
    pipeline.write(f"""
        [[stage]]
        name = "on-full-disk"
        command = ["echo", "hello"]
        log = "{full_fs}/job.log"

        [[stage]]
        name = "other"
        command = ["sh", "-c", "echo 'RuntimeError: CUDA error: an illegal memory access was encountered'; exit 1"]
    """)
    pipeline.cli("start", "on-full-disk", "other", timeout=30)
    st = wait_for(lambda: pipeline.stage("on-full-disk")["state"] == "failed"
                  and pipeline.stage("on-full-disk"), what="the attempt on the full disk failed")
    assert "No space left" in st["reason"] and "job.log" in st["reason"], st
    wait_for(lambda: any(a["kind"] == "stage-failed" and a["stage"] == "other"
                         and "illegal memory" in a["message"] for a in pipeline.alerts()),
             what="the other stage's alert, not held up")
    assert not [a for a in pipeline.alerts() if a["kind"] == "state-dir-unwritable"]


def test_a_start_that_fails_on_a_full_log_disk_is_retried_by_the_policy(pipeline, full_fs):
    # Found by the kill storm with a full log disk (bench/bench_kill_storm.py
    # --disorder): a launch refused by ENOSPC was settled without asking the
    # retry policy, so even on = ["any"] never retried and the pipeline stopped.
    pipeline.write(f"""
        [[stage]]
        name = "on-full-disk"
        command = ["echo", "hello"]
        log = "{full_fs}/job.log"
        retry = {{ max_attempts = 3, backoff = "3s", on = ["any"] }}
    """)
    pipeline.cli("start", "on-full-disk", timeout=30)
    wait_for(lambda: any(a["kind"] == "stage-failed" and "could not start" in a["message"]
                         for a in pipeline.alerts()), what="the refused start's alert")
    wait_for(lambda: any(a["kind"] == "retry-scheduled" for a in pipeline.alerts()),
             timeout=10, what="the retry the policy covers")
    free_filled(full_fs)  # the disk has room again before the backoff ends
    st = wait_for(lambda: (s := pipeline.stage("on-full-disk"))["state"] == "succeeded" and s,
                  timeout=40, what="the retried attempt succeeded")
    recs = pipeline.records("on-full-disk")
    assert len(recs) == 2 and recs[-1]["trigger"] == "retry", recs
    assert (full_fs / "job.log").read_text().strip().endswith("hello"), st
