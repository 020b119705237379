"""Fatal lines found first in a backlog: a look ahead of a log reader that is behind.

A driver that was frozen (SIGSTOP, a swapped-out host, a long GC) or a stage
that writes faster than the monitor reads leaves a backlog of hundreds of MB.
The monitor reads it in order, POLL_BYTES a pass, so a fatal line in its middle
would be alerted only when the reader reaches it, tens of seconds late. The
scout reads ahead of the reader, each byte once, with one keyword-automaton
pass over the fatal rules' literals (the same literals as ``fatal_peek``); the
few lines with a hit are judged on their own, by the rule set and the judge the
monitor uses (``judge_line``). A line they call fatal outright (not one that
waits to see what the process does next) is reported at once, with the line
number the reader will give it; the reader's later event for that line is then
not alerted again (``StageWatch``). What a line means in context (a traceback, a
held error, a service that survived a request) is still the monitor's to say.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from eagle3tui.logs.follower import split_segments
from eagle3tui.logs.judge import judge_line
from eagle3tui.logs.rules import RuleSet
from eagle3tui.logs.workers import split_worker
from eagle3tui.supervisor.fatal_peek import _automaton
from eagle3tui.textsafe import printable

# Bytes read ahead per look: the automaton runs in C at several hundred MB/s, so
# one look costs ~0.1 s, and a 3 GB backlog is covered in seconds (its bytes are held
# once: the driver's peak RSS grows by this much while it is behind).
SCOUT_BYTES = 32 << 20
# Lines with a keyword judged per look at most (a flood of look-alikes costs a bound).
SCOUT_LINES = 2000
# Lines longer than this are judged by their head (the error is said first).
SCOUT_LINE_BYTES = 64 * 1024
# Fatal lines reported ahead of the reader per backlog: the first says what failed;
# the rest are read in order.
SCOUT_REPORTS = 3
_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_SHAPES = 4096


@dataclass(frozen=True)
class FatalAhead:
    """A line ahead of the reader that the rules and the judge call fatal."""

    line: int  # the line number the reader will give it
    offset: int  # its first byte in the log
    rule: str
    text: str
    explanation: str
    action: str
    worker: str | None


class BacklogScout:
    """Looks ahead of one log reader that is behind, for fatal lines."""

    def __init__(self, path: str, stage: str | None, stage_kind: str = "task") -> None:
        self.path = path
        self.stage = stage
        self.stage_kind = stage_kind
        self._pos = -1  # the next byte to look at (-1: start from the reader)
        self._line = 0  # complete lines before _pos
        self.reported: dict[int, FatalAhead] = {}  # line -> what was reported ahead
        self._not_fatal: dict[bytes, RuleSet] = {}  # line shapes judged not fatal (by these rules)

    def look(self, offset: int, line_no: int, rules: RuleSet, limit: int | None = None) -> list[FatalAhead]:
        """Fatal lines in the next SCOUT_BYTES ahead of the reader at ``offset``/``line_no``.

        ``limit``: no byte from here on is looked at (the log's size when a stop was asked for).
        """
        if self._pos < offset:
            # The reader caught up with the look (or it starts): go on from the reader.
            # Its line_no counts complete lines; an open line's rest is counted by its newline.
            self._pos, self._line = offset, line_no
        if len(self.reported) >= SCOUT_REPORTS:
            return []
        ac = _automaton(rules)
        if ac is None:
            return []
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return []
        try:
            want = SCOUT_BYTES if limit is None else min(SCOUT_BYTES, limit - self._pos)
            data = os.pread(fd, want, self._pos) if want > 0 else b""
        except OSError:
            return []
        finally:
            os.close(fd)
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            return []  # no complete line ahead yet
        # Lines past the last newline are left to the next look (no copy of the block is made).
        if isinstance(ac, list):
            hits = sorted({data.find(k, 0, cut) for k in ac} - {-1})
        else:
            hits = [start for _k, start, _end in ac.find_matches_as_indexes(data) if start < cut]
        found: list[FatalAhead] = []
        judged = 0
        last_start = -1
        stop_at = cut  # the look ends here: the next one goes on from it
        for at in hits:
            start = data.rfind(b"\n", 0, at) + 1
            if start == last_start:
                continue  # another keyword of a line already judged
            last_start = start
            end = data.find(b"\n", start)
            raw = data[start:min(end, start + SCOUT_LINE_BYTES)]
            shape = raw.translate(_DIGITS)
            if self._not_fatal.get(shape) is rules:
                continue  # a line like one judged before (numbers aside): not fatal either
            judged += 1
            if judged > SCOUT_LINES:
                stop_at = start  # this line and the rest in the next look
                break
            ahead = self._judge(raw, shape, self._pos + start, rules)
            if ahead is None:
                continue
            # Its number: the lines before it, counted only for the few lines reported.
            no = self._line + data.count(b"\n", 0, start) + 1
            if no not in self.reported:
                ahead = FatalAhead(no, *ahead)
                self.reported[no] = ahead
                found.append(ahead)
                if len(self.reported) >= SCOUT_REPORTS:
                    stop_at = end + 1
                    break
        self._line += data.count(b"\n", 0, stop_at)
        self._pos += stop_at
        return found

    def _judge(self, raw: bytes, shape: bytes, offset: int, rules: RuleSet) -> tuple[Any, ...] | None:
        """A fatal line's fields but its number, or None (its shape remembered as not fatal)."""
        text = raw.decode("utf-8", errors="replace")
        for seg in split_segments(text.rstrip("\r")):
            worker, rest = split_worker(seg)
            rule = rules.classify(rest, self.stage)
            verdict = judge_line(rest, rule, self.stage_kind)
            if verdict is None or verdict.kind != "fatal" or verdict.pending or verdict.recoverable \
                    or verdict.held:
                continue
            return (offset, verdict.rule, printable(rest)[:2000], verdict.explanation, verdict.action,
                    worker or None)
        if len(self._not_fatal) >= _SHAPES:
            self._not_fatal.clear()
        # Lines that differ only in their numbers (a warning every step, on every rank)
        # are judged once: only a fatal verdict needs the line's own text.
        self._not_fatal[shape] = rules
        return None
