"""Root cause across processes: one failure of a distributed job is one incident.

When one rank of a torchrun job dies, the launcher sends SIGTERM to the others, ranks blocked
in a collective time out, and torchrun prints its ChildFailedError box. The alert leads with
the rank that failed first (torchrun's "Root Cause (first observed failure)", its "failed
(exitcode: -9) local_rank: 0" line, a rank's own OOM) and counts the rest under it as
consequences. The logs are real excerpts from public threads (tests/fixtures/torchrun).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from eagle3tui.config import load_config
from eagle3tui.logs.ranks import (
    Incident,
    RankFailure,
    find_incident,
    parse_report,
    signal_name,
)
from eagle3tui.supervisor.driver import failure_message
from eagle3tui.supervisor.records import RunRecord
from eagle3tui.supervisor.stage_alerts import StageWatch, ruleset_for
from tests.conftest import bench_module

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "torchrun"
ROWS = {r["id"]: r for r in (json.loads(x) for x in (FIXTURES / "manifest.jsonl").read_text().splitlines() if x)}


class _Status:
    reason = "exit 1"
    hint = ""


def _watched_path(tmp_path: Path, src: Path) -> tuple[StageWatch, list]:
    (tmp_path / "pipeline.toml").write_text('[[stage]]\nname = "s"\ncommand = ["true"]\n')
    cfg = load_config(tmp_path / "pipeline.toml")
    log = tmp_path / "s.log"
    log.write_bytes(src.read_bytes())
    now = time.time()
    rec = RunRecord(stage="s", attempt=1, run_id="r1", argv=["true"], cwd=str(tmp_path), log=str(log),
                    launched_at=now - 600, started_at=now - 600, pid=1)
    (cfg.state_dir / "runs" / "s").mkdir(parents=True, exist_ok=True)
    watch = StageWatch(cfg.stage("s"), rec, cfg, cfg.state_dir, ruleset_for(cfg))
    alerts = watch.poll(now)
    rec.exit_code, rec.ended_at = 1, now
    alerts += watch.finish(rec)
    return watch, alerts


def _watched(tmp_path: Path, log_id: str) -> tuple[StageWatch, list]:
    """A StageWatch (the driver's, with the real monitor) that read a fixture and saw it exit 1."""
    return _watched_path(tmp_path, FIXTURES / f"{log_id}.log")


def test_the_manifest_names_every_fixture_and_its_thread() -> None:
    assert {p.stem for p in FIXTURES.glob("*.log")} == set(ROWS)
    for r in ROWS.values():
        assert r["url"].startswith("https://github.com/") and r["repo"] in r["url"], r


@pytest.mark.parametrize("log_id,leads,folded", [
    # 2 ranks: local_rank 0 SIGKILLed, torchrun then SIGTERMs the survivor.
    ("stoke-2rank-sigkill", "failed: local_rank 0 (pid 10398) was killed by SIGKILL (exitcode -9)",
     "the launcher stopped 1 other process; the launcher's ChildFailedError report"),
    ("colossalai-4rank-sigkill", "failed: local_rank 3 (pid 812917) was killed by SIGKILL (exitcode -9)",
     "the launcher stopped 3 other processes"),
    # The box alone: its root cause, whatever the report's first line said.
    ("cppo-sigkill-box", "failed: rank 0 (pid 14750) was killed by SIGKILL (exitcode -9)", "ChildFailedError report"),
    ("speculators-4rank-box", "failed: rank 1 failed first",
     ("then rank 3 (pid 14692) exited with code 1, rank 0 (pid 14689) was killed by SIGKILL (exitcode -9), "
      "rank 2 (pid 14691) was killed by SIGTERM")),
    # A rank's own OOM leads, with the size it tried to allocate; the next rank's traceback follows.
    ("msswift-gemma3-rank-oom", "failed: rank 15: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.63 GiB",
     "then rank12"),
    # Only the consequences are quoted: the timeouts are counted, none of them is called the cause.
    ("msswift-embedding-nccl-timeouts",
     ("failed: a collective timed out waiting for a rank that left no error in this log: [E1026 04:01:29.500973224 "
      "ProcessGroupNCCL.cpp:2573] [PG ID 1 PG GUID 1 Rank 0] First PG on this rank to signal dumping."),
     "3 collective timeouts on other ranks"),
])
def test_stage_failed_leads_with_the_first_failing_rank(tmp_path: Path, log_id: str, leads: str, folded: str) -> None:
    watch, alerts = _watched(tmp_path, log_id)
    message = failure_message(_Status(), watch.cause())
    assert message.startswith(leads), message
    assert "consequences: " in message and folded in message, message
    # One failure, one critical fatal event: every other fatal line is its echo.
    assert [a[1] for a in alerts if a[0] == "critical"] == ["fatal-log-event"], alerts


def test_the_fatal_event_names_the_rank_and_its_signal(tmp_path: Path) -> None:
    _watch, alerts = _watched(tmp_path, "stoke-2rank-sigkill")
    (crit,) = [a for a in alerts if a[0] == "critical"]
    assert crit[2].startswith("local_rank 0 (pid 10398) was killed by SIGKILL (exitcode -9)"), crit
    assert crit[3]["line"] == 2  # torchrun's "failed (exitcode: -9) local_rank: 0", not the SIGTERM at line 1
    assert crit[3]["incident"]["signal"] == "SIGKILL"
    assert [c["kind"] for c in crit[3]["incident"]["consequences"]] == ["sibling-stopped", "launcher-report"]
    echoes = [a for a in alerts if a[1] == "fatal-log-event" and a[0] == "info"]
    assert echoes and all("the same failure as line 2" in a[2] for a in echoes), echoes


def test_the_fatal_event_of_a_rank_oom_names_the_rank_and_the_size(tmp_path: Path) -> None:
    _watch, alerts = _watched(tmp_path, "msswift-gemma3-rank-oom")
    (crit,) = [a for a in alerts if a[0] == "critical"]
    assert crit[2].startswith("rank 15 ran out of CUDA memory (tried to allocate 2.63 GiB)"), crit


def test_a_rank_that_raised_first_leads_over_the_rank_torchrun_saw_exit_first(tmp_path: Path) -> None:
    # HjyGb/MsFreB's train_error.log: rank 1 raised the TypeError first (lines 17-22), rank 0 the
    # same after it; torchrun's box names rank 0, the first child whose exit it observed.
    src = Path(__file__).resolve().parent / "fixtures" / "whole_logs" / "msfreb-torchrun-ddp-save-model-typeerror.log"
    watch, _ = _watched_path(tmp_path, src)
    message = failure_message(_Status(), watch.cause())
    assert message.startswith("failed: rank 1: TypeError: save_model() got an unexpected keyword argument"), message
    assert "then rank0: TypeError" in message, message


def test_a_job_of_one_process_is_no_incident() -> None:
    fatals = [{"line": 3, "end_line": 3, "rule": "oom", "worker": None,
               "text": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."}]
    assert find_incident(fatals, {}) is None


def test_torchruns_box_is_read_field_by_field() -> None:
    lines = {i + 1: t for i, t in enumerate((FIXTURES / "speculators-4rank-box.log").read_text().splitlines())}
    start = next(n for n, t in lines.items() if "ChildFailedError" in t)
    root, others = parse_report(lines, start)
    assert root is not None and (root.rank, root.local_rank) == (1, 1)
    assert [(o.rank, o.exitcode, o.signal) for o in others] == [(3, 1, None), (0, -9, "SIGKILL"), (2, -15, "SIGTERM")]
    assert signal_name(-9) == "SIGKILL" and signal_name(1) is None and signal_name(-200) is None


def test_an_incident_says_who_and_how() -> None:
    inc = Incident(RankFailure(7, rank=1, local_rank=1, exitcode=-9, pid=42, signal="SIGKILL"))
    assert inc.cause.headline().startswith("rank 1 (pid 42) was killed by SIGKILL (exitcode -9)")
    assert RankFailure(1, rank=4, local_rank=0, exitcode=1).headline() == "rank 4 (local_rank 0) exited with code 1"


# -- the same through the supervisor a user runs: --watch, a real stage, the pager ----------


@pytest.mark.parametrize("log_id,message,fatal_event", [
    ("stoke-2rank-sigkill", "failed: local_rank 0 (pid 10398) was killed by SIGKILL",
     "local_rank 0 (pid 10398) was killed by SIGKILL"),
    ("msswift-gemma3-rank-oom", "failed: rank 15: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.63 GiB",
     "rank 15 ran out of CUDA memory (tried to allocate 2.63 GiB)"),
])
def test_a_replayed_torchrun_death_pages_once_naming_the_rank(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              log_id: str, message: str, fatal_event: str) -> None:
    mod = bench_module("score_whole_logs")
    monkeypatch.setattr(mod, "FIXTURES", FIXTURES)  # the replay prints this log, as for the whole logs
    got = mod.replay_one(ROWS[log_id], tmp_path / "work")
    assert got["watch_rc"] == 1, got
    crit = [a for a in got["alerts"] if a.get("level") == "critical" and not (a.get("details") or {}).get("merged")]
    assert [a["kind"] for a in crit] == ["fatal-log-event", "stage-failed"], crit
    fatal, failed = crit
    assert fatal["message"].startswith(fatal_event), fatal["message"]
    assert failed["message"].startswith(message), failed["message"]
    assert "consequences: " in failed["message"], failed["message"]
    assert [p["kind"] for p in got["pages"] if p.get("level") == "critical"] == ["stage-failed"], got["pages"]


def test_a_peers_broken_collective_is_folded_under_the_rank_killed_by_a_signal(tmp_path: Path) -> None:
    # A real 2-rank torchrun job (gloo on CPU, bench/multi_gpu/ranks.py): rank 1 is SIGKILLed;
    # rank 0's all-reduce then raises gloo's "Connection reset by peer" traceback *before*
    # torchrun's report, which names rank 1 as the root cause. The earlier traceback is the
    # consequence: its exception is raised by the collective's transport.
    src = Path(__file__).resolve().parent / "fixtures" / "logs" / "captured_torchrun_rank_sigkill.log"
    watch, alerts = _watched_path(tmp_path, src)
    message = failure_message(_Status(), watch.cause())
    assert message.startswith("failed: rank 1 (pid 13118) was killed by SIGKILL (exitcode -9)"), message
    assert "1 collective broken on other ranks (rank0: RuntimeError" in message, message
    assert "the launcher stopped 1 other process" in message, message
    crit = [a for a in alerts if a[0] == "critical"]
    assert [a[1] for a in crit] == ["fatal-log-event"], alerts
    assert crit[0][2].startswith("rank 1 (pid 13118) was killed by SIGKILL"), crit
