"""supervisor/slurm.py without a scheduler: options, argv, and parsers fed with
what a real Slurm 22.05 printed (tests/fixtures/slurm/, made by its capture.py)."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest

from eagle3tui.errors import ConfigError
from eagle3tui.supervisor import slurm
from eagle3tui.supervisor.slurm import SlurmOptions

FIX = Path(__file__).resolve().parent / "fixtures" / "slurm"


def fixture(name: str) -> dict:
    return json.loads((FIX / f"{name}.json").read_text())


def local(text: str) -> float:
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").timestamp()


# ------------------------------------------------------------------ options ----

def opts(**table) -> SlurmOptions:
    return SlurmOptions.from_table(table, path="pipeline.toml", key="stages.train.slurm")


def test_options_become_sbatch_flags_in_order():
    o = opts(partition="gpu", account="proj1", nodes=2, gpus=8, time_limit="1-12:00:00",
             extra_args=["--mem=64G", "--constraint", "a100"])
    assert o.sbatch_options() == ["--partition=gpu", "--account=proj1", "--nodes=2", "--gres=gpu:8",
                                  "--time=1-12:00:00", "--mem=64G", "--constraint", "a100"]
    assert o.time_limit_seconds == 36 * 3600
    assert opts(gres="gpu:h100:4").sbatch_options() == ["--nodes=1", "--gres=gpu:h100:4"]
    assert opts().sbatch_options() == ["--nodes=1"]


@pytest.mark.parametrize("text, seconds", [
    ("90", 5400), ("0:05", 5), ("1:30", 90), ("4:00:00", 14400), ("2-0", 172800),
    ("1-2:30", 95400), ("1-02:03:04", 93784), ("UNLIMITED", None), ("infinite", None),
])
def test_time_limit_formats_of_sbatch(text, seconds):
    assert slurm.parse_time_limit(text) == seconds


def test_time_limit_rounds_up_to_minutes_as_slurm_does():
    # Measured: --time=0:05 shows TimeLimit=00:01:00 in scontrol.
    assert opts(time_limit="0:05").time_limit_seconds == 60
    assert opts(time_limit=30).time_limit == "30"


@pytest.mark.parametrize("table, key, words", [
    ({"partiton": "gpu"}, "stages.train.slurm.partiton", ["unknown Slurm option", "extra_args"]),
    ({"partition": "gpu nodes"}, "stages.train.slurm.partition", ["not a Slurm partition name"]),
    ({"nodes": 0}, "stages.train.slurm.nodes", ["not a node count", "nodes = 2"]),
    ({"nodes": True}, "stages.train.slurm.nodes", ["not a node count"]),
    ({"gpus": "8"}, "stages.train.slurm.gpus", ["not a GPU count"]),
    ({"gpus": 2, "gres": "gpu:2"}, "stages.train.slurm.gres", ["both gpus and gres", "keep one"]),
    ({"gres": "gpu h100"}, "stages.train.slurm.gres", ["not a gres request"]),
    ({"time_limit": "4h"}, "stages.train.slurm.time_limit", ["not a Slurm time", "D-HH:MM:SS"]),
    ({"time_limit": "0"}, "stages.train.slurm.time_limit", ["ends the job at once"]),
    ({"extra_args": "--mem=4G"}, "stages.train.slurm.extra_args", ["argv list"]),
    ({"extra_args": ["--mem=4G", "--output=x.log"]}, "stages.train.slurm.extra_args[1]",
     ["sets --output itself", "remove '--output=x.log'"]),
    ({"extra_args": ["-o", "x.log"]}, "stages.train.slurm.extra_args[0]", ["sets -o itself"]),
    ({"extra_args": ["-Jname"]}, "stages.train.slurm.extra_args[0]", ["sets -J itself"]),
    ({"extra_args": ["--requeue"]}, "stages.train.slurm.extra_args[0]", ["retries"]),
    ({"extra_args": ["mem=4G"]}, "stages.train.slurm.extra_args[0]", ["not an sbatch option"]),
])
def test_bad_options_name_the_key_and_the_fix(table, key, words):
    with pytest.raises(ConfigError) as e:
        opts(**table)
    assert e.value.key == key and e.value.path == "pipeline.toml" and e.value.fix
    for w in words:
        assert w in str(e.value)


# --------------------------------------------------------------- submission ----

def test_submission_keeps_the_command_out_of_the_script(tmp_path):
    nasty = ["python3", "-c", "print(1)", "a b", "$HOME", "`id`", "it's", "new\nline", ";rm -rf /", ""]
    sub = slurm.build_submission(
        opts(partition="debug", gpus=1), job_name="e3t-train-0001", stage_argv=nasty,
        wrapper_argv=["/usr/bin/python3", "-I", "/x/stagewrap.py", "--record", "/s/0001", "--"],
        log_path="/s/train.log", workdir="/w", script_path=str(tmp_path / "b.sh"))
    assert sub.script == slurm.BATCH_SCRIPT
    for arg in nasty[1:]:
        if arg:
            assert arg not in sub.script
    i = sub.argv.index(str(tmp_path / "b.sh"))
    assert sub.argv[:i] == ["sbatch", "--parsable", "--job-name=e3t-train-0001", "--output=/s/train.log",
                            "--error=/s/train.log", "--open-mode=append", "--chdir=/w", "--no-requeue",
                            "--partition=debug", "--nodes=1", "--gres=gpu:1"]
    assert sub.argv[i + 1:] == ["/usr/bin/python3", "-I", "/x/stagewrap.py", "--record", "/s/0001", "--",
                                *nasty]


def test_batch_script_execs_its_arguments_verbatim(tmp_path):
    """The batch script run by a real shell gives the program exactly the argv
    (sbatch passes script arguments the same way: see test_slurm_scheduler)."""
    script = tmp_path / "b.sh"
    script.write_text(slurm.BATCH_SCRIPT)
    script.chmod(0o755)
    args = ["a b", "$HOME", "`id`", "it's", "new\nline", '"q"', "*", ";rm -rf /", ""]
    out = subprocess.run([str(script), sys.executable, "-c", "import sys,json;print(json.dumps(sys.argv[1:]))",
                          *args], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert json.loads(out.stdout) == args


def test_submission_rejects_empty_command_and_spaced_name(tmp_path):
    with pytest.raises(ValueError):
        slurm.build_submission(opts(), job_name="x", stage_argv=[], wrapper_argv=[], log_path="l",
                               workdir="w", script_path=str(tmp_path / "s"))
    with pytest.raises(ValueError):
        slurm.build_submission(opts(), job_name="a b", stage_argv=["true"], wrapper_argv=[], log_path="l",
                               workdir="w", script_path=str(tmp_path / "s"))


def test_sbatch_parsable_output():
    assert slurm.parse_sbatch_parsable(fixture("sbatch_parsable")["stdout"]) == 5
    assert slurm.parse_sbatch_parsable("42;cluster2\n") == 42  # multi-cluster form, sbatch(1)
    with pytest.raises(slurm.SlurmError):
        slurm.parse_sbatch_parsable(fixture("sbatch_bad_partition")["stdout"])


# ----------------------------------------------------------------- parsers ----

def test_squeue_pending_then_estimate():
    st = slurm.parse_squeue(fixture("pending_resources.squeue")["stdout"])[5]
    assert (st.state, st.reason, st.start, st.pending) == ("PENDING", "Resources", None, True)
    assert st.describe() == "pending (Resources)"
    est = slurm.parse_squeue(fixture("pending_estimate.squeue")["stdout"])[5]
    assert est.start == local("2026-11-30T16:51:26")
    # The estimate is when the GPU holder's time limit runs out.
    holder = slurm.parse_squeue(fixture("running_gpu2.squeue")["stdout"])[4]
    assert holder.state == "RUNNING" and holder.end == est.start and holder.active


def test_squeue_several_jobs_in_one_call():
    jobs = slurm.parse_squeue(fixture("squeue_two_jobs")["stdout"])
    assert {j: s.state for j, s in jobs.items()} == {5: "PENDING", 4: "RUNNING"}


@pytest.mark.parametrize("name, state, reason, code, sig, text", [
    ("completed", "COMPLETED", None, 0, None, "completed"),
    ("exit3", "FAILED", "NonZeroExitCode", 3, None, "failed: exit code 3"),
    ("timeout", "TIMEOUT", "TimeLimit", None, 9, "killed by Slurm at its time limit"),
    ("cancelled", "CANCELLED", None, None, 9, "cancelled (scancel)"),
    ("preempted", "PREEMPTED", None, None, 15, "preempted by a higher-priority job"),
    ("node_fail", "NODE_FAIL", "NodeDown", None, 15, "its node failed"),
    ("oom_batch", "OUT_OF_MEMORY", "OutOfMemory", None, slurm.OOM_SIGNAL,
     "killed by the out-of-memory handler (over its --mem)"),
    ("oom_srun", "COMPLETED", None, 0, None, "completed"),  # the script caught the step's OOM
])
def test_scontrol_finished_jobs(name, state, reason, code, sig, text):
    st = slurm.parse_scontrol_job(fixture(f"{name}.scontrol")["stdout"])
    assert st is not None and st.source == "scontrol"
    assert (st.state, st.reason, st.exit_code, st.signal) == (state, reason, code, sig)
    assert st.terminal and not st.pending and st.describe() == text
    assert st.nodes == "vm" and st.start is not None and st.end is not None and st.end >= st.start
    sq = slurm.parse_squeue(fixture(f"{name}.squeue")["stdout"])[st.job_id]
    assert (sq.state, sq.reason, sq.start, sq.end) == (state, reason, st.start, st.end)


def test_scontrol_running_and_pending():
    run = slurm.parse_scontrol_job(fixture("running.scontrol")["stdout"])
    assert run.state == "RUNNING" and run.end is None and run.exit_code == 0 and run.active
    pend = slurm.parse_scontrol_job(fixture("pending_estimate.scontrol")["stdout"])
    assert pend.state == "PENDING" and pend.reason == "Resources" and pend.nodes is None
    assert pend.start == local("2026-11-30T16:51:26")
    assert slurm.parse_scontrol_job(fixture("pending_resources.scontrol")["stdout"]).start is None


def test_scontrol_gpu_indices_from_details():
    st = slurm.parse_scontrol_job(fixture("running_gpu2.scontrol")["stdout"])
    assert st.gpu_indices == (0, 1)
    assert slurm.parse_scontrol_job(fixture("completed.scontrol")["stdout"]).gpu_indices is None


def test_key_values_keep_spaces_inside_values():
    kv = slurm.parse_key_values(
        "JobId=7 JobState=PENDING Reason=(ReqNodeNotAvail, UNAVAILABLE_NODES:n1) Dependency=(null) "
        "Command=/a dir/run.sh WorkDir=/a dir")
    assert kv["Reason"] == "(ReqNodeNotAvail, UNAVAILABLE_NODES:n1)"
    assert kv["Command"] == "/a dir/run.sh" and kv["WorkDir"] == "/a dir"


@pytest.mark.parametrize("name, state, code, sig", [
    ("completed", "COMPLETED", 0, None),
    ("exit3", "FAILED", 3, None),
    ("oom_batch", "OUT_OF_MEMORY", None, slurm.OOM_SIGNAL),
    ("timeout", "TIMEOUT", 0, None),       # the completion log drops the signal
    ("cancelled", "CANCELLED", 0, None),
    ("preempted", "PREEMPTED", 0, None),
    ("node_fail", "NODE_FAIL", 0, None),
])
def test_sacct_completion_log(name, state, code, sig):
    f = fixture(f"{name}.sacct")
    jid = int(f["stdout"].split("|", 1)[0])
    st = slurm.parse_sacct(f["stdout"], jid)
    assert (st.state, st.exit_code, st.signal, st.source) == (state, code, sig, "sacct")
    assert st.start is not None and st.nodes == "vm"


def test_sacct_slurmdbd_rows():
    # slurmdbd's sacct lists steps too and says who cancelled (sacct(1), State).
    out = ("77|CANCELLED by 1000|0:15|0:0|2026-01-02T03:04:05|2026-01-02T03:05:05|gpu[01-02]\n"
           "77.batch|CANCELLED|0:15|0:0|2026-01-02T03:04:05|2026-01-02T03:05:05|gpu01\n"
           "77.extern|COMPLETED|0:0|0:0|2026-01-02T03:04:05|2026-01-02T03:05:05|gpu[01-02]\n")
    st = slurm.parse_sacct(out, 77)
    assert (st.state, st.signal, st.nodes) == ("CANCELLED", 15, "gpu[01-02]")
    assert slurm.parse_sacct(out, 78) is None
    assert slurm.parse_sacct(fixture("sacct_unknown")["stdout"], 999999) is None


@pytest.mark.parametrize("text, expected", [
    ("2026-11-30T16:51:26", local("2026-11-30T16:51:26")),
    ("N/A", None), ("Unknown", None), ("NONE", None), ("", None), (None, None), ("garbage", None),
])
def test_slurm_times(text, expected):
    assert slurm.parse_slurm_time(text) == expected


# ------------------------------------------------- running commands (fakes) ----

def replay(name: str):
    """A runner that answers with a captured command's real rc/stdout/stderr."""
    f = fixture(name)

    def run(argv, **kw):
        return subprocess.CompletedProcess(argv, f["rc"], f["stdout"], f["stderr"])
    return run


def test_controller_down_is_unavailable_not_an_answer():
    with pytest.raises(slurm.SlurmUnavailable) as e:
        slurm.query_jobs([1], runner=replay("controller_down.squeue"))
    assert "Unable to contact slurm controller" in str(e.value) and "scontrol ping" in str(e.value)
    sub = slurm.build_submission(opts(), job_name="x", stage_argv=["true"], wrapper_argv=[],
                                 log_path="l", workdir="w", script_path="/dev/null")
    with pytest.raises(slurm.SlurmUnavailable):
        slurm.submit(sub, runner=replay("controller_down.sbatch"))


def test_refused_submission_says_why(tmp_path):
    sub = slurm.build_submission(opts(partition="nope"), job_name="x", stage_argv=["true"], wrapper_argv=[],
                                 log_path="l", workdir="w", script_path=str(tmp_path / "s.sh"))
    with pytest.raises(slurm.SlurmError) as e:
        slurm.submit(sub, runner=replay("sbatch_bad_partition"))
    assert "Invalid partition name specified" in str(e.value) and "partition" in e.value.fix
    assert (tmp_path / "s.sh").read_text() == slurm.BATCH_SCRIPT


def test_unknown_jobs_are_absent_not_errors():
    assert slurm.query_jobs([999999], runner=replay("squeue_unknown")) == {}
    assert slurm.cancel(10, term_only=True, runner=replay("scancel_term_finished")) is False
    assert slurm.cancel(10, term_only=False, runner=replay("scancel_finished")) is True


def test_missing_client_and_hung_client(tmp_path):
    with pytest.raises(slurm.SlurmUnavailable) as e:
        slurm.run_slurm([str(tmp_path / "no-squeue"), "-h"])
    assert "command not found" in str(e.value) and "slurm-client" in str(e.value)
    hang = tmp_path / "squeue"
    hang.write_text("#!/bin/sh\nexec sleep 30\n")
    hang.chmod(0o755)
    with pytest.raises(slurm.SlurmUnavailable) as e:
        slurm.run_slurm([str(hang)], timeout=0.5)
    assert "did not answer within" in str(e.value)


def test_job_state_falls_back_to_sacct_after_min_job_age():
    calls = []

    def run(argv, **kw):
        calls.append(argv[0])
        f = fixture("scontrol_unknown" if argv[0] == "scontrol" else "exit3.sacct")
        return subprocess.CompletedProcess(argv, f["rc"], f["stdout"], f["stderr"])
    st = slurm.job_state(7, sacct_completion=True, runner=run)
    assert calls == ["scontrol", "sacct"] and st.state == "FAILED" and st.exit_code == 3

    def no_storage(argv, **kw):
        f = fixture("scontrol_unknown" if argv[0] == "scontrol" else "sacct_no_storage")
        return subprocess.CompletedProcess(argv, f["rc"], f["stdout"], f["stderr"])
    assert slurm.job_state(7, runner=no_storage) is None
