"""Harmless by the grammar of the notice: a fresh set of real notices, scored before and after.

The catalog rounds gave one pack rule per known notice; on fresh data each harmless notice
is a different one, so they did not move. This set measures the boundary the way a fresh
log meets it: WARNING-level (or bare) notices posted in public threads of the LLM/GPU
stack, each with the thread it came from, labelled from what the thread's people said
before any code change for them (the first 48 committed alone first; a batch two of five,
marked below, labelled before the changed judge was run on them):

* ``HARMLESS``: the thread calls the notice harmless (a maintainer says to ignore it, it is
  a spurious or intended message), or the run it was printed in went on normally and the
  thread's failure lay elsewhere;
* ``ACTION``: the notice caused or explained the thread's problem (the job hung, ran on the
  CPU, gave wrong or empty answers, got slow, needed a setting changed).

The corpus README's label definitions apply (benign: looks like an error or a warning, is
harmless; warning: worth knowing or acting on). Where two threads label the same notice
differently (the kernel-version and the DDP ``find_unused_parameters`` notices), both are
kept with their own thread's label: a line-level judge cannot tell them apart, and the set
says so rather than hiding it. None of these threads is in tests/fixtures/corpus/corpus.jsonl
(checked by URL before the set was written), so no held-out row is seen here.

Headline figures (``python -m tests.test_logs_notice_grammar`` prints them):
harmless recognised n/N and action-needed misread as harmless n/N.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from eagle3tui.logs import notice_grammar
from eagle3tui.logs.anatomy import shape
from tests.conftest import corpus_tune_row, log_verdict

# (text as posted, stage kind, thread, what the thread says)
HARMLESS: list[tuple[str, str, str, str]] = [
    (
        "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system "
        "being overloaded, please further tune the variable for optimal performance in your application as needed.",
        "task", "https://github.com/YueLiao/gen-vlkt/issues/13", "the reporter: 'the program can run normally'",
    ),
    (
        "`use_cache=True` is incompatible with gradient checkpointing. Setting `use_cache=False`...",
        "task", "https://github.com/yuanzhoulvpi2017/zero_nlp/issues/49",
        "the maintainer: it has no effect, tell warnings from errors",
    ),
    (
        "(EngineCore pid=149493) WARNING 03-17 11:34:42 [multiproc_executor.py:997] Reducing Torch parallelism "
        "from 64 threads to 1 to avoid unnecessary CPU contention. Set OMP_NUM_THREADS in the external environment "
        "to tune this value as needed.",
        "service", "https://github.com/vllm-project/vllm/pull/36734", "a normal start-up log in the PR",
    ),
    (
        "WARNING 07-10 10:07:14 [arg_utils.py:1647] Detected VLLM_USE_V1=1 with Engine in background thread. "
        "Usage should be considered experimental. Please report any issues on Github.",
        "service", "https://github.com/vllm-project/vllm/issues/20745",
        "the engine starts; the thread's problem is an OOM later",
    ),
    (
        "WARNING 12-11 02:34:15 config.py:140] awq quantization is not fully optimized yet. The speed can be "
        "slower than non-quantized models.",
        "task", "https://github.com/vllm-project/vllm/issues/2007", "the batches that follow are processed",
    ),
    (
        "Overlap scheduler is disabled because of using eagle speculative decoding.",
        "service", "https://github.com/sgl-project/sglang/issues/8974",
        "the server starts; the thread's failure is a scheduler exception later",
    ),
    (
        "Cuda graph is disabled because of using torch native attention backend",
        "service", "https://github.com/sgl-project/sglang/pull/22416", "a normal start-up log in the PR",
    ),
    (
        "llama_new_context_with_model: n_ctx_per_seq (4096) < n_ctx_train (131072) -- the full capacity of the "
        "model will not be utilized",
        "task", "https://github.com/ggml-org/llama.cpp/pull/10136",
        "the PR sets this default on purpose and adds the notice",
    ),
    (
        "main: warning: base model only supports context sizes no greater than 2048 tokens (4096 specified)",
        "task", "https://github.com/ggml-org/llama.cpp/issues/2599",
        "a maintainer: an old warning for previous models, just ignore it",
    ),
    (
        "2019-10-24 23:30:10,837\tWARNING resource_spec.py:163 -- Warning: Capping object memory store to 20.0GB. "
        "To increase this further, specify `object_store_memory` when calling ray.init() or ray start.",
        "task", "https://github.com/ray-project/ray/issues/6007",
        "Ray starts; the thread's problem is a scheduling stall later",
    ),
    (
        "WARNING 04-16 12:12:41 arg_utils.py:766] Chunked prefill is enabled by default for models with "
        "max_model_len > 32K. Currently, chunked prefill might not work with some features or models. If you "
        "encounter any issues, please disable chunked prefill by setting --enable-chunked-prefill=False.",
        "service", "https://github.com/transformerlab/transformerlab-app/issues/370",
        "the thread's failure is bfloat16 on a V100, not this",
    ),
    (
        "WARNING 05-13 14:43:17 [marlin_utils_fp8.py:167] Your GPU does not have native support for FP8 "
        "computation but FP8 quantization is being used. Weight-only FP8 compression will be used leveraging the "
        "Marlin kernel. This may degrade performance for compute-heavy workloads.",
        "task", "https://github.com/vllm-project/vllm/pull/18026", "the gsm8k evaluation completes after it",
    ),
    (
        "Overriding torch_dtype=None with `torch_dtype=torch.float16` due to requirements of `bitsandbytes` to "
        "enable model loading in mixed int8. Either pass torch_dtype=torch.float16 or don't pass this argument at "
        "all to remove this warning.",
        "task", "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/230",
        "the maintainer: expected, the layers are still int8",
    ),
    (
        "master_addr is only used for static rdzv_backend and when rdzv_endpoint is not specified",
        "task", "https://github.com/pytorch/pytorch/pull/114335", "an incorrect warning, removed by the PR",
    ),
    (
        "Detected kernel version 5.4.0, which is below the recommended minimum of 5.5.0; this can cause the "
        "process to hang. It is recommended to upgrade the kernel to the minimum version or higher.",
        "task", "https://github.com/NovaSearch-Team/RAG-Retrieval/issues/10",
        "the maintainer: the kernel reminder does not affect the result (see accelerate#3343 for the opposite)",
    ),
    (
        "2020-12-04 13:02:42,028 WARNING worker.py:1011 -- The actor or task with ID "
        "ffffffffffffffff7b65236502000000 cannot be scheduled right now. It requires {CPU: 1.000000} for "
        "placement, but this node only has remaining {node:172.31.2.82: 1.000000}, {CPU: 2.000000}, {memory: "
        "3.710938 GiB}, {object_store_memory: 1.269531 GiB}. In total there are 0 pending tasks and 4 pending "
        "actors on this node. This is likely due to all cluster resources being claimed by actors. To resolve the "
        "issue, consider creating fewer actors or increase the resources available to this Ray cluster. You can "
        "ignore this message if this Ray cluster is expected to auto-scale.",
        "task", "https://github.com/ray-project/ray/issues/12628", "the maintainers: spurious, fixed",
    ),
    (
        "WARNING:transformers.tokenization_utils_base:Truncation was not explicitely activated but max_length is "
        "provided a specific value, please use truncation=True to explicitely truncate examples to max length. "
        "Defaulting to 'longest_first' truncation strategy. If you encode pairs of sequences (GLUE-style) with the "
        "tokenizer you can select this strategy more precisely by providing a specific strategy to truncation.",
        "task", "https://github.com/ThilinaRajapakse/simpletransformers/issues/662",
        "the maintainer: safe to ignore",
    ),
    (
        "2024-02-29T06:34:41.018 app[17816011be4689] ord [info] Asking to truncate to max_length but no maximum "
        "length is provided and the model has no predefined maximum length. Default to no truncation.",
        "service", "https://github.com/michaelfeil/infinity/issues/121",
        "the model has no max length; nothing to worry about",
    ),
    (
        "The model weights are not tied. Please use the `tie_weights` method before using the `infer_auto_device` "
        "function",
        "task", "https://github.com/huggingface/accelerate/issues/1761",
        "the tie does not affect the device map: the warning is inappropriate",
    ),
    (
        "You are using the default legacy behaviour of the <class "
        "'transformers.models.llama.tokenization_llama_fast.LlamaTokenizerFast'>. This is expected, and simply "
        "means that the `legacy` (previous) behavior will be used so nothing changes for you. If you want to use "
        "the new behaviour, set `legacy=False`. This should only be set if you understand what it means, and "
        "thoroughly read the reason why this was added as explained in "
        "https://github.com/huggingface/transformers/pull/24565 - if you loaded a llama tokenizer from a GGUF file "
        "you can ignore this message.",
        "task", "https://github.com/foundation-model-stack/fms-hf-tuning/pull/446",
        "the PR: the default is already legacy, nothing changes",
    ),
    (
        "WARNING:root:Some parameters are on the meta device device because they were offloaded to the cpu.",
        "task", "https://github.com/hiyouga/LlamaFactory/issues/4697",
        "the chat goes on; the maintainers close it as not a bug (wontfix)",
    ),
    (
        "[W reducer.cpp:1303] Warning: find_unused_parameters=True was specified in DDP constructor, but did not "
        "find any unused parameters in the forward pass.\n"
        "This flag results in an extra traversal of the autograd graph every iteration,  which can adversely "
        "affect performance.\n"
        "If your model indeed never has any unused parameters in the forward pass, consider turning this flag "
        "off.\n"
        "Note that this warning may be a false positive if your model has flow control causing later iterations "
        "to have unused parameters. (function operator())",
        "task", "https://github.com/cszn/KAIR/issues/103",
        "the maintainer: safe; the reporter: no measurable impact (see Samudra#630 for the opposite)",
    ),
    (
        "[W ProcessGroupNCCL.cpp:1569] Rank 0 using best-guess GPU 0 to perform barrier as devices used by this "
        "process are currently unknown. This can potentially cause a hang if this rank to GPU mapping is "
        "incorrect.Specify device_ids in barrier() to force use of a particular device.",
        "task", "https://github.com/pytorch/pytorch/issues/60752",
        "the device was set correctly: a spurious warning (see lmms-eval#670 for a hang)",
    ),
    (
        "UserWarning: CUDA initialization: Found no NVIDIA driver on your system. Please check that you have an "
        "NVIDIA GPU and installed a driver",
        "task", "https://github.com/HIT-SCIR/ltp/issues/468",
        "the maintainer: no GPU on that machine, CPU inference is fine",
    ),
    (
        "(EngineCore_DP0 pid=3978) WARNING 12-07 21:28:41 [vllm.py:1375] Current vLLM config is not set.",
        "service", "https://github.com/vllm-project/vllm/issues/30240", "a spurious warning printed many times",
    ),
    (
        "WARNING 01-11 13:01:19 interface.py:236] Using 'pin_memory=False' as WSL is detected. This may slow down "
        "the performance.",
        "service", "https://github.com/vllm-project/vllm/issues/8189",
        "the workers come up after it; the thread is about another failure",
    ),
    (
        "[Stage-0] WARNING 02-26 07:42:22 [envs.py:94] No Flash Attention backend found, using pytorch SDPA "
        "implementation",
        "service", "https://github.com/vllm-project/vllm-omni/pull/1505", "a normal start-up log in the PR",
    ),
    (
        "WARNING 01-07 11:20:01 cuda.py:22] You are using a deprecated `pynvml` package. Please install "
        "`nvidia-ml-py` instead, and make sure to uninstall `pynvml`. When both of them are installed, `pynvml` "
        "will take precedence and cause errors. See https://pypi.org/project/pynvml for more information.",
        "service", "https://github.com/flashinfer-ai/flashinfer/issues/720",
        "the server starts; the thread's failure is an unsupported backend",
    ),
    # batch two: labelled from their threads after the cue was written, before it was run on them
    (
        "3_IQN.py:264: UserWarning: Using a target size (torch.Size([32, 1, 64])) that is different to the input "
        "size (torch.Size([32, 64, 1])). This will likely lead to incorrect results due to broadcasting. Please "
        "ensure they have the same size.",
        "task", "https://github.com/Kchu/DeepRL_PyTorch/issues/1",
        "the maintainer: not a bug, the broadcast is intended (see DeepProtein#1 for the opposite)",
    ),
    (
        "file /work/user/bicleaner-ai-models/en-fr/vocab/config.json not found",
        "task", "https://github.com/bitextor/bicleaner-ai/issues/18",
        "the maintainer: nothing wrong, the vocabulary still loads",
    ),
    (
        "You are resizing the embedding layer without providing a `pad_to_multiple_of` parameter. This means that "
        "the new embeding dimension will be 49499. This might induce some performance reduction as *Tensor Cores* "
        "will not be available. For more details  about this, or help on choosing the correct value for resizing, "
        "refer to this guide: "
        "https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/index.html#requirements-tc",
        "task", "https://github.com/s9roll7/animatediff-cli-prompt-travel/issues/19",
        "the reporter ignores it: not actually slower",
    ),
]

ACTION: list[tuple[str, str, str, str]] = [
    (
        "Token indices sequence length is longer than the specified maximum sequence length for this model "
        "(24152 > 16384).  Running this sequence through the model will result in indexing errors.",
        "task", "https://github.com/kvcache-ai/ktransformers/issues/716", "the model's output was wrong",
    ),
    (
        "A decoder-only architecture is being used, but right-padding was detected! For correct generation "
        "results, please set `padding_side='left'` when initializing the tokenizer.",
        "task", "https://github.com/Vision-CAIR/MiniGPT-4/issues/48", "fixed by doing what it asks",
    ),
    (
        "W1029 21:16:44.769000 20836 Lib\\site-packages\\torch\\_dynamo\\convert_frame.py:844] [1/8] "
        "torch._dynamo hit config.cache_size_limit (8)",
        "task", "https://github.com/kijai/ComfyUI-MochiWrapper/issues/44", "compilation stops; generation is slow",
    ),
    (
        "Input length of input_ids is 2183, but `max_length` is set to 2048. This can lead to unexpected behavior. "
        "You should consider increasing `max_new_tokens`.",
        "service", "https://github.com/zai-org/ChatGLM-6B/issues/83", "the answers became very short",
    ),
    (
        "(scheduler +2m13s) Warning: The following resource request cannot be scheduled right now: {'GPU': 0.125, "
        "'CPU': 0.5}. This is likely due to all cluster resources being claimed by actors. Consider creating fewer "
        "actors or adding more nodes to this Ray cluster.",
        "task", "https://github.com/YeWR/EfficientZero/issues/44", "the run stops; fixed with fewer actors",
    ),
    (
        "WARNING 02-13 07:19:11 scheduler.py:949] Input prompt (32889 tokens) is too long and exceeds limit of 2048",
        "service", "https://github.com/vllm-project/vllm/issues/13209", "the request gets no output",
    ),
    (
        "WARNING 02-16 15:37:32 scheduler.py:947] Input prompt (2501 tokens) is too long and exceeds limit of 2048",
        "service", "https://github.com/vllm-project/vllm/issues/13370", "fixed with start-up parameters",
    ),
    (
        "warning: failed to mlock 73728000-byte buffer (after previously locking 0 bytes): Cannot allocate memory\n"
        "Try increasing RLIMIT_MLOCK ('ulimit -l' as root).",
        "task", "https://github.com/abetlen/llama-cpp-python/issues/618", "fixed by raising the limit",
    ),
    (
        "2 pytorch allocator cache flushes since last step. this happens when there is high memory pressure and "
        "is detrimental to performance. if this is happening frequently consider adjusting settings to reduce "
        "memory consumption. If you are unable to make the cache flushes go away consider adding "
        "get_accelerator().empty_cache() calls in your training loop to ensure that all ranks flush their caches "
        "at the same time",
        "task", "https://github.com/hiyouga/LlamaFactory/issues/2258", "memory peaks every step",
    ),
    (
        "WARNING:accelerate.utils.other:Detected kernel version 4.4.0, which is below the recommended minimum of "
        "5.5.0; this can cause the process to hang. It is recommended to upgrade the kernel to the minimum version "
        "or higher",
        "task", "https://github.com/huggingface/accelerate/issues/3343", "the process hangs after it",
    ),
    (
        "Detected kernel version 4.18.0, which is below the recommended minimum of 5.5.0; this can cause the "
        "process to hang.",
        "task", "https://github.com/hiyouga/LlamaFactory/issues/1939", "the run stalls",
    ),
    (
        'time=2025-04-22T11:21:47.546Z level=WARN source=runner.go:131 msg="truncating input prompt" limit=2048 '
        "prompt=5065 keep=5 new=2048",
        "service", "https://github.com/ollama/ollama/issues/10368", "the prompt is cut; set the context size",
    ),
    (
        'time=2025-03-04T02:30:04.818-07:00 level=WARN source=runner.go:129 msg="truncating input prompt" '
        "limit=2048 prompt=16101 keep=4 new=2048",
        "service", "https://github.com/RooCodeInc/Roo-Code/issues/1372", "input silently truncated: a bug",
    ),
    (
        'INFO [update_slots] input truncated | n_ctx=2048 n_erase=1090 n_keep=4 n_left=2044 n_shift=1022 '
        'tid="130623106379776" timestamp=1721345155',
        "service", "https://github.com/TheAiSingularity/graphrag-local-ollama/issues/24",
        "every chunk is truncated whatever the settings",
    ),
    (
        "warning: not compiled with GPU offload support, --gpu-layers option will be ignored\n"
        "warning: see main README.md for information on enabling GPU BLAS support",
        "task", "https://github.com/ggml-org/llama.cpp/issues/9343", "the GPU is not used",
    ),
    (
        "(EngineCore pid=29723) WARNING 06-23 10:27:23 [kv_cache_utils.py:1152] Add 6 padding layers, may waste "
        "at most 60.00% KV cache memory",
        "service", "https://github.com/vllm-project/vllm/issues/46462", "KV cache usage is wrong, decoding slow",
    ),
    (
        "[rank1]:[W511 10:03:36.323250251 ProcessGroupNCCL.cpp:4715] [PG ID 0 PG GUID 0 Rank 1]  using GPU 1 as "
        "device used by this process is currently unknown. This can potentially cause a hang if this rank to GPU "
        "mapping is incorrect. You can pecify device_id in init_process_group() to force use of a particular "
        "device.",
        "task", "https://github.com/EvolvingLMMs-Lab/lmms-eval/issues/670", "the process hangs",
    ),
    (
        "/root/anaconda3/lib/python3.9/site-packages/torch/cuda/__init__.py:138: UserWarning: CUDA initialization: "
        "The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver by "
        "downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx "
        "Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your "
        "version of the CUDA driver. (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)",
        "task", "https://github.com/hiyouga/LlamaFactory/issues/1573", "training ran on the CPU",
    ),
    (
        "WARNING: The requested image's platform (linux/amd64) does not match the detected host platform "
        "(linux/arm64/v8) and no specific platform was requested",
        "task", "https://github.com/sickcodes/dock-droid/issues/16", "the container fails with exec format error",
    ),
    (
        "[rank0]:[W306 14:11:30.969179112 reducer.cpp:1431] Warning: find_unused_parameters=True was specified in "
        "DDP constructor, but did not find any unused parameters in the forward pass. This flag results in an "
        "extra traversal of the autograd graph every iteration, which can adversely affect performance.",
        "task", "https://github.com/m2lines/Samudra/issues/630",
        "filed as a speed problem to fix (see KAIR#103 for the opposite)",
    ),
    # batch two: labelled from their threads after the cue was written, before it was run on them
    (
        "UserWarning: Using a target size (torch.Size([66])) that is different to the input size "
        "(torch.Size([66, 3, 1])). This will likely lead to incorrect results due to broadcasting. Please ensure "
        "they have the same size.",
        "task", "https://github.com/jiaqingxie/DeepProtein/issues/1", "it led to the error computing the loss",
    ),
    (
        "WARNING:tensorflow:Your input ran out of data; interrupting training. Make sure that your dataset or "
        "generator can generate at least `steps_per_epoch * epochs` batches (in this case, 2500 batches). You may "
        "need to use the repeat() function when building your dataset.",
        "task", "https://github.com/jaspereb/Retinanet-Tutorial/issues/17", "training stops after it",
    ),
]


# Measured with ``python -m tests.test_logs_notice_grammar``: on the judge of the branch's start
# (a23a6c7; the first 48 notices were committed alone in 71cb9c5 and scored there: 11/28 and 3/20)
# and after the grammar cue of this round. Batch two (3 harmless, 2 that mattered) was labelled
# after the cue was written and scored on both judges at once: the cue changes none of its verdicts.
BEFORE = {"harmless": 12, "misread": 3}
AFTER = {"harmless": 20, "misread": 3}
# The harmless notices the grammar cue recognises (rule ``decision-notice``): each one was
# judged warning or info before it. Indexes into HARMLESS.
BY_GRAMMAR = [4, 5, 6, 9, 10, 12, 20, 25]


def _ids(cases: list[tuple[str, str, str, str]]) -> list[str]:
    return ["-".join(c[2].rstrip("/").split("/")[-3::2]) for c in cases]


def score(tmp_path: Path) -> tuple[int, int]:
    """(harmless notices judged benign, action-needed notices judged benign)."""
    harmless = sum(log_verdict(tmp_path, text, kind)[0] == "benign" for text, kind, _, _ in HARMLESS)
    misread = sum(log_verdict(tmp_path, text, kind)[0] == "benign" for text, kind, _, _ in ACTION)
    return harmless, misread


def test_every_notice_names_its_public_thread() -> None:
    urls = [c[2] for c in HARMLESS + ACTION]
    assert all(u.startswith("https://github.com/") for u in urls)
    assert len(set(urls)) == len(urls)


def test_the_fresh_set_holds_its_after_figure(tmp_path: Path) -> None:
    # The headline: more harmless notices recognised, no more that mattered called harmless.
    harmless, misread = score(tmp_path)
    assert harmless >= AFTER["harmless"] > BEFORE["harmless"], (harmless, misread)
    assert misread <= AFTER["misread"], (harmless, misread)


@pytest.mark.parametrize("i", BY_GRAMMAR, ids=[_ids(HARMLESS)[i] for i in BY_GRAMMAR])
def test_a_decision_notice_is_harmless_by_its_grammar(tmp_path: Path, i: int) -> None:
    text, kind, url, _ = HARMLESS[i]
    assert log_verdict(tmp_path, text, kind) == ("benign", {"decision-notice"}), url


# Tune rows of the corpus with the same grammar, labelled benign there, that the judge
# called warning or info before this round.
TUNE_DECISIONS = ["vllm-8933-1", "tpu-inference-1021-1", "MONAI-5746-1", "ik_llama.cpp-479-1"]


@pytest.mark.parametrize("row_id", TUNE_DECISIONS)
def test_the_tune_rows_of_the_same_grammar_are_harmless(tmp_path: Path, row_id: str) -> None:
    row = corpus_tune_row(row_id)
    assert row["label"] == "benign"
    top, rules = log_verdict(tmp_path, row["text"], row["kind"])
    assert top == "benign" and "decision-notice" in rules, (top, rules)


# --- counter-tests: real lines with the same grammar that must not read as harmless -----

def test_a_setting_that_exceeds_the_input_and_asks_for_a_change_is_not_harmless(tmp_path: Path) -> None:
    # "... `max_length` is set to 2048. This can lead to unexpected behavior. You should consider
    # increasing ...": the answers were cut short (https://github.com/zai-org/ChatGLM-6B/issues/83).
    text = ACTION[3][0]
    body = shape(text).body
    assert notice_grammar._DECISION.search(body) is not None  # the decision grammar is there ...
    assert not notice_grammar.decided(body, leveled=True)  # ... and the harm vetoes it
    assert log_verdict(tmp_path, text, "service")[0] != "benign"


def test_a_cap_that_limits_the_run_stays_a_warning(tmp_path: Path) -> None:
    # "Capping cudagraph capture sizes from max 512 to 352 ... This limits the maximum batch size":
    # labelled warning in the corpus (a capacity limit worth knowing).
    row = corpus_tune_row("vllm-30515-1")
    assert row["label"] == "warning"
    assert log_verdict(tmp_path, row["text"], row["kind"])[0] == "warning"


def test_a_setting_that_leaves_a_protection_off_is_not_harmless(tmp_path: Path) -> None:
    # llama.cpp's "CORS is set to allow all origins ('*') and no API key is set" (a security risk).
    row = corpus_tune_row("llama.cpp-27374-1")
    line = row["text"].splitlines()[1]
    assert "CORS is set to" in line
    assert log_verdict(tmp_path, line, row["kind"])[0] != "benign"


def test_a_default_that_truncates_is_not_called_harmless(tmp_path: Path) -> None:
    # The thread calls it harmless, but a notice about truncating examples names cut data: the
    # grammar cannot tell, so it keeps the warning (a miss of this round, counted in AFTER).
    text, kind, _, _ = HARMLESS[16]
    assert "Defaulting to" in text
    assert log_verdict(tmp_path, text, kind)[0] == "warning"


@pytest.mark.parametrize(
    ("text", "url"),
    [
        (
            "WARNING 11-13 07:10:29 [profiling.py:245] The sequence length used for profiling (max_num_batched_tokens / "
            "max_num_seqs = 745) is too short to hold the multi-modal embeddings in the worst case (796 tokens in total, "
            "out of which {'image': 693} are reserved for multi-modal embeddings). This may cause certain multi-modal "
            "inputs to fail during inference, even when the input text is short. To avoid this, you should increase "
            "`max_model_len`, reduce `max_num_seqs`, and/or reduce `mm_counts`.",
            "https://github.com/deepseek-ai/DeepSeek-OCR/issues/260",
        ),
        (
            "WARNING 03-11 02:55:27 tokenizer.py:64] Using a slow tokenizer. This might cause a significant slowdown. "
            "Consider using a fast tokenizer instead.",
            "https://github.com/xorbitsai/inference/issues/1115",
        ),
    ],
)
def test_a_warning_that_asks_for_a_change_is_not_a_decision_notice(tmp_path: Path, text: str, url: str) -> None:
    # "you should increase ...", "Consider using ...": a demand vetoes the grammar cue. (The slow
    # tokenizer notice is called benign by the older fallback cue, for "Using a slow ...": not this one.)
    assert not notice_grammar.decided(shape(text).body, leveled=True), url
    top, rules = log_verdict(tmp_path, text, "service")
    assert "decision-notice" not in rules, (url, top, rules)


def test_a_decision_at_info_level_stays_information(tmp_path: Path) -> None:
    # The same thread's INFO line of the same engine: information, not a harmless warning
    # (https://github.com/transformerlab/transformerlab-app/issues/370).
    text = "INFO 04-16 12:12:41 config.py:820] Chunked prefill is enabled with max_num_batched_tokens=512."
    assert notice_grammar.decided(shape(text).body, leveled=True)
    assert log_verdict(tmp_path, text, "service")[0] == "info"


def test_a_bare_setting_needs_its_reason(tmp_path: Path) -> None:
    # "Setting seed to 17" (a trainer's own INFO line, corpus row llm-foundry-1501-2) states a
    # setting without a reason: printed bare it would be information, not a notice.
    row = corpus_tune_row("llm-foundry-1501-2")
    body = shape(next(x for x in row["text"].splitlines() if "Setting seed" in x)).body
    assert body.endswith("Setting seed to 17")
    assert notice_grammar.decided(body, leveled=True)
    assert not notice_grammar.decided(body, leveled=False)


def test_a_risk_the_program_acts_to_avoid_does_not_veto(tmp_path: Path) -> None:
    # tokenizers' "... Disabling parallelism to avoid deadlocks...": the deadlock is what it
    # avoids (corpus row garak-750-1, benign).
    row = corpus_tune_row("garak-750-1")
    line = next(x for x in row["text"].splitlines() if "Disabling parallelism" in x)
    body = line[line.index("huggingface/tokenizers"):]
    assert notice_grammar.decided(body, leveled=False)


if __name__ == "__main__":  # pragma: no cover - the headline figures, for docs/history/logs-notebook.md
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        h, m = score(Path(d))
        for name, cases in (("harmless", HARMLESS), ("action", ACTION)):
            for text, kind, url, _ in cases:
                print(name, log_verdict(Path(d), text, kind), url, file=sys.stderr)
    print(f"harmless recognised {h}/{len(HARMLESS)}; action-needed misread as harmless {m}/{len(ACTION)}")
