"""Synthetic extraction (eagle3-hidden/1) with SmolLM2-135M's shape, for timing pipeline.train.

final[t+1] = rmsnorm(aux[t] @ M + embed[ids[t+1]] @ N) so the draft has something learnable.
lm_head rows of tokens >= draft_vocab are scaled down so the target argmax is almost always in
the draft vocabulary (d2t = the first draft_vocab tokens), as with a real frequency-chosen vocab.
"""
import json
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

out = Path(sys.argv[1])
tokens = int(sys.argv[2])
H = int(sys.argv[3]) if len(sys.argv) > 3 else 576
V = int(sys.argv[4]) if len(sys.argv) > 4 else 49152
DV = int(sys.argv[5]) if len(sys.argv) > 5 else 16384
dev = "cuda" if torch.cuda.is_available() else "cpu"
out.mkdir(parents=True, exist_ok=True)
g = torch.Generator(device=dev).manual_seed(1)
cfg = {"hidden_size": H, "intermediate_size": 1536 if H == 576 else 2 * H, "num_attention_heads": 9 if H == 576 else 4,
       "num_key_value_heads": 3 if H == 576 else 2, "num_hidden_layers": 30 if H == 576 else 8, "vocab_size": V,
       "rms_norm_eps": 1e-5, "rope_theta": 100000.0, "max_position_embeddings": 8192,
       "head_dim": 64 if H == 576 else H // 4, "tie_word_embeddings": True, "bos_token_id": 1, "eos_token_id": 2}
aux = [1, cfg["num_hidden_layers"] // 2 - 1, cfg["num_hidden_layers"] - 4]
(out / "target_config.json").write_text(json.dumps(cfg))
emb = torch.randn(V, H, generator=g, device=dev) * 0.125
emb[DV:] *= 0.3
save_file({"embed_tokens": emb.bfloat16().cpu().contiguous(), "lm_head": emb.bfloat16().cpu().contiguous()},
          str(out / "target_heads.safetensors"))
M = torch.randn(3 * H, H, generator=g, device=dev) / (3 * H) ** 0.5
N = torch.randn(H, H, generator=g, device=dev) * (8.0 / H ** 0.5)
lens = []
total = 0
while total < tokens:
    n = int(torch.randint(256, 1025, (1,), generator=g, device=dev))
    lens.append(n)
    total += n
shard_tokens = 1 << 20
index, shards, k, i = {}, [], 0, 0
while i < len(lens):
    group = []
    t = 0
    while i < len(lens) and (not group or t + lens[i] <= shard_tokens):
        group.append(i)
        t += lens[i]
        i += 1
    ids = torch.randint(0, V, (t,), generator=g, device=dev)
    ids[torch.rand(t, generator=g, device=dev) < 0.6] %= DV  # frequent tokens
    a = torch.randn(t, 3, H, generator=g, device=dev)
    f = torch.zeros(t, H, device=dev)
    offs = [0]
    for j in group:
        offs.append(offs[-1] + lens[j])
    for s in range(len(group)):
        a0, b0 = offs[s], offs[s + 1]
        pre = a[a0 : b0 - 1].reshape(-1, 3 * H) @ M + emb[ids[a0 + 1 : b0]] @ N
        f[a0 + 1 : b0] = pre
        f[a0] = torch.randn(H, generator=g, device=dev)
    f = f * torch.rsqrt(f.pow(2).mean(-1, keepdim=True) + 1e-5)
    hs = torch.cat([a, f[:, None]], 1).bfloat16().cpu().contiguous()
    name = f"shard-{k:05d}.safetensors"
    save_file({"hidden_states": hs, "input_ids": ids.int().cpu(), "loss_mask": torch.ones(t, dtype=torch.uint8),
               "offsets": torch.tensor(offs, dtype=torch.int64), "sample_index": torch.tensor(group, dtype=torch.int64)},
              str(out / name), metadata={"format": "eagle3-hidden/1", "shard": str(k)})
    for s, j in enumerate(group):
        index[f"s{j:06d}"] = [k, offs[s], offs[s + 1]]
    shards.append({"file": name, "num_samples": len(group), "num_tokens": t})
    k += 1
(out / "index.json").write_text(json.dumps(index))
(out / "manifest.json").write_text(json.dumps({
    "format": "eagle3-hidden/1", "complete": True, "backend": "synthetic", "target": "random SmolLM2-135M shape",
    "num_target_layers": cfg["num_hidden_layers"], "hidden_size": H, "vocab_size": V,
    "layer_ids": {"output_0based": aux, "input_numbering_vllm_sglang": [x + 1 for x in aux]},
    "streams": ["aux0", "aux1", "aux2", "final_norm"], "dtype": "bfloat16", "num_samples": len(lens),
    "num_tokens": total, "shards": shards}))
t2d = torch.zeros(V, dtype=torch.bool)
t2d[:DV] = True
save_file({"d2t": torch.zeros(DV, dtype=torch.int64), "t2d": t2d}, str(out.parent / "vocab.safetensors"))
print(f"make_data: {len(lens)} samples, {total} tokens, {len(shards)} shards, H={H} V={V} DV={DV} -> {out}", flush=True)
