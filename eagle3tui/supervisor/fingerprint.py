"""What a stage's result was made from, and what differs in the configuration now.

Each attempt's record keeps, from the moment it is saved (before the process
starts, so before any success can be declared), the fingerprint of what it
runs: the resolved command, shell flag, working directory, environment and
outputs, and the values of the variables those use. A succeeded stage whose
fingerprint differs from the one its configuration gives now is *changed*,
as make, Snakemake and DVC users expect; ``state.mark_stale`` marks its
dependents, and run-all reruns them.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from eagle3tui.config import StageConfig

# Record key (``RunRecord.extra``).
FINGERPRINT = "fingerprint"
_SHOWN = 40  # characters of a value shown in a "changed" note


def fingerprint(stage: StageConfig) -> dict[str, Any]:
    """The fingerprint of what ``stage`` runs, as stored with an attempt's record."""
    basis = {"command": list(stage.command), "shell": stage.shell, "cwd": str(stage.cwd),
             "env": dict(sorted(stage.env.items())), "outputs": [str(p) for p in stage.outputs]}
    digest = hashlib.sha256(json.dumps(basis, sort_keys=True).encode("utf-8")).hexdigest()[:16]
    return {"digest": digest, **basis, "vars": dict(stage.variables)}


def what_changed(recorded: Any, stage: StageConfig) -> str:
    """What differs between a recorded fingerprint and ``stage`` now; "" when nothing does.

    Names the variables first (``samples 40 → 400``), since that is what a
    ``--set`` changes; otherwise the part of the stage that changed. A record
    from before fingerprints existed (none stored) is never called changed.
    """
    if not isinstance(recorded, dict) or not isinstance(recorded.get("digest"), str):
        return ""
    now = fingerprint(stage)
    if now["digest"] == recorded["digest"]:
        return ""
    before = recorded.get("vars") if isinstance(recorded.get("vars"), dict) else {}
    diffs = [f"{name} {_short(before[name])} → {_short(value)}"
             for name, value in now["vars"].items() if name in before and before[name] != value]
    if not diffs:
        diffs = [f"{part} changed" for part in ("command", "shell", "cwd", "env", "outputs")
                 if recorded.get(part) != now[part]]
    return ", ".join(diffs) or "command changed"


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= _SHOWN else "…" + text[-(_SHOWN - 1):]
