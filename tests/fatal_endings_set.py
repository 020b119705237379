"""The fresh set of session eight's round ``structfatal``: fatal endings by structure.

Real excerpts from public GitHub threads (each with its URL), collected and labelled
from what the thread says BEFORE any classifier change of this round (scored once on
the branch's start, f1a1d02, and once after: tests/test_logs_fatal_by_structure.py).
The searches went for how a process ends in many programs' words -- an exit status
reported by a launcher, supervisor, service manager, IDE, build tool or container
runtime; a process-ending verb after an error; a peer or resource declared gone; a
fatal level in any header -- and for the look-alikes of each (an exit status of 0, a
CRIT/FATAL level on a harmless notice, a requested shutdown, a request's panic in a
server that goes on, a retry). ``label`` is what a person reading the thread concludes:
``fatal`` when the excerpt is the end of the process or job; otherwise what it is.

Text is as posted, whole lines only: lines a search excerpt cut were left out; trailing
spaces were trimmed; a quote marker, a diff marker or markdown emphasis was removed
where ``note`` says so.

Eight excerpts first collected were dropped before scoring because their thread was
already in the corpus (YanWenKun/ComfyUI-Docker#68, teacherpeterpan/Logic-LLM#10,
schollz/find-lf#19, ollama/ollama#10369) or quoted by a test file
(noelshin/selfmask#11, Rid7/Table-OCR#19, docker/cli#1117, patroni/patroni#402).
"""

from __future__ import annotations

FATAL_ENDINGS_SET: list[dict[str, str]] = [
    # --- exit status reported by a container runtime, supervisor, service manager ----------
    {"id": "mozilla-addons-5259", "url": "https://github.com/mozilla/addons/issues/5259",
     "kind": "task", "label": "fatal",
     "text": "+ docker-compose exec web supervisorctl restart all\nExited with code 137"},
    {"id": "ganymede-908-json", "url": "https://github.com/Zibbp/ganymede/pull/908",
     "kind": "service", "label": "fatal",
     "text": 'ganymede  | {"level":"fatal","error":"querying server version dial tcp: lookup ganymede-db on '
             '127.0.0.11:53: server misbehaving","time":"2025-10-12T10:25:35-05:00","message":"error running auto migration"}'},
    {"id": "ganymede-908-supervisor", "url": "https://github.com/Zibbp/ganymede/pull/908",
     "kind": "service", "label": "fatal",
     "text": "ganymede  | 2025-10-12 10:25:35,461 WARN exited: worker (exit status 1; not expected)\n"
             "ganymede  | 2025-10-12 10:25:35,461 INFO gave up: worker entered FATAL state, too many start retries too quickly"},
    {"id": "fate-3986", "url": "https://github.com/FederatedAI/FATE/issues/3986",
     "kind": "service", "label": "fatal",
     "text": "2022-05-20 08:46:26,771 INFO exited: fate-clustermanager (exit status 0; not expected)\n"
             "2022-05-20 08:46:26,771 INFO gave up: fate-clustermanager entered FATAL state, too many start retries too quickly"},
    {"id": "supervisor-405", "url": "https://github.com/Supervisor/supervisor/issues/405",
     "kind": "task", "label": "fatal",
     "text": "2014-03-20 12:05:12,836 INFO exited: myprog (exit status 255; not expected)"},
    {"id": "ollama-11558", "url": "https://github.com/ollama/ollama/issues/11558",
     "kind": "service", "label": "fatal",
     "text": "Jul 28 08:28:30 omnibook-ultra-14 ollama[74021]: Error: could not create directory mkdir /var/lib/ollama: permission denied\n"
             "Jul 28 08:28:30 omnibook-ultra-14 systemd[1]: ollama.service: Main process exited, code=exited, status=1/FAILURE"},
    {"id": "ollama-1148", "url": "https://github.com/ollama/ollama/issues/1148",
     "kind": "service", "label": "fatal",
     "text": "Nov 15 21:48:43 ai-desktop systemd[1]: ollama.service: Main process exited, code=dumped, status=11/SEGV\n"
             "Nov 15 21:48:43 ai-desktop systemd[1]: ollama.service: Failed with result 'core-dump'."},
    {"id": "meta-overc-98", "url": "https://github.com/OverC/meta-overc/pull/98",
     "kind": "service", "label": "fatal",
     "text": "Jul 24 07:28:50 cube-essential systemd[1]: overc-conftools.service: Control process exited, code=exited status=1\n"
             "Jul 24 07:28:50 cube-essential systemd[1]: Failed to start OverC puppet system configuration."},
    {"id": "tarantool-operator-88", "url": "https://github.com/tarantool/tarantool-operator/pull/88",
     "kind": "service", "label": "fatal", "note": "an event row of kubectl describe, the diff marker and indentation removed",
     "text": "Warning  BackOff           4m25s (x157 over 38m)  kubelet, minikube  Back-off restarting failed container"},
    # --- exit status reported by an IDE, an editor's build system, a package manager, cargo --
    {"id": "ssd-tensorflow-15", "url": "https://github.com/ljanyst/ssd-tensorflow/issues/15",
     "kind": "task", "label": "fatal",
     "text": "ConnectionResetError: [WinError 10054] An existing connection was forcibly closed by the remote host\n"
             "[Finished in 10534.3s with exit code 1]\n"
             '[shell_cmd: python -u "E:\\sSD_tF\\ssd-tensorflow-master\\train.py"]\n'
             "[dir: E:\\sSD_tF\\ssd-tensorflow-master]"},
    {"id": "2based2wait-84", "url": "https://github.com/Enchoseon/2based2wait/issues/84",
     "kind": "task", "label": "fatal", "note": "the leading space of the code block removed",
     "text": "ELIFECYCLE  Command failed with exit code 1."},
    {"id": "hypertrace-5", "url": "https://github.com/agerasev/hypertrace/issues/5",
     "kind": "task", "label": "fatal",
     "text": "error: process didn't exit successfully: `rustc -vV` (signal: 11, SIGSEGV: invalid memory reference)"},
    {"id": "spatialos-sdk-rs-77", "url": "https://github.com/jamiebrynes7/spatialos-sdk-rs/issues/77",
     "kind": "task", "label": "fatal",
     "text": "error: process didn't exit successfully: `C:\\Workspace\\spatialos-sdk-rs\\target\\debug\\project-example.exe "
             "--worker-id RustWorker999 --worker-type RustWorker receptionist` (exit code: 0xc0000005, STATUS_ACCESS_VIOLATION)"},
    {"id": "cargo-2311", "url": "https://github.com/rust-lang/cargo/issues/2311",
     "kind": "task", "label": "fatal",
     "text": "Running `target/debug/segfault`\nProcess didn't exit successfully: `target/debug/segfault` (signal: 11)"},
    {"id": "shared-lede-31", "url": "https://github.com/hugcabbage/shared-lede/issues/31",
     "kind": "task", "label": "fatal",
     "text": "subprocess.CalledProcessError: Command '['./ninja', '-v']' returned non-zero exit status 1.\n"
             "make[3]: *** [Makefile:40: /home/runner/work/shared-lede/shared-lede/build_dir/host/ninja-1.11.1/.built] Error 1\n"
             "make[3]: Leaving directory '/home/runner/work/shared-lede/shared-lede/tools/ninja'\n"
             "time: tools/ninja/compile#22.17#2.41#23.82\n"
             "    ERROR: tools/ninja failed to build."},
    {"id": "spin-12", "url": "https://github.com/ArcticHare105/SPIN/issues/12",
     "kind": "task", "label": "fatal",
     "text": "ninja: build stopped: subcommand failed."},
    # --- a container or daemon that could not start ---------------------------------------
    {"id": "apollo-7130", "url": "https://github.com/ApolloAuto/apollo/issues/7130",
     "kind": "task", "label": "fatal",
     "text": '[INFO] Starting docker container "apollo_dev_jpm" ...\n'
             "docker: Error response from daemon: create nvidia_driver_384.130: VolumeDriver.Create: internal error, check logs for details.\n"
             "See 'docker run --help'.\n"
             '[ERROR] Failed to start docker container "apollo_dev_jpm" based on image: apolloauto/apollo:dev-x86_64-20190228_1414'},
    {"id": "nvidia-docker-1525", "url": "https://github.com/NVIDIA/nvidia-docker/issues/1525",
     "kind": "task", "label": "fatal",
     "text": "docker: Error response from daemon: OCI runtime create failed: container_linux.go:380: starting container process "
             "caused: process_linux.go:545: container init caused: Running hook #0:: error running hook: exit status 1, stdout: , "
             "stderr: nvidia-container-cli: initialization error: driver error: failed to process request: unknown."},
    {"id": "proxmox-nvidia-lxc-1", "url": "https://github.com/Saberwolf64/Proxmox-Nvidia-LXC-/issues/1",
     "kind": "task", "label": "fatal",
     "text": "lxc_setup: 3388 Failed to run mount hooks\n"
             'do_start: 1218 Failed to setup container "102"\n'
             "__sync_wait: 36 An error occurred in another process (expected sequence number 5)\n"
             '__lxc_start: 1999 Failed to spawn container "102"\n'
             "TASK ERROR: startup for container '102' failed"},
    {"id": "lxd-11427", "url": "https://github.com/canonical/lxd/issues/11427",
     "kind": "task", "label": "fatal",
     "text": 'lxc c1 20230301193658.390 ERROR    start - ../src/src/lxc/start.c:do_start:1272 - Failed to setup container "c1"\n'
             "lxc c1 20230301193658.390 ERROR    sync - ../src/src/lxc/sync.c:sync_wait:34 - An error occurred in another process (expected sequence number 4)"},
    {"id": "opennebula-3679", "url": "https://github.com/OpenNebula/one/issues/3679",
     "kind": "service", "label": "fatal",
     "text": "Wed Sep 11 07:18:43 2019 [Z0][MAD][E]: MAD did not answer INIT command\n"
             "Wed Sep 11 07:18:43 2019 [Z0][ONE][E]: Could not load driver"},
    # --- a native fatal level, an abort ------------------------------------------------------
    {"id": "siamfc-tf-21", "url": "https://github.com/torrvision/siamfc-tf/issues/21",
     "kind": "task", "label": "fatal",
     "text": "F tensorflow/core/kernels/conv_ops.cc:659] Check failed: stream->parent()->GetConvolveAlgorithms(&algorithms)\n"
             "Aborted (core dumped)"},
    {"id": "mobilenet-ssd-180", "url": "https://github.com/chuanqi305/MobileNet-SSD/issues/180",
     "kind": "task", "label": "fatal",
     "text": "I0407 01:31:07.666710  5755 net.cpp:408] conv9 -> conv9\n"
             "F0407 01:31:07.673615  5759 math_functions.cpp:250] Check failed: a <= b (0 vs. -1.19209e-07)\n"
             "*** Check failure stack trace: ***\n"
             "I0407 01:31:07.677111  5755 net.cpp:150] Setting up conv9"},
    {"id": "tensorflow-coder-8", "url": "https://github.com/google-research/tensorflow-coder/issues/8",
     "kind": "task", "label": "fatal",
     "text": "2024-12-10 09:23:12.332684: F tensorflow/core/framework/tensor_shape.cc:356] Check failed: d >= 0 (0 vs. -1)\n"
             "Fatal Python error: Aborted"},
    # --- a peer or a connection gone, then the process ends ---------------------------------
    {"id": "kpconv-100", "url": "https://github.com/HuguesTHOMAS/KPConv-PyTorch/issues/100",
     "kind": "task", "label": "fatal",
     "text": "Traceback (most recent call last):\n"
             '  File "/home/gz/anaconda3/envs/pc/lib/python3.8/multiprocessing/queues.py", line 245, in _feed\n'
             "    send_bytes(obj)\n"
             '  File "/home/gz/anaconda3/envs/pc/lib/python3.8/multiprocessing/connection.py", line 200, in send_bytes\n'
             "    self._send_bytes(m[offset:offset + size])\n"
             '  File "/home/gz/anaconda3/envs/pc/lib/python3.8/multiprocessing/connection.py", line 411, in _send_bytes\n'
             "    self._send(header + buf)\n"
             '  File "/home/gz/anaconda3/envs/pc/lib/python3.8/multiprocessing/connection.py", line 368, in _send\n'
             "    n = write(self._handle, buf)\n"
             "BrokenPipeError: [Errno 32] Broken pipe"},
    {"id": "pytorch-yolov3-561", "url": "https://github.com/eriklindernoren/PyTorch-YOLOv3/issues/561",
     "kind": "task", "label": "fatal",
     "text": "BrokenPipeError: [Errno 32] Broken pipe\n    _error_if_any_worker_fails()\n"
             "RuntimeError: DataLoader worker (pid 5645) is killed by signal: Killed."},
    {"id": "open-sora-446", "url": "https://github.com/hpcaitech/Open-Sora/issues/446",
     "kind": "task", "label": "fatal",
     "text": '[rank1]:   File "/opt/ml/code/Open-Sora/scripts/train.py", line 235, in main\n'
             "[rank1]:     for step, batch in pbar:\n"
             "[rank1]: ConnectionResetError: [Errno 104] Connection reset by peer"},
    {"id": "ray-3446", "url": "https://github.com/ray-project/ray/issues/3446",
     "kind": "task", "label": "fatal",
     "text": "The node with client ID 1eadc9db2f074bfec34caf25dd5bf1f99fad0d59 has been marked dead because the monitor has missed too many heartbeats from it."},
    {"id": "livekit-agents-js-329", "url": "https://github.com/livekit/agents-js/issues/329",
     "kind": "service", "label": "fatal",
     "text": "[12:04:37.724] ERROR (11228): worker connection closed unexpectedly\n"
             '    version: "0.1.0"\n'
             "[12:04:37.724] INFO (11228): shutting down worker\n"
             '    version: "0.1.0"'},
    {"id": "xinference-3091", "url": "https://github.com/xorbitsai/inference/issues/3091",
     "kind": "service", "label": "fatal",
     "text": "2025-03-19 08:22:22,106 xinference.model.llm.vllm.utils 7042 INFO     Detecting vLLM is not health, prepare to quit the process\n"
             "2025-03-19 08:22:22,106 xinference.model.llm.vllm.core 7042 INFO     Stopping vLLM engine\n"
             "INFO 03-19 08:22:22 multiproc_worker_utils.py:141] Terminating local vLLM worker processes\n"
             "(VllmWorkerProcess pid=7374) INFO 03-19 08:22:22 multiproc_worker_utils.py:253] Worker exiting\n"
             "(VllmWorkerProcess pid=7380) INFO 03-19 08:22:22 multiproc_worker_utils.py:253] Worker exiting"},
    # --- look-alikes: an exit status of 0, a restart, a requested stop -----------------------
    {"id": "supervisor-1663", "url": "https://github.com/Supervisor/supervisor/issues/1663",
     "kind": "service", "label": "warning",
     "text": "2024-10-30 04:42:49,192 WARN exited: postgresql (exit status 0; not expected)\n"
             "2024-10-30 04:42:52,532 INFO spawned: 'postgresql' with pid 1288"},
    {"id": "compose-9782", "url": "https://github.com/docker/compose/issues/9782",
     "kind": "task", "label": "info",
     "text": "compose-app-1 exited with code 0\nAborting on container exit..."},
    {"id": "compose-2787", "url": "https://github.com/docker/compose/issues/2787",
     "kind": "service", "label": "benign",
     "text": "^CGracefully stopping... (press Ctrl+C again to force)\nStopping operations_php-fpm_1 ... done\nERROR:\nAborting."},
    {"id": "curie-342", "url": "https://github.com/curie-eng/curie/issues/342",
     "kind": "task", "label": "benign",
     "text": "✗ docker failed: container agentos-minio-init-1 exited (0)"},
    {"id": "crunchy-postgres-operator-3798", "url": "https://github.com/CrunchyData/postgres-operator/issues/3798",
     "kind": "service", "label": "benign",
     "text": "2024-07-16 14:13:12.520 UTC [140] LOG:  received fast shutdown request\n"
             "2024-07-16 14:13:12.526 UTC [140] LOG:  aborting any active transactions\n"
             "2024-07-16 14:13:12.528 UTC [1794] FATAL:  terminating connection due to administrator command\n"
             '2024-07-16 14:13:12.536 UTC [140] LOG:  background worker "logical replication launcher" (PID 3435) exited with exit code 1\n'
             "2024-07-16 14:13:12.539 UTC [143] LOG:  shutting down"},
    {"id": "ollama-12194", "url": "https://github.com/ollama/ollama/issues/12194",
     "kind": "service", "label": "info",
     "text": "Sep 05 17:06:43 iZuf6bi9mf5aqzrm5qyr47Z systemd[1]: Stopping ollama.service - Ollama Service...\n"
             "Sep 05 17:06:43 iZuf6bi9mf5aqzrm5qyr47Z systemd[1]: ollama.service: Deactivated successfully.\n"
             "Sep 05 17:06:43 iZuf6bi9mf5aqzrm5qyr47Z systemd[1]: Stopped ollama.service - Ollama Service."},
    # --- look-alikes: a fatal or critical level on a harmless notice -------------------------
    {"id": "django-supervisor-15", "url": "https://github.com/rfk/django-supervisor/issues/15",
     "kind": "service", "label": "benign", "note": "quote markers removed",
     "text": "2012-03-08 12:06:34,223 CRIT Set uid to user 0\n"
             "2012-03-08 12:06:34,265 INFO RPC interface 'supervisor' initialized\n"
             "2012-03-08 12:06:34,266 INFO supervisord started with pid 19530"},
    {"id": "supervisor-308", "url": "https://github.com/Supervisor/supervisor/issues/308",
     "kind": "service", "label": "benign",
     "text": "2013-11-12 11:44:31,166 CRIT Supervisor running as root (no user in config file)"},
    {"id": "alpine-php-73", "url": "https://github.com/jorge07/alpine-php/pull/73",
     "kind": "service", "label": "benign",
     "text": "php_1            | 2020-06-06 20:39:08,619 CRIT Supervisor is running as root.  Privileges were not dropped because "
             "no user is specified in the config file.  If you intend to run as root, you can set user=root in the config file to avoid this message."},
    {"id": "storj-4728", "url": "https://github.com/storj/storj/issues/4728",
     "kind": "service", "label": "benign",
     "text": "2022-03-18 20:08:27,218 CRIT Server 'inet_http_server' running without any HTTP authentication checking"},
    {"id": "supervisor-492", "url": "https://github.com/Supervisor/supervisor/issues/492",
     "kind": "service", "label": "benign", "note": "indentation removed",
     "text": "CRIT Set uid to user 1000"},
    {"id": "radical-pilot-148", "url": "https://github.com/radical-cybertools/radical.pilot/issues/148",
     "kind": "task", "label": "benign",
     "text": "    version: 0.13 (fatal: Not a git repository (or any of the parent directories): .git\n"
             "    fatal: Not a git repository (or any of the parent directories): .git"},
    {"id": "navigate-818", "url": "https://github.com/TheDeanLab/navigate/issues/818",
     "kind": "task", "label": "benign",
     "text": "fatal: not a git repository (or any of the parent directories): .git"},
    # --- look-alikes: a request's panic in a server that goes on, a retry, a warning ---------
    {"id": "mailcow-exporter-12", "url": "https://github.com/mailcow/prometheus-exporter/pull/12",
     "kind": "service", "label": "warning",
     "text": "2022/09/03 09:15:13 http: panic serving [::1]:50741: runtime error: invalid memory address or nil pointer dereference\n"
             "goroutine 146 [running]:\n"
             "net/http.(*conn).serve.func1()\n"
             "\t/opt/homebrew/Cellar/go/1.19/libexec/src/net/http/server.go:1850 +0xb0\n"
             "panic({0x100c77440, 0x100fb0230})"},
    {"id": "yurl-85", "url": "https://github.com/chayev/yurl/issues/85",
     "kind": "service", "label": "warning",
     "text": "http: panic serving xxxxx: runtime error: invalid memory address or nil pointer dereference"},
    {"id": "wazuh-26050", "url": "https://github.com/wazuh/wazuh/issues/26050",
     "kind": "service", "label": "warning",
     "text": "2024/09/30 10:07:29 ERROR: [Local Server] [Main] Could not connect to master. Trying again in 10 seconds.\n"
             "2024/09/30 10:07:39 ERROR: [Local Server] [Main] Could not connect to master. Trying again in 10 seconds.\n"
             "2024/09/30 10:07:49 ERROR: [Local Server] [Main] Could not connect to master. Trying again in 10 seconds."},
    {"id": "ollama-2784", "url": "https://github.com/ollama/ollama/issues/2784",
     "kind": "service", "label": "warning",
     "text": "WARNING: No NVIDIA GPU detected. Ollama will run in CPU-only mode."},
    {"id": "wandb-3599", "url": "https://github.com/wandb/wandb/issues/3599",
     "kind": "task", "label": "warning",
     "text": "wandb: WARNING A graphql request initiated by the public wandb API timed out (timeout=9 sec). Create a new API with an "
             "integer timeout larger than 9, e.g., `api = wandb.Api(timeout=19)` to increase the graphql timeout."},
]
