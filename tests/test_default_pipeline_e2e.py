"""The shipped pipeline.toml, end to end, headless, on the real SmolLM2 model, at its shipped sizes.

serve (llama.cpp on CPU) -> regenerate, and answer (float32, batched) -> tokenize
-> vocab -> extract -> train -> export -> evaluate, driven by ``eagle3tui --watch
--run-all``. Nothing is sized down: what this test runs is what ``make run`` runs,
and it fails when the demo's draft does not beat prompt lookup on its held-out
prompts at K=3 and K=7 (same prompts, same greedy tokens, lossless), or when the
run takes longer than the demo promises.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The README promises the demo within 12 minutes on 2 cores; CI machines are shared, so the test
# allows a margin over that and reports the wall time it measured.
WALL_LIMIT_S = 18 * 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_default_pipeline_draft_beats_prompt_lookup(tmp_path):
    out = tmp_path / "demo"
    base = [sys.executable, "-m", "eagle3tui", "--config", str(ROOT / "pipeline.toml"),
            "--set", f"out={out}", "--set", f"port={free_port()}"]
    t0 = time.monotonic()
    watch = subprocess.run(base + ["--watch", "--run-all"], capture_output=True, text=True,
                           timeout=2300, cwd=tmp_path)
    wall = time.monotonic() - t0
    status = json.loads(subprocess.run(base + ["status", "--json"], capture_output=True,
                                       text=True, timeout=60).stdout)
    states = {s["name"]: s["state"] for s in status["stages"]}
    assert watch.returncode == 0, (states, watch.stdout[-4000:], watch.stderr[-2000:])
    assert set(states.values()) == {"succeeded"}, states
    # The server was stopped by the supervisor once regenerate no longer needed it.
    assert "serve" in watch.stdout and "service no longer needed" in watch.stdout
    results = json.loads((out / "eval.json").read_text())
    assert results["prompts"] >= 16 and results["max_new_tokens"] >= 64, results["prompts"]
    # The held-out prompts were never answered for training.
    held = {json.loads(line)["id"] for line in (out / "heldout.jsonl").read_text().splitlines()}
    trained = {json.loads(line)["id"].split("#")[0] for name in ("answers.jsonl", "regen.jsonl")
               for line in (out / name).read_text().splitlines()}
    assert held and not held & trained
    methods = results["methods"]
    for k in (3, 7):
        draft, lookup = methods[f"eagle3@K={k}"], methods[f"ngram@K={k}"]
        for m in (draft, lookup):
            ok, total = m["lossless"].split("/")
            assert ok == total and int(total) == results["prompts"], (k, m["lossless"])
        assert draft["acceptance_length"] > lookup["acceptance_length"], (
            f"K={k}: the demo's draft {draft['acceptance_length']:.3f} does not beat prompt lookup "
            f"{lookup['acceptance_length']:.3f}")
    assert "acceptance length" in (out / ".eagle3tui/logs/evaluate.log").read_text()
    assert wall < WALL_LIMIT_S, f"the demo took {wall:.0f}s end to end"
