"""The fresh set of session eight's round ``cliend``: a command's own final error report.

Real excerpts from public GitHub threads (each with its URL), collected and labelled from
what the thread says BEFORE any classifier change of this round (scored once on the
branch's start, 8f0db91, and once after: tests/test_logs_final_report.py). The searches
went for the one line a command-line program prints to stderr when it gives up, with no
logger header, in the shared convention -- ``<prog>: error: <msg>`` (argparse, sbatch,
srun), ``error: <msg>`` / ``fatal: <msg>`` at the start of a line (git, tritonserver),
``Error: <msg>`` (Go cobra programs: ollama, helm), docker's ``Error response from
daemon: <msg>``, apt's ``E: <msg>`` -- and for the look-alikes: the same shapes where the
program (or the script around it) went on: a loop of sbatch submissions, pip's resolver
notice before ``Successfully installed``, git's ``fatal:`` inside a setup.py run or a
submodule update that carries on, ``docker rm ... || true`` before a ``docker run``, a
daemon's and a port-forward's request logs. ``label`` is what a person reading the thread
concludes: ``fatal`` when the excerpt is the end of the process or job; otherwise what it is.

Text is as posted, whole lines only: lines a search excerpt cut were left out; trailing
spaces were trimmed; a markdown code indentation, a backtick or bold marker was removed
where ``note`` says so.

Four excerpts first collected were dropped before scoring because their thread was already
in the corpus (OpenBMB/XAgent#273, hiyouga/LlamaFactory#5268,
triton-inference-server/perf_analyzer#330) or quoted by a test file (eg4000/SKU110K_CVPR19#17).
"""

from __future__ import annotations

FINAL_REPORT_SET: list[dict[str, str]] = [
    # --- fatal: a batch scheduler's client gives up ------------------------------------------
    {"id": "cc-net-32", "url": "https://github.com/facebookresearch/cc_net/issues/32",
     "kind": "task", "label": "fatal",
     "text": "sbatch: error: Batch job submission failed: Invalid job array specification"},
    {"id": "arjuna-255", "url": "https://github.com/ArjunaCluster/ArjunaUsers/issues/255",
     "kind": "task", "label": "fatal",
     "text": "sbatch: error: spank: x11.so: Plugin file not found\n"
             "sbatch: error: Batch job submission failed: I/O error writing script/environment to file"},
    {"id": "awsome-196", "url": "https://github.com/awslabs/awsome-distributed-ai/issues/196",
     "kind": "task", "label": "fatal",
     "text": "sbatch: error: Invalid generic resource (gres) specification"},
    {"id": "waveorder-201", "url": "https://github.com/mehta-lab/waveorder/issues/201",
     "kind": "task", "label": "fatal",
     "text": "srun: error: Unable to create step for job 16413634: Invalid generic resource (gres) specification"},
    {"id": "dla-future-337", "url": "https://github.com/eth-cscs/DLA-Future/issues/337",
     "kind": "task", "label": "fatal",
     "text": "srun: Job 29986033 step creation temporarily disabled, retrying (Requested nodes are busy)\n"
             "srun: Job 29986033 step creation still disabled, retrying (Requested nodes are busy)\n"
             "srun: error: Unable to create step for job 29986033: Memory required by task is not available"},
    {"id": "hpcfund-83", "url": "https://github.com/AMDResearch/hpcfund/issues/83",
     "kind": "task", "label": "fatal", "note": "backticks removed",
     "text": "srun: error: Unable to allocate resources: Socket timed out on send/recv operation"},
    # --- fatal: argparse's usage error ---------------------------------------------------------
    {"id": "locating-objects-12", "url": "https://github.com/javiribera/locating-objects-without-bboxes/issues/12",
     "kind": "task", "label": "fatal",
     "text": "                [--lambdaa L]\n"
             "train.py: error: unrecognized arguments: --env-name sorghum"},
    {"id": "stgat-2", "url": "https://github.com/hulianyuyy/STGAT/issues/2",
     "kind": "task", "label": "fatal",
     "text": "train.py: error: unrecognized arguments: --config /my_path/config/ntu/ntu120_dsta.yaml\n"
             "  [0.000s] Operation failed"},
    {"id": "cobra-40", "url": "https://github.com/linxingchen/cobra/issues/40",
     "kind": "task", "label": "fatal",
     "text": "usage: cobra-meta [-h] -q QUERY -f FASTA -a {idba,megahit,metaspades} -mink MINK -maxk MAXK -m MAPPING "
             "-c COVERAGE [-lm LINKAGE_MISMATCH] [-o OUTPUT] [-t THREADS] [-v]\n"
             "cobra-meta: error: unrecognized arguments: 2"},
    {"id": "fasterrcnn-56", "url": "https://github.com/sovit-123/fasterrcnn-pytorch-training-pipeline/issues/56",
     "kind": "task", "label": "fatal",
     "text": "       [--seed SEED]\n"
             "train.py: error: unrecognized arguments: --config data_configs/wheat_2020.yaml "
             "--project-name fasterrcnn_mobilenetv3_large_fpn_noaug_40e"},
    # --- fatal: a server that did not start ---------------------------------------------------
    {"id": "tao-triton-11", "url": "https://github.com/NVIDIA-AI-IOT/tao-toolkit-triton-apps/issues/11",
     "kind": "service", "label": "fatal",
     "text": "I0312 10:55:14.007364 57 tensorrt.cc:5062] TRITONBACKEND_ModelFinalize: delete model state\n"
             "I0312 10:55:14.008953 57 model_repository_manager.cc:1166] successfully unloaded 'dashcamnet_tao' version 1\n"
             "I0312 10:55:15.003795 57 server.cc:267] Timeout 29: Found 0 live models and 0 in-flight non-inference requests\n"
             "error: creating server: Internal - failed to load all models"},
    {"id": "ollama-707", "url": "https://github.com/ollama/ollama/issues/707",
     "kind": "service", "label": "fatal", "note": "backticks removed",
     "text": "Error: listen tcp 127.0.0.1:11434: bind: address already in use"},
    # --- fatal: docker's client reports the daemon's refusal ----------------------------------
    {"id": "yuxi-237", "url": "https://github.com/xerrors/Yuxi/issues/237",
     "kind": "service", "label": "fatal",
     "text": "Attaching to api-dev, graph, milvus, milvus-etcd-dev, milvus-minio, web-dev\n"
             "Error response from daemon: could not select device driver \"nvidia\" with capabilities: [[gpu]]"},
    {"id": "bundlesdf-184", "url": "https://github.com/NVlabs/BundleSDF/issues/184",
     "kind": "task", "label": "fatal",
     "text": "Error response from daemon: could not select device driver \"\" with capabilities: [[gpu]]."},
    {"id": "grok-docker-2", "url": "https://github.com/mayooot/grok-docker/issues/2",
     "kind": "task", "label": "fatal",
     "text": "docker: Error response from daemon: could not select device driver \"\" with capabilities: [[gpu]]."},
    {"id": "moby-9821", "url": "https://github.com/moby/moby/issues/9821",
     "kind": "task", "label": "fatal",
     "text": "Error response from daemon: No such container: 743c18c8d79b\n"
             "2014/12/26 20:51:21 Error: failed to start one or more containers"},
    {"id": "flexmeasures-1231", "url": "https://github.com/FlexMeasures/flexmeasures/issues/1231",
     "kind": "task", "label": "fatal",
     "text": "Error response from daemon: No such container: flexmeasures-tutorial-db\n"
             "Error: failed to start containers: flexmeasures-tutorial-db\n"
             "Error response from daemon: No such container: flexmeasures-tutorial-fm\n"
             "Error: failed to start containers: flexmeasures-tutorial-fm"},
    {"id": "vic-2146", "url": "https://github.com/vmware/vic/pull/2146",
     "kind": "task", "label": "fatal",
     "text": "Unable to find image 'busybox:latest' locally\n"
             "Pulling from library/busybox\n"
             "a3ed95caeb02: Pull complete\n"
             "8ddc19f16526: Pull complete\n"
             "Digest: sha256:65ce39ce3eb0997074a460adfb568d0b9f0f6a4392d97b6035630c9d7bf92402\n"
             "Status: Downloaded newer image for library/busybox:latest\n"
             "docker: Error response from daemon: server error from portlayer : xxxx: no such executable in PATH."},
    {"id": "moby-13248", "url": "https://github.com/moby/moby/issues/13248",
     "kind": "task", "label": "fatal", "note": "markdown code indentation removed",
     "text": "FATA[0000] Error response from daemon: cannot bind mount volume: ~/i volume paths must be absolute."},
    # --- fatal: helm (cobra) -------------------------------------------------------------------
    {"id": "cloud-native-stack-34", "url": "https://github.com/NVIDIA/cloud-native-stack/issues/34",
     "kind": "task", "label": "fatal",
     "text": "Error: INSTALLATION FAILED: Kubernetes cluster unreachable: Get \"https://10.158.210.53:6443/version\": "
             "dial tcp 10.158.210.53:6443: connect: connection refused"},
    # --- fatal: apt ----------------------------------------------------------------------------
    {"id": "gluu-docker-1", "url": "https://github.com/GluuFederation/gluu-docker/pull/1",
     "kind": "task", "label": "fatal",
     "text": "E: Unable to locate package apt-get\nE: Unable to locate package clean"},
    {"id": "mediaforge-284", "url": "https://github.com/machineonamission/mediaforge/pull/284",
     "kind": "task", "label": "fatal",
     "text": "1.615 Reading package lists...\n2.209 Building dependency tree...\n2.363 Reading state information...\n"
             "2.369 E: Unable to locate package RUN\n2.369 E: Unable to locate package apt-get\n"
             "2.369 E: Unable to locate package remove"},
    # --- fatal: git ----------------------------------------------------------------------------
    {"id": "global-workflow-767", "url": "https://github.com/NOAA-EMC/global-workflow/issues/767",
     "kind": "task", "label": "fatal",
     "text": "+ git submodule update --init CMakeModules\n"
             "error: pathspec 'CMakeModules' did not match any file(s) known to git."},
    {"id": "ltsmin-7", "url": "https://github.com/utwente-fmt/ltsmin/issues/7",
     "kind": "task", "label": "fatal",
     "text": "fatal: reference is not a tree: a443e1a236163463a703cc81f2e614c5a68ff765\n"
             "fatal: reference is not a tree: ae6fdce1a8dcf3a5f6d8f6f58bc73e4efcda702a\n"
             "Unable to checkout 'a443e1a236163463a703cc81f2e614c5a68ff765' in submodule path 'buddy'\n"
             "Unable to checkout 'ae6fdce1a8dcf3a5f6d8f6f58bc73e4efcda702a' in submodule path 'sylvan'"},
    {"id": "organicmaps-209", "url": "https://github.com/organicmaps/organicmaps/issues/209",
     "kind": "task", "label": "fatal",
     "text": "fatal: git cat-file: could not get object info\nUnrecognized git object type:\n"
             "Unable to checkout 7516753825500f90ac2de6f18c256d5abec1ff33 from https://github.com/omapsapp/just_gtfs.git."},
    {"id": "nchnroutes-2", "url": "https://github.com/dndx/nchnroutes/issues/2",
     "kind": "task", "label": "fatal",
     "text": "root@debian:~/ipv4# make\ngit pull\nfatal: 不是一个 git 仓库（或者任何父目录）：.git\n"
             "make: *** [Makefile:2：produce] 错误 128"},
    {"id": "ctapipe-9", "url": "https://github.com/cta-observatory/ctapipe/issues/9",
     "kind": "task", "label": "fatal",
     "text": "Checking connectivity... done.\n"
             "fatal: reference is not a tree: b5e07c6c1591d253cd45fadcded8610f60cb682a\n"
             "Unable to checkout 'b5e07c6c1591d253cd45fadcded8610f60cb682a' in submodule path 'ctapipe-extra'\n"
             "make: *** [init] Error 1"},

    {"id": "signac-flow-517", "url": "https://github.com/glotzerlab/signac-flow/issues/517",
     "kind": "task", "label": "fatal",
     "text": "sbatch: error: This does not look like a batch script.  The first\n"
             "sbatch: error: line must start with #! followed by the path to an interpreter.\n"
             "sbatch: error: For instance: #!/bin/sh"},
    {"id": "litex-buildenv-151", "url": "https://github.com/timvideos/litex-buildenv/issues/151",
     "kind": "task", "label": "fatal",
     "text": "Successfully installed hdmi2usb.modeswitch-0.0.1.post43\n"
             "hdmi2usb.modeswitch found at v0.0.1.post43\n\n"
             "Updating git config\n-----------------------\n"
             "fatal: not in a git directory"},
    {"id": "ntopng-1008", "url": "https://github.com/ntop/ntopng/issues/1008",
     "kind": "task", "label": "fatal",
     "text": "E: The repository 'http://packages.ntop.org/apt/18.1 x64/ Release' does not have a Release file.\n"
             "N: Updating from such a repository can't be done securely, and is therefore disabled by default.\n"
             "N: See apt-secure(8) manpage for repository creation and user configuration details.\n"
             "E: The repository 'http://packages.ntop.org/apt/18.1 all/ Release' does not have a Release file.\n"
             "N: Updating from such a repository can't be done securely, and is therefore disabled by default.\n"
             "N: See apt-secure(8) manpage for repository creation and user configuration details."},

    # === look-alikes: the same shapes, and the program (or the script around it) went on ====
    {"id": "sdsc-si-55", "url": "https://github.com/sdsc/sdsc-summer-institute-2019/issues/55",
     "kind": "task", "label": "warning",
     "text": "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation\n"
             "Submitted batch job 3310344\nSubmitted batch job 3310347"},
    {"id": "turicreate-3383", "url": "https://github.com/apple/turicreate/issues/3383",
     "kind": "task", "label": "warning", "note": "backticks removed",
     "text": "Installing collected packages: cytoolz\n"
             "    Running setup.py install for cytoolz ... done\n"
             "ERROR: pip's dependency resolver does not currently take into account all the packages that are "
             "installed. This behaviour is the source of the following dependency conflicts.\n"
             "eth-account 0.5.6 requires bitarray<1.3.0,>=1.2.1, which is not installed.\n"
             "eth-abi 2.1.1 requires parsimonious<0.9.0,>=0.8.0, which is not installed.\n"
             "Successfully installed cytoolz"},
    {"id": "guitaramp-8", "url": "https://github.com/AidaDSP/Automated-GuitarAmpModelling/issues/8",
     "kind": "task", "label": "warning",
     "text": "Installing collected packages: tensorboard, tensorflow\n"
             "ERROR: pip's dependency resolver does not currently take into account all the packages that are "
             "installed. This behaviour is the source of the following dependency conflicts.\n"
             "tf-keras 2.17.0 requires tensorflow<2.18,>=2.17, but you have tensorflow 2.11.0 which is incompatible.\n"
             "Successfully installed tensorboard-2.11.0 tensorflow-2.11.0"},
    {"id": "uberduck-97", "url": "https://github.com/uberduck-ai/uberduck-ml-dev/issues/97",
     "kind": "task", "label": "warning",
     "text": "ERROR: pip's dependency resolver does not currently take into account all the packages that are "
             "installed. This behaviour is the source of the following dependency conflicts.\n"
             "torchvision 0.13.1+cu113 requires torch==1.12.1, but you have torch 1.9.0 which is incompatible.\n"
             "torchtext 0.13.1 requires torch==1.12.1, but you have torch 1.9.0 which is incompatible.\n"
             "torchaudio 0.12.1+cu113 requires torch==1.12.1, but you have torch 1.9.0 which is incompatible."},
    {"id": "ktrain-237", "url": "https://github.com/amaiya/ktrain/issues/237",
     "kind": "task", "label": "warning",
     "text": "ERROR: After October 2020 you may experience errors when installing or updating packages. This is "
             "because pip will change the way that it resolves dependency conflicts.\n\n"
             "We recommend you use --use-feature=2020-resolver to test your packages with the new resolver before "
             "it becomes the default.\n\n"
             "google-auth 1.20.1 requires setuptools>=40.3.0, but you'll have setuptools 39.0.1 which is incompatible.\n"
             "tensorboard 2.1.1 requires setuptools>=41.0.0, but you'll have setuptools 39.0.1 which is incompatible."},
    {"id": "setuptools-git-version-6", "url": "https://github.com/pyfidelity/setuptools-git-version/issues/6",
     "kind": "task", "label": "warning", "note": "pip's four-space indentation of the command's output removed",
     "text": "Installed /tmp/pip-build-9e50qgrb/xxx-frontend/.eggs/setuptools_git_version-1.0.3-py3.5.egg\n"
             "fatal: Not a git repository (or any of the parent directories): .git\n"
             "running egg_info\n"
             "creating pip-egg-info/xxx_frontend.egg-info\n"
             "writing pip-egg-info/xxx_frontend.egg-info/PKG-INFO\n"
             "writing entry points to pip-egg-info/xxx_frontend.egg-info/entry_points.txt"},
    {"id": "mailcore-21", "url": "https://github.com/MailCore/MailCore/issues/21",
     "kind": "task", "label": "warning",
     "text": "fatal: reference is not a tree: ec41248411126096584f0afd34f2b1844f51bca7\n"
             "Cloning into 'libetpan'...\n"
             "remote: Counting objects: 1025, done.\n"
             "remote: Compressing objects: 100% (412/412), done.\n"
             "remote: Total 1025 (delta 644), reused 969 (delta 597)\n"
             "Receiving objects: 100% (1025/1025), 1.06 MiB | 559 KiB/s, done.\n"
             "Resolving deltas: 100% (644/644), done.\n"
             "Submodule path 'libetpan': checked out 'ed9109b1d4928cc9067fbcf375b3b0f8420b3e9a'"},
    {"id": "maven-archetypes-3", "url": "https://github.com/rieckpil/custom-maven-archetypes/pull/3",
     "kind": "task", "label": "benign",
     "text": "Error: No such container: jsf-demop\n"
             "1f6041aa4349f3414d18f6965eac363b0726d33808a4fb5f617cf966beb9a08f"},
    {"id": "moby-10537", "url": "https://github.com/moby/moby/issues/10537",
     "kind": "service", "label": "warning", "note": "the tab indenting each line removed",
     "text": "INFO[67290] +job create()\n"
             "No such image: icinga2:latest (tag: latest)\n"
             "INFO[67290] -job create() = ERR (1)\n"
             "ERRO[67290] Handler for POST /containers/create returned error: No such image: icinga2:latest (tag: latest)\n"
             "ERRO[67290] HTTP Error: statusCode=404 No such image: icinga2:latest (tag: latest)\n"
             "INFO[67290] POST /v1.16/images/create?fromImage=icinga2&tag=latest\n"
             "INFO[67290] +job pull(icinga2, latest)"},
    {"id": "kubectl-1169", "url": "https://github.com/kubernetes/kubectl/issues/1169",
     "kind": "service", "label": "warning",
     "text": "Forwarding from 127.0.0.1:5432 -> 5432\n"
             "Forwarding from [::1]:5432 -> 5432\n"
             "Handling connection for 5432\n"
             "E0125 16:35:32.441184   17073 portforward.go:400] an error occurred forwarding 5432 -> 5432: error "
             "forwarding port 5432 to pod b4b99448ef949d8f4a2f7960edf5d25eaf0e3c7b82bb1fcd525c7f30ad2830d7, uid : "
             "exit status 1: 2022/01/25 15:35:32 socat[45088] E connect(5, AF=2 127.0.0.1:5432, 16): Connection refused\n"
             "Handling connection for 5432"},
    {"id": "cosmos-783", "url": "https://github.com/OpenC3/cosmos/issues/783",
     "kind": "task", "label": "benign", "note": "backticks removed; the thread: 'Everything seems to go fine after "
                                                 "that message' (the script goes on; the excerpt holds only the line)",
     "text": "Error response from daemon: network with name openc3-cosmos-network already exists"},
    {"id": "jetstream-18", "url": "https://github.com/tgen/jetstream/issues/18",
     "kind": "task", "label": "benign",
     "text": "$ SBATCH_EXCLUSIVE=true sbatch --wrap 'hostname'\n"
             "sbatch: error: \"SBATCH_EXCLUSIVE=true\" -- invalid value, ignoring...\n"
             "Submitted batch job 1152535"},
]
