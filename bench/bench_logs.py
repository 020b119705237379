"""Benchmark the log monitor: catch-up speed, following latency, memory.

    .venv/bin/python bench/bench_logs.py [--lines 2000001] [--rss-gb 2] [--latency-n 50]
    .venv/bin/python bench/bench_logs.py --only catchup [--reference DIR]
    .venv/bin/python bench/bench_logs.py --only scan [--reference DIR]

1. Catch-up (issue 12): a generated progress-heavy log of 2,000,001 lines
   (a third tqdm updates, in bursts of one bar; a sixth vLLM throughput
   lines; a sixth trainer dicts; a sixth warnings of four kinds; a sixth
   other INFO lines, access-log lines among them; one OOM as the last line)
   is classified by ``eagle3tui classify FILE`` in a child process, timed
   from its start to its exit (Python's start included). Beside it, on the
   same file in the same run: ``grep -cE`` over the fatal rules' literals.
   With ``--reference DIR`` (a checkout of an earlier eagle3tui), its
   ``classify`` runs on the same file too, as many times, each run right
   after one of this tree's (medians of each, and their ratio), and the outputs
   are compared: the same events, or the difference is printed.
   The block scan (``--only scan``): the rule prefilter alone
   (``RuleSet.scan``, what following runs on each block) over 1 MiB blocks of
   the first 300,001 lines of that log and of the standard library's Python
   sources (prose-like text with few log words), in a child process; the
   regex-alternation fallback beside it, and with ``--reference DIR`` that
   checkout's scan on the same blocks.
2. Following: a writer process appends noise plus a fatal line carrying its
   write time; the monitor (LogWatcher wake-ups + poll) reports the time from
   write to event. Median and p95 over ``--latency-n`` fatal lines.
3. Memory: peak RSS of a child that catches up on, then follows, a log of
   ``--rss-gb`` GiB.

Prints a markdown table. Results for this repository are in the README's Benchmarks
table (runs against earlier trees: docs/history/benchmarks.md).
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


def generate(path: Path, n_lines: int = 2_000_001, seed: int = 1) -> dict[str, int]:
    """The progress-heavy log of issue 12; returns how many lines of each sort."""
    rnd = random.Random(seed)
    warnings = [
        "WARNING 05-06 10:{m:02d}:{s:02d} [scheduler.py:1560] Sequence group cmpl-{i} is preempted by "
        "PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can affect the end-to-end "
        "performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. "
        "total_num_cumulative_preemption={i}",
        "/usr/lib/python3/site-packages/torch/utils/checkpoint.py:90: UserWarning: None of the inputs have "
        "requires_grad=True. Gradients will be None",
        "[rank{w}]:[W506 10:{m:02d}:{s:02d}.715298746 ProcessGroupNCCL.cpp:4115] [PG ID 0 PG GUID 0 Rank {w}] using "
        "GPU {w} to perform barrier as devices used by this process are currently unknown.",
        "2025-05-06 10:{m:02d}:{s:02d},123 - WARNING - transformers.modeling_utils - Some weights of the model "
        "checkpoint were not used when initializing",
    ]
    others = [
        "(Worker_TP{w} pid=26841{w}) INFO 05-06 10:{m:02d}:{s:02d} [gpu_model_runner.py:1892] Model loading took "
        "74.2 GiB and 17.2 seconds",
        'INFO:     127.0.0.1:5{s:04d} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        "[2025-05-06 10:{m:02d}:{s:02d}] INFO: saving checkpoint to /ckpt/step_{i}",
    ]
    counts = {"tqdm": 0, "throughput": 0, "trainer": 0, "warning": 0, "other": 0}
    burst = 20  # updates of one bar in a row, as a redirected tqdm prints them
    p_burst = 1 / (2 * burst + 1)  # a third of the lines are tqdm updates
    with open(path, "w", encoding="utf-8") as f:
        buf: list[str] = []
        i = 0
        while i < n_lines - 1:
            if rnd.random() < p_burst:
                total = 1000
                start = rnd.randrange(0, total - burst)
                for d in range(min(burst, n_lines - 1 - i)):
                    k = start + d
                    pct = k * 100 // total
                    buf.append(
                        f"Processed prompts: {pct:3d}%|{'█' * (pct // 10):<10}| {k}/{total} [00:{k % 60:02d}<00:"
                        f"{(total - k) % 60:02d}, {40 + d * 0.5:.2f}it/s, est. speed input: 1520.3 toks/s, "
                        f"output: 812.4 toks/s]"
                    )
                    i += 1
                    counts["tqdm"] += 1
                continue
            r = rnd.random()
            m, s = i // 60 % 60, i % 60
            if r < 0.25:
                buf.append(
                    f"INFO 05-06 10:{m:02d}:{s:02d} [loggers.py:116] Engine 000: Avg prompt throughput: "
                    f"{rnd.uniform(0, 3000):.1f} tokens/s, Avg generation throughput: {rnd.uniform(0, 900):.1f} tokens/s, "
                    f"Running: {i % 40} reqs, Waiting: {i % 7} reqs, GPU KV cache usage: {i % 100:.1f}%, "
                    "Prefix cache hit rate: 12.5%"
                )
                counts["throughput"] += 1
            elif r < 0.5:
                buf.append(
                    f"{{'loss': {rnd.uniform(0.5, 3):.4f}, 'grad_norm': {rnd.uniform(0.1, 2):.3f}, "
                    f"'learning_rate': 1.9e-05, 'epoch': {i / n_lines:.2f}}}"
                )
                counts["trainer"] += 1
            elif r < 0.75:
                buf.append(rnd.choice(warnings).format(i=i, w=i % 8, m=m, s=s))
                counts["warning"] += 1
            else:
                buf.append(rnd.choice(others).format(i=i, w=i % 8, m=m, s=s))
                counts["other"] += 1
            i += 1
            if len(buf) >= 10000:
                f.write("\n".join(buf) + "\n")
                buf = []
        buf.append(FATAL_LINES[0])
        counts["fatal"] = 1
        f.write("\n".join(buf) + "\n")
    return counts


def run_classify(root: Path, path: Path, cpu: int) -> tuple[float, float, str]:
    """``python -m eagle3tui classify PATH`` with ``root``'s code, pinned to one core.

    Wall time from the start of the child to its exit (the interpreter's
    start and the imports included); CPU time of the child; its output.
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH", "")]))}
    cmd = [sys.executable, "-m", "eagle3tui", "classify", str(path)]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", str(cpu), *cmd]
    t = time.perf_counter()
    before = os.times()
    p = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=root, env=env)
    after = os.times()
    wall = time.perf_counter() - t
    if p.returncode not in (0, 1):
        raise RuntimeError(f"classify failed ({p.returncode}): {p.stderr[-2000:]}")
    cpu_s = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, cpu_s, p.stdout


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


_SCAN_CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
from eagle3tui.logs import rules
if sys.argv[3] == "regex":
    rules._ahocorasick = None
data = open(sys.argv[2], "rb").read(int(sys.argv[4]))
rs = rules.RuleSet(rules.build_ruleset().rules)
blocks = [data[i:i + (1 << 20)] for i in range(0, len(data), 1 << 20)]
best, n = 9e9, 0
for _ in range(3):
    t = time.perf_counter()
    n = sum(len(rs.scan(b)) for b in blocks)
    best = min(best, time.perf_counter() - t)
print(best, n)
"""


def run_scan(root: Path, path: Path, how: str, cpu: int, limit: int) -> tuple[float, int]:
    """Seconds (best of 3) for ``root``'s ``RuleSet.scan`` over ``limit`` bytes of ``path`` in 1 MiB blocks,
    and the candidate lines found."""
    argv = [sys.executable, "-c", _SCAN_CHILD, str(root), str(path), how, str(limit)]
    if shutil.which("taskset"):
        argv = ["taskset", "-c", str(cpu), *argv]
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]), int(out[1])


def stdlib_text(path: Path, size: int = 40_000_000) -> int:
    """Write the standard library's Python sources (up to ``size`` bytes) to ``path``; returns lines."""
    lib = Path(os.__file__).parent
    with open(path, "wb") as f:
        left = size
        for src in sorted(lib.rglob("*.py")):
            if left <= 0:
                break
            chunk = src.read_bytes()[:left]
            f.write(chunk)
            left -= len(chunk)
    with open(path, "rb") as f:
        return sum(1 for _ in f)


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
    ap.add_argument("--lines", type=int, default=2_000_001)
    ap.add_argument("--rss-gb", type=float, default=2.0, help="size of the log for the memory test (GiB)")
    ap.add_argument("--latency-n", type=int, default=50)
    ap.add_argument("--cpu", type=int, default=0, help="core to pin to")
    ap.add_argument("--dir", help="directory for temporary logs (default: system temp)")
    ap.add_argument("--only", choices=["catchup", "scan", "latency", "rss"], action="append",
                    help="run only these parts (repeatable); default: all")
    ap.add_argument("--reference", metavar="DIR",
                    help="an earlier eagle3tui checkout: its classify runs on the same log and the outputs are compared")
    ap.add_argument("--repeat", type=int, default=5, help="classify runs (and grep's); medians are reported")
    args = ap.parse_args()
    parts = set(args.only or ["catchup", "scan", "latency", "rss"])

    fatal_rules = [r for r in load_builtin_rules() if r.kind == "fatal"]
    keywords = sorted({k for r in fatal_rules for k in r.keywords})
    rows: list[tuple[str, str, str]] = []
    same = True
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        tmp = Path(d)
        if "catchup" in parts:
            log = tmp / "progress-heavy.log"
            t = time.perf_counter()
            counts = generate(log, args.lines)
            size_mb = log.stat().st_size / 1e6
            print(f"generated {args.lines} lines ({counts}), {size_mb:.0f} MB in {time.perf_counter() - t:.1f}s",
                  file=sys.stderr)
            # With a reference, its runs alternate with this tree's, and both take the median of
            # the same number: a neighbour's burst of load then falls on either side alike.
            ref = Path(args.reference).resolve() if args.reference else None
            ere = "|".join(re.escape(k) for k in keywords)
            # grep runs as many times as classify, each right after one of its runs: the
            # figures are medians with min and max (a best-of hides a loaded machine).
            runs, ref_runs, greps = [], [], []
            for _ in range(max(1, args.repeat)):
                runs.append(run_classify(ROOT, log, args.cpu))
                g = run_grep(["grep", "-c", "-E", ere], log, args.cpu)
                if g:
                    greps.append(g)
                if ref is not None:
                    ref_runs.append(run_classify(ref, log, args.cpu))
            walls = sorted(r[0] for r in runs)
            wall = statistics.median(walls)
            cpu_s = statistics.median(r[1] for r in runs)
            out = runs[0][2]
            summary = out.splitlines()[0].split(": ", 1)[-1] if out else "?"
            rows.append((
                f"`eagle3tui classify`, progress-heavy log ({args.lines:,} lines, {size_mb:.0f} MB, 1 core)",
                f"**{args.lines / wall:,.0f} lines/s wall, median** [{args.lines / walls[-1]:,.0f}–"
                f"{args.lines / walls[0]:,.0f}] ({wall:.2f} s, Python's start included); "
                f"{args.lines / cpu_s:,.0f} lines/s CPU",
                f"median of {len(runs)} (walls {', '.join(f'{r[0]:.2f}' for r in runs)} s); {summary}",
            ))
            if greps:
                gw = sorted(g[0] for g in greps)
                gc = statistics.median(g[1] for g in greps)
                rows.append((f"`grep -cE` fatal literals ({len(keywords)} alternatives), same file, same run",
                             f"{args.lines / statistics.median(gw):,.0f} lines/s wall, median "
                             f"[{args.lines / gw[-1]:,.0f}–{args.lines / gw[0]:,.0f}]; "
                             f"{args.lines / max(gc, 1e-9):,.0f} lines/s CPU",
                             f"{greps[0][2]} matching lines; {len(greps)} runs, alternating with classify; "
                             f"classify/grep wall {wall / statistics.median(gw):.1f}×"))
            if ref is not None:
                rwall = statistics.median(r[0] for r in ref_runs)
                rcpu = statistics.median(r[1] for r in ref_runs)
                rout = ref_runs[0][2]
                same = all(r[2].replace(str(log), "LOG") == out.replace(str(log), "LOG") for r in ref_runs)
                rows.append((f"`eagle3tui classify` of {ref.name} (reference), same file, same run",
                             f"{args.lines / rwall:,.0f} lines/s wall ({rwall:.2f} s); {args.lines / rcpu:,.0f} lines/s CPU; "
                             f"ratio this/reference {rwall / wall:.2f} wall, {rcpu / cpu_s:.2f} CPU",
                             f"median of {len(ref_runs)}, alternating with this tree's runs; "
                             + ("same output" if same else "OUTPUT DIFFERS (printed below)")))
                if not same:
                    import difflib
                    sys.stderr.writelines(difflib.unified_diff(rout.splitlines(True), out.splitlines(True),
                                                               "reference", "this checkout", n=1))
            log.unlink()

        if "scan" in parts:
            texts = []
            log = tmp / "progress-heavy-300k.log"
            generate(log, 300_001)
            texts.append(("progress-heavy log, 300,001 lines", log, 300_001))
            prose = tmp / "stdlib.txt"
            texts.append((f"Python's standard library sources", prose, stdlib_text(prose)))
            for name, path, n in texts:
                size = path.stat().st_size
                mb = size / 1e6
                secs, found = run_scan(ROOT, path, "automaton", args.cpu, size)
                rows.append((f"block scan, {name} ({mb:.0f} MB, 1 MiB blocks)",
                             f"**{mb / secs:,.0f} MB/s** ({secs:.3f} s)", f"{found:,} candidate lines; keyword automaton"))
                # The fallback is slow: its first 4 MiB, against the automaton's on the same bytes.
                head = 4 << 20
                rsecs, rfound = run_scan(ROOT, path, "regex", args.cpu, head)
                _asecs, afound = run_scan(ROOT, path, "automaton", args.cpu, head)
                rows.append(("block scan, its first 4 MiB, regex fallback (no ahocorasick-rs)",
                             f"{head / 1e6 / rsecs:,.1f} MB/s ({rsecs:.3f} s)",
                             "same lines" if rfound == afound else f"{rfound:,} lines, automaton {afound:,}: DIFFERS"))
                if args.reference:
                    ref = Path(args.reference).resolve()
                    fsecs, ffound = run_scan(ref, path, "automaton", args.cpu, size)
                    rows.append((f"block scan, same text, {ref.name} (reference)",
                                 f"{mb / fsecs:,.0f} MB/s ({fsecs:.3f} s)",
                                 "same lines" if ffound == found else f"{ffound:,} lines: DIFFERS"))
                path.unlink()

        if "latency" in parts:
            lat = run_latency(tmp, args.latency_n)
            if lat:
                lat_ms = sorted(x * 1000 for x in lat)
                p95 = lat_ms[min(len(lat_ms) - 1, int(len(lat_ms) * 0.95))]
                rows.append((f"following latency, fatal line appended -> event ({len(lat)} samples)",
                             f"median {statistics.median(lat_ms):.1f} ms, p95 {p95:.1f} ms",
                             "inotify (watchdog) wake-up + poll"))

        if "rss" in parts:
            free_gb = shutil.disk_usage(tmp).free / 1e9
            gib = args.rss_gb
            if free_gb < gib * 1.1 + 1:
                gib = max(0.25, free_gb / 2)
                print(f"only {free_gb:.1f} GB free: memory test uses {gib:.2f} GiB", file=sys.stderr)
            r = run_rss(tmp, gib)
            rows.append((f"peak RSS, catch-up on a {r['size_gib']:.2f} GiB log then following", f"{r['rss_mb']:.0f} MB",
                         f"{r['lines']:,} lines; catch-up {r['catchup_s']:.1f}s; RSS after catch-up {r['rss_catchup_mb']:.0f} MB"))

    print("| measurement | result | notes |")
    print("| --- | --- | --- |")
    for a, b, c in rows:
        print(f"| {a} | {b} | {c} |")
    print(f"\nmachine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the end; python {sys.version.split()[0]}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
