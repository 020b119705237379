"""Stage: measure how well an exported EAGLE-3 draft predicts its target.

Offline greedy speculative decoding of every held-out prompt at once
(:mod:`pipeline.speculative`): each round the drafter proposes a chain of K
tokens, the target scores them in one batched forward and each prompt keeps the
longest prefix equal to the target's argmax, plus one token of its own. KV
caches of the target and the draft make a round cost O(new tokens).
Acceptance length = 1 + accepted / rounds (tokens per target forward);
per-position acceptance = fraction of rounds whose j-th draft token was kept.

Lossless check: every kept token is the target's argmax, so each prompt's
output must equal plain greedy decoding in the same dtype, token for token.
A prompt that departs from greedy where greedy's top-2 logit margin exceeds
``--tie-margin`` fails the stage (exit 1); departures at a near-tie (possible in
bf16, where two decodings round differently) are counted and reported apart.

Next-token accuracy along the greedy outputs (``next_token_accuracy``): the
draft's first proposal checked at every drafted position of the greedy text,
teacher-forced, so it is comparable with the training batches' position-1
accuracy. Per-round position-1 acceptance is lower than this by construction:
a round begins right after a rejection, where the text is hard to predict.
``draft_vocab_coverage`` is that accuracy's ceiling: the share of the same
positions whose greedy token the draft vocabulary holds.

Baselines on the same prompts: the same draft architecture untrained
(initialised exactly as training starts) and prompt-lookup (n-gram) decoding.
``--curve CKPT_DIR`` also measures every epoch checkpoint the train stage kept
(the learning curve: acceptance length against training tokens and epochs).

Speed (``--speed-batches 1 8 64``, :mod:`pipeline.decode_speed`): wall-clock
latency per request and tokens/s of greedy, the draft and prompt lookup at each
batch size, the drafter's own cost included; ``--speed-only`` measures just that
(for a dtype where the lossless check is not exact, such as bf16).

The summary says, at each K, whether the draft beats prompt lookup; ``--note``
adds a line of context beside it (the demo says there what a small CPU run can
and cannot show, and where the GPU figures are).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

from pipeline.common import (
    StageError,
    atomic_write_json,
    iter_jsonl,
    log,
    make_parser,
    progress,
    run_stage,
)
from pipeline.decode_speed import measure_speed
from pipeline.speculative import (
    DecodeResult,
    EagleDrafter,
    NgramDrafter,
    decode,
    right_padded,
)
from pipeline.target_capture import TargetCapture

__all__ = ["compare_to_greedy", "draft_vocab_coverage", "load_checkpoint_draft", "load_exported_draft", "main",
           "next_token_accuracy", "run_evaluate"]


def load_exported_draft(draft_dir: str | Path, embed_weight: torch.Tensor, dtype: Any, device: Any) -> Any:
    """Build an :class:`Eagle3Draft` from an exported directory (the files the servers load)."""
    from safetensors.torch import load_file

    from pipeline.eagle3_model import DraftConfig, Eagle3Draft

    d = Path(draft_dir)
    cfg = json.loads((d / "config.json").read_text(encoding="utf-8"))
    info = cfg.get("eagle3tui", {})
    dc = DraftConfig(
        hidden_size=cfg["hidden_size"], target_hidden_size=cfg["target_hidden_size"],
        intermediate_size=cfg["intermediate_size"], num_attention_heads=cfg["num_attention_heads"],
        num_key_value_heads=cfg["num_key_value_heads"], head_dim=cfg["head_dim"], vocab_size=cfg["vocab_size"],
        draft_vocab_size=cfg["draft_vocab_size"], rms_norm_eps=cfg["rms_norm_eps"], rope_theta=cfg["rope_theta"],
        max_position_embeddings=cfg["max_position_embeddings"],
        num_target_layers=info.get("num_target_layers", 0),
        aux_layers=info.get("trained_on_layer_outputs_0based") or cfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"],
    )
    draft = Eagle3Draft(dc)
    w = load_file(str(d / "model.safetensors"))
    w["embed_tokens.weight"] = embed_weight.detach().cpu()
    draft.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in w.items()})
    return draft.to(device=device, dtype=dtype).eval()


def _prompts(args: Any, tok: Any) -> list[list[int]]:
    """Held-out prompts as token ids: from a prepared dataset (the non-loss prefix) or a JSONL file."""
    out: list[list[int]] = []
    if args.prepared_data:
        from pipeline.tokenized_dataset import TokenizedDataset

        ds = TokenizedDataset(args.prepared_data)
        for i in range(args.start, min(len(ds), args.start + args.num_prompts)):
            _sid, ids, mask = ds[i]
            first = int(mask.argmax()) if mask.any() else len(ids)
            if first > 0:
                out.append(ids[:first].tolist())
    else:
        for n, (_line, rec) in enumerate(iter_jsonl(Path(args.prompts), fix="one JSON object per line")):
            if n < args.start:
                continue
            msgs = (rec.get("messages") or rec.get("conversations")
                    or [{"role": "user", "content": rec.get("prompt", "")}])
            last_user = max((i for i, m in enumerate(msgs) if m.get("role") == "user"), default=-1)
            msgs = [{"role": m["role"], "content": m["content"]} for m in msgs[: last_user + 1]]
            # Render to text, then tokenize: apply_chat_template(tokenize=True) returns a list in
            # transformers 4.x but a BatchEncoding in 5.x.
            text = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
            out.append(list(tok(text, add_special_tokens=False)["input_ids"]))
            if len(out) >= args.num_prompts:
                break
    if not out:
        raise StageError("no prompts found\n  fix: pass --prepared-data with --start/--num-prompts, or --prompts FILE")
    return out


def load_checkpoint_draft(path: str | Path, embed_weight: torch.Tensor, dtype: Any, device: Any) -> tuple[Any, dict]:
    """A draft from a train-stage checkpoint file (``checkpoint-*.pt`` or ``epoch-*.pt``), and the file's state."""
    from pipeline.eagle3_model import DraftConfig, Eagle3Draft

    state = torch.load(path, map_location="cpu", weights_only=False)
    draft = Eagle3Draft(DraftConfig(**state["draft_config"]))
    w = dict(state["model"])
    w["embed_tokens.weight"] = embed_weight.detach().cpu()
    draft.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in w.items()})
    return draft.to(device=device, dtype=dtype).eval(), state


def compare_to_greedy(got: list[list[int]], greedy: DecodeResult, tie_margin: float) -> dict[str, Any]:
    """Token-for-token comparison with plain greedy decoding.

    A departure where greedy's top-2 margin is at most ``tie_margin`` is a
    numerical near-tie; any other departure is a failure of losslessness.
    """
    exact, ties, failures = 0, [], []
    for pi, (a, ref) in enumerate(zip(got, greedy.tokens)):
        if a == ref:
            exact += 1
            continue
        first = next((j for j, (x, y) in enumerate(zip(a, ref)) if x != y), min(len(a), len(ref)))
        margin = greedy.margins[pi][first] if first < len(greedy.margins[pi]) else float("nan")
        rec = {"prompt": pi, "first_difference": first, "greedy_margin": margin, "len_spec": len(a),
               "len_greedy": len(ref)}
        (ties if margin <= tie_margin else failures).append(rec)
    return {"exact": exact, "total": len(got), "near_ties": ties, "failures": failures}


@torch.inference_mode()
def next_token_accuracy(target: TargetCapture, prompts: list[list[int]], outputs: list[list[int]], draft: Any,
                        batch_size: int) -> float:
    """Share of drafted positions of ``outputs`` where the draft's first proposal is the next greedy token.

    One target forward over each prompt + its greedy output gives every
    position's features; row t (features of t, token t+1) predicts token t+2,
    as in training's step 0. Counted: the tokens a drafter proposes, i.e. the
    output's second token onwards (the first comes from the prompt's prefill).
    """
    hits = total = 0
    dev = target.device
    for s in range(0, len(prompts), batch_size):
        ids, lengths = right_padded([p + o for p, o in zip(prompts[s : s + batch_size], outputs[s : s + batch_size])],
                                    dev)
        b, width = ids.shape
        lengths = lengths[:, None]
        first_drafted = torch.tensor([len(p) + 1 for p in prompts[s : s + batch_size]], device=dev)[:, None]
        pos = torch.arange(width, device=dev)[None, :].expand(b, width)
        _logits, aux, _cache = target.decode_step(ids, pos, (pos < lengths).long(), None)
        pad = torch.zeros((b, 2), dtype=ids.dtype, device=dev)
        nxt, after = torch.cat([ids[:, 1:], pad[:, :1]], dim=1), torch.cat([ids[:, 2:], pad], dim=1)
        logits, _hidden, _ctx = draft.extend_context(nxt, aux, pos, pos + 1 < lengths, None)
        pred = draft.draft_target_ids(logits.argmax(-1))
        counted = (pos + 2 < lengths) & (pos + 2 >= first_drafted)
        hits += int(((pred == after) & counted).sum())
        total += int(counted.sum())
    return hits / total if total else float("nan")


def draft_vocab_coverage(outputs: list[list[int]], t2d: torch.Tensor) -> float:
    """Share of the drafted positions of ``outputs`` whose greedy token is in the draft vocabulary.

    The same positions ``next_token_accuracy`` counts (each output's second
    token onwards), so it is that accuracy's ceiling: a token outside the
    draft vocabulary can never be proposed. The vocab stage reports the same
    share over the training answers; a much lower figure here means the
    held-out text needs tokens the training data rarely used.
    """
    drafted = [t for o in outputs for t in o[1:]]
    if not drafted:
        return float("nan")
    return float(t2d.bool()[torch.tensor(drafted, dtype=torch.long)].float().mean())


def _method_record(res: DecodeResult, check: dict[str, Any]) -> dict[str, Any]:
    st = res.stats
    return {
        "k": st.k, "rounds": st.rounds, "accepted": st.accepted, "proposed": st.proposed,
        "acceptance_length": st.acceptance_length(), "per_position_acceptance": st.per_position_rate(),
        "tokens": st.tokens, "seconds": round(st.seconds, 3),
        "tokens_per_s": st.tokens / st.seconds if st.seconds else None,
        "lossless": f"{check['exact']}/{check['total']}", "near_tie_count": len(check["near_ties"]),
        "failure_count": len(check["failures"]), "near_ties": check["near_ties"][:5], "failures": check["failures"][:5],
    }


def _batches(prompts: list[list[int]], size: int) -> list[list[list[int]]]:
    return [prompts[i : i + size] for i in range(0, len(prompts), size)]


def _decode_all(target: TargetCapture, prompts: list[list[int]], args: Any, eos: set[int],
                drafter: Any = None, k: int = 0) -> DecodeResult:
    """:func:`decode` over ``--batch-size`` chunks, merged into one result."""
    merged: DecodeResult | None = None
    for chunk in _batches(prompts, args.batch_size):
        res = decode(target, chunk, args.max_new_tokens, eos, drafter, k)
        if merged is None:
            merged = res
            continue
        merged.tokens += res.tokens
        merged.margins += res.margins
        a, b = merged.stats, res.stats
        a.rounds += b.rounds
        a.accepted += b.accepted
        a.proposed += b.proposed
        a.tokens += b.tokens
        a.seconds += b.seconds
        a.per_position = [x + y for x, y in zip(a.per_position, b.per_position)]
    assert merged is not None
    return merged


def run_evaluate(args: Any) -> int:
    """Run the stage; returns the exit code (1 when the lossless check fails)."""
    from pipeline import model_io

    device = model_io.resolve_device(args.device)
    dtype = model_io.resolve_dtype(args.dtype, device)
    if args.tie_margin is None:
        args.tie_margin = 0.0 if dtype == torch.float32 else 0.1
    if device.startswith("cuda"):
        # Two decodings of the same target are compared token for token; TF32 would only add noise.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    t0 = time.monotonic()
    log(f"evaluate: load: target {args.model} ({str(dtype).replace('torch.', '')}, {device})")
    model = model_io.load_model(args.model, args.gguf_file, dtype=dtype, device=device)
    tok = model_io.load_tokenizer(args.model, args.gguf_file) if args.prompts else None
    log(f"evaluate: load: ready in {time.monotonic() - t0:.1f}s")
    cfg_path = Path(args.draft) / "config.json"
    if not cfg_path.is_file():
        raise StageError(f"{cfg_path}: missing\n  fix: pass the export stage's --out directory as --draft")
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    aux = cfg["eagle3tui"]["trained_on_layer_outputs_0based"]
    embed = model.get_input_embeddings().weight
    drafters: dict[str, Any] = {"eagle3": EagleDrafter(load_exported_draft(args.draft, embed, dtype, device))}
    from safetensors.torch import load_file

    maps = load_file(str(Path(args.draft) / "model.safetensors"))
    if "untrained" in args.baselines:
        from pipeline.eagle3_model import build_draft

        untrained = build_draft(model.config.to_dict(), embed.detach().cpu().float(),
                                model.get_output_embeddings().weight.detach().cpu().float(), maps["d2t"], maps["t2d"],
                                aux_layers=aux, seed=args.seed)
        drafters["untrained"] = EagleDrafter(untrained.to(device=device, dtype=dtype).eval())
    if "ngram" in args.baselines:
        drafters["ngram"] = NgramDrafter()
    eos: set[int] = set()
    e = model.config.eos_token_id if args.eos is None else args.eos
    eos.update(e if isinstance(e, list) else ([e] if e is not None else []))
    target = TargetCapture(model, aux)
    prompts = _prompts(args, tok)
    if args.speed_only:
        speed = _speed(args, target, prompts, eos, drafters)
        results = {"target": str(args.model), "draft": str(args.draft), "dtype": str(dtype).replace("torch.", ""),
                   "device": device, "prompts": len(prompts), "max_new_tokens": args.max_new_tokens, "speed": speed}
        if args.out:
            atomic_write_json(args.out, results)
        _print_speed(speed)
        return 0
    runs = [(name, k) for name in drafters for k in args.k]
    bar = progress(1 + len(runs), desc="evaluate", unit="run")
    t_all = time.monotonic()
    greedy = _decode_all(target, prompts, args, eos)
    bar.update(1)
    methods: dict[str, dict[str, Any]] = {}
    checks: dict[str, dict[str, Any]] = {}
    for name, k in runs:
        res = _decode_all(target, prompts, args, eos, drafters[name], k)
        checks[f"{name}@K={k}"] = check = compare_to_greedy(res.tokens, greedy, args.tie_margin)
        methods[f"{name}@K={k}"] = _method_record(res, check)
        bar.update(1)
    bar.close()
    accuracy = {name: next_token_accuracy(target, prompts, greedy.tokens, d.draft, args.batch_size)
                for name, d in drafters.items() if isinstance(d, EagleDrafter)}
    coverage = draft_vocab_coverage(greedy.tokens, maps["t2d"])
    curve = _learning_curve(args, target, prompts, greedy, eos, embed, dtype, device) if args.curve else []
    speed = _speed(args, target, prompts, eos, drafters) if args.speed_batches else []
    elapsed = time.monotonic() - t_all
    n_tok = sum(len(g) for g in greedy.tokens)
    results = {
        "target": str(args.model), "draft": str(args.draft), "dtype": str(dtype).replace("torch.", ""),
        "device": device, "prompts": len(prompts), "max_new_tokens": args.max_new_tokens,
        "batch_size": args.batch_size, "tie_margin": args.tie_margin,
        "greedy": {"tokens": n_tok, "seconds": round(greedy.stats.seconds, 3),
                   "tokens_per_s": n_tok / greedy.stats.seconds if greedy.stats.seconds else None},
        "seconds": round(elapsed, 3),
        "prompt_tokens_per_minute": len(prompts) * args.max_new_tokens * 60.0 / elapsed if elapsed else None,
        "methods": methods,
        "next_token_accuracy": accuracy,
        "draft_vocab_coverage": coverage,
        "learning_curve": curve,
        "speed": speed,
    }
    if args.out:
        atomic_write_json(args.out, results)
    for k in args.k:
        parts = [f"{methods[f'{n}@K={k}']['acceptance_length']:.2f} ({n})" for n in drafters]
        main = methods[f"eagle3@K={k}"]
        pp = " ".join(f"{r:.2f}" for r in main["per_position_acceptance"])
        ties = len(checks[f"eagle3@K={k}"]["near_ties"])
        print(f"evaluate: K={k} acceptance length {', '.join(parts)}; eagle3 per-position [{pp}]; "
              f"lossless {main['lossless']} prompts" + (f" ({ties} near-tie departures)" if ties else ""),
              flush=True)
    acc_txt = ", ".join(f"{a:.3f} ({n})" for n, a in accuracy.items())
    print(f"evaluate: next-token accuracy along the greedy outputs (teacher-forced) {acc_txt}; "
          f"{100.0 * coverage:.2f}% of those tokens are in the draft vocabulary (the ceiling)", flush=True)
    if "ngram" in drafters:
        for line in _against_lookup(methods, args.k):
            print(line, flush=True)
    if args.note:
        print(f"evaluate: note: {args.note}", flush=True)
    _print_speed(speed)
    for point in curve:
        print(f"evaluate: curve: epoch {point['epoch']} ({point['train_tokens']:,} training tokens) "
              f"K={point['k']} acceptance length {point['acceptance_length']:.2f}, "
              f"next-token accuracy {point['next_token_accuracy']:.3f}", flush=True)
    print(f"evaluate: {len(prompts)} prompts x {args.max_new_tokens} new tokens, {len(runs) + 1 + len(curve)} "
          f"decodings in {elapsed:.1f}s ({results['prompt_tokens_per_minute']:,.0f} prompt-tokens/min per method "
          f"set); greedy {results['greedy']['tokens_per_s'] or 0:,.0f} tok/s", flush=True)
    bad = [m for m, c in checks.items() if c["failures"]]
    if bad:
        print(f"evaluate: FAIL: speculative output differs from plain greedy (beyond near-ties) for "
              f"{', '.join(bad)} (see {args.out or 'the results JSON'})", flush=True)
        return 1
    return 0


def _against_lookup(methods: dict[str, dict[str, Any]], ks: list[int]) -> list[str]:
    """One verdict line: does the draft beat prompt lookup at each K (acceptance length, same prompts)?"""
    parts, beats = [], []
    for k in ks:
        a, b = methods[f"eagle3@K={k}"]["acceptance_length"], methods[f"ngram@K={k}"]["acceptance_length"]
        beats.append(a > b)
        parts.append(f"K={k} {a:.2f} vs {b:.2f} ({a / b:.2f}x)")
    verdict = "beats" if all(beats) else ("does not beat" if not any(beats) else "beats only in part")
    return [f"evaluate: the draft {verdict} prompt lookup: {'; '.join(parts)}"]


def _speed(args: Any, target: TargetCapture, prompts: list[list[int]], eos: set[int],
           drafters: dict[str, Any]) -> list[dict[str, Any]]:
    """:func:`measure_speed` for greedy, the trained draft and prompt lookup at every K (the untrained one is skipped)."""
    methods: dict[str, Any] = {"greedy": (None, 0)}
    for name, d in drafters.items():
        if name == "untrained":
            continue
        factory = (lambda m=d.draft: EagleDrafter(m)) if isinstance(d, EagleDrafter) else NgramDrafter
        for k in args.k:
            methods[f"{name}@K={k}"] = (factory, k)
    return measure_speed(target, prompts, args.max_new_tokens, eos, methods, args.speed_batches or [1, 8, 64],
                         args.speed_requests)


def _print_speed(speed: list[dict[str, Any]]) -> None:
    for b in sorted({r["batch"] for r in speed}):
        rows = [r for r in speed if r["batch"] == b]
        parts = [f"{r['method']} {r['tokens_per_s']:,.0f} tok/s, {r['latency_s'] * 1000:,.0f} ms/request "
                 f"({r['speedup_over_greedy']:.2f}x)" for r in rows]
        print(f"evaluate: speed at batch {b} ({rows[0]['requests']} requests): {'; '.join(parts)}", flush=True)


def _learning_curve(args: Any, target: TargetCapture, prompts: list[list[int]], greedy: DecodeResult,
                    eos: set[int], embed: torch.Tensor, dtype: Any, device: str) -> list[dict[str, Any]]:
    """Acceptance length at the largest K of every ``epoch-*.pt`` in ``--curve``, in epoch order."""
    files = sorted(Path(args.curve).glob("epoch-*.pt"))
    if not files:
        raise StageError(f"{args.curve}: no epoch-*.pt checkpoints\n  fix: train with --keep-epochs N")
    k = max(args.k)
    points = []
    for f in files:
        draft, state = load_checkpoint_draft(f, embed, dtype, device)
        res = _decode_all(target, prompts, args, eos, EagleDrafter(draft), k)
        check = compare_to_greedy(res.tokens, greedy, args.tie_margin)
        points.append({"checkpoint": f.name, "epoch": state.get("epoch_float", state.get("epoch")),
                       "step": state["step"], "train_tokens": state.get("tokens_seen"), "k": k,
                       "acceptance_length": res.stats.acceptance_length(),
                       "per_position_acceptance": res.stats.per_position_rate(),
                       "next_token_accuracy": next_token_accuracy(target, prompts, greedy.tokens, draft,
                                                                  args.batch_size),
                       "lossless": f"{check['exact']}/{check['total']}"})
    return points


def build_parser() -> Any:
    """The stage's argparse parser."""
    p = make_parser("python -m pipeline.evaluate", "Offline speculative decoding: acceptance length of a draft.")
    p.add_argument("--draft", required=True, help="exported draft directory (pipeline.export)")
    p.add_argument("--model", default="smollm2", help="target: model dir, .gguf file, or 'smollm2'")
    p.add_argument("--gguf-file", default=None)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--prepared-data", help="tokenized dataset; prompts = each sample's non-loss prefix")
    src.add_argument("--prompts",
                     help="JSONL with {\"prompt\"}, {\"messages\"} or prepare's {\"conversations\"} per line")
    p.add_argument("--start", type=int, default=0,
                   help="first sample of --prepared-data (or first record of --prompts) to use: the held-out ones")
    p.add_argument("--num-prompts", type=int, default=64)
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--k", type=int, nargs="+", default=[3, 7], help="draft chain lengths")
    p.add_argument("--baselines", nargs="*", default=["untrained", "ngram"], choices=["untrained", "ngram"])
    p.add_argument("--batch-size", type=int, default=64, help="prompts decoded together")
    p.add_argument("--eos", type=int, default=None, help="stop token id (default: the target config's)")
    p.add_argument("--seed", type=int, default=0, help="init seed of the untrained baseline (train's --seed)")
    p.add_argument("--device", default="auto")
    p.add_argument("--dtype", default="float32",
                   help="target/draft dtype: float32 keeps the lossless check exact; bfloat16 (or auto: bf16 on GPU) "
                        "decodes faster but departs from plain greedy wherever rounding differs between batch "
                        "shapes (see docs/pipeline-model.md)")
    p.add_argument("--tie-margin", type=float, default=None,
                   help="a departure from greedy where its top-2 logit margin is at most this is a near-tie, "
                        "not a failure (default: 0 in float32, 0.1 otherwise)")
    p.add_argument("--curve", default=None, help="train --out directory: also measure its epoch-*.pt checkpoints")
    p.add_argument("--speed-batches", type=int, nargs="*", default=[], metavar="B",
                   help="also time greedy, the draft and prompt lookup at these batch sizes (e.g. 1 8 64): latency "
                        "per request and tokens/s, the drafter's cost included")
    p.add_argument("--speed-requests", type=int, default=8,
                   help="prompts each batch size decodes at least (batch 1: that many timed requests)")
    p.add_argument("--speed-only", action="store_true",
                   help="only the speed measurement (--speed-batches, default 1 8 64); no acceptance or lossless check")
    p.add_argument("--note", default=None, help="a line printed beside the results (what this run can show)")
    p.add_argument("--out", default=None, help="write the full results as JSON here")
    return p


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: ``python -m pipeline.evaluate``."""
    return run_stage(build_parser(), run_evaluate, argv)


if __name__ == "__main__":
    sys.exit(main())
