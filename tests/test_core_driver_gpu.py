"""The driver with GPU telemetry (the NVML-like stand-in, CI has no GPU):
memory freed under a running stage becomes an alert, and the GPU is the
stall detector's second witness."""

from __future__ import annotations

import threading
from contextlib import contextmanager

from conftest import wait_for
from eagle3tui.config import load_config
from eagle3tui.supervisor.driver import Driver
from eagle3tui.telemetry.fakenvml import FakeGpu, FakeNvml

GIB = 1 << 30


@contextmanager
def gpu_stage(pipeline, name: str, echo: str, util: int, held: int):
    """A one-stage pipeline on fake GPU 0, driven in-process; yields the fake GPU
    once the stage's pid holds ``held`` bytes on it.

    The stall floor leaves time for that: a launch does not wait for the stage's
    pid, which reaches the status a pass (up to 1 s) later, and a stall judged
    before the GPU holds anything of the stage has no GPU witness (``stalled``)."""
    pipeline.write(f"""
        [pipeline]
        gpu_interval = "0.1s"
        stall_floor = "3s"

        [[stage]]
        name = "{name}"
        gpus = [0]
        command = ["sh", "-c", "echo '{echo}'; sleep 30"]
    """)
    gpu = FakeGpu(util=util)
    drv = Driver(load_config(pipeline.config), nvml=FakeNvml([gpu]), exit_when_idle=True)
    stop = threading.Event()
    t = threading.Thread(target=drv.run, args=(stop,), daemon=True)
    drv.execute({"op": "start", "all": True})
    t.start()
    try:
        pid = wait_for(lambda: pipeline.stage(name)["pid"], what="stage pid")
        gpu.processes[pid] = held
        gpu.used = held
        yield gpu
    finally:
        drv.stop_stage(name)
        stop.set()
        t.join(10)


def kinds(pipeline):
    return [a["kind"] for a in pipeline.alerts()]


def test_memory_freed_while_running_and_quiet_but_working(pipeline):
    bar = "Loading:  50%|#####     | 1/2 [00:01<00:01, 1.00s/it]"
    with gpu_stage(pipeline, "holder", bar, util=95, held=10 * GIB) as gpu:
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


def test_flat_gpu_and_quiet_log_is_a_suspected_hang(pipeline):
    with gpu_stage(pipeline, "hung", "step 1/100", util=0, held=20 * GIB):
        # The rise itself counts as activity for the 20 s signal window; then the
        # GPU is flat and the verdict escalates from quiet-but-working to a hang.
        wait_for(lambda: "stall" in kinds(pipeline), timeout=60, what="stall alert")
        stall = next(a for a in pipeline.alerts() if a["kind"] == "stall")
        assert stall["details"]["rule"] == "hang-suspected", stall
        assert pipeline.stage("hung")["state"] == "stalled"


def test_memory_climbing_to_the_limit_is_one_alert_for_the_stage(pipeline):
    with gpu_stage(pipeline, "loader", "step 1/100", util=90, held=10 * GIB) as gpu:
        pid = pipeline.stage("loader")["pid"]
        wait_for(lambda: (pipeline.status().get("gpu") or {}).get("stages", {}).get(
            "loader", {}).get("bytes") == 10 * GIB, timeout=20, what="the stage's 10 GiB")
        gpu.used = 0
        gpu.processes[pid] = int(gpu.total * 0.985)
        wait_for(lambda: "gpu-memory-full" in kinds(pipeline), timeout=20, what="the full alert")
        # The memory freed under the running stage (its alert proves the samples
        # after the climb were taken) raises no second full alert.
        gpu.processes.clear()
        wait_for(lambda: "gpu-memory-freed" in kinds(pipeline), timeout=30, what="freed alert")
        full = [a for a in pipeline.alerts() if a["kind"] == "gpu-memory-full"]
        assert len(full) == 1, full
        assert full[0]["stage"] == "loader" and full[0]["level"] == "warning"
        assert "climbing to the limit" in full[0]["message"]
