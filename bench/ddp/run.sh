#!/usr/bin/env bash
# Run on the nvidia-h200-x2 device kind from the repository root, e.g.
#   TOK=1000000 STEPS=150 T1=130 T2=110 OUT=$OUT bash bench/ddp/run.sh   (carry .whl-tui for watchdog/ahocorasick wheels)
# issue 14, "2-GPU training": pipeline.train on 1 GPU (--grad-accum 2) vs torchrun 2 ranks (as an eagle3tui stage),
# same global batch, synthetic SmolLM2-135M-shaped hidden states. Results in $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/ddp_out}; R=${R:-/root/ddp}; PY=${PY:-python3}
TOK=${TOK:-1000000}; STEPS=${STEPS:-160}; DEV=${DEV:-cuda}; SHAPE=${SHAPE:-}; BT=${BT:-32768}; NPROC=${NPROC:-2}
T1=${T1:-170}; T2=${T2:-150}
rm -rf "$R"; mkdir -p "$OUT" "$R"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if [ -d .whl-tui ] && [ "$DEV" = cuda ]; then
    $PY -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl-tui/watchdog-*.whl .whl-tui/ahocorasick_rs-*.whl || exit 1
    export PYTHONPATH=/tmp/site:$PWD
else
    export PYTHONPATH=$PWD
fi
E3=($PY -m eagle3tui --config bench/ddp/ddp.toml --set "out=$R" --set "steps=$STEPS" --set "device=$DEV" --set "nproc=$NPROC" --set "batch_tokens=$BT")
COMMON=(--data "$R/hidden" --vocab-map "$R/vocab.safetensors" --batch-tokens "$BT" --max-len 1024 --lr 6e-4 --max-steps "$STEPS" --save-every 100000 --device "$DEV")
[ "$DEV" = cuda ] && { nvidia-smi -L; $PY -c 'import torch; print("torch", torch.__version__, "gpus", torch.cuda.device_count())'; }
echo "== data $(date +%T)"; $PY bench/ddp/make_data.py "$R/hidden" "$TOK" $SHAPE || exit 1; du -sh "$R/hidden"
echo "== 1 GPU, --grad-accum 2 $(date +%T)"
CUDA_VISIBLE_DEVICES=0 timeout -s TERM "$T1" $PY -m pipeline.train "${COMMON[@]}" --out "$R/one" --grad-accum 2 2>"$R/one.err"
echo "rc=$?"; tr '\r' '\n' <"$R/one.err" | grep -v '^$' | tail -n 2; cp "$R/one/metrics.jsonl" "$OUT/m1.jsonl"
echo "== 2 ranks under eagle3tui --watch --run-all $(date +%T)"
"${E3[@]}" --watch --run-all >"$R/watch.log" 2>&1 &
WPID=$!; t0=$SECONDS
while kill -0 $WPID 2>/dev/null && ((SECONDS - t0 < T2)); do
    { "${E3[@]}" status --json 2>/dev/null | tr -d '\n'; echo; } >>"$OUT/status_samples.jsonl"
    if [ "$DEV" = cuda ]; then
        { date +%T; nvidia-smi --query-compute-apps=pid,used_memory,gpu_bus_id --format=csv,noheader; } >>"$OUT/nvsmi.txt"
    fi
    [ -s "$OUT/ps.txt" ] || { ps -eo pid,ppid,args | grep -E 'pipeline.train|eagle3tui|distributed.run' | grep -v grep >"$R/ps.tmp"; \
                               (($(grep -c 'pipeline.train' "$R/ps.tmp") >= NPROC + 1)) && mv "$R/ps.tmp" "$OUT/ps.txt"; }
    sleep 2
done
kill -0 $WPID 2>/dev/null && { echo "supervisor still running after ${T2}s: stopping it"; kill $WPID; sleep 3; }
"${E3[@]}" status --json >"$OUT/status_end.json" 2>&1
cp "$R/watch.log" "$OUT/"; cp "$R/two/metrics.jsonl" "$OUT/m2.jsonl" 2>/dev/null
n2=$(wc -l <"$OUT/m2.jsonl" 2>/dev/null || echo 0)
if ((n2 < STEPS)); then
    echo "== eagle3tui run gave $n2 steps: plain torchrun fallback $(date +%T)"
    timeout -s TERM 120 $PY -m torch.distributed.run --standalone --nproc-per-node "$NPROC" -m pipeline.train "${COMMON[@]}" \
        --out "$R/two2" --grad-accum 1 2>"$R/two2.err"; echo "rc=$?"; tail -n 5 "$R/two2.err"
    cp "$R/two2/metrics.jsonl" "$OUT/m2.jsonl"
fi
echo "== done $(date +%T)"; tail -n 4 "$R/watch.log"
$PY bench/ddp/report.py "$OUT" | tee "$OUT/summary.txt"
