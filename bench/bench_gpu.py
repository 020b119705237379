#!/usr/bin/env python3
"""CPU cost of the GPU telemetry's own code, on any machine (no GPU needed).

Drives the sampler through the NVML stand-in (so NVML's own cost, ~5-20 us
a call on an H200, is not included: bench/gpu_check.sh measures the real
thing), plus attribution over a real process tree, the signal tracker, and
the disk watcher over a real directory of many files.

    .venv/bin/python bench/bench_gpu.py [--gpus 8] [--procs 4] [--files 5000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from eagle3tui.telemetry.attribution import attribute
from eagle3tui.telemetry.disk import DiskWatcher
from eagle3tui.telemetry.fakenvml import FakeGpu, FakeNvml
from eagle3tui.telemetry.sampler import GpuSampler
from eagle3tui.telemetry.signals import SignalTracker

GiB = 1 << 30


def per_call_ms(fn: object, n: int) -> float:
    """CPU milliseconds per call of ``fn`` over ``n`` calls."""
    start = time.process_time()
    for _ in range(n):
        fn()  # type: ignore[operator]
    return 1000 * (time.process_time() - start) / n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--procs", type=int, default=4, help="GPU processes per GPU")
    ap.add_argument(
        "--files", type=int, default=5000, help="files in the watched directory"
    )
    ap.add_argument("-n", type=int, default=2000, help="iterations")
    opts = ap.parse_args()

    # A real stage tree: root sh with --procs sleeping children, all "on GPU".
    root = subprocess.Popen(
        ["sh", "-c", " ".join(["sleep 60 &"] * opts.procs) + " wait"]
    )
    try:
        deadline = time.monotonic() + 10
        import psutil

        while time.monotonic() < deadline:
            kids = psutil.Process(root.pid).children()
            if len(kids) >= opts.procs:
                break
            time.sleep(0.05)
        pids = [k.pid for k in kids]
        gpus = [
            FakeGpu(processes={pid: GiB for pid in pids}, util=50)
            for _ in range(opts.gpus)
        ]
        sampler = GpuSampler(nvml=FakeNvml(gpus))
        snap = sampler.sample()
        tracker = SignalTracker()
        att = attribute(snap, {"stage": root.pid})
        t = [0.0]

        def track() -> None:
            t[0] += 1
            tracker.update(snap.__class__(**{**snap.__dict__, "time": t[0]}), att)

        sample_ms = per_call_ms(sampler.sample, opts.n)
        attr_ms = per_call_ms(lambda: attribute(snap, {"stage": root.pid}), opts.n)
        track_ms = per_call_ms(track, opts.n)
    finally:
        root.kill()
        root.wait()

    with tempfile.TemporaryDirectory() as tmp:
        for i in range(opts.files):
            sub = Path(tmp) / f"d{i % 50}"
            sub.mkdir(exist_ok=True)
            (sub / f"f{i}.bin").write_bytes(b"x" * 100)
        start = time.process_time()
        w = DiskWatcher([tmp], rescan_s=0)
        w.poll()
        walk_ms = 1000 * (time.process_time() - start)
        w = DiskWatcher([tmp], rescan_s=3600)
        w.poll()
        poll_ms = per_call_ms(w.poll, opts.n)

    print(
        f"sampler (stand-in NVML), {opts.gpus} GPUs x {opts.procs} procs: "
        f"{sample_ms:.3f} ms/sample = {sample_ms / opts.gpus:.3f} ms per GPU"
    )
    print(f"attribution of {opts.gpus * opts.procs} GPU processes: {attr_ms:.3f} ms")
    print(f"signal tracker update: {track_ms:.3f} ms")
    print(
        f"disk: walk of {opts.files} files {walk_ms:.1f} ms; poll between walks {poll_ms:.4f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
