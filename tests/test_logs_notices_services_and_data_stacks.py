"""Harmless notices of services and data stacks (Postgres, Docker, Jupyter, Keras/TensorFlow, MLflow, uvicorn, kernel modules).

Same method as tests/test_logs_notice_catalog.py: each builtin rule after the comment "Notice
catalog" in eagle3tui/logs/builtin_rules.toml (rules named in NOTICES) is checked on real lines posted in
public threads (URLs beside each case) where the notice is followed by normal work or a
maintainer calls it harmless; where a notice is about something that can really fail, the
real failure is checked to stay fatal, and look-alikes that are not the notice are checked
not to be taken for it. The rules were written from public threads, not from the corpus; one
tune row carries one of the notices and is checked too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import corpus_tune_row, log_verdict


# (rule, real line(s) as posted, the threads they were posted in)
NOTICES = [
    (
        "tf-layout-optimizer-notice",
        "2023-08-09 13:10:29.937931: E tensorflow/core/grappler/optimizers/meta_optimizer.cc:954] layout failed: "
        "INVALID_ARGUMENT: Size of values 0 does not match size of permutation 4 @ fanin shape insequential_2/"
        "dropout/dropout/SelectV2-2-TransposeNHWCToNCHW-LayoutOptimizer",
        # "the fit method runs successfully even with this error popping up in the logs"
        "https://github.com/tensorflow/tensorflow/issues/61324 https://github.com/tensorflow/tensorflow/issues/41949",
    ),
    (
        "tf-layout-optimizer-notice",
        "E0000 00:00:1755238054.678694  705922 meta_optimizer.cc:967] layout failed: INVALID_ARGUMENT: Size of "
        "values 0 does not match size of permutation 4 @ fanin shape insequential_2/dropout_1/stateless_dropout/"
        "SelectV2-2-TransposeNHWCToNCHW-LayoutOptimizer",
        # "Although the GAN continues to run"
        "https://github.com/tensorflow/tensorflow/issues/98985",
    ),
    (
        "tf-layout-optimizer-notice",
        "E tensorflow/core/grappler/optimizers/meta_optimizer.cc:502] layout failed: Invalid argument: size of "
        "values 0 does not match size of permutation 4.",
        "https://github.com/tensorflow/tensorflow/issues/34499",
    ),
    (
        "tf-end-of-sequence-notice",
        "\n".join([
            "2024-05-23 10:15:02.410200: W tensorflow/core/framework/local_rendezvous.cc:404] Local rendezvous is "
            "aborting with status: OUT_OF_RANGE: End of sequence",
            "\t [[{{node IteratorGetNext}}]]",
            "927/927 ━━━━━━━━━━━━━━━━━━━━ 2s 2ms/step - loss: 1.0546",
        ]),
        # the epoch completes after it; "it seems to be working though and just act as a warning"; the fix
        # that removes the log says the program flow is correct (https://github.com/tensorflow/tensorflow/pull/64679)
        "https://github.com/tensorflow/tensorflow/issues/62963 https://github.com/tensorflow/tensorflow/issues/68593",
    ),
    (
        "xla-ptxas-driver-notice",
        "\n".join([
            "2024-02-15 14:18:20.201828: W external/xla/xla/service/gpu/nvptx_compiler.cc:744] The NVIDIA driver's "
            "CUDA version is 12.2 which is older than the ptxas CUDA version (12.3.107). Because the driver is older "
            "than the ptxas version, XLA is disabling parallel compilation, which may slow down compilation. You "
            "should update your NVIDIA driver or use the NVIDIA-provided CUDA forward compatibility packages.",
            "Array(1, dtype=int32, weak_type=True)",
        ]),
        # the computation returns its result right after it; "While this is not a blocking issue"
        "https://github.com/jax-ml/jax/issues/19821 https://github.com/google/brax/issues/488",
    ),
    (
        "xla-ptxas-driver-notice",
        "The NVIDIA driver's CUDA version is 12.4 which is older than the PTX compiler version (12.6.85). Because "
        "the driver is older than the PTX compiler version, XLA is disabling parallel compilation, which may slow "
        "down compilation. You should update your NVIDIA driver or use the NVIDIA-provided CUDA forward "
        "compatibility packages.",
        "https://github.com/jax-ml/jax/issues/25718 https://github.com/YoshitakaMo/localcolabfold/issues/126",
    ),
    (
        "keras-compiled-metrics-notice",
        "\n".join([
            ">>>> Saving latest basic model to: checkpoints/ghostnetv1_w1.3_s2_basic_model_latest.h5",
            "WARNING:tensorflow:Compiled the loaded model, but the compiled metrics have yet to be built. "
            "`model.compile_metrics` will be empty until you train or evaluate the model.",
        ]),
        # the maintainer: "I had the same warning" in all experiments; a save goes on ("Assets written")
        "https://github.com/HamadYA/GhostFaceNets/issues/41 https://github.com/OlafenwaMoses/ImageAI/issues/810",
    ),
    (
        "keras-compiled-metrics-notice",
        "WARNING:absl:Compiled the loaded model, but the compiled metrics have yet to be built. "
        "`model.compile_metrics` will be empty until you train or evaluate the model.",
        "https://github.com/AntoninLeroy/wine_label_reader_toolkit/issues/3 "
        "https://github.com/stratosphereips/StratosphereLinuxIPS/issues/851",
    ),
    (
        "postgres-starting-up-notice",
        "\n".join(["FATAL:  the database system is starting up"] * 3),
        # a maintainer: "it's a replay of the WAL logs. It should clear up when it's finished applying"; during a
        # container's first start it "floods the container logs with errors, and makes it look like the app is
        # broken"
        "https://github.com/patroni/patroni/issues/402 https://github.com/OpenRailAssociation/osrd/pull/4916",
    ),
    (
        "postgres-starting-up-notice",
        "Jan 25 11:46:27 ip-10-21-1-69.ap-southeast-2.compute.internal sh[6467]: 2016-01-25 11:46:27 UTC FATAL:  "
        "the database system is starting up",
        "https://github.com/deis/deis/issues/4797 https://github.com/ddev/ddev/issues/3617",
    ),
    (
        "uvicorn-invalid-request-notice",
        "\n".join([
            "INFO:     Uvicorn running on http://127.0.0.1:8403 (Press CTRL+C to quit)",
            "WARNING:  Invalid HTTP request received.",
            '2025-03-26 15:41:57.733 | INFO     | provision.api.auth:auth_course_request:15 - <Request GET '
            '/sso/customer/auth>',
            'INFO:     127.0.0.1:50843 - "GET /sso/customer/auth HTTP/1.1" 200 OK',
        ]),
        # the next request is served; maintainers: "not critical at all", "You've got a broken client. The
        # server's doing the right thing here."
        "https://github.com/Neoteroi/BlackSheep/issues/530 https://github.com/Kludex/uvicorn/issues/1296 "
        "https://github.com/Kludex/uvicorn/issues/1093",
    ),
    (
        "uvicorn-invalid-request-notice",
        "2019-11-05T06:17:56.459601437Z [2019-11-05 06:17:56 +0000] [16] [WARNING] Invalid HTTP request received.",
        "https://github.com/fastapi/fastapi/issues/680",
    ),
    (
        "docker-swap-limit-notice",
        "\n".join([
            "Live Restore Enabled: false",
            "",
            "WARNING: No swap limit support",
        ]),
        # the end of `docker info`; a Docker maintainer calls its appearance on cgroup v2 hosts a regression to fix
        "https://github.com/moby/moby/issues/43646 https://github.com/docker/cli/issues/5776 "
        "https://github.com/boot2docker/boot2docker/issues/24",
    ),
    (
        "clip-projection-missing-notice",
        "WARNING:root:clip missing: ['clip_l.text_projection', 'clip_l.logit_scale']",
        # "images still generate", printed on every model load; a maintainer of a ComfyUI loader: the clip_l file
        # everyone uses lacks that weight; "it's a logging message, so it can be ignored"
        "https://github.com/Panchovix/stable-diffusion-webui-reForge/issues/336 "
        "https://github.com/city96/ComfyUI-GGUF/issues/69 https://github.com/Comfy-Org/ComfyUI/issues/3161",
    ),
    (
        "kernel-module-unsigned-notice",
        "\n".join([
            "[    2.829492] nvidia: loading out-of-tree module taints kernel.",
            "[    2.829501] nvidia: module license 'NVIDIA' taints kernel.",
            "[    2.846803] nvidia: module verification failed: signature and/or required key missing - tainting kernel",
            "[    2.961803] nvidia-nvlink: Nvlink Core is being initialized, major device number 239",
            "[    3.011519] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  525.147.05  Wed Oct 25 20:27:35 UTC 2023",
        ]),
        # the driver goes on loading; maintainers: "the module is loaded and works", "not really a big deal",
        # "not really a warning so much as just an informational message"
        "https://github.com/NVIDIA/k8s-device-plugin/issues/480 https://github.com/davidjo/snd_hda_macbookpro/issues/33 "
        "https://github.com/mripard/sunxi-mali/issues/86 https://github.com/alexforencich/verilog-pcie/issues/56",
    ),
    (
        "supervisor-include-notice",
        "\n".join([
            '2013-10-29 11:26:59,407 WARN Included extra file "/etc/supervisor/conf.d/queue.conf" during parsing',
            "2013-10-29 11:26:59,532 INFO RPC interface 'supervisor' initialized",
            "2013-10-29 11:26:59,541 INFO supervisord started with pid 396",
            "2013-10-29 11:27:00,553 INFO spawned: 'queue' with pid 399",
            "2013-10-29 11:27:02,056 INFO success: queue entered RUNNING state, process has stayed up for > than 1 "
            "seconds (startsecs)",
        ]),
        # the program is spawned and runs; the maintainers moved the message to INFO ("nothing wrong is happening")
        "https://github.com/Supervisor/supervisor/issues/321 https://github.com/Supervisor/supervisor/issues/272 "
        "https://github.com/Supervisor/supervisor/pull/347",
    ),
    (
        "mlflow-signature-notice",
        "2024/02/19 08:56:52 WARNING mlflow.models.model: Model logged without a signature. Signatures will be "
        "required for upcoming model registry features as they validate model inputs and denote the expected schema "
        "of model outputs. Please visit https://www.mlflow.org/docs/2.10.3/models.html#set-signature-on-logged-model "
        "for instructions on setting a model signature on your logged model.",
        # MLflow's maintainers: printed even when the model was logged with its fallback signature (a "false
        # warning"), later downgraded to info; "probably ok" to leave out
        "https://github.com/mlflow/mlflow/pull/11181 https://github.com/mlflow/mlflow/pull/19153 "
        "https://github.com/lincc-frameworks/hyrax/issues/189",
    ),
    (
        "tf-allocator-not-a-failure",
        "\n".join([
            " 15/100 [===>..........................] - ETA: 3:55 - loss: 1.6979e-05 - binary_accuracy: 0.0661 - "
            "mean_squared_error: 8.2105e-082018-11-25 19:04:59.501703: W tensorflow/core/common_runtime/"
            "bfc_allocator.cc:215] Allocator (GPU_0_bfc) ran out of memory trying to allocate 217.69MiB. The caller "
            "indicates that this is not a failure, but may mean that there could be performance gains if more memory "
            "were available.",
            "",
            " 16/100 [===>..........................] - ETA: 4:00 - loss: 1.6821e-05 - binary_accuracy: 0.0661 - "
            "mean_squared_error: 8.1152e-08",
        ]),
        # training goes on step after step between the notices
        "https://github.com/tensorflow/tensorflow/issues/23953 https://github.com/tensorflow/tensorflow/issues/43546",
    ),
    (
        "tf-allocator-not-a-failure",
        "2019-08-18 03:55:10.593121: W tensorflow/core/common_runtime/bfc_allocator.cc:237] Allocator (GPU_0_bfc) "
        "ran out of memory trying to allocate 2.14GiB with freed_by_count=0. The caller indicates that this is not a "
        "failure, but may mean that there could be performance gains if more memory were available.",
        "https://github.com/kbardool/Keras-frcnn/issues/36",
    ),
    (
        "tf-allocator-not-a-failure",
        "W tensorflow/core/common_runtime/bfc_allocator.cc:217] Ran out of memory trying to allocate 1.09GiB. The "
        "caller indicates that this is not a failure, but may mean that there could be performance gains if more "
        "memory is available.",
        "https://github.com/keras-team/keras/issues/5326",
    ),
    (
        "jupyter-comm-notice",
        "\n".join([
            "[IPKernelApp] ERROR | No such comm target registered: jupyter.widget.control",
            "[IPKernelApp] WARNING | No such comm: 8442000c-e99a-4ec4-854a-a3fc4580577f",
        ]),
        # an ipywidgets maintainer: "This message is harmless ... ipywidgets has a fallback"; an IPython maintainer:
        # "you can safely ignore it"
        "https://github.com/jupyter-widgets/ipywidgets/issues/3525 https://github.com/jupyter-widgets/ipywidgets/"
        "issues/3454 https://github.com/ipython/ipython/issues/10188",
    ),
]


@pytest.mark.parametrize(("rule", "text", "urls"), NOTICES, ids=[f"{n[0]}-{i}" for i, n in enumerate(NOTICES)])
def test_a_service_or_data_stack_notice_is_benign(tmp_path: Path, rule: str, text: str, urls: str) -> None:
    assert urls.startswith("https://github.com/")
    top, rules = log_verdict(tmp_path, text)
    assert (top, rule in rules) == ("benign", True), (top, rules)


def test_the_server_notices_are_benign_in_a_service_too(tmp_path: Path) -> None:
    # PostgreSQL, uvicorn and ComfyUI run as services; the stage kind must not change their notices.
    for rule, text, _ in NOTICES:
        if rule in ("postgres-starting-up-notice", "uvicorn-invalid-request-notice", "clip-projection-missing-notice"):
            top, rules = log_verdict(tmp_path, text, kind="service")
            assert (top, rule in rules) == ("benign", True), (text, top, rules)


def test_the_tune_row_with_a_service_notice_is_benign(tmp_path: Path) -> None:
    # Forge prints the notice on every model load: https://github.com/Panchovix/stable-diffusion-webui-reForge/issues/336
    row = corpus_tune_row("stable-diffusion-webui-reForge-336-1")
    top, rules = log_verdict(tmp_path, row["text"], kind=row["kind"])
    assert (top, rules) == ("benign", {"clip-projection-missing-notice"}), (top, rules)


def test_the_bare_clip_notice_still_reads_as_info(tmp_path: Path) -> None:
    # ComfyUI prints it without a level; that already read as info, so the rule leaves it alone (the image is
    # generated after it: https://github.com/city96/ComfyUI-GGUF/issues/69, https://github.com/Comfy-Org/ComfyUI/issues/3161)
    top, rules = log_verdict(tmp_path, "\n".join([
        "got prompt",
        "clip missing: ['text_projection.weight']",
        "Requested to load FluxClipModel_",
        "Loading 1 new model",
        "Prompt executed in 125.33 seconds",
    ]))
    assert top == "info", (top, rules)


def test_a_postgres_server_that_cannot_start_is_still_fatal(tmp_path: Path) -> None:
    # The server's own FATAL about itself, not about a client's connection:
    # https://github.com/PostgresApp/PostgresApp/issues/675 and https://github.com/cytopia/devilbox/issues/433
    for text in (
        "2022-07-24 09:55:13.116 IST [1403] FATAL:  data directory \"/Users/sharukh/Library/Application Support/"
        "Postgres/var-14\" has invalid permissions\n"
        "2022-07-24 09:55:13.116 IST [1403] DETAIL:  Permissions should be u=rwx (0700) or u=rwx,g=rx (0750).",
        "FATAL:  data directory \"/var/lib/postgresql/data/pgdata\" has wrong ownership\n"
        "HINT:  The server must be started by the user that owns the data directory.",
    ):
        top, rules = log_verdict(tmp_path, text)
        assert top == "fatal" and "postgres-starting-up-notice" not in rules, (text, top, rules)


def test_a_client_quoting_the_postgres_notice_is_not_taken_for_it(tmp_path: Path) -> None:
    # psql's own failure quotes the server's words after "failed: "; the client's line is its own verdict:
    # https://github.com/ddev/ddev/issues/3617
    top, rules = log_verdict(
        tmp_path,
        'psql: error: connection to server at "localhost" (127.0.0.1), port 5432 failed: FATAL:  the database '
        "system is starting up",
    )
    assert "postgres-starting-up-notice" not in rules and top != "benign", (top, rules)


def test_a_raised_tensorflow_invalid_argument_is_still_fatal(tmp_path: Path) -> None:
    # The layout notice says INVALID_ARGUMENT too; a real one raised to Python ends the run:
    # https://github.com/keras-team/keras/issues/17258
    top, rules = log_verdict(tmp_path, "\n".join([
        "2023-08-09 13:10:29.937931: E tensorflow/core/grappler/optimizers/meta_optimizer.cc:954] layout failed: "
        "INVALID_ARGUMENT: Size of values 0 does not match size of permutation 4 @ fanin shape insequential_2/"
        "dropout/dropout/SelectV2-2-TransposeNHWCToNCHW-LayoutOptimizer",
        "Traceback (most recent call last):",
        '  File "train.py", line 3, in <module>',
        "    history = model.fit(x=X_train, validation_data=X_test,",
        "tensorflow.python.framework.errors_impl.InvalidArgumentError: Graph execution error:",
    ]))
    assert top == "fatal" and "tf-layout-optimizer-notice" not in rules, (top, rules)


def test_a_clip_file_missing_its_encoder_is_not_the_notice(tmp_path: Path) -> None:
    # Missing encoder weights mean the wrong file was loaded, not the harmless projection notice:
    # https://github.com/EvilBT/ComfyUI_SLK_joy_caption_two/issues/53
    top, rules = log_verdict(
        tmp_path,
        "2024-10-31 20:24:35,336 - root - WARNING - clip missing: ['encoder.block.0.layer.0.SelfAttention.q.weight', "
        "'encoder.block.0.layer.0.SelfAttention.k.weight', 'encoder.block.0.layer.0.SelfAttention.v.weight']",
    )
    assert "clip-projection-missing-notice" not in rules and top != "benign", (top, rules)


def test_a_docker_notice_with_more_after_it_is_not_the_swap_notice(tmp_path: Path) -> None:
    # The rule takes the swap line of `docker info` whole; docker run's memory-limit warning, which says the
    # limit is not what was asked, is left to the other rules: https://github.com/appcelerator-archive/amp/issues/1553
    top, rules = log_verdict(
        tmp_path,
        "WARNING: Your kernel does not support swap limit capabilities or the cgroup is not mounted. Memory limited "
        "without swap.",
    )
    assert "docker-swap-limit-notice" not in rules, (top, rules)


def test_a_kernel_module_that_secure_boot_refuses_is_not_the_taint_notice(tmp_path: Path) -> None:
    # The refused module is not loaded at all: https://github.com/hhfeuer/nvhda/issues/8 and
    # https://github.com/google/gasket-driver/issues/11
    for text in (
        "modprobe: ERROR: could not insert 'nvhda': Required key not available",
        "Apr 22 18:10:16 host systemd-modules-load[602]: Failed to insert module 'gasket': Key was rejected by service",
    ):
        top, rules = log_verdict(tmp_path, text)
        assert "kernel-module-unsigned-notice" not in rules and top != "benign", (text, top, rules)


def test_a_real_tensorflow_out_of_memory_is_still_fatal(tmp_path: Path) -> None:
    # After the allocator's notices, the real thing: https://github.com/zzw922cn/Automatic_Speech_Recognition/issues/78
    top, rules = log_verdict(tmp_path, "\n".join([
        "2019-08-18 03:55:10.593121: W tensorflow/core/common_runtime/bfc_allocator.cc:237] Allocator (GPU_0_bfc) "
        "ran out of memory trying to allocate 2.14GiB with freed_by_count=0. The caller indicates that this is not a "
        "failure, but may mean that there could be performance gains if more memory were available.",
        "2018-06-08 17:26:00.908130: W tensorflow/core/framework/op_kernel.cc:1202] OP_REQUIRES failed at "
        "tile_ops.cc:123 : Resource exhausted: OOM when allocating tensor with shape[16,1,892800,8,4,2,2] and type "
        "float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
        "Traceback (most recent call last):",
        '  File "lib/python3.5/site-packages/tensorflow/python/client/session.py", line 1361, in _do_call',
        "    return fn(*args)",
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
        "shape[16,1,892800,8,4,2,2] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator "
        "GPU_0_bfc",
    ]))
    assert top == "fatal" and "tf-allocator-not-a-failure" not in rules, (top, rules)
