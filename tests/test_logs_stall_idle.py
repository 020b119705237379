"""A ready service that is idle is not stalled.

vLLM V1 and llama.cpp print nothing between requests; vLLM V0 repeats its metrics line with
"Running: 0 reqs" (a repeat is no news). Either way a server that became ready and has
nothing to do is quiet, not stuck: no stall verdict. A server whose last figures show a
request running, and one that never became ready, still stall. The log is a real vLLM
server's (tests/fixtures/whole_logs/autoscientists-vllm-server.log, from its manifest's URL).
"""

from __future__ import annotations

import time
from pathlib import Path

from eagle3tui.config import load_config
from eagle3tui.logs.monitor import StageLogMonitor
from eagle3tui.logs.stall import serving_idle
from eagle3tui.supervisor.records import RunRecord
from eagle3tui.supervisor.stage_alerts import StageWatch, ruleset_for

SERVER = Path(__file__).resolve().parent / "fixtures" / "whole_logs" / "autoscientists-vllm-server.log"
LINES = SERVER.read_text(encoding="utf-8").splitlines()
READY = next(i for i, t in enumerate(LINES, 1) if "Application startup complete" in t)  # 121
BUSY = next(i for i, t in enumerate(LINES, 1) if "Running: 1 reqs" in t)  # 143
T0 = 1_800_000_000.0


def _monitor(tmp_path: Path, upto: int, kind: str = "service", ready: bool = True) -> StageLogMonitor:
    log = tmp_path / "serve.log"
    log.write_text("\n".join(LINES[:READY]) + "\n", encoding="utf-8")
    mon = StageLogMonitor(log, stage_kind=kind, stall_floor_s=300, started_at=T0)
    mon.poll(T0 + 60)
    if ready:
        mon.mark_ready(T0 + 61)  # its readiness probe answered
    if upto > READY:
        with open(log, "a", encoding="utf-8") as f:
            f.write("\n".join(LINES[READY:upto]) + "\n")
        mon.poll(T0 + 120)
    return mon


def _stalls(mon: StageLogMonitor, at: float) -> list[str]:
    return [e.rule for e in mon.check(at)]


def test_a_ready_server_that_printed_nothing_since_is_not_stalled(tmp_path: Path) -> None:
    mon = _monitor(tmp_path, READY)
    assert _stalls(mon, T0 + 3600) == []


def test_a_ready_server_whose_last_figures_say_nothing_runs_is_not_stalled(tmp_path: Path) -> None:
    mon = _monitor(tmp_path, READY + 4)  # two "Running: 0 reqs, Waiting: 0 reqs" records after readiness
    assert mon.figures.get("running_reqs") == 0
    assert _stalls(mon, T0 + 3600) == []


def test_a_ready_server_with_a_request_running_and_no_news_stalls(tmp_path: Path) -> None:
    mon = _monitor(tmp_path, BUSY)
    assert mon.figures.get("running_reqs") == 1
    assert _stalls(mon, T0 + 3600) == ["stalled"]


def test_a_server_not_yet_ready_and_a_task_stall(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert _stalls(_monitor(tmp_path / "a", READY, ready=False), T0 + 3600) == ["stalled"]
    task = _monitor(tmp_path / "b", READY, kind="task")
    assert _stalls(task, T0 + 3600) == ["stalled"]


def test_idleness_is_what_the_figures_and_the_news_say() -> None:
    assert not serving_idle(None, None, {})
    assert serving_idle(100.0, 90.0, {})  # nothing new since ready
    assert serving_idle(100.0, 200.0, {"running_reqs": 0, "queued_reqs": 0})
    assert not serving_idle(100.0, 200.0, {"running_reqs": 0, "queued_reqs": 3})
    assert not serving_idle(100.0, 200.0, {})  # news since, and no figures: it may be working


def test_a_driver_that_reattaches_to_a_ready_service_knows_it_is_ready(tmp_path: Path) -> None:
    (tmp_path / "pipeline.toml").write_text(
        '[[stage]]\nname = "serve"\nkind = "service"\ncommand = ["true"]\n'
        'ready = { log = "Application startup complete" }\n')
    cfg = load_config(tmp_path / "pipeline.toml")
    log = tmp_path / "serve.log"
    log.write_text("\n".join(LINES[:READY]) + "\n", encoding="utf-8")
    now = time.time()
    rec = RunRecord(stage="serve", attempt=1, run_id="r1", argv=["true"], cwd=str(tmp_path), log=str(log),
                    launched_at=now - 600, started_at=now - 600, pid=1)
    rec.extra["ready_at"] = now - 500
    (cfg.state_dir / "runs" / "serve").mkdir(parents=True, exist_ok=True)
    watch = StageWatch(cfg.stage("serve"), rec, cfg, cfg.state_dir, ruleset_for(cfg))
    watch.poll(now)  # catches up on the log written before it was ready
    assert watch.monitor.ready_at == now
    assert not [a for a in watch.poll(now + 3600) if a[1] == "stall"]
