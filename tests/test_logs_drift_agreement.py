"""One drift formula: the drift alert and every display read the same projection.

A stage that loads its model (a finished bar) and then works through a slower
bar: the alert's projected duration and drift are the numbers state.json
shows, the finished loading bar is shown as a phase (no ETA, no drift), and
the remaining time counts down between updates.
"""

from __future__ import annotations

import time
from pathlib import Path

from eagle3tui.config import load_config
from eagle3tui.frontends.tui.format import stage_cells
from eagle3tui.supervisor.records import RunRecord
from eagle3tui.supervisor.stage_alerts import StageWatch, ruleset_for
from eagle3tui.supervisor.state import StageState, StageStatus
from eagle3tui.view import remaining_now


def _setup(tmp_path: Path, log_text: bytes, started_ago: float) -> tuple[StageWatch, float]:
    (tmp_path / "pipeline.toml").write_text(
        '[[stage]]\nname = "extract"\ncommand = ["true"]\nestimate = "10m"\n')
    cfg = load_config(tmp_path / "pipeline.toml")
    log = tmp_path / "extract.log"
    log.write_bytes(log_text)
    now = time.time()
    rec = RunRecord(stage="extract", attempt=1, run_id="r1", argv=["true"], cwd=str(tmp_path),
                    log=str(log), launched_at=now - started_ago, started_at=now - started_ago, pid=1)
    (cfg.state_dir / "runs" / "extract").mkdir(parents=True, exist_ok=True)
    return StageWatch(cfg.stage("extract"), rec, cfg, cfg.state_dir, ruleset_for(cfg)), now


LOADING_DONE = b"Loading weights: 100%|##########| 272/272 [00:04<00:00, 60.00it/s]\n"


def test_alert_and_display_show_the_same_projection(tmp_path: Path) -> None:
    # 400 s since the stage started; the work bar reaches 14/64 after 140 s of its own (a
    # fifth of the bar, drawn step by step as the driver follows it: its rate is evidence):
    # the stage projects to ~400 + 50 * 10 s, far over its 10 minute estimate.
    watch, now = _setup(tmp_path, LOADING_DONE, started_ago=400.0)
    log = tmp_path / "extract.log"
    drift_alerts = []
    for n in range(1, 15):
        with open(log, "ab") as f:
            f.write(f"\rExtracting: {n * 100 // 64:3d}%|#  | {n}/64 [{n * 10 // 60:02d}:{n * 10 % 60:02d}<"
                    f"09:00, 10.00s/it]".encode())
        drift_alerts += [a for a in watch.poll(now - 140.0 + 10.0 * n) if a[1] == "eta-drift"]
    assert len(drift_alerts) == 1, drift_alerts
    details = drift_alerts[0][3]
    eta = watch.live()["eta"]
    assert eta["projected_s"] == details["projected_s"]
    assert eta["drift"] == details["drift"]
    # Stage elapsed (400 s), not the bar's own 140 s, is in the projection.
    assert eta["projected_s"] >= 400.0 + 50 * 9.0
    assert eta["drift"] > 0.25 and not eta["done"]


def test_a_finished_loading_bar_is_a_phase_not_the_stages_progress(tmp_path: Path) -> None:
    watch, now = _setup(tmp_path, LOADING_DONE, started_ago=30.0)
    assert [a for a in watch.poll(now) if a[1] == "eta-drift"] == []
    live = watch.live()
    assert live["eta"]["done"] is True
    assert live["eta"]["remaining_s"] is None and live["eta"]["drift"] is None
    st = StageStatus(name="extract", kind="task", state=StageState.RUNNING, attempt=1,
                     started_at=now - 30, live=live)
    cells = stage_cells(st, now)
    assert cells["eta"].plain == "" and cells["drift"].plain == "" and cells["bar"].plain == ""
    assert "done" in cells["count"].plain


def test_the_eta_counts_down_between_updates() -> None:
    eta = {"remaining_s": 77.0, "at": 1000.0}
    assert remaining_now(eta, 1000.0) == 77.0
    assert remaining_now(eta, 1020.0) == 57.0
    assert remaining_now(eta, 1200.0) == 0.0
    assert remaining_now({"remaining_s": None}, 1000.0) is None
