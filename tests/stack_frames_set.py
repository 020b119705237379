"""The fresh set of session eight's round ``frames``: stack traces in any framing.

Real excerpts from public GitHub threads (each with its URL), collected and labelled
from what the thread says BEFORE the classifier was changed for them (see
tests/test_logs_stack_frames.py for the before/after scores). ``label`` is what a
person reading the thread concludes: ``fatal`` when the trace was the process's
end, otherwise what the trace was (a request's failure in a server that kept
serving is a ``warning``; Python's ``Exception ignored in`` report is ``benign``;
a profiler's dump of a live process is ``info``).

Text is as posted, whole lines only: where the search excerpt cut a line, that
line was left out; a block's markdown indentation or quote marker was removed
where ``note`` says so.
"""

from __future__ import annotations

STACK_FRAMES_SET: list[dict[str, str]] = [
    # --- Python faulthandler dumps ------------------------------------------------------------
    {
        "id": "genesis-backflip-2",
        "url": "https://github.com/ziyanx02/Genesis-backflip/issues/2",
        "kind": "task",
        "label": "fatal",
        "text": (
            "Fatal Python error: Segmentation fault\n"
            "\n"
            "Thread 0x00007f9fb1cff700 (most recent call first):\n"
            "  <no Python frame>\n"
            "\n"
            "Thread 0x00007fa040e2b700 (most recent call first):\n"
            '  File "/home/ubuntu/anaconda3/envs/genesis/lib/python3.10/threading.py", line 324 in wait\n'
            '  File "/home/ubuntu/anaconda3/envs/genesis/lib/python3.10/queue.py", line 180 in get\n'
            '  File "/home/ubuntu/anaconda3/envs/genesis/lib/python3.10/site-packages/tensorboard/summary/writer/event_file_writer.py", line 269 in _run\n'
            '  File "/home/ubuntu/anaconda3/envs/genesis/lib/python3.10/site-packages/tensorboard/summary/writer/event_file_writer.py", line 244 in run\n'
            '  File "/home/ubuntu/anaconda3/envs/genesis/lib/python3.10/threading.py", line 1016 in _bootstrap_inner\n'
            '  File "/home/ubuntu/anaconda3/envs/genesis/lib/python3.10/threading.py", line 973 in _bootstrap\n'
            "\n"
            "Current thread 0x00007fa2972464c0 (most recent call first):\n"
            '  File "/home/ubuntu/Genesis/examples/locomotion/Genesis-backflip/reward_wrapper.py", line 88 in _reward_feet_air_time\n'
            '  File "/home/ubuntu/Genesis/examples/locomotion/Genesis-backflip/env.py", line 498 in compute_reward\n'
            '  File "/home/ubuntu/Genesis/examples/locomotion/Genesis-backflip/env.py", line 546 in post_physics_step\n'
            '  File "/home/ubuntu/Genesis/examples/locomotion/Genesis-backflip/env.py", line 754 in step'
        ),
    },
    {
        "id": "genesis-world-492",
        "url": "https://github.com/Genesis-Embodied-AI/genesis-world/issues/492",
        "kind": "task",
        "label": "fatal",
        "note": "the frames of the thread that crashed, as posted there (without indentation); the dump's head is further up",
        "text": (
            "Current thread 0x00007fa2972464c0 (most recent call first):\n"
            'File "/home/ubuntu/Genesis/examples/locomotion/Genesis-backflip/reward_wrapper.py", line 88 in _reward_feet_air_time\n'
            'File "/home/ubuntu/Genesis/examples/locomotion/Genesis-backflip/env.py", line 498 in compute_reward\n'
            'File "/home/ubuntu/Genesis/examples/locomotion/Genesis-backflip/env.py", line 546 in post_physics_step\n'
            'File "/home/ubuntu/Genesis/examples/locomotion/Genesis-backflip/env.py", line 754 in step'
        ),
    },
    {
        "id": "yolov5-12655",
        "url": "https://github.com/ultralytics/yolov5/issues/12655",
        "kind": "task",
        "label": "fatal",
        "note": "the thread's title is the dump's head (Fatal Python error: Aborted); the post starts at the threads",
        "text": (
            "Thread 0x000047b8 (most recent call first):\n"
            r'  File "D:\web_ruanjian\py_ruanjian\Anaconda\Lib\threading.py", line 320 in wait' "\n"
            r'  File "D:\web_ruanjian\py_ruanjian\Anaconda\Lib\multiprocessing\queues.py", line 231 in _feed' "\n"
            r'  File "D:\web_ruanjian\py_ruanjian\Anaconda\Lib\threading.py", line 975 in run' "\n"
            r'  File "D:\web_ruanjian\py_ruanjian\Anaconda\Lib\threading.py", line 1038 in _bootstrap_inner' "\n"
            r'  File "D:\web_ruanjian\py_ruanjian\Anaconda\Lib\threading.py", line 995 in _bootstrap' "\n"
            "\n"
            "Thread 0x000005e8 (most recent call first):\n"
            r'  File "D:\web_ruanjian\py_ruanjian\Anaconda\Lib\threading.py", line 320 in wait' "\n"
            r'  File "D:\web_ruanjian\py_ruanjian\Anaconda\Lib\multiprocessing\queues.py", line 231 in _feed' "\n"
            r'  File "D:\web_ruanjian\py_ruanjian\Anaconda\Lib\threading.py", line 975 in run' "\n"
            r'  File "D:\web_ruanjian\py_ruanjian\Anaconda\Lib\threading.py", line 1038 in _bootstrap_inner' "\n"
            r'  File "D:\web_ruanjian\py_ruanjian\Anaconda\Lib\threading.py", line 995 in _bootstrap'
        ),
    },
    {
        "id": "squidpy-1123",
        "url": "https://github.com/scverse/squidpy/issues/1123",
        "kind": "task",
        "label": "fatal",
        "text": (
            "8 workers [12 items]\n"
            "..Fatal Python error: Aborted\n"
            "\n"
            "Thread 0x0000000172237000 (most recent call first):\n"
            '  File "/Users/selman/miniforge3/lib/python3.12/multiprocessing/pool.py", line 579 in _handle_results\n'
            '  File "/Users/selman/miniforge3/lib/python3.12/threading.py", line 1012 in run\n'
            '  File "/Users/selman/miniforge3/lib/python3.12/threading.py", line 1075 in _bootstrap_inner\n'
            '  File "/Users/selman/miniforge3/lib/python3.12/threading.py", line 1032 in _bootstrap\n'
            "\n"
            "Thread 0x000000017122b000 (most recent call first):\n"
            '  File "/Users/selman/miniforge3/lib/python3.12/multiprocessing/pool.py", line 531 in _handle_tasks\n'
            '  File "/Users/selman/miniforge3/lib/python3.12/threading.py", line 1012 in run\n'
            '  File "/Users/selman/miniforge3/lib/python3.12/threading.py", line 1075 in _bootstrap_inner\n'
            '  File "/Users/selman/miniforge3/lib/python3.12/threading.py", line 1032 in _bootstrap'
        ),
    },
    {
        "id": "pytorch-182279",
        "url": "https://github.com/pytorch/pytorch/issues/182279",
        "kind": "task",
        "label": "fatal",
        "text": (
            "epoch : 4, avg train loss : 6.4021\n"
            "epoch : 4, avg val loss : 6.3988\n"
            "epoch : 5, avg train loss : 6.3944\n"
            "epoch : 5, avg val loss : 6.3922\n"
            "Fatal Python error: Segmentation fault\n"
            "\n"
            "Thread 0x00007ff64c9ff6c0 (most recent call first):\n"
            "  <no Python frame>\n"
            "\n"
            "Thread 0x00007ff86962a6c0 (most recent call first):\n"
            '  File "/usr/lib/python3.12/threading.py", line 359 in wait\n'
            '  File "/usr/lib/python3.12/queue.py", line 180 in get\n'
            '  File "/usr/local/lib/python3.12/dist-packages/tensorboard/summary/writer/event_file_writer.py", line 269 in _run\n'
            '  File "/usr/local/lib/python3.12/dist-packages/tensorboard/summary/writer/event_file_writer.py", line 244 in run\n'
            '  File "/usr/lib/python3.12/threading.py", line 1073 in _bootstrap_inner\n'
            '  File "/usr/lib/python3.12/threading.py", line 1030 in _bootstrap'
        ),
    },
    {
        "id": "threestudio-369",
        "url": "https://github.com/threestudio-project/threestudio/issues/369",
        "kind": "task",
        "label": "fatal",
        "text": (
            "Epoch 0: |                                     | 4540/? [07:57<00:00,  9.51it/s]Fatal Python error: Segmentation fault\n"
            "\n"
            "Thread 0x00007f57168aa700 (most recent call first):\n"
            "  <no Python frame>\n"
            "\n"
            "Thread 0x00007f5741fff700 (most recent call first):\n"
            '  File "/home/jane/anaconda3/envs/3s/lib/python3.10/threading.py", line 324 in wait\n'
            '  File "/home/jane/anaconda3/envs/3s/lib/python3.10/threading.py", line 607 in wait\n'
            '  File "/home/jane/anaconda3/envs/3s/lib/python3.10/site-packages/tqdm/_monitor.py", line 60 in run\n'
            '  File "/home/jane/anaconda3/envs/3s/lib/python3.10/threading.py", line 1016 in _bootstrap_inner\n'
            '  File "/home/jane/anaconda3/envs/3s/lib/python3.10/threading.py", line 973 in _bootstrap'
        ),
    },
    {
        "id": "libterm-38",
        "url": "https://github.com/ColdGrub1384/LibTerm/issues/38",
        "kind": "task",
        "label": "fatal",
        "text": (
            "Fatal Python error: _Py_InitializeCore_impl: no thread state found\n"
            "\n"
            "Thread 0x000000016b39b000 (most recent call first):\n"
            '  File "file.py", line 24 in <module>'
        ),
    },
    # --- Python frames behind a logger header or a process tag, no header in view ------------
    {
        "id": "vllm-18577-a",
        "url": "https://github.com/vllm-project/vllm/issues/18577",
        "kind": "service",
        "label": "fatal",
        "text": (
            "(VllmWorker rank=0 pid=220) ERROR 05-22 21:17:38 [multiproc_executor.py:435] WorkerProc failed to start.\n"
            "(VllmWorker rank=0 pid=220) ERROR 05-22 21:17:38 [multiproc_executor.py:435] Traceback (most recent call last):\n"
            '(VllmWorker rank=0 pid=220) ERROR 05-22 21:17:38 [multiproc_executor.py:435]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py", line 409, in worker_main\n'
            "(VllmWorker rank=0 pid=220) ERROR 05-22 21:17:38 [multiproc_executor.py:435]     worker = WorkerProc(*args, **kwargs)\n"
            "(VllmWorker rank=0 pid=220) ERROR 05-22 21:17:38 [multiproc_executor.py:435]              ^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
            '(VllmWorker rank=0 pid=220) ERROR 05-22 21:17:38 [multiproc_executor.py:435]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py", line 306, in __init__\n'
            "(VllmWorker rank=0 pid=220) ERROR 05-22 21:17:38 [multiproc_executor.py:435]     self.worker.load_model()\n"
            '(VllmWorker rank=0 pid=220) ERROR 05-22 21:17:38 [multiproc_executor.py:435]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_worker.py", line 162, in load_model\n'
            "(VllmWorker rank=0 pid=220) ERROR 05-22 21:17:38 [multiproc_executor.py:435]     self.model_runner.load_model()"
        ),
    },
    {
        "id": "vllm-28910",
        "url": "https://github.com/vllm-project/vllm/issues/28910",
        "kind": "service",
        "label": "fatal",
        "text": (
            "(EngineCore_DP0 pid=33630) ERROR 11-18 14:16:34 [core.py:708]     self.workers = WorkerProc.wait_for_ready(unready_workers)\n"
            "(EngineCore_DP0 pid=33630) ERROR 11-18 14:16:34 [core.py:708]                    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
            '(EngineCore_DP0 pid=33630) ERROR 11-18 14:16:34 [core.py:708]   File "/home/cheng/anaconda3/envs/vllm/lib/python3.12/site-packages/vllm/v1/executor/multiproc_executor.py", line 509, in wait_for_ready\n'
            "(EngineCore_DP0 pid=33630) ERROR 11-18 14:16:34 [core.py:708]     raise e from None\n"
            "(EngineCore_DP0 pid=33630) ERROR 11-18 14:16:34 [core.py:708] Exception: WorkerProc initialization failed due to an exception in a background process. See stack trace for root cause.\n"
            "(EngineCore_DP0 pid=33630) Process EngineCore_DP0:\n"
            "(EngineCore_DP0 pid=33630) Traceback (most recent call last):\n"
            '(EngineCore_DP0 pid=33630)   File "/home/cheng/anaconda3/envs/vllm/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap\n'
            "(EngineCore_DP0 pid=33630)     self.run()\n"
            '(EngineCore_DP0 pid=33630)   File "/home/cheng/anaconda3/envs/vllm/lib/python3.12/multiprocessing/process.py", line 108, in run\n'
            "(EngineCore_DP0 pid=33630)     self._target(*self._args, **self._kwargs)\n"
            '(EngineCore_DP0 pid=33630)   File "/home/cheng/anaconda3/envs/vllm/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 712, in run_engine_core\n'
            "(EngineCore_DP0 pid=33630)     raise e"
        ),
    },
    {
        "id": "lmcache-1998",
        "url": "https://github.com/LMCache/LMCache/issues/1998",
        "kind": "service",
        "label": "fatal",
        "text": (
            "(EngineCore_DP0 pid=975) ERROR 11-14 08:06:26 [core.py:708]     self.workers = WorkerProc.wait_for_ready(unready_workers)\n"
            "(EngineCore_DP0 pid=975) ERROR 11-14 08:06:26 [core.py:708]                    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
            '(EngineCore_DP0 pid=975) ERROR 11-14 08:06:26 [core.py:708]   File "/opt/venv/lib/python3.12/site-packages/vllm/v1/executor/multiproc_executor.py", line 509, in wait_for_ready\n'
            "(EngineCore_DP0 pid=975) ERROR 11-14 08:06:26 [core.py:708]     raise e from None\n"
            "(EngineCore_DP0 pid=975) ERROR 11-14 08:06:26 [core.py:708] Exception: WorkerProc initialization failed due to an exception in a background process. See stack trace for root cause.\n"
            "(EngineCore_DP0 pid=975) Process EngineCore_DP0:\n"
            "(EngineCore_DP0 pid=975) Traceback (most recent call last):\n"
            '(EngineCore_DP0 pid=975)   File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap\n'
            "(EngineCore_DP0 pid=975)     self.run()\n"
            '(EngineCore_DP0 pid=975)   File "/usr/lib/python3.12/multiprocessing/process.py", line 108, in run\n'
            "(EngineCore_DP0 pid=975)     self._target(*self._args, **self._kwargs)\n"
            '(EngineCore_DP0 pid=975)   File "/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 712, in run_engine_core\n'
            "(EngineCore_DP0 pid=975)     raise e"
        ),
    },
    {
        "id": "vllm-27321",
        "url": "https://github.com/vllm-project/vllm/issues/27321",
        "kind": "service",
        "label": "fatal",
        "note": "a post starting in the middle of the engine core's traceback (its header is above the excerpt)",
        "text": (
            '(EngineCore_DP0 pid=2003562)   File "/home/mosh/.local/share/uv/python/cpython-3.13.6-linux-x86_64-gnu/lib/python3.13/multiprocessing/process.py", line 313, in _bootstrap\n'
            "(EngineCore_DP0 pid=2003562)     self.run()\n"
            "(EngineCore_DP0 pid=2003562)     ~~~~~~~~^^\n"
            '(EngineCore_DP0 pid=2003562)   File "/home/mosh/.local/share/uv/python/cpython-3.13.6-linux-x86_64-gnu/lib/python3.13/multiprocessing/process.py", line 108, in run\n'
            "(EngineCore_DP0 pid=2003562)     self._target(*self._args, **self._kwargs)\n"
            "(EngineCore_DP0 pid=2003562)     ~~~~~~~~~~~~^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
            '(EngineCore_DP0 pid=2003562)   File "/data/lijinghui/uv_projects/.venv/lib/python3.13/site-packages/vllm/v1/engine/core.py", line 788, in run_engine_core\n'
            "(EngineCore_DP0 pid=2003562)     raise e\n"
            '(EngineCore_DP0 pid=2003562)   File "/data/lijinghui/uv_projects/.venv/lib/python3.13/site-packages/vllm/v1/engine/core.py", line 775, in run_engine_core\n'
            "(EngineCore_DP0 pid=2003562)     engine_core = EngineCoreProc(*args, **kwargs)\n"
            '(EngineCore_DP0 pid=2003562)   File "/data/lijinghui/uv_projects/.venv/lib/python3.13/site-packages/vllm/v1/engine/core.py", line 543, in __init__\n'
            "(EngineCore_DP0 pid=2003562)     super().__init__(\n"
            "(EngineCore_DP0 pid=2003562)     ~~~~~~~~~~~~~~~~^"
        ),
    },
    {
        "id": "sglang-3882",
        "url": "https://github.com/sgl-project/sglang/issues/3882",
        "kind": "service",
        "label": "fatal",
        "note": "a post starting in the middle of the traceback of the server's SIGQUIT handler killing its process tree",
        "text": (
            '  File "/sgl-workspace/sglang/python/sglang/srt/utils.py", line 507, in kill_process_tree\n'
            "    itself.send_signal(signal.SIGQUIT)\n"
            '  File "/usr/local/lib/python3.10/dist-packages/psutil/__init__.py", line 1277, in send_signal\n'
            "    self._send_signal(sig)\n"
            '  File "/usr/local/lib/python3.10/dist-packages/psutil/__init__.py", line 1259, in _send_signal\n'
            "    os.kill(pid, sig)\n"
            '  File "/sgl-workspace/sglang/python/sglang/srt/entrypoints/engine.py", line 346, in sigquit_handler\n'
            "    kill_process_tree(os.getpid())\n"
            '  File "/sgl-workspace/sglang/python/sglang/srt/utils.py", line 507, in kill_process_tree\n'
            "    itself.send_signal(signal.SIGQUIT)"
        ),
    },
    {
        "id": "translate-287",
        "url": "https://github.com/pytorch/translate/pull/287",
        "kind": "task",
        "label": "fatal",
        "text": (
            "Traceback (most recent call last):\n"
            '  File "/mnt/xarfuse/uid-144043/1b9e2d40-ns-4026531840/__run_xar_main__.py", line 151, in <module>\n'
            "    __invoke_main()\n"
            '  File "/mnt/xarfuse/uid-144043/1b9e2d40-ns-4026531840/language_technology/neural_mt/os/pytorch_translate/train.py", line 724, in main\n'
            "    while not spawn_context.join(timeout=30):\n"
            '  File "/mnt/xarfuse/uid-144043/1b9e2d40-ns-4026531840/torch/multiprocessing/spawn.py", line 103, in join\n'
            "    (error_index, name)\n"
            "Exception: process 1 terminated with signal SIGSEGV"
        ),
    },
    # --- C++ / c10 backtraces ----------------------------------------------------------------
    {
        "id": "fairseq-3674",
        "url": "https://github.com/facebookresearch/fairseq/issues/3674",
        "kind": "task",
        "label": "fatal",
        "text": (
            "terminate called after throwing an instance of 'c10::Error'\n"
            "  what():  CUDA error: initialization error\n"
            "Exception raised from insert_events at /pytorch/c10/cuda/CUDACachingAllocator.cpp:717 (most recent call first):\n"
            "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x42 (0x7f14d243c8b2 in /home/xuta/.local/lib/python3.8/site-packages/torch/lib/libc10.so)\n"
            "frame #1: c10::cuda::CUDACachingAllocator::raw_delete(void*) + 0x1070 (0x7f14d268eef0 in /home/xuta/.local/lib/python3.8/site-packages/torch/lib/libc10_cuda.so)\n"
            "frame #2: c10::TensorImpl::release_resources() + 0x4d (0x7f14d2427b7d in /home/xuta/.local/lib/python3.8/site-packages/torch/lib/libc10.so)\n"
            "frame #3: <unknown function> + 0x5fd902 (0x7f1520e1f902 in /home/xuta/.local/lib/python3.8/site-packages/torch/lib/libtorch_python.so)\n"
            "frame #4: /usr/bin/python() [0x5b43fa]\n"
            "frame #5: /usr/bin/python() [0x4d7cc6]\n"
            "frame #6: /usr/bin/python() [0x55331c]\n"
            "frame #7: _PyObject_MakeTpCall + 0x411 (0x6000f1 in /usr/bin/python)\n"
            "frame #8: _PyEval_EvalFrameDefault + 0x5553 (0x57dd13 in /usr/bin/python)\n"
            "frame #9: _PyFunction_Vectorcall + 0x19c (0x602b2c in /usr/bin/python)\n"
            "frame #10: /usr/bin/python() [0x600500]\n"
            "frame #11: PyObject_CallFunctionObjArgs + 0x8e (0x6007ee in /usr/bin/python)"
        ),
    },
    {
        "id": "pytorch-149762",
        "url": "https://github.com/pytorch/pytorch/issues/149762",
        "kind": "task",
        "label": "fatal",
        "note": "the thread's title is the head (terminate called after throwing an instance of 'c10::Error'); the excerpt starts at frame #3",
        "text": (
            "frame #3: <unknown function> + 0x20ba6 (0x7e3b07e98ba6 in /home/user/.venv/lib/python3.10/site-packages/torch/lib/libc10_cuda.so)\n"
            "frame #4: <unknown function> + 0x22507 (0x7e3b07e9a507 in /home/user/.venv/lib/python3.10/site-packages/torch/lib/libc10_cuda.so)\n"
            "frame #5: <unknown function> + 0x2270f (0x7e3b07e9a70f in /home/user/.venv/lib/python3.10/site-packages/torch/lib/libc10_cuda.so)\n"
            "frame #6: <unknown function> + 0x644a90 (0x7e3ad6444a90 in /home/user/.venv/lib/python3.10/site-packages/torch/lib/libtorch_python.so)\n"
            "frame #7: <unknown function> + 0x85082f (0x7e3ad665082f in /home/user/.venv/lib/python3.10/site-packages/torch/lib/libtorch_python.so)\n"
            "frame #8: /home/user/.venv/bin/python() [0x510ceb]\n"
            "frame #9: /home/user/.venv/bin/python() [0x53af4f]\n"
            "frame #10: /home/user/.venv/bin/python() [0x5102aa]\n"
            "frame #11: /home/user/.venv/bin/python() [0x5232c1]\n"
            "frame #12: /home/user/.venv/bin/python() [0x572da5]\n"
            "frame #13: /home/user/.venv/bin/python() [0x5075cb]\n"
            "frame #14: /home/user/.venv/bin/python() [0x5c60d0]\n"
            "frame #15: /home/user/.venv/bin/python() [0x5348de]\n"
            "frame #16: PyObject_GetIter + 0x1f (0x50f36f in /home/user/.venv/bin/python)\n"
            "frame #17: /home/user/.venv/bin/python() [0x66bda4]\n"
            "frame #18: _PyObject_MakeTpCall + 0x1da (0x51e06a in /home/user/.venv/bin/python)"
        ),
    },
    {
        "id": "latent-diffusion-17",
        "url": "https://github.com/CompVis/latent-diffusion/issues/17",
        "kind": "task",
        "label": "fatal",
        "note": "c10's frames as the thread shows them (frame_#_N); the head is the title",
        "text": (
            "frame_#_49: _PyEval_EvalFrameDefault + 0xbdd (0x55b1c22a859d in /root/miniconda3/envs/ldm/bin/python)\n"
            "frame_#_50: _PyEval_EvalCodeWithName + 0x659 (0x55b1c2271e19 in /root/miniconda3/envs/ldm/bin/python)\n"
            "frame_#_51: _PyFunction_Vectorcall + 0x1e3 (0x55b1c2272943 in /root/miniconda3/envs/ldm/bin/python)\n"
            "frame_#_52: <unknown function> + 0xfeb84 (0x55b1c21e5b84 in /root/miniconda3/envs/ldm/bin/python)\n"
            "frame_#_53: _PyEval_EvalCodeWithName + 0x7df (0x55b1c2271f9f in /root/miniconda3/envs/ldm/bin/python)\n"
            "frame_#_54: _PyFunction_Vectorcall + 0x1e3 (0x55b1c2272943 in /root/miniconda3/envs/ldm/bin/python)\n"
            "frame_#_55: <unknown function> + 0x10075e (0x55b1c21e775e in /root/miniconda3/envs/ldm/bin/python)\n"
            "frame_#_56: _PyFunction_Vectorcall + 0x10b (0x55b1c227286b in /root/miniconda3/envs/ldm/bin/python)\n"
            "frame_#_57: PyVectorcall_Call + 0x71 (0x55b1c2224041 in /root/miniconda3/envs/ldm/bin/python)\n"
            "frame_#_58: _PyEval_EvalFrameDefault + 0x1fdb (0x55b1c22a999b in /root/miniconda3/envs/ldm/bin/python)\n"
            "frame_#_59: _PyFunction_Vectorcall + 0x10b (0x55b1c227286b in /root/miniconda3/envs/ldm/bin/python)\n"
            "frame_#_60: <unknown function> + 0x10075e (0x55b1c21e775e in /root/miniconda3/envs/ldm/bin/python)\n"
            "frame_#_61: _PyEval_EvalCodeWithName + 0x2d2 (0x55b1c2271a92 in /root/miniconda3/envs/ldm/bin/python)"
        ),
    },
    {
        "id": "gs-sdf-1",
        "url": "https://github.com/hku-mars/GS-SDF/issues/1",
        "kind": "task",
        "label": "fatal",
        "text": (
            '#6    Object "/home/robot-337/Desktop/M2Mapping/libtorch/lib/libc10.so", at 0x7faf2b23d0b9, in c10::detail::torchCheckFail(char const*, char const*, unsigned int, char const*)\n'
            '#5    Object "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.28", at 0x7faf2b077698, in __cxa_throw\n'
            '#4    Object "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.28", at 0x7faf2b0773e6, in std::terminate()\n'
            '#3    Object "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.28", at 0x7faf2b07737b, in\n'
            '#2    Object "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.28", at 0x7faf2b06b8d0, in\n'
            '#1    Source "/build/glibc-B3wQXB/glibc-2.31/stdlib/abort.c", line 79, in abort [0x7faf2ade0858]\n'
            '#0    Source "../sysdeps/unix/sysv/linux/raise.c", line 51, in raise [0x7faf2ae0100b]\n'
            "Aborted (Signal sent by tkill() 1733323 1000)\n"
            "Aborted (core dumped)"
        ),
    },
    {
        "id": "verl-4895",
        "url": "https://github.com/verl-project/verl/issues/4895",
        "kind": "task",
        "label": "fatal",
        "note": "Ray's native backtrace of a worker that aborted (the thread's title: Fatal Python error: Aborted)",
        "text": (
            "(VisualExecutionWorker pid=1257088) ray::VisualExecutionWorker(PyObject_Vectorcall+0x51) [0x543141] PyObject_Vectorcall\n"
            "(VisualExecutionWorker pid=1257088) ray::VisualExecutionWorker(_PyEval_EvalFrameDefault+0x57a) [0x5295ba] _PyEval_EvalFrameDefault\n"
            "(VisualExecutionWorker pid=1257088) ray::VisualExecutionWorker(PyEval_EvalCode+0xae) [0x5f450e] PyEval_EvalCode\n"
            "(VisualExecutionWorker pid=1257088) ray::VisualExecutionWorker() [0x6198b7] run_eval_code_obj\n"
            "(VisualExecutionWorker pid=1257088) ray::VisualExecutionWorker() [0x614d37] run_mod\n"
            "(VisualExecutionWorker pid=1257088) ray::VisualExecutionWorker() [0x62a932] pyrun_file\n"
            "(VisualExecutionWorker pid=1257088) ray::VisualExecutionWorker(_PyRun_SimpleFileObject+0x1b0) [0x62a290] _PyRun_SimpleFileObject\n"
            "(VisualExecutionWorker pid=1257088) ray::VisualExecutionWorker(_PyRun_AnyFileObject+0x43) [0x62a083] _PyRun_AnyFileObject\n"
            "(VisualExecutionWorker pid=1257088) ray::VisualExecutionWorker(Py_RunMain+0x304) [0x624274] Py_RunMain\n"
            "(VisualExecutionWorker pid=1257088) ray::VisualExecutionWorker(Py_BytesMain+0x39) [0x5dfbb9] Py_BytesMain\n"
            "(VisualExecutionWorker pid=1257088) /usr/lib/x86_64-linux-gnu/libc.so.6(+0x2a1ca) [0x7ff7eae1e1ca]\n"
            "(VisualExecutionWorker pid=1257088) /usr/lib/x86_64-linux-gnu/libc.so.6(__libc_start_main+0x8b) [0x7ff7eae1e28b] __libc_start_main"
        ),
    },
    # --- glibc / abort banners and their backtraces -------------------------------------------
    {
        "id": "pylibinjection-2",
        "url": "https://github.com/mushorg/pylibinjection/issues/2",
        "kind": "task",
        "label": "fatal",
        "note": "the thread's title is the banner (*** glibc detected *** python: double free or corruption)",
        "text": (
            "======= Backtrace: =========\n"
            "/lib/x86_64-linux-gnu/libc.so.6(+0x76d76)[0x7f3902a30d76]\n"
            "/lib/x86_64-linux-gnu/libc.so.6(cfree+0x6c)[0x7f3902a35aac]\n"
            "/home/user/virt_envs/pylibinjection/local/lib/python2.7/site-packages/pylibinjection.so(+0x15458)[0x7f3901da4458]\n"
            "python(PyEval_EvalFrameEx+0x9c6)[0x4eb166]\n"
            "python(PyEval_EvalCodeEx+0x1a0)[0x4f1db0]\n"
            "python(PyRun_InteractiveOneFlags+0x275)[0x4f29b5]\n"
            "python(PyRun_InteractiveLoopFlags+0x145)[0x4f2d35]\n"
            "python(Py_Main+0xdd0)[0x4dac00]"
        ),
    },
    {
        "id": "redet-136",
        "url": "https://github.com/csuhan/ReDet/issues/136",
        "kind": "task",
        "label": "fatal",
        "note": "the markdown list marker '- ' before the banner removed",
        "text": (
            "*** Error in `python': double free or corruption (out): 0x000056303f31cfa0 ***\n"
            "======= Backtrace: =========\n"
            "/lib/x86_64-linux-gnu/libc.so.6(+0x777f5)[0x14d9bf8217f5]\n"
            "/lib/x86_64-linux-gnu/libc.so.6(+0x8038a)[0x14d9bf82a38a]\n"
            "/lib/x86_64-linux-gnu/libc.so.6(cfree+0x4c)[0x14d9bf82e58c]\n"
            "/media/sdc/zjr/anaconda/envs/AerialDetection/lib/python3.7/site-packages/numpy/core/_multiarray_umath.cpython-37m-x86_64-linux-gnu.so(+0x5df40)[0x14d9be057f40]\n"
            "python(+0xfa608)[0x562f86a5b608]\n"
            "python(_PyEval_EvalFrameDefault+0x4788)[0x562f86b284e8]\n"
            "python(_PyEval_EvalCodeWithName+0xc5c)[0x562f86a7a59c]\n"
            "python(_PyObject_FastCallDict+0x312)[0x562f86a7b202]"
        ),
    },
    {
        "id": "pylibmc-152",
        "url": "https://github.com/lericson/pylibmc/issues/152",
        "kind": "task",
        "label": "fatal",
        "text": (
            "*** Error in `/usr/bin/python2.6': double free or corruption (!prev): 0x00000000052af6c0 ***\n"
            "======= Backtrace: =========\n"
            "/lib64/libc.so.6(+0x766de)[0x7f3d5d62c6de]\n"
            "/lib64/libc.so.6(+0x77401)[0x7f3d5d62d401]\n"
            "/home/user/.python-eggs/pylibmc-1.3.0-py2.6-linux-x86_64.egg-tmp/_pylibmc.so(+0x7587)[0x7f3d4e7be587]\n"
            "/usr/lib64/libpython2.6.so.1.0(PyEval_EvalFrameEx+0x3f49)[0x7f3d5e34bb89]\n"
            "/usr/lib64/libpython2.6.so.1.0(PyEval_EvalCodeEx+0x841)[0x7f3d5e34d491]"
        ),
    },
    {
        "id": "pyzmq-1329",
        "url": "https://github.com/zeromq/pyzmq/issues/1329",
        "kind": "task",
        "label": "fatal",
        "note": "the quote markers '> ' removed",
        "text": (
            "Error in `python3': double free or corruption (out): 0x00007f6f2c036910 ***\n"
            "\n"
            "======= Backtrace: =========\n"
            "/lib/x86_64-linux-gnu/libc.so.6(+0x777e5)[0x7f6f4bf2c7e5]\n"
            "/lib/x86_64-linux-gnu/libc.so.6(+0x8037a)[0x7f6f4bf3537a]\n"
            "/lib/x86_64-linux-gnu/libc.so.6(cfree+0x4c)[0x7f6f4bf3953c]\n"
            "/usr/local/lib/python3.5/dist-packages/zmq/backend/cython/../../.libs/libzmq-39117701.so.5.2.1(+0x3d070)[0x7f6f409b7070]\n"
            "python3(PyObject_Call+0x47)[0x5bc037]\n"
            "python3(PyEval_EvalFrameEx+0x4f0f)[0x528cef]\n"
            "python3[0x52d7ff]"
        ),
    },
    {
        "id": "nupic-studio-22",
        "url": "https://github.com/htm-community/nupic.studio/issues/22",
        "kind": "task",
        "label": "fatal",
        "text": (
            "Thread 0 Crashed:: Dispatch queue: com.apple.main-thread\n"
            "0   libsystem_kernel.dylib        \t0x00007fff9262c286 __pthread_kill + 10\n"
            "1   libsystem_c.dylib             \t0x00007fff8b0edb53 abort + 129\n"
            "2   org.python.python             \t0x000000010f12e901 Py_FatalError + 49\n"
            "3   org.python.python             \t0x000000010f12d96c PyThreadState_Get + 44\n"
            "4   org.python.python             \t0x000000010f129cbb Py_InitModule4_64 + 75\n"
            "5   _math.so                      \t0x000000010ebc8e95 init_math + 687"
        ),
    },
    # --- gdb / sanitizer frames ---------------------------------------------------------------
    {
        "id": "sems-40",
        "url": "https://github.com/sems-server/sems/issues/40",
        "kind": "service",
        "label": "fatal",
        "text": (
            "Program terminated with signal SIGSEGV, Segmentation fault.\n"
            "#0  0x0000000000588641 in trans_bucket::match_request (this=this@entry=0x7f290c446cf0, msg=msg@entry=0x7f28d5283600, ttype=ttype@entry=1) at trans_table.cpp:127\n"
            "127     trans_table.cpp: No such file or directory.\n"
            "[Current thread is 1 (Thread 0x7f29024f8700 (LWP 1827))]\n"
            "(gdb) bt\n"
            "#0  0x0000000000588641 in trans_bucket::match_request (this=this@entry=0x7f290c446cf0, msg=msg@entry=0x7f28d5283600, ttype=ttype@entry=1) at trans_table.cpp:127\n"
            "#1  0x00000000005b0cb6 in _trans_layer::process_rcvd_msg (this=this@entry=0x7f290c417640, msg=msg@entry=0x7f28d5283600) at trans_layer.cpp:1676\n"
            "#2  0x00000000005b2343 in _trans_layer::received_msg (this=0x7f290c417640, msg=msg@entry=0x7f28d5283600) at trans_layer.cpp:1658\n"
            "#3  0x0000000000593336 in udp_trsp::run (this=0x7f290c415800) at udp_trsp.cpp:381\n"
            "#4  0x00000000004a54c5 in AmThread::_start (_t=0x7f290c415800) at AmThread.cpp:75\n"
            "#5  0x00007f290e555007 in start_thread () from /lib/libpthread.so.0\n"
            "#6  0x00007f290d09b5cd in clone () from /lib/libc.so.6"
        ),
    },
    {
        "id": "eti-tools-54",
        "url": "https://github.com/piratfm/eti-tools/issues/54",
        "kind": "task",
        "label": "fatal",
        "text": (
            "option mis\n"
            "Program received signal SIGSEGV, Segmentation fault.\n"
            "0x00005555555555b9 in main ()\n"
            "(gdb) bt\n"
            "#0  0x00005555555555b9 in main ()"
        ),
    },
    {
        "id": "3dgrut-2",
        "url": "https://github.com/nv-tlabs/3dgrut/issues/2",
        "kind": "task",
        "label": "fatal",
        "note": "a post starting in the middle of gdb's backtrace of the segfault",
        "text": (
            "#32 _PyFunction_Vectorcall (func=<optimized out>, stack=0x7fffffffbd40, nargsf=<optimized out>, kwnames=<optimized out>) at /usr/local/src/conda/python-3.11.11/Objects/call.c:393\n"
            "#33 0x00000000005404d2 in _PyObject_FastCallDictTstate (kwargs=<optimized out>, nargsf=<optimized out>, args=<optimized out>, callable=0x7ffeb476f560, tstate=0x8a7a38 <_PyRuntime+166328>)\n"
            "    at /usr/local/src/conda/python-3.11.11/Objects/call.c:141\n"
            "#34 _PyObject_Call_Prepend (kwargs=<optimized out>, args=<optimized out>, obj=0x7fffffffbd40, callable=0x7ffeb476f560, tstate=0x8a7a38 <_PyRuntime+166328>)\n"
            "    at /usr/local/src/conda/python-3.11.11/Objects/call.c:482\n"
            "#35 slot_tp_init (self=0x7fffffffbd40, args=<optimized out>, kwds=<optimized out>) at /usr/local/src/conda/python-3.11.11/Objects/typeobject.c:7855\n"
            "#36 0x00000000005044f3 in type_call (kwds=0x0, args=0x7ffe63b390c0, type=<optimized out>) at /usr/local/src/conda/python-3.11.11/Objects/typeobject.c:1103\n"
            "#37 _PyObject_MakeTpCall (tstate=0x8a7a38 <_PyRuntime+166328>, callable=0x81ba6d0, args=<optimized out>, nargs=<optimized out>, keywords=0x0)\n"
            "    at /usr/local/src/conda/python-3.11.11/Objects/call.c:214"
        ),
    },
    {
        "id": "maskrcnn-benchmark-21",
        "url": "https://github.com/facebookresearch/maskrcnn-benchmark/issues/21",
        "kind": "task",
        "label": "fatal",
        "note": "a post starting in the middle of gdb's backtrace of the segfault",
        "text": (
            "#30 0x00007ffff791086a in PyObject_Call (func=0x7ffff7ed3fc8, args=<optimized out>, kwargs=<optimized out>) at Objects/abstract.c:2261\n"
            "#31 0x00007ffff7986f11 in slot_tp_call (self=self@entry=0x7fff954dd400, args=args@entry=0x7fff953c8678, kwds=kwds@entry=0x0) at Objects/typeobject.c:6194\n"
            "#32 0x00007ffff79109cb in _PyObject_FastCallDict (func=0x7fff954dd400, args=<optimized out>, nargs=<optimized out>, kwargs=0x0) at Objects/abstract.c:2331\n"
            "#33 0x00007ffff7a03208 in call_function (pp_stack=pp_stack@entry=0x7fffffffbbc0, oparg=oparg@entry=3, kwnames=kwnames@entry=0x0) at Python/ceval.c:4854\n"
            "#34 0x00007ffff7a0771c in _PyEval_EvalFrameDefault (f=<optimized out>, throwflag=<optimized out>) at Python/ceval.c:3328\n"
            "#35 0x00007ffff7a02730 in _PyFunction_FastCall (co=<optimized out>, args=<optimized out>, nargs=4, globals=<optimized out>) at Python/ceval.c:4912\n"
            "#36 0x00007ffff7a03654 in fast_function (kwnames=0x0, nargs=<optimized out>, stack=<optimized out>, func=0x7fff955248c8) at Python/ceval.c:4947\n"
            "#37 call_function (pp_stack=pp_stack@entry=0x7fffffffbe00, oparg=oparg@entry=3, kwnames=kwnames@entry=0x0) at Python/ceval.c:4851\n"
            "#38 0x00007ffff7a0771c in _PyEval_EvalFrameDefault (f=<optimized out>, throwflag=<optimized out>) at Python/ceval.c:3328"
        ),
    },
    {
        "id": "pbc-122",
        "url": "https://github.com/cloudwu/pbc/issues/122",
        "kind": "task",
        "label": "fatal",
        "text": (
            "=================================================================\n"
            "==31549==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000 (pc 0x7fa5a7083746 bp 0x7ffff026f650 sp 0x7ffff026edd8 T0)\n"
            "    #0 0x7fa5a7083745 in strlen (/lib/x86_64-linux-gnu/libc.so.6+0x8b745)\n"
            "    #1 0x7fa5a740dc0a  (/usr/lib/x86_64-linux-gnu/libasan.so.2+0x4bc0a)\n"
            "    #2 0x4016b2 in read_file ../test/readfile.h:9\n"
            "    #3 0x4019f2 in test_des ../test/pbc.c:12\n"
            "    #4 0x401e3d in main ../test/pbc.c:49\n"
            "    #5 0x7fa5a701882f in __libc_start_main (/lib/x86_64-linux-gnu/libc.so.6+0x2082f)\n"
            "    #6 0x401588 in _start (/home/mfc_fuzz/pbc/build/pbc+0x401588)\n"
            "\n"
            "AddressSanitizer can not provide additional info.\n"
            "SUMMARY: AddressSanitizer: SEGV ??:0 strlen\n"
            "==31549==ABORTING"
        ),
    },
    # --- Go panics and goroutine dumps --------------------------------------------------------
    {
        "id": "intro-to-go-1",
        "url": "https://github.com/cmu440/intro-to-go/issues/1",
        "kind": "task",
        "label": "fatal",
        "text": (
            "panic: runtime error: invalid memory address or nil pointer dereference\n"
            "[signal 0xb code=0x1 addr=0x1 pc=0x8048f30]\n"
            "\n"
            "goroutine 1 [running]:\n"
            "main.main()\n"
            "        /home/simon/course/intro-to-go/12.go:25 +0x330\n"
            "\n"
            "goroutine 6 [chan send]:\n"
            "main.chanSender(0x18346040, 0x80f5f10, 0x3)\n"
            "        /home/simon/course/intro-to-go/12.go:36 +0x1a4\n"
            "created by main.main\n"
            "        /home/simon/course/intro-to-go/12.go:20 +0x140\n"
            "exit status 2"
        ),
    },
    {
        "id": "grmon-8",
        "url": "https://github.com/bcicen/grmon/issues/8",
        "kind": "task",
        "label": "fatal",
        "text": (
            "panic: runtime error: invalid memory address or nil pointer dereference\n"
            "[signal SIGSEGV: segmentation violation code=0x1 addr=0x28 pc=0x1385f7c]\n"
            "\n"
            "goroutine 1 [running]:\n"
            "main.ReadRoutines(0xc000228000, 0xa1, 0x200, 0x10, 0xff, 0x0, 0x0, 0x0)\n"
            "\t/Users/me/go/src/github.com/bcicen/grmon/parse.go:76 +0x19c\n"
            "main.poll(0x105a2f0, 0x0, 0xc0000f9ec0, 0xc0001ae000, 0x0)\n"
            "\t/Users/me/go/src/github.com/bcicen/grmon/client.go:38 +0x17c\n"
            "main.Refresh()\n"
            "\t/Users/me/go/src/github.com/bcicen/grmon/main.go:38 +0x26\n"
            "main.main()\n"
            "\t/Users/me/go/src/github.com/bcicen/grmon/main.go:202 +0xe7"
        ),
    },
    {
        "id": "gaper-9",
        "url": "https://github.com/maxcnunes/gaper/issues/9",
        "kind": "task",
        "label": "fatal",
        "text": (
            "[gaper] Building program\n"
            "[gaper] Starting program\n"
            "[gaper] Building program\n"
            "panic: runtime error: invalid memory address or nil pointer dereference\n"
            "[signal SIGSEGV: segmentation violation code=0x1 addr=0xa0 pc=0x4d0ca6]\n"
            "\n"
            "goroutine 154 [running]:\n"
            "os/exec.(*Cmd).Wait(0x0, 0x5bc683, 0xc42000a060)\n"
            "      /usr/local/go/src/os/exec/exec.go:453 +0x26\n"
            "github.com/maxcnunes/gaper.(*runner).runBin.func1(0xc4200b2000)\n"
            "      /go/src/github.com/maxcnunes/gaper/runner.go:159 +0x2f\n"
            "created by github.com/maxcnunes/gaper.(*runner).runBin\n"
            "      /go/src/github.com/maxcnunes/gaper/runner.go:158 +0x25d\n"
            "make: *** [Makefile:18: start] Error 2"
        ),
    },
    {
        "id": "sampctl-108",
        "url": "https://github.com/Southclaws/sampctl/issues/108",
        "kind": "task",
        "label": "fatal",
        "text": (
            "runtime error: invalid memory address or nil pointer dereference\n"
            "[signal 0xc0000005 code=0x0 addr=0x20 pc=0x9a92c7]\n"
            "\n"
            "goroutine 23 [running]:\n"
            "\n"
            "github.com/Southclaws/sampctl/runtime.run.func5\n"
            "(0xc0430b1e20, 0xc04208e2c0, 0xc042048c60)\n"
            "        /home/travis/gopath/src/github.com/Southclaws/sampctl/runtime/run.go:155 +0x1b7\n"
            "created by github.com/Southclaws/sampctl/runtime.run\n"
            "        /home/travis/gopath/src/github.com/Southclaws/sampctl/runtime/run.go:141 +0x40d"
        ),
    },
    {
        "id": "ibenchmark-2",
        "url": "https://github.com/albus01/ibenchmark/pull/2",
        "kind": "task",
        "label": "fatal",
        "text": (
            "ibenchmark start\n"
            "fatal error: concurrent map writes\n"
            "\n"
            "goroutine 122 [running]:\n"
            "runtime.throw(0x6df750, 0x15)\n"
            "\t/usr/local/go/src/runtime/panic.go:605 +0x95 fp=0xc420055e50 sp=0xc420055e30 pc=0x42b5c5\n"
            "runtime.mapassign_faststr(0x685f40, 0xc420078ea0, 0xc4202e4030, 0xd, 0x87b820)\n"
            "\t/usr/local/go/src/runtime/hashmap_fast.go:685 +0x4da fp=0xc420055ed0 sp=0xc420055e50 pc=0x40e14a\n"
            "main.handle_request(0xc42012fb00, 0xc420162000, 0xc42012a0f0, 0xc4200f6000)\n"
            "\t/tmp/ibenchmark/iBench.go:142 +0xdd fp=0xc420055fc0 sp=0xc420055ed0 pc=0x63f4dd\n"
            "runtime.goexit()\n"
            "\t/usr/local/go/src/runtime/asm_amd64.s:2337 +0x1 fp=0xc420055fc8 sp=0xc420055fc0 pc=0x458d71\n"
            "created by main.worker\n"
            "\t/tmp/ibenchmark/iBench.go:207 +0x379"
        ),
    },
    {
        "id": "golang-runtime-7",
        "url": "https://github.com/awesome-fc/golang-runtime/issues/7",
        "kind": "service",
        "label": "fatal",
        "note": "the thread's title is the head (fatal error: concurrent map writes); the post starts at the goroutine",
        "text": (
            "goroutine 1529 [running]:\n"
            "github.com/awesome-fc/golang-runtime.GetLoggerByRequestID({0xc000468571, 0x20})\n"
            "\t/xxxxxxxxxxxxxxxxxxxxxxxxxx/github.com/awesome-fc/golang-runtime@v0.0.0-20220629090431-93c1f92c7353/fc_logger.go:60 +0x13e\n"
            "github.com/awesome-fc/golang-runtime.NewFromContext(0xc000708f00)\n"
            "\t/xxxxxxxxxxxxxxxxxxxxxxxxxx/github.com/awesome-fc/golang-runtime@v0.0.0-20220629090431-93c1f92c7353/fc_context.go:101 +0x394\n"
            "net/http.HandlerFunc.ServeHTTP(0xc000787180?, {0x10469c0?, 0xc000787180?}, 0xee3b34?)\n"
            "\t/usr/local/go/src/net/http/server.go:2109 +0x2f\n"
            "net/http.(*conn).serve(0xc0006688c0, {0x1047438, 0xc0000acf00})\n"
            "\t/usr/local/go/src/net/http/server.go:1991 +0x607"
        ),
    },
    {
        "id": "airlift-22",
        "url": "https://github.com/moshee/airlift/issues/22",
        "kind": "service",
        "label": "fatal",
        "text": (
            "fatal error: concurrent map writes\n"
            "\n"
            "goroutine 419 [running]:\n"
            "runtime.throw(0xa802e0, 0x15)\n"
            "        /usr/local/go/src/runtime/panic.go:530 +0x90 fp=0xc8260edcf0 sp=0xc8260edcd8\n"
            "runtime.mapassign1(0x89d4a0, 0xc82025a600, 0xc8260edf40, 0xc8260ede40)\n"
            "        /usr/local/go/src/runtime/hashmap.go:540 +0x54b fp=0xc8260edd98 sp=0xc8260edcf0\n"
            "runtime.goexit()\n"
            "        /usr/local/go/src/runtime/asm_amd64.s:1998 +0x1 fp=0xc8260edf98 sp=0xc8260edf90\n"
            "created by ktkr.us/pkg/airlift/thumb.(*Cache).getThumb\n"
            "        /home/moshee/projects/go/src/ktkr.us/pkg/airlift/thumb/thumb.go:304 +0x1f9"
        ),
    },
    {
        "id": "emp3r0r-34",
        "url": "https://github.com/jm33-m0/emp3r0r/issues/34",
        "kind": "service",
        "label": "fatal",
        "note": "the thread's title is the head (Fatal error: concurrent map writes); the post is the dump of the other goroutines",
        "text": (
            "goroutine 2447 [chan send, 12 minutes]:\n"
            "github.com/jm33-m0/emp3r0r/core/lib/cc.reverseBash.func2.1(0xc0001aeae0)\n"
            "        lib/cc/rshell.go:53 +0x6d\n"
            "github.com/jm33-m0/emp3r0r/core/lib/cc.reverseBash.func2(0xc0001aeae0, 0xc0002583a0, 0x981ac0, 0xc000107940)\n"
            "        lib/cc/rshell.go:59 +0x228\n"
            "created by github.com/jm33-m0/emp3r0r/core/lib/cc.reverseBash\n"
            "        lib/cc/rshell.go:50 +0x165\n"
            "\n"
            "goroutine 2446 [chan receive, 12 minutes]:\n"
            "github.com/jm33-m0/emp3r0r/core/lib/cc.reverseBash.func1(0xc00006a6c0, 0xc0002583a0, 0x981ac0, 0xc000107940)\n"
            "        lib/cc/rshell.go:34 +0x4d\n"
            "created by github.com/jm33-m0/emp3r0r/core/lib/cc.reverseBash\n"
            "        lib/cc/rshell.go:33 +0x114"
        ),
    },
    # --- Rust panics --------------------------------------------------------------------------
    {
        "id": "rust-58554",
        "url": "https://github.com/rust-lang/rust/issues/58554",
        "kind": "task",
        "label": "fatal",
        "text": (
            "thread 'main' panicked at 'explicit panic', src/main.rs:2:5\n"
            "stack backtrace:\n"
            "   0: std::panicking::begin_panic\n"
            "             at /home/eric/.rustup/toolchains/nightly-x86_64-unknown-linux-gnu/lib/rustlib/src/rust/library/std/src/panicking.rs:505:12\n"
            "   1: z25::main\n"
            "             at ./src/main.rs:2:5\n"
            "   2: core::ops::function::FnOnce::call_once\n"
            "             at /home/eric/.rustup/toolchains/nightly-x86_64-unknown-linux-gnu/lib/rustlib/src/rust/library/core/src/ops/function.rs:227:5"
        ),
    },
    {
        "id": "uwd2-12",
        "url": "https://github.com/machineonamission/uwd2/issues/12",
        "kind": "task",
        "label": "fatal",
        "text": (
            r"thread 'main' panicked at src\explorer_modinfo.rs:45:14:" "\n"
            "called `Option::unwrap()` on a `None` value\n"
            "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
        ),
    },
    {
        "id": "lapce-16",
        "url": "https://github.com/lapce/lapce/issues/16",
        "kind": "task",
        "label": "fatal",
        "note": "a post starting in the middle of the backtrace of the main thread's panic (the thread's title)",
        "text": (
            "  27:     0x559e9fc1803b - core::ops::function::FnOnce::call_once::hb8826fbdd104c57f\n"
            "                               at /rustc/f1edd0429582dd29cccacaf50fd134b05593bd9c/library/core/src/ops/function.rs:227:5\n"
            "  28:     0x559e9fc1805e - std::sys_common::backtrace::__rust_begin_short_backtrace::hc97ec187b8d6168d\n"
            "                               at /rustc/f1edd0429582dd29cccacaf50fd134b05593bd9c/library/std/src/sys_common/backtrace.rs:123:18\n"
            "  29:     0x559e9fc180f1 - std::rt::lang_start::{{closure}}::haf7dd595acef1bfa\n"
            "                               at /rustc/f1edd0429582dd29cccacaf50fd134b05593bd9c/library/std/src/rt.rs:146:18\n"
            "  30:     0x559ea1f3713b - core::ops::function::impls::<impl core::ops::function::FnOnce<A> for &F>::call_once::hc56adab7a77ec6e3\n"
            "                               at /rustc/f1edd0429582dd29cccacaf50fd134b05593bd9c/library/core/src/ops/function.rs:259:13\n"
            "  31:     0x559ea1f3713b - std::panicking::try::do_call::h29f013120c5abc65\n"
            "                               at /rustc/f1edd0429582dd29cccacaf50fd134b05593bd9c/library/std/src/panicking.rs:403:40\n"
            "  32:     0x559ea1f3713b - std::panicking::try::h86d5b2b66caec4cf\n"
            "                               at /rustc/f1edd0429582dd29cccacaf50fd134b05593bd9c/library/std/src/panicking.rs:367:19"
        ),
    },
    # === look-alikes: traces the process went on after, and frame-shaped dumps ================
    {
        "id": "simpletransformers-763",
        "url": "https://github.com/ThilinaRajapakse/simpletransformers/issues/763",
        "kind": "task",
        "label": "benign",
        "note": "the thread: the exception is ignored and training continues",
        "text": (
            "Epochs 5/15. Running Loss: 0.0001: 100%\n"
            "1000/1000 [11:51<00:00, 1.41it/s]\n"
            "100%\n"
            "2000/2000 [09:37<00:00, 3.46it/s]\n"
            "Exception ignored in: <bound method _MultiProcessingDataLoaderIter.__del__ of <torch.utils.data.dataloader._MultiProcessingDataLoaderIter object at 0x7fee7c735240>>\n"
            "Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.6/dist-packages/torch/utils/data/dataloader.py", line 1101, in __del__\n'
            "    self._shutdown_workers()\n"
            '  File "/usr/local/lib/python3.6/dist-packages/torch/utils/data/dataloader.py", line 1075, in _shutdown_workers\n'
            "    w.join(timeout=_utils.MP_STATUS_CHECK_INTERVAL)\n"
            '  File "/usr/lib/python3.6/multiprocessing/process.py", line 122, in join\n'
            "    assert self._parent_pid == os.getpid(), 'can only join a child process'\n"
            "AssertionError: can only join a child process"
        ),
    },
    {
        "id": "quantization-variation-1",
        "url": "https://github.com/HuangOwen/Quantization-Variation/issues/1",
        "kind": "task",
        "label": "benign",
        "note": "the thread: the error is reported but the training was not killed; the exception line was cut by the excerpt",
        "text": (
            "Initialization:  [  0/782]  eta: 1:45:01    time: 8.0584  data: 6.7870  max mem: 311\n"
            "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f760335bca0>\n"
            "Traceback (most recent call last):\n"
            '  File "/home/gqy/.conda/envs/vvtq/lib/python3.8/site-packages/torch/utils/data/dataloader.py", line 1478, in __del__\n'
            "    self._shutdown_workers()\n"
            '  File "/home/gqy/.conda/envs/vvtq/lib/python3.8/site-packages/torch/utils/data/dataloader.py", line 1442, in _shutdown_workers\n'
            "    w.join(timeout=_utils.MP_STATUS_CHECK_INTERVAL)\n"
            '  File "/home/gqy/.conda/envs/vvtq/lib/python3.8/multiprocessing/process.py", line 149, in join\n'
            "    res = self._popen.wait(timeout)\n"
            '  File "/home/gqy/.conda/envs/vvtq/lib/python3.8/site-packages/torch/utils/data/_utils/signal_handling.py", line 66, in handler\n'
            "    _error_if_any_worker_fails()"
        ),
    },
    {
        "id": "pytorch-53703",
        "url": "https://github.com/pytorch/pytorch/issues/53703",
        "kind": "task",
        "label": "benign",
        "text": (
            "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f7162a08af0>\n"
            "Traceback (most recent call last):\n"
            '  File "path/to/env/lib/python3.8/site-packages/torch/utils/data/dataloader.py", line 1324, in __del__\n'
            "    self._shutdown_workers()\n"
            '  File "path/to/env/lib/python3.8/site-packages/torch/utils/data/dataloader.py", line 1316, in _shutdown_workers\n'
            "    if w.is_alive():\n"
            '  File "path/to/env/lib/python3.8/multiprocessing/process.py", line 160, in is_alive\n'
            "    assert self._parent_pid == os.getpid(), 'can only test a child process'\n"
            "AssertionError: can only test a child process"
        ),
    },
    {
        "id": "sirf-1374",
        "url": "https://github.com/SyneRBI/SIRF/issues/1374",
        "kind": "task",
        "label": "benign",
        "text": (
            "Exception ignored in: <function ImageData.__del__ at 0x7bc1b8ceee80>\n"
            "Traceback (most recent call last):\n"
            'File "/opt/SIRF-SuperBuild/INSTALL/python/sirf/STIR.py", line 447, in __del__\n'
            "AttributeError: 'NoneType' object has no attribute 'deleteDataHandle'"
        ),
    },
    {
        "id": "dirmap-84",
        "url": "https://github.com/H4ckForJob/dirmap/issues/84",
        "kind": "task",
        "label": "benign",
        "text": (
            "Exception ignored in: <function ProgressBarMixinBase.__del__ at 0x000001C94874A7A0>\n"
            "Traceback (most recent call last):\n"
            r'  File "D:\Python311\Lib\site-packages\progressbar\bar.py", line 130, in __del__' "\n"
            r'  File "D:\Python311\Lib\site-packages\progressbar\bar.py", line 1035, in finish' "\n"
            "AttributeError: 'NoneType' object has no attribute 'now'"
        ),
    },
    {
        "id": "mirror-leech-629",
        "url": "https://github.com/anasty17/mirror-leech-telegram-bot/pull/629",
        "kind": "service",
        "label": "warning",
        "note": "one leading space of the PR body's indentation removed from every line",
        "text": (
            "2022-06-01 19:37:14,799 - asyncio - ERROR - Task exception was never retrieved\n"
            "future: <Task finished name='Task-3021' coro=<Syncer.worker() done, defined at /usr/local/lib/python3.8/dist-packages/pyrogram/syncer.py:68> exception=RuntimeError(\"Task <Task pending name='Task-3023' coro=<Event.wait() running at /usr/lib/python3.8/asyncio/locks.py:309> cb=[_release_waiter(<Future pendi...008474b80>()]>)() at /usr/lib/python3.8/asyncio/tasks.py:429]> got Future <Future pending> attached to a different loop\")>\n"
            "Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.8/dist-packages/pyrogram/syncer.py", line 72, in worker\n'
            "    await asyncio.wait_for(cls.event.wait(), cls.INTERVAL)\n"
            '  File "/usr/lib/python3.8/asyncio/tasks.py", line 494, in wait_for\n'
            "    return fut.result()\n"
            '  File "/usr/lib/python3.8/asyncio/locks.py", line 309, in wait\n'
            "    await fut\n"
            "RuntimeError: Task <Task pending name='Task-3023' coro=<Event.wait() running at /usr/lib/python3.8/asyncio/locks.py:309> cb=[_release_waiter(<Future pendi...008474b80>()]>)() at /usr/lib/python3.8/asyncio/tasks.py:429]> got Future <Future pending> attached to a different loop\n"
            "2022-06-01 19:37:57,756 - bot.helper.mirror_utils.upload_utils.pyrogramEngine - INFO - Leech Completed:"
        ),
    },
    {
        "id": "invokeai-249",
        "url": "https://github.com/invoke-ai/InvokeAI/issues/249",
        "kind": "service",
        "label": "warning",
        "note": "the quote marker '> ' before the first line removed; the thread: the web request fails, the server goes on",
        "text": (
            "Exception happened during processing of request from ('127.0.0.1', 5156)\n"
            "Traceback (most recent call last):\n"
            r'  File "C:\Users\libor\anaconda3\envs\ldm\lib\socketserver.py", line 650, in process_request_thread' "\n"
            "    self.finish_request(request, client_address)\n"
            r'  File "C:\Users\libor\anaconda3\envs\ldm\lib\socketserver.py", line 360, in finish_request' "\n"
            "    self.RequestHandlerClass(request, client_address, self)\n"
            r'  File "C:\Users\libor\anaconda3\envs\ldm\lib\http\server.py", line 415, in handle_one_request' "\n"
            "    method()\n"
            r'  File "c:\users\libor\stable-diffusion\ldm\dream\server.py", line 91, in do_POST' "\n"
            "    pngwriter = PngWriter(\n"
            "TypeError: __init__() takes from 2 to 3 positional arguments but 4 were given\n"
            "----------------------------------------"
        ),
    },
    {
        "id": "chatgpt-925",
        "url": "https://github.com/acheong08/ChatGPT/issues/925",
        "kind": "service",
        "label": "warning",
        "text": (
            'INFO:     43.153.10.139:60846 - "POST /message/ HTTP/1.0" 500 Internal Server Error\n'
            "ERROR:    Exception in ASGI application\n"
            "Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.9/site-packages/uvicorn/protocols/http/httptools_impl.py", line 419, in run_asgi\n'
            "    result = await app(  # type: ignore[func-returns-value]\n"
            '  File "/usr/local/lib/python3.9/site-packages/uvicorn/middleware/proxy_headers.py", line 78, in __call__\n'
            "    return await self.app(scope, receive, send)\n"
            '  File "/usr/local/lib/python3.9/site-packages/fastapi/applications.py", line 271, in __call__\n'
            "    await super().__call__(scope, receive, send)\n"
            '  File "/usr/local/lib/python3.9/site-packages/starlette/middleware/errors.py", line 184, in __call__\n'
            "    raise exc"
        ),
    },
    {
        "id": "chatglm-6b-628",
        "url": "https://github.com/zai-org/ChatGLM-6B/issues/628",
        "kind": "service",
        "label": "warning",
        "text": (
            "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n"
            'INFO:     180.162.85.95:0 - "POST / HTTP/1.1" 500 Internal Server Error\n'
            "ERROR:    Exception in ASGI application\n"
            "Traceback (most recent call last):\n"
            r'  File "D:\code\PycharmProjects\chatgpt\venv\lib\site-packages\uvicorn\protocols\http\h11_impl.py", line 429, in run_asgi' "\n"
            "    result = await app(  # type: ignore[func-returns-value]\n"
            r'  File "D:\code\PycharmProjects\chatgpt\venv\lib\site-packages\uvicorn\middleware\proxy_headers.py", line 78, in __call__' "\n"
            "    return await self.app(scope, receive, send)"
        ),
    },
    {
        "id": "qwen-437",
        "url": "https://github.com/QwenLM/Qwen/issues/437",
        "kind": "service",
        "label": "warning",
        "text": (
            'INFO:     129.146.130.75:0 - "GET /v1/models HTTP/1.1" 200 OK\n'
            'INFO:     158.101.23.34:0 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
            "ERROR:    Exception in ASGI application\n"
            "Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.10/dist-packages/starlette/middleware/exceptions.py", line 68, in __call__\n'
            "    await self.app(scope, receive, sender)\n"
            '  File "/usr/local/lib/python3.10/dist-packages/fastapi/middleware/asyncexitstack.py", line 20, in __call__\n'
            "    raise e\n"
            '  File "/usr/local/lib/python3.10/dist-packages/fastapi/middleware/asyncexitstack.py", line 17, in __call__\n'
            "    await self.app(scope, receive, send)"
        ),
    },
    {
        "id": "pushy-87",
        "url": "https://github.com/christophery/pushy/issues/87",
        "kind": "service",
        "label": "benign",
        "note": "the thread: the notifications are still sent; the warning is only annoying",
        "text": (
            "[nioEventLoopGroup-4-1] WARN com.relayrides.pushy.apns.ApnsClientHandler - APNs client pipeline caught an exception.\n"
            "java.io.IOException: Connection reset by peer\n"
            "\tat sun.nio.ch.FileDispatcherImpl.read0(Native Method)\n"
            "\tat sun.nio.ch.SocketDispatcher.read(SocketDispatcher.java:39)\n"
            "\tat sun.nio.ch.IOUtil.readIntoNativeBuffer(IOUtil.java:223)\n"
            "\tat sun.nio.ch.IOUtil.read(IOUtil.java:192)\n"
            "\tat sun.nio.ch.SocketChannelImpl.read(SocketChannelImpl.java:379)\n"
            "\tat io.netty.buffer.PooledUnsafeDirectByteBuf.setBytes(PooledUnsafeDirectByteBuf.java:288)\n"
            "\tat io.netty.buffer.AbstractByteBuf.writeBytes(AbstractByteBuf.java:1054)\n"
            "\tat io.netty.channel.nio.NioEventLoop.processSelectedKeys(NioEventLoop.java:398)"
        ),
    },
    {
        "id": "cat-781",
        "url": "https://github.com/dianping/cat/issues/781",
        "kind": "service",
        "label": "warning",
        "text": (
            "2015-03-26 18:40:29 [WARN] io.netty.channel.DefaultChannelPipeline - An exceptionCaught() event was fired, and it reached at the tail of the pipeline. It usually means the last handler in the pipeline did not handle the exception.\n"
            "java.io.IOException: Connection reset by peer\n"
            "        at sun.nio.ch.FileDispatcher.read0(Native Method)\n"
            "        at sun.nio.ch.SocketDispatcher.read(SocketDispatcher.java:21)\n"
            "        at sun.nio.ch.IOUtil.readIntoNativeBuffer(IOUtil.java:233)\n"
            "        at sun.nio.ch.IOUtil.read(IOUtil.java:206)\n"
            "        at sun.nio.ch.SocketChannelImpl.read(SocketChannelImpl.java:236)\n"
            "        at io.netty.buffer.UnpooledHeapByteBuf.setBytes(UnpooledHeapByteBuf.java:256)\n"
            "        at io.netty.channel.nio.NioEventLoop.run(NioEventLoop.java:354)"
        ),
    },
    {
        "id": "synapseapi-16",
        "url": "https://github.com/CloudburstMC/SynapseAPI/issues/16",
        "kind": "service",
        "label": "warning",
        "text": (
            "2019-08-24 20:57:44.441 [nioEventLoopGroup-79-1] ERROR - Throwing\n"
            "java.io.IOException: Connection reset by peer\n"
            "\tat sun.nio.ch.FileDispatcherImpl.read0(Native Method) ~[?:1.8.0_222]\n"
            "\tat sun.nio.ch.SocketDispatcher.read(SocketDispatcher.java:39) ~[?:1.8.0_222]\n"
            "\tat sun.nio.ch.IOUtil.readIntoNativeBuffer(IOUtil.java:223) ~[?:1.8.0_222]\n"
            "\tat sun.nio.ch.IOUtil.read(IOUtil.java:192) ~[?:1.8.0_222]\n"
            "\tat io.netty.channel.nio.NioEventLoop.run(NioEventLoop.java:450) [nukkit.jar:?]\n"
            "\tat io.netty.util.concurrent.SingleThreadEventExecutor$5.run(SingleThreadEventExecutor.java:873) [nukkit.jar:?]"
        ),
    },
    {
        "id": "canal-5247",
        "url": "https://github.com/alibaba/canal/issues/5247",
        "kind": "service",
        "label": "warning",
        "text": (
            "2024-08-17 18:08:25.903 [New I/O server worker #1-2] ERROR c.a.otter.canal.server.netty.handler.SessionHandler - something goes wrong with channel:[id: 0x607c2985, /192.168.31.71:50896 => /192.168.31.71:11111], exception=java.io.IOException: Connection reset by peer\n"
            "\tat sun.nio.ch.FileDispatcherImpl.read0(Native Method)\n"
            "\tat sun.nio.ch.SocketDispatcher.read(SocketDispatcher.java:39)\n"
            "\tat sun.nio.ch.IOUtil.readIntoNativeBuffer(IOUtil.java:223)\n"
            "\tat org.jboss.netty.channel.socket.nio.NioWorker.run(NioWorker.java:202)\n"
            "\tat java.util.concurrent.ThreadPoolExecutor.runWorker(ThreadPoolExecutor.java:1149)\n"
            "\tat java.util.concurrent.ThreadPoolExecutor$Worker.run(ThreadPoolExecutor.java:624)\n"
            "\tat java.lang.Thread.run(Thread.java:750)"
        ),
    },
    {
        "id": "aion-357",
        "url": "https://github.com/aionnetwork/aion/issues/357",
        "kind": "service",
        "label": "benign",
        "note": "the thread: it pops up but does not seem to cause any further problems",
        "text": (
            "java.io.IOException: Connection reset by peer\n"
            "\tat java.base/sun.nio.ch.FileDispatcherImpl.read0(Native Method)\n"
            "\tat java.base/sun.nio.ch.SocketDispatcher.read(SocketDispatcher.java:39)\n"
            "\tat java.base/sun.nio.ch.IOUtil.readIntoNativeBuffer(IOUtil.java:223)\n"
            "\tat java.base/sun.nio.ch.IOUtil.read(IOUtil.java:197)\n"
            "\tat java.base/sun.nio.ch.SocketChannelImpl.read(SocketChannelImpl.java:382)\n"
            "\tat org.aion.p2p.impl1.P2pMgr$TaskInbound.run(Unknown Source)\n"
            "\tat java.base/java.lang.Thread.run(Thread.java:844)"
        ),
    },
    {
        "id": "go-36883",
        "url": "https://github.com/golang/go/issues/36883",
        "kind": "service",
        "label": "warning",
        "note": "the block's 8-space indentation removed; net/http recovers a handler's panic and keeps serving (two in a row here)",
        "text": (
            "created by net/http.(*Server).Serve\n"
            "    /usr/local/opt/go/libexec/src/net/http/server.go:2928 +0x384\n"
            "2020/01/27 03:35:00 http: panic serving 127.0.0.1:54069: 403 Forbidden: Forbidden\n"
            "goroutine 25 [running]:\n"
            "net/http.(*conn).serve.func1(0xc000326280)\n"
            "    /usr/local/opt/go/libexec/src/net/http/server.go:1767 +0x139\n"
            "panic(0x1442140, 0xc0003e2250)\n"
            "    /usr/local/opt/go/libexec/src/runtime/panic.go:679 +0x1b2\n"
            "main.process(0x158d1e0, 0xc000338000, 0xc0001a8300)\n"
            "    /Users/ed/Documents/Coding/Golang/src/web/web.go:18 +0x373\n"
            "net/http.HandlerFunc.ServeHTTP(0x150b0d0, 0x158d1e0, 0xc000338000, 0xc0001a8300)\n"
            "    /usr/local/opt/go/libexec/src/net/http/server.go:2007 +0x44"
        ),
    },
    {
        "id": "chicha-isotope-map-54",
        "url": "https://github.com/matveynator/chicha-isotope-map/pull/54",
        "kind": "service",
        "label": "warning",
        "note": "net/http recovers the handler's panic and keeps serving",
        "text": (
            "created by net/http.(*Server).Serve in goroutine 12\n"
            "\t/Users/matvey/go/pkg/mod/golang.org/toolchain@v0.0.1-go1.24.7.darwin-amd64/src/net/http/server.go:3454 +0x485\n"
            '2025/09/16 16:24:05 http: panic serving [::1]:49355: template: map.html:1161: function "name" not defined\n'
            "goroutine 57 [running]:\n"
            "net/http.(*conn).serve.func1()\n"
            "\t/Users/matvey/go/pkg/mod/golang.org/toolchain@v0.0.1-go1.24.7.darwin-amd64/src/net/http/server.go:1947 +0xbe\n"
            "panic({0x1044980e0?, 0xc0008faea0?})\n"
            "\t/Users/matvey/go/pkg/mod/golang.org/toolchain@v0.0.1-go1.24.7.darwin-amd64/src/runtime/panic.go:792 +0x132\n"
            "main.mapHandler({0x1045f1558, 0xc00035a000}, 0x104470860?)\n"
            "\t/Users/matvey/chicha-isotope-map/chicha-isotope-map.go:1946 +0x73b"
        ),
    },
    {
        "id": "gprofiler-612",
        "url": "https://github.com/intel/gprofiler/issues/612",
        "kind": "task",
        "label": "info",
        "note": "py-spy's dump of a live (hanging) process: frames that are no crash report",
        "text": (
            'Thread 0x7F768F77C740 (idle): "MainThread"\n'
            "    wait (threading.py:295)\n"
            "    result (_base.py:427)\n"
            "    _snapshot (main.py:278)\n"
            "    run_continuous (main.py:369)\n"
            "    main (main.py:841)\n"
            "    <module> (pyi_build.py:13)\n"
            'Thread 0x7F76848B4700 (idle): "Thread-6"\n'
            "    wait (threading.py:299)\n"
            "    wait (threading.py:551)\n"
            "    _continuously_poll_memory (system_metrics.py:76)\n"
            "    run (threading.py:864)\n"
            "    _bootstrap_inner (threading.py:916)\n"
            "    _bootstrap (threading.py:884)"
        ),
    },
]
