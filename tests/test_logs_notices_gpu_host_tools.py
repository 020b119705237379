"""Harmless notices of the programs beside the EAGLE-3 pipeline on a GPU host (pip, vLLM, ROCm, shells, Ray, torch).

Same method as tests/test_logs_notice_catalog.py and tests/test_logs_notices_services_and_data_stacks.py: each
builtin rule listed in NOTICES (eagle3tui/logs/builtin_rules.toml) is
checked on real lines posted in public threads (URLs beside each case) where the notice is followed
by normal work, or a maintainer or the program itself calls it harmless. Every notice was judged
wrongly (warning, or fatal) before its rule. Where the notice's words resemble a real failure, that
failure, posted in a public thread, is checked to stay fatal. The rules were written from public
threads, not from the corpus.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from eagle3tui.logs.rules import load_builtin_rules
from tests.conftest import log_verdict

# (rule, real line(s) as posted, the threads they were posted in)
NOTICES = [
    (
        "triton-operand-order-notice",
        "\n".join([
            'loc("/sgl-workspace/sglang/python/sglang/srt/layers/attention/triton_ops/decode_attention.py":310:16): '
            "error: operation scheduled before its operands",
            'loc("/sgl-workspace/sglang/python/sglang/srt/layers/attention/triton_ops/decode_attention.py":310:16): '
            "error: operation scheduled before its operands",
        ]),
        # a server that goes on to report its token budget and serve; Triton's issue: "The issue will not affect
        # the performance and accuracy"
        "https://github.com/sgl-project/sglang/issues/3196 https://github.com/triton-lang/triton/issues/5368",
    ),
    (
        "triton-operand-order-notice",
        'loc("../fused_backward_simpler.py":121:15): error: operation scheduled before its operands',
        # "though it kept reporting this error, the code actually returns correct results"
        "https://github.com/triton-lang/triton/issues/6380 https://github.com/triton-lang/triton/issues/5368",
    ),
    (
        "torch-tf32-notice",
        "\n".join([
            "/home/wentao/pytorch/torch/_inductor/compile_fx.py:321: UserWarning: TensorFloat32 tensor cores for "
            "float32 matrix multiplication available but not enabled. Consider setting "
            "`torch.set_float32_matmul_precision('high')` for better performance.",
            "  warnings.warn(",
        ]),
        # vLLM silenced it by choosing the precision explicitly; torch's own issue calls TF32 an opt-in speed-up
        "https://github.com/vllm-project/vllm/pull/29897 https://github.com/pytorch/pytorch/issues/153195",
    ),
    (
        "torch-tf32-notice",
        "ComfyUI_windows_portable\\python_embeded\\Lib\\site-packages\\torch\\_inductor\\compile_fx.py:282: "
        "UserWarning: TensorFloat32 tensor cores for float32 matrix multiplication available but not enabled. "
        "Consider setting `torch.set_float32_matmul_precision('high')` for better performance.",
        # a request for an option to turn the speed-up on; a maintainer of another tool: "You can ignore this warning"
        "https://github.com/kijai/ComfyUI-KJNodes/issues/362 https://github.com/mittagessen/kraken/issues/596",
    ),
    (
        "vllm-spawn-notice",
        "WARNING 05-01 10:00:00 [utils.py:2500] We must use the `spawn` multiprocessing start method. Overriding "
        "VLLM_WORKER_MULTIPROC_METHOD to 'spawn'. See https://docs.vllm.ai/en/latest/getting_started/"
        "troubleshooting.html#python-multiprocessing for more information. Reason: CUDA is initialized",
        # vLLM's maintainers added the override so that the fork failure cannot happen
        "https://github.com/vllm-project/vllm/pull/8823 https://github.com/vllm-project/vllm/pull/11074",
    ),
    (
        "qwen-flash-attn-import-notice",
        "\n".join([
            "Warning: import flash_attn rotary fail, please install FlashAttention rotary to get higher efficiency "
            "https://github.com/Dao-AILab/flash-attention/tree/main/csrc/rotary",
            "Warning: import flash_attn rms_norm fail, please install FlashAttention layer_norm to get higher "
            "efficiency https://github.com/Dao-AILab/flash-attention/tree/main/csrc/layer_norm",
        ]),
        # a maintainer: the warning "does not affect fine-tuning or inference"; openai_api.py serves after it
        "https://github.com/InternLM/xtuner/issues/295 https://github.com/QwenLM/Qwen/issues/522",
    ),
    (
        "docker-host-network-ports-notice",
        "\n".join([
            "Status: Downloaded newer image for selenium/standalone-chrome:3",
            "WARNING: Published ports are discarded when using host network mode",
        ]),
        # "No behavior change is introduced" by dropping -p; Docker's maintainer explains -p is not needed with host
        "https://github.com/moodlehq/moodle-plugin-ci/issues/147 https://github.com/AI-Hypercomputer/tpu-recipes/"
        "pull/119 https://github.com/docker/for-mac/issues/3143",
    ),
    (
        "requests-dependency-notice",
        "\n".join([
            "/usr/lib/python2.7/site-packages/requests/__init__.py:91: RequestsDependencyWarning: urllib3 (1.25.2) or "
            "chardet (3.0.4) doesn't match a supported version!",
            "  RequestsDependencyWarning)",
        ]),
        # a maintainer: "this is just a notice and a warning and won't actually affect you"
        "https://github.com/whipper-team/whipper/issues/400 https://github.com/rianhunter/dbxfs/issues/36",
    ),
    (
        "ray-metrics-exporter-notice",
        "\n".join([
            "(pid=gcs_server) [2026-03-03 13:07:44,212 E 521611  (gcs_server) gcs_server.cc:303: Failed to establish "
            "connection to the event+metrics exporter agent.   Events and metrics will not be exported. Exporter  "
            "agent status: RpcError: Running out of retries to  initialize the metrics agent. rpc_code: 14",
            "(raylet) [2026-03-03 13:07:48,113 E 522139 522139]  (raylet) main.cc:1032: Failed to establish connection "
            "to the metrics exporter agent.  Metrics will not be exported.  Exporter agent status: RpcError: Running "
            "out of retries to initialize the metrics agent. rpc_code: 14",
        ]),
        # the same lines with the job's work after them (https://github.com/autonomousvision/navsim/issues/175) already
        # read as harmless; Ray's older wording of the notice said "This won't affect Ray"
        "https://github.com/ZhengYinan-AIR/Diffusion-Planner/issues/82 https://github.com/NovaSky-AI/SkyRL/issues/1103 "
        "https://github.com/ray-project/ray/issues/32044",
    ),
    (
        "vllm-commit-hash-notice",
        "\n".join([
            "(main_task pid=868545) /remote-home1/lji/anaconda3/envs/logic/lib/python3.9/site-packages/vllm/"
            "connections.py:8: RuntimeWarning: Failed to read commit hash:",
            "(main_task pid=868545) No module named 'vllm._version'",
            "(main_task pid=868545)   from vllm.version import __version__ as VLLM_VERSION",
        ]),
        # "it does not seem to affect the program, I ignore it for now"; verl's maintainer: "This will not cause
        # actual error". With the engine's next lines after it (https://github.com/vllm-project/vllm/issues/9356)
        # it already read as harmless.
        "https://github.com/Unakar/Logic-RL/issues/7 https://github.com/verl-project/verl/issues/393 "
        "https://github.com/vllm-project/vllm/issues/9421",
    ),
    (
        "ngc-minor-version-compat-notice",
        "\n".join([
            "WARNING: CUDA Minor Version Compatibility mode ENABLED.",
            "  Using driver version 510.47.03 which has support for CUDA 11.6.  This container",
            "  was built with CUDA 11.8 and will be run in Minor Version Compatibility mode.",
            "  CUDA Forward Compatibility is preferred over Minor Version Compatibility for use",
            "  with this container but was unavailable:",
            "  [[Forward compatibility was attempted on non supported HW (CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE) "
            "cuInit()=804]]",
            "  See https://docs.nvidia.com/deploy/cuda-compatibility/ for details.",
        ]),
        # Triton's server starts after the banner; a user runs a newer container on an older driver of the same
        # major version "successfully" and asks what the banner means
        "https://github.com/triton-inference-server/server/issues/5197 https://github.com/triton-inference-server/"
        "server/issues/3955",
    ),
    (
        "ngc-minor-version-compat-notice",
        "\n".join([
            "WARNING: CUDA Minor Version Compatibility mode ENABLED.",
            "  Using driver version 455.45.01 which has support for CUDA 11.1.  This container",
            "  was built with CUDA 11.4 and will be run in Minor Version Compatibility mode.",
            "  CUDA Forward Compatibility is preferred over Minor Version Compatibility for use",
            "  with this container but was unavailable:",
            "  [[No CUDA-capable device is detected (CUDA_ERROR_NO_DEVICE) cuInit()=100]]",
            "  See https://docs.nvidia.com/deploy/cuda-compatibility/ for details.",
        ]),
        # in the same container "cudaCheck ... says CUDA Driver OK"
        "https://github.com/triton-inference-server/server/issues/3518 https://github.com/NVIDIA/TensorRT-LLM/pull/"
        "19345",
    ),
    (
        "vllm-config-not-set-notice",
        "\n".join([
            "(EngineCore_DP0 pid=3978) INFO 12-07 21:28:40 [kernel_warmup.py:65] Warming up FlashInfer attention.",
            "(EngineCore_DP0 pid=3978) WARNING 12-07 21:28:41 [vllm.py:1375] Current vLLM config is not set.",
            "(EngineCore_DP0 pid=3978) INFO 12-07 21:28:41 [scheduler.py:228] Chunked prefill is enabled with "
            "max_num_batched_tokens=2048.",
        ]),
        # the engine goes on to capture its CUDA graphs; the maintainers removed the message as noise
        "https://github.com/vllm-project/vllm/issues/30240 https://github.com/vllm-project/vllm/pull/29999",
    ),
    (
        "vllm-config-not-set-notice",
        "\n".join([
            "(EngineCore_DP4 pid=4095168) WARNING 11-25 21:32:26 [vllm.py:1155] Current vLLM config is not set.",
            "(EngineCore_DP6 pid=4095170) WARNING 11-25 21:32:26 [vllm.py:1155] Current vLLM config is not set.",
        ]),
        # "repeating useless information"; a vendor fork: "This message flushes other logs"
        "https://github.com/vllm-project/vllm/pull/29445 https://github.com/EnflameTechnology/vllm-gcu/issues/8",
    ),
    (
        "bnb-int8-cast-notice",
        "\n".join([
            "UserWarning: MatMul8bitLt: inputs will be cast from torch.float32 to float16 during quantization",
            '  warnings.warn(f"MatMul8bitLt: inputs will be cast from {A.dtype} to float16 during quantization")',
        ]),
        # a maintainer: "this warning will not affect the performance"; PEFT's maintainer explains the cast
        "https://github.com/AGI-Edgerunners/LLM-Adapters/issues/15 https://github.com/huggingface/peft/issues/2424",
    ),
    (
        "bnb-int8-cast-notice",
        "/usr/local/lib/python3.8/dist-packages/bitsandbytes/autograd/_functions.py:322: UserWarning: MatMul8bitLt: "
        "inputs will be cast from torch.bfloat16 to float16 during quantization",
        # the maintainer: 8-bit training does not use bf16 (the cast is by design)
        "https://github.com/hiyouga/LlamaFactory/issues/2132 https://github.com/AGI-Edgerunners/LLM-Adapters/issues/15",
    ),
    (
        "torch-nested-tensor-notice",
        "\n".join([
            "UserWarning: enable_nested_tensor is True, but self.use_nested_tensor is False because "
            "encoder_layer.self_attn.batch_first was not True(use batch_first for better inference performance)",
            '  warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False because '
            '{why_not_sparsity_fast_path}")',
        ]),
        # printed by nn.Transformer() with its default settings; a project that switched layouts saw no real change
        "https://github.com/pytorch/pytorch/issues/137173 https://github.com/CUNY-CL/yoyodyne/issues/214",
    ),
    (
        "torch-nested-tensor-notice",
        "UserWarning: enable_nested_tensor is True, but self.use_nested_tensor is False because "
        "encoder_layer.norm_first was True",
        "https://github.com/CUNY-CL/yoyodyne/issues/214 https://github.com/pytorch/pytorch/issues/137173",
    ),
    (
        "deepspeed-sparse-attn-notice",
        "\n".join([
            "random_ltd ............. [NO] ....... [OKAY]",
            " [WARNING]  sparse_attn requires a torch version >= 1.5 but detected 2.0",
            " [WARNING]  using untested triton version (2.0.0), only 1.0.0 is known to be compatible",
            "sparse_attn ............ [NO] ....... [NO]",
            "spatial_inference ...... [NO] ....... [OKAY]",
        ]),
        # every other op of the report is [OKAY]; the maintainers: triton>=2 is supported for inference, only sparse
        # attention wants 1.0
        "https://github.com/deepspeedai/DeepSpeed/pull/3152 https://github.com/deepspeedai/DeepSpeed/issues/3480 "
        "https://github.com/deepspeedai/DeepSpeed/issues/3863",
    ),
    (
        "torch-numpy-readonly-notice",
        "\n".join([
            "ComfyUI\\custom_nodes\\ComfyUI-GGUF\\loader.py:65: UserWarning: The given NumPy array is not "
            "writable, and PyTorch does not support non-writable tensors. This means writing to this tensor will "
            "result in undefined behavior. You may want to copy the array to protect its data or make it writable "
            "before converting it to a tensor. This type of warning will be suppressed for the rest of this program. "
            "(Triggered internally at "
            "C:\\actions-runner\\_work\\pytorch\\pytorch\\pytorch\\torch\\csrc\\utils\\tensor_numpy.cpp:209.)",
            "  torch_tensor = torch.from_numpy(tensor.data) # mmap",
        ]),
        # the maintainer: "This is just a warning, not an error ... it can be ignored"; another: "Safe to ignore"
        "https://github.com/city96/ComfyUI-GGUF/issues/232 https://github.com/hlky/nataili/issues/126",
    ),
    (
        "torch-numpy-readonly-notice",
        "\n".join([
            "analog/storage/log_loader.py:52: UserWarning: The given NumPy array is not writable, and PyTorch does not "
            "support non-writable tensors. This means writing to this tensor will result in undefined behavior. You "
            "may want to copy the array to protect its data or make it writable before converting it to a tensor. "
            "This type of warning will be suppressed for the rest of this program. (Triggered internally at "
            "../torch/csrc/utils/tensor_numpy.cpp:206.)",
            "  tensor = torch.Tensor(array)",
        ]),
        # "this doesn't really have any effects on the downstream computation"
        "https://github.com/logix-project/logix/issues/64 https://github.com/city96/ComfyUI-GGUF/issues/232",
    ),
    (
        "vllm-custom-allreduce-p2p-notice",
        "\n".join([
            "(VllmWorker rank=0 pid=2057) INFO 08-06 03:26:00 [custom_all_reduce_utils.py:246] reading GPU P2P access "
            "cache from /root/.cache/vllm/gpu_p2p_access_cache_for_1,2.json",
            "(VllmWorker rank=0 pid=2057) WARNING 08-06 03:26:00 [custom_all_reduce.py:147] Custom allreduce is "
            "disabled because your platform lacks GPU P2P capability or P2P test failed. To silence this warning, "
            "specify disable_custom_all_reduce=True explicitly.",
        ]),
        # as posted in a start-up log; a vLLM maintainer on the family of these messages: "we shouldn't be warning
        # users about expected behavior"; vLLM's RFC #56128 describes the gate and the NCCL path taken instead
        "https://github.com/vllm-project/vllm/issues/22304 https://github.com/vllm-project/vllm/pull/14125 "
        "https://github.com/vllm-project/vllm/issues/56128",
    ),
    (
        "rccl-iommu-notice",
        "\n".join([
            "g1072:1263985:1263985 [0] NCCL INFO Bootstrap : Using bond0:10.64.4.23<0>",
            "g1072:1263985:1263985 [0] NCCL INFO NET/Plugin : No plugin found (librccl-net.so), using internal "
            "implementation",
            "",
            "g1072:1263985:1263985 [0] /long_pathname_so_that_rpms_can_package_the_debug_info/src/extlibs/rccl/build/"
            "src/init.cpp:122 NCCL WARN Missing \"iommu=pt\" from kernel command line which can lead to system "
            "instablity or hang!",
        ]),
        # ROCm's maintainers: "The warning is a false positive and creates unnecessary support noise; workloads run
        # correctly if the warning is ignored" (kernels with passthrough by default), and false in virtual machines
        "https://github.com/ROCm/rccl/issues/1026 https://github.com/ROCm/rocm-systems/pull/7916 "
        "https://github.com/ROCm/rccl/pull/2112",
    ),
    (
        "rccl-iommu-notice",
        "\n".join([
            "UVOSLinux:2386:2386 [0] NCCL INFO Kernel version: 6.6.64-1",
            "",
            "UVOSLinux:2386:2386 [0] /usr/src/debug/rccl/build/hipify/src/init.cc:163 NCCL WARN Missing \"iommu=pt\" "
            "from kernel command line which can lead to system instablity or hang!",
            "UVOSLinux:2386:2386 [1] NCCL INFO ROCr version 1.1",
        ]),
        "https://github.com/ROCm/rccl/issues/1454 https://github.com/ROCm/rocm-systems/pull/7916",
    ),
    (
        "torch-threadpool-fork-notice",
        "\n".join([
            "[W pthreadpool-cpp.cc:90] Warning: Leaking Caffe2 thread-pool after fork. (function pthreadpool)",
            "[W pthreadpool-cpp.cc:90] Warning: Leaking Caffe2 thread-pool after fork. (function pthreadpool)",
            "Epoch: [6][10/200]      Time 0.399 (0.484)      Data 0.000 (0.075)      Loss 0.296 (0.452)",
            "Epoch: [6][20/200]      Time 0.405 (0.447)      Data 0.000 (0.038)      Loss 0.445 (0.449)",
        ]),
        # the epochs go on between the notices; PyTorch's issue: printed whenever DataLoader workers with pinned
        # memory fork, and a maintainer elsewhere: "might be normal behaviour"
        "https://github.com/alibaba/cluster-contrast-reid/issues/27 https://github.com/pytorch/pytorch/issues/57273 "
        "https://github.com/nianticlabs/monodepth2/issues/371",
    ),
    (
        "torch-threadpool-fork-notice",
        "\n".join([
            "epoch 2:",
            "[W pthreadpool-cpp.cc:88] Warning: Leaking Caffe2 thread-pool after fork. (function pthreadpool)",
            "[W pthreadpool-cpp.cc:88] Warning: Leaking Caffe2 thread-pool after fork. (function pthreadpool)",
            "epoch 3:",
        ]),
        "https://github.com/pytorch/pytorch/issues/57273 https://github.com/lucidrains/lightweight-gan/issues/93",
    ),
    (
        "torch-cuda-ipc-exit-notice",
        "\n".join([
            "********** post-processing 0 steps **********",
            "******* extracting final mesh *******",
            "[W CudaIPCTypes.cpp:15] Producer process has been terminated before all shared CUDA tensors released. See "
            "Note [Sharing CUDA tensors]",
            "********** get color from network **********",
        ]),
        # "it does not affect the normal operation of the program"; the maintainers: "should only appear after the
        # program ends and does not affect the result"
        "https://github.com/zju3dv/Vox-Fusion/issues/6 https://github.com/zju3dv/Vox-Fusion/issues/9",
    ),
    (
        "mesg-ttyname-notice",
        "\n".join([
            "==> opdk: mesg: ttyname failed: Inappropriate ioctl for device",
            "==> opdk: Creating ucddb",
            "==> opdk: Creating blueprintdb",
        ]),
        # "You can safely ignore these errors"; util-linux made mesg silent about it ("Lots of people are confused")
        "https://github.com/stackinabox/stackinabox.io/issues/1 https://github.com/util-linux/util-linux/pull/675",
    ),
    (
        "mesg-ttyname-notice",
        "mesg: ttyname failed: Inappropriate ioctl for device",
        # "This is not causing any issues"; a Docker build whose "result is ok"
        "https://github.com/controlplaneio/simulator/issues/74 https://github.com/phusion/passenger-docker/issues/213",
    ),
    (
        "rocm-amdgpu-ids-notice",
        "\n".join([
            "Collecting environment information...",
            "amdgpu.ids: No such file or directory",
            "amdgpu.ids: No such file or directory",
            "PyTorch version: 2.5.1+rocm6.2",
        ]),
        # PyTorch removed the "benign warning about missing amdgpu.ids"; AMD: "This is not a fatal error, however, it
        # can be annoying"
        "https://github.com/pytorch/pytorch/issues/144203 https://github.com/pytorch/pytorch/pull/147791 "
        "https://github.com/ROCm/pytorch/issues/984",
    ),
    (
        "rocm-amdgpu-ids-notice",
        "\n".join([
            "/opt/amdgpu/share/libdrm/amdgpu.ids: No such file or directory",
            "True",
        ]),
        # torch.cuda.is_available() answers True right after it
        "https://github.com/ROCm/legacy-rocm-build/issues/5943 https://github.com/ROCm/pytorch/issues/984",
    ),
    (
        "rocm-amdgpu-ids-notice",
        "\n".join([
            "/share/libdrm/amdgpu.ids: No such file or directory",
            "/share/libdrm/amdgpu.ids: No such file or directory",
        ]),
        "https://github.com/ROCm/TheRock/issues/147 https://github.com/pytorch/pytorch/pull/147791",
    ),
    (
        "shell-locale-notice",
        "\n".join([
            "bash: warning: setlocale: LC_ALL: cannot change locale (en_US.utf-8)",
            "root@fb26a2c66c74:/galaxy-central# echo $LC_ALL",
            "en_US.utf-8",
        ]),
        # the container's shell works on; images fixed it by generating the locale or dropping the setting
        "https://github.com/bgruening/docker-galaxy/issues/18 https://github.com/serversideup/docker-php/issues/37",
    ),
    (
        "shell-locale-notice",
        "\n".join([
            "Last login: Sun Apr 12 11:05:35 2026 from 10.5.26.1",
            "-bash: warning: setlocale: LC_ALL: cannot change locale (en_US.UTF-8): No such file or directory",
            "-bash: warning: setlocale: LC_ALL: cannot change locale (en_US.UTF-8): No such file or directory",
        ]),
        # an ssh login that goes on; the same from `docker exec` into a running container
        "https://github.com/dyrnq/install-docker/issues/26 https://github.com/jdeathe/centos-ssh/issues/38",
    ),
    (
        "pip-script-path-notice",
        "\n".join([
            "Installing collected packages: commonmark, pygments, typing-extensions, rich, image-go-nord, "
            "gruvbox-factory",
            "  WARNING: The script cmark is installed in '/home/amlan/.local/bin' which is not on PATH.",
            "  Consider adding this directory to PATH or, if you prefer to suppress this warning, use "
            "--no-warn-script-location.",
        ]),
        # the package is installed; a CI's maintainers removed it as a "useless pip warning"
        "https://github.com/paulopacitti/gruvbox-factory/issues/18 https://github.com/odoo/runbot/pull/738",
    ),
    (
        "pip-script-path-notice",
        "\n".join([
            "  WARNING: The scripts fonttools, pyftmerge, pyftsubset and ttx are installed in "
            "'/Users/michiel/Library/Python/3.7/bin' which is not on PATH.",
            "  Consider adding this directory to PATH or, if you prefer to suppress this warning, use "
            "--no-warn-script-location.",
        ]),
        # after a clean install; a maintainer explains pip's default location for user installs
        "https://github.com/PageBot/PageBot/issues/193 https://github.com/foobuzz/todo/issues/18",
    ),
    (
        "pip-cache-dir-notice",
        "WARNING: The directory '/config/.cache/pip' or its parent directory is not owned or is not writable by the "
        "current user. The cache has been disabled. Check the permissions and owner of that directory. If executing "
        "pip with sudo, you should use sudo's -H flag.",
        # printed at a container's start while the packages install; pip's own thread: "the installation is
        # successful"
        "https://github.com/Neurrone/beets-audible/pull/5 https://github.com/pypa/pip/issues/4029 "
        "https://github.com/tensorchord/envd/issues/170",
    ),
    (
        "pip-invalid-distribution-notice",
        "\n".join([
            "WARNING: Ignoring invalid distribution -ywin32 (c:\\users\\goura\\appdata\\local\\programs\\python\\"
            "python39\\lib\\site-packages)",
            "Collecting numpy",
            "  Using cached numpy-1.21.1-cp39-cp39-win_amd64.whl (14.0 MB)",
            "Installing collected packages: numpy",
            "Successfully installed numpy-1.21.1",
        ]),
        # the install succeeds; "it appears to be running through the program without any issues"
        "https://github.com/pypa/pip/issues/10289 https://github.com/Djdefrag/QualityScaler/issues/103 "
        "https://github.com/jgonggrijp/pip-review/issues/89",
    ),
]


def _case_ids() -> list[str]:
    return [f"{n[0]}-{i}" for i, n in enumerate(NOTICES)]


@pytest.mark.parametrize(("rule", "text", "urls"), NOTICES, ids=_case_ids())
def test_a_gpu_host_tool_notice_is_benign(tmp_path: Path, rule: str, text: str, urls: str) -> None:
    assert len(urls.split()) >= 2 and all(u.startswith("https://github.com/") for u in urls.split())
    top, rules = log_verdict(tmp_path, text)
    assert (top, rule in rules) == ("benign", True), (top, rules)


def test_the_server_notices_are_benign_in_a_service_too(tmp_path: Path) -> None:
    # SGLang, vLLM and Ray's workers run as services; the stage kind must not change their notices.
    for rule, text, _ in NOTICES:
        if rule in ("triton-operand-order-notice", "vllm-spawn-notice", "ray-metrics-exporter-notice"):
            top, rules = log_verdict(tmp_path, text, kind="service")
            assert (top, rule in rules) == ("benign", True), (text, top, rules)


def test_the_fork_failure_the_spawn_notice_avoids_is_fatal(tmp_path: Path) -> None:
    # Where vLLM did not override the start method, the forked worker cannot use CUDA:
    # https://github.com/vllm-project/vllm/issues/12189 (and #7151)
    top, rules = log_verdict(tmp_path, "\n".join([
        "ERROR 01-19 03:55:24 multiproc_worker_utils.py:233] Exception in worker VllmWorkerProcess while processing "
        "method init_device: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you "
        "must use the 'spawn' start method, Traceback (most recent call last):",
        "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use "
        "the 'spawn' start method",
    ]), kind="service")
    assert top == "fatal" and "vllm-spawn-notice" not in rules, (top, rules)


def test_a_broken_flash_attn_build_is_not_the_qwen_notice(tmp_path: Path) -> None:
    # A flash-attn binary that does not match torch fails the model's import:
    # https://github.com/Dao-AILab/flash-attention/issues/867
    top, rules = log_verdict(tmp_path, "\n".join([
        "Warning: import flash_attn rotary fail, please install FlashAttention rotary to get higher efficiency "
        "https://github.com/Dao-AILab/flash-attention/tree/main/csrc/rotary",
        "RuntimeError: Failed to import transformers.models.qwen2.modeling_qwen2 because of the following error "
        "(look up to see its traceback):",
        "/mnt/pfs/zhangfan/system/anaconda/envs/swift/lib/python3.10/site-packages/flash_attn-2.5.5-py3.10-linux-"
        "x86_64.egg/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN2at4_ops15sum_IntList_"
        "out4callERKNS_6TensorEN3c1016OptionalArrayRefIlEEbSt8optionalINS5_10ScalarTypeEERS2_",
    ]))
    assert top == "fatal" and "qwen-flash-attn-import-notice" not in rules, (top, rules)


def test_a_program_failing_after_the_requests_notice_is_not_benign(tmp_path: Path) -> None:
    # The notice, then the program's own failure: https://github.com/cquest/tootbot/issues/15
    top, rules = log_verdict(tmp_path, "\n".join([
        "/usr/lib/python3/dist-packages/requests/__init__.py:89: RequestsDependencyWarning: urllib3 (1.26.12) or "
        "chardet (3.0.4) doesn't match a supported version!",
        '  warnings.warn("urllib3 ({}) or chardet ({}) doesn\'t match a supported "',
        "ERROR: First Login Failed!",
    ]))
    assert top == "fatal", (top, rules)


def test_a_failed_pip_install_after_the_invalid_distribution_notice_is_fatal(tmp_path: Path) -> None:
    # pip's notice (https://github.com/pypa/pip/issues/9906), then pip's real failure as posted in
    # https://github.com/pytorch/pytorch/issues/20631: the notice must not hide it.
    top, rules = log_verdict(tmp_path, "\n".join([
        "WARNING: Ignoring invalid distribution -ip (d:\\python 3.8\\lib\\site-packages)",
        "Collecting torch==0.3.1",
        "  ERROR: Could not find a version that satisfies the requirement torch==0.3.1 (from versions: 0.1.2, "
        "0.1.2.post1)",
        "ERROR: No matching distribution found for torch==0.3.1",
    ]))
    assert top == "fatal" and "pip-invalid-distribution-notice" not in rules, (top, rules)


def test_the_lightning_tensor_core_advice_is_left_as_it_was(tmp_path: Path) -> None:
    # Lightning's wording of the TF32 advice already reads as information; the rule takes only torch.compile's:
    # https://github.com/mittagessen/kraken/issues/596 ("You can ignore this warning")
    top, rules = log_verdict(
        tmp_path,
        "You are using a CUDA device ('NVIDIA GeForce RTX 4070') that has Tensor Cores. To properly utilize them, "
        "you should set `torch.set_float32_matmul_precision('medium' | 'high')` which will trade-off precision for "
        "performance. For more details, read https://pytorch.org/docs/stable/generated/"
        "torch.set_float32_matmul_precision.html#torch.set_float32_matmul_precision",
    )
    assert top == "info" and "torch-tf32-notice" not in rules, (top, rules)


def test_a_driver_too_old_for_the_container_is_not_the_compat_notice(tmp_path: Path) -> None:
    # The banner of a driver the container cannot use at all, then CUDA fails to initialise:
    # https://github.com/triton-inference-server/server/issues/2245 (and #1838). It reads as a warning today,
    # not as harmless; the rule must not take it.
    top, rules = log_verdict(tmp_path, "\n".join([
        "ERROR: This container was built for NVIDIA Driver Release 455.23 or later, but",
        "       version 440.44 was detected and compatibility mode is UNAVAILABLE.",
        "",
        "       [[CUDA Driver UNAVAILABLE (cuInit(0) returned 804)]]",
        "",
        "I1111 10:19:13.972355 1 metrics.cc:184] found 2 GPUs supporting NVML metrics",
        "E1111 10:19:14.014987 1 pinned_memory_manager.cc:192] failed to allocate pinned system memory: "
        "initialization error",
    ]))
    assert top in ("fatal", "warning") and "ngc-minor-version-compat-notice" not in rules, (top, rules)


def test_a_real_forward_compatibility_failure_is_still_fatal(tmp_path: Path) -> None:
    # The same CUDA error raised by a program, not printed by the banner, ends it:
    # https://github.com/SYSTRAN/faster-whisper/issues/653
    top, rules = log_verdict(
        tmp_path, "RuntimeError: CUDA failed with error forward compatibility was attempted on non supported HW"
    )
    assert top == "fatal" and "ngc-minor-version-compat-notice" not in rules, (top, rules)


def test_a_sparse_attn_build_that_fails_is_not_the_op_report_notice(tmp_path: Path) -> None:
    # The same notes, then the install's own failure to build the op:
    # https://github.com/P2Enjoy/kohya_ss-docker/issues/6. That ERROR reads as a warning today (the install
    # may go on without the op); the rule must not make it harmless.
    top, rules = log_verdict(tmp_path, "\n".join([
        "[WARNING]  using untested triton version (2.0.0), only 1.0.0 is known to be compatible",
        "[WARNING]  One can disable sparse_attn with DS_BUILD_SPARSE_ATTN=0",
        "[ERROR]  Unable to pre-compile sparse_attn",
    ]))
    assert top != "benign" and "deepspeed-sparse-attn-notice" not in rules, (top, rules)


def test_custom_allreduce_without_peer_access_is_still_fatal(tmp_path: Path) -> None:
    # Where custom all-reduce is not disabled on GPUs without P2P, the server dies:
    # https://github.com/sgl-project/sglang/issues/4814
    top, rules = log_verdict(
        tmp_path, "RuntimeError: CUDART error: peer access is not supported between these two devices", kind="service"
    )
    assert top == "fatal" and "vllm-custom-allreduce-p2p-notice" not in rules, (top, rules)


def test_a_real_nccl_failure_next_to_the_iommu_notice_is_fatal(tmp_path: Path) -> None:
    # The notice, then an IB completion error and NCCL's error trace as posted in
    # https://github.com/NVIDIA/nccl/issues/1710 (markdown links around the file names removed).
    top, rules = log_verdict(tmp_path, "\n".join([
        "UVOSLinux:2386:2386 [0] /usr/src/debug/rccl/build/hipify/src/init.cc:163 NCCL WARN Missing \"iommu=pt\" from "
        "kernel command line which can lead to system instablity or hang!",
        "node023:10214:10303 [0] transport/net_ib.cc:1909 NCCL WARN NET/IB : Got completion from peer "
        "10.1.3.201<33057> with status=9 opcode=0 len=0 vendor err 138 (Send) localGid ::ffff:10.206.1.23 "
        "remoteGids::ffff:10.206.1.11",
        "node023:10214:10303 [0] NCCL INFO transport/net.cc:1137 -> 6",
    ]))
    assert top == "fatal" and "rccl-iommu-notice" not in rules, (top, rules)


def test_a_dataloader_worker_that_dies_next_to_the_fork_notices_is_fatal(tmp_path: Path) -> None:
    # The fork and IPC notices come from DataLoader workers; a worker that really dies is reported by the loader
    # itself (https://github.com/facebookresearch/detectron2/issues/384, the notices from
    # https://github.com/pytorch/pytorch/issues/57273 and https://github.com/zju3dv/Vox-Fusion/issues/6).
    top, rules = log_verdict(tmp_path, "\n".join([
        "[W pthreadpool-cpp.cc:88] Warning: Leaking Caffe2 thread-pool after fork. (function pthreadpool)",
        "[W CudaIPCTypes.cpp:15] Producer process has been terminated before all shared CUDA tensors released. See "
        "Note [Sharing CUDA tensors]",
        "RuntimeError: DataLoader worker (pid(s) 25) exited unexpectedly",
    ]))
    assert top == "fatal" and not rules & {"torch-threadpool-fork-notice", "torch-cuda-ipc-exit-notice"}, (top, rules)


def test_a_script_that_is_then_not_found_is_fatal(tmp_path: Path) -> None:
    # The PATH notice, then the stage runs the script by name: https://github.com/AdaptiveScale/lxdui/issues/324
    top, rules = log_verdict(tmp_path, "\n".join([
        "  WARNING: The script lxdui is installed in '/home/azureuser/.local/bin' which is not on PATH.",
        "  Consider adding this directory to PATH or, if you prefer to suppress this warning, use "
        "--no-warn-script-location.",
        "/lxdui$ lxdui start",
        "lxdui: command not found",
    ]))
    assert top == "fatal" and "pip-script-path-notice" not in rules, (top, rules)


def test_an_install_that_fails_on_the_unwritable_cache_is_fatal(tmp_path: Path) -> None:
    # pip says the cache is disabled, then fails on it anyway: https://github.com/pypa/pip/issues/7488
    top, rules = log_verdict(tmp_path, "\n".join([
        "WARNING: The directory '/tmp/brol/cache/http' or its parent directory is not owned by the current user and "
        "the cache has been disabled. Please check the permissions and owner of that directory. If executing pip with "
        "sudo, you may want sudo's -H flag.",
        "WARNING: The directory 'cache' or its parent directory is not owned by the current user and caching wheels "
        "has been disabled. check the permissions and owner of that directory. If executing pip with sudo, you may "
        "want sudo's -H flag.",
        "ERROR: Could not install packages due to an EnvironmentError: [Errno 13] Permission denied: "
        "'cache/wheels/d7/de/2e/efa132238792efb6459a96e85916ef8597fcb3d2ae51590dfd'",
        "Consider using the `--user` option or check the permissions.",
    ]))
    assert top == "fatal" and "pip-cache-dir-notice" not in rules, (top, rules)


def test_every_gpu_host_tool_notice_is_a_shipped_benign_rule() -> None:
    # Each case names a benign rule of the shipped pack, read by the loader (wherever in the file the rule sits,
    # whatever comment heads it), and the case test above holds its two threads: no rule here ships without
    # the evidence it was written from.
    kinds = {rule.id: rule.kind for rule in load_builtin_rules()}
    ids = {rule for rule, _text, _urls in NOTICES}
    assert len(ids) >= 20 and not ids - kinds.keys(), ids - kinds.keys()
    assert all(kinds[rule] == "benign" for rule in ids), {rule: kinds[rule] for rule in ids}
