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


def test_full_gpu_is_oom_risk_for_gpu_and_stage() -> None:
    tr = SignalTracker()
    tr.update(snap(0, 100 * GiB, util=90), attr(0, 100 * GiB))
    events = tr.update(snap(1, 137 * GiB, util=90), attr(1, 137 * GiB))
    kinds = {(e.kind, e.subject) for e in events}
    assert ("memory_full", "GPU 0") in kinds and (
        "memory_full",
        "stage extract",
    ) in kinds
    full = next(e for e in events if e.subject == "GPU 0")
    assert full.figures["pct"] > 97 and "out-of-memory risk" in full.message
    assert tr.gpu_trend(0) == MemoryTrend.FULL


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
