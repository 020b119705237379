"""An attempt that died of a full *log* disk says so (its own error never reached
the log). A launch onto a full log disk: test_faults_full_log_disk.py.

"Full" is real: a 1 MiB tmpfs mounted for the test (CI runs as root), filled
until ENOSPC by the stage itself writing its log.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import wait_for


@pytest.fixture
def log_fs(tmp_path):
    mnt = tmp_path / "logs"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True)
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


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
