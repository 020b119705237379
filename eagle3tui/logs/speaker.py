"""Who is talking: the process that wrote a line, and the processes a line is about.

A server made of a master and its workers writes one log: gunicorn's master
``[3129704]`` reports ``[CRITICAL] WORKER TIMEOUT (pid:3129714)``, kills that
worker and boots another; the killed worker itself writes ``[3129714] [INFO]
Worker exiting (pid: 3129714)``. Read without the speaker, that last line says
"the process is going down" and makes the master's report the error that ended
the server (benoitc/gunicorn#3233). With the speaker, it is the end of the
very worker the master said it stops: not news about the server.

Read here: the process id a header carries (gunicorn's ``[time] [pid]
[LEVEL]``, nginx's ``[level] pid#tid:``, a worker prefix's ``pid=N``), the
process ids a message names (``(pid:N)``, ``with pid: N``, ``PID N``), and
whether a line calls its own speaker a worker. Used only while an error is
held (:mod:`eagle3tui.logs.monitor`), never on the catch-up path. Every pattern
is anchored or bounded and runs on the first :data:`HEAD` characters.
"""

from __future__ import annotations

import re

HEAD = 400
# A header's process id. gunicorn: "[2024-07-05 09:13:44 +0200] [3129704] [CRITICAL] ..." (before
# 19.x: "2012-05-20 16:39:46 [23845] [INFO] ..."); nginx: "[error] 19985#0: *5901 ..." with or
# without its date before it.
_HEADER_PID = re.compile(
    r"\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:\s[+-]\d{4})?\]?\s\[(\d{1,10})\]\s\["
    r"|(?:\d{4}/\d\d/\d\d\s\d\d:\d\d:\d\d\s)?\[(?:emerg|alert|crit|error|warn|notice|info|debug)\]\s(\d{1,10})#\d"
)
# A worker prefix's process id, in what comes before a line's message: "(EngineCore_DP0 pid=323240) ".
_PREFIX_PID = re.compile(r"\bpid=(\d{1,10})\b")
# A process id a message names: "WORKER TIMEOUT (pid:26255)", "Worker exiting (pid: 3129714)",
# "Booting worker with pid: 26300", "Worker with PID 88666 exited".
_NAMED_PID = re.compile(r"\bpid\b[:=]?\s?(\d{1,10})\b", re.I)
# A line that names its own speaker as a part of a larger server: a worker, child or
# subprocess, by the speaker's own pid ("[3129714] [INFO] Worker exiting (pid: 3129714)").
_PART_PID = re.compile(
    r"\b(?:worker|child|subprocess|replica)\b[^.;!?]{0,40}?\bpid\b[:=]?\s?(\d{1,10})\b", re.I
)


def speaker(rest: str, before: str = "") -> str | None:
    """The process id of the process that wrote a line, or None when the line does not say.

    ``rest`` is the line from its log header on (worker prefix removed); ``before``
    what came before it (the worker prefix, whose ``pid=N`` names the speaker).
    """
    m = _HEADER_PID.match(rest, 0, HEAD)
    if m is not None:
        return m.group(1) or m.group(2)
    if before and "pid=" in before:
        found = _PREFIX_PID.findall(before[-HEAD:])
        if found:
            return found[-1]  # nested prefixes name the innermost process last
    return None


def named_pids(text: str) -> frozenset[str]:
    """The process ids that the message of a line names."""
    if "pid" not in text[:HEAD].lower():
        return frozenset()
    return frozenset(_NAMED_PID.findall(text, 0, HEAD))


def calls_part(text: str, pid: str) -> bool:
    """Whether the line calls process ``pid`` a worker, child or subprocess (its own speaker or another)."""
    return any(m.group(1) == pid for m in _PART_PID.finditer(text, 0, HEAD))


def part_ending(held_by: str | None, held_about: frozenset[str], text: str, by: str | None) -> bool:
    """Whether an ending line is the end of a part, not of whoever wrote the held error.

    ``held_by`` wrote the held error, which names the processes ``held_about``;
    ``text`` is the ending line, written by ``by``. A part's end is said either by
    the part itself, another process than ``held_by`` that the held error named or
    that calls itself a worker ("[3129714] [INFO] Worker exiting (pid: 3129714)"),
    or by anyone about another process that the held error named or that the line
    calls a worker ("[9] [WARNING] Worker with pid 223 was terminated due to signal
    9"). An ending said by the writer of the error about itself, by an unknown
    process about no named one, or by the master ("Shutting down: Master") is not a
    part's; nor is a part's end for the error that this part wrote.
    """
    if by is not None and held_by is not None and by != held_by and (by in held_about or calls_part(text, by)):
        return True
    about = named_pids(text) - {by}
    if not about or held_by in about:
        return False
    return not about.isdisjoint(held_about) or any(calls_part(text, p) for p in about)
