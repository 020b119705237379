"""Log intelligence: follow a stage's log, classify what it says, track progress.

Pure core: nothing here imports Textual. The supervisor uses one
:class:`StageLogMonitor` per running stage attempt; ``eagle3tui classify``
runs the same monitor over a finished log.
"""

from __future__ import annotations

import importlib
from typing import Any

# Where each name lives: imported when first asked for (PEP 562), so a command
# that needs one module of the package (the CLI's ``status`` reads no log) does
# not pay for the classifier's start-up.
_EXPORTS = {
    "Eta": "eta", "EtaTracker": "eta", "LogEvent": "events",
    "Chunk": "follower", "LogFollower": "follower", "LogLine": "follower", "LogWatcher": "follower",
    "strip_ansi": "follower", "StageHistory": "history", "StageLogMonitor": "monitor",
    "ProgressUpdate": "progress", "parse_progress": "progress", "Rule": "rules", "RuleSet": "rules",
    "build_ruleset": "rules", "load_builtin_rules": "rules", "GpuWitness": "stall", "StallDetector": "stall",
}


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{mod}"), name)


__all__ = [
    "Chunk",
    "Eta",
    "EtaTracker",
    "GpuWitness",
    "LogEvent",
    "LogFollower",
    "LogLine",
    "LogWatcher",
    "ProgressUpdate",
    "Rule",
    "RuleSet",
    "StageHistory",
    "StageLogMonitor",
    "StallDetector",
    "build_ruleset",
    "load_builtin_rules",
    "parse_progress",
    "strip_ansi",
]
