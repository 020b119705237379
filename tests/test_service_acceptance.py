"""A served draft's acceptance: a live figure of the service, and one warning when it collapses.

Every line replayed here was recorded by a real server and posted in a public
thread; tests/fixtures/acceptance/lines.jsonl keeps each with its URL:

- vLLM V1 ``SpecDecoding metrics`` (vllm-project/vllm#24127, #15902; the
  collapsed draft at 1.00 from vllm-project/vllm-ascend#13665; the newer field
  order from AEON-7/Qwen3.6-27B-AEON-Ultimate-Uncensored-DFlash#6),
- vLLM V0 ``Speculative metrics`` (vllm-project/vllm#9539, #15902),
- SGLang's ``Decode batch`` with ``accept len`` (sgl-project/sglang#11948),
- llama.cpp's slot timing and statistics lines (ggml-org/llama.cpp#24536).

The service stages run under the real CLI and driver.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import wait_for

from eagle3tui.logs.acceptance import parse_acceptance
from eagle3tui.logs.progress import parse_progress, serving_figures

LINES = [json.loads(t) for t in (Path(__file__).parent / "fixtures" / "acceptance" / "lines.jsonl")
         .read_text().splitlines() if t.strip()]
# vllm-project/vllm-ascend#13665: EAGLE-3 on a disaggregated deployment, nothing accepted.
COLLAPSED = [r["line"] for r in LINES if r["url"].endswith("vllm-ascend/issues/13665")]
# ggml-org/llama.cpp#24536: EAGLE-3 at 2.92.
HEALTHY = [r["line"] for r in LINES if r["url"].endswith("llama.cpp/pull/24536")]

# Lines that mention acceptance but are no server's report.
NOT_REPORTS = [
    # pipeline/evaluate.py's own summary: the offline figure, not a server's.
    "evaluate: K=3 acceptance length 2.17 (eagle3), 1.02 (untrained); eagle3 per-position [0.61 0.33 0.15]",
    # a training log's accuracy
    "{'loss': 1.234, 'acc': 0.61, 'epoch': 0.5}",
    # SGLang's decode batch without speculative decoding
    ("[2025-10-22 10:27:56 TP0] Decode batch. #running-req: 1, #token: 108, token usage: 0.00, "
     "cuda graph: True, gen throughput (token/s): 150.39, #queue-req: 0, "),
    # vLLM's engine line
    ("INFO 05-15 10:23:01 [loggers.py:123] Engine 000: Avg prompt throughput: 1.1 tokens/s, "
     "Avg generation throughput: 10.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%"),
]


@pytest.mark.parametrize("row", LINES, ids=[f"{r['format']}-{i}" for i, r in enumerate(LINES)])
def test_each_format_gives_length_rate_and_positions(row: dict) -> None:
    got = parse_acceptance(row["line"])
    assert got is not None and got.format == row["format"]
    figs = serving_figures(parse_progress(row["line"]).metrics)
    if row["length"] is None:
        assert "acceptance_length" not in figs
    else:
        assert figs["acceptance_length"] == pytest.approx(row["length"], abs=1e-3)
    assert figs["acceptance_rate"] == pytest.approx(row["rate"], abs=1e-3)
    assert figs.get("draft_positions") == (None if row["positions"] is None else float(row["positions"]))


def test_sglang_line_keeps_its_throughput_too() -> None:
    row = next(r for r in LINES if r["format"] == "sglang")
    figs = serving_figures(parse_progress(row["line"]).metrics)
    assert figs["throughput_tok_s"] == 0.39 and figs["running_reqs"] == 1
    assert figs["acceptance_length"] == 2.17


@pytest.mark.parametrize("line", NOT_REPORTS)
def test_look_alikes_are_no_acceptance(line: str) -> None:
    assert parse_acceptance(line) is None
    upd = parse_progress(line)
    assert upd is None or "acceptance_length" not in serving_figures(upd.metrics)


# A service that prints its lines one at a time: line i, then it waits for the
# test's ack file i (so each figure is seen before the next replaces it).
STEPPED_SERVER = """
import os, sys, time
lines = open(sys.argv[1]).read().splitlines()
for i, line in enumerate(lines):
    print(line, flush=True)
    while not os.path.exists(f"ack{i}"):
        time.sleep(0.05)
print("replayed", flush=True)
while True:
    time.sleep(0.2)
"""

# A service that repeats its lines every ``period`` seconds for ``seconds`` seconds,
# then writes ``done`` (and keeps serving).
LOOPING_SERVER = """
import sys, time
lines = open(sys.argv[1]).read().splitlines()
period, seconds = float(sys.argv[2]), float(sys.argv[3])
t0 = time.monotonic()
while time.monotonic() - t0 < seconds:
    for line in lines:
        print(line, flush=True)
    time.sleep(period)
print(lines[-1], flush=True)
open("done", "w").write("1")
while True:
    time.sleep(0.2)
"""


def _serve(pipeline, tmp_path: Path, script: str, lines: list[str], args: list[str], acceptance: str) -> None:
    (tmp_path / "replay.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "serve.py").write_text(script)
    argv = ", ".join(json.dumps(a) for a in [sys.executable, "serve.py", "replay.txt", *args])
    pipeline.write(f"""
        [[stage]]
        name = "serve"
        kind = "service"
        command = [{argv}]
        stop_grace = "3s"
        {acceptance}
        [[stage]]
        name = "client"
        depends_on = ["serve"]
        command = ["{sys.executable}", "-c", "import time; time.sleep(60)"]
        """)
    pipeline.cli("start", "--all", check=True)


def _acceptance_alerts(pipeline) -> list[dict]:
    return [a for a in pipeline.alerts() if a["kind"] == "acceptance-low"]


def test_every_format_shows_live_on_the_service_row(pipeline, tmp_path: Path) -> None:
    rows = [r for r in LINES if r["length"] is not None]
    _serve(pipeline, tmp_path, STEPPED_SERVER, [r["line"] for r in rows], [], "")
    for i, row in enumerate(rows):
        serve = wait_for(lambda want=row["length"]: (s := pipeline.stage("serve"))["live"].get("figures", {})
                         .get("acceptance_length") == pytest.approx(want, abs=1e-3) and s,
                         timeout=30, what=f"{row['format']} line {i}'s acceptance length in status --json")
        figs = serve["live"]["figures"]
        assert figs["acceptance_rate"] == pytest.approx(row["rate"], abs=1e-3)
        if i in (0, len(rows) - 1):
            table = pipeline.cli("status").stdout
            assert f"accept len {row['length']:.2f}" in table, table
        (tmp_path / f"ack{i}").write_text("1")
    assert pipeline.stage("serve")["state"] == "running"
    pipeline.cli("stop", "client")
    pipeline.cli("stop", "serve")


def test_collapsed_draft_warns_once_against_the_evaluation(pipeline, tmp_path: Path) -> None:
    # The offline evaluation of the same draft (pipeline/evaluate.py's eval.json shape).
    (tmp_path / "eval.json").write_text(json.dumps({"methods": {
        "eagle3@K=3": {"acceptance_length": 1.96}, "eagle3@K=5": {"acceptance_length": 2.17},
        "untrained@K=5": {"acceptance_length": 1.01}}}))
    _serve(pipeline, tmp_path, LOOPING_SERVER, COLLAPSED, ["0.2", "6"],
           'acceptance = { min_length = 1.3, window = "2s", evaluated = "eval.json" }')
    wait_for(lambda: _acceptance_alerts(pipeline), timeout=30, what="the acceptance warning")
    wait_for(lambda: (tmp_path / "done").exists(), timeout=30, what="the replay's end")
    # The driver has read the whole replay (its last report is the live figure) ...
    wait_for(lambda: pipeline.stage("serve")["live"].get("figures", {}).get("acceptance_length") == 1.0
             and (tmp_path / ".eagle3tui" / "logs" / "serve.log").read_text().count("Mean acceptance length") >= 30,
             timeout=30, what="the replay read to its end")
    # ... and said it once.
    alerts = _acceptance_alerts(pipeline)
    assert len(alerts) == 1, alerts
    a = alerts[0]
    assert a["level"] == "warning" and a["stage"] == "serve"
    msg = a["message"]
    assert msg.startswith("speculative decoding: served 1.00 vs evaluated 2.17 (eagle3@K=5, eval.json)"), msg
    assert "not using the draft as trained" in msg
    for cause in ("layers", "vocabulary mapping", "another target", "temperature"):
        assert cause in msg, msg
    assert a["details"]["evaluated_length"] == 2.17 and a["details"]["acceptance_length"] == 1.0
    assert pipeline.stage("serve")["state"] == "running"
    pipeline.cli("stop", "client")
    pipeline.cli("stop", "serve")


def test_healthy_draft_never_warns(pipeline, tmp_path: Path) -> None:
    # The default policy (min_length 1.3) with a short window; llama.cpp at 2.92.
    _serve(pipeline, tmp_path, LOOPING_SERVER, HEALTHY, ["0.2", "4"], 'acceptance = { window = "1s" }')
    wait_for(lambda: (tmp_path / "done").exists(), timeout=30, what="the replay's end")
    wait_for(lambda: (tmp_path / ".eagle3tui" / "logs" / "serve.log").read_text().count("mean acc") >= 15
             and pipeline.stage("serve")["live"].get("figures", {}).get("acceptance_length") == 2.92,
             timeout=30, what="the replay read to its end")
    assert _acceptance_alerts(pipeline) == []
    pipeline.cli("stop", "client")
    pipeline.cli("stop", "serve")


def test_collapsed_draft_without_evaluation_names_the_threshold(pipeline, tmp_path: Path) -> None:
    _serve(pipeline, tmp_path, LOOPING_SERVER, COLLAPSED, ["0.2", "4"], 'acceptance = { window = "1s" }')
    wait_for(lambda: _acceptance_alerts(pipeline), timeout=30, what="the acceptance warning")
    msg = _acceptance_alerts(pipeline)[0]["message"]
    assert msg.startswith("speculative decoding: mean acceptance length 1.00 (0% of draft tokens) stayed below 1.3"), msg
    pipeline.cli("stop", "client")
    pipeline.cli("stop", "serve")


def test_bad_acceptance_table_is_a_clear_error(pipeline, tmp_path: Path) -> None:
    pipeline.write(f"""
        [[stage]]
        name = "serve"
        kind = "service"
        command = ["{sys.executable}", "-c", "pass"]
        acceptance = {{ min_length = 0.5, windw = "5m" }}
        """)
    proc = pipeline.cli("check")
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "acceptance.min_length" in out and "windw" in out and "pipeline.toml" in out, out


def test_the_default_pipeline_compares_with_its_evaluate_stage() -> None:
    from eagle3tui.config import load_config
    from eagle3tui.supervisor.acceptance_alert import evaluation_file

    config = load_config(Path(__file__).parent.parent / "pipeline.toml")
    serve = config.stage("serve")
    assert serve.acceptance is not None and serve.acceptance.min_length == 1.3 and serve.acceptance.window_s == 300
    assert config.stage("train").acceptance is None  # a task reports no serving figures
    path = evaluation_file(config, serve.acceptance)
    assert path is not None and path == config.stage("evaluate").outputs[0]


def test_evaluated_length_picks_the_served_k(tmp_path: Path) -> None:
    from eagle3tui.supervisor.acceptance_alert import evaluated_length

    f = tmp_path / "eval.json"
    f.write_text(json.dumps({"methods": {"eagle3@K=3": {"acceptance_length": 2.17},
                                         "eagle3@K=7": {"acceptance_length": 2.61},
                                         "ngram@K=7": {"acceptance_length": 1.2}}}))
    assert evaluated_length(f, 3) == (2.17, "eagle3@K=3")
    assert evaluated_length(f, 5) == (2.61, "eagle3@K=7")  # not measured at 5: the largest K
    assert evaluated_length(f, None) == (2.61, "eagle3@K=7")
    f.write_text("{not json")
    assert evaluated_length(f, 3) is None
