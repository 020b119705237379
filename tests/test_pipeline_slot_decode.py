"""The slot decoder (continuous batching over a preallocated KV cache) answers exactly as transformers' generate.

Tiny random models built from a config, float32 on CPU, where two correct
decoders must agree token for token. The end id is chosen from the model's own
greedy text, so answers end at different lengths and slots are retired,
refilled and packed while others run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from pipeline.local_generate import decode_generate, sampling_of
from pipeline.slot_decode import Sampling, decode_slots, plan_slots, supports

REPO = Path(__file__).resolve().parent.parent


def _llama(**extra: Any) -> Any:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=3,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                      bos_token_id=1, eos_token_id=2, initializer_range=0.4, **extra)
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg).eval()


def _qwen3() -> Any:
    from transformers import Qwen3Config, Qwen3ForCausalLM

    cfg = Qwen3Config(vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=1, head_dim=16, max_position_embeddings=256,
                      initializer_range=0.4)
    torch.manual_seed(1)
    return Qwen3ForCausalLM(cfg).eval()


def _prompts(n: int, seed: int = 0) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(3, 96, (int(torch.randint(2, 19, (1,), generator=g)),), generator=g).tolist()
            for _ in range(n)]


def _end_id(model: Any, prompts: list[list[int]], max_new: int) -> int:
    """A token the model's greedy text holds in the middle of several answers: answers then end at varied lengths."""
    free = _by_generate(model, prompts, max_new, [0])
    seen: dict[int, int] = {}
    for ids, _ in free.values():
        for t in set(ids[1:-1]):
            seen[t] = seen.get(t, 0) + 1
    best = max(seen, key=lambda t: (min(seen[t], len(prompts) // 2), -t))
    return best


def _by_generate(model: Any, prompts: list[list[int]], max_new: int, end: list[int],
                 batch: int = 4) -> dict[int, tuple[list[int], bool]]:
    order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
    pad = 0 if 0 not in end else 95
    out = {}
    for answers in decode_generate(model, pad, prompts, order, batch, max_new, end, None, None, "cpu"):
        for i, ids, stopped in answers:
            out[i] = (ids, stopped)
    return out


def _by_slots(model: Any, prompts: list[list[int]], max_new: int, end: list[int], slots: int,
              sampling: Sampling | None = None, **kw: Any) -> dict[int, tuple[list[int], bool]]:
    plan = plan_slots(model, max(len(p) for p in prompts), max_new, slots, None, torch.float32)
    order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
    out = {}
    with torch.inference_mode():
        for done in decode_slots(model, prompts, max_new, end, plan, sampling, order=order, **kw):
            for f in done:
                assert f.index not in out
                out[f.index] = (f.ids, f.stopped)
    return out


@pytest.mark.parametrize("build", [_llama, _qwen3], ids=["llama", "qwen3"])
def test_slots_equal_generate_token_for_token(build: Any) -> None:
    model = build()
    prompts = _prompts(11)
    max_new = 24
    end = [_end_id(model, prompts, max_new)]
    ref = _by_generate(model, prompts, max_new, end)
    stopped = [i for i, (_, s) in ref.items() if s]
    assert 2 <= len(stopped) < len(prompts), "the end id should end some answers early, not all"
    assert len({len(ids) for ids, _ in ref.values()}) >= 3
    # 3 slots for 11 prompts: rows retire, refill from the queue and are packed at the end;
    # check_every 5 makes rows run on past their end id before a check cuts them.
    for slots, every in ((3, 5), (4, 1), (16, 8)):
        got = _by_slots(model, prompts, max_new, end, slots, check_every=every)
        assert got == ref, f"slots={slots} check_every={every}"


def test_one_token_answers_and_prompts_at_capacity() -> None:
    model = _llama()
    prompts = _prompts(5, seed=3)
    assert _by_slots(model, prompts, 1, [2], 2) == _by_generate(model, prompts, 1, [2])
    plan = plan_slots(model, 4, 8, 2, None, torch.float32)
    with pytest.raises(ValueError, match="has room for"):
        list(decode_slots(model, [[5] * (plan.capacity - 8 + 1)], 8, [2], plan))


def test_top_k_one_sampling_is_greedy_and_warpers_come_from_transformers() -> None:
    model = _llama()
    prompts = _prompts(6, seed=4)
    greedy = _by_slots(model, prompts, 12, [2], 3)
    # Temperature and top-p change nothing when top-k keeps one token: the warpers are wired in order.
    torch.manual_seed(0)
    assert _by_slots(model, prompts, 12, [2], 3, Sampling(temperature=0.7, top_p=0.9, top_k=1)) == greedy
    torch.manual_seed(0)
    sampled = _by_slots(model, prompts, 12, [2], 3, Sampling(temperature=1.5))
    assert sampled != greedy and all(0 <= t < 96 for ids, _ in sampled.values() for t in ids)


def test_stop_finishes_rows_in_flight_and_admits_no_more() -> None:
    model = _llama()
    prompts = _prompts(9, seed=5)
    ref = _by_generate(model, prompts, 16, [2])
    calls = {"yields": 0}
    plan = plan_slots(model, max(len(p) for p in prompts), 16, 3, None, torch.float32)
    got: dict[int, Any] = {}
    with torch.inference_mode():
        for done in decode_slots(model, prompts, 16, [2], plan, stop=lambda: calls["yields"] > 0):
            calls["yields"] += 1
            got.update({f.index: (f.ids, f.stopped) for f in done})
    assert 3 <= len(got) < len(prompts)  # the first three rows were in flight; no prompt was admitted after
    assert all(got[i] == ref[i] for i in got)


def test_supports_names_what_it_cannot_decode() -> None:
    from transformers import (
        GPT2Config,
        GPT2LMHeadModel,
        MistralConfig,
        MistralForCausalLM,
    )

    ok, why = supports(GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=50)))
    assert not ok and "gpt2" in why
    mistral = MistralForCausalLM(MistralConfig(vocab_size=50, hidden_size=16, intermediate_size=32,
                                               num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                                               sliding_window=8))
    ok, why = supports(mistral)
    assert not ok and "sliding" in why
    assert supports(_llama()) == (True, "")
    model = _llama()
    model.generation_config.repetition_penalty = 1.3
    sampling, why = sampling_of(model, 0.0, None)
    assert sampling is None and "repetition_penalty" in why


def test_regenerate_cli_slots_and_generate_write_the_same_answers(tmp_path: Path) -> None:
    """Through the stage's CLI with SmolLM2's tokenizer: both decoders, the same records at temperature 0."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from pipeline.model_io import load_tokenizer

    tok = load_tokenizer("smollm2")
    model_dir = tmp_path / "tiny"
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                      eos_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id, initializer_range=0.3)
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    prompts = tmp_path / "p.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"q{i}", "conversations": [
        {"role": "user", "content": "word " * (1 + 3 * i) + "?"}]}) + "\n" for i in range(7)), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    records = {}
    for decoder in ("slots", "generate"):
        out = tmp_path / f"{decoder}.jsonl"
        run = subprocess.run([sys.executable, "-m", "pipeline.regenerate", "--backend", "local", "--model",
                              str(model_dir), "--input", str(prompts), "--output", str(out), "--temperature", "0",
                              "--max-tokens", "12", "--batch-size", "3", "--device", "cpu", "--dtype", "float32",
                              "--decoder", decoder, "--no-progress"],
                             cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
        assert run.returncode == 0, run.stderr
        assert ("slots decoder, 3 rows" in run.stderr) == (decoder == "slots")
        records[decoder] = {json.loads(x)["id"]: json.loads(x) for x in out.read_text().splitlines()}
    assert sorted(records["slots"]) == [f"q{i}" for i in range(7)]
    for rid, rec in records["generate"].items():
        other = records["slots"][rid]
        assert (other["conversations"], other["usage"], other["finish_reason"]) == (
            rec["conversations"], rec["usage"], rec["finish_reason"]), rid
