"""`eagle3tui gpus` (gpus_cli): JSON and table output, real processes."""

from __future__ import annotations

import argparse
import ctypes.util
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eagle3tui.frontends import gpus_cmd as gpus_cli
from eagle3tui.telemetry.fakenvml import FakeGpu, FakeNvml
from eagle3tui.telemetry.sampler import GpuSampler

GiB = 1 << 30
REPO = Path(__file__).resolve().parents[1]


def args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    gpus_cli.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_json_attributes_processes_to_stages() -> None:
    me, parent = os.getpid(), os.getppid()
    sampler = GpuSampler(
        nvml=FakeNvml([FakeGpu(processes={me: 2 * GiB, 1: GiB}, util=30)])
    )
    out = io.StringIO()
    rc = gpus_cli.run(
        args("--json"), stage_roots={"train": parent}, sampler=sampler, out=out
    )
    assert rc == 0
    data = json.loads(out.getvalue())
    assert data["schema"] == 1 and data["available"] is True and data["error"] is None
    (gpu,) = data["gpus"]
    assert gpu["index"] == 0 and gpu["mem_used"] == 3 * GiB and gpu["util_pct"] == 30
    procs = {p["pid"]: p for p in data["processes"]}
    assert procs[me]["stage"] == "train" and procs[me]["used_bytes"] == 2 * GiB
    assert procs[1]["stage"] == "other"
    assert data["stages"]["train"] == {
        "root_pid": parent,
        "gpus": [0],
        "bytes": 2 * GiB,
        "pids": [me],
        "bytes_by_gpu": {"0": 2 * GiB},
    }
    assert data["other_bytes"] == GiB


def test_stage_option_and_table_output_sanitises_command_lines() -> None:
    # A real process whose command line carries a terminal escape sequence.
    evil = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; time.sleep(60)",
            "\x1b]0;pwned\x07\x1b[31mred",
        ]
    )
    try:
        sampler = GpuSampler(nvml=FakeNvml([FakeGpu(processes={evil.pid: 5 * GiB})]))
        out = io.StringIO()
        rc = gpus_cli.run(
            args("--stage", f"judge={evil.pid}"), sampler=sampler, out=out
        )
        text = out.getvalue()
    finally:
        evil.kill()
        evil.wait(5)
    assert rc == 0
    assert "\x1b" not in text and "\x07" not in text
    assert "NVIDIA H200" in text and "5.0 GiB" in text
    assert "judge" in text and "?]0;pwned??[31mred" in text
    assert "stage judge: 5.0 GiB on GPU 0" in text


def test_watch_with_count_prints_json_lines() -> None:
    sampler = GpuSampler(nvml=FakeNvml([FakeGpu(), FakeGpu()]))
    out = io.StringIO()
    started = time.monotonic()
    rc = gpus_cli.run(
        args("--json", "--watch", "0.05", "--count", "3"), sampler=sampler, out=out
    )
    assert rc == 0 and time.monotonic() - started >= 0.1
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    assert all(len(json.loads(line)["gpus"]) == 2 for line in lines)


def test_bad_arguments_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        gpus_cli.run(args("--stage", "nopid"), sampler=GpuSampler(nvml=FakeNvml())) == 2
    )
    assert "expected NAME=PID" in capsys.readouterr().err
    assert gpus_cli.run(args("--watch", "0"), sampler=GpuSampler(nvml=FakeNvml())) == 2
    assert "--watch" in capsys.readouterr().err


def test_a_host_without_an_nvidia_driver_exits_0_and_says_so() -> None:
    out = io.StringIO()
    rc = gpus_cli.run(args(), sampler=GpuSampler(nvml=FakeNvml(init_error=12)), out=out)
    assert rc == 0, out.getvalue()
    assert out.getvalue() == ("GPUs: none on this host (NVML unavailable: libnvidia-ml.so.1 not found "
                              "(no NVIDIA driver installed?)); nothing to show\n")


def test_unavailable_table_says_why() -> None:
    out = io.StringIO()
    rc = gpus_cli.run(args(), sampler=GpuSampler(nvml=FakeNvml(init_error=9)), out=out)
    assert (
        rc == 1
        and out.getvalue()
        == "GPUs: NVML unavailable: the NVIDIA driver is not loaded\n"
    )


@pytest.mark.skipif(
    ctypes.util.find_library("nvidia-ml") is not None, reason="this machine has NVML"
)
def test_module_entry_point_without_a_driver() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "eagle3tui.frontends.gpus_cmd",
            "--json",
            "--stage",
            f"me={os.getpid()}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    # A CPU host: no GPUs is the answer, not a failure (exit 0), and the JSON says why.
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["available"] is False and data["no_driver"] is True
    assert "libnvidia-ml.so.1 not found" in data["error"]
    assert data["stages"]["me"]["bytes"] == 0


def test_core_gpu_modules_import_without_textual_watchdog_or_pynvml() -> None:
    code = (
        "import sys, eagle3tui.telemetry, eagle3tui.frontends.gpus_cmd, eagle3tui.telemetry.fakenvml\n"
        "bad = [m for m in ('textual', 'watchdog', 'pynvml') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def test_text_watch_not_on_a_tty_prints_successive_tables_without_escapes() -> None:
    sampler = GpuSampler(nvml=FakeNvml([FakeGpu()]))
    out = io.StringIO()
    rc = gpus_cli.run(args("--watch", "0.01", "--count", "2"), sampler=sampler, out=out)
    text = out.getvalue()
    assert rc == 0 and text.count("MEMORY USED / TOTAL") == 2 and "\x1b" not in text
