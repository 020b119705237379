"""The level and source of common log headers (eagle3tui/logs/anatomy.py).

The judge decides first by the level a program gave a line and by its source;
when the anatomy cannot read a header the judge falls back to wording. Each row
below is a real line posted in the public thread named beside it (several are
rows of the corpus's tune split), with the level, the source and the start of the
message the anatomy must read from it. The counter-examples are real lines that
look like headers and are not (a progress bar, a Python repr, a metrics record
in JSON, the source line Python's warnings module echoes).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from eagle3tui.logs import anatomy
from eagle3tui.logs.anatomy import HEAD_CHARS, shape
from eagle3tui.logs.workers import split_worker
from tests.conftest import corpus_tune_row, log_verdict
from tests.regex_shapes import findings
from tests.regex_shapes import repeats as _repeats


def read(line: str) -> anatomy.Shape:
    """What the monitor reads: outer tags and worker prefixes peeled, then the header."""
    return shape(split_worker(line)[1])


# (url, line, level, source, start of the body)
HEADERS = [
    # gunicorn's own format (its CRITICAL: see test_gunicorn_critical_is_read_as_an_error)
    ("https://github.com/benoitc/gunicorn/issues/1507",
     "[2017-05-31 03:01:57 +0000] [1220] [DEBUG] Closing connection.", "debug", "", "Closing connection."),
    # after journald's prefix
    ("https://github.com/benoitc/gunicorn/issues/3233",
     "Jul 05 09:13:44 webapps wsgi.sh[3129704]: [2024-07-05 09:13:44 +0200] [3129704] [ERROR] Worker (pid:3129714) "
     "exited with code 1", "error", "", "Worker (pid:3129714) exited"),
    # logrus, text columns
    ("https://github.com/NVIDIA/nvidia-container-toolkit/issues/830",
     "ERRO[0000] error loading config: nvidia-container-cli.ldconfig value \"/usr/sbin/ldconfig\" is not host-relative "
     "(does not start with a '@')", "error", "", "error loading config:"),
    ("https://github.com/moby/moby/issues/29519",
     "DEBU[0000] containerd: read past events                  count=0", "debug", "", "containerd: read past events"),
    # logrus / Go slog / ollama, key=value: the message is msg's value, the source is source=
    ("https://github.com/moby/moby/issues/29519",
     'time="2016-12-19T11:18:58.313152014+08:00" level=debug msg="Trusting 1 certs" ', "debug", "", "Trusting 1 certs"),
    ("https://github.com/kubeflow/trainer/issues/2008",
     'time="2024-02-21T09:30:56Z" level=info msg="PyTorchJob=pytorch-simple, ReplicaType=Master expected=1, running=1, '
     'succeeded=0, failed=0, Replicas=1"', "info", "", "PyTorchJob=pytorch-simple"),
    ("https://github.com/ollama/ollama/issues/9960",
     'time=2025-03-24T14:07:22.155+08:00 level=WARN source=server.go:163 msg="server crash 8 - exit code 1 - respawning"',
     "warning", "server.go:163", "server crash 8 - exit code 1 - respawning"),
    ("https://github.com/ollama/ollama/issues/8689",
     'time=2025-02-03T05:52:46.700Z level=WARN source=sched.go:137 msg="mllama doesn\'t support parallel requests yet"',
     "warning", "sched.go:137", "mllama doesn't support parallel requests yet"),
    # ollama's older header: Go's standard logger, then the level
    ("https://github.com/ollama/ollama/issues/8983",
     '2025/02/10 09:48:03 routes.go:1187: INFO server config env="map[HTTPS_PROXY: HTTP_PROXY: NO_PROXY:',
     "info", "routes.go:1187", "server config env="),
    # Apache httpd 2.4: module:level, then pid:tid
    ("https://github.com/UnamSanctam/UnamWebPanel/issues/244",
     "[Mon Mar 06 17:38:26.183417 2023] [ssl:error] [pid 26600:tid 14708] [client 34.239.137.81:36224] AH02042: "
     "rejecting client initiated renegotiation", "error", "ssl", "[client 34.239.137.81:36224] AH02042"),
    ("https://github.com/logstash-plugins/logstash-patterns-core/pull/199",
     "[Thu Apr 27 10:39:46.719636 2017] [php7:notice] [pid 17] [client 10.255.0.3:49580] Test error log record",
     "info", "php7", "[client 10.255.0.3:49580] Test error log record"),
    # logback's own status lines (the first is cut where the post's excerpt ends)
    ("https://github.com/kaklakariada/portmapper/issues/1",
     "14:36:25,593 |-ERROR in ch.qos.logback.core.OutputStreamAppender[OUTPUT_STREAM] - No output stream",
     "error", "ch.qos.logback.core.OutputStreamAppender[OUTPUT_STREAM]", "No output stream"),
    ("https://github.com/hasadna/open-bus/issues/167",
     "17:21:10,242 |-INFO in ch.qos.logback.classic.joran.action.RootLoggerAction - Setting level of ROOT logger to "
     "INFO", "info", "ch.qos.logback.classic.joran.action.RootLoggerAction", "Setting level of ROOT logger"),
    # CUPS
    ("https://github.com/apple/cups/issues/3288",
     'E [13/Aug/2009:17:46:08 +0100] Bad request line "^W^C^A" from M.N.O.P!', "error", "", "Bad request line"),
    # syslog with facility.priority
    ("https://github.com/andikleen/mcelog/issues/20",
     "localhost user.err mcelog: Family 6 Model 4d CPU: only decoding architectural errors",
     "error", "mcelog", "Family 6 Model 4d CPU"),
    # libfabric
    ("https://github.com/VectorInstitute/vector-inference/issues/308",
     "libfabric:132:1787839803::cxi:ep_ctrl:cxip_ep_close():869<warn> gpua001.delta.ncsa.illinois.edu: Unable to free "
     "EP object -16 : Device or resource busy", "warning", "cxip_ep_close():869", "gpua001.delta.ncsa.illinois.edu:"),
    # onnxruntime, after its time stamp
    ("https://github.com/k2-fsa/sherpa-onnx/issues/163",
     "2023-05-25 00:21:23.008301845 [W:onnxruntime:, session_state.cc:1136 VerifyEachNodeIsAssignedToAnEp] Some nodes "
     "were not assigned to the preferred execution providers", "warning", "session_state.cc:1136", "Some nodes were not"),
    # nginx: error, emerg; and a line whose stamp was cut off when posted
    ("https://github.com/medic/medic-os/issues/3",
     "2016/07/11 01:09:43 [error] 19985#0: *5901 connect() failed (111: Connection refused) while connecting to "
     "upstream, client: 111.69.85.204", "error", "", "connect() failed (111"),
    ("https://github.com/facebookarchive/fbctf/issues/59",
     "2016/05/19 00:44:34 [emerg] 11486#0: bind() to 0.0.0.0:80 failed (98:", "fatal", "", "bind() to 0.0.0.0:80"),
    ("https://github.com/nextcloud/notify_push/issues/144",
     "[warn] 368292#368292: *611 upstream server temporarily disabled while connecting to upstream",
     "warning", "", "upstream server temporarily disabled"),
    # Apache httpd 2.2
    ("https://github.com/buttonmen-dev/buttonmen/pull/2005",
     "[Sun May 22 17:12:52 2016] [error] [client 10.0.2.2] Caught exception in BMInterface::load_game: SQLSTATE[42S22]",
     "error", "", "[client 10.0.2.2] Caught exception"),
    # NeMo
    ("https://github.com/NVIDIA-BioNeMo/bionemo-recipes/pull/476",
     "[NeMo I 2024-12-02 19:12:44 preemption:87] Received signal 12, initiating graceful stop",
     "info", "preemption:87", "Received signal 12"),
    # torch.distributed.checkpoint's format
    ("https://github.com/NVIDIA-BioNeMo/bionemo-recipes/pull/476",
     "2024-12-02 19:12:44,487 _dedup_tensors.py:46 INFO p:MainProcess t:MainThread: Duplicate keys to remove: {}",
     "info", "_dedup_tensors.py:46", "Duplicate keys to remove"),
    # Ray's Python header (already read before this round: kept)
    ("https://github.com/ray-project/ray/issues/54655",
     "2025-07-16 16:22:06,259 ERROR services.py:1355 -- Failed to start the dashboard , return code 3221226505",
     "error", "services.py:1355", "Failed to start the dashboard"),
    # spdlog with a logger's name
    ("https://github.com/HSF/prmon/issues/309",
     "[2026-03-24 17:33:21.529] [nvidiamon] [warning] Failed to load libnvidia-ml.so: libnvidia-ml.so.1: cannot open "
     "shared object file: No such file or directory", "warning", "nvidiamon", "Failed to load libnvidia-ml.so"),
    # loguru's default format
    ("https://github.com/autonomi-ai/nos/issues/286",
     "2023-08-13 10:21:20.233 | ERROR    | nos.common.system:sh:20 - Failed to execute command: nvidia-smi "
     "--query-gpu=name,driver_version --format=csv", "error", "nos.common.system:sh:20", "Failed to execute command"),
    # celery
    ("https://github.com/celery/celery/issues/5388",
     "[2019-03-13 18:28:45,924: INFO/MainProcess] Connected to redis://localhost:6379/0",
     "info", "MainProcess", "Connected to redis"),
    # OpenNMT
    ("https://github.com/memray/OpenNMT-kpg-release/issues/4",
     "[2019-11-15 06:59:48,581 INFO] number of examples: 100000", "info", "", "number of examples"),
    # transformers' Trainer
    ("https://github.com/hiyouga/ChatGLM-Efficient-Tuning/issues/153",
     "[INFO|modeling_utils.py:2878] 2023-06-08 07:52:49,884 >> Generation config file not found, using a generation "
     "config created from the model config.", "info", "modeling_utils.py:2878", "Generation config file not found"),
    # detectron2 and maskrcnn-benchmark: a logger's name, its level and a colon
    ("https://github.com/ChenhongyiYang/QueryDet-PyTorch/issues/17",
     "[04/14 09:05:02] d2.utils.events INFO:  eta: 0:11:54  iter: 119  total_loss: 9.214", "info", "d2.utils.events",
     "eta: 0:11:54"),
    ("https://github.com/facebookresearch/maskrcnn-benchmark/issues/825",
     "2019-05-27 10:48:54,461 maskrcnn_benchmark.trainer INFO: eta: 0:17:37  iter: 87940  loss: 0.6097 (0.9191)",
     "info", "maskrcnn_benchmark.trainer", "eta: 0:17:37"),
    # composer / llm-foundry
    ("https://github.com/mosaicml/llm-foundry/issues/1501",
     "2024-08-30 11:06:12,920: rank0[208865][MainThread]: INFO: llmfoundry.command_utils.train: Building trainer...",
     "info", "llmfoundry.command_utils.train", "Building trainer..."),
    # LightGBM: a tag, then the level in brackets
    ("https://github.com/lightgbm-org/LightGBM/issues/3697",
     "[LightGBM] [Warning] No further splits with positive gain, best gain: -inf", "warning", "LightGBM",
     "No further splits"),
    # rclone: NOTICE after the time
    ("https://github.com/rclone/rclone/issues/3909",
     "2020-01-27 17:55:29 NOTICE: Bandwidth limit set to 60M", "info", "", "Bandwidth limit set to 60M"),
    # absl before its clock is set: seconds since the epoch in the time column
    ("https://github.com/cognizant-ai-lab/neuro-san/issues/458",
     "E0000 00:00:1759871738.134001 22346076 alts_credentials.cc:93] ALTS creds ignored. Not running on GCP and "
     "untrusted ALTS is not enabled.", "error", "alts_credentials.cc:93", "ALTS creds ignored."),
    ("https://github.com/jax-ml/jax/issues/17879",
     "I0000 00:00:1696178045.970178       1 tfrt_cpu_pjrt_client.cc:349] TfrtCpuClient created.",
     "info", "tfrt_cpu_pjrt_client.cc:349", "TfrtCpuClient created."),
    # Rust tracing (TGI): span and target
    ("https://github.com/huggingface/text-generation-inference/issues/1627",
     "2024-03-06T17:53:31.052444Z ERROR shard-manager: text_generation_launcher: Shard process was signaled to "
     "shutdown with signal 4 rank=0", "error", "text_generation_launcher", "Shard process was signaled"),
    ("https://github.com/huggingface/text-generation-inference/issues/1627",
     "2024-03-06T17:53:31.149481Z  INFO text_generation_launcher: Shutting down shards",
     "info", "text_generation_launcher", "Shutting down shards"),
    # Rust's env_logger (actix)
    ("https://github.com/ankicommunity/anki-sync-server-rs/issues/28",
     "[2022-03-27T13:11:34Z INFO  actix_server::builder] Starting 4 workers", "info", "actix_server::builder",
     "Starting 4 workers"),
    # zap's console encoder (tabs); the line is cut where the post's excerpt ends
    ("https://github.com/actions/actions-runner-controller/issues/171",
     '2020-11-11T04:54:04.893Z\tERROR\tcontroller-runtime.controller\tReconciler error\t{"controller": "runner"',
     "error", "controller-runtime.controller", "Reconciler error"),
    # Spring Boot (logback)
    ("https://github.com/spring-projects/spring-boot/issues/12201",
     "2018-02-23 18:29:15.750 ERROR 1 --- [main] o.s.boot.SpringApplication               : Application run failed",
     "error", "o.s.boot.SpringApplication", "Application run failed"),
    # log4js
    ("https://github.com/winstonjs/winston/issues/489",
     "[2017-11-22 12:55:26.050] [ERROR] console - Error: Error", "error", "console", "Error: Error"),
    # winston's default "level: message"
    ("https://github.com/winstonjs/winston/issues/739",
     "warn: QUEUE error TypeError: Cannot read property 'match' of undefined", "warning", "", "QUEUE error TypeError"),
    ("https://github.com/winstonjs/winston/issues/63",
     "error: uncaughtException pid=18175, uid=0, gid=0, cwd=/home/dominic/clean/nodejitsu", "error", "",
     "uncaughtException pid=18175"),
    # structlog's console renderer
    ("https://github.com/hynek/structlog/issues/509",
     "2023-05-04 15:23:28 [info     ] going up...                    elevator=1", "info", "", "going up..."),
    ("https://github.com/hynek/structlog/issues/186",
     "2018-11-08T10:49:46.903028Z [info  ] bar              [foo]", "info", "", "bar"),
    # JSON lines: pino's numbers, zap's and llama.cpp server's words, python-json-logger's levelname
    ("https://github.com/salman0ansari/whatsapp-api-nodejs/issues/85",
     '{"level":50,"time":1651261889317,"pid":69444,"hostname":"Am.local","error":{"tag":"stream:error","attrs":'
     '{"code":"401"},"content":[{"tag":"conflict","attrs":{"type":"device_removed"},"content":null}]},'
     '"msg":"stream errored out"}', "error", "", "stream errored out"),
    ("https://github.com/openshift/instaslice-operator/issues/183",
     '{"level":"info","ts":"2024-10-17T19:35:54.953910209Z","caller":"controller/instaslice_daemonset.go:554",'
     '"msg":"classical resources obtained are ","cpu":144,"memory":2163215945728}',
     "info", "controller/instaslice_daemonset.go:554", "classical resources obtained"),
    ("https://github.com/ollama/ollama/issues/4225",
     '{"function":"load_model","level":"ERR","line":410,"model":"C:\\\\Users\\\\Administrator\\\\.ollama\\\\models",'
     '"msg":"unable to load model","tid":"11992","timestamp":1715077029}', "error", "", "unable to load model"),
    # JSON cut where the post's excerpt ends: the level is read from its start, the line is the body
    ("https://github.com/sky-big/pulsar-operator/issues/14",
     '{"level":"error","ts":1592892020.1254334,"logger":"controller_pulsarcluster","msg":"Reconciling PulsarCluster '
     'Zookeeper Error","Request.Namespace":"myco-test"', "error", "", '{"level":"error"'),
    ("https://github.com/huggingface/text-generation-inference/issues/3317",
     '{"timestamp":"2025-08-29T14:40:17.288163Z","level":"ERROR","message":"Request failed during generation: Server '
     'error: error trying to connect: No such file or directory (os error 2)","target":"text_generation_router_v3::'
     'backend","filename":"backends/v3/src/backend.rs","line_number":546,"span":{"name":"send_error"},"spans":[',
     "error", "", '{"timestamp"'),
]


@pytest.mark.parametrize(("url", "line", "level", "source", "body"), HEADERS, ids=[f"{i}" for i in range(len(HEADERS))])
def test_a_common_header_gives_its_level_source_and_message(url: str, line: str, level: str, source: str,
                                                            body: str) -> None:
    sh = read(line)
    assert (sh.level, sh.source) == (level, source), url
    assert sh.body.startswith(body), (url, sh.body[:80])


def test_gunicorn_critical_is_read_as_an_error(tmp_path: Path) -> None:
    # gunicorn's master logs at CRITICAL a worker it kills and then replaces: one worker,
    # an error. The killed worker's own "Worker exiting" follows; the monitor tells it from
    # the server's end by the header's pid (tests/test_logs_who_talks.py), so the excerpt
    # stays a warning (https://github.com/benoitc/gunicorn/issues/3233).
    sh = read("[2020-09-09 17:35:00 +0200] [26132] [CRITICAL] WORKER TIMEOUT (pid:26255)")  # deepset-ai/haystack#363
    assert (sh.level, sh.body) == ("error", "WORKER TIMEOUT (pid:26255)")
    row = corpus_tune_row("gunicorn-3233-1")
    kind, _rules = log_verdict(tmp_path, row["text"], row["kind"])
    assert kind == row["label"] == "warning"


def test_a_python_json_logger_line_reads_levelname_and_message() -> None:
    # https://github.com/ray-project/ray/pull/47806 (the whole record, from the corpus's tune split)
    line = corpus_tune_row("ray-47806-1")["text"].split("\n")[0]
    assert line.startswith('{"asctime"')
    sh = read(line)
    assert sh.level == "info"
    assert sh.body.startswith("Started distributed worker processes:")


# Real lines that look like headers and are not: each keeps no level.
NOT_HEADERS = [
    # a progress bar: its "[00:00<00:00, ...]" is no header
    ("https://github.com/MCG-NJU/RTD-Action/issues/31",
     "100%|██████████████████████████████████████| 3/3 [00:00<00:00, 138.50it/s]"),
    # a Python repr of a metrics dict (single quotes: no JSON)
    ("https://github.com/huggingface/transformers/pull/35207",
     "{'loss': 2.119, 'grad_norm': 37.657958984375, 'learning_rate': 4.5833333333333334e-05, 'epoch': 0.25}"),
    # metrics records in JSON: no level and no message
    ("https://github.com/facebookresearch/fairseq/issues/233",
     '{"epoch": 9, "valid_loss": 3.170829971076651, "valid_nll_loss": 1.3833437350205129, "valid_ppl": "2.61"}'),
    ("https://github.com/caikit/caikit-nlp/pull/208",
     '{"name": "loss", "data": {"epoch": 0.01, "step": 1, "value": 3.9274, "timestamp": "2023-09-26T19:25:18.737364"}}'),
    # the source line Python's warnings module echoes: "warn(" is a call, not winston's "warn:"
    ("https://github.com/JaidedAI/EasyOCR/issues/717", '  warn(f"Failed to load image Python extension: {e}")'),
    # a level word in brackets in the middle of a line is not the line's header
    # (yamllint's report, quoted in https://patchwork.ozlabs.org/project/devicetree-bindings/patch/
    # 20251024201836.317324-1-prabhakar.mahadev-lad.rj@bp.renesas.com)
    ("patchwork: dt-review-ci yamllint report",
     "./Documentation/devicetree/bindings/net/mscc-phy-vsc8531.yaml:99:36: [warning] too few spaces after comma "
     "(commas)"),
]


@pytest.mark.parametrize(("url", "line"), NOT_HEADERS, ids=[f"{i}" for i in range(len(NOT_HEADERS))])
def test_a_look_alike_gets_no_level(url: str, line: str) -> None:
    sh = read(line)
    assert sh.level is None, (url, sh)
    assert sh.body == line or sh.body == split_worker(line)[1], url


def test_a_spaced_level_without_a_target_keeps_its_whole_message() -> None:
    # https://github.com/oobabooga/textgen/issues/6573: rich-like padding, no tracing target
    sh = read("23:55:11-483489 WARNING  trust_remote_code is enabled. This is dangerous.")
    assert (sh.level, sh.source) == ("warning", "")
    assert sh.body == "trust_remote_code is enabled. This is dangerous."


def test_the_servers_words_keep_crit_below_fatal() -> None:
    # nginx and syslog rate one connection "crit"; only "emerg" stops the server
    assert anatomy._SERVER_LEVELS["CRIT"] == "error"
    assert anatomy._SERVER_LEVELS["EMERG"] == "fatal"


def test_json_lines_are_read_safely_and_boundedly() -> None:
    # A structured line too long to decode whole has its level read from its start.
    head = '{"level":"warn","msg":"slow request","pad":"'
    sh = shape(head + "x" * (anatomy.JSON_MAX + 10) + '"}')
    assert sh.level == "warning" and sh.body.startswith(head)
    # A line that nests past the decoder's recursion limit, or is not JSON at all, costs no exception.
    t0 = time.perf_counter()
    assert shape("{" + '"a":[' * 5000 + "1" + "]" * 5000 + "}").level is None
    assert shape("{not json at all, level error}").level is None
    assert time.perf_counter() - t0 < 2.0


def test_every_new_pattern_is_anchored_bounded_and_without_nested_repetition() -> None:
    # The module's guarantee: every repeat is bounded (but the final "(.*)" that takes the
    # body), and no repeat of more than one contains another repeat of more than one.
    import sys

    pats = [rx.pattern for rx, *_ in anatomy._FORMATS] + [
        rx.pattern for rx in (anatomy._TRACING, anatomy._ZAP_CONSOLE, anatomy._STRUCTLOG, anatomy._SYSLOG_PRI,
                              anatomy._LOGFMT_SOURCE, anatomy._LOGFMT_START, anatomy._JSON_HEAD_LEVEL)]
    for pat in pats:
        assert not pat.startswith(("^", ".")), pat
        reps = _repeats(pat.removesuffix("(.*)"))
        assert reps, pat
        for most, inner in reps:
            assert most < sys.maxsize and most <= 1000, pat
            assert not (inner and most > 1), pat
        assert findings(pat, search=False) == [], pat  # run by match on the head: no super-linear shape
    # The checker itself sees what it must refuse.
    assert any(m > 1000 for m, _ in _repeats(r"a(\w+)"))
    assert any(inner and m > 1 for m, inner in _repeats(r"(?:\w{1,5}:){1,4}"))


def test_a_header_longer_than_the_head_is_not_read_past_it() -> None:
    # Whatever follows HEAD_CHARS is body, never header: a 1 MB line costs what its start costs.
    line = "[2019-11-15 06:59:48,581 INFO] " + "y" * 1_000_000
    t0 = time.perf_counter()
    sh = shape(line)
    assert sh.level == "info" and len(sh.body) == len(line) - len("[2019-11-15 06:59:48,581 INFO] ")
    assert time.perf_counter() - t0 < 0.5
    assert HEAD_CHARS == 400


# -- what the judge makes of it ------------------------------------------------


def test_an_apache_error_in_a_service_is_a_warning_not_harmless(tmp_path: Path) -> None:
    # https://github.com/buttonmen-dev/buttonmen/pull/2005: one request's exception, the
    # server goes on. Unread, the header's "Column not found" read as an optional part missing.
    row = corpus_tune_row("buttonmen-2005-1")
    kind, _rules = log_verdict(tmp_path, row["text"], row["kind"])
    assert kind == row["label"] == "warning"
