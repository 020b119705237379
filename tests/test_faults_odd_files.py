"""Issue 29, findings 4-8: log files that are not what they seem.

4. ``logs`` never follows a symlink put at a stage's log path (as root it
   printed /etc/shadow);
5. a FIFO at a log path hangs nothing: not the launch, not the driver's
   follower, not ``logs``; it is refused with a critical alert;
6. logrotate without copytruncate (rename, then create): the stage goes on
   writing to the renamed file through its descriptor, and those lines are
   read; a line written to the new file is read too;
7. a fatal line longer than 64 KiB written in 4 KiB pieces is still caught
   (the head of an unfinished line is kept, not only its tail);
8. two stages sharing one log are rejected by ``check``.

All with real processes, FIFOs, symlinks and renames.
"""

from __future__ import annotations

import json
import os
import sys
import time

from conftest import wait_for


def test_logs_refuses_a_symlink_at_the_log_path(pipeline, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("root:$6$very-secret-hash:19000:0:99999:7:::\n")
    secret.chmod(0o600)
    pipeline.write(f"""
        [[stage]]
        name = "job"
        command = ["echo", "hello"]
        log = "{tmp_path}/job.log"
    """)
    pipeline.cli("start", "job", check=True)
    wait_for(lambda: pipeline.stage("job")["state"] == "succeeded", what="job done")
    log = tmp_path / "job.log"
    log.unlink()
    log.symlink_to(secret)  # what a stage (or anyone who can write its directory) can do
    got = pipeline.cli("logs", "job", "--all-attempts", timeout=20)
    assert "very-secret-hash" not in got.stdout + got.stderr
    assert got.returncode != 0 and "symlink" in got.stderr


def test_fifo_at_the_log_path_hangs_nothing(pipeline, tmp_path):
    log = tmp_path / "job.log"
    os.mkfifo(log)
    pipeline.write(f"""
        [[stage]]
        name = "job"
        command = ["echo", "hello"]
        log = "{log}"

        [[stage]]
        name = "other"
        command = ["sh", "-c", "echo 'RuntimeError: CUDA error: an illegal memory access was encountered'; exit 1"]
    """)
    started = time.monotonic()
    got = pipeline.cli("start", "job", "other", timeout=30)
    assert time.monotonic() - started < 25, "start hung on the FIFO"
    assert got.returncode in (0, 1), got.stderr
    wait_for(lambda: pipeline.stage("other")["state"] == "failed", what="other failed")
    job = wait_for(lambda: pipeline.stage("job")["state"] == "failed" and pipeline.stage("job"),
                   what="job refused")
    assert "FIFO" in job["reason"], job
    # status derives "failed" from the result file; the driver's alerts follow within
    # its next full pass (up to 1 s with inotify).
    wait_for(lambda: any(a["kind"] == "stage-failed" and a["stage"] == "job" and "FIFO" in a["message"]
                         for a in pipeline.alerts()), what="job's stage-failed alert")
    # The other stage's alerts were not held up.
    wait_for(lambda: any(a["kind"] == "stage-failed" and a["stage"] == "other"
                         and "illegal memory" in a["message"] for a in pipeline.alerts()),
             what="other's stage-failed alert")
    got = pipeline.cli("logs", "job", timeout=20)
    assert got.returncode != 0 and "FIFO" in got.stderr


def test_log_replaced_by_a_fifo_while_running_is_refused_and_stop_still_works(pipeline, tmp_path):
    log = tmp_path / "job.log"
    pipeline.write(f"""
        [[stage]]
        name = "job"
        command = ["sh", "-c", "while true; do echo working; sleep 0.2; done"]
        log = "{log}"
    """)
    pipeline.cli("start", "job", check=True)
    pipeline.running("job")
    wait_for(lambda: "working" in log.read_text(), what="output")
    log.unlink()
    os.mkfifo(log)
    alert = wait_for(lambda: next((a for a in pipeline.alerts() if a["kind"] == "log-refused"), None),
                     timeout=20, what="the log-refused alert")
    assert alert["level"] == "critical" and "job.log" in alert["message"]
    got = pipeline.cli("stop", "job", timeout=20)
    assert got.returncode == 0, got.stderr
    wait_for(lambda: pipeline.stage("job")["state"] == "stopped", what="job stopped")
    got = pipeline.cli("logs", "job", timeout=20)
    assert got.returncode != 0 and "FIFO" in got.stderr


ROTATING_WRITER = """
import os, sys, time
root = sys.argv[1]
def wait(name):
    while not os.path.exists(os.path.join(root, name)):
        print("step", flush=True)   # a real writer that keeps writing, slowly
        time.sleep(0.3)
wait("rotated")
print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB", flush=True)
wait("second")
# What an application that reopens its log by name writes (WatchedFileHandler).
with open(os.path.join(root, "job.log"), "a") as f:
    f.write("RuntimeError: CUDA error: an illegal memory access was encountered\\n")
sys.exit(1)
"""


def test_rename_and_create_rotation_loses_no_line(pipeline, tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(ROTATING_WRITER)
    log = tmp_path / "job.log"
    pipeline.write(f"""
        [[stage]]
        name = "job"
        command = ["{sys.executable}", "{script}", "{tmp_path}"]
        log = "{log}"
    """)
    pipeline.cli("start", "job", check=True)
    pipeline.running("job")
    wait_for(lambda: log.read_text().count("step") >= 3, what="steps")
    # logrotate without copytruncate: rename, then create a new empty file.
    os.rename(log, tmp_path / "job.log.1")
    log.touch()
    rotated = tmp_path / "job.log.1"
    seen = rotated.read_text().count("step")
    # The writer keeps writing to the renamed file by its descriptor (several
    # of the driver's passes), then logs a fatal error there.
    wait_for(lambda: rotated.read_text().count("step") >= seen + 4, what="writes after the rename")
    (tmp_path / "rotated").touch()
    first = wait_for(lambda: next((a for a in pipeline.alerts() if "OutOfMemoryError" in a["message"]
                                   or "OutOfMemoryError" in json.dumps(a.get("details", {}))), None),
                     timeout=20, what="the fatal line written to the renamed file")
    assert first["level"] in ("critical", "warning")
    (tmp_path / "second").touch()
    # The exit is in the status (the wrapper's record) before the driver's next
    # full pass settles it: wait for the settlement's alert, not the state.
    wait_for(lambda: any(a["kind"] == "stage-failed" for a in pipeline.alerts()), timeout=20,
             what="the stage-failed alert")
    text = json.dumps(pipeline.alerts())
    assert "illegal memory access" in text, "the line written to the new file was lost"


LONG_FATAL_WRITER = """
import os, sys, time
keys = ", ".join(f'"model.layers.{i}.self_attn.q_proj.weight"' for i in range(4000))
line = ("RuntimeError: Error(s) in loading state_dict for LlamaForCausalLM: "
        f"Missing key(s) in state_dict: {keys}.\\n").encode()
assert len(line) > 2 * 65536
print("loading checkpoint", flush=True)
for i in range(0, len(line), 4096):
    os.write(1, line[i:i + 4096])   # the way a logger's buffer reaches the file
    time.sleep(0.02)                # the driver reads between the pieces
sys.exit(1)
"""


def test_fatal_line_longer_than_64k_written_in_pieces_is_caught(pipeline, tmp_path):
    script = tmp_path / "long.py"
    script.write_text(LONG_FATAL_WRITER)
    pipeline.write(f"""
        [[stage]]
        name = "job"
        command = ["{sys.executable}", "{script}"]
    """)
    pipeline.cli("start", "job", check=True)
    wait_for(lambda: pipeline.stage("job")["state"] == "failed", timeout=30, what="job failed")
    failed = wait_for(lambda: next((a for a in pipeline.alerts() if a["kind"] == "stage-failed"), None),
                      what="stage-failed alert")
    assert "Error(s) in loading state_dict" in failed["message"], failed["message"][:300]
    assert failed["details"].get("line") == 3, failed["details"].get("line")


def test_two_stages_sharing_one_log_are_rejected_by_check(pipeline, tmp_path):
    pipeline.write(f"""
        [[stage]]
        name = "prepare"
        command = ["true"]
        log = "{tmp_path}/shared.log"

        [[stage]]
        name = "train"
        command = ["true"]
        log = "{tmp_path}/./shared.log"
    """)
    got = pipeline.cli("check")
    assert got.returncode == 2
    assert "pipeline.toml:10" in got.stderr, got.stderr
    assert "'prepare' and 'train' share the log" in got.stderr
    assert "fix:" in got.stderr and "train.log" in got.stderr
