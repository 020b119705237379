"""Many independent stages started in one pass, while a running stage logs a fatal line.

Issue 29, finding 16: 200 independent stages were launched one by one, the
driver waiting for each wrapper to report its stage's pid, so the pass took
32 s and a running stage's fatal line was alerted 4-30 s late meanwhile.

A real driver (``eagle3tui start --all``) of a pipeline of a ``gate`` stage,
``--stages`` independent stages that wait for it, and a ``watched`` stage
that prints one fatal line (an NCCL watchdog timeout, tagged) the moment the
first of them begins its launch (its log appears) and writes down when.
When the gate opens, one pass launches them all. Figures:

* ``launch_s``: from the first launch to the last (the records'
  ``launched_at``): what the driver spends;
* ``all_running_s``: from the first launch until every stage's process runs
  (the wrappers' ``started_at``): it includes the wrappers' own start-up,
  which is CPU-bound (a Python interpreter each);
* ``fatal_alert_s``: from the fatal line's write to its alert.

Run: ``python bench/bench_many_stages.py [--stages 200]``; prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))

from bench_follow import FATAL, _tag  # noqa: E402 - bench/ is a folder of scripts

TAG = _tag(16016)  # the fatal line's tag
TARGETS = {"launch_s": 2.0}
# What issue 29 measured before launches stopped waiting for each wrapper.
ISSUE_FIGURES = {"launch_s": 32.0, "fatal_alert_s": 30.0}

# The watched stage: the fatal line once the first launched stage's log exists.
WATCHED = """
import sys, time, pathlib
first, written = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
while not first.exists():
    time.sleep(0.01)
sys.stdout.write(sys.argv[3]); sys.stdout.flush()
written.write_text(repr(time.time()))
time.sleep(600)
"""


def stage_name(i: int) -> str:
    return f"s{i:03d}"


def pipeline_toml(root: Path, stages: int) -> str:
    """The benchmark's pipeline: ``watched``, ``gate`` and ``stages`` stages after the gate."""
    fatal = FATAL.format(n=1, tag=TAG)
    watched = [sys.executable, "-c", WATCHED, str(root / "logs" / f"{stage_name(0)}.log"),
               str(root / "fatal.written"), fatal]
    gate = ["sh", "-c", f"while [ ! -e {root / 'go'} ]; do sleep 0.05; done"]
    out = [f'[[stage]]\nname = "watched"\ncommand = {json.dumps(watched)}\nlog = "logs/watched.log"\n',
           f'[[stage]]\nname = "gate"\ncommand = {json.dumps(gate)}\nlog = "logs/gate.log"\n']
    for i in range(stages):
        n = stage_name(i)
        out.append(f'[[stage]]\nname = "{n}"\ndepends_on = ["gate"]\ncommand = ["sleep", "600"]\n'
                   f'log = "logs/{n}.log"\nstop_grace = "1s"\n')
    return "\n".join(out)


def _wait(cond: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _alerts(state: Path) -> list[dict[str, Any]]:
    try:
        text = (state / "alerts.jsonl").read_text()
    except OSError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def measure(root: Path, stages: int = 200, timeout: float = 300.0) -> dict[str, Any]:
    """Run the benchmark in ``root`` (a fresh directory); its figures. Leaves the stages
    running: call ``clean_up(root)`` after."""
    config = root / "pipeline.toml"
    config.write_text(pipeline_toml(root, stages))
    state = root / ".eagle3tui"
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH") or str(HERE.parent.parent)}
    subprocess.run([sys.executable, "-m", "eagle3tui", "--config", str(config), "start", "--all"],
                   check=True, capture_output=True, env=env, cwd=root, timeout=60)
    running = state / "runs" / "{}" / "0001.started.json"
    _wait(lambda: all(Path(str(running).format(n)).exists() for n in ("watched", "gate")), 60,
          "watched and gate running")
    time.sleep(1.0)  # the watched stage's log is followed
    (root / "go").touch()
    names = [stage_name(i) for i in range(stages)]
    started = _wait(lambda: all(d := [_read_json(Path(str(running).format(n))) for n in names]) and d,
                    timeout, "every stage running")
    records = [_read_json(state / "runs" / n / "0001.json") or {} for n in names]
    launched = [float(r["launched_at"]) for r in records]
    written = float(_wait(lambda: (root / "fatal.written").exists()
                          and (root / "fatal.written").read_text(), 30, "the fatal line"))
    tag = f"bench-sample-{TAG}"
    hit = _wait(lambda: [a for a in _alerts(state) if a.get("kind") == "fatal-log-event"
                         and tag in (a.get("details") or {}).get("text", "")], 60, "the fatal alert")
    return {
        "stages": stages,
        "launch_s": round(max(launched) - min(launched), 2),
        "all_running_s": round(max(float(s["started_at"]) for s in started) - min(launched), 2),
        "fatal_alert_s": round(float(hit[0]["time"]) - written, 2),
        "fatal_alerts": len(hit),
        "load_1m": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
    }


def clean_up(root: Path) -> None:
    """SIGKILL the keeper, the driver, every wrapper and every stage's group."""
    state = root / ".eagle3tui"
    for name in ("keeper.json", "driver.json"):
        pid = (_read_json(state / name) or {}).get("pid")
        if isinstance(pid, int):
            _kill(lambda p=pid: os.kill(p, signal.SIGKILL))
    for started in (state / "runs").glob("*/*.started.json"):
        doc = _read_json(started) or {}
        if isinstance(doc.get("wrapper_pid"), int):
            _kill(lambda p=doc["wrapper_pid"]: os.kill(p, signal.SIGKILL))
        if isinstance(doc.get("pgid"), int):
            _kill(lambda g=doc["pgid"]: os.killpg(g, signal.SIGKILL))


def _kill(send: Callable[[], None]) -> None:
    try:
        send()
    except (ProcessLookupError, PermissionError):
        pass


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stages", type=int, default=200)
    args = ap.parse_args()
    # A killed driver's last files may land during the removal: not the figures' concern.
    with tempfile.TemporaryDirectory(prefix="bench-many-stages-", ignore_cleanup_errors=True) as tmp:
        root = Path(tmp)
        try:
            res = measure(root, args.stages)
        finally:
            clean_up(root)
    res["targets"], res["issue_figures"] = TARGETS, ISSUE_FIGURES
    print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
