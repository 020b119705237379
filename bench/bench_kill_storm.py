"""Kill storm: ``kill -9`` of the driver every 50-1500 ms through a 4-stage
pipeline with a retry, N trials; counts what issue 13 says must be zero.

Each trial: a fresh state directory; ``eagle3tui start --all`` once (the only
front-end call); then, until every stage's result is on disk, the current
driver is killed with SIGKILL after a random 50-1500 ms. Nothing else starts
a driver: the stage wrappers and the keeper must. Each stage logs one line
per run to ``runs.txt`` (``stage attempt``), prints fatal log lines, and
leaves a ``setsid`` child that ignores SIGTERM behind.

Counted per trial:
  duplicate runs   two runs of one (stage, attempt), or more attempts than needed
  lost retries     the flaky stage not retried to success
  lost exit codes  a finished attempt with no exit code in its record/result
  orphans          processes of the trial's runs alive at the end
  torn lines       alerts.jsonl lines that do not parse

Usage: PYTHONPATH=. python bench/bench_kill_storm.py [--trials 20] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

STAGE = """echo "$EAGLE3TUI_STAGE $EAGLE3TUI_ATTEMPT" >> {root}/runs.txt
setsid sh -c 'trap "" TERM; sleep 600' &
for i in 1 2 3; do echo "RuntimeError: CUDA out of memory (step $i)"; sleep {pause}; done
{tail}
"""


def config(root: Path) -> str:
    def stage(name: str, deps: list[str], tail: str = "exit 0", extra: str = "") -> str:
        cmd = STAGE.format(root=root, pause=0.15, tail=tail)
        return (f'[[stage]]\nname = "{name}"\ncommand = {json.dumps(["sh", "-c", cmd])}\n'
                f'depends_on = {json.dumps(deps)}\nstop_grace = "1s"\n{extra}\n')
    flaky_tail = '[ "$EAGLE3TUI_ATTEMPT" -ge 2 ]'
    return ("[alerts]\ndedup_window = \"0s\"\n\n"
            + stage("prepare", [])
            + stage("flaky", ["prepare"], flaky_tail,
                    'retry = { max_attempts = 3, backoff = "0.5s", on = ["exit:1"] }')
            + stage("train", ["flaky"])
            + stage("export", ["train"]))


EXPECTED = {("prepare", 1), ("flaky", 1), ("flaky", 2), ("train", 1), ("export", 1)}


def driver_pid(state: Path) -> int | None:
    try:
        return int(json.loads((state / "driver.json").read_text())["pid"])
    except (OSError, ValueError, KeyError):
        return None


def done(state: Path) -> bool:
    return (state / "runs/export/0001.result.json").exists()


def trial(n: int, rng: random.Random, timeout: float) -> dict[str, object]:
    root = Path(tempfile.mkdtemp(prefix=f"killstorm{n}-"))
    state = root / ".eagle3tui"
    (root / "pipeline.toml").write_text(config(root))
    env = dict(os.environ)
    subprocess.run([sys.executable, "-m", "eagle3tui", "--config", str(root / "pipeline.toml"),
                    "start", "--all"], check=True, capture_output=True, env=env, cwd=root)
    kills = 0
    deadline = time.monotonic() + timeout
    while not done(state) and time.monotonic() < deadline:
        time.sleep(rng.uniform(0.05, 1.5))
        pid = driver_pid(state)
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
                kills += 1
            except ProcessLookupError:
                pass
    finished_in_storm = done(state)
    # The storm is over: with no more kills the pipeline must still complete
    # (a storm faster than a driver starts can only delay it, never lose work).
    calm = time.monotonic() + 90
    while not done(state) and time.monotonic() < calm:
        time.sleep(0.2)
    finished = done(state)
    # Let the last driver settle (finalize, alerts) before counting.
    settle = time.monotonic() + 30
    while time.monotonic() < settle:
        recs = [p for p in state.glob("runs/*/[0-9][0-9][0-9][0-9].json")]
        if finished and all(json.loads(p.read_text()).get("extra", {}).get("finalized") for p in recs):
            break
        time.sleep(0.2)
    runs = [tuple(line.split()) for line in (root / "runs.txt").read_text().splitlines()]
    pairs = [(s, int(a)) for s, a in runs]
    duplicates = len(pairs) - len(set(pairs)) + len(set(pairs) - EXPECTED)
    lost_retry = 0 if ("flaky", 2) in pairs else 1
    lost_exit = 0
    run_ids = set()
    for p in state.glob("runs/*/[0-9][0-9][0-9][0-9].json"):
        rec = json.loads(p.read_text())
        run_ids.add(rec["run_id"])
        ran = (rec["stage"], rec["attempt"]) in pairs
        result = p.with_name(p.name[:4] + ".result.json")
        if result.exists():
            rec = {**rec, **json.loads(result.read_text())}
        if ran and rec.get("exit_code") is None and rec.get("signal") is None:
            lost_exit += 1
    time.sleep(1.0)  # wrappers end leftovers after SIGTERM + grace (1 s) + slack
    orphan_deadline = time.monotonic() + 10
    orphans: list[int] = []
    while time.monotonic() < orphan_deadline:
        orphans = []
        for proc in psutil.process_iter():
            try:
                if proc.environ().get("EAGLE3TUI_RUN_ID") in run_ids:
                    orphans.append(proc.pid)
            except (psutil.Error, OSError):
                continue
        if not orphans:
            break
        time.sleep(0.2)
    torn = 0
    alerts = state / "alerts.jsonl"
    for raw in alerts.read_bytes().split(b"\n")[:-1] if alerts.exists() else []:
        try:
            json.loads(raw)
        except ValueError:
            torn += 1
    if alerts.exists() and not alerts.read_bytes().endswith(b"\n"):
        torn += 1
    # Clean up whatever is left (counted above) so trials are independent.
    for pid in orphans:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.kill(int(json.loads((state / "keeper.json").read_text())["pid"]), signal.SIGKILL)
    except (OSError, ValueError, KeyError):
        pass
    pid = driver_pid(state)
    if pid:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    if orphans or duplicates or lost_retry or lost_exit or torn or not finished:
        print(f"# trial {n}: kept {root} for inspection", flush=True)
    else:
        shutil.rmtree(root, ignore_errors=True)
    return {"trial": n, "finished": finished, "finished_in_storm": finished_in_storm,
            "kills": kills, "runs": len(pairs),
            "duplicates": duplicates, "lost_retries": lost_retry, "lost_exit_codes": lost_exit,
            "orphans": len(orphans), "torn_lines": torn}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=120.0, help="storm length cap per trial (s)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    totals = {"kills": 0, "duplicates": 0, "lost_retries": 0, "lost_exit_codes": 0, "orphans": 0,
              "torn_lines": 0, "unfinished": 0, "still_running_at_storm_end": 0}
    for n in range(args.trials):
        r = trial(n, rng, args.timeout)
        print(json.dumps(r), flush=True)
        for k in totals:
            if k == "unfinished":
                totals[k] += int(not r["finished"])
            elif k == "still_running_at_storm_end":
                totals[k] += int(not r["finished_in_storm"])
            else:
                totals[k] += int(r[k])  # type: ignore[call-overload]
    print("TOTAL " + json.dumps(dict(totals, trials=args.trials)), flush=True)
    bad = sum(v for k, v in totals.items() if k not in ("kills", "still_running_at_storm_end"))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
