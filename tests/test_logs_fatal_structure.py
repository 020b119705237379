"""Fatal endings told by structure, not by an ERROR line (round fatal3).

Jobs that die often say so at INFO or WARNING level, or in the words of a
launcher or a container runtime rather than the program's: a sidecar's tag
hiding a CRITICAL header, Ray's core printing its fatal check at the
"critical" letter C, a callback that says "..., terminating training", the
kubelet "Killing container" or reporting a pod "Evicted". Each cue below is
checked on real lines from public threads (URL beside each), with a look-alike
that must not become fatal: the same words used as a field ("is dead: 0"), a
cache that evicted blocks, a notice of a stop that the training then did not
make (its progress went on), a Ray warning line about a late heartbeat.
"""

from __future__ import annotations

from pathlib import Path

from eagle3tui.logs.anatomy import peel, peel_workers, shape
from eagle3tui.logs.offline import classify_log
from tests.conftest import classified_events, corpus_tune_row, log_verdict

# -- a sidecar's tag and a shipper's stream number hide the level ------------


def test_a_sidecar_tag_stamp_and_stream_number_are_peeled_down_to_the_critical_header(tmp_path: Path) -> None:
    # https://github.com/vllm-project/vllm/pull/9818
    row = corpus_tune_row("vllm-9818-1")
    line = row["text"].split("\n")[0]
    sh = shape(peel_workers(peel(line))[1])
    assert (sh.level, sh.source) == ("fatal", "launcher.py:99")
    assert sh.body == "MQLLMEngine is already dead, terminating server process"
    top, rules = log_verdict(tmp_path, row["text"], "service")
    assert top == "fatal" and "fatal-level" in rules


def test_a_rank_tag_in_brackets_is_still_read_as_the_worker() -> None:
    # https://github.com/Intellindust-AI-Lab/DEIM/issues/105 (corpus row DEIM-105-1)
    line = ("[rank1]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 1] Heartbeat monitor timed out! Process will be "
            "terminated after dumping debug info. workMetaList_.size()=103")
    names, rest = peel_workers(peel(line))
    assert names == ["rank1"]
    assert shape(rest).level == "error"


# -- Ray's core: C is its fatal level -----------------------------------------


def test_ray_core_critical_letter_is_a_fatal_level_and_its_warning_letter_is_not(tmp_path: Path) -> None:
    # https://github.com/ray-project/ray/issues/22425
    row = corpus_tune_row("ray-22425-1")
    lines = row["text"].split("\n")
    assert shape(peel(lines[2])).level == "fatal"
    top, rules = log_verdict(tmp_path, row["text"])
    assert top == "fatal" and "fatal-level" in rules
    # The heartbeat warning before it, alone: the node is slow, not dead yet.
    top, _ = log_verdict(tmp_path, lines[0])
    assert top == "warning"


def test_a_ray_check_failure_at_the_critical_letter_stays_fatal(tmp_path: Path) -> None:
    # https://github.com/ray-project/ray/pull/26007
    top, _ = log_verdict(tmp_path, corpus_tune_row("ray-26007-1")["text"], "service")
    assert top == "fatal"


# -- a death word as a field says "not dead" ----------------------------------


def test_a_death_word_used_as_a_field_with_value_zero_is_no_death(tmp_path: Path) -> None:
    # https://github.com/ray-project/ray/issues/46548: the raylet lists jobs with their is_dead flag
    top, _ = log_verdict(tmp_path, corpus_tune_row("ray-46548-1")["text"], "service")
    assert top != "fatal"


def test_a_real_death_in_the_same_grammar_is_still_fatal(tmp_path: Path) -> None:
    # https://github.com/vllm-project/vllm/issues/31681 (corpus row vllm-31681-1)
    line = "ERROR 01-04 21:58:22 [core_client.py:564] Engine core proc EngineCore_DP0 died unexpectedly, shutting down client."
    top, rules = log_verdict(tmp_path, line, "service")
    assert top == "fatal" and "process-died" in rules


# -- the program announces its own stop, and why --------------------------------


def test_a_stop_announced_after_its_cause_is_fatal_when_nothing_follows(tmp_path: Path) -> None:
    # https://github.com/bricewalker/Hey-Jetson/issues/7: TerminateOnNaN ended the run
    top, rules = log_verdict(tmp_path, corpus_tune_row("Hey-Jetson-7-1")["text"])
    assert top == "fatal" and rules == {"announced-ending"}


def test_a_nan_loss_stop_without_any_level_is_fatal(tmp_path: Path) -> None:
    # https://github.com/DIUx-xView/xview3-reference/issues/18 (torchvision's reference loop, then SystemExit: 1)
    text = (
        "Epoch: [0]  [ 0/65]  eta: 0:01:55  lr: 0.000125  loss: 2.9749 (2.9749)  loss_classifier: 1.1639 (1.1639)  "
        "loss_box_reg: 0.0148 (0.0148)  loss_objectness: 1.5950 (1.5950)  loss_rpn_box_reg: 0.2011 (0.2011)  "
        "time: 1.7780  data: 0.4853  max mem: 5038\n"
        "Loss is nan, stopping training"
    )
    top, rules = log_verdict(tmp_path, text)
    assert top == "fatal" and "announced-ending" in rules


def test_the_same_stop_announced_again_while_training_goes_on_is_not_believed(tmp_path: Path) -> None:
    # https://github.com/keras-team/keras-tuner/issues/442: the callback's stop did not take
    events = classified_events(tmp_path, corpus_tune_row("keras-tuner-442-1")["text"])
    endings = [e for e in events if e.rule == "announced-ending"]
    assert len(endings) == 3
    assert {e.kind for e in endings} == {"warning"}
    assert "went on" in endings[0].explanation


def test_a_stop_announced_by_the_launcher_for_a_death_is_unchanged(tmp_path: Path) -> None:
    # https://github.com/huggingface/text-generation-inference/issues/2828: the launcher
    # terminates its shards at INFO, then its last word
    top, rules = log_verdict(tmp_path, corpus_tune_row("text-generation-inference-2828-1")["text"], "service")
    assert top == "fatal" and "top-level-error" in rules


# -- the container runtime kills or evicts the job ------------------------------


def test_the_kubelet_killing_the_jobs_container_is_fatal(tmp_path: Path) -> None:
    # https://github.com/kubeflow/kubeflow/issues/1261
    top, rules = log_verdict(tmp_path, corpus_tune_row("kubeflow-1261-1")["text"])
    assert top == "fatal" and "launcher-kill" in rules


def test_an_evicted_pod_in_the_status_column_is_fatal(tmp_path: Path) -> None:
    # https://github.com/kubeflow/trainer/issues/301: the training jobs were evicted for memory
    text = (
        "> kubectl get pods -n rl --show-all\n"
        "agents-ppo-ant-feedforward-93168c9e-master-...           0/1       Evicted   0          19h\n"
        "agents-ppo-ant-feedforward-93168c9e-master-...           0/1       Evicted   0          18h\n"
        "agents-ppo-ant-feedforward-93168c9e-master-...           1/1       Running   0          9h"
    )
    top, rules = log_verdict(tmp_path, text)
    assert top == "fatal" and "process-died" in rules


def test_a_cache_that_evicted_blocks_is_no_eviction_of_the_job(tmp_path: Path) -> None:
    # https://github.com/guoqingbao/xinfer/pull/344: a prefix cache making room, the server goes on
    line = ("2026-05-12T04:49:48.807897Z  WARN vllm_rs::core::engine: Evicted 715 prefix cache block(s) to reserve "
            "548480 KV tokens for request admission (prompt + 16384 requested decode tokens).")
    top, _ = log_verdict(tmp_path, line, "service")
    assert top != "fatal"


# -- NCCL's WARN is its failure level ---------------------------------------------


def test_an_nccl_warn_in_its_own_words_is_a_failure(tmp_path: Path) -> None:
    # https://github.com/Lightning-AI/pytorch-lightning/issues/14986: a rank checked in twice, init hangs
    top, rules = log_verdict(tmp_path, corpus_tune_row("pytorch-lightning-14986-2")["text"])
    assert top == "fatal" and rules == {"nccl-failure"}


def test_an_nccl_warn_about_an_absent_plugin_stays_harmless(tmp_path: Path) -> None:
    # https://github.com/NVIDIA/nccl/issues/259: no InfiniBand library, NCCL uses sockets
    top, _ = log_verdict(tmp_path, corpus_tune_row("nccl-259-1")["text"])
    assert top == "benign"


# -- a hang the program reports: worth knowing, not yet a death ----------------------


def test_a_hang_the_engine_reports_once_while_loading_is_a_warning(tmp_path: Path) -> None:
    # https://github.com/gpustack/gpustack/issues/3888: printed while a large model loaded slowly; it loaded
    top, rules = log_verdict(tmp_path, corpus_tune_row("gpustack-3888-1")["text"], "service")
    assert top == "warning" and rules == {"hang-reported"}


def test_a_fallback_that_avoids_a_deadlock_is_no_hang(tmp_path: Path) -> None:
    # https://github.com/huggingface/text-generation-inference/issues/1035
    top, _ = log_verdict(tmp_path, corpus_tune_row("text-generation-inference-1035-1")["text"], "service")
    assert top == "benign"


# -- a counter above its total: torch's store-based barrier can never complete ----


def test_a_store_barrier_with_more_workers_than_ranks_is_fatal_at_once(tmp_path: Path) -> None:
    # torch's _store_based_barrier waits until worker_count == world_size and the count only grows:
    # https://github.com/ultralytics/yolov5/issues/4574 (8 of 4), https://github.com/facebookresearch/metaseq/issues/52 (3 of 2)
    for row_id in ("yolov5-4574-1", "metaseq-52-1"):
        top, rules = log_verdict(tmp_path, corpus_tune_row(row_id)["text"])
        assert (top, rules) == ("fatal", {"barrier-overfull"}), row_id


def test_a_store_barrier_still_filling_is_not_fatal(tmp_path: Path) -> None:
    # https://github.com/uzh-rpg/RVT/issues/18: 1 of 2 ranks so far; the other may still be starting.
    top, _rules = log_verdict(tmp_path, corpus_tune_row("RVT-18-1")["text"])
    assert top != "fatal"


def test_the_barrier_count_is_read_by_value_when_catching_up_by_template(tmp_path: Path) -> None:
    # A block of 256 KiB or more is read by template (digits masked): the count must still be read
    # per line, so 1-of-2 lines stay quiet and only the 3-of-2 line is the fatal one.
    wait = ("[2023-07-16 13:17:{s:02d},147][torch.distributed.distributed_c10d][INFO] - Waiting in store based barrier "
            "to initialize process group for rank: 0, key: store_based_barrier_key:1 (world_size=2, worker_count={n}, "
            "timeout=0:30:00)")
    lines = [f"step {i}/19000 loss=0.5" for i in range(12000)]
    lines += [wait.format(s=i % 60, n=1) for i in range(400)] + [wait.format(s=7, n=3)]
    text = "\n".join(lines)
    assert len(text) > 256 * 1024
    log = tmp_path / "barrier.log"
    log.write_text(text + "\n", encoding="utf-8")
    events, _mon = classify_log(log, stage_kind="task")  # what `eagle3tui classify` runs: progress sampled
    fatal = [e for e in events if e.kind == "fatal"]
    assert [(e.rule, e.line) for e in fatal] == [("barrier-overfull", len(lines))]
