"""Benchmark: the driver's CPU while two quiet stages run, inotify wake-ups vs polling.

    .venv/bin/python bench/bench_driver_idle.py [--seconds 10] [--json]

A real pipeline in a temp dir with two stages that print one line every 5 s.
A real driver runs as its own process (as a front end would start it), once
with inotify wake-ups (the product's default) and once polling every tick
(the reference, in the same run). Its CPU time is read with psutil over
``--seconds`` after the stages are running. The driver's GPU sampler is off
(no GPU here), so the figure is the log-following and bookkeeping cost.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from eagle3tui.config import load_config  # noqa: E402
from eagle3tui.supervisor.procs import signal_group  # noqa: E402
from eagle3tui.supervisor.records import RunStore  # noqa: E402

QUIET = "import time\nwhile True:\n    print('still here', flush=True)\n    time.sleep(5)\n"
DRIVER = ("import sys, threading\nfrom eagle3tui.config import load_config\n"
          "from eagle3tui.supervisor.driver import Driver\n"
          "cfg = load_config(sys.argv[1])\n"
          "d = Driver(cfg, exit_when_idle=False, gpu=False, use_inotify=sys.argv[2] == 'inotify')\n"
          "d.execute({'op': 'start', 'all': True})\n"
          "d.run(threading.Event())\n")


def measure(mode: str, seconds: float) -> float:
    """Percent of one core the driver used over ``seconds``."""
    with tempfile.TemporaryDirectory(prefix="e3t-bench-idle-", ignore_cleanup_errors=True) as tmp:
        root = Path(tmp)
        (root / "quiet.py").write_text(QUIET)
        (root / "pipeline.toml").write_text("".join(
            f'[[stage]]\nname = "s{i}"\ncommand = ["{sys.executable}", "quiet.py"]\n' for i in (1, 2)))
        cfg = load_config(root / "pipeline.toml")
        proc = subprocess.Popen([sys.executable, "-c", DRIVER, str(root / "pipeline.toml"), mode],
                                cwd=root, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
        store = RunStore(cfg.state_dir)
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not all(
                    (r := store.latest(n)) is not None and r.pid for n in ("s1", "s2")):
                time.sleep(0.1)
            time.sleep(2.0)  # past start-up
            p = psutil.Process(proc.pid)
            c0, t0 = sum(p.cpu_times()[:2]), time.monotonic()
            time.sleep(seconds)
            c1, t1 = sum(p.cpu_times()[:2]), time.monotonic()
            return 100.0 * (c1 - c0) / (t1 - t0)
        finally:
            proc.kill()
            proc.wait()
            for n in ("s1", "s2"):
                r = store.latest(n)
                if r and r.pgid:
                    signal_group(r.pgid, 9)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    res = {mode: measure(mode, args.seconds) for mode in ("inotify", "polling")}
    if args.json:
        print(json.dumps(res))
    else:
        print("| wake-ups | driver CPU, 2 quiet running stages |")
        print("|---|---|")
        for mode, pct in res.items():
            print(f"| {mode} | {pct:.2f} % of a core |")
        print(f"inotify / polling: {res['inotify'] / res['polling']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
