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

With ``--disorder`` (root: it mounts a 2 MiB tmpfs per trial) the stages' logs
live on that tmpfs and, between kills, the storm also rotates a running stage's
log as logrotate does without copytruncate (rename to ``.1``, create a new
empty file) and fills the tmpfs to ENOSPC for 0.3-1.5 s. Counted as well:
  lost fatal lines  a run whose log (or its rotated file) holds a fatal line
                    that made no fatal-log-event alert for that attempt

Usage: PYTHONPATH=. python bench/bench_kill_storm.py [--trials 20] [--seed 1] [--disorder]
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


def config(root: Path, logs: Path | None = None) -> str:
    def stage(name: str, deps: list[str], tail: str = "exit 0", extra: str = "") -> str:
        cmd = STAGE.format(root=root, pause=0.15, tail=tail)
        if logs is not None:
            extra += f'\nlog = "{logs}/{name}.log"\n'
        return (f'[[stage]]\nname = "{name}"\ncommand = {json.dumps(["sh", "-c", cmd])}\n'
                f'depends_on = {json.dumps(deps)}\nstop_grace = "1s"\n{extra}\n')
    flaky_tail = '[ "$EAGLE3TUI_ATTEMPT" -ge 2 ]'
    # On a log disk that fills, a launch can fail (the disk is that attempt's cause):
    # every stage then retries whatever failed, so the pipeline still completes.
    anyhow = 'retry = { max_attempts = 12, backoff = "0.5s", on = ["any"] }' if logs is not None else ""
    return ("[alerts]\ndedup_window = \"0s\"\n\n"
            + stage("prepare", [], extra=anyhow)
            + stage("flaky", ["prepare"], flaky_tail,
                    anyhow or 'retry = { max_attempts = 3, backoff = "0.5s", on = ["exit:1"] }')
            + stage("train", ["flaky"], extra=anyhow)
            + stage("export", ["train"], extra=anyhow))


EXPECTED = {("prepare", 1), ("flaky", 1), ("flaky", 2), ("train", 1), ("export", 1)}


def driver_pid(state: Path) -> int | None:
    try:
        return int(json.loads((state / "driver.json").read_text())["pid"])
    except (OSError, ValueError, KeyError):
        return None


def done(state: Path) -> bool:
    """export succeeded (its first attempt, or a retry after a full log disk)."""
    for p in state.glob("runs/export/[0-9][0-9][0-9][0-9].result.json"):
        try:
            if json.loads(p.read_text()).get("exit_code") == 0:
                return True
        except (OSError, ValueError):
            continue
    return False


def _disorder(logs: Path, rng: random.Random) -> str:
    """One logrotate-style rename of a log, or the log disk full for a moment."""
    if rng.random() < 0.5:
        live = sorted(p for p in logs.glob("*.log"))
        if not live:
            return ""
        p = rng.choice(live)
        try:
            os.replace(p, p.with_name(p.name + ".1"))  # the stage keeps writing to this one
            p.touch()
        except OSError:
            return ""
        return "rotate"
    filler = logs / "filler"
    try:
        with open(filler, "wb", buffering=0) as f:
            while True:
                f.write(b"\0" * 65536)
    except OSError:
        pass
    time.sleep(rng.uniform(0.3, 1.5))
    filler.unlink(missing_ok=True)
    return "full"


def _lost_fatal(state: Path, logs: Path) -> int:
    """Runs whose log files hold a fatal line with no fatal-log-event alert for the attempt."""
    alerted = set()
    for raw in (state / "alerts.jsonl").read_bytes().split(b"\n") if (state / "alerts.jsonl").exists() else []:
        try:
            a = json.loads(raw)
        except ValueError:
            continue
        if a.get("kind") == "fatal-log-event":
            alerted.add((a.get("stage"), a.get("attempt")))
    written = set()
    for p in logs.glob("*.log*"):
        stage, attempt = p.name.split(".")[0], None
        for line in p.read_bytes().split(b"\n"):
            if line.startswith(b"[eagle3tui] ") and b" attempt " in line:
                attempt = int(line.split(b" attempt ")[1].split()[0])
            elif b"CUDA out of memory" in line and attempt is not None:
                written.add((stage, attempt))
    return len(written - alerted)


def trial(n: int, rng: random.Random, timeout: float, disorder: bool = False) -> dict[str, object]:
    root = Path(tempfile.mkdtemp(prefix=f"killstorm{n}-"))
    state = root / ".eagle3tui"
    logs = root / "logs" if disorder else None
    if logs is not None:
        logs.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(logs)], check=True)
    (root / "pipeline.toml").write_text(config(root, logs))
    env = dict(os.environ)
    subprocess.run([sys.executable, "-m", "eagle3tui", "--config", str(root / "pipeline.toml"),
                    "start", "--all"], check=True, capture_output=True, env=env, cwd=root)
    kills = 0
    disorders: dict[str, int] = {"rotate": 0, "full": 0}
    deadline = time.monotonic() + timeout
    while not done(state) and time.monotonic() < deadline:
        time.sleep(rng.uniform(0.05, 1.5))
        if logs is not None and rng.random() < 0.6:
            what = _disorder(logs, rng)
            if what:
                disorders[what] += 1
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
    duplicates = len(pairs) - len(set(pairs))
    if logs is None:  # with a filling log disk, failed launches are retried: more attempts are right
        duplicates += len(set(pairs) - EXPECTED)
    lost_retry = 0 if any(s == "flaky" and a >= 2 for s, a in pairs) else 1
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
    lost_fatal = _lost_fatal(state, logs) if logs is not None else 0
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
    if logs is not None:
        if orphans or duplicates or lost_retry or lost_exit or torn or lost_fatal or not finished:
            shutil.copytree(logs, root / "logs-kept", dirs_exist_ok=True)
        subprocess.run(["umount", "-l", str(logs)], check=False)
    if orphans or duplicates or lost_retry or lost_exit or torn or lost_fatal or not finished:
        print(f"# trial {n}: kept {root} for inspection", flush=True)
    else:
        shutil.rmtree(root, ignore_errors=True)
    return {"trial": n, "finished": finished, "finished_in_storm": finished_in_storm,
            "kills": kills, "runs": len(pairs),
            "duplicates": duplicates, "lost_retries": lost_retry, "lost_exit_codes": lost_exit,
            "orphans": len(orphans), "torn_lines": torn, "lost_fatal_lines": lost_fatal,
            "rotations": disorders["rotate"], "log_disk_full": disorders["full"]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=120.0, help="storm length cap per trial (s)")
    ap.add_argument("--disorder", action="store_true",
                    help="also rotate logs and fill the log disk (a tmpfs: needs root)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    totals = {"kills": 0, "duplicates": 0, "lost_retries": 0, "lost_exit_codes": 0, "orphans": 0,
              "torn_lines": 0, "lost_fatal_lines": 0, "rotations": 0, "log_disk_full": 0,
              "unfinished": 0, "still_running_at_storm_end": 0}
    for n in range(args.trials):
        r = trial(n, rng, args.timeout, args.disorder)
        print(json.dumps(r), flush=True)
        for k in totals:
            if k == "unfinished":
                totals[k] += int(not r["finished"])
            elif k == "still_running_at_storm_end":
                totals[k] += int(not r["finished_in_storm"])
            else:
                totals[k] += int(r[k])  # type: ignore[call-overload]
    print("TOTAL " + json.dumps(dict(totals, trials=args.trials)), flush=True)
    bad = sum(v for k, v in totals.items()
              if k not in ("kills", "still_running_at_storm_end", "rotations", "log_disk_full"))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
