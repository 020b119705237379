"""Stall verdicts: once per quiet episode, but a hang is never hidden behind
an earlier "quiet but working"."""

from eagle3tui.gpu.signals import GpuWitness
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
