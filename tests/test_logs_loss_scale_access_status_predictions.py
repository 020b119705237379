"""Structural cues: the loss scaler's own counter, an access line's status, a glog source location, a predicted failure.

Batch seven (corpus rows 1154-1262) was collected to be representative of what an
engineer running the EAGLE-3 pipeline meets on a GPU host, labelled from its
threads and committed before the classifier ran on it. Its tune half's misses,
with those of the older tune rows, gave four cues, each read from the line's
structure (eagle3tui/logs/judge.py, progress.py and the rule pack):

* the fp16 loss scaler's own counter: an overflow notice whose scale has fallen
  below 2**7 reports steps skipped on nearly every step (a warning), not the few
  overflows of a healthy start (benign);
* an access line in the common format (uvicorn, gunicorn, nginx) whose status is
  500 failed that request, whatever level the access logger gives every request
  (a 503 answers for the server's state: what comes next decides, as before);
* ``name.cc:810`` in a logger header is a source location, not a figure named
  after its file;
* a program that predicts, outright, that what it found can cause errors or a
  hang is warning about this run; a conditional prediction ("... if the mapping
  is incorrect") or one at its INFO level is advice.

Every line is a real corpus line (tune split) from a public thread; the
counter-tests are real lines with the same shapes that must keep their verdict.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import corpus_tune_row, log_verdict

# --- the loss scaler's counter ----------------------------------------------------------

# Threads where the scaler kept halving: DeepSpeed ZeRO-3 overflowing on every step down to
# 32 (deepspeedai/DeepSpeed#1235), a LoRA run halving to 2 before "Current loss scale already
# at minimum" (ymcui/Chinese-LLaMA-Alpaca#534).
COLLAPSED = ["DeepSpeed-1235-1", "Chinese-LLaMA-Alpaca-534-1"]
# A healthy start: the scaler searches down from 2**16 or 2**32 and settles
# (deepspeedai/DeepSpeed#5779, zai-org/CogVideo#233, transformers#9996, MS-G3D#9).
SEARCHING = ["DeepSpeed-5779-1", "CogVideo-233-1", "transformers-9996-1", "MS-G3D-9-1"]


@pytest.mark.parametrize("row_id", COLLAPSED)
def test_a_loss_scale_fallen_below_128_is_a_warning(tmp_path: Path, row_id: str) -> None:
    row = corpus_tune_row(row_id)
    assert row["label"] == "warning"
    kind, rules = log_verdict(tmp_path, row["text"], row["kind"])
    assert (kind, rules) == ("warning", {"loss-scale-collapsed"}), (row_id, kind, rules)


@pytest.mark.parametrize("row_id", SEARCHING)
def test_the_scalers_search_at_the_start_stays_benign(tmp_path: Path, row_id: str) -> None:
    row = corpus_tune_row(row_id)
    assert row["label"] == "benign"
    kind, rules = log_verdict(tmp_path, row["text"], row["kind"])
    assert (kind, rules) == ("benign", {"fp16-overflow-skip"}), (row_id, kind, rules)


# --- access lines ----------------------------------------------------------------------


def _first_line(row_id: str) -> tuple[str, str]:
    row = corpus_tune_row(row_id)
    return row["text"].splitlines()[0], row["kind"]


# The access line alone, without the traceback that follows it in the thread
# (microsoft/graphrag#357, vllm#11629, vllm#17038): before this round it was judged a
# harmless "error word at INFO level".
ACCESS_500 = ["graphrag-357-1", "vllm-11629-1", "vllm-17038-1"]


@pytest.mark.parametrize("row_id", ACCESS_500)
def test_an_access_line_with_a_500_status_fails_that_request(tmp_path: Path, row_id: str) -> None:
    line, kind = _first_line(row_id)
    assert '" 500 ' in line
    assert log_verdict(tmp_path, line, kind) == ("warning", {"request-failed"})


def test_access_lines_with_2xx_and_4xx_statuses_are_not_failures(tmp_path: Path) -> None:
    # Health checks answered 200 (vllm-project/production-stack#43).
    ok = corpus_tune_row("production-stack-43-2")
    assert log_verdict(tmp_path, ok["text"], ok["kind"])[0] == "info"
    # A client's refused request (404 for "/", 400 for a chat template the model lacks):
    # the pack's request-error-survived family, never a warning.
    probe = corpus_tune_row("llmsnap-10-1")
    line_404 = next(ln for ln in probe["text"].splitlines() if '" 404 ' in ln)
    assert log_verdict(tmp_path, line_404, "service")[0] in ("benign", "info")
    refused = corpus_tune_row("production-stack-43-1")
    assert log_verdict(tmp_path, refused["text"], refused["kind"])[0] in ("benign", "info")


# --- a header's source location ---------------------------------------------------------


def test_a_glog_headers_file_and_line_is_not_a_metric(tmp_path: Path) -> None:
    # Triton's start-up (triton-inference-server/tensorrtllm_backend#37):
    # "I1024 04:13:54.419887 169 metrics.cc:810] Collecting metrics for GPU 0: NVIDIA A30".
    row = corpus_tune_row("tensorrtllm_backend-37-1")
    assert row["label"] == "info"
    assert log_verdict(tmp_path, row["text"], row["kind"]) == ("info", set())


def test_metric_names_with_the_same_words_stay_progress(tmp_path: Path) -> None:
    # SGLang's decode stats and DeepSpeed's throughput line (a "[timer.py:197:stop]" header,
    # then figures): a source location in the header does not hide the figures after it.
    for row_id in ("sglang-14972-1", "accelerate-910-1", "TEOChat-16-1"):
        row = corpus_tune_row(row_id)
        assert row["label"] == "progress"
        assert log_verdict(tmp_path, row["text"], row["kind"])[0] == "progress", row_id


# --- an outright prediction of errors or a hang -----------------------------------------

# transformers' "You are using a model of type t5 to instantiate a model of type GraphLlama.
# This is not supported for all configurations of models and can yield errors." (HKUDS/GraphGPT#85,
# huggingface/text-generation-inference#1383), bitsandbytes' "... this might cause trouble in the
# future" (a TGI deployment), accelerate's "Detected kernel version 5.4.250, ...; this can cause
# the process to hang." (huggingface/accelerate#3708).
PREDICTS = ["GraphGPT-85-1", "text-generation-inference-1383-2", "tgi-814-1", "accelerate-3708-1"]


@pytest.mark.parametrize("row_id", PREDICTS)
def test_a_line_that_predicts_errors_or_a_hang_is_a_warning(tmp_path: Path, row_id: str) -> None:
    row = corpus_tune_row(row_id)
    assert row["label"] == "warning"
    kind, rules = log_verdict(tmp_path, row["text"], row["kind"])
    assert kind == "warning" and "trouble-predicted" in rules, (row_id, kind, rules)


def test_a_conditional_or_info_level_prediction_is_advice(tmp_path: Path) -> None:
    # c10d's "... This can potentially cause a hang if this rank to GPU mapping is incorrect."
    # (pytorch/ignite#2212): harmless in its thread.
    ignite = corpus_tune_row("ignite-2212-1")
    assert log_verdict(tmp_path, ignite["text"], ignite["kind"])[0] == "benign"
    # vLLM's INFO-level "Capturing cudagraphs for decoding. This may lead to unexpected
    # consequences if the model is not static. ..." (vllm-project/vllm#11349).
    capture = corpus_tune_row("vllm-11349-2")
    kind, rules = log_verdict(tmp_path, capture["text"], capture["kind"])
    assert kind != "warning" and "trouble-predicted" not in rules
    # The tokenizer's certainty about an over-long input, "Running this sequence through the
    # model will result in indexing errors" (NVlabs/OmniDrive#13): harmless, as its thread says.
    notice = corpus_tune_row("omnidrive-13-1")
    assert log_verdict(tmp_path, notice["text"], notice["kind"]) == ("benign", {"tokenizer-length-notice"})


def test_an_error_that_predicts_a_deadlock_stays_fatal(tmp_path: Path) -> None:
    # vLLM under OpenRLHF: "ERROR ... Error executing method initialize_cache. This might cause
    # deadlock in distributed execution." then the actor's death (OpenRLHF#336).
    row = corpus_tune_row("openrlhf-336-1")
    assert log_verdict(tmp_path, row["text"], row["kind"])[0] == "fatal"


def test_a_503_from_a_health_check_is_left_to_what_comes_next(tmp_path: Path) -> None:
    # SGLang's "GET /health_generate HTTP/1.1" 503 Service Unavailable while its detokenizer is
    # stuck (sgl-project/sglang#22511): the server's state, not one request's failure; the
    # held error line and the exit decide (tests/test_logs_next_step.py).
    row = corpus_tune_row("sglang-22511-1")
    line = next(ln for ln in row["text"].splitlines() if '" 503 ' in ln)
    assert "request-failed" not in log_verdict(tmp_path, line, "service")[1]
