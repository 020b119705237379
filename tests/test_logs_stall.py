"""Stall verdicts: once per quiet episode, but a hang is never hidden behind
an earlier "quiet but working"."""

from eagle3tui.telemetry.signals import GpuWitness
from eagle3tui.logs.stall import StallDetector

BUSY = GpuWitness(memory_changing=False, busy=True)
FLAT = GpuWitness(memory_changing=False, busy=False)


def test_quiet_but_working_escalates_to_hang():
    d = StallDetector(floor_s=10, k=10)
    d.note_activity(0)
    assert d.check(5, None, BUSY) is None
    v = d.check(11, None, BUSY)
    assert v.rule == "quiet-but-working" and v.kind == "info"
    assert d.check(20, None, BUSY) is None          # not repeated
    v = d.check(30, None, FLAT)
    assert v.rule == "hang-suspected" and v.kind == "warning"
    assert d.check(40, None, FLAT) is None          # once per episode
    d.note_activity(41)                             # output re-arms it
    assert d.check(60, None, None).rule == "stalled"


def test_threshold_follows_time_per_item():
    d = StallDetector(floor_s=60, k=10)
    assert d.threshold(None) == 60
    assert d.threshold(27.3) == 273


def test_phase_estimate_judges_the_load_bar_not_the_whole_stage():
    """The seed run: a 22-minute load estimate inside a 2h15m extraction stage."""
    from pathlib import Path

    from eagle3tui.logs.monitor import StageLogMonitor

    log = Path(__file__).parent / "fixtures/logs/issues/seed_extraction.log"
    whole = StageLogMonitor(log, estimate_s=8100)
    assert not [e for e in whole.poll() if e.rule == "eta-drift"]  # 31 min < 2h15m: no alarm
    phased = StageLogMonitor(log, estimate_s=8100,
                             phase_estimates={"Loading safetensors checkpoint shards": 22 * 60})
    phased.poll()
    # Judged against the phase's 22 minutes (+31%; no alert yet at 4/64 shards: no evidence).
    assert phased.eta is not None and phased.eta.estimate_s == 22 * 60 and phased.eta.drift > 0.25
    assert whole.eta is not None and whole.eta.drift is not None and whole.eta.drift < 0
    assert phased.eta_tracker.phase == "Loading safetensors checkpoint shards"
