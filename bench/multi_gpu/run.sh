#!/usr/bin/env bash
# The seed's shape on a multi-GPU host: N-rank torchrun jobs under `eagle3tui --watch`.
# Run from the repository root on nvidia-h200-x8 (NPROC=8) or nvidia-h200-x4 (NPROC=4):
#   NPROC=8 OUT=$OUT bash bench/multi_gpu/run.sh [cases...]
# cases (default: all, in this order): attribution kill oom hang ddp
# Needs the wheels the GPU machine lacks in .whl-tui/ (textual, watchdog, ahocorasick-rs,
# google-re2, as cp312 wheels; see bench/ddp/run.sh). Results under $OUT, one summary per case,
# and summary.txt with every figure; commit them under bench/results/multi-gpu-<kind>/.
# On a CPU host, DEV=cpu NPROC=2 runs the kill and hang cases through gloo (a check of the
# script itself: no NVML, no OOM case).
set -uo pipefail
OUT=${OUT:-/tmp/multi_gpu_out}; R=${R:-/root/multi_gpu}; PY=${PY:-python3}
NPROC=${NPROC:-8}; DEV=${DEV:-cuda}; STEPS=${STEPS:-400}
CASES=${*:-attribution kill oom hang ddp}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../.." && pwd)
rm -rf "$R"; mkdir -p "$OUT" "$R"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if [ -d "$REPO/.whl-tui" ]; then
    $PY -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$REPO"/.whl-tui/*.whl || exit 1
    export PYTHONPATH=/tmp/site:$REPO
else
    export PYTHONPATH=$REPO
fi
[ "$DEV" = cuda ] && { nvidia-smi -L | tee "$OUT/gpus.txt"; }
echo "machine: $(nproc) CPUs, NPROC=$NPROC DEV=$DEV, $(date -u +%FT%TZ)" | tee "$OUT/summary.txt"

# One pipeline of one torchrun stage; the pager records every alert the command receives.
cat >"$R/pager.py" <<'PYEOF'
import json, sys, time
alert = json.load(sys.stdin)
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({"paged_at": time.time(), "level": alert.get("level"), "kind": alert["kind"],
                        "stage": alert["stage"], "message": alert["message"][:600]}) + "\n")
PYEOF
pipeline() {  # NAME FAIL [extra ranks.py args...]: writes $R/NAME/pipeline.toml
    local name=$1 fail=$2; shift 2
    local d="$R/$name"; mkdir -p "$d"
    local extra=""; for a in "$@"; do extra+=", \"$a\""; done
    cat >"$d/pipeline.toml" <<TOML
[pipeline]
name = "multi-gpu-$name"
stall_floor = "1m"

[alerts]
command = ["$PY", "$R/pager.py", "$d/pages.jsonl"]
min_level = "warning"

[[stage]]
name = "ranks"
gpus = "all"
env = { NCCL_NVLS_ENABLE = "0", TORCH_SYMM_MEM_DISABLE_MULTICAST = "1", NVSHMEM_DISABLE_NVLS = "1", PYTHONUNBUFFERED = "1" }
command = ["{python}", "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "$NPROC",
           "$HERE/ranks.py", "--steps", "$STEPS", "--device", "$DEV", "--fail", "$fail"$extra]
estimate = "2m"
on_fatal = { action = "stop", grace = "60s" }
retry = { max_attempts = 2, backoff = "5s", on = ["any"] }
TOML
}
watch() {  # NAME SECONDS: the pipeline under --watch, sampled every 2 s
    local name=$1 limit=$2 d="$R/$1"
    local E3=($PY -m eagle3tui --config "$d/pipeline.toml")
    local t0=$SECONDS
    "${E3[@]}" --watch --run-all >"$d/watch.out" 2>&1 &
    local w=$!
    while kill -0 $w 2>/dev/null && ((SECONDS - t0 < limit)); do
        { "${E3[@]}" status --json 2>/dev/null | tr -d '\n'; echo; } >>"$d/status.jsonl"
        if [ "$DEV" = cuda ]; then
            { date +%s; nvidia-smi --query-compute-apps=pid,used_memory,gpu_bus_id --format=csv,noheader; } >>"$d/nvsmi.txt"
        fi
        ps -o %cpu=,rss= -p $w >>"$d/driver_cpu.txt" 2>/dev/null
        sleep 2
    done
    if kill -0 $w 2>/dev/null; then
        "${E3[@]}" stop ranks >/dev/null 2>&1; sleep 5; kill $w 2>/dev/null; wait $w 2>/dev/null
    fi
    echo "$((SECONDS - t0))" >"$d/wall_s"
    left=$(pgrep -f "$HERE/ranks.py" | wc -l)
    gpu_used=$([ "$DEV" = cuda ] && nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | paste -sd, || echo "-")
    {
        echo "== $name (${limit}s limit, $(cat "$d/wall_s") s)"
        echo "pages:"; cat "$d/pages.jsonl" 2>/dev/null || echo "(none)"
        echo "criticals: $(grep -c '"critical"' "$d/pages.jsonl" 2>/dev/null || echo 0)"
        echo "processes left after the stop: $left; GPU memory used now (MiB): $gpu_used"
        awk '{c+=$1; n++; if ($2>m) m=$2} END {if (n) printf "driver: mean %%CPU %.1f over %d samples, peak RSS %.0f MiB\n", c/n, n, m/1024}' "$d/driver_cpu.txt"
        tail -n 5 "$d/watch.out"
    } | tee -a "$OUT/summary.txt"
    for f in watch.out pages.jsonl; do cp "$d/$f" "$OUT/$name-$f" 2>/dev/null; done
    cp "$d/.eagle3tui/alerts.jsonl" "$OUT/$name-alerts.jsonl" 2>/dev/null
    tail -n 3 "$d/status.jsonl" >"$OUT/$name-status-tail.jsonl" 2>/dev/null
}

for c in $CASES; do
    case $c in
    attribution)  # 1 and 5: every rank attributed, driver CPU with N ranks logging at 1 line / 10 ms
        pipeline attribution none --step-s 0.01
        watch attribution 150
        $PY "$HERE/attribution.py" "$R/attribution" | tee -a "$OUT/summary.txt"
        [ "$DEV" = cuda ] && $PY bench/gpu_tui_screenshot.py "$OUT" >>"$OUT/summary.txt" 2>&1
        ;;
    kill)  # 2a: one rank SIGKILLed mid-step: one critical naming the rank and the signal
        pipeline kill kill --fail-rank 1 --fail-step 100
        watch kill 240 ;;
    oom)  # 2b: one rank's real CUDA OOM while the others block in the all-reduce
        [ "$DEV" = cuda ] || { echo "oom: needs CUDA, skipped" | tee -a "$OUT/summary.txt"; continue; }
        pipeline oom oom --fail-rank 1 --fail-step 100 --timeout 60
        watch oom 300 ;;
    hang)  # 3: a hung collective, all ranks alive: failing/stalled, stopped by policy, retried
        pipeline hang hang --fail-rank 1 --fail-step 100
        watch hang 420 ;;
    ddp)  # 4: EAGLE-3 training with DDP on all GPUs against 1 GPU at the same global batch
        [ "$DEV" = cuda ] || { echo "ddp: needs CUDA, skipped" | tee -a "$OUT/summary.txt"; continue; }
        NPROC=$NPROC OUT="$OUT/ddp" R="$R/ddp" TOK=${TOK:-4000000} STEPS=${DDP_STEPS:-120} \
            bash bench/ddp/run.sh >"$OUT/ddp.txt" 2>&1
        tail -n 12 "$OUT/ddp.txt" | tee -a "$OUT/summary.txt" ;;
    *) echo "unknown case $c" >&2; exit 2 ;;
    esac
done
echo "== done $(date -u +%T)" | tee -a "$OUT/summary.txt"
