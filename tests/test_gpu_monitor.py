"""GpuMonitor: sampler thread + attribution + signals + disk, end to end with
a real process tree and real files (NVML is the stand-in: CI has no GPU)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import psutil
from conftest import wait_for

from eagle3tui.telemetry.fakenvml import FakeGpu, FakeNvml
from eagle3tui.telemetry.collector import GpuMonitor, TelemetryUpdate
from eagle3tui.telemetry.signals import GpuWitness, MemoryTrend

GiB = 1 << 30
MiB = 1 << 20



def test_monitor_follows_a_stage_from_loading_to_freed(tmp_path: Path) -> None:
    # The stage: a shell whose child python is "on the GPU".
    root = subprocess.Popen(
        ["sh", "-c", f'"{sys.executable}" -c "import time; time.sleep(60)"; true']
    )
    try:
        worker = wait_for(
            lambda: next(iter(psutil.Process(root.pid).children()), None)
        ).pid
        nvml = FakeNvml([FakeGpu(util=80), FakeGpu()])
        updates: list[TelemetryUpdate] = []
        lock = threading.Lock()

        def collect(u: TelemetryUpdate) -> None:
            with lock:
                updates.append(u)

        def events(kind: str) -> list:
            with lock:
                return [e for u in updates for e in u.events if e.kind == kind]

        out = tmp_path / "hidden_states"
        mon = GpuMonitor(
            stage_roots=lambda: {"extract": root.pid},
            disk_paths=[out],
            interval=0.02,
            nvml=nvml,
            on_update=collect,
            disk_rescan_s=0,
        )
        mon.start()
        try:
            # Loading: memory grows in steps.
            for step in range(1, 6):
                nvml.gpus[0].processes[worker] = step * GiB
                wait_for(
                    lambda s=step: (
                        mon.latest
                        and mon.latest.attribution.stages["extract"].bytes == s * GiB
                    )
                )
            assert events("memory_rising")
            assert mon.witness("extract") == GpuWitness(memory_changing=True, busy=True)
            # Writing output: the disk watcher sees it.
            out.mkdir()
            (out / "part-0.pt").write_bytes(b"\0" * MiB)
            wait_for(lambda: mon.latest and mon.latest.disk[0].dir_bytes == MiB)
            assert mon.latest.disk[0].exists
            # The worker exits; the driver releases its memory.
            psutil.Process(worker).kill()
            nvml.gpus[0].processes.clear()
            freed = wait_for(lambda: events("memory_freed"))
            assert any(
                e.subject == "stage extract" and e.figures["peak_bytes"] == 5 * GiB
                for e in freed
            )
            assert mon.stage_trend("extract") == MemoryTrend.FREED
        finally:
            mon.close()
        assert not mon.sampler.running
        assert mon.callback_error is None
    finally:
        root.kill()
        root.wait(5)


def test_broken_callbacks_do_not_stop_telemetry(tmp_path: Path) -> None:
    def roots() -> dict[str, int]:
        raise KeyError("state file half-written")

    def end() -> float:
        raise ValueError("no ETA")

    mon = GpuMonitor(
        stage_roots=roots,
        projected_end=end,
        nvml=FakeNvml([FakeGpu(processes={os.getpid(): GiB})]),
    )
    update = mon.tick()
    assert (
        update.snapshot.available
        and update.attribution.stage_of(os.getpid()) == "other"
    )
    assert mon.callback_error is not None and "projected_end" in mon.callback_error
    mon.set_disk_paths([tmp_path])
    assert [s.path for s in mon.tick().disk] == [str(tmp_path)]


def test_disk_forecast_event_reaches_the_update(tmp_path: Path) -> None:
    clock = [1_000_000.0]
    mon = GpuMonitor(
        disk_paths=[tmp_path],
        projected_end=lambda: clock[0] + 10 * 365 * 86400,
        nvml=FakeNvml([FakeGpu()]),
        disk_rescan_s=0,
        clock=lambda: clock[0],
    )
    mon.tick()
    with open(tmp_path / "big.bin", "wb") as f:
        f.write(os.urandom(64 * MiB))
        f.flush()
        os.fsync(f.fileno())
    clock[0] += 1
    update = mon.tick()
    (status,) = update.disk
    assert status.full_in_s is not None
    (event,) = update.disk_events
    assert event.kind == "disk_full_before_end" and event.path == str(tmp_path)
