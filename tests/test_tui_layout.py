"""Pilot tests of how the main screen shares its rows and columns (issue 30, finding 9).

At 80x24 the stage list gets its rows first: every stage of the default
pipeline (``pipeline.toml``, the one a newcomer opens) is on screen, evaluate
(which holds the results) included; the alerts pane is as tall as what it
holds; and the Drift column stays.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from test_tui_app import wait_for
from test_tui_snapshots import build_state

from eagle3tui.config import load_config
from eagle3tui.frontends.tui.app import EagleApp

REPO = Path(__file__).resolve().parent.parent


def default_pipeline_app(tmp_path: Path) -> EagleApp:
    """The shipped pipeline.toml, its outputs (and state) in a temp dir."""
    cfg = load_config(REPO / "pipeline.toml", {"out": str(tmp_path / "out")})
    return EagleApp(cfg, start_driver=False, poll_s=0.1)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_every_default_stage_and_the_drift_column_are_on_screen(
        tmp_path: Path, size: tuple[int, int]) -> None:
    app = default_pipeline_app(tmp_path)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.statuses and app.table.shown(), "the first state poll")
        await pilot.pause(0.2)
        names = [s.name for s in app.statuses]
        assert len(names) == 10 and names[-1] == "evaluate"
        assert [app.table.names[i] for i in app.table.shown()] == names
        header = app.table.render_line(0).text
        assert "Drift" in header and "more" not in header, header
        # The last stage's row is drawn, above the log pane.
        assert "evaluate" in app.table.render_line(len(names)).text
        assert app.table.region.bottom <= app.log_title.region.y
        # With no alert, the alerts pane keeps one row; the log pane has the rest.
        assert app.alerts_panel.region.height == (1 if size[0] < 120 else
                                                  app.alerts_panel.region.height)
        assert app.logview.region.height >= 5


async def test_alerts_pane_is_as_tall_as_what_it_holds_at_80x24(tmp_path: Path) -> None:
    app = build_state(tmp_path / "p")  # two warnings-or-worse alerts
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: len(app.alerts_panel.alerts) == 2, "the two alerts")
        await pilot.pause(0.2)
        assert app.alerts_panel.region.height == 2
        assert app.table.shown() == list(range(len(app.table.names)))
        # More alerts than it may hold: four rows, the log keeps the rest.
        with open(app.config.state_dir / "alerts.jsonl", "a") as f:
            for i in range(5):
                f.write(json.dumps({"level": "warning", "kind": "eta-drift", "message": f"m{i}",
                                    "stage": "train", "attempt": 1, "details": {},
                                    "time": time.time(), "count": 1}) + "\n")
        app.poke()
        await wait_for(pilot, lambda: len(app.alerts_panel.alerts) == 7, "the new alerts")
        await pilot.pause(0.2)
        assert app.alerts_panel.region.height == 4
        assert app.logview.region.height >= 3
        assert app.table.shown() == list(range(len(app.table.names)))
