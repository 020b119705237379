"""A launcher that killed its processes says why in its own next record, after their tracebacks.

DeepSpeed's launcher logs "Killing subprocess N", its rank prints the KeyboardInterrupt it
got, and then the launcher, from the same logger source, "Main process received SIGINT,
exiting". The failure leads with that account (the same speaker's next record), not with the
rank's echo. The log is a real one (tests/fixtures/whole_logs_training_unseen, its manifest
names the source); the torchrun logs show that a failure torchrun reported in its
"failed (exitcode: -9)" line is caused at that line, not at the box that repeats it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagle3tui.logs.logger_source import next_from_same_source, source_of
from tests.test_logs_root_cause import _watched_path

UNSEEN = Path(__file__).resolve().parent / "fixtures" / "whole_logs_training_unseen"
ROWS = {r["id"]: r for r in (json.loads(x) for x in (UNSEEN / "manifest.jsonl").read_text().splitlines() if x)}


def test_the_launchers_own_next_record_explains_its_kill(tmp_path: Path) -> None:
    row = ROWS["olora-deepspeed-sequential-tasks-debugpy-sigint"]
    watch, _alerts = _watched_path(tmp_path, UNSEEN / f"{row['id']}.log")
    cause = watch.cause()
    assert cause is not None and cause["line"] <= row["cause_line"] <= cause["end_line"], cause
    assert cause["text"].endswith("Main process received SIGINT, exiting"), cause


@pytest.mark.parametrize("log_id", ["andromeda-accelerate-ds-6rank-sigkill-cpu-oom",
                                    "andromeda-accelerate-ds-nvme-offload-sigkill"])
def test_a_rank_torchrun_reported_first_is_caused_at_that_report(tmp_path: Path, log_id: str) -> None:
    row = ROWS[log_id]
    watch, _alerts = _watched_path(tmp_path, UNSEEN / f"{log_id}.log")
    cause = watch.cause()
    assert cause is not None and cause["line"] == row["cause_line"], cause
    assert "was killed by SIGKILL (exitcode -9)" in cause["text"], cause


def test_logger_sources() -> None:
    assert source_of("[2025-08-28 18:19:07,039] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 1") \
        == "launch.py:sigkill_handler"
    assert source_of("WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 2 closing signal "
                     "SIGTERM") == "torch.distributed.elastic.multiprocessing.api"
    assert source_of("KeyboardInterrupt") is None
    lines = {1: "[t] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 9", 2: "Traceback (most recent call last):",
             3: "[t] [INFO] [engine.py:10:step] step 3", 4: "[t] [INFO] [launch.py:324:sigkill_handler] received SIGINT"}
    assert next_from_same_source(lines, 1, 1) == (4, lines[4])
    run = {1: lines[1], 2: lines[1].replace(" 9", " 10"), 3: "KeyboardInterrupt", 4: lines[4]}
    assert next_from_same_source(run, 1, 1) == (4, lines[4])  # the other kill lines are the same run
    assert next_from_same_source({1: "no header"}, 1, 1) is None
