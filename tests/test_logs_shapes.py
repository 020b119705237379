"""The judge reads a line's shape: its header, its grammar, what comes next.

Each case is a shape, not a message: the same detector must hold for any
program that prints that shape. Lines come from public issue threads (the
corpus) or are written in the shape those programs print.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import log_verdict

from eagle3tui.logs.anatomy import peel, shape
from eagle3tui.logs.progress import parse_progress


@pytest.mark.parametrize(
    ("line", "level", "source"),
    [
        # Rust tracing (TGI) once the RFC 3339 stamp is peeled
        # (its span and target are the source: tests/test_logs_headers.py)
        ("2024-03-06T17:53:31.052444Z ERROR shard-manager: launcher: Shard 0 failed", "error", "launcher"),
        ("2024-03-06T17:53:31.149481Z  INFO launcher: Shutting down shards", "info", "launcher"),
        # tags then the level, in brackets
        ("[TensorRT-LLM][WARNING] stats_check_period_ms is not specified, will be set to 100 (ms)", "warning",
         "[TensorRT-LLM]"),
        # the level, then its tag or source in brackets
        ("WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions.", "warning", "XFORMERS"),
        ("2022-03-02 08:25:11.39 INFO[client.py:85] Model x load failed", "info", "client.py:85"),
        # rich / zap: a bare stamp, then the level and blanks
        ("23:55:11-483489 WARNING  trust_remote_code is enabled.", "warning", ""),
        ("1.6690869152808545e+09  INFO    setup   starting manager", "info", ""),
        # logger LEVEL (time) - msg
        ("submitit WARNING (2022-08-12 02:06:12,299) - Bypassing signal SIGTERM", "warning", "submitit"),
        # an application tag before a Python logging header
        ("[titan] 2025-03-12 11:10:21,603 - root - WARNING - Dataset c4_test is being re-looped", "warning", "root"),
        # Go's standard logger carries a source and no level
        ("2023/12/24 23:48:35 llama.go:459: error starting llama runner", None, "llama.go:459"),
    ],
)
def test_headers_give_level_and_source(line: str, level: str | None, source: str) -> None:
    sh = shape(peel(line))
    assert (sh.level, sh.source) == (level, source)




@pytest.mark.parametrize(
    ("text", "kind", "want", "rule"),
    [
        # a CLI's final report: Rust/Go main returning an error, click
        ("Error: ShardCannotStart", "service", "fatal", "top-level-error"),
        ("Error: failed to run torchrun --nproc_per_node=4 train.py on 127.0.0.1", "task", "fatal",
         "top-level-error"),
        # ... unless the program goes on (20 more lines of its output)
        ("Error: could not reach the cache, continuing\n" + "\n".join(f"INFO step {i} done" for i in range(25)),
         "task", "warning", "top-level-error"),
        # a part of the job that could not come up, a container the kernel killed
        ("2023-07-24T02:39:20.704629Z ERROR text_generation_launcher: Shard 0 failed to start", "service", "fatal",
         "process-died"),
        ('Warning  Failed  113s  kubelet  Error: container init was OOM-killed (memory limit too low?)', "task",
         "fatal", "process-died"),
        ("mpirun noticed that process rank 0 with PID 1234 on node n1 exited on signal 9 (Killed).", "task", "fatal",
         "launcher-kill"),
        ("MPI_ABORT was invoked on rank 2 in communicator MPI_COMM_WORLD with errorcode 1.", "task", "fatal",
         "launcher-kill"),
        # a native failure at a source location, whatever the file is called
        ("NCCL failure *MyProgram*.cu:110 'unhandled system error'", "task", "fatal", "native-check-failed"),
        # error words that name a field are not an error
        ('time="2024-02-21T09:30:56Z" level=info msg="Job=x, running=1, succeeded=0, failed=0, Replicas=1"', "service",
         "info", ""),
        # a harmless family at INFO level without error-looking words is plain information
        ("INFO:trl.extras.vllm_client:Server is not up yet. Retrying in 2.0 seconds...", "task", "info", ""),
        # a substitution the program announces, with or without a level
        ("[TensorRT-LLM][WARNING] cancellation_check_period_ms is not specified, will be set to 100 (ms)", "service",
         "benign", "fallback"),
        ("Caching is incompatible with gradient checkpointing. Setting `past_key_value=None`.", "task", "benign",
         "fallback"),
        ("WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:", "task", "benign",
         "optional-missing"),
        # a server error in a Gin access line fails that request; the server goes on
        ('[GIN] 2025/02/10 - 11:20:45 | 500 | 51.787708541s |       127.0.0.1 | POST     "/api/chat"', "service",
         "warning", "request-failed"),
        # round three: Kubernetes' state of a container that keeps dying, in a kubectl table row
        ("trainer-master-0      0/1     CrashLoopBackOff   5 (30s ago)   4m", "task", "fatal", "process-died"),
        ("job-7-worker-1        0/1     ImagePullBackOff   0             2m", "service", "fatal", ""),
        # a compound noun that names a server is a part of the job that died
        ("2025-01-01T00:00:00.000001Z ERROR launcher: Webserver crashed", "service", "fatal", "process-died"),
        # Python's header for a thread's exception raised during its own shutdown
        (("Exception in thread reader-2 (most likely raised during interpreter shutdown):\n"
          "Traceback (most recent call last):\n  File \"/x/worker.py\", line 3, in run\n"
          "TypeError: 'NoneType' object is not callable"), "task", "benign", "exception-ignored"),
        # a change the program announces for later (FutureWarning's subject), a value it ignores
        ("/opt/lib/x.py:12: UserWarning: the default of `strict` will change to True in a future release.", "task",
         "benign", "fallback"),
        ("WARNING 01-01 00:00:00 [protocol.py:1] Unknown fields in the request were ignored: {'foo'}", "service",
         "benign", "fallback"),
        # a numbered retry
        ("warn: Client - Retry 2 for POST /upload after a read timeout (SocketError)", "task", "benign", "retry"),
        # a loss that is NaN, whatever separates the name from the value
        ("iter 40: loss nan, time 10.2ms", "task", "warning", "nan-loss"),
        # a native stack's header continues the record before it: a retried connection ...
        (("[W101 00:00:00.000000 TCPStore.cpp:10] [c10d] connect to 10.0.0.1:29500 failed - retrying (try=2)\n"
          "Exception raised from connect at /src/c10d/socket.cpp:100 (most recent call first):"), "task", "benign",
         "retry"),
        # ... and after nothing it reads as the failure it is
        ("Exception raised from connect at /src/c10d/socket.cpp:100 (most recent call first):", "task", "fatal",
         "fatal-level"),
        # indented items below an INFO line belong to that INFO record
        (("2024-01-01 10:00:00,000 - loader:12 - INFO - 2 samples failed this epoch:\n"
          "    [a.png failed to decode] - 3\n    [b.png failed range check] - 1"), "task", "benign",
         "info-level-error"),
    ],
)
def test_structure_decides(tmp_path: Path, text: str, kind: str, want: str, rule: str) -> None:
    got, rules = log_verdict(tmp_path, text, kind)
    assert got == want, (got, rules)
    if rule:
        assert rule in rules, rules


@pytest.mark.parametrize(
    "line",
    [
        "| epoch 019 | 0161656 updates | words/s   14482| trainloss     1.94 | train ppl     3.84",
        "    1 93.44 s run, 11.8750 loss, 0.000000000001 LR, 642.43 GB used,  19644.30 GFLOPS",
        "[SERVER-OUT] Progress: |--------------------------------------------------| 2.0% Complete",
        "Downloading: 45%",
        "done 45 of 100 (45.0%)",
        "ETA: 0:01:23, 120 it done",
        "it 500: 3.21 s/it",
        # tqdm's left half, the rest cut at the terminal's width
        "      13/30      13.1G      1.822      21.96     0.5235          9        576: 100%|█",
    ],
)
def test_counter_shapes_are_progress(line: str) -> None:
    assert parse_progress(line) is not None


@pytest.mark.parametrize(
    "line",
    [
        "O^O/ \\_/ \\    Batch size per device = 5 | Gradient Accumulation steps = 8",
        "GPU util 30%",
        "theta = 3",
        "Metadata: 12 (3%)",
    ],
)
def test_settings_and_gauges_are_not_progress(line: str) -> None:
    assert parse_progress(line) is None


def test_eta_field_is_read_as_remaining_time() -> None:
    upd = parse_progress("[12/100][200/500] eta 0:10:00 lr 0.01")
    assert upd is not None and upd.remaining_s == 600.0
    upd = parse_progress("speed: 12.3 it/s eta: 2h")
    assert upd is not None and upd.remaining_s == 7200.0
