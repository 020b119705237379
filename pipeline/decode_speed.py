"""Wall-clock speed of each decoding method at several batch sizes, the drafter's own cost included.

Acceptance length counts tokens per target forward; what a user waits for is
seconds. For every batch size B this decodes the same prompts B at a time with
plain greedy decoding and with each drafter, timing each call from its first
prefill to its last token with the device synchronised (the drafter's
proposals, its context updates and the host work of each round all fall inside
the timed span), after one untimed warm-up call per method and size.

Reported per method and size: requests, tokens, seconds, tokens/s, mean
latency per request (seconds of the call that decoded it: at B = 1 the latency
one user sees), milliseconds per output token of one request, and the speed-up
over greedy at the same B. Batch 1 is what a lightly loaded server sees per
request; at large B the target's forward becomes compute-bound and the extra
K tokens a round verifies are no longer free, so speculation pays less there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from pipeline.speculative import Drafter, decode

__all__ = ["measure_speed"]


def _timed(target: Any, prompts: list[list[int]], max_new: int, eos: set[int], drafter: Drafter | None,
           k: int, batch: int) -> tuple[float, int, list[float]]:
    """(seconds, tokens, per-request latency) over ``prompts`` in chunks of ``batch``."""
    seconds, tokens, latency = 0.0, 0, []
    for s in range(0, len(prompts), batch):
        chunk = prompts[s : s + batch]
        res = decode(target, chunk, max_new, eos, drafter, k)
        seconds += res.stats.seconds
        tokens += res.stats.tokens
        latency += [res.stats.seconds] * len(chunk)
    return seconds, tokens, latency


def measure_speed(target: Any, prompts: list[list[int]], max_new: int, eos: set[int],
                  methods: dict[str, tuple[Callable[[], Drafter] | None, int]], batches: list[int],
                  requests: int) -> list[dict[str, Any]]:
    """One record per (batch size, method); ``methods`` maps a name to (a fresh drafter factory or None, K).

    Each batch size decodes ``max(B, requests)`` prompts (as many as there are, at most):
    enough calls at B = 1 for a mean, one full batch at large B. The first entry of
    ``methods`` is the reference for the speed-up (greedy: factory None, K 0).
    """
    if target.device.type == "cuda":
        torch.cuda.synchronize(target.device)
    out: list[dict[str, Any]] = []
    for b in batches:
        chosen = prompts[: min(len(prompts), max(b, requests))]
        ref_seconds = None
        for name, (factory, k) in methods.items():
            _timed(target, chosen[:b], min(max_new, 8), eos, factory() if factory else None, k, b)  # warm-up
            seconds, tokens, latency = _timed(target, chosen, max_new, eos, factory() if factory else None, k, b)
            if ref_seconds is None:
                ref_seconds = seconds
            per_request_tokens = tokens / len(chosen)
            mean_latency = sum(latency) / len(latency)
            out.append({
                "batch": b, "method": name, "k": k, "requests": len(chosen), "tokens": tokens,
                "seconds": round(seconds, 4), "tokens_per_s": round(tokens / seconds, 1) if seconds else None,
                "latency_s": round(mean_latency, 4),
                "ms_per_token": round(1000.0 * mean_latency / per_request_tokens, 3) if per_request_tokens else None,
                "speedup_over_greedy": round(ref_seconds / seconds, 3) if seconds else None,
            })
    return out
