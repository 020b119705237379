"""The alert-kind registry (eagle3tui/alerts/kinds.toml): the code emits only kinds it holds.

The emission points are found in the source tree by their shape, not listed by hand:
``Alert(level, kind, ...)`` / ``Alert(kind=...)``, the driver's ``self._alert(level, kind,
...)``, the notifier's ``self._problem(kind, ...)``, a stage watch's ``(level, kind,
message, details)`` tuples, and ranks' ``Consequence(line, kind, text)``. A kind given as a
literal (or either branch of a conditional) at one of them must be in the registry, at a
level the registry gives it; a kind given by name must come from ``alert_kind()``, which
checks it when its module is imported.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from eagle3tui.alerts import kinds as alert_kinds
from eagle3tui.alerts.kinds import AlertKindError, alert_kind, consequence_kind, kinds, parse

ROOT = Path(__file__).resolve().parent.parent
LEVELS = set(alert_kinds.LEVELS)
# call name -> index of the kind among its positional arguments
_CALLS = {"Alert": 1, "_alert": 1, "_problem": 0, "Consequence": 1}


def _literals(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _literals(node.body) + _literals(node.orelse)
    return []


def emission_points(root: Path = ROOT / "eagle3tui") -> list[tuple[str, int, str, str, list[str]]]:
    """(file, line, emitter, kind, levels given there) for every literal kind at an emission point."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = str(path.relative_to(root.parent))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                if name not in _CALLS:
                    continue
                pos = _CALLS[name]
                given = [k.value for k in node.keywords if k.arg == "kind"]
                if len(node.args) > pos:
                    given.append(node.args[pos])
                levels = [k.value for k in node.keywords if k.arg == "level"]
                if name in ("Alert", "_alert") and node.args:
                    levels.append(node.args[0])
                lv = [x for n in levels for x in _literals(n)]
                found += [(rel, node.lineno, name, kind, lv) for n in given for kind in _literals(n)]
            elif (isinstance(node, ast.Tuple) and len(node.elts) == 4 and _literals(node.elts[0])
                  and set(_literals(node.elts[0])) <= LEVELS and not isinstance(node.elts[3], ast.Constant)):
                # (level, kind, message, details): details is a dict, never a word (a tuple of
                # level names is no alert)
                found += [(rel, node.lineno, "tuple", kind, _literals(node.elts[0]))
                          for kind in _literals(node.elts[1])]
    return found


def test_every_emitted_kind_is_in_the_registry_at_its_level() -> None:
    points = emission_points()
    # The scan is not vacuous: the driver alone emits dozens of kinds.
    assert len(points) >= 60 and len({p[3] for p in points}) >= 50, len(points)
    known, consequences = kinds(), alert_kinds.consequence_kinds()
    bad = []
    for rel, line, emitter, kind, levels in points:
        if emitter == "Consequence":
            if kind not in consequences:
                bad.append(f"{rel}:{line}: consequence kind {kind!r}")
        elif kind not in known:
            bad.append(f"{rel}:{line}: alert kind {kind!r} is not in alert_kinds.toml")
        elif any(lv not in known[kind].levels for lv in levels):
            bad.append(f"{rel}:{line}: {kind!r} emitted at {levels}, registry says {known[kind].levels}")
    assert not bad, "\n".join(bad)


def test_the_scan_catches_a_kind_the_registry_lacks(tmp_path: Path) -> None:
    # The same scan over a module that emits a new kind the ordinary way reports it.
    pkg = tmp_path / "eagle3tui"
    pkg.mkdir()
    (pkg / "new.py").write_text(
        "def tick(self):\n"
        "    self._alert('warning', 'gpu-fan-loud', 'the fan is loud')\n"
        "    return ('critical' if self.x else 'warning', 'stage-failed', 'm', {})\n")
    points = emission_points(pkg)
    assert [(p[3], p[4]) for p in points] == [("gpu-fan-loud", ["warning"]), ("stage-failed", ["critical", "warning"])]
    assert "gpu-fan-loud" not in kinds()
    assert "warning" not in kinds()["stage-failed"].levels


def test_a_kind_named_by_constant_is_checked_when_imported() -> None:
    from eagle3tui.alerts import notifier
    from eagle3tui.supervisor import acceptance_alert, completion

    assert acceptance_alert.ALERT_KIND == "acceptance-low" and completion.KIND == "pipeline-complete"
    assert notifier.HELD_KINDS | notifier.ENDING_KINDS | notifier.NEWS_KINDS <= kinds().keys()
    with pytest.raises(AlertKindError, match="stage-faild.*did you mean 'stage-failed'"):
        alert_kind("stage-faild")
    with pytest.raises(AlertKindError):
        consequence_kind("stage-failed")


def test_a_consequence_of_an_unknown_kind_is_refused() -> None:
    from eagle3tui.logs.ranks import Consequence

    assert Consequence(3, "rank-failed", "rank 1 died").kind == "rank-failed"
    with pytest.raises(AlertKindError):
        Consequence(3, "rank-fail", "rank 1 died")


def test_every_kind_has_its_explanation_and_action() -> None:
    for kind in kinds().values():
        assert kind.explanation.strip() and kind.action.strip(), kind.id
        assert re.fullmatch(r"[a-z]+(?:-[a-z]+)*", kind.id), kind.id


def test_a_malformed_entry_is_refused_with_its_place() -> None:
    with pytest.raises(AlertKindError, match=r"x.toml: alert #1 \('a-b'\): levels"):
        parse('[[alert]]\nid = "a-b"\nlevels = ["loud"]\nby = "driver"\nexplanation = "e"\naction = "a"\n', "x.toml")
    with pytest.raises(AlertKindError, match="unknown key"):
        parse('[[alert]]\nid = "a-b"\nlevel = "info"\nexplanation = "e"\n', "x.toml")


def test_the_docs_table_of_kinds_is_the_registry() -> None:
    text = (ROOT / "docs" / "alerts.md").read_text(encoding="utf-8")
    table = text.split("### Kinds", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in table.splitlines() if ln.startswith("| `")]
    documented = {k for ln in rows for k in re.findall(r"`([a-z]+(?:-[a-z]+)*)`", ln.split(" | ")[0])}
    assert documented == set(kinds()), {"undocumented": set(kinds()) - documented,
                                        "not in the registry": documented - set(kinds())}
