"""Issue 13, findings 9 and 11: a full or read-only state directory never
loses an exit code; deleting the state directory under a live driver never
starts a second copy of a stage.

"Full" and "read-only" are real: the state directory is a 1 MiB tmpfs
mounted for the test (the tests run as root, as in .ci/run) and filled with
a file until ENOSPC; or it is bind-mounted read-only over itself while the
driver runs (a plain ``remount,ro`` is refused while files are open for
writing, which the driver always has).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from conftest import fill_to_enospc, wait_for
from eagle3tui.supervisor.lock import lock_held


@pytest.fixture
def small_fs(tmp_path, pipeline):
    mnt = tmp_path / "state"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True)
    yield mnt
    # While the records, keeper.json and driver.json are still there to say who runs:
    # once unmounted, the pipeline fixture's clean-up finds none of them.
    pipeline.kill_everything()
    subprocess.run(["mount", "-o", "remount,rw", str(mnt)], check=False)
    subprocess.run(["umount", "-l", str(mnt)], check=False)
    # A keeper left running here found the emptied mount point and started the stage
    # again (a wrapper that outlived the test): none may be left.
    time.sleep(1.0)
    assert not pipeline.wrappers_left(), "a stage wrapper or keeper outlived the test"


def _stage(pipeline, small_fs, exit_code: int):
    gate = pipeline.root / "gate"
    pipeline.write(f"""
        [pipeline]
        state_dir = "{small_fs}"

        [[stage]]
        name = "job"
        command = ["sh", "-c", "while [ ! -e {gate} ]; do sleep 0.05; done; exit {exit_code}"]
        log = "{pipeline.root}/job.log"
    """)
    pipeline.state_dir = small_fs
    pipeline.cli("start", "job", check=True)
    pipeline.running("job")
    return gate


def test_full_state_dir_keeps_exit_code_and_alerts_once_space_returns(pipeline, small_fs):
    gate = _stage(pipeline, small_fs, 3)
    fill_to_enospc(small_fs)
    gate.touch()
    wrapper = pipeline.records("job")[0]["wrapper_pid"]
    wait_for(lambda: not os.path.exists(f"/proc/{wrapper}") or
             open(f"/proc/{wrapper}/stat").read().split()[2] == "Z", what="wrapper done")
    st = pipeline.stage("job")
    assert st["exit_code"] == 3 and st["reason"] == "exit 3", st
    (small_fs / "filler").unlink()
    (small_fs / "filler2").unlink(missing_ok=True)
    pipeline.cli("status")
    wait_for(lambda: {"result-write-failed", "state-dir-unwritable"} & {a["kind"] for a in pipeline.alerts()},
             timeout=30, what="a critical alert explaining the failure once space returned")
    crit = [a for a in pipeline.alerts() if a["kind"] in ("result-write-failed", "state-dir-unwritable")]
    assert all(a["level"] == "critical" for a in crit)
    wait_for(lambda: pipeline.stage("job")["state"] == "failed", what="failed, exit 3")
    # Nothing is left running: the driver goes idle, and its keeper with it.
    wait_for(lambda: not pipeline.wrappers_left(), timeout=30, what="no stage wrapper or keeper left")


@pytest.fixture
def ro_able(tmp_path):
    d = tmp_path / "state"
    d.mkdir()
    yield d
    subprocess.run(["umount", "-l", str(d)], check=False)


def test_read_only_state_dir_keeps_exit_code(pipeline, ro_able):
    small_fs = ro_able
    gate = _stage(pipeline, small_fs, 4)
    subprocess.run(["mount", "--bind", str(small_fs), str(small_fs)], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", str(small_fs)], check=True)
    gate.touch()
    wait_for(lambda: "[eagle3tui] result " in (pipeline.root / "job.log").read_text(),
             what="the wrapper's result (written to the fallback and the log)")
    st = pipeline.stage("job")
    assert st["exit_code"] == 4, st
    subprocess.run(["umount", str(small_fs)], check=True)
    pipeline.cli("status")
    wait_for(lambda: "result-write-failed" in {a["kind"] for a in pipeline.alerts()}, timeout=30,
             what="the critical alert once the directory is writable")


def test_state_dir_deleted_under_live_driver(pipeline):
    marker = pipeline.root / "runs.txt"
    gate = pipeline.root / "gate"
    pipeline.write(f"""
        [[stage]]
        name = "job"
        command = ["sh", "-c", "echo x >> {marker}; while [ ! -e {gate} ]; do sleep 0.05; done"]
        log = "{pipeline.root}/job.log"
    """)
    pipeline.cli("start", "job", check=True)
    pipeline.running("job")
    driver = pipeline.driver_pid()
    # Like `rm -rf`: the driver may write a file while the tree is removed.
    shutil.rmtree(pipeline.state_dir, ignore_errors=True)
    r = pipeline.cli("start", "job")
    assert "already running" in r.stdout, r.stdout + r.stderr
    assert pipeline.driver_pid() == driver, "a second driver took over"
    assert "state-dir-recreated" in [a["kind"] for a in pipeline.alerts()]
    gate.touch()
    wait_for(lambda: pipeline.stage("job")["state"] == "succeeded", what="the one copy ended")
    assert marker.read_text().split() == ["x"]
    wait_for(lambda: not lock_held(pipeline.state_dir), timeout=30, what="driver idle")
