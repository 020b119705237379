"""A traceback quoted in a Python warning's message is the warning's, not a death.

``warnings.warn(f"Error in stream_executor: {traceback}")`` prints the
warning's header (``file.py:330: UserWarning:``), then the caught
exception's traceback as its message, and returns: the program goes on.
Read as an ordinary traceback, the excerpt below (sglang#1333, corpus row
sglang-1333-1, labelled warning) was judged fatal. The same "<words>:
Traceback" opener without a warning's header is the program reporting an
exception it dies of (SGLang's "Scheduler hit an exception: Traceback",
corpus rows labelled fatal), and stays fatal.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagle3tui.logs.offline import classify_log

CORPUS = Path(__file__).resolve().parent / "fixtures" / "corpus" / "corpus.jsonl"


def _row(row_id: str) -> dict:
    with open(CORPUS, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row["id"] == row_id:
                return row
    raise AssertionError(f"corpus row {row_id} is missing")


def _verdicts(tmp_path: Path, text: str, kind: str) -> list[tuple[str, str]]:
    log = tmp_path / "stage.log"
    log.write_text(text + "\n", encoding="utf-8")
    events, _ = classify_log(log, stage_kind=kind, include_info=False)
    return [(e.kind, e.rule) for e in events]


def test_a_traceback_in_a_user_warning_is_a_warning(tmp_path: Path) -> None:
    # https://github.com/sgl-project/sglang/issues/1333
    row = _row("sglang-1333-1")
    assert "UserWarning: Error in stream_executor: Traceback" in row["text"]
    got = _verdicts(tmp_path, row["text"], row["kind"])
    assert ("warning", "traceback-in-warning") in got
    assert not [k for k, _ in got if k == "fatal"]


@pytest.mark.parametrize("row_id", ["sglang-26265-1", "sglang-4618-1", "sglang-3623-1"])
def test_words_then_traceback_without_a_warning_header_stay_fatal(tmp_path: Path, row_id: str) -> None:
    # https://github.com/sgl-project/sglang/issues/26265, /pull/4618, /issues/3623:
    # "Scheduler hit an exception: Traceback", "warmup error: Traceback" — the server dies.
    row = _row(row_id)
    assert row["label"] == "fatal"
    got = _verdicts(tmp_path, row["text"], row["kind"])
    assert [k for k, _ in got if k == "fatal"], got
    assert ("warning", "traceback-in-warning") not in got
