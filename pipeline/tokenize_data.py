"""tokenize: chat-template the regenerated conversations into a prepared dataset.

For each ``{"id", "conversations"}`` record (the output of ``regenerate``) the
target's own chat template renders the whole conversation; ``loss_mask`` is 1
exactly on the tokens of assistant turns (their content and the end-of-turn
marker the model must learn to emit, not the header the template writes before
it, nor the separator after it).

How the assistant spans are found: for assistant turn ``i`` the template is
rendered for ``turns[:i]`` with the generation prompt and for ``turns[:i+1]``;
the text between the two is what the model generates. Both renders must be
prefixes of the full render, which is checked (templates that rewrite earlier
turns, e.g. drop old reasoning, are reported, not silently mis-masked). Tokens
whose character offsets start inside a span get mask 1. As a second check the
first ``--verify`` multi-turn samples are decoded back: the masked text must
contain every assistant answer, in order.

Writes a prepared dataset (see ``pipeline.tokenized_dataset``) with stats in its manifest.
Run ``python -m pipeline.tokenize_data --help``.
"""

from __future__ import annotations

import hashlib
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.common import StageError, fail, iter_jsonl, log, make_parser, progress

__all__ = ["TemplateMismatch", "assistant_spans", "main", "tokenize_conversation", "tokenize_file", "verify_mask"]

REASONING_MODES = ("template", "inline", "drop")


class TemplateMismatch(Exception):
    """The chat template does not render a conversation as a growing prefix."""


class _Drop(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _render(tokenizer: Any, messages: list[dict[str, Any]], gen_prompt: bool) -> str:
    out = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=gen_prompt)
    if not isinstance(out, str):
        raise TemplateMismatch("apply_chat_template did not return text")
    return out


def _with_reasoning(messages: list[dict[str, Any]], mode: str) -> list[dict[str, Any]]:
    """Apply the ``--reasoning`` choice to assistant turns that carry ``reasoning_content``."""
    out = []
    for m in messages:
        m = {k: v for k, v in m.items() if k in ("role", "content", "reasoning_content")}
        r = m.get("reasoning_content")
        if m["role"] == "assistant" and r:
            if mode == "inline":
                m["content"] = f"<think>\n{r}\n</think>\n\n{m['content']}"
                del m["reasoning_content"]
            elif mode == "drop":
                del m["reasoning_content"]
        else:
            m.pop("reasoning_content", None)
        out.append(m)
    return out


def assistant_spans(tokenizer: Any, messages: list[dict[str, Any]]) -> tuple[str, list[tuple[int, int]]]:
    """Render ``messages``; return the text and the ``[start, end)`` char spans of assistant output."""
    full = _render(tokenizer, messages, False)
    spans: list[tuple[int, int]] = []
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        before = _render(tokenizer, messages[:i], True) if i else ""
        upto = _render(tokenizer, messages[: i + 1], False)
        if not upto.startswith(before) or not full.startswith(upto):
            raise TemplateMismatch(f"rendering of turn {i} is not a prefix of the full conversation")
        # Whitespace the template puts after the end-of-turn marker is a turn
        # separator, which the model never generates; keep it out of the mask.
        end = len(before) + len(upto[len(before):].rstrip())
        spans.append((len(before), end))
    return full, spans


def tokenize_conversation(
    tokenizer: Any, messages: list[dict[str, Any]]
) -> tuple[np.ndarray, np.ndarray]:
    """Token ids and loss mask (1 on assistant output) for one conversation."""
    text, spans = assistant_spans(tokenizer, messages)
    if getattr(tokenizer, "is_fast", False):
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        ids = np.asarray(enc["input_ids"], dtype=np.int64)
        starts = np.asarray([s for s, _ in enc["offset_mapping"]], dtype=np.int64)
        mask = np.zeros(len(ids), dtype=np.uint8)
        for a, b in spans:
            mask[(starts >= a) & (starts < b)] = 1
        return ids, mask
    # Slow tokenizers have no offsets: tokenize the pieces between span edges
    # separately (exact at the special-token boundaries templates put there).
    ids_parts: list[list[int]] = []
    mask_parts: list[np.ndarray] = []
    pos = 0
    for a, b in spans + [(len(text), len(text))]:
        for piece, flag in ((text[pos:a], 0), (text[a:b], 1)):
            if piece:
                t = tokenizer(piece, add_special_tokens=False)["input_ids"]
                ids_parts.append(t)
                mask_parts.append(np.full(len(t), flag, dtype=np.uint8))
        pos = b
    ids = np.asarray([t for part in ids_parts for t in part], dtype=np.int64)
    mask = np.concatenate(mask_parts) if mask_parts else np.zeros(0, dtype=np.uint8)
    return ids, mask


def verify_mask(tokenizer: Any, messages: list[dict[str, Any]], ids: np.ndarray, mask: np.ndarray) -> str | None:
    """Decode the masked tokens; return a problem description, or None when every answer is covered in order."""
    runs: list[str] = []
    i = 0
    while i < len(mask):
        if mask[i]:
            j = i
            while j < len(mask) and mask[j]:
                j += 1
            runs.append(tokenizer.decode(ids[i:j].tolist(), skip_special_tokens=False))
            i = j
        else:
            i += 1
    answers = [m["content"] for m in messages if m["role"] == "assistant"]
    if len(runs) != len(answers):
        return f"{len(answers)} assistant turns but {len(runs)} masked runs"
    for k, (run, ans) in enumerate(zip(runs, answers)):
        if ans.strip() and ans.strip() not in run:
            return f"assistant turn {k}: masked text {run[:60]!r} does not contain the answer {ans[:60]!r}"
    unmasked = tokenizer.decode(ids[mask == 0].tolist(), skip_special_tokens=False)
    for m in messages:
        if m["role"] == "user" and m["content"].strip() and m["content"].strip() not in unmasked:
            return "a user turn is (partly) inside the loss mask"
    return None


def _as_paths(inputs: Path | Sequence[Path]) -> list[Path]:
    return [inputs] if isinstance(inputs, Path) else list(inputs)


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise StageError(f"{path}: input file not found\n  fix: run pipeline.regenerate first, or check --input")
    for n, rec in iter_jsonl(path):
        conv = rec.get("conversations") if isinstance(rec, dict) else None
        if not isinstance(rec, dict) or "id" not in rec or not isinstance(conv, list) or not all(
            isinstance(t, dict) and isinstance(t.get("role"), str) and isinstance(t.get("content"), str)
            for t in conv
        ):
            raise StageError(
                f"{path}:{n}: expected {{\"id\", \"conversations\": [{{\"role\", \"content\"}}, ...]}}\n"
                "  fix: feed the output of pipeline.regenerate (or pipeline.prepare)"
            )
        yield n, rec


def tokenize_file(
    tokenizer: Any,
    inputs: Path | Sequence[Path],
    output_dir: Path,
    max_len: int,
    tokenizer_name: str,
    reasoning: str = "template",
    verify: int = 100,
    limit: int | None = None,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Tokenize ``inputs`` (one file, or several read in order) into a prepared dataset at ``output_dir``.

    Several files make one dataset, e.g. greedy answers of many prompts plus sampled answers of a few.
    An id seen in an earlier file is dropped as a duplicate. Returns the manifest.
    """
    from pipeline.tokenized_dataset import write_tokenized_dataset

    dropped: Counter[str] = Counter()
    stats = {"truncated": 0, "verified": 0, "multi_turn": 0, "max_len_seen": 0}
    seen: set[str] = set()
    paths = _as_paths(inputs)
    total = 0
    for path in paths:
        if path.is_file():
            with open(path, encoding="utf-8") as fh:
                total += sum(1 for line in fh if line.strip())
    bar = progress(total, desc="tokenize", unit="sample", disable=not show_progress)

    def samples() -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
        written = 0
        for input_path, n, rec in ((path, n, rec) for path in paths for n, rec in _records(path)):
            bar.update(1)
            sid = str(rec["id"])
            messages = _with_reasoning(rec["conversations"], reasoning)
            try:
                if sid in seen:
                    raise _Drop("duplicate id")
                if not any(m["role"] == "assistant" for m in messages):
                    raise _Drop("no assistant turn")
                if any(m["role"] == "assistant" and not m["content"].strip() for m in messages):
                    raise _Drop("empty assistant answer")
                try:
                    ids, mask = tokenize_conversation(tokenizer, messages)
                except TemplateMismatch as exc:
                    raise _Drop(f"template mismatch ({exc})") from exc
                except Exception as exc:  # jinja errors from unusual templates (e.g. role order rules)
                    raise _Drop(f"chat template error ({type(exc).__name__})") from exc
                n_assist = sum(m["role"] == "assistant" for m in messages)
                if n_assist > 1:
                    stats["multi_turn"] += 1
                    if stats["verified"] < verify:
                        problem = verify_mask(tokenizer, messages, ids, mask)
                        if problem:
                            raise StageError(
                                f"{input_path}:{n}: id {sid!r}: loss mask does not match the chat template: {problem}\n"
                                "  fix: this template is not supported by span masking; report it with the sample"
                            )
                        stats["verified"] += 1
                stats["max_len_seen"] = max(stats["max_len_seen"], len(ids))
                if len(ids) > max_len:
                    stats["truncated"] += 1
                    ids, mask = ids[:max_len], mask[:max_len]
                if not mask.any():
                    raise _Drop(f"no assistant tokens within max_len={max_len}")
            except _Drop as exc:
                dropped[exc.reason] += 1
                continue
            seen.add(sid)
            written += 1
            yield sid, ids, mask
            if limit is not None and written >= limit:
                return

    template = getattr(tokenizer, "chat_template", None) or ""
    if not template:
        raise StageError(f"tokenizer {tokenizer_name!r} has no chat template\n  fix: use the target's instruct model")
    try:
        meta = {
            "tokenizer": tokenizer_name,
            "max_len": max_len,
            "chat_template_sha256": hashlib.sha256(template.encode("utf-8")).hexdigest(),
            "vocab_size": len(tokenizer),
            "source": str(paths[0]) if len(paths) == 1 else [str(path) for path in paths],
            "reasoning": reasoning,
            # Filled in while samples() runs; write_tokenized_dataset reads meta only after
            # consuming the samples, so the manifest gets the final numbers.
            "stats": {},
        }

        def with_stats() -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
            yield from samples()
            meta["stats"] = {**stats, "dropped": dict(dropped)}

        manifest = write_tokenized_dataset(output_dir, with_stats(), meta)
    finally:
        bar.close()
    return manifest


def summary_line(manifest: dict[str, Any], output: Path) -> str:
    """One line the supervisor shows at the end."""
    st = manifest.get("stats", {})
    drops = st.get("dropped", {})
    t, lt = manifest["num_tokens"], manifest["num_loss_tokens"]
    return (
        f"tokenize: {manifest['num_samples']} samples, {t} tokens "
        f"({100.0 * lt / t if t else 0.0:.1f}% assistant), {st.get('truncated', 0)} truncated to {manifest['max_len']}, "
        f"{sum(drops.values())} dropped"
        + (" (" + ", ".join(f"{n} {r}" for r, n in sorted(drops.items(), key=lambda x: -x[1])) + ")" if drops else "")
        + f", {st.get('verified', 0)} multi-turn masks verified -> {output}"
    )


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: ``python -m pipeline.tokenize_data``."""
    p = make_parser(
        "python -m pipeline.tokenize_data",
        "Apply the target's chat template to regenerated conversations and write a prepared dataset "
        "(input_ids + loss_mask on assistant tokens) for extraction, vocab and training.",
    )
    p.add_argument("--input", "-i", type=Path, action="append", required=True,
                   help="regenerated JSONL (repeatable: the files make one dataset, in order)")
    p.add_argument("--output", "-o", type=Path, required=True, help="prepared dataset directory to write")
    p.add_argument("--model", default="smollm2",
                   help="tokenizer source: model dir, .gguf file, or 'smollm2' (packaged demo model)")
    p.add_argument("--gguf-file", default=None, help="GGUF file name inside --model directory")
    p.add_argument("--max-len", type=int, default=2048, help="truncate samples to this many tokens")
    p.add_argument("--reasoning", choices=REASONING_MODES, default="template",
                   help="reasoning_content: pass to the template, inline as <think>...</think>, or drop")
    p.add_argument("--verify", type=int, default=100, help="decode-check the masks of this many multi-turn samples")
    p.add_argument("--limit", type=int, default=None, help="stop after this many samples")
    args = p.parse_args(argv)
    if args.max_len <= 0:
        p.error("--max-len must be positive")
    from pipeline.model_io import ModelNotFoundError, load_tokenizer

    try:
        # Validate the whole input before the (slower) tokenizer load, so a bad
        # line fails in a second, not after loading.
        for path in args.input:
            for _ in _records(path):
                pass
        log(f"tokenize: loading tokenizer from {args.model}")
        tok = load_tokenizer(args.model, args.gguf_file)
        manifest = tokenize_file(tok, args.input, args.output, args.max_len, args.model,
                                 args.reasoning, args.verify, args.limit)
    except (StageError, ModelNotFoundError) as exc:
        fail(str(exc))
    print(summary_line(manifest, args.output), flush=True)
    if manifest["num_samples"] == 0:
        fail(f"{', '.join(map(str, args.input))}: no usable samples; see the drop reasons above")
    return 0


if __name__ == "__main__":
    sys.exit(main())
