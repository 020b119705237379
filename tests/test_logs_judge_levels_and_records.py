"""Round five of the structural judge: the program's own level, its own words, its records.

Each case is a shape that many programs print, taken from a public issue
thread (URL beside it; the corpus holds the excerpt) or written in the shape
those programs print where a counter-example is needed. Every verdict goes
through ``classify_log``, the path ``eagle3tui classify`` takes, so the
catch-up prefilter, the anatomy, the judge and the progress parser are
exercised together.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import log_verdict

from eagle3tui.logs.anatomy import shape
from eagle3tui.logs.progress import parse_progress


@pytest.mark.parametrize(
    ("line", "level", "body_starts"),
    [
        # https://github.com/docker-library/postgres/issues/363: PostgreSQL's zone, [pid], LEVEL and two blanks
        ('2017-10-30 18:49:49.589 UTC [42] LOG:  could not bind IPv6 address "::1": Cannot assign requested address',
         "info", "could not bind IPv6"),
        # https://github.com/PostgresApp/PostgresApp/issues/468: no stamp at all
        ("FATAL:  could not create any TCP/IP sockets", "fatal", "could not create"),
        ("HINT:  Is another postmaster already running on port 5432? If not, wait a few seconds and retry.", "info",
         "Is another postmaster"),
        # https://github.com/jemalloc/jemalloc/issues/2756: redis's pid:role, time and level mark
        ("1:M 09 Nov 2024 09:57:17.206 # Fatal: Can't initialize Background Jobs. Error message: Operation not "
         "permitted", "warning", "Fatal: Can't initialize"),
        ("1:C 09 Nov 2024 09:57:17.185 * oO0OoO0OoO0Oo Redis is starting oO0OoO0OoO0Oo", "info", "oO0Oo"),
        # one blank after the colon is not PostgreSQL's header
        ("LOG: something", None, "LOG: something"),
    ],
)
def test_the_header_of_postgresql_and_redis_gives_the_level(line: str, level: str | None, body_starts: str) -> None:
    sh = shape(line)
    assert sh.level == level
    assert sh.body.startswith(body_starts)


def test_a_failure_the_program_logs_at_its_info_level_is_harmless(tmp_path: Path) -> None:
    # https://github.com/CrunchyData/postgres-operator/issues/2765: no IPv6 loopback; it listens on IPv4
    text = (
        '2021-10-09 10:11:57.843 GMT [88] LOG:  listening on IPv4 address "127.0.0.1", port 5432\n'
        '2021-10-09 10:11:57.843 GMT [88] LOG:  could not bind IPv6 address "::1": Cannot assign requested address\n'
        "2021-10-09 10:11:57.843 GMT [88] HINT:  Is another postmaster already running on port 5432? If not, wait a "
        "few seconds and retry.\n"
        '2021-10-09 10:11:57.846 GMT [88] LOG:  listening on Unix socket "/tmp/.s.PGSQL.5432"'
    )
    assert log_verdict(tmp_path, text, "service") == ("benign", {"info-level-error"})
    # The same failure at the program's ERROR level is not harmless.
    error = '2021-10-09 10:11:57.843 GMT [88] ERROR:  could not bind IPv6 address "::1": Cannot assign requested address'
    assert log_verdict(tmp_path, error, "service")[0] == "warning"
    # Without any level the words alone decide nothing harmless either.
    assert log_verdict(tmp_path, "could not bind IPv6 address", "service")[0] == "info"


def test_postgres_that_cannot_listen_anywhere_is_fatal(tmp_path: Path) -> None:
    # https://github.com/bsdci/libioc/issues/150
    text = (
        "LOG:  could not bind IPv4 socket: Can't assign requested address\n"
        'WARNING:  could not create listen socket for "localhost"\n'
        "FATAL:  could not create any TCP/IP sockets\n"
        "LOG:  database system is shut down"
    )
    assert log_verdict(tmp_path, text, "service")[0] == "fatal"


def test_a_message_headed_fatal_is_fatal_whatever_the_header(tmp_path: Path) -> None:
    # https://github.com/jemalloc/jemalloc/issues/2756: redis logs it at its warning mark
    line = "1:M 09 Nov 2024 09:57:17.206 # Fatal: Can't initialize Background Jobs. Error message: Operation not permitted"
    assert log_verdict(tmp_path, line, "service") == ("fatal", {"fatal-level"})
    # redis's own start-up advice at the same mark stays below fatal
    advice = ("1141:M 09 Sep 2021 14:12:06.299 # WARNING overcommit_memory is set to 0! Background save may fail "
              "under low memory condition.")
    assert log_verdict(tmp_path, advice, "service")[0] != "fatal"
    # "fatal" inside a sentence is not the message's head
    assert log_verdict(tmp_path, "INFO: no fatal errors so far, continuing", "task")[0] != "fatal"


def test_an_overflow_the_program_reports_at_info_and_adapts_to_is_harmless(tmp_path: Path) -> None:
    # https://github.com/zai-org/CogVideo/issues/233: DeepSpeed's loss scaler, then training goes on
    text = (
        "[2024-09-11 17:52:11,320] [INFO] [checkpointing.py:546:forward] ----Profiling time in checkpointing False\n"
        "[2024-09-11 17:52:18,030] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping "
        "step. Attempted loss scale: 4294967296, reducing to 2147483648"
    )
    assert log_verdict(tmp_path, text) == ("benign", {"fp16-overflow-skip"})


@pytest.mark.parametrize(
    "text",
    [
        # https://github.com/cardiffnlp/tweetnlp/issues/14 (transformers' own notice)
        "Some weights of the model checkpoint at cardiffnlp/twitter-roberta-base-sentiment-latest were not used when "
        "initializing RobertaForSequenceClassification: ['roberta.pooler.dense.bias', 'roberta.pooler.dense.weight']\n"
        "- This IS expected if you are initializing RobertaForSequenceClassification from the checkpoint of a model "
        "trained on another task or with another architecture (e.g. initializing a BertForSequenceClassification "
        "model from a BertForPreTraining model).",
        # the same notice in a library's WARNING line
        "WARNING: Some weights were not used when initializing the model. This is expected when fine-tuning a "
        "pretrained checkpoint on another task.",
    ],
)
def test_the_program_saying_its_message_is_expected_makes_it_harmless(tmp_path: Path, text: str) -> None:
    assert log_verdict(tmp_path, text) == ("benign", {"says-ignore"})


def test_a_program_expecting_something_else_is_not_saying_it_is_harmless(tmp_path: Path) -> None:
    # "expected" about an input is an error message, not a reassurance
    line = "RuntimeError: Expected all tensors to be on the same device, but found at least two devices"
    assert log_verdict(tmp_path, line)[0] == "fatal"
    # https://github.com/tensorflow/tensorflow/issues/57103: at the program's INFO level, with no
    # error-looking word of its own, "Ignore above ..." stays plain information
    info = ("2022-08-11 14:21:29.345439: I tensorflow/stream_executor/cuda/cudart_stub.cc:29] Ignore above cudart "
            "dlerror if you do not have a GPU set up on your machine.")
    assert log_verdict(tmp_path, info)[0] == "info"


@pytest.mark.parametrize(
    ("line", "n"),
    [
        # https://github.com/facebookresearch/fairseq/issues/2493: a JSON record with quoted figures after the header
        ('2021-01-06 00:33:35 | INFO | train | {"epoch": 102, "train_loss": "486.917", "train_nll_loss": "4.52", '
         '"train_wps": "2935.2", "train_num_updates": "3154", "train_lr": "5e-05"}', 102.0),
        # https://github.com/facebookresearch/Detectron/issues/610: json_stats with the iteration counter
        ('json_stats: {"accuracy_cls": 1.000000, "eta": "0:21:51", "iter": 55080, "loss": 0.024404, '
         '"lr": 0.000025, "mb_qsize": 64, "mem": 3084, "time": 0.266505}', 55080.0),
    ],
)
def test_a_training_record_after_a_logger_header_is_progress(line: str, n: float) -> None:
    upd = parse_progress(line)
    assert upd is not None and upd.source == "trainer"
    assert upd.n == n
    assert "eta" not in upd.metrics  # a clock in quotes is not a figure


def test_a_json_payload_that_names_no_training_figure_is_not_progress() -> None:
    # ollama's JSON request log (https://github.com/ollama/ollama/issues/1365) names no loss, step or rate
    line = ('Dec 03 14:58:42 osm-server ollama[20658]: {"timestamp":1701615522,"level":"INFO","function":"main",'
            '"line":1746,"epoch":"x","port":54457}')
    assert parse_progress(line) is None
