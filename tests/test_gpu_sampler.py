"""GpuSampler driven through the NVML-like stand-in (CI has no GPU)."""

from __future__ import annotations

import ctypes.util
import os
import subprocess
import sys
import time

import pytest
from conftest import wait_for

from eagle3tui.telemetry.fakenvml import (
    NVML_ERROR_FUNCTION_NOT_FOUND,
    NVML_ERROR_LIBRARY_NOT_FOUND,
    NVML_ERROR_NOT_SUPPORTED,
    FakeGpu,
    FakeNvml,
)
from eagle3tui.telemetry.sampler import GpuSampler

GiB = 1 << 30
MiB = 1 << 20



class StepClock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_sample_reports_gpus_and_processes_with_v2_memory() -> None:
    me = os.getpid()
    nvml = FakeNvml(
        [
            FakeGpu(
                used=100 * MiB,
                util=42,
                temp=55,
                power_mw=312_500,
                processes={me: 3 * GiB},
            ),
            FakeGpu(name="NVIDIA H100", util=0),
        ]
    )
    snap = GpuSampler(nvml=nvml).sample()
    assert snap.available and snap.error is None
    assert snap.driver == "580.159.04-fake"
    g0, g1 = snap.gpus
    assert g0.name == "NVIDIA H200" and g1.name == "NVIDIA H100"  # bytes decoded
    assert g0.uuid == "GPU-fake-0000"
    # v2: the driver's reserved 615 MiB is not counted as used
    assert g0.mem_used == 100 * MiB + 3 * GiB
    assert g0.mem_total == 143771 * MiB
    assert g0.util_pct == 42 and g0.temp_c == 55 and g0.power_w == pytest.approx(312.5)
    assert g1.mem_used == 0
    (proc,) = snap.processes
    assert proc.gpu_index == 0 and proc.pid == me and proc.used_bytes == 3 * GiB
    assert (
        proc.visible
        and proc.cmdline
        and "python" in (proc.name or "").lower() + " ".join(proc.cmdline).lower()
    )
    assert nvml.calls["nvmlDeviceGetComputeRunningProcesses_v3"] == 2


def test_slow_fields_are_cached() -> None:
    nvml = FakeNvml([FakeGpu(), FakeGpu()])
    sampler = GpuSampler(nvml=nvml)
    for _ in range(5):
        sampler.sample()
    assert nvml.calls["nvmlDeviceGetName"] == 2
    assert nvml.calls["nvmlDeviceGetUUID"] == 2
    assert nvml.calls["nvmlDeviceGetHandleByIndex"] == 2
    assert nvml.calls["nvmlInit"] == 1
    assert nvml.calls["nvmlDeviceGetMemoryInfo_v2"] == 10


def test_no_v2_constant_falls_back_to_v1() -> None:
    nvml = FakeNvml([FakeGpu(used=GiB)], missing={"nvmlMemory_v2"})
    snap = GpuSampler(nvml=nvml).sample()
    assert snap.gpus[0].mem_used == GiB + 615 * MiB  # v1 counts reserved memory
    assert snap.gpus[0].error is None


def test_v2_function_not_found_falls_back_once() -> None:
    nvml = FakeNvml([FakeGpu(used=GiB)], missing={"nvmlDeviceGetMemoryInfo_v2"})
    sampler = GpuSampler(nvml=nvml)
    for _ in range(3):
        snap = sampler.sample()
        assert snap.gpus[0].mem_used == GiB + 615 * MiB
    assert nvml.calls["nvmlDeviceGetMemoryInfo_v2"] == 1  # not retried every sample
    assert nvml.calls["nvmlDeviceGetMemoryInfo"] == 3


def test_process_api_falls_back_from_v3_missing_to_v2() -> None:
    me = os.getpid()
    nvml = FakeNvml(
        [FakeGpu(processes={me: GiB})],
        missing={"nvmlDeviceGetComputeRunningProcesses_v3"},
    )
    sampler = GpuSampler(nvml=nvml)
    sampler.sample()
    snap = sampler.sample()
    assert [p.pid for p in snap.processes] == [me]
    assert nvml.calls["nvmlDeviceGetComputeRunningProcesses_v2"] == 2


def test_process_api_falls_back_when_v3_function_not_found_in_driver() -> None:
    me = os.getpid()
    nvml = FakeNvml(
        [FakeGpu(processes={me: GiB})],
        missing={"nvmlDeviceGetComputeRunningProcesses_v2"},
        fail={"nvmlDeviceGetComputeRunningProcesses_v3": NVML_ERROR_FUNCTION_NOT_FOUND},
    )
    snap = GpuSampler(nvml=nvml).sample()
    assert [p.pid for p in snap.processes] == [me]
    assert nvml.calls["nvmlDeviceGetComputeRunningProcesses"] == 1


def test_no_process_api_at_all_is_reported_not_raised() -> None:
    nvml = FakeNvml(
        [FakeGpu(processes={os.getpid(): GiB})],
        missing={
            "nvmlDeviceGetComputeRunningProcesses_v3",
            "nvmlDeviceGetComputeRunningProcesses_v2",
            "nvmlDeviceGetComputeRunningProcesses",
        },
    )
    snap = GpuSampler(nvml=nvml).sample()
    assert snap.available and snap.processes == []
    assert "not supported" in (snap.gpus[0].processes_error or "")
    assert snap.gpus[0].mem_used == GiB


def test_unsupported_figures_become_none_and_are_not_asked_again() -> None:
    nvml = FakeNvml(
        [FakeGpu()],
        fail={"nvmlDeviceGetPowerUsage": NVML_ERROR_NOT_SUPPORTED},
        missing={"nvmlDeviceGetTemperature"},
    )
    sampler = GpuSampler(nvml=nvml)
    for _ in range(3):
        g = sampler.sample().gpus[0]
        assert g.power_w is None and g.temp_c is None and g.util_pct == 0
    assert nvml.calls["nvmlDeviceGetPowerUsage"] == 1


def test_gpu_lost_mid_run_is_per_gpu_and_recovers() -> None:
    nvml = FakeNvml([FakeGpu(used=GiB), FakeGpu(used=2 * GiB)])
    sampler = GpuSampler(nvml=nvml)
    assert sampler.sample().gpus[1].error is None
    nvml.gpus[1].lost = True  # fell off the bus (Xid 79)
    snap = sampler.sample()
    assert snap.available
    assert snap.gpus[0].error is None and snap.gpus[0].mem_used == GiB
    assert "GPU is lost" in (snap.gpus[1].error or "")
    assert snap.gpus[1].name == "NVIDIA H200"  # identity kept for display
    snap = sampler.sample()  # handle re-fetch fails too: still no exception
    assert "GPU is lost" in (snap.gpus[1].error or "")
    nvml.gpus[1].lost = False
    snap = sampler.sample()
    assert snap.gpus[1].error is None and snap.gpus[1].mem_used == 2 * GiB


def test_handle_that_disappears_is_refetched() -> None:
    nvml = FakeNvml([FakeGpu(used=GiB)])
    sampler = GpuSampler(nvml=nvml)
    sampler.sample()
    nvml.invalidate_handle(0)
    snap = sampler.sample()
    assert "Invalid Argument" in (snap.gpus[0].error or "")
    snap = sampler.sample()
    assert snap.gpus[0].error is None and snap.gpus[0].mem_used == GiB
    assert nvml.calls["nvmlDeviceGetHandleByIndex"] == 2


def test_library_missing_gives_clear_text_and_retries_slowly() -> None:
    clock = StepClock()
    nvml = FakeNvml(init_error=NVML_ERROR_LIBRARY_NOT_FOUND)
    sampler = GpuSampler(nvml=nvml, clock=clock)
    snap = sampler.sample()
    assert not snap.available
    assert (
        snap.error
        == "NVML unavailable: libnvidia-ml.so.1 not found (no NVIDIA driver installed?)"
    )
    clock.t += 1
    sampler.sample()
    assert nvml.calls["nvmlInit"] == 1  # not retried every second
    nvml.init_error = None  # driver installed meanwhile
    clock.t += 60
    assert sampler.sample().available


def test_zero_gpus_and_count_failure() -> None:
    snap = GpuSampler(nvml=FakeNvml([])).sample()
    assert not snap.available and "0 devices" in (snap.error or "")
    nvml = FakeNvml([FakeGpu()], fail={"nvmlDeviceGetCount": 999})
    snap = GpuSampler(nvml=nvml).sample()
    assert not snap.available and "Unknown Error" in (snap.error or "")


def test_unexpected_exception_in_binding_never_escapes() -> None:
    class Broken(FakeNvml):
        def nvmlDeviceGetCount(self) -> int:
            raise RuntimeError("ctypes exploded")

    snap = GpuSampler(nvml=Broken()).sample()
    assert not snap.available and "ctypes exploded" in (snap.error or "")


def test_pid_psutil_cannot_see_is_marked_not_visible() -> None:
    # A real pid that has exited: psutil cannot see it, like a pid from
    # another PID namespace.
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    nvml = FakeNvml([FakeGpu(processes={proc.pid: GiB, os.getpid(): GiB})])
    snap = GpuSampler(nvml=nvml).sample()
    by_pid = {p.pid: p for p in snap.processes}
    assert not by_pid[proc.pid].visible and by_pid[proc.pid].cmdline is None
    assert by_pid[os.getpid()].visible


def test_history_is_a_ring_buffer_of_history_s() -> None:
    clock = StepClock()
    nvml = FakeNvml([FakeGpu(util=7)])
    sampler = GpuSampler(nvml=nvml, history_s=10, clock=clock)
    for i in range(30):
        nvml.gpus[0].used = i * MiB
        sampler.sample()
        clock.t += 1
    hist = sampler.history(0)
    assert len(hist) == 11
    assert hist[-1][1:] == (29 * MiB, 7.0)
    assert hist[0][0] == hist[-1][0] - 10
    assert sampler.history(5) == []


def test_background_thread_samples_and_stops_promptly() -> None:
    seen = []
    sampler = GpuSampler(
        nvml=FakeNvml([FakeGpu()]), interval=0.05, on_sample=seen.append
    )
    sampler.start()
    try:
        wait_for(lambda: len(sampler.history(0)) >= 3)
        assert sampler.running and sampler.latest is not None
    finally:
        sampler.stop()
    assert not sampler.running and len(seen) >= 3
    # A long interval must not delay stop(): it waits on an event.
    slow = GpuSampler(nvml=FakeNvml([FakeGpu()]), interval=60)
    slow.start()
    wait_for(lambda: slow.latest is not None)
    started = time.monotonic()
    slow.stop()
    assert time.monotonic() - started < 2.0 and not slow.running


def test_failing_callback_does_not_stop_thread() -> None:
    def boom(_snap) -> None:
        raise ValueError("consumer bug")

    sampler = GpuSampler(nvml=FakeNvml([FakeGpu()]), interval=0.02, on_sample=boom)
    sampler.start()
    try:
        wait_for(lambda: len(sampler.history(0)) >= 3)
    finally:
        sampler.close()
    assert sampler.callback_error == "ValueError: consumer bug"


def test_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="interval"):
        GpuSampler(interval=0)


@pytest.mark.skipif(
    ctypes.util.find_library("nvidia-ml") is not None, reason="this machine has NVML"
)
def test_real_pynvml_without_driver_reports_unavailable() -> None:
    snap = GpuSampler().sample()  # the real pynvml, lazily imported
    assert not snap.available
    assert snap.error is not None and snap.error.startswith("NVML unavailable")
    assert "libnvidia-ml.so.1" in snap.error
