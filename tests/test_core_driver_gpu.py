"""The driver with GPU telemetry (the NVML-like stand-in, CI has no GPU):
memory freed under a running stage becomes an alert, and the GPU is the
stall detector's second witness."""

from __future__ import annotations

import threading

from conftest import wait_for
from eagle3tui.config import load_config
from eagle3tui.driver import Driver
from eagle3tui.gpu.fakenvml import FakeGpu, FakeNvml

GIB = 1 << 30


def run_driver(pipeline, nvml):
    cfg = load_config(pipeline.config)
    drv = Driver(cfg, nvml=nvml, exit_when_idle=True)
    stop = threading.Event()
    t = threading.Thread(target=drv.run, args=(stop,), daemon=True)
    drv.execute({"op": "start", "all": True})
    t.start()
    return drv, stop, t


def kinds(pipeline):
    return [a["kind"] for a in pipeline.alerts()]


def test_memory_freed_while_running_and_quiet_but_working(pipeline):
    pipeline.write("""
        [pipeline]
        gpu_interval = "0.1s"
        stall_floor = "1s"

        [[stage]]
        name = "holder"
        gpus = [0]
        command = ["sh", "-c", "echo 'Loading:  50%|#####     | 1/2 [00:01<00:01, 1.00s/it]'; sleep 30"]
    """)
    gpu = FakeGpu(util=95)
    nvml = FakeNvml([gpu])
    drv, stop, t = run_driver(pipeline, nvml)
    try:
        pid = wait_for(lambda: pipeline.stage("holder")["pid"], what="stage pid")
        gpu.processes[pid] = 10 * GIB
        gpu.used = 10 * GIB
        # Quiet log, busy GPU: not a hang.
        wait_for(lambda: "quiet-but-working" in kinds(pipeline), timeout=20, what="quiet but working")
        assert "stall" not in kinds(pipeline)
        snap = pipeline.status()
        assert snap["gpu"]["stages"]["holder"]["bytes"] == 10 * GIB
        # The stage's memory vanishes while it still runs: that is news.
        gpu.processes.clear()
        gpu.used = 0
        freed = wait_for(lambda: [a for a in pipeline.alerts() if a["kind"] == "gpu-memory-freed"
                                  and a["stage"] == "holder"], timeout=20, what="freed alert")[0]
        assert freed["level"] == "warning" and "still runs" in freed["message"]
    finally:
        drv.stop_stage("holder")
        stop.set()
        t.join(10)


def test_flat_gpu_and_quiet_log_is_a_suspected_hang(pipeline):
    pipeline.write("""
        [pipeline]
        gpu_interval = "0.1s"
        stall_floor = "1s"

        [[stage]]
        name = "hung"
        gpus = [0]
        command = ["sh", "-c", "echo 'step 1/100'; sleep 30"]
    """)
    gpu = FakeGpu(util=0)
    nvml = FakeNvml([gpu])
    drv, stop, t = run_driver(pipeline, nvml)
    try:
        pid = wait_for(lambda: pipeline.stage("hung")["pid"], what="stage pid")
        gpu.processes[pid] = 20 * GIB
        gpu.used = 20 * GIB
        # The rise itself counts as activity for the 20 s signal window; then the
        # GPU is flat and the verdict escalates from quiet-but-working to a hang.
        wait_for(lambda: "stall" in kinds(pipeline), timeout=60, what="stall alert")
        stall = next(a for a in pipeline.alerts() if a["kind"] == "stall")
        assert stall["details"]["rule"] == "hang-suspected", stall
        assert pipeline.stage("hung")["state"] == "stalled"
    finally:
        drv.stop_stage("hung")
        stop.set()
        t.join(10)
