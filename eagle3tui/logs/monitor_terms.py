"""The ids, flag sets and limits the monitor's parts share, and the one maker of a line's event.

Every id here is read from the registry (``families.toml`` through :mod:`families`, or the
whole catalog through :mod:`catalog`), so an id the monitor names is one ``retry.on``,
``eagle3tui check`` and the docs know too.
"""

from __future__ import annotations

import re

from eagle3tui.logs import catalog, families
from eagle3tui.logs.events import LogEvent

MAX_TEXT = 2000  # event text kept per event; the full line is in the log
# Blocks this big (catching up) are read by line template, and so is every block once
# this much of the log was read (a live follower's wake-ups: the templates are kept
# across blocks); a short log alone is not worth building the template index for.
TEMPLATE_BLOCK = 256 * 1024
# While the log said something new this recently, a read is not looked through for
# news again (the stall detector is armed anyway): a chatty log is not read twice.
NEWS_FRESH_S = 1.0
UNKNOWN = object()
NO_BLOCK: tuple = (b"", [0], 0)  # StageLogMonitor._tail_block between template scans
# The ids this module makes itself, checked against the registry (families.toml) when it loads.
EARLY_EXIT = families.family_id("early-exit")
ERROR_THEN_ENDED = families.family_id("error-then-ended")
ERROR_WENT_ON = families.family_id("error-went-on")
ETA_DRIFT = families.family_id("eta-drift")
EXCEPTION_PRINTED = families.family_id("exception-printed")
LOG_RESET = families.family_id("log-reset")
PROGRESS = families.family_id("progress")
RECOVERED = families.family_id("recovered")
SERVICE_SURVIVED = families.family_id("service-survived")
STACK_TRACE = families.family_id("stack-trace")
STOP_REQUESTED = families.family_id("stop-requested")
TRACEBACK = families.family_id("traceback")
TRACEBACK_HANDLED = families.family_id("traceback-handled")
TRACEBACK_LOGGED = families.family_id("traceback-logged")
# Pack rules (and judge verdicts) this module acts on by id, checked against the whole catalog.
ANNOUNCED_ENDING = catalog.known_id("announced-ending")
EXCEPTION_IGNORED = catalog.known_id("exception-ignored")
FATAL_LEVEL = catalog.known_id("fatal-level")
REQUEST_FAILED = catalog.known_id("request-failed")
STACK_WITH_ERROR = catalog.known_id("stack-with-error")
UNCAUGHT_EXCEPTION = catalog.known_id("uncaught-exception")
# Verdicts whose event needs more than counting and listing (_verdict_event).
SPECIAL_RULES = catalog.with_flag("own-event")
# A request's own outcome (it failed, or the client went away): one request, not the server.
REQUEST_OUTCOMES = catalog.with_flag("request-failure")
# After a line saying a stop was asked of the process (endings.stop_requested), the endings it
# reports in this many lines are that stop. Crashes, OOM, CUDA errors and tracebacks keep
# their verdict: only the rules that say "it ended" or "it exited" are the stop's.
STOP_LINES = 30
STOP_ENDINGS = catalog.with_flag("stop-ending")
# A time of day near a line's start ("(raylet) [2025-02-25 19:42:36,213 E ..."): a log record.
STAMPED = re.compile(r"[^\n:]{0,40}\b\d\d:\d\d:\d\d")  # run by match on the first 64 characters
GENERIC_RULES = catalog.with_flag("catch-all")  # catch-alls say nothing specific
# Verdicts held to see what comes next: an error-looking line that names no
# family. The process carrying on makes it harmless; the process ending makes
# it the error that ended it.
HELD_RULES = catalog.with_flag("held")
RECORD_LINES = 20  # indented lines this close below a header line may belong to its record


def event(no: int, kind: str, rule: str, rest: str, worker: str | None, explanation: str, action: str) -> LogEvent:
    """One line's event of a verdict: its text is the line after its header, stripped and cut to MAX_TEXT."""
    return LogEvent(no, no, kind, rule, rest.strip()[:MAX_TEXT], worker, explanation, action)
