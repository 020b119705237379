"""The serving excerpts nobody tuned to: their form, and floors at the classifier's untuned figures on them.

tests/fixtures/corpus/serving_never_tuned.jsonl holds 49 excerpts of serving logs (vLLM, SGLang,
TGI's neighbours, TensorRT-LLM, llama.cpp, ollama, LM Studio, Triton, Ray Serve, LMDeploy,
tabbyAPI, LocalAI, KoboldCpp) posted in 46 GitHub threads that no other fixture, doc or bench
file cites, labelled from what their threads say happened, and committed (d774a17) before the
classifier ran on them (bench/results/serving_never_tuned_excerpts_untuned.txt). The floors are
those untuned figures, so a later change can only be caught making them worse; nobody writes
rules from these rows (docs/log-evaluation-serving.md).
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
EXCERPTS = FIXTURES / "corpus" / "serving_never_tuned.jsonl"
THREAD = re.compile(r"^https://github\.com/([^/]+)/([^/]+)/(issues|pull|discussions)/(\d+)$")
LABELS = {"fatal", "benign", "warning", "progress", "info"}


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _scores() -> dict[str, float]:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import score_corpus
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return score_corpus.score(_rows(EXCERPTS))["scores"]


def test_excerpts_have_source_label_kind_and_split() -> None:
    rows = _rows(EXCERPTS)
    assert len(rows) >= 40
    assert len({r["id"] for r in rows}) == len(rows), "excerpt ids must be unique"
    for r in rows:
        m = THREAD.match(r["url"])
        assert m and r["repo"] == f"{m.group(1)}/{m.group(2)}", r["id"]
        assert r["label"] in LABELS and r["kind"] in ("task", "service"), r["id"]
        assert r["text"].strip() and all(ln == ln.rstrip() for ln in r["text"].split("\n")), r["id"]
        assert r["note"].strip(), f"{r['id']}: say what the thread says happened"
        h = int(hashlib.sha256(("eagle3tui-corpus-2026-11-30|" + r["url"]).encode()).hexdigest(), 16) % 100
        assert r["split"] == ("heldout" if h < 30 else "tune"), r["id"]


def test_threads_are_cited_nowhere_else_in_the_tree() -> None:
    mine = EXCERPTS.resolve()
    texts = []
    for top in ("tests", "docs", "bench", "eagle3tui"):
        for p in (ROOT / top).rglob("*"):
            if p.is_file() and p.resolve() != mine and p.suffix in {".jsonl", ".json", ".md", ".txt", ".toml"}:
                texts.append(p.read_text(encoding="utf-8", errors="replace").lower())
    other = "\n".join(texts)
    threads = {r["url"].replace("/pull/", "/issues/").lower() for r in _rows(EXCERPTS)}
    reused = sorted(t for t in threads if t in other or t.replace("/issues/", "/pull/") in other)
    assert not reused, f"threads cited elsewhere: {reused}"


def test_excerpt_scores_hold_their_untuned_figures() -> None:
    # Untuned, at d774a17 (bench/results/serving_never_tuned_excerpts_untuned.txt): fatal recall
    # 15/22, false fatal 0/27, benign 3/5, progress 5/7, warning 3/3, info 11/12. Floors, not
    # targets: issue 28 wants fatal recall >= 0.90, false fatal <= 0.03, benign >= 0.75, progress >= 0.90.
    s = _scores()
    assert s["fatal_recall"] >= 15 / 22 - 1e-9
    assert s["false_fatal"] <= 0.0 + 1e-9
    assert s["benign_recognised"] >= 3 / 5 - 1e-9
    assert s["progress_recognised"] >= 5 / 7 - 1e-9
    assert s["info_recognised"] >= 11 / 12 - 1e-9


@pytest.mark.xfail(strict=True, reason="untuned: fatal recall 15/22 (0.682), and unchanged by the structural "
                   "detectors added after it (docs/log-evaluation-serving.md)")
def test_fatal_recall_meets_the_issue_target() -> None:
    assert _scores()["fatal_recall"] >= 0.90
