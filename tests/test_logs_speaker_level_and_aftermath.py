"""Who is talking, at what level, and what the process does next.

Each change is structural (a header shape, a level, the shape of a record, the
line that follows) and has counter-examples that must stay as they were. The
lines are real, from the public threads named beside them; the counter-examples
are the same lines with the telling part changed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from eagle3tui.logs.anatomy import INTERPRETER_SOURCE, shape
from eagle3tui.logs.monitor import StageLogMonitor
from eagle3tui.logs.progress import parse_progress
from tests.conftest import log_events


# -- a library's or the interpreter's own verdict in the line's prefix -----

# https://github.com/ofiwg/libfabric/issues/975
LIBFABRIC_975 = [
    "libibverbs: Warning: no userspace device-specific driver found for /sys/class/infiniband_verbs/uverbs0",
    "librdmacm: Fatal: no RDMA devices found",
    "fi_getinfo(): 173, -19 (No such device)",
]


def test_a_library_prefix_before_fatal_is_the_library_giving_up(tmp_path: Path) -> None:
    assert shape(LIBFABRIC_975[1]).level == "fatal"
    assert "fatal-level" in log_events(tmp_path, LIBFABRIC_975).get("fatal", set())
    # The same prefix before Warning stays an optional driver that is absent.
    assert log_events(tmp_path, LIBFABRIC_975[:1]) == {"benign": {"optional-missing"}}


@pytest.mark.parametrize(
    "line",
    [
        # https://github.com/voicepaw/so-vits-svc-fork/issues/501
        (
            "C:\\Users\\Ivs\\.conda\\envs\\svc\\python.exe: Error while finding module specification for '__main__' "
            "(ValueError: __main__.__spec__ is None)"
        ),
        "/usr/bin/python3: can't open file '/work/train.py': [Errno 2] No such file or directory",
        "python3: No module named vllm.entrypoints.openai.api_serve",
    ],
)
def test_the_interpreter_saying_it_cannot_run_the_program_is_fatal(tmp_path: Path, line: str) -> None:
    assert shape(line).source == INTERPRETER_SOURCE
    assert log_events(tmp_path, [line]) == {"fatal": {"interpreter-failed"}}


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # A library's optional import, not the interpreter's: still harmless.
        ("No module named 'apex'", {"benign": {"optional-missing"}}),
        # The interpreter's name in an ordinary line is no failure.
        ("python: 3.10.12", {}),
        ("Using python3: /usr/bin/python3.10", {}),
    ],
)
def test_lines_that_only_name_the_interpreter_stay_as_they_were(
    tmp_path: Path, line: str, expected: dict[str, set[str]]
) -> None:
    assert shape(line).source != INTERPRETER_SOURCE
    assert log_events(tmp_path, [line]) == expected


# -- counter shapes of progress --------------------------------------------

# https://github.com/ollama/ollama/issues/1806: "ollama run --verbose" figures.
OLLAMA_1806 = ["prompt eval rate:     53.77 tokens/s", "eval count:           120 token(s)", "eval rate:            24.61 tokens/s"]
# https://github.com/salesforce/TransmogrifAI/issues/370: distributed xgboost rounds.
XGB_ROUND = (
    "[INFO] [07/22/2019 17:10:30.177] [RabitTracker-akka.actor.default-dispatcher-15] "
    "[akka://RabitTracker/user/Handler] [64]        train-rmse:1.665028"
)


def test_a_rate_that_ends_the_line_is_progress(tmp_path: Path) -> None:
    assert log_events(tmp_path, OLLAMA_1806) == {"progress": {"progress"}}
    # A line without a rate is no progress: the marker is the "/s" at the end.
    assert log_events(tmp_path, ["eval count:           120 token(s)"]) == {}


def test_a_boosting_rounds_evaluation_record_is_progress(tmp_path: Path) -> None:
    upd = parse_progress("[64]        train-rmse:1.665028 valid-rmse:1.7")
    assert upd is not None and upd.n == 64 and upd.unit == "round"
    assert upd.metrics == {"train-rmse": 1.665028, "valid-rmse": 1.7}
    assert log_events(tmp_path, [XGB_ROUND]) == {"progress": {"progress"}}


@pytest.mark.parametrize(
    "line", ["[0] port: 8080 bound", "[12] host: gpu-01", "[3] loss: 0.5 but more words follow here"]
)
def test_a_bracketed_number_before_other_text_is_not_a_round_record(line: str) -> None:
    upd = parse_progress(line)
    assert upd is None or upd.unit != "round"


# -- the level in the header brings a line to the judge ---------------------

# https://github.com/ray-project/ray/issues/43091 and ray-project/ray/issues/24917
RAY_UNKNOWN_SETTING = [
    "[2024-02-11 10:40:50,082 W 3133636 3133636] logging.cc:228: Unrecognized setting of RAY_BACKEND_LOG_LEVEL=0",
    (
        "[2024-02-11 10:40:50,082 I 3133636 3133636] logging.cc:230: Set ray log level from environment variable "
        "RAY_BACKEND_LOG_LEVEL to 0"
    ),
]
GRPC_FORK = (
    "E0518 11:58:19.406614241  152858 fork_posix.cc:76]           Other threads are currently calling into gRPC, "
    "skipping fork() handlers"
)


def test_a_warning_or_error_level_in_the_header_is_judged_by_what_it_says(tmp_path: Path) -> None:
    assert log_events(tmp_path, RAY_UNKNOWN_SETTING) == {"benign": {"fallback"}}
    assert log_events(tmp_path, [GRPC_FORK]) == {"benign": {"fallback"}}
    # The same headers over a real failure stay a failure worth reading.
    failed = GRPC_FORK.replace("Other threads are currently calling into gRPC, skipping fork() handlers",
                               "Connect failed: Connection refused")
    assert log_events(tmp_path, [failed]) == {"warning": {"error-line"}}
    # An I-level Ray line stays plain information.
    assert log_events(tmp_path, RAY_UNKNOWN_SETTING[1:]) == {}


# -- an OS call's failure, then what the process does next ------------------

# https://github.com/omega8cc/boa/issues/589: a maintenance script's find fails,
# the script carries on.
BOA_589 = [
    "INFO: Fixing permissions in the /data/all tree...",
    "find: `/var/backups/jetty*': No such file or directory",
    "INFO: Redis server will be restarted in 5 minutes",
]


def test_an_os_error_the_process_carries_on_after_is_harmless(tmp_path: Path) -> None:
    assert log_events(tmp_path, BOA_589) == {"benign": {"error-went-on"}}
    # Alone it is an error worth reading; followed by the process ending, it ended it.
    assert log_events(tmp_path, BOA_589[:2]) == {"warning": {"error-line"}}
    assert log_events(tmp_path, [*BOA_589[:2], "Aborting: stopping the job"]).get("fatal") == {"error-then-ended"}
    # A wrapped line's tail (https://github.com/bytedance/byteps/issues/313) is no error of its own.
    assert log_events(tmp_path, [": No such file or directory"]) == {}


# -- a warning that reports a failure waits for what comes next -------------

# https://github.com/nextcloud-snap/nextcloud-snap/issues/1836: redis warns, then loads and serves.
REDIS_1836 = [
    (
        "1141:M 09 Sep 2021 14:12:06.299 # WARNING overcommit_memory is set to 0! Background save may fail under low "
        "memory condition."
    ),
    "1141:M 09 Sep 2021 14:12:06.329 * Loading RDB produced by version 6.0.15",
    "1141:M 09 Sep 2021 14:12:06.742 * The server is now ready to accept connections at /tmp/sockets/redis.sock",
]


def test_an_error_looking_warning_the_server_goes_on_after_is_harmless(tmp_path: Path) -> None:
    assert log_events(tmp_path, REDIS_1836, "service") == {"benign": {"error-went-on"}}
    assert log_events(tmp_path, REDIS_1836[:1], "service") == {"warning": {"python-warning"}}


def _append(path: Path, *lines: str) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)


def test_live_an_error_looking_warning_is_held_and_a_plain_one_is_not(tmp_path: Path) -> None:
    log = tmp_path / "live.log"
    _append(log, REDIS_1836[0])
    mon = StageLogMonitor(log, stage_kind="service", started_at=0.0, went_on_s=10.0)
    assert mon.poll(now=1.0) == []
    assert [e.rule for e in mon.held] == ["python-warning"]
    _append(log, *REDIS_1836[1:])
    got = mon.poll(now=1.5)
    assert [(e.kind, e.rule, e.line) for e in got] == [("benign", "error-went-on", 1)]
    # A warning with nothing error-looking in it is reported in the same read (a cast is a
    # decision notice since round notices5: harmless, and not held either).
    plain = tmp_path / "plain.log"
    _append(plain, "WARNING 02-22 00:33:00 [config.py:100] Casting torch.bfloat16 to torch.float16.")
    mon = StageLogMonitor(plain, stage_kind="service", started_at=0.0)
    assert [(e.kind, e.rule) for e in mon.poll(now=1.0)] == [("benign", "decision-notice")]


# -- a component's upper-case level, and what it says it did ---------------

# https://github.com/ultralytics/yolov5/issues/10314: the dataset scan drops duplicates and goes on.
YOLO_10314 = "train: WARNING ⚠️ /data/coco/images/train2017/000000099844.jpg: 2 duplicate labels removed"


def test_a_warning_that_says_what_it_discarded_is_harmless(tmp_path: Path) -> None:
    assert shape(YOLO_10314).level == "warning"
    assert log_events(tmp_path, [YOLO_10314]) == {"benign": {"fallback"}}
    # The same component warning about something it did not handle stays a warning.
    kept = "train: WARNING ⚠️ Cache directory /data/coco is not writeable, cache not saved."
    assert log_events(tmp_path, [kept]) == {"warning": {"python-warning"}}


# -- a setting named like a metric ------------------------------------------

# https://github.com/facebookresearch/metaseq/pull/314: the fp16 loss scaler's settings.
METASEQ_SCALER = "2022-08-20 23:35:25 | INFO | metaseq.optim.dynamic_loss_scaler | *** SCALE_WINDOW: 256, loss scale: 4 ***"
# https://github.com/bigscience-workshop/Megatron-DeepSpeed/issues/396: a training line that also shows it.
MEGATRON_ITER = (
    " iteration     5427/  250000 | consumed samples:        43416 | elapsed time per iteration (ms): 4225.8 | "
    "learning rate: 2.999E-04 | global batch size:     8 | loss scale: 1.0 | grad norm: 1.2 |"
)


def test_the_loss_scale_is_a_setting_not_a_loss(tmp_path: Path) -> None:
    assert parse_progress(METASEQ_SCALER.split(" | ", 3)[3]) is None
    assert log_events(tmp_path, [METASEQ_SCALER]) == {}
    upd = parse_progress(MEGATRON_ITER)
    assert upd is not None and upd.n == 5427 and upd.total == 250000
    figures = parse_progress("learning rate: 2.999E-04 | loss scale: 1.0 | grad norm: 1.2 |")
    assert figures is not None and set(figures.metrics) == {"learning rate", "grad norm"}
