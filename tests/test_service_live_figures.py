"""A server, supervised: its throughput is its progress, and a request it fails is no fatal.

The service replays two real excerpts of the corpus (each with its thread's URL
in tests/fixtures/corpus/corpus.jsonl): vLLM failing to parse one request's tool
call while it keeps serving (vllm-project/vllm#13473), then its engine metrics
line. Through the real CLI and driver: ``status --json`` carries the figures,
the stage list's note shows them, and the request error is a warning, never a
critical.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import wait_for

CORPUS = Path(__file__).parent / "fixtures" / "corpus" / "corpus.jsonl"


def excerpt(eid: str) -> str:
    for line in CORPUS.read_text().splitlines():
        obj = json.loads(line)
        if obj["id"] == eid:
            return obj["text"]
    raise AssertionError(f"no corpus excerpt {eid}")


def test_service_figures_and_request_errors(pipeline, tmp_path: Path) -> None:
    (tmp_path / "replay.txt").write_text(excerpt("vllm-13473-1") + "\n"
                                         + excerpt("sendnn-inference-1030-1") + "\n")
    (tmp_path / "serve.py").write_text(
        "import sys, time\nsys.stdout.write(open('replay.txt').read())\nsys.stdout.flush()\n"
        "while True:\n    time.sleep(0.2)\n")
    pipeline.write(f"""
        [[stage]]
        name = "serve"
        kind = "service"
        command = ["{sys.executable}", "serve.py"]
        stop_grace = "3s"
        [[stage]]
        name = "client"
        depends_on = ["serve"]
        command = ["{sys.executable}", "-c", "import time; time.sleep(30)"]
        """)
    pipeline.cli("start", "--all", check=True)
    serve = wait_for(lambda: (s := pipeline.stage("serve"))["live"].get("figures") and s,
                     timeout=30, what="the service's live figures in status --json")
    figs = serve["live"]["figures"]
    assert figs["throughput_tok_s"] == 5.6 and figs["running_reqs"] == 1
    table = pipeline.cli("status").stdout
    assert "5.6 tok/s" in table or "6 tok/s" in table, table
    wait_for(lambda: any(a["kind"] == "log-warning" and a["stage"] == "serve" for a in pipeline.alerts()),
             timeout=20, what="the request error as a warning")
    assert pipeline.stage("serve")["state"] == "running"
    assert not [a for a in pipeline.alerts() if a["level"] == "critical"], pipeline.alerts()
    pipeline.cli("stop", "client")
    pipeline.cli("stop", "serve")
