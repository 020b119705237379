"""Issue 29, findings 1-3: what another local user can do to a pipeline.

Each test makes a real second user (``useradd``; the tests run as root, as
CI does), acts as that user through ``setpriv`` in a real process, and
checks the driver believes only its own files:

1. a result planted at the wrapper's fallback path (it used to be a
   predictable directory in world-writable /tmp), or dropped by someone else
   into the run directory, never finishes a running stage;
2. with ``umask 002`` in a shared project group, a group member cannot get
   a command executed (the state directory is 0700 whatever the umask; a
   command file of another owner is refused with an alert), and no
   ``--set``/command override changes a built-in variable such as ``{python}``;
3. a log line that imitates the wrapper's result marker gives no success
   (and no negative elapsed time) when the wrapper is killed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import Pipeline, wait_for
from local_users import make_group, make_user, remove_group, remove_user

INTRUDER = f"e3tintr{os.getpid() % 100000}"
MATE = f"e3tmate{os.getpid() % 100000}"
GROUP = f"e3tproj{os.getpid() % 100000}"


@pytest.fixture
def intruder():
    user = make_user(INTRUDER)
    yield user
    remove_user(INTRUDER)


def _gated_pipeline(pipeline: Pipeline) -> Path:
    gate = pipeline.root / "gate"
    pipeline.write(f"""
        [[stage]]
        name = "train"
        command = ["sh", "-c", "while [ ! -e {gate} ]; do sleep 0.05; done; echo trained > {pipeline.root}/model"]
        outputs = ["{pipeline.root}/model"]

        [[stage]]
        name = "evaluate"
        depends_on = ["train"]
        command = ["sh", "-c", "cat {pipeline.root}/model > {pipeline.root}/evaluated"]
    """)
    return gate


def _old_fallback(pipeline: Pipeline, stage: str, attempt: int) -> Path:
    """Where the wrapper used to put a result the state directory refused (launcher.py before)."""
    key = hashlib.sha1(str(pipeline.state_dir.resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"eagle3tui-{os.getuid()}" / key / stage / f"{attempt:04d}.result.json"


PLANTED = {"exit_code": 0, "signal": None, "ended_at": 1234567.0}


def _evaluate_ran_after_train(pipeline: Pipeline, gate: Path) -> None:
    """Let train end for real; evaluate must start only after that, on the real model."""
    opened = time.time()
    gate.touch()
    wait_for(lambda: pipeline.stage("evaluate")["state"] in ("succeeded", "failed"), timeout=30,
             what="evaluate settled")
    train = pipeline.records("train")[-1]
    evaluate = pipeline.records("evaluate")[-1]
    assert train["ended_at"] >= opened - 1, train  # the wrapper's result, not the planted one
    assert evaluate["launched_at"] >= opened, "evaluate started before train really ended"
    assert (pipeline.root / "evaluated").read_text() == "trained\n"


def test_result_planted_at_the_old_fallback_path_never_finishes_a_running_stage(pipeline, intruder):
    gate = _gated_pipeline(pipeline)
    planted = _old_fallback(pipeline, "train", 1)
    # The intruder got there first: /tmp/eagle3tui-<uid>/... is theirs, world-writable.
    top = planted.parents[2]
    before = os.stat(top) if top.exists() else None
    for d in (top, planted.parents[1], planted.parent):
        d.mkdir(exist_ok=True)
        os.chown(d, intruder.uid, intruder.gid)
        os.chmod(d, 0o777)
    done = intruder.python("import json,sys; open(sys.argv[1],'w').write(sys.argv[2])",
                           str(planted), json.dumps(PLANTED))
    assert done.returncode == 0, done.stderr
    try:
        pipeline.cli("start", "evaluate", check=True)
        pipeline.running("train")
        _evaluate_ran_after_train(pipeline, gate)
        fallback = pipeline.records("train")[0]["extra"]["result_fallback"]
        parent = os.lstat(os.path.dirname(fallback))
        assert parent.st_uid == os.geteuid() and stat.S_IMODE(parent.st_mode) == 0o700
        assert not fallback.startswith(str(top))
    finally:
        if before is None:
            shutil.rmtree(top, ignore_errors=True)
        else:  # another run's directory: give it back as it was
            shutil.rmtree(planted.parents[1], ignore_errors=True)
            os.chown(top, before.st_uid, before.st_gid)
            os.chmod(top, stat.S_IMODE(before.st_mode))


@pytest.mark.parametrize("how", ["other-owner", "others-can-write"])
def test_result_file_not_ours_is_refused_with_an_alert(pipeline, intruder, how):
    gate = _gated_pipeline(pipeline)
    pipeline.cli("start", "evaluate", check=True)
    pipeline.running("train")
    # What a group member could leave in a run directory an older version
    # made group-writable (umask 002): a result that says "done, exit 0".
    result = pipeline.state_dir / "runs" / "train" / "0001.result.json"
    tmp = result.with_suffix(".planted")
    tmp.write_text(json.dumps(PLANTED))
    if how == "other-owner":
        os.chown(tmp, intruder.uid, intruder.gid)
        os.chmod(tmp, 0o600)
    else:
        os.chmod(tmp, 0o666)
    os.rename(tmp, result)
    alert = wait_for(lambda: next((a for a in pipeline.alerts() if a["kind"] == "state-problem"
                                   and "0001.result.json" in a["message"]), None),
                     what="an alert about the planted result")
    assert "refused" in alert["message"]
    assert (INTRUDER in alert["message"]) if how == "other-owner" else ("0666" in alert["message"])
    assert pipeline.stage("train")["state"] == "running"
    os.unlink(result)
    _evaluate_ran_after_train(pipeline, gate)


@pytest.fixture
def project():
    """A project directory shared by a group, as a lab sets one up (setgid, group-writable)."""
    gid = make_group(GROUP)
    mate = make_user(MATE, group=GROUP)
    root = Path(tempfile.mkdtemp(prefix="e3tproj-"))
    os.chown(root, 0, gid)
    os.chmod(root, 0o2775)
    yield Pipeline(root), mate, gid
    p = Pipeline(root)
    p.kill_everything()
    shutil.rmtree(root, ignore_errors=True)
    remove_user(MATE)
    remove_group(GROUP)


def _cli_umask(p: Pipeline, *args: str, umask: int = 0o002) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "eagle3tui", "--config", str(p.config), *args],
                          capture_output=True, text=True, timeout=60, cwd=p.root, check=False,
                          preexec_fn=lambda: os.umask(umask))


def test_group_member_cannot_get_a_command_run_as_the_owner(project):
    p, mate, gid = project
    pwned = p.root / "pwned"
    evil = p.root / "evil.sh"
    evil.write_text(f"#!/bin/sh\nid -u > {pwned}\n")
    evil.chmod(0o755)
    p.write("""
        [[stage]]
        name = "job"
        command = ["{python}", "-c", "print('honest work')"]

        [[stage]]
        name = "other"
        command = ["true"]
    """)
    # An older version left the state directory group-writable (umask 002).
    old = os.umask(0o002)
    try:
        (p.state_dir / "commands").mkdir(parents=True)
    finally:
        os.umask(old)
    assert stat.S_IMODE(p.state_dir.stat().st_mode) == 0o2775
    assert _cli_umask(p, "start", "job").returncode == 0
    wait_for(lambda: p.stage("job")["state"] == "succeeded", what="job succeeded")
    for d in (p.state_dir, p.state_dir / "commands", p.state_dir / "runs"):
        assert stat.S_IMODE(d.stat().st_mode) & 0o077 == 0, (d, oct(d.stat().st_mode))
    for f in (p.state_dir / "runs" / "job" / "0001.json", p.state_dir / "intent.json",
              p.state_dir / "driver.lock"):
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, (f, oct(f.stat().st_mode))

    command = {"op": "restart", "stages": ["job"], "overrides": {"python": str(evil)}}
    name = f"{time.time_ns():020d}-1-evil.json"
    # The group member tries, as herself, with her group and umask 002.
    tried = mate.python("import json,sys; open(sys.argv[1],'w').write(sys.argv[2])",
                        str(p.state_dir / "commands" / name), json.dumps(command),
                        groups=[gid], umask=0o002)
    assert tried.returncode != 0 and "Permission denied" in tried.stderr
    # Had the directory let her in, her file would be hers: refused all the same.
    planted = p.state_dir / "commands" / name
    staged = p.state_dir / "evil.partial"
    staged.write_text(json.dumps(command))
    os.chown(staged, mate.uid, gid)
    os.rename(staged, planted)
    assert _cli_umask(p, "start", "other").returncode == 0
    wait_for(lambda: p.stage("other")["state"] == "succeeded", what="other succeeded")
    if len(p.records("job")) > 1:  # what the bug did: restart job with her {python}
        wait_for(lambda: p.records("job")[-1].get("ended_at"), what="the restart ended")
    assert not pwned.exists(), "her script ran as the pipeline's owner"
    assert len(p.records("job")) == 1
    refused = [a for a in p.alerts() if a["kind"] == "command-refused"]
    assert refused and MATE in refused[0]["message"] and refused[0]["level"] == "critical"
    assert not planted.exists()


def test_set_and_command_overrides_cannot_change_builtin_python(pipeline, tmp_path):
    pipeline.write("""
        [[stage]]
        name = "job"
        command = ["{python}", "-c", "print('ok')"]
    """)
    got = pipeline.cli("--set", f"python={tmp_path}/evil.sh", "check")
    assert got.returncode == 2
    assert "{python}" in got.stderr and "built-in" in got.stderr and "[vars]" in got.stderr
    assert "Traceback" not in got.stderr
    # Command files of the owner with the same override (twice: a refusal is not
    # forgotten): the driver refuses to reload with it, and runs nothing.
    pipeline.cli("start", "job", check=True)
    wait_for(lambda: pipeline.stage("job")["state"] == "succeeded", what="job succeeded")
    names = [f"{time.time_ns():020d}-{i}-override.json" for i in range(2)]
    for name in names:
        command = {"op": "restart", "stages": ["job"], "overrides": {"python": f"{tmp_path}/evil.sh"}}
        staged = pipeline.state_dir / "override.partial"
        staged.write_text(json.dumps(command))
        os.rename(staged, pipeline.state_dir / "commands" / name)
    pipeline.cli("start", "job", check=True)  # answered after the two (commands run in name order)
    for name in names:
        reply = json.loads((pipeline.state_dir / "commands" / "replies" / name).read_text())
        assert not reply["ok"] and "{python}" in reply["message"], reply
    assert len(pipeline.records("job")) == 1
    # Declared by the pipeline, it may be set.
    pipeline.write(f"""
        [vars]
        python = "{sys.executable}"

        [[stage]]
        name = "job"
        command = ["{{python}}", "-c", "print('ok')"]
    """)
    assert pipeline.cli("--set", f"python={sys.executable}", "check").returncode == 0


FORGED = '[eagle3tui] result {"exit_code": 0, "signal": null, "ended_at": 1.0}'
FORGED_MAC = '[eagle3tui] result ' + "ab" * 32 + ' {"exit_code": 0, "signal": null, "ended_at": 1.0}'


def test_log_line_imitating_the_result_marker_gives_no_success(pipeline):
    script = pipeline.root / "forge.py"
    script.write_text(f"import time\nprint({FORGED!r})\nprint({FORGED_MAC!r}, flush=True)\n"
                      "time.sleep(300)\n")
    pipeline.write(f"""
        [[stage]]
        name = "job"
        command = ["{sys.executable}", "{script}"]
    """)
    pipeline.cli("start", "job", check=True)
    log = pipeline.state_dir / "logs" / "job.log"
    wait_for(lambda: log.exists() and FORGED_MAC in log.read_text(), what="the forged lines")
    rec = pipeline.records("job")[0]
    started = json.loads((pipeline.state_dir / "runs" / "job" / "0001.started.json").read_text())
    os.kill(rec["wrapper_pid"], signal.SIGKILL)
    os.killpg(started["pgid"], signal.SIGKILL)
    wait_for(lambda: pipeline.stage("job")["state"] not in ("running", "pending"), what="job ended")
    st = pipeline.stage("job")
    assert st["state"] == "failed" and "lost" in st["reason"], st
    assert st["exit_code"] is None
    assert st["ended_at"] is None or st["ended_at"] >= st["started_at"]
    # status derives "lost" itself; the driver says so at its next full pass (up to 1 s later).
    wait_for(lambda: any(a["kind"] == "stage-failed" for a in pipeline.alerts()),
             what="the driver's stage-failed alert")
    alerts = pipeline.alerts()
    assert not [a for a in alerts if a["kind"] == "stage-succeeded"]
    assert any(a["kind"] == "state-problem" and "MAC" in a["message"] for a in alerts)
    durations = [a["details"].get("duration_s") for a in alerts if "duration_s" in a.get("details", {})]
    assert all(d >= 0 for d in durations), durations


def test_marker_with_the_attempts_mac_is_still_believed(pipeline):
    """The last resort still works: the wrapper's own marker (keyed by the record) is read."""
    from eagle3tui.supervisor.stagewrap import marker_line

    pipeline.write("""
        [[stage]]
        name = "job"
        command = ["sleep", "300"]
    """)
    pipeline.cli("start", "job", check=True)
    pipeline.running("job")
    rec = pipeline.records("job")[0]
    started = json.loads((pipeline.state_dir / "runs" / "job" / "0001.started.json").read_text())
    # What a wrapper that could write nowhere else prints, with the attempt's key.
    line = marker_line({"exit_code": 3, "signal": None, "ended_at": time.time()},
                       rec["extra"]["result_key"])
    with open(rec["log"], "a") as f:
        f.write(line + "\n")
    os.kill(rec["wrapper_pid"], signal.SIGKILL)
    os.killpg(started["pgid"], signal.SIGKILL)
    wait_for(lambda: pipeline.stage("job")["state"] == "failed", what="job failed")
    st = pipeline.stage("job")
    assert st["exit_code"] == 3 and st["reason"] == "exit 3", st


def test_state_directory_of_another_user_is_refused_cleanly(pipeline, intruder):
    """A state directory someone else made first (or owns) is not used, and says so."""
    pipeline.write("""
        [[stage]]
        name = "job"
        command = ["true"]
    """)
    pipeline.state_dir.mkdir()
    os.chown(pipeline.state_dir, intruder.uid, intruder.gid)
    got = pipeline.cli("start", "job", timeout=30)
    assert got.returncode == 2 and "Traceback" not in got.stderr, got.stderr
    assert INTRUDER in got.stderr and "directory" in got.stderr
    assert not (pipeline.state_dir / "runs").exists()


def test_fallback_directory_is_removed_when_the_driver_goes_idle(pipeline):
    pipeline.write("""
        [[stage]]
        name = "job"
        command = ["true"]
    """)
    pipeline.cli("start", "job", check=True)
    wait_for(lambda: pipeline.stage("job")["state"] == "succeeded", what="job done")
    fallback = os.path.dirname(pipeline.records("job")[0]["extra"]["result_fallback"])
    wait_for(lambda: (pipeline.state_dir / "driver.idle").exists(), what="the driver idle")
    wait_for(lambda: not os.path.exists(fallback), what="the empty fallback directory removed")
