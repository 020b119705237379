"""`eagle3tui status` and `status --json` over fixed run records, byte for byte.

Regenerate after an intended change with:
    EAGLE3TUI_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_cli_golden.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from eagle3tui.config import load_config
from eagle3tui.supervisor.records import RunRecord, RunStore

GOLDEN = Path(__file__).parent / "golden"
T0 = 1_795_000_000.0

CONFIG = """\
[pipeline]
name = "golden"

[[stage]]
name = "prepare"
command = ["true"]
estimate = "10s"

[[stage]]
name = "train"
depends_on = ["prepare"]
command = ["python3", "-m", "pipeline.train"]
resume = ["--resume"]
estimate = "1h"

[[stage]]
name = "export"
depends_on = ["train"]
command = ["true"]
"""


def make_state(root: Path) -> Path:
    cfg_path = root / "pipeline.toml"
    cfg_path.write_text(CONFIG)
    cfg = load_config(cfg_path)
    store = RunStore(cfg.state_dir)

    def record(name: str, attempt: int, start: float, end: float, code: int | None,
               sig: int | None = None, errors: list[dict] | None = None) -> None:
        store.stage_dir(name).mkdir(parents=True, exist_ok=True)
        rec = RunRecord(stage=name, attempt=attempt, run_id=f"{name}{attempt:04d}", argv=["x"],
                        cwd=str(root), log=str(root / f"{name}.log"), launched_at=start,
                        started_at=start, ended_at=end, exit_code=code, signal=sig,
                        pid=40000 + attempt, create_time=start, resume=attempt > 1,
                        resumed_from=attempt - 1 if attempt > 1 else None,
                        extra={"finalized": True, "last_errors": errors or []})
        store.save(rec)

    record("prepare", 1, T0, T0 + 4, 0)
    record("train", 1, T0 + 5, T0 + 1805, None, sig=9, errors=[
        {"line": 812, "rule": "killed", "text": "Killed"}])
    record("train", 2, T0 + 1900, T0 + 2000, 1, errors=[
        {"line": 3, "rule": "nccl", "text": "[rank3]: torch.distributed.DistBackendError: NCCL error \x1b[31min\x1b[0m all_reduce"}])
    return cfg_path


def run(cfg: Path, *args: str) -> str:
    env = dict(os.environ, TZ="UTC")
    out = subprocess.run([sys.executable, "-m", "eagle3tui", "--config", str(cfg), *args],
                         capture_output=True, text=True, timeout=60, env=env)
    return out.stdout.replace(str(cfg.parent), "<root>")


def check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("EAGLE3TUI_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{name} differs; see the module docstring to regenerate"


def test_status_human(tmp_path):
    text = run(make_state(tmp_path), "status")
    assert "\x1b" not in text  # the ANSI in the error line never reaches the terminal
    check("status.txt", text)


def test_status_json(tmp_path):
    doc = json.loads(run(make_state(tmp_path), "status", "--json"))
    doc["time"] = 0
    check("status.json", json.dumps(doc, indent=2, sort_keys=True) + "\n")


def test_status_marks_a_dead_drivers_figures_stale() -> None:
    from eagle3tui.frontends.cli import render_status

    snap = {"pipeline": "p", "config": "/x/pipeline.toml",
            "driver": {"alive": False, "pid": None, "figures_stale": True, "figures_time": 1_000_000.0},
            "stages": [{"name": "train", "kind": "task", "state": "running", "attempt": 1, "pid": 42,
                        "started_at": 999_000.0, "ended_at": None, "reason": "", "hint": "",
                        "live": {"stale": True, "progress": {"n": 5, "total": 10},
                                 "eta": {"remaining_s": 300.0, "drift": 0.4, "at": 1_000_000.0}}}],
            "problems": []}
    text = render_status(snap, now=1_000_100.0)
    assert "when it last wrote them" in text.splitlines()[1]
    row = next(ln for ln in text.splitlines() if ln.startswith("train"))
    assert "stale" in row and "+40%" not in row and "04:" not in row
