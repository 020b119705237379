"""regenerate's local backend on a GPU: transformers' generate against the slot decoder, as a ratio.

Two modes, one JSON result:

* **Random weights** (default; no download): SmolLM2-135M's architecture built
  from its config, bf16, the same left-padded random prompts for both decoders
  (``pipeline.local_generate.decode_generate`` is today's path, batch
  ``--batch`` at a time; ``pipeline.slot_decode`` keeps ``--batch`` cache rows).
  Random weights never say end-of-turn, so every answer runs to
  ``--new-tokens``: this isolates the cost of a step (cache, attention), not
  the gain of retiring finished rows. ``--float32-check N`` also decodes N
  prompts with both decoders in float32 and counts the answers that are
  identical (they must all be).
* **A real target** (``--model DIR --prompts JSONL``): the stage itself,
  ``python -m pipeline.regenerate --backend local``, run once per decoder on the
  same prompts (``--samples-per-prompt`` repeats them, as resample does), so
  the ratio is what the product gets, answers of real lengths included. Both
  summaries' tok/s and wall, and the share of answers identical by id.

In bf16 two correct greedy decoders may part where the top two logits tie
after rounding (a different batch shape rounds differently); the share of
identical answers is reported, and the float32 check is the exactness test.

    python bench/bench_local_generate.py --batch 2048 --new-tokens 128 --float32-check 64 --out r.json
    python bench/bench_local_generate.py --model DIR --prompts prompts.jsonl --batch 4096 --new-tokens 320
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.local_generate import decode_generate
from pipeline.slot_decode import decode_slots, plan_slots

SMOLLM2_135M = {"vocab_size": 49152, "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
                "num_attention_heads": 9, "num_key_value_heads": 3, "max_position_embeddings": 8192,
                "rope_theta": 100000.0, "tie_word_embeddings": True, "bos_token_id": 1, "eos_token_id": 2}


def _prompts(n: int, lo: int, hi: int, vocab: int) -> list[list[int]]:
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(lo, hi + 1, (n,), generator=g).tolist()
    return [torch.randint(3, vocab, (m,), generator=g).tolist() for m in lengths]


def _decode(model: Any, decoder: str, prompts: list[list[int]], new: int, batch: int) -> tuple[dict[int, list[int]],
                                                                                           float]:
    order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
    end = [2]
    got: dict[int, list[int]] = {}
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    with torch.inference_mode():
        if decoder == "generate":
            for answers in decode_generate(model, 0, prompts, order, batch, new, end, None, None, "cuda"):
                got.update({i: ids for i, ids, _ in answers})
        else:
            dtype = next(model.parameters()).dtype
            plan = plan_slots(model, max(map(len, prompts)), new, batch, None, dtype)
            for done in decode_slots(model, prompts, new, end, plan, order=order):
                got.update({f.index: f.ids for f in done})
    torch.cuda.synchronize()
    return got, time.perf_counter() - t0


def _same(a: dict[int, list[int]], b: dict[int, list[int]]) -> dict[str, Any]:
    keys = sorted(set(a) & set(b))
    exact = sum(a[k] == b[k] for k in keys)
    firsts = [next((j for j, (x, y) in enumerate(zip(a[k], b[k])) if x != y), min(len(a[k]), len(b[k])))
              for k in keys if a[k] != b[k]]
    return {"answers": len(keys), "identical": exact, "identical_share": round(exact / len(keys), 4) if keys else None,
            "first_difference_median": sorted(firsts)[len(firsts) // 2] if firsts else None}


def random_weights(args: argparse.Namespace) -> dict[str, Any]:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**SMOLLM2_135M)).to("cuda", torch.bfloat16).eval()
    prompts = _prompts(args.requests or args.batch, *args.prompt_tokens, SMOLLM2_135M["vocab_size"])
    res: dict[str, Any] = {"mode": "random weights", "variants": {}}
    outs = {}
    for decoder in ("generate", "slots"):
        _decode(model, decoder, prompts[:64], 8, 64)  # warm-up: kernels, allocator
        torch.cuda.reset_peak_memory_stats()
        outs[decoder], seconds = _decode(model, decoder, prompts, args.new_tokens, args.batch)
        toks = sum(len(x) for x in outs[decoder].values())
        res["variants"][decoder] = {"seconds": round(seconds, 3), "tokens": toks,
                                    "tokens_per_s": round(toks / seconds),
                                    "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2)}
        print(f"{decoder:8s} {toks:,} tokens in {seconds:.2f}s = {toks / seconds:,.0f} tok/s, "
              f"peak {res['variants'][decoder]['peak_gib']} GiB", flush=True)
    res["bf16_answers"] = _same(outs["generate"], outs["slots"])
    if args.float32_check:
        model = model.float()
        torch.backends.cuda.matmul.allow_tf32 = False
        sub = prompts[: args.float32_check]
        a, _ = _decode(model, "generate", sub, args.new_tokens, len(sub))
        b, _ = _decode(model, "slots", sub, args.new_tokens, max(1, len(sub) // 4))  # fewer rows: refills too
        res["float32_answers"] = _same(a, b)
        print(f"float32: {res['float32_answers']['identical']}/{len(sub)} answers identical", flush=True)
    return res


def _stage(args: argparse.Namespace, decoder: str, work: Path, batch: int | None = None) -> dict[str, Any]:
    name = decoder if batch is None else f"{decoder}@{batch}"
    out, summary = work / f"{name}.jsonl", work / f"{name}.json"
    out.unlink(missing_ok=True)  # regenerate resumes by id: a kept file from an earlier run would answer nothing
    cmd = [sys.executable, "-m", "pipeline.regenerate", "--backend", "local", "--model", args.model,
           "--input", args.prompts, "--output", str(out), "--summary", str(summary), "--max-tokens",
           str(args.new_tokens), "--batch-size", str(batch or args.batch), "--samples-per-prompt", str(args.samples),
           "--seed", "0", "--device", "cuda", "--dtype", args.dtype, "--decoder", decoder, "--no-progress"]
    cmd += ["--temperature", str(args.temperature)] + (["--top-p", str(args.top_p)] if args.top_p else [])
    if args.requests:
        cmd += ["--limit", str(args.requests)]
    t0 = time.perf_counter()
    run = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True,
                         check=False)
    wall = time.perf_counter() - t0
    sys.stderr.write(run.stderr[-3000:])
    if run.returncode != 0:
        raise SystemExit(f"regenerate --decoder {decoder} failed ({run.returncode})")
    s = json.loads(summary.read_text())
    answers = {}
    for line in out.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        answers[rec["id"]] = rec["conversations"][-1]["content"]
    return {"summary": s, "process_wall_s": round(wall, 1), "answers": answers}


def real_target(args: argparse.Namespace) -> dict[str, Any]:
    res: dict[str, Any] = {"mode": "regenerate stage", "model": args.model, "prompts": args.prompts,
                           "samples_per_prompt": args.samples, "temperature": args.temperature, "variants": {}}
    got = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep or tmp)
        work.mkdir(parents=True, exist_ok=True)
        for decoder in ("generate", "slots"):
            r = _stage(args, decoder, work)
            got[decoder] = r.pop("answers")
            s = r["summary"]
            tps = s.get("completion_tokens", 0) / s["wall_s"] if s.get("wall_s") else None
            res["variants"][decoder] = {"tokens": s.get("completion_tokens"), "seconds": s.get("wall_s"),
                                        "tokens_per_s": round(tps) if tps else None, **r}
            print(f"{decoder:8s} {s.get('completion_tokens'):,} tokens in {s.get('wall_s'):.1f}s = {tps:,.0f} tok/s",
                  flush=True)
        if args.compare_batch:
            # The same decoder at another batch size: how often bf16 alone makes two greedy runs part.
            r = _stage(args, "generate", work, args.compare_batch)
            got["generate@"] = r.pop("answers")
            res["variants"][f"generate@{args.compare_batch}"] = {"seconds": r["summary"].get("wall_s"), **r}
    res["answers"] = _same_text(got["generate"], got["slots"])
    if args.compare_batch:
        res["answers_generate_vs_generate_at_compare_batch"] = _same_text(got["generate"], got["generate@"])
        print(f"generate at batch {args.batch} vs {args.compare_batch}: "
              f"{json.dumps(res['answers_generate_vs_generate_at_compare_batch'])}", flush=True)
    return res


def _same_text(a: dict[str, str], b: dict[str, str]) -> dict[str, Any]:
    keys = sorted(set(a) & set(b))
    same = sum(a[k] == b[k] for k in keys)
    return {"compared": len(keys), "identical": same, "identical_share": round(same / len(keys), 4) if keys else None}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, default=2048, help="generate's batch and the slot decoder's cache rows")
    p.add_argument("--requests", type=int, default=None, help="prompts to answer (default: --batch / all)")
    p.add_argument("--new-tokens", type=int, default=128)
    p.add_argument("--prompt-tokens", type=int, nargs=2, default=(40, 120), metavar=("MIN", "MAX"))
    p.add_argument("--float32-check", type=int, default=0, metavar="N")
    p.add_argument("--model", default=None, help="a real target (model dir or .gguf): run the regenerate stage")
    p.add_argument("--prompts", default=None, help="with --model: prompts JSONL (prepare or synthesise output)")
    p.add_argument("--samples", type=int, default=1, help="with --model: --samples-per-prompt")
    p.add_argument("--temperature", type=float, default=0.0, help="with --model")
    p.add_argument("--top-p", type=float, default=None, help="with --model")
    p.add_argument("--dtype", default="auto", help="with --model: the stage's --dtype (float32: exactness check)")
    p.add_argument("--compare-batch", type=int, default=None,
                   help="with --model: also run generate at this batch size and compare it with generate")
    p.add_argument("--keep", default=None, help="with --model: keep each decoder's JSONL and summary here")
    p.add_argument("--out", default=None, help="write the results as JSON here")
    args = p.parse_args()
    if not torch.cuda.is_available():
        p.error("needs a CUDA GPU: this measures GPU generation")
    if (args.model is None) != (args.prompts is None):
        p.error("--model and --prompts go together")
    import transformers

    res = real_target(args) if args.model else random_weights(args)
    res.update({"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                "transformers": transformers.__version__, "python": platform.python_version(),
                "batch": args.batch, "new_tokens": args.new_tokens})
    g, s = res["variants"]["generate"], res["variants"]["slots"]
    res["slots_over_generate"] = round(s["tokens_per_s"] / g["tokens_per_s"], 3)
    print(f"slots / generate: {res['slots_over_generate']}x; "
          f"answers identical: {json.dumps(res.get('answers') or res.get('bf16_answers'))}", flush=True)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
