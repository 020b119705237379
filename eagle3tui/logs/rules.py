"""Classification rules: a builtin pack plus the user's ``[[rule]]`` tables.

Speed comes from a literal prefilter. Every rule has ``keywords``: literal
strings, one of which must occur in any line the rule matches (written in
the rule pack, or derived from the regex). One Aho-Corasick pass over a whole
block of the log finds the few lines that contain any keyword; only those
lines meet the rules' regexes, and only the rules whose keyword they contain.
Most lines of a healthy log contain none and cost nothing beyond that pass.
"""

from __future__ import annotations

import bisect
import functools
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from eagle3tui.errors import ConfigError, ConfigErrors
from eagle3tui.logs import endings
from eagle3tui.logs.families import FLAGS, Example, parse_example

if sys.version_info >= (3, 11):
    from re import _parser as _sre_parse  # type: ignore[attr-defined]

    import tomllib
else:  # pragma: no cover - 3.10
    import sre_parse as _sre_parse

    import tomli as tomllib

try:  # RE2: linear-time matching for the user's patterns (no backtracking).
    import re2 as _re2
except ImportError:  # pragma: no cover - a declared dependency
    _re2 = None  # type: ignore[assignment]

try:  # A Rust Aho-Corasick: one pass, many literals, ~350 MB/s on one core.
    import ahocorasick_rs as _ahocorasick
except ImportError:  # pragma: no cover - exercised by the fallback test
    _ahocorasick = None  # type: ignore[assignment]

KINDS = ("fatal", "benign", "warning", "progress", "info")
_REQUIRED = ("id", "pattern", "kind", "explanation")
_OPTIONAL = ("action", "stages", "keywords", "examples", "not_examples", "sources", "flags")
# Keys only the shipped packs may use: how the code treats a family (families.FLAGS).
_SHIPPED_ONLY = ("flags",)
_MIN_KEYWORD = 3
# The work one user pattern may do on one line is bounded twice: by the size
# of its RE2 program (a counted repetition such as ``(?:\w+ ){2,1000}`` makes
# a program of 12,000 instructions whose DFA outgrows RE2's memory budget, and
# RE2's fallback costs ~ program size x line length: 7 s on a 64 KiB line),
# and by the length of text it meets: the head and tail of a longer line, as
# the follower keeps an over-long line's head and tail (bench/bench_adversarial.py).
USER_PROGRAM_LIMIT = 2000
USER_WINDOW = 8192
_USER_HEAD = USER_WINDOW // 4
_USER_CUT = " \u2026 "
# Literals that route a line to the structural judge even when no rule names
# it: process lifecycle words, native failure reports, fatal levels.
STRUCTURAL_KEYWORDS = (
    "died", "dead", "killed", "Killing", "Terminating", "terminated", "crashed", "aborted", "signal",
    "exit", "Exit", "return code", "non-zero", "nonzero", "failure", "Failure", "FAILURE", "Check failed",
    "fatal", "Fatal", "FATAL", "CRITICAL", "unrecoverable", "terminate called", "panic", "Interrupt",
    "ignored", "deprecat", "[E", "]:[E", "[F", "]:W0", "]:W1", "]:E0", "]:E1", "]:F0", "]:F1",
    # error-looking words a program may log at INFO, or next to a fallback
    "not found", "No such", "cannot", "Cannot", "unable", "Unable", "not installed", "not available",
    "not supported", "instead", "fallback", "falling back", "Falling back", "panicked", "segfault", "Segfault",
    "*** ", "Exception raised from", "without", "proceed", "already", "No module", "no module", "CANCELLED",
    "cancelled", "canceled",
    # the rest of the judge's error-word class (judge._ERRORISH): a line with one reaches the judge
    # whatever program printed it, so its level and structure decide (an INFO-level failure is
    # information, a fallback is harmless), not only a catalog entry written for that program
    "overflow", "OVERFLOW", "Overflow", "unsupported", "Unsupported", "missing", "Missing", "invalid", "Invalid",
    # a Gin-style access line: "| 500 |  1.2s |  127.0.0.1 | POST     "/api/chat""
    "| POST ", "| GET ", "| PUT ", "| DELETE ", "| PATCH ",
    # a substitution the program announces ("Assuming ...", "Setting `use_cache=False`", "will be set to")
    "Assuming", "Setting `", "will be set to", "Reducing ",
    # a decision printed bare with its reason ("X set to 1 to avoid ...", "Y is disabled because of ...")
    "to avoid", "because of", "due to",
    # launchers: MPI aborting the job, a rank that exited on a signal; a part that could not start
    "MPI_ABORT", "MPI_Abort", "exited on signal", "OOMKilled", "failed to start", "failed to launch",
    "failed to initialize", "failed to initialise", "failed to spawn",
    # torch's store-based barrier, whose counter is read against its total
    "worker_count=",
    # a stop asked of the process (endings.stop_requested): the endings after it are that stop
    *endings.STOP_LITERALS,
    # a stack frame in any runtime's shape, or the head of a dump (see frames.py): a run of
    # them is a crash report even with no header in view
    'File "', "most recent call first", "frame #", "frame_#_", "goroutine ", "stack backtrace", "Backtrace:",
    "+0x", "[0x", ") at ", ") from /", "(gdb) ", "/rustc/", "\tat ", ".java:", "Native Method", "Crashed::",
    "Stack (most recent call last)",
)


@dataclass(frozen=True)
class Rule:
    """One classification rule.

    ``kind`` is what a matching line means: ``fatal`` (the job dies or can no
    longer progress), ``benign`` (looks bad, is harmless), ``warning``,
    ``progress`` or ``info``. ``stages`` limits the rule to those stages
    (empty: all). ``keywords`` are the prefilter literals (see module doc).
    """

    id: str
    pattern: str
    kind: str
    explanation: str
    action: str = ""
    stages: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    source: str = "builtin"
    # Its evidence: lines it must judge (examples), look-alikes that must keep their own
    # verdict (not_examples), where it was seen (sources); and its families.FLAGS.
    examples: tuple[Example, ...] = field(default=(), compare=False, repr=False)
    not_examples: tuple[Example, ...] = field(default=(), compare=False, repr=False)
    sources: tuple[str, ...] = field(default=(), compare=False, repr=False)
    flags: tuple[str, ...] = field(default=(), compare=False, repr=False)
    # Builtin rules use Python's re (their patterns are reviewed and tested
    # for bounded backtracking); user rules use RE2, linear in the line's
    # length whatever the pattern.
    regex: Any = field(default=re.compile(""), compare=False, repr=False)

    def applies_to(self, stage: str | None) -> bool:
        """Whether the rule is active for ``stage``."""
        return not self.stages or stage is None or stage in self.stages


def user_window(text: str) -> str:
    """The part of one line a user pattern meets: all of it up to
    :data:`USER_WINDOW` characters, else its head and tail joined by " … "."""
    if len(text) <= USER_WINDOW:
        return text
    tail = USER_WINDOW - _USER_HEAD - len(_USER_CUT)
    return text[:_USER_HEAD] + _USER_CUT + text[-tail:]


def _user_window_bytes(line: bytes) -> bytes:
    """:func:`user_window` of one line of a block (bytes; no newline inside)."""
    if len(line) <= USER_WINDOW:
        return line
    cut = _USER_CUT.encode()
    return line[:_USER_HEAD] + cut + line[-(USER_WINDOW - _USER_HEAD - len(cut)):]


def _windowed_block(data: bytes) -> tuple[bytes, list[int], list[int]] | None:
    """``data`` with each line cut to its :func:`user_window`, or None when no line is longer.

    Returns the cut block, the start of each of its lines and the start of
    the same line in ``data`` (to map a match back to the line it is in).
    """
    lines = data.split(b"\n")
    if max(map(len, lines)) <= USER_WINDOW:
        return None
    cut_starts: list[int] = []
    starts: list[int] = []
    pos = cpos = 0
    out: list[bytes] = []
    for line in lines:
        w = _user_window_bytes(line)
        starts.append(pos)
        cut_starts.append(cpos)
        out.append(w)
        pos += len(line) + 1
        cpos += len(w) + 1
    return b"\n".join(out), cut_starts, starts


def derive_keywords(pattern: str) -> tuple[str, ...]:
    """Literals of which at least one must occur in any match of ``pattern``.

    Empty when none can be proven (case-insensitive patterns, patterns made
    only of classes): such a rule is then checked by a regex pass over each
    block instead of through the prefilter (slower, still correct).
    """
    try:
        parsed = _sre_parse.parse(pattern)
    except re.error:
        return ()
    if parsed.state.flags & re.IGNORECASE:
        return ()
    req = _required(parsed)
    if not req or any(len(k) < _MIN_KEYWORD for k in req) or len(req) > 32:
        return ()
    return tuple(dict.fromkeys(req))


def _score(alts: list[str] | None) -> int:
    return min((len(a) for a in alts), default=0) if alts else 0


def _required(seq: Any) -> list[str] | None:
    """Alternatives (any one required) for a parsed sub-pattern, or None."""
    best: list[str] | None = None
    run: list[str] = []

    def flush() -> None:
        nonlocal best, run
        if run:
            cand = ["".join(run)]
            if _score(cand) > _score(best):
                best = cand
            run = []

    for op, av in seq:
        name = str(op)
        if name == "LITERAL":
            run.append(chr(av))
            continue
        if name == "AT":
            continue  # zero-width (\b, ^): the literals around it stay adjacent
        flush()
        cand: list[str] | None = None
        if name == "SUBPATTERN":
            add_flags = av[1] if len(av) == 4 else 0
            if add_flags & re.IGNORECASE:
                return None
            cand = _required(av[-1])
        elif name == "BRANCH":
            alts = [_required(b) for b in av[1]]
            if all(a for a in alts):
                cand = [s for a in alts for s in a]  # type: ignore[union-attr]
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and av[0] >= 1:
            cand = _required(av[2])
        elif name == "ATOMIC_GROUP":
            cand = _required(av)
        if cand and _score(cand) > _score(best):
            best = cand
    flush()
    return best


class RuleSet:
    """An ordered set of rules; the first matching rule wins.

    User rules come first (they know the job best), then the builtin pack in
    file order, which lists specific harmless patterns before the families
    of fatal errors, and catch-alls last.
    """

    def __init__(self, rules: Iterable[Rule], structural: Iterable[str] = STRUCTURAL_KEYWORDS) -> None:
        self.rules: list[Rule] = list(rules)
        kw_rules: dict[str, list[int]] = {}
        for k in structural:
            # No rule behind these: a hit only makes the line a candidate.
            kw_rules.setdefault(k, [])
        self._unkeyed: list[tuple[int, re.Pattern[bytes] | None]] = []
        for i, r in enumerate(self.rules):
            if r.keywords:
                for k in r.keywords:
                    kw_rules.setdefault(k, []).append(i)
            else:
                # Searched over a whole chunk, so ^ and $ must mean a line's
                # ends (multi-line mode), as they do on one line.
                try:
                    brx: Any = (
                        compile_user_pattern(b"(?m)" + r.pattern.encode("utf-8"), limit=None)
                        if r.source == "user"
                        else re.compile(r.pattern.encode("utf-8"), re.MULTILINE)
                    )
                except (re.error, ValueError):
                    brx = None  # not expressible on bytes: checked on every line
                self._unkeyed.append((i, brx))
        self.keywords: list[str] = list(kw_rules)
        self._kw_rules: list[tuple[int, ...]] = [tuple(kw_rules[k]) for k in self.keywords]
        self._kw_bytes = [k.encode("utf-8") for k in self.keywords]
        self._ac = None
        if _ahocorasick is not None and self.keywords:
            # The DFA form is ~3x faster than the default NFA here; its memory
            # (a few MB for a few hundred keywords) is paid once.
            self._ac = _ahocorasick.BytesAhoCorasick(
                self._kw_bytes, implementation=_ahocorasick.Implementation.DFA
            )
        self._kw_rx = (
            re.compile(b"|".join(re.escape(k) for k in sorted(self._kw_bytes, key=len, reverse=True)))
            if self.keywords
            else None
        )
        self._every_line = [i for i, brx in self._unkeyed if brx is None]
        self.by_id = {r.id: r for r in self.rules}

    @property
    def accelerated(self) -> bool:
        """True when the Aho-Corasick prefilter is in use."""
        return self._ac is not None

    @property
    def has_unkeyed(self) -> bool:
        """Some rule has no keyword (its regex is run over whole blocks)."""
        return bool(self._unkeyed)

    @property
    def keyword_bytes(self) -> list[bytes]:
        """The prefilter's literals (UTF-8), in :attr:`keywords` order."""
        return self._kw_bytes

    @property
    def keyword_rules(self) -> list[tuple[int, ...]]:
        """For each keyword, the indices of the rules it stands for."""
        return self._kw_rules

    def line_candidates(self, line: bytes) -> tuple[int, ...] | None:
        """What :meth:`scan` gives for one line: its rules, or None if no keyword occurs."""
        if self._ac is not None:
            found = self._ac.find_matches_as_indexes(line, overlapping=True)
            if not found:
                return None
            rs: set[int] = set()
            for kw, _s, _e in found:
                rs.update(self._kw_rules[kw])
            return tuple(sorted(rs))
        got = self.scan(line)
        return got[0][2] if got else None

    @classmethod
    def from_specs(
        cls, builtin: list[Rule], user: list[Rule] | None = None
    ) -> RuleSet:
        """Builtin rules plus user rules; a user rule replaces a builtin of its id."""
        user = user or []
        ids = {r.id for r in user}
        return cls([*user, *(r for r in builtin if r.id not in ids)])

    # -- scanning ---------------------------------------------------------
    def scan(self, data: bytes) -> list[tuple[int, int, tuple[int, ...]]]:
        """Lines of ``data`` that may match a rule.

        Returns ``(line_start, line_end, rule_indices)`` sorted by position;
        ``line_end`` indexes the line's ``\\n`` (or ``len(data)``).
        """
        hits: dict[int, set[int]] = {}
        ends: dict[int, int] = {}
        cur_end = -1
        if self._ac is not None:
            # One pass of the keyword automaton (a DFA) over the whole block.
            kw_rules = self._kw_rules
            cur: set[int] = set()
            for kw, start, _end in self._ac.find_matches_as_indexes(data, overlapping=True):
                if start > cur_end:
                    cur_start = data.rfind(b"\n", 0, start) + 1
                    cur_end = data.find(b"\n", start)
                    if cur_end < 0:
                        cur_end = len(data)
                    cur = hits.setdefault(cur_start, set())
                    ends[cur_start] = cur_end
                cur.update(kw_rules[kw])
        elif self._kw_rx is not None:
            pos = 0
            rx = self._kw_rx
            while True:
                m = rx.search(data, pos)
                if m is None:
                    break
                start = m.start()
                ls = data.rfind(b"\n", 0, start) + 1
                le = data.find(b"\n", start)
                if le < 0:
                    le = len(data)
                line = data[ls:le]
                rs = hits.setdefault(ls, set())
                ends[ls] = le
                for k, kb in enumerate(self._kw_bytes):
                    if kb in line:
                        rs.update(self._kw_rules[k])
                pos = le + 1
        cut: tuple[bytes, list[int], list[int]] | None = None
        if any(self.rules[i].source == "user" and brx is not None for i, brx in self._unkeyed):
            cut = _windowed_block(data)  # user patterns meet a long line's head and tail only
        for i, brx in self._unkeyed:
            if brx is None:
                continue
            if cut is not None and self.rules[i].source == "user":
                self._scan_cut(brx, i, data, cut, hits, ends)
                continue
            pos = 0
            while True:
                m = brx.search(data, pos)
                if m is None:
                    break
                ls = data.rfind(b"\n", 0, m.start()) + 1
                le = data.find(b"\n", m.start())
                if le < 0:
                    le = len(data)
                hits.setdefault(ls, set()).add(i)
                ends[ls] = le
                pos = le + 1
        if self._every_line:
            # Rules whose regex has no bytes form: every line is a candidate.
            pos = 0
            n = len(data)
            while pos < n:
                le = data.find(b"\n", pos)
                if le < 0:
                    le = n
                hits.setdefault(pos, set()).update(self._every_line)
                ends[pos] = le
                pos = le + 1
        return [(ls, ends[ls], tuple(sorted(hits[ls]))) for ls in sorted(hits)]

    @staticmethod
    def _scan_cut(
        brx: Any,
        i: int,
        data: bytes,
        cut: tuple[bytes, list[int], list[int]],
        hits: dict[int, set[int]],
        ends: dict[int, int],
    ) -> None:
        """Rule ``i``'s unkeyed search over the cut block, its hits mapped to ``data``'s lines."""
        block, cut_starts, starts = cut
        pos = 0
        while True:
            m = brx.search(block, pos)
            if m is None:
                break
            k = bisect.bisect_right(cut_starts, m.start()) - 1
            ls = starts[k]
            le = data.find(b"\n", ls)
            if le < 0:
                le = len(data)
            hits.setdefault(ls, set()).add(i)
            ends[ls] = le
            nxt = block.find(b"\n", m.start())
            if nxt < 0:
                break
            pos = nxt + 1

    def candidates(self, text: str) -> tuple[int, ...]:
        """Indices of the rules that might match ``text`` (one line)."""
        found: set[int] = {i for i, _ in self._unkeyed}
        for k, kw in enumerate(self.keywords):
            if kw in text:
                found.update(self._kw_rules[k])
        return tuple(sorted(found))

    def classify(
        self, text: str, stage: str | None = None, candidates: Iterable[int] | None = None
    ) -> Rule | None:
        """The first rule matching ``text`` (worker prefix already removed).

        A user rule meets :func:`user_window` of ``text``: its head and tail when it is long.
        """
        idx = self.candidates(text) if candidates is None else candidates
        rules = self.rules
        window = text if len(text) <= USER_WINDOW else None
        for i in idx:
            r = rules[i]
            if not r.applies_to(stage):
                continue
            if r.source == "user":
                if window is None:
                    window = user_window(text)
                if r.regex.search(window):
                    return r
            elif r.regex.search(text):
                return r
        return None


# -- loading ---------------------------------------------------------------
def _line_of(source_path: str, rule_id: str) -> int | None:
    """Line in ``source_path`` where ``id = "rule_id"`` is written, if found."""
    try:
        with open(source_path, encoding="utf-8") as f:
            for no, line in enumerate(f, 1):
                s = line.strip().replace(" ", "")
                if s in (f'id="{rule_id}"', f"id='{rule_id}'"):
                    return no
    except OSError:
        return None
    return None


class PatternTooCostly(ValueError):
    """A user pattern RE2 accepts whose program is too big to run on every log line."""


def compile_user_pattern(pattern: str | bytes, limit: int | None = USER_PROGRAM_LIMIT) -> Any:
    """Compile a user ``[[rule]]`` pattern with RE2 (linear time, no backtracking).

    Raises ValueError with RE2's reason when the pattern uses a feature RE2
    does not have (backreferences, lookaround) or is not a valid regex, and
    :class:`PatternTooCostly` when its RE2 program has more than ``limit``
    instructions (see :data:`USER_PROGRAM_LIMIT`).
    """
    if _re2 is None:  # pragma: no cover - google-re2 is a dependency
        raise ValueError("the google-re2 package is not installed (pip install google-re2)")
    opts = _re2.Options()
    opts.log_errors = False  # report through ConfigError, not on stderr
    try:
        rx = _re2.compile(pattern, opts)
    except Exception as e:  # re2.error: RE2 reports bytes
        msg = e.args[0] if e.args else e
        if isinstance(msg, bytes):
            msg = msg.decode("utf-8", "replace")
        raise ValueError(str(msg)) from None
    if limit is not None and rx.programsize > limit:
        raise PatternTooCostly(
            f"its RE2 program has {rx.programsize} instructions, more than the {limit} a pattern run on "
            "every log line may have (a counted repetition such as {2,1000} copies its group that many times)"
        )
    return rx


def _key_line(source_path: str, rule_id: str, key: str) -> int | None:
    """Line of ``key = ...`` inside the ``[[rule]]`` table whose id is ``rule_id``."""
    id_line = _line_of(source_path, rule_id)
    if id_line is None:
        return None
    try:
        with open(source_path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    head = id_line - 1  # the table starts at the last "[" header above its id
    while head > 0 and not lines[head].lstrip().startswith("["):
        head -= 1
    for no in range(head + 1, len(lines)):
        text = lines[no].strip()
        if text.startswith("["):
            break  # the next table
        if text.replace(" ", "").startswith(f"{key}="):
            return no + 1
    return None


class _LazyPattern:
    """A shipped rule's regex, compiled when a line first needs it.

    The shipped packs are checked by the tests (:func:`check_shipped_rules`);
    compiling their forty patterns at every start would cost a tenth of a
    short ``classify`` run, and most logs never reach most of them.
    """

    __slots__ = ("pattern", "_rx")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._rx: re.Pattern[str] | None = None

    def search(self, text: str, *args: int) -> re.Match[str] | None:
        """``re.Pattern.search`` of the compiled pattern."""
        rx = self._rx
        if rx is None:
            rx = self._rx = re.compile(self.pattern)
        return rx.search(text, *args)


def _rule_from_spec(
    spec: dict[str, Any], index: int, source_path: str, source: str, check: bool = True
) -> Rule:
    rid = spec.get("id")
    label = f"rule '{rid}'" if isinstance(rid, str) and rid else f"rule #{index + 1}"

    def err(msg: str, key: str, fix: str) -> ConfigError:
        line = _line_of(source_path, rid) if isinstance(rid, str) else None
        return ConfigError(f"{label}: {msg}", path=source_path, key=key, line=line, fix=fix)

    if not isinstance(spec, dict):
        raise err("is not a table", "rule", "write each rule as a [[rule]] table")
    unknown = sorted(set(spec) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise err(
            f"unknown key(s) {', '.join(unknown)}",
            f"rule.{unknown[0]}",
            f"allowed keys: {', '.join(_REQUIRED + _OPTIONAL)}",
        )
    if source == "user" and any(k in spec for k in _SHIPPED_ONLY):
        raise err(
            "'flags' is for the shipped rule packs",
            "rule.flags",
            "remove it; a rule's kind (fatal, warning, ...) says how eagle3tui treats its lines",
        )
    missing = [k for k in _REQUIRED if k not in spec]
    if missing:
        raise err(
            f"missing key(s) {', '.join(missing)}",
            f"rule.{missing[0]}",
            'every rule needs id, pattern, kind and explanation, e.g. kind = "fatal"',
        )
    for k in ("id", "pattern", "kind", "explanation", "action"):
        if k in spec and not isinstance(spec[k], str):
            raise err(f"'{k}' must be a string", f"rule.{k}", f'write {k} = "..."')
    if not spec["id"].strip():
        raise err("'id' is empty", "rule.id", 'give the rule a name, e.g. id = "my-oom"')
    if spec["kind"] not in KINDS:
        raise err(
            f"kind '{spec['kind']}' is not one of {', '.join(KINDS)}",
            "rule.kind",
            f"use one of: {', '.join(KINDS)}",
        )
    try:
        rx: Any = re.compile(spec["pattern"]) if check or source == "user" else _LazyPattern(spec["pattern"])
    except re.error as e:
        raise err(
            f"invalid regular expression {spec['pattern']!r}: {e}",
            "rule.pattern",
            "fix the regex (Python re syntax); in TOML use '''...''' to avoid escaping backslashes",
        ) from None
    if source == "user":
        # A valid Python regex RE2 cannot run (lookaround, backreference):
        # rejected, since only RE2 guarantees linear time on every line.
        try:
            rx = compile_user_pattern(spec["pattern"])
        except PatternTooCostly as e:
            raise ConfigError(
                f"{label}: pattern {spec['pattern']!r} costs too much to run on every log line: {e}",
                path=source_path,
                key="rule.pattern",
                line=_key_line(source_path, spec["id"], "pattern") or _line_of(source_path, spec["id"]),
                fix=(
                    "bound the repetition by what the line needs, e.g. (?:\\w+ ){2,1000} -> (?:\\w+ )+ or "
                    "(?:\\w+ ){2,20}; match the literal words around it; or split a long alternation into several rules"
                ),
            ) from None
        except ValueError as e:
            raise ConfigError(
                f"{label}: pattern {spec['pattern']!r} is not supported by the linear-time regex engine (RE2): {e}",
                path=source_path,
                key="rule.pattern",
                line=_key_line(source_path, spec["id"], "pattern") or _line_of(source_path, spec["id"]),
                fix=(
                    "rewrite it without backreferences (\\1), lookahead/lookbehind ((?=, (?!, (?<=, (?<!) and "
                    "possessive or atomic groups; e.g. match the literal text instead. User patterns run on "
                    "every log line, so they must not be able to backtrack"
                ),
            ) from None
    lists: dict[str, tuple[str, ...]] = {}
    for k in ("stages", "keywords", "sources", "flags"):
        v = spec.get(k, [])
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise err(f"'{k}' must be a list of strings", f"rule.{k}", f'write {k} = ["..."]')
        lists[k] = tuple(v)
    evidence: dict[str, tuple[Example, ...]] = {}
    for k in ("examples", "not_examples"):
        v = spec.get(k, [])
        if not isinstance(v, list):
            raise err(f"'{k}' must be a list", f"rule.{k}", f'write {k} = ["a line", {{ line = "...", kind = "benign" }}]')
        try:
            evidence[k] = tuple(parse_example(x, label) for x in v)
        except ValueError as e:
            raise err(str(e).split(": ", 1)[-1], f"rule.{k}", 'write each as "a line" or { line = "...", kind = "..." }') from None
    keywords = lists["keywords"] or derive_keywords(spec["pattern"])
    for ex in (e.line for e in evidence["examples"]) if check or source == "user" else ():
        if not rx.search(ex):
            raise err(
                f"pattern does not match its example {ex!r}",
                "rule.examples",
                "fix the pattern or the example",
            )
        if keywords and not any(k in ex for k in keywords):
            raise err(
                f"example {ex!r} contains none of the keywords {list(keywords)}",
                "rule.keywords",
                "add a keyword that occurs in every line the rule should match",
            )
    return Rule(
        id=spec["id"],
        pattern=spec["pattern"],
        kind=spec["kind"],
        explanation=spec["explanation"].strip(),
        action=str(spec.get("action", "")).strip(),
        stages=lists["stages"],
        keywords=keywords,
        source=source,
        examples=evidence["examples"],
        not_examples=evidence["not_examples"],
        sources=lists["sources"],
        flags=_checked_flags(lists["flags"], err),
        regex=rx,
    )


def _checked_flags(flags: tuple[str, ...], err: Any) -> tuple[str, ...]:
    bad = [f for f in flags if f not in FLAGS]
    if bad:
        raise err(f"unknown flag(s) {bad}", "rule.flags", f"use one of: {', '.join(FLAGS)}")
    return flags


def rules_from_specs(specs: list[dict[str, Any]], source_path: str, source: str, check: bool = True) -> list[Rule]:
    """Validate rule tables; raises ConfigError (ConfigErrors for several).

    ``check=False`` (shipped packs only) leaves the regex uncompiled until
    first use and the examples unchecked: :func:`check_shipped_rules` does
    both, in the tests.
    """
    rules: list[Rule] = []
    errors: list[ConfigError] = []
    seen: set[str] = set()
    for i, spec in enumerate(specs):
        try:
            r = _rule_from_spec(spec, i, source_path, source, check)
        except ConfigError as e:
            errors.append(e)
            continue
        if r.id in seen:
            errors.append(
                ConfigError(
                    f"rule '{r.id}' is defined twice",
                    path=source_path,
                    key="rule.id",
                    fix="give each [[rule]] its own id",
                )
            )
        seen.add(r.id)
        rules.append(r)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ConfigErrors(errors)
    return rules


_PACKS = (("slurm_rules.toml", "slurm"), ("builtin_rules.toml", "builtin"))


@functools.lru_cache(maxsize=None)
def _load_pack(filename: str, source: str, check: bool = False) -> tuple[Rule, ...]:
    """A rule pack shipped in ``eagle3tui/logs/``, read once."""
    ref = resources.files("eagle3tui.logs").joinpath(filename)
    data = tomllib.loads(ref.read_text(encoding="utf-8"))
    return tuple(rules_from_specs(data.get("rule", []), str(ref), source, check))


def check_shipped_rules() -> list[Rule]:
    """The shipped packs read with every check: each pattern compiles and
    matches its examples, each example holds a keyword (ConfigError if not)."""
    return [r for name, source in _PACKS for r in _load_pack(name, source, True)]


def load_builtin_rules() -> list[Rule]:
    """The rule pack shipped in ``eagle3tui/logs/builtin_rules.toml``."""
    return list(_load_pack("builtin_rules.toml", "builtin"))


def load_slurm_rules() -> list[Rule]:
    """The rules for Slurm's own lines in a job's output (``slurm_rules.toml``)."""
    return list(_load_pack("slurm_rules.toml", "slurm"))


def load_shipped_rules() -> list[Rule]:
    """Every rule eagle3tui ships: Slurm's first, because the builtin "oom",
    "killed" and "timeout" rules would otherwise claim Slurm's lines with a
    vaguer verdict; they match nothing but Slurm's own wording."""
    return [*load_slurm_rules(), *load_builtin_rules()]


def build_ruleset(user_specs: list[dict[str, Any]] | None = None, source_path: str = "pipeline.toml") -> RuleSet:
    """Shipped rules plus ``user_specs`` (the ``[[rule]]`` tables of ``source_path``)."""
    user = rules_from_specs(list(user_specs or []), source_path, "user")
    return RuleSet.from_specs(load_shipped_rules(), user)


def load_rules_file(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read the ``[[rule]]`` tables of a TOML file (for ``classify --rules``)."""
    p = os.fspath(path)
    try:
        with open(p, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError("rules file not found", path=p, fix="check the path given to --rules") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"not valid TOML: {e}", path=p, fix="fix the TOML syntax") from None
    rules = data.get("rule", [])
    if not isinstance(rules, list):
        raise ConfigError("'rule' must be an array of tables", path=p, key="rule", fix="write each rule as [[rule]]")
    return rules
