"""Format of the unseen training-side logs: every item parses, names its source and carries a label.

tests/fixtures/corpus/training_unseen.jsonl (excerpts) and
tests/fixtures/whole_logs_training_unseen/ (whole logs and their manifest) were
collected from public threads and committed files, labelled from what their
sources say happened, and committed before the classifier ran on them
(docs/log-evaluation-training.md). These tests check only the data's shape; the
classifier's figures on it are measured by bench/score_corpus.py --corpus and
bench/score_whole_logs.py --fixtures, not held here.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXCERPTS = ROOT / "tests" / "fixtures" / "corpus" / "training_unseen.jsonl"
CORPUS = ROOT / "tests" / "fixtures" / "corpus" / "corpus.jsonl"
WHOLE = ROOT / "tests" / "fixtures" / "whole_logs_training_unseen"
OLD_WHOLE = ROOT / "tests" / "fixtures" / "whole_logs" / "manifest.jsonl"

LABELS = {"fatal", "benign", "warning", "progress", "info"}
EXCERPT_KEYS = {"id", "url", "repo", "label", "kind", "split", "text"}


def _jsonl(path: Path) -> list[dict]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:  # pragma: no cover - the message is the point
                pytest.fail(f"{path.name}:{n}: not JSON ({e})")
    return rows


def _heldout(url: str) -> bool:
    # The corpus's split rule (tests/fixtures/corpus/README.md), so that a thread lands on one side.
    return int(hashlib.sha256(("eagle3tui-corpus-2026-11-30|" + url).encode()).hexdigest(), 16) % 100 < 30


def test_every_excerpt_has_source_label_and_text() -> None:
    rows = _jsonl(EXCERPTS)
    assert len(rows) >= 110
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "ids are unique"
    for r in rows:
        missing = EXCERPT_KEYS - r.keys()
        assert not missing, f"{r.get('id')}: missing {sorted(missing)}"
        assert r["label"] in LABELS, r["id"]
        assert r["kind"] in ("task", "service"), r["id"]
        assert r["url"].startswith(f"https://github.com/{r['repo']}/"), r["id"]
        assert r["split"] == ("heldout" if _heldout(r["url"]) else "tune"), r["id"]
        lines = r["text"].split("\n")
        assert r["text"].strip() and all(ln == ln.rstrip() for ln in lines), f"{r['id']}: text trimmed, not empty"
        assert "\r" not in r["text"], f"{r['id']}: carriage returns resolved"
    assert len({r["url"] for r in rows}) >= 60, "excerpts come from at least 60 sources"


def test_excerpts_use_no_source_of_the_corpus() -> None:
    used = {r["url"] for r in _jsonl(CORPUS)} | {r["url"] for r in _jsonl(OLD_WHOLE)}
    reused = sorted({r["url"] for r in _jsonl(EXCERPTS)} & used)
    assert not reused, f"already in the corpus or the whole logs: {reused}"


def test_every_whole_log_has_a_manifest_row_and_a_real_outcome() -> None:
    rows = _jsonl(WHOLE / "manifest.jsonl")
    assert len(rows) >= 25
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids))
    assert {p.stem for p in WHOLE.glob("*.log")} == set(ids), "every log has a manifest row and back"
    old_repos = {r["repo"].lower() for r in _jsonl(OLD_WHOLE) + _jsonl(CORPUS)}
    for r in rows:
        assert r["url"].startswith(f"https://github.com/{r['repo']}/"), r["id"]
        assert r["repo"].lower() not in old_repos, f"{r['id']}: repository already in the corpus or the whole logs"
        assert r["kind"] in ("task", "service") and r["outcome"] in ("died", "completed", "serving"), r["id"]
        lines = (WHOLE / f"{r['id']}.log").read_text(encoding="utf-8").splitlines()
        assert lines and all(ln == ln.rstrip() and "\r" not in ln for ln in lines), r["id"]
        if r["outcome"] == "died":
            assert r["cause"] and r["exit_code"] != 0, r["id"]
            assert r["cause_line"] is None or 1 <= r["cause_line"] <= len(lines), r["id"]
        else:
            assert r["cause_line"] is None and r["exit_code"] == 0, r["id"]
