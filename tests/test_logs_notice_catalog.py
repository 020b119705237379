"""The notice catalog: harmless notices that libraries print verbatim, from public threads.

Each builtin rule of the catalog (eagle3tui/logs/builtin_rules.toml, after the comment
"Notice catalog") is checked on real lines posted in at least two public threads where the
notice is followed by normal work or a maintainer calls it harmless (URLs beside each
case), and, where a notice is about something that can really fail, the real failure is
checked to stay fatal. The catalog was built from public threads, not from the corpus;
two tune rows of the corpus carry one of its notices and are checked too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import corpus_tune_row, log_verdict


# (rule, real line as posted, the threads it was posted in)
NOTICES = [
    (
        "cpu-threads-notice",
        "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system "
        "being overloaded, please further tune the variable for optimal performance in your application as needed.",
        # "Although the program can run normally"; followed by the run's own start-up; the notice was added on
        # purpose (https://github.com/pytorch/pytorch/pull/22501, made a log.warning in #63953)
        "https://github.com/YueLiao/gen-vlkt/issues/13 https://github.com/thu-coai/EVA/issues/49 "
        "https://github.com/pytorch/pytorch/pull/22501",
    ),
    (
        "cpu-threads-notice",
        "2025-02-11T08:56:30.329538857Z WARNING 02-11 08:56:30 _logger.py:72] Reducing Torch parallelism from 172 "
        "threads to 1 to avoid unnecessary CPU contention. Set OMP_NUM_THREADS in the external environment to tune "
        "this value as needed.",
        # vLLM sets it on purpose: https://github.com/vllm-project/vllm/pull/6109 (and #6802)
        "https://github.com/opea-project/GenAIExamples/issues/1519 https://github.com/vllm-project/vllm/pull/6109",
    ),
    (
        "nnpack-unsupported-cpu",
        "[W NNPACK.cpp:80] Could not initialize NNPACK! Reason: Unsupported hardware.",
        # "Everything works fine though" / maintainer: "that is probably OK"
        "https://github.com/advimman/lama/issues/277 https://github.com/Maratyszcza/NNPACK/issues/208 "
        "https://github.com/nadermx/backgroundremover/issues/3",
    ),
    (
        "nnpack-unsupported-cpu",
        "[W322 21:06:39.645884768 NNPACK.cpp:56] Could not initialize NNPACK! Reason: Unsupported hardware.",
        "https://github.com/docling-project/docling-serve/issues/545",
    ),
    (
        "torch-handled-internally",
        "/opt/conda/lib/python3.10/site-packages/torch/autograd/graph.py:744: UserWarning: Plan failed with a "
        "cudnnException: CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: cudnnFinalize Descriptor Failed cudnn_status: "
        "CUDNN_STATUS_NOT_SUPPORTED (Triggered internally at /opt/conda/conda-bld/pytorch_1712608935911/work/aten/"
        "src/ATen/native/cudnn/Conv_v8.cpp:919.)",
        # "this error did not affect the progress of training"; a PyTorch maintainer: the warning alone should not
        # (affect results); "The training seems to be progressing"
        "https://github.com/pytorch/pytorch/issues/121834 https://github.com/pytorch/pytorch/issues/126605 "
        "https://github.com/ultralytics/ultralytics/issues/12976",
    ),
    (
        "torch-handled-internally",
        "/home/ubuntu22/venvs/isaac5/lib/python3.11/site-packages/torch/autograd/graph.py:824: UserWarning: "
        "Attempting to run cuBLAS, but there was no current CUDA context! Attempting to set the primary context... "
        "(Triggered internally at /pytorch/aten/src/ATen/cuda/CublasHandlePool.cpp:181.)",
        # followed by the run's 100% bar / in the middle of a bar; the workaround that prints it:
        # https://github.com/pytorch/pytorch/pull/120131
        "https://github.com/linden713/humanoid_amp/issues/14 https://github.com/fan-ziqi/robot_lab/issues/101",
    ),
    (
        "ddp-performance-notice",
        "[W reducer.cpp:1303] Warning: find_unused_parameters=True was specified in DDP constructor, but did not "
        "find any unused parameters in the forward pass. This flag results in an extra traversal of the autograd "
        "graph every iteration,  which can adversely affect performance. If your model indeed never has any unused "
        "parameters in the forward pass, consider turning this flag off. Note that this warning may be a false "
        "positive if your model has flow control causing later iterations to have unused parameters. "
        "(function operator())",
        # maintainer: "safe to try find_unused_parameters=False"
        "https://github.com/cszn/KAIR/issues/103 https://github.com/ZhangGongjie/Meta-DETR/issues/60",
    ),
    (
        "ddp-performance-notice",
        "[W reducer.cpp:313] Warning: Grad strides do not match bucket view strides. This may indicate grad was "
        "not created according to the gradient layout contract, or that the param's strides changed since DDP was "
        "constructed.  This is not an error, but may impair performance.",
        # a PyTorch maintainer: "the warning is spurious, strides are nominally different but physical layout is
        # the same"
        "https://github.com/pytorch/pytorch/issues/47163 https://github.com/huggingface/pytorch-image-models/issues/2147",
    ),
    (
        "deepspeed-aio-notice",
        "\n".join([
            " [WARNING]  async_io requires the dev libaio .so object and headers but these were not found.",
            " [WARNING]  If libaio is already installed (perhaps from source), try setting the CFLAGS and LDFLAGS "
            "environment variables to where it can be found.",
            "async_io ............... [NO] ....... [NO]",
            "fused_adam ............. [NO] ....... [OKAY]",
        ]),
        # ds_report goes on with every other op OKAY; the same two lines after an install
        "https://github.com/deepspeedai/DeepSpeed/issues/6972 https://github.com/deepspeedai/DeepSpeed/issues/3145",
    ),
    (
        "deepspeed-aio-notice",
        " [WARNING]  async_io: please install the libaio-dev package with apt",
        "https://github.com/deepspeedai/DeepSpeed/issues/6972",
    ),
    (
        "tensorrt-absent-notice",
        "2024-05-10 11:33:15.185131: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: "
        "Could not find TensorRT",
        # maintainer: "Just ignore it"; "the training process is going well"; epochs go on after it
        "https://github.com/hiyouga/LlamaFactory/issues/3673 https://github.com/meta-recsys/generative-recommenders/"
        "issues/176 https://github.com/effusiveperiscope/so-vits-svc/issues/38",
    ),
    (
        "tensorrt-absent-notice",
        "2023-02-13 19:39:03.670144: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: "
        "Cannot dlopen some TensorRT libraries. If you would like to use Nvidia GPU with TensorRT, please make sure "
        "the missing libraries mentioned above are installed properly.",
        # "only relevant for TensorRT"; "I think it is working"
        "https://github.com/googlecolab/colabtools/issues/3408 https://github.com/DeepLabCut/DeepLabCut/issues/2115 "
        "https://github.com/tensorflow/tensorflow/issues/35364",
    ),
    (
        "fp8-marlin-notice",
        "WARNING 05-13 14:43:17 [marlin_utils_fp8.py:167] Your GPU does not have native support for FP8 "
        "computation but FP8 quantization is being used. Weight-only FP8 compression will be used leveraging the "
        "Marlin kernel. This may degrade performance for compute-heavy workloads.",
        # followed by a gsm8k score table; the FP8 Marlin design: https://github.com/vllm-project/vllm/pull/5975
        "https://github.com/vllm-project/vllm/pull/18026 https://github.com/sgl-project/sglang/issues/12887",
    ),
    (
        "hf-cache-symlink-notice",
        "/usr/lib/python3.10/site-packages/huggingface_hub/file_download.py:144: UserWarning: `huggingface_hub` "
        "cache-system uses symlinks by default to efficiently store duplicated files but your machine does not "
        "support them in F:\\pinokio\\api\\Frame-Pack.git\\app\\hf_download\\hub\\models--lllyasviel--flux_redux_bfl. "
        "Caching files will still work but in a degraded version that might require more space on your disk.",
        # the maintainers' "degraded but fully working cache-system"; "the cache works completely correctly"
        "https://github.com/pinokiocomputer/program.pinokio.computer/issues/14 "
        "https://github.com/huggingface/huggingface_hub/pull/1067 https://github.com/huggingface/huggingface_hub/"
        "issues/4488",
    ),
    (
        "preload-ignored",
        "\n".join([
            "ERROR: ld.so: object '/usr/$LIB/bear/libexec.so' from LD_PRELOAD cannot be preloaded (cannot open "
            "shared object file): ignored.",
            "CC:  iperf3/iperf_server_api.c",
            "ERROR: ld.so: object '/usr/$LIB/bear/libexec.so' from LD_PRELOAD cannot be preloaded (cannot open "
            "shared object file): ignored.",
            "CC:  iperf3/iperf_udp.c",
        ]),
        # the build goes on between the lines; a script goes on logging; "it is still fine for me"
        "https://github.com/rizsotto/Bear/issues/582 https://github.com/yuxng/DA-RNN/issues/15 "
        "https://github.com/tuanpham-dev/termux-ubuntu/issues/39",
    ),
    (
        "preload-ignored",
        "ERROR: ld.so: object '/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4' from LD_PRELOAD cannot be preloaded "
        "(cannot open shared object file): ignored.",
        "https://github.com/Kron4ek/Conty/issues/25 https://github.com/nolanaatama/sd-1click-colab/issues/51",
    ),
    (
        "preload-ignored",
        "ERROR: ld.so: object 'libdynamorio.so' from LD_PRELOAD cannot be preloaded: ignored.",
        "https://github.com/DynamoRIO/drmemory/issues/34",
    ),
    (
        "xla-timer-notice",
        "2025-02-10 16:44:23.346297: E external/xla/xla/stream_executor/cuda/cuda_timer.cc:86] Delay kernel timed "
        "out: measured time has sub-optimal accuracy. There may be a missing warmup execution, please investigate "
        "in Nsight Systems.",
        # printed thousands of times during a run; the XLA change that prints it says it only lowers the accuracy
        # of autotuning measurements
        "https://github.com/tensorflow/tensorflow/issues/73487 https://github.com/openxla/xla/pull/9757",
    ),
]


@pytest.mark.parametrize(("rule", "text", "urls"), NOTICES, ids=[f"{n[0]}-{i}" for i, n in enumerate(NOTICES)])
def test_a_catalogued_notice_is_benign(tmp_path: Path, rule: str, text: str, urls: str) -> None:
    assert urls.startswith("https://github.com/")
    top, rules = log_verdict(tmp_path, text)
    assert (top, rule in rules) == ("benign", True), (top, rules)


def test_a_catalogued_notice_is_benign_in_a_service_too(tmp_path: Path) -> None:
    # The vLLM notices are printed by servers; the stage kind must not change them.
    for rule, text, _ in NOTICES:
        if rule in ("fp8-marlin-notice", "cpu-threads-notice"):
            top, rules = log_verdict(tmp_path, text, kind="service")
            assert (top, rule in rules) == ("benign", True), (text, top, rules)


@pytest.mark.parametrize(
    "row_id",
    [
        # torchrun's banner: the logging header alone on its line, then the notice between rows of stars
        "LUMI-AI-Guide-3-1",  # https://github.com/Lumi-supercomputer/LUMI-AI-Guide/issues/3
        "Restormer-74-1",  # https://github.com/swz30/Restormer/issues/74
    ],
)
def test_the_tune_rows_with_a_catalogued_notice_are_benign(tmp_path: Path, row_id: str) -> None:
    top, rules = log_verdict(tmp_path, corpus_tune_row(row_id)["text"])
    assert (top, rules) == ("benign", {"cpu-threads-notice"}), (top, rules)


def test_torchruns_banner_header_does_not_hide_what_follows_it(tmp_path: Path) -> None:
    # The empty header counts as the notice's; a failure printed after it is judged on its own lines
    # (all lines from https://github.com/meta-llama/codellama/issues/123).
    top, _ = log_verdict(tmp_path, "\n".join([
        "WARNING:torch.distributed.run:",
        "*****************************************",
        "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system "
        "being overloaded, please further tune the variable for optimal performance in your application as needed.",
        "RuntimeError: CUDA error: invalid device ordinal",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might "
        "be incorrect.",
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 10621 closing signal SIGTERM",
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 1 (pid: 10622) of "
        "binary: /usr/bin/python3",
    ]))
    assert top == "fatal"


def test_nnpack_then_an_illegal_instruction_is_fatal(tmp_path: Path) -> None:
    # On a CPU too old for the build, the notice is followed by the real crash:
    # https://github.com/JaidedAI/EasyOCR/issues/568
    top, _ = log_verdict(tmp_path, "\n".join([
        "[W NNPACK.cpp:64] Could not initialize NNPACK! Reason: Unsupported hardware.",
        "Illegal instruction (core dumped)",
    ]))
    assert top == "fatal"


def test_a_real_cudnn_failure_is_still_fatal(tmp_path: Path) -> None:
    # The same cuDNN status as a raised error, not a plan PyTorch skipped, as posted in
    # https://github.com/pppLang/SKNet/issues/14 (and https://github.com/pytorch/pytorch/issues/11065)
    top, rules = log_verdict(
        tmp_path,
        "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a "
        "non-contiguous input.",
    )
    assert top == "fatal" and "torch-handled-internally" not in rules, (top, rules)


def test_ddps_real_unused_parameter_failure_is_still_fatal(tmp_path: Path) -> None:
    # The error DDP raises when parameters really go unused (it names find_unused_parameters=True too), as posted
    # in https://github.com/va1shn9v/PromptIR/issues/30
    top, rules = log_verdict(tmp_path, (
        "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. This "
        "error indicates that your module has parameters that were not used in producing loss. You can enable "
        "unused parameter detection by (1) passing the keyword argument `find_unused_parameters=True` to "
        "`torch.nn.parallel.DistributedDataParallel`; (2) making sure all `forward` function outputs participate "
        "in calculating loss. If you already have done the above two steps, then the distributed data parallel "
        "module wasn't able to locate the output tensors in the return value of your module's `forward` function. "
        "Please include the loss function and the structure of the return value of `forward` of your module when "
        "reporting this issue (e.g. list,dict, iterable)."
    ))
    assert top == "fatal" and "ddp-performance-notice" not in rules, (top, rules)


def test_deepspeed_failing_to_build_async_io_is_still_fatal(tmp_path: Path) -> None:
    # The notice matters when async_io is built or loaded; then the build aborts:
    # https://github.com/deepspeedai/DeepSpeed/issues/3211
    top, _ = log_verdict(tmp_path, "\n".join([
        "Traceback (most recent call last):",
        '  File "<string>", line 2, in <module>',
        '  File "<pip-setuptools-caller>", line 34, in <module>',
        '  File "D:\\python\\DeepSpeed\\setup.py", line 157, in <module>',
        '    abort(f"Unable to pre-compile {op_name}")',
        '  File "D:\\python\\DeepSpeed\\setup.py", line 51, in abort',
        "    assert False, msg",
        "AssertionError: Unable to pre-compile async_io",
        "DS_BUILD_OPS=1",
        " [WARNING]  async_io requires the dev libaio .so object and headers but these were not found.",
        " [WARNING]  If libaio is already installed (perhaps from source), try setting the CFLAGS and LDFLAGS "
        "environment variables to where it can be found.",
        " [WARNING]  One can disable async_io with DS_BUILD_AIO=0",
        " [ERROR]  Unable to pre-compile async_io",
    ]))
    assert top == "fatal"


def test_tensorflow_without_its_gpu_libraries_is_not_the_tensorrt_notice(tmp_path: Path) -> None:
    # TensorFlow skipping the GPU is not the optional TensorRT being absent:
    # https://github.com/tensorflow/tensorflow/issues/64809
    top, rules = log_verdict(tmp_path, (
        "2024-05-03 14:51:52.375372: W tensorflow/core/common_runtime/gpu/gpu_device.cc:2251] Cannot dlopen some "
        "GPU libraries. Please make sure the missing libraries mentioned above are installed properly if you would "
        "like to use GPU. Follow the guide at https://www.tensorflow.org/install/gpu for how to download and setup "
        "the required libraries for your platform."
    ))
    assert "tensorrt-absent-notice" not in rules, (top, rules)
