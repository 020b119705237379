"""prepared-dataset format and the vocab stage: round trips, mapping invariants, coverage arithmetic."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pipeline.common import StageError
from pipeline.tokenized_dataset import FORMAT, TokenizedDataset, write_tokenized_dataset
from pipeline.vocab import (
    build_mapping,
    count_tokens,
    coverage,
    load_mapping,
    save_mapping,
    summary_line,
)

ROOT = Path(__file__).resolve().parent.parent


def test_prepared_round_trip(tmp_path: Path) -> None:
    samples = [("a", [5, 6, 7], [0, 1, 1]), ("b", [1], [1]), ("c", [], [])]
    m = write_tokenized_dataset(tmp_path / "ds", samples, {"tokenizer": "t", "max_len": 8, "vocab_size": 10})
    assert m["num_samples"] == 3 and m["num_tokens"] == 4 and m["num_loss_tokens"] == 3
    ds = TokenizedDataset(tmp_path / "ds")
    assert len(ds) == 3 and ds.ids == ["a", "b", "c"]
    sid, ids, mask = ds[0]
    assert sid == "a" and ids.dtype == np.int64 and ids.tolist() == [5, 6, 7] and mask.tolist() == [0, 1, 1]
    assert ds[-1][1].tolist() == []
    assert ds.manifest["format"] == FORMAT and ds.manifest["vocab_size"] == 10
    assert ds.lengths().tolist() == [3, 1, 0]
    with pytest.raises(IndexError):
        ds[3]
    # Only the dataset directory remains: the temp dir was renamed into place.
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]


def test_prepared_rewrite_replaces_and_failure_keeps_old(tmp_path: Path) -> None:
    write_tokenized_dataset(tmp_path / "ds", [("a", [1, 2], [1, 1])], {})
    write_tokenized_dataset(tmp_path / "ds", [("x", [3], [1]), ("y", [4], [0])], {})
    assert TokenizedDataset(tmp_path / "ds").ids == ["x", "y"]

    def broken():
        yield ("z", [1], [1])
        raise RuntimeError("killed mid-way")

    with pytest.raises(RuntimeError):
        write_tokenized_dataset(tmp_path / "ds", broken(), {})
    assert TokenizedDataset(tmp_path / "ds").ids == ["x", "y"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]
    with pytest.raises(ValueError, match="appears twice"):
        write_tokenized_dataset(tmp_path / "d2", [("a", [1], [1]), ("a", [2], [1])], {})


def test_prepared_rejects_incomplete_dirs(tmp_path: Path) -> None:
    (tmp_path / "half").mkdir()
    with pytest.raises(StageError, match="manifest.json: missing"):
        TokenizedDataset(tmp_path / "half")
    write_tokenized_dataset(tmp_path / "ds", [("a", [1], [1])], {})
    (tmp_path / "ds" / "ids.json").write_text('["a", "b"]')
    with pytest.raises(StageError, match="inconsistent"):
        TokenizedDataset(tmp_path / "ds")


def test_mapping_invariants_and_round_trip(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    target_vocab, draft_vocab = 1000, 64
    ids = rng.zipf(1.3, size=20000) % target_vocab
    mask = rng.integers(0, 2, size=ids.size)
    counts = count_tokens(ids, mask, target_vocab)
    _, d2t, t2d = build_mapping(counts, draft_vocab)
    assert d2t.dtype == np.int64 and d2t.shape == (draft_vocab,)
    assert t2d.dtype == np.bool_ and t2d.shape == (target_vocab,) and int(t2d.sum()) == draft_vocab
    target_of = np.arange(draft_vocab) + d2t
    assert np.all(np.diff(target_of) > 0)  # sorted ascending, unique
    assert np.all(t2d[target_of])  # every draft id maps to a target id with t2d True
    # The kept ids are the most frequent: nothing left out is more frequent than what was kept.
    assert counts[~t2d].max() <= counts[t2d].min()
    save_mapping(tmp_path / "v.safetensors", d2t, t2d)
    d2, t2 = load_mapping(tmp_path / "v.safetensors")
    assert np.array_equal(d2, d2t) and np.array_equal(t2, t2d) and d2.dtype == np.int64 and t2.dtype == np.bool_


def test_coverage_arithmetic_ties_and_padding() -> None:
    # counts: id0=5, id1=0, id2=3, id3=3, id4=1  (total 12)
    counts = np.array([5, 0, 3, 3, 1])
    sel, d2t, t2d = build_mapping(counts, 2)
    assert sel.tolist() == [0, 2]  # tie between 2 and 3 broken by the lower id
    assert d2t.tolist() == [0, 1]
    assert coverage(counts, t2d) == pytest.approx(8 / 12)
    # Padding: 4 seen ids, draft of 5 takes the unseen id 1 as well.
    sel, _, t2d = build_mapping(counts, 5)
    assert sel.tolist() == [0, 1, 2, 3, 4] and coverage(counts, t2d) == 1.0
    assert coverage(np.zeros(3, dtype=np.int64), np.ones(3, dtype=bool)) == 0.0
    with pytest.raises(StageError):
        build_mapping(counts, 6)
    with pytest.raises(StageError, match="outside the target vocabulary"):
        count_tokens(np.array([7]), np.array([1]), 5)
    line = summary_line({"draft_vocab_size": 32000, "target_vocab_size": 163840, "coverage": 0.98314})
    assert line == "vocab: draft 32000 / target 163840, coverage 98.31% of assistant tokens"


def test_only_loss_masked_tokens_count() -> None:
    counts = count_tokens(np.array([1, 1, 2, 3]), np.array([0, 0, 1, 1]), 4)
    assert counts.tolist() == [0, 0, 1, 1]


def test_vocab_cli(tmp_path: Path) -> None:
    samples = [(f"s{i}", [i % 7, 3, 3, 9], [0, 1, 1, 1]) for i in range(20)]
    write_tokenized_dataset(tmp_path / "ds", samples, {"vocab_size": 12})
    out = tmp_path / "vocab.safetensors"
    proc = subprocess.run(check=False, args=[sys.executable, "-m", "pipeline.vocab", "--prepared", str(tmp_path / "ds"),
                           "-o", str(out), "--draft-vocab-size", "4"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "vocab: draft 4 / target 12, coverage 100.00% of assistant tokens"
    summary = json.loads((tmp_path / "vocab.json").read_text())
    assert summary["num_loss_tokens"] == 60 and summary["distinct_tokens_seen"] == 2 and summary["padded"] == 2
    d2t, t2d = load_mapping(out)
    assert (np.arange(4) + d2t).tolist() == [0, 1, 3, 9] and t2d.shape == (12,)
    bad = subprocess.run(check=False, args=[sys.executable, "-m", "pipeline.vocab", "--prepared", str(tmp_path / "nope"),
                          "-o", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "manifest.json: missing" in bad.stderr
    usage = subprocess.run(check=False, args=[sys.executable, "-m", "pipeline.vocab"], cwd=ROOT, capture_output=True,
                           text=True, timeout=120)
    assert usage.returncode == 2 and usage.stderr.startswith("usage: python -m pipeline.vocab")
