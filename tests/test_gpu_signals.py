"""Memory and utilisation signals (pure logic over snapshots)."""

from __future__ import annotations

from eagle3tui.telemetry.attribution import Attribution, StageUsage
from eagle3tui.telemetry.sampler import GpuInfo, GpuSnapshot
from eagle3tui.telemetry.signals import (
    GpuWitness,
    MemoryTrend,
    SignalTracker,
    Thresholds,
    classify_memory,
    format_bytes,
)

GiB = 1 << 30
MiB = 1 << 20
TOTAL = 140 * GiB


def series(*values: float, dt: float = 1.0) -> list[tuple[float, int]]:
    return [(i * dt, int(v)) for i, v in enumerate(values)]


def test_classify_memory() -> None:
    assert classify_memory([]) == MemoryTrend.UNKNOWN
    assert classify_memory(series(GiB)) == MemoryTrend.UNKNOWN
    assert classify_memory(series(0, GiB, 2 * GiB)) == MemoryTrend.RISING
    assert classify_memory(series(8 * GiB, 8 * GiB + MiB, 8 * GiB)) == MemoryTrend.FLAT
    assert classify_memory(series(8 * GiB, 6 * GiB)) == MemoryTrend.FALLING
    assert classify_memory(series(8 * GiB, 8 * GiB, 0)) == MemoryTrend.FREED
    assert classify_memory(series(8 * GiB, 100 * MiB)) == MemoryTrend.FREED  # "~0"
    assert (
        classify_memory(series(40 * MiB, 0)) == MemoryTrend.FLAT
    )  # never held much, small change
    assert (
        classify_memory(series(300 * MiB, 0)) == MemoryTrend.FALLING
    )  # not a "freed" without a real peak
    assert classify_memory(series(130 * GiB, 137 * GiB), TOTAL) == MemoryTrend.FULL
    assert classify_memory(series(130 * GiB, 134 * GiB), TOTAL) == MemoryTrend.RISING
    # only the window counts for rising: an old rise followed by 30 s flat is flat
    old_rise = series(0, 8 * GiB, *([8 * GiB] * 30))
    assert (
        classify_memory(old_rise, thresholds=Thresholds(window_s=20))
        == MemoryTrend.FLAT
    )


def snap(
    t: float,
    used: int,
    util: float = 0.0,
    *,
    available: bool = True,
    error: str | None = None,
) -> GpuSnapshot:
    gpu = GpuInfo(
        index=0,
        name="NVIDIA H200",
        mem_used=used,
        mem_total=TOTAL,
        util_pct=util,
        error=error,
    )
    return GpuSnapshot(time=t, available=available, gpus=[gpu] if available else [])


def attr(t: float, stage_bytes: int) -> Attribution:
    usage = StageUsage(
        stage="extract",
        root_pid=4242,
        gpus=[0] if stage_bytes else [],
        bytes=stage_bytes,
    )
    return Attribution(time=t, stages={"extract": usage}, other=[], stage_by_pid={})


def test_stage_lifecycle_loading_flat_freed() -> None:
    tr = SignalTracker()
    events = []
    t = 0.0
    assert tr.stage_witness("extract") is None
    for step in range(10):  # loading: 1 GiB/s
        events += tr.update(snap(t, step * GiB, util=0), attr(t, step * GiB))
        t += 1
    assert tr.stage_trend("extract") == MemoryTrend.RISING
    assert tr.stage_witness("extract") == GpuWitness(memory_changing=True, busy=False)
    assert [e.kind for e in events] == ["memory_rising"]
    for _ in range(30):  # working: flat memory, busy GPU
        events += tr.update(snap(t, 9 * GiB, util=95), attr(t, 9 * GiB))
        t += 1
    assert tr.stage_trend("extract") == MemoryTrend.FLAT
    assert tr.stage_witness("extract") == GpuWitness(memory_changing=False, busy=True)
    for _ in range(30):  # hung: flat memory, idle GPU
        tr.update(snap(t, 9 * GiB, util=0), attr(t, 9 * GiB))
        t += 1
    assert tr.stage_witness("extract") == GpuWitness(memory_changing=False, busy=False)
    new = tr.update(snap(t, 0), attr(t, 0))  # exit or crash
    assert tr.stage_trend("extract") == MemoryTrend.FREED
    freed = [
        e for e in new if e.kind == "memory_freed" and e.subject == "stage extract"
    ]
    assert len(freed) == 1
    assert (
        freed[0].figures["peak_bytes"] == 9 * GiB and freed[0].figures["now_bytes"] == 0
    )
    assert freed[0].figures["gpus"] == [0]
    assert "9.0 GiB -> 0 B" in freed[0].message
    # the GPU-level signal fires too, and neither repeats
    assert any(e.kind == "memory_freed" and e.subject == "GPU 0" for e in new)
    again = tr.update(snap(t + 1, 0), attr(t + 1, 0))
    assert [e for e in again if e.kind == "memory_freed"] == []


def test_unavailable_snapshot_is_not_evidence_of_freeing() -> None:
    tr = SignalTracker()
    tr.update(snap(0, 9 * GiB), attr(0, 9 * GiB))
    tr.update(snap(1, 9 * GiB), attr(1, 9 * GiB))
    assert tr.update(snap(2, 0, available=False), attr(2, 0)) == []
    assert tr.stage_trend("extract") == MemoryTrend.FLAT


def test_incomplete_process_list_does_not_count_as_zero() -> None:
    tr = SignalTracker()
    tr.update(snap(0, 9 * GiB), attr(0, 9 * GiB))
    tr.update(snap(1, 9 * GiB, error="GPU 0: GPU is lost"), attr(1, 0))
    assert (
        tr.stage_trend("extract") == MemoryTrend.UNKNOWN
        or tr.stage_trend("extract") != MemoryTrend.FREED
    )
    assert tr.stage_history("extract") == [(0, 9 * GiB)]


def full_events(events: list) -> list:
    return [e for e in events if e.kind == "memory_full"]


def test_memory_climbing_to_the_limit_is_one_event_for_the_stage_holding_it() -> None:
    tr = SignalTracker()
    tr.update(snap(0, 100 * GiB, util=90), attr(0, 100 * GiB))
    events = full_events(tr.update(snap(1, 137 * GiB, util=90), attr(1, 137 * GiB)))
    # One happening, one event (it was two: the GPU's and the stage's).
    assert [e.subject for e in events] == ["stage extract"]
    full = events[0]
    assert full.figures["pct"] > 97 and full.figures["gpus"] == [0]
    assert full.figures["stage"] == "extract"
    assert "out-of-memory risk" in full.message and "up 37.0 GiB" in full.message
    assert tr.gpu_trend(0) == MemoryTrend.FULL
    assert tr.stage_trend("extract") == MemoryTrend.FULL
    # It stays there, wobbling with each batch: not news again.
    later = []
    for t in range(2, 60):
        used = (137 + (t % 3) * 0.6) * GiB
        later += full_events(tr.update(snap(t, int(used), util=90), attr(t, int(used))))
    assert later == []


def test_a_gpu_that_sits_near_full_is_not_news() -> None:
    # A caching allocator's reserve or vLLM's gpu_memory_utilization: first seen at
    # 98% and staying there, or wobbling across the 97% mark, says nothing.
    tr = SignalTracker()
    events = []
    for t in range(60):
        used = int(0.98 * TOTAL) + (t % 2) * 200 * MiB
        events += tr.update(snap(t, used, util=95), attr(t, used))
    for t in range(60, 120):
        used = int((0.965 if t % 2 else 0.972) * TOTAL)
        events += tr.update(snap(t, used, util=95), attr(t, used))
    assert full_events(events) == []


def test_full_again_after_memory_fell_below_the_rearm_mark() -> None:
    tr = SignalTracker()
    seen = []
    climbs = [100, 120, 139, 139, 139, 100, 100, 130, 139]  # GiB: climb, fall to 71%, climb
    for t, g in enumerate(climbs):
        seen += [(t, e.subject) for e in full_events(tr.update(snap(t, g * GiB), attr(t, g * GiB)))]
    assert seen == [(2, "stage extract"), (8, "stage extract")]


def test_a_full_gpu_no_stage_holds_is_the_gpus_event() -> None:
    tr = SignalTracker()
    tr.update(snap(0, 100 * GiB))
    events = full_events(tr.update(snap(1, 138 * GiB)))
    assert [e.subject for e in events] == ["GPU 0"] and "stage" not in events[0].figures


def test_gpu_error_event_once() -> None:
    tr = SignalTracker()
    first = tr.update(snap(0, GiB, error="GPU 0: GPU is lost"))
    second = tr.update(snap(1, GiB, error="GPU 0: GPU is lost"))
    assert [e.kind for e in first] == ["gpu_error"] and second == []


def test_gpu_witness() -> None:
    tr = SignalTracker()
    assert tr.gpu_witness(0) is None
    tr.update(snap(0, 0, util=50))
    tr.update(snap(1, 4 * GiB, util=50))
    assert tr.gpu_witness(0) == GpuWitness(memory_changing=True, busy=True)


def test_format_bytes() -> None:
    assert format_bytes(None) == "?"
    assert format_bytes(0) == "0 B"
    assert format_bytes(1536 * MiB) == "1.5 GiB"
