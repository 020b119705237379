"""A torchrun job whose ranks log every step and can fail in the ways a real job fails.

    torchrun --standalone --nproc-per-node N bench/multi_gpu/ranks.py \
        --steps 200 [--fail kill|oom|hang --fail-rank K --fail-step S] [--device cuda|cpu]

Every rank holds memory on its own GPU, all-reduces a tensor each step and prints
one line per step (a chatty multi-rank job, as NCCL_DEBUG=INFO or per-rank
logging makes it). The failures are real, not printed:

- ``kill``: rank K sends itself SIGKILL at step S (what the OOM killer or an
  operator's ``kill -9`` does); torchrun then tears the other ranks down.
- ``oom``: rank K allocates 8 GiB blocks until CUDA refuses, and dies of the
  uncaught ``torch.OutOfMemoryError``; the others block in the next all-reduce
  until the process group's timeout (``--timeout``) aborts them.
- ``hang``: rank K stops calling collectives but stays alive; the others wait in
  the all-reduce with every process alive (a hung collective), until the
  supervisor's policy stops the stage.
"""

from __future__ import annotations

import argparse
import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--step-s", type=float, default=0.05, help="sleep per step besides the all-reduce")
    ap.add_argument("--fail", choices=("none", "kill", "oom", "hang"), default="none")
    ap.add_argument("--fail-rank", type=int, default=1)
    ap.add_argument("--fail-step", type=int, default=50)
    ap.add_argument("--hold-gib", type=float, default=4.0, help="memory each rank holds on its GPU")
    ap.add_argument("--timeout", type=float, default=120.0, help="process-group timeout, seconds")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    args = ap.parse_args()

    rank = int(os.environ["RANK"])
    local = int(os.environ["LOCAL_RANK"])
    world = int(os.environ["WORLD_SIZE"])
    if args.device == "cuda":
        torch.cuda.set_device(local)
        dev = torch.device("cuda", local)
        backend = "nccl"
    else:
        dev = torch.device("cpu")
        backend = "gloo"
    timeout = datetime.timedelta(seconds=args.timeout)
    if args.fail == "hang":
        # The others must still be alive and waiting when the supervisor acts.
        timeout = datetime.timedelta(hours=2)
    dist.init_process_group(backend, timeout=timeout)
    held = None
    if args.device == "cuda" and args.hold_gib > 0:
        held = torch.empty(int(args.hold_gib * 2**30), dtype=torch.uint8, device=dev)
    x = torch.ones(1 << 20, device=dev)
    print(f"[rank {rank}/{world}] local_rank {local} on {dev} ({backend}), "
          f"holding {args.hold_gib if held is not None else 0:.1f} GiB", flush=True)
    t0 = time.monotonic()
    for step in range(1, args.steps + 1):
        if rank == args.fail_rank and step == args.fail_step:
            if args.fail == "kill":
                print(f"[rank {rank}] step {step}: about to be killed", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
            elif args.fail == "oom":
                blocks = []
                while True:  # raises torch.OutOfMemoryError, uncaught: the rank dies of it
                    blocks.append(torch.empty(8 * 2**30, dtype=torch.uint8, device=dev))
            elif args.fail == "hang":
                print(f"[rank {rank}] step {step}: stops taking part in collectives", flush=True)
                while True:
                    time.sleep(1)
        dist.all_reduce(x)
        x.div_(world)
        if args.step_s:
            time.sleep(args.step_s)
        rate = step / max(time.monotonic() - t0, 1e-9)
        print(f"[rank {rank}] step {step}/{args.steps} loss {1.0 / step:.4f} {rate:.1f} it/s", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    print(f"[rank {rank}] done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
