"""``logs`` prints the last ``\\r`` frame of a progress line, not all frames joined (issue 16, 12)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from eagle3tui.frontends.cli import last_frames
from eagle3tui.frontends.tui.format import drift_style

SCRIPT = r"""
import sys
for i in range(0, 101, 10):
    sys.stdout.write(f"\r{i:3d}%|{'#' * (i // 10):10}| {i}/100")
sys.stdout.write("\n")
print("received SIGTERM; stopping at the next safe point")
print("done")
"""


def test_logs_prints_each_progress_line_as_its_last_frame(tmp_path: Path) -> None:
    (tmp_path / "bar.py").write_text(SCRIPT)
    (tmp_path / "pipeline.toml").write_text(textwrap.dedent(f"""
        [[stage]]
        name = "bar"
        command = ["{sys.executable}", "bar.py"]
    """))
    base = [sys.executable, "-m", "eagle3tui", "--config", str(tmp_path / "pipeline.toml")]
    run = subprocess.run(base + ["start", "bar", "--wait", "--timeout", "60"], capture_output=True,
                         text=True, timeout=90)
    assert run.returncode == 0, run.stderr
    out = subprocess.run(base + ["logs", "bar"], capture_output=True, text=True, timeout=60).stdout
    lines = out.splitlines()
    assert "100%|##########| 100/100" in lines
    assert not any(" 50%" in ln for ln in lines)  # earlier frames are not glued on
    assert "received SIGTERM; stopping at the next safe point" in lines
    assert max(len(ln) for ln in lines) < 120
    # The file keeps every frame.
    assert b"\r 50%" in (tmp_path / ".eagle3tui" / "logs" / "bar.log").read_bytes()


def test_last_frames_keeps_plain_lines() -> None:
    assert last_frames("a\nb\r c\n") == "a\n c\n"
    assert last_frames("plain\n") == "plain\n"


def test_ahead_of_estimate_is_not_a_warning() -> None:
    assert drift_style(-0.85, 0.25) == "green"
    assert drift_style(0.2, 0.25) == "yellow" and drift_style(0.4, 0.25) == "bold red"
