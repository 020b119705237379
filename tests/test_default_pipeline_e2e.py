"""The shipped pipeline.toml, end to end, headless, on the real SmolLM2 model.

serve (llama.cpp on CPU) -> regenerate -> tokenize -> vocab -> extract -> train
-> export -> evaluate, driven by ``eagle3tui --watch --run-all``, sized down
with --set so it fits comfortably in CI.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_default_pipeline_runs_end_to_end(tmp_path):
    out = tmp_path / "demo"
    sets = {"out": str(out), "port": str(free_port()), "samples": "12", "train_samples": "8",
            "eval_start": "8", "max_tokens": "48", "max_len": "192", "train_steps": "12",
            "eval_prompts": "2", "eval_tokens": "24"}
    base = [sys.executable, "-m", "eagle3tui", "--config", str(ROOT / "pipeline.toml")]
    for k, v in sets.items():
        base += ["--set", f"{k}={v}"]
    watch = subprocess.run(base + ["--watch", "--run-all"], capture_output=True, text=True,
                           timeout=1700, cwd=tmp_path)
    status = json.loads(subprocess.run(base + ["status", "--json"], capture_output=True,
                                       text=True, timeout=60).stdout)
    states = {s["name"]: s["state"] for s in status["stages"]}
    assert watch.returncode == 0, (states, watch.stdout[-4000:], watch.stderr[-2000:])
    assert set(states.values()) == {"succeeded"}, states
    # Alerts: every stage started and succeeded; the server was stopped by the
    # supervisor once regenerate no longer needed it.
    assert "serve" in watch.stdout and "service no longer needed" in watch.stdout
    results = json.loads((out / "eval.json").read_text())
    methods = results["methods"]
    for k in (3, 7):
        al = methods[f"eagle3@K={k}"]["acceptance_length"]
        assert 1.0 <= al <= k + 1
        ok, total = methods[f"eagle3@K={k}"]["lossless"].split("/")
        assert ok == total and int(total) > 0
    assert "acceptance length" in (out / ".eagle3tui/logs/evaluate.log").read_text()
