"""The phase of a service's stream (starting, or ready) and what it changes in a verdict.

A server says a lot while it starts: which backend it falls back to, that it pads its
KV cache, that a kernel is not installed. Its own logger rates these WARNING, and they
are harmless: nothing failed, and the server goes on to serve. Once it is ready, a
WARNING is about the work it does (a request, the cache under load) and stays one.

The phase is structural: ready when the stream carries a readiness marker (the
``server-ready`` rule of the shipped pack, whose pattern, examples and sources are data
there), when it logs a request it answered (an access line: a server whose readiness line
no rule knows is serving by then), or when the supervisor's readiness probe answered
(:meth:`ServicePhase.mark_ready`).
Before that, a WARNING record from a logger of the service (a header with a level and a
source, not a Python ``warnings`` category), whose message the judge found nothing
error-looking in (no exception class, no failure words: the judge holds such warnings,
``held``), is the ``startup-notice`` family (families.toml). Everything else keeps the
judge's verdict.

Verdicts this module changes depend on the phase, so the monitor does not remember
them for a template's later lines (:meth:`ServicePhase.judge` says when it changed one).
"""

from __future__ import annotations

import re

from eagle3tui.logs import families
from eagle3tui.logs.anatomy import Shape, exception_line, shape
from eagle3tui.logs.events import LogEvent
from eagle3tui.logs.judge import Verdict, answered_request

# Gin's access line (ollama and other Go servers): "| 200 |  1h24m39s |  10.99.99.105 | POST  "/api/chat"";
# the common quoted-request format is judge.answered_request's.
_PIPE_ACCESS = re.compile(r"\|\s{0,3}[1-5]\d\d\s{0,3}\|[^|]{1,40}\|[^|]{1,80}\|\s{0,3}(?:GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS)\b")

READY_RULE = "server-ready"  # the shipped pack's readiness marker (builtin_rules.toml)
STARTUP_NOTICE = families.family_id("startup-notice")
_PYTHON_WARNING = families.family_id("python-warning")
_ERROR_LINE = families.family_id("error-line")
_ERROR_THEN_ENDED = families.family_id("error-then-ended")
_ERROR_WENT_ON = families.family_id("error-went-on")


class ServicePhase:
    """Whether a service stream is still starting, or ready (and from which line)."""

    __slots__ = ("last_error", "ready_line")

    def __init__(self) -> None:
        self.ready_line: int | None = None
        self.last_error: LogEvent | None = None  # the last ERROR record of its own logger while starting

    @property
    def ready(self) -> bool:
        return self.ready_line is not None

    def mark_ready(self, no: int) -> None:
        """The service is ready from line ``no`` (a readiness marker, or its probe answered)."""
        if self.ready_line is None:
            self.ready_line = no

    def saw(self, rule_id: str | None, no: int, text: str) -> None:
        """Note a line: a readiness marker, or a request it answered, makes the service ready.

        A server whose readiness line no rule knows still logs the requests it serves
        (an access line, whatever its status): from then on it is serving, not starting.
        """
        if self.ready_line is None and (rule_id == READY_RULE or answered_request(text)
                                        or _PIPE_ACCESS.search(text[:600]) is not None):
            self.mark_ready(no)

    def judge(self, v: Verdict, sh: Shape) -> Verdict | None:
        """The verdict the phase gives instead of ``v``, or None when it keeps ``v``."""
        if self.ready_line is not None or not is_startup_notice(v, sh):
            return None
        fam = families.code_families()[STARTUP_NOTICE]
        return Verdict("benign", STARTUP_NOTICE, fam.explanation, fam.action)


    def note(self, ev: LogEvent) -> None:
        """Keep an event the monitor emits when it is an ERROR record of a logger while starting.

        The judge rates a service's ERROR line a warning (``error-line``: it names no
        crash), and settlement makes it ``error-went-on`` when ordinary lines follow; while
        the service starts, ordinary lines do not show it survived: its exit says (finish).
        """
        if self.ready_line is None and ev.kind in ("warning", "benign") and ev.rule in (_ERROR_LINE, _ERROR_WENT_ON):
            sh = shape(ev.text)
            if sh.level == "error" and sh.source:
                self.last_error = ev

    def ended_unready(self) -> LogEvent | None:
        """The fatal event for a service that exited with a failure before it was ready.

        The last ERROR record its own logger wrote while starting is what ended it; None
        when the service was ready, or wrote no such record.
        """
        err = self.last_error
        if self.ready_line is not None or err is None:
            return None
        fam = families.code_families()[_ERROR_THEN_ENDED]
        return LogEvent(line=err.line, end_line=err.end_line, kind="fatal", rule=_ERROR_THEN_ENDED, text=err.text,
                        worker=err.worker,
                        explanation=("The service exited with a failure before it was ready; this is the last error "
                                     f"its own logger reported while it started. {err.explanation}"),
                        action=fam.action or "Read this error: the server never came up; fix its cause and rerun.")


def is_startup_notice(v: Verdict, sh: Shape) -> bool:
    """Whether a verdict on a not-yet-ready service's line is a harmless start-up notice.

    The line is a WARNING record of a logger (a level and a source in its header), not a
    Python warning category, not NCCL's own line; the judge gave it the plain
    ``python-warning`` verdict and did not hold it (holding means its message looked
    like an error); and its message names no exception.
    """
    return (
        v.kind == "warning"
        and v.rule == _PYTHON_WARNING
        and not v.held
        and not v.pending
        and sh.level == "warning"
        and bool(sh.source)
        and not sh.category
        and not sh.nccl
        and exception_line(sh.body) is None
    )
