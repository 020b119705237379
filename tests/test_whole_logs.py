"""Whole recorded logs, replayed through the real supervisor: one failure, one clear alert.

Each log of tests/fixtures/whole_logs (real logs from public repositories,
each with its URL and the outcome its source establishes in manifest.jsonl)
is printed line by line by a real subprocess run as a stage under
``eagle3tui --watch --run-all`` (bench/score_whole_logs.py), which then ends
the way the recorded process ended. The floors are the figures measured
(docs/logs.md, "Whole logs (wholelogs)"); raise them when the supervisor
does better, never lower them.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import bench_module

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "whole_logs"

# Measured after the changes of the wholelogs round (20 logs, 7 deaths).
FLOORS = {
    "died_one_alert_per_failure": 1.0,  # at most one fatal-log-event critical + one stage-failed
    "died_cause_quoted": 1.0,  # the stage-failed alert's cause spans the line the source names
    "died_message_names_cause": 1.0,  # and its message quotes that line's exception
    "all_ok": 1.0,
}
CEILINGS = {"died_with_false_fatals": 0, "calm_false_alarms": 0}


def _scorer() -> ModuleType:
    return bench_module("score_whole_logs")


def test_manifest_rows_are_complete_and_name_real_lines() -> None:
    rows = _scorer().load_manifest()
    assert len(rows) >= 20
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids))
    assert {p.stem for p in FIXTURES.glob("*.log")} == set(ids), "every log has a manifest row and back"
    for r in rows:
        assert r["url"].startswith("https://github.com/") and r["repo"] in r["url"], r["id"]
        assert r["kind"] in ("task", "service") and r["outcome"] in ("died", "completed", "serving"), r["id"]
        lines = (FIXTURES / f"{r['id']}.log").read_text(encoding="utf-8").splitlines()
        assert len(lines) >= 40, f"{r['id']}: {len(lines)} lines; whole logs or at least 40 lines"
        assert all(ln == ln.rstrip() for ln in lines), f"{r['id']}: trailing spaces are trimmed"
        if r["outcome"] == "died":
            assert r["cause"] and r["exit_code"] != 0, r["id"]
            assert r["cause_line"] is None or 1 <= r["cause_line"] <= len(lines), r["id"]
        else:
            assert r["cause_line"] is None and r["exit_code"] == 0, r["id"]
        if r.get("stop_line") is not None:
            assert r["kind"] == "service" and 1 < r["stop_line"] <= len(lines), r["id"]


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], dict]:
    mod = _scorer()
    results = mod.run(mod.load_manifest(), tmp_path_factory.mktemp("whole"))
    return results, mod.summarise(results)


def test_whole_logs_meet_the_measured_floors(scored: tuple[list[dict], dict]) -> None:
    results, totals = scored
    bad = [r for r in results if not r["ok"]]
    for key, floor in FLOORS.items():
        assert totals[key] is not None and totals[key] >= floor, (key, totals, json.dumps(bad, indent=1))
    for key, ceiling in CEILINGS.items():
        assert totals[key] <= ceiling, (key, totals, json.dumps(bad, indent=1))


def test_a_startup_death_leads_with_its_root_cause_not_its_echoes(scored: tuple[list[dict], dict]) -> None:
    """vLLM logs "EngineCore failed to start", the ValueError under it, the same traceback again
    and the API server's "see root cause above": the alert names the KV-cache ValueError, once."""
    results, _ = scored
    r = next(x for x in results if x["id"] == "dgx-spark-vllm-laguna-int4-kv-cache")
    assert r["critical_kinds"] == ["fatal-log-event", "stage-failed"], r
    assert r["message"].startswith("failed: ValueError: To serve at least one request"), r["message"]
    g = next(x for x in results if x["id"] == "hijinks-vllm-gemma4-failed-startup")
    assert "ImportError: vllm.vllm_flash_attn requires the CUDA flash attention" in g["message"], g["message"]
    # A chain: the CUDA OOM is "the direct cause" of the script's own RuntimeError; it leads.
    y = next(x for x in results if x["id"] == "teech-yolov8-oom-retries")
    assert y["message"].startswith("failed: RuntimeError: CUDA error: out of memory"), y["message"]


def test_an_exception_quoting_a_workers_traceback_is_one_event_ending_at_the_workers_error(
        tmp_path: Path) -> None:
    """PyTorch's DataLoader re-raises a worker's error as ``FileNotFoundError: Traceback (most
    recent call last):`` followed by the worker's traceback: one event, whose exception line
    is the worker's ``[Errno 2] No such file`` (github.com/XDong18/hd3, nohup.out)."""
    from conftest import classified_events

    text = (FIXTURES / "hd3-inference-dataloader-filenotfound.log").read_text(encoding="utf-8")
    fatal = [e for e in classified_events(tmp_path, text.rstrip("\n")) if e.kind == "fatal"]
    assert [(e.line, e.end_line) for e in fatal] == [(33, 53)], fatal
    assert fatal[0].text.startswith("FileNotFoundError: [Errno 2] No such file or directory"), fatal[0].text
