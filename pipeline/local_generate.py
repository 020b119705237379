"""regenerate's ``local`` backend: batched generation on this machine's GPU.

For when no inference server is installed. Prompts are rendered with the
target's chat template and queued longest first. Two decoders, one record
format (the server path's, so resume by id works the same):

* ``slots`` (``--decoder auto`` picks it where the model qualifies;
  ``pipeline.slot_decode``): continuous batching over a preallocated KV cache
  of ``--batch-size`` rows; a finished answer leaves its row at once and the
  next prompt takes it. Answers are appended and fsynced as they finish.
  SIGTERM stops admitting prompts, finishes the rows in flight, writes them
  and stops.
* ``generate``: transformers' ``generate``, ``--batch-size`` prompts at a time
  with left padding (sorted by length, so a batch pads little); every finished
  batch is appended and fsynced. SIGTERM finishes the current batch.

At temperature 0 both give the same answers: exactly in float32; in bf16 they
may part where the top two logits tie after rounding
(``bench/bench_local_generate.py`` measures how often).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from pipeline.common import StageError, install_sigterm_flag, log, progress

__all__ = ["DECODERS", "generate_local", "sampling_of"]

DECODERS = ("auto", "slots", "generate")

# generate's logits processors that the slot decoder does not reproduce, with their neutral values:
# a model whose generation config sets one of these otherwise is decoded with generate.
_OTHER_PROCESSORS: dict[str, tuple[Any, ...]] = {
    "repetition_penalty": (None, 1.0), "encoder_repetition_penalty": (None, 1.0), "no_repeat_ngram_size": (None, 0),
    "bad_words_ids": (None,), "min_length": (None, 0), "min_new_tokens": (None, 0), "suppress_tokens": (None,),
    "begin_suppress_tokens": (None,), "forced_bos_token_id": (None,), "forced_eos_token_id": (None,),
    "sequence_bias": (None,), "min_p": (None,), "typical_p": (None, 1.0), "epsilon_cutoff": (None, 0.0),
    "eta_cutoff": (None, 0.0), "num_beams": (None, 1),
}


def _end_ids(tok: Any) -> list[int]:
    """Token ids that end an assistant turn: eos and the common end-of-turn markers the vocabulary has."""
    ids = {tok.eos_token_id}
    for marker in ("<|im_end|>", "<|eot_id|>", "<|end|>"):
        i = tok.convert_tokens_to_ids(marker)
        if isinstance(i, int) and i >= 0 and i != tok.unk_token_id:
            ids.add(i)
    return sorted(i for i in ids if isinstance(i, int))


def sampling_of(model: Any, temperature: float | None, top_p: float | None) -> tuple[Any, str]:
    """The slot decoder's ``Sampling`` for what ``generate`` does with these settings, or (None, why not)."""
    from pipeline.slot_decode import Sampling

    gc = getattr(model, "generation_config", None)
    for name, neutral in _OTHER_PROCESSORS.items():
        value = getattr(gc, name, None) if gc is not None else None
        if value not in neutral and value != []:
            return None, f"the model's generation config sets {name}={value!r}"
    if temperature is None or temperature <= 0:
        return Sampling(), ""
    top_k = getattr(gc, "top_k", None) if gc is not None else None
    if top_p is None and gc is not None:
        top_p = getattr(gc, "top_p", None)
    return Sampling(temperature=temperature, top_p=top_p, top_k=top_k), ""


class _Writer:
    """Appends whole records as one write, then fsyncs: a crash leaves at most a torn tail that resume cuts off."""

    def __init__(self, cfg: Any, pending: list[dict[str, Any]], lengths: list[int], tok: Any, stats: Any,
                 model_path: str, device: Any, bar: Any):
        self.pending, self.lengths, self.tok, self.stats = pending, lengths, tok, stats
        self.model_path, self.device, self.bar = str(model_path), device, bar
        self.t_start = time.monotonic()
        self.fd = os.open(cfg.output, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, answers: list[tuple[int, list[int], bool]]) -> None:
        """``answers``: (index into pending, ids cut before the end id, whether an end id was generated)."""
        blob = []
        for i, ids, stopped in answers:
            rec = self.pending[i]
            text = self.tok.decode(ids, skip_special_tokens=True).strip()
            blob.append(json.dumps({
                "id": rec["id"],
                "conversations": rec["messages"] + [{"role": "assistant", "content": text}],
                "finish_reason": "stop" if stopped else "length",
                "usage": {"prompt_tokens": self.lengths[i], "completion_tokens": len(ids)},
                "model": self.model_path, "server": f"local:{self.device}",
            }, ensure_ascii=False) + "\n")
            self.stats.done += 1
            self.stats.prompt_tokens += self.lengths[i]
            self.stats.completion_tokens += len(ids)
        view = memoryview("".join(blob).encode("utf-8"))
        while view:
            view = view[os.write(self.fd, view):]
        os.fsync(self.fd)
        self.bar.update(len(answers))
        el = max(1e-9, time.monotonic() - self.t_start)
        self.bar.set_postfix_str(f"tok/s={self.stats.completion_tokens / el:,.0f}", refresh=False)

    def close(self) -> None:
        os.close(self.fd)


def decode_generate(model: Any, pad: int, ids: list[list[int]], order: list[int], batch_size: int, max_tokens: int,
                    end_ids: list[int], temperature: float | None, top_p: float | None, device: Any,
                    stop: Any = None) -> Any:
    """transformers' generate, ``batch_size`` prompts at a time, left-padded; yields lists of answers."""
    import torch

    sample = temperature is not None and temperature > 0
    for s in range(0, len(order), batch_size):
        idx = order[s : s + batch_size]
        width = max(len(ids[i]) for i in idx)
        inp = torch.full((len(idx), width), pad, dtype=torch.long)
        mask = torch.zeros((len(idx), width), dtype=torch.long)
        for r, i in enumerate(idx):
            inp[r, width - len(ids[i]):] = torch.tensor(ids[i], dtype=torch.long)
            mask[r, width - len(ids[i]):] = 1
        opts: dict[str, Any] = {"max_new_tokens": max_tokens, "do_sample": sample, "eos_token_id": end_ids,
                                "pad_token_id": pad}
        if sample:
            opts["temperature"] = temperature
            if top_p is not None:
                opts["top_p"] = top_p
        with torch.inference_mode():
            out = model.generate(input_ids=inp.to(device), attention_mask=mask.to(device), **opts)
        answers = []
        for row, i in enumerate(idx):
            got = out[row, width:].tolist()
            # Only a row that ended is padded (after its end id); an answer that ran to max_tokens is all its
            # own tokens, the pad id among them if the model wrote it.
            cut = next((j for j, t in enumerate(got) if t in end_ids), None)
            answers.append((i, got[:cut] if cut is not None else got, cut is not None))
        yield answers
        if stop is not None and stop():
            return


def _decode_slots(model: Any, ids: list[list[int]], order: list[int], cfg: Any, end_ids: list[int], device: Any,
                  dtype: Any, sampling: Any, stop: Any) -> Any:
    """Continuous batching over ``cfg.batch_size`` cache rows (``pipeline.slot_decode``); yields lists of answers."""
    import torch

    from pipeline.slot_decode import decode_slots, plan_slots

    budget = None
    if str(device).startswith("cuda"):
        free, _ = torch.cuda.mem_get_info(torch.device(device))
        budget = int(free * 0.7)  # the rest: workspace, logits, prefill activations
    plan = plan_slots(model, max(len(ids[i]) for i in order), cfg.max_tokens, cfg.batch_size, budget, dtype)
    note = f"; --batch-size {cfg.batch_size} does not fit in 70% of free memory" if plan.slots < cfg.batch_size else ""
    log(f"regenerate: local: slots decoder, {plan.slots} rows x {plan.capacity} positions "
        f"({plan.cache_bytes / 2**30:.1f} GiB of KV cache){note}")
    with torch.inference_mode():
        for done in decode_slots(model, ids, cfg.max_tokens, end_ids, plan, sampling, order=order, stop=stop):
            yield [(f.index, f.ids, f.stopped) for f in done]


def generate_local(cfg: Any, pending: list[dict[str, Any]], stats: Any) -> None:
    """Answer ``pending`` records (``{"id", "messages", "sample"}``) and append results to ``cfg.output``."""
    import torch

    from pipeline import model_io
    from pipeline.slot_decode import supports

    stop = install_sigterm_flag(also_sigint=True)
    device = model_io.resolve_device(cfg.device)
    dtype = model_io.resolve_dtype(cfg.dtype, device)
    t0 = time.monotonic()
    model_path = cfg.model or "smollm2"
    log(f"regenerate: local: loading {model_path} ({str(dtype).replace('torch.', '')}, {device})")
    model = model_io.load_model(model_path, dtype=dtype, device=device)
    model.eval()
    tok = model_io.load_tokenizer(model_path)
    end_ids = _end_ids(tok)
    if tok.pad_token_id is None:  # some converted tokenizers have none; padding is masked out anyway
        tok.pad_token_id = end_ids[0]
    log(f"regenerate: local: ready in {time.monotonic() - t0:.1f}s; {len(pending)} answers to write")
    texts = [tok.apply_chat_template(r["messages"], add_generation_prompt=True, tokenize=False) for r in pending]
    ids = tok(texts, add_special_tokens=False)["input_ids"] if texts else []
    lengths = [len(x) for x in ids]
    order = sorted(range(len(pending)), key=lambda i: -lengths[i])  # longest first: a too-big batch fails at once
    decoder = getattr(cfg, "decoder", "auto")
    sampling, why = sampling_of(model, cfg.temperature, cfg.top_p)
    ok = sampling is not None
    if ok:
        ok, why = supports(model)
    if decoder == "slots" and not ok:
        raise StageError(f"--decoder slots cannot decode {model_path}: {why}; use --decoder generate")
    use_slots = decoder != "generate" and ok
    if decoder == "auto" and not ok:
        log(f"regenerate: local: generate decoder ({why})")
    if cfg.seed is not None:
        torch.manual_seed(cfg.seed)
    bar = progress(len(pending), desc="regenerate", unit="sample", disable=not cfg.show_progress)
    writer = _Writer(cfg, pending, lengths, tok, stats, model_path, device, bar)
    answered = 0
    try:
        if use_slots:
            batches = _decode_slots(model, ids, order, cfg, end_ids, device, dtype, sampling, stop.is_set)
        else:
            batches = decode_generate(model, tok.pad_token_id, ids, order, cfg.batch_size, cfg.max_tokens, end_ids,
                                      cfg.temperature, cfg.top_p, device, stop.is_set)
        for answers in batches if pending else ():
            writer.write(answers)
            answered += len(answers)
        if answered < len(pending):
            stats.stopped = "SIGTERM"
    finally:
        bar.close()
        writer.close()
        stats.wall_s = time.monotonic() - writer.t_start
