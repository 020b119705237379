"""Pilot tests of the TUI against real stage processes, a real driver and real files.

Each test writes a small pipeline into a temp dir; the stages are short
Python scripts. Conditions are polled with a deadline (never fixed sleeps),
and every test stops whatever it started.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from eagle3tui.config import PipelineConfig, load_config
from eagle3tui.supervisor.protocol import send_command
from eagle3tui.supervisor.lock import lock_held
from eagle3tui.supervisor.records import RunStore
from eagle3tui.supervisor.state import Intent, StageState
from eagle3tui.view import load_view
from eagle3tui.frontends.tui.app import EagleApp
from eagle3tui.frontends.tui.screens import ConfirmScreen

DEADLINE_S = 30.0

# A stage that fails unless it is resumed: the resume test's crash.
FLAKY = """
import sys, time
print("argv", sys.argv[1:], flush=True)
for i in range(5):
    print(f"step {i}", flush=True)
if "--resume" not in sys.argv:
    print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", flush=True)
    sys.exit(3)
print("resumed and finished", flush=True)
"""

# A stage that runs until stopped, printing a tick every 50 ms.
TICKER = """
import sys, time
i = 0
while True:
    print(f"tick {i}", flush=True)
    i += 1
    time.sleep(0.05)
"""

# TICKER that, on SIGTERM, prints torchrun's teardown and failure box (lines from
# public threads, see tests/fixtures/logs/issues/torchrun_sigterm_teardown.log.source)
# and exits 1, as torchrun does when its process group is stopped.
TORCHRUN_LIKE_TICKER = TICKER.replace("import sys, time", f"""import signal, sys, time
def on_term(signum, frame):
    sys.stdout.write(open({str(Path(__file__).parent / "fixtures/logs/issues/torchrun_sigterm_teardown.log")!r}).read())
    sys.stdout.flush()
    sys.exit(1)
signal.signal(signal.SIGTERM, on_term)""")


def write_pipeline(root: Path, stages: dict[str, str], extra: str = "") -> Path:
    """Write ``pipeline.toml`` with one python stage per script."""
    root.mkdir(parents=True, exist_ok=True)
    parts = ['[pipeline]\nname = "tuitest"\n']
    for name, script in stages.items():
        (root / f"{name}.py").write_text(textwrap.dedent(script))
        parts.append(textwrap.dedent(f"""
            [[stage]]
            name = "{name}"
            command = ["{sys.executable}", "{name}.py"]
            resume = ["--resume"]
            stop_grace = "5s"
            """))
    path = root / "pipeline.toml"
    path.write_text("".join(parts) + extra)
    return path


def stop_everything(config: PipelineConfig) -> None:
    """Stop every active stage and wait for them and the driver to go away."""
    def active() -> list[str]:
        return [s.name for s in load_view(config).active()]

    names = active()
    if names:
        send_command(config, "stop", names, timeout=10)
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline and (active() or lock_held(config.state_dir)):
        time.sleep(0.1)


@pytest.fixture
def pipeline(tmp_path: Path) -> Iterator[Callable[..., PipelineConfig]]:
    made: list[PipelineConfig] = []

    def make(stages: dict[str, str], extra: str = "") -> PipelineConfig:
        cfg = load_config(write_pipeline(tmp_path / "p", stages, extra))
        made.append(cfg)
        return cfg

    yield make
    for cfg in made:
        stop_everything(cfg)


async def wait_for(pilot, cond: Callable[[], object], what: str,
                   timeout: float = DEADLINE_S) -> None:
    """Let the app run until ``cond()`` is true; fail with ``what`` at the deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def state_of(app: EagleApp, name: str) -> StageState | None:
    for s in app.statuses:
        if s.name == name:
            return s.state
    return None


def shown_texts(app: EagleApp) -> list[str]:
    return [ln.text for ln in app.logview.model.lines]


def make_app(cfg: PipelineConfig, **kw) -> EagleApp:
    kw.setdefault("poll_s", 0.1)
    kw.setdefault("log_poll_s", 0.05)
    return EagleApp(cfg, **kw)


async def test_resume_of_failed_stage_from_the_ui_creates_attempt_2(pipeline) -> None:
    cfg = pipeline({"train": FLAKY})
    app = make_app(cfg)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.statuses, "the first state poll")
        await pilot.press("a")  # run all
        await wait_for(pilot, lambda: state_of(app, "train") == StageState.FAILED,
                       "train to fail on its first attempt")
        # The failure is in the alerts panel, and j shows the fatal line in the log.
        await wait_for(pilot, lambda: any(a.get("kind") == "stage-failed"
                                          for a in app.alerts_panel.alerts), "the failure alert")
        await wait_for(pilot, lambda: any("OutOfMemoryError" in t for t in shown_texts(app)),
                       "attempt 1's log in the pane")
        await pilot.press("r")  # resume
        store = RunStore(cfg.state_dir)
        await wait_for(pilot, lambda: (r := store.latest("train")) is not None and r.attempt == 2,
                       "attempt 2's run record")
        rec = store.latest("train")
        assert rec is not None
        assert rec.argv[-1] == "--resume"
        assert rec.argv[:-1] == store.records("train")[0].argv
        assert rec.resume and rec.resumed_from == 1
        # The log pane switches to the new attempt by itself.
        await wait_for(pilot, lambda: app.log_target is not None and app.log_target.attempt == 2,
                       "the log pane to follow attempt 2")
        await wait_for(pilot, lambda: "resumed and finished" in shown_texts(app),
                       "attempt 2's output")
        assert not any("OutOfMemoryError" in t for t in shown_texts(app))
        assert shown_texts(app)[0] == "argv ['--resume']"
        await wait_for(pilot, lambda: state_of(app, "train") == StageState.SUCCEEDED,
                       "attempt 2 to succeed")
        # An alert of attempt 1 still jumps to attempt 1's line, and only its lines show.
        old = next(a for a in app.alerts_panel.alerts
                   if a.get("attempt") == 1 and (a.get("details") or {}).get("line"))
        app.jump_to_alert(old)
        await wait_for(pilot, lambda: app.log_target is not None and app.log_target.attempt == 1
                       and app.logview.marked is not None, "the jump to attempt 1")
        marked = app.logview.model.view_line(app.logview.marked)
        assert marked is not None and marked.no == old["details"]["line"]
        assert "resumed and finished" not in shown_texts(app)
        assert shown_texts(app)[0] == "argv []"
        # Attempt 1 ends with its own last line, not with attempt 2's header line.
        assert "OutOfMemoryError" in shown_texts(app)[-1], shown_texts(app)[-3:]


async def test_jump_from_alert_and_filters(pipeline) -> None:
    cfg = pipeline({"train": FLAKY})
    send_command(cfg, "start", all=True)
    app = make_app(cfg)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: state_of(app, "train") == StageState.FAILED, "the failure")
        await wait_for(pilot, lambda: any((a.get("details") or {}).get("line")
                                          for a in app.alerts_panel.alerts),
                       "an alert that points at a line")
        await wait_for(pilot, lambda: len(app.logview.model.lines) >= 7, "the whole log")
        target = next(a for a in app.alerts_panel.alerts if (a.get("details") or {}).get("line"))
        line = target["details"]["line"]
        # Enter on that alert in the alerts list jumps to its line.
        app.alerts_panel.focus()
        app.alerts_panel.highlighted = app.alerts_panel.alerts.index(target)
        await pilot.press("enter")
        view = app.logview
        await wait_for(pilot, lambda: view.marked is not None, "the jump")
        marked = view.model.view_line(view.marked)
        assert marked is not None and marked.no == line
        # Filters: events only keeps the classified lines, fatal only the OOM line.
        await pilot.press("f")
        assert view.model.filter == "events"
        assert [ln.text for ln in view.model.view] == [
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"]
        await pilot.press("f")
        assert view.model.filter == "fatal"
        assert view.model.view_len() == 1
        await pilot.press("f")
        assert view.model.filter == "all" and view.model.view_len() >= 7
        # Search: / step 3 enter highlights that line; n wraps to the same one.
        await pilot.press("slash")
        for ch in "STEP 3":
            await pilot.press("space" if ch == " " else ch)
        await pilot.press("enter")
        assert view.marked is not None
        ln = view.model.view_line(view.marked)
        assert ln is not None and ln.text == "step 3"
        await pilot.press("n")
        ln = view.model.view_line(view.marked)
        assert ln is not None and ln.text == "step 3"


async def test_stop_asks_for_confirmation(pipeline) -> None:
    cfg = pipeline({"serve": TORCHRUN_LIKE_TICKER})
    app = make_app(cfg)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.statuses, "the first state poll")
        await pilot.press("s")
        await wait_for(pilot, lambda: state_of(app, "serve") == StageState.RUNNING, "serve to run")
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.press("n")
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen), "the dialog to close")
        rec = RunStore(cfg.state_dir).latest("serve")
        assert rec is not None and rec.stop_requested_at is None
        # Ticks keep arriving: the stage was not touched.
        seen = len(app.logview.model.lines)
        await wait_for(pilot, lambda: len(app.logview.model.lines) > seen + 3, "more ticks")
        assert state_of(app, "serve") == StageState.RUNNING
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.press("y")
        await wait_for(pilot, lambda: state_of(app, "serve") == StageState.STOPPED, "serve to stop")
        rec = RunStore(cfg.state_dir).latest("serve")
        assert rec is not None and rec.stop_requested_at is not None
        # A stop asked for from the TUI is not an alarm: the stage printed a launcher's
        # failure box and exited 1 seconds after starting (early-exit territory), and
        # no warning or critical follows.
        await wait_for(pilot, lambda: "stage-stopped" in _alert_kinds(cfg), "the stage-stopped alert")
        rec = RunStore(cfg.state_dir).latest("serve")
        assert rec is not None and rec.exit_code == 1, rec
        loud = [a for a in _alerts(cfg) if a["level"] in ("warning", "critical")]
        assert not loud, loud


def _alerts(cfg: PipelineConfig) -> list[dict]:
    path = cfg.state_dir / "alerts.jsonl"
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()] if path.exists() else []


def _alert_kinds(cfg: PipelineConfig) -> list[str]:
    return [a["kind"] for a in _alerts(cfg)]


async def test_reattach_shows_a_stage_started_by_the_cli(pipeline) -> None:
    cfg = pipeline({"serve": TICKER})
    cli = subprocess.run([sys.executable, "-m", "eagle3tui", "--config", str(cfg.path),
                          "start", "--all"], capture_output=True, text=True, timeout=60)
    assert cli.returncode == 0, cli.stderr
    app = make_app(cfg)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: state_of(app, "serve") == StageState.RUNNING,
                       "the CLI's stage to show as running")
        # History included: the log pane starts at the attempt's first line.
        await wait_for(pilot, lambda: "tick 0" in shown_texts(app) and len(shown_texts(app)) > 5,
                       "the stage's output from its first line")
        assert app.logview.model.lines[0].no == 2  # line 1 of the file is the attempt's header
        # The start is an info alert: received, hidden by the default level
        # filter, and shown in the stage list instead.
        assert any(a.get("kind") == "stage-started" for a in app.alerts_panel.received)
        assert not any(a.get("kind") == "stage-started" for a in app.alerts_panel.alerts)
        assert "started " in app.table.rows["serve"]["note"].plain
        assert app.table.rows["serve"]["state"].plain == "running"
        await pilot.press("q")
    assert "keep running" in app.goodbye()
    assert "eagle3tui --config" in app.goodbye()


async def test_scrolling_back_is_not_yanked_by_new_output(pipeline) -> None:
    cfg = pipeline({"serve": TICKER})
    send_command(cfg, "start", ["serve"])
    app = make_app(cfg, max_log_lines=60)
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.logview
        await wait_for(pilot, lambda: len(view.model.lines) >= 60 and view.model.dropped > 0,
                       "the bounded buffer to fill and drop lines")
        view.focus()
        await pilot.press("pageup")
        await wait_for(pilot, lambda: not view.follow, "following to stop")
        top = view.model.view_line(view.top_index)
        assert top is not None
        dropped = view.model.dropped
        await wait_for(pilot, lambda: view.model.dropped > dropped + 10, "more output")
        # The same line is still at the top although lines fell off the front.
        now_top = view.model.view_line(view.top_index)
        assert now_top is not None and now_top.no == top.no
        assert len(view.model.lines) == 60
        await pilot.press("G")
        assert view.follow


async def test_tui_shows_the_drivers_verdicts_and_classifies_nothing_itself(
        pipeline, monkeypatch) -> None:
    """One verdict per line: the fatal mark in the log pane comes from the driver.

    The driver runs in its own process; in this (the TUI's) process every entry
    point of the rule engine and of the GPU sampler is made to fail loudly, so
    the TUI showing the OOM line as fatal proves it read the driver's verdict.
    """
    from eagle3tui.logs.monitor import StageLogMonitor
    from eagle3tui.logs.rules import RuleSet
    from eagle3tui.telemetry.sampler import GpuSampler

    cfg = pipeline({"train": FLAKY})
    calls: list[str] = []

    def forbidden(name: str) -> Callable[..., None]:
        def fail(*_a: object, **_k: object) -> None:
            calls.append(name)
            raise AssertionError(f"the TUI called {name}")
        return fail

    monkeypatch.setattr(RuleSet, "scan", forbidden("RuleSet.scan"))
    monkeypatch.setattr(RuleSet, "classify", forbidden("RuleSet.classify"))
    monkeypatch.setattr(StageLogMonitor, "__init__", forbidden("StageLogMonitor"))
    monkeypatch.setattr(GpuSampler, "__init__", forbidden("GpuSampler"))
    app = make_app(cfg)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.statuses, "the first state poll")
        await pilot.press("a")
        await wait_for(pilot, lambda: any(ln.kind == "fatal" and "OutOfMemoryError" in ln.text
                                          for ln in app.logview.model.lines),
                       "the OOM line marked fatal by the driver's verdict")
        plain = [ln for ln in app.logview.model.lines if ln.text.startswith("step ")]
        assert plain and all(ln.kind == "" for ln in plain)
    assert calls == []


# The real line of vLLM's tool-call parser failing one request
# (https://github.com/vllm-project/vllm/issues/13473), printed every 0.3 s.
PARSER_ERRORS = """
import time
while True:
    print("ERROR 04-05 11:55:07 [hermes_tool_parser.py:110] Error in extracting tool call "
          "from response.", flush=True)
    time.sleep(0.3)
"""


async def test_teach_a_rule_from_the_log_pane(pipeline) -> None:
    """/ finds the line, m marks it benign: the rule is written and applies to the running stage."""
    cfg = pipeline({"serve": PARSER_ERRORS})
    app = make_app(cfg)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.statuses, "the first state poll")
        await pilot.press("s")
        view = app.logview
        await wait_for(pilot, lambda: any(ln.kind and ln.kind != "benign" for ln in view.model.lines),
                       "the driver's verdict on the parser error (not benign yet)")
        await pilot.press("slash")
        for ch in "tool call":
            await pilot.press("space" if ch == " " else ch)
        await pilot.press("enter")
        await wait_for(pilot, lambda: view.marked is not None, "the search to mark a line")
        await pilot.press("m")
        # In the state directory, not beside pipeline.toml in the user's repository.
        rules_file = cfg.state_dir / "learned-rules.toml"
        await wait_for(pilot, lambda: rules_file.exists(), "the learned-rules file")
        assert not (cfg.path.parent / "eagle3tui-rules.toml").exists()
        text = rules_file.read_text()
        assert 'id = "learned-benign-1"' in text and "Error in extracting tool call from response" in text
        assert 'stages = ["serve"]' in text
        # The driver reloads and judges the lines printed from now on with the rule.
        marked_at = max(ln.no for ln in view.model.lines)
        await wait_for(pilot, lambda: any(ln.no > marked_at + 3 and ln.kind == "benign"
                                          for ln in view.model.lines),
                       "later parser errors marked benign by the driver")


async def test_a_hung_collective_shows_as_failing_with_a_stale_eta(pipeline) -> None:
    """Issue 17 in the stage list: a fatal NCCL line (copied from a public thread,
    see tests/fixtures/logs/issues/nccl_hang_alive.log.source), then the process
    stays alive and silent. The row says ``failing``, its ETA and drift are
    ``stale`` (never a live countdown), and the note names the fatal line."""
    hang_log = Path(__file__).parent / "fixtures" / "logs" / "issues" / "nccl_hang_alive.log"
    hung = f"""
import sys, time
for i in range(4):
    print(f"Training:  {{i * 10:2d}}%|####      | {{i}}/10 [00:0{{i}}<00:0{{9 - i}},  1.00it/s]", flush=True)
    time.sleep(0.2)
sys.stdout.write(open({str(hang_log)!r}).read())
sys.stdout.flush()
while True:
    time.sleep(1)
"""
    cfg = pipeline({"train": hung}, extra='estimate = "5s"\non_fatal = { action = "wait" }\n')
    cli = subprocess.run([sys.executable, "-m", "eagle3tui", "--config", str(cfg.path), "start", "train"],
                         capture_output=True, text=True, timeout=60)
    assert cli.returncode == 0, cli.stderr
    app = make_app(cfg)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: state_of(app, "train") == StageState.FAILING, "train failing")
        await wait_for(pilot, lambda: app.table.rows.get("train", {}).get("state") is not None
                       and app.table.rows["train"]["state"].plain == "failing", "the failing row")
        row = {k: v.plain for k, v in app.table.rows["train"].items()}
        assert row["eta"] == "stale" and row["drift"] == "stale", row
        assert "fatal error at line 7 (nccl)" in row["note"], row
        await pilot.press("q")
