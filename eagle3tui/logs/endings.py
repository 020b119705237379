"""Fatal endings, and what is not one, told by structure that many programs share.

The judge (:mod:`judge`) weighs a line by its level, its source and its words; the
cues here answer one question each about how a process ends, in any program's words:

* :func:`goes_on_without` -- the line's last sentence says the program carries on
  without what it just failed to get ("Failed to load generation config for X: ...
  Proceeding without generation config."): whatever family the failure names, an
  optional part is absent, nothing ends.
* :func:`ending_reported` -- whoever ran the process reports its failing end (an exit
  status in systemd's, supervisord's or a build runner's shape, a part declared dead or
  not started, "stopped: <an error>").
* :func:`stop_requested` -- the process says a stop was asked of it; the endings it
  reports next are that stop, not a failure.
* :func:`command_report` -- a command's own final error report (``prog: error: ...``,
  ``error: ...``, docker's ``Error response from daemon: ...``, apt's ``E: ...``): its
  last word unless ordinary output follows.

Every pattern is anchored or bounded (tests/test_logs_patterns_bounded.py) and runs
on a bounded slice of the line.
"""

from __future__ import annotations

import re

from eagle3tui.logs import families

# The verdicts an ending reported here is given (the judge's families, in the registry).
NONZERO_EXIT = families.family_id("nonzero-exit")
PROCESS_DIED = families.family_id("process-died")

# The final sentence (or clause) of a line, headed by a verb of going on and "without":
# "Proceeding without generation config.", "continuing without the cache", "; running
# without X". At a sentence's or clause's start only: "cannot start training without a
# dataset" states a requirement, not what the program does next.
_GOES_ON_WITHOUT = re.compile(
    r"(?:^|[.;!]\s{1,3}|,\s{1,3}|\.\.\s{1,3})(?:(?:will|we|I|it)\s)?(?:proceed(?:ing|s)?|continu(?:ing|es?)|carry(?:ing)? on|"
    r"going on|running|starting|serving|loading)\s(?:anyway\s)?without\b[^.;!]{0,120}[.!]?\s*$",
    re.I,
)
GOES_ON_LITERALS = ("without",)


def goes_on_without(body: str) -> bool:
    """Whether ``body`` ends with the program saying it goes on without something."""
    tail = body[-200:]
    if "without" not in tail.lower():
        return False
    return _GOES_ON_WITHOUT.search(tail) is not None


# -- how an ending is reported, in any supervisor's or launcher's words -------------------
# An exit status reported for a process by whatever ran it, in shapes the judge's own
# exit-status pattern does not read: systemd's "Main process exited, code=dumped,
# status=11/SEGV" (code= names how, status= the status or signal), supervisord's "exited:
# worker (exit status 0; not expected)" (the supervisor's own verdict that the exit was a
# failure, whatever the status), any verb before "with exit code N" ("[Finished in 10534.3s
# with exit code 1]" of an editor's build system), a runner saying the process did not end
# well ("error: process didn't exit successfully: `x` (signal: 11)" of cargo, "did not
# terminate successfully" of a container runtime), systemd's verdict on a unit ("Failed with
# result 'core-dump'").
_EXIT_REPORTED = re.compile(
    r"\bcode=(?:exited|killed|dumped),\s?status=(?!0\b)\d{1,3}\b"
    r"|\(exit status -?\d{1,3}; not expected\)"
    r"|\bwith (?:exit|return) (?:code|status)\s?[=:]?\s?-?[1-9]\d{0,3}\b"
    r"|\b(?:did not|didn't|does not|doesn't) (?:exit|terminate|finish|complete) (?:successfully|cleanly|normally)\b"
    r"|\bFailed with result '(?!success')[\w-]{1,30}'",
    re.I,
)
# A supervisor that gave up on a part: it entered its failed state and will not be restarted
# ("gave up: worker entered FATAL state, too many start retries too quickly", systemd's
# "Unit x.service entered failed state.").
_GAVE_UP = re.compile(r"\bentered (?:the )?(?-i:FATAL|failed|FAILED) state\b", re.I)
# A part of the job, or a peer it needs, declared gone by whoever watches it ("The node with
# client ID x has been marked dead because the monitor has missed too many heartbeats").
_DECLARED_GONE = re.compile(
    r"\b(?:has been|have been|was|were|is|are) (?:marked|declared|considered|presumed|reported) (?:as )?"
    r"(?:dead|lost|failed|down|unreachable)\b",
    re.I,
)
# The part that could not come up named after the verb ("Failed to spawn container "102"",
# "Failed to setup container "c1"", "startup for container '102' failed"): the judge reads
# the subject-first order ("worker failed to start").
_PART = r"(?:container|pod|daemon|service|worker|process|server|engine|node|instance|job|runner|replica|executor)"
_PART_NOT_UP = re.compile(
    rf"\bfailed to (?:start|launch|spawn|set ?up|initiali[sz]e|run)\s(?:the\s)?(?:[\w-]{{1,20}}\s)?{_PART}\b"
    rf"|\bstart(?:up)?\s(?:of|for)\s(?:the\s)?(?:[\w-]{{1,20}}\s)?{_PART}\b[^.;!?]{{0,60}}\bfailed\b",
    re.I,
)
# A process-ending word as the record's verb, and after a colon what ended it: "ninja:
# build stopped: subcommand failed.". The cause must read as an error (the caller checks):
# "Training stopped: max steps reached" is an end the program planned.
_STOPPED_BECAUSE = re.compile(
    r"(?:^|:\s)(?:[\w-]{1,30}\s){0,2}(?:stopped|aborted|halted|terminated|interrupted)\s?:\s?(?P<cause>\S[^\n]{0,300})$",
    re.I,
)
ENDING_LITERALS = ("code=", "status", "exit", "success", "result '", "state", "marked", "declared", "considered",
                   "presumed", "reported", "failed to ", "failed", "stopped", "aborted", "halted", "terminated",
                   "interrupted")


def ending_reported(body: str, errorish: "object") -> tuple[str, bool] | None:
    """How ``body`` reports a process's failing end, if it does in a shape above.

    Returns ``(rule, final)``: ``rule`` is the judge's verdict name ("nonzero-exit" for
    an exit status, "process-died" otherwise); ``final`` is True when whoever watches the
    process says it will not come back (a supervisor that gave up), so no later restart
    can settle it. ``errorish`` is the judge's ``is_errorish``-like test for a cause.
    """
    head = body[:400]
    low = head.lower()
    if not any(lit in low for lit in ENDING_LITERALS):
        return None
    if _EXIT_REPORTED.search(head):
        return NONZERO_EXIT, False
    if "state" in low and _GAVE_UP.search(head):
        return PROCESS_DIED, True
    if _DECLARED_GONE.search(head) or "failed" in low and _PART_NOT_UP.search(head):
        return PROCESS_DIED, False
    m = _STOPPED_BECAUSE.search(head)
    if m is not None and errorish(m.group("cause")):  # type: ignore[operator]
        return PROCESS_DIED, False
    return None


# -- a stop someone asked for -------------------------------------------------------------
# The process says a stop was requested of it: docker compose's "Gracefully stopping...
# (press Ctrl+C again to force)", Postgres's "received fast shutdown request", a "^C" the
# terminal echoed at the start of a line. The endings it then reports (a FATAL record for a
# connection it terminates, a worker's exit status, compose's "ERROR: Aborting.") are that
# stop, not a failure. A signal's name alone is not such a line: a launcher's or a raylet's
# SIGTERM is how a failed job's other processes are stopped.
_STOP_REQUESTED = re.compile(
    r"\bGracefully stopping\b|\b(?:received|got)\s(?:an?\s)?(?:fast\s|smart\s|immediate\s)?shutdown request\b"
    r"|\b(?:shutdown|stop) requested\b|^\^C",
    re.I,
)
STOP_LITERALS = ("Gracefully stopping", "shutdown request", "stop request", "^C")


def stop_requested(text: str) -> bool:
    """Whether ``text`` says a stop was asked of the process that wrote it."""
    if not any(lit in text for lit in STOP_LITERALS):
        return False
    return _STOP_REQUESTED.search(text[:400]) is not None


# -- a command's own final error report ---------------------------------------------------
# The one line a command-line program prints on stderr when it gives up, with no logger
# header, in the convention many programs share: "<prog>: error: <msg>" (argparse, sbatch,
# srun, "slurmstepd: fatal: ..."), "error: <msg>" (cargo, git, tritonserver's "error: creating
# server: ..."), "Error: <msg>" (Go programs built on cobra: ollama, helm, kubectl plugins), docker's
# "Error response from daemon: <msg>" (after "docker: " when the CLI names itself), apt's
# "E: <msg>". Not git's bare "fatal: <msg>": git is mostly a subprocess of the program that
# writes the log (a version or hash looked up, "fatal: not a git repository"), and the
# program goes on. "error"/"fatal" in lower case only (a logger writes its level in capitals:
# "ERROR:root:x"). Not Python's exception line of class "error" (Python 2's socket.error,
# select.error: "error: [Errno 104] Connection reset by peer", the last line of a traceback
# a server logs for one request); a compiler's diagnostic carries a position ("x.c:3:5: error: ...",
# "error[E0425]: ...") that this shape does not admit. The line is
# the process's last word when nothing ordinary follows it; what does follow is read by the
# monitor, which settles it (a line of ordinary output after it: the process went on).
_COMMAND_REPORT = re.compile(
    r"(?:[\w.+-]{1,40}: )?error: (?=\S)(?!\[Errno )|[\w.+-]{1,40}: fatal: (?=\S)"
    r"|(?:[\w.+-]{1,40}: )?Error response from daemon: (?=\S)"
    r"|Error: (?=\S)"
    r"|E: (?=[A-Z])"
)
REPORT_LITERALS = ("rror: ", "atal: ", "E: ", "from daemon: ")


def command_report(text: str) -> bool:
    """Whether ``text`` (a line, its environment's prefixes peeled) is a command's own final error report."""
    head = text[:120]
    if not any(lit in head for lit in REPORT_LITERALS):
        return False
    return _COMMAND_REPORT.match(head) is not None
