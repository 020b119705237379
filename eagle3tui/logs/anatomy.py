"""The anatomy of a log line: who wrote it, at what level, and what it says.

A line from a GPU job usually carries several layers before its message:
a container or launcher tag (``vllm  | ``, ``[1,mpirank:0]<stdout>:``,
``0: ``), a timestamp, a worker prefix (``(Worker_TP0 pid=1)``, ``[rank3]:``)
and a logger header (``ERROR 02-22 00:33:33 [file.py:60]``,
``W0409 07:28:49.530000 1359 torch/.../api.py:719]``,
``host:pid:tid [0] NCCL INFO``). :func:`peel` removes the outer layers and
:func:`shape` reads the header: the level the program itself gave the line,
its source (logger name or ``file:line``) and the message body. The judge
(:mod:`eagle3tui.logs.judge`) decides on these, not on the wording alone.

Headers come from the default formats of the logging libraries and servers a
GPU host's jobs print through (Python logging and its frameworks, loguru,
structlog, glog/absl/klog, spdlog, Go's log/slog, logrus, zap, Rust's tracing
and env_logger, log4j/logback, winston/log4js, nginx, Apache, CUPS, syslog
priorities, libfabric, onnxruntime, NCCL). Levels are normalised to debug,
info, warning, error and fatal; a header without a date of its own is also read
after a time stamp; a JSON line (one that starts with ``{``) has its level and
message read from its keys.

Every pattern here is anchored, bounded and free of nested repetition, and
runs on at most the first :data:`HEAD_CHARS` characters of a line, so its
cost does not depend on what a line contains.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

HEAD_CHARS = 400  # headers and prefixes live at the start of a line

_LV_WORDS = "DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|TRACE|NOTICE|Warning|Error"
# Outer layers added by the environment, peeled repeatedly (order matters
# only for speed). Each removes one prefix and leaves the rest of the line.
_OUTER = [
    # docker compose / kubectl --prefix: "vllm-server  | "
    re.compile(r"[A-Za-z0-9][\w.-]{0,62}\s{1,40}\|\s"),
    # RFC 3339 timestamp from a log shipper: "2024-06-28T06:11:52.685Z "
    re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?\s{1,4}(?:\S{1,20}\s{1,4}\|\|\s)?"),
    # the same stamp in brackets, as CI runners annotate each line of a job's output:
    # "[2026-01-28T23:59:42Z] (EngineCore_DP0 pid=972) ERROR ...": a worker prefix and a
    # header follow it, so it goes before the worker prefix is read
    re.compile(r"\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?\]\s{1,4}"),
    # a bracketed time and a colon from a tool that prefixes its child's lines:
    # "[01:17:10.938]: W1024 01:17:10.936000 1403 torch/_dynamo/convert_frame.py:1009] ..."
    re.compile(r"\[\d\d:\d\d:\d\d(?:[.,]\d{1,9})?\]:\s{1,4}"),
    # syslog / journald: "Oct  3 20:05:14 host proc[123]: "
    re.compile(r"[^\W\d_]{3,4}\s{1,2}\d{1,2}\s\d\d:\d\d:\d\d\s[\w.-]{1,64}\s[\w./-]{1,64}(?:\[\d{1,10}\])?:\s"),
    # Open MPI tag: "[1,mpirank:0,algo-1]<stdout>:"
    re.compile(r"\[\d{1,6},[\w:,.-]{1,64}\]<std(?:out|err)>:"),
    # slurm -l / pdsh rank or host tags: "3: ", "worker-1: ", "trainer/0 [1]:"
    re.compile(r"\d{1,6}:\s"),
    re.compile(r"[\w.-]{1,64}/\d{1,6}\s\[\d{1,6}\]:"),
    re.compile(r"[A-Za-z][\w.-]{0,63}:\s(?=[\w.<>*-]{1,64}:\d{1,10}:\d{1,10}\s\[\d{1,4}\])"),
    # a line number added when the log was pasted: "  39 [rank0]:W0103 ..."
    re.compile(r"\s{0,6}\d{1,7}\s{1,3}(?=[\[(]|[IWEF]\d{4}\s)"),
    # a process id or line counter in brackets: "[42027] "
    re.compile(r"\[\d{1,10}\]\s"),
    # "stdout: " / "stderr: " from some launchers; a log shipper puts the stream's
    # number before it: "2024-11-13T03:15:08.672Z 1 stdout: CRITICAL ..."
    re.compile(r"std(?:out|err):\s"),
    re.compile(r"\d{1,3}\sstd(?:out|err):\s"),
    # a sidecar's or pod's tag, its name and an instance id in brackets, then a colon:
    # "[VllmSidecar kooEr8Ccal1cqylW5f5cz]: 2024-11-13T03:15:08.672Z 1 stdout: ..."
    # (an id of six or more characters: "[Rank 3]:" is a worker, read by peel_workers)
    re.compile(rf"\[(?!(?:{_LV_WORDS})\])[A-Za-z][\w.-]{{0,40}}\s[\w.-]{{6,64}}\]:\s"),
    # BuildKit's plain progress (docker build --progress=plain): a step's output
    # lines carry the step number and the seconds since it started, "#9 1.863 "
    re.compile(r"#\d{1,4}\s\d{1,6}\.\d{3}\s"),
    # Node's process tag before its warnings: "(node:8484) UnhandledPromiseRejectionWarning: ..."
    re.compile(r"\(node:\d{1,10}\)\s"),
    # an application tag in brackets before a timestamp: "[titan] 2025-03-12 11:10:21,603 - root - ..."
    # (a level word in brackets is the header itself: "[ERROR] 2021-05-11 12:06:27,882 msg")
    re.compile(rf"\[(?!(?:{_LV_WORDS})\])[A-Za-z][\w.-]{{0,30}}\]\s(?=\d{{2,4}}[-/]\d\d[-/]\d{{2,4}}\s)"),
    # a stray SGR fragment whose ESC was lost: "[0m "
    re.compile(r"\[\d{1,3}(?:;\d{1,3}){0,4}m\s?"),
    # caret-escaped ANSI as copied from a terminal: "^[[1;36m"
    re.compile(r"\^\[\[\d{1,3}(?:;\d{1,3}){0,4}m\s?"),
]
_WORKER_PAREN = re.compile(r"\(([^()]{1,100}?)\s?pid=\d{1,10}(?:,\s?ip=[\d.:a-f]{1,64})?\)\s?")
_WORKER_BRACKET = re.compile(r"\[(rank\d{1,6}|default\d{1,6}|Rank \d{1,6})\]:\s?")

_LEVELS = {
    "D": "debug", "DEBUG": "debug", "TRACE": "debug", "V": "debug",
    "I": "info", "INFO": "info", "NOTICE": "info",
    "W": "warning", "WARN": "warning", "WARNING": "warning",
    "E": "error", "ERROR": "error", "ERR": "error", "ERRO": "error",
    "F": "fatal", "FATAL": "fatal", "CRITICAL": "fatal", "CRIT": "fatal", "PANIC": "fatal",
    # Ray's C++ core logs its fatal checks at spdlog's "critical" letter, then aborts
    # ("[... C 149 149] node_manager.cc:170: This node has been marked as dead." and a stack)
    "C": "fatal",
    # loguru's SUCCESS; logrus's four-letter columns ("ERRO[0000]", "DEBU[0000]", "FATA[0000]");
    # zap's development panic (an error in production builds); JSON severities (Cloud Logging)
    "SUCCESS": "info", "DEBU": "debug", "TRAC": "debug", "FATA": "fatal", "PANI": "fatal",
    "DPANIC": "error", "VERBOSE": "debug", "EMERGENCY": "fatal", "EMERG": "fatal", "ALERT": "fatal",
    "SEVERE": "error", "DEFAULT": "info", "EXCEPTION": "error",
}
# Servers' syslog-style words (nginx, Apache, syslog priorities, CUPS): "crit" and "alert"
# there rate one connection or one request ("[crit] SSL_do_handshake() failed"), and only
# "emerg" means that the server cannot run at all ("[emerg] bind() to 0.0.0.0:80 failed").
_SERVER_LEVELS = {
    "EMERG": "fatal", "ALERT": "error", "CRIT": "error", "ERR": "error", "ERROR": "error",
    "WARN": "warning", "WARNING": "warning", "NOTICE": "info", "INFO": "info", "DEBUG": "debug", "TRACE": "debug",
}
_GUNICORN_LEVELS = {**_LEVELS, "CRITICAL": "error"}  # see the gunicorn header
# CUPS's one-letter levels ("E [13/Aug/2009:17:46:08 +0100] ..."): X emergency, A alert, C critical,
# E error, W warning, N notice, I info, D debug, d debug2.
_CUPS_LEVELS = {"X": "fatal", "A": "error", "C": "error", "E": "error", "W": "warning", "N": "info", "I": "info",
                "D": "debug", "d": "debug"}
_LV = r"DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|TRACE|NOTICE"
_DATE = r"\d{2,4}[-/]\d\d[-/]\d{2,4}"
_TIME = r"\d\d:\d\d:\d\d(?:[.,]\d{1,9})?"

# (pattern, group index of level, of source or None, of body)
_HEADERS: list[tuple[re.Pattern[str], int, int | None, int]] = [
    # vLLM: "ERROR 02-22 00:33:33 [file.py:60] msg" (older: "ERROR 06-13 02:36:52 file.py:52] msg"; newer
    # ones name the file by its path in the package: "[v1/executor/multiproc_executor.py:597]")
    (re.compile(rf"({_LV})\s\d\d-\d\d\s{_TIME}\s\[?([\w.-]{{1,80}}(?:/[\w.-]{{1,80}}){{0,6}}:\d{{1,6}})\]\s?(.*)", re.S), 1, 2, 3),
    # DeepSpeed: "[2023-04-14 13:11:27,879] [ERROR] [launch.py:434:sigkill_handler] msg"
    (re.compile(rf"\[{_DATE}\s{_TIME}\]\s\[({_LV})\]\s\[([\w.-]{{1,80}}:\d{{1,6}})(?::\w{{1,80}})?\]\s?(.*)", re.S), 1, 2, 3),
    # "[2024-04-10 16:02:56,193] torch.distributed...api: [WARNING] msg"
    (re.compile(rf"\[{_DATE}\s{_TIME}\]\s([\w.]{{1,120}}):\s\[({_LV})\]\s?(.*)", re.S), 2, 1, 3),
    # hydra: "[2024-02-22 19:20:17,149][datasets.builder][WARNING] - msg"
    (re.compile(rf"\[{_DATE}\s{_TIME}\]\[([\w.]{{1,120}})\]\[({_LV})\]\s-\s(.*)", re.S), 2, 1, 3),
    # "2024-02-15 02:47:44,259 - uvicorn.error - ERROR - msg", "06/03/2020 19:08:24 - INFO - __main__ -   msg",
    # "2019-10-16 15:16:26,801 - tensor_generators:129 - INFO - msg" (%(module)s:%(lineno)d)
    (re.compile(rf"{_DATE}\s{_TIME}\s-\s([\w.]{{1,120}}(?::\d{{1,6}})?)\s-\s({_LV})\s-\s(.*)", re.S), 2, 1, 3),
    (re.compile(rf"{_DATE}\s{_TIME}\s-\s({_LV})\s-\s([\w.]{{1,120}})\s-\s{{1,4}}(.*)", re.S), 1, 2, 3),
    # loguru / fairseq: "2020-10-01 11:52:42 | INFO | train_inner | msg"
    (re.compile(rf"{_DATE}\s{_TIME}\s\|\s({_LV})\s{{1,6}}\|\s([\w.:-]{{1,120}})\s\|\s(.*)", re.S), 1, 2, 3),
    # "2023-08-11 12:52:20 [INFO] msg", "2025-03-27 21:33:31,320 - INFO - msg", "12/09 06:49:23 - mmengine - INFO - msg"
    (re.compile(rf"{_DATE}\s{_TIME}\s\[({_LV})\]\s(.*)", re.S), 1, None, 2),
    (re.compile(rf"{_DATE}\s{_TIME}\s-\s({_LV})\s-\s(.*)", re.S), 1, None, 2),
    (re.compile(rf"\d\d/\d\d\s{_TIME}\s-\s([\w.]{{1,120}})\s-\s({_LV})\s-\s(.*)", re.S), 2, 1, 3),
    # "[INFO 2020-06-08 05:26:34] msg", "[INFO|2025-03-02 19:39:21] logger:157 >> msg"
    (re.compile(rf"\[({_LV})\s{_DATE}\s{_TIME}\]\s(.*)", re.S), 1, None, 2),
    (re.compile(rf"\[({_LV})\|{_DATE}\s{_TIME}\]\s([\w.]{{1,120}}:\d{{1,6}})\s>>\s(.*)", re.S), 1, 2, 3),
    # "[WARNING | bitsandbytes.cextension]: msg": the level and the logger's name in one bracket
    (re.compile(rf"\[({_LV})\s{{0,2}}\|\s{{0,2}}([\w.-]{{1,120}})\]:?\s(.*)", re.S), 1, 2, 3),
    # oneCCL: "2025:05:14-06:28:49:(328476) |CCL_WARN| msg": the library's name joined to the level, between bars
    (re.compile(rf"(?:\d[\d:.-]{{7,31}}(?::\(\d{{1,10}}\))?\s)?\|([A-Z][A-Z0-9]{{1,15}})_({_LV})\|\s?(.*)", re.S), 2, 1, 3),
    # glog / c10d / torch: "W0409 07:28:49.530000 1359 torch/x/api.py:719] msg",
    # "[W1206 18:44:12.7 ProcessGroupNCCL.cpp:4115] msg", "[E ProcessGroupNCCL.cpp:458] msg"
    # (absl before its clock is set prints seconds since the epoch: "E0000 00:00:1759871738.134001 22346076 x.cc:93]")
    (re.compile(r"([IWEF])\d{3,4}\s(?:" + _TIME + r"|00:00:\d{9,11}\.\d{1,9})\s{1,8}\d{1,20}\s([\w./\\-]{1,200}:\d{1,6})\]\s?(.*)", re.S), 1, 2, 3),
    (re.compile(r"\[([IWEF])(?:\d{3,4}\s" + _TIME + r")?\s([\w./\\-]{1,200}:\d{1,6})\]\s?(.*)", re.S), 1, 2, 3),
    # TensorFlow / absl: "2025-02-09 09:37:32.334610: E external/xla/cuda_dnn.cc:9261] msg"
    (re.compile(rf"{_DATE}\s{_TIME}:\s([IWEF])\s([\w./\\-]{{1,200}}:\d{{1,6}})\]\s?(.*)", re.S), 1, 2, 3),
    # Ray core: "[2021-09-14 10:10:20,326 E 2122527 2122927] task_manager.cc:332: msg" (C: critical)
    (re.compile(rf"\[{_DATE}\s{_TIME}\s([IWEFDC])\s\d{{1,10}}\s\d{{1,10}}\]\s(?:\(\w{{1,40}}\)\s)?([\w./-]{{1,120}}:\d{{1,6}}):\s?(.*)", re.S), 1, 2, 3),
    # Ray python: "2023-01-03 10:33:59,262 WARNING worker.py:1851 -- msg", "2024-01-09 17:49:32,362\tERROR x.py:911 -- msg"
    (re.compile(rf"{_DATE}\s{_TIME}\s({_LV})\s([\w./-]{{1,120}}:\d{{1,6}})\s--\s(.*)", re.S), 1, 2, 3),
    # llama.cpp >= b5000: "1.35.716.244 I slot print_timing: msg"
    (re.compile(r"\d{1,4}\.\d\d\.\d{3}\.\d{3}\s([IWEDF])\s(.*)", re.S), 1, None, 2),
    # python logging default: "WARNING:torch.distributed...api:msg"; uvicorn "ERROR:    msg"
    (re.compile(rf"({_LV}):([\w.]{{1,120}}):(.*)", re.S), 1, 2, 3),
    (re.compile(rf"({_LV}):\s{{1,8}}(.*)", re.S), 1, None, 2),
    # "[TensorRT-LLM][WARNING] msg", "[TM][ERROR] msg": tags in brackets, then the level in brackets
    (re.compile(rf"((?:\[[\w .+-]{{1,40}}\]){{1,3}})\[({_LV}|Warning|Error)\]\s?(.*)", re.S), 2, 1, 3),
    # "submitit WARNING (2022-08-12 02:06:11,453) - msg": logger, level, time in parentheses
    (re.compile(rf"([\w.-]{{1,40}})\s({_LV})\s\({_DATE}\s{_TIME}\)\s-\s(.*)", re.S), 2, 1, 3),
    # Go's standard logger: "2023/12/24 23:48:35 llama.go:459: msg" (no level; the source is known)
    # (ollama puts its level after the source: "2025/02/10 09:48:03 routes.go:1187: INFO server config ...")
    (re.compile(rf"\d{{4}}/\d\d/\d\d\s\d\d:\d\d:\d\d(?:\.\d{{1,9}})?\s([\w./-]{{1,120}}\.go:\d{{1,6}}):\s(?:({_LV})\s)?(.*)", re.S), 2, 1, 3),
    # "[2025-04-05 20:02:51 TP0] msg" (SGLang) carries no level: handled as plain text
]
# The default headers of common logging libraries and servers. Each entry: (pattern, group of
# the level, of the source or None, of the body, the table that normalises the level word).
# Those without a date of their own are also read after a time stamp (see :func:`shape`).
_SRV = "emerg|alert|crit|error|warn|notice|info|debug"
_FORMATS: list[tuple[re.Pattern[str], int, int | None, int, dict[str, str], str]] = [
    # gunicorn: "[2020-09-09 17:35:00 +0200] [26132] [CRITICAL] WORKER TIMEOUT (pid:26255)". Its master
    # logs at CRITICAL the workers it kills and replaces, and goes on serving (its own end it
    # reports at INFO or ERROR: "Shutting down: Master"): CRITICAL rates one worker, an error.
    # The killed worker's own "Worker exiting" after it is that worker's end, not the server's:
    # the monitor tells them apart by the header's pid (eagle3tui.logs.speaker).
    (re.compile(rf"\[{_DATE}\s{_TIME}(?:\s[+-]\d{{4}})?\]\s\[\d{{1,10}}\]\s\[({_LV})\]\s(.*)", re.S),
     1, None, 2, _GUNICORN_LEVELS, "] ["),
    # celery: "[2019-03-13 18:28:45,924: INFO/MainProcess] msg"; OpenNMT: "[2019-11-15 06:59:48,581 INFO] msg"
    (re.compile(rf"\[{_DATE}\s{_TIME}:\s({_LV})/([\w.-]{{1,60}})\]\s(.*)", re.S), 1, 2, 3, _LEVELS, ""),
    (re.compile(rf"\[{_DATE}\s{_TIME}\s({_LV})\]\s(.*)", re.S), 1, None, 2, _LEVELS, ""),
    # transformers' Trainer: "[INFO|modeling_utils.py:2878] 2023-06-08 07:52:49,884 >> msg"
    (re.compile(rf"\[({_LV})\|([\w.-]{{1,120}}:\d{{1,6}})\]\s{_DATE}\s{_TIME}\s>>\s(.*)", re.S), 1, 2, 3, _LEVELS, " >> "),
    # NeMo: "[NeMo I 2024-12-02 19:12:44 preemption:87] msg": a tag, a letter, a time and module:line
    (re.compile(rf"\[[A-Za-z][\w-]{{0,19}}\s([DIWEFC])\s{_DATE}\s{_TIME}\s([\w.-]{{1,120}}:\d{{1,6}})\]\s(.*)", re.S),
     1, 2, 3, _LEVELS, ""),
    # detectron2: "[04/14 09:05:02] d2.utils.events INFO:  eta: ..." (month/day, no year)
    (re.compile(rf"\[\d\d/\d\d\s{_TIME}\]\s([\w.]{{1,120}})\s({_LV}):\s{{1,2}}(.*)", re.S), 2, 1, 3, _LEVELS, ""),
    # composer: "2024-08-30 11:06:12,920: rank0[208865][MainThread]: INFO: llmfoundry.x: msg"
    (re.compile(rf"{_DATE}\s{_TIME}:\s[\w-]{{1,40}}\[\d{{1,10}}\]\[[\w-]{{1,60}}\]:\s({_LV}):\s([\w.]{{1,120}}):\s(.*)", re.S),
     1, 2, 3, _LEVELS, "]: "),
    # loguru's default: "2023-08-13 10:21:20.233 | ERROR    | nos.common.system:sh:20 - msg"
    (re.compile(rf"{_DATE}\s{_TIME}\s\|\s({_LV}|SUCCESS)\s{{0,8}}\|\s([\w.<>-]{{1,120}}:[\w.<>-]{{1,120}}:\d{{1,6}})\s-\s(.*)", re.S),
     1, 2, 3, _LEVELS, " | "),
    # Rust's env_logger: "[2024-01-01T00:00:00Z ERROR crate::module] msg"
    (re.compile(rf"\[\d{{4}}-\d\d-\d\dT{_TIME}(?:Z|[+-]\d\d:?\d\d)?\s{{1,2}}({_LV})\s{{1,2}}([\w:.-]{{1,120}})\]\s(.*)", re.S),
     1, 2, 3, _LEVELS, ""),
    # Apache httpd 2.2 / 2.4: "[Sun May 22 17:12:52 2016] [error] [client 10.0.2.2] msg",
    # "[Fri Sep 09 10:42:29.902022 2011] [core:error] [pid 35708:tid 4328636416] msg"
    (re.compile(rf"\[[A-Z][a-z]{{2}}\s[A-Z][a-z]{{2}}\s{{1,2}}\d{{1,2}}\s{_TIME}\s\d{{4}}\]\s\[(?:([\w-]{{1,40}}):)?({_SRV}|trace)\d?\]\s"
                rf"(?:\[pid\s[\d:a-z ]{{1,40}}\]\s)?(.*)", re.S), 2, 1, 3, _SERVER_LEVELS, "] ["),
    # CUPS: "E [13/Aug/2009:17:46:08 +0100] msg"
    (re.compile(r"([XACEWNIDd])\s\[\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d\s[+-]\d{4}\]\s(.*)", re.S), 1, None, 2, _CUPS_LEVELS, ""),
    # libfabric: "libfabric:132:1787839803::cxi:ep_ctrl:cxip_ep_close():869<warn> msg"
    # (package:pid:time:[domain:]provider:subsystem:function():line<level>)
    (re.compile(r"libfabric:\d{1,10}:\d{1,20}:(?:[\w.-]{0,64}:)?[\w-]{0,40}:[\w-]{0,40}:([\w.]{1,80}\(\):\d{1,6})"
                r"<(warn|info|debug|trace|error)>\s?(.*)", re.S), 2, 1, 3, _SERVER_LEVELS, ""),
    # logrus's text columns: "ERRO[0000] error loading config: ...", "INFO[2024-01-01T00:00:00Z] msg"
    (re.compile(r"(PANI|FATA|ERRO|WARN|INFO|DEBU|TRAC)\[[\d:T.+Z-]{4,40}\]\s(.*)", re.S), 1, None, 2, _LEVELS, ""),
    # --- also read after a time stamp ---
    # nginx: "[error] 19985#0: *5901 connect() failed ..." (pid#tid, then the connection number)
    (re.compile(rf"\[({_SRV})\]\s\d{{1,10}}#\d{{1,10}}:\s(?:\*\d{{1,20}}\s)?(.*)", re.S), 1, None, 2, _SERVER_LEVELS, "#"),
    # spdlog: "[error] msg", with a logger's name: "[nvidiamon] [warning] msg"
    (re.compile(r"\[(?:([\w.:-]{1,60})\]\s\[)?(trace|debug|info|warning|warn|error|critical)\]\s(.*)", re.S), 2, 1, 3, _LEVELS, ""),
    # onnxruntime: "[W:onnxruntime:, session_state.cc:1136 VerifyEachNodeIsAssignedToAnEp] msg"
    (re.compile(r"\[([VIWEF]):[\w.-]{0,60}:[^,\]]{0,80},\s([\w./\\-]{1,200}:\d{1,6})(?:\s[^\]\s]{1,200})?\]\s(.*)", re.S),
     1, 2, 3, _LEVELS, ""),
    # Python's "%(asctime)s [%(levelname)s] %(name)s: %(message)s"; log4js: "[ERROR] console - msg"
    (re.compile(rf"\[({_LV})\]\s([\w.-]{{1,120}})(?::|\s-)\s(.*)", re.S), 1, 2, 3, _LEVELS, ""),
    # "[LightGBM] [Warning] msg": a tag, a blank, then the level in brackets
    (re.compile(r"\[([\w .+-]{1,40})\]\s\[(Info|Warning|Error|Fatal|Debug)\]\s(.*)", re.S), 2, 1, 3, _LEVELS, "] ["),
    # Spring Boot: "ERROR 1 --- [main] o.s.boot.SpringApplication               : msg"
    (re.compile(rf"({_LV})\s{{1,6}}\d{{1,10}}\s---\s\[\s{{0,20}}[^\]]{{1,60}}\]\s([\w.$]{{1,120}})\s{{0,60}}:\s(.*)", re.S),
     1, 2, 3, _LEVELS, " --- "),
    # log4j / logback: "ERROR [main] c.x.Y - msg" and "[main] ERROR c.x.Y - msg"
    (re.compile(rf"({_LV})\s{{1,5}}\[[^\]]{{1,80}}\]\s([\w.$]{{1,120}})\s{{1,40}}-\s(.*)", re.S), 1, 2, 3, _LEVELS, " - "),
    (re.compile(rf"\[[^\]]{{1,80}}\]\s({_LV})\s{{1,5}}([\w.$]{{1,120}})\s{{1,40}}-\s(.*)", re.S), 1, 2, 3, _LEVELS, " - "),
    # logback's own status lines: "14:36:25,593 |-ERROR in ch.qos.logback.core.X[OUT] - No output stream"
    (re.compile(r"\|-(INFO|WARN|ERROR)\sin\s([^\s]{1,200})\s-\s(.*)", re.S), 1, 2, 3, _LEVELS, ""),
    # torch.distributed.checkpoint: "_dedup_tensors.py:46 INFO p:MainProcess t:MainThread: msg"
    (re.compile(rf"([A-Za-z_][\w.-]{{0,119}}\.py:\d{{1,6}})\s({_LV})\s(?:p:[\w-]{{1,60}}\st:[\w-]{{1,60}}:\s)?(.*)", re.S), 2, 1, 3, _LEVELS, ".py:"),
    # "maskrcnn_benchmark.trainer INFO: msg": a dotted logger's name, its level and a colon
    (re.compile(rf"([A-Za-z_][\w]{{0,60}}\.[\w.]{{1,120}})\s({_LV}):\s(.*)", re.S), 2, 1, 3, _LEVELS, ""),
]

# NCCL's own lines: "host:pid:tid [dev] [file.cc:123 ]NCCL INFO|WARN msg"; pre-2.4: "host:pid:tid [0] file:line WARN msg"
_NCCL = re.compile(
    r"(?:[\w.<>*-]{1,64}(?:\s[\w.<>*-]{1,64}){0,3}:\d{1,10}:\d{1,10}\s)?\[\d{1,4}\]\s"
    r"(?:([\w./-]{1,120}:\d{1,6})\s)?(?:NCCL\s)?(INFO|WARN|ERROR|TRACE)\s(.*)",
    re.S,
)
_LOGFMT_LEVEL = re.compile(r"(?:^|\s)level=\"?(\w{1,10})")
# A logfmt line (logrus, Go's slog TextHandler, go-kit) starts with a key: "time=... level=ERROR
# source=server.go:163 msg=\"server crash 8 - exit code 1 - respawning\"".
_LOGFMT_START = re.compile(r"[a-z_]{1,12}=")
_LOGFMT_SOURCE = re.compile(r"(?:^|\s)(?:source|caller)=\"?([^\s\"]{1,200})")
_LOGFMT_MSG = re.compile(r"(?:^|\s)msg=")
# A syslog line with its facility.priority ("localhost user.err mcelog: msg"): host, priority, program.
_SYSLOG_PRI = re.compile(
    r"[\w.-]{1,64}\s(?:kern|user|mail|daemon|auth|syslog|lpr|news|uucp|cron|authpriv|ftp|local[0-7])\."
    r"(emerg|alert|crit|err|warning|warn|notice|info|debug)\s([\w./-]{1,64})(?:\[\d{1,10}\])?:\s(.*)",
    re.S,
)
_SYSLOG_FACILITY_HEADS = frozenset(
    ("kern", "user", "mail", "daem", "auth", "sysl", "lpr.", "news", "uucp", "cron", "ftp.", "loca")
)
_JSON_LEVEL = re.compile(r"\"level\"\s?:\s?\"(\w{1,10})\"")
# Python's warnings module: "/path/x.py:10: UserWarning: msg"
_PYWARN = re.compile(r"(?:(?:[A-Za-z]:)?[^:\s]{1,400}:\d{1,6}:\s)?([A-Z]\w{0,60}Warning):\s(.*)", re.S)
# A library's own prefix before a level: "libibverbs: Warning: ...", "myprog: error: ...",
# "librdmacm: Fatal: no RDMA devices found" (the library's own verdict that it cannot go on).
_LIB_LEVEL = re.compile(r"([\w.-]{1,40}):\s(WARNING|Warning|warning|ERROR|Error|error|FATAL|Fatal):\s(.*)", re.S)
# A component's name, then an upper-case level and the message: "train: WARNING ⚠️ x.jpg: 2
# duplicate labels removed", "AutoAnchor: WARNING ...", "status: ERROR ...".
_LIB_UPPER_LEVEL = re.compile(r"([\w.-]{1,40}):\s(WARNING|ERROR)\s(.*)", re.S)
# The Python interpreter reporting that it could not run the program at all, its own
# path as the prefix: "/usr/bin/python3: can't open file 'x.py': [Errno 2] ...",
# "C:\\env\\python.exe: Error while finding module specification for '__main__' (...)",
# "python3: No module named vllm.entrypoints". Nothing of the program has run.
_INTERPRETER = re.compile(
    r"(?:[A-Za-z]:)?(?:[^\s:]{0,200}[\\/])?(python(?:[23](?:\.\d{1,2})?)?(?:\.exe)?):\s"
    r"((?:can't open file|No module named|Error while finding (?:module )?spec|can't find '__main__' module|"
    r"error while loading shared libraries).*)",
    re.S,
)
INTERPRETER_SOURCE = "python-interpreter"
# A bare leading level word: "WARNING: apex ...", " [WARNING]  async_io ...", "Warning: ...", "warning: failed to mlock"
_BARE_LEVEL = re.compile(
    r"\s{0,4}(?:\[(WARNING|WARN|ERROR|INFO|Warning|Error|FATAL|CRITICAL)\]:?|(WARNING|WARN|ERROR|INFO|Warning|Error|warning|error|FATAL|Fatal|warn|info|debug|verbose|NOTICE):)"
    r"\s{1,6}(.*)",
    re.S,
)
# "WARNING[XFORMERS]: msg", "INFO[client.py:85] msg": the level, then its tag or source in brackets
_TAGGED_LEVEL = re.compile(r"(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|TRACE)\[([^\]\s]{1,60})\]:?\s?(.*)", re.S)
# An upper-case level word and blanks, as Rust's tracing, rich, zap and loguru print it once the
# timestamp is gone: "ERROR shard-manager: ...", "WARNING  trust_remote_code is enabled".
_SPACED_LEVEL = re.compile(r"\s{0,4}(DEBUG|INFO|WARNING|WARN|ERROR|ERRO|CRITICAL|FATAL|TRACE)\s{1,12}(\S.*)", re.S)
# After the level: tracing's span and target, each a snake_case name and ": " (a span may carry
# its fields in braces); zap's logger or caller and a tab.
_TRACING = re.compile(r"([a-z_][\w.{}=-]{0,120}):\s(?:([a-z_][\w:]{0,200}):\s)?(?=\S)")
_ZAP_CONSOLE = re.compile(r"([^\t\s]{1,120})\t(?=\S)")
# structlog's console renderer: "[info     ] going up...   elevator=1" (the level padded in brackets)
_STRUCTLOG = re.compile(r"\[(debug|info|warning|warn|error|critical|exception|notice)\s{1,9}\]\s(.*)", re.S)
# A bare time or epoch stamp before the level: "23:55:11-479484 ", "1.6690869152808545e+09  ",
# "2022-03-02 08:25:11.39 ", "[07:15:39.400163] ".
_STAMP = re.compile(
    rf"(?:\[?(?:{_DATE}[ T])?\d\d:\d\d:\d\d(?:[.,-]\d{{1,9}})?(?:Z|[+-]\d\d:?\d\d)?"
    # SGLang's parallel ranks after its time: "[2025-07-11 17:40:16 DP0 TP0] "
    rf"(?:\s[A-Z]{{1,4}}\d{{1,5}}){{0,4}}\]?|\d\.\d{{1,20}}e\+\d\d|\d{{9,10}}(?:\.\d{{1,9}})?)\s{{1,6}}"
)
# "Name: message" where Name is a dotted identifier ending like an exception class
_EXC_NAME = re.compile(
    r"((?:[A-Za-z_]\w{0,80}\.){0,8}[A-Za-z_]?\w{0,80}"
    r"(?:Error|Exception|Exit|Interrupt|Failure|Fault|Warning|Timeout|Exceeded|Cancelled|ExceptionGroup|Stop\w{0,20})"
    r"(?:\([\w.]{1,80}\))?)(?::\s?(.*)|\s*$)",
    re.S,
)


# PostgreSQL's header after its time stamp: an optional zone and [pid], the
# level word, a colon and two blanks ("UTC [42] LOG:  could not bind IPv6
# address", "FATAL:  could not create any TCP/IP sockets"). LOG, NOTICE and the
# HINT/DETAIL lines that follow a message are information; PANIC ends the server.
_COLON_LEVEL = re.compile(
    r"(?:[A-Z]{2,5} )?(?:\[\d{1,10}\]:? )?(LOG|NOTICE|HINT|DETAIL|STATEMENT|CONTEXT|PANIC|FATAL|ERROR|WARNING|INFO|"
    r"DEBUG[1-5]?):  (\S.*)",
    re.S,
)
_COLON_LEVELS = {"LOG": "info", "NOTICE": "info", "HINT": "info", "DETAIL": "info", "STATEMENT": "info",
                 "CONTEXT": "info", "INFO": "info", "PANIC": "fatal", "FATAL": "fatal", "ERROR": "error",
                 "WARNING": "warning"}
_COLON_LEVELS.update({f"DEBUG{i}": "debug" for i in ("", "1", "2", "3", "4", "5")})
# Redis's header: "pid:role day month year time" and one mark for the level
# ("1:M 09 Nov 2024 09:57:17.206 # Fatal: ...": # warning, * notice, - verbose, . debug).
_REDIS_HEAD = re.compile(r"\d{1,10}:[CMSX] \d{1,2} [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d\.\d{3} ([.*#-]) (.*)", re.S)
_REDIS_LEVELS = {"#": "warning", "*": "info", "-": "info", ".": "debug"}


def _parse(pattern: str, flags: int) -> object:
    try:
        import re._parser as sre_parse  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_parse  # type: ignore[no-redef]
    return sre_parse.parse(pattern, flags)


def _first_of(seq: object) -> set[str] | None:
    """Characters (ASCII) a match of the parsed ``seq`` can start with, or None if any."""
    for op, av in seq:  # type: ignore[attr-defined]
        name = str(op)
        if name == "AT":
            continue  # zero-width
        if name == "LITERAL":
            return {chr(av)}
        if name == "IN":
            out: set[str] = set()
            for iop, iav in av:
                iname = str(iop)
                if iname == "LITERAL":
                    out.add(chr(iav))
                elif iname == "RANGE":
                    out.update(chr(c) for c in range(iav[0], min(iav[1], 127) + 1))
                elif iname == "CATEGORY" and str(iav) == "CATEGORY_DIGIT":
                    out.update("0123456789")
                else:
                    return None  # negated sets, \w, \s: anything
            return out
        if name == "SUBPATTERN":
            return _first_of(av[-1])
        if name == "BRANCH":
            acc: set[str] = set()
            for alt in av[1]:
                f = _first_of(alt)
                if f is None:
                    return None
                acc |= f
            return acc
        if name in ("MAX_REPEAT", "MIN_REPEAT") and av[0] >= 1:
            return _first_of(av[2])
        return None  # optional items, lookarounds, anything else
    return None


def _second_of(seq: list) -> set[str] | None:
    """Characters (ASCII) the second character of a match can be, or None if any or unknown.

    Known when the match starts with one character (a literal or a class) or with a group
    or alternatives that do: ``\\[(?:...)``, ``(ERROR|WARN)``, ``([IWEF])\\d``.
    """
    while seq and str(seq[0][0]) == "AT":
        seq = seq[1:]
    if not seq:
        return None
    (op, av), rest = seq[0], list(seq[1:])
    name = str(op)
    if name in ("LITERAL", "IN"):
        return _first_of(rest) if rest else None
    if name == "SUBPATTERN":
        return _second_of(list(av[-1]) + rest)
    if name == "BRANCH":
        acc: set[str] = set()
        for alt in av[1]:
            f = _second_of(list(alt) + rest)
            if f is None:
                return None
            acc |= f
        return acc
    return None


def _first_chars(pattern: str, flags: int = 0) -> frozenset[str] | None:
    """Characters a match of ``pattern`` can start with (ASCII), or None if any."""
    if flags & re.I:
        return None
    got = _first_of(_parse(pattern, flags))
    return frozenset(got) if got is not None else None


def _second_chars(pattern: str, flags: int = 0) -> frozenset[str] | None:
    """Characters the second character of a match of ``pattern`` can be (ASCII), or None if any."""
    if flags & re.I:
        return None
    got = _second_of(list(_parse(pattern, flags)))  # type: ignore[call-overload]
    return frozenset(got) if got is not None else None


def _dispatch(patterns: list[tuple[re.Pattern[str], object]]) -> tuple[dict[str, list], list]:
    """Per first character, the entries whose pattern can match there (order kept)."""
    firsts = [_first_chars(rx.pattern, rx.flags & ~re.S & ~re.U) for rx, _ in patterns]
    table: dict[str, list] = {}
    for c in map(chr, range(128)):
        table[c] = [e for e, f in zip(patterns, firsts) if f is None or c in f]
    anyc = [e for e, f in zip(patterns, firsts) if f is None]
    return table, anyc


# Patterns tried per first character of the text (a header starts with a
# level word, a digit or "["): a line is matched against the few that can
# start there instead of all of them, in the same order.
_OUTER_BY_FIRST, _OUTER_ANY = _dispatch([(rx, None) for rx in _OUTER])
_HEADER_ENTRIES = [(rx, (lv, src, body, _LEVELS, "")) for rx, lv, src, body in _HEADERS] + [
    (rx, (lv, src, body, table, needle)) for rx, lv, src, body, table, needle in _FORMATS
]
_HEADERS_BY_FIRST, _HEADERS_ANY = _dispatch(_HEADER_ENTRIES)  # type: ignore[arg-type]
# Many headers share a first character ("[", a digit, "E") and part at the second ("[2024-",
# "[INFO", "[NeMo"; "ERROR ", "ERRO[", "E0518", "E ["): the candidates per first two ASCII
# characters are filtered once, when such a start is first met.
_SECONDS = {id(e): _second_chars(e[0].pattern, e[0].flags & ~re.S & ~re.U) for e in _HEADER_ENTRIES}
_HEADERS_BY_TWO: dict[str, list] = {}


def _candidates(head: str) -> list:
    """The header entries that can match at the start of ``head``, in order."""
    got = _HEADERS_BY_TWO.get(head[:2])
    if got is not None:
        return got
    first = _HEADERS_BY_FIRST.get(head[:1], _HEADERS_ANY)
    if len(head) < 2 or not head[:2].isascii():
        return first
    d = head[1]
    got = [e for e in first if (s2 := _SECONDS[id(e)]) is None or d in s2]
    _HEADERS_BY_TWO[head[:2]] = got
    return got


_BARE_FIRST = frozenset("[WEIFNweidv")  # what _BARE_LEVEL can start with after its blanks
_SPACED_FIRST = frozenset(" DIWECFT")
_STAMP_FIRST = frozenset("[0123456789")
_EXC_WORDS = ("Error", "Exception", "Exit", "Interrupt", "Failure", "Fault", "Warning", "Timeout", "Exceeded",
              "Cancelled", "Stop")


@dataclass(frozen=True, slots=True)
class Shape:
    """What the header of a line says: ``level`` (debug, info, warning,
    error, fatal or None when the line has no header), ``source`` (logger name
    or ``file:line``, "" if none), ``body`` (the message), ``nccl`` (one of
    NCCL's own lines) and ``category`` (a Python warning class, if any)."""

    level: str | None
    source: str
    body: str
    nccl: bool = False
    category: str = ""


def peel(text: str) -> str:
    """Remove container, shipper, launcher and timestamp tags from the start."""
    changed = True
    while changed and text:
        changed = False
        for rx, _ in _OUTER_BY_FIRST.get(text[0], _OUTER_ANY):
            m = rx.match(text, 0, HEAD_CHARS)
            if m and m.end() < len(text):
                text = text[m.end() :]
                changed = True
    return text


def peel_workers(text: str) -> tuple[list[str], str]:
    """Strip nested worker prefixes; returns their names (outermost first)."""
    names: list[str] = []
    while True:
        m = _WORKER_PAREN.match(text, 0, 160) or _WORKER_BRACKET.match(text, 0, 40)
        if not m:
            return names, text
        names.append(m.group(1).rstrip(", "))
        text = text[m.end() :]


def shape(text: str) -> Shape:
    """Level, source and body of one line (prefixes already peeled)."""
    c = text[:1]
    if c == "{":
        sh = _json_shape(text)
        if sh is not None:
            return sh
    sh = _header(text)
    if sh is not None:
        return sh
    # A time stamp, then a header that carries no date of its own: "2016/07/11 01:09:43 [error]
    # 19985#0: ...", "2023-05-25 00:21:23.008301845 [W:onnxruntime:, ...] ...".
    m = c in _STAMP_FIRST and _STAMP.match(text, 0, HEAD_CHARS)
    if m and m.end() < len(text):
        sh = _header(text[m.end() :])
        if sh is not None:
            return sh
    return shape_inner(text)


def _header(text: str) -> Shape | None:
    """The shape given by the first header pattern that matches at the start of ``text``."""
    head = text[:HEAD_CHARS]
    rest = text[HEAD_CHARS:]
    for rx, (lv, src, body, table, needle) in _candidates(head):
        if needle and needle not in head:
            continue
        m = rx.match(head)
        if m:
            word = m.group(lv) if lv else None
            level = (table.get(word.upper() if len(word) > 1 else word)) if word else None
            inner = shape_inner(m.group(body) + rest)
            source = (m.group(src) or "") if src is not None else ""
            # A header at INFO around a Python warning keeps the warning's level.
            if inner.category and level in (None, "info"):
                return Shape("warning", source, inner.body, inner.nccl, inner.category)
            if inner.nccl:
                return Shape(inner.level, inner.source, inner.body, True)
            return Shape(level, source, m.group(body) + rest)
    return None


# Structured (JSON) lines: pino/bunyan, zap, slog's JSONHandler, tracing's JSON layer,
# python-json-logger, Cloud Logging. Parsed whole when short enough (the C decoder is linear);
# a longer or cut line has its level read by pattern from its start.
JSON_MAX = 16_384
_JSON_LEVEL_KEYS = ("level", "severity", "lvl", "levelname", "log.level", "loglevel")
_JSON_MSG_KEYS = ("msg", "message", "event", "MESSAGE")
_JSON_SOURCE_KEYS = ("logger", "target", "name", "caller", "logger_name", "module")
# pino and bunyan rate by number: 10 trace, 20 debug, 30 info, 40 warn, 50 error, 60 fatal
_JSON_NUMBERS = {10: "debug", 20: "debug", 30: "info", 40: "warning", 50: "error", 60: "fatal"}
_JSON_HEAD_LEVEL = re.compile(r'"(?:level|severity|lvl|levelname)"\s?:\s?(?:"(\w{1,10})"|(\d{2}))')


def _json_level(value: object) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return _JSON_NUMBERS.get(value - value % 10 if 10 <= value <= 60 else -1)
    if isinstance(value, str) and len(value) <= 12:
        return _LEVELS.get(value.upper()) if len(value) > 1 else None
    return None


def _json_shape(text: str) -> Shape | None:
    """Level, source and message of a JSON log line, or None if it is no such line."""
    rec: object = None
    stripped = text.rstrip()
    if len(stripped) <= JSON_MAX and stripped.endswith("}"):
        try:
            rec = json.loads(stripped)
        except (ValueError, RecursionError):
            rec = None
    if isinstance(rec, dict):
        level = next((_json_level(rec[k]) for k in _JSON_LEVEL_KEYS if k in rec), None)
        msg = next((rec[k] for k in _JSON_MSG_KEYS if k in rec), None)
        fields = rec.get("fields")
        if msg is None and isinstance(fields, dict):  # tracing's JSON layer
            msg = fields.get("message")
        if level is None and msg is None:
            return None
        src = next((rec[k] for k in _JSON_SOURCE_KEYS if isinstance(rec.get(k), str)), "")
        if isinstance(msg, dict):  # bunyan's logged Error: {"message": ..., "stack": ...}
            msg = msg.get("message", msg)
        body = msg if isinstance(msg, str) else text if msg is None else json.dumps(msg)[:HEAD_CHARS * 10]
        return Shape(level, src[:200], body)
    m = _JSON_HEAD_LEVEL.search(text, 0, HEAD_CHARS)
    if m is None:
        return None
    level = _json_level(m.group(1) if m.group(1) else int(m.group(2)))
    return Shape(level, "", text) if level is not None else None


def shape_inner(text: str, _stamped: bool = False) -> Shape:
    """Headers that can also appear after another header (NCCL, warnings)."""
    head = text[:HEAD_CHARS]
    m = ("INFO" in head or "WARN" in head or "ERROR" in head or "TRACE" in head) and _NCCL.match(head)
    if m:
        return Shape(_LEVELS.get(m.group(2), "info"), m.group(1) or "nccl", m.group(3) + text[HEAD_CHARS:], True)
    m = "Warning:" in head and _PYWARN.match(head)
    if m:
        cat = m.group(1)
        return Shape("warning", "", m.group(2) + text[HEAD_CHARS:], category=cat)
    m = head.lstrip()[:1] in _BARE_FIRST and _BARE_LEVEL.match(head)
    if m:
        body = m.group(3) + text[HEAD_CHARS:]
        # "[ERROR] 2021-05-11 12:06:27,882 db_stat failed": the time follows the level
        st = body[:1] in _STAMP_FIRST and _STAMP.match(body, 0, HEAD_CHARS)
        if st and ":" in st.group(0) and st.end() < len(body):
            body = body[st.end() :]
        return Shape(_LEVELS[(m.group(1) or m.group(2)).upper()], "", body)
    m = ("arning:" in head or "rror:" in head or "ARNING:" in head or "RROR:" in head or "atal:" in head
         or "ATAL:" in head) and _LIB_LEVEL.match(head)
    if m:
        return Shape(_LEVELS[m.group(2).upper()], m.group(1), m.group(3) + text[HEAD_CHARS:])
    m = ("WARNING " in head or "ERROR " in head) and _LIB_UPPER_LEVEL.match(head)
    if m:
        return Shape(_LEVELS[m.group(2)], m.group(1), m.group(3) + text[HEAD_CHARS:])
    m = "ython" in head[:220] and _INTERPRETER.match(head)
    if m:
        return Shape("error", INTERPRETER_SOURCE, m.group(2) + text[HEAD_CHARS:])
    m = ("level=" in head and _LOGFMT_LEVEL.search(head)) or ('"level"' in head and _JSON_LEVEL.search(head)) or None
    if m and m.group(1).upper() in _LEVELS:
        if m.re is _LOGFMT_LEVEL and _LOGFMT_START.match(head):
            return _logfmt(text, head, _LEVELS[m.group(1).upper()])
        return Shape(_LEVELS[m.group(1).upper()], "", text)
    sp = head.find(" ", 1, 66)
    m = sp > 0 and head[sp + 1 : sp + 5] in _SYSLOG_FACILITY_HEADS and _SYSLOG_PRI.match(head)
    if m:
        return Shape(_SERVER_LEVELS[m.group(1).upper()], m.group(2), m.group(3) + text[HEAD_CHARS:])
    m = "[" in head[:12] and _TAGGED_LEVEL.match(head)
    if m:
        return Shape(_LEVELS[m.group(1)], m.group(2), m.group(3) + text[HEAD_CHARS:])
    m = head[:1] in _SPACED_FIRST and _SPACED_LEVEL.match(head)
    if m:
        body = m.group(2) + text[HEAD_CHARS:]
        # Rust's tracing names its span and target ("ERROR shard-manager: text_generation_launcher:
        # Shard 0 failed"); zap's console encoder its logger or caller between tabs.
        t = body[:1].islower() and _TRACING.match(body, 0, HEAD_CHARS)
        if t:
            return Shape(_LEVELS[m.group(1)], t.group(2) or t.group(1), body[t.end() :])
        t = "\t" in head and _ZAP_CONSOLE.match(body, 0, HEAD_CHARS)
        if t:
            return Shape(_LEVELS[m.group(1)], t.group(1), body[t.end() :])
        return Shape(_LEVELS[m.group(1)], "", body)
    m = head[:1] == "[" and _STRUCTLOG.match(head)
    if m:
        return Shape(_LEVELS[m.group(1).upper()], "", m.group(2) + text[HEAD_CHARS:])
    m = ":  " in head and _COLON_LEVEL.match(head)
    if m:
        return Shape(_COLON_LEVELS[m.group(1)], "", m.group(2) + text[HEAD_CHARS:])
    m = head[:1].isdigit() and ":" in head[:11] and _REDIS_HEAD.match(head)
    if m:
        return Shape(_REDIS_LEVELS[m.group(1)], "", m.group(2) + text[HEAD_CHARS:])
    if _stamped:
        return Shape(None, "", text)
    m = head[:1] in _STAMP_FIRST and _STAMP.match(head)
    if m and m.end() < len(head):
        inner = shape_inner(text[m.end() :], _stamped=True)
        if inner.level is not None or ":" in m.group(0):
            # A time stamp alone is no header of its own: the message starts after it
            # ("[2025-07-11 17:40:16 DP0 TP0] Watchdog timeout", "12:00:01 Error: ...").
            return inner
    return Shape(None, "", text)


def _logfmt(text: str, head: str, level: str) -> Shape:
    """A logfmt line: its message (the ``msg`` value, unquoted) and the fields after it."""
    src = _LOGFMT_SOURCE.search(head)
    m = _LOGFMT_MSG.search(head)
    if m is None:
        return Shape(level, src.group(1) if src else "", text)
    body = text[m.end() :]
    if body[:1] == '"':
        # the quoted value ends at the first quote not escaped by a backslash
        i = 1
        end = min(len(body), HEAD_CHARS * 10)
        while i < end and body[i] != '"':
            i += 2 if body[i] == "\\" else 1
        msg = body[1:i].replace('\\"', '"')
        body = msg + body[i + 1 :]
    return Shape(level, src.group(1) if src else "", body)


def exception_line(body: str) -> tuple[str, str] | None:
    """``(class, message)`` when ``body`` reads like a Python exception line.

    ``torch.OutOfMemoryError: CUDA out of memory``, ``KeyboardInterrupt``,
    ``ray.exceptions.RayTaskError(ActorDiedError): ...``. Warnings are not
    exceptions here (their class ends in ``Warning``).
    """
    c = body[:1]
    if not (c.isalnum() or c == "_") or not any(w in body[:300] for w in _EXC_WORDS):
        return None
    m = _EXC_NAME.match(body, 0, 300)
    if not m:
        return None
    name = m.group(1)
    if name.endswith("Warning"):
        return None
    return name, (m.group(2) or "").strip()
