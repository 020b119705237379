"""Benchmark: does regenerate keep the llama.cpp server saturated, at what client cost?

1. Starts the real llama.cpp server (SmolLM2-135M GGUF, CPU) on a free loopback port.
2. ``python -m pipeline.regenerate`` on the prompts (default concurrency 64).
3. The server's own throughput comes from its own timings: llama.cpp prints
   ``llama_perf_context_print: total time = X ms`` per request, so the sum over
   the run is the time the server was busy. Busy time / wall time is how
   saturated regenerate kept it; completion tokens / busy time is what the
   server can do, to compare with regenerate's tokens/s.
4. The client's overhead: regenerate's CPU time during the run (``client_cpu_s``
   in its summary) and the whole process's CPU time including interpreter
   start-up (``getrusage(RUSAGE_CHILDREN)``), each as a share of wall time.
5. ``--baseline``: also time the same prompts sent one by one with a blocking
   ``http.client`` loop (noisy on a shared machine; off by default).

Usage: .venv/bin/python bench/bench_regenerate.py [--prompts 24] [--max-tokens 64] [--threads 2] [--baseline]
Prints a Markdown table (paste into docs/pipeline-data.md) and a JSON line.
"""

from __future__ import annotations

import argparse
import http.client
import json
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.regenerate import prompt_messages
from pipeline.serve import list_models, wait_ready


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_busy_ms(log: Path) -> list[float]:
    """Per-request busy time (ms) from llama.cpp's ``llama_perf_context_print: total time`` lines."""
    out = []
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("llama_perf_context_print:") and "total time" in line:
            out.append(float(line.split("=", 1)[1].split("ms", 1)[0]))
    return out


def baseline(port: int, model: str, prompts: list[dict], max_tokens: int) -> tuple[float, int]:
    """Sequential requests over one keep-alive connection: (wall seconds, completion tokens)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    tokens = 0
    t0 = time.monotonic()
    for rec in prompts:
        body = json.dumps({"model": model, "messages": prompt_messages(rec["conversations"]),
                           "max_tokens": max_tokens, "temperature": 0})
        conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = json.loads(resp.read())
        if resp.status != 200:
            raise RuntimeError(f"baseline request failed: {resp.status} {data}")
        tokens += int(data["usage"]["completion_tokens"])
    wall = time.monotonic() - t0
    conn.close()
    return wall, tokens


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=24)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2, help="llama.cpp CPU threads")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--baseline", action="store_true", help="also time sequential http.client requests")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-regen-"))
    prompts_path = work / "prompts.jsonl"
    subprocess.run([sys.executable, "-m", "pipeline.prepare", "-o", str(prompts_path), "--limit", str(args.prompts)],
                   cwd=ROOT, check=True, capture_output=True)
    prompts = [json.loads(line) for line in prompts_path.read_text().splitlines()]

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server_log = open(work / "server.log", "w")  # noqa: SIM115 - closed in the finally below
    server = subprocess.Popen([sys.executable, "-m", "pipeline.serve", "--model", "smollm2", "--port", str(port),
                               "--ctx", "2048", "--threads", str(args.threads)],
                              cwd=ROOT, stdout=server_log, stderr=subprocess.STDOUT)
    try:
        wait_ready(url, timeout=300)
        model = list_models(url)[0]
        # Warm-up: first request pays one-off allocation costs.
        baseline(port, model, prompts[:1], 8)
        base_wall, base_tokens = baseline(port, model, prompts, args.max_tokens) if args.baseline else (0.0, 0)
        server_log.flush()
        busy_before = len(server_busy_ms(work / "server.log"))

        out = work / "regen.jsonl"
        summary_path = work / "summary.json"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        r = subprocess.run(check=False, args=[sys.executable, "-m", "pipeline.regenerate", "-i", str(prompts_path), "-o", str(out),
                            "--server", url, "--concurrency", str(args.concurrency), "--max-tokens",
                            str(args.max_tokens), "--temperature", "0", "--summary", str(summary_path),
                            "--no-progress"], cwd=ROOT, capture_output=True, text=True)
        proc_wall = time.monotonic() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if r.returncode != 0:
            print(r.stderr, file=sys.stderr)
            return 1
        st = json.loads(summary_path.read_text())
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        server_log.close()

    busy = server_busy_ms(work / "server.log")[busy_before:]
    busy_s = sum(busy) / 1000.0
    proc_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    res = {
        "prompts": args.prompts,
        "max_tokens": args.max_tokens,
        "concurrency": args.concurrency,
        "server_requests_timed": len(busy),
        "server_busy_s": busy_s,
        "server_busy_pct": 100 * busy_s / st["wall_s"],
        "server_samples_per_s": len(busy) / busy_s if busy_s else 0.0,
        "server_tokens_per_s": st["completion_tokens"] / busy_s if busy_s else 0.0,
        "sequential_samples_per_s": args.prompts / base_wall if base_wall else None,
        "sequential_tokens_per_s": base_tokens / base_wall if base_wall else None,
        "regen_samples_per_s": st["done"] / st["wall_s"],
        "regen_tokens_per_s": st["completion_tokens"] / st["wall_s"],
        "regen_wall_s": st["wall_s"],
        "client_cpu_s": st["client_cpu_s"],
        "client_overhead_pct": 100 * st["client_cpu_s"] / st["wall_s"],
        "process_cpu_s": proc_cpu,
        "process_wall_s": proc_wall,
        "process_overhead_pct": 100 * proc_cpu / proc_wall,
        "baseline_tokens": base_tokens,
        "regen_tokens": st["completion_tokens"],
    }
    res["throughput_ratio"] = res["regen_tokens_per_s"] / res["server_tokens_per_s"] if busy_s else 0.0
    print("| measure | value |\n|---|---|")
    print(f"| server's own throughput (its timings, {len(busy)} requests) | {res['server_samples_per_s']:.3f} "
          f"samples/s, {res['server_tokens_per_s']:.2f} tok/s |")
    print(f"| server busy / regenerate wall | {busy_s:.1f} s / {res['regen_wall_s']:.1f} s = "
          f"{res['server_busy_pct']:.1f}% |")
    if base_wall:
        print(f"| sequential http.client loop | {res['sequential_samples_per_s']:.3f} samples/s, "
              f"{res['sequential_tokens_per_s']:.2f} tok/s |")
    print(f"| regenerate (concurrency {args.concurrency}) | {res['regen_samples_per_s']:.3f} samples/s, "
          f"{res['regen_tokens_per_s']:.2f} tok/s |")
    print(f"| regenerate / server tokens/s | {res['throughput_ratio']:.3f} |")
    print(f"| client CPU during the run / wall | {res['client_cpu_s']:.2f} s / {res['regen_wall_s']:.1f} s = "
          f"{res['client_overhead_pct']:.2f}% |")
    print(f"| whole client process incl. start-up / wall | {res['process_cpu_s']:.2f} s / "
          f"{res['process_wall_s']:.1f} s = {res['process_overhead_pct']:.2f}% |")
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
