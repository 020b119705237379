"""The phase of a service's stream: a harmless WARNING while it starts is a start-up notice.

eagle3tui/logs/service_phase.py: before a service is ready (the ``server-ready`` marker
of the shipped pack, or its readiness probe), a WARNING record of its own logger with
nothing error-looking in it is ``startup-notice`` (benign). After readiness, in a task,
or with an exception class in the message, the warning keeps its verdict.

The start-up lines are real, posted in the public threads named beside them (rows of
tests/fixtures/corpus/serving_unseen.jsonl); the look-alikes reuse them in another phase.
"""

from __future__ import annotations

import time
from pathlib import Path

from eagle3tui.logs.monitor import StageLogMonitor
from eagle3tui.logs.rules import build_ruleset
from tests.conftest import log_verdict

# https://github.com/kserve/kserve/pull/4368 (vLLM on a CPU host; the engine starts)
VLLM_CPU = [
    "WARNING 04-07 08:49:47 [arg_utils.py:1765] device type=cpu is not supported by the V1 Engine. Falling back to V0.",
    "WARNING 04-07 08:49:47 [cpu.py:94] Environment variable VLLM_CPU_KVCACHE_SPACE (GB) for CPU backend is not set, "
    "using 4 by default.",
    "WARNING 04-07 08:49:47 [cpu.py:107] uni is not supported on CPU, fallback to mp distributed executor backend.",
]
# https://github.com/noonghunna/club-3090/issues/104 (the server is then benchmarked at 67 TPS)
VLLM_PADDING = [
    "(Worker_TP0 pid=104) WARNING 05-09 10:37:02 [kv_cache_utils.py:1152] Add 3 padding layers, may waste at most "
    "6.25% KV cache memory",
    "(Worker_TP1 pid=105) INFO 05-09 10:37:02 [gpu_model_runner.py:6021] Profiling CUDA graph memory: PIECEWISE=5 "
    "(largest=16)",
]
# https://github.com/huggingface/text-generation-inference/issues/1778 (once per shard)
TGI_KERNELS = ["2024-04-20T07:20:49.352816Z  WARN text_generation_launcher: We're not using custom kernels."] * 3
READY = "INFO:     Application startup complete."


def test_a_starting_servers_own_warnings_are_startup_notices(tmp_path: Path) -> None:
    for lines in (VLLM_CPU, VLLM_PADDING, TGI_KERNELS):
        top, rules = log_verdict(tmp_path, "\n".join(lines), "service")
        assert top == "benign" and "startup-notice" in rules, (lines[0], rules)


def test_the_same_warning_after_readiness_stays_a_warning(tmp_path: Path) -> None:
    top, rules = log_verdict(tmp_path, "\n".join([READY, *VLLM_PADDING]), "service")
    assert (top, rules) == ("warning", {"python-warning"})


def test_a_warning_repeated_after_readiness_is_judged_again(tmp_path: Path) -> None:
    # The same template before and after the marker: the notice is not remembered for it.
    top, rules = log_verdict(tmp_path, "\n".join([TGI_KERNELS[0], READY, TGI_KERNELS[0]]), "service")
    assert (top, rules) == ("warning", {"python-warning"})


def test_in_a_task_the_warning_stays_a_warning(tmp_path: Path) -> None:
    assert log_verdict(tmp_path, "\n".join(VLLM_PADDING), "task") == ("warning", {"python-warning"})


def test_a_starting_warning_naming_an_exception_is_no_notice(tmp_path: Path) -> None:
    line = "WARNING 05-09 10:37:02 [loader.py:88] ValueError: shard 3 has no weights, skipping it"
    top, rules = log_verdict(tmp_path, line, "service")
    assert top == "warning" and "startup-notice" not in rules


def test_a_starting_warning_that_reports_a_failure_is_no_notice(tmp_path: Path) -> None:
    line = "WARNING 05-09 10:37:02 [loader.py:88] Profiling run failed on rank 0"
    top, rules = log_verdict(tmp_path, line, "service")
    assert top == "warning" and "startup-notice" not in rules


def test_the_readiness_probe_ends_the_start_up_phase(tmp_path: Path) -> None:
    # A live monitor on a real file: the supervisor's probe answers between two polls.
    log = tmp_path / "serve.log"
    log.write_text(VLLM_PADDING[0] + "\n", encoding="utf-8")
    m = StageLogMonitor(log, rules=build_ruleset(), stage_kind="service", went_on_s=0.0)
    first = [(e.kind, e.rule) for e in m.poll()]
    assert first == [("benign", "startup-notice")]
    m.mark_ready(time.time())
    with log.open("a", encoding="utf-8") as f:
        f.write(VLLM_PADDING[0].replace("10:37:02", "10:39:15") + "\n")
    later = [(e.kind, e.rule) for e in m.poll()]
    assert later == [("warning", "python-warning")]


# https://github.com/guidance-ai/llgtrt/issues/7 (TensorRT-LLM could not load its engine; the server never came up)
ENGINE_FAILED = ("[TensorRT-LLM][ERROR] [deserialize.cpp::load::572] Error Code 2: OutOfMemory "
                 "(Requested size was 69568823808 bytes.)")
# https://github.com/vllm-project/vllm/issues/17431 (start-up lines of a vLLM server)
LOADING = [f"INFO 04-30 10:20:3{i} [monitor.py:33] torch.compile takes 13.93 s in total" for i in range(8)]


def _finished(tmp_path: Path, lines: list[str], exit_code: int, ready_probe: bool = False) -> list[tuple[str, str]]:
    log = tmp_path / "serve.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    m = StageLogMonitor(log, rules=build_ruleset(), stage_kind="service", went_on_s=0.0,
                        started_at=time.time() - 3600)  # ran an hour: no early-exit report
    events = m.poll()
    if ready_probe:
        m.mark_ready(time.time())
    events += m.finish(exit_code=exit_code)
    return [(e.kind, e.rule) for e in events if e.kind in ("fatal", "warning")]


def test_an_error_while_starting_then_a_failed_exit_is_fatal(tmp_path: Path) -> None:
    # The ERROR is past the hold window (8 lines of loading after it) when the process exits 1.
    got = _finished(tmp_path, [ENGINE_FAILED, *LOADING], 1)
    assert ("fatal", "error-then-ended") in got, got


def test_an_error_while_starting_then_a_clean_exit_is_no_death(tmp_path: Path) -> None:
    got = _finished(tmp_path, [ENGINE_FAILED, *LOADING], 0)
    assert not [g for g in got if g[0] == "fatal"], got


def test_an_error_after_readiness_then_a_failed_exit_is_not_blamed_on_start_up(tmp_path: Path) -> None:
    got = _finished(tmp_path, [READY, ENGINE_FAILED, *LOADING], 1)
    assert not [g for g in got if g[0] == "fatal"], got
    got = _finished(tmp_path, [ENGINE_FAILED, *LOADING], 1, ready_probe=True)
    assert not [g for g in got if g[0] == "fatal"], got


# https://github.com/karakeep-app/karakeep/issues/1593 (ollama: prompts truncated, requests still answered 200)
OLLAMA_ANSWERED = ('Jun 10 22:46:49 ollama-host ollama[159]: [GIN] 2025/06/10 - 22:46:49 | 200 |      1h24m39s |'
                   '    10.99.99.105 | POST     "/api/chat"')
OLLAMA_TRUNCATING = ('Jun 10 21:22:18 ollama-host ollama[159]: time=2025-06-10T21:22:18.314Z level=WARN '
                     'source=runner.go:128 msg="truncating input prompt" limit=512 prompt=617 keep=4 new=512')


def test_a_request_answered_ends_the_start_up_phase(tmp_path: Path) -> None:
    # No readiness line a rule knows, but the server logs a request it answered: it
    # serves, and a later WARNING is about that work, not about starting.
    assert log_verdict(tmp_path, "\n".join([OLLAMA_TRUNCATING]), "service")[0] == "benign"
    top, rules = log_verdict(tmp_path, "\n".join([OLLAMA_ANSWERED, OLLAMA_TRUNCATING]), "service")
    assert (top, rules) == ("warning", {"python-warning"}), rules
