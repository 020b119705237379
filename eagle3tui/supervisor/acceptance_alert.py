"""One warning when a served draft's acceptance stays low.

The server reports its mean acceptance length now and then (logs/acceptance.py
reads it into the stage's live figures). A draft the server cannot use, its
hidden-state layers or vocabulary mapping wrong, keeps the server healthy and
its output correct: only the figure says so. ``AcceptanceGuard.observe`` is
called by the driver on every pass over a running attempt with the monitor's
figures; once every report for ``window_s`` was below ``min_length`` (two
reports at least), it returns the warning, once per attempt. The message
leads with the figure, compares it with the pipeline's offline evaluation
(the evaluate stage's ``eval.json``) when there is one, and names the likely
causes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eagle3tui.config import AcceptancePolicy, PipelineConfig, StageConfig
from eagle3tui.durations import format_duration
from eagle3tui.alerts.kinds import alert_kind

ALERT_KIND = alert_kind("acceptance-low")
EVAL_FILE = "eval.json"  # pipeline/evaluate.py --out: methods["eagle3@K=3"]["acceptance_length"]
EVAL_METHOD = "eagle3"
# What makes a served EAGLE-3 draft collapse, most common first (each seen in public threads).
LIKELY_CAUSES = (
    ("the server feeds the draft other target layers than it was trained on "
     "(eagle_aux_hidden_state_layer_ids, or an off-by-one in the server's convention: sglang#25454)"),
    "the draft vocabulary mapping (d2t/t2d) is missing or belongs to another vocabulary",
    "the draft was trained for another target model, revision or chat template",
    "sampling at a high temperature (acceptance is highest at temperature 0)",
)


@dataclass
class _Window:
    below_since: float | None = None
    reports_below: int = 0
    last_line: int | None = None


def evaluated_length(path: Path, positions: int | None) -> tuple[float, str] | None:
    """The offline acceptance length of ``eval.json`` and the method it is for.

    The evaluation measures the draft at several K; the served K is the
    report's number of draft positions when it says so, else the largest K.
    """
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    methods = doc.get("methods") if isinstance(doc, dict) else None
    if not isinstance(methods, dict):
        return None
    found: dict[int, float] = {}
    for key, rec in methods.items():
        name, _, k = str(key).partition("@K=")
        if name == EVAL_METHOD and k.isdigit() and isinstance(rec, dict) \
                and isinstance(rec.get("acceptance_length"), (int, float)):
            found[int(k)] = float(rec["acceptance_length"])
    if not found:
        return None
    k = positions if positions in found else max(found)
    return found[k], f"{EVAL_METHOD}@K={k}"


def evaluation_file(config: PipelineConfig, policy: AcceptancePolicy) -> Path | None:
    """Where the pipeline's offline evaluation lands: the policy's path, else an ``eval.json`` output."""
    if policy.evaluated is not None:
        return policy.evaluated
    for st in config.stages:
        for out in st.outputs:
            if out.name == EVAL_FILE:
                return out
    return None


class AcceptanceGuard:
    """Per attempt: is the served acceptance low for long enough to say so?"""

    def __init__(self, config: PipelineConfig) -> None:
        self.config = config
        self._windows: dict[str, _Window] = {}

    def observe(self, stage: StageConfig, run_id: str, figures: dict[str, float], line: int | None,
                now: float, alerted: bool) -> tuple[str, dict[str, Any]] | None:
        """The warning (message, details) when it is due now; None otherwise.

        ``alerted`` says the attempt's record already holds this warning (a
        driver that restarts does not repeat it).
        """
        policy = stage.acceptance
        length = figures.get("acceptance_length")
        if policy is None or alerted or length is None:
            return None
        w = self._windows.get(run_id)
        if w is None:
            if len(self._windows) > 64:
                self._windows.clear()
            w = self._windows[run_id] = _Window()
        if line == w.last_line:
            pass  # the same report as last pass: the window runs on
        elif length >= policy.min_length:
            w.below_since, w.reports_below, w.last_line = None, 0, line
            return None
        else:
            w.last_line = line
            w.reports_below += 1
            if w.below_since is None:
                w.below_since = now
        if w.below_since is None or w.reports_below < 2 or now - w.below_since < policy.window_s:
            return None
        self._windows.pop(run_id, None)
        return self._message(stage, policy, figures, now - w.below_since, w.reports_below)

    def _message(self, stage: StageConfig, policy: AcceptancePolicy, figures: dict[str, float],
                 held_s: float, reports: int) -> tuple[str, dict[str, Any]]:
        length = float(figures["acceptance_length"])
        rate = figures.get("acceptance_rate")
        positions = int(figures["draft_positions"]) if figures.get("draft_positions") else None
        details: dict[str, Any] = {"acceptance_length": length, "acceptance_rate": rate,
                                   "min_length": policy.min_length, "window_s": policy.window_s,
                                   "reports": reports, "draft_positions": positions}
        served = f"mean acceptance length {length:.2f}" + (f" ({rate:.0%} of draft tokens)" if rate is not None
                                                             else "")
        lead = (f"speculative decoding: {served} stayed below {policy.min_length:g} for "
                f"{format_duration(held_s)} ({reports} reports)")
        path = evaluation_file(self.config, policy)
        offline = evaluated_length(path, positions) if path is not None else None
        if offline is not None:
            details.update(evaluated_length=offline[0], evaluated_method=offline[1], evaluated_file=str(path))
            lead = (f"speculative decoding: served {length:.2f} vs evaluated {offline[0]:.2f} "
                    f"({offline[1]}, {path.name}) for {format_duration(held_s)}: "
                    "the server is not using the draft as trained")
        causes = "; ".join(f"({i}) {c}" for i, c in enumerate(LIKELY_CAUSES, 1))
        details["fix"] = "check the likely causes in order: " + causes
        return f"{lead}; likely causes: {causes}", details
