"""Stage: train the EAGLE-3 draft on extracted hidden states.

Loss: training-time test unrolled for ``--ttt-steps`` (default 7) draft steps,
step i weighted ``--ttt-decay ** i`` (0.8^i); each step is a soft cross-entropy
between the target's distribution restricted to the draft vocabulary and the
draft's logits, over positions whose predicted token is in ``loss_mask`` and
whose target argmax is in the draft vocabulary (``t2d``). AdamW, linear warmup
then cosine decay, gradient clipping at 0.5, bf16 autocast on GPU.

Checkpoints (``checkpoint-<step>.pt``, atomic) hold the trainable weights,
optimizer, scheduler, RNG states and data position; ``--resume`` continues from
the newest and reproduces the loss curve an uninterrupted run would have
written (``metrics.jsonl``). Several GPUs: launch with ``torchrun`` (DDP).
"""

from __future__ import annotations

import io
import json
import math
import os
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from pipeline.common import (
    StageError,
    atomic_write_bytes,
    atomic_write_json,
    fail,
    install_sigterm_flag,
    log,
    make_parser,
    progress,
)
from pipeline.eagle3_model import DraftConfig, Eagle3Draft

__all__ = [
    "TTTLoss",
    "build_draft",
    "collate",
    "latest_checkpoint",
    "load_target_heads",
    "load_vocab_map",
    "main",
    "run_train",
]

CKPT_PREFIX = "checkpoint-"
METRICS = "metrics.jsonl"
DRAFT_CONFIG = "draft_config.json"


def load_vocab_map(path: str | os.PathLike[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Read ``d2t`` (int64 [draft_vocab]) and ``t2d`` (bool [target_vocab]) from the vocab stage's file."""
    from safetensors.torch import load_file

    p = Path(path)
    if not p.is_file():
        raise StageError(f"{p}: vocab map not found\n  fix: run the vocab stage first, or pass --vocab-map")
    t = load_file(str(p))
    missing = [k for k in ("d2t", "t2d") if k not in t]
    if missing:
        raise StageError(f"{p}: missing tensor(s) {missing}\n  fix: regenerate it with the vocab stage")
    return t["d2t"].long(), t["t2d"].bool()


def load_target_heads(extraction_dir: str | os.PathLike[str]) -> tuple[dict[str, Any], torch.Tensor, torch.Tensor]:
    """(target config dict, embedding [V, H], lm_head [V, H]) saved by the extract stage."""
    from safetensors.torch import load_file

    from pipeline.extract import TARGET_CONFIG, TARGET_HEADS

    d = Path(extraction_dir)
    cfg = json.loads((d / TARGET_CONFIG).read_text(encoding="utf-8"))
    heads = load_file(str(d / TARGET_HEADS))
    return cfg, heads["embed_tokens"], heads["lm_head"]


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


def collate(samples: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]], max_len: int) -> dict[str, torch.Tensor]:
    """Right-pad a list of (ids, loss_mask, hidden) to one batch, truncating at ``max_len``."""
    longest = min(max(int(s[0].numel()) for s in samples), max_len)
    b = len(samples)
    h = samples[0][2].shape[-1]
    ids = torch.zeros((b, longest), dtype=torch.long)
    lm = torch.zeros((b, longest), dtype=torch.bool)
    valid = torch.zeros((b, longest), dtype=torch.bool)
    hs = torch.zeros((b, longest, 4, h), dtype=samples[0][2].dtype)
    for r, (a, m, x) in enumerate(samples):
        n = min(int(a.numel()), longest)
        ids[r, :n] = a[:n]
        lm[r, :n] = m[:n].bool()
        valid[r, :n] = True
        hs[r, :n] = x[:n]
    return {"input_ids": ids, "loss_mask": lm, "valid": valid, "hidden": hs}


def latest_checkpoint(out: Path) -> Path | None:
    """The newest ``checkpoint-<step>.pt`` in ``out`` (by step number), or None."""
    found = sorted(out.glob(f"{CKPT_PREFIX}*.pt"), key=lambda p: int(p.stem[len(CKPT_PREFIX):]))
    return found[-1] if found else None


def _rng_state() -> dict[str, Any]:
    import numpy as np

    st: dict[str, Any] = {"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": np.random.get_state()}
    if torch.cuda.is_available():
        st["cuda"] = torch.cuda.get_rng_state_all()
    return st


def _set_rng_state(st: dict[str, Any]) -> None:
    import numpy as np

    torch.set_rng_state(st["torch"])
    random.setstate(st["python"])
    np.random.set_state(st["numpy"])
    if "cuda" in st and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(st["cuda"])


def _lr_lambda(warmup: int, total: int) -> Any:
    def f(step: int) -> float:
        if step < warmup:
            return (step + 1) / max(1, warmup)
        prog = (step - warmup) / max(1, total - warmup)
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, prog)))

    return f


def run_train(args: Any) -> int:
    """Run the stage; returns the exit code (0 done, 143 stopped by SIGTERM)."""
    from pipeline import model_io
    from pipeline.extract import ExtractedDataset

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if world > 1:
        import torch.distributed as dist

        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend=backend)
        device = f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu"
        if device.startswith("cuda"):
            torch.cuda.set_device(local_rank)
    else:
        device = model_io.resolve_device(args.device)
    is_main = rank == 0
    stop = install_sigterm_flag() if threading.current_thread() is threading.main_thread() else threading.Event()

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ds = ExtractedDataset(args.data)
    d2t, t2d = load_vocab_map(args.vocab_map)
    target_cfg, embed, lm_head = load_target_heads(args.data)
    aux = ds.manifest["layer_ids"]["output_0based"]
    draft = build_draft(target_cfg, embed, lm_head, d2t, t2d, aux_layers=aux, seed=args.seed)
    if int(t2d.numel()) != int(ds.manifest["vocab_size"]):
        raise StageError(f"{args.vocab_map}: t2d covers {t2d.numel()} target tokens but the target has "
                         f"{ds.manifest['vocab_size']}\n  fix: rebuild the vocab map for this target")
    draft.to(device)
    objective = TTTLoss(draft, lm_head.to(device, torch.float32), args.ttt_steps, args.ttt_decay).to(device)
    model: nn.Module = objective
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel as DDP

        model = DDP(objective, device_ids=[local_rank] if device.startswith("cuda") else None)
    params = [p for p in draft.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr, betas=(0.9, 0.95), weight_decay=args.weight_decay)
    n = len(ds)
    global_batch = args.batch_size * world
    steps_per_epoch = max(1, n // global_batch)  # drop the ragged tail: every rank gets a full batch
    total = args.max_steps or steps_per_epoch * args.epochs
    warmup = args.warmup_steps if args.warmup_steps is not None else max(1, int(0.03 * total))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _lr_lambda(warmup, total))

    step = 0
    metrics_path = out / METRICS
    if args.resume:
        ck = latest_checkpoint(out)
        if ck is None:
            log(f"train: --resume: no checkpoint in {out}; starting from scratch")
        else:
            state = torch.load(ck, map_location="cpu", weights_only=False)
            if state["total_steps"] != total:
                raise StageError(f"{ck}: was written for {state['total_steps']} total steps, this run has {total}\n"
                                 "  fix: resume with the same --epochs/--max-steps/--batch-size")
            draft.load_state_dict({**state["model"], "embed_tokens.weight": draft.embed_tokens.weight})
            opt.load_state_dict(state["optimizer"])
            sched.load_state_dict(state["scheduler"])
            _set_rng_state(state["rng"])
            step = int(state["step"])
            log(f"train: resumed from {ck} at step {step}/{total}")
    if is_main:
        # Keep the loss curve consistent with the checkpoint: drop lines written after it.
        lines = []
        if step and metrics_path.exists():
            for line in metrics_path.read_text(encoding="utf-8").splitlines():
                if line.strip() and json.loads(line)["step"] <= step:
                    lines.append(line)
        metrics_path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
        atomic_write_json(out / DRAFT_CONFIG, draft.config.to_dict())

    def save(at: int) -> None:
        if not is_main:
            return
        state = {
            "model": {k: v.detach().cpu() for k, v in draft.trainable_state_dict().items()},
            "optimizer": opt.state_dict(),
            "scheduler": sched.state_dict(),
            "rng": _rng_state(),
            "step": at,
            "epoch": at // steps_per_epoch,
            "cursor": at % steps_per_epoch,
            "total_steps": total,
            "draft_config": draft.config.to_dict(),
            "extraction": str(Path(args.data).resolve()),
            "vocab_map": str(Path(args.vocab_map).resolve()),
        }
        buf = io.BytesIO()
        torch.save(state, buf)
        atomic_write_bytes(out / f"{CKPT_PREFIX}{at:07d}.pt", buf.getvalue())
        for old in sorted(out.glob(f"{CKPT_PREFIX}*.pt"), key=lambda p: int(p.stem[len(CKPT_PREFIX):]))[:-args.keep]:
            old.unlink(missing_ok=True)

    cuda = device.startswith("cuda")
    perm_epoch = -1
    perm = torch.arange(n)
    bar = progress(total, desc="train", unit="step", initial=step) if is_main else None
    t0 = time.monotonic()
    tokens_done = 0
    stopped = False
    mf = open(metrics_path, "a", encoding="utf-8") if is_main else None  # noqa: SIM115 - closed in finally
    try:
        while step < total:
            epoch, cursor = divmod(step, steps_per_epoch)
            if epoch != perm_epoch:
                # The order depends only on (seed, epoch): a resumed run sees the same batches.
                g = torch.Generator().manual_seed(args.seed * 1000003 + epoch)
                perm = torch.randperm(n, generator=g)
                perm_epoch = epoch
            start = cursor * global_batch + rank * args.batch_size
            idx = perm[start : start + args.batch_size].tolist()
            batch = collate([ds[i] for i in idx], args.max_len)
            batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
            if not cuda:
                batch["hidden"] = batch["hidden"].float()
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=cuda):
                loss, correct, counted = model(batch["input_ids"], batch["loss_mask"], batch["valid"], batch["hidden"])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, args.clip)
            opt.step()
            sched.step()
            step += 1
            ntok = int(batch["valid"].sum())
            tokens_done += ntok * world
            if is_main and mf is not None and bar is not None:
                acc = (correct / counted.clamp(min=1)).tolist()
                rec = {"step": step, "loss": round(float(loss), 6), "acc": [round(a, 4) for a in acc],
                       "lr": sched.get_last_lr()[0], "tokens": ntok}
                mf.write(json.dumps(rec) + "\n")
                mf.flush()
                el = time.monotonic() - t0
                bar.set_postfix_str(f"loss={float(loss):.4f} acc0={acc[0]:.3f} acc1={acc[1] if len(acc) > 1 else 0:.3f} "
                                    f"acc{len(acc) - 1}={acc[-1]:.3f} tok/s={tokens_done / max(el, 1e-9):,.0f}",
                                    refresh=False)
                bar.update(1)
            if step % args.save_every == 0 or step == total:
                save(step)
            if args.stop_after_steps is not None and step >= args.stop_after_steps and step < total:
                save(step)
                log(f"train: stopping at step {step} (--stop-after-steps); rerun with --resume to continue")
                stopped = True
                break
            if stop.is_set():
                save(step)
                log(f"train: SIGTERM: checkpoint saved at step {step}; rerun with --resume to continue")
                stopped = True
                break
    finally:
        if mf is not None:
            mf.close()
        if bar is not None:
            bar.close()
    el = time.monotonic() - t0
    if is_main and not stopped:
        last = json.loads(metrics_path.read_text(encoding="utf-8").splitlines()[-1]) if step else {}
        accs = " ".join(f"{a:.3f}" for a in last.get("acc", []))
        print(f"train: {step} steps, final loss {last.get('loss', float('nan')):.4f}, per-position acc [{accs}], "
              f"{tokens_done / max(el, 1e-9):,.0f} tok/s over {el:.1f}s -> {out}", flush=True)
    if world > 1:
        import torch.distributed as dist

        dist.destroy_process_group()
    return 143 if stopped and args.stop_after_steps is None else 0


def build_parser() -> Any:
    """The stage's argparse parser."""
    p = make_parser("python -m pipeline.train", "Train an EAGLE-3 draft on extracted hidden states.")
    p.add_argument("--data", required=True, help="extraction directory (pipeline.extract --out)")
    p.add_argument("--vocab-map", required=True, help="safetensors with d2t and t2d (vocab stage)")
    p.add_argument("--out", required=True, help="checkpoint directory")
    p.add_argument("--ttt-steps", type=int, default=7, help="training-time-test unroll length")
    p.add_argument("--ttt-decay", type=float, default=0.8, help="weight of step i is decay**i")
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--warmup-steps", type=int, default=None, help="default: 3%% of the steps")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=None, help="total optimizer steps (overrides --epochs)")
    p.add_argument("--batch-size", type=int, default=8, help="samples per step per GPU")
    p.add_argument("--max-len", type=int, default=2048, help="truncate samples to this many tokens")
    p.add_argument("--clip", type=float, default=0.5, help="gradient-norm clip")
    p.add_argument("--save-every", type=int, default=500, help="checkpoint every N steps")
    p.add_argument("--keep", type=int, default=2, help="checkpoints to keep")
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in --out")
    p.add_argument("--stop-after-steps", type=int, default=None,
                   help="checkpoint and stop at this step without changing the schedule (preemption drills)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto")
    return p


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    args = build_parser().parse_args(argv)
    try:
        return run_train(args)
    except StageError as exc:
        fail(str(exc))


if __name__ == "__main__":
    sys.exit(main())
