"""When the pipeline has finished, and the one alert that says so.

The pipeline is complete when every wanted stage succeeded (or was skipped)
with the current settings, nothing runs and no rerun is queued. The driver
then raises one ``pipeline-complete`` alert, quoting the result: the lines
matching the ``result`` pattern of the last stage that has one, or else the
last stage's last line of output. ``completed.json`` in the state directory remembers which attempts
were announced, written after the alert is on disk, so a driver that starts
later (or a second front end) never announces the same completion again.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eagle3tui.atomic import atomic_write_json
from eagle3tui.config import PipelineConfig, topo_order
from eagle3tui.durations import format_duration
from eagle3tui.alerts.kinds import alert_kind
from eagle3tui.supervisor.state import Intent, StageState, StageStatus

KIND = alert_kind("pipeline-complete")
MARK_FILE = "completed.json"
_TAIL_BYTES = 256 * 1024
_RESULT_LINES = 3  # matching lines quoted, the last ones
_SHOWN = 300  # characters of the result quoted


@dataclass(frozen=True)
class Completion:
    """A finished pipeline: which attempts, how long it took, and its result."""

    key: list[list[Any]]  # [[stage, attempt], ...] of the wanted stages
    succeeded: list[str]
    skipped: list[str]
    elapsed_s: float | None
    last_stage: str | None
    # Where the last stage's result is read from: its log, the attempt's offset, its pattern.
    last_log: tuple[str, int, str | None] | None = None

    def result(self) -> str:
        """The last stage's result line(s); "" when it printed none (reads its log's tail)."""
        return result_text(*self.last_log) if self.last_log else ""

    def message(self, result: str) -> str:
        took = f" in {format_duration(self.elapsed_s)}" if self.elapsed_s is not None else ""
        skipped = f", {len(self.skipped)} skipped" if self.skipped else ""
        text = f"pipeline complete: {len(self.succeeded)} stage(s) succeeded{skipped}{took}"
        if result:
            text += f"; {self.last_stage}: {result}"
        return text


def completion(config: PipelineConfig, statuses: list[StageStatus], intent: Intent
               ) -> Completion | None:
    """The completion the statuses show, or None while anything is left (or nothing ran)."""
    wanted = [s for s in statuses if s.wanted]
    if not wanted or intent.relaunch or any(s.state.active for s in statuses):
        return None
    for s in wanted:
        if s.state == StageState.SKIPPED:
            continue
        if s.state != StageState.SUCCEEDED or s.stale or not s.settled:
            return None
    ran = [s for s in wanted if s.state == StageState.SUCCEEDED]
    if not ran:
        return None
    by_name = {s.name: s for s in ran}
    tasks = [st for st in topo_order(config.stages) if st.name in by_name and not st.is_service]
    # The stage that states the pipeline's result: the last with a result pattern, else the last.
    stated = [t for t in tasks if t.result]
    last = stated[-1] if stated else (tasks[-1] if tasks else None)
    starts = [s.started_at for s in ran if s.started_at is not None]
    ends = [s.ended_at for s in ran if s.ended_at is not None]
    last_log = None
    if last is not None:
        st = by_name[last.name]
        last_log = (st.log, st.log_offset, last.result)
    return Completion(key=sorted([s.name, s.attempt] for s in ran),
                      succeeded=[s.name for s in ran],
                      skipped=[s.name for s in wanted if s.state == StageState.SKIPPED],
                      elapsed_s=(max(ends) - min(starts)) if starts and ends else None,
                      last_stage=last.name if last else None, last_log=last_log)


def result_text(log: str, offset: int, pattern: str | None) -> str:
    """The result an attempt's log states: lines matching ``pattern``, else its last line."""
    try:
        with open(log, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(offset, size - _TAIL_BYTES))
            tail = f.read()
    except OSError:
        return ""
    rows: list[str] = []
    for line in tail.decode("utf-8", "replace").split("\n"):
        # A redrawn line (a progress bar) reads as its last frame, as on a terminal.
        frames = [f.strip() for f in line.split("\r") if f.strip()]
        if frames:
            rows.append(frames[-1])
    # The wrapper's own lines (header, result marker) are not the stage talking.
    rows = [r for r in rows if r and not r.startswith("[eagle3tui]")]
    if pattern:
        from eagle3tui.logs.rules import compile_user_pattern

        rx = compile_user_pattern(pattern)
        rows = [r for r in rows if rx.search(r)][-_RESULT_LINES:]
        text = "; ".join(rows)
    else:
        text = rows[-1] if rows else ""
    return text if len(text) <= _SHOWN else text[:_SHOWN - 1] + "…"


def announced(state_dir: Path) -> list[list[Any]] | None:
    """The attempts of the completion last announced, or None."""
    try:
        data = json.loads((Path(state_dir) / MARK_FILE).read_text())
    except (OSError, ValueError):
        return None
    key = data.get("key") if isinstance(data, dict) else None
    return key if isinstance(key, list) else None


def mark_announced(state_dir: Path, done: Completion, at: float, message: str) -> None:
    """Remember that ``done`` was announced (after its alert is on disk)."""
    atomic_write_json(Path(state_dir) / MARK_FILE, {"key": done.key, "at": at, "message": message})
