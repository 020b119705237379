"""Side-by-side loss curve, tokens/s and the train stage's GPU attribution from run.sh's outputs."""
import json
import sys
from pathlib import Path

out = Path(sys.argv[1])


def load(name):
    p = out / name
    return [json.loads(x) for x in p.read_text().splitlines() if x.strip()] if p.exists() else []


def rate(recs, skip=10):
    """(overall tok/s, steady tok/s from step `skip` on): times recovered as cumulative tokens / cumulative tok_s."""
    if not recs:
        return 0.0, 0.0
    cum, pts = 0, []
    for r in recs:
        cum += r["tokens"]
        pts.append((cum / max(r["tok_s"], 1), cum))
    (ta, ca), (tb, cb) = pts[min(skip, len(pts) - 1) - 1], pts[-1]
    return cb / tb, (cb - ca) / max(tb - ta, 1e-9)


a, b = load("m1.jsonl"), load("m2.jsonl")
print(f"steps: 1 GPU {len(a)}, 2 GPUs {len(b)}; tokens per step equal: "
      f"{all(x['tokens'] == y['tokens'] for x, y in zip(a, b))}")
print("step  loss(1 GPU)  loss(2 GPUs)  rel.diff   acc0(1)  acc0(2)")
n = min(len(a), len(b))
every = max(1, n // 16)
for i in list(range(0, n, every)) + ([n - 1] if (n - 1) % every else []):
    x, y = a[i], b[i]
    print(f"{x['step']:4d}  {x['loss']:11.4f}  {y['loss']:12.4f}  {abs(x['loss'] - y['loss']) / x['loss']:8.2%}"
          f"  {x['acc'][0]:7.3f}  {y['acc'][0]:7.3f}")
d = [abs(x["loss"] - y["loss"]) / x["loss"] for x, y in zip(a, b)]
if d:
    print(f"max rel. loss diff over {n} steps: {max(d):.2%}, mean {sum(d) / len(d):.2%}")
o1, s1 = rate(a)
o2, s2 = rate(b)
print(f"tok/s 1 GPU: overall {o1:,.0f}, steady (step 10..end) {s1:,.0f}")
print(f"tok/s 2 GPUs: overall {o2:,.0f}, steady (step 10..end) {s2:,.0f}; speed-up steady {s2 / max(s1, 1):.2f}x")
best = None
for line in (out / "status_samples.jsonl").read_text().splitlines() if (out / "status_samples.jsonl").exists() else []:
    try:
        st = json.loads(line)
    except json.JSONDecodeError:
        continue
    tr = ((st.get("gpu") or {}).get("stages") or {}).get("train")
    if tr and (best is None or len(tr.get("pids", [])) > len(best[1].get("pids", [])) or
               (len(tr.get("pids", [])) == len(best[1].get("pids", [])) and tr.get("bytes", 0) > best[1].get("bytes", 0))):
        best = (st, tr)
if best:
    st, tr = best
    procs = [p for p in (st["gpu"].get("processes") or []) if p.get("pid") in tr.get("pids", [])]
    print("status --json gpu.stages.train:", json.dumps(tr))
    for p in procs:
        print(f"  pid {p['pid']} gpu {p['gpu_index']} {p['used_bytes'] / 2**30:.2f} GiB stage={p.get('stage')}")
    print("  other:", json.dumps(st["gpu"].get("other")), "other_bytes", st["gpu"].get("other_bytes"))
else:
    print("no status sample had gpu.stages.train")
