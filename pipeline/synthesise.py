"""Stage: synthesise diverse user prompts from the target itself (the "Magpie" technique).

No internet and no hand-written prompt list: the target's chat template is
rendered up to the start of a user turn, and the target, sampling, writes the
user's message. Batched transformers generation on the GPU (CPU works, slowly).

What comes out is filtered so it is worth training on:

* unfinished (no end-of-turn within ``--max-new-tokens``), too short, or still
  holding template markers: dropped;
* near-duplicates: dropped (MinHash over word 3-gram shingles with
  locality-sensitive banding, estimated Jaccard >= ``--dedup-threshold``);
* per-topic repetition capped: the topic of a prompt is its first
  ``--topic-words`` content words, and at most ``--max-per-topic`` prompts share one;
* held-out prompts (``--exclude``, e.g. prepare's ``--holdout-output``): their
  near-duplicates are dropped, so evaluation prompts never reach training.

Steering (``--steer JSONL --steer-share F``): left alone, a small target writes
mostly one kind of prompt (SmolLM2-135M: life and business advice), while the
traffic a draft serves is coding, maths, writing, explanations. A share F of
the rows then start the user's message with the first ``--steer-words`` words
of a prompt drawn from the user's own *training* prompts ("Write a Python",
"Prove that there") and the target writes the rest, so the mix of tasks follows
the user's prompts without copying them. Never pass held-out prompts here; the
held-out look-alike filter above still applies to every steered prompt.

Output: prepare's normalized JSONL (``{"id", "conversations": [{"role":
"user", ...}]}``) written atomically, and ``OUTPUT.json`` with the counts by
reason (the record of what was excluded and why).
"""

from __future__ import annotations

import hashlib
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from pipeline.common import (
    StageError,
    atomic_write_json,
    atomic_write_text,
    install_sigterm_flag,
    iter_jsonl,
    log,
    make_parser,
    progress,
    run_stage,
)

__all__ = ["MinHashIndex", "PromptFilter", "main", "run_synthesise", "topic_key", "user_turn_prefix"]

_WORD = re.compile(r"[a-z0-9']+")
# Words that say nothing about what a prompt is about; topic keys skip them.
_STOP = frozenset(
    "a an the and or but if of to in on for with about as at by from into is are was were be been being do does "
    "did can could would should will shall may might must i me my you your we our it its this that these those "
    "please write give explain tell describe list what how why which who when where some any more most "
    "short brief simple can you help provide need want like know make i'm i've im there here so also just "
    "create generate show find get use way ways good best new one two three few".split()
)
_SENTINEL = "\u2063MAGPIE\u2063"  # an invisible character pair no template contains


def user_turn_prefix(tokenizer: Any) -> str:
    """The chat template rendered up to where a user message's text begins.

    Rendered with a sentinel message and cut at the sentinel, so whatever the
    template puts first (a default system prompt, a BOS token) is kept.
    """
    text = tokenizer.apply_chat_template([{"role": "user", "content": _SENTINEL}], tokenize=False,
                                         add_generation_prompt=False)
    if _SENTINEL not in text:
        raise StageError("the chat template dropped the user message\n  fix: use a target with a chat template")
    return text[: text.index(_SENTINEL)]


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def topic_key(text: str, n: int) -> str:
    """The first ``n`` content words (stop words skipped): what a prompt is about, coarsely."""
    return " ".join([w for w in _words(text) if w not in _STOP][:n])


class MinHashIndex:
    """Near-duplicate detection: MinHash signatures of word 3-gram shingles, banded for sub-linear lookup.

    With ``bands`` x ``rows`` hashes, two texts of Jaccard similarity s share a
    band with probability 1 - (1 - s^rows)^bands; candidates are then checked
    against ``threshold`` on the estimated similarity (agreeing hashes / all).
    """

    def __init__(self, threshold: float = 0.6, bands: int = 16, rows: int = 4) -> None:
        self.threshold, self.bands, self.rows = threshold, bands, rows
        self.buckets: list[dict[bytes, list[int]]] = [{} for _ in range(bands)]
        self.signatures: list[list[int]] = []

    def signature(self, text: str) -> list[int]:
        """``bands * rows`` minimum hashes over the text's shingles (the words themselves for short texts)."""
        words = _words(text)
        shingles = {" ".join(words[i : i + 3]) for i in range(max(1, len(words) - 2))} or {""}
        sig = []
        for seed in range(self.bands * self.rows):
            salt = seed.to_bytes(4, "little")
            sig.append(min(int.from_bytes(hashlib.blake2b(s.encode(), digest_size=8, salt=salt).digest(), "little")
                           for s in shingles))
        return sig

    def find(self, sig: list[int]) -> int | None:
        """Index of a stored text estimated at least ``threshold`` similar, or None."""
        seen: set[int] = set()
        for b in range(self.bands):
            key = repr(sig[b * self.rows : (b + 1) * self.rows]).encode()
            for j in self.buckets[b].get(key, []):
                if j in seen:
                    continue
                seen.add(j)
                other = self.signatures[j]
                if sum(x == y for x, y in zip(sig, other)) / len(sig) >= self.threshold:
                    return j
        return None

    def add(self, sig: list[int]) -> int:
        """Store a signature; returns its index."""
        j = len(self.signatures)
        self.signatures.append(sig)
        for b in range(self.bands):
            self.buckets[b].setdefault(repr(sig[b * self.rows : (b + 1) * self.rows]).encode(), []).append(j)
        return j


class PromptFilter:
    """The filters of the module docstring, applied one prompt at a time; counts every verdict."""

    def __init__(self, dedup_threshold: float, max_per_topic: int, topic_words: int, min_words: int,
                 max_chars: int, markers: list[str]) -> None:
        self.index = MinHashIndex(dedup_threshold)
        self.excluded = MinHashIndex(dedup_threshold)
        self.max_per_topic, self.topic_words = max_per_topic, topic_words
        self.min_words, self.max_chars = min_words, max_chars
        self.markers = [m for m in markers if m]
        self.topics: Counter[str] = Counter()
        self.verdicts: Counter[str] = Counter()

    def exclude(self, text: str) -> None:
        """Register a held-out prompt: its near-duplicates will be rejected."""
        self.excluded.add(self.excluded.signature(text))

    def judge(self, text: str, finished: bool) -> bool:
        """True to keep ``text``; the reason is counted either way."""
        verdict = self._verdict(text.strip(), finished)
        self.verdicts[verdict] += 1
        return verdict == "kept"

    def _verdict(self, text: str, finished: bool) -> str:
        if not finished:
            return "unfinished"
        if len(_words(text)) < self.min_words:
            return "too short"
        if len(text) > self.max_chars:
            return "too long"
        if any(m in text for m in self.markers):
            return "template markers"
        sig = self.index.signature(text)
        if self.excluded.find(sig) is not None:
            return "near-duplicate of a held-out prompt"
        if self.index.find(sig) is not None:
            return "near-duplicate"
        topic = topic_key(text, self.topic_words)
        if self.topics[topic] >= self.max_per_topic:
            return "topic cap"
        self.topics[topic] += 1
        self.index.add(sig)
        return "kept"


def _user_turns(path: Path, n: int, rec: Any) -> list[str]:
    """The user messages of one prompt record (prepare's ``conversations``, ``messages`` or ``prompt``)."""
    if not isinstance(rec, dict):
        raise StageError(f"{path}:{n}: expected a JSON object\n  fix: one prompt record per line")
    conv = rec.get("conversations") or rec.get("messages") or [{"role": "user", "content": rec.get("prompt", "")}]
    return [str(t.get("content", "")) for t in conv if isinstance(t, dict) and t.get("role") == "user"]


def _load_excluded(paths: list[Path]) -> list[str]:
    texts = []
    for path in paths:
        for n, rec in iter_jsonl(path, fix="pass prepare's --holdout-output file"):
            texts += _user_turns(path, n, rec)
    return texts


def load_openings(path: Path, words: int) -> list[str]:
    """The first ``words`` words of the first user turn of every prompt in ``path`` (steering openings)."""
    openings = []
    for n, rec in iter_jsonl(path, fix="pass prepare's --output file (training prompts, never held-out ones)"):
        turns = _user_turns(path, n, rec)
        head = " ".join(turns[0].split()[:words]) if turns else ""
        if head:
            openings.append(head)
    if not openings:
        raise StageError(f"{path}: no user prompt to steer from\n  fix: pass prepare's --output file")
    return openings


def _batch_inputs(tok: Any, prefix: str, openings: list[str], share: float, n: int, rng: random.Random,
                  device: Any) -> tuple[Any, Any, list[str]]:
    """Input ids and mask for ``n`` rows (left-padded), and each row's opening ("" for a free row)."""
    heads = [rng.choice(openings) if openings and rng.random() < share else "" for _ in range(n)]
    if not any(heads):
        ids = tok(prefix, add_special_tokens=False, return_tensors="pt")["input_ids"].to(device).expand(n, -1)
        return ids, None, heads
    enc = tok([prefix + h for h in heads], add_special_tokens=False, return_tensors="pt", padding=True).to(device)
    return enc["input_ids"], enc["attention_mask"], heads


def run_synthesise(args: Any) -> int:
    """Run the stage; returns the exit code (143 when stopped by SIGTERM, with what was kept written)."""
    import torch

    from pipeline import model_io

    stop = install_sigterm_flag()
    device = model_io.resolve_device(args.device)
    dtype = model_io.resolve_dtype(args.dtype, device)
    t0 = time.monotonic()
    log(f"synthesise: load: {args.model} ({str(dtype).replace('torch.', '')}, {device})")
    model = model_io.load_model(args.model, args.gguf_file, dtype=dtype, device=device)
    tok = model_io.load_tokenizer(args.model, args.gguf_file)
    log(f"synthesise: load: ready in {time.monotonic() - t0:.1f}s")
    prefix = user_turn_prefix(tok)
    openings = load_openings(Path(args.steer), args.steer_words) if args.steer else []
    tok.padding_side = "left"
    end_ids = {i for i in [tok.eos_token_id, tok.convert_tokens_to_ids("<|im_end|>"),
                           tok.convert_tokens_to_ids("<|eot_id|>")] if isinstance(i, int) and i >= 0
               and i != tok.unk_token_id}
    markers = sorted({t for t in tok.all_special_tokens if len(t) > 2}) + ["<|", "|>"]
    filt = PromptFilter(args.dedup_threshold, args.max_per_topic, args.topic_words, args.min_words,
                        args.max_chars, markers)
    for text in _load_excluded([Path(p) for p in args.exclude]):
        filt.exclude(text)
    if tok.pad_token_id is None:  # converted tokenizers may have none; padded slots are masked anyway
        tok.pad_token_id = min(end_ids)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    steered = 0
    kept: list[str] = []
    generated = 0
    bar = progress(args.num_prompts, desc="synthesise", unit="prompt")
    stopped = False
    t_gen = time.monotonic()
    # Sampling stops paying when nearly everything is a duplicate: give up after this many draws.
    budget = args.num_prompts * args.max_draw_factor
    while len(kept) < args.num_prompts and generated < budget:
        n = min(args.batch_size, budget - generated)
        ids, mask, heads = _batch_inputs(tok, prefix, openings, args.steer_share, n, rng, device)
        with torch.inference_mode():
            out = model.generate(ids, attention_mask=mask if mask is not None else torch.ones_like(ids),
                                 do_sample=True, temperature=args.temperature, top_p=args.top_p,
                                 max_new_tokens=args.max_new_tokens, eos_token_id=sorted(end_ids),
                                 pad_token_id=tok.pad_token_id)
        gen = out[:, ids.shape[1]:].tolist()
        generated += n
        for head, row in zip(heads, gen):
            cut = next((j for j, t in enumerate(row) if t in end_ids), None)
            text = tok.decode(row[:cut] if cut is not None else row, skip_special_tokens=True)
            if head and not text.strip():
                filt.verdicts["nothing after the opening"] += 1  # a cut-off training prompt, not a new one
                continue
            # The opening ends at a word; the model's continuation brings its own leading space.
            text = (head + text).strip()
            if filt.judge(text, finished=cut is not None) and len(kept) < args.num_prompts:
                kept.append(text)
                steered += bool(head)
                bar.update(1)
        bar.set_postfix_str(f"kept {len(kept)}/{generated} drawn", refresh=False)
        if stop.is_set():
            stopped = True
            break
    bar.close()
    elapsed = time.monotonic() - t_gen
    lines = []
    import json

    for j, text in enumerate(kept):
        sid = f"{args.id_prefix}{j:06d}"
        lines.append(json.dumps({"id": sid, "conversations": [{"role": "user", "content": text}]}, ensure_ascii=False))
    out_path = Path(args.output)
    record = {
        "model": str(args.model), "drawn": generated, "kept": len(kept), "verdicts": dict(filt.verdicts),
        "held_out_files": list(args.exclude), "held_out_prompts": len(filt.excluded.signatures),
        "topics": len(filt.topics), "largest_topics": filt.topics.most_common(10),
        "steered": {"file": args.steer, "openings": len(openings), "kept": steered},
        "settings": {k: getattr(args, k) for k in ("temperature", "top_p", "max_new_tokens", "dedup_threshold",
                                                   "max_per_topic", "topic_words", "seed", "steer_share",
                                                   "steer_words")},
        "seconds": round(elapsed, 1), "stopped": stopped,
    }
    # The record first, then the prompts: a prompts file on disk always has its record beside it.
    atomic_write_json(out_path.with_name(out_path.name + ".json"), record)
    atomic_write_text(out_path, "".join(x + "\n" for x in lines))
    why = ", ".join(f"{n} {r}" for r, n in filt.verdicts.most_common() if r != "kept")
    print(f"synthesise: {len(kept)} prompts kept of {generated} drawn ({why}); {len(filt.topics)} topics; "
          f"{elapsed:.1f}s -> {out_path}", flush=True)
    if stopped:
        return 143
    if len(kept) < args.num_prompts:
        log(f"synthesise: only {len(kept)} of {args.num_prompts} prompts after {generated} draws "
            "(raise --max-per-topic or --temperature for more variety)")
    if not kept:
        raise StageError(f"{out_path}: no prompt survived the filters\n  fix: see the counts in {out_path}.json")
    return 0


def build_parser() -> Any:
    """The stage's argparse parser."""
    p = make_parser("python -m pipeline.synthesise",
                    "Synthesise user prompts with the target itself (Magpie), deduplicated and topic-capped.")
    p.add_argument("--model", default="smollm2", help="target: model dir, .gguf file, or 'smollm2'")
    p.add_argument("--gguf-file", default=None)
    p.add_argument("--output", "-o", required=True, help="prompts JSONL to write (prepare's format)")
    p.add_argument("--num-prompts", type=int, default=1000, help="prompts to keep")
    p.add_argument("--exclude", action="append", default=[], metavar="JSONL",
                   help="held-out prompts (repeatable): their near-duplicates are never kept")
    p.add_argument("--steer", default=None, metavar="JSONL",
                   help="training prompts whose openings steer a share of the rows (never held-out prompts)")
    p.add_argument("--steer-share", type=float, default=0.5, help="share of rows that start with an opening")
    p.add_argument("--steer-words", type=int, default=3, help="words of a training prompt that make an opening")
    p.add_argument("--batch-size", type=int, default=512, help="prompts sampled per generate call")
    p.add_argument("--max-new-tokens", type=int, default=96, help="longest user message")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--top-p", type=float, default=0.99)
    p.add_argument("--dedup-threshold", type=float, default=0.6, help="estimated Jaccard of near-duplicates")
    p.add_argument("--max-per-topic", type=int, default=8, help="prompts sharing one topic key")
    p.add_argument("--topic-words", type=int, default=3, help="content words that make a topic key")
    p.add_argument("--min-words", type=int, default=4)
    p.add_argument("--max-chars", type=int, default=1500)
    p.add_argument("--max-draw-factor", type=int, default=8, help="stop after drawing this many times --num-prompts")
    p.add_argument("--id-prefix", default="magpie-")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto")
    p.add_argument("--dtype", default="auto")
    return p


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: ``python -m pipeline.synthesise``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not 0.0 <= args.steer_share <= 1.0:
        parser.error(f"--steer-share {args.steer_share}: must be between 0 and 1 (the share of steered rows)")
    if args.steer_words < 1:
        parser.error(f"--steer-words {args.steer_words}: must be at least 1")
    return run_stage(parser, run_synthesise, argv)


if __name__ == "__main__":
    sys.exit(main())
