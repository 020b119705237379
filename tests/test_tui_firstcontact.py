"""Pilot tests for "first contact, round two" (issue 16) against real files, a real
driver and real stage processes: run-all pre-validation, the 80x24 layout,
visible focus, help, resume refusal and stale dependents, the alerts level filter.
"""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from test_tui_app import DEADLINE_S, pipeline, stop_everything, wait_for  # noqa: F401 (fixture)

from eagle3tui.config import PipelineConfig, load_config
from eagle3tui.frontends.tui.app import EagleApp
from eagle3tui.supervisor.lock import lock_held
from eagle3tui.supervisor.records import RunStore


class RecordingApp(EagleApp):
    """The real app, remembering every notification it shows."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        kw.setdefault("poll_s", 0.1)
        kw.setdefault("log_poll_s", 0.05)
        super().__init__(*a, **kw)
        self.notes: list[tuple[str, str]] = []

    def notify(self, message: str, *a: Any, **kw: Any) -> None:  # type: ignore[override]
        self.notes.append((str(message), str(kw.get("severity", "information"))))
        super().notify(message, *a, **kw)


def write_toml(root: Path, body: str) -> PipelineConfig:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pipeline.toml").write_text('[pipeline]\nname = "fc"\n' + textwrap.dedent(body))
    return load_config(root / "pipeline.toml")


async def test_run_all_with_a_missing_executable_is_one_clear_message(tmp_path: Path) -> None:
    cfg = write_toml(tmp_path / "p", f"""
        [[stage]]
        name = "a"
        command = ["{sys.executable}", "-c", "pass"]
        [[stage]]
        name = "b"
        command = ["no-such-program-e3", "--x"]
        depends_on = ["a"]
    """)
    app = RecordingApp(cfg)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.statuses, "the first state poll")
        await pilot.press("a")
        await wait_for(pilot, lambda: app.last_reply is not None, "the run-all reply")
        await pilot.pause(0.5)
    errors = [m for m, sev in app.notes if sev == "error"]
    assert len(errors) == 1, app.notes
    assert "nothing started" in errors[0] and "'no-such-program-e3' not found" in errors[0]
    assert "pipeline.toml:" in errors[0] and "fix:" in errors[0]
    assert not any("queued" in m for m, _ in app.notes), app.notes
    # Nothing was launched, no driver asked, no alert written.
    assert RunStore(cfg.state_dir).latest("a") is None
    assert not (cfg.state_dir / "alerts.jsonl").exists() or \
        not (cfg.state_dir / "alerts.jsonl").read_text().strip()
    assert not lock_held(cfg.state_dir)
