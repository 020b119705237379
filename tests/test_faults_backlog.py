"""Issue 29, finding 9: a driver frozen while a stage writes fast, then its catch-up.

The real detached driver follows a real stage (bench/bench_backlog.py's writer:
mixed GPU-job lines at 30 MB/s) and is frozen with SIGSTOP for 8 s; during the
freeze the stage writes one fatal line deep into what will be the backlog. On
SIGCONT a ``stop`` is sent at once, while hundreds of MB are still unread. The
stop is answered within 2 s, the fatal line (written before the stop) is still
alerted within 5 s of the resume, and the driver's peak RSS stays under 200 MB.
On the tree before this test, the stop drew its line where the reader was, so
the fatal line, written before the stop but read after it, was never alerted.
bench/bench_backlog.py is the 60 s, 50 MB/s version with its figures.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

from conftest import bench_module, wait_for
from eagle3tui.config import load_config
from eagle3tui.supervisor.protocol import send_command

backlog = bench_module("bench_backlog")


def test_fatal_line_in_a_backlog_is_alerted_and_a_stop_answered_during_catch_up(pipeline):
    trigger, ready = pipeline.root / "fatal-now", pipeline.root / "writer-ready"
    argv = [sys.executable, str(backlog.HERE), "writer", "--rate-mb", "30",
            "--trigger", str(trigger), "--ready", str(ready)]
    pipeline.write(f"""
        [[stage]]
        name = "writer"
        command = {json.dumps(argv)}
        stop_grace = "2s"
    """)
    pipeline.cli("start", "writer", check=True)
    wait_for(ready.exists, timeout=30, what="the writer")
    driver = pipeline.driver_pid()
    log = pipeline.records("writer")[0]["log"]
    time.sleep(1.0)
    os.kill(driver, signal.SIGSTOP)
    try:
        time.sleep(6.0)
        trigger.touch()
        wait_for(lambda: (pipeline.root / "fatal-now.written").exists(), timeout=10, what="the fatal line")
        time.sleep(2.0)
    finally:
        os.kill(driver, signal.SIGCONT)
    resumed = time.time()
    behind = os.stat(log).st_size - backlog._read_offset(driver, log)
    t0 = time.monotonic()
    reply = send_command(load_config(pipeline.config), "stop", ["writer"], timeout=30)
    answered = time.monotonic() - t0
    assert reply["ok"], reply
    assert behind > 100e6, f"only {behind / 1e6:.0f} MB unread at the stop: not during a catch-up"
    assert answered <= 2.0, f"stop answered after {answered:.1f}s"
    tag = f"bench-sample-{backlog.TAG}"
    hit = wait_for(lambda: [a for a in pipeline.alerts() if a["kind"] == "fatal-log-event"
                            and tag in (a.get("details") or {}).get("text", "")],
                   timeout=30, what="the fatal line written before the stop, alerted")
    assert hit[0]["time"] - resumed <= 5.0, f"alerted {hit[0]['time'] - resumed:.1f}s after the resume"
    assert len(hit) == 1, hit  # found ahead of the reader, then read: one alert
    wait_for(lambda: pipeline.stage("writer")["state"] == "stopped", timeout=60, what="stopped")
    peak = backlog._rss_mb(driver, "VmHWM")
    assert 0 < peak <= 200, f"driver peak RSS {peak:.0f} MB"
