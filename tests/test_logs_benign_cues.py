"""Harmless by its own account: the structural cues of step 7 of the judge.

A line that looks like an error is harmless when the line itself says so by its
grammar, not by a phrase of one program (eagle3tui/logs/judge.py, step 7):

* it says what it goes on with instead, or without: it switches or rolls back to
  another way, tries another source for the same thing, or names a capability it
  now lacks as a state ("... are unavailable.", "NVIDIA monitoring disabled.");
* the part that failed is bookkeeping the job does not need: its own log, a cache
  file, telemetry, a monitor, a check for a newer version;
* a probe or lookup failed, not the job: a query, an inspection, a version check
  that found nothing.

Each cue is measured on real corpus lines (tune split, tests/fixtures/corpus)
from several threads, each through the real classifier (``eagle3tui classify``).
The counter-tests are real failures that carry the same words and must stay
fatal or warning: an auxiliary part that the server cannot start without (a
metrics port, a dashboard asked for), a failed step that points at its logs,
a warning that names a cache it is short of.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import corpus_tune_row, log_verdict

# (corpus row, rule the cue gives): the thread's people said the line is harmless.
GOES_WITHOUT = [
    # oneCCL: "did not find MPI-launcher specific variables, switch to ATL/OFI" and
    # "could not get local_idx/count from environment variables, trying to get them from ATL"
    "torch-xpu-ops-1663-2",
    # bitsandbytes: "... compiled without GPU support. 8-bit optimizers ... are unavailable."
    "cosmos-predict1-35-1",
    # prmon: "[nvidiamon] [warning] Both NVML and nvidia-smi failed. NVIDIA monitoring disabled."
    "prmon-309-1",
]
AUXILIARY = [
    # PaddleSpeech's launcher: "LAUNCH WARNING <date> save gpu log failed"
    "PPASR-138-1",
    # node-triton: bunyan level 40 "failed to read cache file", then the listing it printed anyway
    "node-triton-17-1",
    # pip: "WARNING: There was an error checking the latest version of pip."
    "pip-11155-1",
]
PROBE = [
    # nos: "| ERROR | ... Failed to execute command: nvidia-smi --query-gpu=..." on a laptop without a GPU
    "nos-286-1",
    # DCGM host engine: "ERROR [1:24] GetLatestSample returned No data is available for entityId 0 ..."
    "gpu-monitoring-tools-146-1",
]


@pytest.mark.parametrize("row_id", GOES_WITHOUT)
def test_a_line_that_says_what_it_goes_on_without_is_benign(tmp_path: Path, row_id: str) -> None:
    row = corpus_tune_row(row_id)
    assert row["label"] == "benign"
    kind, rules = log_verdict(tmp_path, row["text"], row["kind"])
    assert (kind, "fallback" in rules) == ("benign", True), (row_id, kind, rules)


@pytest.mark.parametrize("row_id", AUXILIARY)
def test_a_failed_bookkeeping_part_is_benign(tmp_path: Path, row_id: str) -> None:
    row = corpus_tune_row(row_id)
    assert row["label"] == "benign"
    kind, rules = log_verdict(tmp_path, row["text"], row["kind"])
    assert (kind, rules) == ("benign", {"auxiliary-failed"}), (row_id, kind, rules)


@pytest.mark.parametrize("row_id", PROBE)
def test_a_failed_probe_or_lookup_is_benign_even_at_error_level(tmp_path: Path, row_id: str) -> None:
    row = corpus_tune_row(row_id)
    assert row["label"] == "benign"
    kind, rules = log_verdict(tmp_path, row["text"], row["kind"])
    assert (kind, rules) == ("benign", {"probe-failed"}), (row_id, kind, rules)


def test_a_third_thread_with_a_failed_version_probe_stays_benign(tmp_path: Path) -> None:
    """Fooocus: "Error checking version for torchsde: No package metadata was found" (another rule takes it first)."""
    row = corpus_tune_row("fooocus-2182-1")
    assert log_verdict(tmp_path, row["text"], row["kind"])[0] == "benign"


# Real failures that carry the cues' words; each must stay fatal or warning.
COUNTER = [
    # Triton's metrics endpoint is auxiliary, but the server stops on the port it cannot bind (glog E level)
    ("pytriton-1-1", ("warning", "fatal")),
    # ray start --include-dashboard=true: "ERROR ... Failed to start the dashboard", "Couldn't read dashboard.log file"
    ("ray-54655-1", ("warning", "fatal")),
    # a named step failed and points at its logs: "[ERROR] ... db_stat failed: please check the following logs:"
    ("nextdenovo-114-1", ("fatal",)),
    # a worker died; the line goes on to name where its logs are
    ("ray-31398-1", ("fatal",)),
    # the same "compiled without GPU support ... are unavailable" warning, then the job's own crash
    ("basaran-3-1", ("fatal",)),
    # "docker: Error response ... nvidia-container-cli: ldcache error: process /sbin/ldconfig failed"
    ("nvidia-container-toolkit-1357-1", ("fatal",)),
    # DeepSpeed's allocator "cache flushes ... detrimental to performance": a warning that names a cache
    ("deepspeedexamples-186-1", ("warning",)),
    # vLLM's "Process did not respond to SIGTERM, using SIGKILL" then "Retry also failed: ... failed to start"
    ("vllm-rocm-5-1", ("fatal",)),
]


@pytest.mark.parametrize(("row_id", "allowed"), COUNTER)
def test_real_failures_with_the_same_words_stay_fatal_or_warning(
    tmp_path: Path, row_id: str, allowed: tuple[str, ...]
) -> None:
    row = corpus_tune_row(row_id)
    assert row["label"] in ("fatal", "warning")
    kind, rules = log_verdict(tmp_path, row["text"], row["kind"])
    assert kind in allowed, (row_id, kind, rules)
