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
The model and its loss (``TTTLoss``) live in :mod:`pipeline.eagle3_model`.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import random
import re
import sys
import threading
import time
import zlib
from pathlib import Path
from typing import Any

import torch
from torch import nn

from pipeline.common import (
    StageError,
    atomic_write_bytes,
    atomic_write_json,
    install_sigterm_flag,
    log,
    make_parser,
    progress,
    run_stage,
)
from pipeline.eagle3_model import TTTLoss, build_draft
from pipeline.training_data import open_training_data

__all__ = [
    "latest_checkpoint",
    "load_vocab_map",
    "main",
    "run_train",
]

CKPT_PREFIX = "checkpoint-"
METRICS = "metrics.jsonl"
VALIDATION = "validation.jsonl"
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


def plan_steps(lengths: list[int], max_len: int, epochs: int, seed: int, per_step: int, batch_size: int,
               batch_tokens: int | None, min_steps: int = 0) -> list[tuple[int, list[list[int]]]]:
    """The whole training schedule: per optimizer step, its epoch and its ``per_step`` batches of sample indices.

    ``per_step`` = ranks x gradient-accumulation micro-batches; rank r takes
    batches ``r*accum .. (r+1)*accum-1`` of every step. Each epoch is a fresh
    permutation seeded by (seed, epoch), so a resumed run replays the same
    batches. With ``batch_tokens``, batches are length-bucketed: the permutation
    is cut into chunks, each chunk sorted by length and packed into batches of
    at most ``batch_tokens`` padded tokens, and the batches shuffled, so the
    GPU sees little padding. Otherwise a batch is ``batch_size`` samples. The
    ragged tail of an epoch is dropped so every rank gets a full step. Epochs
    continue past ``epochs`` until there are ``min_steps`` steps.
    """
    n = len(lengths)
    clipped = [min(int(x), max_len) for x in lengths]
    steps: list[tuple[int, list[list[int]]]] = []
    epoch = 0
    while epoch < epochs or len(steps) < min_steps:
        g = torch.Generator().manual_seed(seed * 1000003 + epoch)
        perm = torch.randperm(n, generator=g).tolist()
        batches: list[list[int]] = []
        if batch_tokens is None:
            batches = [perm[i : i + batch_size] for i in range(0, n - batch_size + 1, batch_size)]
        else:
            chunk = max(1, 64 * max(1, batch_tokens // max(1, max(clipped))))  # ~64 batches of the longest samples
            for c in range(0, n, chunk):
                part = sorted(perm[c : c + chunk], key=lambda i: -clipped[i])
                cur: list[int] = []
                for i in part:
                    longest = clipped[cur[0]] if cur else clipped[i]
                    if cur and (len(cur) + 1) * longest > batch_tokens:
                        batches.append(cur)
                        cur = []
                    cur.append(i)
                if cur:
                    batches.append(cur)
            order = torch.randperm(len(batches), generator=g).tolist()
            batches = [batches[j] for j in order]
        before = len(steps)
        for s in range(0, len(batches) - per_step + 1, per_step):
            steps.append((epoch, batches[s : s + per_step]))
        epoch += 1
        if len(steps) == before:  # too few samples for one step: more epochs would not help
            break
    return steps


# regenerate names the answers of one prompt ``ID`` (one answer), ``ID#0``, ``ID#1``, ... (several).
_SAMPLE_SUFFIX = re.compile(r"#\d+$")


def split_validation(ids: list[str], share: float) -> tuple[list[int], list[int]]:
    """(training, validation) sample indices: a prompt is held out when the hash of its id falls below ``share``.

    By id, not by position, so the split survives a resume, another world
    size and a rerun of tokenize that reorders samples. Every answer of one
    prompt (``ID``, ``ID#j``) lands on the same side: a validation answer whose
    sibling was trained on would measure memory, not generalisation.
    """
    cut = share * 2**32  # crc32 is uniform over [0, 2**32); share 0 holds nothing out
    held = {i for i, sid in enumerate(ids) if zlib.crc32(_SAMPLE_SUFFIX.sub("", sid).encode("utf-8")) < cut}
    return [i for i in range(len(ids)) if i not in held], sorted(held)


def validate(objective: TTTLoss, draw: Any, batches: list[list[int]], max_len: int, cuda: bool) -> dict[str, Any]:
    """Loss and per-position accuracy of the draft on held-out training-distribution samples (no gradients).

    The same objective and accuracy definition as the training batches, so
    the two compare directly: the gap between them is fit, while the gap
    between this and ``evaluate``'s held-out next-token accuracy is the shift
    between the training distribution and the evaluation prompts.
    """
    was_training = objective.training
    objective.eval()
    loss_sum = 0.0
    correct = counted = None
    with torch.no_grad():
        for idx in batches:
            batch = draw(idx, max_len)
            if not cuda:
                batch["hidden"] = batch["hidden"].float()
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=cuda):
                loss, c, k = objective(batch["input_ids"], batch["loss_mask"], batch["valid"], batch["hidden"])
            loss_sum += float(loss) * float(k[0])
            correct = c if correct is None else correct + c
            counted = k if counted is None else counted + k
    objective.train(was_training)
    assert correct is not None and counted is not None
    return {"loss": round(loss_sum / max(float(counted[0]), 1.0), 6),
            "acc": [round(a, 4) for a in (correct / counted.clamp(min=1)).tolist()],
            "positions": int(counted[0])}


def _drop_lines_after(path: Path, step: int) -> None:
    """Keep only the JSONL records of steps up to ``step`` (what the checkpoint being resumed had seen)."""
    lines = []
    if step and path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() and json.loads(line)["step"] <= step:
                lines.append(line)
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")


def run_train(args: Any) -> int:
    """Run the stage; returns the exit code (0 done, 143 stopped by SIGTERM)."""
    from pipeline import model_io

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
    d2t, t2d = load_vocab_map(args.vocab_map)
    data = open_training_data(args, device)
    lm_head = data.lm_head
    draft = build_draft(data.target_config, data.embed, lm_head, d2t, t2d, aux_layers=data.aux_layers, seed=args.seed)
    if int(t2d.numel()) != data.vocab_size:
        raise StageError(f"{args.vocab_map}: t2d covers {t2d.numel()} target tokens but the target has "
                         f"{data.vocab_size}\n  fix: rebuild the vocab map for this target")
    draft.to(device)
    objective = TTTLoss(draft, lm_head.to(device, torch.float32), args.ttt_steps, args.ttt_decay).to(device)
    model: nn.Module = objective
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel as DDP

        model = DDP(objective, device_ids=[local_rank] if device.startswith("cuda") else None)
    params = [p for p in draft.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr, betas=(0.9, 0.95), weight_decay=args.weight_decay)
    lengths = data.lengths
    train_idx, val_idx = split_validation(data.ids, args.val_share)
    n = len(train_idx)
    accum = max(1, args.grad_accum)
    plan = [(e, [[train_idx[j] for j in b] for b in batches])
            for e, batches in plan_steps([lengths[i] for i in train_idx], args.max_len, args.epochs, args.seed,
                                         world * accum, args.batch_size, args.batch_tokens,
                                         min_steps=args.max_steps or 0)]
    val_batches = [[val_idx[j] for j in b] for _e, bs in plan_steps([lengths[i] for i in val_idx], args.max_len, 1,
                                                                     args.seed, 1, args.batch_size, args.batch_tokens)
                   for b in bs] if val_idx else []
    if args.val_share > 0 and is_main:
        log(f"train: validation: {len(val_idx)} of {len(lengths)} samples held out by id hash "
            f"(--val-share {args.val_share}), scored at every epoch's end -> {VALIDATION}")
    if not plan:
        raise StageError(f"{data.source}: {n} samples make no full step of {world * accum} batch(es)\n"
                         "  fix: use more samples, or lower --batch-size/--batch-tokens/--grad-accum/--val-share")
    total = args.max_steps or len(plan)
    plan = plan[:total]
    # Cumulative training tokens (all ranks) after each step: the learning curve's x axis.
    tokens_after = []
    acc_tokens = 0
    for _e, batches in plan:
        acc_tokens += sum(min(lengths[i], args.max_len) for b in batches for i in b)
        tokens_after.append(acc_tokens)
    epoch_ends = {i + 1 for i in range(len(plan)) if i + 1 == len(plan) or plan[i + 1][0] != plan[i][0]}
    warmup = args.warmup_steps if args.warmup_steps is not None else max(1, int(args.warmup_ratio * total))
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
        _drop_lines_after(metrics_path, step)
        if val_batches:
            _drop_lines_after(out / VALIDATION, step)
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
            "epoch": plan[at - 1][0] if at else 0,
            "tokens_seen": tokens_after[at - 1] if at else 0,
            "total_steps": total,
            "draft_config": draft.config.to_dict(),
            "extraction": data.source,
            "vocab_map": str(Path(args.vocab_map).resolve()),
        }
        buf = io.BytesIO()
        torch.save(state, buf)
        atomic_write_bytes(out / f"{CKPT_PREFIX}{at:07d}.pt", buf.getvalue())
        for old in sorted(out.glob(f"{CKPT_PREFIX}*.pt"), key=lambda p: int(p.stem[len(CKPT_PREFIX):]))[:-args.keep]:
            old.unlink(missing_ok=True)

    def save_epoch(at: int) -> None:
        """Weights only, kept for the learning curve (``evaluate --curve``)."""
        if not is_main:
            return
        epoch = plan[at - 1][0] + 1
        state = {"model": {k: v.detach().cpu() for k, v in draft.trainable_state_dict().items()},
                 "draft_config": draft.config.to_dict(), "step": at, "epoch": epoch,
                 "tokens_seen": tokens_after[at - 1]}
        buf = io.BytesIO()
        torch.save(state, buf)
        atomic_write_bytes(out / f"epoch-{epoch:03d}.pt", buf.getvalue())

    cuda = device.startswith("cuda")
    bar = progress(total, desc="train", unit="step", initial=step) if is_main else None
    t0 = time.monotonic()
    tokens_done = 0
    stopped = False
    mf = open(metrics_path, "a", encoding="utf-8") if is_main else None  # noqa: SIM115 - closed in finally
    try:
        while step < total:
            _epoch, batches = plan[step]
            mine = batches[rank * accum : (rank + 1) * accum]
            opt.zero_grad(set_to_none=True)
            loss_sum = torch.zeros((), device=device)
            correct = counted = None
            ntok = 0
            for j, idx in enumerate(mine):
                batch = data.batch(idx, args.max_len)
                if not cuda:
                    batch["hidden"] = batch["hidden"].float()
                sync = world == 1 or j == len(mine) - 1
                ctx = model.no_sync() if not sync and hasattr(model, "no_sync") else contextlib.nullcontext()
                with ctx:  # DDP all-reduces gradients only on the last micro-batch of a step
                    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=cuda):
                        loss, c, k = model(batch["input_ids"], batch["loss_mask"], batch["valid"], batch["hidden"])
                    (loss / len(mine)).backward()
                loss_sum += loss.detach()
                correct = c if correct is None else correct + c
                counted = k if counted is None else counted + k
                ntok += int(batch["valid"].sum())
            torch.nn.utils.clip_grad_norm_(params, args.clip)
            opt.step()
            sched.step()
            step += 1
            loss = loss_sum / len(mine)
            if world > 1:
                import torch.distributed as dist

                # Log the global batch's loss and accuracy, not rank 0's share.
                stats = torch.cat([torch.stack([loss, torch.tensor(float(ntok), device=loss.device)]), correct, counted])
                dist.all_reduce(stats)
                loss, ntok = stats[0] / world, int(stats[1])
                correct, counted = stats[2 : 2 + len(correct)], stats[2 + len(correct) :]
            tokens_done += ntok
            assert correct is not None and counted is not None
            if is_main and mf is not None and bar is not None:
                acc = (correct / counted.clamp(min=1)).tolist()
                rec = {"step": step, "epoch": plan[step - 1][0], "loss": round(float(loss), 6),
                       "acc": [round(a, 4) for a in acc], "lr": sched.get_last_lr()[0], "tokens": ntok,
                       "tokens_seen": tokens_after[step - 1], "tok_s": round(tokens_done / max(time.monotonic() - t0, 1e-9))}
                mf.write(json.dumps(rec) + "\n")
                mf.flush()
                el = time.monotonic() - t0
                bar.set_postfix_str(f"loss={float(loss):.4f} acc0={acc[0]:.3f} acc1={acc[1] if len(acc) > 1 else 0:.3f} "
                                    f"acc{len(acc) - 1}={acc[-1]:.3f} tok/s={tokens_done / max(el, 1e-9):,.0f}",
                                    refresh=False)
                bar.update(1)
            if step % args.save_every == 0 or step == total:
                save(step)
            if args.keep_epochs and step in epoch_ends and ((plan[step - 1][0] + 1) % args.keep_epochs == 0
                                                            or step == total):
                save_epoch(step)
            if is_main and val_batches and step in epoch_ends:
                v = validate(objective, data.batch, val_batches, args.max_len, cuda)
                rec = {"step": step, "epoch": plan[step - 1][0] + 1, "tokens_seen": tokens_after[step - 1], **v}
                with open(out / VALIDATION, "a", encoding="utf-8") as vf:
                    vf.write(json.dumps(rec) + "\n")
                log(f"train: validation after epoch {rec['epoch']}: loss {v['loss']:.4f}, per-position acc "
                    f"[{' '.join(f'{a:.3f}' for a in v['acc'])}] over {v['positions']} positions")
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
    p = make_parser("python -m pipeline.train", "Train an EAGLE-3 draft on extracted hidden states, or online "
                    "on the target's hidden states computed batch by batch.")
    p.add_argument("--data", default=None, help="extraction directory (pipeline.extract --out)")
    p.add_argument("--target", default=None, metavar="MODEL",
                   help="online instead of --data: this target computes each batch's hidden states (needs --prepared)")
    p.add_argument("--prepared", default=None, metavar="DIR",
                   help="with --target: the tokenized dataset (pipeline.tokenize_data --output)")
    p.add_argument("--vocab-map", required=True, help="safetensors with d2t and t2d (vocab stage)")
    p.add_argument("--out", required=True, help="checkpoint directory")
    p.add_argument("--ttt-steps", type=int, default=7, help="training-time-test unroll length")
    p.add_argument("--ttt-decay", type=float, default=0.8, help="weight of step i is decay**i")
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--warmup-steps", type=int, default=None, help="default: --warmup-ratio of the steps")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=None, help="total optimizer steps (overrides --epochs)")
    p.add_argument("--batch-size", type=int, default=8, help="samples per batch (when --batch-tokens is not given)")
    p.add_argument("--batch-tokens", type=int, default=None,
                   help="length-bucketed batches of at most this many padded tokens (instead of --batch-size)")
    p.add_argument("--grad-accum", type=int, default=1, help="batches per rank per optimizer step")
    p.add_argument("--warmup-ratio", type=float, default=0.03, help="warmup as a share of the steps")
    p.add_argument("--keep-epochs", type=int, default=0, metavar="EVERY",
                   help="also keep epoch-NNN.pt weights every EVERY epochs and at the end (learning curve); 0: off")
    p.add_argument("--data-on-device", choices=["auto", "yes", "no"], default="auto",
                   help="hold all hidden states on the training device (auto: when they fit)")
    p.add_argument("--max-len", type=int, default=2048, help="truncate samples to this many tokens")
    p.add_argument("--val-share", type=float, default=0.0, metavar="F",
                   help="hold out this share of samples (by id hash) and score them at every epoch's end; 0: off")
    p.add_argument("--clip", type=float, default=0.5, help="gradient-norm clip")
    p.add_argument("--save-every", type=int, default=500, help="checkpoint every N steps")
    p.add_argument("--keep", type=int, default=2, help="checkpoints to keep")
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in --out")
    p.add_argument("--stop-after-steps", type=int, default=None,
                   help="checkpoint and stop at this step without changing the schedule (preemption drills)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto")
    return p


def _check_args(parser: Any, args: Any) -> Any:
    """Exactly one data source (``--data``, or ``--target`` with ``--prepared``) and a share below 1, else exit 2."""
    if not 0.0 <= args.val_share < 1.0:
        parser.error(f"--val-share {args.val_share}: must be at least 0 and below 1 (0.01 holds out 1% of samples)")
    if args.data and (args.target or args.prepared):
        parser.error("--data (an extraction) and --target/--prepared (online) are two sources; pass one")
    if not args.data and not (args.target and args.prepared):
        parser.error("pass --data EXTRACT_DIR, or --target MODEL with --prepared TOKENIZED_DIR to train online")
    return args


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: ``python -m pipeline.train``."""
    parser = build_parser()
    return run_stage(parser, lambda args: run_train(_check_args(parser, args)), argv)


if __name__ == "__main__":
    sys.exit(main())
