"""Replay recorded stage logs through the driver's drift alert, and say which alerts the stage's end contradicts.

A recording is a folder (tests/fixtures/drift/*): ``run.json`` (each stage's estimate,
its duration as the driver recorded it, and the alerts the live run raised), and per
stage ``STAGE.log`` (the stage log as written) with ``STAGE.growth`` (``seconds size``
lines: how big the log was how long after the stage started, from
``bench/record_log_growth.py``). The replay writes the log into a file at the pace it
grew and polls the driver's own :class:`~eagle3tui.supervisor.stage_alerts.StageWatch`
after each step, at the recorded time, so the drift alert sees what it saw live.

    python bench/drift_replay.py tests/fixtures/drift/demo-cpu-load6
    python bench/drift_replay.py --make OUT RUN_DIR growth.jsonl   # a recording from a finished run

An alert is *contradicted* when what it claims (``claim``: the drift it asserts as at
least certain; the alert's projected drift where it asserts none) exceeds the stage's
final drift by more than the pipeline's drift threshold.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@dataclass
class StageRecording:
    """One stage of a recording: its log, how the log grew, its estimate and final duration."""

    name: str
    estimate_s: float
    duration_s: float
    log: bytes
    growth: list[tuple[float, int]]  # (seconds after the stage started, log size then)
    live_alerts: list[str] = field(default_factory=list)

    @property
    def final_drift(self) -> float:
        """How far the stage's final duration was from its estimate (0.17 = 17% over)."""
        return self.duration_s / self.estimate_s - 1.0


@dataclass
class DriftAlert:
    """A drift alert a replay raised: when, what it said, the drift it claims."""

    stage: str
    at_s: float  # seconds after the stage started
    message: str
    drift: float
    claim: float


def load_recording(folder: Path) -> tuple[dict[str, Any], list[StageRecording]]:
    """The recording's ``run.json`` and its stages with a log and a growth record."""
    meta = json.loads((folder / "run.json").read_text())
    stages = []
    for name, info in meta["stages"].items():
        log, growth = folder / f"{name}.log", folder / f"{name}.growth"
        if not log.exists() or not growth.exists():
            continue
        points = []
        for line in growth.read_text().splitlines():
            t, size = line.split()
            points.append((float(t), int(size)))
        stages.append(StageRecording(name, float(info["estimate_s"]), float(info["duration_s"]),
                                     log.read_bytes(), points, list(info.get("live_alerts", []))))
    return meta, stages


def replay_stage(stage: StageRecording, drift_threshold: float, workdir: Path) -> list[DriftAlert]:
    """The drift alerts the driver's stage watch raises on ``stage``'s log as it grew."""
    from eagle3tui.config import load_config
    from eagle3tui.supervisor.records import RunRecord
    from eagle3tui.supervisor.stage_alerts import StageWatch, ruleset_for

    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "pipeline.toml").write_text(
        f'[pipeline]\ndrift_threshold = {drift_threshold}\n\n'
        f'[[stage]]\nname = "{stage.name}"\ncommand = ["true"]\nestimate = "{stage.estimate_s:g}s"\n')
    cfg = load_config(workdir / "pipeline.toml")
    log = workdir / f"{stage.name}.log"
    # The attempt starts after the wrapper's header line, as the driver records it.
    header = stage.log.index(b"\n") + 1 if stage.log.startswith(b"[eagle3tui]") else 0
    log.write_bytes(stage.log[:header])
    start = 1_000_000.0
    rec = RunRecord(stage=stage.name, attempt=1, run_id="replay", argv=["true"], cwd=str(workdir),
                    log=str(log), log_offset=header, log_line=1 if header else 0,
                    launched_at=start, started_at=start, pid=1)
    (cfg.state_dir / "runs" / stage.name).mkdir(parents=True, exist_ok=True)
    watch = StageWatch(cfg.stage(stage.name), rec, cfg, cfg.state_dir, ruleset_for(cfg))
    out: list[DriftAlert] = []
    written = header
    with open(log, "ab") as f:
        for t, size in stage.growth:
            if size > written:
                f.write(stage.log[written:size])
                f.flush()
                written = size
            for level, kind, message, details in watch.poll(start + t):
                if kind != "eta-drift":
                    continue
                drift = float(details.get("drift") or 0.0)
                claim = details.get("claim")
                out.append(DriftAlert(stage.name, t, message, drift, float(claim) if claim is not None else drift))
    return out


def contradicted(alert: DriftAlert, stage: StageRecording, drift_threshold: float) -> bool:
    """Whether the stage's final duration contradicts the alert's claim by more than the threshold."""
    return alert.claim - stage.final_drift > drift_threshold


def replay(folder: Path) -> list[tuple[StageRecording, list[DriftAlert]]]:
    """Every stage of the recording in ``folder`` with the drift alerts its replay raised."""
    meta, stages = load_recording(folder)
    threshold = float(meta.get("drift_threshold", 0.25))
    with tempfile.TemporaryDirectory(prefix="drift-replay-") as tmp:
        return [(s, replay_stage(s, threshold, Path(tmp) / s.name)) for s in stages]


def has_progress(data: bytes) -> bool:
    """Whether ``data`` (a log's start) holds a progress line."""
    from eagle3tui.logs.progress import parse_progress

    text = data.decode("utf-8", "replace").replace("\r", "\n")
    return any(parse_progress(line.strip()) is not None for line in text.splitlines() if line.strip())


def make_recording(out: Path, run_dir: Path, growth_path: Path, note: str, config: Path | None = None) -> None:
    """A recording of the finished run in ``run_dir`` (its state dir ``.eagle3tui``) from ``growth_path``.

    The estimates are those of the configuration the driver saved last, or of ``config``
    (the file as it was when the stages started, if it was edited and reloaded since)."""
    from eagle3tui.config import load_config

    state = run_dir / ".eagle3tui"
    saved = json.loads((state / "config.json").read_text())
    with tempfile.TemporaryDirectory(prefix="drift-config-") as tmp:
        (Path(tmp) / "pipeline.toml").write_text(config.read_text() if config else saved["text"])
        cfg = load_config(Path(tmp) / "pipeline.toml", dict(saved.get("overrides") or {}), check_rules=False)
    growth: dict[str, list[tuple[float, int]]] = {}
    for line in growth_path.read_text().splitlines():
        t, name, size = json.loads(line)
        growth.setdefault(name[: -len(".log")], []).append((float(t), int(size)))
    alerts: dict[str, list[str]] = {}
    alerts_path = state / "alerts.jsonl"
    for line in alerts_path.read_text().splitlines() if alerts_path.exists() else []:
        a = json.loads(line)
        if a.get("kind") == "eta-drift":
            alerts.setdefault(a.get("stage") or "", []).append(a.get("message", ""))
    out.mkdir(parents=True, exist_ok=True)
    stages: dict[str, Any] = {}
    for stage in cfg.stages:
        name = stage.name
        runs = sorted((state / "runs" / name).glob("[0-9]*[0-9].json"))
        if stage.kind == "service" or not runs or not stage.estimate_s or name not in growth:
            continue
        rec = json.loads(runs[-1].read_text())
        started, ended = rec.get("started_at") or rec.get("launched_at"), rec.get("ended_at")
        if not ended or rec.get("exit_code") != 0:
            continue
        log = Path(rec["log"]).read_bytes()
        first_t, first_size = growth[name][0]
        if first_t > started + 2.0 and has_progress(log[:first_size]):
            continue  # the recorder started after this stage's bar: when its frames came is unknown
        points = [(max(0.0, t - started), size) for t, size in growth[name]]
        stages[name] = {"estimate_s": stage.estimate_s, "duration_s": round(ended - started, 3),
                        "live_alerts": alerts.get(name, [])}
        (out / f"{name}.log").write_bytes(log)
        (out / f"{name}.growth").write_text("".join(f"{t:.3f} {size}\n" for t, size in points))
    meta = {"note": note, "drift_threshold": cfg.drift_threshold, "stages": stages}
    (out / "run.json").write_text(json.dumps(meta, indent=2) + "\n")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, help="a recording (tests/fixtures/drift/*)")
    ap.add_argument("--make", nargs=2, metavar=("RUN_DIR", "GROWTH"), type=Path,
                    help="first make the recording FOLDER from a finished run and its growth record")
    ap.add_argument("--note", default="", help="with --make: how the run was made (machine, load, date)")
    ap.add_argument("--config-as-run", type=Path, help="with --make: the pipeline file the stages started with")
    args = ap.parse_args(argv)
    if args.make:
        make_recording(args.folder, args.make[0], args.make[1], args.note, args.config_as_run)
    meta, _ = load_recording(args.folder)
    threshold = float(meta.get("drift_threshold", 0.25))
    bad = 0
    for stage, alerts in replay(args.folder):
        print(f"{stage.name:12s} estimate {stage.estimate_s:7.1f}s  took {stage.duration_s:7.1f}s "
              f"({stage.final_drift:+.0%})  live alerts {len(stage.live_alerts)}")
        for msg in stage.live_alerts:
            print(f"    live:   {msg}")
        for a in alerts:
            wrong = contradicted(a, stage, threshold)
            bad += wrong
            print(f"    replay: at {a.at_s:6.1f}s claim {a.claim:+.0%}{'  CONTRADICTED' if wrong else ''}: "
                  f"{a.message}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
