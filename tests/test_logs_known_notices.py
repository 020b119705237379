"""Notices that recur verbatim across thousands of public logs and are harmless.

A builtin rule per notice, like the seed's Triton import ERROR: the knowledge an
engineer has ("that pip ERROR is its resolver's report") shipped with the tool.
Each is checked on the corpus rows it came from (tune split, thread URL in the
row) and against a real line of the same family that is not harmless.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import corpus_tune_row, log_verdict


@pytest.mark.parametrize(
    ("row_id", "rule"),
    [
        ("omnidrive-13-1", "tokenizer-length-notice"),  # https://github.com/NVlabs/OmniDrive/issues/13
        ("LongBench-103-1", "tokenizer-length-notice"),  # https://github.com/THUDM/LongBench/issues/103
        # https://github.com/johschmitz/blender-driving-scenario-creator/issues/28
        ("blender-driving-scenario-creator-28-1", "pip-resolver-notice"),
        ("neuro-san-458-1", "library-probe-notice"),  # https://github.com/cognizant-ai-lab/neuro-san/issues/458
        ("proxmoxved-2047-2", "library-probe-notice"),  # https://github.com/community-scripts/ProxmoxVED/issues/2047
        ("LightGBM-1026-1", "gbdt-no-split"),  # https://github.com/lightgbm-org/LightGBM/issues/1026
    ],
)
def test_a_known_harmless_notice_is_benign(tmp_path: Path, row_id: str, rule: str) -> None:
    top, rules = log_verdict(tmp_path, corpus_tune_row(row_id)["text"])
    assert (top, rule in rules) == ("benign", True), (top, rules)


def test_the_failure_a_notice_warns_of_is_still_fatal(tmp_path: Path) -> None:
    # The tokenizer's notice, then the indexing failure it predicts, a device-side assert (both lines from
    # https://github.com/huggingface/transformers/issues/14384).
    top, _ = log_verdict(tmp_path, "\n".join([
        "Token indices sequence length is longer than the specified maximum sequence length",
        "/tmp/pip-req-build-pma2oi4d/aten/src/ATen/native/cuda/Indexing.cu:702: indexSelectLargeIndex: "
        "block: [132,0,0], thread: [105,0,0] Assertion `srcIndex < srcSelectDimSize` failed.",
    ]))
    assert top == "fatal"
    # pip's real failure is not its resolver's report: https://github.com/pytorch/pytorch/issues/20631
    top, _ = log_verdict(tmp_path, "\n".join([
        "Collecting torch==0.3.1",
        "  ERROR: Could not find a version that satisfies the requirement torch==0.3.1 (from versions: 0.1.2, "
        "0.1.2.post1)",
        "ERROR: No matching distribution found for torch==0.3.1",
    ]))
    assert top == "fatal"


def test_an_openmp_error_that_reads_like_a_missing_extra_is_fatal(tmp_path: Path) -> None:
    # "... but found X already initialized" reads like an optional library notice, but the OpenMP
    # runtime aborts the process right after its hint: https://github.com/harry0703/MoneyPrinterTurbo/issues/90
    top, rules = log_verdict(tmp_path, "\n".join([
        "OMP: Error #15: Initializing libiomp5md.dll, but found libiomp5md.dll already initialized.",
        "OMP: Hint This means that multiple copies of the OpenMP runtime have been linked into the program. That is "
        "dangerous, since it can degrade performance or cause incorrect results.",
    ]))
    assert (top, rules) == ("fatal", {"openmp-duplicate-runtime"})
