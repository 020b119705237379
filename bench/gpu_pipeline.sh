#!/usr/bin/env bash
# The whole EAGLE-3 model chain on SmolLM2-135M-Instruct on one GPU (H200 device runs).
#
# The 98 MB GGUF exceeds one transfer, so it travels in two halves (see
# docs/pipeline-model.md, "GPU run"):
#   here:  split -b 50000000 SmolLM2-135M-Instruct.Q4_1.gguf; .w1/part.aa + gguf wheel, .w2/part.ab
#   call 1 (carry .w1):  bash bench/gpu_pipeline.sh fetch1
#   call 2 (carry .w2):  bash bench/gpu_pipeline.sh train      # data, extract bench, train, export, check
#   call 3:              bash bench/gpu_pipeline.sh evaluate   # K=3/7 + baselines (machine still warm)
# Extraction throughput alone (two calls, the second within 30 s of the first):
#   call 1 (carry .w1):  bash bench/gpu_pipeline.sh fetch1     # also a GPU smoke test of pipeline.extract
#   call 2 (carry .w2):  bash bench/gpu_pipeline.sh extract-bench   # synthetic data, bench_extract.py
# Each call writes one log, $OUT/<call>.log, plus result JSON files in $OUT.
set -euo pipefail
OUT=${OUT:-/tmp/gpu_out}
W=${W:-/root/gg}          # survives between calls while the machine stays warm
NSYN=${NSYN:-4000}        # synthetic prompts on top of the shipped ones
GEN_TOKENS=${GEN_TOKENS:-256}
EPOCHS=${EPOCHS:-4}
DEVICE=${DEVICE:-cuda}     # cpu for a local dry run
NSHIP=${NSHIP:-300}       # shipped prompts used for training (the rest are held out)
mkdir -p "$OUT" "$W"
export PYTHONPATH="$W/site:$PWD:${PYTHONPATH:-}" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
PY=python3
LOG="$OUT/${1:-none}.log"   # one log per call: at most 8 files come back

# run_step NAME CMD...: full output (tqdm frames split into lines) to $LOG, its last lines to stdout.
run_step() {
    local name=$1
    shift
    echo "=== $name: $*" >>"$LOG"
    local t0=$SECONDS
    "$@" 2>&1 | tr '\r' '\n' >>"$LOG"
    echo "=== $name: done in $((SECONDS - t0))s" >>"$LOG"
    grep -v '^[[:space:]]*$' "$LOG" | tail -n 4
}

write_convert_py() {
    cat >"$W/convert.py" <<'PYEOF'
import sys, time, torch
from pathlib import Path
from pipeline import model_io
w = Path(sys.argv[1]); t = time.time()
if not (w / "hf" / "config.json").exists():
    kw = {}
    try:  # newer transformers keep GGUF weights quantized unless asked; older ones always dequantise
        from transformers import GgufConfig
        kw["quantization_config"] = GgufConfig(dequantize=True)
    except ImportError:
        pass
    m = model_io.load_model(str(w / "model.gguf"), dtype=torch.bfloat16, device="cpu", **kw)
    tok = model_io.load_tokenizer(str(w / "model.gguf"))
    m.save_pretrained(w / "hf"); tok.save_pretrained(w / "hf")
print(f"convert: {time.time() - t:.1f}s")
PYEOF
}

# Training conversations: the target's own greedy answers (batched transformers generate on
# the GPU) to shipped prompts 0..299 plus NSYN synthetic prompts; shipped 300.. are held out.
write_generate_py() {
    cat >"$W/generate.py" <<'PYEOF'
import json, random, sys, time, torch
from pipeline import model_io
M, out, held, nsyn, gen_tokens = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
device, nship = sys.argv[6], int(sys.argv[7])
def msgs(r):
    m = [{"role": "user", "content": r["prompt"]}] if "prompt" in r else list(r["messages"])
    while m and m[-1]["role"] == "assistant":
        m.pop()
    return m
shipped = [msgs(json.loads(l)) for l in open("pipeline/data/prompts.jsonl") if l.strip()]
with open(held, "w") as f:
    for m in shipped[300:]:  # always the same held-out set
        f.write(json.dumps({"messages": m}) + "\n")
rng = random.Random(0)
topics = ["the water cycle", "binary search", "photosynthesis", "the French revolution", "black holes",
          "compound interest", "recursion", "the immune system", "climate change", "machine learning", "volcanoes",
          "the stock market", "sorting algorithms", "healthy sleep", "the moon landing", "electric cars",
          "honey bees", "the internet", "prime numbers", "ancient Rome", "coffee", "plate tectonics", "vaccines",
          "the printing press", "chess", "hash tables", "renewable energy", "the human heart", "rainbows",
          "public speaking", "time management", "Python lists", "SQL joins", "linear regression",
          "the Pythagorean theorem", "gravity", "DNA", "jazz", "the Great Wall of China", "recycling",
          "neural networks", "inflation", "earthquakes", "the solar system"]
tasks = ["Explain {t} in simple terms.", "Write a short paragraph about {t}.",
         "List three interesting facts about {t}.", "What are the main advantages and disadvantages of {t}?",
         "Give a beginner a step-by-step introduction to {t}.", "Write a haiku about {t}.",
         "Summarize the history of {t} in a few sentences.", "How would you teach {t} to a ten-year-old?",
         "Write a short quiz with answers about {t}.", "Compare {t} and {u} briefly.",
         "Write a short story that involves {t}.", "Why is {t} important?"]
prompts = shipped[:min(nship, 300)]
for _ in range(nsyn):
    t, u = rng.sample(topics, 2)
    prompts.append([{"role": "user", "content": rng.choice(tasks).format(t=t, u=u)}])
tok = model_io.load_tokenizer(M)
tok.padding_side = "left"
if tok.pad_token is None:
    tok.pad_token = tok.eos_token
model = model_io.load_model(M, dtype=torch.bfloat16 if device == "cuda" else torch.float32, device=device)
t0, n_tok = time.time(), 0
with open(out, "w") as f:
    B = 512
    for s in range(0, len(prompts), B):
        chunk = prompts[s:s + B]
        texts = [tok.apply_chat_template(p, add_generation_prompt=True, tokenize=False) for p in chunk]
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
        with torch.inference_mode():
            gen = model.generate(**enc, max_new_tokens=gen_tokens, do_sample=False, pad_token_id=tok.pad_token_id)
        for i, p in enumerate(chunk):
            ids = gen[i, enc["input_ids"].shape[1]:].tolist()
            if tok.eos_token_id in ids:
                ids = ids[:ids.index(tok.eos_token_id)]
            n_tok += len(ids)
            conv = p + [{"role": "assistant", "content": tok.decode(ids, skip_special_tokens=True)}]
            f.write(json.dumps({"id": f"gen-{s + i:05d}", "conversations": conv}) + "\n")
        print(f"generate: {s + len(chunk)}/{len(prompts)} prompts, {n_tok} tokens, "
              f"{n_tok / (time.time() - t0):,.0f} tok/s", flush=True)
PYEOF
}

# Throughput data without generation: shipped prompts through the chat template, then an
# "assistant answer" of random ordinary token ids, NSAMP samples of 512..1024 tokens in all.
# A dense forward costs the same whatever the token values, so this measures what real data would.
write_synth_py() {
    cat >"$W/synth.py" <<'PYEOF'
import json, random, sys
from pipeline import model_io
from pipeline.tokenized_dataset import write_tokenized_dataset as write_prepared
M, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
tok = model_io.load_tokenizer(M)
prompts = [json.loads(l) for l in open("pipeline/data/prompts.jsonl") if l.strip()]
special = set(tok.all_special_ids)
pool = [i for i in range(min(len(tok), 49152)) if i not in special]
rng = random.Random(0)
def samples():
    for s in range(n):
        r = prompts[s % len(prompts)]
        msgs = [{"role": "user", "content": r["prompt"]}] if "prompt" in r else [m for m in r["messages"] if m["role"] != "assistant"]
        head = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True)
        head = list(head["input_ids"] if isinstance(head, dict) or hasattr(head, "keys") else head)[:400]
        total = rng.randint(512, 1024)
        body = [rng.choice(pool) for _ in range(total - len(head))]
        yield f"syn-{s:05d}", head + body, [0] * len(head) + [1] * len(body)
man = write_prepared(out, samples(), {"tokenizer": str(M), "max_len": 1024, "synthetic": True})
print("synth:", {k: man[k] for k in man if k in ("num_samples", "num_tokens", "num_loss_tokens")})
PYEOF
}

# GPU smoke test of pipeline.extract on a tiny random Llama: rows must equal output_hidden_states.
write_smoke_py() {
    cat >"$W/smoke.py" <<'PYEOF'
import json, subprocess, sys, torch
from pathlib import Path
from transformers import LlamaConfig, LlamaForCausalLM
from pipeline.tokenized_dataset import write_tokenized_dataset as write_prepared
from pipeline.hidden_states import HiddenStatesDataset as ExtractedDataset
w = Path(sys.argv[1]) / "smoke"
cfg = LlamaConfig(vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=8, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=512, tie_word_embeddings=True)
torch.manual_seed(0)
LlamaForCausalLM(cfg).save_pretrained(w / "m")
g = torch.Generator().manual_seed(1)
samples = []
for i in range(60):
    n = int(torch.randint(5, 300, (1,), generator=g))
    samples.append((f"s{i}", torch.randint(3, 96, (n,), generator=g).tolist(), [0] * 2 + [1] * (n - 2)))
write_prepared(w / "p", samples, {"tokenizer": "tiny", "max_len": 512})
for extra in ([], ["--no-fsync"]):
    subprocess.run([sys.executable, "-m", "pipeline.extract", "--prepared-data", str(w / "p"), "--out", str(w / "h"),
                    "--model", str(w / "m"), "--device", "cuda", "--shard-tokens", "1500", "--batch-tokens", "1024",
                    "--disk-reserve-gb", "0", "--overwrite", *extra], check=True)
model = LlamaForCausalLM.from_pretrained(w / "m", dtype=torch.bfloat16).cuda().eval()
ex = ExtractedDataset(w / "h")
worst = 0.0
for j in range(len(ex)):
    ids, _m, hs = ex[j]
    with torch.no_grad():
        o = model(input_ids=ids[None].cuda(), output_hidden_states=True)
    want = torch.stack([o.hidden_states[2], o.hidden_states[4], o.hidden_states[5], o.hidden_states[-1]], 2)[0]
    worst = max(worst, float((hs.cuda().float() - want.float()).abs().max()))
print(f"smoke: {len(ex)} samples, {len(ex.manifest['shards'])} shards, max abs diff {worst:.3g}",
      "OK" if worst < 0.1 else "MISMATCH")
PYEOF
}

case "${1:-}" in
fetch1)
    cp .w1/part.aa "$W/part.aa"
    $PY -m pip install -q --no-index --no-deps --target "$W/site" .w1/gguf-*.whl
    ls -la "$W" "$W/site" | tee "$LOG"
    write_smoke_py
    run_step smoke timeout 150 $PY "$W/smoke.py" "$W" || true
    grep '^smoke:' "$LOG" || true
    ;;
extract-bench)
    if [ ! -f "$W/model.gguf" ]; then cat "$W/part.aa" .w2/part.ab >"$W/model.gguf"; fi
    { nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true; df -h "$W" || true; } | tee -a "$LOG"
    write_convert_py
    write_synth_py
    run_step convert $PY "$W/convert.py" "$W"
    M="$W/hf"
    run_step synth $PY "$W/synth.py" "$M" "$W/synth_prep" "${NSAMP:-2000}"
    # The disk's own ceiling: 2 GiB written and fsynced.
    run_step dd dd if=/dev/zero of="$W/ddtest" bs=64M count=32 conv=fsync
    rm -f "$W/ddtest"
    run_step bench_extract $PY bench/bench_extract.py --prepared-data "$W/synth_prep" --out "$W/hidden_bench" \
        --model "$M" --device "$DEVICE" --rounds "${ROUNDS:-2}" --json "$OUT/bench_extract.json"
    grep -E '^(synth|bench_extract|\|)|copied|=== ' "$LOG" | tail -n 30
    ;;
train)
    if [ ! -f "$W/model.gguf" ]; then cat "$W/part.aa" .w2/part.ab >"$W/model.gguf"; fi
    { nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true; } | tee -a "$LOG"
    write_convert_py
    write_generate_py
    # 1. GGUF -> HF directory once (bf16), so later loads take seconds instead of ~20 s of dequantising.
    run_step convert $PY "$W/convert.py" "$W"
    M="$W/hf"
    # 2. Data: generate, tokenize with the chat template (loss on assistant tokens), draft vocabulary.
    [ -f "$W/regen.jsonl" ] || run_step generate $PY "$W/generate.py" "$M" "$W/regen.jsonl" "$W/heldout.jsonl" \
        "$NSYN" "$GEN_TOKENS" "$DEVICE" "$NSHIP"
    run_step tokenize $PY -m pipeline.tokenize_data --input "$W/regen.jsonl" --output "$W/prepared" --model "$M" \
        --max-len 1024
    run_step vocab $PY -m pipeline.vocab --prepared "$W/prepared" --output "$W/vocab.safetensors" \
        --draft-vocab-size 16384
    # 3. Extraction against a bare forward over the same batches ($W is the machine's local disk).
    run_step bench_extract $PY bench/bench_extract.py --prepared-data "$W/prepared" --out "$W/hidden" \
        --model "$M" --device "$DEVICE" --rounds 1 --json "$OUT/bench_extract.json"   # leaves the fsync run in $W/hidden
    # 4. Train, export, check.
    run_step train $PY -m pipeline.train --data "$W/hidden" --vocab-map "$W/vocab.safetensors" --out "$W/ckpt" \
        --epochs "$EPOCHS" --batch-size 32 --max-len 1024 --lr 3e-4 --warmup-steps 20 --save-every 200 --device "$DEVICE"
    cp "$W/ckpt/metrics.jsonl" "$OUT/train_metrics.jsonl"
    run_step export $PY -m pipeline.export export --checkpoint "$W/ckpt" --out "$W/draft" --extraction "$W/hidden"
    cp "$W/draft/config.json" "$OUT/draft_config.json"
    grep -E '^(generate|tokenize|vocab|bench_extract|extract|train|export|check):' "$LOG" | tail -n 30
    ;;
evaluate)
    M="$W/hf"
    run_step evaluate $PY -m pipeline.evaluate --draft "$W/draft" --model "$M" --prompts "$W/heldout.jsonl" \
        --num-prompts "${NPROMPTS:-24}" --max-new-tokens "${MAXNEW:-128}" --k 3 7 --device "$DEVICE" --dtype float32 \
        --out "$OUT/evaluate.json"
    grep '^evaluate:' "$LOG"
    ;;
*)
    echo "usage: bash bench/gpu_pipeline.sh fetch1|train|evaluate|extract-bench" >&2
    exit 2
    ;;
esac
