"""Data without internet: held-out prompts split off by construction, Magpie filters, the local regenerate backend."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.prepare import SHIPPED_PROMPTS, prepare
from pipeline.synthesise import MinHashIndex, PromptFilter, topic_key

REPO = Path(__file__).resolve().parent.parent


def _ids(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_holdout_is_disjoint_complete_and_independent_of_input_order(tmp_path: Path) -> None:
    rep = prepare([SHIPPED_PROMPTS], tmp_path / "train.jsonl", holdout=20, holdout_output=tmp_path / "held.jsonl",
                  show_progress=False)
    train, held = _ids(tmp_path / "train.jsonl"), _ids(tmp_path / "held.jsonl")
    assert len(held) == 20 and rep.held_out == 20 and rep.written == len(train)
    assert not set(train) & set(held)
    assert len(train) + len(held) == len(_ids(SHIPPED_PROMPTS))
    # The same ids are held out whatever order the records come in.
    lines = SHIPPED_PROMPTS.read_text(encoding="utf-8").splitlines()
    shuffled = tmp_path / "reversed.jsonl"
    shuffled.write_text("\n".join(reversed(lines)) + "\n", encoding="utf-8")
    prepare([shuffled], tmp_path / "t2.jsonl", holdout=20, holdout_output=tmp_path / "h2.jsonl", show_progress=False)
    assert sorted(_ids(tmp_path / "h2.jsonl")) == sorted(held)
    proc = subprocess.run([sys.executable, "-m", "pipeline.prepare", "-o", str(tmp_path / "x.jsonl"), "--holdout", "3"],
                          cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2 and "--holdout-output" in proc.stderr


def test_minhash_finds_near_duplicates_only() -> None:
    idx = MinHashIndex(threshold=0.6)
    a = "Explain how photosynthesis turns sunlight, water and carbon dioxide into sugar in plant leaves."
    idx.add(idx.signature(a))
    near = "Explain how photosynthesis turns sunlight, water and carbon dioxide into sugar in the leaves of plants."
    other = "Write a haiku about a cat sleeping on a warm windowsill in the afternoon sun."
    assert idx.find(idx.signature(near)) == 0
    assert idx.find(idx.signature(other)) is None


def test_prompt_filter_verdicts() -> None:
    f = PromptFilter(dedup_threshold=0.6, max_per_topic=2, topic_words=2, min_words=4, max_chars=200,
                     markers=["<|im_start|>"])
    f.exclude("What is the capital city of France and why is it famous?")
    verdicts = [
        f.judge("What is the capital city of France and why is it so famous?", True),  # held-out look-alike
        f.judge("Tell me a joke", False),  # unfinished
        f.judge("Hi there", True),  # too short
        f.judge("Explain <|im_start|> tokens to me please", True),  # template marker
        f.judge("Explain quantum tunnelling to a curious ten year old child.", True),
        f.judge("Explain quantum tunnelling to a curious ten year old kid.", True),  # near-duplicate
        f.judge("Can you explain quantum tunnelling using an everyday analogy about balls and hills?", True),
        f.judge("Explain quantum tunnelling in the context of scanning tunnelling microscopes.", True),  # topic cap
    ]
    assert verdicts == [False, False, False, False, True, False, True, False]
    assert f.verdicts == {"near-duplicate of a held-out prompt": 1, "unfinished": 1, "too short": 1,
                          "template markers": 1, "kept": 2, "near-duplicate": 1, "topic cap": 1}
    assert topic_key("Can you explain quantum tunnelling?", 2) == "quantum tunnelling"


def test_user_turn_prefix_of_smollm2() -> None:
    from pipeline.model_io import load_tokenizer
    from pipeline.synthesise import user_turn_prefix

    prefix = user_turn_prefix(load_tokenizer("smollm2"))
    assert prefix.endswith("<|im_start|>user\n") and "<|im_start|>system" in prefix


def test_regenerate_local_backend_samples_and_resumes_by_id(tmp_path: Path) -> None:
    """Batched local generation: N sampled answers per prompt under ids id#j, a rerun writes only what is missing."""
    torch = pytest.importorskip("torch")
    from transformers import LlamaConfig, LlamaForCausalLM

    from pipeline.model_io import load_tokenizer

    tok = load_tokenizer("smollm2")
    model_dir = tmp_path / "tiny"
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512,
                      eos_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id)
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    prompts = tmp_path / "p.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"q{i}", "conversations": [{"role": "user", "content": f"q {i}?"}]})
                               + "\n" for i in range(3)), encoding="utf-8")
    out = tmp_path / "regen.jsonl"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    base = [sys.executable, "-m", "pipeline.regenerate", "--backend", "local", "--model", str(model_dir),
            "--input", str(prompts), "--output", str(out), "--samples-per-prompt", "2", "--temperature", "1.0",
            "--max-tokens", "6", "--batch-size", "4", "--device", "cpu", "--seed", "1", "--no-progress"]
    first = subprocess.run([*base, "--limit", "1"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
                           check=False)
    assert first.returncode == 0, first.stderr
    assert sorted(_ids(out)) == ["q0#0", "q0#1"]
    before = out.read_text(encoding="utf-8")
    second = subprocess.run(base, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert second.returncode == 0, second.stderr
    assert "2 already in" in second.stderr
    text = out.read_text(encoding="utf-8")
    assert text.startswith(before)  # appended, never rewritten
    ids = _ids(out)
    assert sorted(ids) == [f"q{i}#{j}" for i in range(3) for j in range(2)]
    for line in text.splitlines():
        rec = json.loads(line)
        assert [t["role"] for t in rec["conversations"]] == ["user", "assistant"]
        assert rec["finish_reason"] in ("stop", "length") and 0 < rec["usage"]["completion_tokens"] <= 6
        assert rec["server"] == "local:cpu"


def _tiny_eos_model(tmp_path: Path) -> Path:
    """A 2-layer Llama with SmolLM2's tokenizer that ends a turn about half the time at each token.

    The final norm passes only hidden dimension 0; ``lm_head`` maps its sign to
    end-of-turn or to one of two words, so sampled messages finish within a few tokens.
    """
    torch = pytest.importorskip("torch")
    from transformers import LlamaConfig, LlamaForCausalLM

    from pipeline.model_io import load_tokenizer

    tok = load_tokenizer("smollm2")
    end = tok.convert_tokens_to_ids("<|im_end|>")
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512,
                      eos_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id)
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        model.model.norm.weight.zero_()
        model.model.norm.weight[0] = 1.0
        model.lm_head.weight.zero_()
        model.lm_head.weight[end, 0] = 8.0
        for word in (" cat", " dog"):
            model.lm_head.weight[tok.convert_tokens_to_ids(tok.tokenize(word)[0]), 0] = -8.0
    out = tmp_path / "tiny-eos"
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def test_steered_prompts_start_with_a_training_prompts_opening(tmp_path: Path) -> None:
    """--steer-share 1: every kept prompt opens with the first words of a training prompt; held-out ones never."""
    model = _tiny_eos_model(tmp_path)
    rep = prepare([SHIPPED_PROMPTS], tmp_path / "train.jsonl", holdout=64, holdout_output=tmp_path / "held.jsonl",
                  show_progress=False)
    assert rep.held_out == 64
    out = tmp_path / "synth.jsonl"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cmd = [sys.executable, "-m", "pipeline.synthesise", "--model", str(model), "--output", str(out),
           "--num-prompts", "12", "--steer", str(tmp_path / "train.jsonl"), "--steer-share", "1", "--steer-words", "3",
           "--batch-size", "16", "--max-new-tokens", "8", "--min-words", "3", "--max-per-topic", "100",
           "--device", "cpu", "--seed", "3"]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    train_openings = {" ".join(json.loads(line)["conversations"][0]["content"].split()[:3])
                      for line in (tmp_path / "train.jsonl").read_text(encoding="utf-8").splitlines()}
    kept = [json.loads(line)["conversations"][0]["content"] for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(kept) == 12
    for text in kept:
        opening = next((o for o in train_openings if text.startswith(o)), None)
        assert opening is not None, text
        assert len(text) > len(opening), text  # the model wrote the rest
    record = json.loads((tmp_path / "synth.jsonl.json").read_text(encoding="utf-8"))
    assert record["steered"]["kept"] == 12 and record["steered"]["openings"] == rep.written
    # Unsteered, the same model writes mostly its two words: no opening of a training prompt appears.
    free = subprocess.run([*cmd, "--steer-share", "0", "--num-prompts", "4", "--min-words", "1"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert free.returncode == 0, free.stderr
    free_kept = [json.loads(line)["conversations"][0]["content"] for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(free_kept) == 4
    assert not any(text.startswith(o) for text in free_kept for o in train_openings), free_kept
    bad = subprocess.run([*cmd, "--steer-share", "1.5"], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=120, check=False)
    assert bad.returncode == 2 and "--steer-share 1.5" in bad.stderr
