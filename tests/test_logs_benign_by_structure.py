"""Harmless by structure, without the catalog: a fresh set scored before and after.

The notice catalog (one pack rule per known harmless notice of one program) carries much
of the tune split's benign figure; a fresh program's harmless notice, in its own words,
meets none of it. ``bench/benign_without_catalog.py`` measures what the judge's structure alone
recognises on the tune split. This file holds the fresh set that measures the same on lines
never seen: error- or warning-looking lines posted in public threads, none of them a thread
already in tests/fixtures/corpus/corpus.jsonl or in another test (checked by URL), each
labelled from what the thread's people said, and committed before any code change for them:

* ``HARMLESS``: the thread calls the line harmless (a maintainer says it is expected, not an
  error, or to ignore it), or the run went on normally and the thread's trouble lay elsewhere;
* ``MATTERED``: the line caused or explained the thread's problem (no GPU used, weights not
  loaded, nothing trained, a service never reached, the engine died).

Headline figures (``python -m tests.test_logs_benign_by_structure`` prints them): harmless
recognised n/N and mattered misread as harmless n/N, with every rule and without the catalog.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from eagle3tui.logs.offline import classify_log

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from benign_without_catalog import without_catalog_ruleset  # noqa: E402

# (excerpt as posted, stage kind, thread, what the thread says)
HARMLESS: list[tuple[str, str, str, str]] = [
    (
        "2017-01-19 15:19:19,598 main INFO Log4j appears to be running in a Servlet environment, but there's no "
        "log4j-web module available. If you want better web container support, please add the log4j-web JAR to "
        "your web archive or server lib directory.\n"
        '2017-01-19 15:20:25,326 [INFO] - Training step "TMs clean-up" completed in 1m 6s',
        "task", "https://github.com/modernmt/modernmt/issues/216", "the maintainer: please ignore it",
    ),
    (
        "2019-05-18 07:48:13.447481: I tensorflow/stream_executor/cuda/cuda_gpu_executor.cc:998] successful NUMA "
        "node read from SysFS had negative value (-1), but there must be at least one NUMA node, so returning NUMA "
        "node zero",
        "task", "https://github.com/tensorflow/models/issues/6812", "start-up log; the thread's trouble lies elsewhere",
    ),
    (
        "WARNING: Logging before flag parsing goes to stderr.\n"
        "W1017 09:50:18.590606 139993601541952 module_wrapper.py:139] From "
        "/usr/local/lib/python3.6/dist-packages/inferpy/util/session.py:18: The name tf.ConfigProto is deprecated. "
        "Please use tf.compat.v1.ConfigProto instead.",
        "task", "https://github.com/PGM-Lab/InferPy/issues/192", "the reporter: everything seems to run smoothly",
    ),
    (
        "ERR<2230>:elementary elm_button.c:341 elm_button_add() could not add 0x9f5d8f8 as sub object of 0x9f5d4d8",
        "service", "https://github.com/calaos/calaos_base/issues/39", "calaos home works correctly; 'Not important'",
    ),
    (
        'conserve error: Index hunk "00000/000000319" is empty',
        "task", "https://github.com/sourcefrog/conserve/issues/143", "the maintainer: completely harmless",
    ),
    (
        "Error Scanning File: : Success\n2 drops at location 0xffffffff96a76d79 [software]",
        "service", "https://github.com/nhorman/dropwatch/issues/36", "a meaningless message; monitoring goes on",
    ),
    (
        '{"level": "error", "ts": 1611322061.064799, "caller": "batchapi/cron.go:379", "message": "at least one '
        'worker had status Succeeded and terminated for reason completed (exit_code=0)"}',
        "service", "https://github.com/cortexlabs/cortex/issues/1822", "the job did not fail",
    ),
    (
        "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
        "E0000 00:00:1744377140.613412 35892123 init.cc:229] grpc_wait_for_shutdown_with_timeout() timed out.",
        "task", "https://github.com/pinecone-io/VSB/pull/324", "noise the PR silences",
    ),
    (
        "E1227 12:49:22.633264000 140736549045184 ev_epollex_linux.cc:1482]     Skipping epollex becuase "
        "GRPC_LINUX_EPOLL is not defined.",
        "task", "https://github.com/googleapis/google-cloud-python/issues/4671", "not relevant to the user",
    ),
    (
        "E0000 00:00:1771257906.645744   97351 instrument.cc:563] Metric with name "
        "'grpc.resource_quota.calls_dropped' registered more than once. Ignoring later registration.",
        "task", "https://github.com/PyPSA/pypsa-eur/pull/2080", "warnings that clutter the logs",
    ),
    (
        "I1102 20:19:19.745545  3199 eager_method.cc:140] Warning:: 0D Tensor cannot be used as "
        "'Tensor.numpy()[0]' . In order to avoid this problem, 0D Tensor will be changed to 1D numpy currently, "
        "but it's not correct and will be removed in release 2.6. For Tensor contain only one element, Please "
        "modify  'Tensor.numpy()[0]' to 'float(Tensor)' as soon as possible, otherwise 'Tensor.numpy()[0]' will "
        "raise error in release 2.6.",
        "task", "https://github.com/PaddlePaddle/PaddleDetection/issues/8697", "training goes on; how to silence it",
    ),
    (
        "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
        "I0000 00:00:1714668459.875897  381002 gl_context_egl.cc:85] Successfully initialized EGL. Major : 1 Minor: 5\n"
        "I0000 00:00:1714668459.877641  381112 gl_context.cc:357] GL version: 3.2 (OpenGL ES 3.2 Mesa "
        "23.2.1-1ubuntu3.1~22.04.2), renderer: Mesa Intel(R) UHD Graphics 630 (CFL GT2)\n"
        "INFO: Created TensorFlow Lite XNNPACK delegate for CPU.",
        "task", "https://github.com/google-ai-edge/mediapipe/issues/5371", "cosmetic: logs go to stderr",
    ),
    (
        "[Oct 15 13:52:35] [20155] [ERR] iteration = 465633 took 1227 secs\n"
        "[Oct 15 13:52:35] [20155] [ERR] computing heldout likelihood @ 1227 secs\n"
        "[Oct 15 13:52:38] [20155] [ERR] saving theta @ 1230 secs\n"
        "[Oct 15 13:52:38] [20155] [ERR] done @ 1230 secs",
        "task", "https://github.com/StoreyLab/terastructure/issues/18", "the maintainer: not an error, a log level",
    ),
    (
        "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.",
        "task", "https://github.com/CDCgov/cfa-variant-forecasting-2026/issues/20", "we don't care unless we want the GPU",
    ),
    (
        "/mnt/lscratch/users/mbaniasadi2/dbsegment_test/env_cpu/lib/python3.7/site-packages/torch/cuda/amp/"
        "grad_scaler.py:115: UserWarning: torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.\n"
        '  warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.")',
        "task", "https://github.com/LuxImagingAI/DBSegment/issues/1", "a run on the CPU, as meant",
    ),
    (
        "/usr/local/lib/python3.9/site-packages/torch/autocast_mode.py:141: UserWarning: User provided device_type "
        "of 'cuda', but CUDA is not available. Disabling\n"
        "  warnings.warn('User provided device_type of \\'cuda\\', but CUDA is not available. Disabling')",
        "task", "https://github.com/explosion/spaCy/issues/9570", "the reporter: it works fine",
    ),
    (
        "WARNING 08-16 14:40:05 [argparse_utils.py:257] With `vllm serve`, you should provide the model as a "
        "positional argument or in a config file instead of via the `--model` option. The `--model` option will be "
        "removed in a future version.",
        "service", "https://github.com/noonghunna/club-3090/issues/1026", "the server serves; a benchmark report",
    ),
    (
        '(EngineCore pid=6783) [transformers] The `use_fast` parameter is deprecated and will be removed in a future '
        'version. Use `backend="torchvision"` instead of `use_fast=True`, or `backend="pil"` instead of '
        "`use_fast=False`.\n"
        "(EngineCore pid=6783) INFO 07-15 04:35:17 [vllm.py:1090] Asynchronous scheduling is enabled.",
        "service", "https://github.com/kyuz0/amd-r9700-vllm-toolboxes/issues/4", "the engine starts and serves",
    ),
    (
        " WARN  ReliableDeliverySupervisor [] [akka.tcp://JobServer@127.0.0.1:34223/system/endpointManager/"
        "reliableEndpointWriter-akka.tcp%3A%2F%2FJobServer%40127.0.0.1%3A46172-204] - Association with remote system "
        "[akka.tcp://JobServer@127.0.0.1:46172] has failed, address is now gated for [5000] ms. Reason: [Association "
        "failed with [akka.tcp://JobServer@127.0.0.1:46172]] Caused by: [Connection refused: /127.0.0.1:46172]",
        "service", "https://github.com/spark-jobserver/spark-jobserver/issues/835",
        "the maintainer: expected while the new JVM comes up",
    ),
    (
        "W1223 23:34:22.775000 1116 torch/utils/cpp_extension.py:2425] TORCH_CUDA_ARCH_LIST is not set, all archs "
        "for visible cards are included for compilation. \n"
        "W1223 23:34:22.775000 1116 torch/utils/cpp_extension.py:2425] If this is not desired, please set "
        "os.environ['TORCH_CUDA_ARCH_LIST'] to specific architectures.\n"
        "INFO 12-23 23:34:23 [__init__.py:216] Automatically detected platform cuda.",
        "service", "https://github.com/vllm-project/vllm-omni/issues/469", "the thread's failure is the KV cache size",
    ),
    # batch two: labelled and scored on the unchanged judge before any change, like batch one
    (
        "Loading a model with incorrectly saved tokenizer internals path. Was saved as "
        "'models/base_model/en_core_web_md' whereas should have had just 'en_core_web_md'. This is an automated "
        "fix - no further action is needed",
        "task", "https://github.com/CogStack/cogstack-nlp/pull/541", "a misleading warning, demoted to debug",
    ),
    (
        "conch/open_clip_custom/factory.py:18: FutureWarning: You are using `torch.load` with `weights_only=False` "
        "(the current default value), which uses the default pickle module implicitly. It is possible to construct "
        "malicious pickle data which will execute arbitrary code during unpickling. In a future release, the default "
        "value for `weights_only` will be flipped to `True`.\n"
        "  checkpoint = torch.load(checkpoint_path, map_location=map_location)",
        "task", "https://github.com/mahmoodlab/CONCH/issues/17", "the maintainer: you can safely ignore the warning",
    ),
    (
        "run.pl: job failed, log is in exp/mono/log/analyze_alignments.log\n"
        "tree-info exp/mono/tree \n"
        "tree-info exp/mono/tree \n"
        "fstminimizeencoded \n"
        "fstpushspecial ",
        "task", "https://github.com/CoEDL/elpis/issues/98", "confusing: the training was OK",
    ),
    (
        "INFORMATION: No files with the specified pattern could be found.",
        "task", "https://github.com/smartcontractkit/full-blockchain-solidity-course-py/issues/1319",
        "the commands are done every time",
    ),
    (
        "/usr/local/lib/python3.6/dist-packages/torch/optim/lr_scheduler.py:122: UserWarning: Detected call of "
        "`lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, you should call them in the "
        "opposite order: `optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will result in PyTorch "
        "skipping the first value of the learning rate schedule. See more details at "
        "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
        "task", "https://github.com/ThilinaRajapakse/pytorch-transformers-classification/issues/42",
        "the maintainer: not related, nothing naughty",
    ),
    (
        "/usr/local/lib/python3.6/dist-packages/torch/optim/lr_scheduler.py:122: UserWarning: Detected call of "
        "`lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, you should call them in the "
        "opposite order: `optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will result in PyTorch "
        "skipping the first value of the learning rate schedule. See more details at "
        "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate\n"
        '  "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate", UserWarning)',
        "task", "https://github.com/openpifpaf/openpifpaf/issues/248", "the reporter: it does no harm to training",
    ),
]

MATTERED: list[tuple[str, str, str, str]] = [
    (
        "Warning: caught exception 'No CUDA GPUs are available', memory monitor disabled\n"
        "LatentDiffusion: Running in eps-prediction mode",
        "task", "https://github.com/TheLastBen/fast-stable-diffusion/issues/1103", "no GPU was assigned",
    ),
    (
        "WARNING:root:ONNX is running on CPU - you need to install CUDA/onnxruntime-gpu to run on GPU",
        "task", "https://github.com/google/unisim/issues/24", "the user has a GPU and wants it used",
    ),
    (
        "WARNING:root:No GPU found. Conversion on CPU is very slow.",
        "task", "https://github.com/binary-husky/gpt_academic/issues/1104", "the user has a 3060",
    ),
    (
        "WARNING:root:No GPU found",
        "task", "https://github.com/facebookresearch/nougat/issues/1", "fixed by reinstalling torch with CUDA",
    ),
    (
        "No GPU/TPU found, falling back to CPU\ncompiling fowarding calls...",
        "service", "https://github.com/sanchit-gandhi/whisper-jax/issues/129", "stuck on the CPU; GPU not detected",
    ),
    (
        "Some weights of the model checkpoint at ./save_model/ were not used when initializing "
        "ChatGLMForConditionalGeneration: ['transformer.layers.5.attention.query_key_value.lora_B.weight', "
        "'transformer.layers.26.attention.query_key_value.lora_B.weight', "
        "'transformer.layers.13.attention.query_key_value.lora_A.weight']",
        "task", "https://github.com/yuanzhoulvpi2017/zero_nlp/issues/17", "the LoRA weights were not loaded",
    ),
    (
        "DEBUG:vits.dataset:Loading dataset: /content/drive/MyDrive/colab/piper/Jarvis/dataset.jsonl\n"
        "WARNING:vits.dataset:Skipped 5 utterance(s)",
        "task", "https://github.com/rhasspy/piper/issues/413", "every utterance skipped: no training batches",
    ),
    (
        "WARNING: No response from dynamic task server. Retrying...",
        "task", "https://github.com/TACC/launcher/issues/14", "11 h 40 of a 12 h job spent on it",
    ),
    (
        "2017-11-15 07:41:07.028UTC WARN [tool-akka.actor.default-dispatcher-19] s.c.c.HttpHostConnectionSlot - "
        "Connection attempt to localhost:9091 failed in response to GET request to /status with no retries left, "
        "dispatching error...",
        "service", "https://github.com/PacificBiosciences/SMRT-Link/issues/109", "the service could not be reached",
    ),
    (
        "(EngineCore_DP0 pid=10311) [kvcached][WARNING][2025-10-25 11:17:27][kv_cache_manager.py:164] "
        "available_size()=9.0 < need_size=30",
        "service", "https://github.com/ovg-project/kvcached/issues/191", "the engine dies of it next",
    ),
    (
        "CUDA driver version is insufficient for CUDA runtime version",
        "task", "https://github.com/yangxue0827/RotationDetection/issues/56", "training could not use the GPU",
    ),
    (
        "[2024-09-19 08:34:53,361] ERROR in start: [api]error: CUDA failed with error CUDA driver version is "
        "insufficient for CUDA runtime version",
        "service", "https://github.com/jianchang512/stt/issues/83", "transcription failed; update the driver",
    ),
    (
        "[10/06/2022 10:32:13 PM] ERROR: Saved models could not be loaded: cudaGetDevice() failed. Status: CUDA "
        "driver version is insufficient for CUDA runtime version",
        "task", "https://github.com/chklovski/CheckM2/issues/26", "the models could not be loaded",
    ),
    # batch two
    (
        "/home/hi/anaconda3/envs/CTracker/lib/python3.7/site-packages/torch/optim/lr_scheduler.py:134: UserWarning: "
        "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, you should "
        "call them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will "
        "result in PyTorch skipping the first value of the learning rate schedule. See more details at "
        'https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate "https://pytorch.org/docs/stable/'
        'optim.html#how-to-adjust-learning-rate", UserWarning)',
        "task", "https://github.com/jdonnelly36/Deformable-ProtoPNet/issues/6", "a real bug: the maintainer fixed the order",
    ),
    (
        "Failed to initialize NVML: Unknown Error",
        "task", "https://github.com/mattshma/bigdata/issues/150", "the container lost the GPU",
    ),
    (
        "cvlab189-System-Product-Name:1379562:1379562 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), "
        "using internal implementation\n\n"
        "cvlab189-System-Product-Name:1379562:1379562 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open "
        "libibverbs.so[.1]\n"
        "cvlab189-System-Product-Name:1379562:1379562 [0] NCCL INFO NET/Socket : Using [0]enp36s0f1:168.188.129.189<0>\n"
        "cvlab189-System-Product-Name:1379562:1379562 [0] NCCL INFO Using network Socket",
        "task", "https://github.com/NVIDIA/nccl/issues/766", "two nodes train slower than one: no InfiniBand",
    ),
]


def verdict(tmp_path: Path, text: str, kind: str, rules=None) -> tuple[str, set[str]]:
    """The most serious event kind of ``text`` classified as a whole log, and its rules."""
    log = tmp_path / "x.log"
    log.write_text(text + "\n", encoding="utf-8")
    events, _ = classify_log(log, rules=rules, stage_kind=kind, progress_events=True, include_info=True)
    kinds = {e.kind for e in events}
    top = next((k for k in ("fatal", "warning", "benign", "progress") if k in kinds), "info")
    return top, {e.rule for e in events if e.kind == top}


def score(tmp_path: Path, rules=None) -> tuple[int, int]:
    """(harmless excerpts judged benign, excerpts that mattered judged benign)."""
    harmless = sum(verdict(tmp_path, text, kind, rules)[0] == "benign" for text, kind, _, _ in HARMLESS)
    misread = sum(verdict(tmp_path, text, kind, rules)[0] == "benign" for text, kind, _, _ in MATTERED)
    return harmless, misread


def test_every_excerpt_names_its_public_thread() -> None:
    urls = [c[2] for c in HARMLESS + MATTERED]
    assert all(u.startswith("https://github.com/") for u in urls)
    assert len(set(urls)) == len(urls)


# Scored once on the judge of the branch's start (f1a1d02, both batches committed before any
# change: 940668f, edd5b3a) and once after; every rule, then the catalog switched off.
BEFORE = {"harmless": 11, "misread": 5, "harmless_bare": 10, "misread_bare": 5}
AFTER = {"harmless": 12, "misread": 5, "harmless_bare": 12, "misread_bare": 5}
# bench/benign_without_catalog.py on the tune split's benign rows 0-1617 (205): every rule, without the catalog.
TUNE_BEFORE = {"with": 184, "without": 163}
TUNE_AFTER = {"with": 185, "without": 170}


def test_the_fresh_set_holds_its_after_figure(tmp_path: Path) -> None:
    # The headline: more harmless excerpts recognised by structure, none more that mattered called harmless.
    harmless, misread = score(tmp_path)
    assert harmless >= AFTER["harmless"] > BEFORE["harmless"], (harmless, misread)
    assert misread <= BEFORE["misread"], (harmless, misread)
    hb, mb = score(tmp_path, without_catalog_ruleset())
    assert hb >= AFTER["harmless_bare"] > BEFORE["harmless_bare"], (hb, mb)
    assert mb <= BEFORE["misread_bare"], (hb, mb)


def test_structure_alone_on_the_tune_split_holds_its_after_figure() -> None:
    from score_corpus import load_corpus
    from benign_without_catalog import benign_figures

    res = benign_figures([r for r in load_corpus()[:1618] if r["split"] == "tune"])
    assert res["without_catalog"] >= TUNE_AFTER["without"] > TUNE_BEFORE["without"], res["without_catalog"]
    assert res["with_catalog"] >= TUNE_AFTER["with"], res["with_catalog"]


def test_the_catalog_is_every_program_specific_benign_rule_and_only_those() -> None:
    from benign_without_catalog import GENERIC_BENIGN, catalog_ids

    ids = catalog_ids()
    assert "gbdt-no-split" in ids and "tf-allocator-not-a-failure" in ids and "library-probe-notice" in ids
    assert not ids & GENERIC_BENIGN
    rules = without_catalog_ruleset()
    assert not {r.id for r in rules.rules} & ids
    assert "traceback" in rules.by_id and "deprecation" in rules.by_id


# -- regression tests: each fails on the judge of f1a1d02 ------------------------------------------
def _row(row_id: str) -> dict:
    from tests.conftest import corpus_tune_row

    return corpus_tune_row(row_id)


@pytest.mark.parametrize(
    "row_id,rule",
    [
        # the log-stream notice of absl and glog, whatever program links them (torchforge, jax)
        ("torchforge-55-1", "log-stream-notice"),
        ("jax-17879-1", "log-stream-notice"),
        # "This is not an error, but may impair performance."
        ("whisper-vits-japanese-15-1", "cleared-by-itself"),
    ],
)
def test_tune_rows_only_the_catalog_caught_are_harmless_by_structure(tmp_path: Path, row_id: str, rule: str) -> None:
    row = _row(row_id)
    assert verdict(tmp_path, row["text"], row["kind"], without_catalog_ruleset()) == ("benign", {rule})


@pytest.mark.parametrize("row_id", ["CogVideo-233-1", "MS-G3D-9-1", "cmc-csci143-351-1"])
def test_an_error_word_of_the_judges_class_reaches_the_judge(tmp_path: Path, row_id: str) -> None:
    # "OVERFLOW! Rank 0 Skipping step" at INFO, "Gradient overflow. Skipping step" bare, PostgreSQL's
    # "LOG:  invalid record length at 1/2B388808" during recovery: the prefilter had none of these
    # words, so without a catalog entry the line never reached the judge's level and fallback cues.
    row = _row(row_id)
    assert verdict(tmp_path, row["text"], row["kind"], without_catalog_ruleset())[0] == "benign"


def test_a_failure_the_program_calls_benign_is_not_fatal(tmp_path: Path) -> None:
    # sleap#677: cuDNN's "Failed to allocate memory for convolution redzone checking; skipping this
    # check. This is benign and only means that we won't check cudnn ...": the oom family matched
    # first and called it fatal. (The excerpt stays a warning: a slow-callback warning follows.)
    row = _row("sleap-677-1")
    first = row["text"].splitlines()[0]
    assert verdict(tmp_path, first, row["kind"]) == ("benign", {"cleared-by-itself"})
    assert verdict(tmp_path, row["text"], row["kind"])[0] != "fatal"


def test_fresh_lines_the_cues_decide(tmp_path: Path) -> None:
    text = HARMLESS[2][0]  # InferPy#192: "WARNING: Logging before flag parsing goes to stderr." + a deprecation
    assert verdict(tmp_path, text.splitlines()[0], "task") == ("benign", {"log-stream-notice"})
    assert verdict(tmp_path, text, "task")[0] == "benign"


# -- counter-tests: real lines of the same shapes that must not be cleared --------------------------
def test_a_conditional_or_negated_expectation_does_not_clear_a_line() -> None:
    # transformers' "- This IS expected if you are initializing ..." and "- This IS NOT expected if
    # ..." (rows transformers-5404-1, labelled warning, and lerg-1-1, fatal: the process was killed).
    from eagle3tui.logs.self_account import clears_itself

    for row_id in ("transformers-5404-1", "lerg-1-1"):
        lines = [x for x in _row(row_id)["text"].splitlines() if "expected if" in x]
        assert lines and not any(clears_itself(x) for x in lines), row_id
    assert clears_itself("The caller indicates that this is not a failure, but may mean that there could be "
                         "performance gains if more memory were available.")


def test_a_clearance_followed_by_a_demand_or_a_harm_is_not_a_clearance() -> None:
    # What follows the clearance in its sentence decides: the notice grammar's veto (a demand, a
    # shortage, lost data, a wrong result). The sentences are those of the DDP notice above with
    # what the veto reads in place of "may impair performance".
    from eagle3tui.logs.self_account import clears_itself

    assert clears_itself("This is not an error, but may impair performance.")
    assert not clears_itself("This is not an error, but you should check the strides.")
    assert not clears_itself("This is not an error, but the gradients may be incorrect.")


def test_the_log_stream_notice_does_not_hide_the_failure_after_it(tmp_path: Path) -> None:
    # glog#896: "WARNING: Logging before InitGoogleLogging() is written to STDERR", then a failed
    # CHECK and SIGABRT (row glog-896-1, fatal): the notice is harmless, the excerpt stays fatal.
    row = _row("glog-896-1")
    bare = without_catalog_ruleset()
    assert verdict(tmp_path, row["text"].splitlines()[0], row["kind"], bare) == ("benign", {"log-stream-notice"})
    assert verdict(tmp_path, row["text"], row["kind"], bare)[0] == "fatal"
    assert verdict(tmp_path, row["text"], row["kind"])[0] == "fatal"


@pytest.mark.parametrize("row_id", ["Chinese-LLaMA-Alpaca-534-1", "DeepSpeed-1235-1"])
def test_a_collapsed_loss_scale_stays_a_warning_without_its_catalog_rule(tmp_path: Path, row_id: str) -> None:
    # DeepSpeed's "OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 8, reducing to 4" (labelled
    # warning): once "overflow" reaches the judge, the skip would read as a harmless fallback; the
    # scale's collapse is read from the record itself, not from the catalog rule that names it.
    row = _row(row_id)
    assert verdict(tmp_path, row["text"], row["kind"], without_catalog_ruleset())[0] == "warning"
    assert verdict(tmp_path, row["text"], row["kind"])[0] == "warning"


def test_a_progress_record_with_a_loss_scale_stays_progress(tmp_path: Path) -> None:
    # Megatron's iteration record carries "loss scale: 1.0" (bf16) and no overflow (row megatron-llm-11-1).
    row = _row("megatron-llm-11-1")
    assert verdict(tmp_path, row["text"], row["kind"])[0] == "progress"
    assert verdict(tmp_path, row["text"], row["kind"], without_catalog_ruleset())[0] == "progress"


if __name__ == "__main__":  # pragma: no cover - the headline figures, for docs/history/logs-notebook.md
    import tempfile

    bare = without_catalog_ruleset()
    with tempfile.TemporaryDirectory() as d:
        h, m = score(Path(d))
        hb, mb = score(Path(d), bare)
        for name, cases in (("harmless", HARMLESS), ("mattered", MATTERED)):
            for text, kind, url, _ in cases:
                print(name, verdict(Path(d), text, kind), verdict(Path(d), text, kind, bare)[0], url, file=sys.stderr)
    print(f"every rule: harmless recognised {h}/{len(HARMLESS)}; mattered misread as harmless {m}/{len(MATTERED)}")
    print(f"without the catalog: harmless recognised {hb}/{len(HARMLESS)}; mattered misread as harmless {mb}/{len(MATTERED)}")
