"""The kernel's OOM killer named as the cause of a stage's SIGKILL, from the kernel log.

The kernel-log lines are real ones (their shapes from the threads cited in REAL), with the
pid of the test's real stage process put in; the stage really dies of SIGKILL, and the
driver, reading the log as it reads Xid lines (EAGLE3TUI_KERNEL_LOG), must say that the
OOM killer did it, with the size, and retry it under ``retry = { on = ["oom"] }``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest
from conftest import driver_in_thread, wait_for

from eagle3tui.telemetry.oom_kill import OomKillWatch, parse_oom_kill
from eagle3tui.telemetry.xid import SOURCE_ENV

# (source, line, pid, comm, anon-rss kB, cgroup)
REAL = [
    ("https://github.com/docker/for-linux/issues/1001",
     "May 15 23:09:30 ubuntu-s-1vcpu-2gb-ams3-01 kernel: [  518.050606] Out of memory: Killed process 15784 "
     "(python3) total-vm:11964kB, anon-rss:4288kB, file-rss:3028kB, shmem-rss:0kB", 15784, "python3", 4288, False),
    ("https://github.com/0jc1/py-autovod/issues/7",
     "[Sun Mar 30 08:24:00 2025] Out of memory: Killed process 7899 (python) total-vm:26,184,840kB, "
     "anon-rss:153,700,88kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:38964kB oom_score_adj:0",
     7899, "python", 15370088, False),
    ("https://github.com/0jc1/py-autovod/issues/7",
     "[Sun Mar 30 08:24:00 2025] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,"
     "global_oom,task_memcg=/init.scope,task=python,pid=7899,uid=0", 7899, "python", None, False),
    ("https://github.com/openbmc/openbmc/issues/1887",
     "[ 4018.450000] Killed process 935 (python) total-vm:113656kB, anon-rss:102104kB, file-rss:0kB, shmem-rss:0kB",
     935, "python", 102104, False),
]
# Not kills: the reaper freeing a killed process's memory, the task table, a program's own words.
NOT_KILLS = [
    "[ 4022.980000] oom_reaper: reaped process 935 (python), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
    "Apr 25 19:05:01 netlogo01 kernel: [ 7097.005215] [    489]     0   489    16956     1002   110592        0 "
    "         -250 systemd-journal",
    "worker says: Killed process 12 (python) was restarted",
]


@pytest.mark.parametrize("url,line,pid,comm,anon,cgroup", REAL)
def test_real_oom_killer_lines_parse(url: str, line: str, pid: int, comm: str, anon: int | None, cgroup: bool) -> None:
    kill = parse_oom_kill(line)
    assert kill is not None and (kill.pid, kill.comm, kill.cgroup) == (pid, comm, cgroup), url
    assert kill.kb.get("anon-rss") == anon


@pytest.mark.parametrize("line", NOT_KILLS)
def test_look_alikes_are_no_kill(line: str) -> None:
    assert parse_oom_kill(line) is None


def test_both_lines_of_one_kill_are_one_kill_of_the_stage() -> None:
    w = OomKillWatch()
    w.track({"train": os.getpid()})
    assert w.feed(REAL[2][1].replace("pid=7899", f"pid={os.getpid()}")) is not None
    kill = w.feed(REAL[1][1].replace("process 7899", f"process {os.getpid()}"))
    assert kill is not None and kill.stage == "train" and kill.root
    (only,) = w.take("train")
    assert only.rss_kb() == 15370088 and "rss 14.7 GiB" in only.describe()
    assert w.feed(REAL[1][1]) is None  # nobody's process: not attributed


def _kernel_kills(kern: Path, pid: int, comm: str) -> None:
    """The two lines the kernel writes for one kill (0jc1/py-autovod#7's), naming ``pid``."""
    with open(kern, "a") as f:
        f.write(REAL[2][1].replace("task=python,pid=7899", f"task={comm},pid={pid}") + "\n")
        f.write(REAL[1][1].replace("process 7899 (python)", f"process {pid} ({comm})") + "\n")


def _stage(pipeline, tmp_path: Path, body: str) -> None:
    (tmp_path / "train.py").write_text(body)
    pipeline.write(f"""
        [[stage]]
        name = "train"
        command = ["{sys.executable}", "train.py"]
        retry = {{ max_attempts = 2, backoff = "0s", on = ["oom"] }}
        """)


def test_the_stage_killed_by_the_oom_killer_says_so_and_is_retried(pipeline, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    kern = tmp_path / "kern.log"
    kern.write_text("")
    monkeypatch.setenv(SOURCE_ENV, str(kern))
    _stage(pipeline, tmp_path, "import os, sys, time\nprint('step 1/10 loss=2.0', flush=True)\n"
                               "if os.environ['EAGLE3TUI_ATTEMPT'] != '1':\n    sys.exit(0)\n"
                               "time.sleep(120)\n")
    with driver_in_thread(pipeline) as drv:
        pid = wait_for(lambda: pipeline.stage("train")["pid"], what="train's pid")
        wait_for(lambda: pid in drv.xids.ooms.pids.get("train", ()), what="the driver to see train's tree")
        _kernel_kills(kern, pid, "python3")
        os.kill(pid, signal.SIGKILL)
        failed = wait_for(lambda: [a for a in pipeline.alerts() if a["kind"] == "stage-failed"], what="the failure")[0]
        msg = failed["message"]
        assert msg.startswith("failed: killed by the kernel's OOM killer (host memory), rss 14.7 GiB "
                              f"(pid {pid}, python3)"), msg
        assert failed["details"]["oom_kill"][0]["pid"] == pid
        wait_for(lambda: [a for a in pipeline.alerts() if a["kind"] == "retry-scheduled"], what="the retry on oom")
        wait_for(lambda: pipeline.stage("train")["state"] == "succeeded", what="attempt 2")


def test_a_child_killed_by_the_oom_killer_is_the_cause_of_its_parents_failure(pipeline, tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    kern = tmp_path / "kern.log"
    kern.write_text("")
    monkeypatch.setenv(SOURCE_ENV, str(kern))
    kid_file = tmp_path / "kid.json"
    _stage(pipeline, tmp_path,
           "import json, os, subprocess, sys\n"
           "if os.environ['EAGLE3TUI_ATTEMPT'] != '1':\n    sys.exit(0)\n"
           "kid = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
           f"open({str(kid_file)!r}, 'w').write(json.dumps(kid.pid))\n"
           "rc = kid.wait()\n"
           "sys.exit(f'RuntimeError: DataLoader worker (pid {kid.pid}) exited unexpectedly with exit code {rc}')\n")
    with driver_in_thread(pipeline) as drv:
        wait_for(kid_file.exists, what="the child")
        kid = json.loads(wait_for(kid_file.read_text, what="its pid"))
        wait_for(lambda: kid in drv.xids.ooms.pids.get("train", ()), what="the driver to see the child")
        _kernel_kills(kern, kid, "pt_data_worker")
        os.kill(kid, signal.SIGKILL)
        failed = wait_for(lambda: [a for a in pipeline.alerts() if a["kind"] == "stage-failed"], what="the failure")[0]
        msg = failed["message"]
        assert msg.startswith("failed: killed by the kernel's OOM killer (host memory), rss 14.7 GiB "
                              f"(pid {kid}, pt_data_worker, a process of the stage)"), msg
        assert "DataLoader worker" in msg  # the log's own account follows
        wait_for(lambda: [a for a in pipeline.alerts() if a["kind"] == "retry-scheduled"], what="the retry on oom")


def test_a_sigkill_without_the_oom_killer_is_not_called_oom(pipeline, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    kern = tmp_path / "kern.log"
    kern.write_text("")
    monkeypatch.setenv(SOURCE_ENV, str(kern))
    _stage(pipeline, tmp_path, "import time\nprint('step 1/10', flush=True)\ntime.sleep(120)\n")
    with driver_in_thread(pipeline) as drv:
        pid = wait_for(lambda: pipeline.stage("train")["pid"], what="train's pid")
        wait_for(lambda: pid in drv.xids.ooms.pids.get("train", ()), what="the driver to see train's tree")
        _kernel_kills(kern, pid + 100000, "python3")  # another process's kill
        os.kill(pid, signal.SIGKILL)
        failed = wait_for(lambda: [a for a in pipeline.alerts() if a["kind"] == "stage-failed"], what="the failure")[0]
        assert "killed by the kernel's OOM killer" not in failed["message"], failed
        assert "oom_kill" not in failed["details"]
        assert not [a for a in pipeline.alerts() if a["kind"] == "retry-scheduled"]
