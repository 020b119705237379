"""Continuous-batching decoder over a preallocated slot KV cache, for regenerate's local backend.

transformers' ``generate`` on a left-padded batch pays, at every step and in
every layer, a ``torch.cat`` of the whole dynamic cache, a copy of the cache
per query-head group (``repeat_kv``: a padding mask sends SDPA to a kernel
without grouped-query support), and, in a batch whose answers end at
different lengths, the steps of rows that have already finished. This decoder
keeps one cache of ``slots`` rows, each with room for its prompt and answer,
written in place; a finished row is retired and its slot refilled from the
queue, so the batch stays full until the queue is empty. A decode step attends
with the query heads of each key/value group stacked as query rows, so the
cache is read once, never copied.

It drives the target's own modules (norms, projections, rotary embedding, MLP,
``lm_head``) layer by layer, so the arithmetic is the model's; only the cache,
the masks and the batching are its own. Positions count real tokens, as
``generate`` counts them under left padding, so in float32 its greedy output
equals ``generate``'s token for token (``tests/test_pipeline_slot_decode.py``).

Architectures: the Llama family whose decoder layer is
``input_layernorm -> self_attn -> post_attention_layernorm -> mlp`` with full
attention (llama, mistral and qwen2 without a sliding window, qwen3).
``supports(model)`` says whether a model qualifies; callers fall back to
``generate`` when it does not.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

__all__ = ["Finished", "Sampling", "SlotPlan", "decode_slots", "plan_slots", "supports"]

_FAMILIES = ("llama", "mistral", "qwen2", "qwen3")
_ALIGN = 16  # the attention window grows in steps of this many positions (aligned masks, fewer shapes)


@dataclass(frozen=True)
class Sampling:
    """How a token is chosen: greedy when ``temperature`` is 0 or None, else the model's own warpers."""

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None

    @property
    def greedy(self) -> bool:
        return not self.temperature


@dataclass(frozen=True)
class Finished:
    """One answer: ``index`` into the prompts, the generated ids cut before the first end id, and why it ended."""

    index: int
    ids: list[int]
    stopped: bool  # an end id was generated (else the answer reached max_new_tokens)


@dataclass(frozen=True)
class SlotPlan:
    slots: int
    capacity: int  # positions per slot: the longest prompt plus max_new_tokens, rounded up
    cache_bytes: int


def _unsupported(model: Any) -> str | None:
    cfg = model.config
    kind = getattr(cfg, "model_type", "")
    if kind not in _FAMILIES:
        return f"model_type {kind!r} is not one of {', '.join(_FAMILIES)}"
    if getattr(cfg, "use_sliding_window", False) or (
            kind == "mistral" and getattr(cfg, "sliding_window", None) is not None):
        return "sliding-window attention"
    if any(t != "full_attention" for t in (getattr(cfg, "layer_types", None) or [])):
        return "a layer that is not full attention"
    inner = getattr(model, "model", None)
    if inner is None or not all(hasattr(inner, a) for a in ("embed_tokens", "layers", "norm", "rotary_emb")):
        return "not a decoder with embed_tokens, layers, norm and rotary_emb"
    for layer in inner.layers:
        attn = getattr(layer, "self_attn", None)
        if attn is None or not all(hasattr(attn, a) for a in ("q_proj", "k_proj", "v_proj", "o_proj")):
            return "a layer without q/k/v/o projections"
        if not all(hasattr(layer, a) for a in ("input_layernorm", "post_attention_layernorm", "mlp")):
            return "a layer of another shape"
    return None


def supports(model: Any) -> tuple[bool, str]:
    """(True, "") when this decoder can drive ``model``; else (False, why)."""
    why = _unsupported(model)
    return why is None, why or ""


def _shape(model: Any) -> tuple[int, int, int, int]:
    cfg = model.config
    heads = cfg.num_attention_heads
    kv = getattr(cfg, "num_key_value_heads", None) or heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    return len(model.model.layers), heads, kv, head_dim


def plan_slots(model: Any, longest_prompt: int, max_new_tokens: int, want_slots: int, budget_bytes: int | None,
               dtype: torch.dtype) -> SlotPlan:
    """Slots and per-slot capacity for a cache within ``budget_bytes`` (no limit when None)."""
    layers, _, kv, head_dim = _shape(model)
    capacity = -(-(longest_prompt + max_new_tokens) // _ALIGN) * _ALIGN
    per_slot = 2 * layers * kv * head_dim * capacity * torch.empty((), dtype=dtype).element_size()
    slots = max(1, want_slots)
    if budget_bytes is not None:
        slots = max(1, min(slots, budget_bytes // per_slot))
    return SlotPlan(slots=slots, capacity=capacity, cache_bytes=slots * per_slot)


def _warpers(sampling: Sampling) -> list[Callable[[Any, torch.Tensor], torch.Tensor]]:
    """transformers' own temperature / top-k / top-p warpers, in generate's order."""
    from transformers.generation.logits_process import (
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    out: list[Any] = []
    if sampling.temperature is not None and sampling.temperature != 1.0:
        out.append(TemperatureLogitsWarper(sampling.temperature))
    if sampling.top_k is not None and sampling.top_k > 0:
        out.append(TopKLogitsWarper(sampling.top_k))
    if sampling.top_p is not None and sampling.top_p < 1.0:
        out.append(TopPLogitsWarper(sampling.top_p))
    return out


class _Decoder:
    """The cache, the per-slot state and one forward each for prefill and decode."""

    def __init__(self, model: Any, plan: SlotPlan, max_new: int, end_ids: Sequence[int], sampling: Sampling):
        inner = model.model
        self.model, self.inner = model, inner
        self.layers = list(inner.layers)
        n_layers, self.heads, self.kv, self.head_dim = _shape(model)
        self.group = self.heads // self.kv
        p = next(model.parameters())
        self.device, self.dtype = p.device, p.dtype
        self.plan, self.max_new = plan, max_new
        shape = (plan.slots, self.kv, plan.capacity, self.head_dim)
        self.k = [torch.zeros(shape, dtype=self.dtype, device=self.device) for _ in range(n_layers)]
        self.v = [torch.zeros(shape, dtype=self.dtype, device=self.device) for _ in range(n_layers)]
        mod = sys.modules[type(self.layers[0].self_attn).__module__]
        self.rope = mod.apply_rotary_pos_emb
        self.end = torch.tensor(sorted(set(end_ids)), dtype=torch.long, device=self.device)
        self.sampling, self.warpers = sampling, _warpers(sampling)
        s = plan.slots
        self.tok = torch.zeros(s, dtype=torch.long, device=self.device)  # the token each slot feeds next
        self.pos = torch.zeros(s, dtype=torch.long, device=self.device)  # and its position
        self.count = torch.zeros(s, dtype=torch.long, device=self.device)  # tokens generated
        self.hit = torch.zeros(s, dtype=torch.bool, device=self.device)  # an end id generated
        self.out = torch.zeros((s, max_new), dtype=torch.long, device=self.device)
        self.arange_cap = torch.arange(plan.capacity, device=self.device)

    # --- one step of attention, per layer ---------------------------------------------------------------

    def _qkv(self, layer: Any, h: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        attn = layer.self_attn
        b, t = h.shape[:2]
        q = attn.q_proj(h).view(b, t, -1, self.head_dim)
        k = attn.k_proj(h).view(b, t, -1, self.head_dim)
        v = attn.v_proj(h).view(b, t, -1, self.head_dim).transpose(1, 2)
        if hasattr(attn, "q_norm"):  # qwen3 normalises each head before the rotation
            q, k = attn.q_norm(q), attn.k_norm(k)
        q, k = self.rope(q.transpose(1, 2), k.transpose(1, 2), cos, sin)
        return q, k, v

    def _mlp(self, layer: Any, x: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        x = x + layer.self_attn.o_proj(a)
        return x + layer.mlp(layer.post_attention_layernorm(x))

    def _logits(self, h: torch.Tensor) -> torch.Tensor:
        return self.model.lm_head(self.inner.norm(h)).float()

    def _choose(self, logits: torch.Tensor) -> torch.Tensor:
        if self.sampling.greedy:
            return logits.argmax(dim=-1)
        for w in self.warpers:
            logits = w(None, logits)
        return torch.multinomial(F.softmax(logits, dim=-1), num_samples=1).squeeze(1)

    def prefill(self, rows: list[int], prompts: list[list[int]]) -> None:
        """Run ``prompts`` (right-padded) into slots ``rows`` and choose each one's first token."""
        n = max(len(p) for p in prompts)
        g = len(rows)
        ids = torch.zeros((g, n), dtype=torch.long)
        for r, p in enumerate(prompts):
            ids[r, :len(p)] = torch.tensor(p, dtype=torch.long)
        ids = ids.to(self.device)
        lens = torch.tensor([len(p) for p in prompts], dtype=torch.long, device=self.device)
        at = torch.arange(n, device=self.device)
        valid = at[None, :] < lens[:, None]  # [g, n]
        mask = (at[None, :, None] >= at[None, None, :]) & valid[:, None, :]  # causal, and only real keys
        mask = mask[:, None]  # [g, 1, n, n]
        pos = at[None, :].expand(g, n)
        slot = torch.tensor(rows, dtype=torch.long, device=self.device)
        x = self.inner.embed_tokens(ids)
        cos, sin = self.inner.rotary_emb(x, pos)
        for i, layer in enumerate(self.layers):
            q, k, v = self._qkv(layer, layer.input_layernorm(x), cos, sin)
            self.k[i][slot, :, :n] = k
            self.v[i][slot, :, :n] = v
            ke = k.repeat_interleave(self.group, dim=1) if self.group > 1 else k
            ve = v.repeat_interleave(self.group, dim=1) if self.group > 1 else v
            a = F.scaled_dot_product_attention(q, ke, ve, attn_mask=mask, scale=layer.self_attn.scaling)
            x = self._mlp(layer, x, a.transpose(1, 2).reshape(g, n, -1))
        last = x[torch.arange(g, device=self.device), lens - 1]  # [g, H]
        first = self._choose(self._logits(last))
        self.tok[slot] = first
        self.pos[slot] = lens
        self.count[slot] = 1
        self.hit[slot] = torch.isin(first, self.end)
        self.out[slot, 0] = first

    def step(self, width: int, window: int) -> None:
        """One token for slots [0, width), attending to positions [0, window)."""
        w = width
        rows = torch.arange(w, device=self.device)
        pos = self.pos[:w]
        x = self.inner.embed_tokens(self.tok[:w, None])
        cos, sin = self.inner.rotary_emb(x, pos[:, None])
        keep = (self.arange_cap[None, :window] <= pos[:, None])[:, None, None, :]  # [w, 1, 1, window]
        at = pos.clamp(max=self.plan.capacity - 1)  # a free slot's position only matters as a place to write
        for i, layer in enumerate(self.layers):
            q, k, v = self._qkv(layer, layer.input_layernorm(x), cos, sin)
            self.k[i][rows, :, at] = k[:, :, 0]
            self.v[i][rows, :, at] = v[:, :, 0]
            # The query heads of one key/value group become that group's query rows: the cache is read as is.
            qg = q.reshape(w, self.kv, self.group, self.head_dim)
            a = F.scaled_dot_product_attention(qg, self.k[i][:w, :, :window], self.v[i][:w, :, :window],
                                               attn_mask=keep, scale=layer.self_attn.scaling)
            x = self._mlp(layer, x, a.reshape(w, 1, -1))
        nxt = self._choose(self._logits(x[:, 0]))
        count = self.count[:w]
        self.out[rows, count.clamp(max=self.max_new - 1)] = nxt
        self.count[:w] = count + 1
        self.hit[:w] |= torch.isin(nxt, self.end)
        self.tok[:w] = nxt
        self.pos[:w] = pos + 1

    def move(self, src: list[int], dst: list[int]) -> None:
        """Copy slots ``src`` to ``dst`` (cache and state), to pack the live rows at the front."""
        s = torch.tensor(src, dtype=torch.long, device=self.device)
        d = torch.tensor(dst, dtype=torch.long, device=self.device)
        for t in (*self.k, *self.v, self.tok, self.pos, self.count, self.hit, self.out):
            t[d] = t[s]


def decode_slots(model: Any, prompts: Sequence[Sequence[int]], max_new_tokens: int, end_ids: Sequence[int],
                 plan: SlotPlan, sampling: Sampling | None = None, *, order: Sequence[int] | None = None,
                 check_every: int = 8, prefill_tokens: int = 32768,
                 stop: Callable[[], bool] | None = None) -> Iterator[list[Finished]]:
    """Generate an answer to every prompt; yields the answers that finished since the last yield.

    ``order`` is the queue's order (default: as given); a slot is refilled from its front.
    ``stop()`` returning True stops admitting prompts: the rows in flight finish and are
    yielded, the rest are not answered. The model must be in eval mode; call under
    ``torch.inference_mode()``.
    """
    if max_new_tokens < 1:
        raise ValueError("max_new_tokens must be at least 1")
    queue = list(range(len(prompts)) if order is None else order)
    if not queue:
        return
    dec = _Decoder(model, plan, max_new_tokens, end_ids, sampling or Sampling())
    slots = plan.slots
    req = [-1] * slots  # prompt index per slot, -1 when free
    pos = [0] * slots  # host copy of each slot's next position
    count = [0] * slots  # host copy of each slot's generated count
    width = slots
    head = 0

    def admit() -> None:
        nonlocal head
        free = [s for s in range(width) if req[s] < 0]
        while free and head < len(queue) and not (stop is not None and stop()):
            take: list[int] = []
            longest = 0
            while len(take) < len(free) and head < len(queue):
                n = len(prompts[queue[head]])
                if n > plan.capacity - max_new_tokens:
                    raise ValueError(f"prompt {queue[head]} has {n} tokens; the plan has room for "
                                     f"{plan.capacity - max_new_tokens}")
                if take and max(longest, n) * (len(take) + 1) > prefill_tokens:
                    break
                longest = max(longest, n)
                take.append(queue[head])
                head += 1
            rows = free[:len(take)]
            free = free[len(take):]
            dec.prefill(rows, [list(prompts[i]) for i in take])
            for s, i in zip(rows, take, strict=True):
                req[s], pos[s], count[s] = i, len(prompts[i]), 1

    def harvest() -> list[Finished]:
        live = [s for s in range(width) if req[s] >= 0]
        if not live:
            return []
        hit = dec.hit[:width].tolist()
        done = [s for s in live if hit[s] or count[s] >= max_new_tokens]
        if not done:
            return []
        idx = torch.tensor(done, dtype=torch.long, device=dec.device)
        toks = dec.out[idx].tolist()
        dec.pos[idx] = 0  # a free slot goes on being stepped until it is refilled: keep its writes in bounds
        end = {int(e) for e in end_ids}
        got = []
        for s, row in zip(done, toks, strict=True):
            row = row[:count[s]]
            cut = next((j for j, t in enumerate(row) if t in end), None)
            got.append(Finished(req[s], row[:cut] if cut is not None else row, cut is not None))
            req[s] = -1
        return got

    admit()
    while True:
        finished = harvest()
        if head < len(queue) and not (stop is not None and stop()):
            if sum(r < 0 for r in req[:width]) >= max(1, slots // 64) or not any(r >= 0 for r in req[:width]):
                admit()
        elif any(r >= 0 for r in req[:width]):
            live = [s for s in range(width) if req[s] >= 0]
            if len(live) <= width // 2:  # the queue is empty: pack the live rows at the front, decode fewer
                dst = list(range(len(live)))
                moving = [(s, d) for s, d in zip(live, dst, strict=True) if s != d]
                if moving:
                    dec.move([s for s, _ in moving], [d for _, d in moving])
                    for s, d in moving:
                        req[d], pos[d], count[d] = req[s], pos[s], count[s]
                        req[s] = -1
                width = len(live)
        if finished:
            yield finished
        live = [s for s in range(width) if req[s] >= 0]
        if not live:
            return
        # Rows run on past an end id until the next check (their extra tokens are cut), never past max_new.
        steps = min(check_every, min(max_new_tokens - count[s] for s in live))
        for _ in range(steps):
            window = min(plan.capacity, -(-(max(pos[s] for s in live) + 1) // _ALIGN) * _ALIGN)
            hi = max(live) + 1
            dec.step(hi, window)
            for s in live:
                pos[s] += 1
                count[s] += 1
