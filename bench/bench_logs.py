"""Benchmark the log monitor: catch-up speed, following latency, memory.

    .venv/bin/python bench/bench_logs.py [--lines 2000000] [--rss-gb 2] [--latency-n 50]

1. Catch-up: a generated 2,000,000-line mixed log (vLLM worker prefixes,
   tqdm bars with \\r updates, trainer dicts, throughput lines, rare fatal
   lines) is classified by StageLogMonitor in a child process pinned to one
   core. Beside it, on the same file in the same run: ``grep -E`` over the
   fatal rules' literals, ``grep -P`` over the fatal rules' real regexes, and
   (on a slice) the naive Python loop of ``re.search`` over an alternation.
2. Following: a writer process appends noise plus a fatal line carrying its
   write time; the monitor (LogWatcher wake-ups + poll) reports the time from
   write to event. Median and p95 over ``--latency-n`` fatal lines.
3. Memory: peak RSS of a child that catches up on, then follows, a log of
   ``--rss-gb`` GiB.

Prints a markdown table. Results for this repository are in docs/logs.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from eagle3tui.logs.rules import load_builtin_rules

FATAL_LINES = [
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.25 GiB",
    "[rank3]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7753, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600061 milliseconds before timing out.",
    "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge",
    "OSError: [Errno 28] No space left on device: '/data/hidden/shard_0031.safetensors'",
]


def generate(path: Path, n_lines: int, seed: int = 1) -> None:
    """A mixed log: 25% tqdm, ~74% INFO/access/trainer/metric lines, 0.5% warnings, rare fatal."""
    rnd = random.Random(seed)
    # Common lines: what a healthy run prints over and over.
    common = [
        "(Worker_TP{w} pid=26841{w}) INFO 02-22 00:33:{s:02d} [compressed_tensors_moe.py:199] Using CompressedTensorsWNA16MarlinMoEMethod",
        "(VllmWorker rank={w} pid=1067{w}) DEBUG 02-22 00:34:{s:02d} [shm_broadcast.py:400] No available shared memory broadcast block found in 60 second.",
        "INFO 02-22 00:35:{s:02d} [loggers.py:116] Engine 000: Avg prompt throughput: 1234.5 tokens/s, Avg generation throughput: 456.7 tokens/s, Running: 12 reqs, Waiting: 0 reqs, GPU KV cache usage: 5.0%",
        'INFO:     127.0.0.1:5{s:04d} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        "{{'loss': 1.{s:04d}, 'grad_norm': 0.53, 'learning_rate': 2e-05, 'epoch': 0.{s}}}",
        "[rank{w}]: step {s}/1000 loss=1.{s:03d} lr=2e-05 tokens/s=5123.4",
    ]
    # Rare lines: warnings and one-off info, about 0.5% of the log.
    rare = [
        "[rank{w}]:[W1206 18:44:12.7 ProcessGroupNCCL.cpp:4115] [PG ID 0 PG GUID 0 Rank {w}] using GPU {w} to perform barrier as devices used by this process are currently unknown.",
        "(Worker_TP{w} pid=26841{w}) INFO 02-22 00:36:{s:02d} [gpu_model_runner.py:1892] Model loading took 74.2 GiB and 1771.2 seconds",
        "/usr/lib/python3/site-packages/torch/utils/checkpoint.py:90: UserWarning: None of the inputs have requires_grad=True. Gradients will be None",
        "ERROR 02-22 00:33:33 [gpt_oss_triton_kernels_moe.py:60] Failed to import Triton kernels. Please make sure your triton version is compatible. Error: cannot import name 'SparseMatrix' from 'triton_kernels.tensor'",
    ]
    buf: list[str] = []
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n_lines):
            r = rnd.random()
            if r < 0.25:
                n = (i // 97) % 65
                # One physical line with two \r updates, as tqdm writes.
                seg = "(Worker_TP0 pid=268417) Loading safetensors checkpoint shards: {p:3d}% Completed | {n}/64 [{m:02d}:{s:02d}<27:17, 27.30s/it]"
                buf.append(
                    "\r".join(seg.format(p=(n + d) * 100 // 64, n=n + d, m=(n + d) // 2, s=(n * 29) % 60) for d in (0, 1))
                )
            elif r < 0.25 + 0.00005:
                buf.append(rnd.choice(FATAL_LINES))
            elif r < 0.255:
                buf.append(rnd.choice(rare).format(w=i % 8, s=i % 60))
            else:
                buf.append(rnd.choice(common).format(w=i % 8, s=i % 60))
            if len(buf) >= 10000:
                f.write("\n".join(buf) + "\n")
                buf = []
        if buf:
            f.write("\n".join(buf) + "\n")


CATCHUP_CHILD = textwrap.dedent(
    """\
    import json, os, resource, sys, time
    os.sched_setaffinity(0, {int(sys.argv[2])})
    from eagle3tui.logs.monitor import StageLogMonitor
    from eagle3tui.logs.rules import build_ruleset
    rules = build_ruleset()
    t, c = time.perf_counter(), time.process_time()
    m = StageLogMonitor(sys.argv[1], rules=rules, estimate_s=1320)
    ev = m.poll()
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    print(json.dumps({"lines": m.line_no, "wall": wall, "cpu": cpu, "fatal": m.counts["fatal"],
                      "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "accelerated": rules.accelerated}))
    """
)


def run_catchup(path: Path, cpu: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CATCHUP_CHILD, str(path), str(cpu)],
        capture_output=True, text=True, check=True, cwd=ROOT,
    ).stdout
    return json.loads(out)


def run_grep(args: list[str], path: Path, cpu: int) -> tuple[float, float, int] | None:
    if shutil.which(args[0]) is None:
        return None
    t = time.perf_counter()
    before = os.times()
    p = subprocess.run(
        ["taskset", "-c", str(cpu), *args, str(path)] if shutil.which("taskset") else [*args, str(path)],
        capture_output=True, text=True, check=False,
    )
    after = os.times()
    wall = time.perf_counter() - t
    if p.returncode not in (0, 1):
        return None
    cpu_s = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, cpu_s, int(p.stdout.strip() or 0)


def naive_python(path: Path, fatal_patterns: list[str], n_lines: int) -> tuple[float, int]:
    rx = re.compile("|".join(f"(?:{p})" for p in fatal_patterns))
    t = time.process_time()
    hits = 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for i, line in enumerate(f):
            if i >= n_lines:
                break
            if rx.search(line):
                hits += 1
    return time.process_time() - t, hits


WRITER_CHILD = textwrap.dedent(
    """\
    import random, sys, time
    path, n = sys.argv[1], int(sys.argv[2])
    rnd = random.Random(7)
    with open(path, "a", buffering=1) as f:
        for i in range(n):
            for _ in range(rnd.randint(1, 20)):
                f.write("(Worker_TP0 pid=1) INFO 02-22 00:33:37 [x.py:1] step ok\\n")
            time.sleep(rnd.uniform(0.02, 0.08))
            f.write(f"(Worker_TP0 pid=1) torch.OutOfMemoryError: CUDA out of memory. t={time.time():.6f}\\n")
            f.flush()
            time.sleep(rnd.uniform(0.02, 0.08))
    """
)


def run_latency(tmp: Path, n: int) -> list[float]:
    from eagle3tui.logs.follower import LogWatcher
    from eagle3tui.logs.monitor import StageLogMonitor

    log = tmp / "follow.log"
    log.write_text("(Worker_TP0 pid=1) INFO start\n")
    mon = StageLogMonitor(log)
    mon.poll()
    lat: list[float] = []
    with LogWatcher([log], poll_interval=0.05) as w:
        proc = subprocess.Popen([sys.executable, "-c", WRITER_CHILD, str(log), str(n)])
        deadline = time.monotonic() + 60 + n
        while len(lat) < n and time.monotonic() < deadline:
            w.wait(0.5)
            for ev in mon.poll():
                if ev.kind == "fatal" and "t=" in ev.text:
                    lat.append(time.time() - float(ev.text.rsplit("t=", 1)[1]))
        proc.wait()
    return lat


RSS_CHILD = textwrap.dedent(
    """\
    import json, resource, sys, time
    from eagle3tui.logs.monitor import StageLogMonitor
    m = StageLogMonitor(sys.argv[1])
    t = time.perf_counter()
    m.poll()
    catchup = time.perf_counter() - t
    rss_catchup = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    # Then follow: keep appending and polling.
    with open(sys.argv[1], "a") as f:
        for i in range(200):
            f.write("(Worker_TP0 pid=1) Loading safetensors checkpoint shards:  50% Completed | 32/64 [15:00<15:00, 28.00s/it]\\n" * 500)
            f.flush()
            m.poll()
    print(json.dumps({"lines": m.line_no, "catchup_s": catchup, "rss_catchup_mb": rss_catchup,
                      "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
    """
)


def run_rss(tmp: Path, gib: float) -> dict:
    big = tmp / "big.log"
    block_lines = []
    for i in range(4000):
        block_lines.append(
            f"(Worker_TP{i % 8} pid=26841{i % 8}) INFO 02-22 00:33:37 [compressed_tensors_moe.py:199] Using Marlin {i}"
        )
    block = ("\n".join(block_lines) + "\n").encode()
    bar = b"".join(
        b"\r(Worker_TP0 pid=1) Loading safetensors checkpoint shards:  %3d%% Completed | %d/64 [15:00<15:00, 28.00s/it]"
        % (k * 100 // 64, k)
        for k in range(64)
    ) + b"\n"
    target = int(gib * (1 << 30))
    with open(big, "wb") as f:
        written = 0
        while written < target:
            f.write(block)
            f.write(bar)
            written += len(block) + len(bar)
    out = subprocess.run(
        [sys.executable, "-c", RSS_CHILD, str(big)], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    res = json.loads(out)
    res["size_gib"] = big.stat().st_size / (1 << 30)
    big.unlink()
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=2_000_000)
    ap.add_argument("--rss-gb", type=float, default=2.0, help="size of the log for the memory test (GiB)")
    ap.add_argument("--latency-n", type=int, default=50)
    ap.add_argument("--cpu", type=int, default=0, help="core to pin to")
    ap.add_argument("--dir", help="directory for temporary logs (default: system temp)")
    args = ap.parse_args()

    fatal_rules = [r for r in load_builtin_rules() if r.kind == "fatal"]
    keywords = sorted({k for r in fatal_rules for k in r.keywords})
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        tmp = Path(d)
        log = tmp / "mixed.log"
        t = time.perf_counter()
        generate(log, args.lines)
        size_mb = log.stat().st_size / 1e6
        print(f"generated {args.lines} lines, {size_mb:.0f} MB in {time.perf_counter() - t:.1f}s", file=sys.stderr)

        res = run_catchup(log, args.cpu)
        rows.append(
            (
                f"catch-up, StageLogMonitor ({res['lines']:,} lines, {size_mb:.0f} MB, 1 core)",
                f"{res['lines'] / res['wall']:,.0f} lines/s wall; {res['lines'] / res['cpu']:,.0f} lines/s CPU",
                f"{res['fatal']} fatal events, peak RSS {res['rss_mb']:.0f} MB, Aho-Corasick prefilter: {res['accelerated']}",
            )
        )
        ere = "|".join(re.escape(k) for k in keywords)
        g = run_grep(["grep", "-c", "-E", ere], log, args.cpu)
        if g:
            rows.append((f"`grep -E -c` fatal literals ({len(keywords)} alternatives)", f"{args.lines / g[0]:,.0f} lines/s wall; {args.lines / max(g[1], 1e-9):,.0f} lines/s CPU", f"{g[2]} matching lines"))
        pcre = "|".join(f"(?:{r.pattern})" for r in fatal_rules)
        g = run_grep(["grep", "-c", "-P", pcre], log, args.cpu)
        if g:
            rows.append(("`grep -P -c` fatal regexes (same patterns as the rules)", f"{args.lines / g[0]:,.0f} lines/s wall; {args.lines / max(g[1], 1e-9):,.0f} lines/s CPU", f"{g[2]} matching lines"))
        n_naive = min(args.lines, 100_000)
        cpu_s, hits = naive_python(log, [r.pattern for r in fatal_rules], n_naive)
        rows.append((f"naive Python `re.search` over the alternation (first {n_naive:,} lines)", f"{n_naive / cpu_s:,.0f} lines/s CPU", f"{hits} hits"))
        log.unlink()

        lat = run_latency(tmp, args.latency_n)
        if lat:
            lat_ms = sorted(x * 1000 for x in lat)
            p95 = lat_ms[min(len(lat_ms) - 1, int(len(lat_ms) * 0.95))]
            rows.append((f"following latency, fatal line appended -> event ({len(lat)} samples)", f"median {statistics.median(lat_ms):.1f} ms, p95 {p95:.1f} ms", "inotify (watchdog) wake-up + poll"))

        free_gb = shutil.disk_usage(tmp).free / 1e9
        gib = args.rss_gb
        if free_gb < gib * 1.1 + 1:
            gib = max(0.25, free_gb / 2)
            print(f"only {free_gb:.1f} GB free: memory test uses {gib:.2f} GiB", file=sys.stderr)
        r = run_rss(tmp, gib)
        rows.append((f"peak RSS, catch-up on a {r['size_gib']:.2f} GiB log then following", f"{r['rss_mb']:.0f} MB", f"{r['lines']:,} lines; catch-up {r['catchup_s']:.1f}s; RSS after catch-up {r['rss_catchup_mb']:.0f} MB"))

    print("| measurement | result | notes |")
    print("| --- | --- | --- |")
    for a, b, c in rows:
        print(f"| {a} | {b} | {c} |")
    print(f"\nmachine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the end; python {sys.version.split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
