"""Whole-log replays keep the pauses the log's own timestamps give (bench/log_timestamps.py).

The headers are the first lines of real logs in tests/fixtures/whole_logs_*_unseen (each
row's source is in its manifest); the replay is the scorer's own replay script, run as a
real subprocess and timed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import bench_module

lt = bench_module("log_timestamps")
scorer = bench_module("score_whole_logs")
FIX = Path(__file__).resolve().parent / "fixtures"


@pytest.mark.parametrize("log,line,hhmmss", [
    ("whole_logs_training_unseen/andromeda-accelerate-ds-6rank-sigkill-cpu-oom.log", None, "01:04:13"),
    ("whole_logs_training_unseen/areal-grpo-4rank-sglang-launch-failed-tail.log", None, "22:08:39"),
    ("whole_logs_training_unseen/bert-stock-slurm-stderr-completed.log", None, "09:57:10"),
    ("whole_logs_training_unseen/hotpotqa-vllm-offline-eval-completed.log", None, "16:28:35"),
    ("whole_logs_training_unseen/nanochat-run-all-second-tier-fileexists.log", None, "04:10:50"),
    ("whole_logs_serving_unseen/augment-qa-vllm-serving-idle.log", None, "09:32:06"),
    ("whole_logs_serving_unseen/local-ai-lab-ollama-pull-serving.log", None, "17:47:49"),
    ("whole_logs_serving_unseen/local-ai-vllm-ready-idle.log", None, "11:13:24"),
    ("whole_logs_serving_unseen/xllama-ollama-debug-generate-500.log", None, "13:24:14"),
])
def test_real_headers_give_their_time(log: str, line: int | None, hhmmss: str) -> None:
    lines = (FIX / log).read_text(encoding="utf-8").splitlines()
    first = lines[line] if line is not None else next(x for x in lines if hhmmss in x[:80])
    t = lt.line_time(first)
    h, m, s = (int(x) for x in hhmmss.split(":"))
    assert t is not None and int(t) % 86400 == h * 3600 + m * 60 + s, first


@pytest.mark.parametrize("line", [
    " 66%|██████▌   | 1240/1875 [25:31:08<10:33:24, 59.85s/it]",  # a bar's elapsed time is no header
    "  File \"/w/train.py\", line 12, in main",
    "{'loss': 1.23, 'grad_norm': 0.5, 'learning_rate': 2e-05, 'epoch': 0.1}",
])
def test_lines_without_a_header(line: str) -> None:
    assert lt.line_time(line) is None


def test_gaps_are_capped_each_and_in_all() -> None:
    lines = ["INFO 06-25 16:28:35 start", "  continuation", "INFO 06-25 16:28:36 one second on",
             "INFO 06-25 16:38:36 ten minutes on", "INFO 06-25 16:38:35 the clock went back"]
    assert lt.replay_pauses(lines) == [0.0, 0.0, 1.0, 2.0, 0.0]
    many = [f"INFO 06-25 16:{m:02d}:00 tick" for m in range(40)]
    assert sum(lt.replay_pauses(many)) == pytest.approx(20.0)
    assert lt.replay_pauses(["no header", "none here"]) == [0.003, 0.003]


def test_the_replay_pauses_as_the_log_did(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text("[2025-09-01 14:44:49] INFO start\n[2025-09-01 14:44:50] INFO a second later\n"
                   "[2025-09-01 15:44:50] INFO an hour later (2 s in the replay)\n")
    (tmp_path / "replay.py").write_text(scorer.REPLAY)
    assert scorer.write_pauses(log, tmp_path) == pytest.approx(3.0)
    started = time.monotonic()
    out = subprocess.run([sys.executable, str(tmp_path / "replay.py"), str(log), "0", "-", "0", "0",
                          str(tmp_path / "pauses.json")], capture_output=True, text=True, timeout=30)
    took = time.monotonic() - started
    assert out.stdout == log.read_text() and 2.9 <= took < 8, took
    assert json.loads((tmp_path / "pauses.json").read_text()) == [0.0, 1.0, 2.0]
    assert scorer.write_pauses(log, tmp_path, pace="fixed") == pytest.approx(0.009)
