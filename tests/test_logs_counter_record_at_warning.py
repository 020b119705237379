"""A loop that logs its counters at WARNING is reporting progress, not a warning.

Trainers raise the level of their step records so that they show past a
library's default level: verl-SpeCo's drafter trainer logs
``[...][WARNING] - [drafter loss] step=12 optimizer_step_total=12 lr=...
loss=6.0625 ...`` on every step (the line and its thread are in round
progress4's fresh set, tests/test_logs_progress_serving_stats_and_downloads.py). The level alone
made it a warning, which outranks progress: the stage showed a warning per
step and no progress. A record with a step/iteration/epoch counter and two
more numeric fields, at WARNING, with nothing error-looking in it, is judged
as the progress it is. Lines that say something went wrong keep their
warning.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagle3tui.logs.anatomy import shape
from eagle3tui.logs.judge import _COUNTER_RECORD
from tests.conftest import log_verdict
from tests.test_logs_progress_serving_stats_and_downloads import PROGRESS_LINES

CORPUS = Path(__file__).resolve().parent / "fixtures" / "corpus" / "corpus.jsonl"
# Corpus batch eleven (session eight's never-tuned check) starts here.
NEVER_TUNED_FROM_ROW = 1618

DRAFTER = next(line for _url, line, _kind in PROGRESS_LINES if "[drafter loss] step=12" in line)


def test_counter_record_at_warning_is_progress(tmp_path: Path) -> None:
    assert shape(DRAFTER).level == "warning"
    assert log_verdict(tmp_path, DRAFTER, "task")[0] == "progress"


@pytest.mark.parametrize("row_id", ["automodel-3356-1", "detectron2-195-1", "xla-6026-1", "PaddleClas-369-1"])
def test_the_shape_is_the_counter_record_of_other_trainers(row_id: str) -> None:
    # Progress rows of the corpus (NeMo Automodel, detectron2, pytorch/xla, PaddleClas):
    # the same record shape, written at INFO or with no level.
    row = next(json.loads(x) for x in open(CORPUS, encoding="utf-8") if json.loads(x)["id"] == row_id)
    assert row["label"] == "progress"
    assert any(_COUNTER_RECORD.search(line) for line in row["text"].splitlines())


def test_warning_rows_at_warning_level_keep_their_warning(tmp_path: Path) -> None:
    # Every line of the tune split that a person labelled warning or fatal and that its
    # program logged at WARNING: the cue leaves each one's verdict alone (none of them is a
    # bare counter record), so no real warning turns into progress. Rows from
    # NEVER_TUNED_FROM_ROW on are a batch nobody may see a verdict of, not even in a failure.
    rows = [json.loads(x) for x in open(CORPUS, encoding="utf-8")][:NEVER_TUNED_FROM_ROW]
    checked = 0
    for row in rows:
        if row["split"] != "tune" or row["label"] not in ("warning", "fatal"):
            continue
        for line in row["text"].splitlines():
            if shape(line).level != "warning":
                continue
            checked += 1
            assert not (_COUNTER_RECORD.search(line) and log_verdict(tmp_path, line, row["kind"])[0] == "progress"), (
                row["id"], line)
    assert checked > 50
