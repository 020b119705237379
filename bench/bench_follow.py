"""Benchmark: the driver following live logs, beside ``tail -F | grep`` on the same files.

    .venv/bin/python bench/bench_follow.py SCENARIO --subject eagle3tui [--tree DIR] [--json-out FILE]
    .venv/bin/python bench/bench_follow.py SCENARIO --subject tailgrep [--json-out FILE]
    .venv/bin/python bench/bench_follow.py table [--runs 5] [--tree DIR] [--scenarios a,b]

Scenarios (issue 34's rows):

* ``busy8``: 8 stages, each writing ~1,200 mixed GPU-job lines/s (trainer
  steps on every rank, NCCL INFO, tqdm redraws, vLLM throughput, a few
  warnings), one ``write`` per line as ``print(..., flush=True)`` does.
  Figure: the consumer's CPU in percent of one core over the steady window.
* ``fast1``: 1 stage at ~15,000 lines/s. Same figure.
* ``idle2``: 2 stages printing one line every 5 s. Same figure. ``idle64``: 64 of them.
* ``latency8``: the 8 busy stages plus a quiet one whose log this script
  appends fatal lines to; figure: the time from the line's write to its
  alert being fsynced in ``alerts.jsonl`` (eagle3tui: a hub sink placed
  after the alert file's; tail+grep: grep's output line read back).
* ``big``: one stage writing ``--gib`` GiB of mixed lines as fast as it can;
  figures: the consumer's peak RSS and the seconds from the stage's last
  write to the consumer having read everything (eagle3tui: the driver's exit
  when idle, its idle grace taken off).
* ``repeat``: the same with ``--gib`` of one repeated WARNING line.

``--subject eagle3tui`` runs a real ``Driver`` (the class ``--watch`` runs)
as its own process, with the GPU sampler off, launching the stages through
the real launcher and wrapper; the stages' own CPU is not the driver's.
``--tree DIR`` runs the driver from another checkout (the code before a
change) on the same scenario. ``--subject tailgrep`` starts the same writers
itself and follows their logs with ``tail -q -n +1 -F FILES | grep
--line-buffered -E`` over the fatal rules' literals.

``table`` alternates subject and reference runs (A B A B ...) ``--runs``
times per scenario and prints medians with min and max, the ratio taken pair
by pair, and the machine's load. Every run prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve()

SCENARIOS: dict[str, dict[str, Any]] = {
    "busy8": {"stages": 8, "rate": 1200, "seconds": 20.0},
    "fast1": {"stages": 1, "rate": 15000, "seconds": 20.0},
    "idle2": {"stages": 2, "rate": 0.2, "seconds": 20.0},
    "latency8": {"stages": 8, "rate": 1200, "seconds": 0.0, "samples": 40},
    "idle64": {"stages": 64, "rate": 0.2, "seconds": 20.0},
    "big": {"stages": 1, "rate": 0, "gib": 1.0, "kind": "mixed"},
    "repeat": {"stages": 1, "rate": 0, "gib": 0.25, "kind": "repeat"},
}

WARNINGS = [
    ("/usr/lib/python3/site-packages/torch/utils/checkpoint.py:90: UserWarning: None of the inputs have "
     "requires_grad=True. Gradients will be None"),
    ("[rank{w}]:[W1206 10:{m:02d}:{s:02d}.715298746 ProcessGroupNCCL.cpp:4115] [PG ID 0 PG GUID 0 Rank {w}] "
     "using GPU {w} to perform barrier as devices used by this process are currently unknown."),
    ("WARNING 12-06 10:{m:02d}:{s:02d} [scheduler.py:1560] Sequence group cmpl-{i} is preempted by "
     "PreemptionMode.RECOMPUTE mode because there is not enough KV cache space."),
]
REPEATED = ("/usr/lib/python3/site-packages/torch/utils/checkpoint.py:90: UserWarning: None of the inputs have "
            "requires_grad=True. Gradients will be None\n")
FATAL = ("[rank0]:[E1206 10:00:00.715298746 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective "
         "operation timeout: WorkNCCL(SeqNum={n}, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600030 "
         "milliseconds before timing out. bench-sample-{tag}\n")


class Mixed:
    """An endless, seeded stream of the lines an 8-GPU training or serving job prints."""

    def __init__(self, seed: int) -> None:
        self.rnd = random.Random(seed)
        self.i = 0
        self.bar = 0
        self.open_bar = False

    def line(self) -> str:
        """The next line; a tqdm bar's redraws are ``\\r`` segments of one line, ended by the next line."""
        rnd, i = self.rnd, self.i
        self.i += 1
        m, s, w = i // 60 % 60, i % 60, i % 8
        r = rnd.random()
        if r < 0.2:
            self.bar = (self.bar + 1) % 1000
            self.open_bar = True
            k = self.bar
            return (f"\rTraining: {k // 10:3d}%|{'#' * (k // 100):<10}| {k}/1000 [00:{k % 60:02d}<00:"
                    f"{(1000 - k) % 60:02d}, {4 + k % 7 * 0.1:.2f}it/s]")
        end, self.open_bar = ("\n" if self.open_bar else ""), False
        if r < 0.55:
            text = (f"[rank{w}]:2026-12-06 10:{m:02d}:{s:02d},{i % 1000:03d} INFO trainer.py:412 step {i} "
                    f"loss={rnd.uniform(0.5, 3):.4f} grad_norm={rnd.uniform(0.1, 2):.3f} lr=1.9e-05 "
                    f"tokens/s={rnd.uniform(9000, 12000):.0f}")
        elif r < 0.75:
            text = (f"node-03:{26841 + w}:{26900 + w} [{w}] NCCL INFO Channel {i % 32:02d}/0 : {w}[{w}] -> "
                    f"{(w + 1) % 8}[{(w + 1) % 8}] via P2P/CUMEM/read")
        elif r < 0.88:
            text = (f"INFO 12-06 10:{m:02d}:{s:02d} [loggers.py:116] Engine 000: Avg prompt throughput: "
                    f"{rnd.uniform(0, 3000):.1f} tokens/s, Avg generation throughput: {rnd.uniform(0, 900):.1f} "
                    f"tokens/s, Running: {i % 40} reqs, Waiting: {i % 7} reqs, GPU KV cache usage: {i % 100:.1f}%")
        elif r < 0.98:
            text = f'INFO:     127.0.0.1:5{s:04d} - "POST /v1/chat/completions HTTP/1.1" 200 OK'
        else:
            text = rnd.choice(WARNINGS).format(i=i, w=w, m=m, s=s)
        return end + text + "\n"


def writer(args: argparse.Namespace) -> int:
    """A stage's command: lines on stdout at ``--rate`` per second, or ``--bytes`` as fast as it can."""
    out = sys.stdout.fileno()
    gen = Mixed(args.seed)
    if args.bytes:
        left = args.bytes
        while left > 0:
            block = (REPEATED * 8192 if args.kind == "repeat"
                     else "".join(gen.line() for _ in range(8192))).encode()
            os.write(out, block[:left] if len(block) > left else block)
            left -= len(block)
    elif args.rate:
        t0 = time.monotonic()
        n = 0
        end = t0 + args.seconds
        while True:
            now = time.monotonic()
            if now >= end:
                break
            due = int((now - t0) * args.rate) + 1
            while n < due:
                os.write(out, gen.line().encode())  # one write per line, as print(flush=True)
                n += 1
            time.sleep(min(0.01, 1.0 / args.rate))
    else:
        time.sleep(args.seconds)
    Path(args.done).write_text(f"{time.time()}\n")
    return 0


def _fatal_pattern() -> str:
    sys.path.insert(0, str(ROOT))
    from eagle3tui.logs.rules import load_builtin_rules

    keys = sorted({k for r in load_builtin_rules() if r.kind == "fatal" for k in r.keywords})
    return "|".join(re.escape(k) for k in keys)


def _tag(n: int) -> str:
    """``n`` in letters: alerts that differ only in numbers merge, these must not."""
    return "".join(chr(ord("a") + int(d)) for d in str(n))


def _untag(tag: str) -> int:
    return int("".join(str(ord(c) - ord("a")) for c in tag))


def _wait(cond: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.01)
    raise SystemExit(f"bench: timed out waiting for {what}")


def _writer_argv(sc: dict[str, Any], i: int, done: Path, seconds: float) -> list[str]:
    argv = [sys.executable, str(HERE), "writer", "--seed", str(i), "--done", str(done),
            "--seconds", str(seconds), "--rate", str(sc.get("rate") or 0), "--kind", sc.get("kind", "mixed")]
    if sc.get("gib"):
        argv += ["--bytes", str(int(sc["gib"] * (1 << 30)))]
    return argv


def _cpu(procs: list[Any]) -> float:
    tot = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            tot += t.user + t.system
        except Exception:  # noqa: BLE001 - gone: its last figure is lost, as for both subjects
            pass
    return tot


def _pipeline(root: Path, sc: dict[str, Any], seconds: float, extra_quiet: bool) -> tuple[Path, list[Path]]:
    dones = [root / f"done{i}" for i in range(sc["stages"])]
    text = "[alerts]\n"  # the product's defaults
    for i, d in enumerate(dones):
        argv = _writer_argv(sc, i, d, seconds)
        text += f"[[stage]]\nname = \"s{i}\"\ncommand = {json.dumps(argv)}\n"
    if extra_quiet:
        text += '[[stage]]\nname = "target"\ncommand = ["sleep", "600"]\n'
    (root / "pipeline.toml").write_text(text)
    return root / "pipeline.toml", dones


# The detached driver's set-up (driver.main): the hub from [alerts], dedup on.
DRIVER = ("import sys, threading\nfrom eagle3tui.config import load_config\n"
          "from eagle3tui.alerts import build_hub\n"
          "from eagle3tui.supervisor.driver import Driver\n"
          "cfg = load_config(sys.argv[1])\n"
          "hub = build_hub(cfg)\n"
          "d = Driver(cfg, hub=hub, exit_when_idle=True, idle_grace_s=0.2, gpu=False)\n"
          "d.execute({'op': 'start', 'all': True})\n"
          "rc = d.run(threading.Event())\n"
          "hub.close()\n"
          "sys.exit(rc)\n")


def run_eagle3tui(name: str, sc: dict[str, Any], tree: Path) -> dict[str, Any]:
    import psutil

    seconds = float(sc.get("seconds") or 0)
    with tempfile.TemporaryDirectory(prefix="e3t-bench-follow-", ignore_cleanup_errors=True) as tmp:
        root = Path(tmp)
        cfg_path, dones = _pipeline(root, sc, seconds + 2.0, False)
        t_launch = time.time()
        # BENCH_PROFILE=FILE: the driver runs under cProfile, its profile written to FILE.
        # BENCH_PYSPY=FILE: under py-spy (every thread), its folded stacks written to FILE.
        prof = ["-m", "cProfile", "-o", os.environ["BENCH_PROFILE"]] if os.environ.get("BENCH_PROFILE") else []
        spy = (["py-spy", "record", "-r", "200", "-f", "raw", "-o", os.environ["BENCH_PYSPY"], "--"]
               if os.environ.get("BENCH_PYSPY") else [])
        (root / "driver_main.py").write_text(DRIVER)
        proc = subprocess.Popen([*spy, sys.executable, *prof, str(root / "driver_main.py"), str(cfg_path)], cwd=root,
                                env={**os.environ, "PYTHONPATH": str(tree)},
                                stdout=subprocess.DEVNULL, stderr=open(root / "driver.err", "wb"))
        p = psutil.Process(proc.pid)
        res: dict[str, Any] = {"scenario": name, "subject": "eagle3tui", "tree": str(tree)}
        # The driver's own CPU (not its children's: the stages are its wrappers' children),
        # read until it exits; the last reading is its total.
        own = [0.0]
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                try:
                    t = p.cpu_times()
                    own[0] = t.user + t.system
                except psutil.Error:
                    return
                done.wait(0.05)
        th = threading.Thread(target=sample, daemon=True)
        th.start()
        try:
            _wait(lambda: len(_running(root)) >= sc["stages"], 30, "the stages to run")
            if seconds:
                time.sleep(1.5)  # past the driver's start-up and the stages' launch
                c0, t0 = _cpu([p]), time.monotonic()
                time.sleep(seconds - 2.0)
                c1, t1 = _cpu([p]), time.monotonic()
                res["cpu_pct"] = 100.0 * (c1 - c0) / (t1 - t0)
            _, status, ru = os.wait4(proc.pid, 0)
            t_exit = time.time()
            res["rc"] = os.waitstatus_to_exitcode(status)
            res["peak_rss_mb"] = ru.ru_maxrss / 1024
            done.set()
            th.join()
            res["cpu_s_total"] = own[0]  # the driver alone, start-up included
            ends = [float(d.read_text()) for d in dones if d.exists()]
            if ends:
                res["done_after_stage_s"] = t_exit - max(ends) - 0.2  # less the idle grace
            res["wall_s"] = t_exit - t_launch
            state = root / ".eagle3tui"
            res["verdict_bytes"] = sum(f.stat().st_size for f in state.glob("runs/*/*.verdicts.jsonl"))
            res["alerts"] = sum(1 for _ in open(state / "alerts.jsonl")) if (state / "alerts.jsonl").exists() else 0
            # What it said, to compare trees on the same input: alerts per kind (repeats
            # merged into one carry their count) and the log lines marked per kind.
            by: dict[str, int] = {}
            if (state / "alerts.jsonl").exists():
                for ln in open(state / "alerts.jsonl"):
                    a = json.loads(ln)
                    k = f"{a['level']}/{a['kind']}/{(a.get('details') or {}).get('rule')}"
                    by[k] = by.get(k, 0) + int(a.get("count") or 1)
            res["alerts_by_kind"] = by
            marked: dict[str, int] = {}
            for f in state.glob("runs/*/*.verdicts.jsonl"):
                lines: dict[int, str] = {}
                for ln in open(f):
                    v = json.loads(ln)
                    for no in range(int(v["line"]), int(v.get("end_line") or v["line"]) + 1):
                        lines[no] = v["kind"]
                for kind in lines.values():
                    marked[kind] = marked.get(kind, 0) + 1
            res["marked_lines"] = marked
            if os.environ.get("BENCH_KEEP"):  # a copy of the state directory, to look at
                import shutil
                shutil.copytree(state, os.environ["BENCH_KEEP"], dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("*.sock", "*.lock"))
            if res["rc"] != 0:
                res["stderr"] = (root / "driver.err").read_text()[-2000:]
        finally:
            if proc.poll() is None and proc.returncode is None:
                try:
                    proc.kill()
                    proc.wait()
                except (ProcessLookupError, ChildProcessError):
                    pass
            _kill_stages(root)
    return res


def _running(root: Path) -> list[Path]:
    """Run records of started stages (a pid saved)."""
    out = []
    for rec in (root / ".eagle3tui" / "runs").glob("*/*.json"):
        try:
            if json.loads(rec.read_text()).get("pid"):
                out.append(rec)
        except (OSError, ValueError, AttributeError):
            pass
    return out


def _kill_stages(root: Path) -> None:
    for rec in (root / ".eagle3tui" / "runs").glob("*/*.json"):
        try:
            pgid = json.loads(rec.read_text()).get("pgid")
            if pgid:
                os.killpg(int(pgid), signal.SIGKILL)
        except (OSError, ValueError, AttributeError):
            pass


def run_tailgrep(name: str, sc: dict[str, Any]) -> dict[str, Any]:
    import psutil

    seconds = float(sc.get("seconds") or 0)
    pattern = _fatal_pattern()
    with tempfile.TemporaryDirectory(prefix="e3t-bench-follow-", ignore_cleanup_errors=True) as tmp:
        root = Path(tmp)
        logs = [root / f"s{i}.log" for i in range(sc["stages"])]
        dones = [root / f"done{i}" for i in range(sc["stages"])]
        for f in logs:
            f.touch()
        sh = subprocess.Popen(["sh", "-c", 'tail -q -n +1 -F "$@" | grep --line-buffered -E "$0" > /dev/null',
                               pattern, *map(str, logs)], start_new_session=True)
        writers = [subprocess.Popen(_writer_argv(sc, i, dones[i], seconds + 2.0), stdout=open(logs[i], "ab"))
                   for i in range(sc["stages"])]
        res: dict[str, Any] = {"scenario": name, "subject": "tailgrep"}
        try:
            kids = _wait(lambda: (lambda k: k if len(k) >= 2 else None)(psutil.Process(sh.pid).children()),
                         10, "tail and grep")
            peak = 0
            stop = threading.Event()

            def sample() -> None:
                nonlocal peak
                while not stop.wait(0.05):
                    try:
                        peak = max(peak, *(k.memory_info().rss for k in kids))
                    except psutil.Error:
                        return
            th = threading.Thread(target=sample, daemon=True)
            th.start()
            if seconds:
                time.sleep(1.5)
                c0, t0 = _cpu(kids), time.monotonic()
                time.sleep(seconds - 2.0)
                c1, t1 = _cpu(kids), time.monotonic()
                res["cpu_pct"] = 100.0 * (c1 - c0) / (t1 - t0)
            for w in writers:
                w.wait()
            end = max(float(d.read_text()) for d in dones)
            size = sum(f.stat().st_size for f in logs)
            # tail has read everything once its offset in each file is the file's size.
            tail = next(k for k in kids if k.name() == "tail")
            def caught_up() -> bool:
                fds = {f.path: f.position for f in tail.open_files()}
                return sum(fds.get(str(f), 0) for f in logs) >= size
            _wait(caught_up, 600, "tail to reach the end")
            res["done_after_stage_s"] = time.time() - end
            res["cpu_s_total"] = _cpu(kids)
            stop.set()
            th.join()
            res["peak_rss_mb"] = peak / (1 << 20)
        finally:
            os.killpg(sh.pid, signal.SIGKILL)
            sh.wait()
            for w in writers:
                if w.poll() is None:
                    w.kill()
                    w.wait()
    return res


def latency_eagle3tui(sc: dict[str, Any], tree: Path) -> dict[str, Any]:
    """Fatal line appended -> alert fsynced, with 8 busy stages, in a driver thread."""
    sys.path.insert(0, str(tree))
    from eagle3tui.alerts import Alert, build_hub
    from eagle3tui.config import load_config
    from eagle3tui.supervisor.driver import Driver
    from eagle3tui.supervisor.records import RunStore

    samples = int(sc["samples"])
    with tempfile.TemporaryDirectory(prefix="e3t-bench-lat-", ignore_cleanup_errors=True) as tmp:
        root = Path(tmp)
        seconds = 10.0 + samples * 0.35
        cfg_path, _ = _pipeline(root, sc, seconds, True)
        config = load_config(cfg_path)
        seen: dict[int, float] = {}

        def after_fsync(alert: Alert) -> None:
            text = str(alert.details.get("text", ""))
            if alert.kind == "fatal-log-event" and "bench-sample-" in text:
                seen.setdefault(_untag(text.rsplit("bench-sample-", 1)[1].split()[0]), time.monotonic())

        hub = build_hub(config)
        driver = Driver(config, hub=hub, exit_when_idle=False, gpu=False)
        hub.add_sink(after_fsync)  # after the AlertLog sink Driver() added: the line is on disk
        stop = threading.Event()
        t = threading.Thread(target=driver.run, args=(stop,), daemon=True)
        t.start()
        lat: list[float] = []
        try:
            _wait((root / ".eagle3tui" / "commands").exists, 20, "the driver")
            driver.execute({"op": "start", "all": True})
            store = RunStore(config.state_dir)
            rec = _wait(lambda: (lambda r: r if r and r.pid else None)(store.latest("target")), 20, "target")
            _wait(lambda: "target" in driver.watches, 90, "the driver to follow the target")
            time.sleep(2.0)  # the busy stages are writing
            fd = os.open(rec.log, os.O_WRONLY | os.O_APPEND)
            sent: dict[int, float] = {}
            try:
                for n in range(1, samples + 1):
                    line = FATAL.format(n=n, tag=_tag(n)).encode()
                    sent[n] = time.monotonic()
                    os.write(fd, line)
                    _wait(lambda n=n: n in seen, 10, f"the alert of sample {n}")
                    # Work after the error: the attempt is no longer failing, so the
                    # next fatal line pages again instead of being folded into this one.
                    os.write(fd, f"step {n}/1000 | {n * 100 // 1000}% | {n}/1000 [00:0{n % 10}<01:00, 2.0it/s]\n"
                             .encode())
                    time.sleep(0.2)
            finally:
                os.close(fd)
            lat = sorted((seen[n] - sent[n]) * 1000 for n in sent)
        finally:
            for name in list(driver.watches):
                driver.stop_stage(name, reason="bench")
            stop.set()
            t.join(timeout=10)
            hub.close()
            _kill_stages(root)
    return _lat_figures(lat, "eagle3tui")


def latency_tailgrep(sc: dict[str, Any]) -> dict[str, Any]:
    samples = int(sc["samples"])
    pattern = _fatal_pattern()
    with tempfile.TemporaryDirectory(prefix="e3t-bench-lat-", ignore_cleanup_errors=True) as tmp:
        root = Path(tmp)
        seconds = 10.0 + samples * 0.35
        logs = [root / f"s{i}.log" for i in range(sc["stages"])]
        target = root / "target.log"
        for f in [*logs, target]:
            f.touch()
        sh = subprocess.Popen(["sh", "-c", 'tail -q -n +1 -F "$@" | grep --line-buffered -E "$0"',
                               pattern, *map(str, [*logs, target])], stdout=subprocess.PIPE,
                              start_new_session=True)
        writers = [subprocess.Popen(_writer_argv(sc, i, root / f"done{i}", seconds), stdout=open(logs[i], "ab"))
                   for i in range(sc["stages"])]
        lat = []
        try:
            time.sleep(2.0)
            fd = os.open(target, os.O_WRONLY | os.O_APPEND)
            assert sh.stdout is not None
            for n in range(1, samples + 1):
                line = FATAL.format(n=n, tag=_tag(n)).encode()
                t0 = time.monotonic()
                os.write(fd, line)
                while True:
                    got = sh.stdout.readline()
                    if not got or f"bench-sample-{_tag(n)}".encode() in got:
                        break
                lat.append((time.monotonic() - t0) * 1000)
                time.sleep(0.2)
            os.close(fd)
        finally:
            os.killpg(sh.pid, signal.SIGKILL)
            sh.wait()
            for w in writers:
                w.kill()
                w.wait()
    return _lat_figures(sorted(lat), "tailgrep")


def _lat_figures(lat: list[float], subject: str) -> dict[str, Any]:
    return {"scenario": "latency8", "subject": subject, "samples": len(lat),
            "median_ms": statistics.median(lat), "p90_ms": lat[int(0.9 * (len(lat) - 1))],
            "p95_ms": lat[int(0.95 * (len(lat) - 1))], "min_ms": lat[0], "max_ms": lat[-1]}


def one(name: str, subject: str, tree: Path) -> dict[str, Any]:
    sc = SCENARIOS[name]
    if name == "latency8":
        res = latency_eagle3tui(sc, tree) if subject == "eagle3tui" else latency_tailgrep(sc)
    elif subject == "eagle3tui":
        res = run_eagle3tui(name, sc, tree)
    else:
        res = run_tailgrep(name, sc)
    res["load1"] = os.getloadavg()[0]
    return res


FIGURES = {"busy8": ["cpu_pct", "cpu_s_total"], "fast1": ["cpu_pct", "cpu_s_total"], "idle2": ["cpu_pct"],
           "idle64": ["cpu_pct"],
           "latency8": ["median_ms", "p95_ms", "max_ms"], "big": ["peak_rss_mb", "done_after_stage_s"],
           "repeat": ["peak_rss_mb", "done_after_stage_s"]}


def table(args: argparse.Namespace) -> int:
    names = args.scenarios.split(",") if args.scenarios else list(SCENARIOS)
    subjects: list[tuple[str, str, Path]] = [] if args.skip_this else [("this tree", "eagle3tui", ROOT)]
    if args.tree:
        subjects.append((f"{Path(args.tree).name}", "eagle3tui", Path(args.tree).resolve()))
    subjects.append(("tail+grep", "tailgrep", ROOT))
    extra = [*(["--gib", str(args.gib)] if args.gib else []), *(["--seconds", str(args.seconds)] if args.seconds else []),
             *(["--samples", str(args.samples)] if args.samples else [])]
    print(f"machine: {os.cpu_count()} cores; load at start {os.getloadavg()}", flush=True)
    for name in names:
        runs: dict[str, list[dict[str, Any]]] = {label: [] for label, _, _ in subjects}
        for _ in range(args.runs):
            for label, subject, tree in subjects:  # A B (C) A B (C) ...: pairs share the machine's mood
                r = _child(name, subject, tree, extra)
                runs[label].append(r)
                print(json.dumps(r), file=sys.stderr, flush=True)
        print(f"\n{name} ({SCENARIOS[name]}), {args.runs} runs each, alternating; load at end "
              f"{os.getloadavg()[0]:.2f}")
        for fig in FIGURES[name]:
            print(f"| {fig} | " + " | ".join(label for label, _, _ in subjects) + " | ratio to tail+grep (pairwise median) |")
            print("|---" * (len(subjects) + 2) + "|")
            row = []
            for label, _, _ in subjects:
                xs = [r[fig] for r in runs[label] if fig in r]
                row.append(f"{statistics.median(xs):.2f} [{min(xs):.2f}–{max(xs):.2f}]" if xs else "–")
            ref = runs["tail+grep"]
            ratios = []
            for label, _, _ in subjects[:-1]:
                rs = [a[fig] / b[fig] for a, b in zip(runs[label], ref) if fig in a and b.get(fig)]
                ratios.append(f"{label}: {statistics.median(rs):.1f}×" if rs else "–")
            print(f"| {fig} | " + " | ".join(row) + " | " + "; ".join(ratios) + " |")
    return 0


def _child(name: str, subject: str, tree: Path, extra: list[str]) -> dict[str, Any]:
    """One run in a fresh interpreter (the latency run imports the tree it measures)."""
    out = subprocess.run([sys.executable, str(HERE), name, "--subject", subject, "--tree", str(tree), *extra],
                         capture_output=True, text=True, timeout=900, check=False)
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"scenario": name, "subject": subject, "error": out.stderr[-2000:]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=[*SCENARIOS, "table", "writer"])
    ap.add_argument("--subject", choices=["eagle3tui", "tailgrep"], default="eagle3tui")
    ap.add_argument("--tree", default=str(ROOT), help="the checkout whose driver runs (default: this one)")
    ap.add_argument("--json-out", help="append the run's JSON line to this file too")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--scenarios", help="comma-separated (table)")
    ap.add_argument("--skip-this", action="store_true", help="table: only --tree's driver and tail+grep")
    ap.add_argument("--gib", type=float, help="size for big/repeat (GiB)")
    ap.add_argument("--seconds", type=float, help="length of busy8/fast1/idle2 (s)")
    ap.add_argument("--samples", type=int, help="fatal lines of latency8")
    # writer options
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rate", type=float, default=0)
    ap.add_argument("--bytes", type=int, default=0)
    ap.add_argument("--kind", default="mixed")
    ap.add_argument("--done", default="/dev/null")
    args = ap.parse_args()
    if args.what == "writer":
        return writer(args)
    for sc in SCENARIOS.values():
        if args.gib and "gib" in sc:
            sc["gib"] = args.gib
        if args.seconds and sc.get("seconds"):
            sc["seconds"] = args.seconds
        if args.samples and "samples" in sc:
            sc["samples"] = args.samples
    if args.what == "table":
        return table(args)
    res = one(args.what, args.subject, Path(args.tree).resolve())
    line = json.dumps(res)
    print(line, flush=True)
    if args.json_out:
        with open(args.json_out, "a") as f:
            f.write(line + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
