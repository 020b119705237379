"""The EAGLE-3 draft model: one Llama decoder layer fed by three target layers.

Layout (parameter names are exactly the ones vLLM's and SGLang's
``LlamaForCausalLMEagle3`` load, so export is a plain rename-free dump):

* ``fc``: Linear(3 * target_hidden -> hidden, no bias) fusing the outputs of
  target layers (1, N/2-1, N-4) (0-based) into one feature vector.
* ``midlayer``: one decoder layer whose attention input is the concatenation
  ``[input_layernorm(token_embedding), hidden_norm(feature)]`` (2 * hidden);
  q/k/v project from 2H, the residual stream is the (un-normalised) feature.
* ``norm`` + ``lm_head`` over the *draft* vocabulary (``draft_vocab_size``
  rows, initialised from the target's ``lm_head`` rows selected by ``d2t``).
* ``embed_tokens``: the target's embedding, frozen and never exported (both
  servers share the target's embedding with the draft).
* buffers ``d2t`` (int64, draft id -> target id offset: target = i + d2t[i])
  and ``t2d`` (bool over the target vocabulary).

Training-time test ("TTT"): step 0 feeds fused target features; step i>0
feeds the draft's own output hidden state from step i-1, one position further
right. A query at step i attends causally to the step-0 keys of the real
context plus, for every earlier draft step, the key at its own position
(the "diagonal"); this is the attention pattern the draft sees while drafting a
chain at serving time, so the training loss matches what the server measures.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "EXPORT_WEIGHT_NAMES",
    "DraftConfig",
    "DraftContext",
    "Eagle3Draft",
    "TTTLoss",
    "build_draft",
    "default_aux_layers",
    "export_weight_shapes",
]


def default_aux_layers(num_layers: int) -> list[int]:
    """The EAGLE-3 capture layers as 0-based *outputs*: (1, N/2-1, N-4).

    vLLM and SGLang name the same tensors as *inputs* of layers (2, N/2, N-3).
    """
    if num_layers < 5:
        raise ValueError(f"an EAGLE-3 target needs at least 5 layers, this one has {num_layers}")
    return [1, num_layers // 2 - 1, num_layers - 4]


@dataclass
class DraftConfig:
    """Shapes of the draft, derived from the target's config (Llama family)."""

    hidden_size: int
    target_hidden_size: int
    intermediate_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    draft_vocab_size: int
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    max_position_embeddings: int = 8192
    num_target_layers: int = 0
    aux_layers: list[int] = field(default_factory=list)  # 0-based outputs
    bos_token_id: int | None = None
    eos_token_id: Any = None

    @classmethod
    def from_target_config(cls, cfg: Any, draft_vocab_size: int, aux_layers: list[int] | None = None) -> DraftConfig:
        """Build from a transformers ``LlamaConfig``-like object (or a dict)."""
        get = (lambda k, d=None: cfg.get(k, d)) if isinstance(cfg, dict) else (lambda k, d=None: getattr(cfg, k, d))
        hidden = int(get("hidden_size"))
        heads = int(get("num_attention_heads"))
        n_layers = int(get("num_hidden_layers"))
        head_dim = get("head_dim") or hidden // heads
        rope_theta = get("rope_theta")
        if rope_theta is None:
            # transformers 5 moved rope_theta into rope_parameters.
            rp = get("rope_parameters") or {}
            rope_theta = rp.get("rope_theta", 10000.0) if isinstance(rp, dict) else 10000.0
        return cls(
            hidden_size=hidden,
            target_hidden_size=hidden,
            intermediate_size=int(get("intermediate_size")),
            num_attention_heads=heads,
            num_key_value_heads=int(get("num_key_value_heads") or heads),
            head_dim=int(head_dim),
            vocab_size=int(get("vocab_size")),
            draft_vocab_size=int(draft_vocab_size),
            rms_norm_eps=float(get("rms_norm_eps") or 1e-5),
            rope_theta=float(rope_theta),
            max_position_embeddings=int(get("max_position_embeddings") or 8192),
            num_target_layers=n_layers,
            aux_layers=list(aux_layers) if aux_layers is not None else default_aux_layers(n_layers),
            bos_token_id=get("bos_token_id"),
            eos_token_id=get("eos_token_id"),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (stored in checkpoints)."""
        return asdict(self)


# Exported tensors, in file order. vLLM refuses unknown names; SGLang ignores
# them silently, so an extra name is a bug on one server and invisible on the other.
EXPORT_WEIGHT_NAMES = [
    "fc.weight",
    "midlayer.input_layernorm.weight",
    "midlayer.hidden_norm.weight",
    "midlayer.self_attn.q_proj.weight",
    "midlayer.self_attn.k_proj.weight",
    "midlayer.self_attn.v_proj.weight",
    "midlayer.self_attn.o_proj.weight",
    "midlayer.post_attention_layernorm.weight",
    "midlayer.mlp.gate_proj.weight",
    "midlayer.mlp.up_proj.weight",
    "midlayer.mlp.down_proj.weight",
    "norm.weight",
    "lm_head.weight",
    "d2t",
    "t2d",
]


def export_weight_shapes(c: DraftConfig) -> dict[str, tuple[int, ...]]:
    """Expected shape of every exported tensor for config ``c``."""
    h, th = c.hidden_size, c.target_hidden_size
    q, kv = c.num_attention_heads * c.head_dim, c.num_key_value_heads * c.head_dim
    return {
        "fc.weight": (h, 3 * th),
        "midlayer.input_layernorm.weight": (h,),
        "midlayer.hidden_norm.weight": (h,),
        "midlayer.self_attn.q_proj.weight": (q, 2 * h),
        "midlayer.self_attn.k_proj.weight": (kv, 2 * h),
        "midlayer.self_attn.v_proj.weight": (kv, 2 * h),
        "midlayer.self_attn.o_proj.weight": (h, q),
        "midlayer.post_attention_layernorm.weight": (h,),
        "midlayer.mlp.gate_proj.weight": (c.intermediate_size, h),
        "midlayer.mlp.up_proj.weight": (c.intermediate_size, h),
        "midlayer.mlp.down_proj.weight": (h, c.intermediate_size),
        "norm.weight": (h,),
        "lm_head.weight": (c.draft_vocab_size, h),
        "d2t": (c.draft_vocab_size,),
        "t2d": (c.vocab_size,),
    }


@dataclass
class DraftContext:
    """The draft's step-0 keys/values over a batch of contexts, for drafting one round after another.

    ``k``/``v`` are [B, kv_heads, S, D]; ``positions`` [B, S] the sequence
    position of each slot and ``valid`` [B, S] whether it holds a real
    (accepted) token. Rows grow by the same number of slots each round; slots of
    rejected tokens stay as invalid holes, so no row ever needs cropping.
    """

    k: torch.Tensor
    v: torch.Tensor
    positions: torch.Tensor
    valid: torch.Tensor

    def append(self, k: torch.Tensor, v: torch.Tensor, positions: torch.Tensor, valid: torch.Tensor) -> None:
        """Add slots (k/v [B, kv, T, D], positions/valid [B, T]) at the end."""
        self.k = torch.cat([self.k, k], dim=2)
        self.v = torch.cat([self.v, v], dim=2)
        self.positions = torch.cat([self.positions, positions], dim=1)
        self.valid = torch.cat([self.valid, valid], dim=1)


class RMSNorm(nn.Module):
    """Llama RMSNorm (computed in float32, like the servers do)."""

    def __init__(self, size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * xf.to(dtype)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class Rotary(nn.Module):
    """Llama (neox-style) rotary embedding for explicit position ids."""

    def __init__(self, head_dim: int, theta: float) -> None:
        super().__init__()
        inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        self.register_buffer("inv_freq", inv, persistent=False)

    def forward(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        # x [B, heads, T, D]; positions [B, T]
        freqs = positions.float()[:, None, :, None] * self.inv_freq[None, None, None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        return x * cos + _rotate_half(x) * sin


class DraftAttention(nn.Module):
    """Attention whose q/k/v read the 2H concatenation; supports the TTT cache."""

    def __init__(self, c: DraftConfig) -> None:
        super().__init__()
        self.nh, self.nkv, self.hd = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        self.q_proj = nn.Linear(2 * c.hidden_size, self.nh * self.hd, bias=False)
        self.k_proj = nn.Linear(2 * c.hidden_size, self.nkv * self.hd, bias=False)
        self.v_proj = nn.Linear(2 * c.hidden_size, self.nkv * self.hd, bias=False)
        self.o_proj = nn.Linear(self.nh * self.hd, c.hidden_size, bias=False)
        self.rotary = Rotary(self.hd, c.rope_theta)

    def forward(
        self,
        x: torch.Tensor,
        positions: torch.Tensor,
        cache: list[tuple[torch.Tensor, torch.Tensor]],
        key_mask: torch.Tensor | None,
        query_index: torch.Tensor | None,
    ) -> torch.Tensor:
        """One draft step.

        ``cache[0]`` holds the step-0 keys/values over the whole context
        ([B, kv, S, D]); ``cache[1:]`` the keys/values of earlier draft steps at
        the query rows only. ``key_mask`` [B, S] marks real (non-padding)
        context tokens. ``query_index`` [Tq] gives, for each query row, its
        index in the step-0 context (None: the rows are the context itself).
        The new keys/values are appended to ``cache``.
        """
        b, tq, _ = x.shape
        q, k, v = self.project(x, positions)
        cache.append((k, v))
        k0, v0 = cache[0]
        s = k0.shape[2]
        qi = query_index if query_index is not None else torch.arange(tq, device=x.device)
        # Causal over the real context: query row r may see step-0 keys 0..qi[r].
        allowed = torch.arange(s, device=x.device)[None, :] <= qi[:, None]  # [Tq, S]
        allowed = allowed[None, None]
        if key_mask is not None:
            allowed = allowed & key_mask[:, None, None, :].bool()
        return self.attend(q, k0, v0, allowed, cache[1:])

    def project(self, x: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q [B, heads, T, D] and k, v [B, kv_heads, T, D] of ``x``, rotary applied at ``positions`` [B, T]."""
        b, tq, _ = x.shape
        q = self.q_proj(x).view(b, tq, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(b, tq, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(b, tq, self.nkv, self.hd).transpose(1, 2)
        return self.rotary(q, positions), self.rotary(k, positions), v

    def attend(
        self,
        q: torch.Tensor,
        k0: torch.Tensor,
        v0: torch.Tensor,
        allowed: torch.Tensor,
        diag: list[tuple[torch.Tensor, torch.Tensor]],
    ) -> torch.Tensor:
        """Attention of ``q`` over context keys ``k0``/``v0`` where ``allowed`` and over the diagonal ``diag``.

        ``allowed`` broadcasts to [B, heads, Tq, S]; each ``diag`` entry is the
        (k, v) of one earlier draft step at the query rows themselves. Returns
        the ``o_proj`` output [B, Tq, hidden].
        """
        b, _h, tq, _d = q.shape
        rep = self.nh // self.nkv
        k0 = k0.repeat_interleave(rep, dim=1)
        v0 = v0.repeat_interleave(rep, dim=1)
        scale = 1.0 / math.sqrt(self.hd)
        s = k0.shape[2]
        scores0 = torch.matmul(q, k0.transpose(-1, -2)).float() * scale
        scores0 = scores0.masked_fill(~allowed, float("-inf"))
        diag_k = [kk.repeat_interleave(rep, dim=1) for kk, _ in diag]
        diag_v = [vv.repeat_interleave(rep, dim=1) for _, vv in diag]
        if diag_k:
            scores_d = torch.stack([(q * kk).sum(-1).float() * scale for kk in diag_k], dim=-1)  # [B,h,Tq,j]
            scores = torch.cat([scores0, scores_d], dim=-1)
        else:
            scores = scores0
        probs = torch.softmax(scores, dim=-1).to(q.dtype)
        out = torch.matmul(probs[..., :s], v0)
        for j, vv in enumerate(diag_v):
            out = out + probs[..., s + j : s + j + 1] * vv
        out = out.transpose(1, 2).reshape(b, tq, self.nh * self.hd)
        return self.o_proj(out)


class DraftMLP(nn.Module):
    """SwiGLU feed-forward, as in Llama."""

    def __init__(self, c: DraftConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DraftLayer(nn.Module):
    """The single EAGLE-3 decoder layer (``midlayer``)."""

    def __init__(self, c: DraftConfig) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.hidden_norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.self_attn = DraftAttention(c)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.mlp = DraftMLP(c)

    def forward(
        self,
        embeds: torch.Tensor,
        hidden: torch.Tensor,
        positions: torch.Tensor,
        cache: list[tuple[torch.Tensor, torch.Tensor]],
        key_mask: torch.Tensor | None,
        query_index: torch.Tensor | None,
    ) -> torch.Tensor:
        residual = hidden
        x = torch.cat([self.input_layernorm(embeds), self.hidden_norm(hidden)], dim=-1)
        hidden = residual + self.self_attn(x, positions, cache, key_mask, query_index)
        return hidden + self.mlp(self.post_attention_layernorm(hidden))


class Eagle3Draft(nn.Module):
    """EAGLE-3 draft head. See the module docstring for the layout."""

    def __init__(self, c: DraftConfig) -> None:
        super().__init__()
        self.config = c
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.embed_tokens.weight.requires_grad_(False)  # frozen: it is the target's
        self.fc = nn.Linear(3 * c.target_hidden_size, c.hidden_size, bias=False)
        self.midlayer = DraftLayer(c)
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.lm_head = nn.Linear(c.hidden_size, c.draft_vocab_size, bias=False)
        self.register_buffer("d2t", torch.zeros(c.draft_vocab_size, dtype=torch.long))
        self.register_buffer("t2d", torch.zeros(c.vocab_size, dtype=torch.bool))

    @torch.no_grad()
    def init_from_target(
        self, embed_weight: torch.Tensor, lm_head_weight: torch.Tensor, d2t: torch.Tensor, t2d: torch.Tensor
    ) -> None:
        """Copy the frozen embedding, the draft rows of ``lm_head``, and the vocab maps."""
        c = self.config
        if d2t.numel() != c.draft_vocab_size or t2d.numel() != c.vocab_size:
            raise ValueError(
                f"vocab map sizes d2t={d2t.numel()} t2d={t2d.numel()} do not match the draft "
                f"(draft_vocab_size={c.draft_vocab_size}, vocab_size={c.vocab_size})"
            )
        self.embed_tokens.weight.copy_(embed_weight.to(self.embed_tokens.weight.dtype))
        self.d2t.copy_(d2t.long())
        self.t2d.copy_(t2d.bool())
        target_ids = torch.arange(c.draft_vocab_size, device=self.d2t.device) + self.d2t
        self.lm_head.weight.copy_(lm_head_weight[target_ids.to(lm_head_weight.device)].to(self.lm_head.weight.dtype))

    def trainable_state_dict(self) -> dict[str, torch.Tensor]:
        """Everything except the frozen embedding (what checkpoints and export hold)."""
        return {k: v for k, v in self.state_dict().items() if not k.startswith("embed_tokens.")}

    def step(
        self,
        input_ids: torch.Tensor,
        hidden: torch.Tensor,
        positions: torch.Tensor,
        cache: list[tuple[torch.Tensor, torch.Tensor]],
        key_mask: torch.Tensor | None = None,
        query_index: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One draft step: returns (logits over the draft vocab, pre-norm hidden state)."""
        embeds = self.embed_tokens(input_ids).to(hidden.dtype)
        out = self.midlayer(embeds, hidden, positions, cache, key_mask, query_index)
        return self.lm_head(self.norm(out)), out

    def fuse(self, aux_hidden: torch.Tensor) -> torch.Tensor:
        """Project the concatenated three target layers (3H) to the draft width."""
        return self.fc(aux_hidden)

    def draft_target_ids(self, draft_ids: torch.Tensor) -> torch.Tensor:
        """Map draft-vocab ids to target-vocab ids (target = i + d2t[i])."""
        return draft_ids + self.d2t[draft_ids]

    def extend_context(
        self,
        tokens: torch.Tensor,
        aux_hidden: torch.Tensor,
        positions: torch.Tensor,
        valid: torch.Tensor,
        ctx: DraftContext | None,
    ) -> tuple[torch.Tensor, torch.Tensor, DraftContext]:
        """Step 0 over new context rows, reusing the keys/values of earlier ones (serving time).

        Row t pairs the target features of position t (``aux_hidden`` [B, T, 3H])
        with the token at t+1 (``tokens`` [B, T]); ``positions`` [B, T] is t and
        ``valid`` [B, T] marks real rows. Each row attends to every valid slot at
        or before its position. Returns (logits [B, T, draft_vocab], pre-norm
        hidden [B, T, H], the extended context): the same numbers :meth:`step`
        computes over the whole context at once.
        """
        attn = self.midlayer.self_attn
        hidden = self.fuse(aux_hidden.to(self.fc.weight.dtype))
        embeds = self.embed_tokens(tokens).to(hidden.dtype)
        x = torch.cat([self.midlayer.input_layernorm(embeds), self.midlayer.hidden_norm(hidden)], dim=-1)
        q, k, v = attn.project(x, positions)
        if ctx is None:
            ctx = DraftContext(k, v, positions, valid.bool())
        else:
            ctx.append(k, v, positions, valid.bool())
        allowed = (ctx.positions[:, None, :] <= positions[:, :, None]) & ctx.valid[:, None, :]  # [B, T, S]
        out = self._finish(hidden, attn.attend(q, ctx.k, ctx.v, allowed[:, None], []))
        return self.lm_head(self.norm(out)), out, ctx

    def chain_step(
        self,
        tokens: torch.Tensor,
        hidden: torch.Tensor,
        positions: torch.Tensor,
        ctx: DraftContext,
        diag: list[tuple[torch.Tensor, torch.Tensor]],
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Draft step j >= 1 of a chain: one query per row at ``positions`` [B, 1].

        ``tokens`` [B, 1] is the previous draft token, ``hidden`` [B, 1, H] the
        previous step's output. The query sees every valid context slot plus
        the chain's own earlier steps (``diag``, appended to here): the pattern
        training-time test trains. Returns (logits [B, 1, draft_vocab], hidden).
        """
        attn = self.midlayer.self_attn
        embeds = self.embed_tokens(tokens).to(hidden.dtype)
        x = torch.cat([self.midlayer.input_layernorm(embeds), self.midlayer.hidden_norm(hidden)], dim=-1)
        q, k, v = attn.project(x, positions)
        diag.append((k, v))
        allowed = ctx.valid[:, None, None, :]
        out = self._finish(hidden, attn.attend(q, ctx.k, ctx.v, allowed, diag))
        return self.lm_head(self.norm(out)), out

    def _finish(self, residual: torch.Tensor, attn_out: torch.Tensor) -> torch.Tensor:
        """The rest of the decoder layer after attention (residual, MLP)."""
        layer = self.midlayer
        h = residual + attn_out
        return h + layer.mlp(layer.post_attention_layernorm(h))


def build_draft(
    target_cfg: dict[str, Any], embed: torch.Tensor, lm_head: torch.Tensor, d2t: torch.Tensor, t2d: torch.Tensor,
    aux_layers: list[int] | None = None, seed: int = 0,
) -> Eagle3Draft:
    """A freshly initialised draft for this target (same seed -> same weights)."""
    cfg = DraftConfig.from_target_config(target_cfg, draft_vocab_size=int(d2t.numel()), aux_layers=aux_layers)
    torch.manual_seed(seed)
    draft = Eagle3Draft(cfg)
    draft.init_from_target(embed.float(), lm_head.float(), d2t, t2d)
    return draft


class TTTLoss(nn.Module):
    """The training objective as a module, so DDP can wrap it (it only hooks ``forward``)."""

    def __init__(self, draft: Eagle3Draft, target_lm_head: torch.Tensor, ttt_steps: int, decay: float) -> None:
        super().__init__()
        self.draft = draft
        # Frozen target head, a buffer (not a parameter) so the optimizer and DDP skip it.
        self.register_buffer("target_head", target_lm_head, persistent=False)
        self.ttt_steps = ttt_steps
        self.decay = decay

    def forward(
        self, input_ids: torch.Tensor, loss_mask: torch.Tensor, valid: torch.Tensor, hidden: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Return (weighted loss, per-step correct counts [S], per-step counted positions [S]).

        ``hidden`` is [B, L, 4, H] (three aux layers then the final normalised
        state); index t pairs the features at t with token t+1 and predicts the
        target's distribution at t+1 (i.e. token t+2). Step i shifts both i
        further right; rows that run off the sample end are masked.
        """
        d = self.draft
        b, l = input_ids.shape
        t = l - 1
        dev = input_ids.device
        aux = hidden[:, :t, :3].reshape(b, t, -1)
        final = hidden[:, :, 3]
        with torch.no_grad():
            tgt_logits = F.linear(final.to(self.target_head.dtype), self.target_head)  # [B, L, V]
            tgt_arg = tgt_logits.argmax(-1)
            target_ids = torch.arange(d.config.draft_vocab_size, device=dev) + d.d2t
            tgt_p = torch.softmax(tgt_logits[..., target_ids].float(), dim=-1)  # [B, L, Vd]
            in_draft = d.t2d[tgt_arg]
        hid = d.fuse(aux.to(d.fc.weight.dtype))
        key_mask = valid[:, 1:]  # step-0 context rows are real tokens t+1
        cache: list[tuple[torch.Tensor, torch.Tensor]] = []
        pos = torch.arange(t, device=dev)[None, :].expand(b, t)
        total = torch.zeros((), device=dev)
        correct = torch.zeros(self.ttt_steps, device=dev)
        counted = torch.zeros(self.ttt_steps, device=dev)
        pad = torch.zeros((b, self.ttt_steps + 2), dtype=input_ids.dtype, device=dev)
        ids_p = torch.cat([input_ids, pad], dim=1)
        mask_p = torch.cat([(loss_mask.bool() & valid.bool()), pad.bool()], dim=1)
        for i in range(self.ttt_steps):
            tok = ids_p[:, 1 + i : 1 + i + t]
            logits, hid = d.step(tok, hid, pos + i, cache, key_mask=key_mask)
            # Target at position t+1+i predicts token t+2+i; rows past the end get mask 0.
            tgt_index = torch.clamp(torch.arange(t, device=dev) + 1 + i, max=l - 1)
            m = mask_p[:, 2 + i : 2 + i + t]
            p = tgt_p[:, tgt_index]
            m = m & in_draft[:, tgt_index]
            logp = torch.log_softmax(logits.float(), dim=-1)
            ce = -(p * logp).sum(-1)
            mf = m.float()
            n = mf.sum()
            total = total + (self.decay**i) * (ce * mf).sum() / n.clamp(min=1.0)
            with torch.no_grad():
                pred_target = d.draft_target_ids(logits.argmax(-1))
                correct[i] = ((pred_target == tgt_arg[:, tgt_index]) & m).float().sum()
                counted[i] = n
        return total, correct, counted
