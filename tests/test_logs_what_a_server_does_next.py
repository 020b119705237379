"""A server's failure judged by what it does next: answers that say it cannot serve, a report's own stack.

Each test classifies a real log file (``classify_log``, what ``eagle3tui classify`` runs) made
of lines posted in the thread its docstring names.
"""

from __future__ import annotations

from pathlib import Path

from eagle3tui.logs.frames import is_address_frame
from eagle3tui.logs.judge import unavailable_answer
from eagle3tui.logs.offline import classify_log


def _verdicts(tmp_path: Path, lines: list[str], kind: str = "service") -> list[tuple[int, str, str]]:
    log = tmp_path / "stage.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    events, _ = classify_log(log, stage_kind=kind)
    return [(e.line, e.kind, e.rule) for e in events]


ENGINE_FAILED = [
    "    raise RuntimeError(",
    "    ^^^^^^^^^^^^^^^^^",
    "RuntimeError: [address=0.0.0.0:36797, pid=6075] Engine core initialization failed. See root cause above. "
    "Failed core proc(s): {}",
]


def test_a_503_after_an_engine_failure_does_not_show_the_server_outlived_it(tmp_path: Path) -> None:
    """xinference re-raises vLLM's engine start failure, then answers the launch request 503
    (xorbitsai/inference#5302): the server is up, its engine is not. A 503 is no evidence of
    surviving; before, the answer read as "the server answered a request after it"."""
    got = _verdicts(tmp_path, [*ENGINE_FAILED, '2026-08-07T18:25:43.679Z INFO uvicorn.access pid:1 role:local '
                               'address:0.0.0.0:9997 node:3d67e2e62a71 172.19.0.1:34608 - "POST /v1/models HTTP/1.1" 503'])
    assert [k for _, k, _ in got] == ["fatal"], got


def test_a_200_after_a_failure_still_shows_the_server_went_on(tmp_path: Path) -> None:
    """The look-alike: an answer that serves is what it always was, evidence of going on."""
    got = _verdicts(tmp_path, [*ENGINE_FAILED, '2026-08-07T18:25:43.679Z INFO uvicorn.access pid:1 role:local '
                               'address:0.0.0.0:9997 node:3d67e2e62a71 172.19.0.1:34608 - "POST /v1/models HTTP/1.1" 200'])
    assert "fatal" not in [k for _, k, _ in got], got


def test_unavailable_answer_reads_the_status_not_the_words() -> None:
    assert unavailable_answer('172.19.0.1:34608 - "POST /v1/models HTTP/1.1" 503')
    assert unavailable_answer("[GIN] 2024/04/25 - 18:30:30 | 503 |    536.2714ms |       127.0.0.1 | POST     \"/api/chat\"")
    assert unavailable_answer('INFO:     127.0.0.1:38764 - "GET /health_generate HTTP/1.1" 503 Service Unavailable')
    assert not unavailable_answer('172.19.0.1:34608 - "POST /v1/models HTTP/1.1" 500')
    assert not unavailable_answer("Running: 503 reqs, Waiting: 0 reqs")


def test_a_final_report_followed_by_its_native_stack_is_the_last_word(tmp_path: Path) -> None:
    """llgtrt's start-up (guidance-ai/llgtrt#7): TensorRT-LLM's assertion as the command's final
    report, then the numbered native frames it prints under it. The frames are the report's,
    not the process going on; before, the first frame settled the report as one it went on from."""
    got = _verdicts(tmp_path, [
        "[TensorRT-LLM][ERROR] [deserialize.cpp::load::572] Error Code 2: OutOfMemory (Requested size was "
        "69568823808 bytes.)",
        "Error: tlc_init: [TensorRT-LLM][ERROR] Assertion failed: Failed to deserialize cuda engine. "
        "(/home/jenkins/agent/workspace/LLM/release-0.14/L0_PostMerge/tensorrt_llm/cpp/tensorrt_llm/runtime/"
        "tllmRuntime.cpp:135)",
        "1       0x7f33b4eabcc7 tensorrt_llm::common::throwRuntimeError(char const*, int, std::string const&) + 82",
    ])
    assert (2, "fatal", "top-level-error") in got, got


def test_a_final_report_followed_by_ordinary_output_went_on(tmp_path: Path) -> None:
    """The look-alike: ordinary output after a command's report still says the process went on."""
    got = _verdicts(tmp_path, ["Error: tlc_init: could not open /models/engine.plan",
                               "Submitted batch job 3310344"], kind="task")
    assert "fatal" not in [k for _, k, _ in got], got


def test_address_frames_need_number_address_symbol_and_offset() -> None:
    assert is_address_frame("1       0x7f33b4eabcc7 tensorrt_llm::common::throwRuntimeError(char const*, int, "
                            "std::string const&) + 82")
    assert is_address_frame("42      0x7fac7ac7f699 /usr/local/lib/python3.12/dist-packages/tensorrt_llm/libs/"
                            "libtensorrt_llm.so(+0x1d5e699) [0x7fac7ac7f699] + 0x1d")
    assert not is_address_frame("1 0x7f33b4eabcc7")
    assert not is_address_frame("step 1 loss 0x10 + 3 lr")
