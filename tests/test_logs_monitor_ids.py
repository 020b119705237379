"""The verdict ids the monitor emits are the catalog's (families.toml and the shipped packs).

``retry.on``, ``eagle3tui check`` and the docs read the ids from the registry; an id the
monitor makes in its code but the registry does not hold is one they cannot know. Two
guards: no id-shaped string literal in the monitor's modules but through the registry's
lookups (which fail at import on an unknown id), and every event of a replay of the whole
logs names a known id.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import eagle3tui.logs as logs_pkg
from eagle3tui.logs import catalog
from eagle3tui.logs.families import RegistryError
from eagle3tui.logs.offline import classify_log

# The modules that make the monitor's events.
MONITOR_MODULES = ("monitor.py", "scan.py", "tracebacks.py", "settlement.py")
# A dash-separated id ("error-then-ended"); one-word ids cannot be told from other words.
ID_SHAPE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)+")
# The calls that read an id or a flag from the registry.
LOOKUPS = {"family_id", "known_id", "with_flag", "one_with"}
WHOLE_LOGS = sorted(Path(__file__).parent.glob("fixtures/whole_logs*/**/*.log"))


def _ids_outside_lookups(source: str) -> list[tuple[int, str]]:
    tree = ast.parse(source)
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if name in LOOKUPS:
                inside.update(id(a) for a in node.args)
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and ID_SHAPE.fullmatch(n.value)
            and id(n) not in inside and n.value not in ("utf-8",)]


@pytest.mark.parametrize("module", MONITOR_MODULES)
def test_the_monitor_names_ids_only_through_the_registry(module: str) -> None:
    source = (Path(logs_pkg.__file__).parent / module).read_text(encoding="utf-8")
    assert _ids_outside_lookups(source) == []


def test_the_literal_check_finds_an_id_made_in_code() -> None:
    # The check above would pass on any source if it found nothing: it must see these.
    src = 'A = families.family_id("stop-requested")\nev.rule = "error-went-on"\nif r == "fatal-level": pass\n'
    assert _ids_outside_lookups(src) == [(2, "error-went-on"), (3, "fatal-level")]


def test_an_unknown_id_fails_the_lookup() -> None:
    with pytest.raises(RegistryError, match="did you mean 'error-then-ended'"):
        catalog.known_id("error-then-endd")


@pytest.mark.parametrize("stage_kind", ["task", "service"])
def test_every_event_of_the_whole_logs_names_a_known_id(stage_kind: str) -> None:
    assert WHOLE_LOGS, "no whole logs found"
    known = catalog.verdict_ids()
    unknown: dict[str, str] = {}
    for path in WHOLE_LOGS:
        events, _mon = classify_log(path, stage_kind=stage_kind, include_info=True, progress_events=True)
        for ev in events:
            if ev.rule not in known:
                unknown.setdefault(ev.rule, f"{path.name}:{ev.line}")
    assert unknown == {}
