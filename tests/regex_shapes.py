"""Shapes of a regex's parse tree that make Python's backtracking ``re`` super-linear.

Shared by the tests that hold log-text patterns to bounded work
(tests/test_logs_headers.py, tests/test_logs_patterns_bounded.py).

:func:`findings` reads a pattern the way ``sre`` runs it: as a Glushkov
automaton (one state per character the pattern can consume, no empty moves),
where each path a backtracking matcher may try is a path of the automaton.
Its cost on a line of ``n`` characters grows

* exponentially when some state can come back to itself by two different
  paths over the same text (``(a+)+``, ``(a|a)*``: "EDA", nested or ambiguous
  repetition);
* as ``n**2`` (or worse) when two different looping states ``p`` and ``q``
  read the same text ``w`` going ``p -> p``, ``p -> q`` and ``q -> q``
  ("IDA": ``\\s*\\S*\\s*x``, ``\\d+\\.?\\d+x``), the text can then fail
  after ``q`` (a tail that accepts whatever follows, as ``.*$``, cannot
  fail, so its search stops at the first try);
* and ``search`` adds a state of its own before the pattern: the start
  position, which loops over every character. An unanchored pattern whose
  loop can run over what the start position skips and then fail (``\\s+$``,
  ``[^x]*x`` searched in a line without ``x``) costs ``n**2`` over the line:
  every start position reruns the loop to the end.

Besides those: a backreference (``\\1``: no automaton, ``sre`` may backtrack
into it) and a lookaround holding an unbounded repeat (each try reruns it
to the end) are reported as they are.

Counted repeats ``{m,n}`` cannot be pumped: they cost at most a constant per
try (``n`` characters, however long the line), and are read as two copies. That
constant is what bench/bench_adversarial.py measures.

A failing suffix needs a place where the match can fail: a loop after which the
pattern may end (``\\d+(?:\\.\\d+)?``) succeeds there whatever follows, unless
a ``\\b`` or a lookaround stands after it; one that reaches ``$`` over any
character (``(.*)$``) cannot fail either. And a search start is only a start
where the pattern's leading guard allows it: ``(?<!\\d)\\d+`` or ``\\b\\w+``
cannot start inside a run of what its loop reads, so the loop runs once per
run, not once per character. The alternatives of a top-level ``|`` are read
one by one, each with its own guard.

Characters are judged on a finite alphabet of representatives (every ASCII
character, and a few others that classes like ``\\w``, ``\\d`` and ``\\s``
tell apart in Unicode), so two classes overlap here exactly when they share
one of those.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Any

try:
    import re._parser as sre_parse  # type: ignore[import-not-found]
    from re._constants import MAXREPEAT  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse  # type: ignore[no-redef]
    from sre_constants import MAXREPEAT  # type: ignore[no-redef]

_STR_ALPHABET = [chr(i) for i in range(128)] + ["é", "Ā", "█", "\u00a0", "\u0663", "\u2028", "\ufffd", "\x85", "ß"]
_BYTES_ALPHABET = [bytes([i]) for i in range(128)] + [b"\x85", b"\xa0", b"\xc3", b"\xff"]
_REPEATS = ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
_ANCHORS = ("AT_BEGINNING", "AT_BEGINNING_STRING", "AT_BEGINNING_LINE")
_ENDS = ("AT_END", "AT_END_STRING", "AT_END_LINE")
_VISIT_CAP = 400_000  # product states one check may visit before it gives up and says so


def repeats(pattern: str) -> list[tuple[int, bool]]:
    """(max count, whether a repeat sits inside it) for every repeat of ``pattern``'s parse tree."""
    out: list[tuple[int, bool]] = []

    def walk(seq: object) -> bool:
        """Whether ``seq`` holds a repeat of more than one; records each repeat met."""
        found = False
        for op, av in seq:  # type: ignore[attr-defined]
            name = str(op)
            if name in _REPEATS:
                inner = walk(av[2])
                out.append((MAXREPEAT if av[1] == MAXREPEAT else av[1], inner))
                found = found or av[1] > 1
                found = found or inner
            elif name == "SUBPATTERN":
                found = walk(av[-1]) or found
            elif name == "BRANCH":
                for alt in av[1]:
                    found = walk(alt) or found
            elif name in ("ASSERT", "ASSERT_NOT"):
                found = walk(av[1]) or found
        return found

    walk(sre_parse.parse(pattern))
    return out


@dataclass(frozen=True)
class Finding:
    """One super-linear shape: ``kind`` and a description of where."""

    kind: str  # "exponential", "polynomial", "search-quadratic", "backreference", "lookaround"
    where: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.where}"


class _Alphabet:
    def __init__(self, is_bytes: bool, flags: int) -> None:
        self.chars = _BYTES_ALPHABET if is_bytes else _STR_ALPHABET
        self.all = (1 << len(self.chars)) - 1
        self.newline = 1 << self.chars.index(b"\n" if is_bytes else "\n")
        self.is_bytes = is_bytes
        self.flags = flags
        self._cat: dict[str, int] = {}

    def set_of(self, test: re.Pattern[Any]) -> int:
        return sum(1 << i for i, c in enumerate(self.chars) if test.fullmatch(c))

    def category(self, name: str, flags: int) -> int:
        key = f"{name}/{flags & re.ASCII}"
        if key not in self._cat:
            esc = {"CATEGORY_DIGIT": r"\d", "CATEGORY_NOT_DIGIT": r"\D", "CATEGORY_SPACE": r"\s",
                   "CATEGORY_NOT_SPACE": r"\S", "CATEGORY_WORD": r"\w", "CATEGORY_NOT_WORD": r"\W"}[name]
            pat: Any = esc.encode() if self.is_bytes else esc
            self._cat[key] = self.set_of(re.compile(pat, flags & re.ASCII))
        return self._cat[key]

    def literal(self, code: int, flags: int) -> int:
        c = bytes([code]) if self.is_bytes else chr(code)
        m = 0
        alts = {c, c.lower(), c.upper()} if flags & re.IGNORECASE else {c}
        for a in alts:
            if a in self.chars:
                m |= 1 << self.chars.index(a)
        if not m:
            # A character outside the alphabet: stands for itself only, so it
            # overlaps nothing but the classes that contain every character.
            m = 0
        return m

    def describe(self, m: int) -> str:
        for name, esc in (("\\d", r"\d"), ("\\s", r"\s"), ("\\w", r"\w"), ("\\S", r"\S"), ("\\D", r"\D"),
                          ("\\W", r"\W")):
            pat: Any = esc.encode() if self.is_bytes else esc
            if m == self.set_of(re.compile(pat)):
                return name
        if m == self.all:
            return "any"
        if m == self.all & ~self.newline:
            return "."
        n = bin(m).count("1")
        if n > self.all.bit_length() // 2:
            out = [c for i, c in enumerate(self.chars) if not m >> i & 1 and i < 128]
            return "[^" + "".join(repr(c)[1:-1] if not self.is_bytes else repr(c)[2:-1] for c in out[:20]) + "]"
        inn = [c for i, c in enumerate(self.chars) if m >> i & 1]
        return "[" + "".join(repr(c)[1:-1] if not self.is_bytes else repr(c)[2:-1] for c in inn[:20]) + \
            ("..." if len(inn) > 20 else "") + "]"


class _Glushkov:
    """Positions, their character sets and who may follow whom."""

    def __init__(self, ab: _Alphabet) -> None:
        self.ab = ab
        self.chars: list[int] = []
        self.follow: list[dict[int, int]] = []  # position -> {next position: ways (1 or 2)}
        self.loops: list[bool] = []  # position inside a repeat that can run unboundedly
        self.notes: list[Finding] = []
        self.guarded: set[int] = set()  # followed by \b or a lookaround
        self.end_guarded: set[int] = set()  # followed by $ (or \Z)

    def new(self, m: int, looping: bool) -> int:
        self.chars.append(m)
        self.follow.append({})
        self.loops.append(looping)
        return len(self.chars) - 1

    def atom(self, name: str, av: Any, flags: int) -> int | None:
        ab = self.ab
        if name == "LITERAL":
            return ab.literal(av, flags)
        if name == "NOT_LITERAL":
            return ab.all & ~ab.literal(av, flags)
        if name == "ANY":
            return ab.all if flags & re.DOTALL else ab.all & ~ab.newline
        if name == "IN":
            neg = False
            m = 0
            for op, a in av:
                n = str(op)
                if n == "NEGATE":
                    neg = True
                elif n == "LITERAL":
                    m |= ab.literal(a, flags)
                elif n == "RANGE":
                    for code in range(a[0], min(a[1], 0x10FFFF) + 1) if a[1] - a[0] < 70000 else ():
                        m |= ab.literal(code, flags)
                elif n == "CATEGORY":
                    m |= ab.category(str(a), flags)
            return ab.all & ~m if neg else m
        return None

    def link(self, last: dict[int, int], first: dict[int, int]) -> None:
        """Edges from each of ``last`` to each of ``first``, counting the ways (capped at 2)."""
        for x, a in last.items():
            fx = self.follow[x]
            for y, b in first.items():
                fx[y] = min(2, fx.get(y, 0) + a * b)

    def build(self, seq: Any, flags: int, looping: bool) -> tuple[int, dict[int, int], dict[int, int]]:
        """(empty ways, first, last) of ``seq``, each position with its number of ways (capped
        at 2: two ways over the same text is what makes backtracking blow up); adds its
        positions and follow edges."""
        empty, first, last = 1, {}, {}
        for op, av in seq:
            name = str(op)
            m = self.atom(name, av, flags)
            if m is not None:
                p = self.new(m, looping)
                e2, f2, l2 = 0, {p: 1}, {p: 1}
            elif name == "SUBPATTERN":
                f = (flags | av[1]) & ~av[2]
                e2, f2, l2 = self.build(av[3], f, looping)
            elif name == "ATOMIC_GROUP":
                e2, f2, l2 = self.build(av, flags, looping)
            elif name == "BRANCH":
                e2, f2, l2 = 0, {}, {}
                for alt in av[1]:
                    a, b, c = self.build(alt, flags, looping)
                    e2 = min(2, e2 + a)
                    f2 = _add(f2, b)
                    l2 = _add(l2, c)
            elif name in _REPEATS:
                lo, hi, body = av
                if hi == 0:
                    continue
                if hi == MAXREPEAT:
                    e2, f2, l2 = self.build(body, flags, True)
                    self.link(l2, f2)
                    e2 = 1 if lo == 0 else e2
                elif hi == 1:
                    e2, f2, l2 = self.build(body, flags, looping)
                    e2 = min(2, e2 + 1) if lo == 0 else e2
                else:  # two copies: the second optional unless at least two are required
                    a1, b1, c1 = self.build(body, flags, looping)
                    a2, b2, c2 = self.build(body, flags, looping)
                    self.link(c1, b2)
                    a1 = min(2, a1 + 1) if lo == 0 else a1
                    a2 = min(2, a2 + 1) if lo < 2 else a2
                    e2 = min(2, a1 * a2)
                    f2 = _add(b1, _scale(b2, a1))
                    l2 = _add(c2, _scale(c1, a2))
            elif name in ("ASSERT", "ASSERT_NOT"):
                if any(most == MAXREPEAT for most, _ in _repeats_of(av[1])):
                    self.notes.append(Finding("lookaround", "a lookaround holds an unbounded repeat"))
                self.guarded |= set(last)  # a match ending here can still fail on it
                continue  # zero-width
            elif name in ("GROUPREF", "GROUPREF_EXISTS"):
                ref = av if name == "GROUPREF" else av[0]
                self.notes.append(Finding("backreference", f"{name.lower()} to group {ref}"))
                continue
            else:  # AT (anchors, \b), zero-width; a match ending before it can still fail on it
                if str(av) in _ENDS:
                    self.end_guarded |= set(last)
                elif str(av) not in _ANCHORS:
                    self.guarded |= set(last)
                continue
            self.link(last, f2)
            first = _add(first, _scale(f2, empty))
            last = _add(l2, _scale(last, e2))
            empty = min(2, empty * e2)
        return empty, first, last


def _add(a: dict[int, int], b: dict[int, int]) -> dict[int, int]:
    out = dict(a)
    for k, v in b.items():
        out[k] = min(2, out.get(k, 0) + v)
    return out


def _scale(a: dict[int, int], k: int) -> dict[int, int]:
    return {x: min(2, v * k) for x, v in a.items()} if k else {}


def _repeats_of(seq: Any) -> list[tuple[int, bool]]:
    out: list[tuple[int, bool]] = []
    for op, av in seq:
        name = str(op)
        if name in _REPEATS:
            out.append((av[1], False))
            out += _repeats_of(av[2])
        elif name == "SUBPATTERN":
            out += _repeats_of(av[3])
        elif name == "BRANCH":
            for alt in av[1]:
                out += _repeats_of(alt)
        elif name in ("ASSERT", "ASSERT_NOT"):
            out += _repeats_of(av[1])
        elif name == "ATOMIC_GROUP":
            out += _repeats_of(av)
    return out


def _anchored(seq: Any) -> bool:
    """Whether every match must start at the start of the text (or, in multi-line mode, of a line)."""
    for op, av in seq:
        name = str(op)
        if name == "AT":
            return str(av) in _ANCHORS
        if name == "SUBPATTERN":
            return _anchored(av[3])
        if name == "BRANCH":
            return all(_anchored(alt) for alt in av[1])
        if name in ("ASSERT", "ASSERT_NOT"):
            continue
        return False
    return False


def findings(pattern: str | bytes | re.Pattern[Any], flags: int = 0, search: bool = True) -> list[Finding]:
    """The super-linear shapes of ``pattern`` (empty: bounded work per character, see module doc).

    ``search``: the pattern is searched (``search``, ``finditer``, ``sub``...);
    False when it only ever runs by ``match`` at a fixed place.
    """
    if isinstance(pattern, re.Pattern):
        flags |= pattern.flags
        pattern = pattern.pattern
    tree = sre_parse.parse(pattern, flags)
    flags |= tree.state.flags
    ab = _Alphabet(isinstance(pattern, bytes), flags)
    seq = list(tree)
    alts = seq[0][1][1] if len(seq) == 1 and str(seq[0][0]) == "BRANCH" else [seq]
    out: list[Finding] = []
    for alt in alts:
        for f in _findings_of(alt, ab, flags, search):
            if f not in out:
                out.append(f)
    return out


def _start_guard(seq: Any, ab: _Alphabet, flags: int) -> int:
    """The characters that may stand just before a match of ``seq`` (all, unless a guard says)."""
    for i, (op, av) in enumerate(seq):
        name = str(op)
        if name == "ASSERT" or name == "ASSERT_NOT":
            direction, body = av
            if direction == -1 and len(body) == 1:
                m = _Glushkov(ab).atom(str(body[0][0]), body[0][1], flags)
                if m is not None:
                    return m if name == "ASSERT" else ab.all & ~m
            continue
        if name == "AT" and str(av) == "AT_BOUNDARY":
            g = _Glushkov(ab)
            _e, first, _l = g.build(seq[i + 1:], flags, False)
            word = ab.category("CATEGORY_WORD", flags)
            if first and all(g.chars[x] & ~word == 0 for x in first):
                return ab.all & ~word
            return ab.all
        if name == "SUBPATTERN":
            return _start_guard(av[3], ab, flags)
        if name == "BRANCH":
            m = 0
            for alt in av[1]:
                if alt and str(alt[0][0]) == "AT" and str(alt[0][1]) in _ANCHORS:
                    continue  # the line's start: no search start before it
                m |= _start_guard(alt, ab, flags)
            return m
        return ab.all
    return ab.all


def _findings_of(seq: Any, ab: _Alphabet, flags: int, search: bool) -> list[Finding]:
    g = _Glushkov(ab)
    starts: list[int] = []
    if search and not _anchored(seq):
        # search: the start position skips characters, then the pattern begins; a
        # leading guard (lookbehind, \b) lets it begin only after some of them.
        guard = _start_guard(seq, ab, flags)
        s_in = g.new(guard, True)
        s_out = g.new(ab.all & ~guard, True)
        starts = [s_in, s_out]
    empty, first, last = g.build(seq, flags, False)
    for s in starts:
        g.link({s: 1}, {s_in: 1, s_out: 1})
    if starts:
        g.link({s_in: 1}, first)
    out = list(dict.fromkeys(g.notes))
    out += _ambiguity(g, set(last), starts)
    return out


def _cannot_fail(g: _Glushkov, last: set[int]) -> set[int]:
    """Positions after which the match cannot fail, whatever follows.

    Those where the pattern may end with no \\b or lookaround after them; and
    (greatest fixed point) those that may end before ``$`` and read on over
    every character to positions of the same kind (``.*$``).
    """
    ends = last - g.guarded - g.end_guarded
    uni = (last - g.guarded) | ends
    full = g.ab.all & ~g.ab.newline
    changed = True
    while changed:
        changed = False
        for x in list(uni):
            cover = 0
            for y in g.follow[x]:
                if y in uni:
                    cover |= g.chars[y]
            if cover & full != full:
                uni.discard(x)
                changed = True
    return uni | ends


def _ambiguity(g: _Glushkov, last: set[int], starts: list[int]) -> list[Finding]:
    out: list[Finding] = []
    n = len(g.chars)
    chars, follow = g.chars, g.follow
    uni = _cannot_fail(g, last)
    desc = g.ab.describe
    # EDA: a state that reaches itself by two paths over the same text: in the product
    # automaton, a strongly connected component holding (q, q) and some (p, p'), p != p'.
    pair_succ: dict[tuple[int, int], list[tuple[int, int]]] = {}
    stack = [(q, q) for q in range(n) if g.loops[q]]
    seen = set(stack)
    while stack:
        a, b = stack.pop()
        succ = [(x, y) for x in follow[a] for y in follow[b] if chars[x] & chars[y]]
        pair_succ[(a, b)] = succ
        for s in succ:
            if s not in seen:
                seen.add(s)
                stack.append(s)
        if len(seen) > _VISIT_CAP:
            return [Finding("unknown", "too large to check")]
    for comp in _sccs(pair_succ):
        diag = [a for a, b in comp if a == b]
        off = [(a, b) for a, b in comp if a != b]
        inside = set(comp)
        # two edges between the same two states over the same character, inside the loop
        off += [(a, x) for a in diag for x, ways in follow[a].items() if ways > 1 and (x, x) in inside]
        if diag and off and any(a not in starts and a not in uni for a in diag):
            a, b = off[0]
            out.append(Finding("exponential", f"two paths over the same text through {desc(chars[a])} and "
                                              f"{desc(chars[b])} come back to one state"))
            break
    # IDA: p != q looping, one text w with p->p, p->q, q->q, and a failing suffix after q.
    for p in range(n):
        if not g.loops[p] or p not in _self_reach(g, p):
            continue
        for q in range(n):
            if q == p or q in starts or not g.loops[q] or q in uni or not chars[p] & chars[q]:
                continue
            if _ida(g, p, q):
                what = "search-quadratic" if p in starts else "polynomial"
                where = (f"the search start and a loop over {desc(chars[q])} read the same text"
                         if p in starts else
                         f"a loop over {desc(chars[p])} and a later loop over {desc(chars[q])} read the same text")
                out.append(Finding(what, where))
                break
        else:
            continue
        if p not in starts:
            break
    return out


def _self_reach(g: _Glushkov, p: int) -> set[int]:
    seen: set[int] = set()
    stack = list(g.follow[p])
    while stack:
        x = stack.pop()
        if x not in seen:
            seen.add(x)
            stack.extend(g.follow[x])
    return seen


def _ida(g: _Glushkov, p: int, q: int) -> bool:
    """Whether (p, p, q) reaches (p, q, q) in the triple product automaton."""
    chars, follow = g.chars, g.follow
    goal = (p, q, q)
    stack = [(p, p, q)]
    seen = set(stack)
    while stack:
        a, b, c = stack.pop()
        for x in follow[a]:
            cx = chars[x]
            for y in follow[b]:
                cxy = cx & chars[y]
                if not cxy:
                    continue
                for z in follow[c]:
                    if cxy & chars[z]:
                        s = (x, y, z)
                        if s == goal:
                            return True
                        if s not in seen:
                            seen.add(s)
                            stack.append(s)
        if len(seen) > _VISIT_CAP:
            return True  # too large to tell: reported, to be looked at
    return False


def _sccs(graph: dict[tuple[int, int], list[tuple[int, int]]]) -> list[list[tuple[int, int]]]:
    """Tarjan's strongly connected components, iteratively (patterns can be large)."""
    index: dict[Any, int] = {}
    low: dict[Any, int] = {}
    on: set[Any] = set()
    st: list[Any] = []
    out: list[list[Any]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        st.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    st.append(w)
                    on.add(w)
                    work.append((w, iter(graph.get(w, ()))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = st.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1 or v in graph.get(v, ()):
                    out.append(comp)
    return out


if __name__ == "__main__":  # pragma: no cover - a quick look at one pattern
    for f in findings(sys.argv[1]):
        print(f)
