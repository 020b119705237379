"""A cheap look at a followed log's unread bytes: may a fatal line be among them?

The driver coalesces the wake-ups of busy logs (many small writes, one pass),
but a fatal line must not wait for the pass: between passes it looks at what
each log has written since, with one keyword-automaton pass over the fatal
rules' literals (the rules' own prefilter keywords, so a line a fatal rule can
match always has one). A hit makes the pass run now. What a line means is
still decided by the monitor: a hit only decides *when* it reads.
"""

from __future__ import annotations

import os
from typing import Any

from eagle3tui.logs.rules import RuleSet

try:
    import ahocorasick_rs as _ahocorasick
except ImportError:  # pragma: no cover - a declared dependency
    _ahocorasick = None  # type: ignore[assignment]

# Bytes looked at per log per peek: a burst beyond it is read by the pass anyway.
PEEK_BYTES = 256 * 1024

_AUTOMATA: dict[int, tuple[RuleSet, Any]] = {}


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


class FatalPeek:
    """Looks at one log's bytes from the reader's offset on, each byte once."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._seen_to = 0  # bytes up to here were looked at already

    def ahead(self, offset: int, rules: RuleSet) -> bool:
        """True when the bytes past ``offset`` (the reader's) hold a fatal rule's keyword."""
        try:
            size = os.stat(self.path).st_size
        except OSError:
            return False
        start = max(offset, self._seen_to)
        if size <= start:
            if size < offset:
                self._seen_to = 0  # truncated: the reader starts over
            return False
        try:
            with open(self.path, "rb") as f:
                data = os.pread(f.fileno(), min(size - start, PEEK_BYTES), start)
        except OSError:
            return False
        self._seen_to = start + len(data)
        ac = _automaton(rules)
        if ac is None:
            return False
        if isinstance(ac, list):
            return any(k in data for k in ac)
        return bool(ac.find_matches_as_indexes(data))
