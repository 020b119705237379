"""``classify --json`` streams: the events it writes as it reads, in small polls, are
the events (and order) of one whole-log classification, on the real logs of the fixtures."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from eagle3tui.logs import offline

ROOT = Path(__file__).resolve().parent.parent
LOGS = sorted((ROOT / "tests" / "fixtures").glob("whole_logs*/*.log"))


def _as_json(events) -> list[dict]:
    return [ev.to_json() for ev in events]


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_streamed_events_are_the_whole_log_events(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole, _ = offline.classify_log(log, progress_events=True)
    # A few KiB per poll: a traceback or a held error is open across many poll ends.
    monkeypatch.setattr(offline, "STREAM_CHUNK_BYTES", 4096)
    mons: list = []
    streamed = list(offline.iter_log_events(log, mons, progress_events=True))
    assert _as_json(streamed) == _as_json(whole)
    assert mons[0].line_no > 0


def _peak_rss_kib(log: Path) -> int:
    # VmHWM of the running process (ru_maxrss of a child starts at its parent's peak).
    proc = subprocess.Popen([sys.executable, "-m", "eagle3tui", "classify", "--json", str(log)],
                            stdout=subprocess.DEVNULL, cwd=ROOT)
    peak = 0
    while proc.poll() is None:
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
        except OSError:
            break
        for row in status.splitlines():
            if row.startswith("VmHWM:"):
                peak = max(peak, int(row.split()[1]))
        time.sleep(0.02)
    assert proc.wait(timeout=120) == 0
    return peak


def test_classify_json_memory_does_not_grow_with_the_log(tmp_path: Path) -> None:
    # One warning repeated (a torch UserWarning every step): an event per line. Four
    # times the lines (and events) must not cost more memory; a list of every event
    # cost about 40 MB more here.
    line = "/usr/lib/python3/site-packages/torch/nn/modules/module.py:1501: UserWarning: The given NumPy array is not writable\n"
    small, big = tmp_path / "small.log", tmp_path / "big.log"
    small.write_text(line * 40_000)
    big.write_text(line * 160_000)
    grew_kib = _peak_rss_kib(big) - _peak_rss_kib(small)
    assert grew_kib < 10 * 1024, grew_kib
