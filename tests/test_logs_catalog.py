"""The knowledge base walked as data: every family and every shipped rule carries its evidence.

One generic walk over the registry (``eagle3tui/logs/families.toml``) and the shipped rule
packs: each example must come out of the classifier a run uses (``classify_log``, the same
monitor the supervisor runs) with its verdict, each not-example must keep its own, and the
prefilter (``rules.STRUCTURAL_KEYWORDS``, the rules' keywords, the judge's gate literals)
must change no verdict on that evidence, so a missing gate literal fails here.
"""

from __future__ import annotations

import string
from pathlib import Path

import pytest

from eagle3tui.logs import catalog, families, judge, settlement
from eagle3tui.logs.families import ORDINARY, Example
from eagle3tui.logs.offline import classify_log
from eagle3tui.logs.rules import (
    STRUCTURAL_KEYWORDS,
    RuleSet,
    check_shipped_rules,
    load_shipped_rules,
)

RULES = check_shipped_rules()
CODE = families.code_families()
# Families no one-log offline replay can produce, and where each is tested instead.
NEEDS_A_RUN = {
    "early-exit": "needs the process's exit status and run time (test_logs_monitor.py, test_core_failing.py)",
    "log-reset": "needs the log truncated under a live follower (test_logs_follower.py)",
    "eta-drift": "needs an estimate and elapsed time (test_logs_eta.py)",
    "stalled": "needs time to pass without output (test_logs_stall.py)",
    "hang-suspected": "needs time and a GPU witness (test_logs_stall.py)",
    "quiet-but-working": "needs time and a GPU witness (test_logs_stall.py)",
    "progress": "every progress shape has its own tests (test_logs_progress*.py)",
}


def _events(tmp_path: Path, ex: Example, rules: RuleSet | None = None) -> list[tuple[str, str]]:
    """(kind, rule) of the events that start at the example's line, through classify_log."""
    log = tmp_path / "example.log"
    log.write_text("\n".join([*ex.before, ex.line, *ex.after]) + "\n", encoding="utf-8")
    events, _ = classify_log(log, rules=rules, stage_kind=ex.stage_kind, progress_events=True, include_info=True)
    at = len(ex.before) + 1
    return [(e.kind, e.rule) for e in events if e.line == at]


def _expected(ex: Example, kind: str, rule: str) -> tuple[str, str] | None:
    """What ``ex`` must give: None for an ordinary line."""
    want_kind = ex.kind or kind
    if want_kind == ORDINARY:
        return None
    want_rule = ex.verdict or rule
    return (CODE[want_rule].kind if ex.kind is None and ex.verdict in CODE else want_kind, want_rule)


def _check(got: list[tuple[str, str]], want: tuple[str, str] | None, ex: Example) -> None:
    if want is None:
        assert [g for g in got if g[0] != "info"] == [], f"{ex.line!r} must be an ordinary line, got {got}"
    else:
        assert want in got, f"{ex.line!r} must give {want}, got {got}"


RULE_EXAMPLES = [pytest.param(r, ex, id=f"{r.id}#{i}") for r in RULES for i, ex in enumerate(r.examples)]
RULE_NOT_EXAMPLES = [pytest.param(r, ex, id=f"{r.id}#not{i}") for r in RULES for i, ex in enumerate(r.not_examples)]
FAMILY_EXAMPLES = [pytest.param(f, ex, id=f"{f.id}#{i}") for f in CODE.values() for i, ex in enumerate(f.examples)]
FAMILY_NOT_EXAMPLES = [
    pytest.param(f, ex, id=f"{f.id}#not{i}") for f in CODE.values() for i, ex in enumerate(f.not_examples)
]


@pytest.mark.parametrize("rule,ex", RULE_EXAMPLES)
def test_a_rule_example_gets_its_verdict_end_to_end(tmp_path: Path, rule, ex: Example) -> None:
    _check(_events(tmp_path, ex), _expected(ex, rule.kind, rule.id), ex)


@pytest.mark.parametrize("rule,ex", RULE_NOT_EXAMPLES)
def test_a_rule_not_example_keeps_its_own_verdict(tmp_path: Path, rule, ex: Example) -> None:
    got = _events(tmp_path, ex)
    assert rule.id not in {r for _k, r in got}, f"{ex.line!r} is a look-alike of {rule.id}, got {got}"
    if ex.kind is not None:
        _check(got, _expected(ex, ex.kind, ex.verdict or ""), ex)


@pytest.mark.parametrize("fam,ex", FAMILY_EXAMPLES)
def test_a_family_example_gets_its_verdict_end_to_end(tmp_path: Path, fam, ex: Example) -> None:
    _check(_events(tmp_path, ex), _expected(ex, fam.kind, fam.id), ex)


@pytest.mark.parametrize("fam,ex", FAMILY_NOT_EXAMPLES)
def test_a_family_not_example_keeps_its_own_verdict(tmp_path: Path, fam, ex: Example) -> None:
    got = _events(tmp_path, ex)
    assert fam.id not in {r for _k, r in got}, f"{ex.line!r} is a look-alike of {fam.id}, got {got}"


def test_an_example_with_another_verdict_than_its_owner_says_why() -> None:
    silent = [
        (r.id, ex.line) for r in RULES for ex in r.examples
        if (ex.kind not in (None, r.kind) or ex.verdict not in (None, r.id)) and not ex.why
    ]
    assert silent == []


def test_an_example_verdict_names_a_family() -> None:
    known = catalog.verdict_ids()
    named = {ex.verdict for r in RULES for ex in (*r.examples, *r.not_examples) if ex.verdict}
    named |= {ex.verdict for f in CODE.values() for ex in (*f.examples, *f.not_examples) if ex.verdict}
    assert named - known == set()


def test_every_family_the_code_makes_carries_an_example() -> None:
    missing = sorted(f.id for f in CODE.values() if not f.examples and f.id not in NEEDS_A_RUN)
    assert missing == []
    assert set(NEEDS_A_RUN) <= set(CODE)


# -- the prefilter decides nothing: a missing gate literal changes a verdict here ---------
# A line reaches the judge only when a prefilter literal occurs in it, and each of the
# judge's detectors runs only when one of its gate literals does. With every line a
# candidate and every gate open, the evidence must get the same verdicts.
_EVERY_LINE = tuple(string.printable.strip())
_ALL_GATES = (1 << len(judge._GATES)) - 1


def _evidence() -> list[Example]:
    out = [ex for r in RULES for ex in (*r.examples, *r.not_examples)]
    out += [ex for f in CODE.values() for ex in (*f.examples, *f.not_examples)]
    return out


def _differences(tmp_path: Path, structural: tuple[str, ...], mp: pytest.MonkeyPatch) -> list[str]:
    open_rules = RuleSet(load_shipped_rules(), structural=(*structural, *_EVERY_LINE))
    normal = RuleSet(load_shipped_rules(), structural=structural)
    want = [_events(tmp_path, ex, normal) for ex in _evidence()]
    with mp.context() as m:
        m.setattr(judge, "gate_bits", lambda text: _ALL_GATES)
        m.setattr(settlement, "gate_bits", lambda text: _ALL_GATES)
        got = [_events(tmp_path, ex, open_rules) for ex in _evidence()]
    return [f"{ex.line[:80]!r}: {w} with the prefilter, {g} without" for ex, w, g in zip(_evidence(), want, got)
            if w != g]


def test_the_prefilter_and_the_gates_change_no_verdict_on_the_evidence(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    assert _differences(tmp_path, STRUCTURAL_KEYWORDS, monkeypatch) == []


@pytest.mark.parametrize("literal,seen", [("to avoid", "OMP_NUM_THREADS set to 1"),
                                           ("Gracefully stopping", "exited with code 143")])
def test_a_missing_structural_literal_fails_the_differential(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            literal: str, seen: str) -> None:
    # Lines that reach the judge through one structural literal alone: a decision printed
    # bare with its reason, a stop asked of the process (and the ending it explains).
    without = tuple(k for k in STRUCTURAL_KEYWORDS if k != literal)
    diffs = _differences(tmp_path, without, monkeypatch)
    assert any(seen in d for d in diffs), diffs


def test_a_missing_judge_gate_literal_fails_the_differential(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The same for a gate of the judge's own: drop the "launcher" detector's "signal".
    gates = dict(judge._GATES)
    gates["launcher"] = tuple(g for g in gates["launcher"] if g != "signal")
    lits: list[str] = []
    bits: list[int] = []
    for name, group in gates.items():
        for lit in group:
            if lit in lits:
                bits[lits.index(lit)] |= judge._BIT[name]
            else:
                lits.append(lit)
                bits.append(judge._BIT[name])

    def gate_bits(text: str) -> int:
        low = text.lower()
        out = 0
        for lit, b in zip(lits, bits):
            if lit in low:
                out |= b
        return out

    monkeypatch.setattr(judge, "gate_bits", gate_bits)
    monkeypatch.setattr(settlement, "gate_bits", gate_bits)
    with_gap = [_events(tmp_path, ex) for ex in _evidence()]
    monkeypatch.undo()
    normal = [_events(tmp_path, ex) for ex in _evidence()]
    assert with_gap != normal
