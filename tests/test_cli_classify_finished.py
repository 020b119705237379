"""``classify --estimate`` on a finished log: the bar's drift is the same whether its
frames were redrawn with ``\\r`` or printed one per line, and a closing line of figures
is not taken for the bar's progress (issue 30, finding 10)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _frames() -> list[str]:
    return [f"train: {n:3d}%|#| {n}/100 [{2 * n // 60:02d}:{2 * n % 60:02d}<"
            f"{(200 - 2 * n) // 60:02d}:{(200 - 2 * n) % 60:02d},  0.50it/s]" for n in range(0, 101, 5)]


def _classify(path: Path) -> str:
    proc = subprocess.run([sys.executable, "-m", "eagle3tui", "classify", "--estimate", "2m", str(path)],
                          capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_a_finished_bar_reports_its_drift_with_cr_or_newline_frames(tmp_path: Path) -> None:
    redrawn, lined = tmp_path / "cr.log", tmp_path / "nl.log"
    redrawn.write_text("start\n" + "\r".join(_frames()) + "\ndone: loss 1.23\n")
    lined.write_text("start\n" + "\n".join(_frames()) + "\ndone: loss 1.23\n")
    for path in (redrawn, lined):
        out = _classify(path)
        assert "FINISHED BAR: took 03:20 against an estimate of 02:00 (+67%)" in out, out
        assert "LAST PROGRESS" not in out and "LAST FIGURES" in out and "loss=1.23" in out, out
