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
import time
from collections.abc import Iterator
from pathlib import Path

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
