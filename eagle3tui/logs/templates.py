"""Catch-up by line template: a long log is mostly the same few lines.

A healthy run prints the same messages over and over with different
numbers: step counters, timestamps, throughput figures, request ids. Map
every digit to ``0`` and those lines become one *template* (the digit
count, and so every character position, is kept). Over a block of a log:

1. ``data.translate`` and ``split`` make the templates of all lines in C;
2. only templates not seen before are looked at in Python, by one
   Aho-Corasick pass over the rule keywords with their digits mapped the
   same way (so a template is a candidate whenever one of its lines may be);
3. ``itertools.compress`` picks the candidate lines, again in C.

Whatever a template's lines mean is decided on the first one and reused
(:class:`Template`). Digits counted by a pattern (``\\d{1,6}``) mean the
same for every value, and their count is part of the template. Where a
digit's *value* can matter:

* a keyword or a rule regex that names a digit (``[W0``, ``HTTP/1.1" 5``):
  the template is ``EXACT``: each line gets its own keyword pass and rule
  match, and the meaning is reused per (rules, matching rule);
* a judge detector that reads a value (exit codes, NCCL's ``-> 2``): the
  template is ``SENSITIVE`` and each line is judged on its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from eagle3tui.logs.rules import RuleSet, _sre_parse

try:
    import ahocorasick_rs as _ahocorasick
except ImportError:  # pragma: no cover - a declared dependency
    _ahocorasick = None  # type: ignore[assignment]

TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
MAX_TEMPLATE = 4096  # longer lines are each judged on their own
MAX_TEMPLATES = 50_000  # forget them all beyond this (a log of unique lines)
# The judge's detectors that read a digit's value (lower-cased literals one
# of which occurs in any of their matches): exit/return codes and statuses,
# "non-zero", NCCL's error trace "file.cc:123 -> 2", a barrier's worker_count.
_EXITISH = (b"exit", b"return", b"failed")
_CODEISH = (b"code", b"status", b"zero")

BY_TEMPLATE, EXACT, SENSITIVE = 0, 1, 2


# An access line's status column on a template (digits zeroed): Gin's "| 500 |", which
# judge.py reads as a failed request. (The common format's '"POST /x HTTP/1.1" 500' is read by
# the request-failed rule, whose keyword 'HTTP/1.1" 5' already makes its template EXACT.)
_STATUS_COLUMN = re.compile(rb"\|\s{1,3}000\s{1,3}\|")
# judge.py's NCCL error trace ("socket.cc:484 -> 2") on a template: only a line of this
# shape has an arrow whose value counts (NCCL_DEBUG=INFO's "0[0] -> 1[1] via P2P" has none).
_NCCL_TRACE_TEMPLATE = re.compile(rb"\.(?:cc|cu|h|cpp):0{1,6}\s->\s0")


def judge_valued(low: bytes) -> bool:
    """Whether a judge detector may read a digit's value in this (lower-cased) line."""
    if b"->" in low and _NCCL_TRACE_TEMPLATE.search(low) or b"worker_count=" in low:
        return True  # NCCL's error trace "file.cc:123 -> 2"; a barrier's count against its world size
    if b"000" in low and _STATUS_COLUMN.search(low):
        return True
    return any(w in low for w in _EXITISH) and any(w in low for w in _CODEISH)


def digit_valued(pattern: str) -> bool:
    """Whether a match of ``pattern`` can depend on which digit a line has.

    True for literal digits and digit ranges (``5\\d\\d``, ``[1-9]``); False
    when digits only appear as ``\\d`` or through ``\\w``, ``.``, ``\\S``
    (every digit behaves alike). Unparsable patterns count as valued.
    """
    try:
        parsed = _sre_parse.parse(pattern)
    except Exception:
        return True

    def walk(seq: Any) -> bool:
        for op, av in seq:
            name = str(op)
            if name in ("LITERAL", "NOT_LITERAL"):
                if 48 <= av <= 57:
                    return True
            elif name == "IN":
                for iop, iav in av:
                    iname = str(iop)
                    if iname in ("LITERAL", "NOT_LITERAL") and 48 <= iav <= 57:
                        return True
                    if iname == "RANGE" and iav[0] <= 57 and iav[1] >= 48 and not (iav[0] <= 48 and iav[1] >= 57):
                        return True  # part of the digits, not all of them
            elif name == "BRANCH":
                if any(walk(alt) for alt in av[1]):
                    return True
            elif name == "SUBPATTERN":
                if walk(av[-1]):
                    return True
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                if walk(av[2]):
                    return True
            elif name in ("ASSERT", "ASSERT_NOT"):
                if walk(av[1]):
                    return True
            elif name == "ATOMIC_GROUP":
                if walk(av):
                    return True
            elif name in ("GROUPREF", "GROUPREF_EXISTS"):
                return True
        return False

    return walk(parsed)


def digit_tests(pattern: str) -> list[frozenset[int]] | None:
    """The sets of digits ``pattern`` tells apart (one per literal digit or
    digit range), or None when it can compare digits with each other
    (backreferences): then every digit value counts."""
    try:
        parsed = _sre_parse.parse(pattern)
    except Exception:
        return None
    tests: list[frozenset[int]] = []
    digits = range(48, 58)

    def walk(seq: Any) -> bool:
        for op, av in seq:
            name = str(op)
            if name in ("LITERAL", "NOT_LITERAL"):
                if 48 <= av <= 57:
                    tests.append(frozenset({av}))
            elif name == "IN":
                for iop, iav in av:
                    iname = str(iop)
                    if iname in ("LITERAL", "NOT_LITERAL") and 48 <= iav <= 57:
                        tests.append(frozenset({iav}))
                    elif iname == "RANGE":
                        tests.append(frozenset(c for c in digits if iav[0] <= c <= iav[1]))
            elif name == "BRANCH":
                if not all(walk(alt) for alt in av[1]):
                    return False
            elif name == "SUBPATTERN":
                if not walk(av[-1]):
                    return False
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                if not walk(av[2]):
                    return False
            elif name in ("ASSERT", "ASSERT_NOT"):
                if not walk(av[1]):
                    return False
            elif name == "ATOMIC_GROUP":
                if not walk(av):
                    return False
            elif name in ("GROUPREF", "GROUPREF_EXISTS"):
                return False
        return True

    return tests if walk(parsed) else None


def projection(patterns: list[str]) -> bytes:
    """A ``bytes.translate`` table mapping each digit to the smallest digit
    that no test of ``patterns`` tells apart from it (other bytes unchanged).

    A regex sees a character only through its tests; two digits that pass
    the same tests are interchangeable anywhere in a line, so two lines
    equal after this mapping match every one of ``patterns`` alike.
    """
    tests: list[frozenset[int]] = []
    for p in patterns:
        t = digit_tests(p)
        if t is None:
            return bytes(range(256))  # every digit value counts
        tests.extend(t)
    table = bytearray(range(256))
    seen: dict[tuple[bool, ...], int] = {}
    for c in range(48, 58):
        sig = tuple(c in t for t in tests)
        table[c] = seen.setdefault(sig, c)
    return bytes(table)


def _build(rules: RuleSet) -> tuple[Any, list[frozenset[int]], list[dict[bytes, tuple[int, ...]]], frozenset[int]]:
    """The automaton over digit-mapped keywords; per mapped keyword its rules
    (digit-free keywords) or its original keywords with their rules (keywords
    with digits); the rules whose regex reads a digit's value."""
    valued = frozenset(i for i, r in enumerate(rules.rules) if digit_valued(r.pattern))
    norm: dict[bytes, int] = {}
    norm_rules: list[set[int]] = []
    originals: list[dict[bytes, tuple[int, ...]]] = []
    for kw, ridx in zip(rules.keyword_bytes, rules.keyword_rules):
        nk = kw.translate(TO_ZERO)
        j = norm.setdefault(nk, len(norm))
        if j == len(norm_rules):
            norm_rules.append(set())
            originals.append({})
        norm_rules[j].update(ridx)
        if nk != kw or b"0" in kw:
            originals[j][kw] = tuple(ridx)
    if not norm:
        return None, [], [], valued
    for nk, j in norm.items():
        # Every digit value of a keyword leads to the same rules ("[W0" ... "[W9"
        # all name the warning rule): its digits cannot change a line's rules,
        # so it is a digit-free keyword for the templates.
        table = originals[j]
        ndig = sum(nk.count(d) for d in b"0")
        if table and len(table) == 10**ndig and len(set(table.values())) == 1 and ndig <= 2:
            originals[j] = {}
    ac = _ahocorasick.BytesAhoCorasick(list(norm), implementation=_ahocorasick.Implementation.DFA)
    return ac, [frozenset(r) for r in norm_rules], originals, valued


@dataclass(slots=True, eq=False)
class Template:
    """A candidate template and what its lines mean, once known.

    ``idx`` holds the rules of the digit-free keywords it contains (exact
    for each of its lines; ``keyed``: it contains one), ``digit_keywords``
    the keywords with digits that may occur in a line of it, with their
    rules: :meth:`TemplateIndex.line_rules` gives a line's rules as
    :meth:`RuleSet.scan` would. The monitor fills ``layout`` (where the
    worker, message and source sit; the line's flags) and ``verdicts``: per
    key, the judge's verdict and what :meth:`StageLogMonitor._scan_templates`
    needs to emit it without more work (None: it takes the general path).
    The key is None for ``BY_TEMPLATE``, else the line's rules and what they
    can tell apart of its digits (:meth:`TemplateIndex.value_key`).
    """

    idx: tuple[int, ...]
    mode: int
    keyed: bool = True
    # (start, end, {keyword: rules}): where a keyword with digits may sit.
    # Digits keep their positions in a template, so a line holds one of
    # those keywords exactly where the template holds its digit-mapped form.
    digit_keywords: tuple[tuple[int, int, dict[bytes, tuple[int, ...]]], ...] = ()
    layout: Any = None
    verdicts: dict[Any, Any] | None = None
    fixed: Any = None  # verdicts[None] of a BY_TEMPLATE template, once known
    # (rest_off, wspan, generic, kind, rule, explanation, action, listed): a BY_TEMPLATE
    # template whose every line is one event of a fixed verdict and no flag (the scan's
    # hot path: most warnings of a catch-up).
    hot: Any = None
    # (start, end, {bytes there: (rules, digit projection)}): an EXACT template with one
    # place a keyword with digits can sit; a line's rules follow from the bytes there.
    one_kw: Any = None
    rules_with: dict[tuple[bytes, ...], tuple[int, ...]] = field(default_factory=dict)  # by digit keywords found
    projection: bytes | None = None  # EXACT without digit keywords: its rules' digit projection
    # Its lines change nothing but a count (an info verdict, no flag) or
    # nothing at all: a block scan counts them in C instead of visiting
    # them. Such a template is false, so ``compress`` leaves its lines out.
    quiet: bool = False
    inert: bool = False
    key: bytes = b""  # the template itself (its key in TemplateIndex.by_template)


# What TemplateIndex.by_template holds for a quiet or an inert template once
# known: falsy, so that ``compress`` leaves its lines out in C, and the count
# of quiet lines is one ``list.count``. The Template itself is in ``held``.
QUIET = 0
INERT = ""


class TemplateIndex:
    """Templates of a rule set's candidate lines (see module doc)."""

    def __init__(self, rules: RuleSet, markers: list[bytes] | None = None,
                 progress_shape: re.Pattern[bytes] | None = None) -> None:
        """``markers``: literals of progress lines (no digits), to find the last of them by template;
        ``progress_shape``: a pattern of progress lines no literal marks (digits match it zeroed too)."""
        self.rules = rules
        self.usable = _ahocorasick is not None and rules.accelerated and not rules.has_unkeyed
        # The automaton depends on the rule set only: built once per set.
        parts = getattr(rules, "_template_parts", None)
        if parts is None:
            parts = _build(rules) if self.usable else (None, [], [], frozenset())
            rules._template_parts = parts  # type: ignore[attr-defined]
        self._ac, self._norm_rules, self._originals, self.valued = parts
        self.usable = self.usable and self._ac is not None
        self.by_template: dict[bytes, Template | None] = {}
        # Templates holding a progress marker (a digit-free literal occurs in
        # a template exactly where it occurs in each of its lines).
        self.progress: set[bytes] = set()
        self._shape = progress_shape
        self._markers = (
            _ahocorasick.BytesAhoCorasick(markers) if markers and _ahocorasick is not None else None
        )
        self.quiet: list[Template] = []  # templates whose lines are only counted (see Template.quiet)
        self.held: dict[bytes, Template] = {}  # quiet and inert templates, whose by_template entry is a mark
        self._projections: dict[tuple[int, ...], bytes | None] = {}

    def line_rules(self, e: Template, raw: bytes) -> tuple[int, ...] | None:
        """What :meth:`RuleSet.scan` gives the line ``raw`` of template ``e``."""
        # A list, not ``found += (kw,)``, and each place's table asked for the few
        # distinct keywords only: a line of thousands of keyword places ("E1206 ..."
        # repeated over 64 KiB) stays linear in them, not quadratic.
        hits: list[bytes] | None = None  # no list made for the common line (no keyword place)
        for start, end, table in e.digit_keywords:
            kw = raw[start:end]
            if kw in table:
                if hits is None:
                    hits = [kw]
                else:
                    hits.append(kw)
        if hits is None:
            return e.idx if e.keyed else None
        found = tuple(hits)
        got = e.rules_with.get(found)
        if got is None:
            rs = set(e.idx)
            kws = set(found)
            for _start, _end, table in e.digit_keywords:
                for kw in kws:
                    if kw in table:
                        rs.update(table[kw])
            got = tuple(sorted(rs))
            if len(e.rules_with) < 256:
                e.rules_with[found] = got
        return got

    def value_key(self, idx: tuple[int, ...], raw: bytes) -> bytes:
        """What the rules ``idx`` can tell apart of the digits of the line ``raw``.

        ``b""`` when none of them reads a digit's value; else the line with
        each digit mapped as :func:`projection` does for those rules.
        """
        table = self._projections.get(idx, b"?")
        if table == b"?":
            table = self.projection_of(idx)
        return raw.translate(table) if table is not None else b""

    def projection_of(self, idx: tuple[int, ...]) -> bytes | None:
        """The :func:`projection` of the digit-valued rules among ``idx`` (None: none is)."""
        table = self._projections.get(idx, b"?")
        if table == b"?":
            rules = self.rules.rules
            valued = [rules[i].pattern for i in idx if i in self.valued]
            table = self._projections[idx] = projection(valued) if valued else None
        return table

    def mark(self, e: Template, quiet: bool) -> None:
        """``e`` turned out quiet (its lines only add to the info count) or inert (they change nothing)."""
        if quiet:
            e.quiet = True
            self.quiet.append(e)
        else:
            e.inert = True
        if self.by_template.get(e.key) is e:
            self.held[e.key] = e
            self.by_template[e.key] = QUIET if quiet else INERT

    def template(self, entry: Any, temp: bytes) -> Template | None:
        """The Template behind a ``by_template`` entry (a mark stands for a held one)."""
        if entry is None or entry.__class__ is Template:
            return entry
        return self.held.get(temp)

    def full(self, adding: int) -> bool:
        """Whether ``adding`` more templates would pass the bound (then all are forgotten)."""
        return len(self.by_template) + adding > MAX_TEMPLATES

    def learn(self, templates: set[bytes]) -> None:
        """Classify templates not seen before (forgetting all others past the bound)."""
        table = self.by_template
        if self.full(len(templates)):
            table.clear()
            self.quiet.clear()
            self.held.clear()
            self.progress.clear()
        markers = self._markers
        if markers is not None:
            # A template lacks its line's newline; markers that end a line ("/s\n") need it back.
            self.progress.update(t for t in templates if markers.find_matches_as_indexes(t + b"\n"))
        shape = self._shape
        if shape is not None:
            self.progress.update(t for t in templates if shape.search(t))
        ac = self._ac
        assert ac is not None
        norm_rules = self._norm_rules
        originals = self._originals
        valued = self.valued
        for t in templates:
            found = ac.find_matches_as_indexes(t, overlapping=True)
            if not found:
                table[t] = None
                continue
            rs: set[int] = set()
            keyed = False
            dk: list[tuple[int, int, dict[bytes, tuple[int, ...]]]] = []
            for j, start, end in found:
                if originals[j]:
                    dk.append((start, end, originals[j]))
                else:
                    keyed = True
                    rs |= norm_rules[j]
            if len(t) > MAX_TEMPLATE or b"\r" in t or judge_valued(t.lower()):
                mode = SENSITIVE
            elif dk or not rs.isdisjoint(valued):
                mode = EXACT
            else:
                mode = BY_TEMPLATE
            e = table[t] = Template(tuple(sorted(rs)), mode, keyed, tuple(dk), key=t)
            if mode == EXACT and len(dk) == 1:
                e.one_kw = (dk[0][0], dk[0][1], {})
            if mode == EXACT and not dk:
                # Its rules are the same on every line: only their digit
                # projection varies (what value_key gives, without the lookup).
                e.projection = self.projection_of(e.idx)
