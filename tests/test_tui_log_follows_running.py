"""Pilot tests at 80x24 and 160x48 with a real driver and real stages: the log pane
follows the stage that is running (after run all, and when the TUI is reopened),
until the user picks a stage with the keys.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from test_tui_app import stop_everything, wait_for

from eagle3tui.config import load_config
from eagle3tui.frontends.tui.app import EagleApp

SIZES = [(80, 24), (160, 48)]
# Runs until the file named by its first argument exists, printing its name as it goes.
WORKER = textwrap.dedent("""
    import os, sys, time
    name, until = sys.argv[1], sys.argv[2]
    i = 0
    while not os.path.exists(until):
        print(f"{name} tick {i}", flush=True)
        i += 1
        time.sleep(0.05)
    print(f"{name} done", flush=True)
""")


def _pipeline(root: Path):
    root.mkdir(parents=True, exist_ok=True)
    (root / "worker.py").write_text(WORKER)
    parts = ['[pipeline]\nname = "follow"\n']
    prev = None
    for name in ("prepare", "train", "export"):
        dep = f'depends_on = ["{prev}"]\n' if prev else ""
        parts.append(f'[[stage]]\nname = "{name}"\ncommand = ["{sys.executable}", "worker.py", "{name}", '
                     f'"{name}.go"]\n{dep}')
        prev = name
    (root / "pipeline.toml").write_text("\n".join(parts))
    return load_config(root / "pipeline.toml")


def _shown(app: EagleApp) -> str:
    return "\n".join(ln.text for ln in app.logview.model.lines)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_log_pane_follows_the_running_stage(tmp_path: Path, size: tuple[int, int]) -> None:
    cfg = _pipeline(tmp_path / "p")
    root = cfg.path.parent
    app = EagleApp(cfg, poll_s=0.1, log_poll_s=0.05)
    try:
        async with app.run_test(size=size) as pilot:
            await wait_for(pilot, lambda: app.statuses, "the first state poll")
            assert app.selected == "prepare"
            await pilot.press("a")
            await wait_for(pilot, lambda: "prepare tick" in _shown(app), "prepare's log")
            (root / "prepare.go").touch()
            # train starts: the pane moves to it, without a key.
            await wait_for(pilot, lambda: app.log_target is not None and app.log_target.stage == "train"
                           and "train tick" in _shown(app), "the pane following train")
            assert app.table.selected_stage == "train" and app.selected == "train"
            # The user picks prepare: the pane stays there while export starts.
            await pilot.press("up")
            await wait_for(pilot, lambda: app.log_target is not None and app.log_target.stage == "prepare",
                           "the user's choice")
            (root / "train.go").touch()
            await wait_for(pilot, lambda: any(s.name == "export" and s.state.active for s in app.statuses),
                           "export running")
            await pilot.pause(0.5)
            assert app.selected == "prepare" and app.log_target.stage == "prepare"

        # Reopened while export runs: the pane opens on export, not on the first stage.
        again = EagleApp(cfg, poll_s=0.1, log_poll_s=0.05)
        async with again.run_test(size=size) as pilot:
            await wait_for(pilot, lambda: again.log_target is not None and again.log_target.stage == "export"
                           and "export tick" in _shown(again), "the reopened pane on export")
    finally:
        for name in ("prepare", "train", "export"):
            (root / f"{name}.go").touch()
        stop_everything(cfg)
