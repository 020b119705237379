"""The first ``make`` says what it builds, why, how long, and that it happens once (issue 16, finding 2).

Runs the real Makefile with a stand-in interpreter (a shell script that logs
its arguments and makes a venv layout), so the slow llama.cpp build is not
repeated; what is checked is the order and text of what make prints.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STUB = """#!/bin/sh
echo "$@" >> "{log}"
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then mkdir -p "$3/bin"; cp "$0" "$3/bin/python"; fi
exit 0
"""


def test_wheel_build_is_announced_once(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    stub = tmp_path / "python3"
    stub.write_text(STUB.format(log=log))
    stub.chmod(0o755)
    wheelhouse = tmp_path / "wheels"
    target = f"{wheelhouse}/.llama-cpp-0.3.36-portable"
    argv = ["make", "-f", str(REPO / "Makefile"), f"PYTHON={stub}", f"VENV={tmp_path}/venv",
            f"WHEELHOUSE={wheelhouse}", target]

    first = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stdout + first.stderr
    out = first.stdout
    said = out.index("==> Building llama-cpp-python")
    assert said < out.index("pip wheel"), out  # announced before the silent build starts
    for words in ("inference server", "about 10 minutes", "happens once", str(wheelhouse)):
        assert words in out, out
    assert "-m pip wheel" in log.read_text()

    second = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert second.returncode == 0
    assert "==> Building" not in second.stdout  # the wheel is kept: no second build
    assert log.read_text().count("-m pip wheel") == 1


def _dry_run(tmp_path: Path, target: str) -> str:
    proc = subprocess.run(["make", "-n", "-f", str(REPO / "Makefile"), f"VENV={tmp_path}/venv",
                           f"WHEELHOUSE={tmp_path}/wheels", target],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_make_test_lints_prints_the_slowest_tests_and_stops_slurm(tmp_path: Path) -> None:
    out = _dry_run(tmp_path, "test")
    assert "ruff check" in out and "lint-imports" in out
    assert "--durations=25" in out
    assert out.index(".ci/slurm-up") < out.index("-m pytest") < out.index(".ci/slurm-down"), out


def test_make_test_fast_runs_no_slurm_no_model_no_whole_logs(tmp_path: Path) -> None:
    out = _dry_run(tmp_path, "test-fast")
    assert "ruff check" in out and "--durations=" in out
    assert "slurm-up" not in out and '-m "not slow and not slurm"' in out
    assert "tests/test_logs_*.py" in out and "test_whole_logs" not in out
    assert "--ignore=tests/test_logs_summary_listing.py" in out  # large generated logs, both ways
    for heavy in ("test_pipeline_model", "test_pipeline_data", "test_tui_", "test_watch_", "test_slurm_executor"):
        assert heavy not in out, heavy
