"""supervisor/slurm.py against the real local Slurm that `.ci/slurm-up` starts.

These tests need munged, slurmctld and slurmd running (`bash .ci/slurm-up` as
root). Without them they FAIL, never skip: `.ci/run` must start Slurm before
pytest. They are marked `slurm` so that a run can select or order them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import wait_for
from eagle3tui.supervisor import slurm
from eagle3tui.supervisor.slurm import SlurmOptions

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parent.parent
STAGEWRAP = ROOT / "eagle3tui" / "supervisor" / "stagewrap.py"


@pytest.fixture(scope="module", autouse=True)
def slurm_cluster():
    """Fail (not skip) with the fix when the test cluster is not up."""
    try:
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30)
        node = subprocess.run(["sinfo", "--noheader", "--Node", "--format=%T"], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.fail(f"Slurm is not usable here ({e}); run `bash .ci/slurm-up` as root first "
                    "(.ci/run must start it before the tests)")
    if "is UP" not in ping.stdout or not node.stdout.strip() or node.stdout.split()[0].startswith(("down", "drain")):
        pytest.fail(f"the local Slurm is not up (scontrol ping: {ping.stdout.strip() or ping.stderr.strip()}; "
                    f"node: {node.stdout.strip()}); run `bash .ci/slurm-up` as root first")
    yield


class Stage:
    """One stage attempt submitted the way the driver will: under the stage
    wrapper, output appended to the stage log, result file next to it."""

    def __init__(self, tmp: Path, name: str, argv: list[str], wrapped: bool = True, **options) -> None:
        self.tmp, self.name = tmp, name
        self.log = tmp / f"{name}.log"
        self.prefix = tmp / f"{name}-0001"
        wrapper = [sys.executable, "-I", str(STAGEWRAP), "--record", str(self.prefix), "--"] if wrapped else []
        opts = SlurmOptions.from_table(options, path="test", key=f"stages.{name}.slurm")
        sub = slurm.build_submission(opts, job_name=f"e3t-test-{name}", stage_argv=argv, wrapper_argv=wrapper,
                                     log_path=str(self.log), workdir=str(tmp), script_path=str(tmp / f"{name}.sh"))
        self.job = slurm.submit(sub, env={**os.environ, "E3T_TEST_STAGE": name})

    def state(self) -> slurm.SlurmJobState:
        st = slurm.job_state(self.job, sacct_completion=True)
        assert st is not None, f"Slurm forgot job {self.job}"
        return st

    def wait_state(self, *states: str, timeout: float = 30.0) -> slurm.SlurmJobState:
        return wait_for(lambda: (lambda s: s if s.state in states else None)(self.state()),
                        timeout=timeout, interval=0.3, what=f"job {self.job} ({self.name}) in {states}")

    def wait_log(self, text: str, timeout: float = 30.0) -> str:
        return wait_for(lambda: (lambda t: t if text in t else None)(self.text()), timeout=timeout,
                        interval=0.2, what=f"{text!r} in {self.log}")

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def result(self) -> dict | None:
        p = Path(str(self.prefix) + ".result.json")
        return json.loads(p.read_text()) if p.exists() else None

    def started(self) -> dict:
        return json.loads(Path(str(self.prefix) + ".started.json").read_text())

    def cleanup(self) -> None:
        subprocess.run(["scancel", str(self.job)], capture_output=True, timeout=30)


@pytest.fixture
def stages(tmp_path):
    made: list[Stage] = []

    def make(name: str, argv: list[str], **kw) -> Stage:
        s = Stage(tmp_path, name, argv, **kw)
        made.append(s)
        return s
    yield make
    for s in made:
        s.cleanup()


PY = sys.executable
TRAP_TERM = ("import signal, sys, time\n"
             "def on_term(*_):\n"
             "    print('stage got SIGTERM', flush=True)\n"
             "    if sys.argv[1] == 'exit': sys.exit(143)\n"
             "signal.signal(signal.SIGTERM, on_term)\n"
             "print('stage ready', flush=True)\n"
             "while True: time.sleep(0.2)\n")


def test_submit_and_complete_with_exact_argv(stages):
    nasty = ["a b", "$HOME", "`id`", "it's", "new\nline", '"q"', "*", ";rm -rf /", ""]
    s = stages("hello", [PY, "-c", "import sys, json, os; print('argv', json.dumps(sys.argv[1:])); "
                         "print('env', os.environ['E3T_TEST_STAGE'])", *nasty])
    st = s.wait_state("COMPLETED")
    assert (st.exit_code, st.signal, st.nodes) == (0, None, "vm")
    text = s.wait_log("env hello")
    assert json.loads(text.split("argv ", 1)[1].splitlines()[0]) == nasty
    assert s.result()["exit_code"] == 0 and s.started()["pid"] > 0


def test_exit_code_3(stages):
    bare = stages("bare", [PY, "-c", "import sys; print('failing'); sys.exit(3)"], wrapped=False)
    wrapped = stages("wrapped", [PY, "-c", "import sys; print('failing'); sys.exit(3)"])
    st = bare.wait_state("FAILED")
    assert (st.exit_code, st.signal, st.reason, st.describe()) == (3, None, "NonZeroExitCode", "failed: exit code 3")
    # After MinJobAge only the accounting knows: the same answer from sacct -c.
    acct = slurm.parse_sacct(subprocess.run(slurm.sacct_argv(bare.job, completion=True), capture_output=True,
                                            text=True, timeout=30).stdout, bare.job)
    assert (acct.state, acct.exit_code) == ("FAILED", 3)
    wrapped.wait_state("COMPLETED", "FAILED")
    assert wrapped.result()["exit_code"] == 3 and "failing" in wrapped.text()


def test_time_limit_kill_reaches_the_stage_through_the_wrapper(stages):
    s = stages("slow", [PY, "-c", TRAP_TERM, "exit"], time_limit="1")
    s.wait_log("stage ready")
    # Slurm checks limits every 30 s: TERM comes 60-90 s after the start.
    st = s.wait_state("TIMEOUT", timeout=150)
    assert st.reason == "TimeLimit" and st.describe() == "killed by Slurm at its time limit"
    text = s.wait_log("DUE TO TIME LIMIT ***")
    assert "stage got SIGTERM" in text
    assert s.result()["exit_code"] == 143


def test_stop_is_term_then_scancel(stages):
    s = stages("stubborn", [PY, "-c", TRAP_TERM, "ignore"])
    s.wait_log("stage ready")
    pid = s.started()["pid"]
    assert slurm.cancel(s.job, term_only=True) is True
    s.wait_log("stage got SIGTERM")
    assert s.state().state == "RUNNING"  # the stage chose to ignore it
    assert slurm.cancel(s.job, term_only=False) is True
    st = s.wait_state("CANCELLED", timeout=60)  # KillWait (10 s) after the TERM, then SIGKILL
    assert st.signal == 9 and st.describe() == "cancelled (scancel)"
    assert "CANCELLED AT" in s.text()
    # The job's cgroup took the stage with it although it runs in a session of its own,
    # and nobody wrote a result: the state comes from Slurm alone.
    wait_for(lambda: not os.path.exists(f"/proc/{pid}"), timeout=10, what=f"stage pid {pid} to be gone")
    assert s.result() is None
    assert slurm.cancel(s.job, term_only=True) is False  # a finished job: no error


def test_two_stages_on_different_gpus_and_a_third_waits(stages):
    show = [PY, "-c", "import os, time; print('gpus', os.environ.get('CUDA_VISIBLE_DEVICES'), "
            "os.environ.get('SLURM_JOB_GPUS'), flush=True); time.sleep(40)"]
    a = stages("gpu_a", show, gpus=1, time_limit="1")
    b = stages("gpu_b", show, gpus=1, time_limit="1")
    seen = {a.wait_log("gpus ").split("gpus ", 1)[1].split()[0], b.wait_log("gpus ").split("gpus ", 1)[1].split()[0]}
    assert seen == {"0", "1"}
    sa, sb = a.state(), b.state()
    assert {sa.gpu_indices, sb.gpu_indices} == {(0,), (1,)}
    c = stages("gpu_c", show, gpus=1, time_limit="1")
    st = c.wait_state("PENDING")
    wait_for(lambda: c.state().reason == "Resources", timeout=20, what="reason Resources")
    # The backfill pass (every 5 s on the test cluster) sets the expected start:
    # when the first of the two GPU holders reaches its time limit.
    est = wait_for(lambda: c.state().start, timeout=30, what="a start estimate")
    assert est == min(sa.end, sb.end)
    jobs = slurm.query_jobs([a.job, b.job, c.job])
    assert [jobs[j].state for j in (a.job, b.job, c.job)] == ["RUNNING", "RUNNING", "PENDING"]
    assert jobs[c.job].start == est and st.describe().startswith("pending")


def test_out_of_memory(stages):
    s = stages("hog", [PY, "-c", "b = [bytearray(20 << 20) for _ in range(100)]"], extra_args=["--mem=150M"])
    st = s.wait_state("OUT_OF_MEMORY", timeout=60)
    assert (st.reason, st.signal) == ("OutOfMemory", slurm.OOM_SIGNAL)
    assert "oom-kill event(s)" in s.wait_log("oom-kill")
    assert s.result()["signal"] == signal.SIGKILL


def test_preempted_by_the_urgent_partition(stages):
    low = stages("low", [PY, "-c", "import time; print('low runs', flush=True); time.sleep(120)"], gpus=2)
    low.wait_log("low runs")
    stages("urgent", ["true"], partition="urgent", gpus=1, wrapped=False)
    st = low.wait_state("PREEMPTED", timeout=60)
    assert st.describe() == "preempted by a higher-priority job"
    assert "DUE TO PREEMPTION ***" in low.wait_log("DUE TO PREEMPTION")


def test_unreachable_controller_is_unavailable_fast(tmp_path):
    conf = tmp_path / "slurm.conf"
    # A controller port nobody listens on; MessageTimeout=1 shortens the client's
    # retries (18 s with the default 10).
    conf.write_text("ClusterName=x\nSlurmctldHost=vm(127.0.0.1)\nSlurmctldPort=6999\nMessageTimeout=1\n"
                    "AuthType=auth/munge\nNodeName=vm CPUs=1\nPartitionName=p Nodes=vm\n")
    t0 = time.monotonic()
    with pytest.raises(slurm.SlurmUnavailable) as e:
        slurm.run_slurm(slurm.squeue_argv([1]), env={**os.environ, "SLURM_CONF": str(conf)})
    assert "Unable to contact slurm controller" in str(e.value)
    assert time.monotonic() - t0 < 10
