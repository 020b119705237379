"""The registry of verdict families: every id eagle3tui can give a line or an attempt.

One catalog, as data (``families.toml``), that every module reads: the judge takes
its explanations from it, the monitor and the stall detector take the ids they make
from it, the supervisor's id sets (deaths, once-per-attempt reports, stalls) are its
flags, and ``eagle3tui check`` validates ``retry.on`` against it. The shipped rule
packs add their own ids (a pack rule's ``flags`` key is read the same way), so the
set of ids a run can report is this file plus the packs plus the user's own rules
(:mod:`catalog` joins them; this module reads only its own file, so that the rule
packs can use its evidence format).

An id that the code names but the registry does not is an error when the module
that names it is imported (:func:`family_id`), so a typo cannot reach a user.
"""

from __future__ import annotations

import difflib
import functools
import sys
from dataclasses import dataclass
from importlib import resources

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    import tomli as tomllib

KINDS = ("fatal", "warning", "benign", "progress", "info")
MAKERS = ("judge", "monitor", "stall")
# What a flag tells the code that reads it (families.toml's header says the same).
FLAGS = {
    "death": "reports a death, at whatever level it is logged (never cleared)",
    "engine": "breaks the process or the device for every later request",
    "catch-all": "matches a word and says nothing specific",
    "held": "held a few lines to see what the process does next",
    "own-event": "its event needs more than counting and listing",
    "stop-ending": "an ending that a stop asked of the process explains",
    "stall": "a stall verdict: the driver marks the stage stalled",
    "request-failure": "one request's failure in a service",
    "launcher-report": "a launcher's failure report: several matching lines, one failure",
    "launcher-kill": "a launcher killing its sibling processes",
    "once-per-attempt": "alerted once per attempt however many lines match",
    "consequence": "in a distributed job, the echo of another rank's failure",
}
_KEYS = {"id", "kind", "by", "explanation", "action", "flags", "examples", "not_examples"}
_FILE = "families.toml"


@dataclass(frozen=True, slots=True)
class Family:
    """One verdict family: what it means, what to do, and how the code treats it."""

    id: str
    kind: str
    explanation: str
    action: str = ""
    flags: frozenset[str] = frozenset()
    by: str = "judge"  # which part makes it: judge, monitor, stall, or "rule" (a pack rule)
    examples: tuple[Example, ...] = ()  # lines that must get this verdict end to end
    not_examples: tuple[Example, ...] = ()  # look-alikes that must not


class RegistryError(ValueError):
    """families.toml (or a pack's flags) is malformed: names the entry and the fix."""


def _path() -> str:
    return str(resources.files("eagle3tui.logs").joinpath(_FILE))


def _parse(text: str, where: str) -> dict[str, Family]:
    data = tomllib.loads(text)
    out: dict[str, Family] = {}
    for i, spec in enumerate(data.get("family", [])):
        label = f"{where}: family #{i + 1} ({spec.get('id', '?')!r})"
        unknown = set(spec) - _KEYS
        if unknown:
            raise RegistryError(f"{label}: unknown key(s) {sorted(unknown)}; allowed: {sorted(_KEYS)}")
        fid = spec.get("id")
        if not isinstance(fid, str) or not fid:
            raise RegistryError(f"{label}: 'id' must be a non-empty string")
        if fid in out:
            raise RegistryError(f"{label}: id {fid!r} is defined twice; keep one entry")
        if spec.get("kind") not in KINDS:
            raise RegistryError(f"{label}: kind must be one of {', '.join(KINDS)}")
        if spec.get("by", "judge") not in MAKERS:
            raise RegistryError(f"{label}: by must be one of {', '.join(MAKERS)}")
        if not isinstance(spec.get("explanation"), str) or not spec["explanation"].strip():
            raise RegistryError(f"{label}: needs an explanation (a sentence a user reads)")
        flags = spec.get("flags", [])
        bad = [f for f in flags if f not in FLAGS] if isinstance(flags, list) else ["(not a list)"]
        if bad:
            raise RegistryError(f"{label}: unknown flag(s) {bad}; known: {', '.join(FLAGS)}")
        try:
            examples = tuple(parse_example(x, label) for x in spec.get("examples", []))
            not_examples = tuple(parse_example(x, label) for x in spec.get("not_examples", []))
        except ValueError as e:
            raise RegistryError(str(e)) from None
        out[fid] = Family(fid, spec["kind"], spec["explanation"].strip(), str(spec.get("action", "")).strip(),
                          frozenset(flags), spec.get("by", "judge"), examples, not_examples)
    return out


@functools.lru_cache(maxsize=1)
def code_families() -> dict[str, Family]:
    """The families the code makes (``families.toml``), by id."""
    return _parse(resources.files("eagle3tui.logs").joinpath(_FILE).read_text(encoding="utf-8"), _path())


def family(fid: str) -> Family:
    """The code family ``fid``; KeyError naming the registry if it is not one."""
    try:
        return code_families()[fid]
    except KeyError:
        raise KeyError(f"{fid!r} is not a verdict family in {_path()}{did_you_mean(fid, code_families())}") from None


def family_id(fid: str) -> str:
    """``fid``, checked: a module names the ids it makes through this, once, at import."""
    return family(fid).id


def explain(fid: str) -> tuple[str, str]:
    """(explanation, action) of the code family ``fid``."""
    f = family(fid)
    return f.explanation, f.action


def did_you_mean(word: str, known: object) -> str:
    """``" (did you mean 'x'?)"`` for the closest known ids, or ``""``."""
    close = difflib.get_close_matches(word, sorted(known), n=3, cutoff=0.6)  # type: ignore[call-overload]
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"


# -- evidence: the lines a family or a rule must judge ----------------------------------
ORDINARY = "ordinary"  # an example's kind when the line must be no event at all
_EXAMPLE_KEYS = {"line", "kind", "verdict", "stage_kind", "before", "after", "why", "source"}


@dataclass(frozen=True, slots=True)
class Example:
    """A line and the verdict it must get end to end (through the classifier a run uses).

    ``kind``/``verdict`` None: the owner's own (the rule's kind and id, the family's).
    ``kind`` :data:`ORDINARY`: the line must be no fatal, warning, benign or progress event.
    ``before``/``after``: the lines around it in the log (what the process did next).
    ``why``: when the verdict is not the owner's, the reason the code gives it.
    """

    line: str
    kind: str | None = None
    verdict: str | None = None
    stage_kind: str = "task"
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    why: str = ""
    source: str = ""


def parse_example(raw: object, where: str) -> Example:
    """An ``examples``/``not_examples`` entry: a line, or a table (see :class:`Example`).

    ValueError naming ``where`` and the fix when it is neither.
    """
    if isinstance(raw, str):
        return Example(raw)
    if not isinstance(raw, dict):
        raise RegistryError(f"{where}: an example is a string or a table {{ line = \"...\", kind = \"...\" }}")
    unknown = set(raw) - _EXAMPLE_KEYS
    if unknown:
        raise RegistryError(f"{where}: unknown key(s) {sorted(unknown)} in an example; allowed: {sorted(_EXAMPLE_KEYS)}")
    if not isinstance(raw.get("line"), str):
        raise RegistryError(f"{where}: an example table needs line = \"...\"")
    kind = raw.get("kind")
    if kind is not None and kind not in (*KINDS, ORDINARY):
        raise RegistryError(f"{where}: example kind {kind!r} is not one of {', '.join((*KINDS, ORDINARY))}")
    if raw.get("stage_kind", "task") not in ("task", "service"):
        raise RegistryError(f"{where}: example stage_kind must be task or service")
    for k in ("before", "after"):
        v = raw.get(k, [])
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise RegistryError(f"{where}: example {k} must be a list of lines")
    return Example(raw["line"], kind, raw.get("verdict"), raw.get("stage_kind", "task"), tuple(raw.get("before", [])),
                   tuple(raw.get("after", [])), str(raw.get("why", "")), str(raw.get("source", "")))
