"""Node reports (a remote stage's GPUs, sampled by its wrapper): never in the stage's way,
and never shown as live once the node stopped writing them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from eagle3tui.supervisor.launcher import WRAPPER
from eagle3tui.telemetry.node_report import read_report, report_is_stale, witness_of


def run_wrapped(tmp_path: Path, report: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess, Path]:
    prefix = tmp_path / "0001"
    proc = subprocess.run(
        [sys.executable, "-I", str(WRAPPER), "--record", str(prefix), "--gpu-report", str(report),
         "--gpu-interval", "0.2", "--", sys.executable, "-c", "import time; time.sleep(0.6); print('stage done')"],
        check=False, capture_output=True, text=True, timeout=60, env={**os.environ, **env})
    return proc, Path(str(prefix) + ".result.json")


def test_a_report_that_cannot_be_written_leaves_the_stage_alone(tmp_path):
    scene = tmp_path / "scene.json"
    scene.write_text(json.dumps({"gpus": [{"util": 50}]}))
    report = tmp_path / "no-such-dir" / "0001.gpu.json"
    proc, result = run_wrapped(tmp_path, report, {"EAGLE3TUI_NVML_STANDIN": str(scene)})
    assert proc.returncode == 0 and "stage done" in proc.stdout, proc.stderr
    assert json.loads(result.read_text())["exit_code"] == 0
    assert not report.exists()


def test_a_node_without_nvml_says_so_in_its_report(tmp_path):
    report = tmp_path / "0001.gpu.json"
    # A stand-in file that does not exist: the sampler cannot even start.
    proc, result = run_wrapped(tmp_path, report, {"EAGLE3TUI_NVML_STANDIN": str(tmp_path / "missing.json")})
    assert proc.returncode == 0 and json.loads(result.read_text())["exit_code"] == 0
    doc = read_report(str(report))
    assert doc is not None and doc["available"] is False
    assert "GPU sampling on this node failed" in doc["error"] and "missing.json" in doc["error"]


def test_garbage_and_old_reports_are_not_shown_as_live(tmp_path):
    path = tmp_path / "r.json"
    assert read_report(str(path)) is None
    path.write_text("{not json")
    assert read_report(str(path)) is None
    path.write_text(json.dumps(["a list"]))
    assert read_report(str(path)) is None
    now = time.time()
    fresh = {"time": now - 1, "interval_s": 1.0, "witness": {"busy": True, "memory_changing": False}}
    path.write_text(json.dumps(fresh))
    doc = read_report(str(path))
    assert doc is not None and not report_is_stale(doc, now)
    assert witness_of(doc, now).busy
    # Three intervals plus 5 s without a new report: the node is gone or the wrapper hangs.
    assert report_is_stale(doc, now + 3 + 5 + 1.5)
    assert witness_of(doc, now + 10) is None


def test_a_node_that_cannot_sample_says_why_in_the_gpu_panel(tmp_path):
    """This host has no NVML and the job's node failed to sample: the panel says both."""
    from eagle3tui.config import load_config
    from eagle3tui.frontends.tui.gpupanel import gpu_lines
    from eagle3tui.view import load_view

    (tmp_path / "pipeline.toml").write_text('[[stage]]\nname = "train"\ncommand = ["true"]\n')
    view = load_view(load_config(tmp_path / "pipeline.toml"))
    view.gpu = {"available": False, "error": "NVML unavailable: libnvidia-ml.so.1 not found",
                "remote": {"train": {"node": "gpu7", "time": time.time(), "available": False,
                                     "error": "GPU sampling on this node failed: NVMLError: Driver Not Loaded"}}}
    assert view.gpu_rows() == []
    text = gpu_lines(view, width=200).plain
    assert "libnvidia-ml.so.1 not found" in text and "train on gpu7: GPU sampling on this node failed" in text
