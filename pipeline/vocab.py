"""vocab: map the target vocabulary to the smaller EAGLE-3 draft vocabulary.

Counts target token ids where ``loss_mask == 1`` in a prepared dataset, keeps
the ``draft_vocab_size`` most frequent (ties broken by the lower id; when fewer
distinct tokens were seen the rest is padded with the lowest unseen ids), sorts
them ascending and writes, exactly as vLLM and SGLang read them:

- ``d2t`` int64 ``[draft_vocab]``: offsets, ``target_id = i + d2t[i]``
- ``t2d`` bool ``[target_vocab]``: True where a target id has a draft slot

to a safetensors file, plus a JSON summary with the coverage (share of
assistant tokens whose id is in the draft vocabulary). Prints e.g.
``vocab: draft 32000 / target 163840, coverage 98.31% of assistant tokens``.

Run ``python -m pipeline.vocab --help``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.common import (
    StageError,
    atomic_write_bytes,
    atomic_write_json,
    fail,
    log,
    make_parser,
    progress,
)

__all__ = ["build_mapping", "count_tokens", "coverage", "load_mapping", "main", "save_mapping", "summary_line"]


def count_tokens(input_ids: np.ndarray, loss_mask: np.ndarray, target_vocab: int) -> np.ndarray:
    """Occurrences of each target id among loss-masked tokens (int64 ``[target_vocab]``)."""
    sel = np.asarray(input_ids)[np.asarray(loss_mask) != 0].astype(np.int64)
    if sel.size and (sel.min() < 0 or sel.max() >= target_vocab):
        raise StageError(
            f"token id {int(sel.max())} is outside the target vocabulary of {target_vocab}\n"
            "  fix: pass the right --target-vocab-size (the tokenizer's len())"
        )
    return np.bincount(sel, minlength=target_vocab).astype(np.int64)


def build_mapping(counts: np.ndarray, draft_vocab: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(selected_target_ids, d2t, t2d)`` for the ``draft_vocab`` most frequent ids.

    ``selected`` is sorted ascending; ``d2t[i] = selected[i] - i``; ``t2d[selected] = True``.
    """
    target_vocab = int(counts.shape[0])
    if not 0 < draft_vocab <= target_vocab:
        raise StageError(
            f"draft vocabulary size {draft_vocab} must be between 1 and the target's {target_vocab}\n"
            "  fix: lower --draft-vocab-size"
        )
    # Descending count, then ascending id: deterministic, and zero-count ids come
    # last in id order, which is the padding when fewer tokens were seen.
    order = np.lexsort((np.arange(target_vocab), -counts))
    selected = np.sort(order[:draft_vocab]).astype(np.int64)
    d2t = selected - np.arange(draft_vocab, dtype=np.int64)
    t2d = np.zeros(target_vocab, dtype=bool)
    t2d[selected] = True
    return selected, d2t, t2d


def coverage(counts: np.ndarray, t2d: np.ndarray) -> float:
    """Share of counted (assistant) tokens whose id has a draft slot; 0.0 when nothing was counted."""
    total = int(counts.sum())
    return float(counts[t2d].sum()) / total if total else 0.0


def save_mapping(path: Path, d2t: np.ndarray, t2d: np.ndarray) -> None:
    """Write ``d2t``/``t2d`` to a safetensors file atomically."""
    from safetensors.numpy import save

    blob = save({"d2t": np.ascontiguousarray(d2t, dtype=np.int64), "t2d": np.ascontiguousarray(t2d, dtype=bool)},
                metadata={"format": "eagle3-vocab/1"})
    atomic_write_bytes(path, blob)


def load_mapping(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Read ``(d2t, t2d)`` back from a safetensors file written by :func:`save_mapping`."""
    from safetensors.numpy import load_file

    try:
        t = load_file(str(path))
        return t["d2t"], t["t2d"]
    except (OSError, KeyError, Exception) as exc:  # safetensors raises its own error type
        raise StageError(f"{path}: not a vocab mapping file ({exc})\n  fix: run python -m pipeline.vocab") from exc


def summary_line(summary: dict[str, Any]) -> str:
    """``vocab: draft 32000 / target 163840, coverage 98.31% of assistant tokens``."""
    return (
        f"vocab: draft {summary['draft_vocab_size']} / target {summary['target_vocab_size']}, "
        f"coverage {100.0 * summary['coverage']:.2f}% of assistant tokens"
    )


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: ``python -m pipeline.vocab``."""
    p = make_parser(
        "python -m pipeline.vocab",
        "Build the EAGLE-3 draft vocabulary (d2t/t2d) from the assistant tokens of a prepared dataset.",
    )
    p.add_argument("--prepared", "-i", type=Path, required=True, help="prepared dataset directory (tokenize output)")
    p.add_argument("--output", "-o", type=Path, required=True, help="safetensors file for d2t/t2d")
    p.add_argument("--summary", type=Path, default=None, help="JSON summary (default: OUTPUT with .json)")
    p.add_argument("--draft-vocab-size", type=int, default=32000, help="draft vocabulary size")
    p.add_argument("--target-vocab-size", type=int, default=None,
                   help="target vocabulary size (default: the tokenizer size in the dataset manifest)")
    args = p.parse_args(argv)
    if args.draft_vocab_size <= 0:
        p.error("--draft-vocab-size must be positive")
    from pipeline.tokenized_dataset import TokenizedDataset

    try:
        ds = TokenizedDataset(args.prepared)
        target_vocab = args.target_vocab_size or ds.manifest.get("vocab_size")
        if not target_vocab:
            raise StageError(
                f"{args.prepared / 'manifest.json'}: key 'vocab_size' is missing\n"
                "  fix: pass --target-vocab-size (the target tokenizer's len())"
            )
        target_vocab = int(target_vocab)
        draft = args.draft_vocab_size
        if draft > target_vocab:
            log(f"vocab: --draft-vocab-size {draft} exceeds the target's {target_vocab}; using {target_vocab}")
            draft = target_vocab
        # One bincount over the flat arrays; the bar shows the stage is alive on big sets.
        with progress(1, desc="vocab", unit="pass") as bar:
            counts = count_tokens(ds.input_ids, ds.loss_mask, target_vocab)
            bar.update(1)
        _, d2t, t2d = build_mapping(counts, draft)
        seen = int((counts > 0).sum())
        summary = {
            "draft_vocab_size": draft,
            "target_vocab_size": target_vocab,
            "coverage": coverage(counts, t2d),
            "num_loss_tokens": int(counts.sum()),
            "distinct_tokens_seen": seen,
            "padded": max(0, draft - seen),
            "prepared": str(args.prepared),
            "mapping": str(args.output),
        }
        save_mapping(args.output, d2t, t2d)
        summary_path = args.summary or args.output.with_suffix(".json")
        atomic_write_json(summary_path, summary)
    except StageError as exc:
        fail(str(exc))
    if summary["padded"]:
        log(f"vocab: only {seen} distinct assistant tokens seen; padded {summary['padded']} slots with unseen ids")
    print(summary_line(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
