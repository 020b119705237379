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


def _three_stage_chain(tmp_path: Path) -> PipelineConfig:
    """prepare -> train -> export, each a quick script that appends to a file."""
    root = tmp_path / "p"
    root.mkdir(parents=True, exist_ok=True)
    (root / "step.py").write_text("import sys\nopen(sys.argv[1], 'a').write('x')\nprint('done', sys.argv[1])\n")
    parts = []
    prev = None
    for name in ("prepare", "train", "export"):
        dep = f'depends_on = ["{prev}"]\n' if prev else ""
        parts.append(f'[[stage]]\nname = "{name}"\ncommand = ["{sys.executable}", "step.py", '
                     f'"{name}.out"]\nresume = ["--resume"]\n{dep}')
        prev = name
    return write_toml(root, "\n".join(parts))


def _row_text(app: EagleApp, name: str) -> str:
    return " ".join(c.plain for c in app.table.rows.get(name, {}).values())


async def test_rerun_marks_dependents_stale_and_run_all_updates_them(tmp_path: Path) -> None:
    import subprocess

    cfg = _three_stage_chain(tmp_path)
    app = RecordingApp(cfg)
    store = RunStore(cfg.state_dir)

    def state(name: str) -> str:
        return next((s.state.value + ("/stale" if s.stale else "") for s in app.statuses
                     if s.name == name), "")

    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: app.statuses, "the first state poll")
            await pilot.press("a")
            await wait_for(pilot, lambda: all(state(n) == "succeeded"
                                              for n in ("prepare", "train", "export")),
                           "the first run to finish")
            # Resume on a succeeded stage is refused by the driver, with a message.
            cli = subprocess.run([sys.executable, "-m", "eagle3tui", "--config", str(cfg.path),
                                  "resume", "train"], capture_output=True, text=True, timeout=60)
            assert cli.returncode == 1 and "nothing to resume" in cli.stderr, cli
            assert [r.attempt for r in store.records("train")] == [1]
            # The TUI refuses too, without asking the driver.
            app.table.select_stage("train")
            await pilot.pause(0.2)
            await pilot.press("r")
            await wait_for(pilot, lambda: any("resume is for a failed" in m for m, _ in app.notes),
                           "the TUI's refusal")
            # Rerun prepare: train and export become stale, and the list says so.
            app.table.select_stage("prepare")
            await pilot.pause(0.2)
            await pilot.press("R")
            await pilot.press("y")
            await wait_for(pilot, lambda: len(store.records("prepare")) == 2
                           and state("prepare") == "succeeded", "prepare's second attempt")
            await wait_for(pilot, lambda: state("train") == "succeeded/stale"
                           and state("export") == "succeeded/stale", "train and export stale")
            await wait_for(pilot, lambda: "stale" in _row_text(app, "train")
                           and "prepare was rerun" in _row_text(app, "train"),
                           "the stage list showing train stale")
            assert "train is stale" in _row_text(app, "export")
            assert [r.attempt for r in store.records("export")] == [1]  # nothing reran by itself
            # Run all brings them up to date, in dependency order.
            await pilot.press("a")
            await wait_for(pilot, lambda: len(store.records("export")) == 2
                           and state("export") == "succeeded" and state("train") == "succeeded",
                           "train and export rerun")
            train2, export2 = store.latest("train"), store.latest("export")
            assert train2 is not None and export2 is not None and train2.attempt == 2
            assert export2.started_at >= train2.ended_at  # export waited for the new train
            assert (cfg.path.parent / "export.out").read_text() == "xx"
    finally:
        stop_everything(cfg)


def _footer_text(app: EagleApp) -> str:
    """What the footer's keys show, left to right, with the right-pinned group last."""
    keys = list(app.screen.query("FooterKey"))
    visible = [k for k in keys if k.region.width > 0 and k.region.right <= app.size.width]
    return " ".join(f"{k.key_display} {k.description}" for k in visible)


async def test_80x24_keeps_running_and_failed_stages_and_help_quit_in_view(tmp_path: Path) -> None:
    # Fourteen stages, more than 80x24 has rows for (ten fit: test_tui_layout.py);
    # the one that fails is the 13th and the one that runs the 14th.
    names = [f"s{i}" for i in range(1, 15)]
    parts = []
    for n in names:
        code = {"s13": "raise SystemExit(4)", "s14": "import time; time.sleep(60)"}.get(n, "pass")
        parts.append(f'[[stage]]\nname = "{n}"\ncommand = ["{sys.executable}", "-c", "{code}"]\n'
                     'stop_grace = "2s"\n')
    cfg = write_toml(tmp_path / "p", "\n".join(parts))
    app = RecordingApp(cfg)

    def state(n: str) -> str:
        return next((s.state.value for s in app.statuses if s.name == n), "")

    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: app.statuses, "the first state poll")
            await pilot.press("a")
            await wait_for(pilot, lambda: state("s13") == "failed" and state("s14") == "running"
                           and state("s12") == "succeeded", "s13 failed and s14 running")
            await pilot.pause(0.3)
            assert app.table.size.height < 15  # not every stage fits
            shown = [app.table.names[i] for i in app.table.shown()]
            # The cursor follows the running stage (s14) until a key moves it.
            assert app.table.selected_stage == "s14"
            assert "s13" in shown and "s14" in shown, shown
            # Walking the cursor to the top and back keeps them in view.
            for key in ("home", "down", "down", "down"):
                await pilot.press(key)
                shown = [app.table.names[i] for i in app.table.shown()]
                assert {"s13", "s14", app.table.selected_stage} <= set(shown), shown
            # Whole columns, never a cut header word; the note fills the rest.
            header = app.table.render_line(0).text
            assert "Stage" in header and "State" in header and "Note" in header
            assert "Try" not in header and "GPUs" not in header  # dropped, not cut to "Tr"
            # The footer always shows help and quit.
            footer = _footer_text(app)
            assert "? Help" in footer and "q Quit" in footer, footer
            # And they work from there.
            await pilot.press("question_mark")
            await wait_for(pilot, lambda: type(app.screen).__name__ == "HelpScreen", "help")
    finally:
        stop_everything(cfg)


async def test_focus_is_visible_and_help_lists_tab_and_arrows(tmp_path: Path) -> None:
    from test_tui_snapshots import build_state

    app = build_state(tmp_path / "p")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.polls >= 1 and app.log_target is not None
                       and app.table.shown(), "state")
        log_bg0 = app.log_title.styles.background
        alerts_bg0 = app.alerts_title.styles.background
        assert app.table.has_focus
        # The focused table draws its cursor reversed; the header is underlined.
        assert "reverse" in str(list(app.table.render_line(1))[0].style)
        await pilot.press("tab")
        await wait_for(pilot, lambda: app.logview.has_focus, "focus on the log")
        await pilot.pause(0.1)
        assert app.log_title.styles.background != log_bg0  # its title is lit
        assert "reverse" not in str(list(app.table.render_line(1))[0].style)
        await pilot.press("tab")
        await wait_for(pilot, lambda: app.alerts_panel.has_focus, "focus on the alerts")
        await pilot.pause(0.1)
        assert app.alerts_title.styles.background != alerts_bg0
        assert app.log_title.styles.background == log_bg0
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "HelpScreen", "help")
        text = app.screen.plain
        for words in ("tab", "shift+tab", "up/down", "home/end", "l ", "warnings"):
            assert words in text, words
        assert "-m eagle3tui --config" in text  # how to come back, runnable as printed


async def test_alerts_default_to_warnings_and_one_key_shows_all(tmp_path: Path) -> None:
    from test_tui_snapshots import build_state

    app = build_state(tmp_path / "p")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: len(app.alerts_panel.received) == 4, "the four alerts")
        panel = app.alerts_panel
        assert [a["kind"] for a in panel.alerts] == ["stage-failed", "fatal-log-event"]
        assert "2 info hidden" in str(app.alerts_title.render())
        await pilot.press("l")
        assert [a["kind"] for a in panel.alerts] == ["stage-failed", "fatal-log-event",
                                                     "benign-error", "stage-succeeded"]
        assert "all levels" in str(app.alerts_title.render())
        await pilot.press("l")
        assert len(panel.alerts) == 2
        # The lifecycle the panel no longer lists is in the stage list.
        assert app.table.rows["regenerate"]["note"].plain.startswith("succeeded ")
        # A new info alert arriving is counted, not shown; a warning is shown.
        with open(app.config.state_dir / "alerts.jsonl", "a") as f:
            for level, kind in (("info", "stage-started"), ("warning", "eta-drift")):
                f.write(json.dumps({"level": level, "kind": kind, "message": "m", "stage": "train",
                                    "attempt": 2, "details": {}, "time": time.time(),
                                    "count": 1}) + "\n")
        app.poke()
        await wait_for(pilot, lambda: len(panel.received) == 6, "the new alerts")
        assert [a["kind"] for a in panel.alerts][0] == "eta-drift"
        assert "3 info hidden" in str(app.alerts_title.render())


# -- the Done column counts in the bar's own unit (issue 16, finding 12) -------------

# Real tqdm frames (its own format_meter) of a slow step counter, whose rate reads
# "2.33s/step", and of a wait counted in seconds; then each stage keeps running.
STEPS = """
import sys, time
from tqdm import tqdm
for n in (100, 430):
    sys.stderr.write("\\r" + tqdm.format_meter(n, 2500, n * 2.33, unit="step", prefix="train"))
sys.stderr.write("\\n")
sys.stderr.flush()
time.sleep(120)
"""
SECONDS = """
import sys, time
from tqdm import tqdm
sys.stderr.write(tqdm.format_meter(120, 600, 120, unit="s", prefix="waiting for the server") + "\\n")
sys.stderr.flush()
time.sleep(120)
"""


async def test_done_column_counts_steps_in_steps_and_seconds_in_seconds(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir(parents=True)
    (root / "steps.py").write_text(STEPS)
    (root / "wait.py").write_text(SECONDS)
    cfg = write_toml(root, f"""
        [[stage]]
        name = "train"
        command = ["{sys.executable}", "steps.py"]
        stop_grace = "2s"
        [[stage]]
        name = "serve"
        command = ["{sys.executable}", "wait.py"]
        stop_grace = "2s"
        """)
    app = RecordingApp(cfg)
    try:
        async with app.run_test(size=(160, 30)) as pilot:
            await wait_for(pilot, lambda: app.statuses, "the first state poll")
            await pilot.press("a")
            await wait_for(pilot, lambda: "430/2500" in _row_text(app, "train")
                           and "/600" in _row_text(app, "serve"), "both counters in the list")
            train, serve = _row_text(app, "train"), _row_text(app, "serve")
            assert "430/2500 step" in train and "2500 s " not in train + " ", train
            assert "120/600 s" in serve, serve
            assert "2.33s/step" in (cfg.state_dir / "logs" / "train.log").read_text()
    finally:
        stop_everything(cfg)


async def test_help_fits_80x24_wraps_in_its_column_and_scrolls_to_the_way_back(
        tmp_path: Path) -> None:
    from test_tui_snapshots import build_state, screen_rows

    app = build_state(tmp_path / "p")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.polls >= 1, "state")
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "HelpScreen", "help")
        await pilot.pause(0.2)
        rows = screen_rows(app)
        # A wrapped description continues in its own column, not under the keys.
        i = next(i for i, r in enumerate(rows) if "up/down  select a stage" in r)
        assert rows[i + 1].find("alert") == rows[i].index("select a stage"), rows[i:i + 2]
        # The list is longer than 24 rows: it scrolls, down to the quit key and the
        # command that comes back.
        assert not any("come back with" in r for r in rows)
        await pilot.press("end")
        await pilot.pause(0.2)
        rows = screen_rows(app)
        assert any("quit (stages keep running)" in r for r in rows), rows
        assert any("come back with" in r for r in rows), rows
