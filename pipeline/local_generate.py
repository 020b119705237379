"""regenerate's ``local`` backend: batched transformers generation on this machine's GPU.

For when no inference server is installed. Prompts are rendered with the
target's chat template, sorted by length (so a batch pads little), generated
``--batch-size`` at a time with left padding, and every finished batch is
appended to the output JSONL and fsynced, in the same record format as the
server path, so resume by id works the same. SIGTERM finishes the current batch,
writes it, and stops.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from pipeline.common import install_sigterm_flag, log, progress

__all__ = ["generate_local"]


def _end_ids(tok: Any) -> list[int]:
    """Token ids that end an assistant turn: eos and the common end-of-turn markers the vocabulary has."""
    ids = {tok.eos_token_id}
    for marker in ("<|im_end|>", "<|eot_id|>", "<|end|>"):
        i = tok.convert_tokens_to_ids(marker)
        if isinstance(i, int) and i >= 0 and i != tok.unk_token_id:
            ids.add(i)
    return sorted(i for i in ids if isinstance(i, int))


def generate_local(cfg: Any, pending: list[dict[str, Any]], stats: Any) -> None:
    """Answer ``pending`` records (``{"id", "messages", "sample"}``) and append results to ``cfg.output``."""
    import torch

    from pipeline import model_io

    stop = install_sigterm_flag(also_sigint=True)
    device = model_io.resolve_device(cfg.device)
    dtype = model_io.resolve_dtype(cfg.dtype, device)
    t0 = time.monotonic()
    model_path = cfg.model or "smollm2"
    log(f"regenerate: local: loading {model_path} ({str(dtype).replace('torch.', '')}, {device})")
    model = model_io.load_model(model_path, dtype=dtype, device=device)
    tok = model_io.load_tokenizer(model_path)
    tok.padding_side = "left"
    end_ids = _end_ids(tok)
    if tok.pad_token_id is None:  # some converted tokenizers have none; padding is masked out anyway
        tok.pad_token_id = end_ids[0]
    pad = tok.pad_token_id
    log(f"regenerate: local: ready in {time.monotonic() - t0:.1f}s; {len(pending)} answers to write")
    texts = [tok.apply_chat_template(r["messages"], add_generation_prompt=True, tokenize=False) for r in pending]
    lengths = [len(x) for x in tok(texts, add_special_tokens=False)["input_ids"]]
    order = sorted(range(len(pending)), key=lambda i: -lengths[i])  # longest first: a too-big batch fails at once
    if cfg.seed is not None:
        torch.manual_seed(cfg.seed)
    sample = cfg.temperature is not None and cfg.temperature > 0
    t_start = time.monotonic()
    out_fd = os.open(cfg.output, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    bar = progress(len(pending), desc="regenerate", unit="sample", disable=not cfg.show_progress)
    try:
        for s in range(0, len(order), cfg.batch_size):
            idx = order[s : s + cfg.batch_size]
            enc = tok([texts[i] for i in idx], return_tensors="pt", padding=True, add_special_tokens=False).to(device)
            opts: dict[str, Any] = {"max_new_tokens": cfg.max_tokens, "do_sample": sample, "eos_token_id": end_ids,
                                    "pad_token_id": pad}
            if sample:
                opts["temperature"] = cfg.temperature
                if cfg.top_p is not None:
                    opts["top_p"] = cfg.top_p
            with torch.inference_mode():
                out = model.generate(**enc, **opts)
            width = enc["input_ids"].shape[1]
            blob = []
            for row, i in enumerate(idx):
                ids = out[row, width:].tolist()
                cut = next((j for j, t in enumerate(ids) if t in end_ids), None)
                ids = ids[:cut] if cut is not None else [t for t in ids if t != pad]
                rec = pending[i]
                answer = tok.decode(ids, skip_special_tokens=True).strip()
                blob.append(json.dumps({
                    "id": rec["id"],
                    "conversations": rec["messages"] + [{"role": "assistant", "content": answer}],
                    "finish_reason": "stop" if cut is not None else "length",
                    "usage": {"prompt_tokens": lengths[i], "completion_tokens": len(ids)},
                    "model": str(model_path), "server": f"local:{device}",
                }, ensure_ascii=False) + "\n")
                stats.done += 1
                stats.prompt_tokens += lengths[i]
                stats.completion_tokens += len(ids)
            # Whole lines, one write, then fsync: a crash leaves at most a torn tail that resume cuts off.
            view = memoryview("".join(blob).encode("utf-8"))
            while view:
                view = view[os.write(out_fd, view):]
            os.fsync(out_fd)
            bar.update(len(idx))
            el = max(1e-9, time.monotonic() - t_start)
            bar.set_postfix_str(f"tok/s={stats.completion_tokens / el:,.0f}", refresh=False)
            if stop.is_set():
                stats.stopped = "SIGTERM"
                break
    finally:
        bar.close()
        os.close(out_fd)
        stats.wall_s = time.monotonic() - t_start
