"""Run the CPU benchmarks one after another (``make bench``).

Each script prints its own markdown table; the README's Benchmarks section is
filled from these outputs. GPU figures come from ``bench/gpu_check.sh`` and
``bench/gpu_pipeline.sh`` on a GPU host.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = [
    ["bench_logs.py"],
    ["bench_alert_latency.py"],
    ["bench_gpu.py"],
    ["bench_tui.py"],
    ["bench_regenerate.py"],
]


def main() -> int:
    failed = []
    for script, *args in SCRIPTS:
        path = HERE / script
        if not path.exists():
            print(f"## {script}: missing, skipped\n", flush=True)
            continue
        print(f"## {script}\n", flush=True)
        rc = subprocess.call([sys.executable, str(path), *args], cwd=HERE.parent)
        if rc != 0:
            failed.append(script)
        print(flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
