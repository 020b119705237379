"""Per-attempt log supervision for the driver: events in, alerts out.

``StageWatch`` owns the log monitor of one running attempt (follower,
classifier, progress/ETA and stall detection live in ``eagle3tui.logs``) and
turns its events into alert tuples ``(level, kind, message, details)``. On
reattach it catches up from the start of the attempt but does not repeat
alerts for lines it already reported (``<attempt>.watch.json``).
"""

from __future__ import annotations

import functools
import json
import os
import re
import time
from pathlib import Path
from typing import Any

from eagle3tui.atomic import atomic_write_json
from eagle3tui.config import PipelineConfig, StageConfig
from eagle3tui.logs import catalog, families
from eagle3tui.logs.events import LogEvent
from eagle3tui.logs.follower import tail_lines
from eagle3tui.logs.history import StageHistory
from eagle3tui.logs.monitor import StageLogMonitor
from eagle3tui.logs.logger_source import next_from_same_source
from eagle3tui.logs.ranks import CONSEQUENCE_RULES, Incident, find_incident, launcher_failed_line, peer_lost
from eagle3tui.logs.rules import RuleSet, build_ruleset, compile_user_pattern
from eagle3tui.supervisor.launcher import attempt_age_s
from eagle3tui.supervisor.backlog import BacklogScout, FatalAhead
from eagle3tui.supervisor.fatal_peek import FatalPeek
from eagle3tui.supervisor.records import RunRecord

AlertTuple = tuple[str, str, str, dict[str, Any]]
# The ids this module makes or reads by name, checked against the registry when it loads.
_LOG_RESET = families.family_id("log-reset")
_EARLY_EXIT = families.family_id("early-exit")
_TRACEBACK = families.family_id("traceback")
_NONZERO_EXIT = families.family_id("nonzero-exit")
_ETA_DRIFT = families.family_id("eta-drift")
_QUIET_BUT_WORKING = families.family_id("quiet-but-working")

# The id sets below are the registry's flags (eagle3tui/logs/families.toml and the packs).
STALL_RULES = catalog.with_flag("stall")
# A launcher's failure report (torchrun's ChildFailedError box): its first line
# is the alert; the rank lines within this many lines after it are part of it.
LAUNCHER_REPORT_RULE = catalog.one_with("launcher-report")
LAUNCHER_REPORT_LINES = 40
# Line kinds the log panes mark (the rest is ordinary output).
VERDICT_KINDS = frozenset({"fatal", "warning", "benign", "error"})
# Fatal rules whose report spans several matching lines: alerted once per attempt.
ONCE_PER_ATTEMPT = catalog.with_flag("once-per-attempt")
# Fatal events this close (lines between them) are one error written in
# parts: a logged message and the traceback under it, an exception and the
# subprocess traceback quoted in its message. The cause is all of them.
CAUSE_GAP_LINES = 2
# A launcher's kill lines are its reaction to something else (a rank that
# failed, a signal it received itself); when nothing fatal follows them, the
# launcher's own next line says which.
LAUNCHER_KILL_RULE = catalog.one_with("launcher-kill")
# A service's traceback judged one request's failure (its frames are a request
# handler's): the server lived on after it, unless it exited right there.
REQUEST_FAILURE_RULES = catalog.with_flag("request-failure")
# The rule pack of the program that runs the job (Slurm's own lines in its output):
# an ending it reports at the end of a log with nothing fatal explains the failure.
RUNNER_RULE_SOURCE = "slurm"
# Bytes of log one poll reads at most: a burst (a catch-up, a stage writing GBs)
# is read over several passes, so one stage never holds the driver (nor its
# memory: a poll's events live until its alerts are out) for the whole backlog.
POLL_BYTES = 4 << 20
# The alerted mark of a poll that wrote no alert is saved at most this often: a
# driver killed meanwhile reads those lines again and finds no alert in them.
MARK_EVERY_S = 0.5
# A live wake-up reads a few lines: of its progress lines only the newest is
# parsed (the state shown, the ETA's next sample); a read this big or bigger
# (catching up) samples the monitor's usual few per block.
LIVE_READ_BYTES = 64 * 1024


def ruleset_for(config: PipelineConfig) -> RuleSet:
    """The builtin rules plus the config's ``[[rule]]`` tables."""
    return build_ruleset(config.rules, str(config.path))


_ROOT_CAUSE = "Root Cause (first observed failure)"
_ROOT_FIELDS = ("rank", "exitcode", "traceback")


_EXCEPTION_AT_END = re.compile(r"\b[A-Za-z_][\w.]{0,200}(?:Error|Exception|Interrupt|Exit|Failure)\b:(?P<msg>.*)$")


def _says_what_went_wrong(text: str) -> bool:
    """True if the last line of an event is an exception with a message of its own.

    ``ValueError: To serve at least one request ...`` does; a logged headline
    without an exception does not, nor does ``RuntimeError: Error raised in
    subprocess:``, whose message is what follows it.
    """
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return False
    m = _EXCEPTION_AT_END.search(lines[-1][-2000:])
    if m is None:
        return False
    msg = m.group("msg").strip()
    return bool(msg) and not msg.endswith(":")


def log_tail_lines(log_path: str, last_no: int, first_no: int, tail_bytes: int = 64 * 1024) -> dict[int, str]:
    """Lines ``first_no``..``last_no`` of a log whose last line is ``last_no``, read from its end.

    As a terminal shows them (:func:`eagle3tui.logs.follower.tail_lines`),
    stripped; lines beyond the last ``tail_bytes`` are not returned.
    """
    if first_no > last_no or last_no <= 0:
        return {}
    out: dict[int, str] = {}
    for i, text in enumerate(reversed(tail_lines(log_path, tail_bytes))):
        no = last_no - i
        if no < first_no:
            break
        out[no] = text.strip()
    return out


def launcher_root_cause(log_path: str, tail_bytes: int = 64 * 1024) -> str | None:
    """torchrun's "Root Cause" entry from the end of a log: ``rank 0 (local_rank: 0), exitcode 1 (pid: 78970)``.

    The launcher names the rank that failed first, and how (exit code or
    signal); the other ranks' failures are its consequences.
    """
    try:
        with open(log_path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - tail_bytes))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    at = text.rfind(_ROOT_CAUSE)
    if at < 0:
        return None
    fields: dict[str, str] = {}
    for line in text[at:].splitlines()[1:12]:
        key, sep, value = line.partition(":")
        key = key.strip()
        if sep and key in _ROOT_FIELDS and key not in fields:
            fields[key] = value.strip()
        if line.startswith("====="):
            break
    if "rank" not in fields:
        return None
    out = f"rank {fields['rank']}"
    if "exitcode" in fields:
        out += f", exitcode {fields['exitcode']}"
    tb = fields.get("traceback", "")
    if tb.startswith("Signal"):
        out += f" ({tb})"
    return out[:300]


def _is_consequence(rule: str | None, text: str) -> bool:
    """Whether a fatal event is, in a distributed job, another process's failure echoed."""
    return rule in CONSEQUENCE_RULES and not launcher_failed_line(text)


def _worker_rank(worker: Any) -> int | None:
    """The rank a worker prefix names ("rank3"), or None."""
    m = re.match(r"^rank(\d{1,6})$", str(worker or ""), re.I)
    return int(m.group(1)) if m else None


@functools.lru_cache(maxsize=16)
def _ready_regex(pattern: str) -> Any:
    """A readiness pattern compiled once (the driver asks every poll)."""
    return compile_user_pattern(pattern)


class StageWatch:
    """Follows one attempt's log and produces alert tuples."""

    def __init__(self, stage: StageConfig, rec: RunRecord, config: PipelineConfig,
                 state_dir: Path, rules: RuleSet) -> None:
        self.stage = stage
        self.run_id = rec.run_id
        self.attempt = rec.attempt
        self.state_dir = Path(state_dir)
        prefix = str(state_dir / "runs" / stage.name / f"{rec.attempt:04d}")
        self.seen_path = Path(prefix + ".watch.json")
        # The driver's verdict on each event line, for the front ends' log panes
        # (they show these kinds and never classify lines themselves).
        self.verdicts_path = Path(prefix + ".verdicts.jsonl")
        self._report_until = 0  # last line of the launcher report being read, if any
        self.log_path = rec.log
        self._truncated_unseen = False
        self._log_problem: str | None = None  # the follower's last refusal, alerted once
        self.alerted_line = self._load_seen()
        # Lines processed but not yet known to be durably alerted (see commit_seen).
        self._pending_line = 0
        self._mark_saved_at = 0.0  # monotonic time of the last save of the mark
        self._peek = FatalPeek(rec.log)
        self._fatal_unread = False  # the peek saw a fatal line in bytes not yet read
        self._catch_up_samples = 8  # the monitor's default, set below
        self.behind = False  # the last poll stopped at POLL_BYTES with more to read
        # While behind, fatal lines ahead of the reader are found and alerted first.
        self._scout = BacklogScout(rec.log, stage.name, stage.kind)
        self._stop_offset: int | None = None  # the log's size at a stop asked for while behind
        self.started_at = rec.started_at or rec.launched_at
        self._ready_offset = rec.log_offset
        self._ready_log = rec.log
        self._ready_hit = False
        self.monitor = StageLogMonitor(
            rec.log, offset=0 if self._truncated_unseen else rec.log_offset, rules=rules, stage=stage.name,
            # Line numbers are the file's (grep -n), not counted from the attempt's start.
            line_no=0 if self._truncated_unseen else rec.log_line,
            # Without an estimate, the median of this stage's past durations.
            estimate_s=stage.estimate_s, history=StageHistory(self.state_dir),
            drift_threshold=config.drift_threshold, phase_estimates=stage.phases,
            stall_floor_s=config.stall_floor_s, started_at=rec.started_at or rec.launched_at,
            # A service that fails one request and keeps serving has a warning, not a fatal.
            stage_kind=stage.kind,
            # Quiet time is a duration: a wall-clock step is no stall.
            stall_clock=time.monotonic, started_age_s=attempt_age_s(rec))
        self._catch_up_samples = self.monitor.samples_per_block
        self._stalled_at: float | None = None
        # A driver that reattaches to a service already ready (a probe or a log pattern said
        # so): the log it catches up on was written before, so it is ready as of that catch-up.
        self._ready_on_catch_up = stage.ready is not None and bool(rec.extra.get("ready_at"))
        self.benign_seen: set[str] = set()
        self.rules_seen: set[str] = set()
        self._once_seen: set[str] = set()
        self.gpu_witness: Any = None
        # The first fatal event of the attempt (what a failure message leads
        # with) and the one that makes it "failing" now: a fatal line with no
        # progress after it while the process lives. Progress clears it.
        self.first_fatal: dict[str, Any] | None = self._load_fatal()
        self.fatal: dict[str, Any] | None = self.first_fatal
        # Every fatal event of the attempt read by this watch, in the order
        # they came out (a traceback is judged only once the process ends, so
        # that is not always the order of their lines).
        self._fatals: list[dict[str, Any]] = []
        # The fatal events the attempt went on after (progress followed them), in order.
        self._survived: list[dict[str, Any]] = []
        # (rule, text) of the fatal alert that paged for the current failure:
        # its exact repeats stay as they are (the hub counts repeats).
        self._paged: tuple[str | None, str] | None = None
        self._now = time.time()
        # Lines after this one were printed because a stop was asked for
        # (a launcher's failure report after SIGTERM): they are never alerts.
        stop_line = rec.extra.get("stop_line")
        self.stop_line: int | None = (int(stop_line) if isinstance(stop_line, int)
                                      else (0 if rec.stop_requested_at else None))

    # -- persistence of what was already alerted --------------------------
    def _load_seen(self) -> int:
        try:
            data = json.loads(self.seen_path.read_text())
            line = int(data.get("alerted_line", 0))
        except (OSError, ValueError, AttributeError, TypeError):
            return 0
        # The mark counts lines of the file as it was. Truncated (copytruncate)
        # or replaced since: those numbers now name other lines, start over.
        try:
            st = Path(self.log_path).stat()
        except OSError:
            return line
        if data.get("ino") not in (None, st.st_ino) or st.st_size < int(data.get("size", 0)):
            # The attempt's output now starts at the file's start, too.
            self._truncated_unseen = True
            return 0
        return line

    def _load_fatal(self) -> dict[str, Any] | None:
        # A driver that reattaches must know the attempt already failed once,
        # and since when: the grace of the on_fatal policy runs from then.
        try:
            fatal = json.loads(self.seen_path.read_text()).get("fatal")
        except (OSError, ValueError, AttributeError):
            return None
        return fatal if isinstance(fatal, dict) else None

    def commit_seen(self, held_from: int | None = None, alerted: bool = True) -> None:
        """Mark the lines processed so far as alerted, once their alerts are durable.

        The driver calls this after writing the alerts ``poll`` returned;
        ``held_from`` is the first line whose alert the hub still holds in
        memory (a merge window), and the mark stops before it. With
        ``alerted=False`` (the poll wrote no alert) the mark is saved at most
        every MARK_EVERY_S: lines past a saved mark that made no alert make
        none when a later driver reads them again, so nothing is re-sent, and
        a poll that wrote an alert saves it at once, so nothing is sent twice.
        """
        line = self._pending_line
        if held_from is not None:
            line = min(line, held_from - 1)
        if line <= self.alerted_line:
            return
        now = time.monotonic()
        if not alerted and now - self._mark_saved_at < MARK_EVERY_S:
            return
        self.alerted_line = line
        self._write_seen()
        self._mark_saved_at = now

    def _write_seen(self) -> None:
        """The mark, the file it counts lines of, and the attempt's first fatal event."""
        doc: dict[str, Any] = {"alerted_line": self.alerted_line}
        try:
            st = Path(self.log_path).stat()
            doc.update(ino=st.st_ino, size=self.monitor.offset)
        except (OSError, AttributeError):  # no monitor yet: the mark alone
            pass
        if self.first_fatal is not None:
            doc["fatal"] = self.first_fatal
        atomic_write_json(self.seen_path, doc, fsync=True)

    def _reset_seen(self) -> None:
        try:
            atomic_write_json(self.seen_path, {"alerted_line": 0}, fsync=True)
        except OSError:
            pass

    # -- polling -------------------------------------------------------------
    def fatal_ahead(self) -> bool:
        """Whether the log's unread bytes may hold a fatal line (a cheap look, see fatal_peek)."""
        if self._peek.ahead(self.monitor.offset, self.monitor.rules, self.monitor.follower.fileno()):
            self._fatal_unread = True
        return self.behind or self._fatal_unread

    def poll(self, now: float | None = None) -> list[AlertTuple]:
        now = now or time.time()
        self._now = now
        resets = self.monitor.follower.resets
        start = self.monitor.offset
        try:
            unread = os.stat(self.log_path).st_size - start
        except OSError:
            unread = 0
        # A live read samples its last progress line; one that may hold a fatal line samples
        # as many as catching up does, so that progress printed between two errors of one
        # read is seen and the second pages as a new failure (see _worked_before).
        self.fatal_ahead()
        fatal_unread, self._fatal_unread = self._fatal_unread, False
        self.monitor.samples_per_block = (1 if unread < LIVE_READ_BYTES and not fatal_unread
                                          else self._catch_up_samples)
        self.monitor.worked_lines.clear()
        events = self.monitor.poll(now, max_bytes=POLL_BYTES)
        self.behind = self.monitor.offset - start >= POLL_BYTES
        self._draw_stop_line()
        ahead: list[AlertTuple] = []
        if self.behind and self.stop_line is None:
            ahead = [self._ahead_alert(f) for f in self._scout.look(
                self.monitor.offset, self.monitor.line_no, self.monitor.rules, limit=self._stop_offset)]
        if self._truncated_unseen or self.monitor.follower.resets != resets:
            # Truncated (copytruncate) or replaced: numbers restart, so does the mark.
            self._truncated_unseen = False
            events.insert(0, LogEvent(line=1, end_line=1, kind="info", rule=_LOG_RESET,
                                      text=f"{self.log_path} was truncated or replaced"))
        if self._stalled_at is not None and (self.monitor.last_news_at or 0) > self._stalled_at:
            self._stalled_at = None  # news resumed (the same wait printed again is none)
        out = ahead + self._to_alerts(events)
        problem = self.monitor.follower.problem
        if problem and problem != self._log_problem:
            # A FIFO or a link at the log's path: nothing it says can be read.
            out.append(("critical", "log-refused", problem, {"rule": "log-refused"}))
        self._log_problem = problem
        if self._ready_on_catch_up:
            self._ready_on_catch_up = False
            self.mark_ready(now)
        if self.fatal is not None and self.monitor.worked_line > int(self.fatal.get("line") or 0):
            # It made progress after the error (a bar drawn again at zero is none):
            # not failing (any more).
            self._not_failing()
        stall_events = self.monitor.check(now, self.gpu_witness)
        for ev in stall_events:
            if ev.rule in STALL_RULES:
                self._stalled_at = now
        return out + self._to_alerts(stall_events, live=True)

    @property
    def stalled(self) -> bool:
        return self._stalled_at is not None

    @property
    def failing(self) -> bool:
        """A fatal error was logged and no progress followed (the process may still live)."""
        return self.fatal is not None

    def failing_for(self, now: float | None = None) -> float:
        """Seconds since the fatal event that makes the attempt failing (0 when not failing)."""
        if self.fatal is None:
            return 0.0
        return max(0.0, (now or time.time()) - float(self.fatal.get("at") or 0.0))

    def mark_stopping(self) -> int | None:
        """A stop is about to be sent: what the log says from here on is not an alert.

        Returns the last line written before it, which the driver keeps in the run
        record so that a driver that reattaches draws the same line. Behind a
        backlog, that line is not known yet: the lines written before the stop are
        still to be read (and alerted as usual); the line is drawn where the
        reader passes the log's size at the stop, and None is returned.
        """
        if self.stop_line is None and self._stop_offset is None:
            try:
                size = os.stat(self.log_path).st_size
            except OSError:
                size = self.monitor.offset
            if self.behind and size > self.monitor.offset:
                self._stop_offset = size
                return None
            self.stop_line = self.monitor.line_no
        return self.stop_line

    def _draw_stop_line(self) -> None:
        """The reader passed the log's size at the stop: the stop line is the last line before it."""
        if self._stop_offset is None or self.stop_line is not None or self.monitor.offset < self._stop_offset:
            return
        over = self.monitor.offset - self._stop_offset
        try:
            fd = os.open(self.log_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            try:
                after = os.pread(fd, over, self._stop_offset).count(b"\n")
            finally:
                os.close(fd)
        except OSError:
            after = 0
        self.stop_line = max(0, self.monitor.line_no - after)

    def finish(self, rec: RunRecord) -> list[AlertTuple]:
        """The attempt ended: settle tracebacks, report an early exit.

        After a stop that the user or the supervisor asked for, nothing the
        attempt printed on its way out is an alert: an exit code from SIGTERM,
        a launcher's failure box, a traceback of the interrupted work.
        """
        stopped = rec.stop_requested_at is not None or self.stop_line is not None
        events = self.monitor.finish(rec.exit_code, rec.signal, stopped=stopped)
        if rec.stop_requested_at is not None and self.stop_line is None:
            self.stop_line = 0
        return self._to_alerts(events)

    def _redundant_early_exit(self, ev: LogEvent) -> bool:
        # "It failed right after starting" adds nothing when a fatal line
        # already said why: the stage-failed alert leads with that line.
        return ev.rule == _EARLY_EXIT and self.first_fatal is not None

    def _after_stop(self, ev: LogEvent) -> bool:
        if self.stop_line is None:
            return False
        return ev.rule == _EARLY_EXIT or (ev.line or 0) > self.stop_line

    def _to_alerts(self, events: list[LogEvent], live: bool = False) -> list[AlertTuple]:
        out: list[AlertTuple] = []
        verdicts: list[dict[str, Any]] = []
        last_line = 0
        # One failure, one page: a fatal event while the attempt already fails
        # from an earlier one (no progress since) is its echo (other ranks, the
        # launcher, a server's "see root cause above"), not a new critical.
        already_failing = self.fatal is not None
        fatal_at: list[tuple[int, int, tuple[str | None, str]]] = []  # (index in out, line, (rule, text))
        sent_ahead: set[int] = set()  # indexes in out of alerts the backlog scout already sent
        for ev in events:
            if ev.rule == _LOG_RESET:
                # copytruncate or a new file: line numbers restart, so does the mark.
                self.alerted_line = 0
                self._pending_line = 0
                last_line = 0
                self._reset_seen()
                out.append(("warning", "log-truncated",
                            f"{self.log_path} was truncated or replaced; following it from its "
                            "start (line numbers restart)", {"rule": _LOG_RESET}))
                continue
            after_stop = self._after_stop(ev)
            if ev.rule and not after_stop:
                self.rules_seen.add(ev.rule)
            end = ev.end_line or ev.line or 0
            last_line = max(last_line, end)
            if ev.kind == "fatal" and not live and self._worked_before(ev.line or 0):
                # Progress between the failing error and this one, within this read:
                # a new failure, as if the lines had come in two reads (see poll).
                self._page(out, fatal_at, already_failing)
                fatal_at = []
                self._not_failing()
                already_failing = False
            if ev.kind == "fatal" and not live and not after_stop:
                self._note_fatal(ev)
            # Lines an earlier driver already reported are not reported again
            # (or that this watch already handed to the driver); stall
            # verdicts are about now, not about a line.
            if not live and end <= max(self.alerted_line, self._pending_line):
                continue
            if not live and ev.line and ev.kind in VERDICT_KINDS:
                prev = verdicts[-1] if verdicts else None
                if prev is not None and prev["kind"] == ev.kind and prev["rule"] == ev.rule \
                        and prev["end_line"] + 1 >= ev.line >= prev["line"]:
                    # A run of lines with one verdict (a warning every step): one record.
                    prev["end_line"] = max(prev["end_line"], end)
                else:
                    verdicts.append({"line": ev.line, "end_line": end, "kind": ev.kind, "rule": ev.rule})
            if after_stop or self._redundant_early_exit(ev) or self._in_launcher_report(ev):
                continue  # shown in the log pane with its verdict, never alerted
            alert = self._alert_for(ev)
            if alert:
                if alert[1] == "fatal-log-event" and alert[0] == "critical":
                    if ev.kind == "fatal" and ev.line in self._scout.reported:
                        sent_ahead.add(len(out))  # alerted when the scout found it: pages, not again
                    fatal_at.append((len(out), ev.line or 0, (ev.rule, ev.text)))
                out.append(alert)
        self._page(out, fatal_at, already_failing)
        if sent_ahead:
            out = [a for i, a in enumerate(out) if i not in sent_ahead]
        if verdicts:
            self._write_verdicts(verdicts)
        if last_line and not live:
            # An event the monitor still holds (an error waiting to see what the
            # process does next, a traceback waiting to be judged) comes out in a
            # later poll with its own, earlier line number: the mark stays below
            # it, or that event would read as already alerted and be dropped.
            waiting = [e.line for e in (*self.monitor.pending, *self.monitor.held) if e.line]
            self._pending_line = max(self._pending_line, min([last_line, *(n - 1 for n in waiting)]))
        return out

    def _page(self, out: list[AlertTuple], fatal_at: list[tuple[int, int, tuple[str | None, str]]],
              already_failing: bool) -> None:
        """One failure, one page: of the fatal alerts ``fatal_at`` (indexes in ``out``), one pages
        and the others become its echoes; all are echoes while an earlier one paged."""
        if not fatal_at:
            return
        # The batch's earliest line pages (a traceback judged at the exit
        # comes out after the line that followed it, but it came first).
        # A consequence (a launcher's SIGTERM to a sibling, another rank's collective
        # timeout, torchrun's report) pages only when nothing in the batch says what failed.
        first = (None if already_failing and self._paged else
                 min(fatal_at, key=lambda x: (_is_consequence(*x[2]), x[1])))
        if first is not None:
            self._paged = first[2]
            out[first[0]] = self._lead_with_rank(out[first[0]])
        of_line = first[1] if first else int((self.fatal or {}).get("line") or 0)
        for i, line, sig in fatal_at:
            if (i, line, sig) != first and sig != self._paged:
                out[i] = self._as_echo(out[i], of_line)

    def _worked_before(self, line: int) -> bool:
        """Progress that moved came after the failing error's line and before ``line``."""
        if self.fatal is None:
            return False
        since = int(self.fatal.get("line") or 0)
        return any(since < w < line for w in self.monitor.worked_lines)

    def _not_failing(self) -> None:
        """It made progress after the error: not failing (any more)."""
        self.fatal = None
        self._survived.extend(self._fatals)  # counted, and led with if the same failure ends it
        self._fatals.clear()  # nor do those errors explain a later failure
        self._paged = None

    @staticmethod
    def _ahead_alert(f: FatalAhead) -> AlertTuple:
        """A fatal line the backlog scout found ahead of the reader, alerted before it is read."""
        details: dict[str, Any] = {"rule": f.rule, "explanation": f.explanation, "line": f.line,
                                   "end_line": f.line, "text": f.text, "worker": f.worker,
                                   "action": f.action or None, "read_ahead": True}
        return ("critical", "fatal-log-event", f.explanation or f.text[:200], details)

    def _lead_with_rank(self, alert: AlertTuple) -> AlertTuple:
        """The paging fatal alert of a distributed job, led by the rank that failed (logs.ranks)."""
        inc = self.incident()
        if inc is None:
            return alert
        level, kind, message, details = alert
        rule, text = str(details.get("rule") or ""), str(details.get("text") or "")
        if inc.cause.unseen:
            message = f"{inc.cause.who()}: {message}"
        elif _is_consequence(rule, text) or launcher_failed_line(text) or details.get("line") == inc.cause.line:
            message = f"{inc.cause.headline()}. {message}"
        else:
            rank = _worker_rank(details.get("worker"))
            who = f"rank {rank}" if rank is not None else inc.cause.who()
            message = f"{who}: {message}"
        summary = inc.summary()
        return (level, kind, f"{message} ({summary})" if summary else message,
                dict(details, incident=inc.as_dict()))

    @staticmethod
    def _as_echo(alert: AlertTuple, of_line: int) -> AlertTuple:
        """A fatal alert of a failure that already paged: kept, at info level."""
        level, kind, message, details = alert
        details = dict(details, echo_of_line=of_line)
        return ("info", kind, f"{message} (the same failure as line {of_line})", details)

    def _in_launcher_report(self, ev: LogEvent) -> bool:
        """A line of a launcher's failure report already alerted as one event.

        torchrun's ChildFailedError box names every failed rank (``exitcode :
        1``) and the root cause; each line reads fatal, but the box is one
        failure, reported once by its first line."""
        if ev.kind != "fatal" or not ev.line:
            return False
        if ev.rule == LAUNCHER_REPORT_RULE and self._report_until < ev.line:
            self._report_until = ev.line + LAUNCHER_REPORT_LINES
            return False
        return ev.line <= self._report_until and ev.rule in (LAUNCHER_REPORT_RULE, _NONZERO_EXIT)

    def _note_fatal(self, ev: LogEvent) -> None:
        fatal = {"line": ev.line, "end_line": ev.end_line, "rule": ev.rule,
                 "text": ev.text[:500], "explanation": ev.explanation, "at": self._now}
        if ev.rule != _EARLY_EXIT:
            self._fatals.append(dict(fatal, worker=ev.worker))
        if self.first_fatal is None:
            self.first_fatal = fatal
            self._write_seen()
        if self.fatal is None:
            self.fatal = fatal

    def _write_verdicts(self, verdicts: list[dict[str, Any]]) -> None:
        try:
            with open(self.verdicts_path, "a", encoding="utf-8") as f:
                f.write("".join(json.dumps(v) + "\n" for v in verdicts))
        except OSError:
            pass  # display only: a full disk must not stop the alerts

    def _alert_for(self, ev: LogEvent) -> AlertTuple | None:
        details: dict[str, Any] = {
            "rule": ev.rule, "explanation": ev.explanation, "line": ev.line,
            "end_line": ev.end_line, "text": ev.text[:2000], "worker": ev.worker,
            "action": ev.action or None}
        details.update(ev.details or {})
        if ev.rule == _ETA_DRIFT:
            details.update(projected_s=ev.projected_s, drift=ev.drift)
            # How sure the projection is (logs/eta.py): certain, or from how much of the bar.
            crossing = self.monitor.eta_tracker.crossing
            basis = crossing.basis if crossing is not None else ""
            if basis:
                details["basis"] = basis
                details["claim"] = crossing.claim  # the drift the alert is sure of (at least)
            return ("warning", "eta-drift", ev.text + (f" ({basis})" if basis else ""), details)
        if ev.rule in STALL_RULES:
            return ("warning", "stall", ev.explanation or ev.text, details)
        if ev.rule == _QUIET_BUT_WORKING:
            if self.fatal is not None:
                # A hung collective spins its GPU kernels: busy GPUs after a
                # fatal error and no output are the hang, not work.
                msg = (f"No output since the fatal error at line {self.fatal.get('line')} "
                       f"({self.fatal.get('rule')}); the GPUs look busy, but a hung collective "
                       "keeps them busy too: treat the stage as hung.")
                return ("warning", "stall", msg, details)
            return ("info", "quiet-but-working", ev.explanation or ev.text, details)
        if ev.kind == "fatal":
            if ev.rule in ONCE_PER_ATTEMPT:
                # torchrun's report is one box with several matching lines
                # (the exception line, "Root Cause"): one rank death, one alert.
                if ev.rule in self._once_seen:
                    return None
                self._once_seen.add(ev.rule)
            return ("critical", "fatal-log-event", ev.explanation or ev.text[:200], details)
        if ev.kind == "benign":
            if ev.rule in self.benign_seen:
                return None
            self.benign_seen.add(ev.rule)
            return ("info", "benign-error", ev.explanation or "harmless error line", details)
        if ev.kind == "warning":
            return ("warning", "log-warning", ev.explanation or ev.text[:200], details)
        return None

    # -- what the driver and the front ends read -------------------------------
    def live(self) -> dict[str, Any]:
        """Progress, ETA and counts for ``state.json``."""
        m = self.monitor
        prog = m.progress
        eta = m.eta
        out: dict[str, Any] = {"counts": dict(getattr(m, "counts", {}) or {}),
                               "last_output_at": getattr(m, "last_output_at", None)}
        if prog is not None:
            out["progress"] = {k: getattr(prog, k, None) for k in
                               ("desc", "n", "total", "elapsed_s", "remaining_s", "rate", "unit")}
        if m.figures:
            # A server's progress is its throughput, requests and KV use.
            out["figures"] = dict(m.figures)
        if self.fatal is not None:
            out["failing"] = {k: self.fatal.get(k) for k in ("line", "rule", "text", "at")}
            if self.stage.on_fatal.action == "stop":
                out["failing"]["stop_at"] = float(self.fatal.get("at") or 0) + self.stage.on_fatal.grace_s
        if eta is not None and (eta.remaining_s is not None or eta.done):
            # The tracker's projection is the one the drift alert used.
            out["eta"] = {"projected_s": eta.projected_s, "remaining_s": eta.remaining_s,
                          "drift": eta.drift, "phase": eta.phase, "done": eta.done, "at": eta.at}
            if self.fatal is not None:
                # Figures from before the error: kept for the record, never shown as live.
                out["eta"]["stale"] = True
        return out

    def tail_errors(self, n: int) -> list[dict[str, Any]]:
        """The last error events of this attempt (none printed after a stop), for the failure alert."""
        return [{"line": e.line, "rule": e.rule, "text": e.text[:500]}
                for e in self.monitor.tail_errors(n + 16) if not self._after_stop(e)][-n:]

    def cause(self) -> dict[str, Any] | None:
        """What explains a failed attempt: its earliest fatal event, else its last error.

        Fatal events come first because a job's first fatal error is usually
        the root cause and what follows (other ranks timing out, a launcher's
        report) is its consequence; a warning never explains a failure, except
        a service's request failure that it exited right after (it was none).
        """
        earliest = self._root_cause()
        tail = [e for e in self.monitor.tail_errors(64) if not self._after_stop(e)]
        if earliest is None:
            # No fatal line (an "early exit" says only that it ended soon).
            ended = self._died_of_request_error(tail) or self._runner_ended_it(tail)
            if ended is not None:
                return ended
        if earliest is not None or self.first_fatal is not None:
            cause = dict(earliest if earliest is not None else self.first_fatal or {})
            self._count_the_rest(cause)
            if self._fold_incident(cause):
                return cause
            if cause.get("rule") == LAUNCHER_REPORT_RULE:
                rank = launcher_root_cause(self.monitor.path)
                if rank:
                    cause["root_cause"] = rank
            if cause.get("rule") == LAUNCHER_KILL_RULE:
                self._launcher_says_why(cause)
            return cause
        errs = [e for e in tail if e.kind == "fatal"]
        if errs:
            e = errs[0]
            return {"line": e.line, "end_line": e.end_line, "rule": e.rule, "text": e.text[:500],
                    "explanation": e.explanation}
        return None

    def _count_the_rest(self, cause: dict[str, Any]) -> None:
        """Several failures in one attempt: lead with the first of the one that ended it, count the others.

        A sweep whose trials die one after another of the same OOM, with progress between
        them, ends on the last; the page leads with the first time that failure happened
        (the attempt's first fatal event of that family) and counts the repeats. Earlier
        fatal events of other families, which the job went on after, and fatal events after
        the cause that no incident folds, are counted under it.
        """
        # After the failure that ended it (before the lead moves to an earlier repeat).
        end = int(cause.get("end_line") or cause.get("line") or 0)
        later = [f for f in self._fatals if int(f.get("line") or 0) > end + CAUSE_GAP_LINES + 1]
        same = [f for f in self._survived if f.get("rule") == cause.get("rule")]
        notes: list[str] = []
        if same:
            lines = [int(f.get("line") or 0) for f in same] + [int(cause.get("line") or 0)]
            first = same[0]
            cause.update({k: first.get(k) for k in ("line", "end_line", "text", "explanation")})
            shown = ", ".join(str(n) for n in lines[:8]) + (", ..." if len(lines) > 8 else "")
            notes.append(f"the same failure {len(lines)} times in this attempt (lines {shown}); "
                         "it went on after all but the last")
        others = [f for f in self._survived if f.get("rule") != cause.get("rule")]
        if others:
            notes.append(f"{len(others)} earlier fatal event{'s' if len(others) != 1 else ''} it went on after "
                         f"(first: line {others[0].get('line')}, {others[0].get('rule')})")
        if later:
            cause["_later"] = later
        if notes:
            cause["earlier"] = "; ".join(notes)

    def incident(self, lead: dict[str, Any] | None = None) -> Incident | None:
        """The failure of a distributed job this attempt's fatal events make (logs.ranks), if any.

        ``lead``: the event the failure message leads with (see :func:`find_incident`).
        """
        if not self._fatals:
            return None
        first = min(int(f.get("line") or 0) for f in self._fatals)
        lines = log_tail_lines(self.monitor.path, self.monitor.line_no, max(1, first))
        return find_incident(self._fatals, lines, lead)

    def _fold_incident(self, cause: dict[str, Any]) -> bool:
        """A distributed job's failure: lead with the rank that failed first, fold the rest under it.

        The cause found so far is the earliest fatal event. When it is the failing rank's
        own words (its OOM, its exception), it stays, and the rank it came from leads the
        message; when it is a consequence (the launcher's SIGTERM to a sibling, a collective
        that timed out on another rank, torchrun's report), the incident's cause replaces it.
        Either way the consequences are counted under it. True when an incident was found.
        """
        lead = dict(cause, worker=cause.get("worker") or self._worker_at(int(cause.get("line") or 0)))
        later = cause.pop("_later", [])
        inc = self.incident(lead)
        if inc is None:
            if later:
                n = len(later)
                cause["consequences"] = (f"{n} more fatal event{'s' if n != 1 else ''} after it (first: line "
                                         f"{later[0].get('line')}, {later[0].get('rule')})")
            return False
        own = (cause.get("rule") not in CONSEQUENCE_RULES and not launcher_failed_line(str(cause.get("text") or ""))
               and not inc.cause.unseen and not peer_lost(lead, inc.cause))
        if inc.cause.unseen:
            # Only the others' timeouts are in the log: the first of them stays the quote.
            cause["who"] = inc.cause.who()
        elif own:
            rank = _worker_rank(lead.get("worker"))
            if rank is not None:
                cause["who"] = f"rank {rank}"
            elif inc.cause.rank is not None or inc.cause.local_rank is not None:
                cause["who"] = f"{inc.cause.who()} ({inc.cause.how()})"
        else:
            c = inc.cause
            cause.update(line=c.line, end_line=c.line, text=c.headline(),
                         rule=c.rule or cause.get("rule"),
                         explanation="The first process of the distributed job that failed; the other failures "
                                     "in the log follow from it.")
        cause.pop("root_cause", None)
        summary = inc.summary()
        if summary:
            cause["consequences"] = summary
        cause["incident"] = inc.as_dict()
        return True

    def _worker_at(self, line: int) -> str | None:
        return next((f.get("worker") for f in self._fatals if int(f.get("line") or 0) == line), None)

    def _died_of_request_error(self, tail: list[LogEvent]) -> dict[str, Any] | None:
        """A service's "one request failed" traceback that is the last thing it wrote before failing.

        The traceback read as a request's because its frames are a request
        handler's (an API server's), and a server that answers the next
        request lived on. One that exits failing right after it did not: that
        exception is what ended it (a start-up check in the API server's
        process, before any request came).
        """
        last = self.monitor.line_no
        for e in reversed(tail):
            end = int(e.end_line or e.line or 0)
            if end < last - CAUSE_GAP_LINES:
                return None  # the service wrote more after its last error
            if e.kind == "warning" and e.rule in REQUEST_FAILURE_RULES:
                return {"line": e.line, "end_line": end, "rule": _TRACEBACK, "text": e.text[:500],
                        "explanation": "The server exited right after this exception: it was no single "
                                       "request's failure, it ended the server."}
        return None

    def _runner_ended_it(self, tail: list[LogEvent]) -> dict[str, Any] | None:
        """The job's runner saying, as the log's last words, that it ended the job.

        Slurm writes "*** JOB 334949 ON dgx-03 CANCELLED AT ... ***" into the job's output
        when the job is cancelled. That line is a warning (eagle3tui's own stop makes Slurm
        write it too; what follows a stop asked for is never read here), but when nothing
        fatal was written, the process exits failing and that report is the last thing in
        the log, who ran the process has said why it ended: quote it, not "exit 143". The
        runner's lines are the ones its own rule pack matches (rules.load_slurm_rules),
        never another program's words.
        """
        # (An "early exit" quotes the log's last lines because it ended soon: not a line's verdict.)
        said = [e for e in tail if e.rule != _EARLY_EXIT]
        if not said:
            return None
        e = said[-1]
        end = int(e.end_line or e.line or 0)
        if e.kind != "warning" or end < self.monitor.line_no - CAUSE_GAP_LINES or e.rule not in self._runner_rules:
            return None
        return {"line": e.line, "end_line": end, "rule": e.rule, "text": e.text[:500],
                "explanation": e.explanation}

    @functools.cached_property
    def _runner_rules(self) -> frozenset[str]:
        return frozenset(r.id for r in self.monitor.rules.rules if r.source == RUNNER_RULE_SOURCE)

    def _launcher_says_why(self, cause: dict[str, Any]) -> None:
        """A failure that starts with a launcher killing its processes: quote the launcher's reason.

        Killing the job's processes is what a launcher does after something
        else happened: a rank failed (its error came earlier, and would be the
        cause) or the launcher got a signal itself. With nothing fatal before
        or after its kill lines, the line it writes right after them says
        which ("Main process received SIGINT, exiting").
        """
        end = int(cause.get("end_line") or cause.get("line") or 0)
        last = self.monitor.line_no
        start = int(cause.get("line") or end)
        if start and last > start:
            # The launcher's next record from the same logger source, after its kill lines and
            # whatever its processes printed (their tracebacks), is its account of why it killed them.
            lines = log_tail_lines(self.monitor.path, min(last, end + LAUNCHER_REPORT_LINES), start)
            found = next_from_same_source(lines, start, start)
            if found is not None:
                cause["end_line"], cause["text"] = max(end, found[0]), found[1][:500]
                return
        if not end or last <= end or last > end + CAUSE_GAP_LINES + 1:
            return  # the kill lines are not the end of the log
        lines = log_tail_lines(self.monitor.path, last, end + 1)
        why = next((lines[n] for n in range(end + 1, last + 1) if lines.get(n)), None)
        if why:
            cause["end_line"] = last
            cause["text"] = why[:500]

    def _root_cause(self) -> dict[str, Any] | None:
        """The attempt's earliest fatal event, joined with the ones written right after it.

        The first fatal line of a log is usually the root cause and the later
        ones its consequences, whatever order they were judged in. A logged
        "failed to start" and the traceback under it, or an exception and the
        subprocess traceback quoted in its message, are one error: the cause
        spans them and its text ends with the last exception, the one that
        says what went wrong.
        """
        if not self._fatals:
            return None
        fatals = sorted(self._fatals, key=lambda f: (f["line"] or 0, f.get("end_line") or 0))
        cause = dict(fatals[0])
        cause.pop("worker", None)
        parts = [fatals[0]]
        end = int(cause.get("end_line") or cause["line"] or 0)
        for f in fatals[1:]:
            if (f["line"] or 0) > end + CAUSE_GAP_LINES + 1 or f.get("worker") != fatals[0].get("worker"):
                break
            if int(f.get("end_line") or f["line"] or 0) <= end:
                continue  # within what the cause already spans
            end = int(f.get("end_line") or f["line"])
            cause["end_line"] = end
            parts.append(f)
        # The part that says what went wrong: the first exception with a
        # message of its own. A headline ("EngineCore failed to start.") or
        # an exception whose message only announces what follows ("Error
        # raised in subprocess:") hands over to the next part; in a chain
        # ("The above exception was the direct cause ...") the first one is
        # the cause and the later ones wrap it.
        telling = next((p for p in parts if _says_what_went_wrong(str(p.get("text") or ""))), None)
        if telling is not None:
            cause["text"] = str(telling.get("text") or "")[-500:]
        else:
            # Every part only announces what follows ("... failed to import on the
            # worker ...:", "Failed to import X because of the following error (look
            # up to see its traceback):"): an event's text is its last exception, so
            # the chain's first one, the one that says what went wrong, lies inside
            # the span. Read it from the log.
            inner = self._exception_within(int(cause.get("line") or 0), end)
            cause["text"] = inner if inner is not None else str(parts[-1].get("text") or "")[-500:]
        return cause

    def _exception_within(self, first: int, last: int) -> str | None:
        """The first exception line of log lines ``first``..``last`` with a message of its own, from it on."""
        if not first or last < first:
            return None
        lines = log_tail_lines(self.monitor.path, self.monitor.line_no, first)
        for no in range(first, last + 1):
            text = lines.get(no, "")
            if text and _says_what_went_wrong(text):
                m = _EXCEPTION_AT_END.search(text[-2000:])
                if m is not None:
                    return m.group(0)[:500]
        return None

    def rule_ids(self) -> list[str]:
        return sorted(self.rules_seen)

    def seen_pattern(self, pattern: str) -> bool:
        """True once a line of this attempt's log matches ``pattern`` (service readiness)."""
        if self._ready_hit:
            return True
        try:
            with open(self._ready_log, "rb") as f:
                f.seek(self._ready_offset)
                data = f.read(1 << 20)
        except OSError:
            return False
        cut = data.rfind(b"\n") + 1
        self._ready_offset += cut
        # The user's pattern, over every line of the log until the service is ready:
        # RE2, linear in the line whatever the pattern (as the user's [[rule]] patterns).
        rx = _ready_regex(pattern)
        for raw in data[:cut].splitlines():
            if rx.search(raw.decode("utf-8", "replace")):
                self._ready_hit = True
                return True
        return False

    def mark_ready(self, now: float) -> None:
        """The service is ready: from now its silence is idleness, not a stall, until news comes."""
        self.monitor.mark_ready(now)
