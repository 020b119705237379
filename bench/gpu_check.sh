#!/usr/bin/env bash
# Real-GPU check of the GPU telemetry (issue 4): attribution of a torch
# allocation held by a stage's grandchild, the "memory freed" signal, and
# the sampler's CPU cost. Run on a GPU host from anywhere:
#   bench/gpu_check.sh [GIB]          (default 16 GiB)
# Results: stdout, and $OUT/gpu_check.json when OUT is set.
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=index,name,memory.used,memory.total,driver_version --format=csv || true
fi
args=(--gib "${1:-16}")
if [[ -n "${OUT:-}" ]]; then args+=(--out "$OUT/gpu_check.json"); fi
PYTHONUNBUFFERED=1 exec "${PYTHON:-python3}" bench/gpu_check.py "${args[@]}"
