"""Issue 29, finding 10 (the launch part): a full *log* disk fails the attempt
whose log is on it, with the disk named as the cause, and pauses nothing else.

The log directory is a real 1 MiB tmpfs filled to ENOSPC (the tests run as
root, as in CI); the state directory is elsewhere and has room.
"""

from __future__ import annotations

import errno
import subprocess

import pytest

from conftest import wait_for


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
