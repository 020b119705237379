"""Round four of the structural judge: who came down, what could not load, what is absent.

Each case is a shape that any program can print, taken from a public issue
thread (URL beside it; the corpus holds the excerpt) or written in the shape
those programs print where a counter-example is needed. Every verdict goes
through ``classify_log``, the path ``eagle3tui classify`` takes, so the
catch-up prefilter, the anatomy and the judge are exercised together.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import log_verdict

from eagle3tui.logs.anatomy import peel, shape
from eagle3tui.logs.offline import classify_log

# https://github.com/huggingface/text-generation-inference/issues/814, as posted
TGI_814 = "home/udocker/ma-endpoint-pos/data/michelangelo/scripts/TGI/tgivenv/lib/python3.11/site-packages/bitsandbytes/cuda_setup/main.py:145: UserWarning: Found duplicate ['libcudart.so', 'libcudart.so.11.0', 'libcudart.so.12.0'] files: {PosixPath('/usr/local/cuda/lib64/libcudart.so.11.0'), PosixPath('/usr/local/cuda/lib64/libcudart.so')}.. We'll flip a coin and try one of these, in order to fail forward.\nEither way, this might cause trouble in the future:\nIf you get `CUDA error: invalid device function` errors, the above might be the cause and the solution is to make sure only one ['libcudart.so', 'libcudart.so.11.0', 'libcudart.so.12.0'] in the paths that we search based on your env.\n  warn(msg)"




@pytest.mark.parametrize(
    ("line", "level", "body_starts"),
    [
        # https://github.com/Nextomics/NextDenovo/issues/114: the level in brackets, then the time;
        # the bracketed level is the header, not an application tag to peel away
        ("[ERROR] 2021-05-11 12:06:27,882 db_stat failed: please check the following logs:", "error",
         "db_stat failed"),
        # https://github.com/sgl-project/sglang/pull/6555: SGLang's stamp with its parallel ranks
        ("[2025-07-11 17:40:16 DP0 TP0] Watchdog timeout (self.watchdog_timeout=300)", None, "Watchdog timeout"),
        # https://github.com/sgl-project/sglang/issues/22511: a bare bracketed stamp
        ("[2026-04-27 03:18:18] Health check failed. Server couldn't get a response from detokenizer", None,
         "Health check failed"),
        # an application tag before a Python logging header is still peeled
        ("[titan] 2025-03-12 11:10:21,603 - root - WARNING - Dataset c4_test is being re-looped", "warning",
         "Dataset c4_test"),
    ],
)
def test_stamps_and_bracketed_levels_leave_the_message(line: str, level: str | None, body_starts: str) -> None:
    sh = shape(peel(line))
    assert sh.level == level
    assert sh.body.startswith(body_starts), sh


def test_an_epoch_number_is_not_taken_for_a_stamp() -> None:
    # A count at the start of a message is part of it (no time in it).
    assert shape(peel("1234567890 items done")).body == "1234567890 items done"


@pytest.mark.parametrize(
    ("text", "kind", "want", "rule"),
    [
        # https://github.com/instructlab/instructlab/issues/3466: the sentence's own subject, whatever
        # its name, failed to start
        ("vLLM failed to start.  Retry with --enable-serving-output to learn more about the failure.", "task",
         "fatal", "process-died"),
        # https://github.com/OpenNMT/OpenNMT-tf/issues/985: a framework announces its shutdown and its cause
        ("[1,3]<stderr>:Horovod has been shut down. This was caused by an exception on one of the ranks or an "
         "attempt to allreduce, allgather or broadcast a tensor after one of the ranks finished execution.",
         "task", "fatal", "process-died"),
        # https://github.com/sgl-project/sglang/pull/6555: the program's own watchdog fired
        ("[2025-07-11 17:40:16 DP0 TP0] Watchdog timeout (self.watchdog_timeout=300)", "service", "fatal",
         "fatal-level"),
        # https://github.com/TabbyML/tabby/issues/1575: a server cannot load the model it serves
        ("2024-02-28T21:17:59.270801Z ERROR llama_cpp_bindings: crates/llama-cpp-bindings/src/lib.rs:65: "
         "Unable to load model: /Users/nimrod2/.tabby/models/TabbyML/StarCoder-1B/ggml/q8_0.v2.gguf",
         "service", "fatal", "model-unusable"),
        # https://github.com/triton-inference-server/core/issues/244
        ("E0817 19:18:51.786824 2997733 model_repository_manager.cc:1265] failed to poll model 'dne': model not "
         "found in any model repository.", "service", "fatal", "model-unusable"),
        # https://github.com/Nextomics/NextDenovo/issues/114: a named step fails at the ERROR level
        ("[ERROR] 2021-05-11 12:06:27,882 db_stat failed: please check the following logs:", "task", "fatal",
         "step-failed"),
        # https://github.com/rob-smallshire/eseries/issues/4: a CLI's final report in a task (pip)
        ("ERROR: Could not find a version that satisfies the requirement eseries (from versions: none)\n"
         "ERROR: No matching distribution found for eseries", "task", "fatal", "top-level-error"),
        # https://github.com/pytorch/pytorch/issues/69200: a build without an optional part
        ("D:\\Anaconda3\\envs\\chtorch2\\lib\\site-packages\\torch\\cuda\\nccl.py:15: UserWarning: PyTorch is "
         "not compiled with NCCL support", "task", "benign", "optional-missing"),
        # https://github.com/triton-inference-server/tensorrtllm_backend/issues/300: a parameter it looked
        # for and did not find, at WARNING; a default it will use
        ("[TensorRT-LLM][WARNING] Cannot find parameter with name: batch_scheduler_policy", "service", "benign",
         "optional-missing"),
        ("[TensorRT-LLM][WARNING] max_tokens_in_paged_kv_cache is not specified, will use default value",
         "service", "benign", "fallback"),
        # https://github.com/community-scripts/ProxmoxVED/issues/2047: settings the program does not know,
        # at WARNING: it ignores them
        ("Aug 19 18:30:11 vllm vllm[8707]: (APIServer pid=8707) WARNING 08-19 18:30:11 [envs.py:2128] Unknown "
         "vLLM environment variable detected: VLLM_MODEL", "service", "benign", "fallback"),
        # https://github.com/pytorch/ignite/issues/2212: the program guesses a value and goes on
        ("[W ProcessGroupNCCL.cpp:1569] Rank 0 using best-guess GPU 0 to perform barrier as devices used by "
         "this process are currently unknown.", "task", "benign", "fallback"),
        # https://github.com/pytorch/pytorch/issues/138333 and https://github.com/meta-pytorch/torchforge/issues/55:
        # libraries' start-up notices the issue names as harmless
        ("Error in cpuinfo: prctl(PR_SVE_GET_VL) failed", "task", "benign", "library-probe-notice"),
        ("WARNING: Logging before InitGoogleLogging() is written to STDERR", "task", "benign",
         "library-probe-notice"),
    ],
)
def test_structural_verdicts(tmp_path: Path, text: str, kind: str, want: str, rule: str) -> None:
    got, rules = log_verdict(tmp_path, text, kind)
    assert (got, rule in rules) == (want, True), (got, rules)


@pytest.mark.parametrize(
    ("text", "kind", "want"),
    [
        # a model the program says it can do without is not fatal
        ("Could not load model card from the hub; falling back to the local config", "task", "benign"),
        # at the program's WARNING level a load it could not do is something it goes on without
        ("WARNING 05-01 10:00:00 [loader.py:12] Unable to load model index, rebuilding it", "task", "benign"),
        # in a server, a request for a model it does not have fails that request only
        ('ERROR 05-01 10:00:00 [serving_chat.py:120] model "nope" not found for request chatcmpl-1', "service",
         "warning"),
        # a failed step that is retried just after was survived
        ("[ERROR] 2021-05-11 12:06:27,882 upload failed.\nRetrying upload (attempt 2 of 5)", "task", "warning"),
        # a CLI refusing an argument it does not know is a usage error, not an ignored setting
        ("usage: train.py [-h]\ntrain.py: error: unrecognized arguments: --fp17", "task", "fatal"),
        # https://github.com/huggingface/text-generation-inference/issues/814 (the corpus excerpt): advice in
        # the conditional mood after a warning names a fatal family without reporting it. (The warning
        # itself, about a shared object found twice, read as an optional part, benign, until round
        # fresh7: its "this might cause trouble in the future" now makes it the warning the corpus
        # says; the point here is that nothing is fatal.)
        (TGI_814, "service", "warning"),
        # a server's bare "ERROR: " is one request's failure (uvicorn), not its final report
        ("ERROR:    Exception in ASGI application", "service", "warning"),
        # "shut down" without a failure as its cause is an ordinary shutdown
        ("INFO 08-15 17:38:13 [executor.py:120] The executor has been shut down.", "task", "info"),
        # a subject that failed to start, then said it starts without it, is a fallback
        ("flash-attn failed to initialize, proceeding without it", "task", "benign"),
    ],
)
def test_counter_examples_stay_below_fatal(tmp_path: Path, text: str, kind: str, want: str) -> None:
    got, rules = log_verdict(tmp_path, text, kind)
    assert got == want, (got, rules)


def test_a_python_warning_that_names_a_fatal_family_stays_a_warning(tmp_path: Path) -> None:
    # Written in the shape of https://github.com/huggingface/text-generation-inference/issues/814 (bitsandbytes):
    # the warnings module's header and a hypothetical CUDA error in the message.
    line = ("/venv/lib/python3.11/site-packages/bitsandbytes/cuda_setup/main.py:145: UserWarning: a "
            "`CUDA error: invalid device function` was seen while probing; the above might be the cause")
    assert log_verdict(tmp_path, line, "service") == ("warning", {"python-warning"})
    # Without the warnings module's header, the same family is fatal.
    assert log_verdict(tmp_path, "RuntimeError: CUDA error: invalid device function", "task")[0] == "fatal"


def test_death_words_reach_the_judge_in_a_long_log(tmp_path: Path) -> None:
    """A line whose only sign is a death word is judged in catch-up too (the prefilter passes it on)."""
    filler = "".join(f"INFO 01-01 00:00:{i % 60:02d} [x.py:1] step {i} done\n" for i in range(40000))
    log = tmp_path / "big.log"
    log.write_text(filler + "[2025-07-11 17:40:16 DP0 TP0] Watchdog timeout (self.watchdog_timeout=300)\n")
    assert log.stat().st_size > 256 * 1024  # the catch-up (template) path
    events, _ = classify_log(log, stage_kind="service")
    fatal = [e for e in events if e.kind == "fatal"]
    assert [(e.line, e.rule) for e in fatal] == [(40001, "fatal-level")]


def test_a_bare_error_report_followed_by_progress_was_not_final(tmp_path: Path) -> None:
    """What the process does next decides: a task that keeps making progress survived its "ERROR: " line."""
    steps = "\n".join(f"{{'loss': 0.{i:04d}, 'learning_rate': 1e-05, 'epoch': 0.{i:02d}}}" for i in range(1, 60))
    got, rules = log_verdict(tmp_path, "ERROR: could not reach the metrics endpoint\n" + steps, "task")
    assert got == "warning", (got, rules)
