"""Extraction throughput against a bare forward pass over the same batches.

    python bench/bench_extract.py --prepared-data DIR --out DIR [--model smollm2] [--device auto] [--rounds 2]

1. Plans shards and batches exactly as ``pipeline.extract`` does.
2. Times a bare forward over those batches: the decoder alone (no
   ``lm_head``, what extraction runs) and the full causal LM with
   ``output_hidden_states=True``.
3. Runs the real extract stage into ``--out`` (fresh each time), with
   ``--no-fsync`` and with fsync, and reads its throughput from the manifest.
4. Checks two samples of the last extraction against the HF hidden states.

Steps 2-3 repeat ``--rounds`` times; a table of every figure and the best of
each is printed, and with ``--json`` written there. Target: extraction >= 80%
of the bare decoder forward.
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
    """Run the benchmark; exit 0 (1 when the extracted rows do not match the model)."""
    ap = argparse.ArgumentParser(prog="bench/bench_extract.py", description=__doc__.splitlines()[0])
    ap.add_argument("--prepared-data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--batch-tokens", type=int, default=65536)
    ap.add_argument("--max-batch", type=int, default=128)
    ap.add_argument("--shard-tokens", type=int, default=262144)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--modes", default="nofsync,fsync", help="extraction runs per round: nofsync, fsync or both")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    import torch

    from pipeline import model_io
    from pipeline.eagle3_model import default_aux_layers
    from pipeline.extract import build_parser, make_batches, run_extract
    from pipeline.hidden_states import HiddenStatesDataset, plan_shards
    from pipeline.tokenized_dataset import TokenizedDataset

    device = model_io.resolve_device(args.device)
    cuda = device.startswith("cuda")
    model = model_io.load_model(args.model, dtype="auto", device=device)
    ds = TokenizedDataset(args.prepared_data)
    lengths = [int(x) for x in ds.lengths()]
    shards = plan_shards(lengths, args.shard_tokens)
    batches = [b for shard in shards for b in make_batches(shard, lengths, args.batch_tokens, args.max_batch)]
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
    print(f"bench_extract: {len(lengths)} samples, {total} tokens, {len(batches)} batches, {len(shards)} shards, "
          f"device {device}", flush=True)

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

    def extract(fsync: bool) -> dict[str, float]:
        out = Path(args.out)
        if out.exists():
            shutil.rmtree(out)
        argv = ["--prepared-data", args.prepared_data, "--out", str(out), "--model", args.model, "--device", device,
                "--batch-tokens", str(args.batch_tokens), "--max-batch", str(args.max_batch),
                "--shard-tokens", str(args.shard_tokens), "--disk-reserve-gb", "0"]
        if not fsync:
            argv.append("--no-fsync")
        rc = run_extract(build_parser().parse_args(argv))
        man = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
        gb = sum(p.stat().st_size for p in out.glob("shard-*.safetensors")) / 1e9
        return {"tok_s": man["throughput"]["tokens_per_s"], "seconds": man["throughput"]["seconds"], "gb": gb,
                "rc": rc}

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    rounds: list[dict[str, float]] = []
    for r in range(args.rounds):
        row: dict[str, float] = {}
        model.to(device)
        row["bare_decoder"] = total / timed(lambda i, m: model.model(input_ids=i, attention_mask=m, use_cache=False))
        row["bare_hidden_states"] = total / timed(
            lambda i, m: model(input_ids=i, attention_mask=m, output_hidden_states=True, use_cache=False))
        model.to("cpu")  # free the GPU for the extraction run, which loads its own copy
        if cuda:
            torch.cuda.empty_cache()
        for mode in modes:
            res = extract(fsync=(mode == "fsync"))
            row[f"extract_{mode}"] = res["tok_s"]
            row[f"extract_{mode}_s"] = res["seconds"]
            row["gb_written"] = res["gb"]
        rounds.append(row)
        print(f"bench_extract: round {r + 1}: " + ", ".join(f"{k}={v:,.1f}" for k, v in row.items()), flush=True)

    # The extracted rows must be the model's: compare two samples with output_hidden_states.
    ex = HiddenStatesDataset(args.out)
    aux = default_aux_layers(int(model.config.num_hidden_layers))
    model.to(device)
    pos = {sid: i for i, sid in enumerate(ds.ids)}
    worst = 0.0
    for j in (0, len(ex) - 1):
        ids, _mask, hs = ex[j]
        assert ids.tolist() == ds[pos[ex.ids[j]]][1].tolist()
        with torch.inference_mode():
            o = model(input_ids=ids[None].to(device), output_hidden_states=True, use_cache=False)
        want = torch.stack([o.hidden_states[a + 1] for a in aux] + [o.hidden_states[-1]], dim=2)[0].float().cpu()
        worst = max(worst, float((hs.float() - want).abs().max() / (want.abs().max() + 1e-6)))
    print(f"bench_extract: check: two samples against output_hidden_states, worst relative error {worst:.2e}",
          flush=True)

    best = {k: max(r[k] for r in rounds) for k in rounds[0]}
    lines = [f"| measurement (best of {len(rounds)} rounds) | tok/s | all rounds |", "| --- | --- | --- |"]
    names = {"bare_decoder": "bare decoder forward (no lm_head)",
             "bare_hidden_states": "full forward, output_hidden_states=True",
             "extract_nofsync": "extraction, --no-fsync", "extract_fsync": "extraction, fsync on"}
    for key, name in names.items():
        if key in best:
            lines.append(f"| {name} | {best[key]:,.0f} | " + " / ".join(f"{r[key]:,.0f}" for r in rounds) + " |")
    for mode in modes:
        key = f"extract_{mode}"
        lines.append(f"| {names[key]} / bare decoder | {100 * best[key] / best['bare_decoder']:.0f}% | " +
                     " / ".join(f"{100 * r[key] / r['bare_decoder']:.0f}%" for r in rounds) + " |")
    print(f"bench_extract: {total} tokens, {len(batches)} batches, {len(shards)} shards, "
          f"{best['gb_written']:.2f} GB a run", flush=True)
    print("\n".join(lines), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"tokens": total, "batches": len(batches), "shards": len(shards),
                                               "device": device, "rounds": rounds, "best": best,
                                               "check_rel_err": worst}, indent=2) + "\n", encoding="utf-8")
    return 0 if worst < 5e-2 else 1


if __name__ == "__main__":
    sys.exit(main())
