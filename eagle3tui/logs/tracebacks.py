"""The shapes a traceback is assembled from: an open traceback's state and the tests on its lines.

:class:`StageLogMonitor` feeds an open traceback line by line; what it keeps of one,
and how an exception line is told from the lines around it, live here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from eagle3tui.logs.anatomy import exception_line, shape
from eagle3tui.logs.events import LogEvent
from eagle3tui.logs.frames import continues_run, is_jvm_frame
from eagle3tui.logs.judge import EXPLAIN, is_request_frame, is_request_source, judge_traceback, make, Verdict
from eagle3tui.logs.monitor_terms import (
    EXCEPTION_PRINTED as _EXCEPTION_PRINTED,
    GENERIC_RULES as _GENERIC_RULES,
    MAX_TEXT as _MAX_TEXT,
    REQUEST_FAILED as _REQUEST_FAILED,
    STACK_TRACE as _STACK_TRACE,
    STACK_WITH_ERROR as _STACK_WITH_ERROR,
    STAMPED as _STAMPED,
    TRACEBACK as _TRACEBACK,
    TRACEBACK_LOGGED as _TRACEBACK_LOGGED,
    UNCAUGHT_EXCEPTION as _UNCAUGHT_EXCEPTION,
)
from eagle3tui.logs.settlement import Held as _Held, HOLD_LINES as _HOLD_LINES, Pending as _Pending
from eagle3tui.logs.workers import strip_log_header


TB_MAX_LINES = 5000  # a "traceback" longer than this is not one
# Raw lines of another stream that may come between two lines of a logged traceback (a
# process's "Process EngineCore:" written to stderr while its logger writes the traceback
# record line by line): more than this in a row and the traceback has ended.
TB_MAX_FOREIGN = 3
# The message of an exception that announces it goes on ("Ninja output:") runs at most
# this many lines (another program's output it quotes); longer, it is the process going on.
TB_MAX_BODY = 400
CHAIN = (
    "During handling of the above exception",
    "The above exception was the direct cause",
    "Traceback (most recent call last)",
)


@dataclass
class OpenTraceback:
    start: int
    worker: str | None
    lines: int = 1
    first_text: str = ""
    ignored: bool = False  # announced by Python's "Exception ignored in"
    warned: bool = False  # the message of a Python warning ("x.py:1: UserWarning: ...: Traceback (...)")
    after_notice: bool = False  # introduced by the harmless notice just above it ("...; continuing without it:")
    request: bool = False  # its frames or its opener show request handling
    # Its exception line, read, when it wraps another exception; the traceback
    # ends there unless the next line is another frame (see _tb_feed).
    exc_text: str = ""
    exc_no: int = 0
    exc_at: float = 0.0
    # A run of frames with no "Traceback (most recent call last):" above it (frames.py):
    # a cut paste, the header on another stream, a faulthandler or native dump.
    headless: bool = False
    last_frame: int = 0  # its last frame-shaped line (blank lines after it are not its end)
    level: str | None = None  # the level its first line was logged at, if it has a logger header
    detail: bool = False  # the stack of the record just above it, which was judged already
    # The logger header (level, source) every line of a traceback logged through a logger
    # carries ("ERROR 06-08 05:02:33 [core.py:1199]   File ..."), or None for a raw one; a
    # raw line between two of its lines is another stream's, which does not end it.
    record: tuple[str | None, str] | None = None
    foreign: int = 0  # raw lines of another stream read since its last own line
    # Its exception line's message ends with a colon ("RuntimeError: Ninja build failed. Ninja
    # output:"): the lines after it are that message (exc_no: its last line), see _tb_feed.
    body: int = 0  # lines of that message read so far


# The end of an exception line whose message is another process's traceback.
QUOTED_TRACEBACK = "Traceback (most recent call last):"
# A frame line ('  File "x.py", line 3, in f') or the caret line under a
# frame's code: what only a traceback's body holds.
FRAME_LINE = re.compile(r"[ \t]{1,40}(?:File \"|[\^~]{1,4000}[ \t]{0,40}$)")  # bounded: see tests/test_logs_patterns_bounded.py
# A traceback whose exception line was read and nothing after it for this
# long has ended there (a process that hangs after it writes nothing more).
TB_END_S = 1.0


def looks_like_exception(line: str) -> bool:
    """``KeyError: 'x'``, ``torch.OutOfMemoryError: ...``, ``KeyboardInterrupt``.

    Also Ray's wrapper, which names the exception it wraps:
    ``ray.exceptions.RayTaskError(ActorUnavailableError): ray::f() ...``.
    """
    head = line.split(":", 1)[0].strip()
    if head.endswith(")") and "(" in head:
        head, _, inner = head[:-1].partition("(")
        if not inner.isidentifier():
            return False
    return 0 < len(head) <= 120 and all(part.isidentifier() for part in head.split("."))


def announces_more(line: str) -> bool:
    """``RuntimeError: Ninja build failed. Ninja output:``: an exception whose message says the rest follows.

    Not ``FooError: Traceback (most recent call last):`` (a quoted traceback, read as one)
    nor a message that is only the colon.
    """
    msg = line.split(":", 1)[1].strip() if ":" in line else ""
    return len(msg) > 1 and msg.endswith(":") and not msg.endswith(QUOTED_TRACEBACK)


def wraps_another(line: str) -> bool:
    """``RayTaskError(ActorUnavailableError): ...``: an exception line naming the exception it wraps."""
    return line.split(":", 1)[0].strip().endswith(")")


def introduced_by_notice(last: tuple[int, tuple[str | None, str], Verdict] | None, tail: Iterable[LogEvent],
                         worker: str | None, no: int) -> bool:
    """Whether the judged line just above a traceback opening on line ``no`` introduced it as a harmless notice.

    ``last``: the monitor's last judged line of that worker (its number, header and
    verdict); ``tail``: its latest events. The line introduces the traceback when its
    message ends with a colon (the notice announces what follows: "Failed to import
    optional plugin x, continuing without it:") and at most one blank line separates
    them; harmless when it was judged benign.
    """
    if last is None or last[2].kind != "benign" or not 0 < no - last[0] <= 2:
        return False
    for ev in reversed(tuple(tail)):
        if ev.worker == worker:
            return ev.line == last[0] and ev.kind == "benign" and ev.text.rstrip().endswith(":")
    return False


class TracebackAssembly:
    """Assembling tracebacks and headless frame runs line by line, and the event each one ends as.

    A part of :class:`~eagle3tui.logs.monitor.StageLogMonitor`, whose state it reads and keeps.
    """

    # -- tracebacks -------------------------------------------------------
    def _open_traceback(self, worker: str | None, no: int, rest: str) -> None:
        old = self._tb.pop(worker, None)
        if old is not None:
            self._close_open(old, no)
        sh = shape(rest)
        self._tb[worker] = OpenTraceback(
            start=no,
            worker=worker,
            first_text=rest.strip(),
            ignored=no - self._ignored_at.get(worker, -99) <= 3,
            after_notice=introduced_by_notice(self._last_verdict.get(worker), self._tail, worker, no),
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
        self._tb[worker] = OpenTraceback(
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
        if tb.lines > TB_MAX_LINES:
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
            if sh.level is None and not sh.source and tb.foreign < TB_MAX_FOREIGN:
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
            if FRAME_LINE.match(body):
                tb.exc_text, tb.exc_no = "", 0
                return True
            del self._tb[worker]
            self._close_traceback(tb, tb.exc_text, tb.exc_no)
            return False
        if not body.strip() or body[0] in " \t" or body.startswith(CHAIN):
            if not tb.request and self.stage_kind == "service" and is_request_frame(body):
                tb.request = True
            return True
        if looks_like_exception(body) and body.rstrip().endswith(QUOTED_TRACEBACK):
            # "FileNotFoundError: Traceback (most recent call last):": the
            # exception's message quotes the traceback of where it was raised
            # (a DataLoader worker, a subprocess). The exception line that
            # says what went wrong ends that quote: read on to it.
            return True
        if looks_like_exception(body) and wraps_another(body):
            # An exception that names the one it wraps (Ray's "RayTaskError(
            # ActorUnavailableError): ray::f()"): the frames of where that one
            # was raised may follow, down to its own line. Ends here if not.
            tb.exc_text, tb.exc_no, tb.exc_at = body.strip(), no, self._now
            return True
        if looks_like_exception(body) and announces_more(body):
            # "RuntimeError: Ninja build failed. Ninja output:": Python prints an exception's
            # message as it is, newlines included, and this one says the rest follows (a
            # build's output, SGLang's "Possible solutions:" list). Those lines are the
            # message, not the process going on: read on (see _body_feed).
            tb.exc_text, tb.exc_no, tb.exc_at, tb.body = body.strip(), no, self._now, 1
            return True
        del self._tb[worker]
        if looks_like_exception(body):
            # The first unindented line is the exception line ("KeyError: 'x'").
            self._close_traceback(tb, body.strip(), no)
            return True
        # Something else interrupted it (another process writing to the same
        # log, a truncated traceback): close it without an exception line and
        # let this line be read on its own.
        self._close_traceback(tb, tb.first_text, no - 1)
        return False

    def _body_feed(self, tb: OpenTraceback, worker: str | None, rest: str, body: str, no: int) -> bool:
        """One more line after an exception line whose message goes on: True if it is that message.

        The message is another program's output, blank lines included. It ends at a log
        record (a logger header or a time stamp: a process logging, its own or another's),
        at a frame or an exception line (a traceback, not a message), at a chained exception
        ("During handling of the above exception"), or after TB_MAX_BODY lines; the
        traceback then ends at the message's last line.
        """
        sh = shape(rest) if body.strip() else None
        if (
            tb.body < TB_MAX_BODY
            and not body.startswith((CHAIN[0], CHAIN[1], QUOTED_TRACEBACK))
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
        tb = OpenTraceback(
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

    def _run_feed(self, tb: OpenTraceback, worker: str | None, rest: str, body: str, no: int) -> bool:
        """One more line while a run of frames is open: True if it belongs to the run."""
        if body.startswith(CHAIN) or (
            tb.lines > 1 and not body.startswith((" ", "\t")) and looks_like_exception(body)
            and body.split(":", 1)[0].strip().endswith(("Error", "Exception", "Interrupt", "Exit"))
        ):
            del self._tb[worker]
            if body.startswith(CHAIN):
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

    def _close_run(self, tb: OpenTraceback) -> None:
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
        for w in [w for w, tb in self._tb.items() if tb.exc_no and self._now - tb.exc_at >= TB_END_S]:
            tb = self._tb.pop(w)
            self._close_traceback(tb, tb.exc_text, tb.exc_no)
        # A run of frames the process wrote nothing after for a while: it ends there
        # (what it means is settled as for a traceback: by what comes next, or the exit).
        for w in [w for w, tb in self._tb.items() if tb.headless and self._now - tb.exc_at >= TB_END_S]:
            self._close_run(self._tb.pop(w))

    def _close_open(self, tb: OpenTraceback, no: int) -> None:
        """Close a traceback that line ``no`` interrupts: at its exception line if it had one."""
        if tb.headless:
            self._close_run(tb)
        elif tb.exc_no:
            self._close_traceback(tb, tb.exc_text, tb.exc_no)
        else:
            self._close_traceback(tb, tb.first_text, no - 1)

    def _close_traceback(self, tb: OpenTraceback, exc_line: str, end: int) -> None:
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
                            warned=tb.warned, after_notice=tb.after_notice)
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
