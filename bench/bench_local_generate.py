"""Batched greedy generation on a GPU: transformers' dynamic KV cache against its static one.

regenerate's local backend spends 41 % of the H200 example's chain in
``model.generate`` (23k tok/s at batch 4,096, docs/pipeline-model.md). This
measures, in one run and on the same prompts, the default dynamic cache (a
``torch.cat`` per layer and step) against ``cache_implementation="static"``
(one preallocated cache written in place; compilation off), as a ratio.

No download and no transfer: the model is SmolLM2-135M's architecture built
from its config with random weights (speed does not depend on the values).
Greedy outputs of the two variants are compared token by token; in bf16 they
may part where two logits tie after rounding, so the share that agrees is
reported, not asserted.

    python bench/bench_local_generate.py --batch 2048 --new-tokens 128 --out results.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from typing import Any

import torch

SMOLLM2_135M = {"vocab_size": 49152, "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
                "num_attention_heads": 9, "num_key_value_heads": 3, "max_position_embeddings": 8192,
                "rope_theta": 100000.0, "tie_word_embeddings": True, "bos_token_id": 1, "eos_token_id": 2}


def _prompts(batch: int, lo: int, hi: int, vocab: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded random prompts of lo..hi tokens (as the local backend pads them), and their mask."""
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(lo, hi + 1, (batch,), generator=g)
    width = int(lengths.max())
    ids = torch.zeros((batch, width), dtype=torch.long)
    mask = torch.zeros((batch, width), dtype=torch.long)
    for r, n in enumerate(lengths.tolist()):
        ids[r, width - n:] = torch.randint(3, vocab, (n,), generator=g)
        mask[r, width - n:] = 1
    return ids.to(device), mask.to(device)


def _run(model: Any, ids: torch.Tensor, mask: torch.Tensor, new: int, cache: str) -> tuple[torch.Tensor, float]:
    opts: dict[str, Any] = {"max_new_tokens": new, "min_new_tokens": new, "do_sample": False, "pad_token_id": 0}
    if cache == "static":
        opts.update(cache_implementation="static", disable_compile=True)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(input_ids=ids, attention_mask=mask, **opts)
    torch.cuda.synchronize()
    return out[:, ids.shape[1]:].cpu(), time.perf_counter() - t0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, default=2048)
    p.add_argument("--new-tokens", type=int, default=128)
    p.add_argument("--prompt-tokens", type=int, nargs=2, default=(40, 120), metavar=("MIN", "MAX"))
    p.add_argument("--out", default=None, help="write the results as JSON here")
    args = p.parse_args()
    if not torch.cuda.is_available():
        p.error("needs a CUDA GPU: this measures GPU generation")
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**SMOLLM2_135M)).to("cuda", torch.bfloat16).eval()
    ids, mask = _prompts(args.batch, *args.prompt_tokens, SMOLLM2_135M["vocab_size"], "cuda")
    small_ids, small_mask = ids[:64], mask[:64]
    results: dict[str, Any] = {
        "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "transformers": transformers.__version__,
        "python": platform.python_version(), "batch": args.batch, "new_tokens": args.new_tokens,
        "prompt_tokens": list(args.prompt_tokens), "variants": {}}
    outputs = {}
    for cache in ("dynamic", "static"):
        _run(model, small_ids, small_mask, 8, cache)  # warm-up: kernels, allocator
        torch.cuda.reset_peak_memory_stats()
        out, seconds = _run(model, ids, mask, args.new_tokens, cache)
        outputs[cache] = out
        toks = out.numel()
        results["variants"][cache] = {"seconds": round(seconds, 3), "tokens_per_s": round(toks / seconds),
                                      "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2)}
        print(f"{cache:8s} {toks:,} tokens in {seconds:.2f}s = {toks / seconds:,.0f} tok/s, "
              f"peak {results['variants'][cache]['peak_gib']} GiB", flush=True)
    dyn, sta = results["variants"]["dynamic"], results["variants"]["static"]
    results["static_over_dynamic"] = round(sta["tokens_per_s"] / dyn["tokens_per_s"], 3)
    same = (outputs["dynamic"] == outputs["static"]).float().mean().item()
    results["tokens_equal_share"] = round(same, 4)
    print(f"static / dynamic: {results['static_over_dynamic']}x; greedy tokens equal: {100 * same:.2f}%", flush=True)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
