"""Snapshot tests of the main screen at 80x24 and 160x48 (pytest-textual-snapshot).

Deterministic content: finished stages from pre-written run records, a fixed
log with the verdicts the driver's own classifier writes for it, fixed alerts,
the driver's GPU document for one sample of two fake GPUs (built by the same
telemetry code the driver runs) and a frozen clock. Update the SVGs after an intended change with
``pytest tests/test_tui_snapshots.py --snapshot-update`` and look at them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from eagle3tui.config import load_config
from eagle3tui.atomic import atomic_write_json
from eagle3tui.frontends.tui.app import EagleApp
from eagle3tui.supervisor.records import RunRecord, RunStore
from eagle3tui.supervisor.stage_alerts import StageWatch, ruleset_for
from eagle3tui.supervisor.state import Intent
from eagle3tui.telemetry.collector import GpuMonitor, memory_history, summarize
from eagle3tui.telemetry.fakenvml import FakeGpu, FakeNvml

T0 = 1_780_000_000.0  # 2026-05-28 20:26:40 UTC
GIB = 1 << 30


@pytest.fixture
def utc() -> Iterator[None]:
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = old
    time.tzset()


def build_state(root: Path) -> EagleApp:
    """A pipeline with finished, failed, skipped and pending stages, all from files."""
    root.mkdir(parents=True, exist_ok=True)
    stages = ["serve", "regenerate", "extract", "vocab", "train", "export", "evaluate"]
    toml = ['[pipeline]\nname = "eagle3-demo"\n']
    for i, name in enumerate(stages):
        dep = f'depends_on = ["{stages[i - 1]}"]\n' if i else ""
        est = 'estimate = "20m"\n' if name == "train" else ""
        gpus = "gpus = 0\n" if name in ("serve", "extract", "train") else ""
        kind = 'kind = "service"\n' if name == "serve" else ""
        toml.append(f'\n[[stage]]\nname = "{name}"\ncommand = ["true"]\nresume = ["--resume"]\n'
                    f"{dep}{est}{gpus}{kind}")
    (root / "pipeline.toml").write_text("".join(toml))
    cfg = load_config(root / "pipeline.toml")
    store = RunStore(cfg.state_dir)
    logs = cfg.state_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)

    def record(name: str, attempt: int, start: float, end: float, code: int,
               text: bytes, signal: int | None = None, stopped: bool = False) -> None:
        log = logs / f"{name}.log"
        offset = log.stat().st_size if log.exists() else 0
        with open(log, "ab") as f:
            f.write(text)
        rec = RunRecord(stage=name, attempt=attempt, run_id=f"{name}{attempt:04d}",
                        argv=["true"], cwd=str(root), log=str(log), log_offset=offset,
                        launched_at=start, pid=1, started_at=start, ended_at=end,
                        exit_code=None if signal else code, signal=signal,
                        stop_requested_at=end if stopped else None,
                        stop_reason="user" if stopped else None, extra={"finalized": True})
        store.save(rec)

    record("serve", 1, T0, T0 + 1500, 0, b"INFO: Uvicorn running on http://127.0.0.1:8000\n",
           stopped=True)
    record("regenerate", 1, T0 + 60, T0 + 900, 0,
           b"regenerating 512 prompts\n" + b"".join(
               f"\r{p:3d}%|{'#' * (p // 10):10}| {p * 512 // 100}/512".encode() for p in range(0, 101, 5))
           + b"\nwrote 512 responses\n")
    record("extract", 1, T0 + 900, T0 + 1400, 0,
           b"loading target\nUserWarning: TypedStorage is deprecated\nextracted 3 layers\n")
    record("train", 1, T0 + 1500, T0 + 2100, 1,
           b"epoch 1 step 100 loss 2.31\n"
           b"Traceback (most recent call last):\n"
           b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    Intent(wanted=list(stages), skipped=["vocab"]).save(cfg.state_dir)
    alerts = [
        {"level": "info", "kind": "stage-succeeded", "message": "succeeded in 840s",
         "stage": "regenerate", "attempt": 1, "details": {}, "time": T0 + 900, "count": 1},
        {"level": "info", "kind": "benign-error", "message": "harmless warning",
         "stage": "extract", "attempt": 1, "time": T0 + 1000, "count": 1,
         "details": {"explanation": "A deprecation notice; nothing to do.", "line": 2}},
        {"level": "critical", "kind": "fatal-log-event", "message": "CUDA out of memory",
         "stage": "train", "attempt": 1, "time": T0 + 2100, "count": 1,
         "details": {"explanation": "Out of memory: lower the batch size.", "line": 3}},
        {"level": "critical", "kind": "stage-failed", "message": "failed: exit 1",
         "stage": "train", "attempt": 1, "details": {"exit_code": 1}, "time": T0 + 2101, "count": 1},
    ]
    (cfg.state_dir / "alerts.jsonl").write_text("".join(json.dumps(a) + "\n" for a in alerts))
    # What a driver leaves behind: its verdicts on each attempt's lines, and its
    # last GPU sample in state.json.
    rules = ruleset_for(cfg)
    for name in stages:
        rec = store.latest(name)
        if rec is not None:
            watch = StageWatch(cfg.stage(name), rec, cfg, cfg.state_dir, rules)
            watch.poll(rec.ended_at)
            watch.finish(rec)
    write_gpu_state(cfg, [
        FakeGpu(used=61 * GIB, util=87, temp=64, processes={999_999_1: 58 * GIB}),
        FakeGpu(used=2 * GIB, util=0, temp=31),
    ])
    return EagleApp(cfg, clock=lambda: T0 + 2400, start_driver=False)


def write_gpu_state(cfg, gpus: list[FakeGpu], roots: dict[str, int] | None = None) -> None:
    """state.json with the GPU document a driver writes after one sample of ``gpus``."""
    monitor = GpuMonitor(stage_roots=lambda: dict(roots or {}), nvml=FakeNvml(gpus))
    update = monitor.tick()
    atomic_write_json(cfg.state_dir / "state.json",
                      {"schema": 1, "gpu": summarize(update, memory_history(monitor)), "stages": []})


async def _ready(pilot) -> None:
    """Wait until state, log, alerts and the one GPU sample are on screen."""
    app: EagleApp = pilot.app
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if (app.polls >= 1 and app.log_target is not None and app.logview.model.lines
                and app.alerts_panel.alerts
                and "GPU0" in str(app.gpu_panel.render())):
            break
        await pilot.pause(0.05)
    await pilot.pause(0.2)


def test_main_screen_80x24(snap_compare, tmp_path: Path, utc: None) -> None:
    app = build_state(tmp_path / "p")
    assert snap_compare(app, terminal_size=(80, 24), run_before=_ready)


def test_main_screen_160x48(snap_compare, tmp_path: Path, utc: None) -> None:
    app = build_state(tmp_path / "p")
    assert snap_compare(app, terminal_size=(160, 48), run_before=_ready)


def test_failed_stage_selected_160x48(snap_compare, tmp_path: Path, utc: None) -> None:
    app = build_state(tmp_path / "p")

    async def select_train(pilot) -> None:
        await _ready(pilot)
        for _ in range(4):
            await pilot.press("down")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (
                app.log_target and app.log_target.stage == "train"
                and len(app.logview.model.lines) == 3):
            await pilot.pause(0.05)
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=(160, 48), run_before=select_train)


# -- an 8-GPU host (the seed's): nine stages, a TP=8 service on every GPU ----------

SEED_STAGES = ["prepare", "regenerate", "extract", "vocab", "train", "export", "quantize",
               "serve-eval", "evaluate"]


@pytest.fixture
def tp8_service() -> Iterator[tuple[psutil.Process, list[int], psutil.Process]]:
    """A real service root with 8 worker processes (one per GPU, like vLLM's TP=8
    workers) and a real evaluate process; all stopped afterwards."""
    root = subprocess.Popen(
        [sys.executable, "-c",
         "import subprocess, sys, time\n"
         "ws = [subprocess.Popen(['sleep', '600']) for _ in range(8)]\n"
         "print(' '.join(str(w.pid) for w in ws), flush=True)\n"
         "time.sleep(600)\n"], stdout=subprocess.PIPE, text=True)
    evaluate = subprocess.Popen(["sleep", "600"])
    assert root.stdout is not None
    workers = [int(p) for p in root.stdout.readline().split()]
    try:
        yield psutil.Process(root.pid), workers, psutil.Process(evaluate.pid)
    finally:
        for pid in workers:
            try:
                psutil.Process(pid).kill()
            except psutil.NoSuchProcess:
                pass
        for proc in (root, evaluate):
            proc.kill()
            proc.wait()


def build_8gpu_state(root: Path, service: psutil.Process, workers: list[int],
                     evaluate: psutil.Process) -> EagleApp:
    """Nine stages (six done, one failed, a TP=8 service and evaluate running) on 8 GPUs."""
    root.mkdir(parents=True, exist_ok=True)
    toml = ['[pipeline]\nname = "kimi-k2.5"\n']
    for i, name in enumerate(SEED_STAGES):
        dep = f'depends_on = ["{SEED_STAGES[i - 1]}"]\n' if i else ""
        kind = 'kind = "service"\n' if name == "serve-eval" else ""
        gpus = 'gpus = "all"\n' if name in ("serve-eval", "extract", "regenerate") else ""
        toml.append(f'\n[[stage]]\nname = "{name}"\ncommand = ["true"]\n{dep}{kind}{gpus}')
    (root / "pipeline.toml").write_text("".join(toml))
    cfg = load_config(root / "pipeline.toml")
    store = RunStore(cfg.state_dir)
    logs = cfg.state_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    t = T0
    for name in SEED_STAGES:
        log = logs / f"{name}.log"
        running = name in ("serve-eval", "evaluate")
        proc = service if name == "serve-eval" else evaluate
        log.write_bytes(f"{name}: working\n".encode() + (b"" if running or name != "quantize"
                        else b"RuntimeError: calibration data missing\n"))
        rec = RunRecord(stage=name, attempt=1, run_id=f"{name}0001", argv=["true"], cwd=str(root),
                        log=str(log), log_offset=0, launched_at=t,
                        pid=proc.pid if running else 1, create_time=proc.create_time() if running else None,
                        started_at=t, ended_at=None if running else t + 600,
                        exit_code=None if running else (1 if name == "quantize" else 0),
                        extra={} if running else {"finalized": True})
        if name == "serve-eval":
            rec.extra["ready_at"] = t + 60
        store.save(rec)
        t += 600
    Intent(wanted=list(SEED_STAGES)).save(cfg.state_dir)
    alerts = [
        {"level": "info", "kind": "stage-started", "message": "started (attempt 1)",
         "stage": "evaluate", "attempt": 1, "details": {}, "time": T0 + 4800, "count": 1},
        {"level": "critical", "kind": "stage-failed", "message": "failed: exit 1",
         "stage": "quantize", "attempt": 1, "details": {"exit_code": 1, "line": 2},
         "time": T0 + 4200, "count": 1},
    ]
    (cfg.state_dir / "alerts.jsonl").write_text("".join(json.dumps(a) + "\n" for a in alerts))
    gpus = [FakeGpu(used=1 * GIB, util=90 + i, temp=60 + i, processes={pid: 118 * GIB})
            for i, pid in enumerate(workers)]
    write_gpu_state(cfg, gpus, roots={"serve-eval": service.pid})
    return EagleApp(cfg, clock=lambda: T0 + 5600, start_driver=False)


async def _ready_8(pilot) -> None:
    app: EagleApp = pilot.app
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if (app.polls >= 1 and app.logview.model.lines and app.alerts_panel.received
                and "serve-eval" in str(app.gpu_panel.render())):
            break
        await pilot.pause(0.05)
    await pilot.pause(0.2)


def test_eight_gpus_160x48(snap_compare, tmp_path: Path, utc: None, tp8_service) -> None:
    app = build_8gpu_state(tmp_path / "p", *tp8_service)
    assert snap_compare(app, terminal_size=(160, 48), run_before=_ready_8)
    # One GPU per row, each held by the service's worker on it.
    rows = str(app.gpu_panel.render()).splitlines()
    assert len(rows) == 8 and all(r.startswith(f"GPU{i} ") for i, r in enumerate(rows))
    assert all("serve-eval" in r and "°C" in r and "%" in r for r in rows)


def test_eight_gpus_80x24(snap_compare, tmp_path: Path, utc: None, tp8_service) -> None:
    app = build_8gpu_state(tmp_path / "p", *tp8_service)
    seen: dict[str, list] = {}

    async def ready(pilot) -> None:
        await _ready_8(pilot)
        seen["shown"] = [app.table.names[i] for i in app.table.shown()]

    assert snap_compare(app, terminal_size=(80, 24), run_before=ready)
    # Compact: 8 GPUs in the 3 lines the narrow layout gives the panel.
    rows = str(app.gpu_panel.render()).splitlines()
    assert len(rows) == 3 and all(f"{i} " in "".join(rows[:2]) for i in range(8))
    assert rows[2] == "held: serve-eval 0-7"
    # Nine stages with three GPU lines: the stage list gets its rows first, all nine.
    assert seen["shown"] == SEED_STAGES
    # The cursor is on the running task (the log pane follows what runs), not on prepare.
    assert {"quantize", "serve-eval", "evaluate"} <= set(seen["shown"])
    assert app.table.selected_stage == "evaluate"


# -- long log lines: cut with a mark, or wrapped with `w`; no scrollbar glyph -------

LONG_LINES = [
    ("/usr/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py:4807: UserWarning: "
     "No device id is provided via `init_process_group` or `barrier `. Using the current device "
     "set by the user."),
    ("[rank0]:[W1128 14:35:29.117 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has "
     "NOT been destroyed before we destruct ProcessGroupNCCL. On normal program exit, the "
     "application should call destroy_process_group to ensure that any pending NCCL operations "
     "have finished in this process. END-OF-LINE"),
    "short line after them",
]
# What Textual draws a scrollbar with (thumb ends, track): none belongs in the log pane.
SCROLLBAR_GLYPHS = set("▁▂▃▄▅▆▇█▉▊▋▌▍▎▏▐")


def build_long_lines_state(root: Path) -> EagleApp:
    """``build_state`` with long lines at the end of the selected stage's log."""
    app = build_state(root)
    rec = RunStore(app.config.state_dir).latest("serve")
    assert rec is not None
    with open(rec.log, "a") as f:
        f.write("".join(line + "\n" for line in LONG_LINES))
    return app


def screen_rows(app: EagleApp) -> list[str]:
    """The screen as text rows, read from the same SVG export a snapshot stores."""
    import html
    import re

    rows = [""] * app.size.height
    svg = app.export_screenshot()
    for m in re.finditer(r'<text[^>]* x="([\d.]+)"[^>]*clip-path="url\(#[\w-]*line-(\d+)\)">'
                         r"([^<]*)</text>", svg):
        col, row = round(float(m.group(1)) / 12.2), int(m.group(2))
        rows[row] = rows[row].ljust(col) + html.unescape(m.group(3)).replace("\xa0", " ")
    return rows


def log_pane_rows(app: EagleApp, rows: list[str]) -> list[str]:
    """The log pane's rows, left of its vertical scrollbar (a real one, when drawn)."""
    r = app.logview.region
    right = r.right - app.logview.scrollbar_size_vertical
    return [row.ljust(r.right)[r.x:right] for row in rows[r.y:r.bottom]]


async def _ready_long(pilot) -> None:
    await _ready(pilot)
    app: EagleApp = pilot.app
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(
            ln.text == LONG_LINES[-1] for ln in app.logview.model.lines):
        await pilot.pause(0.05)
    await pilot.pause(0.2)


def test_long_lines_cut_80x24(snap_compare, tmp_path: Path, utc: None) -> None:
    app = build_long_lines_state(tmp_path / "p")
    seen: dict[str, list[str]] = {}

    async def ready(pilot) -> None:
        await _ready_long(pilot)
        seen["pane"] = log_pane_rows(app, screen_rows(app))

    assert snap_compare(app, terminal_size=(80, 24), run_before=ready)
    pane = seen["pane"]
    # No horizontal scrollbar: its thumb drew a lone ▌ at the pane's bottom-left.
    assert not SCROLLBAR_GLYPHS & set("".join(pane)), pane
    assert any(row.split()[1:] == ["short", "line", "after", "them"] for row in pane), pane
    # A cut line says so in its last visible cell, and the title says how to see the rest.
    cut = [row for row in pane if "ProcessGroupNCCL.cpp" in row]
    assert cut and cut[0].rstrip().endswith("…"), pane
    assert "w: wrap" in str(app.log_title.render())


def test_long_lines_wrapped_80x24(snap_compare, tmp_path: Path, utc: None) -> None:
    app = build_long_lines_state(tmp_path / "p")
    seen: dict[str, list[str]] = {}

    async def ready(pilot) -> None:
        await _ready_long(pilot)
        await pilot.press("w")
        await pilot.pause(0.2)
        seen["pane"] = log_pane_rows(app, screen_rows(app))

    assert snap_compare(app, terminal_size=(80, 24), run_before=ready)
    pane = seen["pane"]
    assert not SCROLLBAR_GLYPHS & set("".join(pane)), pane
    # Following: the end of the long NCCL line is on screen, on a continuation
    # row (blank gutter), and nothing is cut.
    assert any(row.startswith(" " * 7) and "END-OF-LINE" in row for row in pane), pane
    assert not any(row.rstrip().endswith("…") for row in pane), pane
    assert "wrapped (w: cut)" in str(app.log_title.render())
