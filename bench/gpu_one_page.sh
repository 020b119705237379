#!/usr/bin/env bash
# On the GPU machine: real CUDA out-of-memory deaths under `eagle3tui --watch`, with a
# real [alerts] command, to show one failure = one page on a real GPU (docs/alerts.md).
#   bash bench/gpu_one_page.sh      (wheels for Python 3.12 in .whl-dev/: ahocorasick-rs,
#                                    watchdog, google-re2; results under $OUT)
# Two stages on GPU 0: `oom` allocates 16 GiB blocks until CUDA refuses and dies of the
# torch.OutOfMemoryError; `hung` catches it, prints the traceback and keeps its memory
# (as a rank waiting on a dead peer does) until on_fatal stops it.
set -euo pipefail
OUT=${OUT:-/tmp/out}
W=$(mktemp -d)
PY=${PY:-python3}
[ -n "${NO_WHEELS:-}" ] || $PY -m pip install -q --no-index --no-deps --target "$W/site" .whl-dev/*.whl
export PYTHONPATH="$PWD:$W/site"
cat >"$W/grab.py" <<'PYEOF'
import sys, time, traceback
import torch
keep = sys.argv[1] == "keep"
blocks = []
print(f"allocating on {torch.cuda.get_device_name(0)}", flush=True)
try:
    while True:
        blocks.append(torch.empty(16 * 2**30, dtype=torch.uint8, device="cuda:0"))
        print(f"holding {len(blocks) * 16} GiB", flush=True)
except torch.OutOfMemoryError:
    if not keep:
        raise
    traceback.print_exc()
    sys.stdout.flush()
    while True:  # hung with its memory
        time.sleep(1)
PYEOF
cat >"$W/pager.py" <<'PYEOF'
import json, sys, time
alert = json.load(sys.stdin)
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({"paged_at": time.time(), "kind": alert["kind"], "stage": alert["stage"],
                        "message": alert["message"][:300]}) + "\n")
PYEOF
run_case() {  # NAME MODE [on_fatal grace]: one pipeline of one stage on GPU 0
    local D="$W/$1"
    mkdir -p "$D"
    cat >"$D/pipeline.toml" <<TOML
[alerts]
command = ["$PY", "$W/pager.py", "$D/pages.jsonl"]
min_level = "critical"

[[stage]]
name = "$1"
command = ["$PY", "$W/grab.py", "$2"]
gpus = [0]
on_fatal = { action = "stop", grace = "${3:-10m}" }
TOML
    (cd "$D" && timeout 300 $PY -m eagle3tui --config pipeline.toml --watch --run-all >watch.out 2>&1) \
        || echo "$1: watch exit $?"
    for f in watch.out pages.jsonl .eagle3tui/alerts.jsonl; do
        [ -f "$D/$f" ] && cp "$D/$f" "$OUT/$1-$(basename "$f")"
    done
    echo "=== $1"
    cut -c1-300 "$D/watch.out" | grep -v ' INFO ' | tail -n 20
    echo "--- pages of $1"; cat "$D/pages.jsonl" 2>/dev/null || echo "(none)"
}
run_case oom raise
run_case hung keep 40s
