"""Stage: measure how well an exported EAGLE-3 draft predicts its target.

Offline speculative decoding with greedy verification: each round the drafter
proposes a chain of K tokens, the target scores them in one forward pass and
keeps the longest prefix that equals its own argmax, plus one token of its own.
Acceptance length = 1 + accepted / rounds (tokens per target forward);
per-position acceptance = fraction of rounds whose j-th draft token was kept.
Because every kept token is the target's argmax, the output must equal plain
greedy decoding token for token; that is checked for every prompt (the
"lossless" check) and a mismatch fails the stage.

Baselines on the same prompts: the same draft architecture untrained
(initialised exactly as training starts) and prompt-lookup (n-gram) decoding.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
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
from pipeline.target_capture import TargetCapture

__all__ = [
    "EagleDrafter",
    "NgramDrafter",
    "SpecStats",
    "greedy_generate",
    "load_exported_draft",
    "main",
    "run_evaluate",
    "speculative_generate",
]


@torch.inference_mode()
def greedy_generate(target: TargetCapture, prompt: list[int], max_new: int, eos: set[int]) -> list[int]:
    """Plain greedy decoding, one token per target forward (the lossless reference)."""
    logits, _aux, cache = target.step(prompt, None)
    outp: list[int] = []
    nxt = int(logits[-1].argmax())
    while True:
        outp.append(nxt)
        if nxt in eos or len(outp) >= max_new:
            return outp
        logits, _aux, cache = target.step([nxt], cache)
        nxt = int(logits[-1].argmax())


class EagleDrafter:
    """Proposes a greedy chain of K tokens with an EAGLE-3 draft (same attention as TTT training)."""

    def __init__(self, draft: Any) -> None:
        self.draft = draft

    @torch.inference_mode()
    def propose(self, seq: list[int], feats: torch.Tensor, k: int) -> list[int]:
        """``feats`` [n, 3H] are the target features of seq[0..n-1]; seq[n] is the next (known) token."""
        d = self.draft
        n = feats.shape[0]
        dev = feats.device
        tokens = torch.tensor([seq[1 : n + 1]], device=dev)
        hidden = d.fuse(feats[None].to(d.fc.weight.dtype))
        cache: list[tuple[torch.Tensor, torch.Tensor]] = []
        logits, g = d.step(tokens, hidden, torch.arange(n, device=dev)[None], cache)
        last = logits[0, -1].argmax()
        out = [int(d.draft_target_ids(last))]
        qi = torch.tensor([n - 1], device=dev)
        hid = g[:, -1:]
        for j in range(1, k):
            tok = torch.tensor([[out[-1]]], device=dev)
            logits, hid = d.step(tok, hid, torch.tensor([[n - 1 + j]], device=dev), cache, query_index=qi)
            out.append(int(d.draft_target_ids(logits[0, -1].argmax())))
        return out


class NgramDrafter:
    """Prompt-lookup decoding: copy what followed the latest earlier occurrence of the last n tokens."""

    def __init__(self, max_n: int = 3, min_n: int = 1) -> None:
        self.max_n, self.min_n = max_n, min_n

    def propose(self, seq: list[int], _feats: torch.Tensor, k: int) -> list[int]:
        """Return up to ``k`` tokens (possibly none)."""
        for n in range(self.max_n, self.min_n - 1, -1):
            if len(seq) <= n:
                continue
            tail = seq[-n:]
            for start in range(len(seq) - n - 1, -1, -1):
                if seq[start : start + n] == tail:
                    cont = seq[start + n : start + n + k]
                    if cont:
                        return cont
        return []


@dataclass
class SpecStats:
    """Counts over all rounds of one method at one K."""

    k: int
    rounds: int = 0
    accepted: int = 0
    proposed: int = 0
    per_position: list[int] = field(default_factory=list)
    tokens: int = 0
    seconds: float = 0.0
    lossless_ok: int = 0
    lossless_total: int = 0
    mismatches: list[dict[str, Any]] = field(default_factory=list)

    def acceptance_length(self) -> float:
        """1 + accepted / rounds: tokens produced per target forward."""
        return 1.0 + self.accepted / self.rounds if self.rounds else float("nan")

    def per_position_rate(self) -> list[float]:
        """Fraction of rounds whose j-th draft token was accepted, j = 1..K."""
        return [c / self.rounds if self.rounds else float("nan") for c in self.per_position]

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "k": self.k, "rounds": self.rounds, "accepted": self.accepted, "proposed": self.proposed,
            "acceptance_length": self.acceptance_length(), "per_position_acceptance": self.per_position_rate(),
            "tokens": self.tokens, "tokens_per_s": self.tokens / self.seconds if self.seconds else None,
            "lossless": f"{self.lossless_ok}/{self.lossless_total}", "mismatches": self.mismatches[:5],
        }


@torch.inference_mode()
def speculative_generate(
    target: TargetCapture, drafter: Any, prompt: list[int], max_new: int, k: int, eos: set[int], stats: SpecStats
) -> list[int]:
    """Greedy speculative decoding; returns the generated tokens and updates ``stats``."""
    if not stats.per_position:
        stats.per_position = [0] * k
    logits, feats, cache = target.step(prompt, None)
    seq = list(prompt) + [int(logits[-1].argmax())]
    gen = [seq[-1]]
    while gen[-1] not in eos and len(gen) < max_new:
        props = drafter.propose(seq, feats, k)[:k]
        logits, aux, cache = target.step([seq[-1]] + props, cache)
        preds = logits.argmax(-1).tolist()
        a = 0
        while a < len(props) and props[a] == preds[a]:
            a += 1
        new = props[:a] + [preds[a]]
        feats = torch.cat([feats, aux[: a + 1]], dim=0)
        # Drop the rejected proposals' keys/values. A negative crop removes that many
        # tokens in every transformers version (positive values changed meaning in 5.x).
        extra = cache.get_seq_length() - (len(seq) + a)
        if extra > 0:
            cache.crop(-extra)
        stats.rounds += 1
        stats.accepted += a
        stats.proposed += len(props)
        for j in range(a):
            stats.per_position[j] += 1
        seq.extend(new)
        gen.extend(new)
        for j, t in enumerate(gen):
            if t in eos:
                gen = gen[: j + 1]
                break
    return gen[:max_new]


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
        for _n, rec in iter_jsonl(Path(args.prompts), fix="one JSON object per line"):
            msgs = rec.get("messages") or [{"role": "user", "content": rec.get("prompt", "")}]
            msgs = [m for m in msgs if m.get("role") != "assistant"]
            # Render to text, then tokenize: apply_chat_template(tokenize=True) returns a list in
            # transformers 4.x but a BatchEncoding in 5.x.
            text = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
            out.append(list(tok(text, add_special_tokens=False)["input_ids"]))
            if len(out) >= args.num_prompts:
                break
    if not out:
        raise StageError("no prompts found\n  fix: pass --prepared-data with --start/--num-prompts, or --prompts FILE")
    return out


def run_evaluate(args: Any) -> int:
    """Run the stage; returns the exit code (1 when the lossless check fails)."""
    from pipeline import model_io

    device = model_io.resolve_device(args.device)
    dtype = model_io.resolve_dtype(args.dtype, device)
    if device.startswith("cuda"):
        # The lossless check compares two decodings of the same target; TF32 would add noise.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    t0 = time.monotonic()
    log(f"evaluate: load: target {args.model} ({dtype}, {device})")
    model = model_io.load_model(args.model, args.gguf_file, dtype=dtype, device=device)
    tok = model_io.load_tokenizer(args.model, args.gguf_file) if args.prompts else None
    log(f"evaluate: load: ready in {time.monotonic() - t0:.1f}s")
    cfg = json.loads((Path(args.draft) / "config.json").read_text(encoding="utf-8"))
    aux = cfg["eagle3tui"]["trained_on_layer_outputs_0based"]
    embed = model.get_input_embeddings().weight
    drafters: dict[str, Any] = {"eagle3": EagleDrafter(load_exported_draft(args.draft, embed, dtype, device))}
    if "untrained" in args.baselines:
        from pipeline.eagle3_model import build_draft

        d2t_t2d = __import__("safetensors.torch", fromlist=["load_file"]).load_file(
            str(Path(args.draft) / "model.safetensors"))
        tcfg = model.config.to_dict()
        untrained = build_draft(tcfg, embed.detach().cpu().float(), model.get_output_embeddings().weight.detach().cpu()
                                .float(), d2t_t2d["d2t"], d2t_t2d["t2d"], aux_layers=aux, seed=args.seed)
        drafters["untrained"] = EagleDrafter(untrained.to(device=device, dtype=dtype).eval())
    if "ngram" in args.baselines:
        drafters["ngram"] = NgramDrafter()
    eos: set[int] = set()
    e = model.config.eos_token_id if args.eos is None else args.eos
    eos.update(e if isinstance(e, list) else ([e] if e is not None else []))
    target = TargetCapture(model, aux)
    prompts = _prompts(args, tok)
    stats = {(name, k): SpecStats(k) for name in drafters for k in args.k}
    bar = progress(len(prompts), desc="evaluate", unit="prompt")
    greedy_tokens, greedy_s = 0, 0.0
    for pi, prompt in enumerate(prompts):
        t = time.monotonic()
        ref = greedy_generate(target, prompt, args.max_new_tokens, eos)
        greedy_s += time.monotonic() - t
        greedy_tokens += len(ref)
        for (name, k), st in stats.items():
            t = time.monotonic()
            got = speculative_generate(target, drafters[name], prompt, args.max_new_tokens, k, eos, st)
            st.seconds += time.monotonic() - t
            st.tokens += len(got)
            st.lossless_total += 1
            if got == ref:
                st.lossless_ok += 1
            else:
                first = next((j for j, (a, b) in enumerate(zip(got, ref)) if a != b), min(len(got), len(ref)))
                st.mismatches.append({"prompt": pi, "first_difference": first, "len_spec": len(got),
                                      "len_greedy": len(ref)})
        bar.update(1)
    bar.close()
    results = {
        "target": str(args.model), "draft": str(args.draft), "dtype": str(dtype), "device": device,
        "prompts": len(prompts), "max_new_tokens": args.max_new_tokens,
        "greedy_tokens_per_s": greedy_tokens / greedy_s if greedy_s else None,
        "methods": {f"{name}@K={k}": st.to_dict() for (name, k), st in stats.items()},
    }
    if args.out:
        atomic_write_json(args.out, results)
    ok = True
    for k in args.k:
        parts = []
        for name in drafters:
            st = stats[(name, k)]
            parts.append(f"{st.acceptance_length():.2f} ({name})")
            ok &= st.lossless_ok == st.lossless_total
        main_st = stats[("eagle3", k)]
        pp = " ".join(f"{r:.2f}" for r in main_st.per_position_rate())
        print(f"evaluate: K={k} acceptance length {', '.join(parts)}; eagle3 per-position [{pp}]; "
              f"lossless {main_st.lossless_ok}/{main_st.lossless_total} prompts", flush=True)
    if not ok:
        bad = [f"{n}@K={k}" for (n, k), st in stats.items() if st.lossless_ok != st.lossless_total]
        print(f"evaluate: FAIL: speculative output differs from plain greedy for {', '.join(bad)} "
              f"(see {args.out or 'the results JSON'})", flush=True)
        return 1
    return 0


def build_parser() -> Any:
    """The stage's argparse parser."""
    p = make_parser("python -m pipeline.evaluate", "Offline speculative decoding: acceptance length of a draft.")
    p.add_argument("--draft", required=True, help="exported draft directory (pipeline.export)")
    p.add_argument("--model", default="smollm2", help="target: model dir, .gguf file, or 'smollm2'")
    p.add_argument("--gguf-file", default=None)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--prepared-data", help="prepared dataset; prompts = each sample's non-loss prefix")
    src.add_argument("--prompts", help="JSONL file with {\"prompt\": ...} or {\"messages\": [...]} per line")
    p.add_argument("--start", type=int, default=0, help="first sample of --prepared-data to use (held out)")
    p.add_argument("--num-prompts", type=int, default=16)
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--k", type=int, nargs="+", default=[3, 7], help="draft chain lengths")
    p.add_argument("--baselines", nargs="*", default=["untrained", "ngram"], choices=["untrained", "ngram"])
    p.add_argument("--eos", type=int, default=None, help="stop token id (default: the target config's)")
    p.add_argument("--seed", type=int, default=0, help="init seed of the untrained baseline (train's --seed)")
    p.add_argument("--device", default="auto")
    p.add_argument("--dtype", default="float32", help="target/draft dtype; float32 keeps the lossless check exact")
    p.add_argument("--out", default=None, help="write the full results as JSON here")
    return p


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: ``python -m pipeline.evaluate``."""
    return run_stage(build_parser(), run_evaluate, argv)


if __name__ == "__main__":
    sys.exit(main())
