"""One stage attempt's log, read and understood: the class the supervisor uses.

:class:`StageLogMonitor` follows the log from a byte offset, classifies lines
with a :class:`RuleSet`, assembles Python tracebacks, tracks progress, ETA
and drift, and detects stalls. It never blocks: :meth:`poll` reads what is
there and returns; the caller decides when to poll (e.g. on a
:class:`LogWatcher` wake-up or a timer).

Fast path: the rule prefilter finds the few candidate lines of each block;
only those (and, while a traceback is open, the lines after it) are decoded.
Progress is parsed from the last progress line of each block, which is what
the display and the ETA need; ``progress_mode="all"`` parses every progress
line instead (for ``classify --json``).

The class coordinates; its jobs have owners, one module each, mixed into it:
:class:`~eagle3tui.logs.scan.BlockScan` (the block scans and the template fast
path), :class:`~eagle3tui.logs.tracebacks.TracebackAssembly`,
:class:`~eagle3tui.logs.settlement.Settlement` (held and pending events) and
:class:`~eagle3tui.logs.progress_tracking.ProgressTracking`. Every verdict that
needs only counting and listing becomes its event in :meth:`StageLogMonitor._list_verdict`,
on the slow path and the fast path alike.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter, deque
from collections.abc import Callable

from eagle3tui.logs.eta import Eta, EtaTracker
from eagle3tui.logs.events import LogEvent
from eagle3tui.logs.follower import Chunk, LogFollower, split_segments, strip_ansi, tail_lines
from eagle3tui.logs import endings
from eagle3tui.logs.frames import starts_run
from eagle3tui.logs.anatomy import shape
from eagle3tui.logs.history import StageHistory
from eagle3tui.logs.judge import (
    Verdict, is_recovery, is_request_source, judge_line,
)
from eagle3tui.logs.progress import (
    ProgressUpdate,
    split_glued,
)
from eagle3tui.logs.repeats import RepeatFilter
from eagle3tui.logs.speaker import named_pids, speaker
from eagle3tui.logs.rules import RuleSet, build_ruleset
from eagle3tui.logs.stall import GpuWitness, StallDetector, serving_idle
from eagle3tui.logs.templates import BY_TEMPLATE, Template, TemplateIndex
from eagle3tui.logs.workers import split_worker, strip_log_header
# The monitor's parts, each the owner of one job (their methods keep the names they had here).
from eagle3tui.logs.scan import BlockScan
from eagle3tui.logs.progress_tracking import ProgressTracking, describe_progress
from eagle3tui.logs.settlement import Settlement
from eagle3tui.logs.tracebacks import TracebackAssembly
# The names this module had before they moved.
from eagle3tui.logs.tracebacks import CHAIN as _CHAIN, OpenTraceback as _OpenTraceback
from eagle3tui.logs.settlement import (
    HOLD_LINES as _HOLD_LINES,
    RECOVERY_LINES as _RECOVERY_LINES,
    Held as _Held,
    Pending as _Pending,
    ending_key as _ending_key,
)
from eagle3tui.logs.monitor_terms import (
    MAX_TEXT as _MAX_TEXT,
    NEWS_FRESH_S as _NEWS_FRESH_S,
    NO_BLOCK as _NO_BLOCK,
    EARLY_EXIT as _EARLY_EXIT,
    LOG_RESET as _LOG_RESET,
    STOP_REQUESTED as _STOP_REQUESTED,
    TRACEBACK as _TRACEBACK,
    TRACEBACK_HANDLED as _TRACEBACK_HANDLED,
    ANNOUNCED_ENDING as _ANNOUNCED_ENDING,
    EXCEPTION_IGNORED as _EXCEPTION_IGNORED,
    FATAL_LEVEL as _FATAL_LEVEL,
    REQUEST_OUTCOMES as _REQUEST_OUTCOMES,
    STOP_LINES as _STOP_LINES,
    STOP_ENDINGS as _STOP_ENDINGS,
    GENERIC_RULES as _GENERIC_RULES,
    HELD_RULES as _HELD_RULES,
    RECORD_LINES as _RECORD_LINES,
    event as _event,
)

# ANSI SGR codes written out in caret notation: "^[[0;36m", "^[[0m".
_CARET_SGR = re.compile(r"\^\[\[[\d;]{0,20}m")


class StageLogMonitor(BlockScan, TracebackAssembly, Settlement, ProgressTracking):
    """Follows one stage attempt's log and says what it means.

    ``poll()`` returns new fatal/benign/warning events (info with
    ``include_info``, progress with ``progress_events``) plus drift events;
    ``check()`` returns stall events; ``finish()`` settles tracebacks and
    reports an early exit. Attributes: ``progress``, ``eta``,
    ``last_output_at``, ``offset``, ``counts``.

    With a ``history`` and a ``stage`` but no ``estimate_s``, the estimate is
    the median of the stage's recorded durations, and a successful
    ``finish(0)`` records this attempt's duration.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        offset: int = 0,
        line_no: int = 0,
        rules: RuleSet | None = None,
        stage: str | None = None,
        stage_kind: str = "task",
        estimate_s: float | None = None,
        drift_threshold: float = 0.25,
        phase_estimates: dict[str, float] | None = None,
        stall_floor_s: float = 300.0,
        stall_k: float = 10.0,
        progress_events: bool = False,
        progress_mode: str = "sample",
        include_info: bool = False,
        started_at: float | None = None,
        early_exit_s: float = 60.0,
        went_on_lines: int = 20,
        went_on_s: float = 10.0,
        recover_s: float = 3.0,
        exit_known: bool = True,
        history: StageHistory | None = None,
        list_per_rule: int | None = None,
        stall_clock: Callable[[], float] | None = None,
        started_age_s: float | None = None,
    ) -> None:
        if progress_mode not in ("sample", "all"):
            raise ValueError("progress_mode must be 'sample' or 'all'")
        self.path = os.fspath(path)
        self.follower = LogFollower(self.path, offset, line_no=line_no)
        self.rules = rules if rules is not None else build_ruleset()
        self.stage = stage
        self.stage_kind = stage_kind  # "service": per-request failures are warnings
        self.history = history
        if estimate_s is None and history is not None and stage is not None:
            # No configured estimate: the median of this stage's past runs.
            estimate_s = history.median(stage)
        self.eta_tracker = EtaTracker(estimate_s, drift_threshold, phases=phase_estimates,
                                      stage_started_at=started_at)
        # A live log's quiet time is measured on ``stall_clock`` (monotonic): see StallDetector.
        self.stall = StallDetector(stall_floor_s, stall_k, clock=stall_clock)
        # Output re-arms the stall detector only when it is news: the same wait
        # line printed again by a hung process is not (see repeats.py).
        self.repeats = RepeatFilter()
        self._moved = False  # this read's progress moved, or an idle server said so
        self._progress_keys: dict[str | None, tuple] = {}  # per worker: the last progress state
        self.progress_events = progress_events
        self.progress_mode = progress_mode
        self.samples_per_block = 8
        self.include_info = include_info
        self.started_at = time.time() if started_at is None else started_at
        self.early_exit_s = early_exit_s
        self.went_on_lines = went_on_lines
        self.went_on_s = went_on_s
        # A death that a restart may follow waits this long for it (or a few lines).
        self.recover_s = recover_s
        # False when the exit status will never be known (offline classify):
        # then a line saying the process is being stopped is the evidence
        # that an error before it ended it. Live, the exit status says that.
        self.exit_known = exit_known
        self.progress: ProgressUpdate | None = None
        self.progress_line: int | None = None
        self.worked_line = 0  # the last progress line whose counter was not at zero (work done)
        # Such lines since the reader last took them (take_worked_lines): a few per read,
        # as progress is sampled; what tells the errors of one read apart by what came between.
        self.worked_lines: list[int] = []
        # A server's live figures, from its last throughput/metrics lines:
        # throughput_tok_s, prompt_throughput_tok_s, running_reqs,
        # queued_reqs, kv_usage (0..1); each key kept until a newer value.
        self.figures: dict[str, float] = {}
        self.figures_line: int | None = None
        # When the service was seen ready (mark_ready): a ready server with nothing to do is no stall.
        self.ready_at: float | None = None
        self.last_output_at: float | None = None
        self.counts: Counter[str] = Counter()
        self.finished = False
        self._tail: deque[LogEvent] = deque(maxlen=64)
        self._tb: dict[str | None, _OpenTraceback] = {}
        self._pending: list[_Pending] = []
        self._held: list[_Held] = []
        # Lines up to this number are read whatever the prefilter says: what a
        # held error or a pending failure turns into depends on them.
        self._watch_to = 0
        # Last closed traceback per worker: a chained exception ("During
        # handling of the above exception ...") continues it.
        self._last_closed: dict[str | None, tuple[_Pending | None, int, int]] = {}
        self._out: list[LogEvent] = []
        # Per worker: line of the last "Exception ignored in" (its traceback
        # and exception line are Python's ignored report) and of the last
        # line on a request path (a traceback right after it failed a request).
        self._ignored_at: dict[str | None, int] = {}
        self._stop_asked_at = -(10**9)  # the line that said a stop was asked of the process
        self._request_at: dict[str | None, int] = {}
        self._pywarn_at: dict[str | None, int] = {}  # last Python warning line per worker
        self._last_verdict: dict[str | None, tuple[int, tuple[str | None, str], Verdict]] = {}
        # Stops a program announced and then went on from (a callback whose stop did not
        # take): the same announcement again is not believed either (see finish).
        self._unbelieved: set[tuple[str | None, str]] = set()
        self._now = 0.0
        self._templates: TemplateIndex | None = None
        # A summary shows a few events of each rule and counts the rest (classify's
        # text output): with ``list_per_rule``, catch-up's hot path lists the first
        # that many warning (benign, info) events of a rule and only counts the others,
        # in ``counts`` and ``unlisted``, without making them (a long log's hundreds of
        # thousands of warnings). The hot path goes in line order and every other path
        # lists what it emits, so the listed ones include the earliest by line. Fatal
        # events are all listed.
        self.list_per_rule = list_per_rule
        self.unlisted: Counter[tuple[str, str]] = Counter()
        self._hot_listed: Counter[tuple[str, str]] = Counter()
        # The last event the hot path did not make, made when the tail is next read or
        # appended to: the tail keeps its last event (_record_before reads it) and
        # every listed one, in order.
        self._unlisted_tail: tuple | None = None  # (line index in the block, hot tuple)
        self._tail_block: tuple = _NO_BLOCK  # the block being scanned, its offsets, first line
        # Quiet since the attempt began: a driver attaching late counts the time already
        # passed (``started_age_s``, measured by the caller on a clock that does not step).
        self.stall.note_activity(self.started_at, age_s=(
            started_age_s if started_age_s is not None else time.time() - self.started_at))

    # -- public -----------------------------------------------------------
    def set_rules(self, rules: RuleSet) -> None:
        """Judge the lines read from now on with ``rules`` (a rule taught or edited meanwhile)."""
        self.rules = rules
        self._templates = None  # its remembered meanings were judged with the old rules

    @property
    def offset(self) -> int:
        """Bytes of the log consumed (pass back in after a restart)."""
        return self.follower.offset

    @property
    def line_no(self) -> int:
        """Complete lines read so far."""
        return self.follower.line_no

    def mark_ready(self, now: float) -> None:
        """The service is ready (its readiness probe answered, or its log pattern appeared)."""
        if self.ready_at is None:
            self.ready_at = now

    @property
    def last_news_at(self) -> float | None:
        """When the log last said something new (output that is not a repeat, progress that moved)."""
        return self.stall.last_activity

    @property
    def eta(self) -> Eta | None:
        """Projection for the current progress bar (projected_s, remaining_s, drift)."""
        return self.eta_tracker.eta

    @property
    def pending(self) -> list[LogEvent]:
        """Tracebacks not yet judged (waiting to see if the process goes on, or still open)."""
        still_open = [LogEvent(line=tb.start, end_line=tb.exc_no or tb.start, kind="warning", rule=_TRACEBACK,
                               text=tb.exc_text or tb.first_text, worker=tb.worker) for tb in self._tb.values()]
        return [p.event for p in self._pending] + still_open

    @property
    def held(self) -> list[LogEvent]:
        """Error lines waiting to see what the process does next (a few lines or seconds)."""
        return [h.event for h in self._held]

    def tail_errors(self, n: int = 5) -> list[LogEvent]:
        """The last ``n`` fatal/warning events, oldest first (for failure alerts).

        With ``list_per_rule``, of the events catch-up did not list only the last of each
        run is kept (classify's summary does not read them)."""
        if self._unlisted_tail is not None:
            self._make_unlisted_tail()
        errs = [e for e in self._tail if e.kind in ("fatal", "warning")]
        return errs[-n:]

    def poll(self, now: float | None = None, max_bytes: int | None = None) -> list[LogEvent]:
        """Read what is new and return the events it produced. Never blocks."""
        self._now = time.time() if now is None else now
        self._out = []
        done = 0
        while True:
            chunk = self.follower.read_chunk(count_lines=False)
            if chunk is None:
                break
            self._process(chunk)
            done += len(chunk.data)
            if max_bytes is not None and done >= max_bytes:
                break
        self._end_quiet_tracebacks()
        self._settle_went_on()
        out, self._out = self._out, []
        return out

    def check(self, now: float | None = None, gpu: GpuWitness | None = None) -> list[LogEvent]:
        """Stall / hang check; call periodically with the GPU witness if any."""
        now = time.time() if now is None else now
        last = None
        if self.progress is not None:
            last = describe_progress(self.progress)
            if self.progress_line:
                last += f" (line {self.progress_line})"
        tpi = self.eta_tracker.time_per_item
        reps: list[tuple[str, int]] = []
        quiet = self.stall.quiet_s(now)
        if quiet is not None and quiet > self.stall.threshold(tpi):
            reps = [(_message_of(r.line), r.count) for r in self.repeats.repeated()]
        idle = self.stage_kind == "service" and serving_idle(self.ready_at, self.last_news_at, self.figures)
        verdict = self.stall.check(now, tpi, gpu, last, reps, idle=idle)
        if verdict is None:
            return []
        msg = verdict.message
        if self._pending:
            p = self._pending[-1].event
            msg += f" An unhandled-looking exception was logged at line {p.line}: {p.text}"
        ev = LogEvent(
            line=max(self.line_no, 1),
            end_line=max(self.line_no, 1),
            kind=verdict.kind,
            rule=verdict.rule,
            text=msg,
            explanation=msg,
            action="Check the process (py-spy dump --pid PID) and, for a hang, the GPUs; stop it if it is stuck.",
            details={"quiet_s": verdict.quiet_s, "threshold_s": verdict.threshold_s,
                     "repeated": [{"text": t, "count": n} for t, n in verdict.repeated]},
        )
        self._count(ev)
        return [ev]

    def finish(
        self, exit_code: int | None = None, signal: int | None = None, now: float | None = None,
        stopped: bool = False,
    ) -> list[LogEvent]:
        """The process ended: read the rest, settle tracebacks, report an early exit.

        ``exit_code=None`` means "ended, code unknown" (offline classify): an
        unsettled traceback at the end then counts as fatal. ``stopped``: the
        process was stopped on request, so its failing exit is the stop's doing
        and says nothing about an error still held or a traceback still pending
        (they stay warnings).
        """
        self.follower.writers_ended()  # a log renamed meanwhile is finished once read
        events = self.poll(now)
        now = self._now
        last = self.follower.end_of_output()
        if last is not None:
            # A last line without a newline: often the very error that ended it.
            self._out = []
            self._process(last)
            self._settle_went_on()
            events.extend(self._out)
            self._out = []
        # Close tracebacks that never got an exception line.
        for key in list(self._tb):
            tb = self._tb.pop(key)
            if tb.headless:
                self._close_run(tb)
            elif tb.exc_no:
                self._close_traceback(tb, tb.exc_text, tb.exc_no)
            else:
                self._close_traceback(tb, tb.first_text or "Traceback (most recent call last):",
                                      tb.start + tb.lines - 1)
        # An error line still held: a non-zero exit (or a signal) right after
        # it makes it the error that ended the process; otherwise it stays
        # what it looked like.
        exit_failed = exit_code is not None and (exit_code != 0 or signal is not None) and not stopped
        for h in self._held:
            self._settle_held(h, "exit" if exit_failed else None, self.line_no)
        self._held = []
        events.extend(self._out)
        self._out = []
        failed = exit_code is None or exit_code != 0 or signal is not None
        for p in self._pending:
            ev = p.event
            if stopped:
                ev.kind = "warning"
                ev.explanation = ("The stage was stopped on request before it showed whether it went on after "
                                  f"this: {ev.explanation}")
                self._emit(ev)
                continue
            if p.verdict is not None:
                if not failed:
                    ev.kind = "warning"
                    ev.explanation = f"The process exited successfully after this: {ev.explanation}"
                    self._emit(ev)
                    continue
                if exit_code is None and _ending_key(ev) in self._unbelieved:
                    self._went_on(p, "it announced the same stop before and went on")
                    continue
                self._emit(self._as_fatal(p))
                continue
            if failed:
                ev.kind = "fatal"
                ev.rule = p.rule.id if p.rule is not None and p.rule.kind == "fatal" else _TRACEBACK
                extra = f" {p.rule.explanation}" if p.rule is not None else ""
                ev.explanation = f"The process ended with this uncaught exception.{extra}"
                ev.action = (p.rule.action if p.rule and p.rule.action else
                             "Read the traceback ending here; fix the cause and rerun the stage.")
            else:
                ev.kind = "warning"
                ev.rule = _TRACEBACK_HANDLED
                ev.explanation = "An exception was logged but the process exited successfully, so it was handled."
            self._emit(ev)
        self._pending = []
        events.extend(self._out)
        self._out = []
        if exit_code == 0 and signal is None and self.history is not None and self.stage is not None:
            self.history.record(self.stage, now - self.started_at)
        if exit_code is not None and (exit_code != 0 or signal is not None):
            ran = now - self.started_at
            if ran <= self.early_exit_s:
                events.append(self._early_exit(exit_code, signal, ran))
        self.finished = True
        self.follower.close()
        return events

    def close(self) -> None:
        """Release the log file."""
        self.follower.close()

    # -- internals --------------------------------------------------------
    def _emit(self, ev: LogEvent) -> None:
        if ev.kind == "fatal" and ev.rule in _STOP_ENDINGS and 0 < ev.line - self._stop_asked_at <= _STOP_LINES:
            ev.kind, ev.rule = "benign", _STOP_REQUESTED
            ev.explanation = (f"The process was asked to stop (line {self._stop_asked_at}); this is how it reports "
                              f"that stop, not a failure. {ev.explanation}")
            ev.action = "None unless nobody asked it to stop."
        self._count(ev)
        if ev.kind in ("fatal", "warning", "benign"):
            if self._unlisted_tail is not None:
                self._make_unlisted_tail()
            self._tail.append(ev)
        if ev.kind == "info" and not self.include_info:
            return
        if ev.kind == "progress" and not self.progress_events:
            return
        self._out.append(ev)

    def _count(self, ev: LogEvent) -> None:
        self.counts[ev.kind] += 1

    def _process(self, chunk: Chunk) -> None:
        if chunk.reset:
            self._tb.clear()
            # Line numbers restart: what was held is settled as it looked.
            for h in self._held:
                self._settle_held(h, None, self.line_no)
            self._held = []
            self._watch_to = 0
            self._emit(
                LogEvent(
                    line=1,
                    end_line=1,
                    kind="info",
                    rule=_LOG_RESET,
                    text=f"{self.path} was truncated or replaced; reading it from the start",
                    explanation="The log file was truncated or rotated; line numbers restart.",
                )
            )
        news = False
        if chunk.data or chunk.updates:
            self.last_output_at = self._now
            # Output is news when it holds a line not seen before (a new
            # message, a count that moved); progress that moved is news too
            # (_progress sets _moved). A wait printed again is not.
            news = chunk.reset or bool(chunk.data) and not self._news_fresh() and self.repeats.feed(chunk.data)
        self._moved = False
        data = chunk.data
        if data:
            # The follower left the counting to us: _scan_block counts up to
            # the lines it visits, so each byte is counted once.
            counted = self._scan_block(data, chunk.first_no)
            if not chunk.counted:
                self.follower.line_no += counted
        if chunk.updates:
            last = chunk.updates[-1]
            last.no = self.follower.line_no + 1  # the open line follows the counted ones
            worker, rest = split_worker(last.text)
            self._progress(rest, worker, last.no, last.text, force=True)
        if news or self._moved:
            if not news:
                self.repeats.news()
            self.stall.note_activity(self._now)

    def _news_fresh(self) -> bool:
        """News came so recently that a stall is far off: this read need not be searched for it."""
        quiet = self.stall.quiet_s(self._now)
        return quiet is not None and quiet < min(_NEWS_FRESH_S, self.stall.floor_s / 20)


    def _line(
        self, raw: bytes, no: int, idx: tuple[int, ...] | None, is_prog: bool, tmpl: Template | None = None
    ) -> None:
        tb_before = bool(self._tb)
        text = raw.decode("utf-8", "replace")
        if len(text) > self.follower.max_line:
            # Keep both ends of an over-long line: its head says what it is
            # ("torch.OutOfMemoryError: ..." before a 70 kB state_dict key
            # list), its tail holds the latest state of a redrawn bar.
            half = self.follower.max_line // 2
            text = text[:half] + " … " + text[-half:]
        if "\x1b" in text:
            text = strip_ansi(text)
        if "^[[" in text:
            # The same colour codes in caret notation, as a CI page's raw log or a terminal
            # copy shows them: between a worker prefix and its header they hide the header.
            text = _CARET_SGR.sub("", text)
        segs = split_segments(text.rstrip("\r"))
        if is_prog or idx is not None:
            segs = split_glued(segs)
        last = len(segs) - 1
        plain: list[tuple[str, str | None, str]] = []  # segments no error or warning claimed
        for si, seg in enumerate(segs):
            worker, rest = split_worker(seg)
            if self._tb:
                self._end_tracebacks_of_others(worker)
            if self._tb and worker in self._tb and self._tb_feed(worker, rest, no):
                continue
            if self._pending and is_recovery(rest):
                self._recovered(no)
            if idx is not None and endings.stop_requested(rest):
                self._stop_asked_at = no
            if no <= self._watch_to and (self._held or self._pending):
                self._next_step(rest, no, seg[: len(seg) - len(rest)])
            if (idx is not None or self._tb) and worker not in self._tb:
                body = strip_log_header(rest)
                if starts_run(body):
                    self._open_run(worker, no, rest, body)
                    continue
            if idx is not None or self._tb:
                rule = self.rules.classify(rest, self.stage, idx if idx is not None else None)
                if rule is not None and rule.id == _TRACEBACK:
                    if strip_log_header(rest).startswith(_CHAIN[:2]):
                        self._continue_chain(worker, no, rest)
                    else:
                        self._open_traceback(worker, no, rest)
                        # "Scheduler hit an exception: Traceback (...)":
                        # the words before the traceback can say more.
                        before = rest.split("Traceback (most recent call last)", 1)[0]
                        head = strip_log_header(before)
                        if shape(before).category:
                            # A Python warning's message quotes it ("x.py:330:
                            # UserWarning: Error in stream_executor: Traceback"):
                            # caught, warned about, and the program goes on.
                            self._tb[worker].warned = True
                        elif len(head.strip()) > 3:
                            hr = self.rules.classify(head, self.stage)
                            hv = judge_line(head, hr, self.stage_kind)
                            if hv is not None and hv.kind not in ("info", "progress") and hv.rule not in _GENERIC_RULES:
                                self._verdict_event(hv, rest, worker, no)
                    continue
                sh = shape(rest)
                if rest.startswith("  ") and 0 < no - self._pywarn_at.get(worker, -99) <= 3:
                    continue  # the source line Python's warnings module echoes after a warning
                if sh.category:
                    self._pywarn_at[worker] = no
                verdict = judge_line(rest, rule, self.stage_kind, sh)
                if tmpl is not None and not tb_before and last == 0 and seg == text and "\x1b" not in text:
                    key = None
                    if tmpl.mode != BY_TEMPLATE:
                        assert self._templates is not None and idx is not None
                        key = (idx, self._templates.value_key(idx, raw))
                    self._remember(tmpl, key, text, worker, rest, sh, verdict)
                if verdict is not None:
                    verdict = self._continuation(verdict, worker, no, (sh.level, sh.source), rest)
                    self._verdict_event(verdict, rest, worker, no, before=seg[: len(seg) - len(rest)])
                    if verdict.kind not in ("info", "progress"):
                        continue
            if is_prog and si == last and not self._progress(rest, worker, no, seg) and plain:
                # A bar drawn without a newline, then a plain message glued after it
                # ("...13.38it/s, RAM: 40.1/251.9GB (15.9%)]I0219 19:34:48 utils.py:255] ..."):
                # the bar is the newest progress state. Only when nothing after it was an
                # error, so no progress is taken from before a death.
                for p_rest, p_worker, p_seg in reversed(plain):
                    if self._progress(p_rest, p_worker, no, p_seg):
                        break
            plain.append((rest, worker, seg))

    def _verdict_event(
        self, v: Verdict, rest: str, worker: str | None, no: int, request: bool | None = None, before: str = ""
    ) -> None:
        if v.rule == _EXCEPTION_IGNORED:
            self._ignored_at[worker] = no
        elif v.kind == "fatal" and v.pending and no - self._ignored_at.get(worker, -99) <= 50:
            # The exception line of Python's "Exception ignored in" report
            # (its traceback was broken up, e.g. by console line wrapping).
            self._ignored_at.pop(worker, None)
            return
        if request is None:
            request = self.stage_kind == "service" and is_request_source(rest)
        if v.rule in _REQUEST_OUTCOMES or request:
            self._request_at[worker] = no
        if not (v.rule == _ANNOUNCED_ENDING or v.kind == "fatal" and (v.pending or v.recoverable)
                or v.kind == "warning" and (v.rule in _HELD_RULES or v.held)):
            self._list_verdict(no, v.kind, v.rule, rest, worker, v.explanation, v.action)
            return
        # A verdict that waits, or a stop announced again: never an info verdict.
        ev = _event(no, v.kind, v.rule, rest, worker, v.explanation, v.action)
        if v.rule == _ANNOUNCED_ENDING and self._announced_before(ev, no):
            ev.kind = "warning"
            ev.explanation = f"The program announced this same stop before and went on: {ev.explanation}"
            ev.action = "None unless the stage later fails."
            self._emit(ev)
            return
        if v.kind == "fatal" and (v.pending or v.recoverable):
            # Fatal unless the process shows otherwise: it goes on (pending)
            # or restarts what died (recoverable).
            ev.kind = "warning"
            pend = _Pending(ev, self.rules.by_id.get(v.rule), self._now, recoverable=v.recoverable, verdict=v)
            self._pending.append(pend)
            self._watch(no + (_RECOVERY_LINES if v.recoverable else _HOLD_LINES))
            return
        if v.kind == "warning" and (v.rule in _HELD_RULES or v.held):
            # An error that names no family: what the process does next says
            # what it was (see _next_step). Only warnings wait; no fatal does.
            by = speaker(rest, before)
            self._held.append(_Held(ev, self._now, by, named_pids(rest) - {by} if by else named_pids(rest)))
            self._watch(no + _HOLD_LINES)
            return
        self._emit(ev)

    def _list_verdict(
        self, no: int, kind: str, rule: str, rest: str, worker: str | None, explanation: str, action: str
    ) -> None:
        """A line's verdict that needs only counting and listing, as its event: the one place that makes it.

        The slow path (:meth:`_verdict_event`) and the template scan's fast paths
        (:meth:`_apply`, the verdicts :meth:`_remember` kept) all end here.
        """
        if kind == "info" and not self.include_info:
            self.counts["info"] += 1  # counted, but not worth an object nobody reads
            return
        self._emit(_event(no, kind, rule, rest, worker, explanation, action))


    def _continuation(
        self, v: Verdict, worker: str | None, no: int, header: tuple[str | None, str], rest: str = ""
    ) -> Verdict:
        """A line that continues the message of the line before.

        Programs print one message over several lines with the same header
        (``[WARNING] async_io requires libaio ...`` then ``[WARNING] If libaio
        is already installed ...``): the follow-on lines mean what the first
        one meant. A native stack's header without a log header of its own
        (c10's ``Exception raised from f at file:N (most recent call
        first):``) belongs to the record just before it: after a warning
        that a connection is retried it is that warning's detail, not a crash.
        """
        prev = self._last_verdict.get(worker)
        self._last_verdict[worker] = (no, header, v)
        if prev is None:
            return v
        pno, pheader, pv = prev
        if v.rule == _FATAL_LEVEL:
            if (
                header[0] is None
                and not header[1]
                and pno == no - 1
                and pheader[0] is not None
                and pv.kind in ("warning", "benign")
                and rest.rstrip().endswith("(most recent call first):")
            ):
                self._last_verdict[worker] = (no, pheader, pv)
                return pv
            return v
        if v.rule not in _GENERIC_RULES or v.kind != "warning":
            return v
        if (
            header[0] is None
            and not header[1]
            and rest[:1] in (" ", "\t")
            and 0 < no - pno <= _RECORD_LINES
            and pheader[0] in ("info", "debug")
            and pv.kind == "benign"
        ):
            # An indented line without a header of its own continues the
            # INFO record above it (a list the program logged as information:
            # "INFO - In epoch 1 the following errors occurred:" then its
            # items); what was information there is information here.
            self._last_verdict[worker] = (no, pheader, pv)
            return pv
        if pno == no - 1 and pheader == header and header[0] is not None and pv.kind == "benign":
            self._last_verdict[worker] = (no, header, pv)
            return pv
        return v


    # -- early exit -------------------------------------------------------
    def _early_exit(self, exit_code: int | None, signal: int | None, ran: float) -> LogEvent:
        lines = _tail_lines(self.path, 16 * 1024)
        picked: list[str] = []
        usage = next((i for i, ln in enumerate(lines) if ln.lstrip().lower().startswith("usage:")), None)
        if usage is not None:
            picked = lines[usage:]
        else:
            picked = [
                ln
                for ln in lines
                if "rror" in ln or "xception" in ln or "ERROR" in ln or "FATAL" in ln or "Killed" in ln
            ]
        if not picked:
            picked = [ln for ln in lines if ln.strip()][-10:]
        picked = picked[-20:]
        how = f"signal {signal}" if signal is not None else f"exit {exit_code}"
        text = "\n".join(picked) if picked else "(the log is empty)"
        ev = LogEvent(
            line=max(self.line_no - len(picked) + 1, 1),
            end_line=max(self.line_no, 1),
            kind="fatal",
            rule=_EARLY_EXIT,
            text=text[:_MAX_TEXT],
            explanation=f"The stage failed {ran:.0f}s after starting ({how}); these are the lines its log ended with.",
            action="Read these lines: a usage error means the stage's command in pipeline.toml is wrong.",
        )
        self._count(ev)
        if self._unlisted_tail is not None:
            self._make_unlisted_tail()
        self._tail.append(ev)
        return ev


def _message_of(raw: bytes) -> str:
    """A repeated line's message, for a stall message: without escapes, worker prefix, log header."""
    text = strip_ansi(raw.decode("utf-8", "replace"))
    if "^[[" in text:
        text = _CARET_SGR.sub("", text)
    _worker, rest = split_worker(text.strip())
    return strip_log_header(rest).strip() or text.strip()


def _tail_lines(path: str, nbytes: int) -> list[str]:
    """The log's last lines (see :func:`tail_lines`), without blank ones at its end."""
    lines = tail_lines(path, nbytes)
    while lines and not lines[-1].strip():
        lines.pop()
    return lines
