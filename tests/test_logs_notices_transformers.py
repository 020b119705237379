"""Harmless notices of transformers, the EAGLE-3 pipeline's own library, on a normal run.

Same method as tests/test_logs_notices_gpu_host_tools.py: each builtin rule after the comment "Notice
catalog" in eagle3tui/logs/builtin_rules.toml (rules named in NOTICES) is checked on real lines posted in public
threads (URLs beside each case), where normal work follows the notice or a maintainer (or the
library itself) says it is harmless. Every one of these cases was judged wrongly (info, warning or
progress) before its rule. Where a notice's words resemble a real failure, that failure, posted in a
public thread, is checked to stay fatal (or at least not harmless). ``ALREADY_RIGHT`` holds the
pipeline notices of the same survey that were judged harmless before their rules and got no rule:
they are kept here so that no later rule turns them into alerts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from eagle3tui.logs.rules import load_builtin_rules
from tests.conftest import log_verdict

# (rule, real line(s) as posted, the threads: the line's own first, then those calling it harmless)
NOTICES = [
    (
        "transformers-pad-token-notice",
        "Setting `pad_token_id` to `eos_token_id`:50256 for open-end generation.",
        # "printed once for every generation"; HELM then passes pad_token_id to silence it; a maintainer
        # of transformers gives the same one-line fix
        "https://github.com/stanford-crfm/helm/issues/2257 https://github.com/stanford-crfm/helm/pull/4087 "
        "https://github.com/huggingface/transformers/issues/12020",
    ),
    (
        "transformers-pad-token-notice",
        "Setting `pad_token_id` to `eos_token_id`:151645 for open-end generation.",
        # a maintainer: "this shouldn't affect normal generation"
        "https://github.com/OpenGVLab/InternVL/issues/1015 https://github.com/huggingface/transformers/issues/12020",
    ),
    (
        "transformers-attention-mask-notice",
        "\n".join([
            "The attention mask and the pad token id were not set. As a consequence, you may observe unexpected "
            "behavior. Please pass your input's `attention_mask` to obtain reliable results.",
            "Setting `pad_token_id` to `eos_token_id`:0 for open-end generation.",
        ]),
        # printed "before each chat response"; a maintainer of KoboldAI: "This is normal behavior and can be
        # ignored"; Qwen's: "In general, you can simply ignore this warning"
        "https://github.com/mosaicml/llm-foundry/pull/118 https://github.com/KoboldAI/KoboldAI-Client/issues/382 "
        "https://github.com/QwenLM/Qwen3/issues/267",
    ),
    (
        "transformers-attention-mask-notice",
        "The attention mask and the pad token id were not set. As a consequence, you may observe unexpected behavior. "
        "Please pass your input's `attention_mask` to obtain reliable results.",
        # the notice alone, as a service prints it on every request: "This is normal behavior and can be ignored"
        "https://github.com/KoboldAI/KoboldAI-Client/issues/382 https://github.com/QwenLM/Qwen3/issues/267",
    ),
    (
        "transformers-attention-mask-notice",
        "The attention mask is not set and cannot be inferred from input because pad token is same as eos token. "
        "As a consequence, you may observe unexpected behavior. Please pass your input's `attention_mask` to "
        "obtain reliable results.",
        # the maintainer answers "忽略" (ignore it); SpatialLM's: "it should not affect the result"
        "https://github.com/shibing624/ChatPDF/issues/36 https://github.com/manycore-research/SpatialLM/issues/69",
    ),
    (
        "transformers-new-head-weights-notice",
        "\n".join([
            "[WARNING|modeling_utils.py:4003] 2024-03-13 17:16:17,605 >> Some weights of "
            "BertForSequenceClassification were not initialized from the model checkpoint at bert-base-cased and "
            "are newly initialized: ['classifier.bias', 'classifier.weight']",
            "You should probably TRAIN this model on a down-stream task to be able to use it for predictions and "
            "inference.",
        ]),
        # transformers' own GLUE example, which goes on to tokenize and train; sentence-transformers'
        # maintainer: "you can ignore it when you train the model"
        "https://github.com/huggingface/transformers/pull/29627 "
        "https://github.com/huggingface/sentence-transformers/issues/699",
    ),
    (
        "transformers-new-head-weights-notice",
        "\n".join([
            " Some weights of Qwen2ForTokenClassification were not initialized from the model checkpoint at "
            "/mnt/usercache/huggingface/Qwen2.5-3B-Instruct and are newly initialized: ['score.bias', "
            "'score.weight']",
            "You should probably TRAIN this model on a down-stream task to be able to use it for predictions and "
            "inference.",
        ]),
        # a PPO critic: the value head is new by design and trained by the run that prints it
        "https://github.com/Jiayi-Pan/TinyZero/issues/90 "
        "https://github.com/huggingface/sentence-transformers/issues/699",
    ),
    (
        "transformers-new-head-weights-notice",
        "\n".join([
            "Some weights of BertForSequenceClassification were not initialized from the model checkpoint at "
            "model_bertAlisafaya_base/0_Transformer/ and are newly initialized: "
            "['classifier.bias', 'classifier.weight']",
            "You should probably TRAIN this model on a down-stream task to be able to use it for predictions and "
            "inference.",
        ]),
        # the maintainer: "As the rest of the message says, you can ignore it when you train the model"
        "https://github.com/huggingface/sentence-transformers/issues/699 "
        "https://github.com/huggingface/transformers/pull/29627",
    ),
    (
        "transformers-loss-type-notice",
        "`loss_type=None` was set in the config but it is unrecognised.Using the default loss: `ForCausalLMLoss`.",
        # ms-swift's maintainer: "这个警告忽略就好了" (just ignore this warning); in transformers#39804 the
        # training goes on to its first steps after it
        "https://github.com/modelscope/ms-swift/issues/4937 https://github.com/huggingface/transformers/issues/39804",
    ),
    (
        "transformers-loss-type-notice",
        "  0%|          | 0/26583 [00:00<?, ?it/s]`loss_type=None` was set in the config but it is unrecognised."
        "Using the default loss: `ForCausalLMLoss`.",
        "https://github.com/huggingface/transformers/issues/39804 https://github.com/modelscope/ms-swift/issues/4937",
    ),
    (
        "transformers-rescale-notice",
        "(VllmWorker rank=1 pid=230932) It looks like you are trying to rescale already rescaled images. If the "
        "input images have pixel values between 0 and 1, set `do_rescale=False` to avoid rescaling them again.",
        # vLLM's maintainer: "This warning message should only appear during start up and can be safely
        # ignored"; vLLM then stopped passing the dummy images that trigger it
        "https://github.com/vllm-project/vllm/issues/14181 https://github.com/vllm-project/vllm/issues/15094 "
        "https://github.com/vllm-project/vllm/pull/15107",
    ),
]

# Pipeline notices of the same survey that already read as harmless (no rule added for them).
ALREADY_RIGHT = [
    ("`use_cache=True` is incompatible with gradient checkpointing. Setting `use_cache=False`...",
     "https://github.com/huggingface/optimum-habana/pull/159 https://github.com/modelscope/ms-swift/issues/22"),
    ("`torch_dtype` is deprecated! Use `dtype` instead!",
     "https://github.com/linkedin/Liger-Kernel/issues/880 https://github.com/sgl-project/sglang/issues/11039"),
    ("/Users/lakshithnishshanke/miniconda3/envs/ML/lib/python3.11/site-packages/huggingface_hub/file_download.py:1132: "
     "FutureWarning: `resume_download` is deprecated and will be removed in version 1.0.0. Downloads always resume "
     "when possible. If you want to force a new download, use `force_download=True`.\n  warnings.warn(",
     "https://github.com/labmlai/inspectus/issues/5"),
    ("04/03/2023 22:14:21 - WARNING - datasets.fingerprint - Parameter 'function'=<function "
     "HFDecoderModel.tokenize.<locals>.tokenize_function at 0x7f63180cdca0> of the transform "
     "datasets.arrow_dataset.Dataset._map_single couldn't be hashed properly, a random hash was used instead. Make "
     "sure your transforms and parameters are serializable with pickle or dill for the dataset fingerprinting and "
     "caching to work. If you reuse this transform, the caching mechanism will consider it to be different from the "
     "previous calls and recompute everything. This warning is only showed once. Subsequent hashing failures won't "
     "be showed.",
     "https://github.com/OptimalScale/LMFlow/issues/90 https://github.com/huggingface/search-and-learn/issues/10"),
    ("[rank0]:[W725 12:58:07.811811380 reducer.cpp:1430] Warning: find_unused_parameters=True was specified in DDP "
     "constructor, but did not find any unused parameters in the forward pass. This flag results in an extra "
     "traversal of the autograd graph every iteration,  which can adversely affect performance. If your model indeed "
     "never has any unused parameters in the forward pass, consider turning this flag off. Note that this warning "
     "may be a false positive if your model has flow control causing later iterations to have unused parameters. "
     "(function operator())",
     "https://github.com/huggingface/transformers/issues/39804"),
    (" UserWarning: `huggingface_hub` cache-system uses symlinks by default to efficiently store duplicated files but "
     "your machine does not support them in C:\\Users\\ECHO\\.cache\\huggingface\\hub\\models--amd--Llama-3.2-3B-"
     "Instruct-awq-g128-int4-asym-fp16-onnx-hybrid. Caching files will still work but in a degraded version that "
     "might require more space on your disk. This warning can be disabled by setting the "
     "`HF_HUB_DISABLE_SYMLINKS_WARNING` environment variable. For more details, see "
     "https://huggingface.co/docs/huggingface_hub/how-to-cache#limitations.",
     "https://github.com/lemonade-sdk/lemonade/issues/170 https://github.com/huggingface/huggingface_hub/issues/4488"),
    ("(VllmWorker rank=1 pid=236) WARNING 05-03 17:42:23 [fused_moe.py:668] Using default MoE config. "
     "Performance might be sub-optimal! Config file not found at "
     "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/layers/"
     "fused_moe/configs/E=16,N=1536,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8,block_shape=[128,128].json",
     "https://github.com/vllm-project/vllm/issues/17619 https://github.com/vllm-project/vllm/pull/23006"),
    ("huggingface/tokenizers: The current process just got forked, after parallelism has already been used. Disabling "
     "parallelism to avoid deadlocks...\nTo disable this warning, you can either:\n\t- Avoid using `tokenizers` before "
     "the fork if possible\n\t- Explicitly set the environment variable TOKENIZERS_PARALLELISM=(true | false)",
     "https://github.com/huggingface/text-generation-inference/issues/1035 "
     "https://github.com/sillsdev/silnlp/issues/316"),
    ("C:\\DATA\\SD\\Data\\Packages\\Stable Diffusion WebUI Forge NEW\\modules_forge\\patch_basic.py:38: FutureWarning: "
     "You are using `torch.load` with `weights_only=False` (the current default value), which uses the default pickle "
     "module implicitly. It is possible to construct malicious pickle data which will execute arbitrary code during "
     "unpickling (See https://github.com/pytorch/pytorch/blob/main/SECURITY.md#untrusted-models for more details). "
     "In a future release, the default value for `weights_only` will be flipped to `True`. This limits the "
     "functions that could be executed during unpickling. Arbitrary objects will no longer be allowed to be "
     "loaded via this mode "
     "unless they are explicitly allowlisted by the user via `torch.serialization.add_safe_globals`. We recommend you "
     "start setting `weights_only=True` for any use case where you don't have full control of the loaded file. Please "
     "open an issue on GitHub for any issues related to this experimental feature.\n  result = original_loader(*args, "
     "**kwargs)",
     "https://github.com/lllyasviel/stable-diffusion-webui-forge/issues/1697 "
     "https://github.com/mj-will/nessai/pull/455"),
    ("06-16 21:29:32 [TRAIN] [Rank 0] [INFO] [train.py:535] Training finished, exiting ...\n"
     "[rank0]:[W616 21:29:33.762196891 ProcessGroupNCCL.cpp:1496] Warning: WARNING: destroy_process_group() was not "
     "called before program exit, which can leak resources. For more info, please see "
     "https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())",
     "https://github.com/PrimeIntellect-ai/prime-rl/pull/417 https://github.com/pytorch/examples/pull/1387"),
    ("The following values were not passed to `accelerate launch` and had defaults used instead:\n"
     "        `--num_processes` was set to a value of `1`\n        `--num_machines` was set to a value of `1`\n"
     "        `--mixed_precision` was set to a value of `'no'`\n"
     "        `--dynamo_backend` was set to a value of `'no'`\n"
     "To avoid this warning pass in values for each of the problematic parameters or run `accelerate config`.",
     "https://github.com/bmaltais/kohya_ss/issues/1735 https://github.com/huggingface/diffusers/issues/783"),
]


def _case_ids() -> list[str]:
    return [f"{n[0]}-{i}" for i, n in enumerate(NOTICES)]


@pytest.mark.parametrize(("rule", "text", "urls"), NOTICES, ids=_case_ids())
def test_a_transformers_notice_is_benign(tmp_path: Path, rule: str, text: str, urls: str) -> None:
    assert len(urls.split()) >= 2 and all(u.startswith("https://github.com/") for u in urls.split())
    top, rules = log_verdict(tmp_path, text)
    assert (top, rule in rules) == ("benign", True), (top, rules)


@pytest.mark.parametrize(("text", "urls"), ALREADY_RIGHT, ids=[f"already-right-{i}" for i in range(len(ALREADY_RIGHT))])
def test_a_pipeline_notice_judged_right_before_stays_benign(tmp_path: Path, text: str, urls: str) -> None:
    assert all(u.startswith("https://github.com/") for u in urls.split())
    top, rules = log_verdict(tmp_path, text)
    assert top == "benign", (top, rules)


def test_the_generation_notices_are_benign_in_a_service_too(tmp_path: Path) -> None:
    # Answers are regenerated through a server (vLLM, SGLang, a transformers chat server): the stage kind
    # must not change how these notices read.
    for rule, text, _ in NOTICES:
        if rule in ("transformers-pad-token-notice", "transformers-attention-mask-notice",
                    "transformers-rescale-notice"):
            top, rules = log_verdict(tmp_path, text, kind="service")
            assert (top, rule in rules) == ("benign", True), (text, top, rules)


def test_a_tokenizer_without_a_pad_token_is_fatal(tmp_path: Path) -> None:
    # The failure the pad notice's words resemble: padding a batch with no pad token raises
    # (https://github.com/huggingface/trl/issues/466, https://github.com/DachengLi1/LongChat/issues/31).
    top, rules = log_verdict(
        tmp_path,
        "ValueError: Asking to pad but the tokenizer does not have a padding token. Please select a token to use as "
        "`pad_token` `(tokenizer.pad_token = tokenizer.eos_token e.g.)` or add a new pad token via "
        "`tokenizer.add_special_tokens({'pad_token': '[PAD]'})`.",
    )
    assert top == "fatal" and "transformers-pad-token-notice" not in rules, (top, rules)


def test_right_padding_in_batched_generation_is_not_the_mask_notice(tmp_path: Path) -> None:
    # Batched generation with right padding gives wrong answers (garbled output in
    # https://github.com/Vision-CAIR/MiniGPT-4/issues/129): not harmless, and not taken by the mask rule.
    top, rules = log_verdict(
        tmp_path,
        "A decoder-only architecture is being used, but right-padding was detected! For correct generation results, "
        "please set `padding_side='left'` when initializing the tokenizer.",
    )
    assert top != "benign" and "transformers-attention-mask-notice" not in rules, (top, rules)


def test_a_checkpoint_whose_body_is_newly_initialized_is_not_harmless(tmp_path: Path) -> None:
    # The same notice, but the encoder's own layers are new: the checkpoint did not load
    # (https://github.com/intel/intel-extension-for-transformers/pull/152). Only a task head may be new.
    top, rules = log_verdict(tmp_path, "\n".join([
        "[WARNING|modeling_utils.py:3297] 2023-08-11 13:16:23,325 >> Some weights of BertForSequenceClassification "
        "were not initialized from the model checkpoint at ./output and are newly initialized: "
        "['bert.encoder.layer.2.attention.self.query.bias', 'bert.encoder.layer.2.attention.self.key.weight', "
        "'bert.encoder.layer.3.attention.self.key.bias', 'classifier.weight', 'classifier.bias']",
    ]))
    assert top != "benign" and "transformers-new-head-weights-notice" not in rules, (top, rules)


def test_an_lm_head_that_is_newly_initialized_is_not_harmless(tmp_path: Path) -> None:
    # A causal LM whose lm_head is new generates noise unless the head is tied to the embeddings; the rule
    # cannot tell, so it leaves the line alone (https://github.com/huggingface/transformers/issues/6780).
    top, rules = log_verdict(
        tmp_path,
        "Some weights of GPT2LMHeadModel were not initialized from the model checkpoint at gpt2 and are newly "
        "initialized: ['h.0.attn.masked_bias', 'h.1.attn.masked_bias', 'h.2.attn.masked_bias', "
        "'h.3.attn.masked_bias', 'h.4.attn.masked_bias', 'h.5.attn.masked_bias', 'h.6.attn.masked_bias', "
        "'h.7.attn.masked_bias', 'h.8.attn.masked_bias', 'h.9.attn.masked_bias', 'h.10.attn.masked_bias', "
        "'h.11.attn.masked_bias', 'lm_head.weight']",
    )
    assert "transformers-new-head-weights-notice" not in rules, (top, rules)


def test_a_vision_server_that_dies_after_the_rescale_notice_is_fatal(tmp_path: Path) -> None:
    # The notice (https://github.com/vllm-project/vllm/issues/14181), then a worker's death as posted in
    # https://github.com/QwenLM/Qwen-VL/issues/465: the notice must not hide it.
    top, rules = log_verdict(tmp_path, "\n".join([
        "(VllmWorker rank=1 pid=230932) It looks like you are trying to rescale already rescaled images. If the "
        "input images have pixel values between 0 and 1, set `do_rescale=False` to avoid rescaling them again.",
        "ERROR 09-13 03:41:19 multiproc_worker_utils.py:120] Worker VllmWorkerProcess pid 138 died, exit code: -15",
        "RuntimeError: CUDA error: no kernel image is available for execution on the device",
    ]), kind="service")
    assert top == "fatal" and "transformers-rescale-notice" not in rules, (top, rules)


def test_every_transformers_notice_is_a_shipped_benign_rule() -> None:
    # Each case names a benign rule of the shipped pack, read by the loader (wherever in the file the rule sits,
    # whatever comment heads it), and the case test above holds its two threads: no rule here ships without
    # the evidence it was written from.
    kinds = {rule.id: rule.kind for rule in load_builtin_rules()}
    ids = {rule for rule, _text, _urls in NOTICES}
    assert len(ids) >= 5 and not ids - kinds.keys(), ids - kinds.keys()
    assert all(kinds[rule] == "benign" for rule in ids), {rule: kinds[rule] for rule in ids}
