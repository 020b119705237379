#!/usr/bin/env bash
# Real-NVML check of the node report (telemetry/node_report.py), as a Slurm stage's wrapper
# writes it on its node: a stage under stagewrap allocates 2 GiB on the GPU through a child
# that leaves the stage's session (setsid), and the report must attribute exactly what
# nvidia-smi shows for that pid. Run on a GPU machine:  bash bench/gpu_node_report.sh
# Needs python3 with torch, psutil and nvidia-ml-py. Results in $OUT (default /tmp/node_report).
set -euo pipefail
OUT=${OUT:-/tmp/node_report}
mkdir -p "$OUT"
rec=$(mktemp -d)/0001
python3 -I eagle3tui/supervisor/stagewrap.py --record "$rec" --gpu-report "$OUT/report.json" \
    --gpu-interval 1 -- python3 -c '
import subprocess, sys
holder = "import torch, time; x = torch.empty(2 << 30, dtype=torch.uint8, device=\"cuda\"); print(\"holding\", flush=True); time.sleep(14)"
subprocess.run(["setsid", sys.executable, "-c", holder], check=True)
' &
wrapper=$!
for _ in $(seq 60); do
    pids=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader | tr -d ' ')
    [ -n "$pids" ] && break
    sleep 0.5
done
sleep 3  # two report intervals after the allocation
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,nounits | tee "$OUT/nvidia-smi.csv"
cp "$OUT/report.json" "$OUT/report-while-holding.json"
python3 - "$OUT" <<'PY'
import csv, json, sys
out = sys.argv[1]
rep = json.load(open(f"{out}/report-while-holding.json"))
smi = {int(r["pid"]): int(r[" used_gpu_memory [MiB]"]) << 20 for r in csv.DictReader(open(f"{out}/nvidia-smi.csv"))}
print("report: node", rep["node"], "stage", rep["stage"], "other", rep["other_bytes_by_gpu"])
print("nvidia-smi:", smi)
assert rep["available"], rep["error"]
assert set(rep["stage"]["pids"]) == set(smi), "the report must attribute the setsid child to the stage"
assert rep["stage"]["bytes"] == sum(smi.values()), (rep["stage"]["bytes"], sum(smi.values()))
print("OK: node report == nvidia-smi")
PY
wait "$wrapper"
