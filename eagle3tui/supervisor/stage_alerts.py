"""Per-attempt log supervision for the driver: events in, alerts out.

``StageWatch`` owns the log monitor of one running attempt (follower,
classifier, progress/ETA and stall detection live in ``eagle3tui.logs``) and
turns its events into alert tuples ``(level, kind, message, details)``. On
reattach it catches up from the start of the attempt but does not repeat
alerts for lines it already reported (``<attempt>.watch.json``).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from eagle3tui.atomic import atomic_write_json
from eagle3tui.config import PipelineConfig, StageConfig
from eagle3tui.logs.events import LogEvent
from eagle3tui.logs.history import StageHistory
from eagle3tui.logs.monitor import StageLogMonitor
from eagle3tui.logs.rules import RuleSet, build_ruleset
from eagle3tui.supervisor.records import RunRecord

AlertTuple = tuple[str, str, str, dict[str, Any]]

STALL_RULES = ("stalled", "hang-suspected")
# Line kinds the log panes mark (the rest is ordinary output).
VERDICT_KINDS = frozenset({"fatal", "warning", "benign", "error"})


def ruleset_for(config: PipelineConfig) -> RuleSet:
    """The builtin rules plus the config's ``[[rule]]`` tables."""
    return build_ruleset(config.rules, str(config.path))


class StageWatch:
    """Follows one attempt's log and produces alert tuples."""

    def __init__(self, stage: StageConfig, rec: RunRecord, config: PipelineConfig,
                 state_dir: Path, rules: RuleSet) -> None:
        self.stage = stage
        self.run_id = rec.run_id
        self.attempt = rec.attempt
        self.state_dir = Path(state_dir)
        prefix = str(state_dir / "runs" / stage.name / f"{rec.attempt:04d}")
        self.seen_path = Path(prefix + ".watch.json")
        # The driver's verdict on each event line, for the front ends' log panes
        # (they show these kinds and never classify lines themselves).
        self.verdicts_path = Path(prefix + ".verdicts.jsonl")
        self.log_path = rec.log
        self._truncated_unseen = False
        self.alerted_line = self._load_seen()
        # Lines processed but not yet known to be durably alerted (see commit_seen).
        self._pending_line = 0
        self.started_at = rec.started_at or rec.launched_at
        self._ready_offset = rec.log_offset
        self._ready_log = rec.log
        self._ready_hit = False
        self.monitor = StageLogMonitor(
            rec.log, offset=0 if self._truncated_unseen else rec.log_offset, rules=rules, stage=stage.name,
            # Without an estimate, the median of this stage's past durations.
            estimate_s=stage.estimate_s, history=StageHistory(self.state_dir),
            drift_threshold=config.drift_threshold, phase_estimates=stage.phases,
            stall_floor_s=config.stall_floor_s, started_at=rec.started_at or rec.launched_at)
        self._stalled_at: float | None = None
        self.benign_seen: set[str] = set()
        self.rules_seen: set[str] = set()
        self.gpu_witness: Any = None

    # -- persistence of what was already alerted --------------------------
    def _load_seen(self) -> int:
        try:
            data = json.loads(self.seen_path.read_text())
            line = int(data.get("alerted_line", 0))
        except (OSError, ValueError, AttributeError, TypeError):
            return 0
        # The mark counts lines of the file as it was. Truncated (copytruncate)
        # or replaced since: those numbers now name other lines, start over.
        try:
            st = Path(self.log_path).stat()
        except OSError:
            return line
        if data.get("ino") not in (None, st.st_ino) or st.st_size < int(data.get("size", 0)):
            # The attempt's output now starts at the file's start, too.
            self._truncated_unseen = True
            return 0
        return line

    def commit_seen(self, held_from: int | None = None) -> None:
        """Mark the lines processed so far as alerted, once their alerts are durable.

        The driver calls this after writing the alerts ``poll`` returned;
        ``held_from`` is the first line whose alert the hub still holds in
        memory (a merge window), and the mark stops before it.
        """
        line = self._pending_line
        if held_from is not None:
            line = min(line, held_from - 1)
        if line <= self.alerted_line:
            return
        self.alerted_line = line
        try:
            st = Path(self.log_path).stat()
            ident = {"ino": st.st_ino, "size": self.monitor.offset}
        except OSError:
            ident = {}
        atomic_write_json(self.seen_path, {"alerted_line": line, **ident}, fsync=True)

    # -- polling -------------------------------------------------------------
    def poll(self, now: float | None = None) -> list[AlertTuple]:
        now = now or time.time()
        resets = self.monitor.follower.resets
        events = self.monitor.poll(now)
        if self._truncated_unseen or self.monitor.follower.resets != resets:
            # Truncated (copytruncate) or replaced: numbers restart, so does the mark.
            self._truncated_unseen = False
            events.insert(0, LogEvent(line=1, end_line=1, kind="info", rule="log-reset",
                                      text=f"{self.log_path} was truncated or replaced"))
        if self._stalled_at is not None and (self.monitor.last_output_at or 0) > self._stalled_at:
            self._stalled_at = None  # output resumed
        stall_events = self.monitor.check(now, self.gpu_witness)
        for ev in stall_events:
            if ev.rule in STALL_RULES:
                self._stalled_at = now
        return self._to_alerts(events) + self._to_alerts(stall_events, live=True)

    @property
    def stalled(self) -> bool:
        return self._stalled_at is not None

    def finish(self, rec: RunRecord) -> list[AlertTuple]:
        """The attempt ended: settle tracebacks, report an early exit."""
        return self._to_alerts(self.monitor.finish(rec.exit_code, rec.signal))

    def _to_alerts(self, events: list[LogEvent], live: bool = False) -> list[AlertTuple]:
        out: list[AlertTuple] = []
        verdicts: list[dict[str, Any]] = []
        last_line = 0
        for ev in events:
            if ev.rule == "log-reset":
                # copytruncate or a new file: line numbers restart, so does the mark.
                self.alerted_line = 0
                self._pending_line = 0
                last_line = 0
                self._reset_seen()
                out.append(("warning", "log-truncated",
                            f"{self.log_path} was truncated or replaced; following it from its "
                            "start (line numbers restart)", {"rule": "log-reset"}))
                continue
            if ev.rule:
                self.rules_seen.add(ev.rule)
            end = ev.end_line or ev.line or 0
            last_line = max(last_line, end)
            # Lines an earlier driver already reported are not reported again;
            # stall verdicts are about now, not about a line.
            # (Or that this watch already handed to the driver.)
            if not live and end <= max(self.alerted_line, self._pending_line):
                continue
            if not live and ev.line and ev.kind in VERDICT_KINDS:
                verdicts.append({"line": ev.line, "end_line": end, "kind": ev.kind, "rule": ev.rule})
            alert = self._alert_for(ev)
            if alert:
                out.append(alert)
        if verdicts:
            self._write_verdicts(verdicts)
        if last_line and not live:
            self._pending_line = max(self._pending_line, last_line)
        return out

    def _reset_seen(self) -> None:
        try:
            atomic_write_json(self.seen_path, {"alerted_line": 0}, fsync=True)
        except OSError:
            pass

    def _write_verdicts(self, verdicts: list[dict[str, Any]]) -> None:
        try:
            with open(self.verdicts_path, "a", encoding="utf-8") as f:
                f.write("".join(json.dumps(v) + "\n" for v in verdicts))
        except OSError:
            pass  # display only: a full disk must not stop the alerts

    def _alert_for(self, ev: LogEvent) -> AlertTuple | None:
        details: dict[str, Any] = {
            "rule": ev.rule, "explanation": ev.explanation, "line": ev.line,
            "end_line": ev.end_line, "text": ev.text[:2000], "worker": ev.worker,
            "action": ev.action or None}
        details.update(ev.details or {})
        if ev.rule == "eta-drift":
            details.update(projected_s=ev.projected_s, drift=ev.drift)
            return ("warning", "eta-drift", ev.text, details)
        if ev.rule in STALL_RULES:
            return ("warning", "stall", ev.explanation or ev.text, details)
        if ev.rule == "quiet-but-working":
            return ("info", "quiet-but-working", ev.explanation or ev.text, details)
        if ev.kind == "fatal":
            return ("critical", "fatal-log-event", ev.explanation or ev.text[:200], details)
        if ev.kind == "benign":
            if ev.rule in self.benign_seen:
                return None
            self.benign_seen.add(ev.rule)
            return ("info", "benign-error", ev.explanation or "harmless error line", details)
        if ev.kind == "warning":
            return ("warning", "log-warning", ev.explanation or ev.text[:200], details)
        return None

    # -- what the driver and the front ends read -------------------------------
    def live(self) -> dict[str, Any]:
        """Progress, ETA and counts for ``state.json``."""
        m = self.monitor
        prog = m.progress
        eta = m.eta
        out: dict[str, Any] = {"counts": dict(getattr(m, "counts", {}) or {}),
                               "last_output_at": getattr(m, "last_output_at", None)}
        if prog is not None:
            out["progress"] = {k: getattr(prog, k, None) for k in
                               ("desc", "n", "total", "elapsed_s", "remaining_s", "rate", "unit")}
        if eta is not None and eta.remaining_s is not None:
            # The stage, not just the current bar: a stage often draws several
            # bars (load, then work), and a later bar's own elapsed time leaves
            # out everything before it. Stage elapsed + this bar's remaining is
            # a lower bound of the stage's duration, so drift is never overstated.
            tracker = self.monitor.eta_tracker
            if tracker.phase is not None:
                # A phase with its own estimate is judged on its own bar.
                out["eta"] = {"projected_s": eta.projected_s, "remaining_s": eta.remaining_s,
                              "drift": eta.drift, "phase": tracker.phase}
            else:
                elapsed = max(0.0, time.time() - self.started_at)
                projected = elapsed + eta.remaining_s
                estimate = tracker.estimate_s
                out["eta"] = {"projected_s": projected, "remaining_s": eta.remaining_s,
                              "drift": projected / estimate - 1.0 if estimate else None}
        return out

    def tail_errors(self, n: int) -> list[dict[str, Any]]:
        """The last error events of this attempt, for the failure alert."""
        return [{"line": e.line, "rule": e.rule, "text": e.text[:500]}
                for e in self.monitor.tail_errors(n)]

    def rule_ids(self) -> list[str]:
        return sorted(self.rules_seen)

    def seen_pattern(self, pattern: str) -> bool:
        """True once a line of this attempt's log matches ``pattern`` (service readiness)."""
        if self._ready_hit:
            return True
        try:
            with open(self._ready_log, "rb") as f:
                f.seek(self._ready_offset)
                data = f.read(1 << 20)
        except OSError:
            return False
        cut = data.rfind(b"\n") + 1
        self._ready_offset += cut
        rx = re.compile(pattern)
        for raw in data[:cut].splitlines():
            if rx.search(raw.decode("utf-8", "replace")):
                self._ready_hit = True
                return True
        return False
