"""Configuration gaps exit 2 with file:line and a fix; a broken file on disk does
not block ``status`` and ``stop`` of a running driver.

Real files and processes: a path through a regular file (``mkdir`` fails with
ENOTDIR, for root too), a missing notifier program, and a driver running a
stage while its pipeline.toml is broken on disk. (Log and state directories
that cannot be made are refused by ``check``: test_faults_unusable_dirs.py.)
"""

from __future__ import annotations

import json
import os

import psutil
from conftest import wait_for


def _check(pipeline, text: str):
    (pipeline.root / "afile").write_text("a regular file, not a directory\n")
    pipeline.write(text)
    return pipeline.cli("check")


def _assert_refused(r, pipeline, line: int, key: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    assert f"{pipeline.config}:{line}, key '{key}'" in r.stderr, r.stderr
    assert "fix:" in r.stderr, r.stderr


def test_state_dir_that_cannot_be_created_stops_start_and_stop_cleanly(pipeline):
    # `check` says so too (config.uncreatable_dirs); a command sent anyway must not
    # end in a traceback.
    (pipeline.root / "afile").write_text("a regular file, not a directory\n")
    pipeline.write("""
        [pipeline]
        state_dir = "afile/state"

        [[stage]]
        name = "job"
        command = ["true"]
    """)
    for args in (["start", "job"], ["stop", "job"]):
        r = pipeline.cli(*args)
        _assert_refused(r, pipeline, 3, "pipeline.state_dir")
        assert "afile/state" in r.stderr and "Not a directory" in r.stderr, r.stderr


def test_missing_alert_command(pipeline):
    r = _check(pipeline, f"""
        [alerts]
        command = ["{pipeline.root}/no-such-notifier", "--channel", "ml"]

        [[stage]]
        name = "job"
        command = ["true"]
    """)
    _assert_refused(r, pipeline, 3, "alerts.command")
    assert "no-such-notifier" in r.stderr


def test_broken_file_on_disk_does_not_block_status_and_stop(pipeline):
    gate = pipeline.root / "gate"
    pipeline.write(f"""
        [[stage]]
        name = "job"
        command = ["sh", "-c", "while [ ! -e {gate} ]; do sleep 0.05; done"]
        stop_grace = "1s"
    """)
    pipeline.cli("start", "job", check=True)
    pipeline.running("job")
    pipeline.config.write_text(pipeline.config.read_text() + "\n[[stage]\nname = \n")
    r = pipeline.cli("status", "--json")
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert [s["state"] for s in json.loads(r.stdout)["stages"]] == ["running"]
    assert "invalid TOML" in r.stderr and "running driver" in r.stderr, r.stderr
    r = pipeline.cli("stop", "job")
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert "running driver" in r.stderr, r.stderr
    pid = pipeline.records("job")[0]["pid"]
    wait_for(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE,
             what="the stage stopped")
    wait_for(lambda: (pipeline.state_dir / "runs/job/0001.result.json").exists(),
             what="the stop recorded by the stage's wrapper")
    assert json.loads((pipeline.state_dir / "runs/job/0001.result.json").read_text())["stop_signalled"]
    # With no driver left (it exits idle, or is killed), the broken file is the answer again.
    try:
        os.kill(pipeline.driver_pid(), 9)
    except (ProcessLookupError, TypeError):
        pass  # it had already exited idle
    wait_for(lambda: pipeline.cli("status").returncode == 2, what="status refusing the broken file")
