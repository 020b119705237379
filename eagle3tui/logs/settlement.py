"""Held and pending events: an error whose verdict waits for what the process does next.

A held line (an error that names no family) and a pending failure (a traceback or death
that the process may go on from, or restart after) are settled by the lines that follow;
what each keeps, and how a command's final report is told from the process going on.
"""

from __future__ import annotations

from dataclasses import dataclass

from eagle3tui.logs import catalog, endings
from eagle3tui.logs.anatomy import shape
from eagle3tui.logs.events import LogEvent
from eagle3tui.logs.frames import is_address_frame, is_frame
from eagle3tui.logs.judge import (
    announces_shutdown, answered_request, gate_bits, is_errorish, next_step, unavailable_answer, Verdict,
)
from eagle3tui.logs.monitor_terms import (
    ANNOUNCED_ENDING as _ANNOUNCED_ENDING,
    ERROR_THEN_ENDED as _ERROR_THEN_ENDED,
    ERROR_WENT_ON as _ERROR_WENT_ON,
    RECOVERED as _RECOVERED,
    SERVICE_SURVIVED as _SERVICE_SURVIVED,
    TRACEBACK_HANDLED as _TRACEBACK_HANDLED,
)
from eagle3tui.logs.rules import Rule
from eagle3tui.logs.speaker import part_ending, speaker


RECOVERY_LINES = 3  # a restart/retry this close after a death means it was handled
HOLD_LINES = 5  # an error line is held this many lines (or went_on_s) to see what the process does next
_FINAL_REPORT = catalog.known_id("final-report")
_TOP_LEVEL_ERROR = catalog.known_id("top-level-error")


def ending_key(ev: LogEvent) -> tuple[str | None, str]:
    """Who announced a stop, and the stop it announced ("terminating training")."""
    return ev.worker, ev.text[ev.text.rfind(", ") + 2 :].strip().lower()[:80]


def is_report(ev: LogEvent) -> bool:
    """Whether a pending event is a command's own final error report (judge step 7a; cobra's
    "Error: ..." keeps its older name, top-level-error, which also names other records)."""
    return ev.rule == _FINAL_REPORT or ev.rule == _TOP_LEVEL_ERROR and endings.command_report(ev.text)


def report_goes_on(body: str) -> bool:
    """Whether a line after a command's final report is still part of that report or ending.

    A line that introduces what follows ("Unrecognized git object type:"), a record with
    a one-letter level of its own (apt's "N: See apt-secure(8) manpage ...", "W: ..."),
    make's record of the failed command ("make: *** [Makefile:2] 错误 128", in any
    locale), the pointer to the command's help that ends many reports ("See 'docker run
    --help'.", "Try \"sbatch --help\" for more information") or a frame of the stack the
    report prints under itself (a C++ runtime's "1       0x7f33b4eabcc7 f(...) + 82" after
    its failed assertion) says nothing of the process going on (nor does a line of the
    ending itself, which the caller reads with next_step).
    """
    return (body.endswith(":") or (body[1:3] == ": " and body[:1].isupper()) or "*** [" in body[:200]
            or "--help" in body[:200] or is_frame(body) or is_address_frame(body))


@dataclass
class Pending:
    """A traceback whose meaning depends on whether the process went on."""

    event: LogEvent
    rule: Rule | None
    closed_at: float
    progress_after: bool = False
    recoverable: bool = False  # fatal unless a restart/retry follows within a few lines
    verdict: Verdict | None = None  # the judge's verdict it will turn into if fatal


@dataclass
class Held:
    """An error line held until the process shows what it does next."""

    event: LogEvent
    closed_at: float
    by: str | None = None  # the process id of its writer, when its header or prefix says (speaker)
    about: frozenset[str] = frozenset()  # the process ids its message names


class Settlement:
    """Held and pending events settled by what the process does next (it went on, recovered, or ended).

    A part of :class:`~eagle3tui.logs.monitor.StageLogMonitor`, whose state it reads and keeps.
    """

    def _announced_before(self, ev: LogEvent, no: int) -> bool:
        """Whether the same worker announced this stop before: it is still running, so it went on from that one."""
        key = ending_key(ev)
        for p in [p for p in self._pending if p.event.rule == _ANNOUNCED_ENDING and ending_key(p.event) == key]:
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
        if self._pending and rest.strip() and any(is_report(p.event) for p in self._pending):
            self._after_report(rest, no)
        if self.stage_kind == "service" and self._pending and answered_request(rest) and not unavailable_answer(rest):
            # A part of a server died (a model runner, a worker) and the server
            # then answered a request, even with a 500: the server outlived it.
            # Not a death that said the server itself is going down, nor an answer
            # that says the server cannot serve (a 503: it is up, its engine is not).
            self._recovered(no, f"the server answered a request after it (line {no})", answered=True)
        step = next_step(rest)
        if step is None:
            return
        # Live, a stop the user asked for prints the same words as a watchdog's
        # stop: there the exit status (finish) says whether it ended in failure.
        if self._held and not (step == "ending" and self.exit_known):
            keep: list[Held] = []
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
            keep_p: list[Pending] = []
            for p in self._pending:
                if p.event.end_line >= no or no - p.event.end_line > HOLD_LINES:
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
        if is_errorish(body, gate_bits(body)) or report_goes_on(body) or next_step(rest, sh) == "ending":
            return  # more of the report, or the ending itself ("Shutting down shards")
        keep: list[Pending] = []
        for p in self._pending:
            if is_report(p.event) and p.event.end_line < no:
                self._went_on(p, f"it printed ordinary output after it, line {no}")
            else:
                keep.append(p)
        self._pending = keep

    def _settle_held(self, h: Held, outcome: str | None, no: int) -> None:
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

    def _recovered(self, no: int, why: str | None = None, answered: bool = False) -> None:
        """A restart/retry line (or ``why``): recoverable failures just before it were survived.

        ``answered``: the evidence is a request the server answered, which says
        nothing for a death that announced the server's own shutdown.
        """
        keep: list[Pending] = []
        for p in self._pending:
            if (p.recoverable and no - p.event.end_line <= RECOVERY_LINES
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

    def _settle_went_on(self) -> None:
        if self._held:
            # Held errors that saw nothing telling within their window stay
            # what they looked like.
            keep_h: list[Held] = []
            for h in self._held:
                if self.line_no - h.event.line >= HOLD_LINES or self._now - h.closed_at >= self.went_on_s:
                    self._settle_held(h, None, self.line_no)
                else:
                    keep_h.append(h)
            self._held = keep_h
        if not self._pending:
            return
        keep: list[Pending] = []
        for p in self._pending:
            lines_after = self.line_no - p.event.end_line
            if p.recoverable:
                if lines_after > RECOVERY_LINES or self._now - p.closed_at >= self.recover_s:
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

    def _went_on(self, p: Pending, why: str) -> None:
        """Emit a pending failure the process went on after, as a warning."""
        ev = p.event
        ev.kind = "warning"
        if ev.rule == _ANNOUNCED_ENDING:
            self._unbelieved.add(ending_key(ev))
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

    def _as_fatal(self, p: Pending) -> LogEvent:
        """The pending event as the fatal event it turned out to be."""
        ev = p.event
        ev.kind = "fatal"
        v = p.verdict
        if v is not None:
            ev.rule, ev.explanation, ev.action = v.rule, v.explanation, v.action
        return ev
