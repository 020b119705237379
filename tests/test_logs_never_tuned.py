"""The set nobody tuned to: its form, and floors at the classifier's untuned figures on it.

tests/fixtures/corpus/never_tuned.jsonl (excerpts) and tests/fixtures/whole_logs_never_tuned/
were collected from threads and repositories no other fixture cites, labelled from what their
sources say happened, and committed before the classifier ran on them
(bench/results/never_tuned_excerpts_untuned.txt, never_tuned_whole_logs_untuned.txt). The floors
are the untuned figures, so that a later change can only be caught making them worse; nobody
writes rules from these rows.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
EXCERPTS = FIXTURES / "corpus" / "never_tuned.jsonl"
WHOLE = FIXTURES / "whole_logs_never_tuned"
THREAD = re.compile(r"^https://github\.com/([^/]+)/([^/]+)/(issues|pull|discussions)/(\d+)$")
BLOB = re.compile(r"^https://github\.com/([^/]+/[^/]+)/blob/([0-9a-f]{40})/\S+$")
LABELS = {"fatal", "benign", "warning", "progress", "info"}


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _other_fixture_text() -> str:
    """Every other fixture file's text (where earlier sets cite their sources)."""
    mine = {EXCERPTS, *WHOLE.iterdir()}
    return "\n".join(p.read_text(encoding="utf-8", errors="replace").lower()
                     for p in FIXTURES.rglob("*") if p.is_file() and p not in mine
                     and p.suffix in {".jsonl", ".json", ".md", ".txt", ".toml"})


def test_excerpts_have_source_label_kind_and_split() -> None:
    rows = _rows(EXCERPTS)
    assert len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        m = THREAD.match(r["url"])
        assert m and r["repo"] == f"{m.group(1)}/{m.group(2)}", r["id"]
        assert r["label"] in LABELS and r["kind"] in ("task", "service"), r["id"]
        assert r["text"].strip() and all(ln == ln.rstrip() for ln in r["text"].split("\n")), r["id"]
        h = int(hashlib.sha256(("eagle3tui-corpus-2026-11-30|" + r["url"]).encode()).hexdigest(), 16) % 100
        assert r["split"] == ("heldout" if h < 30 else "tune"), r["id"]


def test_sources_are_cited_by_no_other_fixture() -> None:
    other = _other_fixture_text()
    threads = {r["url"].replace("/pull/", "/issues/").lower() for r in _rows(EXCERPTS)}
    reused = sorted(t for t in threads if t in other or t.replace("/issues/", "/pull/") in other)
    assert not reused, f"threads cited elsewhere in tests/fixtures: {reused}"
    repos = {r["repo"].lower() for r in _rows(WHOLE / "manifest.jsonl")}
    assert not sorted(r for r in repos if r in other), "whole-log repositories cited elsewhere"


def test_whole_logs_have_source_outcome_and_lines_that_exist() -> None:
    rows = _rows(WHOLE / "manifest.jsonl")
    assert {p.stem for p in WHOLE.glob("*.log")} == {r["id"] for r in rows}
    for r in rows:
        m = BLOB.match(r["url"])
        assert m and m.group(1) == r["repo"], r["id"]
        lines = (WHOLE / f"{r['id']}.log").read_text(encoding="utf-8").splitlines()
        assert lines and all("\r" not in ln and "\x1b" not in ln and ln == ln.rstrip() for ln in lines), r["id"]
        if r["outcome"] == "died":
            assert r["cause"] and r["exit_code"] != 0 and 1 <= r["cause_line"] <= len(lines), r["id"]
        else:
            assert r["outcome"] in ("completed", "serving") and r["exit_code"] == 0 and r["cause_line"] is None


def test_excerpt_scores_hold_their_untuned_figures() -> None:
    # Untuned, on main dfb4ff1 (bench/results/never_tuned_excerpts_untuned.txt): fatal recall
    # 8/10, false fatal 1/9, info 5/5. Floors, not targets: issue 28 wants >= 0.90 and <= 0.03.
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import score_corpus
    finally:
        sys.path.remove(str(ROOT / "bench"))
    s = score_corpus.score(_rows(EXCERPTS))["scores"]
    assert s["fatal_recall"] >= 0.8 - 1e-9
    assert s["false_fatal"] <= 1 / 9 + 1e-9
    assert s["info_recognised"] >= 1.0 - 1e-9


@pytest.mark.xfail(strict=True, reason="untuned miss: benign excerpts (browser-tab failure, TRT-LLM warm-up "
                   "warnings) are judged fatal or warning; 0/2 recognised")
def test_benign_excerpts_are_recognised() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import score_corpus
    finally:
        sys.path.remove(str(ROOT / "bench"))
    assert score_corpus.score(_rows(EXCERPTS))["scores"]["benign_recognised"] >= 0.75
