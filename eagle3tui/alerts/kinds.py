"""The registry of alert kinds: every ``kind`` an alert can carry, and ranks' consequence kinds.

One catalog, as data (``kinds.toml``), beside the verdict families
(``families.toml``): an alert's kind says what happened to the pipeline (a stage
failed, a GPU reported an Xid, the notifier timed out); the family in its
``details.rule`` says what a log line meant. Code names a kind through
:func:`alert_kind` or :func:`consequence_kind`, which refuse an id the registry does
not hold when the naming module is imported, so a typo cannot reach a user;
``tests/test_alerts_kinds.py`` finds the emission points that pass a literal and
checks them, and checks docs/alerts.md's table against this file.
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

LEVELS = ("info", "warning", "critical")
EMITTERS = ("driver", "watch", "notifier", "keeper", "watcher", "slurm")
_ALERT_KEYS = {"id", "levels", "by", "explanation", "action"}
_CONSEQUENCE_KEYS = {"id", "explanation"}
_FILE = "kinds.toml"


@dataclass(frozen=True, slots=True)
class AlertKind:
    """One alert kind: the levels it comes at, who emits it, what it means and what to do."""

    id: str
    levels: tuple[str, ...]
    by: str
    explanation: str
    action: str


class AlertKindError(ValueError):
    """alert_kinds.toml is malformed, or code names a kind it does not hold."""


def _check(spec: dict, keys: set[str], label: str) -> str:
    unknown = set(spec) - keys
    missing = {"id", "explanation"} - set(spec)
    if unknown or missing:
        raise AlertKindError(f"{label}: unknown key(s) {sorted(unknown)}, missing {sorted(missing)}; "
                             f"allowed: {sorted(keys)}")
    kid = spec["id"]
    if not isinstance(kid, str) or not kid or kid != kid.lower() or " " in kid:
        raise AlertKindError(f"{label}: id must be a lower-case dash-separated name, got {kid!r}")
    return kid


def parse(text: str, where: str = _FILE) -> tuple[dict[str, AlertKind], frozenset[str]]:
    """The alert kinds and consequence kinds of a registry's text; raises AlertKindError."""
    data = tomllib.loads(text)
    alerts: dict[str, AlertKind] = {}
    for i, spec in enumerate(data.get("alert", [])):
        label = f"{where}: alert #{i + 1} ({spec.get('id', '?')!r})"
        kid = _check(spec, _ALERT_KEYS, label)
        levels = tuple(spec.get("levels") or ())
        if not levels or any(lv not in LEVELS for lv in levels):
            raise AlertKindError(f"{label}: levels must be a list of {', '.join(LEVELS)}, got {levels!r}")
        if spec.get("by") not in EMITTERS:
            raise AlertKindError(f"{label}: by must be one of {', '.join(EMITTERS)}, got {spec.get('by')!r}")
        if kid in alerts:
            raise AlertKindError(f"{label}: id {kid!r} is listed twice")
        alerts[kid] = AlertKind(kid, levels, spec["by"], spec["explanation"], spec.get("action", ""))
    consequences: set[str] = set()
    for i, spec in enumerate(data.get("consequence", [])):
        kid = _check(spec, _CONSEQUENCE_KEYS, f"{where}: consequence #{i + 1} ({spec.get('id', '?')!r})")
        consequences.add(kid)
    return alerts, frozenset(consequences)


@functools.cache
def _registry() -> tuple[dict[str, AlertKind], frozenset[str]]:
    path = resources.files("eagle3tui.alerts").joinpath(_FILE)
    return parse(path.read_text(encoding="utf-8"), str(path))


def kinds() -> dict[str, AlertKind]:
    """Every alert kind, by id."""
    return _registry()[0]


def consequence_kinds() -> frozenset[str]:
    """The kinds logs/ranks.py gives a line that another process's failure explains."""
    return _registry()[1]


def _known(kid: str, known: dict[str, AlertKind] | frozenset[str], what: str) -> str:
    if kid not in known:
        close = difflib.get_close_matches(kid, list(known), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise AlertKindError(f"{what} {kid!r} is not in eagle3tui/alerts/{_FILE}{hint}: add it there, "
                             "with its levels, explanation and action")
    return kid


def alert_kind(kid: str) -> str:
    """``kid`` itself, checked against the registry: how code names an alert kind."""
    return _known(kid, kinds(), "alert kind")


def consequence_kind(kid: str) -> str:
    """``kid`` itself, checked against the registry's consequence kinds."""
    return _known(kid, consequence_kinds(), "consequence kind")
