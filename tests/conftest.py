"""Shared fixtures: real pipelines in temp dirs, the CLI as a subprocess, and
cleanup of every process a test left behind (drivers and stage groups)."""

from __future__ import annotations

import errno
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from contextlib import contextmanager
from types import ModuleType
from typing import Callable

import pytest

from eagle3tui.logs.progress import ProgressUpdate, parse_progress

ROOT = Path(__file__).resolve().parent.parent


def wait_for(cond: Callable[[], object], timeout: float = 20.0, interval: float = 0.05,
             what: str = "condition") -> object:
    """Poll ``cond`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class Pipeline:
    """A pipeline.toml in a temp dir plus helpers to drive it through the real CLI."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config = root / "pipeline.toml"
        self.state_dir = root / ".eagle3tui"

    def write(self, text: str) -> "Pipeline":
        self.config.write_text(textwrap.dedent(text))
        return self

    def cli(self, *args: str, timeout: float = 60, check: bool = False) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([sys.executable, "-m", "eagle3tui", "--config", str(self.config), *args],
                              capture_output=True, text=True, timeout=timeout, cwd=self.root)
        if check and proc.returncode != 0:
            raise AssertionError(f"eagle3tui {' '.join(args)} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        return proc

    def status(self) -> dict:
        proc = self.cli("status", "--json")
        return json.loads(proc.stdout)

    def stage(self, name: str) -> dict:
        return next(s for s in self.status()["stages"] if s["name"] == name)

    def records(self, stage: str) -> list[dict]:
        d = self.state_dir / "runs" / stage
        return [json.loads(p.read_text()) for p in sorted(d.glob("[0-9][0-9][0-9][0-9].json"))]

    def alerts(self) -> list[dict]:
        p = self.state_dir / "alerts.jsonl"
        if not p.exists():
            return []
        return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]

    def running(self, stage: str, timeout: float = 20.0) -> dict:
        """Wait until the stage's latest attempt runs (its record has a pid); that record."""
        return wait_for(lambda: (recs := self.records(stage)) and recs[-1].get("pid") and recs[-1],
                        timeout=timeout, what=f"{stage} running")

    def driver_pid(self) -> int | None:
        try:
            return json.loads((self.state_dir / "driver.json").read_text())["pid"]
        except (OSError, ValueError, KeyError):
            return None

    def wrappers_left(self) -> list[int]:
        """Live stage wrappers and keepers of this state directory (``stagewrap.py`` naming it)."""
        import psutil

        state = str(self.state_dir)
        out = []
        for proc in psutil.process_iter(["cmdline"]):
            cmd = proc.info.get("cmdline") or []
            if any(a.endswith("stagewrap.py") for a in cmd) and any(
                    a == state or a.startswith(state + "/") for a in cmd):
                try:
                    if proc.status() != psutil.STATUS_ZOMBIE:
                        out.append(proc.pid)
                except psutil.Error:
                    continue
        return out

    def kill_everything(self) -> None:
        # The keeper and the wrappers first: they would start a driver again.
        try:
            os.kill(json.loads((self.state_dir / "keeper.json").read_text())["pid"], signal.SIGKILL)
        except (OSError, ValueError, KeyError):
            pass
        runs = self.state_dir / "runs"
        run_ids = set()
        for p in runs.glob("*/[0-9][0-9][0-9][0-9].json") if runs.exists() else []:
            try:
                rec = json.loads(p.read_text())
                run_ids.add(rec["run_id"])
                wrapper = rec.get("wrapper_pid")
                # Only a real wrapper: some tests put their own pid in a record.
                if wrapper and wrapper != os.getpid() and \
                        "stagewrap.py" in " ".join(_cmdline(wrapper)):
                    os.kill(wrapper, signal.SIGKILL)
            except (OSError, ValueError, KeyError, TypeError):
                pass
        if run_ids:
            import psutil

            for proc in psutil.process_iter():
                try:
                    if proc.pid != os.getpid() and proc.environ().get("EAGLE3TUI_RUN_ID") in run_ids:
                        proc.kill()
                except (psutil.Error, OSError):
                    pass
        pid = self.driver_pid()
        if pid and pid != os.getpid():  # a test may run the driver in-process
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        runs = self.state_dir / "runs"
        for p in runs.glob("*/*.started.json") if runs.exists() else []:
            try:
                pgid = json.loads(p.read_text())["pgid"]
                os.killpg(pgid, signal.SIGKILL)
            except (OSError, ValueError, KeyError):
                pass



def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def fill_to_enospc(directory: Path) -> None:
    """Fill the filesystem of ``directory`` (a small tmpfs) until writes fail with ENOSPC.

    Two files: 64 KiB writes, then 512-byte ones for the last bytes of slack."""
    for name, chunk in (("filler", 65536), ("filler2", 512)):
        with open(directory / name, "wb", buffering=0) as f:
            try:
                while True:
                    f.write(b"\0" * chunk)
            except OSError as e:
                assert e.errno == errno.ENOSPC


def free_filled(directory: Path) -> None:
    """Remove what :func:`fill_to_enospc` wrote."""
    for name in ("filler", "filler2"):
        (directory / name).unlink(missing_ok=True)


def bench_module(name: str) -> ModuleType:
    """A script of bench/ (``score_corpus``, ``score_whole_logs``) loaded as a module, to test its core."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def classified_events(tmp_path: Path, text: str, kind: str = "task") -> list:
    """The events of ``text`` classified as a whole log (``eagle3tui classify``), info included."""
    from eagle3tui.logs.offline import classify_log

    log = tmp_path / "x.log"
    log.write_text(text + "\n", encoding="utf-8")
    events, _ = classify_log(log, stage_kind=kind, progress_events=True, include_info=True)
    return events


def log_events(tmp_path: Path, lines: list[str], kind: str = "task") -> dict[str, set[str]]:
    """Rules by event kind for ``lines`` classified as a whole log."""
    out: dict[str, set[str]] = {}
    for e in classified_events(tmp_path, "\n".join(lines), kind):
        out.setdefault(e.kind, set()).add(e.rule)
    return out


CORPUS = Path(__file__).resolve().parent / "fixtures" / "corpus" / "corpus.jsonl"


def corpus_tune_row(row_id: str) -> dict:
    """One row of the real-log corpus; tune split only, since held-out rows never build a change."""
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["id"] == row_id:
            assert row["split"] == "tune", row_id
            return row
    raise AssertionError(f"{row_id} is not in the corpus")


def top_verdict(tmp_path: Path, text: str, kind: str = "task") -> tuple[str, list]:
    """The most serious event kind of ``text`` classified as a whole log (``eagle3tui classify``), and all its events."""
    events = classified_events(tmp_path, text, kind)
    kinds = {e.kind for e in events}
    return next((k for k in ("fatal", "warning", "benign", "progress") if k in kinds), "info"), events


def log_verdict(tmp_path: Path, text: str, kind: str = "task") -> tuple[str, set[str]]:
    """The most serious event kind of ``text`` classified as a whole log, and the rules of that kind."""
    top, events = top_verdict(tmp_path, text, kind)
    return top, {e.rule for e in events if e.kind == top}


_THREAD_URL = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+$")


def assert_fresh_rows(rows: list[dict], used_urls: set[str]) -> None:
    """Each row of a fresh set names a public thread none of ``used_urls`` is, and is copied as a log."""
    for r in rows:
        assert _THREAD_URL.match(r["url"]), r["id"]
        assert r["url"] not in used_urls, r["id"]  # fresh: no thread the corpus (or another set) holds
        assert r["label"] in ("fatal", "benign", "warning", "info") and r["kind"] in ("task", "service"), r["id"]
        assert all(line == line.rstrip() for line in r["text"].split("\n")), r["id"]


def assert_after_figure(tmp_path: Path, rows: list[dict], before: dict[str, int], after: dict[str, int]) -> None:
    """A fresh set of fatal endings holds its figures after a round, and beats its figures before."""
    figures, got = fatal_set_figures(tmp_path, rows)
    for key, floor in after.items():
        assert figures[key] >= floor, (key, figures, got)
    assert figures["fatal_called_fatal"] > before["fatal_called_fatal"]
    assert figures["non_fatal_not_fatal"] > before["non_fatal_not_fatal"]


def fatal_set_figures(tmp_path: Path, rows: list[dict]) -> tuple[dict[str, int], dict[str, str]]:
    """How a fresh set of fatal endings and look-alikes (rows with id, text, kind, label) is judged.

    Returns the figures (fatal endings called fatal, look-alikes not called fatal, verdicts
    equal to the label) and each row's verdict by id.
    """
    got = {r["id"]: top_verdict(tmp_path, r["text"], r["kind"])[0] for r in rows}
    fatal = [r for r in rows if r["label"] == "fatal"]
    other = [r for r in rows if r["label"] != "fatal"]
    return {
        "fatal_called_fatal": sum(got[r["id"]] == "fatal" for r in fatal),
        "non_fatal_not_fatal": sum(got[r["id"]] != "fatal" for r in other),
        "exact": sum(got[r["id"]] == r["label"] for r in rows),
    }, got


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


@pytest.fixture
def pipeline(tmp_path: Path):
    p = Pipeline(tmp_path)
    yield p
    p.kill_everything()


# A stage that draws progress until SIGTERM, then prints the file named by its
# first argument (a launcher's failure report, e.g. torchrun's ChildFailedError
# box) and exits 1: what a torchrun job does when a stop reaches it.
TORCHRUN_ON_SIGTERM = textwrap.dedent("""
    import signal, sys, time
    def on_term(signum, frame):
        sys.stdout.write(open(sys.argv[1]).read())
        sys.stdout.flush()
        sys.exit(1)
    signal.signal(signal.SIGTERM, on_term)
    i = 0
    while True:
        i += 1
        print(f"Training:  {i % 100:2d}%|##        | {i}/1000 [00:0{i % 10}<09:00,  1.00it/s]", flush=True)
        time.sleep(0.2)
""")


# -- sets of real lines by thread (the progress-shape rounds) ----------------------------
def thread_ids(rows: list[tuple[str, str, str]]) -> list[str]:
    """Test ids for ``(url, line, kind)`` rows: the thread's owner/repo/kind/number and the row's index."""
    return [f"{u.split('github.com/')[1]}-{i}" for i, (u, _l, _k) in enumerate(rows)]


def thread_params(rows: list[tuple[str, str, str]], known: dict[str, str]) -> list:
    """``(url, line, kind)`` rows as pytest params; a line in ``known`` is a strict xfail with its reason."""
    return [
        pytest.param(*row, id=rid, marks=[pytest.mark.xfail(strict=True, reason=known[row[1]])]
                     if row[1] in known else [])
        for row, rid in zip(rows, thread_ids(rows), strict=True)
    ]


def parsed_progress(line: str) -> ProgressUpdate:
    """The progress update ``line`` parses to (it must parse)."""
    u = parse_progress(line.strip())
    assert u is not None, line
    return u


@contextmanager
def driver_in_thread(pipeline: "Pipeline", gpu=None):
    """A real driver of ``pipeline``'s config in a thread, with [alerts] as configured and a
    fake NVML of one GPU, all stages started; stops ``train`` and joins at the end."""
    import threading

    from eagle3tui.alerts import build_hub
    from eagle3tui.config import load_config
    from eagle3tui.supervisor.driver import Driver
    from eagle3tui.telemetry.fakenvml import FakeGpu, FakeNvml

    config = load_config(pipeline.config)
    hub = build_hub(config)
    drv = Driver(config, hub=hub, nvml=FakeNvml([gpu if gpu is not None else FakeGpu()]), exit_when_idle=False)
    stop = threading.Event()
    t = threading.Thread(target=drv.run, args=(stop,), daemon=True)
    drv.execute({"op": "start", "all": True})
    t.start()
    try:
        yield drv
    finally:
        drv.stop_stage("train")
        stop.set()
        t.join(15)
        hub.close()
