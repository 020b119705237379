"""A cheap look at a followed log's unread bytes: may a fatal line be among them?

The driver coalesces the wake-ups of busy logs (many small writes, one pass),
but a fatal line must not wait for the pass: between passes it looks at what
each log has written since, with one keyword-automaton pass over the fatal
rules' literals (the rules' own prefilter keywords, so a line a fatal rule can
match always has one). A keyword is not yet a fatal line: ``NCCL`` is in every
``NCCL INFO`` line, a fifth of a chatty 8-rank job's output, and a pass run for
each of those undid the coalescing. So the line holding a hit is then searched
with the patterns of the fatal rules that own the keyword (a rule this test
cannot mimic exactly, such as a user rule or an anchored pattern, counts as a
match). A hit makes the pass run now. What a line means is still decided by
the monitor: a hit only decides *when* it reads.
"""

from __future__ import annotations

import os
import re
from typing import Any

from eagle3tui.logs.rules import RuleSet

try:
    import ahocorasick_rs as _ahocorasick
except ImportError:  # pragma: no cover - a declared dependency
    _ahocorasick = None  # type: ignore[assignment]

# Bytes looked at per log per peek: a burst beyond it is read by the pass anyway.
PEEK_BYTES = 256 * 1024

_AUTOMATA: dict[int, tuple[RuleSet, Any]] = {}
_CONFIRMERS: dict[int, tuple[RuleSet, list[tuple[Any, ...] | None]]] = {}
# Lines searched already, with their answer (bounded; the same NCCL INFO lines come back).
_SEEN_LINES_MAX = 4096
# A line the monitor would cut (head and tail) or strip (colours) is not searched: a hit.
_LONG_LINE = 16 * 1024
# Pattern features a search of the whole raw line cannot reproduce for a segment of it:
# anchors (not a class's negation "[^"), lookarounds, inline flags.
_CANNOT_MIMIC = re.compile(r"(?<![\[\\])\^|(?<!\\)\$|\\[AZ]|\(\?[<=!a-zA-Z]")


def fatal_keywords(rules: RuleSet) -> list[bytes]:
    """The prefilter literals of the fatal rules (UTF-8)."""
    return sorted({k.encode("utf-8") for r in rules.rules if r.kind == "fatal" for k in r.keywords})


def _automaton(rules: RuleSet) -> Any:
    got = _AUTOMATA.get(id(rules))
    if got is not None and got[0] is rules:
        return got[1]
    kws = fatal_keywords(rules)
    ac: Any = None
    if kws and _ahocorasick is not None:
        # A DFA: twice the contiguous NFA's speed on GPU-job logs (the backlog scout reads GBs).
        ac = _ahocorasick.BytesAhoCorasick(kws, implementation=_ahocorasick.Implementation.DFA)
    elif kws:
        ac = kws  # no automaton: plain substring tests
    _AUTOMATA.clear()  # one rule set at a time (a reload replaces it)
    _AUTOMATA[id(rules)] = (rules, ac)
    return ac


def _confirmers(rules: RuleSet) -> list[tuple[Any, ...] | None]:
    """Per keyword of :func:`fatal_keywords`: the compiled patterns of the fatal rules owning it,
    or None when one of them cannot be checked here (then the keyword alone is a hit)."""
    got = _CONFIRMERS.get(id(rules))
    if got is not None and got[0] is rules:
        return got[1]
    out: list[tuple[Any, ...] | None] = []
    fatal = [r for r in rules.rules if r.kind == "fatal"]
    for kw in fatal_keywords(rules):
        owners = [r for r in fatal if kw in {k.encode("utf-8") for k in r.keywords}]
        if any(r.source == "user" or _CANNOT_MIMIC.search(r.pattern) for r in owners):
            out.append(None)
        else:
            out.append(tuple(r.regex for r in owners))
    _CONFIRMERS.clear()
    _CONFIRMERS[id(rules)] = (rules, out)
    return out


def _line_around(data: bytes, pos: int) -> tuple[int, int]:
    """Bounds of the line (ended by a newline or a carriage return) holding ``data[pos]``."""
    a = max(data.rfind(b"\n", 0, pos), data.rfind(b"\r", 0, pos)) + 1
    ends = [e for e in (data.find(b"\n", pos), data.find(b"\r", pos)) if e >= 0]
    return a, min(ends) if ends else len(data)


class FatalPeek:
    """Looks at one log's bytes from the reader's offset on, each byte once.

    Given the reader's own descriptor (``fd``), it looks at the file the
    reader reads, with two system calls (``fstat``, ``pread``); the driver
    peeks at every busy log every few milliseconds, and opening the path each
    time was most of a peek's cost. Without one it opens the path.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._seen_to = 0  # bytes up to here were looked at already
        self._file: tuple[int, int] | None = None  # (st_dev, st_ino) those bytes belong to
        self._lines: dict[tuple[bytes, int], bool] = {}  # (line, keyword): may a fatal pattern match?

    def ahead(self, offset: int, rules: RuleSet, fd: int | None = None) -> bool:
        """True when the bytes past ``offset`` (the reader's) hold a fatal rule's keyword."""
        try:
            if fd is None:
                with open(self.path, "rb") as f:
                    return self._look(f.fileno(), offset, rules)
            return self._look(fd, offset, rules)
        except OSError:
            return False

    def _look(self, fd: int, offset: int, rules: RuleSet) -> bool:
        st = os.fstat(fd)
        if self._file != (st.st_dev, st.st_ino):
            self._file = (st.st_dev, st.st_ino)  # another file (rotated): its bytes are new
            self._seen_to = 0
        size = st.st_size
        start = max(offset, self._seen_to)
        if size <= start:
            if size < offset:
                self._seen_to = 0  # truncated: the reader starts over
            return False
        data = os.pread(fd, min(size - start, PEEK_BYTES), start)
        # An unfinished last line is looked at again once it is finished (its
        # pattern may need its end); a peek's worth of one line is taken whole.
        done = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
        if done == 0 and len(data) < PEEK_BYTES:
            done = 0
        elif done == 0:
            done = len(data)
        self._seen_to = start + done
        ac = _automaton(rules)
        if ac is None:
            return False
        if isinstance(ac, list):
            return any(k in data for k in ac)
        hits = ac.find_matches_as_indexes(data)
        if not hits:
            return False
        confirm = _confirmers(rules)
        looked: set[tuple[int, int]] = set()
        for k, s, _e in hits:
            a, b = _line_around(data, s)
            if (a, k) in looked:
                continue
            looked.add((a, k))
            if self._matches(data[a:b], k, confirm[k]):
                return True
        return False

    def _matches(self, line: bytes, k: int, patterns: tuple[Any, ...] | None) -> bool:
        """Whether a fatal rule owning keyword ``k`` may match ``line``."""
        if patterns is None or len(line) > _LONG_LINE or b"\x1b" in line or b"^[[" in line:
            return True
        known = self._lines.get((line, k))
        if known is None:
            text = line.decode("utf-8", "replace")
            known = any(rx.search(text) for rx in patterns)
            if len(self._lines) >= _SEEN_LINES_MAX:
                self._lines.clear()
            self._lines[line, k] = known
        return known
