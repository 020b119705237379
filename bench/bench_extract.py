"""Extraction throughput against a bare forward pass over the same batches.

    python bench/bench_extract.py --prepared-data DIR --out DIR [--model smollm2] [--device auto]

1. Plans shards and batches exactly as ``pipeline.extract`` does.
2. Times a bare forward over those batches twice: the full causal LM with
   ``output_hidden_states=True`` (what "a bare forward with hidden states"
   means in the issue), and the decoder alone (no ``lm_head``), which is
   what extraction runs.
3. Runs the real extract stage into ``--out`` (fresh) and reads its
   throughput from the manifest.

Prints one line per measurement and a final ``bench_extract:`` summary; with
``--json`` also writes the figures there. Target: extraction >= 80% of the bare
forward with hidden states.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    """Run the benchmark; exit 0."""
    ap = argparse.ArgumentParser(prog="bench/bench_extract.py", description=__doc__.splitlines()[0])
    ap.add_argument("--prepared-data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--batch-tokens", type=int, default=65536)
    ap.add_argument("--max-batch", type=int, default=128)
    ap.add_argument("--shard-tokens", type=int, default=262144)
    ap.add_argument("--no-fsync", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    import torch

    from pipeline import model_io
    from pipeline.extract import build_parser, make_batches, plan_shards, run_extract
    from pipeline.prepared import PreparedDataset

    device = model_io.resolve_device(args.device)
    cuda = device.startswith("cuda")
    model = model_io.load_model(args.model, dtype="auto", device=device)
    ds = PreparedDataset(args.prepared_data)
    lengths = [int(x) for x in ds.lengths()]
    batches = [b for shard in plan_shards(lengths, args.shard_tokens)
               for b in make_batches(shard, lengths, args.batch_tokens, args.max_batch)]
    prepared: list[tuple[torch.Tensor, torch.Tensor]] = []
    for batch in batches:
        longest = lengths[batch[0]]
        ids = torch.zeros((len(batch), longest), dtype=torch.long)
        mask = torch.zeros((len(batch), longest), dtype=torch.long)
        for r, i in enumerate(batch):
            a = ds[i][1]
            ids[r, : a.size] = torch.from_numpy(a)
            mask[r, : a.size] = 1
        prepared.append((ids, mask))
    total = sum(lengths)

    def timed(fn) -> float:  # type: ignore[no-untyped-def]
        with torch.inference_mode():
            for ids, mask in prepared[:2]:  # warm-up (kernels, allocator)
                fn(ids.to(device), mask.to(device))
            if cuda:
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            for ids, mask in prepared:
                fn(ids.to(device, non_blocking=True), mask.to(device, non_blocking=True))
            if cuda:
                torch.cuda.synchronize()
            return time.perf_counter() - t0

    t_full = timed(lambda i, m: model(input_ids=i, attention_mask=m, output_hidden_states=True, use_cache=False))
    t_base = timed(lambda i, m: model.model(input_ids=i, attention_mask=m, use_cache=False))
    bare_full, bare_base = total / t_full, total / t_base
    print(f"bench_extract: bare forward with hidden states: {bare_full:,.0f} tok/s ({total} tokens, "
          f"{len(batches)} batches, {t_full:.2f}s)", flush=True)
    print(f"bench_extract: bare decoder forward (no lm_head): {bare_base:,.0f} tok/s ({t_base:.2f}s)", flush=True)
    model.to("cpu")  # free the GPU for the extraction run, which loads its own copy
    if cuda:
        torch.cuda.empty_cache()

    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    argv = ["--prepared-data", args.prepared_data, "--out", str(out), "--model", args.model, "--device", device,
            "--batch-tokens", str(args.batch_tokens), "--max-batch", str(args.max_batch),
            "--shard-tokens", str(args.shard_tokens), "--disk-reserve-gb", "0"]
    if args.no_fsync:
        argv.append("--no-fsync")
    rc = run_extract(build_parser().parse_args(argv))
    man = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    ext = man["throughput"]["tokens_per_s"]
    res = {
        "tokens": total, "batches": len(batches), "device": device,
        "bare_forward_hidden_states_tok_s": bare_full, "bare_decoder_tok_s": bare_base,
        "extract_tok_s": ext, "extract_seconds": man["throughput"]["seconds"],
        "ratio_vs_bare_hidden_states": ext / bare_full, "ratio_vs_bare_decoder": ext / bare_base,
        "bytes_written": sum(p.stat().st_size for p in out.glob("shard-*.safetensors")), "rc": rc,
    }
    print(f"bench_extract: extraction {ext:,.0f} tok/s = {100 * ext / bare_full:.0f}% of the bare forward with "
          f"hidden states, {100 * ext / bare_base:.0f}% of the bare decoder forward "
          f"({res['bytes_written'] / 1e9:.2f} GB written)", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
