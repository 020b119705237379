#!/usr/bin/env bash
# The GPU run of issue 14: examples/smollm2-h200.toml under `eagle3tui --watch --run-all` on an H200.
# No Python here: every step is a pipeline stage; this only moves files and starts/follows the supervisor.
#
# The 98 MB GGUF exceeds one transfer, so it travels in two halves, in two calls less than 30 s apart
# (the machine stays warm that long; files under /root survive):
#   here:    split -b 49181216 SmolLM2-135M-Instruct.Q4_1.gguf part.   -> part.aa into .whl/ (with the wheels
#            gguf, watchdog, ahocorasick-rs for cp312), part.ab into the checkout's .w2/
#   call 1 (carry .whl):              bash bench/gpu_pipeline.sh fetch1
#   call 2 (carry the checkout):      bash bench/gpu_pipeline.sh run      # starts the supervisor, follows ~9 min
#   call 3 (if it is still running):  bash bench/gpu_pipeline.sh follow   # follows to the end, collects results
# Results in $OUT: watch.log (alerts), status.json (`status --json` at the end), status_samples.jsonl (every
# 60 s while running), eval.json, train_metrics.jsonl, validation.jsonl, summaries.json (prepare, synthesise,
# regenerate and resample summaries under those keys).
set -uo pipefail
OUT=${OUT:-/tmp/gpu_out}
W=${W:-/root/gg}
E3=${E3:-/root/e3}
FOLLOW_S=${FOLLOW_S:-540}
CONFIG=examples/smollm2-h200.toml
mkdir -p "$OUT" "$W"
export PYTHONPATH="$W/site:$PWD" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
PY=python3
E3TUI=($PY -m eagle3tui --config "$CONFIG" --set "out=$E3" --set "gguf=$W/model.gguf" ${SETS:-})

collect() {
    "${E3TUI[@]}" status --json >"$OUT/status.json" 2>&1 || true
    [ -f "$E3/eval.json" ] && cp "$E3/eval.json" "$OUT/"
    # At most 8 files come back from a call, so the data stages' summaries travel as one JSON object.
    local key file sep="{"
    for key in prepare:prepare.json synthesise:synth.jsonl.json regenerate:regen.json resample:regen-sampled.json; do
        file="$E3/${key#*:}"
        [ -f "$file" ] || continue
        printf '%s"%s": ' "$sep" "${key%%:*}"
        cat "$file"
        sep=", "
    done >"$OUT/summaries.json"
    [ "$sep" = "{" ] && rm -f "$OUT/summaries.json" || echo "}" >>"$OUT/summaries.json"
    [ -f "$E3/ckpt/metrics.jsonl" ] && cp "$E3/ckpt/metrics.jsonl" "$OUT/train_metrics.jsonl"
    [ -f "$E3/ckpt/validation.jsonl" ] && cp "$E3/ckpt/validation.jsonl" "$OUT/validation.jsonl"
    cp "$W/watch.log" "$OUT/watch.log" 2>/dev/null || true
    cp "$W/status_samples.jsonl" "$OUT/" 2>/dev/null || true
}

follow() {  # follow the supervisor until it exits or FOLLOW_S passes; sample `status --json` every 60 s
    local t0=$SECONDS last=-60
    while kill -0 "$(cat "$W/watch.pid")" 2>/dev/null; do
        if ((SECONDS - last >= 60)); then
            last=$SECONDS
            { "${E3TUI[@]}" status --json 2>/dev/null | tr -d '\n'; echo; } >>"$W/status_samples.jsonl"
            tail -n 3 "$W/watch.log"
        fi
        ((SECONDS - t0 >= FOLLOW_S)) && { echo "still running after ${FOLLOW_S}s: call 'follow' again"; collect; return 0; }
        sleep 5
    done
    echo "supervisor exited"
    collect
    grep -E 'evaluate: |pipeline complete|FAILED|failed' "$W/watch.log" | tail -n 20
    grep -ahE 'train: online|train: [0-9]+ steps|train: .*resident' "$E3/.eagle3tui/logs/train.log" | cut -c1-400
}

case "${1:-}" in
fetch1)
    cp .whl/part.aa "$W/part.aa"
    $PY -m pip install -q --no-index --no-deps --target "$W/site" .whl/*.whl
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    $PY -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
    df -h /root | tail -n 1
    ls -la "$W"
    ;;
run)
    [ -f "$W/model.gguf" ] || cat "$W/part.aa" .w2/part.ab >"$W/model.gguf"
    ls -la "$W/model.gguf"
    "${E3TUI[@]}" check | tail -n 3
    setsid nohup "${E3TUI[@]}" --watch --run-all >"$W/watch.log" 2>&1 &
    echo $! >"$W/watch.pid"
    follow
    ;;
follow)
    follow
    ;;
*)
    echo "usage: bash bench/gpu_pipeline.sh fetch1|run|follow" >&2
    exit 2
    ;;
esac
