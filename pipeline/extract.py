"""Stage: capture the target's hidden states that EAGLE-3 trains on.

Reads a tokenized dataset (``pipeline.tokenized_dataset``), runs the target
through :mod:`pipeline.target_capture` and writes the extraction directory
described in :mod:`pipeline.hidden_states`. A rerun with the same inputs skips
shards that validate and redoes any that do not (a torn shard). SIGTERM lets
the current shard finish (and the writer drain), then exits 143.

On a GPU the forwards never wait for the disk: each batch's rows go to a
reused pinned buffer by an asynchronous copy, and one writer thread streams
them into the shard file (header first) while the next batches run. Backends:
``hf`` (transformers) and ``vllm`` (tensor parallel; vLLM is imported only when
chosen).
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline.common import (
    StageError,
    atomic_write_json,
    install_sigterm_flag,
    log,
    make_parser,
    progress,
    run_stage,
)
from pipeline.hidden_states import (
    FORMAT,
    INDEX,
    MANIFEST,
    PLAN,
    HostBuffers,
    ShardWriter,
    build_index,
    check_disk,
    plan_shards,
    pool_size,
    required_bytes,
    save_target_files,
    shard_header,
    shard_name,
    small_tensors,
    validate_shard,
)
from pipeline.target_capture import TargetCapture, VLLMCapture, load_target

__all__ = ["build_parser", "main", "make_batches", "run_extract"]


def make_batches(indices: Sequence[int], lengths: Sequence[int], batch_tokens: int, max_batch: int) -> list[list[int]]:
    """Group samples of similar length so padding stays small.

    Sorted by length (longest first, so a too-large batch fails at once); a
    batch holds at most ``max_batch`` samples and ``batch_tokens`` padded tokens.
    """
    order = sorted(indices, key=lambda i: (-int(lengths[i]), i))
    batches: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        longest = int(lengths[cur[0]]) if cur else int(lengths[i])
        if cur and (len(cur) + 1 > max_batch or (len(cur) + 1) * longest > batch_tokens):
            batches.append(cur)
            cur = []
        cur.append(i)
    if cur:
        batches.append(cur)
    return batches


def _fingerprint(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def _batch_inputs(ds: Any, batch: list[int]) -> tuple[Any, Any, list[Any], list[Any]]:
    """Right-padded ids and mask [B, L] of one batch, and each sample's int32 ids and uint8 loss mask."""
    import numpy as np
    import torch

    longest = int(ds[batch[0]][1].size)
    ids = np.zeros((len(batch), longest), dtype=np.int64)
    mask = np.zeros((len(batch), longest), dtype=np.int64)
    ids_parts, mask_parts = [], []
    for r, i in enumerate(batch):
        _sid, a, m = ds[i]
        ids[r, : a.size] = a
        mask[r, : a.size] = 1
        ids_parts.append(torch.from_numpy(a.astype("int32")))
        mask_parts.append(torch.from_numpy(m.astype("uint8")))
    return torch.from_numpy(ids), torch.from_numpy(mask), ids_parts, mask_parts


def _run_hf_shard(
    capture: TargetCapture,
    ds: Any,
    k: int,
    shard: list[int],
    batches: list[list[int]],
    lengths: Sequence[int],
    hidden: int,
    device: str,
    bar: Any,
    copy_stream: Any,
    pool: HostBuffers,
    writer: ShardWriter,
) -> None:
    """Run every batch of shard ``k`` and stream its rows to the writer; returns once all are queued.

    Nothing here waits for the GPU: the row index comes from the host mask, the
    copy to a pooled host buffer runs on ``copy_stream`` and the writer waits
    on its event. Rows land in batch order, which is the order ``offsets`` and
    ``sample_index`` describe.
    """
    import torch

    cuda = device.startswith("cuda")
    writer.put(("open", k, shard_header(k, sum(int(lengths[i]) for i in shard), len(shard), hidden)))
    order: list[int] = []
    ids_parts: list[Any] = []
    mask_parts: list[Any] = []
    for batch in batches:
        ids, mask, ip, mp = _batch_inputs(ds, batch)
        ids_parts += ip
        mask_parts += mp
        flat = mask.view(-1).nonzero().squeeze(1)  # real tokens, sample by sample (right padding)
        n = int(flat.numel())
        if cuda:
            ids, mask, flat = ids.pin_memory(), mask.pin_memory(), flat.pin_memory()
        rows = capture.rows(ids.to(device, non_blocking=True), mask.to(device, non_blocking=True),
                            flat.to(device, non_blocking=True))
        host, release = pool.take(n)
        if cuda:
            copy_stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(copy_stream):
                host.copy_(rows, non_blocking=True)
                event = torch.cuda.Event()
                event.record(copy_stream)
            rows.record_stream(copy_stream)  # its memory is not reused before the copy is done
        else:
            host.copy_(rows)
            event = None
        writer.put(("rows", host, event, release))
        order.extend(batch)
        bar.update(n)
    writer.put(("close", k, small_tensors(order, lengths, ids_parts, mask_parts)))


def _queue_whole_shard(writer: ShardWriter, k: int, tensors: dict[str, Any], hidden: int) -> None:
    """Hand a shard computed in one piece (the vllm backend) to the writer."""
    hs = tensors["hidden_states"]
    n_tokens = sum(int(t.shape[0]) for t in hs)
    writer.put(("open", k, shard_header(k, n_tokens, int(tensors["sample_index"].numel()), hidden)))
    for t in hs:
        writer.put(("rows", t.to("cpu").contiguous(), None, None))
    order = tensors["sample_index"].tolist()
    offsets = tensors["offsets"].tolist()
    lengths = {i: offsets[j + 1] - offsets[j] for j, i in enumerate(order)}
    writer.put(("close", k, small_tensors(order, lengths, tensors["input_ids"], tensors["loss_mask"])))


def run_extract(args: Any) -> int:
    """Run the stage; returns the process exit code (0 done, 143 stopped by SIGTERM)."""
    from pipeline.eagle3_model import default_aux_layers
    from pipeline.tokenized_dataset import TokenizedDataset

    stop = install_sigterm_flag() if threading.current_thread() is threading.main_thread() else threading.Event()
    out = Path(args.out)
    ds = TokenizedDataset(args.prepared_data)
    lengths = [int(x) for x in ds.lengths()]
    n = len(lengths) if args.max_samples is None else min(args.max_samples, len(lengths))
    lengths = lengths[:n]
    shards = plan_shards(lengths, args.shard_tokens)
    total_tokens = sum(lengths)
    prep_sig = ds.manifest
    plan = {
        "format": FORMAT,
        "model": str(args.model),
        "prepared": str(Path(args.prepared_data).resolve()),
        "prepared_manifest": prep_sig,
        "num_samples": n,
        "shard_tokens": args.shard_tokens,
        "shards": shards,
    }
    fp = _fingerprint(plan)
    plan["fingerprint"] = fp
    out.mkdir(parents=True, exist_ok=True)
    plan_path = out / PLAN
    if plan_path.exists() and not args.overwrite:
        try:
            old = json.loads(plan_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise StageError(f"{plan_path}:{exc.lineno}: invalid JSON\n  fix: pass --overwrite") from exc
        if old.get("fingerprint") != fp:
            raise StageError(
                f"{plan_path}: this directory holds an extraction of other inputs "
                "(model, prepared data, --max-samples or --shard-tokens differ)\n"
                "  fix: pass a new --out, or --overwrite to discard it"
            )
    elif args.overwrite:
        for p in out.glob("shard-*.safetensors"):
            p.unlink()
        for name in (MANIFEST, INDEX):
            (out / name).unlink(missing_ok=True)
    atomic_write_json(plan_path, plan)

    # Load first: the hidden size (and so the disk need) comes from the model config.
    if args.backend == "vllm":
        backend: Any = VLLMCapture(args)
        config = backend.config
    else:
        model, config, device = load_target(args, "extract")
    hidden = int(config.hidden_size)
    n_layers = int(config.num_hidden_layers)
    aux = default_aux_layers(n_layers)

    todo: list[int] = []
    skipped = 0
    for k, shard in enumerate(shards):
        why = validate_shard(out / shard_name(k), shard, lengths, hidden)
        if why is None:
            skipped += 1
            continue
        if why != "missing":
            log(f"extract: {out / shard_name(k)} is torn ({why}); redoing it")
        todo.append(k)
    todo_tokens = sum(lengths[i] for k in todo for i in shards[k])
    need = required_bytes(todo_tokens, hidden)
    check_disk(out, need, reserve=args.disk_reserve_gb * (1 << 30))
    log(f"extract: {n} samples, {total_tokens} tokens in {len(shards)} shards; {skipped} complete, "
        f"{len(todo)} to do ({need / 1e9:.2f} GB); layers {aux} (outputs, 0-based) + final norm")

    if args.backend != "vllm":
        save_target_files(out, model, config)
    else:
        backend.save_target_files(out)

    t0 = time.monotonic()
    bar = progress(todo_tokens, desc="extract", unit="tok", unit_scale=True)
    writer = ShardWriter(out, fsync=not args.no_fsync)
    writer.start()
    stopped = False
    try:
        if args.backend == "vllm":
            for k in todo:
                _queue_whole_shard(writer, k, backend.run_shard(ds, shards[k], lengths, bar), hidden)
                if stop.is_set():
                    stopped = True
                    break
        else:
            import torch

            capture = TargetCapture(model, aux)
            cuda = device.startswith("cuda")
            copy_stream = torch.cuda.Stream() if cuda else None
            batches = {k: make_batches(shards[k], lengths, args.batch_tokens, args.max_batch) for k in todo}
            rows = max((sum(int(lengths[i]) for i in b) for k in todo for b in batches[k]), default=1)
            pool = HostBuffers(rows, hidden, pinned=cuda, max_buffers=pool_size(rows, hidden), writer=writer)
            for k in todo:
                _run_hf_shard(capture, ds, k, shards[k], batches[k], lengths, hidden, device, bar, copy_stream,
                              pool, writer)
                # SIGTERM is honoured only between shards: the current one is finished and written
                # (the writer drains below before the exit).
                if stop.is_set():
                    stopped = True
                    break
            capture.close()
    finally:
        writer.q.put(None)
        writer.join()
        bar.close()
    if writer.error:
        raise StageError(f"{out}: writing a shard failed: {writer.error}")
    elapsed = time.monotonic() - t0
    done_tokens = int(bar.n)
    if stopped:
        log(f"extract: stopped by SIGTERM after {done_tokens} tokens; rerun the same command to resume")
        return 143

    index, shard_info = build_index(out, shards, ds.ids)
    atomic_write_json(out / INDEX, index, indent=None)
    manifest = {
        "format": FORMAT,
        "complete": True,
        "backend": args.backend,
        "target": str(args.model),
        "num_target_layers": n_layers,
        "hidden_size": hidden,
        "vocab_size": int(config.vocab_size),
        "layer_ids": {
            "output_0based": aux,
            "input_numbering_vllm_sglang": [i + 1 for i in aux],
        },
        "streams": ["aux0", "aux1", "aux2", "final_norm"],
        "dtype": "bfloat16",
        "prepared": str(Path(args.prepared_data).resolve()),
        "num_samples": n,
        "num_tokens": total_tokens,
        "num_loss_tokens": int(sum(int(ds[i][2].sum()) for i in range(n))),
        "shards": shard_info,
        "fingerprint": fp,
        # Throughput of this run (only the shards it wrote; reused shards cost nothing).
        "throughput": {"tokens": done_tokens, "seconds": round(elapsed, 3),
                       "tokens_per_s": done_tokens / elapsed if elapsed > 0 else 0.0},
    }
    atomic_write_json(out / MANIFEST, manifest)
    rate = done_tokens / elapsed if elapsed > 0 else 0.0
    print(f"extract: {n} samples, {total_tokens} tokens, {len(shards)} shards ({skipped} reused); "
          f"{done_tokens} tokens in {elapsed:.1f}s = {rate:,.0f} tok/s; layers {aux} -> {out}", flush=True)
    return 0


def build_parser() -> Any:
    """The stage's argparse parser."""
    p = make_parser("python -m pipeline.extract", "Capture EAGLE-3 hidden states of the target model.")
    p.add_argument("--prepared-data", required=True, help="tokenized dataset directory (tokenize_data --output)")
    p.add_argument("--out", required=True, help="output directory for shards, index and manifest")
    p.add_argument("--model", default="smollm2", help="target: model dir, .gguf file, or 'smollm2'")
    p.add_argument("--gguf-file", default=None, help="GGUF file name inside --model")
    p.add_argument("--backend", choices=["hf", "vllm"], default="hf")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1 (hf backend)")
    p.add_argument("--device-map", default=None, help="transformers device_map (e.g. auto) for multi-GPU targets")
    p.add_argument("--dtype", default="auto", help="compute dtype: auto (bf16 on GPU), bfloat16, float32")
    p.add_argument("--tensor-parallel-size", type=int, default=1, help="vllm backend")
    p.add_argument("--batch-tokens", type=int, default=65536, help="padded tokens per forward batch")
    p.add_argument("--max-batch", type=int, default=128, help="samples per forward batch")
    p.add_argument("--shard-tokens", type=int, default=262144, help="tokens per output shard")
    p.add_argument("--max-samples", type=int, default=None, help="extract only the first N samples")
    p.add_argument("--disk-reserve-gb", type=float, default=1.0, help="free space to leave on the disk")
    p.add_argument("--no-fsync", action="store_true", help="skip fsync of shards (faster; torn shards redone)")
    p.add_argument("--overwrite", action="store_true", help="discard an existing extraction in --out")
    return p


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: ``python -m pipeline.extract``."""
    return run_stage(build_parser(), run_extract, argv)


if __name__ == "__main__":
    sys.exit(main())
