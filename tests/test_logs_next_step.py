"""Round six: what the process does next decides what an error meant.

An error line that names no family is held for a few lines (offline) or a few
lines/seconds (live): the process carrying on (progress, a part starting
again, a server answering, ordinary INFO lines) makes it harmless; the
process ending right after it (offline: a stop/shutdown line; live: a failing
exit) makes it the error that ended the process. A death that a server's
manager may restart waits for the restart, and is reported after
``recover_s`` if nothing restarts it, even when the log goes quiet.

The excerpts are real, from the public threads named beside them (the corpus
holds them too); the counter-examples are the same excerpts with the telling
line removed or replaced, so the only difference is what came next.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from eagle3tui.logs.judge import next_step
from eagle3tui.logs.monitor import StageLogMonitor
from tests.conftest import log_events


# https://github.com/benoitc/gunicorn/issues/3233: the arbiter reports a worker's
# exit, then boots its replacement.
GUNICORN_3233 = [
    "Jul 05 09:13:44 webapps wsgi.sh[3129704]: [2024-07-05 09:13:44 +0200] [3129704] [CRITICAL] WORKER TIMEOUT (pid:3129714)",
    "Jul 05 09:13:44 webapps wsgi.sh[3129714]: [2024-07-05 09:13:44 +0200] [3129714] [INFO] Worker exiting (pid: 3129714)",
    "Jul 05 09:13:44 webapps wsgi.sh[3129704]: [2024-07-05 09:13:44 +0200] [3129704] [ERROR] Worker (pid:3129714) exited with code 1",
    "Jul 05 09:13:44 webapps wsgi.sh[3154335]: [2024-07-05 09:13:44 +0200] [3154335] [INFO] Booting worker with pid: 3154335",
]
# https://github.com/ggml-org/llama.cpp/issues/27374: a failed fit at llama.cpp's W
# level, then the server goes on initialising.
LLAMA_27374 = [
    "0.00.869.682 W common_fit_params: failed to fit params to free device memory: was unable to fit model into system memory by reducing context, abort",
    "0.04.050.417 I cmn          init: llama threadpool init, n_threads = 6",
    "0.06.377.734 I srv    load_model: initializing, n_slots = 4, n_ctx_slot = 4096, kv_unified = 'true'",
]
# https://github.com/sgl-project/sglang/issues/22511: health checks fail, then the
# server's watchdog stops it.
SGLANG_22511 = [
    '[2026-04-27 03:18:18] INFO:     10.224.0.91:47582 - "GET /health_generate HTTP/1.1" 503 Service Unavailable',
    "[2026-04-27 03:18:18] Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. tic start time: 03:17:58. last_heartbeat time: 03:17:38",
    '[2026-04-27 03:18:20] INFO:     10.224.0.91:38162 - "GET /health_generate HTTP/1.1" 503 Service Unavailable',
    "[2026-04-27 03:20:18] Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. tic start time: 03:19:58. last_heartbeat time: 03:17:38",
    "[2026-04-27 03:20:18] SIGTERM received. signum=None frame=None. Draining requests and shutting down...",
]
# https://github.com/huggingface/text-generation-inference/issues/1795: the web
# server crashes, then the launcher shuts the shards down.
TGI_1795 = [
    "2024-04-23T08:26:48.209311Z ERROR text_generation_launcher: Webserver Crashed",
    "2024-04-23T08:26:48.209348Z  INFO text_generation_launcher: Shutting down shards",
    "2024-04-23T08:26:48.480196Z  INFO shard-manager: text_generation_launcher: Shard terminated rank=3",
]
# https://github.com/tenstorrent/tt-inference-server/issues/3359: vLLM's engine
# stats line, a server's progress.
VLLM_STATS = (
    "2026-05-12T08:01:39.331095044Z (APIServer pid=1) INFO 05-12 08:01:39 [loggers.py:271] Engine 000: Avg prompt "
    "throughput: 6335.3 tokens/s, Avg generation throughput: 4.8 tokens/s, Running: 9 reqs, Waiting: 0 reqs, "
    "GPU KV cache usage: 62.8%, Prefix cache hit rate: 0.0%"
)


# -- the successor reader --------------------------------------------------


@pytest.mark.parametrize(
    ("line", "step"),
    [
        (GUNICORN_3233[3], "restarted"),
        ("INFO:     Started server process [4117]", "restarted"),
        ("Starting epoch 3", "restarted"),
        (LLAMA_27374[1], "carried-on"),
        ('INFO:     127.0.0.1:50412 - "POST /v1/chat/completions HTTP/1.1" 200 OK', "serving"),
        ("1141:M 09 Sep 2021 14:12:06.742 * The server is now ready to accept connections at /tmp/sockets/redis.sock",
         "serving"),
        (SGLANG_22511[4], "ending"),
        (TGI_1795[1], "ending"),
        # counter-examples: a failed request is not serving; another error says nothing
        (SGLANG_22511[0], None),
        (TGI_1795[0], None),
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", None),
        ("    at java.base/java.nio.HeapByteBuffer.<init>(Unknown Source)", None),
    ],
)
def test_next_step_reads_the_line_after(line: str, step: str | None) -> None:
    assert next_step(line) == step


# -- offline: classify a whole excerpt --------------------------------------


def test_worker_exit_then_a_new_worker_boots_is_survived(tmp_path: Path) -> None:
    got = log_events(tmp_path, GUNICORN_3233, "service")
    assert "fatal" not in got
    assert "service-survived" in got["warning"]


def test_worker_exit_with_nothing_after_stays_fatal(tmp_path: Path) -> None:
    # counter-example: the same exit, no replacement booted
    got = log_events(tmp_path, GUNICORN_3233[:3], "service")
    assert got.get("fatal") == {"nonzero-exit"}


def test_error_then_the_server_goes_on_is_harmless(tmp_path: Path) -> None:
    got = log_events(tmp_path, LLAMA_27374, "service")
    assert got.get("benign") == {"error-went-on"} and "warning" not in got and "fatal" not in got


def test_error_with_nothing_after_stays_a_warning(tmp_path: Path) -> None:
    # counter-example: the same line alone; nothing says what came next
    got = log_events(tmp_path, LLAMA_27374[:1], "service")
    assert got == {"warning": {"error-line"}}


def test_error_then_the_process_is_stopped_is_fatal(tmp_path: Path) -> None:
    got = log_events(tmp_path, SGLANG_22511, "service")
    assert got.get("fatal") == {"error-then-ended"}


def test_health_check_failures_without_the_stop_stay_warnings(tmp_path: Path) -> None:
    got = log_events(tmp_path, SGLANG_22511[:4], "service")
    assert "fatal" not in got and got["warning"] == {"error-line"}


def test_error_then_progress_is_harmless(tmp_path: Path) -> None:
    got = log_events(tmp_path, [LLAMA_27374[0], VLLM_STATS], "service")
    assert "error-went-on" in got["benign"] and "warning" not in got


def test_a_crash_followed_by_shutdown_lines_stays_fatal(tmp_path: Path) -> None:
    # the lines after a crash are the process ending, not carrying on
    got = log_events(tmp_path, TGI_1795, "service")
    assert "process-died" in got["fatal"]


def test_an_uncaught_exception_followed_by_info_lines_stays_fatal(tmp_path: Path) -> None:
    # the exception line of https://github.com/huggingface/text-generation-inference/issues/686,
    # then launcher INFO lines in TGI's shape: ordinary lines do not make an exception handled
    lines = [
        "NotImplementedError: Sharded Llama requires Flash Attention enabled models.",
        "2023-07-24T02:39:20.704663Z  INFO text_generation_launcher: Loading shards",
        "2023-07-24T02:39:20.781260Z  INFO text_generation_launcher: Waiting for shard 1 to be ready",
    ]
    got = log_events(tmp_path, lines, "task")
    assert "uncaught-exception" in got.get("fatal", set())


def test_an_oom_is_fatal_whatever_follows(tmp_path: Path) -> None:
    lines = ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", GUNICORN_3233[3], VLLM_STATS]
    got = log_events(tmp_path, lines, "task")
    assert "oom" in got.get("fatal", set())


# -- live: the follower sees lines as they come ------------------------------


def _append(path: Path, *lines: str) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


def test_live_held_error_resolves_when_progress_arrives_in_a_later_read(tmp_path: Path) -> None:
    log = tmp_path / "live.log"
    _append(log, LLAMA_27374[0])
    mon = StageLogMonitor(log, stage_kind="service", started_at=0.0)
    assert mon.poll(now=1.0) == []  # held: nothing yet says what it was
    assert [e.rule for e in mon.held] == ["error-line"]
    _append(log, VLLM_STATS)
    got = [e for e in mon.poll(now=1.5) if e.kind != "progress"]
    assert [(e.kind, e.rule, e.line) for e in got] == [("benign", "error-went-on", 1)]
    assert mon.held == []


def test_live_held_error_stays_a_warning_after_the_window(tmp_path: Path) -> None:
    log = tmp_path / "live.log"
    _append(log, LLAMA_27374[0])
    mon = StageLogMonitor(log, stage_kind="service", started_at=0.0, went_on_s=10.0)
    assert mon.poll(now=1.0) == []
    assert mon.poll(now=5.0) == []
    got = mon.poll(now=11.5)
    assert [(e.kind, e.rule) for e in got] == [("warning", "error-line")]


def test_live_held_error_then_a_failing_exit_is_fatal(tmp_path: Path) -> None:
    log = tmp_path / "live.log"
    _append(log, *SGLANG_22511[:2])
    mon = StageLogMonitor(log, stage_kind="service", started_at=0.0, early_exit_s=0.0)
    assert [e.kind for e in mon.poll(now=1.0)] == []
    got = mon.finish(exit_code=1, now=2.0)
    assert [(e.kind, e.rule, e.line) for e in got if e.kind == "fatal"] == [("fatal", "error-then-ended", 2)]


def test_live_held_error_then_a_clean_exit_stays_a_warning(tmp_path: Path) -> None:
    log = tmp_path / "live.log"
    _append(log, *SGLANG_22511[:2])
    mon = StageLogMonitor(log, stage_kind="service", started_at=0.0)
    mon.poll(now=1.0)
    got = mon.finish(exit_code=0, now=2.0)
    assert [(e.kind, e.rule) for e in got] == [("warning", "error-line")]


def test_live_stop_line_alone_does_not_make_a_fatal(tmp_path: Path) -> None:
    # Live, "SIGTERM received" is also what a stop the user asked for prints:
    # the exit status decides, not the line.
    log = tmp_path / "live.log"
    _append(log, *SGLANG_22511)
    mon = StageLogMonitor(log, stage_kind="service", started_at=0.0)
    got = mon.poll(now=1.0)
    assert not [e for e in got if e.kind == "fatal"]


def test_live_oom_is_reported_in_the_same_read(tmp_path: Path) -> None:
    # no hold, no added latency for an unambiguous fatal
    log = tmp_path / "live.log"
    _append(log, LLAMA_27374[0], "Traceback (most recent call last):", '  File "/x/run.py", line 3, in <module>',
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    mon = StageLogMonitor(log, stage_kind="task", started_at=0.0)
    got = mon.poll(now=1.0)
    assert [(e.kind, e.rule) for e in got if e.kind == "fatal"] == [("fatal", "oom")]


def test_live_service_worker_exit_restarted_in_the_next_read(tmp_path: Path) -> None:
    log = tmp_path / "live.log"
    _append(log, *GUNICORN_3233[:3])
    mon = StageLogMonitor(log, stage_kind="service", started_at=0.0, recover_s=3.0)
    assert not [e for e in mon.poll(now=1.0) if e.kind == "fatal"]
    _append(log, GUNICORN_3233[3])
    got = mon.poll(now=1.5)
    # the master's report of the worker it killed (its CRITICAL, an error held until the
    # replacement boots) and the worker's exit status: both survived
    assert [(e.kind, e.rule) for e in got] == [("warning", "service-survived")] * 2
    assert "WORKER TIMEOUT" in got[0].text and "exited with code 1" in got[1].text


def test_live_service_worker_exit_then_silence_is_reported(tmp_path: Path) -> None:
    # A death nothing restarts must alert even if the log goes quiet (a hung job).
    log = tmp_path / "live.log"
    _append(log, *GUNICORN_3233[:3])
    mon = StageLogMonitor(log, stage_kind="service", started_at=0.0, recover_s=3.0)
    assert not [e for e in mon.poll(now=1.0) if e.kind == "fatal"]
    got = mon.poll(now=4.5)
    assert [(e.kind, e.rule, e.line) for e in got] == [("fatal", "nonzero-exit", 3)]
