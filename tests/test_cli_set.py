"""``--set NAME=VALUE`` with a name the pipeline never uses is an error (issue 16, finding 3)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _eagle(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "eagle3tui", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def test_typo_in_set_exits_2_with_the_closest_name() -> None:
    run = _eagle(REPO, "--config", "pipeline.toml", "--set", "sampels=400", "check")
    assert run.returncode == 2, run.stdout + run.stderr
    assert "sampels" in run.stderr and "did you mean --set samples=400?" in run.stderr
    assert "pipeline.toml" in run.stderr  # where
    assert run.stdout == ""  # no "ok"
    # The same typo after the subcommand, and for start: the same refusal.
    run = _eagle(REPO, "--config", "pipeline.toml", "start", "--all", "--set", "sampels=400")
    assert run.returncode == 2 and "did you mean --set samples=400?" in run.stderr


def test_known_and_placeholder_only_names_are_accepted(tmp_path: Path) -> None:
    (tmp_path / "pipeline.toml").write_text(textwrap.dedent(f"""
        [vars]
        samples = "40"
        [[stage]]
        name = "a"
        command = ["{sys.executable}", "-c", "pass", "{{samples}}", "{{model}}"]
    """))
    # samples is in [vars]; model appears only as a placeholder (given by --set).
    run = _eagle(tmp_path, "--set", "samples=400", "--set", "model=/m", "check")
    assert run.returncode == 0, run.stderr
    # Nothing close: the error lists what is known.
    run = _eagle(tmp_path, "--set", "model=/m", "--set", "zzz=1", "check")
    assert run.returncode == 2
    assert "did you mean" not in run.stderr and "known variables: model, samples" in run.stderr
