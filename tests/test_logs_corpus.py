"""The classifier scored on real logs nobody on this project wrote.

The corpus (tests/fixtures/corpus/corpus.jsonl, README beside it) holds
excerpts of logs posted in public issue threads, each with its thread's URL
and a label. Each excerpt goes through ``classify_log`` — what
``eagle3tui classify --json --all --kind KIND`` runs — and its verdict is the
most serious event kind found (bench/score_corpus.py defines it and prints
the confusion table that docs/logs.md shows).

The thresholds apply to the ``tune`` split, the part of the corpus the
structural judge was developed against. The ``heldout`` split (30%, chosen by
a seeded hash before any classifier change) is scored too and may not fall
below the floor it measured at when this test was written: it guards against
regressions without letting anyone tune to it.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import bench_module

ROOT = Path(__file__).resolve().parent.parent
SEED = "eagle3tui-corpus-2026-11-30"
THRESHOLDS = {"fatal_recall": 0.95, "false_fatal": 0.03, "benign_recognised": 0.85, "progress_recognised": 0.95}
# Held-out floors: a change that makes the held-out scores worse fails here.
# They are below THRESHOLDS on purpose: the held-out failures are never read,
# so these figures are what the classifier does on logs it was not fitted to.
# The held-out split's first 472 excerpts (rows 0-1489; the whole split until batch ten, rows
# 1490-1617, was added by round fresh10 and is held to its own floor below) at its measurement
# after round fresh9 (docs/history/logs-notebook.md); batch nine (rows 1366-1489, collected to be representative
# of the EAGLE-3 pipeline's stack after the session's classifier changes, labelled and committed
# before scoring, never used to tune) moved it (its held-out half recognises 7 of 10 fatal endings, 2 of 6 benign
# lines, 5 of 6 progress lines, and calls one of 29 non-fatal lines fatal), to 0.862 / 0.024 /
# 0.685 / 0.906; session eight's round one (stack frames in any framing, results by their layout,
# the notice grammar) raised it to 154/174, 7/298, 62/89, 70/75, and round cliend's final
# error reports to 155/174 ...
HELDOUT_1490_ROWS = 1490
HELDOUT_FLOOR = {"fatal_recall": 0.89, "false_fatal": 0.024, "benign_recognised": 0.696, "progress_recognised": 0.933}
# ... its first 433 excerpts (rows 0-1365) at their measurement after all of session seven's
# rounds (round fresh8, whose batch of rows 1263-1365 had moved the split, left 0.854 / 0.022 /
# 0.711 / 0.913; the speaker cues of round whotalks then recognised more fatal endings) ...
HELDOUT_1366_ROWS = 1366
HELDOUT_1366_FLOOR = {"fatal_recall": 0.871, "false_fatal": 0.023, "benign_recognised": 0.71, "progress_recognised": 0.913}
# ... its first 399 excerpts (rows 0-1262) keep the whole split's floor of round fresh7, whose
# batch (rows 1154-1262: collected to be representative, labelled before scoring) had moved it
# (its held-out half has a false fatal and a missed progress line among 36) ...
HELDOUT_1263_ROWS = 1263
HELDOUT_1263_FLOOR = {"fatal_recall": 0.86, "false_fatal": 0.025, "benign_recognised": 0.692, "progress_recognised": 0.952}
# ... its first 363 excerpts (rows 0-1153, the split at the start of session seven) at their
# measurement after session seven's rounds (round fatal3's floor, after its batch of rows
# 1088-1153 had lowered the split, was 0.853 / 0.023 / 0.676 / 0.964) ...
HELDOUT_1154_ROWS = 1154
HELDOUT_1154_FLOOR = {"fatal_recall": 0.874, "false_fatal": 0.023, "benign_recognised": 0.69, "progress_recognised": 0.964}
# ... its first 343 excerpts (rows 0-1087) at theirs after the benign cues of step 7 (branch
# benign9), whose batch (rows 1018-1087, labelled before scoring) had lowered it ...
HELDOUT_1088_ROWS = 1088
HELDOUT_1088_FLOOR = {"fatal_recall": 0.89, "false_fatal": 0.019, "benign_recognised": 0.676, "progress_recognised": 0.964}
# ... its first 323 excerpts (rows 0-985) at theirs after the same cues, the third notice
# catalog and round progress3's counter shapes (progress 55/57; the notice catalog and the
# progress shapes had set 0.902 / 0.015 / 0.677 / 0.947; batch eight, rows 880-985, had
# lowered it before) ...
HELDOUT_986_ROWS = 986
HELDOUT_986_FLOOR = {"fatal_recall": 0.902, "false_fatal": 0.015, "benign_recognised": 0.725, "progress_recognised": 0.964}
# ... its first 277 excerpts (rows 0-879) at their measurement after round eight
# (round seven set 0.899 / 0.023 / 0.537 / 0.923; batch seven, rows 796-879, had lowered it) ...
HELDOUT_880_ROWS = 880
HELDOUT_880_FLOOR = {"fatal_recall": 0.899, "false_fatal": 0.017, "benign_recognised": 0.537, "progress_recognised": 0.923}
# ... its first 251 excerpts (rows 0-795) keep the whole split's floor of round six
# (round five set 0.888 / 0.013 / 0.571 / 0.911) ...
HELDOUT_796_ROWS = 796
HELDOUT_796_FLOOR = {"fatal_recall": 0.899, "false_fatal": 0.013, "benign_recognised": 0.571, "progress_recognised": 0.911}
# ... its first 219 excerpts (rows 0-695) at their measurement after round six
# (round five set 0.89 / 0.015 / 0.585 / 0.925, round four 0.89 / 0.015 / 0.585 / 0.9) ...
HELDOUT_696_ROWS = 696
HELDOUT_696_FLOOR = {"fatal_recall": 0.901, "false_fatal": 0.015, "benign_recognised": 0.585, "progress_recognised": 0.925}
# ... its first 186 excerpts (rows 0-589) at theirs after round six (round five set
# 0.902 / 0.009 / 0.647 / 0.906, round four 0.902 / 0.009 / 0.647 / 0.875) ...
HELDOUT_590_ROWS = 590
HELDOUT_590_FLOOR = {"fatal_recall": 0.916, "false_fatal": 0.009, "benign_recognised": 0.647, "progress_recognised": 0.906}
# ... and its first 152 excerpts (rows 0-477) at theirs (round two set 0.92 /
# 0.015 / 0.6 / 0.92): a later batch may lower the whole split's figures, never these.
HELDOUT_478_ROWS = 478
HELDOUT_478_FLOOR = {"fatal_recall": 0.942, "false_fatal": 0.01, "benign_recognised": 0.615, "progress_recognised": 0.925}


def _scorer() -> ModuleType:
    return bench_module("score_corpus")


@pytest.fixture(scope="module")
def scorer() -> ModuleType:
    return _scorer()


@pytest.fixture(scope="module")
def rows(scorer: ModuleType) -> list[dict]:
    return scorer.load_corpus()


def test_corpus_is_real_labelled_and_split_by_the_recorded_seed(rows: list[dict]) -> None:
    assert len(rows) >= 986
    assert len({r["id"] for r in rows}) == len(rows)
    url = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+$")
    for r in rows:
        assert url.match(r["url"]), r["id"]
        assert r["repo"] == "/".join(r["url"].split("/")[3:5]), r["id"]
        assert r["label"] in ("fatal", "benign", "warning", "progress", "info"), r["id"]
        assert r["kind"] in ("service", "task"), r["id"]
        assert r["text"].strip() and all(line == line.rstrip() for line in r["text"].split("\n")), r["id"]
        # The split is a function of the thread, fixed before tuning: never hand-picked.
        h = int(hashlib.sha256(f"{SEED}|{r['url']}".encode()).hexdigest(), 16)
        assert r["split"] == ("heldout" if h % 100 < 30 else "tune"), r["id"]
    held = sum(r["split"] == "heldout" for r in rows) / len(rows)
    assert 0.25 <= held <= 0.35
    labels = Counter(r["label"] for r in rows)
    assert min(labels.values()) >= 30, labels
    assert {r["kind"] for r in rows} == {"service", "task"}


def test_corpus_covers_the_families_of_the_issue(rows: list[dict]) -> None:
    repos = {r["repo"] for r in rows}
    for needed in (
        "vllm-project/vllm", "sgl-project/sglang", "pytorch/pytorch", "NVIDIA/nccl", "NVIDIA/nccl-tests",
        "deepspeedai/DeepSpeed", "NVIDIA/Megatron-LM", "ray-project/ray", "huggingface/transformers",
        "huggingface/accelerate", "ggml-org/llama.cpp", "sgl-project/SpecForge",
    ):
        assert needed in repos, needed
    assert len(repos) >= 80
    text = "\n".join(r["text"] for r in rows)
    for family in (
        "EngineCore encountered a fatal error", "died unexpectedly", "output_handler failed", "Process Process-1:",
        "Error executing method 'init_device'", "--mem-fraction-static", "is larger than the profiled value",
        "NCCL INFO", "NCCL Error 2: unhandled system error", "Test NCCL failure", "Cuda failure 802",
        "sigkill_handler", "closing signal SIGTERM", "cancelling task of dead actor", "Segmentation fault",
        "Exception ignored in", "Error in extracting tool call", "Exception in ASGI application",
        "out of resource: shared memory", "No valid triton configs", "Read callback failed", "libnccl-net.so",
        "Error in cpuinfo: prctl", "Failed to import from vllm._C", "FutureWarning", "Prefill batch",
        "Decode batch", "iteration      122/", "SamplesPerSec=", "eval_accuracy",
    ):
        assert family in text, family


def _holds(result: dict, floor: dict[str, float], title: str, scorer: ModuleType) -> None:
    """The four scores of ``result`` hold ``floor`` (false fatal at most, the others at least)."""
    s = result["scores"]
    table = scorer.table(result, title)  # scores only: held-out failures stay unread
    assert s["fatal_recall"] >= floor["fatal_recall"], table
    assert s["false_fatal"] <= floor["false_fatal"], table
    assert s["benign_recognised"] >= floor["benign_recognised"], table
    assert s["progress_recognised"] >= floor["progress_recognised"], table


def test_scores_reach_the_thresholds(scorer: ModuleType, rows: list[dict]) -> None:
    # The thresholds hold the rows the judge may be tuned on. Batch ten's tune half (rows 1490-1617)
    # was session eight's never-tuned check for round one (29/41 fatal endings before it, 33/41
    # after), then round two read its misses, so it is tune data now. Batch eleven's tune half (rows
    # from FRESH11_FROM_ROW on) is round two's never-tuned check, and batch twelve's (from
    # FRESH12_FROM_ROW on) session nine's: their scores are reported (docs/history/logs-notebook.md, "Fresh batch
    # eleven"; tests/fixtures/corpus/README.md), not held to thresholds that would invite tuning to them.
    tuned = [r for r in rows[:FRESH11_FROM_ROW] if r["split"] == "tune"]
    _holds(scorer.score(tuned), THRESHOLDS, "tune split", scorer)


@pytest.mark.parametrize(
    ("first_rows", "floor"),
    [
        (HELDOUT_1490_ROWS, HELDOUT_FLOOR),
        (HELDOUT_1366_ROWS, HELDOUT_1366_FLOOR),
        (HELDOUT_1263_ROWS, HELDOUT_1263_FLOOR),
        (HELDOUT_1154_ROWS, HELDOUT_1154_FLOOR),
        (HELDOUT_1088_ROWS, HELDOUT_1088_FLOOR),
        (HELDOUT_986_ROWS, HELDOUT_986_FLOOR),
        (HELDOUT_880_ROWS, HELDOUT_880_FLOOR),
        (HELDOUT_796_ROWS, HELDOUT_796_FLOOR),
        (HELDOUT_696_ROWS, HELDOUT_696_FLOOR),
        (HELDOUT_590_ROWS, HELDOUT_590_FLOOR),
        (HELDOUT_478_ROWS, HELDOUT_478_FLOOR),
    ],
)
def test_heldout_scores_do_not_regress(
    scorer: ModuleType, rows: list[dict], first_rows: int | None, floor: dict[str, float]
) -> None:
    _holds(scorer.score([r for r in rows[:first_rows] if r["split"] == "heldout"]), floor, "heldout split", scorer)


# Each representative batch's own held-out half, at its measurement (rows: label, columns:
# verdict in docs/history/logs-notebook.md). Batch seven (rows 1154-1262, 36 excerpts) and batch eight (rows
# 1263-1365, 34) at their measurement after their rounds, which is also their unchanged first
# score: each batch was scored before any change, and the round's cues came from tune rows only.
# Batch nine (rows 1366-1489, 39) at its first and only score: it was collected after the
# session's classifier changes to measure them on logs they were not built from, labelled and
# committed before the classifier ran on it, and never used to tune (the code of the session's
# start, 9723898, scores it the same: 7/10, 1/29, 2/6, 5/6). Batch ten (rows 1490-1617, 32) at
# its first score, by the code of session eight's start (a23a6c7): collected to be representative,
# labelled and committed (c756117) before the classifier ran on it, and never used to tune — the
# session's never-tuned check (11/14 fatal endings, 0/18 false fatal, 3/6 benign, 3/4 progress).
# Batch eleven (rows 1618-1750, 45) at its first score, by the code of main f1a1d02 (after session
# eight's round one): collected to be representative, the ordinary lines around each failure taken
# too, labelled and committed (2d7701a) before the classifier ran on it, and never used to tune —
# round two's never-tuned check (8/14 fatal endings, 2/31 false fatal, 5/6 benign, 2/3 progress).
# Both at their figures after session eight's last round (cliend, a command's own final error
# report), which moved their fatal endings without anyone reading them: batch ten's held-out
# half 11/14 -> 12/14, batch eleven's 8/14 -> 10/14 (round two had left both as they were).
# Batch twelve (rows 1751-1879, 33) at its first score, by the code of main 3546192 (session
# eight landed): collected to be representative, the ordinary lines around each failure taken too,
# labelled and committed (1eba8d7) before the classifier ran on it, and never used to tune —
# session nine's never-tuned check (10/11 fatal endings, 0/22 false fatal, 1/3 benign, 1/2
# progress; its tune half, never read either: 15/16, 2/80, 10/15, 18/18). Batch eleven's floor
# ends where batch twelve begins, so that each batch is held to its own first score.
FRESH7_FROM_ROW = 1154
FRESH8_FROM_ROW = 1263
FRESH9_FROM_ROW = 1366
FRESH10_FROM_ROW = 1490
FRESH11_FROM_ROW = 1618
FRESH12_FROM_ROW = 1751
FRESH7_HELDOUT_FLOOR = {"fatal_recall": 1.0, "false_fatal": 0.035, "benign_recognised": 0.857, "progress_recognised": 0.833}
FRESH8_HELDOUT_FLOOR = {"fatal_recall": 0.785, "false_fatal": 0.0, "benign_recognised": 0.8, "progress_recognised": 0.5}
FRESH9_HELDOUT_FLOOR = {"fatal_recall": 0.7, "false_fatal": 0.035, "benign_recognised": 0.333, "progress_recognised": 0.833}
FRESH10_HELDOUT_FLOOR = {"fatal_recall": 0.857, "false_fatal": 0.0, "benign_recognised": 0.5, "progress_recognised": 1.0}
FRESH11_HELDOUT_FLOOR = {"fatal_recall": 0.714, "false_fatal": 0.065, "benign_recognised": 0.833, "progress_recognised": 0.666}
FRESH12_HELDOUT_FLOOR = {"fatal_recall": 0.909, "false_fatal": 0.0, "benign_recognised": 0.333, "progress_recognised": 0.5}


@pytest.mark.parametrize(
    ("first", "end", "floor"),
    [
        (FRESH7_FROM_ROW, FRESH8_FROM_ROW, FRESH7_HELDOUT_FLOOR),
        (FRESH8_FROM_ROW, FRESH9_FROM_ROW, FRESH8_HELDOUT_FLOOR),
        (FRESH9_FROM_ROW, FRESH10_FROM_ROW, FRESH9_HELDOUT_FLOOR),
        (FRESH10_FROM_ROW, FRESH11_FROM_ROW, FRESH10_HELDOUT_FLOOR),
        (FRESH11_FROM_ROW, FRESH12_FROM_ROW, FRESH11_HELDOUT_FLOOR),
        (FRESH12_FROM_ROW, None, FRESH12_HELDOUT_FLOOR),
    ],
    ids=["batch-seven", "batch-eight", "batch-nine", "batch-ten", "batch-eleven", "batch-twelve"],
)
def test_heldout_half_of_a_fresh_batch_does_not_regress(
    scorer: ModuleType, rows: list[dict], first: int, end: int | None, floor: dict[str, float]
) -> None:
    held = scorer.score([r for r in rows[first:end] if r["split"] == "heldout"])
    _holds(held, floor, f"heldout split, rows {first}-{(end or len(rows)) - 1}", scorer)


def test_service_kind_changes_the_verdict_of_a_request_failure(scorer: ModuleType, tmp_path: Path) -> None:
    """The same per-request traceback is fatal in a task and a warning in a service."""
    from eagle3tui.logs.offline import classify_log

    row = next(r for r in scorer.load_corpus() if r["id"] == "vllm-17790-1")
    log = tmp_path / "x.log"
    log.write_text(row["text"] + "\n")
    served, _ = classify_log(log, stage_kind="service")
    ran, _ = classify_log(log, stage_kind="task")
    assert {e.kind for e in served} == {"warning"} and "request-failed" in {e.rule for e in served}
    assert "fatal" in {e.kind for e in ran}


def test_the_cli_scores_one_batch_between_two_rows(
    scorer: ModuleType, rows: list[dict], capsys: pytest.CaptureFixture[str]
) -> None:
    """``--from-row N --to-row M`` scores rows N..M-1 only: one batch among later ones."""
    start, end = 1154, 1263
    assert scorer.main(["--split", "tune", "--from-row", str(start), "--to-row", str(end)]) == 0
    out = capsys.readouterr().out
    n = sum(1 for r in rows[start:end] if r["split"] == "tune")
    assert f"**tune split** ({n} excerpts;" in out
    assert n != sum(1 for r in rows[start:] if r["split"] == "tune")
