"""The demo's real stage logs, replayed through the driver's drift alert as they grew.

Each recording under tests/fixtures/drift/ is a run of the shipped pipeline.toml on the
2-core development VM under load (``run.json`` says which, and the alerts the live run
raised), with ``bench/record_log_growth.py``'s record of when each stage log grew.
``bench/drift_replay.py`` writes each log at that pace and polls a real
:class:`~eagle3tui.supervisor.stage_alerts.StageWatch` at the recorded times: no alert may
claim more than the stage's final duration bears out (by more than the drift
threshold), and a stage that overran by far (and draws a bar) is still alerted before it ends.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.drift_replay import has_progress, contradicted, replay

RECORDINGS = sorted(p for p in (Path(__file__).parent / "fixtures" / "drift").iterdir() if p.is_dir())


def _threshold(folder: Path) -> float:
    return float(json.loads((folder / "run.json").read_text()).get("drift_threshold", 0.25))


@pytest.mark.parametrize("folder", RECORDINGS, ids=[p.name for p in RECORDINGS])
def test_no_drift_alert_claims_more_than_the_stage_took(folder: Path) -> None:
    threshold = _threshold(folder)
    wrong = [(s.name, f"{s.final_drift:+.0%}", a.message) for s, alerts in replay(folder) for a in alerts
             if contradicted(a, s, threshold)]
    assert wrong == []


@pytest.mark.parametrize("folder", RECORDINGS, ids=[p.name for p in RECORDINGS])
def test_a_stage_that_overran_far_is_alerted_before_it_ended(folder: Path) -> None:
    threshold = _threshold(folder)
    replayed = replay(folder)
    assert replayed, folder
    for stage, alerts in replayed:
        # A stage that draws no bar has no drift alert (its stall check watches it).
        if stage.final_drift > 2 * threshold and has_progress(stage.log):
            assert alerts and alerts[0].at_s < stage.duration_s, (stage.name, f"{stage.final_drift:+.0%}")
            # What it claimed, the stage's end bore out.
            assert alerts[0].claim > threshold
