"""Every shipped configuration passes `eagle3tui check`, with paths given through --set."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = [ROOT / "pipeline.toml", *sorted((ROOT / "examples").glob("*.toml"))]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_check_passes(config, tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "eagle3tui", "--config", str(config), "--set", f"out={tmp_path}/out",
         "check"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "ok" in out.stdout


def test_seed_example_matches_the_seed_run():
    text = (ROOT / "examples/kimi-k2.5-8gpu.toml").read_text()
    for needle in ('"--tensor-parallel-size", "8"', 'samples = "10000"', 'draft_vocab = "32000"',
                   '"--backend", "vllm"', '"Loading safetensors checkpoint shards" = "22m"'):
        assert needle in text
