"""The Textual TUI: stages, live log, GPU panel, alerts and controls.

The app holds no supervision logic. It shows the core's read model
(``eagle3tui.view.load_view``: stages, live figures, the driver's GPU samples)
and the driver's verdicts on log lines; it samples no GPU and classifies no
line itself. It reads in thread workers that post messages, and sends
commands through ``eagle3tui.supervisor.protocol.send_command`` in thread
workers. Widgets get data from the app ("attributes down") and post messages up.

Threads:

* the state poller (one thread worker looping with a wait, so polls never
  overlap; a command "pokes" it for an immediate refresh);
* the log follower of the *selected* stage only (exclusive worker): other
  stages' logs are not read at all, so eight busy stages cost one;
* one short thread worker per command.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult, SuspendNotSupported
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, Static
from textual.worker import get_current_worker

from eagle3tui.alerts import JsonlTail
from eagle3tui.config import PipelineConfig
from eagle3tui.logs.follower import Chunk, LogFollower
from eagle3tui.supervisor.completion import KIND as PIPELINE_COMPLETE
from eagle3tui.supervisor.records import RunStore
from eagle3tui.supervisor.state import StageState, StageStatus
from eagle3tui.textsafe import printable
from eagle3tui.view import PipelineView, load_view
from eagle3tui.frontends.invocation import invocation
from eagle3tui.frontends.redraw import TAIL_SEGMENTS, shown_rows
from eagle3tui.frontends.tui.alertspanel import AlertsPanel
from eagle3tui.frontends.tui.errorline import ErrorLine, config_problems
from eagle3tui.frontends.tui.footer import PinnedFooter
from eagle3tui.frontends.tui.format import clock_text
from eagle3tui.frontends.tui.gpupanel import GpuPanel
from eagle3tui.frontends.tui.logview import GUTTER, LogView
from eagle3tui.frontends.tui.screens import ConfirmScreen, HelpScreen
from eagle3tui.frontends.tui.stagetable import StageTable

# How much of a big log to load when a stage is selected: the rest is only
# counted (for line numbers), so selecting a stage with a 10 GB log is instant.
CATCH_UP_BYTES = 2 << 20


# -- messages (posted by workers, handled on the UI thread) -----------------------
class StatePolled(Message):
    """A fresh read of the pipeline's state (the read model) and new alerts."""

    def __init__(self, view: PipelineView, alerts: list[dict[str, Any]]) -> None:
        super().__init__()
        self.view = view
        self.alerts = alerts


class LogBatch(Message):
    """New lines of the followed log ``(line_no, text, kind)`` and the driver's
    new verdicts ``(first_line, last_line, kind)``."""

    def __init__(self, token: str, lines: list[tuple[int, str, str]], reset: bool,
                 verdicts: list[tuple[int, int, str]] | None = None) -> None:
        super().__init__()
        self.token = token
        self.lines = lines
        self.reset = reset
        self.verdicts = verdicts or []


class RuleLearned(Message):
    """A rule was written to the learned-rules file (or could not be)."""

    def __init__(self, text: str, ok: bool) -> None:
        super().__init__()
        self.text = text
        self.ok = ok


class ConfigChecked(Message):
    """What ``check`` rejects in the configuration, and per-stage notes."""

    def __init__(self, errors: list[str], stage_notes: dict[str, str]) -> None:
        super().__init__()
        self.errors = errors
        self.stage_notes = stage_notes


class CommandDone(Message):
    """The driver's reply to a command sent from the UI."""

    def __init__(self, op: str, stages: list[str], reply: dict[str, Any]) -> None:
        super().__init__()
        self.op = op
        self.stages = stages
        self.reply = reply


@dataclass(frozen=True)
class LogTarget:
    """Which attempt's log the pane follows."""

    stage: str
    attempt: int
    run_id: str
    log: str
    offset: int
    end: int | None = None  # where the next attempt's output starts (same log file)
    first_line: int = 0  # lines of the file before offset: the pane numbers lines as grep -n does

    @property
    def token(self) -> str:
        return f"{self.stage}#{self.attempt}:{self.run_id}"


def chunk_lines(chunk: Chunk, end: int | None = None) -> list[tuple[int, str, str]]:
    """``(line_no, text, "")`` for a chunk's complete lines, as the pane shows them.

    ``text`` holds a line's rows, ``\\n``-separated: a ``\\r``-redrawn line is
    its latest progress frame plus any message that shared it
    (:func:`~eagle3tui.frontends.redraw.shown_rows`). Lines at or after file
    offset ``end`` (a later attempt's) are left out. Kinds come later, from
    the driver's verdicts. The open last line is the follower's business
    (:class:`OpenLine`).
    """
    out: list[tuple[int, str, str]] = []
    no = chunk.first_no
    pos = 0
    data = chunk.data
    while pos < len(data):
        if end is not None and chunk.start_offset + pos >= end:
            return out
        nl = data.find(b"\n", pos)
        if nl < 0:
            break
        out.append((no, "\n".join(shown_rows(data[pos:nl].decode("utf-8", "replace"))), ""))
        no += 1
        pos = nl + 1
    return out


class OpenLine:
    """The log's unfinished last line, as a terminal shows it now.

    A bar that is still drawing, or a message printed after its last frame
    with no newline yet (a stage that stops at a safe point may exit without
    one), is on no complete line: this keeps the line's newest ``\\r``
    segments so the pane can show its current frame and any message on it.
    """

    def __init__(self) -> None:
        self.no = 0
        self.segments: deque[str] = deque(maxlen=TAIL_SEGMENTS)
        self.shown: tuple[int, str] | None = None

    def feed(self, chunk: Chunk) -> None:
        """Take the chunk's finished segments of the open line."""
        for upd in chunk.updates:
            if upd.no != self.no:
                self.no = upd.no
                self.segments.clear()
            self.segments.append(upd.text)

    def row(self, follower: LogFollower) -> tuple[int, str, str] | None:
        """The open line's rows when they changed since last asked, else None."""
        no = follower.line_no + 1
        if no != self.no:
            self.no = no
            self.segments.clear()
        current = follower.pending_text()
        text = "\r".join([*self.segments, current]) if self.segments else current
        if not text.strip():
            return None
        shown = (no, "\n".join(shown_rows("\r" + text)))
        if shown == self.shown:
            return None
        self.shown = shown
        return (no, shown[1], "")


def read_verdicts(tail: JsonlTail) -> list[tuple[int, int, str]]:
    """New ``(first_line, last_line, kind)`` verdicts from the driver's verdicts file."""
    out = []
    for v in tail.read():
        try:
            out.append((int(v["line"]), int(v.get("end_line") or v["line"]), str(v["kind"])))
        except (KeyError, TypeError, ValueError):
            continue
    return out


class EagleApp(App[int]):
    """The eagle3tui main screen over one pipeline's state directory."""

    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses live elsewhere
    TITLE = "eagle3tui"
    ENABLE_COMMAND_PALETTE = False
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]  # noqa: RUF012 (a Textual class setting)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "start", "Start"),
        Binding("a", "run_all", "Run all"),
        Binding("x", "stop", "Stop"),
        Binding("r", "resume", "Resume"),
        Binding("R", "restart", "Restart", key_display="R"),
        Binding("k", "skip", "Skip/unskip"),
        Binding("o", "pager", "Pager"),
        Binding("f", "filter", "Filter"),
        Binding("w", "wrap", "Wrap"),
        Binding("slash", "search", "Search", key_display="/"),
        Binding("n", "search_next", "Next", show=False),
        Binding("N", "search_prev", "Prev", show=False),
        Binding("G", "follow", "Follow", show=False),
        Binding("j", "jump_latest", "Jump to latest alert", show=False),
        Binding("l", "alert_levels", "Alerts: all/warn+", show=False),
        Binding("m", "learn('benign')", "Mark benign", show=False),
        Binding("M", "learn('fatal')", "Mark fatal", show=False),
        # Drawn by PinnedFooter at the footer's right end, so never cut off.
        Binding("question_mark", "help", "Help", key_display="?", show=False),
        Binding("q", "quit", "Quit", show=False),
    ]
    HELP_ROWS: ClassVar[list[tuple[str, str]]] = [
        ("up/down", "select a stage (stage list), scroll the log, or pick an alert"),
        ("home/end", "first / last stage"),
        ("tab", ("move focus: stages → log → alerts (the focused pane's title is highlighted; "
                 "the selected stage is a reversed bar while the list has focus)")),
        ("shift+tab", "move focus back"),
        ("s", "start the selected stage (and what it depends on)"),
        ("a", "run all stages in dependency order"),
        ("x", "stop the selected stage (asks first)"),
        ("r", "resume a failed or stopped stage with its resume arguments"),
        ("R", "restart the selected stage from scratch (asks first)"),
        ("k", "skip the selected stage, or unskip it"),
        ("o", "open the selected stage's log in $PAGER"),
        ("f", "log filter: all → events → fatal"),
        ("w", ("wrap long log lines, or cut them at the edge (…); left/right scroll "
               "sideways through cut lines")),
        ("/  n  N", "search the log; next / previous match"),
        ("G", "jump to the end of the log and follow it"),
        ("enter", "on an alert: show its line in the log"),
        ("j", "show the line of the newest alert"),
        ("l", "alerts: warnings and criticals (default) ↔ every level"),
        ("m  M", ("teach a rule: the highlighted alert's line (alerts focused) or the marked "
                  "log line is benign (m) / fatal (M) from now on")),
        ("q", "quit (stages keep running)"),
    ]

    def __init__(self, config: PipelineConfig, *,
                 clock: Callable[[], float] = time.time, poll_s: float = 1.0,
                 log_poll_s: float = 0.1, start_driver: bool = True,
                 max_log_lines: int = 10_000, config_arg: str | None = None) -> None:
        """``clock``: the wall clock used for elapsed times and the title (tests
        freeze it); ``start_driver=False`` never spawns a driver on startup
        (commands still do); ``config_arg``: ``--config`` as the user typed it, for
        the "come back with" command."""
        super().__init__()
        self.config = config
        self.config_arg = config_arg
        self.clock = clock
        self.poll_s = poll_s
        self.log_poll_s = log_poll_s
        self.start_driver = start_driver
        self.max_log_lines = max_log_lines
        self.statuses: list[StageStatus] = []
        self.view: PipelineView | None = None
        self.driver_pid: int | None = None
        self.selected: str | None = None
        self.log_target: LogTarget | None = None
        self.pinned: tuple[str, int] | None = None  # (stage, attempt) chosen by a jump
        self.search_text = ""
        self.last_reply: dict[str, Any] | None = None
        self.polls = 0
        self._poke = threading.Event()
        self._log_ack = threading.Event()
        self._log_ack.set()
        self._pending_jump: int | None = None
        self._problems_seen: set[str] = set()
        self._title_plain = ""
        self._log_title_plain = ""
        self._alerts_title_plain = ""
        self.banner_text = ""
        # Per stage, why it cannot start (the config check's missing programs).
        self.stage_notes: dict[str, str] = {}
        # The log pane follows the running stage until the user picks one (run all resumes it).
        self.follow_running = True

    # -- layout ---------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        # The widgets are kept as attributes: query_one searches the *active*
        # screen, which is a modal (confirm, help) at times while data arrives.
        self.title_bar = Static(Text(f"eagle3tui · {printable(self.config.name)}"), id="title")
        # Errors stay on screen until put right (a toast vanishes).
        self.error_line = ErrorLine(id="errors")
        # The driver's pipeline-complete alert, until a stage runs again.
        self.banner = Static(Text(""), id="banner")
        self.table = StageTable(id="stages")
        self.log_title = Static(Text("log: select a stage"), id="log-title")
        self.logview = LogView(self.max_log_lines, id="log")
        self.search_box = Input(placeholder="search the log (enter: find, escape: cancel)",
                                id="search")
        self.gpu_panel = GpuPanel(id="gpu")
        self.alerts_panel = AlertsPanel(id="alerts")
        yield self.title_bar
        yield self.error_line
        yield self.banner
        yield self.table
        with Horizontal(id="main"):
            with Vertical(id="log-box"):
                yield self.log_title
                yield self.logview
                yield self.search_box
            with Vertical(id="side"):
                yield self.gpu_panel
                self.alerts_title = Static(Text("Alerts"), id="alerts-title")
                yield self.alerts_title
                yield self.alerts_panel
        yield PinnedFooter()

    def on_mount(self) -> None:
        self.table.focus()
        self._state_loop()
        self._check_config()

    @work(thread=True, group="check", exclusive=True, exit_on_error=False)
    def _check_config(self) -> None:
        """Run ``check``'s checks (they stat files and search PATH) off the UI thread."""
        try:
            errors, notes = config_problems(self.config)
        except Exception as exc:  # noqa: BLE001 (a check that breaks is itself the error)
            errors, notes = [f"checking the configuration failed: {type(exc).__name__}: {exc}"], {}
        self.post_message(ConfigChecked(errors, notes))

    @on(ConfigChecked)
    def _on_config_checked(self, msg: ConfigChecked) -> None:
        if msg.errors:
            self.error_line.put("config", f"{len(msg.errors)} problem(s) `check` rejects: "
                                + " · ".join(msg.errors))
        else:
            self.error_line.clear("config")
        if msg.stage_notes != self.stage_notes:
            self.stage_notes = msg.stage_notes
            if self.view is not None:
                self.table.show(self.view.statuses, self.clock(), self.config.drift_threshold,
                                self.view.held_gpus(), self.stage_notes)
        self._update_title()

    def on_descendant_focus(self) -> None:
        self._show_focus()

    def on_descendant_blur(self) -> None:
        self._show_focus()

    def _show_focus(self) -> None:
        """Light the title bar of the pane that has the keyboard focus."""
        if not self.screen_stack:
            return  # the app is closing: blur events arrive after the last screen went
        focused = self.screen.focused if self.screen is self.screen_stack[0] else None
        self.log_title.set_class(focused in (self.logview, self.search_box), "-focused")
        self.alerts_title.set_class(focused is self.alerts_panel, "-focused")

    def on_unmount(self) -> None:
        self._poke.set()

    # -- state polling (thread) ---------------------------------------------------------
    @work(thread=True, group="state", exit_on_error=False)
    def _state_loop(self) -> None:
        """Read the state every ``poll_s`` (sooner when poked) and post it."""
        worker = get_current_worker()
        # The panel shows the newest alerts: start with the file's last megabyte.
        alerts = JsonlTail(self.config.state_dir / "alerts.jsonl", tail_bytes=1 << 20)
        first = True
        last_spawn = 0.0
        while not worker.is_cancelled:
            self._poke.clear()
            try:
                msg: StatePolled | None = StatePolled(load_view(self.config), alerts.read())
            except Exception as exc:  # noqa: BLE001 (a bad file must not kill the poller)
                self.call_from_thread(self.notify, f"reading state failed: {exc}",
                                      severity="error")
                self.call_from_thread(self.error_line.put, "state",
                                      f"reading state failed: {type(exc).__name__}: {exc}")
                msg = None
            if msg is not None:
                view = msg.view
                active = bool(view.active())
                wanted = any(s.wanted and not s.state.terminal for s in view.statuses)
                now = time.monotonic()
                # Keep the pipeline advancing: a driver follows running stages
                # and launches wanted ones; it exits when idle, so look again.
                if self.start_driver and view.driver_pid is None and \
                        ((first and (active or wanted)) or (active and now - last_spawn > 5)):
                    from eagle3tui.supervisor.protocol import ensure_driver

                    if ensure_driver(self.config):
                        last_spawn = now
                first = False
                self.post_message(msg)
            self._poke.wait(self.poll_s)

    def poke(self) -> None:
        """Ask the poller for an immediate refresh."""
        self._poke.set()

    @on(StatePolled)
    def _on_state(self, msg: StatePolled) -> None:
        self.polls += 1
        view = msg.view
        self.view = view
        self.statuses = view.statuses
        self.driver_pid = view.driver_pid
        table = self.table
        self.error_line.clear("state")
        table.show(view.statuses, self.clock(), self.config.drift_threshold, view.held_gpus(),
                   self.stage_notes)
        if self.selected is None and view.statuses:
            self.selected = table.selected_stage or view.statuses[0].name
        running = running_stage(view.statuses)
        if self.follow_running and running is not None and running != self.selected:
            self.selected = running
            self.pinned = None
            table.select_stage(running, by_user=False)
        # The narrow layout gives the GPU panel 3 lines (app.tcss): more GPUs
        # than that are drawn as a compact grid.
        self.gpu_panel.max_lines = 3 if self.size.width < 120 else 1000
        self.gpu_panel.show(view)
        self.alerts_panel.add_alerts(msg.alerts)
        self._update_banner(msg.alerts, view)
        self._update_alerts_title()
        for p in view.problems:
            if p not in self._problems_seen:
                self._problems_seen.add(p)
                self.notify(printable(p), severity="warning", timeout=10, markup=False)
        if view.problems:
            self.error_line.put("state files", " · ".join(view.problems))
        else:
            self.error_line.clear("state files")
        self._update_title()
        self._retarget_log()

    def _update_banner(self, alerts: list[dict[str, Any]], view: PipelineView) -> None:
        """Show the newest pipeline-complete alert; hide it while stages run or queue."""
        done = [a for a in alerts if a.get("kind") == PIPELINE_COMPLETE]
        if done:
            self.banner_text = printable(str(done[-1].get("message") or "pipeline complete"))
        if view.work_left() or not view.verdict().ok or any(s.stale for s in view.statuses):
            # Running again, a stage failed since, or out of date with the settings shown.
            self.banner_text = ""
        self.banner.update(Text(self.banner_text, style="bold"))
        self.banner.set_class(bool(self.banner_text), "visible")

    def _update_title(self) -> None:
        active = sum(1 for s in self.statuses if s.state.active)
        failed = sum(1 for s in self.statuses if s.state == StageState.FAILED)
        t = Text()
        t.append("eagle3tui ", style="bold")
        t.append(printable(self.config.name))
        t.append(f" · {active} running")
        if failed:
            t.append(f" · {failed} failed", style="bold red")
        if self.error_line.errors:
            n = len(self.error_line.errors)
            t.append(f" · {n} error{'s' if n > 1 else ''}", style="bold red")
        t.append(" · driver " + (f"pid {self.driver_pid}" if self.driver_pid else "not running"))
        # Minutes only: a seconds clock would redraw the title every second.
        t.append(" · " + clock_text(self.clock())[:5], style="dim")
        if t.plain != self._title_plain:
            self._title_plain = t.plain
            self.title_bar.update(t)

    # -- log pane -----------------------------------------------------------------------
    @on(StageTable.Highlighted)
    def _on_stage_highlighted(self, event: StageTable.Highlighted) -> None:
        if event.by_user:
            # The user chose a stage: the log pane stays on it until run all.
            self.follow_running = False
        if event.name != self.selected:
            self.selected = event.name
            self.pinned = None
            self._retarget_log()

    def _status(self, name: str | None) -> StageStatus | None:
        for s in self.statuses:
            if s.name == name:
                return s
        return None

    def _retarget_log(self) -> None:
        """Follow the selected stage's latest attempt (or a pinned older one)."""
        st = self._status(self.selected)
        if st is None:
            return
        target: LogTarget | None = None
        if self.pinned and self.pinned[0] == st.name and self.pinned[1] != st.attempt:
            recs = {r.attempt: r for r in RunStore(self.config.state_dir).records(st.name)}
            rec = recs.get(self.pinned[1])
            if rec is not None:
                nxt = recs.get(rec.attempt + 1)
                end = nxt.log_offset if nxt is not None and nxt.log == rec.log else None
                target = LogTarget(st.name, rec.attempt, rec.run_id, rec.log, rec.log_offset, end, rec.log_line)
        elif st.attempt and st.run_id:
            target = LogTarget(st.name, st.attempt, st.run_id, st.log, st.log_offset, first_line=st.log_line)
        if target == self.log_target and target is not None:
            self._update_log_title()
            return
        self.log_target = target
        view = self.logview
        view.reset()
        self.workers.cancel_group(self, "log")
        if target is not None:
            self._log_ack.set()
            self._follow_log(target)
        self._update_log_title()

    def _update_log_title(self) -> None:
        view = self.logview
        st = self._status(self.selected)
        t = Text()
        if st is None:
            t.append("log: select a stage")
        elif self.log_target is None:
            t.append(f"{printable(st.name)}: has not run yet", style="dim")
        else:
            tg = self.log_target
            t.append(f"{printable(tg.stage)} #{tg.attempt}", style="bold")
            t.append(f" · {printable(Path(tg.log).name)}")
            t.append(f" · filter {view.model.filter}")
            if self.search_text:
                t.append(f" · /{printable(self.search_text)}")
            t.append(" · following" if view.follow else " · paused (G: follow)",
                     style="green" if view.follow else "yellow")
            if view.wrap:
                t.append(" · wrapped (w: cut)")
            elif view.scroll_x:
                t.append(f" · from column {int(view.scroll_x) - GUTTER + 1} (←)"
                         if view.scroll_x > GUTTER else " · scrolled (←)")
            elif view.cut:
                t.append(" · w: wrap", style="dim")
            if st.reason and st.attempt == tg.attempt:
                t.append(" · " + printable(st.reason), style="dim")
        if t.plain != self._log_title_plain:
            self._log_title_plain = t.plain
            self.log_title.update(t)

    @work(thread=True, group="log", exclusive=True, exit_on_error=False)
    def _follow_log(self, target: LogTarget) -> None:
        """Follow one attempt's log from its offset; post batches, with backpressure.

        Reads at a fixed cadence (``log_poll_s``) rather than as fast as lines
        arrive: a busy log then costs a few large reads per second, and the UI
        gets at most one batch per tick to draw.
        """
        worker = get_current_worker()
        offset, line_no = skip_to_tail(target.log, target.offset, CATCH_UP_BYTES)
        # An older attempt ends where the next attempt's header line begins.
        end = line_start(target.log, target.end) if target.end is not None else None
        follower = LogFollower(target.log, offset, line_no=target.first_line + line_no)
        prefix = RunStore(self.config.state_dir).prefix(target.stage, target.attempt)
        verdicts = JsonlTail(Path(prefix + ".verdicts.jsonl"), from_start=True)
        pending: list[tuple[int, str, str]] = []
        marks: list[tuple[int, int, str]] = []
        open_line = OpenLine()
        reset = False
        idle = 0
        try:
            while not worker.is_cancelled:
                got = False
                caught_up = False
                for _ in range(8):  # bounded work per round keeps cancellation prompt
                    chunk = follower.read_chunk()
                    if chunk is None:
                        caught_up = True
                        break
                    got = True
                    if chunk.reset:
                        pending.clear()
                        open_line = OpenLine()
                        reset = True
                    pending.extend(chunk_lines(chunk, end))
                    open_line.feed(chunk)
                # An older attempt's lines are all complete; a live one's last
                # line is shown as it stands once everything before it is read.
                if caught_up and end is None:
                    row = open_line.row(follower)
                    if row is not None:
                        pending.append(row)
                    if len(pending) > self.max_log_lines * 2:
                        # The UI keeps max_log_lines anyway: don't queue more than it shows.
                        del pending[: len(pending) - self.max_log_lines]
                marks.extend(read_verdicts(verdicts))
                # Backpressure: one batch in flight at a time; the UI acks it.
                if (pending or reset or marks) and self._log_ack.is_set():
                    self._log_ack.clear()
                    self.post_message(LogBatch(target.token, pending, reset, marks))
                    pending, reset, marks = [], False, []
                # A quiet log is looked at less often (up to 4x the cadence).
                idle = 0 if got else min(idle + 1, 3)
                time.sleep(self.log_poll_s * (1 + idle))
        finally:
            follower.close()

    @on(LogBatch)
    def _on_log_batch(self, msg: LogBatch) -> None:
        try:
            if self.log_target is None or msg.token != self.log_target.token:
                return
            view = self.logview
            if msg.reset:
                view.reset()
            view.append(msg.lines)
            view.mark(msg.verdicts)
            self._try_jump()
            self._update_log_title()
        finally:
            self._log_ack.set()

    # -- commands -------------------------------------------------------------------------
    @work(thread=True, group="command", exit_on_error=False)
    def send(self, op: str, stages: list[str] | None = None, **extra: Any) -> None:
        """Send ``op`` to the driver in a thread; the reply arrives as ``CommandDone``."""
        from eagle3tui.supervisor.protocol import send_command

        refused = self._refuse_unlaunchable(op, list(stages or []), bool(extra.get("all")))
        if refused is not None:
            self.post_message(CommandDone(op, list(stages or []), refused))
            return
        try:
            reply = send_command(self.config, op, stages, **extra)
        except Exception as exc:  # noqa: BLE001 (show it, never crash the UI)
            reply = {"ok": False, "message": f"{op} failed: {type(exc).__name__}: {exc}"}
        self.post_message(CommandDone(op, list(stages or []), reply))
        self._poke.set()

    def _refuse_unlaunchable(self, op: str, stages: list[str], everything: bool
                             ) -> dict[str, Any] | None:
        """A failed reply when a stage the command would launch has no executable.

        The same check as ``check`` and ``start`` on the command line, made
        before the driver is asked: a missing program is then one clear
        message instead of a launch, its failure alerts and a "queued" reply.
        """
        from eagle3tui.config import missing_executables
        from eagle3tui.supervisor.scheduler import dependency_closure

        if op == "start":
            names = None if everything else dependency_closure(self.config, stages)
        elif op in ("restart", "resume"):
            names = stages
        else:
            return None
        errors = missing_executables(self.config, names)
        if not errors:
            return None
        what = "run all" if everything else f"{op} {', '.join(stages)}"
        return {"ok": False, "message": f"{what}: nothing started.\n"
                + "\n".join(str(e) for e in errors)}

    @on(CommandDone)
    def _on_command_done(self, msg: CommandDone) -> None:
        self.last_reply = msg.reply
        text = printable(str(msg.reply.get("message") or msg.op), keep_newlines=True)
        self.notify(text, severity="information" if msg.reply.get("ok") else "error",
                    timeout=6, markup=False)
        if msg.reply.get("ok"):
            self.error_line.clear("command")
        else:
            self.error_line.put("command", text)
        self._update_title()
        self._check_config()  # a program installed or a file fixed since shows here

    def _selected_status(self) -> StageStatus | None:
        st = self._status(self.selected)
        if st is None:
            self.notify("no stage selected", severity="warning")
        return st

    def action_start(self) -> None:
        st = self._selected_status()
        if st is not None:
            self.send("start", [st.name])

    def action_run_all(self) -> None:
        self.follow_running = True
        self.send("start", [], all=True)

    def action_stop(self) -> None:
        st = self._selected_status()
        if st is None:
            return
        if not st.state.active:
            self.notify(f"{st.name} is not running ({st.state.value})", severity="warning",
                        markup=False)
            return
        name = st.name

        def answered(yes: bool | None) -> None:
            if yes:
                self.send("stop", [name])

        self.push_screen(ConfirmScreen(
            f"Stop {name}? SIGTERM goes to its process group; SIGKILL follows after "
            f"{self.config.stage(name).stop_grace_s:.0f}s."), answered)

    def action_resume(self) -> None:
        st = self._selected_status()
        if st is None:
            return
        if st.state not in (StageState.FAILED, StageState.STOPPED):
            self.notify(f"{st.name} is {st.state.value}: resume is for a failed or stopped stage",
                        severity="warning", markup=False)
            return
        self.pinned = None
        self.send("resume", [st.name])

    def action_restart(self) -> None:
        st = self._selected_status()
        if st is None:
            return
        name = st.name

        def answered(yes: bool | None) -> None:
            if yes:
                self.pinned = None
                self.send("restart", [name])

        self.push_screen(ConfirmScreen(f"Restart {name} from scratch (a new attempt, "
                                       "without resume arguments)?"), answered)

    def action_skip(self) -> None:
        st = self._selected_status()
        if st is not None:
            self.send("unskip" if st.state == StageState.SKIPPED else "skip", [st.name])

    def action_pager(self) -> None:
        st = self._selected_status()
        if st is None:
            return
        path = self.log_target.log if self.log_target else st.log
        if not Path(path).exists():
            self.notify(f"no log yet: {path}", severity="warning", markup=False)
            return
        argv = shlex.split(os.environ.get("PAGER") or "less") + [path]
        try:
            with self.suspend():
                subprocess.run(argv, check=False)
        except SuspendNotSupported:
            self.notify(f"cannot open a pager here; the log is {path}", severity="warning",
                        markup=False)
        except OSError as exc:
            self.notify(f"could not run PAGER={argv[0]!r}: {exc}. Set PAGER, e.g. PAGER=less",
                        severity="error", markup=False)

    def action_filter(self) -> None:
        self.logview.refilter()
        self._update_log_title()

    def action_wrap(self) -> None:
        self.logview.toggle_wrap()
        self._update_log_title()

    @on(LogView.Changed)
    def _on_log_view_changed(self) -> None:
        self._update_log_title()

    def action_follow(self) -> None:
        self.logview.follow_end()
        self._update_log_title()

    def action_search(self) -> None:
        box = self.search_box
        box.add_class("visible")
        box.value = self.search_text
        box.focus()

    @on(Input.Submitted, "#search")
    def _on_search_submitted(self, event: Input.Submitted) -> None:
        self.search_text = event.value
        self._close_search()
        self._search(backwards=False)

    def _close_search(self) -> None:
        box = self.search_box
        box.remove_class("visible")
        self.logview.focus()

    def key_escape(self) -> None:
        if self.search_box.has_class("visible"):
            self._close_search()

    def action_search_next(self) -> None:
        self._search(backwards=False)

    def action_search_prev(self) -> None:
        self._search(backwards=True)

    def _search(self, backwards: bool) -> None:
        view = self.logview
        if not self.search_text:
            return
        start = view.marked if view.marked is not None else (
            view.top_index + (view.size.height if backwards else -1))
        idx = view.model.search(self.search_text, start, backwards)
        if idx is None:
            self.notify(f"not found: {self.search_text}", severity="warning", markup=False)
        else:
            view.goto(idx)
        self._update_log_title()

    # -- alerts level filter -----------------------------------------------------------------
    def action_alert_levels(self) -> None:
        self.alerts_panel.toggle_levels()
        self._update_alerts_title()

    def _update_alerts_title(self) -> None:
        panel = self.alerts_panel
        t = Text("Alerts", style="bold")
        if panel.min_level == "info":
            t.append(" · all levels (l: warnings+)")
        else:
            t.append(f" · {panel.min_level}+")
            if panel.hidden:
                t.append(f" · {panel.hidden} info hidden (l: show)", style="dim")
        t.append(" · enter: show line", style="dim")
        if t.plain != self._alerts_title_plain:
            self._alerts_title_plain = t.plain
            self.alerts_title.update(t)

    # -- jumping from an alert to its line ----------------------------------------------------
    @on(AlertsPanel.JumpTo)
    def _on_jump(self, msg: AlertsPanel.JumpTo) -> None:
        self.jump_to_alert(msg.alert)

    # -- teaching a rule --------------------------------------------------------------------
    def _line_to_learn(self) -> tuple[str, str | None] | None:
        """(text, stage) of the highlighted alert (alerts focused) or the marked log line."""
        panel = self.alerts_panel
        if self.focused is panel and panel.highlighted is not None \
                and 0 <= panel.highlighted < len(panel.alerts):
            alert = panel.alerts[panel.highlighted]
            text = str((alert.get("details") or {}).get("text") or "").splitlines()
            if text:
                return text[-1] if len(text) > 1 and text[0].startswith("Traceback") else text[0], \
                    alert.get("stage")
            return None
        view = self.logview
        if view.marked is not None:
            line = view.model.view_line(view.marked)
            if line is not None and self.log_target is not None:
                return line.text, self.log_target.stage
        return None

    def action_learn(self, kind: str) -> None:
        picked = self._line_to_learn()
        if picked is None:
            self.notify("mark a log line first (/ to search, or enter on an alert), or focus "
                        "the alerts and highlight one", severity="warning")
            return
        self._learn(picked[0], picked[1], kind)

    @work(thread=True, group="learn", exit_on_error=False)
    def _learn(self, text: str, stage: str | None, kind: str) -> None:
        from eagle3tui.learned_rules import CannotLearn, learn

        path = self.config.learned_rules or self.config.state_dir / "learned-rules.toml"
        try:
            rule = learn(path, text, kind, stage=stage)
        except (CannotLearn, OSError) as exc:
            self.post_message(RuleLearned(f"no rule written: {exc}", False))
            return
        self.post_message(RuleLearned(
            f"{rule.id}: lines of {stage or 'any stage'} containing {rule.literal!r} are {kind} "
            f"from now on (written to {rule.path}; edit or delete it there)", True))

    @on(RuleLearned)
    def _on_rule_learned(self, msg: RuleLearned) -> None:
        self.notify(printable(msg.text), severity="information" if msg.ok else "error",
                    timeout=10, markup=False)

    def action_jump_latest(self) -> None:
        panel = self.alerts_panel
        for a in panel.alerts:
            if (a.get("details") or {}).get("line"):
                self.jump_to_alert(a)
                return
        self.notify("no alert points at a log line", severity="warning")

    def jump_to_alert(self, alert: dict[str, Any]) -> None:
        """Select the alert's stage and attempt, and show its log line."""
        stage = alert.get("stage")
        line = (alert.get("details") or {}).get("line")
        if not stage or self._status(stage) is None:
            self.notify("this alert is about the pipeline, not a stage's log", markup=False)
            return
        table = self.table
        table.select_stage(stage)
        self.selected = stage
        attempt = alert.get("attempt")
        st = self._status(stage)
        self.pinned = (stage, int(attempt)) if attempt and st and attempt != st.attempt else None
        self._retarget_log()
        if isinstance(line, int) and line > 0:
            self._pending_jump = line
            self._try_jump()
        self.logview.focus()

    def _try_jump(self) -> None:
        if self._pending_jump is None:
            return
        view = self.logview
        model = view.model
        if not model.lines or model.lines[-1].no < self._pending_jump:
            return  # not read yet: the follower is still catching up
        line = self._pending_jump
        self._pending_jump = None
        if model.lines[0].no > line:
            self.notify(f"line {line} is older than the {len(model.lines)} lines kept here; "
                        "press o to open the full log", severity="warning")
            return
        idx = model.index_of(line)
        if idx is not None:
            view.goto(idx)

    # -- help and quit -------------------------------------------------------------------------
    def action_help(self) -> None:
        self.push_screen(HelpScreen(
            self.HELP_ROWS, "Stages keep running when you quit; come back with: "
            + self.come_back_command()))

    def action_quit(self) -> None:  # type: ignore[override]
        self.exit(0)

    def come_back_command(self, config_arg: str | None = None) -> str:
        """The command that reopens this pipeline's TUI from where the user is.

        ``config_arg`` is the ``--config`` value as the user typed it (default:
        the absolute path); ``--set`` overrides are repeated.
        """
        cfg = shlex.quote(config_arg or self.config_arg or str(self.config.path))
        for k, v in self.config.overrides.items():
            cfg += " --set " + shlex.quote(f"{k}={v}")
        return f"{invocation()} --config {cfg}"

    def goodbye(self, config_arg: str | None = None) -> str:
        """What to print after the app exits: what keeps running and how to come back."""
        again = self.come_back_command(config_arg)
        active = [s.name for s in self.statuses if s.state.active]
        if active:
            drv = f" (driver pid {self.driver_pid})" if self.driver_pid else ""
            return (f"eagle3tui: {len(active)} stage(s) keep running{drv}: {', '.join(active)}.\n"
                    f"Come back with: {again}\n"
                    f"Status without the UI: {again} status")
        return f"eagle3tui: nothing is running. Come back with: {again}"


# -- file helpers (run in worker threads) ------------------------------------------------------


def skip_to_tail(path: str, offset: int, keep: int) -> tuple[int, int]:
    """Where to start reading a log so at most ~``keep`` bytes are loaded.

    Returns ``(offset, lines_before)``: the lines skipped are counted (a fast
    byte count) so line numbers still match the driver's alerts.
    """
    try:
        size = os.path.getsize(path)
    except OSError:
        return offset, 0
    if size - offset <= keep:
        return offset, 0
    target = size - keep
    lines = 0
    pos = offset
    with open(path, "rb") as f:
        f.seek(offset)
        while pos < target:
            block = f.read(min(1 << 20, target - pos))
            if not block:
                break
            lines += block.count(b"\n")
            pos += len(block)
        # Finish the line we are in so reading starts at a line start.
        rest = f.readline()
        lines += rest.endswith(b"\n")
        pos += len(rest)
    return pos, lines


def running_stage(statuses: list[StageStatus]) -> str | None:
    """The stage whose log is worth watching now: the task started last among the
    active ones (a service serving them is running too, but it is not the work); a
    service only when no task runs; None when nothing runs."""
    active = [s for s in statuses if s.state.active]
    tasks = [s for s in active if s.kind != "service"] or active
    if not tasks:
        return None
    return max(tasks, key=lambda s: s.started_at or 0.0).name


def line_start(path: str, offset: int) -> int:
    """Where the line that ends just before ``offset`` begins (``offset`` is a line start)."""
    back = min(offset, 1 << 16)
    try:
        with open(path, "rb") as f:
            f.seek(offset - back)
            data = f.read(back)
    except OSError:
        return offset
    if not data.endswith(b"\n"):
        return offset
    return offset - back + data.rfind(b"\n", 0, len(data) - 1) + 1


def run_tui(args: Any) -> int:
    """Entry point for ``eagle3tui`` with no subcommand (``args`` from cli.py)."""
    import sys

    from eagle3tui.config import load_config, parse_overrides

    config = load_config(args.config, parse_overrides(getattr(args, "set", []) or []))
    # Textual reads keys from stdin and draws on stderr.
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        prog = invocation()
        print(f"error: the TUI needs a terminal; use `{prog} --watch` or "
              f"`{prog} status` without one", file=sys.stderr)
        return 2
    app = EagleApp(config, config_arg=str(args.config))
    rc = app.run()
    print(app.goodbye(str(args.config)))
    return int(rc or 0)
