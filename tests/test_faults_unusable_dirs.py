"""Issue 29, finding 14 (the directories part): a log or state directory that
cannot be made is an error at ``check`` (exit 2, file:line, a fix), and a
stage whose log directory cannot be made fails with the reason instead of
crashing the driver at every start while the stage stays pending.

"Cannot be made" is real and holds as root too: a regular file sits where a
directory of the path should be.
"""

from __future__ import annotations

from conftest import wait_for


def test_log_directory_that_cannot_be_made(pipeline, tmp_path):
    blocker = tmp_path / "logs-here"
    blocker.write_text("a file, not a directory\n")
    pipeline.write(f"""
        [[stage]]
        name = "ok"
        command = ["true"]

        [[stage]]
        name = "job"
        command = ["true"]
        log = "{blocker}/job.log"
    """)
    got = pipeline.cli("check")
    assert got.returncode == 2, got.stdout + got.stderr
    assert "pipeline.toml:6" in got.stderr and "logs-here is a file" in got.stderr
    assert "fix:" in got.stderr and "Traceback" not in got.stderr
    pipeline.cli("start", "ok", "job", timeout=30)
    job = wait_for(lambda: pipeline.stage("job")["state"] == "failed" and pipeline.stage("job"),
                   what="job failed with the reason")
    assert "cannot write the log" in job["reason"] and "logs-here" in job["reason"], job
    wait_for(lambda: pipeline.stage("ok")["state"] == "succeeded", what="the other stage")
    assert any(a["kind"] == "stage-failed" and a["stage"] == "job" and a["level"] == "critical"
               for a in pipeline.alerts())
    assert not [a for a in pipeline.alerts() if a["kind"] == "driver-error"]


def test_state_directory_that_cannot_be_made(pipeline, tmp_path):
    blocker = tmp_path / "state-here"
    blocker.write_text("a file\n")
    pipeline.write(f"""
        [pipeline]
        state_dir = "{blocker}/state"

        [[stage]]
        name = "job"
        command = ["true"]
    """)
    got = pipeline.cli("check")
    assert got.returncode == 2, got.stdout + got.stderr
    assert "state directory" in got.stderr and "state-here is a file" in got.stderr
    assert "Traceback" not in got.stderr
