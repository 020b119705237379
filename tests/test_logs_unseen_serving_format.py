"""The unseen serving-side log set parses, and every item carries its source and its label.

tests/fixtures/corpus/serving_unseen.jsonl (excerpts) and
tests/fixtures/whole_logs_serving_unseen/ (whole logs and their manifest) were
collected from public sources nobody here had used, labelled from what their
sources say happened, and committed before the classifier ran on them
(docs/log-evaluation-serving.md). This file checks only their form: it holds the
classifier to nothing, so that the set keeps measuring rather than being tuned to.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"
EXCERPTS = FIXTURES / "corpus" / "serving_unseen.jsonl"
CORPUS = FIXTURES / "corpus" / "corpus.jsonl"
WHOLE = FIXTURES / "whole_logs_serving_unseen"
WHOLE_MANIFEST = WHOLE / "manifest.jsonl"
OLD_WHOLE_MANIFEST = FIXTURES / "whole_logs" / "manifest.jsonl"

LABELS = {"fatal", "benign", "warning", "progress", "info"}
KINDS = {"service", "task"}
OUTCOMES = {"died", "completed", "serving"}
THREAD = re.compile(r"^https://github\.com/([^/]+)/([^/]+)/(issues|pull|discussions)/(\d+)$")
BLOB = re.compile(r"^https://github\.com/([^/]+/[^/]+)/blob/([0-9a-f]{40})/\S+$")


def _rows(path: Path) -> list[dict]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:  # name the line, so the fix is obvious
                pytest.fail(f"{path}:{n}: not JSON ({e})")
    return rows


def _thread(url: str) -> str:
    return url.replace("/pull/", "/issues/").lower()


def test_excerpts_have_source_label_kind_and_split() -> None:
    rows = _rows(EXCERPTS)
    assert len(rows) >= 110
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "excerpt ids must be unique"
    for r in rows:
        where = f"{EXCERPTS.name} id={r.get('id')}"
        m = THREAD.match(r["url"])
        assert m, f"{where}: url is not a GitHub thread: {r['url']}"
        assert r["repo"] == f"{m.group(1)}/{m.group(2)}", f"{where}: repo does not match url"
        assert r["label"] in LABELS, f"{where}: label {r['label']!r} not in {sorted(LABELS)}"
        assert r["kind"] in KINDS, f"{where}: kind {r['kind']!r} not in {sorted(KINDS)}"
        assert r["text"].strip(), f"{where}: empty text"
        assert all(line == line.rstrip() for line in r["text"].split("\n")), f"{where}: trailing whitespace"
        # The corpus's own held-out rule, so that these rows can join it unchanged.
        h = int(hashlib.sha256(("eagle3tui-corpus-2026-11-30|" + r["url"]).encode()).hexdigest(), 16) % 100
        assert r["split"] == ("heldout" if h < 30 else "tune"), f"{where}: split is not the URL hash's"
    assert len({r["url"] for r in rows}) >= 60


def test_excerpt_threads_are_new_to_the_corpus() -> None:
    old = {_thread(r["url"]) for r in _rows(CORPUS)}
    reused = sorted({r["url"] for r in _rows(EXCERPTS) if _thread(r["url"]) in old})
    assert not reused, f"threads already in corpus.jsonl: {reused}"


def test_whole_logs_have_source_outcome_and_lines_that_exist() -> None:
    rows = _rows(WHOLE_MANIFEST)
    assert len(rows) >= 25
    old_repos = {r["repo"].lower() for r in _rows(OLD_WHOLE_MANIFEST)} | {r["repo"].lower() for r in _rows(CORPUS)}
    for r in rows:
        where = f"{WHOLE_MANIFEST.name} id={r.get('id')}"
        m = BLOB.match(r["url"])
        assert m, f"{where}: url is not a GitHub blob at a commit: {r['url']}"
        assert m.group(1) == r["repo"], f"{where}: repo does not match url"
        assert r["repo"].lower() not in old_repos, f"{where}: repository already used by the corpus"
        assert r["kind"] in KINDS and r["outcome"] in OUTCOMES, f"{where}: kind/outcome"
        log = WHOLE / f"{r['id']}.log"
        assert log.is_file(), f"{where}: {log.name} missing"
        text = log.read_text(encoding="utf-8")
        assert "\r" not in text and "\x1b" not in text, f"{where}: carriage returns or escape codes left in"
        n = len(text.splitlines())
        if r["outcome"] == "died":
            assert r["exit_code"] != 0, f"{where}: a death needs a non-zero exit code"
            assert r["cause"], f"{where}: a death names its cause"
            assert r["cause_line"] is None or 1 <= r["cause_line"] <= n, f"{where}: cause_line outside the log"
        else:
            assert r["exit_code"] == 0 and r["cause_line"] is None, f"{where}: a calm run has no cause"
        if r.get("stop_line") is not None:
            assert r["kind"] == "service" and 1 <= r["stop_line"] <= n, f"{where}: stop_line"
    logs = {p.stem for p in WHOLE.glob("*.log")}
    assert logs == {r["id"] for r in rows}, "every log has one manifest row and every row one log"
