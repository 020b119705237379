"""Log intelligence: follow a stage's log, classify what it says, track progress.

Pure core: nothing here imports Textual. The supervisor uses one
:class:`StageLogMonitor` per running stage attempt; ``eagle3tui classify``
runs the same monitor over a finished log.
"""

from __future__ import annotations

from eagle3tui.logs.eta import Eta, EtaTracker
from eagle3tui.logs.events import LogEvent
from eagle3tui.logs.follower import Chunk, LogFollower, LogLine, LogWatcher, strip_ansi
from eagle3tui.logs.history import StageHistory
from eagle3tui.logs.monitor import StageLogMonitor
from eagle3tui.logs.progress import ProgressUpdate, parse_progress
from eagle3tui.logs.rules import Rule, RuleSet, build_ruleset, load_builtin_rules
from eagle3tui.logs.stall import GpuWitness, StallDetector

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
