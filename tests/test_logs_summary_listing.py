"""classify's text summary: catch-up counts the events it would not show instead of making them.

The summary shows, per warning (benign, info) rule, how many events there were and the
first five lines. With ``list_per_rule`` the template scan's hot path makes only the first
events of a kind and rule and counts the others (``StageLogMonitor.unlisted``). These tests
pin that nothing the summary or the monitor's later decisions read changes: the same text,
the same counts, the earliest events of every rule listed as they are without the cap, and
the same last event in the tail (a stack printed right under it reads it).
"""

from __future__ import annotations

import argparse
import io
import json
import random
from collections import Counter
from pathlib import Path

import pytest

from eagle3tui.frontends import classify_cmd
from eagle3tui.logs.offline import classify_log
from tests.conftest import bench_module
from tests.test_logs_templates import CORPUS, _stress

CAP = 5


@pytest.fixture(scope="module")
def mixed_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The corpus's real excerpts twice with other digits, between runs of the
    template test's context-dependent lines and of the catch-up benchmark's log (four
    kinds of warnings, by rank or not, Python's among them): over 1 MiB, so catch-up
    reads it by template."""
    rnd = random.Random(5)
    d = tmp_path_factory.mktemp("listing")
    bench_module("bench_logs").generate(d / "bench.log", 60_000, seed=3)
    bench = (d / "bench.log").read_text().splitlines(keepends=True)
    corpus = [json.loads(x)["text"] for x in CORPUS.read_text().splitlines()]
    # (A traceback left open by an excerpt takes the lines after it off the hot path:
    # the first run of the benchmark's lines comes first.)
    parts = ["".join(bench[:20_000]), _stress(rnd, 10_000)]
    for k in range(2):
        rnd.shuffle(corpus)
        parts.append("\n".join("".join(str(rnd.randrange(10)) if c.isdigit() else c for c in t) for t in corpus) + "\n")
        parts.append(_stress(rnd, 5_000))
        parts.append("".join(bench[(k + 1) * 10_000 : (k + 2) * 10_000]))
    log = d / "mixed.log"
    log.write_text("".join(parts))
    assert log.stat().st_size > 4 * 1024 * 1024
    return log


def _summary_text(events, mon, show_all: bool) -> str:
    out = io.StringIO()
    classify_cmd._summary(events, mon, out, show_all)
    return out.getvalue()


def _key(e) -> tuple:
    return (e.line, e.end_line, e.kind, e.rule, e.text, e.worker, e.explanation, e.action)


def _compare(log: Path, kind: str, show_all: bool) -> tuple:
    """Classify ``log`` with and without the cap; assert that nothing shown differs."""
    full, full_mon = classify_log(log, stage_kind=kind, include_info=show_all)
    capped, capped_mon = classify_log(log, stage_kind=kind, include_info=show_all, list_per_rule=CAP)
    assert not full_mon.unlisted
    assert _summary_text(capped, capped_mon, show_all) == _summary_text(full, full_mon, show_all)
    assert capped_mon.counts == full_mon.counts
    # Per kind and rule: the listed events plus the unlisted count are all of them, and the
    # listed ones include the earliest CAP by line, identical to those without the cap.
    by_rule_full: dict[tuple[str, str], list] = {}
    for e in full:
        by_rule_full.setdefault((e.kind, e.rule), []).append(_key(e))
    by_rule_capped: dict[tuple[str, str], list] = {}
    for e in capped:
        by_rule_capped.setdefault((e.kind, e.rule), []).append(_key(e))
    assert set(by_rule_capped) == set(by_rule_full)
    for k, evs in by_rule_full.items():
        got = by_rule_capped[k]
        assert len(got) + capped_mon.unlisted.get(k, 0) == len(evs), k
        assert got[:CAP] == evs[:CAP], k
        assert Counter(got) <= Counter(evs), k  # nothing listed that the full run does not have
    assert not any(k[0] == "fatal" for k in capped_mon.unlisted)  # fatal events are all listed
    # The tail's last event: what a stack printed right under it is read against.
    assert [_key(e) for e in capped_mon.tail_errors(1)] == [_key(e) for e in full_mon.tail_errors(1)]
    return full, capped_mon


@pytest.mark.parametrize("kind", ["task", "service"])
@pytest.mark.parametrize("show_all", [False, True])
def test_counting_instead_of_listing_changes_nothing_shown(mixed_log: Path, kind: str, show_all: bool) -> None:
    _full, capped_mon = _compare(mixed_log, kind, show_all)
    assert sum(capped_mon.unlisted.values()) > 3_000  # the cap did leave events out


def test_a_stack_under_a_counted_warning_reads_it(tmp_path: Path) -> None:
    # A run of stack frames right under a record is that record's stack, no event of its
    # own (monitor._record_before reads the tail's last event). Under a warning the cap
    # counted without making it, the run must read that warning as it does without the
    # cap. The frame: c10's "frame #0: ..." from https://github.com/InternLM/lmdeploy/issues/3258
    # (corpus row 236), under a Python UserWarning of the catch-up benchmark's log.
    row = json.loads(CORPUS.read_text().splitlines()[236])
    assert row["url"] == "https://github.com/InternLM/lmdeploy/issues/3258"
    frames = [x for x in row["text"].splitlines() if x.startswith("frame #")]
    assert frames
    bench_module("bench_logs").generate(tmp_path / "bench.log", 30_000, seed=4)
    bench = (tmp_path / "bench.log").read_text().splitlines(keepends=True)[:-1]  # without its OOM
    cut = max(i for i in range(12_000) if "UserWarning" in bench[i]) + 1
    log = tmp_path / "stack.log"
    log.write_text("".join(bench[:cut]) + "\n".join(frames) + "\n" + "".join(bench[cut:]))
    full, capped_mon = _compare(log, "task", False)
    assert capped_mon.unlisted[("warning", "python-warning")] > 1000
    # Line `cut` is the warning (counted, not listed, with the cap): the frames under it are its stack.
    assert [e.rule for e in full if cut <= e.line <= cut + len(frames)] == ["python-warning"]


def test_the_cli_summary_is_the_one_from_every_event(mixed_log: Path) -> None:
    # The command lists a few events per rule; its text is the summary of every event.
    full, full_mon = classify_log(mixed_log)
    args = argparse.Namespace(path=str(mixed_log), estimate=None, rules=None, json=False, all=False,
                              stage=None, kind="task")
    out, err = io.StringIO(), io.StringIO()
    rc = classify_cmd.run(args, out, err)
    assert err.getvalue() == ""
    assert rc == (1 if full_mon.counts.get("fatal") else 0)
    assert out.getvalue() == _summary_text(full, full_mon, False)
    # --json prints every event, none left out.
    out = io.StringIO()
    classify_cmd.run(argparse.Namespace(**{**vars(args), "json": True}), out, io.StringIO())
    assert len(out.getvalue().splitlines()) >= len(full)
