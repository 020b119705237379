"""Batched greedy speculative decoding, the measuring instrument of ``evaluate``.

Every prompt of a batch is decoded at once. Each round the drafter proposes up
to K tokens per row, the target scores ``[last token] + proposals`` in one
batched forward, and each row keeps the longest prefix of proposals equal to
the target's argmax plus one token of the target's own. Rows accept different
counts, so instead of cropping caches per row, every round appends K+1 slots to
every row and the slots of rejected tokens stay behind as masked holes
(attention masks mark valid slots; positions are passed explicitly). The
target's and the EAGLE-3 draft's KV caches are both kept this way, so a round
costs O(new tokens), not O(prefix).

Since every kept token is the target's argmax, the output must equal plain
greedy decoding; :func:`decode` with no drafter *is* plain greedy decoding (one
token a round, same code path for the target), which evaluation compares
against token for token.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

__all__ = ["DecodeResult", "Drafter", "EagleDrafter", "NgramDrafter", "SpecStats", "decode", "right_padded"]


@dataclass
class SpecStats:
    """Counts over all rounds of one method at one K (only rows still generating are counted)."""

    k: int
    rounds: int = 0
    accepted: int = 0
    proposed: int = 0
    per_position: list[int] = field(default_factory=list)
    tokens: int = 0
    seconds: float = 0.0

    def acceptance_length(self) -> float:
        """1 + accepted / rounds: tokens produced per target forward."""
        return 1.0 + self.accepted / self.rounds if self.rounds else float("nan")

    def per_position_rate(self) -> list[float]:
        """Fraction of rounds whose j-th draft token was accepted, j = 1..K."""
        return [c / self.rounds if self.rounds else float("nan") for c in self.per_position]


@dataclass
class DecodeResult:
    """What :func:`decode` returns: the generated tokens per prompt and, for greedy runs, argmax margins."""

    tokens: list[list[int]]
    stats: SpecStats
    # For each prompt and generated position: top-1 minus top-2 logit (greedy runs only). A speculative
    # output that departs from greedy where this is ~0 met a numerical near-tie, not a bug.
    margins: list[list[float]]


class Drafter(Protocol):
    """What :func:`decode` asks of a drafter."""

    def start(self, ids: torch.Tensor, lengths: torch.Tensor, aux: torch.Tensor, first: torch.Tensor) -> None:
        """Prefill: right-padded prompts [B, P], their lengths [B], target features [B, P, 3H], first tokens [B]."""

    def propose(self, seqs: list[list[int]], k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Proposals [B, k] (target token ids) and how many of each row's are real [B]."""

    def accept(self, aux: torch.Tensor, tokens: torch.Tensor, positions: torch.Tensor, valid: torch.Tensor) -> None:
        """After verification: the fed slots' features [B, k+1, 3H], the target's tokens there, positions, validity."""


class EagleDrafter:
    """Greedy chains from an EAGLE-3 draft, with its context keys/values kept across rounds.

    Context row t pairs the target features of position t with the token at
    t+1; after verification row t = L-1+j pairs the verified slot j with the
    target's argmax there, which is the next token whenever the slot is kept.
    """

    def __init__(self, draft: Any) -> None:
        self.draft = draft
        self.ctx: Any = None
        self.last_logits: torch.Tensor | None = None
        self.last_hidden: torch.Tensor | None = None
        self.last_pos: torch.Tensor | None = None

    def _keep_last(self, logits: torch.Tensor, hidden: torch.Tensor, positions: torch.Tensor,
                   index: torch.Tensor) -> None:
        rows = torch.arange(logits.shape[0], device=logits.device)
        self.last_logits = logits[rows, index]
        self.last_hidden = hidden[rows, index][:, None]
        self.last_pos = positions[rows, index]

    @torch.inference_mode()
    def start(self, ids: torch.Tensor, lengths: torch.Tensor, aux: torch.Tensor, first: torch.Tensor) -> None:
        """Step 0 over every prompt position (row t is paired with token t+1; the last with ``first``)."""
        b, p = ids.shape
        dev = ids.device
        t = torch.arange(p, device=dev)[None, :].expand(b, p)
        nxt = torch.cat([ids[:, 1:], torch.zeros((b, 1), dtype=ids.dtype, device=dev)], dim=1)
        tokens = torch.where(t == (lengths - 1)[:, None], first[:, None], nxt)
        valid = t < lengths[:, None]
        self.ctx = None
        logits, hidden, self.ctx = self.draft.extend_context(tokens, aux, t, valid, None)
        self._keep_last(logits, hidden, t, lengths - 1)

    @torch.inference_mode()
    def propose(self, seqs: list[list[int]], k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """A chain of ``k`` draft tokens per row."""
        assert self.last_logits is not None and self.last_hidden is not None and self.last_pos is not None
        d = self.draft
        tok = d.draft_target_ids(self.last_logits.argmax(-1))
        out = [tok]
        hidden = self.last_hidden
        diag: list[tuple[torch.Tensor, torch.Tensor]] = []
        for j in range(1, k):
            logits, hidden = d.chain_step(tok[:, None], hidden, (self.last_pos + j)[:, None], self.ctx, diag)
            tok = d.draft_target_ids(logits[:, -1].argmax(-1))
            out.append(tok)
        props = torch.stack(out, dim=1)
        return props, torch.full((props.shape[0],), k, dtype=torch.long, device=props.device)

    @torch.inference_mode()
    def accept(self, aux: torch.Tensor, tokens: torch.Tensor, positions: torch.Tensor, valid: torch.Tensor) -> None:
        """Extend the context with the verified slots; the next chain starts from each row's last kept one."""
        logits, hidden, self.ctx = self.draft.extend_context(tokens, aux, positions, valid, self.ctx)
        self._keep_last(logits, hidden, positions, valid.long().sum(1) - 1)


class NgramDrafter:
    """Prompt-lookup decoding: copy what followed the latest earlier occurrence of the last n tokens."""

    def __init__(self, max_n: int = 3, min_n: int = 1) -> None:
        self.max_n, self.min_n = max_n, min_n
        self.device: Any = "cpu"

    def start(self, ids: torch.Tensor, lengths: torch.Tensor, aux: torch.Tensor, first: torch.Tensor) -> None:
        """Nothing to prefill; remembers the device."""
        self.device = ids.device

    def lookup(self, seq: list[int], k: int) -> list[int]:
        """Up to ``k`` tokens (possibly none) for one sequence, trying n = max_n down to min_n."""
        for n in range(self.max_n, self.min_n - 1, -1):
            if len(seq) <= n:
                continue
            tail = seq[-n:]
            for start in range(len(seq) - n - 1, -1, -1):
                if seq[start : start + n] == tail:
                    cont = seq[start + n : start + n + k]
                    if cont:
                        return cont
        return []

    def propose(self, seqs: list[list[int]], k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Proposals padded with 0 past each row's count."""
        rows = [self.lookup(s, k) for s in seqs]
        props = torch.zeros((len(seqs), k), dtype=torch.long)
        for r, cont in enumerate(rows):
            props[r, : len(cont)] = torch.tensor(cont, dtype=torch.long)
        counts = torch.tensor([len(c) for c in rows], dtype=torch.long)
        return props.to(self.device), counts.to(self.device)

    def accept(self, aux: torch.Tensor, tokens: torch.Tensor, positions: torch.Tensor, valid: torch.Tensor) -> None:
        """Nothing to keep."""


def right_padded(seqs: list[list[int]], device: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Token lists as one right-padded (with 0) id tensor [B, max len] and their lengths [B]."""
    ids = torch.zeros((len(seqs), max(len(x) for x in seqs)), dtype=torch.long, device=device)
    for r, x in enumerate(seqs):
        ids[r, : len(x)] = torch.tensor(x, dtype=torch.long)
    return ids, torch.tensor([len(x) for x in seqs], dtype=torch.long, device=device)


@torch.inference_mode()
def decode(target: Any, prompts: list[list[int]], max_new: int, eos: set[int], drafter: Drafter | None = None,
           k: int = 0) -> DecodeResult:
    """Decode every prompt greedily, in one batch; speculatively with ``drafter`` proposing ``k`` tokens a round.

    ``target`` is a :class:`pipeline.target_capture.TargetCapture`. Without a
    drafter this is plain greedy decoding, and the argmax margins are recorded.
    """
    dev = target.device
    b = len(prompts)
    stats = SpecStats(k if drafter is not None else 0)
    stats.per_position = [0] * stats.k
    t0 = time.monotonic()
    ids, lengths = right_padded(prompts, dev)
    p_max = ids.shape[1]
    slots = torch.arange(p_max, device=dev)[None, :].expand(b, p_max)
    mask = (slots < lengths[:, None]).long()
    logits, aux, cache = target.decode_step(ids, slots, mask, None)
    rows = torch.arange(b, device=dev)
    last_logits = logits[rows, lengths - 1]
    first = last_logits.argmax(-1)
    margins: list[list[float]] = [[] for _ in range(b)]
    if drafter is None:
        top = last_logits.topk(2, dim=-1).values
        for r, m in enumerate((top[:, 0] - top[:, 1]).tolist()):
            margins[r].append(m)
    seqs = [list(p) + [t] for p, t in zip(prompts, first.tolist())]
    gen = [[t] for t in first.tolist()]
    done = [t in eos or max_new <= 1 for t in first.tolist()]
    cur_len = lengths + 1
    last_tok = first
    if drafter is not None:
        drafter.start(ids, lengths, aux, first)
    while not all(done):
        if drafter is not None:
            props, counts = drafter.propose(seqs, k)
        else:
            props = torch.zeros((b, 0), dtype=torch.long, device=dev)
            counts = torch.zeros(b, dtype=torch.long, device=dev)
        kk = props.shape[1]
        feed = torch.cat([last_tok[:, None], props], dim=1)
        steps = torch.arange(kk + 1, device=dev)
        positions = (cur_len - 1)[:, None] + steps[None, :]
        mask = torch.cat([mask, torch.ones((b, kk + 1), dtype=mask.dtype, device=dev)], dim=1)
        logits, aux, cache = target.decode_step(feed, positions, mask, cache)
        preds = logits.argmax(-1)
        match = (props == preds[:, :kk]) & (steps[None, :kk] < counts[:, None])
        accepted = torch.cumprod(match.long(), dim=1).sum(1)
        valid = steps[None, :] <= accepted[:, None]
        mask[:, -(kk + 1):] = valid.long()
        if drafter is not None:
            drafter.accept(aux, preds, positions, valid)
        else:
            top = logits[:, 0].topk(2, dim=-1).values
            step_margins = (top[:, 0] - top[:, 1]).tolist()
        acc_h, preds_h, counts_h = accepted.tolist(), preds.tolist(), counts.tolist()
        for r in range(b):
            if done[r]:
                continue
            a = acc_h[r]
            stats.rounds += 1
            stats.accepted += a
            stats.proposed += counts_h[r]
            for j in range(a):
                stats.per_position[j] += 1
            if drafter is None:
                margins[r].append(step_margins[r])
            for t in preds_h[r][: a + 1]:
                gen[r].append(t)
                seqs[r].append(t)
                if t in eos or len(gen[r]) >= max_new:
                    done[r] = True
                    break
        last_tok = preds[rows, accepted]
        cur_len = cur_len + accepted + 1
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    stats.seconds = time.monotonic() - t0
    out = [g[:max_new] for g in gen]
    stats.tokens = sum(len(g) for g in out)
    return DecodeResult(out, stats, margins)
