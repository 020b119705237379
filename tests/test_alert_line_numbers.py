"""An alert's line number is the log file's own: what ``grep -n`` prints for that line.

The stage log starts with eagle3tui's header line for each attempt, and a retried
stage appends its second attempt (header and output) to the same file. The
alerts of both attempts, from a real ``--watch --run-all`` run, name the line
that real ``grep -n`` finds for the text they quote.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

import pytest
from conftest import Pipeline
from test_watch_e2e import Watch

PY = json.dumps(sys.executable)
FAILS = textwrap.dedent("""
    import sys
    for i in range(5):
        print(f"step {i} of the warm-up", flush=True)
    print("RuntimeError: CUDA error: an illegal memory access was encountered (attempt marker)", flush=True)
    sys.exit(1)
""")


def _grep_n(pattern: str, path: str) -> list[int]:
    out = subprocess.run(["grep", "-n", "-F", "--", pattern, path], capture_output=True, text=True, check=False)
    return [int(ln.split(":", 1)[0]) for ln in out.stdout.splitlines()]


@pytest.mark.skipif(shutil.which("grep") is None, reason="needs grep")
def test_alert_lines_are_what_grep_n_prints_in_both_attempts(pipeline: Pipeline) -> None:
    script = pipeline.root / "fails.py"
    script.write_text(FAILS)
    p = pipeline.write(f"""
        [[stage]]
        name = "train"
        command = [{PY}, {json.dumps(str(script))}]
        retry = {{ max_attempts = 2, backoff = "0s", on = ["exit:1"] }}
    """)
    w = Watch(p, "--run-all")
    assert w.wait(timeout=90) == 1, w.text()
    fatal = [a for a in p.alerts() if a["kind"] == "fatal-log-event" and a.get("stage") == "train"]
    assert sorted(a["attempt"] for a in fatal) == [1, 2], fatal
    log = pipeline.records("train")[0]["log"]
    assert pipeline.records("train")[1]["log"] == log  # the retry appends to the same file
    found = _grep_n("(attempt marker)", log)
    assert len(found) == 2, (found, open(log).read())
    assert [a["details"]["line"] for a in sorted(fatal, key=lambda a: a["attempt"])] == found
    # The header lines are in the file, before each attempt's output.
    assert _grep_n("[eagle3tui] ", log)[0] == 1
