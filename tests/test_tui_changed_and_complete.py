"""Pilot tests at 80x24 and 160x48 against a real finished pipeline: the stage list
marks a stage whose ``--set`` changed (and its dependents) ``changed`` with what
changed, and the banner says the pipeline finished, with its result line.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_tui_app import stop_everything, wait_for

from eagle3tui.config import load_config
from eagle3tui.frontends.tui.app import EagleApp

SIZES = [(80, 24), (160, 48)]


def _finished_pipeline(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "step.py").write_text("import sys\nprint('score: acceptance length', sys.argv[1])\n")
    cfg = root / "pipeline.toml"
    cfg.write_text(textwrap.dedent(f"""
        [pipeline]
        name = "tuichg"
        [vars]
        n = "1"
        [[stage]]
        name = "a"
        command = ["{sys.executable}", "step.py", "{{n}}"]
        [[stage]]
        name = "b"
        depends_on = ["a"]
        command = ["{sys.executable}", "step.py", "b"]
        result = "acceptance length"
        [[stage]]
        name = "c"
        command = ["{sys.executable}", "step.py", "c"]
    """))
    proc = subprocess.run([sys.executable, "-m", "eagle3tui", "--config", str(cfg), "--watch", "--run-all"],
                          capture_output=True, text=True, timeout=120, cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return cfg


def _row(app: EagleApp, name: str) -> dict[str, str]:
    return {k: c.plain for k, c in app.table.rows.get(name, {}).items()}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_changed_setting_marks_stage_and_dependents(tmp_path: Path, size: tuple[int, int]) -> None:
    cfg = load_config(_finished_pipeline(tmp_path / "p"), {"n": "2"})
    app = EagleApp(cfg, poll_s=0.1, start_driver=False)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: _row(app, "c"), "the stage list")
        a, b, c = _row(app, "a"), _row(app, "b"), _row(app, "c")
        assert a["state"] == "changed" and "n 1 → 2" in a["note"], a
        assert b["state"] == "changed" and "a changed: n 1 → 2" in b["note"], b
        assert c["state"] == "succeeded", c
        # Out of date with the settings shown: no "complete" banner.
        assert not app.banner_text and not app.banner.has_class("visible")


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_banner_says_the_pipeline_finished(tmp_path: Path, size: tuple[int, int]) -> None:
    cfg = load_config(_finished_pipeline(tmp_path / "p"))
    app = EagleApp(cfg, poll_s=0.1, start_driver=False)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.banner_text and app.banner.region.height >= 1,
                       "the completion banner on screen")
        assert app.banner.has_class("visible")
        # Above the stage list, which still shows every stage.
        assert app.banner.region.y < app.table.region.y
        assert app.banner_text.startswith("pipeline complete: 3 stage(s) succeeded")
        assert "b: score: acceptance length b" in app.banner_text
        assert all(_row(app, n)["state"] == "succeeded" for n in "abc")
        if size == SIZES[0]:
            # Run all with nothing to do says so, and how to rerun a stage anyway.
            await pilot.press("a")
            await wait_for(pilot, lambda: app.last_reply is not None, "the run-all reply")
            msg = str(app.last_reply.get("message"))
            assert "nothing to do" in msg and "restart NAME" in msg, app.last_reply
    stop_everything(cfg)
