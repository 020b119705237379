"""Fatal endings: how programs in any language announce that they are ending.

The excerpts below are last words of processes posted in public issue threads
(URL beside each), none of them in the corpus, collected to measure fatal
recall on logs nobody here had seen before any change: C++'s terminate and
what(), Rust panics, Node's heap death, the JVM's uncaught exception, Go's
panics and runtime signal records, glog's Check failed, bus errors, illegal
instructions, SIGILL in gdb, slurm time limits and srun's verdicts, a parent's
CalledProcessError, an IDE's "Process finished with exit code 137", shells
reporting a job killed by a signal (zsh, bash, the zh locale), torchrun's
exitcode, mpirun's "exited on signal", the kernel's OOM killer, Kubernetes
states, NVRM, prefixed Python tracebacks (docs/history/logs-notebook.md, "Fatal endings").
Text is as posted, trailing whitespace trimmed and markdown ``**`` removed.

Counter-examples must not become fatal: real lines that look like last words
and are not (a Go server recovering a handler's panic, Node's unhandled-rejection
*warning* quoting "Exited with code 1", a request handler's logged assertion,
exit code 0, an exception Python 2 reports as ignored), and the new structures'
own near misses (an ignored make error, exit status 0, a thread's uncaught
exception in a server that goes on serving, a worker's death that is restarted).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import classified_events, log_verdict

FATAL: list[tuple[str, str, str]] = [
    # -- C++: terminate / what() / abort ---------------------------------
    ("https://github.com/distsn/vinayaka/issues/182", "task",
     "sweetjams.club\nterminate called after throwing an instance of 'std::runtime_error'\n"
     "  what():  \"type mismatch! call is<type>() before get<type>()\" && is<object>()\nAborted"),
    ("https://github.com/sim82/papara_nt/issues/4", "task",
     "terminate called after throwing an instance of 'std::runtime_error'\n  what():  n1.back != null\n"
     "[1]    8051 abort (core dumped)  ./papara_static_x86_64 -t pa.tree -s PA.phylip -q CIR000093_KF260373.fas"),
    ("https://github.com/RPCS3/rpcs3/issues/2493", "task",
     "[New Thread 0x7ffda2209700 (LWP 17389)]\n\nThread 27 \"rpcs3\" received signal SIGABRT, Aborted.\n"
     "[Switching to Thread 0x7ffdbcef9700 (LWP 17388)]"),
    ("https://github.com/flori-stelzer/deep-learning-delay-system/issues/3", "task",
     "terminate called after throwing an instance of 'std::out_of_range' what():  basic_string::substr: __pos "
     "(which is 2) > this->size() (which is 0)  Aborted (core dumped)"),
    ("https://github.com/tindy2013/subconverter/issues/415", "service",
     "2021/12/08 Wed 21:10:43.721293 [8768 1][INFO] Gist id provided. Modifying Gist...\n"
     "terminate called after throwing an instance of 'std::runtime_error'\n  what():  assert"),
    ("https://github.com/Jarkore/Feednix/issues/41", "task",
     "terminate called after throwing an instance of 'std::out_of_range'\n"
     "                                                                    what():  map::at\n"
     "                                                                                    Aborted (core dumped)"),
    # -- Rust ---------------------------------------------------------------
    ("https://github.com/machineonamission/uwd2/issues/12", "task",
     "thread 'main' panicked at src\\explorer_modinfo.rs:45:14:\ncalled `Option::unwrap()` on a `None` value\n"
     "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"),
    ("https://github.com/sshwy/pku3b/issues/6", "task",
     "thread 'main' panicked at /home/lry/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/pku3b-0.8.1/src/main.rs:16:1:\n"
     "cannot create runtime: Os { code: 1, kind: PermissionDenied, message: \"Operation not permitted\" }\n"
     "stack backtrace:\n   0: __rustc::rust_begin_unwind\n   1: core::panicking::panic_fmt\n"
     "   2: core::result::unwrap_failed\n   3: pku3b::main\n"
     "note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace."),
    # -- Node -----------------------------------------------------------------
    ("https://github.com/google-gemini/gemini-cli/issues/21462", "task",
     "<--- JS stacktrace --->\n\nFATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\n"
     "----- Native stack trace -----"),
    # -- Java -----------------------------------------------------------------
    ("https://github.com/kapenga/LittleBit/issues/2", "task",
     "Find symbols...Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space\n"
     "        at Encoder.<init>(Encoder.java:10)\n        at Encoder.bytesToSymbols(Encoder.java:234)\n"
     "        at Main.main(Main.java:38)"),
    ("https://github.com/RPiList/TarpitAn/issues/5", "task",
     " Reading Data.\nException in thread \"main\" java.lang.OutOfMemoryError: Java heap space\n"
     "        at java.lang.ClassLoader.findLoadedClass0(Native Method)\n"
     "        at java.lang.ClassLoader.findLoadedClass(Unknown Source)"),
    ("https://github.com/databricks/reference-apps/issues/49", "task",
     "Exception in thread \"main\" java.lang.NullPointerException\n    at java.util.Hashtable.put(Hashtable.java:514)\n"
     "    at java.util.Properties.setProperty(Properties.java:161)"),
    # -- Go ---------------------------------------------------------------------
    ("https://github.com/cmu440/intro-to-go/issues/1", "task",
     "created by main.main\n        /home/simon/course/intro-to-go/12.go:20 +0x140\nexit status 2"),
    ("https://github.com/maxcnunes/gaper/issues/9", "task",
     "created by github.com/maxcnunes/gaper.(*runner).runBin\n"
     "      /go/src/github.com/maxcnunes/gaper/runner.go:158 +0x25d\nmake: *** [Makefile:18: start] Error 2"),
    ("https://github.com/Southclaws/sampctl/issues/108", "task",
     "runtime error: invalid memory address or nil pointer dereference\n[signal 0xc0000005 code=0x0 addr=0x20 pc=0x9a92c7]\n\n"
     "goroutine 23 [running]:"),
    ("https://github.com/scottkiss/grtm/issues/4", "service",
     "fatal error: concurrent map read and map write\n\ngoroutine 133 [running]:\nruntime.throw(0x116d55e, 0x21)"),
    ("https://github.com/albus01/ibenchmark/pull/2", "task",
     "ibenchmark start\nfatal error: concurrent map writes\n\ngoroutine 122 [running]:"),
    # -- glog / caffe / TensorFlow: Check failed, then abort -------------------
    ("https://github.com/zhaoweicai/cascade-rcnn/issues/68", "task",
     "F1126 12:19:18.211333 23387 cudnn_conv_layer.cu:28] Check failed: status == CUDNN_STATUS_SUCCESS (8 vs. 0)  "
     "CUDNN_STATUS_EXECUTION_FAILED\n*** Check failure stack trace: ***\n    @     0x7fa7b34190cd  google::LogMessage::Fail()"),
    ("https://github.com/zhaoweicai/cascade-rcnn/issues/68", "task",
     "    @     0x560bd9a22bc5  main\n    @     0x7fa7b2219b97  __libc_start_main\n"
     "    @     0x560bd9a2362a  _start\nAborted (core dumped)"),
    ("https://github.com/rbgirshick/py-faster-rcnn/issues/830", "task",
     "    @           0x407d39  _start\n    @              (nil)  (unknown)\n"
     "examples/mnist/train_lenet.sh: 行 3: 25020 已放弃               (核心已转储) ./build/tools/caffe train "
     "--solver=examples/mnist/lenet_solver.prototxt"),
    ("https://github.com/taylorlu/Facenet-Caffe/issues/3", "task",
     "F0411 11:10:11.883401  6173 cudnn_relu_layer.cpp:13] Check failed: status == CUDNN_STATUS_SUCCESS (1 vs. 0)  "
     "CUDNN_STATUS_NOT_INITIALIZED\n*** Check failure stack trace: ***"),
    ("https://github.com/rbgirshick/fast-rcnn/issues/163", "task",
     "F0809 20:24:03.616431 11559 math_functions.cu:401] Check failed: status == CURAND_STATUS_SUCCESS (201 vs. 0)  "
     "CURAND_STATUS_LAUNCH_FAILURE\n*** Check failure stack trace: ***"),
    ("https://github.com/endernewton/tf-faster-rcnn/issues/444", "task",
     "tensorflow/stream_executor/cuda/cuda_dnn.cc:194] Check failed: status == CUDNN_STATUS_SUCCESS (7 vs. 0)"
     "Failed to set cuDNN st"),
    # -- signals: bus error, illegal instruction, SIGILL --------------------------
    ("https://github.com/hkchengrex/STCN/issues/132", "task",
     "RuntimeError: DataLoader worker (pid 46794) is killed by signal: Bus error. It is possible that dataloader's "
     "workers are out of shared memory. Please try to raise your shared memory limit."),
    ("https://github.com/fangpin/siamese-pytorch/issues/16", "task",
     "  return torch.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)\n"
     "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).\n"
     "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm)."),
    ("https://github.com/pytorch/pytorch/issues/12857", "task",
     ">>> torch.nn.init.kaiming_normal_(c.weight)\nIllegal instruction (core dumped)"),
    ("https://github.com/ZiwenZhuang/parkour/issues/16", "task",
     "Illegal instruction (core dumped)\n(parkour_venv) unitree@nx:~/parkour_deploy$"),
    ("https://github.com/pytorch/pytorch/issues/15012", "task",
     "Thread 1 \"python\" received signal SIGILL, Illegal instruction.\n"
     "0x00007fffbfe8629b in mkldnn::impl::scales_t::set(int, int, float const*) ()"),
    # -- slurm ----------------------------------------------------------------------
    ("https://github.com/marbl/canu/issues/1067", "task",
     "slurmstepd: *** JOB 830329 CANCELLED AT 2018-08-06T17:21:44 DUE TO TIME LIMIT on n447 ***"),
    ("https://github.com/luojunwei/SLR/issues/5", "task",
     "srun: error: cpu-node-80: task 0: Exited with exit code 136"),
    # -- Python: a child's non-zero exit reported by its parent -----------------------
    ("https://github.com/Akegarasu/lora-scripts/issues/247", "task",
     "raise subprocess.CalledProcessError(returncode=process.returncode, cmd=cmd)\n"
     "subprocess.CalledProcessError: Command '['E:\\\\AI\\\\AIsoftware\\\\lora-scripts-gui\\\\python\\\\python.exe', "
     "'./sd-scripts/sdxl_train_network.py', '--config_file', "
     "'E:\\\\AI\\\\AIsoftware\\\\lora-scripts-gui\\\\config\\\\autosave\\\\20230925-152417.toml']' returned non-zero exit status 1."),
    ("https://github.com/numerai/numerai-cli/issues/24", "task",
     "    raise CalledProcessError(self.returncode, self.args, self.stdout,\n"
     "subprocess.CalledProcessError: Command 'docker run --rm -it -v C:\\numerai:/opt/app -w /opt/app "
     "105816820129.dkr.ecr.us-east-1.amazonaws.com/numerai-submission python train.py' returned non-zero exit status 137."),
    ("https://github.com/hollowstrawberry/kohya-colab/issues/93", "task",
     "╰──────────────────────────────────────────────────────────────────────────────────────────────────╯\n"
     "CalledProcessError: Command '['/usr/bin/python3', 'train_network.py',\n"
     "'--dataset_config=/content/drive/MyDrive/Loras/Nejikawa-Raimu/dataset_config.toml',\n"
     "'--config_file=/content/drive/MyDrive/Loras/Nejikawa-Raimu/training_config.toml']' returned non-zero\n"
     "exit status 1."),
    ("https://github.com/wenwenyu/PICK-pytorch/issues/36", "task",
     "subprocess.CalledProcessError: Command '['/opt/conda/bin/python', '-u', 'train.py', '--local_rank=3', '-c', "
     "'config.json', '--local_world_size', '4']' returned non-zero exit status 1."),
    # -- IDE / shell: the process finished with a signal's exit code ----------------------
    ("https://github.com/noelshin/selfmask/issues/11", "task",
     "Process finished with exit code 137 (interrupted by signal 9:SIGKILL)"),
    ("https://github.com/Rid7/Table-OCR/issues/19", "task",
     "Process finished with exit code 139 (interrupted by signal 11: SIGSEGV)"),
    # -- launchers ---------------------------------------------------------------------------
    ("https://github.com/NVIDIA/Megatron-LM/issues/1880", "task",
     " | learning rate: 5.333333E-06 | global batch size:     4 | lm loss: 1.420515E+00 | loss scale: 1.0 | grad norm: "
     "13.636 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
     "W1223 05:17:58.996000 3304089 site-packages/torch/distributed/elastic/multiprocessing/api.py:908] Sending process "
     "3304210 closing signal SIGTERM\n"
     "E1223 05:18:02.971000 3304089 site-packages/torch/distributed/elastic/multiprocessing/api.py:882] failed "
     "(exitcode: -11) local_rank: 0 (pid: 3304209) of binary: /root/miniconda\n3/envs/qat-env/bin/python3.12"),
    ("https://github.com/meta-llama/llama/issues/856", "task",
     "> initializing pipeline with size 1\n"
     "[2023-10-13 17:40:02,544] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9) "
     "local_rank: 0 (pid: 62498) of binary: /home/znr/miniconda3/envs/llama/bin/python"),
    ("https://github.com/Bogdanp/dramatiq/issues/333", "service",
     "[CRITICAL] Worker with PID 88666 exited unexpectedly (code -9). Shutting down..."),
    # -- the kernel, containers, the driver ---------------------------------------------------
    ("https://github.com/0jc1/py-autovod/issues/7", "task",
     "[Sun Mar 30 08:24:00 2025] Out of memory: Killed process 7899 (python) total-vm:26,184,840kB, "
     "anon-rss:153,700,88kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:38964kB oom_score_adj:0"),
    ("https://github.com/openbmc/openbmc/issues/1887", "service",
     "[ 4018.450000] Killed process 935 (python) total-vm:113656kB, anon-rss:102104kB, file-rss:0kB, shmem-rss:0kB\n"
     "[ 4022.980000] oom_reaper: reaped process 935 (python), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB"),
    ("https://github.com/docker/for-linux/issues/1001", "task",
     "May 15 23:09:30 ubuntu-s-1vcpu-2gb-ams3-01 kernel: [  518.050606] Out of memory: Killed process 15784 (python3) "
     "total-vm:11964kB, anon-rss:4288kB, file-rss:3028kB, shmem-rss:0kB"),
    ("https://github.com/moby/moby/issues/33728", "service",
     "[Mon Jun 19 05:16:10 2017] Out of memory: Kill process 1877 (influxd) score 760 or sacrifice child\n"
     "[Mon Jun 19 05:16:10 2017] Killed process 1877 (influxd) total-vm:4928944kB, anon-rss:1551316kB, file-rss:0kB"),
    ("https://github.com/hmcts/cnp-flux-config/pull/28772", "service",
     "NAME                                                 READY   STATUS      RESTARTS      AGE\n"
     "tax-tribunals-application-base-74464f6b98-2kj6g      0/1     OOMKilled   4 (57s ago)   2m40s"),
    ("https://github.com/kubernetes/kubernetes/issues/93826", "service",
     "Back-off restarting failed container"),
    # -- Python tracebacks whose exception line carries a prefix ----------------------------------
    ("https://github.com/vllm-project/vllm/issues/23176", "service",
     "(APIServer pid=1179246)     wait_for_engine_startup(\n"
     "(APIServer pid=1179246)   File \"/home/ss345/vllm-local-build/vllm/vllm/v1/engine/utils.py\", line 759, in wait_for_engine_startup\n"
     "(APIServer pid=1179246)     raise RuntimeError(\"Engine core initialization failed. \"\n"
     "(APIServer pid=1179246) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"),
    ("https://github.com/gpustack/gpustack/issues/2723", "service",
     "    raise RuntimeError(\"Engine core initialization failed. \"\n"
     "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n"
     "[ERROR] 2025-08-14-13:42:44 (PID:5309, Device:-1, RankID:-1) ERR99999 UNKNOWN applicaiton exception"),
    ("https://github.com/nagadomi/nunif/issues/26", "task",
     "  File \"F:\\1\\envs\\nunif\\lib\\site-packages\\torch\\cuda\\amp\\grad_scaler.py\", line 287, in <genexpr>\n"
     "    if not sum(v.item() for v in optimizer_state[\"found_inf_per_device\"].values()):\nKeyboardInterrupt"),
    ("https://github.com/PacificBiosciences/pbbioconda/issues/18", "task",
     "2019-09-27 14:12:07,314 - root - CRITICAL - Error in /data/wuxiaopei/conda/envs/dujuan_denovo_pb-assembly0.0.4/"
     "lib/python2.7/site-packages/pypeflow/do_task.py with args=\"{'json_fn': "
     "'/1data/wuxiaopei/zhejiangdaxue_dujuan/Falcon_assembly/0-rawreads/cns-runs/cns_00043/task.json',\\n 'timeout': 30,\\n "
     "'tmpdir': None}\""),
    # -- native crashes reported by the shell, glibc and gdb (added after the first count) --------------
    ("https://github.com/0-d3y/Hash-Tools/issues/1", "task",
     "zsh: segmentation fault  python ./hash.py"),
    ("https://github.com/Minege/eSSP/issues/24", "task",
     "python3 main.py\nPORT: /dev/ttyACM0\n##/dev/ttyACM0##\nSegmentation fault (core dumped)"),
    ("https://github.com/human-3d/Human3D/issues/3", "task",
     "Starting program: /home/glassman555/miniconda3/envs/human3d/bin/python3 main.py\n"
     "[Thread debugging using libthread_db enabled]\n"
     "Using host libthread_db library \"/lib/x86_64-linux-gnu/libthread_db.so.1\".\n\n"
     "Program received signal SIGSEGV, Segmentation fault."),
    ("https://github.com/luckiezhou/DynamicTriad/issues/2", "task",
     "*** stack smashing detected ***: python terminated\nSegmentation fault"),
    ("https://github.com/chwilms/AttentionMask/issues/7", "task",
     "double free or corruption (!prev)\n"
     "./train.sh: line 26:  5032 Aborted                 (core dumped) python testAttentionMask.py 0 "
     "attentionMask-8-128 --init_weights attentionMask-8-128_iter_$STEP.caffemodel --dataset train2014"),
    ("https://github.com/BVLC/caffe/issues/1333", "task",
     "I1020 15:24:48.951339  3162 caffe.cpp:121] Optimization Done.\n"
     "*** Error in `/opt/caffe/build/tools/caffe': double free or corruption (out): 0x0000000001db6160 ***\n"
     "Aborted (core dumped)"),
    ("https://github.com/sfzhang15/ATSS/issues/73", "task",
     "2020-09-29 09:37:43,421 paa_core INFO: Collecting env info (might take some time)\n"
     "*** Error in `/home/yfzhang/anaconda3/envs/PAA/bin/python': double free or corruption (!prev): 0x0000564911fb06d0 ***"),
    ("https://github.com/bijustin/Fast-Dynamic-ORB-SLAM/issues/2", "task",
     "double free or corruption (!prev)\n已放弃 (核心已转储)"),
    ("https://github.com/Tencent-Hunyuan/HunyuanVideo/issues/81", "task",
     "       embedded_guidance_scale: 6.0\n"
     "  0%|                                                                                                                                                "
     "| 0/50 [00:00<?, ?it/s]Floating point exception (core dumped)"),
    ("https://github.com/PaddlePaddle/ERNIE/issues/375", "task",
     "I1126 10:30:02.161927 733376 parallel_executor.cc:329] The number of CUDAPlace, which is used in "
     "ParallelExecutor, is 1. And the Program will be copied 1 copies\n"
     "I1126 10:30:02.339908 733376 build_strategy.cc:340] SeqOnlyAllReduceOps:0, num_trainers:1\n"
     "Floating point exception (core dumped)"),
    ("https://github.com/QwenLM/Qwen-Image/issues/75", "task",
     "pipeline loaded\n\n  0%|                                                                                    "
     "| 0/50 [00:00<?, ?it/s]\n\nFloating point exception (core dumped)"),
    ("https://github.com/luojunwei/SLR/issues/7", "task",
     " SLR -c concoct.77.fa.fasta -r aligning.concoct.77.fa.fasta.bam -d align-self.concoct.77.fa.fasta.bam -p  "
     "concoct.77.fa.fasta.SLR\nFloating point exception (core dumped)"),
    ("https://github.com/Xiao-Hu-Z/orbslam2-with-KLT/issues/1", "task",
     "浮点数例外 (核心已转储)"),
    ("https://github.com/laughtervv/DepthAwareCNN/issues/12", "task",
     "RuntimeError: cuda runtime error (77) : an illegal memory access was encountered at "
     "/pytorch/aten/src/THC/generic/THCTensorCopy.c:20"),
    # -- containers: an exec or a hook whose command was killed ---------------------------------------
    ("https://github.com/kubernetes/kubernetes/issues/77806", "service",
     "command terminated with non-zero exit code: Error executing in Docker Container: 137"),
    ("https://github.com/mattshma/bigdata/issues/118", "service",
     "Exec lifecycle hook (xxx) for Container \"xxxx\" in Pod \"xxx\" failed - error: command 'xxxx' exited with 137: , "
     "message: ''"),
    ("https://github.com/nitishsrivastava/deepnet/issues/6", "task",
     "Writing checkpoint mnist_classifier_pretrained_1361765543\n"
     "./runall.sh: line 11: 15313 Segmentation fault      (core dumped) ${train_deepnet} mnist_classifier.pbtxt "
     "train_classifier.pbtxt eval.pbtxt"),
    ("https://github.com/hiroshi-manabe/CRFSegmenter/issues/9", "task",
     "L-BFGS optimization\nzsh: segmentation fault  CRFSegmenter-master/build/bin/HighOrderCRFMain --train tempFile "
     "--model  --c1"),
    ("https://github.com/ml-explore/mlx/issues/341", "task",
     "9it [00:04,  2.30it/s]zsh: segmentation fault  python3 mobilenet/train.py\n"
     "/Users/bento/.pyenv/versions/3.11.7/lib/python3.11/multiprocessing/resource_tracker.py:254: UserWarning: "
     "resource_tracker: There appear to be 1 leaked semaphore objects to clean up at shutdown\n"
     "  warnings.warn('resource_tracker: There appear to be %d '"),
    # -- added after the change (scored by both trees: docs/history/logs-notebook.md) -----------------
    ("https://github.com/sgl-project/sglang/issues/2812", "service",
     "[2025-01-25 21:59:48 TP0] Prefill batch. #new-seq: 12, #new-token: 295, #cached-token: 1680, cache hit rate: "
     "73.52%, token usage: 0.21, #running-req: 990, #queue-req: 0\n"
     "[2025-01-25 21:59:49] DetokenizerManager hit an exception: Traceback (most recent call last):\n"
     "  File \"XXX/python/sglang/srt/managers/detokenizer_manager.py\", line 224, in run_detokenizer_process\n"
     "    manager.event_loop()\n"
     "  File \"XXX/python/sglang/srt/managers/detokenizer_manager.py\", line 158, in event_loop\n"
     "    s = self.decode_status[recv_obj.rids[i]]\n"
     "KeyError: 'dc49ad867dc144249f59f4e85c7229cd'"),
]

# Lines that look like last words and are not: the process goes on, or ends well.
NOT_FATAL: list[tuple[str, str, str, str]] = [
    # Go's HTTP server recovers a handler's panic and keeps serving the other requests.
    ("https://github.com/lib/pq/issues/942", "service", "warning",
     "i am up and running.got here 1.2020/02/13 19:41:05 http: panic serving [::1]:60825: runtime error: invalid memory "
     "address or nil pointer dereference\ngoroutine 3 [running]:\nnet/http.(*conn).serve.func1(0xc0001ad040)\n"
     "        /usr/local/go/src/net/http/server.go:1769 +0x139"),
    # Node before 15 warned about an unhandled rejection and went on serving (ng serve kept running).
    ("https://github.com/npm/npm/issues/20204", "service", "warning",
     "webpack: Compiled successfully.\n(node:8484) UnhandledPromiseRejectionWarning: Error: Exited with code 1\n"
     "    at ChildProcess.cp.once.code (C:\\Angular 5\\myFirst\\node_modules\\opn\\index.js:82:13)\n"
     "    at Object.onceWrapper (events.js:317:30)"),
    ("https://github.com/hackclub/api/issues/36", "service", "warning",
     "frontend_1  | (node:33) UnhandledPromiseRejectionWarning: Unhandled promise rejection (rejection id: 1): "
     "Error: Exited with code 3"),
    ("https://github.com/QingdaoU/OnlineJudgeFE/issues/95", "service", "warning",
     "(node:25795) UnhandledPromiseRejectionWarning: Error: Exited with code 3\n"
     "    at ChildProcess.<anonymous> (/home/redoc/OnlineJudgeFE/node_modules/opn/index.js:84:13)\n"
     "    at Object.onceWrapper (events.js:421:26)"),
    # A request handler's error, logged; the same worker answers 200 right after.
    ("https://github.com/andrewlalis/handy-httpd/issues/44", "service", "warning",
     "...y_httpd_dist-worker-1 ERROR 2025-01-05T18:43:52.781 Encountered error core.exception.AssertError while "
     "handling request: Assertion failure; Note: Server's exception handler will not be invoked for errors. Please "
     "address the root cause of the error or provide your own error-handling logic."),
    # Exit code 0: the process ended well (the thread is about why it ended at all).
    ("https://github.com/docker/cli/issues/1117", "service", "info",
     "compose.cli.verbose_proxy.proxy_callable: docker wait -> {'Error': None, 'StatusCode': 0}\n"
     "dockertesting_web_1 exited with code 0"),
    ("https://github.com/laradock/laradock/issues/863", "service", "info",
     "applications_1 exited with code 0"),
    ("https://github.com/lfz/DSB2017/issues/40", "task", "info",
     "Process finished with exit code 0"),
    # Python 2 reports an exception raised in a destructor at exit as ignored.
    ("https://github.com/colinoflynn/pico-python/issues/15", "task", "benign",
     "Exception TypeError: \"'NoneType' object is not callable\" in <bound method PS6000.__del__ of "
     "<ps6000.PS6000 object at 0x07279E90>> ignored"),
]



@pytest.mark.parametrize(("url", "kind", "text"), FATAL, ids=[f"{i}-{u.split('/')[4]}" for i, (u, _, _) in enumerate(FATAL)])
def test_fresh_last_words_are_fatal(tmp_path: Path, url: str, kind: str, text: str) -> None:
    verdict, rules = log_verdict(tmp_path, text, kind)
    assert verdict == "fatal", (url, verdict, rules)


@pytest.mark.parametrize(
    ("url", "kind", "label", "text"), NOT_FATAL, ids=[f"{i}-{u.split('/')[4]}" for i, (u, _, _, _) in enumerate(NOT_FATAL)]
)
def test_fresh_lines_that_are_not_last_words(tmp_path: Path, url: str, kind: str, label: str, text: str) -> None:
    # ``label`` is what a reader concludes; the promise tested is that none of them pages anyone.
    verdict, rules = log_verdict(tmp_path, text, kind)
    assert verdict != "fatal", (url, label, verdict, rules)


def test_fresh_set_is_fresh_and_wide() -> None:
    import json

    corpus = Path(__file__).parent / "fixtures" / "corpus" / "corpus.jsonl"
    used = {json.loads(line)["url"] for line in corpus.read_text().splitlines() if line.strip()}
    urls = [u for u, _, _ in FATAL] + [u for u, _, _, _ in NOT_FATAL]
    assert not used & set(urls)
    assert len(FATAL) >= 60
    assert len({"/".join(u.split("/")[3:5]) for u, _, _ in FATAL}) >= 55


# -- which structure recognised it -----------------------------------------------


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        # the shell's report of a job a signal ended: zsh's form, a script's "line N: pid", after a bar
        ("zsh: segmentation fault  python ./hash.py", "shell-job-died"),
        ("9it [00:04,  2.30it/s]zsh: segmentation fault  python3 mobilenet/train.py", "shell-job-died"),
        ("./train.sh: line 26:  5032 Aborted                 (core dumped) python testAttentionMask.py 0", "crash-signal"),
        ("./run.sh: line 3:  977 Floating point exception  ./a.out", "shell-job-died"),
        # the Go runtime's signal record (printed only when a panic crashes the program)
        ("[signal 0xc0000005 code=0x0 addr=0x20 pc=0x9a92c7]", "crash-signal"),
        ("[signal SIGSEGV: segmentation violation code=0x1 addr=0x28 pc=0x1385f7c]", "crash-signal"),
        # an exit status in brackets, bare after "exited with", make's verdict
        ("Worker with PID 88666 exited unexpectedly (code -9).", "nonzero-exit"),
        ("Exec lifecycle hook (x) for Container \"c\" in Pod \"p\" failed - error: command 'x' exited with 137: , message: ''",
         "nonzero-exit"),
        ("make: *** [Makefile:18: start] Error 2", "nonzero-exit"),
        # the JVM's uncaught exception whose class has no message
        ('Exception in thread "main" java.lang.NullPointerException', "uncaught-exception"),
        # the zh locale's "(core dumped)"
        ("浮点数例外 (核心已转储)", "crash-signal"),
    ],
)
def test_structure_that_recognised_it(tmp_path: Path, text: str, rule: str) -> None:
    verdict, rules = log_verdict(tmp_path, text)
    assert (verdict, rules) == ("fatal", {rule})


def test_critical_in_brackets_is_the_programs_fatal_level(tmp_path: Path) -> None:
    # https://github.com/Bogdanp/dramatiq/issues/333: the level alone says it, whatever the words.
    verdict, _ = log_verdict(tmp_path, "[CRITICAL] Broker connection lost for good. Shutting down...")
    assert verdict == "fatal"


# -- near misses of the new structures: not fatal ----------------------------------


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        # make's report of a recipe error it was told to ignore ("-cmd"): no "***", "(ignored)"
        ("task", "make: [Makefile:18: clean] Error 1 (ignored)"),
        # exit status 0 in every new form
        ("task", "Worker with PID 88666 exited (code 0)."),
        ("task", "command 'x' exited with 0"),
        ("task", "Process finished with exit code 0"),
        # a percentage is no exit status
        ("task", "sampling exited with 95% of the budget left"),
        # the shell warns and goes on; a word after "line N:" that is no pid
        ("task", "bash: warning: setlocale: LC_ALL: cannot change locale (en_US.UTF-8)"),
        ("task", "config.yaml: line 12: unknown key 'lr_sched', using the default"),
        # "zsh:" with no signal's name: the shell says something else
        ("task", "zsh: correct 'pyhton' to 'python' [nyae]? y"),
        # Node's warning about a rejection whose error says a child exited
        ("service", "(node:77) UnhandledPromiseRejectionWarning: Error: Exited with code 3"),
        # Python's warnings module quoting an exception
        ("task", "/x/y.py:10: UserWarning: RuntimeError: worker exited with code 1 is retried"),
    ],
)
def test_near_misses_are_not_fatal(tmp_path: Path, kind: str, text: str) -> None:
    verdict, rules = log_verdict(tmp_path, text, kind)
    assert verdict != "fatal", (verdict, rules)


def test_thread_exception_in_a_server_that_goes_on_serving_is_not_fatal(tmp_path: Path) -> None:
    # A JVM server's worker thread dies of an exception nobody caught; the server answers the next
    # requests. The same header for the main thread, followed by nothing, ends the program.
    served = "\n".join(
        [
            'Exception in thread "pool-1-thread-3" java.lang.IllegalStateException: stream closed',
            "\tat com.example.Handler.run(Handler.java:42)",
            '127.0.0.1 - - [01/Dec/2026:05:00:01 +0000] "GET /health HTTP/1.1" 200 2',
            '127.0.0.1 - - [01/Dec/2026:05:00:02 +0000] "POST /v1/chat HTTP/1.1" 200 512',
        ]
    )
    verdict, rules = log_verdict(tmp_path, served, "service")
    assert verdict != "fatal", (verdict, rules)
    ended = 'Exception in thread "main" java.lang.IllegalStateException: stream closed\n\tat Main.main(Main.java:9)'
    assert log_verdict(tmp_path, ended, "task")[0] == "fatal"


def test_worker_death_with_status_in_brackets_restarted_is_not_fatal(tmp_path: Path) -> None:
    # A manager's report of a worker's death, then its replacement booting: the service survived.
    restarted = "\n".join(
        [
            "[2026-12-01 05:00:00 +0000] [9] [ERROR] Worker with PID 88666 exited unexpectedly (code -9).",
            "[2026-12-01 05:00:00 +0000] [9] [INFO] Booting worker with pid: 88700",
        ]
    )
    verdict, rules = log_verdict(tmp_path, restarted, "service")
    assert verdict != "fatal", (verdict, rules)
    alone = restarted.splitlines()[0]
    assert log_verdict(tmp_path, alone, "service")[0] == "fatal"


def test_events_name_the_line_that_ended_it(tmp_path: Path) -> None:
    # https://github.com/ml-explore/mlx/issues/341: the death is glued after a progress bar and
    # followed by a harmless warning; the fatal event is on the death's line.
    text = next(t for u, _, t in FATAL if u.endswith("ml-explore/mlx/issues/341"))
    fatal = [e for e in classified_events(tmp_path, text, "task") if e.kind == "fatal"]
    assert [(e.line, e.rule) for e in fatal] == [(1, "shell-job-died")]
