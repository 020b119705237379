"""torchrun's TORCHELASTIC_ERROR_FILE: set for a stage that launches torchrun, read back after it.

The jobs are real: torch's own launcher (``python -m torch.distributed.run``) starts two gloo
ranks on CPU, and rank 1 fails, by SIGKILL or by raising under ``@record``. The driver
supervises them as it would any stage, and the ``stage-failed`` alert must name rank 1 and
what ended it, with the launcher's SIGTERM to rank 0 and its report folded under it.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
from pathlib import Path

import pytest

from eagle3tui.config import load_config
from eagle3tui.supervisor.driver import Driver
from eagle3tui.supervisor.elastic_error import (
    ENV,
    error_file_env,
    launches_elastic,
    parse_record,
    read_error_file,
)
from eagle3tui.telemetry.fakenvml import FakeGpu, FakeNvml

torch = pytest.importorskip("torch")
SCRIPT = Path(__file__).resolve().parent / "fixtures" / "torchrun_real" / "rank1_fails.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_torchrun(pipeline, how: str, env: str = "") -> tuple[dict, dict]:
    pipeline.write(f"""
        [[stage]]
        name = "train"
        command = ["{sys.executable}", "-m", "torch.distributed.run", "--nproc_per_node=2",
                   "--master_addr=127.0.0.1", "--master_port={_free_port()}", "{SCRIPT}", "{how}"]
        {env}
        """)
    drv = Driver(load_config(pipeline.config), nvml=FakeNvml([FakeGpu()]), exit_when_idle=True)
    drv.execute({"op": "start", "all": True})
    assert drv.run() == 0
    failed = [a for a in pipeline.alerts() if a["kind"] == "stage-failed"]
    assert len(failed) == 1, pipeline.alerts()
    return failed[0], pipeline.records("train")[-1]


def test_a_rank_that_raises_leads_with_its_exception_and_where(pipeline) -> None:
    alert, rec = _run_torchrun(pipeline, "raise")
    msg = alert["message"]
    path = rec["extra"]["elastic_error_file"]
    # Owner-only: the attempt's own state directory, not a guessable name in /tmp.
    assert Path(path).parent == pipeline.state_dir / "runs" / "train"
    assert stat.S_IMODE(os.stat(Path(path).parent).st_mode) == 0o700
    assert msg.startswith("failed: rank 1"), msg
    assert "RuntimeError: loss went NaN at step 3 on rank 1" in msg, msg
    assert f"raised at {SCRIPT}:" in msg and " in step" in msg, msg
    assert "the launcher stopped 1 other process" in msg or "consequences:" in msg, msg
    assert alert["details"]["cause"]["elastic_error"]["message"].startswith("RuntimeError: loss went NaN")


def test_a_rank_killed_by_sigkill_is_named_with_its_signal(pipeline) -> None:
    alert, rec = _run_torchrun(pipeline, "kill")
    msg = alert["message"]
    assert msg.startswith("failed: rank 1"), msg
    assert "SIGKILL" in msg and "consequences:" in msg, msg
    assert "ChildFailedError" not in msg.split(";")[0], msg  # the wrapper is a consequence, not the lead


def test_the_users_own_error_file_is_left_alone(pipeline, tmp_path: Path) -> None:
    mine = tmp_path / "mine.json"
    _alert, rec = _run_torchrun(pipeline, "raise", f'env = {{ {ENV} = "{mine}" }}')
    assert "elastic_error_file" not in rec["extra"]
    assert json.loads(mine.read_text())["message"]["message"].startswith("RuntimeError")


@pytest.mark.parametrize("argv,yes", [
    (["torchrun", "--nproc_per_node=8", "train.py"], True),
    (["/opt/venv/bin/torchrun", "train.py"], True),
    (["python", "-m", "torch.distributed.run", "train.py"], True),
    (["python3", "-mtorch.distributed.launch", "train.py"], True),
    (["/bin/sh", "-c", "cd w && torchrun --nnodes=2 train.py 2>&1"], True),
    (["python", "train.py", "--note", "torchrun"], False),  # an argument's value, not a program
    (["python", "-m", "torch.utils.collect_env"], False),
    (["/bin/sh", "-c", "echo 'run it with torchrun later'"], False),
])
def test_launcher_detection_from_argv(argv: list[str], yes: bool) -> None:
    assert launches_elastic(argv) is yes


def test_the_variable_is_set_only_for_torchrun_and_not_over_the_users(tmp_path: Path) -> None:
    prefix = str(tmp_path / "0001")
    Path(prefix + ".elastic-error.json").write_text('{"message": "stale"}')
    assert error_file_env(["torchrun", "t.py"], {}, prefix) == {ENV: prefix + ".elastic-error.json"}
    assert not Path(prefix + ".elastic-error.json").exists()  # a stale record is never read as this attempt's
    assert error_file_env(["torchrun", "t.py"], {ENV: "/x"}, prefix) == {}
    assert error_file_env(["python", "t.py"], {}, prefix) == {}


def test_an_untrusted_or_odd_record_is_not_read(tmp_path: Path) -> None:
    good = {"message": {"message": "ValueError: bad\x1b[31m shard\nsecond line",
                        "extraInfo": {"py_callstack": 'Traceback (most recent call last):\n  File "/w/t.py", line 7, in f\n'}}}
    p = tmp_path / "e.json"
    p.write_text(json.dumps(good))
    p.chmod(0o600)
    err = read_error_file(str(p))
    assert err is not None and err.message == "ValueError: bad shard" and err.where == "/w/t.py:7 in f"
    p.chmod(0o666)  # writable by others: anyone could have written it
    assert read_error_file(str(p)) is None
    p.chmod(0o600)
    link = tmp_path / "link.json"
    link.symlink_to(p)
    assert read_error_file(str(link)) is None
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"message": "x" * (300 * 1024)}))
    assert read_error_file(str(big)) is None
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert read_error_file(str(bad)) is None
    assert parse_record({"message": 3}) is None and parse_record([1]) is None
    assert parse_record({"message": "RendezvousTimeoutError: timed out"}).message.startswith("Rendezvous")


@pytest.mark.parametrize("argv", [
    ["srun", "-N2", "--ntasks-per-node=1", "torchrun", "t.py"],
    ["uv", "run", "torchrun", "t.py"],
    ["/bin/bash", "-c", "export A=1; NCCL_DEBUG=INFO exec python -u -m torch.distributed.run t.py"],
])
def test_launcher_detection_through_wrappers(argv: list[str]) -> None:
    assert launches_elastic(argv)
