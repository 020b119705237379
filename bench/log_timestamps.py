"""The time a recorded log line was written, from its own header, and the pauses a replay keeps.

A whole-log replay (bench/score_whole_logs.py) prints a recorded log as the process did.
Printed at a fixed pace, a job that was silent for ten minutes between two lines looks
like one that never paused; printed with the gaps its own timestamps give (each gap
capped, and the whole replay capped), the supervisor sees the log grow as it grew, within
a bench's time. Only a line's header is read (its first characters, after a worker tag
such as ``(APIServer pid=42) `` or ``[rank0]: ``): a date inside a message is no header.

Headers read (the shapes in tests/fixtures/whole_logs*): ISO dates (``2023-08-01
01:04:13,441``, ``time=2025-09-14T12:19:53.186+10:00``), slashed dates (``2025/11/05 -
13:24:14``, ``2025/11/05 13:24:14``), vLLM's ``INFO 06-25 16:28:35``, glog/absl's
``W0813 22:08:39.776000``, syslog's ``May 15 23:09:30``, ``date``'s ``Tue Apr 28 11:13:24
UTC 2026``, and a bare ``[04:10:50]`` at the start.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

HEAD = 64  # characters of a line (after its worker tag) a header may take
_TAG = re.compile(r"^(?:\([^()\n]{1,60}\)\s|\[rank\d{1,6}\]:\s?|\S{1,40}\s\|\s)")
_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
                                        "Nov", "Dec"), 1)}
_CLOCK = r"(\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?"
# (regex, which groups are month, day) in the order they are tried.
_SHAPES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b\d{4}-(\d{2})-(\d{2})[ T]" + _CLOCK), "md"),
    (re.compile(r"\b\d{4}/(\d{2})/(\d{2})(?: - | )" + _CLOCK), "md"),
    (re.compile(r"^\s*\[?[IWEF](\d{2})(\d{2}) " + _CLOCK), "md"),  # glog, absl, torch's C++ logger
    (re.compile(r"\b(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s{1,3}(\d{2})-(\d{2}) " + _CLOCK), "md"),
    (re.compile(r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) {1,2}(\d{1,2}) " + _CLOCK), "Md"),
    (re.compile(r"^\s*\[" + _CLOCK + r"\]"), ""),
]


def line_time(line: str) -> float | None:
    """Seconds (within a year: month and day count, the year does not) of ``line``'s header, or None."""
    text = line
    for _ in range(3):  # "(Worker pid=3) [rank0]: ..." has two tags
        m = _TAG.match(text)
        if not m:
            break
        text = text[m.end():]
    head = text[:HEAD]
    for rx, date in _SHAPES:
        m = rx.search(head)
        if m is None:
            continue
        g = m.groups()
        if date == "md":
            month, day, rest = int(g[0]), int(g[1]), g[2:]
        elif date == "Md":
            month, day, rest = _MONTHS[g[0]], int(g[1]), g[2:]
        else:
            month, day, rest = 0, 0, g
        hh, mm, ss, frac = rest
        if int(hh) > 23 or int(mm) > 59 or int(ss) > 60:
            continue
        seconds = ((month * 31 + day) * 24 + int(hh)) * 3600 + int(mm) * 60 + int(ss)
        return seconds + (float("0." + frac) if frac else 0.0)
    return None


def replay_pauses(lines: Sequence[str], gap_cap: float = 2.0, total_cap: float = 20.0,
                  pace: float = 0.003) -> list[float]:
    """The pause before each line: the gap its timestamp gives since the last stamped line.

    Each gap is capped at ``gap_cap`` seconds and, when they add up to more than
    ``total_cap``, all are scaled down to fit. A line without a header follows the line
    before it at once (a traceback is written in one go). A log without any header keeps
    the fixed ``pace`` per line, as before.
    """
    times = [line_time(x) for x in lines]
    if not any(t is not None for t in times):
        return [pace] * len(lines)
    out: list[float] = []
    last: float | None = None
    for t in times:
        gap = 0.0
        if t is not None:
            if last is not None and t > last:
                gap = min(gap_cap, t - last)
            last = t
        out.append(gap)
    total = sum(out)
    if total > total_cap > 0:
        out = [g * total_cap / total for g in out]
    return out
