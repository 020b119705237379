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
"""

from __future__ import annotations

import os
import re
import gc
import time
from bisect import bisect_left, insort
from collections import Counter, deque
from itertools import accumulate, compress

from eagle3tui.durations import format_duration
from eagle3tui.logs.eta import Eta, EtaTracker
from eagle3tui.logs.events import LogEvent
from eagle3tui.logs.follower import Chunk, LogFollower, split_segments, strip_ansi, tail_lines
from eagle3tui.logs import catalog, endings, families
from eagle3tui.logs.frames import continues_run, is_jvm_frame, starts_run
from eagle3tui.logs.anatomy import Shape, exception_line, shape
from eagle3tui.logs.history import StageHistory
from eagle3tui.logs.judge import (
    EXPLAIN, Verdict, announces_shutdown, answered_request, gate_bits, is_errorish, is_recovery, is_request_frame,
    is_request_source, judge_line, judge_traceback, make, next_step,
)
from eagle3tui.logs.progress import (
    PROGRESS_SHAPE,
    ProgressUpdate,
    parse_progress,
    serving_figures,
    split_glued,
)
from eagle3tui.logs.repeats import RepeatFilter
from eagle3tui.logs.speaker import named_pids, part_ending, speaker
from eagle3tui.logs.rules import RuleSet, build_ruleset
from eagle3tui.logs.stall import GpuWitness, StallDetector, serving_idle
from eagle3tui.logs.templates import BY_TEMPLATE, QUIET, SENSITIVE, TO_ZERO, Template, TemplateIndex
from eagle3tui.logs.workers import split_worker, strip_log_header
from eagle3tui.logs.scan import (  # the names this module had before they moved
    PROGRESS_MARKERS as _PROGRESS_MARKERS,
    markers as _markers,
)
from eagle3tui.logs.tracebacks import (  # the names this module had before they moved
    OpenTraceback as _OpenTraceback,
    TB_MAX_LINES as _TB_MAX_LINES,
    TB_MAX_FOREIGN as _TB_MAX_FOREIGN,
    TB_MAX_BODY as _TB_MAX_BODY,
    CHAIN as _CHAIN,
    QUOTED_TRACEBACK as _QUOTED_TRACEBACK,
    FRAME_LINE as _FRAME_LINE,
    TB_END_S as _TB_END_S,
    looks_like_exception as _looks_like_exception,
    announces_more as _announces_more,
    wraps_another as _wraps_another,
)
from eagle3tui.logs.settlement import (  # the names this module had before they moved
    RECOVERY_LINES as _RECOVERY_LINES,
    HOLD_LINES as _HOLD_LINES,
    ending_key as _ending_key,
    is_report as _is_report,
    report_goes_on as _report_goes_on,
    Pending as _Pending,
    Held as _Held,
)

# ANSI SGR codes written out in caret notation: "^[[0;36m", "^[[0m".
_CARET_SGR = re.compile(r"\^\[\[[\d;]{0,20}m")

_MAX_TEXT = 2000  # event text kept per event; the full line is in the log
# Blocks this big (catching up) are read by line template, and so is every block once
# this much of the log was read (a live follower's wake-ups: the templates are kept
# across blocks); a short log alone is not worth building the template index for.
_TEMPLATE_BLOCK = 256 * 1024
# While the log said something new this recently, a read is not looked through for
# news again (the stall detector is armed anyway): a chatty log is not read twice.
_NEWS_FRESH_S = 1.0
_UNKNOWN = object()
_NO_BLOCK: tuple = (b"", [0], 0)  # StageLogMonitor._tail_block between template scans
# The ids this module makes itself, checked against the registry (families.toml) when it loads.
_EARLY_EXIT = families.family_id("early-exit")
_ERROR_THEN_ENDED = families.family_id("error-then-ended")
_ERROR_WENT_ON = families.family_id("error-went-on")
_ETA_DRIFT = families.family_id("eta-drift")
_EXCEPTION_PRINTED = families.family_id("exception-printed")
_LOG_RESET = families.family_id("log-reset")
_PROGRESS = families.family_id("progress")
_RECOVERED = families.family_id("recovered")
_SERVICE_SURVIVED = families.family_id("service-survived")
_STACK_TRACE = families.family_id("stack-trace")
_STOP_REQUESTED = families.family_id("stop-requested")
_TRACEBACK = families.family_id("traceback")
_TRACEBACK_HANDLED = families.family_id("traceback-handled")
_TRACEBACK_LOGGED = families.family_id("traceback-logged")
# Pack rules (and judge verdicts) this module acts on by id, checked against the whole catalog.
_ANNOUNCED_ENDING = catalog.known_id("announced-ending")
_EXCEPTION_IGNORED = catalog.known_id("exception-ignored")
_FATAL_LEVEL = catalog.known_id("fatal-level")
_REQUEST_FAILED = catalog.known_id("request-failed")
_STACK_WITH_ERROR = catalog.known_id("stack-with-error")
_UNCAUGHT_EXCEPTION = catalog.known_id("uncaught-exception")
# Verdicts whose event needs more than counting and listing (_verdict_event).
_SPECIAL_RULES = catalog.with_flag("own-event")
# A request's own outcome (it failed, or the client went away): one request, not the server.
_REQUEST_OUTCOMES = catalog.with_flag("request-failure")
# After a line saying a stop was asked of the process (endings.stop_requested), the endings it
# reports in this many lines are that stop. Crashes, OOM, CUDA errors and tracebacks keep
# their verdict: only the rules that say "it ended" or "it exited" are the stop's.
_STOP_LINES = 30
_STOP_ENDINGS = catalog.with_flag("stop-ending")
# A time of day near a line's start ("(raylet) [2025-02-25 19:42:36,213 E ..."): a log record.
_STAMPED = re.compile(r"[^\n:]{0,40}\b\d\d:\d\d:\d\d")  # run by match on the first 64 characters
_GENERIC_RULES = catalog.with_flag("catch-all")  # catch-alls say nothing specific
# Verdicts held to see what comes next: an error-looking line that names no
# family. The process carrying on makes it harmless; the process ending makes
# it the error that ended it.
_HELD_RULES = catalog.with_flag("held")
_RECORD_LINES = 20  # indented lines this close below a header line may belong to its record


def _fmt_s(seconds: float | None) -> str:
    return format_duration(seconds, unknown="?")


def describe_progress(p: ProgressUpdate) -> str:
    """Short human form: ``Loading safetensors checkpoint shards 4/64``."""
    parts = [p.desc or p.source]
    if p.n is not None:
        n = f"{p.n:g}"
        parts.append(f"{n}/{p.total:g}" if p.total is not None else n)
    elif p.percent is not None:
        parts.append(f"{p.percent:g}%")
    if p.metrics and p.source in ("trainer", "metrics", "throughput"):
        parts.append(", ".join(f"{k}={v:g}" for k, v in list(p.metrics.items())[:4]))
    return " ".join(parts)


class StageLogMonitor:
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
        self.stall = StallDetector(stall_floor_s, stall_k)
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
        self.stall.note_activity(self.started_at)

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
        if self.stall.last_activity is not None and now - self.stall.last_activity > self.stall.threshold(tpi):
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
        last = self.stall.last_activity
        return last is not None and self._now - last < min(_NEWS_FRESH_S, self.stall.floor_s / 20)

    def _scan_block(self, data: bytes, first_no: int) -> int:
        """Visit the interesting lines of ``data``; returns its line count."""
        if self.progress_mode == "sample" and data.endswith(b"\n") and (
                len(data) >= _TEMPLATE_BLOCK or self.follower.offset >= _TEMPLATE_BLOCK):
            if self._templates is None:
                self._templates = TemplateIndex(self.rules, _PROGRESS_MARKERS, PROGRESS_SHAPE)
            if self._templates.usable:
                # A block makes hundreds of thousands of short-lived objects
                # (lines, events) and no cycles: the cyclic collector would
                # run hundreds of times over everything alive for nothing.
                paused = gc.isenabled()
                if paused:
                    gc.disable()
                try:
                    return self._scan_templates(data, first_no, self._templates)
                finally:
                    if paused:
                        gc.enable()
        cands = self.rules.scan(data)
        if self.progress_mode == "all":
            prog = _markers().line_starts(data)
        else:
            # The last few progress lines: the newest state for display, and
            # several samples for the ETA's median even when catching up.
            prog = _markers().last_lines(data, self.samples_per_block)
        n = len(data)
        pos = 0
        no = first_no
        ci = 0
        pi = 0
        nc = len(cands)
        npg = len(prog)
        count = data.count
        find = data.find
        while pos < n:
            if not self._tb and no > self._watch_to:
                # Jump to the next line that a rule or progress marker points at.
                nxt = n
                if ci < nc:
                    nxt = cands[ci][0]
                if pi < npg and prog[pi] < nxt:
                    nxt = prog[pi]
                if nxt >= n:
                    no += count(b"\n", pos, n)
                    pos = n
                    break
                if nxt > pos:
                    no += count(b"\n", pos, nxt)
                    pos = nxt
            le = find(b"\n", pos)
            if le < 0:
                le = n
            idx: tuple[int, ...] | None = None
            while ci < nc and cands[ci][0] < pos:
                ci += 1
            if ci < nc and cands[ci][0] == pos:
                idx = cands[ci][2]
                ci += 1
            while pi < npg and prog[pi] < pos:
                pi += 1
            is_prog = pi < npg and prog[pi] == pos
            if is_prog:
                pi += 1
            if idx is not None or is_prog or self._tb or no <= self._watch_to:
                self._line(data[pos:le], no, idx, is_prog)
            pos = le + 1
            no += 1
        return no - first_no

    def _scan_templates(self, data: bytes, first_no: int, tix: TemplateIndex) -> int:
        """:meth:`_scan_block` by line template (see :mod:`templates`): same visits, same events."""
        temps = data.translate(TO_ZERO).split(b"\n")
        temps.pop()  # data ends with a newline
        n = len(temps)
        # A template is as long as its line: the lines' offsets come from the
        # templates' lengths (in C), and only the visited lines are cut out.
        # ``cum[i]`` is the length of the lines before line i, their newlines
        # left out: line i is data[cum[i] + i : cum[i + 1] + i] (i newlines
        # come before it), one iterator layer less than adding 1 per line.
        cum = list(accumulate(map(len, temps), initial=0))
        table = tix.by_template
        try:
            ents = list(map(table.__getitem__, temps))
        except KeyError:  # templates not seen before
            uniq = set(temps)
            new = uniq.difference(table)
            tix.learn(uniq if tix.full(len(new)) else new)
            ents = list(map(table.__getitem__, temps))
        # Lines whose template holds a keyword, but for quiet and inert ones.
        visit = list(compress(range(n), ents))
        if tix.quiet:
            got = ents.count(QUIET)  # each is an info event, counted
            if got:
                self.counts["info"] += got
        prog: set[int] = set()
        for i in self._last_progress_lines(data, temps, tix.progress, self.samples_per_block):
            prog.add(i)
            k = bisect_left(visit, i)
            if k == len(visit) or visit[k] != i:
                insort(visit, i)
        below = 0
        tb = self._tb  # the same dict throughout (only cleared)
        if first_no <= self._watch_to:
            # An error held at the end of the block before: its next lines count.
            j = 0
            while (tb or first_no + j <= self._watch_to) and j < n:
                ej = ents[j]
                if ej is QUIET:
                    self.counts["info"] -= 1  # counted above; _visit counts what it finds
                self._visit(data[cum[j] + j : cum[j + 1] + j], first_no + j, tix.template(ej, temps[j]), j in prog)
                j += 1
            below = j
        counts = self.counts
        tally = dict.fromkeys(("fatal", "warning", "info"), 0)  # the fast path's counts, added at the end
        last_verdict = self._last_verdict
        pywarn_at = self._pywarn_at
        line_rules = tix.line_rules
        value_key = tix.value_key
        cap = self.list_per_rule
        hot_listed = self._hot_listed
        capped: set[Template] = set()  # this block's hot templates whose rule has its listed events
        skipped: dict[Template, int] = {}  # and how many of their lines were only counted
        if cap is not None:
            self._tail_block = (data, cum, first_no)  # what _make_unlisted_tail reads a line from
        for i in visit:
            e = ents[i]
            hot = e.hot if e else None
            if hot is not None and not tb and i >= below and i not in prog and first_no + i > self._watch_to:
                # The hot path: one event of a fixed verdict (made by _list_verdict,
                # as on the general path below, which this skips the branches of).
                rest_off, wspan, generic, category, kind, rule, expl, action, listed = hot
                no = first_no + i
                if listed and cap is not None and (e in capped or kind != "fatal" and hot_listed[kind, rule] >= cap):
                    # Counted, not made (list_per_rule): the line is decoded only when
                    # its worker matters to what follows.
                    capped.add(e)
                    text = None
                    worker = None
                    if wspan is not None and (category or generic and last_verdict):
                        text = data[cum[i] + i : cum[i + 1] + i].decode("utf-8", "replace")
                        worker = text[wspan[0] : wspan[1]]
                    if category:
                        pywarn_at[worker] = no
                    if generic and last_verdict:
                        prev = last_verdict.get(worker)
                        if prev is not None and prev[0] == no - 1 and prev[2].kind == "benign":
                            # may continue a harmless message
                            self._apply(e.layout, e.fixed[0], data[cum[i] + i : cum[i + 1] + i], no, text)
                            continue
                    skipped[e] = skipped.get(e, 0) + 1  # counted at the end of the block
                    if kind != "info":
                        self._unlisted_tail = (i, hot)
                    continue
                raw = data[cum[i] + i : cum[i + 1] + i]
                text = raw.decode("utf-8", "replace")
                worker = text[wspan[0] : wspan[1]] if wspan is not None else None
                if category:
                    pywarn_at[worker] = no
                if generic:
                    prev = last_verdict.get(worker)
                    if prev is not None and prev[0] == no - 1 and prev[2].kind == "benign":
                        self._apply(e.layout, e.fixed[0], raw, no, text)  # may continue a harmless message
                        continue
                if listed:
                    if cap is not None:
                        hot_listed[kind, rule] += 1
                    self._list_verdict(no, kind, rule, text[rest_off:], worker, expl, action)
                else:
                    tally[kind] += 1  # an unlisted event (info): counted only
                continue
            if i < below:
                continue  # visited while a traceback was open
            if not e or tb or i in prog or e.mode == SENSITIVE or first_no + i <= self._watch_to:
                if e is QUIET:
                    counts["info"] -= 1  # counted above; _visit counts what it finds
                self._visit(data[cum[i] + i : cum[i + 1] + i], first_no + i, tix.template(e, temps[i]), i in prog)
            else:
                raw = data[cum[i] + i : cum[i + 1] + i]
                if e.mode == BY_TEMPLATE:
                    idx = e.idx
                    got = e.fixed
                elif e.projection is not None:  # EXACT, same rules on every line
                    idx = e.idx
                    got = e.verdicts.get((idx, raw.translate(e.projection))) if e.verdicts is not None else None
                elif e.one_kw is not None:  # EXACT, one place a keyword with digits can sit
                    start, end, by_kw = e.one_kw
                    ent = by_kw.get(raw[start:end])
                    if ent is None:
                        idx = line_rules(e, raw)
                        table = tix.projection_of(idx) if idx is not None else None
                        if len(by_kw) < 64:
                            # Kept when no rule is named too: an access log's "200"s
                            # are most of its lines.
                            by_kw[raw[start:end]] = (idx, table)
                    else:
                        idx, table = ent
                    if idx is None:
                        continue
                    got = (e.verdicts.get((idx, raw.translate(table) if table is not None else b""))
                           if e.verdicts is not None else None)
                else:  # EXACT: this line's own keywords, and its digits its rules can tell apart
                    idx = line_rules(e, raw)
                    if idx is None:
                        continue
                    got = e.verdicts.get((idx, value_key(idx, raw))) if e.verdicts is not None else None
                no = first_no + i
                if got is None:
                    self._line(raw, no, idx, False, e)
                else:
                    v, fast = got
                    if fast is None:
                        self._apply(e.layout, v, raw, no)
                    elif fast:
                        # The common cases, by _apply's steps without its branches: no
                        # verdict, or a warning, fatal or info event (made by _list_verdict,
                        # as on the slow path); a Python warning and the source line it echoes.
                        rest_off, wspan, generic, category, echo, kind, rule, expl, action, listed = fast
                        if not listed and wspan is None and not (generic or category or echo):
                            if kind is not None:
                                tally[kind] += 1  # an unlisted event (info): counted only
                            continue
                        text = raw.decode("utf-8", "replace")
                        worker = text[wspan[0] : wspan[1]] if wspan is not None else None
                        if echo and 0 < no - pywarn_at.get(worker, -99) <= 3:
                            pass  # the source line Python's warnings module echoes after a warning
                        elif kind is not None:
                            if category:
                                pywarn_at[worker] = no
                            prev = last_verdict.get(worker) if generic else None
                            if prev is not None and prev[0] == no - 1 and prev[2].kind == "benign":
                                self._apply(e.layout, v, raw, no, text)  # may continue a harmless message
                            else:
                                # Not recorded for _continuation: only a benign
                                # verdict on the line just before changes anything.
                                if listed:
                                    self._list_verdict(no, kind, rule, text[rest_off:], worker, expl, action)
                                else:
                                    tally[kind] += 1  # an unlisted event (info): counted only
                        elif category:
                            pywarn_at[worker] = no
            if tb or first_no + i < self._watch_to:
                # Inside a traceback, and while an error is held, every line
                # counts, as in _scan_block.
                j = i + 1
                while (tb or first_no + j <= self._watch_to) and j < n:
                    ej = ents[j]
                    if ej is QUIET:
                        counts["info"] -= 1  # counted above; _visit counts what it finds
                    self._visit(data[cum[j] + j : cum[j + 1] + j], first_no + j, tix.template(ej, temps[j]), j in prog)
                    j += 1
                below = j
        for kind, k in tally.items():
            if k:
                counts[kind] += k
        if skipped:
            unlisted = self.unlisted
            for e, k in skipped.items():
                kind, rule = e.hot[4], e.hot[5]
                counts[kind] += k
                unlisted[kind, rule] += k
        if self._unlisted_tail is not None:
            self._make_unlisted_tail()  # while this block is at hand
        self._tail_block = _NO_BLOCK  # not kept past its scan
        return n

    @staticmethod
    def _last_progress_lines(data: bytes, temps: list[bytes], progress: set[bytes], k: int) -> list[int]:
        """What ``_markers().last_lines(data, k)`` finds, as line indices, by template.

        The last ``k`` lines holding a progress marker within the last 64 KiB
        (or the first of 512 KiB, 4 MiB, ... that holds one), walking back
        from the end over line lengths instead of searching the bytes.
        """
        n = len(data)
        window = 64 * 1024

        def window_start(w: int) -> int:
            start = max(0, n - w)
            if start:
                start = data.find(b"\n", start) + 1 or n
            return start

        start = window_start(window)
        out: list[int] = []
        end = n
        i = len(temps) - 1
        while i >= 0:
            ls = end - len(temps[i]) - 1
            if ls < start:
                if out or start == 0 or window >= n:
                    break
                window *= 8
                start = window_start(window)
                continue
            if temps[i] in progress:
                out.append(i)
                if len(out) == k:
                    break
            end = ls
            i -= 1
        return out[::-1]

    def _make_unlisted_tail(self) -> None:
        """Make the event the hot path last counted without making it, into the tail."""
        assert self._unlisted_tail is not None
        i, hot = self._unlisted_tail
        data, cum, first_no = self._tail_block
        self._unlisted_tail = None
        rest_off, wspan, _generic, _category, kind, rule, expl, action, _listed = hot
        no = first_no + i
        text = data[cum[i] + i : cum[i + 1] + i].decode("utf-8", "replace")
        worker = text[wspan[0] : wspan[1]] if wspan is not None else None
        self._tail.append(_event(no, kind, rule, text[rest_off:], worker, expl, action))

    def _visit(self, raw: bytes, no: int, e: Template | None, is_prog: bool) -> None:
        """One line of a template scan, with what :meth:`RuleSet.scan` would give it."""
        if e is None:
            idx = None
        elif e.mode == BY_TEMPLATE:
            idx = e.idx
        else:
            assert self._templates is not None
            idx = self._templates.line_rules(e, raw)
        if idx is None and not is_prog and not self._tb and no > self._watch_to:
            return
        self._line(raw, no, idx, is_prog)

    def _apply(self, layout: tuple, verdict: Verdict | None, raw: bytes, no: int, text: str | None = None) -> None:
        """What :meth:`_line` does for a line whose template's meaning is known."""
        rest_off, wspan, src, level, category, recovery, request, echo = layout
        worker = None
        if wspan is not None:
            if text is None:
                text = raw.decode("utf-8", "replace")
            worker = text[wspan[0] : wspan[1]]
        if recovery and self._pending:
            self._recovered(no)
        if no <= self._watch_to and (self._held or self._pending):
            if text is None:
                text = raw.decode("utf-8", "replace")
            self._next_step(text[rest_off:], no, text[:rest_off])
        if echo and 0 < no - self._pywarn_at.get(worker, -99) <= 3:
            return  # the source line Python's warnings module echoes after a warning
        if category:
            self._pywarn_at[worker] = no
        if verdict is None:
            return
        if text is None:
            text = raw.decode("utf-8", "replace")
        rest = text[rest_off:]
        source = src if type(src) is str else rest[src[0] : src[1]]
        v = verdict
        if v.kind == "warning" and v.rule in _GENERIC_RULES or v.rule == _FATAL_LEVEL and level is None:
            v = self._continuation(v, worker, no, (level, source), rest)
        else:
            self._last_verdict[worker] = (no, (level, source), v)  # what _continuation records
        if request or v.rule in _SPECIAL_RULES or v.pending or v.recoverable or v.rule in _HELD_RULES or v.held:
            self._verdict_event(v, rest, worker, no, request, text[:rest_off])
            return
        self._list_verdict(no, v.kind, v.rule, rest, worker, v.explanation, v.action)

    def _remember(self, tmpl: Template, key: object, text: str, worker: str | None, rest: str, sh: Shape,
                  verdict: Verdict | None) -> None:
        """Keep what this line means for the other lines of its template."""
        if tmpl.layout is None:
            rest_off = len(text) - len(rest)
            if text[rest_off:] != rest:
                return
            wspan = None
            if worker is not None:
                a = text.rfind(worker, 0, rest_off)
                if a < 0:
                    return
                wspan = (a, a + len(worker))
            src: str | tuple[int, int] = sh.source
            if any(c.isdigit() for c in src):
                a = rest.find(src)
                if a < 0:
                    return
                src = (a, a + len(src))
            tmpl.layout = (
                rest_off,
                wspan,
                src,
                sh.level,
                bool(sh.category),
                is_recovery(rest),
                self.stage_kind == "service" and is_request_source(rest),
                rest.startswith("  "),
            )
            tmpl.verdicts = {}
        assert tmpl.verdicts is not None
        if len(tmpl.verdicts) < 4096:
            rest_off, wspan, _src, _level, category, recovery, request, echo = tmpl.layout
            fast: tuple | None = None  # None: _apply; (): nothing to do; else what the scan needs
            if not recovery and not request:
                if verdict is None:
                    fast = (rest_off, wspan, False, category, echo, None, "", "", "", False) if category or echo else ()
                elif (verdict.kind in ("fatal", "warning", "info") and verdict.rule not in _SPECIAL_RULES
                      and verdict.rule not in _HELD_RULES and not verdict.held and not verdict.pending
                      and not verdict.recoverable):
                    generic = verdict.kind == "warning" and verdict.rule in _GENERIC_RULES
                    listed = verdict.kind != "info" or self.include_info
                    fast = (rest_off, wspan, generic, category, echo, verdict.kind, verdict.rule,
                            verdict.explanation, verdict.action, listed)
            tmpl.verdicts[key] = (verdict, fast)
            if key is None:
                tmpl.fixed = (verdict, fast)
                if fast and fast[5] is not None and not fast[4]:
                    tmpl.hot = (fast[0], fast[1], fast[2], fast[3], *fast[5:])
        if key is None and not any(tmpl.layout[4:]):
            # No flag: its lines change nothing (no verdict) or only the info
            # count (an info verdict nobody lists), whatever comes before.
            if verdict is None:
                if self._templates is not None:
                    self._templates.mark(tmpl, quiet=False)
            elif (verdict.kind == "info" and not self.include_info and verdict.rule not in _SPECIAL_RULES
                  and not verdict.pending and not verdict.recoverable and self._templates is not None
                  and len(self._templates.quiet) < 32):
                self._templates.mark(tmpl, quiet=True)

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

    def _announced_before(self, ev: LogEvent, no: int) -> bool:
        """Whether the same worker announced this stop before: it is still running, so it went on from that one."""
        key = _ending_key(ev)
        for p in [p for p in self._pending if p.event.rule == _ANNOUNCED_ENDING and _ending_key(p.event) == key]:
            self._pending.remove(p)
            self._went_on(p, f"it announced the same stop again on line {no}")
        return key in self._unbelieved

    def _watch(self, to: int) -> None:
        """Read every line up to line ``to`` (what a held or pending event turns into depends on them)."""
        self._watch_to = max(self._watch_to, to)

    def _next_step(self, rest: str, no: int, before: str = "") -> None:
        """A line read while an error is held or a failure pending: did the process go on?

        ``before``: what precedes ``rest`` on the line (a worker prefix names its speaker).
        """
        if self._pending and rest.strip() and any(_is_report(p.event) for p in self._pending):
            self._after_report(rest, no)
        if self.stage_kind == "service" and self._pending and answered_request(rest):
            # A part of a server died (a model runner, a worker) and the server
            # then answered a request, even with a 500: the server outlived it.
            # Not a death that said the server itself is going down.
            self._recovered(no, f"the server answered a request after it (line {no})", answered=True)
        step = next_step(rest)
        if step is None:
            return
        # Live, a stop the user asked for prints the same words as a watchdog's
        # stop: there the exit status (finish) says whether it ended in failure.
        if self._held and not (step == "ending" and self.exit_known):
            keep: list[_Held] = []
            by = speaker(rest, before) if step == "ending" else None
            for h in self._held:
                if step == "ending" and part_ending(h.by, h.about, rest, by):
                    # A worker's own end, said by the worker that the held error named (the
                    # master's "WORKER TIMEOUT (pid:N)", then "[N] Worker exiting"), or that
                    # calls itself one: the master that wrote the error may still go on.
                    keep.append(h)
                elif h.event.line < no:
                    self._settle_held(h, step, no)
                else:
                    keep.append(h)
            self._held = keep
        if self._pending and step in ("restarted", "serving"):
            keep_p: list[_Pending] = []
            for p in self._pending:
                if p.event.end_line >= no or no - p.event.end_line > _HOLD_LINES:
                    keep_p.append(p)
                elif p.recoverable:
                    keep_p.append(p)  # _recovered settles it
                else:
                    self._went_on(p, f"a part started again or the server answered (line {no})")
            self._pending = keep_p
            if step == "restarted":
                self._recovered(no)

    def _after_report(self, rest: str, no: int) -> None:
        """A line after a command's final error report: ordinary output says the process went on.

        The report is the command's last word only if nothing ordinary follows: more of
        the report (another error line, apt's "N:" notes, git's "Unable to checkout ...")
        is error-looking; a line that is not ("Submitted batch job 3310344", "running
        egg_info", a container's id) is the process, or the script around the command,
        carrying on.
        """
        sh = shape(rest)
        if sh.level in ("error", "fatal", "warning") or sh.category or endings.command_report(rest):
            return
        body = sh.body.strip()
        if is_errorish(body, gate_bits(body)) or _report_goes_on(body) or next_step(rest, sh) == "ending":
            return  # more of the report, or the ending itself ("Shutting down shards")
        keep: list[_Pending] = []
        for p in self._pending:
            if _is_report(p.event) and p.event.end_line < no:
                self._went_on(p, f"it printed ordinary output after it, line {no}")
            else:
                keep.append(p)
        self._pending = keep

    def _settle_held(self, h: _Held, outcome: str | None, no: int) -> None:
        """Emit a held error as what ``outcome`` (the next step seen, or None) makes it."""
        ev = h.event
        if outcome in ("ending", "exit"):
            ev.kind = "fatal"
            ev.rule = _ERROR_THEN_ENDED
            how = "exited with a failure" if outcome == "exit" else f"was being stopped (line {no})"
            ev.explanation = f"The process {how} right after this error, so it is what ended it. {ev.explanation}"
            ev.action = "Read this error: it is the last one before the process ended; fix its cause and rerun."
        elif outcome is not None and h.by is not None and h.about:
            # The writer reported another process's failure (gunicorn's master: "WORKER
            # TIMEOUT (pid:N)", "Worker (pid:N) was sent code 134!") and went on: the
            # server outlived that part, the request(s) the part held did not.
            ev.kind = "warning"
            ev.rule = _SERVICE_SURVIVED if self.stage_kind == "service" else _RECOVERED
            what = "a replacement started" if outcome == "restarted" else "the rest went on"
            ev.explanation = (f"Process {h.by} reported that process {', '.join(sorted(h.about))} failed or was "
                              f"stopped, and {what} (line {no}): {ev.explanation}")
            ev.action = "None unless it keeps happening; what that process was serving failed."
        elif outcome is not None:
            ev.kind = "benign"
            ev.rule = _ERROR_WENT_ON
            what = {
                "restarted": "a part started again",
                "serving": "the server answered requests",
                "progress": "progress advanced",
            }.get(outcome, "it went on with its ordinary output")
            ev.explanation = f"The process carried on after this error ({what}, line {no}); it did not stop the job."
            ev.action = "None unless it repeats or the stage later fails."
        self._emit(ev)

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

    def _recovered(self, no: int, why: str | None = None, answered: bool = False) -> None:
        """A restart/retry line (or ``why``): recoverable failures just before it were survived.

        ``answered``: the evidence is a request the server answered, which says
        nothing for a death that announced the server's own shutdown.
        """
        keep: list[_Pending] = []
        for p in self._pending:
            if (p.recoverable and no - p.event.end_line <= _RECOVERY_LINES
                    and not (answered and announces_shutdown(p.event.text))):
                ev = p.event
                ev.kind = "warning"
                ev.rule = _SERVICE_SURVIVED if self.stage_kind == "service" else _RECOVERED
                after = why or f"a restart or retry followed (line {no})"
                ev.explanation = f"Recovered: {p.event.explanation} {after[:1].upper()}{after[1:]}."
                ev.action = "None unless it keeps happening."
                self._emit(ev)
            else:
                keep.append(p)
        self._pending = keep

    def _progress(self, rest: str, worker: str | None, no: int, seg: str, force: bool = False) -> bool:
        """Parse ``rest`` as progress and emit it; False when it is none."""
        upd = parse_progress(rest.strip(), worker)
        if (
            (upd is None or upd.n is None)
            and worker is None
            and (seg[:1].isdigit() or seg[:1] == "[" and seg[1:2].isdigit())
        ):
            # Peeling took a boosting round's number for a stamp or a rank prefix
            # ("[163]\tname0's multi_logloss: 0.33", "0:\tlearn: 56.259\ttest: 56.098"):
            # the whole record says which round it is.
            whole = parse_progress(seg.strip(), worker)
            if whole is not None and whole.n is not None:
                upd = whole
        if upd is None:
            return False
        self.progress = upd
        self.progress_line = no
        # Stall news: a state that moved, not a bar or a stats line redrawn the same.
        key = (upd.desc, upd.n, upd.total, upd.percent, tuple(upd.metrics.items()))
        if self._progress_keys.get(worker) != key:
            if len(self._progress_keys) >= 64:
                self._progress_keys.clear()
            self._progress_keys[worker] = key
            self._moved = True
        if upd.metrics:
            figs = serving_figures(upd.metrics)
            if figs:
                self.figures.update(figs)
                self.figures_line = no
                if self.stage_kind == "service" and figs.get("running_reqs") == 0 and not figs.get("queued_reqs"):
                    # An idle server saying so (no request running or waiting) is
                    # healthy, not hung: its unchanging stats are news.
                    self._moved = True
        if upd.n != 0:
            # A counter still at zero did no work since: tqdm draws its bar once
            # more when an exception unwinds through it ("Processed prompts: 0%
            # 0/1" under the traceback), which is no sign the process went on.
            self.worked_line = no
            for p in self._pending:
                p.progress_after = True
        if self._held:
            keep = [h for h in self._held if h.event.line >= no]
            for h in self._held:
                if h.event.line < no:
                    self._settle_held(h, "progress", no)
            self._held = keep
        crossed = self.eta_tracker.feed(upd, self._now)
        eta = self.eta_tracker.eta
        projected = eta.projected_s if eta else None
        drift = eta.drift if eta else None
        self._emit(
            LogEvent(
                line=no,
                end_line=no,
                kind="progress",
                rule=_PROGRESS,
                text=rest.strip()[:_MAX_TEXT],
                worker=worker,
                explanation=describe_progress(upd),
                progress=upd,
                projected_s=projected,
                drift=drift,
                has_estimate=self.eta_tracker.estimate_s is not None,
            )
        )
        if crossed and eta is not None and drift is not None:
            tpi = eta.time_per_item
            rate = f"{tpi:.1f} s/{upd.unit}" if tpi and tpi >= 1 else (f"{1 / tpi:.2f} {upd.unit}/s" if tpi else "?")
            msg = (
                f"{describe_progress(upd)}: projected {_fmt_s(projected)} against an estimate of "
                f"{_fmt_s(eta.estimate_s)} ({drift:+.0%})"
            )
            self._emit(
                LogEvent(
                    line=no,
                    end_line=no,
                    kind="warning",
                    rule=_ETA_DRIFT,
                    text=msg,
                    worker=worker,
                    explanation=f"At the observed rate ({rate}) this will take {drift:+.0%} longer than estimated.",
                    action="Expect a later finish; if the rate is abnormal, check disk/network throughput or the GPUs.",
                    progress=upd,
                    projected_s=projected,
                    drift=drift,
                )
            )
        return True

    # -- tracebacks -------------------------------------------------------
    def _open_traceback(self, worker: str | None, no: int, rest: str) -> None:
        old = self._tb.pop(worker, None)
        if old is not None:
            self._close_open(old, no)
        sh = shape(rest)
        self._tb[worker] = _OpenTraceback(
            start=no,
            worker=worker,
            first_text=rest.strip(),
            ignored=no - self._ignored_at.get(worker, -99) <= 3,
            request=no - self._request_at.get(worker, -99) <= 2 or is_request_source(rest),
            record=(sh.level, sh.source) if sh.level and sh.source else None,
        )

    def _continue_chain(self, worker: str | None, no: int, rest: str) -> None:
        last = self._last_closed.get(worker)
        start = no
        if last is not None:
            pend, end, first = last
            if no - end <= 3 and pend is not None and pend in self._pending:
                # One event for the whole chain, judged by its last exception.
                self._pending.remove(pend)
                start = first
        old = self._tb.pop(worker, None)
        if old is not None:
            self._close_open(old, no)
        self._tb[worker] = _OpenTraceback(
            start=start,
            worker=worker,
            first_text=rest.strip(),
            request=bool(old and old.request) or no - self._request_at.get(worker, -99) <= 12,
        )

    def _tb_feed(self, worker: str | None, rest: str, no: int) -> bool:
        """Feed one line to the open traceback of ``worker``; True if it belongs to it."""
        tb = self._tb[worker]
        body = strip_log_header(rest)
        tb.lines += 1
        if tb.lines > _TB_MAX_LINES:
            del self._tb[worker]
            return False
        if tb.headless:
            return self._run_feed(tb, worker, rest, body, no)
        if tb.record is not None and not tb.exc_no and body == rest and rest[:1] not in " \t":
            # A raw line (no logger header) of the same process in the middle of a traceback its
            # logger writes record by record: another stream (multiprocessing's "Process
            # EngineCore:" on stderr) interleaved, not the traceback's end. Read on its own; the
            # traceback stays open for its record's next line. A line of another logger record
            # is the process going on, and ends the traceback as before.
            sh = shape(rest)
            if sh.level is None and not sh.source and tb.foreign < _TB_MAX_FOREIGN:
                tb.foreign += 1
                tb.lines -= 1
                return False
        tb.foreign = 0
        if tb.body:
            return self._body_feed(tb, worker, rest, body, no)
        if tb.exc_no:
            # The line after a wrapper's exception line. More frames mean the
            # traceback goes on: Ray prints "RayTaskError(ActorUnavailableError):
            # ray::f()" and then the remote frames, down to the exception that
            # says what went wrong. Anything else: it ended at that line.
            if _FRAME_LINE.match(body):
                tb.exc_text, tb.exc_no = "", 0
                return True
            del self._tb[worker]
            self._close_traceback(tb, tb.exc_text, tb.exc_no)
            return False
        if not body.strip() or body[0] in " \t" or body.startswith(_CHAIN):
            if not tb.request and self.stage_kind == "service" and is_request_frame(body):
                tb.request = True
            return True
        if _looks_like_exception(body) and body.rstrip().endswith(_QUOTED_TRACEBACK):
            # "FileNotFoundError: Traceback (most recent call last):": the
            # exception's message quotes the traceback of where it was raised
            # (a DataLoader worker, a subprocess). The exception line that
            # says what went wrong ends that quote: read on to it.
            return True
        if _looks_like_exception(body) and _wraps_another(body):
            # An exception that names the one it wraps (Ray's "RayTaskError(
            # ActorUnavailableError): ray::f()"): the frames of where that one
            # was raised may follow, down to its own line. Ends here if not.
            tb.exc_text, tb.exc_no, tb.exc_at = body.strip(), no, self._now
            return True
        if _looks_like_exception(body) and _announces_more(body):
            # "RuntimeError: Ninja build failed. Ninja output:": Python prints an exception's
            # message as it is, newlines included, and this one says the rest follows (a
            # build's output, SGLang's "Possible solutions:" list). Those lines are the
            # message, not the process going on: read on (see _body_feed).
            tb.exc_text, tb.exc_no, tb.exc_at, tb.body = body.strip(), no, self._now, 1
            return True
        del self._tb[worker]
        if _looks_like_exception(body):
            # The first unindented line is the exception line ("KeyError: 'x'").
            self._close_traceback(tb, body.strip(), no)
            return True
        # Something else interrupted it (another process writing to the same
        # log, a truncated traceback): close it without an exception line and
        # let this line be read on its own.
        self._close_traceback(tb, tb.first_text, no - 1)
        return False

    def _body_feed(self, tb: _OpenTraceback, worker: str | None, rest: str, body: str, no: int) -> bool:
        """One more line after an exception line whose message goes on: True if it is that message.

        The message is another program's output, blank lines included. It ends at a log
        record (a logger header or a time stamp: a process logging, its own or another's),
        at a frame or an exception line (a traceback, not a message), at a chained exception
        ("During handling of the above exception"), or after _TB_MAX_BODY lines; the
        traceback then ends at the message's last line.
        """
        sh = shape(rest) if body.strip() else None
        if (
            tb.body < _TB_MAX_BODY
            and not body.startswith((_CHAIN[0], _CHAIN[1], _QUOTED_TRACEBACK))
            and (sh is None or (
                sh.level is None and not sh.source and sh.body == rest and not _STAMPED.match(body, 0, 64)
                and not body.lstrip().startswith("File \"") and exception_line(body) is None
            ))
        ):
            tb.body += 1
            if sh is not None:
                tb.exc_no, tb.exc_at = no, self._now  # blank lines are not its end
            return True
        del self._tb[worker]
        self._close_traceback(tb, tb.exc_text, tb.exc_no)
        return False

    def _end_tracebacks_of_others(self, worker: str | None) -> None:
        """Another writer's line after a traceback's exception line: that traceback ended there."""
        for w in [w for w, tb in self._tb.items() if tb.exc_no and w != worker]:
            tb = self._tb.pop(w)
            self._close_traceback(tb, tb.exc_text, tb.exc_no)

    def _open_run(self, worker: str | None, no: int, rest: str, body: str) -> None:
        """A frame (or a dump's head) with no traceback open: a run of frames begins."""
        sh = shape(rest)
        tb = _OpenTraceback(
            start=no, worker=worker, first_text=body.strip(), headless=True, last_frame=no, level=sh.level,
            exc_at=self._now,
            # The request path shows in a frame, in the logger's source on the line
            # ("[serving_chat.py:120]"), or in the line just above (as for a traceback).
            request=self.stage_kind == "service" and (
                is_request_frame(body) or is_request_source(rest, sh) or no - self._request_at.get(worker, -99) <= 2
            ),
        )
        before = self._record_before(worker, no)
        if body.startswith("Stack (most recent call last)"):
            # Python logging's stack_info=True: where a record was logged from, no failure.
            tb.detail = True
        elif before is not None:
            # The stack of the record just above it (a crash banner, "panic:", an exception
            # line, an error or warning record): that record's verdict stands for both.
            tb.detail = True
            what, obj = before
            if what == "pending" and is_jvm_frame(body):
                self._printed_exception(obj)
            elif what == "held" and not tb.request and self.stage_kind != "service":
                # (In a service an error record keeps its own rule: a failure there is fatal
                # only if the server stops serving, which the stack does not say.)
                self._error_with_stack(obj)
        self._tb[worker] = tb

    def _record_before(self, worker: str | None, no: int) -> tuple[str, object] | None:
        """The judged record a run of frames starting on line ``no`` belongs to, if any.

        Up to 3 lines above (a crash banner, then Go's "[signal ...]" line and a blank
        line, then the goroutine's stack), written by the same worker.
        """
        for p in self._pending:
            if p.event.worker == worker and 0 < no - p.event.end_line <= 3:
                return ("pending", p)
        for h in self._held:
            if h.event.worker == worker and 0 < no - h.event.end_line <= 3:
                return ("held", h)
        if self._unlisted_tail is not None:
            self._make_unlisted_tail()
        for ev in reversed(self._tail):
            if ev.worker == worker and 0 < no - ev.end_line <= 3:
                return ("emitted", ev)
            break
        return None

    def _printed_exception(self, p: _Pending) -> None:
        """An exception line followed by the JVM's ``at`` frames, without "Exception in thread".

        The JVM's default handler reports an uncaught exception as ``Exception in thread
        "main" X: ...``; a bare ``X: ...`` with its frames was printed by the program
        (``printStackTrace``, a logger), which caught it. Held like an error line: a
        failing exit right after it makes it the error that ended the process.
        """
        if p.verdict is None or p.verdict.rule != _UNCAUGHT_EXCEPTION or p.event.text.startswith("Exception in"):
            return
        self._pending.remove(p)
        ev = p.event
        ev.kind, ev.rule = "warning", _EXCEPTION_PRINTED
        ev.explanation, ev.action = EXPLAIN[_EXCEPTION_PRINTED]
        self._held.append(_Held(ev, self._now))
        self._watch(ev.end_line + _HOLD_LINES)

    def _error_with_stack(self, h: _Held) -> None:
        """An error line held to see what comes next, and a stack right under it.

        A record that carries a stack dump (a sanitizer's report, ``log.error(..., e)``) is
        a crash report when it is the last thing the process wrote: pending like a
        traceback, a warning if the process goes on.
        """
        self._held.remove(h)
        ev = h.event
        v = make("fatal", _STACK_WITH_ERROR, pending=True)
        ev.kind, ev.rule = "warning", v.rule
        ev.explanation, ev.action = v.explanation, v.action
        self._pending.append(_Pending(ev, None, self._now, verdict=v))
        self._watch(ev.end_line + _HOLD_LINES)

    def _run_feed(self, tb: _OpenTraceback, worker: str | None, rest: str, body: str, no: int) -> bool:
        """One more line while a run of frames is open: True if it belongs to the run."""
        if body.startswith(_CHAIN) or (
            tb.lines > 1 and not body.startswith((" ", "\t")) and _looks_like_exception(body)
            and body.split(":", 1)[0].strip().endswith(("Error", "Exception", "Interrupt", "Exit"))
        ):
            del self._tb[worker]
            if body.startswith(_CHAIN):
                # The cut traceback's chain goes on: its frames were one traceback.
                self._close_run(tb)
                return False
            # Python's exception line: the run was a traceback with its header cut off.
            tb.headless = False
            self._close_traceback(tb, body.strip(), no)
            return True
        if not continues_run(body):
            del self._tb[worker]
            self._close_run(tb)
            return False
        if body.strip():
            tb.last_frame = no
            tb.exc_at = self._now
        if not tb.request and self.stage_kind == "service" and (is_request_frame(body) or is_request_source(rest)):
            tb.request = True
        return True

    def _close_run(self, tb: _OpenTraceback) -> None:
        """A run of frames ended: one event, unless it is the stack of a record judged above it."""
        if tb.detail:
            return
        ev = LogEvent(line=tb.start, end_line=max(tb.last_frame, tb.start), kind="warning", rule=_STACK_TRACE,
                      text=tb.first_text[:_MAX_TEXT], worker=tb.worker, explanation="")
        if tb.request:
            v = make("warning", _REQUEST_FAILED)
        elif tb.level in ("warning", "info", "debug"):
            # Logged with a stack at a level that says the program went on (exc_info=True at WARNING).
            v = Verdict("warning", _STACK_TRACE, "A stack trace logged at the program's "
                        f"{tb.level.upper()} level: it reported a caught exception and went on.",
                        "None unless it repeats or the stage later fails.")
        else:
            v = make("fatal", _STACK_TRACE, pending=True)
        ev.rule, ev.explanation, ev.action = v.rule, v.explanation, v.action
        if not v.pending:
            ev.kind = v.kind
            self._emit(ev)
            return
        self._pending.append(_Pending(ev, None, self._now, verdict=v))
        self._watch(ev.end_line + _HOLD_LINES)

    def _end_quiet_tracebacks(self) -> None:
        """A traceback with its exception line read and nothing after it for a while has ended."""
        for w in [w for w, tb in self._tb.items() if tb.exc_no and self._now - tb.exc_at >= _TB_END_S]:
            tb = self._tb.pop(w)
            self._close_traceback(tb, tb.exc_text, tb.exc_no)
        # A run of frames the process wrote nothing after for a while: it ends there
        # (what it means is settled as for a traceback: by what comes next, or the exit).
        for w in [w for w, tb in self._tb.items() if tb.headless and self._now - tb.exc_at >= _TB_END_S]:
            self._close_run(self._tb.pop(w))

    def _close_open(self, tb: _OpenTraceback, no: int) -> None:
        """Close a traceback that line ``no`` interrupts: at its exception line if it had one."""
        if tb.headless:
            self._close_run(tb)
        elif tb.exc_no:
            self._close_traceback(tb, tb.exc_text, tb.exc_no)
        else:
            self._close_traceback(tb, tb.first_text, no - 1)

    def _close_traceback(self, tb: _OpenTraceback, exc_line: str, end: int) -> None:
        rule = self.rules.classify(exc_line, self.stage)
        if rule is not None and rule.id == _TRACEBACK:
            rule = None
        ev = LogEvent(
            line=tb.start,
            end_line=max(end, tb.start),
            kind="fatal",
            rule=_TRACEBACK,
            text=exc_line[:_MAX_TEXT],
            worker=tb.worker,
            explanation="",
        )
        ignored = tb.ignored or tb.start - self._ignored_at.get(tb.worker, -99) <= 3
        v = judge_traceback(exc_line, rule, ignored=ignored, request=tb.request, stage_kind=self.stage_kind,
                            warned=tb.warned)
        if ignored and exception_line(strip_log_header(exc_line)) is not None:
            self._ignored_at.pop(tb.worker, None)  # its exception line is consumed
        if v is None and tb.record is not None and tb.record[0] in ("warning", "info", "debug"):
            # Every line of it carries a logger's header at a level below ERROR (torch._dynamo's
            # "[WARNING] WON'T CONVERT ... Traceback ..."): the program caught the exception and
            # logged it as a warning on its way on. An uncaught exception is printed raw by
            # Python, or by a logger at ERROR. Judged now, by the level its program gave it, not
            # by what comes next: a death soon after it (a job killed at its time limit) is not
            # this exception's doing. (_close_run judges a headless stack the same way.)
            v = Verdict("warning", _TRACEBACK_LOGGED, "A traceback logged at the program's "
                        f"{tb.record[0].upper()} level: it reported a caught exception and went on.",
                        "None unless it repeats or the stage later fails.")
        if v is not None:
            # The exception line itself says what happened (OOM, NCCL, a
            # harmless optional import, a failed request): no need to wait.
            ev.kind = v.kind
            ev.rule = v.rule
            ev.explanation = v.explanation
            ev.action = v.action
            self._emit(ev)
            self._last_closed[tb.worker] = (None, end, tb.start)
            return
        ev.kind = "warning"
        ev.explanation = "Python exception; judged when it is clear whether the process went on."
        if rule is not None and rule.id in _GENERIC_RULES:
            rule = None
        pend = _Pending(ev, rule, self._now)
        self._pending.append(pend)
        self._watch(end + _HOLD_LINES)
        self._last_closed[tb.worker] = (pend, end, tb.start)

    def _settle_went_on(self) -> None:
        if self._held:
            # Held errors that saw nothing telling within their window stay
            # what they looked like.
            keep_h: list[_Held] = []
            for h in self._held:
                if self.line_no - h.event.line >= _HOLD_LINES or self._now - h.closed_at >= self.went_on_s:
                    self._settle_held(h, None, self.line_no)
                else:
                    keep_h.append(h)
            self._held = keep_h
        if not self._pending:
            return
        keep: list[_Pending] = []
        for p in self._pending:
            lines_after = self.line_no - p.event.end_line
            if p.recoverable:
                if lines_after > _RECOVERY_LINES or self._now - p.closed_at >= self.recover_s:
                    # Nothing restarted it, in a few lines or seconds: a death
                    # followed by silence (a hung job) must still be reported.
                    self._emit(self._as_fatal(p))
                else:
                    keep.append(p)
                continue
            if p.progress_after or (
                lines_after >= self.went_on_lines and self._now - p.closed_at >= self.went_on_s
            ):
                self._went_on(p, "")
            else:
                keep.append(p)
        self._pending = keep

    def _went_on(self, p: _Pending, why: str) -> None:
        """Emit a pending failure the process went on after, as a warning."""
        ev = p.event
        ev.kind = "warning"
        if ev.rule == _ANNOUNCED_ENDING:
            self._unbelieved.add(_ending_key(ev))
        after = f" ({why})" if why else ""
        if ev.rule == "traceback":
            ev.rule = _TRACEBACK_HANDLED
            ev.explanation = (
                f"An exception was logged but the process went on{after} (it was caught, or only one "
                "request or task failed)."
            )
        else:
            ev.explanation = f"The process went on after this{after}: {ev.explanation}"
        ev.action = "None unless it repeats or the stage later fails."
        self._emit(ev)

    def _as_fatal(self, p: _Pending) -> LogEvent:
        """The pending event as the fatal event it turned out to be."""
        ev = p.event
        ev.kind = "fatal"
        v = p.verdict
        if v is not None:
            ev.rule, ev.explanation, ev.action = v.rule, v.explanation, v.action
        return ev

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


def _event(no: int, kind: str, rule: str, rest: str, worker: str | None, explanation: str, action: str) -> LogEvent:
    """One line's event of a verdict: its text is the line after its header, stripped and cut to _MAX_TEXT."""
    return LogEvent(no, no, kind, rule, rest.strip()[:_MAX_TEXT], worker, explanation, action)


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
