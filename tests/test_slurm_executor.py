"""Stages with ``executor = "slurm"``, driven through the real CLI and driver
against the real local Slurm that `.ci/slurm-up` starts (they FAIL without it).

The long test shares one pipeline run between the cases that wait on Slurm
(a time limit costs 60-90 s), so the whole file stays near two minutes.
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

from conftest import Pipeline, wait_for
from eagle3tui.config import load_config
from eagle3tui.errors import ConfigError
from eagle3tui.supervisor import slurm
from eagle3tui.supervisor.executors import SlurmExecutor, storage_warnings
from eagle3tui.supervisor.records import RunStore
from eagle3tui.supervisor.state import StageState, derive_statuses

from test_slurm_scheduler import TRAP_TERM, slurm_cluster  # noqa: F401  (fails without a cluster)

pytestmark = pytest.mark.slurm

PY = sys.executable
SHOW_GPUS = ("import os, time; print('gpus', os.environ.get('CUDA_VISIBLE_DEVICES'), flush=True); "
             "time.sleep(float(os.environ['HOLD_S']))")


def job_ids(p: Pipeline) -> list[int]:
    ids = []
    runs = p.state_dir / "runs"
    for rec in runs.glob("*/[0-9][0-9][0-9][0-9].json") if runs.exists() else []:
        jid = (json.loads(rec.read_text()).get("extra", {}).get("slurm") or {}).get("job_id")
        if jid:
            ids.append(int(jid))
    return ids


@pytest.fixture
def slurm_pipeline(tmp_path, monkeypatch):
    monkeypatch.setenv("EAGLE3TUI_SLURM_POLL_S", "0.5")
    p = Pipeline(tmp_path)
    yield p
    p.kill_everything()
    ids = job_ids(p)
    if ids:
        subprocess.run(["scancel", *map(str, ids)], capture_output=True, timeout=30)


def stage_of(p: Pipeline, name: str) -> dict:
    return p.stage(name)


def test_slurm_options_are_validated_with_file_line_and_fix(tmp_path):
    cfg = tmp_path / "pipeline.toml"
    cfg.write_text('[[stage]]\nname = "train"\ncommand = ["true"]\nexecutor = "slurm"\ngpus = [0]\n'
                   '[stage.slurm]\npartition = "gpu"\ntime_limt = "1:00:00"\n'
                   'extra_args = ["--output=/tmp/x"]\n'
                   '[[stage]]\nname = "b"\ncommand = ["true"]\nexecutor = "slurmm"\n'
                   '[[stage]]\nname = "c"\ncommand = ["true"]\nslurm = { nodes = 2 }\n')
    with pytest.raises(ConfigError) as e:
        load_config(cfg)
    text = str(e.value)
    assert f"{cfg}:5, key 'stage[train].gpus'" in text and "[stage.slurm] gpus = 8" in text
    assert f"{cfg}:8, key 'stage[train].slurm.time_limt': unknown Slurm option" in text
    assert f"{cfg}:13, key 'stage[b].executor'" in text
    assert f"{cfg}:17, key 'stage[c].slurm'" in text and 'add executor = "slurm"' in text
    cfg.write_text('[[stage]]\nname = "train"\ncommand = ["true"]\nexecutor = "slurm"\n'
                   '[stage.slurm]\nextra_args = ["--output=/tmp/x"]\n')
    with pytest.raises(ConfigError) as e:
        load_config(cfg)
    assert f"{cfg}:6, key 'stage[train].slurm.extra_args[0]'" in str(e.value)
    assert "remove '--output=/tmp/x'" in str(e.value)


def test_check_warns_when_the_state_dir_is_not_shared(tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text(f"/dev/sda1 / ext4 rw 0 0\nserver:/export {tmp_path}/shared nfs4 rw 0 0\n")
    (tmp_path / "shared").mkdir()
    cfg = tmp_path / "pipeline.toml"
    cfg.write_text('[pipeline]\nstate_dir = "shared/.e3t"\n'
                   '[[stage]]\nname = "a"\ncommand = ["true"]\nexecutor = "slurm"\n'
                   f'log = "{tmp_path}/local/a.log"\n')
    warnings = storage_warnings(load_config(cfg), str(mounts))
    assert len(warnings) == 1 and "stage a's log" in warnings[0] and "local ext4" in warnings[0]
    assert "state directory" not in warnings[0]
    # And through the CLI, with this machine's real mount table.
    cfg.write_text('[[stage]]\nname = "a"\ncommand = ["true"]\nexecutor = "slurm"\n')
    p = Pipeline(tmp_path)
    out = p.cli("check")
    assert out.returncode == 0, out.stderr
    fs = subprocess.run(["stat", "-f", "-c", "%T", str(tmp_path)], capture_output=True, text=True).stdout
    if fs.strip() in ("ext2/ext3", "xfs", "tmpfs", "overlayfs", "btrfs"):
        assert "warning: the state directory" in out.stderr and "storage the compute nodes share" in out.stderr


def test_pipeline_on_slurm_end_to_end(slurm_pipeline):
    """Submit and complete, exit 3, time limit, stop via scancel, two stages on
    different gres GPUs with a third queued behind them (reason and expected
    start), a local stage after a Slurm one, and kill -9 of the driver while
    jobs are queued and running, then reattach."""
    p = slurm_pipeline
    p.write(f"""
        [pipeline]
        name = "on-slurm"
        stop_grace = "3s"

        [[stage]]
        name = "ok"
        command = ["{PY}", "-c", "import os, sys; print('ok on', os.environ['SLURMD_NODENAME'], os.environ['MY_VAR'], sys.argv[1:])", "a b", "$HOME"]
        env = {{ MY_VAR = "from-the-stage-env" }}
        executor = "slurm"
        [stage.slurm]
        time_limit = "5"

        [[stage]]
        name = "after_ok"
        command = ["{PY}", "-c", "print('local after slurm')"]
        depends_on = ["ok"]

        [[stage]]
        name = "fails"
        command = ["{PY}", "-c", "import sys; print('failing now'); sys.exit(3)"]
        executor = "slurm"

        [[stage]]
        name = "slow"
        command = ["{PY}", "-c", {json.dumps(TRAP_TERM)}, "exit"]
        executor = "slurm"
        [stage.slurm]
        time_limit = "1"

        [[stage]]
        name = "stubborn"
        command = ["{PY}", "-c", {json.dumps(TRAP_TERM)}, "ignore"]
        executor = "slurm"

        [[stage]]
        name = "gpu_a"
        command = ["{PY}", "-c", "{SHOW_GPUS}"]
        env = {{ HOLD_S = "25" }}
        executor = "slurm"
        [stage.slurm]
        gpus = 1
        time_limit = "1"

        [[stage]]
        name = "gpu_b"
        command = ["{PY}", "-c", "{SHOW_GPUS}"]
        env = {{ HOLD_S = "25" }}
        executor = "slurm"
        [stage.slurm]
        gpus = 1
        time_limit = "1"

        [[stage]]
        name = "gpu_both"
        command = ["{PY}", "-c", "{SHOW_GPUS}"]
        env = {{ HOLD_S = "1" }}
        depends_on = []
        executor = "slurm"
        [stage.slurm]
        gpus = 2
        time_limit = "1"
    """)
    # gpu_both must queue behind gpu_a and gpu_b: start those first.
    out = p.cli("start", "gpu_a", "gpu_b")
    assert out.returncode == 0, out.stderr
    wait_for(lambda: all(stage_of(p, n)["state"] == "running" for n in ("gpu_a", "gpu_b")), timeout=60,
             interval=0.3, what="gpu_a and gpu_b running")
    out = p.cli("start", "--all")
    assert out.returncode == 0, out.stderr

    def queued_with_estimate():
        st = stage_of(p, "gpu_both")
        return st if st["state"] == "queued" and "expected start" in st["reason"] else None
    try:
        st = wait_for(queued_with_estimate, timeout=90, interval=0.3, what="gpu_both queued with an ETA")
    except AssertionError:
        raise AssertionError(f"gpu_both: {stage_of(p, 'gpu_both')}\nsqueue: "
                             + subprocess.run(["squeue", "-o", "%i %j %T %r %S"], capture_output=True,
                                              text=True).stdout) from None
    assert "(Resources)" in st["reason"] or "(Priority)" in st["reason"], st["reason"]
    wait_for(lambda: stage_of(p, "stubborn")["state"] == "running"
             and "stage ready" in (p.state_dir / "logs" / "stubborn.log").read_text(),
             timeout=60, interval=0.3, what="stubborn running")
    wait_for(lambda: stage_of(p, "slow")["state"] == "running", timeout=60, interval=0.3, what="slow running")

    # kill -9 of the driver while jobs queue and run: Slurm keeps them.
    driver = p.driver_pid()
    assert driver
    os.kill(driver, signal.SIGKILL)
    wait_for(lambda: not Path(f"/proc/{driver}").exists() or
             Path(f"/proc/{driver}/status").read_text().find("zombie") >= 0, timeout=10, what="driver gone")
    snap = p.status()
    assert not snap["driver"]["alive"]
    states = {s["name"]: s["state"] for s in snap["stages"]}
    # The last known states, read from the records without a driver.
    assert states["gpu_both"] == "queued" and states["gpu_a"] == "running" and states["slow"] == "running"
    assert states["stubborn"] == "running"
    text = subprocess.run([sys.executable, "-m", "eagle3tui", "--config", str(p.config), "status"],
                          capture_output=True, text=True, timeout=60).stdout
    assert "queued" in text and "expected start" in text

    # `stop` starts a new driver, which reattaches and stops via scancel.
    out = p.cli("stop", "stubborn")
    assert out.returncode == 0 and "scancel" in out.stdout, (out.stdout, out.stderr)
    assert p.driver_pid() != driver
    wait_for(lambda: "stage got SIGTERM" in (p.state_dir / "logs" / "stubborn.log").read_text(),
             timeout=30, interval=0.3, what="the stage got the TERM through the wrapper")

    # Wait for the lot, the time limit included (60-90 s after slow started).
    def settled():
        sts = {s["name"]: s for s in p.status()["stages"]}
        return sts if all(s["state"] in ("succeeded", "failed", "stopped") and s["settled"]
                          for s in sts.values()) else None
    sts = wait_for(settled, timeout=180, interval=1.0, what="every stage settled")
    got = {n: (s["state"], s["reason"], s["hint"]) for n, s in sts.items()}
    assert sts["ok"]["state"] == "succeeded" and sts["after_ok"]["state"] == "succeeded", got
    assert sts["gpu_a"]["state"] == sts["gpu_b"]["state"] == sts["gpu_both"]["state"] == "succeeded", got
    assert (sts["fails"]["state"], sts["fails"]["exit_code"], sts["fails"]["reason"]) == ("failed", 3, "exit 3")
    assert sts["stubborn"]["state"] == "stopped", got
    assert sts["slow"]["state"] == "failed" and sts["slow"]["exit_code"] == 143, got
    assert sts["slow"]["hint"] == "killed by Slurm at its time limit", got

    # What Slurm itself said, kept with each record.
    rec = {n: p.records(n)[-1]["extra"]["slurm"] for n in sts if n != "after_ok"}
    assert rec["ok"]["final"] == "COMPLETED" and rec["fails"]["final"] == "FAILED"
    assert rec["slow"]["final"] == "TIMEOUT" and rec["stubborn"]["final"] == "CANCELLED"
    assert {tuple(rec["gpu_a"]["gpu_indices"]), tuple(rec["gpu_b"]["gpu_indices"])} == {(0,), (1,)}
    assert sorted(rec["gpu_both"]["gpu_indices"]) == [0, 1]
    seen = {n: (p.state_dir / "logs" / f"{n}.log").read_text() for n in ("gpu_a", "gpu_b", "ok")}
    assert {seen["gpu_a"].split("gpus ")[1][0], seen["gpu_b"].split("gpus ")[1][0]} == {"0", "1"}
    assert "ok on vm from-the-stage-env ['a b', '$HOME']" in seen["ok"]

    alerts = p.alerts()
    kinds = [(a["stage"], a["kind"]) for a in alerts]
    assert ("slow", "fatal-log-event") in kinds or ("slow", "stage-failed") in kinds
    slow_fail = next(a for a in alerts if a["stage"] == "slow" and a["kind"] == "stage-failed")
    assert "time limit" in json.dumps(slow_fail), slow_fail
    assert any(a["stage"] == "stubborn" and a["kind"] == "stage-killed" for a in alerts), kinds
    assert any(a["stage"] == "gpu_both" and "expects job" in a["message"] for a in alerts), kinds
    # Slurm's own time-limit line got the Slurm rule's verdict.
    verdicts = (p.state_dir / "runs" / "slow" / "0001.verdicts.jsonl").read_text()
    assert "slurm-time-limit" in verdicts


# A stage that "allocates" GPU memory on its node: it writes the NVML stand-in's
# scene with its own pid holding 3 GiB on GPU 1, and a process of no stage (the
# test's) holding 1 GiB on GPU 0, then waits.
HOLD_GPU = ("import json, os, sys, time\n"
            "scene = {'gpus': [{'util': 5, 'processes': {str(int(sys.argv[1])): 1 << 30}},\n"
            "                  {'util': 87, 'processes': {str(os.getpid()): 3 << 30}}]}\n"
            "tmp = os.environ['EAGLE3TUI_NVML_STANDIN'] + '.tmp'\n"
            "json.dump(scene, open(tmp, 'w')); os.replace(tmp, os.environ['EAGLE3TUI_NVML_STANDIN'])\n"
            "print('holding GPU 1', flush=True); time.sleep(120)\n")


def test_gpus_of_a_slurm_stage_are_sampled_on_its_node(slurm_pipeline, tmp_path):
    """The wrapper samples NVML inside the job and the driver shows that node's
    GPUs under the stage: status --json, the status line and the TUI panel."""
    from eagle3tui.config import load_config as load
    from eagle3tui.frontends.tui.gpupanel import gpu_lines
    from eagle3tui.view import load_view

    p = slurm_pipeline
    scene = tmp_path / "node-nvml.json"
    scene.write_text(json.dumps({"gpus": [{}, {}]}))
    script = tmp_path / "hold_gpu.py"
    script.write_text(HOLD_GPU)
    p.write(f"""
        [pipeline]
        name = "remote-gpus"
        stop_grace = "3s"
        gpu_interval = "0.5s"
        stall_floor = "4s"

        [[stage]]
        name = "train"
        command = ["{PY}", "{script}", "{os.getpid()}"]
        env = {{ EAGLE3TUI_NVML_STANDIN = "{scene}" }}
        executor = "slurm"
        [stage.slurm]
        gpus = 1
    """)
    assert p.cli("start", "train").returncode == 0

    def remote():
        doc = (p.status().get("gpu") or {}).get("remote") or {}
        rep = doc.get("train")
        return rep if rep and (rep.get("stage") or {}).get("bytes") else None
    rep = wait_for(remote, timeout=90, interval=0.5, what="the node report of train")
    assert rep["node"] == "vm" and rep["stage"]["bytes_by_gpu"] == {"1": 3 << 30}, rep
    assert rep["other_bytes_by_gpu"] == {"0": 1 << 30}, rep  # the test's pid is no stage's
    assert [g["util_pct"] for g in rep["gpus"]] == [5.0, 87.0]
    # The failing/status line and the panel name the node.
    view = load_view(load(p.config))
    assert view.held_gpus() == {"train": "vm:1"}
    assert view.stage_gpu_activity("train") == {"gpus": [1], "bytes": 3 << 30, "util_pct": 87.0,
                                                 "node": "vm"}
    panel = gpu_lines(view, width=100).plain
    assert "GPUvm:1" in panel and "train 3.0G" in panel and "other 1.0G" in panel, panel
    # The stage now prints nothing: the node's testimony (GPU 87% busy) makes the
    # stall verdict "quiet but working", where no GPU evidence would say "stalled".
    quiet = wait_for(lambda: [a for a in p.alerts() if a["stage"] == "train" and a["kind"] in
                              ("quiet-but-working", "stall")],
                     timeout=60, interval=0.5, what="the stall verdict")
    assert quiet[0]["kind"] == "quiet-but-working" and "GPU is still busy" in quiet[0]["message"], quiet

    # The node stops reporting when the job ends: the stage's GPUs leave the document.
    assert p.cli("stop", "train").returncode == 0
    wait_for(lambda: p.stage("train")["state"] == "stopped", timeout=60, interval=0.5, what="stopped")
    assert "train" not in ((p.status().get("gpu") or {}).get("remote") or {})


def test_sbatch_that_times_out_after_queueing_is_found_by_name(tmp_path):
    """sbatch queued the job but did not answer in time: the attempt keeps
    that job instead of submitting a second one or failing."""
    fake = tmp_path / "bin"
    fake.mkdir()
    real = subprocess.run(["sh", "-c", "command -v sbatch"], capture_output=True, text=True).stdout.strip()
    (fake / "sbatch").write_text(f"#!/bin/sh\n{real} \"$@\"\nexec sleep 30\n")
    (fake / "sbatch").chmod(0o755)
    cfg = tmp_path / "pipeline.toml"
    cfg.write_text(f'[[stage]]\nname = "slowsubmit"\ncommand = ["{PY}", "-c", "print(42)"]\n'
                   f'executor = "slurm"\nenv = {{ PATH = "{fake}:{os.environ["PATH"]}" }}\n')
    config = load_config(cfg)
    store = RunStore(config.state_dir)
    ex = SlurmExecutor(poll_interval=0.3, timeout=3)
    try:
        t0 = time.monotonic()
        rec = ex.launch(config.stage("slowsubmit"), store, resume=False, resumed_from=None, trigger="user")
        assert time.monotonic() - t0 < 20
        assert rec.error is None, rec.error
        jid = rec.extra["slurm"]["job_id"]
        assert jid and slurm.find_job_by_name(rec.extra["slurm"]["job_name"]) == [jid]

        def done():
            ex.poll(config, store)
            st = derive_statuses(config, store)[0]
            return st if st.state == StageState.SUCCEEDED else None
        wait_for(done, timeout=60, interval=0.3, what="the one job to complete")
    finally:
        ex.poller.close()


def test_a_job_too_short_to_be_polled_running_still_records_its_gpus(tmp_path):
    """The job's placement comes from inside the job (the wrapper's result),
    so a 0.1 s job keeps its node and GPUs even when no poll saw it running."""
    cfg = tmp_path / "pipeline.toml"
    cfg.write_text(f'[[stage]]\nname = "blink"\ncommand = ["{PY}", "-c", "print(42)"]\n'
                   'executor = "slurm"\n[stage.slurm]\ngpus = 2\n')
    config = load_config(cfg)
    store = RunStore(config.state_dir)
    # A poll interval longer than the job: the first look at it is after it ended.
    ex = SlurmExecutor(poll_interval=3600, timeout=10, result_grace_s=1)
    try:
        rec = ex.launch(config.stage("blink"), store, resume=False, resumed_from=None, trigger="user")
        result = Path(store.prefix("blink", rec.attempt) + ".result.json")
        wait_for(result.exists, timeout=60, interval=0.2, what="the wrapper's result")
        assert json.loads(result.read_text())["slurm_placement"] == {"node": "vm", "gpu_indices": [0, 1]}
        latest = store.latest("blink")  # folds the wrapper's files in
        assert latest.exit_code == 0
        assert latest.extra["slurm"]["gpu_indices"] == [0, 1] and latest.extra["slurm"]["nodes"] == "vm"
    finally:
        ex.poller.close()


def test_unreachable_controller_keeps_the_last_known_state(tmp_path):
    cfg = tmp_path / "pipeline.toml"
    cfg.write_text(f'[[stage]]\nname = "steady"\ncommand = ["{PY}", "-c", "import time; time.sleep(60)"]\n'
                   'executor = "slurm"\n')
    config = load_config(cfg)
    store = RunStore(config.state_dir)
    ex = SlurmExecutor(poll_interval=0.3, timeout=10, result_grace_s=1)
    try:
        rec = ex.launch(config.stage("steady"), store, resume=False, resumed_from=None, trigger="user")

        def state():
            ex.poll(config, store)
            return derive_statuses(config, store)[0]
        wait_for(lambda: state().state == StageState.RUNNING and "on vm" in state().reason, timeout=60,
                 interval=0.3, what="running")
        dead = tmp_path / "slurm.conf"
        dead.write_text("ClusterName=x\nSlurmctldHost=vm(127.0.0.1)\nSlurmctldPort=6999\nMessageTimeout=1\n"
                        "AuthType=auth/munge\nNodeName=vm CPUs=1\nPartitionName=p Nodes=vm\n")
        ex.poller.env = {**os.environ, "SLURM_CONF": str(dead)}
        rounds = ex.poller.rounds
        wait_for(lambda: ex.poller.rounds > rounds + 2 and ex.poller.unreachable, timeout=60,
                 interval=0.3, what="the poller to find the controller unreachable")
        st = state()
        assert st.state == StageState.RUNNING, (st.state, st.reason)
        assert "Slurm unreachable, last known state shown" in st.reason
        assert not store.latest("steady").finished
        ex.poller.env = None
        wait_for(lambda: "unreachable" not in state().reason, timeout=30, interval=0.3, what="recovery")
    finally:
        ex.poller.close()
        subprocess.run(["scancel", str(rec.extra["slurm"]["job_id"])], capture_output=True, timeout=30)


def test_kimi_slurm_example_trains_on_two_nodes_with_the_allocations_rendezvous():
    root = Path(__file__).resolve().parent.parent
    config = load_config(root / "examples" / "kimi-k2.5-8gpu-slurm.toml", {"out": "/shared/x"})
    train = config.stage("train")
    assert train.executor == "slurm" and train.slurm.nodes == 2 and train.slurm.gpus == 8
    script = train.argv(resume=True)[2]
    for needle in ('srun --ntasks-per-node=1', '-m torch.distributed.run --nnodes "$SLURM_NNODES"',
                   '--rdzv-id "$SLURM_JOB_ID"', 'scontrol show hostnames "$SLURM_JOB_NODELIST"',
                   '--rdzv-endpoint "$head:29500"'):
        assert needle in script, needle
    assert script.endswith("--save-every 500 --resume")
    assert {s.name for s in config.stages if s.executor == "slurm"} == {
        "serve", "regenerate", "tokenize", "extract", "train"}
