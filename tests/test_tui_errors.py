"""Pilot tests: errors stay on screen until put right (issue 30, finding 12).

A refused command and a configuration that ``check`` rejects were toasts that
vanished after a few seconds, and the TUI opened on such a configuration with
no sign until a key was pressed. Real files, a real program appearing on disk,
a real driver run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_tui_app import stop_everything, wait_for
from test_tui_firstcontact import RecordingApp, write_toml

from eagle3tui.supervisor.records import RunStore

TOOL = "#!/bin/sh\necho tool ran\n"


def _config(tmp_path: Path):
    return write_toml(tmp_path / "p", f"""
        [[stage]]
        name = "a"
        command = ["{sys.executable}", "-c", "pass"]
        [[stage]]
        name = "b"
        command = ["./tool.sh", "--x"]
        depends_on = ["a"]
    """)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_a_config_check_rejects_is_shown_at_open_and_stays_until_fixed(
        tmp_path: Path, size: tuple[int, int]) -> None:
    cfg = _config(tmp_path)
    app = RecordingApp(cfg)
    try:
        async with app.run_test(size=size) as pilot:
            # No key pressed: the error line, the title and b's row say so.
            await wait_for(pilot, lambda: "config" in app.error_line.errors
                           and app.table.rows.get("b"), "the check at open")
            await pilot.pause(0.1)
            line = app.error_line
            assert line.display and line.region.height >= 1
            assert "'./tool.sh' not found" in line.plain and "pipeline.toml:" in line.plain
            assert "1 error" in str(app.title_bar.render())
            assert "cannot start: './tool.sh' not found" in app.table.rows["b"]["note"].plain
            assert app.table.rows["a"]["note"].plain == ""
            # Run all is refused: the refusal joins the error line, and stays there
            # after its toast has gone.
            await pilot.press("a")
            await wait_for(pilot, lambda: "command" in line.errors, "the refusal")
            app.clear_notifications()
            await pilot.pause(0.2)
            assert "nothing started" in line.errors["command"]
            assert "2 errors" in str(app.title_bar.render())
            assert line.display
            assert RunStore(cfg.state_dir).latest("a") is None
            # The program appears; the next command succeeds and both errors go.
            tool = cfg.path.parent / "tool.sh"
            tool.write_text(TOOL)
            tool.chmod(0o755)
            await pilot.press("a")
            await wait_for(pilot, lambda: not line.errors and not line.display,
                           "the errors put right")
            await wait_for(pilot, lambda: "cannot start" not in
                           app.table.rows["b"]["note"].plain, "b's note cleared")
            assert "error" not in str(app.title_bar.render())
            await wait_for(pilot, lambda: any(s.name == "b" and s.state.value == "succeeded"
                                              for s in app.statuses), "b to run")
    finally:
        stop_everything(cfg)


async def test_a_clean_config_shows_no_error_line(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    tool = cfg.path.parent / "tool.sh"
    tool.write_text(TOOL)
    tool.chmod(0o755)
    app = RecordingApp(cfg, start_driver=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.statuses and app.table.rows.get("b"), "state")
        await pilot.pause(0.3)
        assert not app.error_line.errors and not app.error_line.display
        assert app.error_line.region.height == 0
