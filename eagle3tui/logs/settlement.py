"""Held and pending events: an error whose verdict waits for what the process does next.

A held line (an error that names no family) and a pending failure (a traceback or death
that the process may go on from, or restart after) are settled by the lines that follow;
what each keeps, and how a command's final report is told from the process going on.
"""

from __future__ import annotations

from dataclasses import dataclass

from eagle3tui.logs import catalog, endings
from eagle3tui.logs.events import LogEvent
from eagle3tui.logs.judge import Verdict
from eagle3tui.logs.rules import Rule

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
    locale) or the pointer to the command's help that ends many reports ("See 'docker run
    --help'.", "Try \"sbatch --help\" for more information") says nothing of the process
    going on (nor does a line of the ending itself, which the caller reads with next_step).
    """
    return (body.endswith(":") or (body[1:3] == ": " and body[:1].isupper()) or "*** [" in body[:200]
            or "--help" in body[:200])


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
