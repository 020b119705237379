"""Log text cannot slow the driver down: every builtin pattern run over it is bounded.

User patterns go through RE2 (tests/test_logs_user_rules.py). The builtin side
is Python's backtracking ``re``; this file collects EVERY compiled pattern that
is applied to log text -- the module-level patterns of the line pipeline (in
any list, tuple, dict or object they sit in), the shipped rule packs (as a line
is searched, and in the multi-line bytes form the block scan runs), and the
patterns compiled at run time, caught by wrapping ``re._compile`` while real
corpus logs are classified and followed -- and reads each one's parse tree
for the shapes that go super-linear under backtracking (tests/regex_shapes.py
says which and why). No timing here (benchmarks, not timed tests: see
bench/bench_adversarial.py); where a cost can be counted in steps, it is.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.regex_shapes import Finding, findings

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "corpus" / "corpus.jsonl"

# The modules that run a regex over log text (a line, a block, a message).
MODULES = [
    "eagle3tui.logs.anatomy", "eagle3tui.logs.judge", "eagle3tui.logs.notice_grammar", "eagle3tui.logs.progress",
    "eagle3tui.logs.monitor",
    "eagle3tui.logs.templates", "eagle3tui.logs.eta", "eagle3tui.logs.rules", "eagle3tui.logs.repeats",
    "eagle3tui.logs.workers", "eagle3tui.logs.stall", "eagle3tui.logs.follower", "eagle3tui.logs.offline",
    "eagle3tui.logs.frames", "eagle3tui.logs.self_account",
    "eagle3tui.textsafe", "eagle3tui.alerts.model", "eagle3tui.supervisor.stage_alerts", "eagle3tui.learned_rules",
]

# Patterns that only ever run on a bounded stretch of a line, or only by
# ``match`` at a fixed place: their search-start cost cannot grow with the
# line. Each entry says why, and test_the_exemptions_still_hold checks it.
# (module, attribute) -> reason
BOUNDED_INPUT = {
    ("eagle3tui.logs.anatomy", "_FORMATS"): "run by rx.match(text, 0, HEAD_CHARS): anchored, first 400 characters",
}


def _walk(obj: Any, depth: int, out: list[Any], seen: set[int]) -> None:
    if id(obj) in seen or depth > 4:
        return
    seen.add(id(obj))
    if isinstance(obj, re.Pattern):
        out.append(obj)
    elif type(obj).__name__ == "_LazyPattern":
        out.append(re.compile(obj.pattern))
    elif isinstance(obj, dict):
        for v in obj.values():
            _walk(v, depth + 1, out, seen)
        for k in obj:
            if isinstance(k, re.Pattern):
                out.append(k)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for v in obj:
            _walk(v, depth + 1, out, seen)
    elif type(obj).__module__.startswith("eagle3tui.") and not isinstance(obj, type):
        # an object of the pipeline (a rule set, a template index, a monitor): its fields
        fields = dict(getattr(obj, "__dict__", {}))
        for slot in getattr(type(obj), "__slots__", ()):
            if hasattr(obj, slot):
                fields[slot] = getattr(obj, slot)
        for v in fields.values():
            _walk(v, depth + 1, out, seen)


def module_patterns() -> dict[tuple[str, str], list[re.Pattern[Any]]]:
    """(module, global name) -> the compiled patterns found under it."""
    got: dict[tuple[str, str], list[re.Pattern[Any]]] = {}
    for name in MODULES:
        mod = importlib.import_module(name)
        for attr, val in vars(mod).items():
            if attr.startswith("__") or isinstance(val, type(sys)):
                continue
            found: list[re.Pattern[Any]] = []
            _walk(val, 0, found, set())
            if found:
                got[(name, attr)] = found
    return got


def object_patterns(tmp_path: Path) -> list[re.Pattern[Any]]:
    """The patterns held by the pipeline's objects once a log has been read (the monitor's
    rule set and keyword alternation, its template index, its markers)."""
    from eagle3tui.logs.offline import classify_log

    log = tmp_path / "one.log"
    log.write_text("".join(r + "\n" for r in _tune_texts()[:200]) * 12, encoding="utf-8")
    _events, mon = classify_log(log)
    found: list[re.Pattern[Any]] = []
    _walk(mon, 0, found, set())
    return found


def _tune_texts() -> list[str]:
    # Tune rows only: the held-out split never builds a change.
    rows = [json.loads(x) for x in CORPUS.read_text(encoding="utf-8").splitlines()]
    return [r["text"] for r in rows if r["split"] == "tune"]


def rule_patterns() -> dict[str, list[re.Pattern[Any]]]:
    """Each shipped rule's pattern, as a line is searched and as the block scan runs it."""
    from eagle3tui.logs.rules import load_shipped_rules

    out: dict[str, list[re.Pattern[Any]]] = {}
    for r in load_shipped_rules():
        pats: list[re.Pattern[Any]] = [re.compile(r.pattern)]
        if not r.keywords:  # searched over whole blocks, ^ and $ per line
            pats.append(re.compile(r.pattern.encode(), re.MULTILINE))
        out[f"{r.source}:{r.id}"] = pats
    return out


def runtime_patterns(tmp_path: Path) -> dict[tuple[Any, int], str]:
    """Patterns compiled while real logs are classified and followed: (pattern, flags) -> where."""
    import re as re_mod

    from eagle3tui.logs.monitor import StageLogMonitor
    from eagle3tui.logs.offline import classify_log

    seen: dict[tuple[Any, int], str] = {}
    orig = re_mod._compile  # type: ignore[attr-defined]

    def spy(pattern: Any, flags: Any) -> Any:
        f = sys._getframe(1)
        while f is not None and f.f_code.co_filename.endswith(("re/__init__.py", "re.py")):
            f = f.f_back
        if f is not None and "/eagle3tui/" in f.f_code.co_filename and not isinstance(pattern, re.Pattern):
            where = f"{Path(f.f_code.co_filename).name}:{f.f_lineno}"
            seen.setdefault((pattern, int(flags)), where)
        return orig(pattern, flags)

    # One log of the tune rows, read whole (catch-up) and line by line (following).
    text = "\n".join(_tune_texts()) + "\n"
    log = tmp_path / "all.log"
    log.write_text(text * 3, encoding="utf-8")
    re_mod._compile = spy  # type: ignore[attr-defined]
    re_mod._cache.clear()  # type: ignore[attr-defined]
    try:
        classify_log(log)
        classify_log(log, stage_kind="service", progress_events=True, include_info=True)
        live = tmp_path / "live.log"
        live.write_text("")
        mon = StageLogMonitor(live)
        with open(live, "a", encoding="utf-8") as f:
            for i, line in enumerate(text.splitlines()[:3000]):
                f.write(line + "\n")
                if i % 50 == 0:
                    f.flush()
                    mon.poll(now=1000.0 + i)
        mon.poll(now=5000.0)
        mon.check(now=99999.0)
        mon.finish(exit_code=1)
    finally:
        re_mod._compile = orig  # type: ignore[attr-defined]
    return seen


def _all(tmp_path: Path) -> list[tuple[str, re.Pattern[Any] | tuple[Any, int], bool]]:
    """(label, pattern, searched) for every pattern met."""
    out: list[tuple[str, Any, bool]] = []
    for (mod, attr), pats in module_patterns().items():
        for p in pats:
            out.append((f"{mod.rsplit('.', 1)[-1]}.{attr}", p, (mod, attr) not in BOUNDED_INPUT))
    for rid, pats in rule_patterns().items():
        for p in pats:
            out.append((f"rule {rid}", p, True))
    for p in object_patterns(tmp_path):
        out.append((f"object {p.pattern[:30]!r}", p, True))
    for (pat, flags), where in runtime_patterns(tmp_path).items():
        out.append((f"runtime {where}", (pat, flags), True))
    return out


def check(pattern: Any, searched: bool) -> list[Finding]:
    if isinstance(pattern, tuple):
        return findings(pattern[0], pattern[1], search=searched)
    return findings(pattern, search=searched)


def test_every_log_pattern_is_free_of_super_linear_shapes(tmp_path: Path) -> None:
    pats = _all(tmp_path)
    bad = []
    for label, p, searched in pats:
        for f in check(p, searched):
            text = p.pattern if isinstance(p, re.Pattern) else p[0]
            bad.append(f"{label}: {text!r}: {f}")
    assert not bad, "\n".join(bad)


def test_the_collection_reaches_every_module_and_the_runtime(tmp_path: Path) -> None:
    # The collector itself must not go blind: patterns from each module that
    # holds some, every shipped rule, and the ones made at run time.
    mods = {mod for mod, _attr in module_patterns()}
    for name in ("eagle3tui.logs.anatomy", "eagle3tui.logs.judge", "eagle3tui.logs.progress",
                 "eagle3tui.logs.monitor", "eagle3tui.logs.repeats", "eagle3tui.textsafe",
                 "eagle3tui.alerts.model", "eagle3tui.supervisor.stage_alerts"):
        assert name in mods, name
    assert len(rule_patterns()) >= 90
    assert runtime_patterns(tmp_path)
    held = object_patterns(tmp_path)  # the rule set's 96 rules and keyword alternation, the template shapes
    assert len(held) >= 90 and any(isinstance(p.pattern, bytes) for p in held)


def test_the_exemptions_still_hold() -> None:
    src = (ROOT / "eagle3tui" / "logs" / "anatomy.py").read_text(encoding="utf-8")
    # _FORMATS' patterns are only ever run anchored on a line's head
    assert "m = rx.match(text, 0, HEAD_CHARS)" in src
    assert src.count("_FORMATS") == 2 and "for rx, lv, src, body, table, needle in _FORMATS" in src


# -- the patterns fixed this round: each was quadratic on one line ------------------

# (where, the pattern's text before, a line shape it took n**2 steps on: token repeated)
FIXED = [
    ("stage_alerts._EXCEPTION_AT_END", r"\b[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Failure)\b:(?P<msg>.*)$", "a."),
    ("rule slurm-oom", r"StepId=\S+ exceeded memory limit \(\d+ > \d+\), being killed", "StepId="),
    ("rule slurm-launch-failed", r"slurmstepd(?:-\S+)?: error: execve\(\): \S+", "slurmstepd-"),
    ("rule triton-kernels-import", r"triton_kernels.* not (?:available|found|installed)", "triton_kernels "),
    ("rule shutdown-noise", r"Exception in thread .*(?:daemon|shutdown)", "Exception in thread "),
]


def _current(where: str) -> str:
    from eagle3tui.logs.rules import load_shipped_rules
    from eagle3tui.supervisor import stage_alerts

    if where.startswith("rule "):
        return next(r.pattern for r in load_shipped_rules() if r.id == where[5:])
    return stage_alerts._EXCEPTION_AT_END.pattern


@pytest.mark.parametrize("where,before,token", FIXED)
def test_a_pattern_that_was_quadratic_is_bounded_now(where: str, before: str, token: str) -> None:
    # The old text has the search-quadratic shape; the pattern shipped now has none.
    assert "search-quadratic" in {f.kind for f in findings(before)}
    assert findings(_current(where)) == [], where
    # And the line that took n**2 steps before finds no match either way (the
    # bound changed the cost, not what a real line means).
    line = token * 2000
    assert re.search(before, line) is None and re.search(_current(where), line) is None


def test_a_line_of_many_keyword_places_costs_linear_lookups() -> None:
    # templates.line_rules asked every keyword place's table once per keyword
    # found (and grew a tuple by one each time): 6.8 M set updates for five
    # 64 KiB lines of "E1206 18:44:12.715298746 " repeated (bench_adversarial).
    from eagle3tui.logs.scan import PROGRESS_MARKERS as _PROGRESS_MARKERS
    from eagle3tui.logs.progress import PROGRESS_SHAPE
    from eagle3tui.logs.rules import build_ruleset
    from eagle3tui.logs.templates import TO_ZERO, TemplateIndex

    rules = build_ruleset()
    tix = TemplateIndex(rules, _PROGRESS_MARKERS, PROGRESS_SHAPE)
    line = b"E1206 18:44:12.715298746 " * 400
    temp = line.translate(TO_ZERO)
    tix.learn({temp})
    e = tix.by_template[temp]
    assert e is not None and len(e.digit_keywords) >= 400

    class Counting(dict):  # type: ignore[type-arg]
        asked = 0

        def __contains__(self, key: object) -> bool:
            Counting.asked += 1
            return super().__contains__(key)

    e.digit_keywords = tuple((a, b, Counting(t)) for a, b, t in e.digit_keywords)
    got = tix.line_rules(e, line)
    assert got == rules.line_candidates(line)
    # one look-up per place to find the keywords, then a few per place for the rules
    assert Counting.asked <= 4 * len(e.digit_keywords), Counting.asked


# -- the checker sees what it must, and no more --------------------------------

DANGEROUS = {
    r"(a+)+b": "exponential", r"(?:a|a)*b": "exponential", r"^(?:\w+\s?)*x": "exponential",
    r"^\s*\S*\s*x": "polynomial", r"^\d+\.?\d+x": "polynomial", rb"^\s*\S*\s*x": "polynomial",
    r"\s+$": "search-quadratic", r"[^x]*x": "search-quadratic", r"\w+Error": "search-quadratic",
    r"(\w)\1": "backreference", r"(?=.*foo)": "lookaround",
}
SAFE = [r"^[^x]*x", r"^\s+$", r"(.*)$", r"Error: (.*)", r"^\w+x", r"^(?:\w+\s)*x", r"^\d+\.\d+x", r"\bfoo\b",
        r"^.*foo", r"foo\s+bar", r"^\w{1,9}\w{1,9}x", r"\b\w{1,40}Error\b", r"^[a-z]+:\s*(.*)$",
        r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])"]


@pytest.mark.parametrize("pattern,kind", DANGEROUS.items())
def test_the_checker_sees_each_dangerous_shape(pattern: str, kind: str) -> None:
    assert kind in {f.kind for f in findings(pattern)}, pattern


@pytest.mark.parametrize("pattern", SAFE)
def test_the_checker_raises_no_false_alarm(pattern: str) -> None:
    assert findings(pattern) == [], pattern


# -- the user's readiness pattern: the one user pattern Python's re still ran ------------


def _service(tmp_path: Path, pattern: str) -> Path:
    p = tmp_path / "pipeline.toml"
    p.write_text(f'[[stage]]\nname = "srv"\nkind = "service"\ncommand = ["true"]\nready = {{ log = \'{pattern}\' }}\n',
                 encoding="utf-8")
    return p


def test_a_readiness_pattern_re2_cannot_run_is_refused_at_load(tmp_path: Path) -> None:
    # ``ready = { log = ... }`` is searched over every line of a service's log until
    # it is ready: a backreference or lookaround there could backtrack without bound.
    from eagle3tui.config import load_config
    from eagle3tui.errors import ConfigError, ConfigErrors

    assert load_config(_service(tmp_path, r"Uvicorn running on \S+")).stages[0].ready.log_pattern
    for pat in (r"(\w+) ready \1", r"listening(?= on)"):
        with pytest.raises((ConfigError, ConfigErrors)) as e:
            load_config(_service(tmp_path, pat))
        assert "RE2" in str(e.value) and "ready.log" in str(e.value), pat


def test_the_readiness_pattern_runs_on_re2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from eagle3tui.supervisor import stage_alerts

    log = tmp_path / "srv.log"
    log.write_text("starting\nINFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n")

    def watch() -> stage_alerts.StageWatch:
        w = object.__new__(stage_alerts.StageWatch)
        w._ready_hit, w._ready_log, w._ready_offset = False, str(log), 0
        return w

    class NoBacktracking:  # Python's re must not compile the user's pattern
        @staticmethod
        def compile(*_a: object, **_k: object) -> None:
            raise AssertionError("the readiness pattern went to Python's re")

    monkeypatch.setattr(stage_alerts, "re", NoBacktracking)
    assert not watch().seen_pattern(r"Application startup complete")
    assert watch().seen_pattern(r"Uvicorn running on \S+")
