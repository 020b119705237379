"""Compare the driver's GPU attribution with nvidia-smi's per-process figures.

    python bench/multi_gpu/attribution.py RUN_DIR

RUN_DIR holds ``status.jsonl`` (``eagle3tui status --json`` every 2 s) and
``nvsmi.txt`` (a ``date +%s`` line, then ``nvidia-smi --query-compute-apps``
rows, every 2 s), as bench/multi_gpu/run.sh writes them. It takes the sample in
which the stage held the most processes, and for each of them prints the bytes
eagle3tui attributed to the stage and what nvidia-smi reported for that pid at
the nearest time, with the relative difference (the issue's bar: within 1%).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def nvsmi_samples(path: Path) -> list[tuple[float, dict[int, int]]]:
    out: list[tuple[float, dict[int, int]]] = []
    for line in path.read_text().splitlines() if path.exists() else []:
        line = line.strip()
        if line.isdigit():
            out.append((float(line), {}))
        elif out and "," in line:
            pid, mem, _bus = (x.strip() for x in line.split(",", 2))
            if pid.isdigit() and mem.split()[0].isdigit():
                out[-1][1][int(pid)] = int(mem.split()[0]) * 2**20
    return out


def main() -> int:
    run = Path(sys.argv[1])
    best = None
    for line in (run / "status.jsonl").read_text().splitlines():
        try:
            st = json.loads(line)
        except json.JSONDecodeError:
            continue
        gpu = st.get("gpu") or {}
        stage = (gpu.get("stages") or {}).get("ranks")
        if stage and (best is None or len(stage.get("pids", [])) > len(best[1].get("pids", []))):
            best = (st, stage)
    if best is None:
        print("attribution: no sample attributed GPU memory to the stage")
        return 1
    st, stage = best
    t = float(st.get("now") or st.get("time") or 0)
    smi = nvsmi_samples(run / "nvsmi.txt")
    near = min(smi, key=lambda s: abs(s[0] - t))[1] if smi else {}
    procs = [p for p in st["gpu"].get("processes") or [] if p.get("pid") in stage.get("pids", [])]
    print(f"attribution: {len(procs)} processes on GPUs "
          f"{sorted({p['gpu_index'] for p in procs})}, stage total {stage.get('bytes', 0) / 2**30:.2f} GiB")
    worst = 0.0
    for p in sorted(procs, key=lambda p: p["gpu_index"]):
        ref = near.get(p["pid"])
        diff = abs(p["used_bytes"] - ref) / ref if ref else float("nan")
        worst = max(worst, diff) if ref else worst
        print(f"  gpu {p['gpu_index']} pid {p['pid']}: eagle3tui {p['used_bytes'] / 2**30:.3f} GiB, "
              f"nvidia-smi {ref / 2**30 if ref else float('nan'):.3f} GiB, diff {diff:.2%}")
    print(f"  worst difference {worst:.2%} (bar: 1%); other: {json.dumps(st['gpu'].get('other'))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
