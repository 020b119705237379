"""One failure, one page: what ``[alerts] command`` receives when a stage dies of its error.

Real ``eagle3tui --watch`` processes, real stages, and a real command that
records every alert it is run for. The alerts file (the record) keeps every
alert as it happened; the command (the page) gets one per death: the
``stage-failed`` alert, which leads with the fatal line. A process that is
still alive after the hold pages for its fatal line while it lives. A run that
completes pages once, to say so (pipeline-complete), though its log has WARNING lines.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

from conftest import Pipeline, wait_for
from test_watch_e2e import Watch, open_gate

PY = json.dumps(sys.executable)

# A real traceback whose last line reads as PyTorch's does when CUDA runs out of memory.
OOM = textwrap.dedent("""
    import sys
    print("Loading safetensors checkpoint shards: 4/64", flush=True)
    class OutOfMemoryError(RuntimeError):
        pass
    OutOfMemoryError.__module__ = "torch"
    raise OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                           "capacity of 139.81 GiB of which 1.12 GiB is free.")
""")

RECORD = textwrap.dedent("""
    import json, sys
    with open(sys.argv[1], "a") as f:
        f.write(json.dumps(json.load(sys.stdin)) + "\\n")
""")


def _pipeline(p: Pipeline, stage_command: str, hold: str | None) -> tuple[Pipeline, Path]:
    (p.root / "record.py").write_text(RECORD)
    (p.root / "oom.py").write_text(OOM)
    pages = p.root / "pages.jsonl"
    hold_line = f'hold_fatal = "{hold}"' if hold is not None else ""
    return p.write(f"""
        [alerts]
        command = [{PY}, {json.dumps(str(p.root / "record.py"))}, {json.dumps(str(pages))}]
        min_level = "critical"
        {hold_line}
        [[stage]]
        name = "extract"
        command = {stage_command}
    """), pages


def _pages(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _critical_kinds(p: Pipeline) -> list[str]:
    return [a["kind"] for a in p.alerts() if a["level"] == "critical"]


def test_a_death_of_oom_pages_once_and_the_page_names_the_oom(pipeline: Pipeline) -> None:
    p, pages = _pipeline(pipeline, f'[{PY}, {json.dumps(str(pipeline.root / "oom.py"))}]', None)
    w = Watch(p, "--run-all")
    assert w.wait() == 1, w.text()
    # The record is unchanged: the fatal line was alerted as it came, then the failure.
    assert _critical_kinds(p) == ["fatal-log-event", "stage-failed"], p.alerts()
    got = _pages(pages)
    assert [a["kind"] for a in got] == ["stage-failed"], got
    assert got[0]["message"].startswith("failed: torch.OutOfMemoryError: CUDA out of memory"), got


def test_with_hold_fatal_0_a_death_pages_twice(pipeline: Pipeline) -> None:
    # The counter-test: the hold, not the stage, is what makes one page above.
    p, pages = _pipeline(pipeline, f'[{PY}, {json.dumps(str(pipeline.root / "oom.py"))}]', "0s")
    w = Watch(p, "--run-all")
    assert w.wait() == 1, w.text()
    assert [a["kind"] for a in _pages(pages)] == ["fatal-log-event", "stage-failed"]


def test_a_process_alive_after_its_fatal_line_pages_while_it_lives(pipeline: Pipeline) -> None:
    # It prints the error, then hangs (as a rank waiting on a dead peer does) until the gate opens.
    gate = pipeline.root / "gate"
    script = ("echo 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'; "
              f"while [ ! -e '{gate}' ]; do sleep 0.05; done; exit 1")
    p, pages = _pipeline(pipeline, json.dumps(["sh", "-c", script]), "1s")
    w = Watch(p, "--run-all")
    wait_for(lambda: _pages(pages), timeout=30, what="the fatal line's page while the stage lives")
    assert [a["kind"] for a in _pages(pages)] == ["fatal-log-event"]
    assert "stage-failed" not in _critical_kinds(p)  # it is still running
    open_gate(p)
    assert w.wait() == 1, w.text()
    # Its end is a second fact, minutes later in real life: it pages too.
    assert [a["kind"] for a in _pages(pages)] == ["fatal-log-event", "stage-failed"]


# Real lines of a TensorRT-LLM server that served on
# (https://github.com/triton-inference-server/tensorrtllm_backend/issues/396): the thread calls
# them harmless; the classifier reads them as warnings.
TRTLLM = """\
[TensorRT-LLM][INFO] Engine version 0.8.0 found in the config file, assuming engine(s) built by new builder API.
[TensorRT-LLM][WARNING] [json.exception.type_error.302] type must be array, but is null
[TensorRT-LLM][WARNING] Optional value for parameter lora_target_modules will not be set.
[TensorRT-LLM][WARNING] Parameter max_draft_len cannot be read from json:
[TensorRT-LLM][WARNING] [json.exception.out_of_range.403] key 'max_draft_len' not found
"""


def _warning_run(pipeline: Pipeline, extra: str) -> tuple[Pipeline, Path]:
    (pipeline.root / "record.py").write_text(RECORD)
    (pipeline.root / "trtllm.log").write_text(TRTLLM)
    pages = pipeline.root / "pages.jsonl"
    return pipeline.write(f"""
        [alerts]
        command = [{PY}, {json.dumps(str(pipeline.root / "record.py"))}, {json.dumps(str(pages))}]
        min_level = "warning"
        {extra}
        [[stage]]
        name = "serve-check"
        command = ["cat", {json.dumps(str(pipeline.root / "trtllm.log"))}]
    """), pages


def test_a_run_that_completes_with_warning_lines_pages_only_its_completion(pipeline: Pipeline) -> None:
    p, pages = _warning_run(pipeline, "")
    w = Watch(p, "--run-all")
    assert w.wait() == 0, w.text()
    assert "log-warning" in [a["kind"] for a in p.alerts()]  # the record still has them
    assert [a["kind"] for a in _pages(pages)] == ["pipeline-complete"]


def test_log_warnings_true_sends_the_warning_lines_to_the_command(pipeline: Pipeline) -> None:
    p, pages = _warning_run(pipeline, "log_warnings = true")
    w = Watch(p, "--run-all")
    assert w.wait() == 0, w.text()
    assert "log-warning" in [a["kind"] for a in _pages(pages)]
