"""What a line means, judged from its structure first and its wording second.

The rule pack (``builtin_rules.toml`` plus the user's ``[[rule]]`` tables)
names families of messages. On its own, a phrase list generalises poorly:
the same words are fatal from one program and harmless from another. The
judge therefore weighs what the line's structure says (:mod:`anatomy`):

* the level the program gave the line (an INFO line is never fatal on its
  own; glog F and CRITICAL always are) and its source (NCCL's own lines,
  the distributed runtime's C++ error level, an HTTP request handler, an
  autotuner trying candidates);
* the grammar of failure: a Python exception line outside any traceback is
  an uncaught exception; ``Exception ignored in`` is Python saying it
  ignored one; NCCL's ``file.cc:123 -> 3`` is its error trace at INFO level;
  a process, worker, engine or rank that died, was killed or exited non-zero;
  a launcher killing its sibling ranks; a native ``failure file.cu:123``;
* what the message says the program does next: falls back, uses a default,
  ignores, skips (harmless), or retries (not final);
* the stage's kind: in a ``service``, a failure on a request path is a
  warning (the server answers that request with an error and keeps
  serving); only what ends the engine is fatal.

Vocabulary is kept to a few closed word classes (process nouns, death verbs,
fallback verbs), not to messages of particular programs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from eagle3tui.logs.anatomy import INTERPRETER_SOURCE, Shape, exception_line, shape
from eagle3tui.logs import catalog, endings, families, notice_grammar, self_account

# -- word classes ----------------------------------------------------------
_SUBJECT = (
    r"(?:process(?:es)?|proc|procs|worker|workers|child|children|subprocess(?:es)?|rank|ranks|engine|"
    r"actor|job|step|scheduler|executor|runner|replica|daemon|thread|agent|core|coordinator|"
    # a compound that names a server ("Webserver", "API server")
    r"(?:web|http|api|grpc|model|inference)?server|shard|container|pod|"
    r"instance|node)"
)
_DIED = re.compile(
    rf"\b{_SUBJECT}\b[^.;!?]{{0,60}}?\b(?:died|is dead|has died|(?:was|got|were|been) (?:OOM[- ])?killed|"
    r"terminated (?:unexpectedly|with|by|abnormally)|has terminated(?! (?:normally|successfully|gracefully|cleanly))|"
    r"(?:was |got )signall?ed|crashed|aborted|segfaulted|cancell?ed(?! by (?:the )?user))\b"
    rf"|\b(?:dead|killed|crashed|failed)\s{_SUBJECT}\b"
    # a part of the job that could not come up, a container the kernel killed
    rf"|\b{_SUBJECT}\s(?:\w{{1,40}}\s)?failed to (?:start|launch|spawn|initiali[sz]e)\b|\bOOMKilled\b"
    # the sentence's own subject, whatever its name ("vLLM failed to start."), could not come up
    r"|^(?:[\w.-]{1,40}\s){1,3}failed to (?:start|launch|spawn|initiali[sz]e|come up)\b"
    # a framework announcing its own shutdown and its cause ("Horovod has been shut down.
    # This was caused by an exception on one of the ranks")
    r"|\b(?:has been|was|is being) shut ?down\b[^;!?]{0,40}?\b(?:caused by|due to|because of)\b[^;!?]{0,60}?"
    r"\b(?:exception|error|failure|crash)"
    # Kubernetes' states of a container that keeps dying or cannot start, or of a pod the
    # kubelet put out of its node for memory: "Evicted" as a status column, an event's
    # reason or a "Reason:" field ("0/1   Evicted   0   19h", 'reason: "Evicted"'), not a
    # cache's report "Evicted 715 prefix cache block(s)"
    r"|\b(?:CrashLoopBackOff|ImagePullBackOff|ErrImagePull)\b"
    r"|(?-i:(?:^|\s\s|[Rr]eason:\s{1,20}\"?)Evicted(?:\s\s|\"|$))",
    re.I,
)
# The program says that a part of it hangs: "No available shared memory broadcast block
# found in 60 seconds. This typically happens when some processes are hanging or ...".
_HANG_WORDS = re.compile(r"\b(?:hanging|hangs|hung|stuck|deadlocked)\b", re.I)
# A death word as a field's name, with a value that says "no": the raylet lists jobs as
# "Job id 02000000 Driver pid 500 is dead: 0", a status dump says "killed=false".
_FIELD_NO = re.compile(r"\s?[:=]\s?(?:0|false|no|none)\b", re.I)


def _death(body: str) -> re.Match[str] | None:
    """The first death :data:`_DIED` finds in ``body`` that is not a field saying "no"."""
    for m in _DIED.finditer(body):
        if not _FIELD_NO.match(body, m.end()):
            return m
    return None


# The last clause of a sentence in which the program says it stops, after a clause that
# reports why: "Batch 1882: Invalid loss, terminating training", "MQLLMEngine is already
# dead, terminating server process", "Loss is nan, stopping training". What the process
# does next is in the sentence itself; a stop the user asked for gives no failure as its
# reason ("Received SIGTERM, shutting down").
_ENDING_CLAUSE = re.compile(
    r"(?:terminating|stopping|aborting|exiting|shutting down|quitting)(?:\s[\w./()-]{1,40}){0,4}\s?[.!]{0,3}$", re.I
)
_NOT_FINITE = re.compile(r"\b(?:nan|-?inf)\b", re.I)


def _announced_ending(body: str, bits: int) -> bool:
    """Whether ``body`` ends with the program stopping because of the failure it reports first."""
    i = body.rfind(", ")
    if i <= 0 or len(body) - i > 120 or not _ENDING_CLAUSE.match(body, i + 2):
        return False
    cause = body[:i]
    return is_errorish(cause, bits) or _death(cause) is not None or _NOT_FINITE.search(cause) is not None


_LAUNCHER_KILL = re.compile(
    # a launcher or a container runtime killing what runs the job ("Killing container with id
    # docker://notebook", "Killing subprocess 6293")
    r"\b(?:Killing|Terminating)\s(?:sub)?(?:process(?:es)?|containers?|pods?)\b|\bclosing signal SIG[A-Z]{2,6}\b|\bvia signal SIG[A-Z]{2,6}\b"
    r"|\bdeath signal\b|\bkilled by signal\b|\bterminated with signal\b|\bshutting down workers\b"
    r"|\bsigkill_handler\b|\bexited on signal \d{1,2}\b|\bMPI_ABORT was invoked\b|\bcalled MPI_Abort\b",
    re.I,
)
# torch's store-based barrier waits until worker_count equals world_size; the count only grows.
_BARRIER_COUNT = re.compile(r"\(world_size=(\d{1,7}), worker_count=(\d{1,7})")
_NONZERO_EXIT = re.compile(
    r"\b(?:exit(?:ed|s)?|return(?:ed|s)?|failed)\s(?:with\s)?(?:a\s)?(?:non-?zero|(?:return\s|exit\s)?(?:code|status)\s?[=:]?\s?-?[1-9]\d{0,3}\b)"
    r"|\bnon-?zero (?:exit|return) (?:code|status)\b|\bexit ?code\s{0,4}:\s{0,4}-?[1-9]"
    # the status in brackets after the verb: "Worker with PID 88666 exited unexpectedly (code -9)"
    r"|\bexit(?:ed|s)?\b[^.;:()\n]{0,30}\(\s?(?:exit\s|return\s)?(?:code|status)\s?[=:]?\s?-?[1-9]\d{0,3}\s?\)"
    # the bare status after "exited with": "command 'x' exited with 137: , message: ''"
    r"|\bexited with -?[1-9]\d{0,3}\b(?!\s?%)"
    # make's verdict on a recipe ("make: *** [Makefile:18: start] Error 2"); an ignored one has no "***"
    r"|\*\*\* \[[^\]\n]{1,200}\] Error [1-9]\d{0,3}\b",
    re.I,
)
# An exception that ended a thread, as the JVM reports it: 'Exception in thread "main" java.lang.OutOfMemoryError: ...'.
_JAVA_UNCAUGHT = re.compile(r'Exception in thread "[^"\n]{1,100}" ')
_FATAL_WORDS = re.compile(
    r"\bfatal error\b|\bFatal Python error\b|\bunrecoverable\b|\bcannot continue\b|\bcan no longer\b|"
    r"\bterminate called after throwing\b|\bcaught a segfault\b|\bsegmentation fault\b|\bhas crashed\b|"
    r"\bpanicked at\b|\bcommand not found\b|\bsegfault(?:ed)? (?:encountered|detected|occurred)\b|"
    r"^\*\*\* (?:Aborted at|SIG[A-Z]{2,6} received|Error in|Received signal|Signal \d)|"
    # a watchdog that fired: the program's own liveness check declared it hung
    r"\bwatchdog\s(?:timeout|timed out|expired|fired|triggered)\b|"
    r"\bException raised from \S{1,200} at \S{1,300}:\d{1,6}|\bsignal \d{1,2} \(SIG[A-Z]{2,6}\) received\b|\breceived signal SIG[A-Z]{2,6}\b|"
    # a crash signal a parent receives from its child, named without the word "signal"
    # ("Received sigquit from a child process"): SIGTERM and SIGINT are how stops arrive, not crashes
    r"\breceived SIG(?:QUIT|ABRT|SEGV|BUS|ILL|FPE)\b",
    re.I,
)
# A native program reporting a failed check at a source location:
# "Test NCCL failure common.cu:777 'unhandled system error'", "Check failed: x == y".
_NATIVE_FAILURE = re.compile(
    r"\b(?:failure|FAILURE|Failure|failed)\s(?:at\s)?[\w./*-]{1,120}\.(?:c|cc|cpp|cu|cuh|h|hpp|rs|go):\d{1,6}\b|\bCheck failed:"
    # an assertion macro at a source location: "src/llama.cpp:3504: GGML_ASSERT(x) failed",
    # glibc's "prog: file.c:12: f: Assertion `x' failed." (assertions abort the process)
    r"|\.(?:c|cc|cpp|cu|cuh|h|hpp):\d{1,6}:\s[^\n]{0,200}?(?:\b[A-Z][A-Z0-9_]{0,30}ASSERT\w{0,20}\(|\bAssertion\s)"
    r"[^\n]{0,400}?\sfailed\b"
)
_NCCL_TRACE = re.compile(r"(?:^|\s)[\w./-]{1,120}\.(?:cc|cu|h|cpp):\d{1,6}\s->\s([1-9]\d{0,2})\b")
_ERRORISH = re.compile(
    r"\b(?:error|errors|fail(?:ed|ure|s|ing)?|cannot|can't|could ?not|couldn't|unable|not found|no such|"
    r"not available|not installed|missing|invalid|denied|refused|unsupported|not supported|exception|abort(?:ed)?|"
    r"crash(?:ed)?|timed? ?out|overflow(?:ed)?|no \w{1,30} (?:found|available)|no module|returned \d)\b",
    re.I,
)
# Something optional is absent and the program carries on without it.
_ABSENT = re.compile(
    r"\.so\b|\.dll\b|\.dylib\b|shared object|No module named|ModuleNotFoundError|ImportError|"
    r"\bnot (?:found|installed|available|supported)\b|\bno (?:[\w-]{1,30} ){0,2}(?:plugin|module|package|library|driver|extension|backend|kernel|binary|"
    r"implementation|metadata|device|devices|support)(?: [\w-]{1,30}){0,2} (?:was |were |is |are )?(?:found|available)\b|"
    r"\bno module\b|\bcouldn't load\b|\bcan't load\b|\bcould not (?:load|find)\b|\bcannot open\b|\bunable to (?:load|find|open)\b|"
    # a build without an optional part ("PyTorch is not compiled with NCCL support")
    r"\bnot (?:compiled|built) with\b",
    re.I,
)
# The program says what it does instead: harmless for the run at hand.
_FALLBACK = re.compile(
    r"\b(?:fall(?:ing|s)?[ -]?back|instead|using (?:the )?(?:internal|default|native|fallback|auto|generic|"
    r"JIT|CPU|PyTorch|torch|pure[- ]python|slow(?:er)?|reference)|will be ignored|is ignored|"
    r"has no effect|defaults? used|deprecat\w{0,6}|will be removed|no longer (?:needed|used|supported)|"
    r"can be (?:safely )?ignored|safe to ignore|please ignore|(?:are|was|were|been|but|and) ignored|"
    # a change announced for later: FutureWarning's own subject
    r"in (?:a |the )?future(?: (?:version|release)s?)?|"
    r"skipping|will be set to|(?:is|was) set to (?:the )?default|will use (?:the |a |its )?default|"
    r"assuming|best[- ]guess|reducing [\w.-]{1,40} to|setting `?[\w.]{1,40}\s?=|"
    r"(?:will )?proceed(?:ing)? (?:with|without)|(?:processing|continuing|running|starting|training) without|"
    r"already (?:been )?(?:registered|exists?|initiali[sz]ed|loaded|installed|defined|run))\b",
    re.I,
)
# Error words that are a field's name, not an event: "failed=0", "errors: 0", "0 failed",
# "timeout=32s" (a counter of zero failures, a setting).
_FIELD_WORDS = re.compile(
    r"\b(?:fail\w{0,6}|errors?|error_count|exceptions?|timeouts?|crash\w{0,4}|aborted)\s?=\s?[\w.]{1,20}"
    r"|\b(?:fail\w{0,6}|errors?|exceptions?|crash\w{0,4})\s?:\s?0\b|\b0\s(?:fail\w{0,6}|errors?|exceptions?)\b",
    re.I,
)
# An HTTP access line whose status is a server error: Gin's "| 500 |  1.2s |  127.0.0.1 | POST  "/api/chat"".
_ACCESS_5XX = re.compile(
    r"\|\s{1,3}5\d\d\s{1,3}\|\s{1,20}[\d.]{1,12}[µa-z]{0,3}s?\w{0,8}\s{1,3}\|\s{1,20}\S{1,64}\s{1,3}\|\s{1,3}"
    r"(?:GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS)\s"
)
# The same in the common access-log format of uvicorn/gunicorn/nginx: the quoted request,
# then the status ('10.0.0.1:48532 - "POST /v1/chat/completions HTTP/1.1" 500 Internal
# Server Error'). The access logger writes every request at INFO: the status is the outcome.
# Only 500, the handler of that request raising: a 503 answers for the server's state (a
# health check while the engine is stuck), which what comes next decides. A client's own log
# of a response it received ('HTTP Request: POST https://x "HTTP/1.1 500 Internal Server
# Error"') has the status inside the quotes and is not this shape.
_ACCESS_LINE_500 = re.compile(r"\"(?:GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS)\s[^\"]{1,400}\"\s{1,3}500\b")
# A program predicting that what it just found can make this run fail ("This is not
# supported for all configurations of models and can yield errors.", "Either way, this
# might cause trouble in the future"): a modal verb, a verb of causing, then errors or
# trouble. Not a statement that something is absent or replaced (those are harmless), and
# not a certainty about someone's input ("will result in indexing errors").
_PREDICTS_TROUBLE = re.compile(
    r"\b(?:can|may|might|could)\s(?:\w{1,12}\s)?(?:yield|cause|lead to|result in|produce|trigger)\s"
    r"(?:\w{1,15}\s){0,3}?(?:errors?|trouble|problems?|failures?|crash(?:es)?|hang(?:s|ing)?|deadlocks?)\b"
    # ... said outright: "This can potentially cause a hang if this rank to GPU mapping is
    # incorrect" is advice about a case the program does not know it is in.
    r"(?![^.;]{0,200}\bif\b)",
    re.I,
)
_TROUBLE_VERBS = ("yield", "cause", "lead to", "result in", "produce", "trigger")
# The fp16 loss scaler's counter: the value it tried and the one it lowers to
# ("Attempted loss scale: 64.0, reducing to 32.0", "reducing loss scale to 2.0").
_LOSS_SCALE_VALUE = re.compile(r"(?:loss scale:?|reducing (?:loss scale )?to)\s{1,3}(\d{1,12}(?:\.\d{1,6})?)\b", re.I)
# Scalers start at 2**16 (apex, DeepSpeed's default) or higher, halve on an overflow and
# grow back after a run of good steps: a healthy run overflows a few times and settles in
# the thousands. Below 2**7 the scaler has halved on nearly every step for a long while:
# the gradients overflow even when barely scaled, so steps keep being skipped (and at the
# scaler's minimum the run stops: "Current loss scale already at minimum").
_COLLAPSED_SCALE = 128.0
# The thing a server serves, or a job trains, cannot be loaded or found: nothing
# can run without it ("Unable to load model: /x.gguf", "failed to create context
# with model '...'", "failed to poll model 'dne': model not found").
_MODEL_UNUSABLE = re.compile(
    r"\b(?:unable to|failed to|could not|couldn't|cannot|can't)\s(?:[\w-]{1,20}\s){0,2}?"
    r"(?:load|create|initiali[sz]e|open|read|find|poll|build)\s(?:[\w-]{1,20}\s){0,3}?(?:model|weights|checkpoint)\b"
    r"|\bmodel\s\S{1,200}\s(?:is\s|was\s)?not found\b",
    re.I,
)
# A named step of the job reports its own failure at the program's ERROR level
# ("[ERROR] db_stat failed: please check the following logs"): the sentence is
# its subject and "failed", nothing after it but the pointer to the details.
_STEP_FAILED = re.compile(r"^(?:the\s)?[\w./-]{1,40}(?:\s[\w./-]{1,40}){0,2}\sfailed(?:\s?[.:!]|$)", re.I)
# A sentence in the conditional mood is advice about what may happen, not a
# report of what did ("If you get `CUDA error: invalid device function` errors,
# the above might be the cause ...", "If the job was killed, check dmesg").
_CONDITIONAL = re.compile(r"[Ii]f (?:you|we|this|that|the|it|there|your|a|an|any)\b")
# At WARNING level, an input the program does not know (a setting, variable or
# argument): it ignores it and goes on ("Unknown vLLM environment variable
# detected: VLLM_HOST", "Unrecognized setting of RAY_BACKEND_LOG_LEVEL=0").
_IGNORED_INPUT = re.compile(
    r"\b(?:unknown|unrecogni[sz]ed|unsupported)\s(?:[\w.-]{1,30}\s){0,2}?(?:setting|variable|argument|kwarg|key|"
    r"option|parameter|field|flag)s?\b|\bunrecogni[sz]ed setting\b",
    re.I,
)
# A warning whose last word says what the program did with a bad input, and it goes
# on: "2 duplicate labels removed", "ALTS creds ignored.", "3 corrupt images skipped".
_DISCARDED = re.compile(r"\b(?:removed|skipped|ignored|dropped|discarded)\s?[.!]?\s*$")
# A message that announces the lines after it: it ends with a colon, or with "the
# following <things>" (pip's resolver report before its list of conflicts).
_INTRODUCES_LIST = re.compile(r"(?::|\bthe following(?: [\w-]{1,30}){1,3}[.:]?)\s*$", re.I)
# At WARNING level, a thing the program looked for and did not find: it goes on without it.
_CANNOT_FIND = re.compile(r"\bcan(?:no|')t find\b", re.I)
_SUBSTITUTION = re.compile(
    r"\b(?:instead|defaults? used|will be set to|assuming|reducing [\w.-]{1,40} to|setting `?[\w.]{1,40}\s?=)",
    re.I,
)
_RECOVERY = re.compile(
    r"\b(?:restart(?:ing|ed)?|respawn(?:ing|ed)?|retry(?:ing)?|retrying|reconnect(?:ing|ed)?|recover(?:ing|ed))\b", re.I
)
# -- harmless by its own account (step 7) -------------------------------------
# The program says what it goes on with instead, or without: it switches or rolls
# back to another way ("did not find MPI-launcher specific variables, switch to
# ATL/OFI"), tries another source for the same thing ("could not get local_idx from
# environment variables, trying to get them from ATL"), or names a capability it now
# lacks as a state ("8-bit optimizers ... are unavailable.", "NVIDIA monitoring
# disabled.", "Optional value for parameter x will not be set.", "some optimizations
# will not be enabled", "disabling CUDA graphs due to GPU architecture").
_GOES_WITHOUT = re.compile(
    r"\b(?:switch(?:es|ed|ing)?|roll(?:s|ed|ing)?[ -]?back|revert(?:s|ed|ing)?) to\b"
    r"|\btrying (?:to (?:get|read|find|use|load) (?:it|them|this|that|one) )?(?:from|via|another|the next)\b"
    r"|\b(?:is|are|was|were|has been|have been|will be)\s(?:now\s|therefore\s|thus\s)?(?:unavailable|disabled)\b"
    r"|\bwill not be (?:set|enabled|used|loaded|applied|available|checked)\b"
    r"|\b[\w-]{2,40}\s(?:[\w-]{2,40}\s)?disabled\s?[.!]?\s*$"
    r"|\bdisabling\s(?:[\w-]{1,30}\s){1,4}(?:due to|because|since)\b",
    re.I,
)
# A capability the program turns off on the platform it runs on, because it exists only
# elsewhere ("Async output processing is only supported for CUDA, TPU, XPU. Disabling it
# for other platforms."): the same state as "disabling CUDA graphs due to GPU
# architecture", told by where it runs instead of why. The run goes on without it.
_OFF_HERE = re.compile(
    r"\bdisabling\s(?:[\w-]{1,30}\s){1,4}for\s(?:other|this|the current|unsupported|non-[\w-]{1,20})\s"
    r"(?:platforms?|devices?|hardware|backends?|GPUs?|architectures?)\b",
    re.I,
)
# The part that failed is bookkeeping the job does not need: its own log, a cache
# file, telemetry or usage statistics, a monitor, a check for a newer version
# ("save gpu log failed", "failed to read cache file", "There was an error checking
# the latest version of pip."). The noun must be what the verb acts on (or the
# subject that failed): "see the log for details" after a failure names no such part.
_AUX_NOUN = (
    r"(?:logs?|log files?|cache(?: files?| dir(?:ectory)?)?|telemetry|usage stats?|usage statistics|"
    r"monitoring|latest version|version check|update check)"
)
_AUXILIARY = re.compile(
    rf"\b(?:sav|writ|read|upload|send|flush|rotat|open|updat|fetch|sync)\w{{0,4}}\s(?:the\s|a\s|its\s)?"
    rf"(?:[\w-]{{1,20}}\s){{0,2}}{_AUX_NOUN}\b"
    rf"|\b{_AUX_NOUN}\s(?:[\w-]{{1,20}}\s)?(?:failed|error)\b"
    # a check for a newer version of the program itself
    r"|\bcheck\w{0,4}\s(?:the\s)?(?:latest version|for (?:a\s)?(?:new(?:er)?\s)?(?:version|updates?))\b",
    re.I,
)
# A probe or lookup failed, not the job: a check, query or inspection that found
# nothing ("Error trying to work out if we can handle ...: error inspecting
# container", "GetLatestSample returned No data is available for entityId 0",
# "Failed to execute command: nvidia-smi --query-gpu=...", "error checking ...").
_PROBE = re.compile(
    r"\berror (?:while |when )?(?:checking|inspecting|querying|probing|looking up)\b"
    r"|\b(?:failed|unable|could ?not|couldn't|cannot|can't) (?:to )?(?:check|query|probe|inspect|look ?up|work out)\b"
    r"|\berror trying to (?:work out|find out|check)\b"
    r"|\breturned no data\b|\bno data (?:is |was )?available\b"
    r"|\s--query[-=]\w",
    re.I,
)
# The level word of a header the anatomy did not take apart ("LAUNCH WARNING
# 2023-02-16 ...", "[nvidiamon] [warning] ...", "| ERROR    | nos.common...",
# "<warn>"): the program's own level, read where step 7 weighs a line by it.
_INLINE_LEVEL = re.compile(
    r"[\[<|]\s?(?P<a>warn(?:ing)?|error|info|debug)\s*[\]>|]"
    r"|\b(?P<b>WARN(?:ING)?|ERROR|INFO|DEBUG)\s\d{4}-\d\d-\d\d\b",
    re.I,
)
_INLINE_NAMES = {"warn": "warning", "warning": "warning", "error": "error", "info": "info", "debug": "debug"}


def _inline_level(body: str) -> str | None:
    """The level word near the start of a line whose header was not parsed, or None."""
    m = _INLINE_LEVEL.search(body[:100])
    if m is None:
        return None
    return _INLINE_NAMES.get((m.group("a") or m.group("b")).lower())


# Sources of request handling: a failure here fails one request.
_REQUEST_SOURCE = re.compile(
    r"serving|api_server|tool_parser|reasoning_parser|openai|uvicorn|starlette|fastapi|routing|router|"
    r"endpoint|handler|http|asgi|protocol|chat_utils|tokenizer_manager|webui|gradio",
    re.I,
)
_REQUEST_FRAME = re.compile(
    r"[/\\](?:uvicorn|starlette|fastapi|aiohttp|werkzeug|flask|sanic|tornado|gradio|grpc|litestar)[/\\]"
    r"|[/\\](?:serving_\w{1,40}|api_server|\w{1,40}_tool_parser|http_server|openai_api_server)\.py"
    r"|\bin (?:run_asgi|handle_request|dispatch_request|create_\w{0,30}completion\w{0,30}|\w{1,40}_stream_generator|"
    r"\w{1,40}_full_generator|extract_tool_calls\w{0,20}|on_request|_handle_errors_and_metrics|handle_http_request|"
    r"generate_request|v1_\w{1,40}|openai_v1_\w{1,40}|process_request_thread|handle_one_request|do_(?:GET|POST|PUT|PATCH|DELETE))\b"
    # Go's HTTP server runs each request's handler in its own goroutine: these frames mean a handler.
    r"|\bnet/http\.(?:HandlerFunc\.ServeHTTP|\(\*conn\)\.serve)"
)
_REQUEST_WORDS = re.compile(
    r"Exception in ASGI application|\bError in (?:preprocessing prompt|\w{1,40} (?:stream )?generator|"
    r"extracting tool call|chat_completion\w{0,30})|\bRequest (?:failed|\S{1,80} failed)\b|\bBad request\b",
    re.I,
)
# -- gates -----------------------------------------------------------------
# Every match of a detector above contains one of its literals (lower-cased).
# One Aho-Corasick pass over the lower-cased line sets a bit per detector
# whose literal occurs; a detector's regex runs only when its bit is set.
# The regex still decides: the gates only skip the ones that cannot match
# (Python's re tries each \b-led alternative of an IGNORECASE pattern at
# every position: 100 us for one 150-character line without them).
_GATES: dict[str, tuple[str, ...]] = {
    "died": ("died", "dead", "killed", "terminated", "crashed", "aborted", "segfaulted", "cancel", "failed", "signaled",
             "signalled", "failed to ", "backoff", "errimagepull", "shut down", "shutdown", "evicted"),
    "launcher": ("killing", "terminating", "signal", "shutting down workers", "sigkill_handler", "mpi_abort"),
    "nonzero": ("code", "status", "zero", "exited with", "*** ["),
    "fatal": ("fatal", "unrecoverable", "cannot continue", "can no longer", "terminate called after throwing",
              "segfault", "segmentation fault", "has crashed", "panicked at", "command not found", "***",
              "exception raised from", "signal", "watchdog", "received sig"),
    "native": ("fail",),
    "nccl_trace": ("->",),
    "errorish": ("error", "fail", "cannot", "can't", "could", "unable", "found", "no such", "available",
                 "installed", "missing", "invalid", "denied", "refused", "unsupported", "supported", "exception",
                 "abort", "crash", "time", "overflow", "no module", "returned"),
    "absent": (".so", ".dll", ".dylib", "shared object", "module", "importerror", "found", "installed", "available",
               "supported", "couldn't load", "can't load", "could not", "cannot open", "unable to", "compiled with",
               "built with"),
    "fallback": ("fall", "instead", "using ", "ignore", "no effect", "default", "deprecat", "will be removed", "future",
                 "no longer", "skipping", "proceed", "without", "already", "set to", "assuming", "reducing ",
                 "setting ", "best-guess", "best guess"),
    "recovery": ("restart", "respawn", "retry", "reconnect", "recover"),
    "autotune": ("select_algorithm", "autotun", "benchmark choice", "no valid triton configs"),
    "request_words": ("exception in asgi application", "error in ", "request ", "bad request"),
    "dist": ("processgroup", "socket.cpp", "tcpstore", "c10d", "ncclutils.cpp"),
    "model": ("model", "weights", "checkpoint"),
    "without": ("switch", "roll", "revert", "trying ", "unavailable", "disabled", "disabling", "will not be"),
    "auxiliary": ("log", "cache", "telemetry", "usage stat", "monitoring", "latest version", "version check",
                  "update check", "check"),
    "probe": ("checking", "inspecting", "querying", "probing", "looking up", "check", "query", "probe", "inspect",
              "look up", "lookup", "work out", "find out", "no data", "--query"),
    "hang": ("hanging", "hangs", "hung", "stuck", "deadlocked"),
    "startup": ("timed out", "timeout", "time out", "timedout", "ready within", "ready after", "ready in ",
                "did not become ready", "failed to start within", "failed to come up within",
                "failed to become ready within"),
    "decided": notice_grammar.GATE_LITERALS,
    "self": self_account.GATE_LITERALS,
}
_BIT = {name: 1 << i for i, name in enumerate(_GATES)}
(G_DIED, G_LAUNCHER, G_NONZERO, G_FATAL, G_NATIVE, G_NCCL_TRACE, G_ERRORISH, G_ABSENT, G_FALLBACK, G_RECOVERY,
 G_AUTOTUNE, G_REQUEST_WORDS, G_DIST, G_MODEL, G_WITHOUT, G_AUXILIARY, G_PROBE, G_HANG, G_STARTUP, G_DECIDED,
 G_SELF) = (
    _BIT[n] for n in _GATES
)
_GATE_LITS: list[str] = []
_GATE_BITS: list[int] = []
for _name, _lits in _GATES.items():
    for _lit in _lits:
        if _lit in _GATE_LITS:
            _GATE_BITS[_GATE_LITS.index(_lit)] |= _BIT[_name]
        else:
            _GATE_LITS.append(_lit)
            _GATE_BITS.append(_BIT[_name])
try:
    import ahocorasick_rs as _ahocorasick

    _GATE_AC: object | None = _ahocorasick.AhoCorasick(_GATE_LITS)
except ImportError:  # pragma: no cover - a declared dependency
    _GATE_AC = None


def gate_bits(text: str) -> int:
    """Bits of the detectors that could match ``text`` (see ``_GATES``)."""
    low = text.lower()
    bits = 0
    if _GATE_AC is not None:
        for p, _s, _e in _GATE_AC.find_matches_as_indexes(low, overlapping=True):  # type: ignore[attr-defined]
            bits |= _GATE_BITS[p]
        return bits
    for lit, bit in zip(_GATE_LITS, _GATE_BITS):  # pragma: no cover
        if lit in low:
            bits |= bit
    return bits


_CATCH_ALL = catalog.with_flag("catch-all")  # "level-header" is dropped before use
# A training loop's counter record: a step/iteration/epoch counter and two more numeric
# fields ("step=12 optimizer_step_total=12 lr=9.734e-05 loss=6.0625").
_COUNTER_RECORD = re.compile(
    r"\b(?:step|global_step|iter|iteration|epoch)\s?[=:]\s?\d{1,12}\b"
    r"(?:[^=\n]{1,40}?[=:]\s?-?\d{1,12}(?:\.\d{1,12})?(?:e-?\d{1,3})?\b){2}",
    re.I,
)
# The message's own first word is a fatal level, whatever the header said:
# Go's "panic: ", redis's "# Fatal: Can't initialize Background Jobs", "FATAL: ...".
_FATAL_HEADS = ("panic: ", "Fatal: ", "FATAL: ", "Fatal error: ", "FATAL ERROR: ")
# CPython's fixed headers for an exception it prints and does not let stop anything
# (``Lib/atexit`` and ``Lib/site.py``): the traceback after them is that report's.
_INTERPRETER_WENT_ON = ("Error in atexit._run_exitfuncs", "Error processing line ")
# Autotuning compiles candidate kernels and drops the ones that fail.
_AUTOTUNE = re.compile(r"select_algorithm|autotun|benchmark choice|No valid triton configs", re.I)
# A start-up that never completed, told as the timeout of the wait for it: a part (a
# runner, the engines, the workers or clients that must join) was waited for and did not
# come ("timed out waiting for llama runner to start", "Timed out after 601 seconds
# waiting for clients. 1/2 clients joined."), or the server was not ready in the time it
# was given ("did not become ready", "not ready within 300 seconds"). A wait for a
# response, a lock or data is a request's, not a start-up's.
_STARTUP_TIMED_OUT = re.compile(
    r"\b(?:timed? ?out|timeout)\b[^.;!?\n]{0,40}?\bwaiting (?:for|on)\s(?:the\s|all\s|an?\s)?(?:[\w-]{1,30}\s){0,3}?"
    r"(?:(?:to|until)\s(?:\w{1,20}\s)?(?:start|become ready|be ready|come up|initiali[sz]e|join|check in)\b"
    r"|(?:workers?|clients?|engines?|shards?|runners?|ranks?|nodes?|peers?|replicas?|processes|procs|pods?|containers?)"
    r"(?=[\s.,;:!)\"'-]|$)(?!\s(?:to\s)?(?:respond|reply|finish|complete|return|send results|release)))"
    r"|\b(?:not|never)\s(?:become\s|became\s|get\s|got\s)?ready\s(?:within|after|in)\s\d"
    r"|\bdid not become ready\b|\bfailed to (?:start|become ready|come up) within\b",
    re.I,
)
# The distributed runtime's own C++ error level precedes a failure of the job.
_DIST_SOURCE = re.compile(r"ProcessGroup\w{0,20}\.cpp|socket\.cpp|TCPStore\w{0,20}\.cpp|c10d|NCCLUtils\.cpp", re.I)
# Families that report a death, whatever level they are logged at; families that break
# the process or the device for every later request (flags in the registry).
_DEATH_FAMILIES = catalog.with_flag("death")
_ENGINE_FAMILIES = catalog.with_flag("engine")


@dataclass(frozen=True, slots=True)
class Verdict:
    """The judgement of one line.

    ``pending`` verdicts are fatal unless the process shows it went on
    (tracebacks and uncaught exceptions work this way already);
    ``recoverable`` ones are fatal unless a restart or retry follows soon.
    """

    kind: str
    rule: str
    explanation: str
    action: str = ""
    pending: bool = False
    recoverable: bool = False
    held: bool = False


# Every family's explanation and action, from the registry (families.toml): one place
# for the words a user reads, whichever module makes the verdict.
EXPLAIN: dict[str, tuple[str, str]] = {f.id: (f.explanation, f.action) for f in families.code_families().values()}


def _scale_collapsed(body: str) -> bool:
    """Whether an fp16 overflow line shows the loss scale fallen below :data:`_COLLAPSED_SCALE`."""
    values = [float(m.group(1)) for m in _LOSS_SCALE_VALUE.finditer(body[:600])]
    return bool(values) and min(values) < _COLLAPSED_SCALE


def make(kind: str, rule: str, *, pending: bool = False, recoverable: bool = False, held: bool = False) -> Verdict:
    """A verdict of a structural detector, with its explanation and action.

    ``rule`` must be a family of the registry (KeyError naming it otherwise).
    """
    try:
        expl, action = EXPLAIN[rule]
    except KeyError:
        families.family(rule)  # raises, with "did you mean"
        raise
    return Verdict(kind, rule, expl, action, pending, recoverable, held)


def _from_rule(rule: object) -> Verdict:
    return Verdict(rule.kind, rule.id, rule.explanation, rule.action)  # type: ignore[attr-defined]


def is_request_frame(line: str) -> bool:
    """Whether a traceback line shows request handling (HTTP/ASGI, an OpenAI endpoint)."""
    return _REQUEST_FRAME.search(line) is not None


def is_request_source(text: str, sh: Shape | None = None, bits: int | None = None) -> bool:
    """Whether a line was logged by, or names, a request path.

    ``sh`` and ``bits`` (:func:`gate_bits` of the line) save work when known.
    """
    sh = sh if sh is not None else shape(text)
    if sh.source and _REQUEST_SOURCE.search(sh.source):
        return True
    if bits is not None and not bits & G_REQUEST_WORDS:
        return False
    return _REQUEST_WORDS.search(sh.body) is not None


def is_errorish(body: str, bits: int) -> bool:
    """Whether ``body`` reports an error, a failure or something missing.

    Error words used as a field's name do not count: ``failed=0``,
    ``errors: 0``, ``timeout=32s`` describe a counter or a setting.
    """
    if not bits & G_ERRORISH:
        return False
    m = _ERRORISH.search(body)
    if m is None:
        return False
    if "=" not in body and ": 0" not in body and "0 " not in body:
        return True
    return _ERRORISH.search(_FIELD_WORDS.sub(" ", body)) is not None


def is_recovery(text: str, bits: int | None = None) -> bool:
    """A line saying that a failed part is restarted, retried or reconnected."""
    if bits is not None and not bits & G_RECOVERY:
        return False
    return _RECOVERY.search(text[:400]) is not None


# What a line after an error says the process did next (see :func:`next_step`).
# A part of the job starts again or anew: a worker boots, a process is spawned,
# an epoch or a step begins.
_PART = r"(?:worker|process|child|engine|replica|executor|shard|actor|runner|subprocess)"
_RESTARTED = re.compile(
    rf"\b(?:boot(?:ing|ed)|start(?:ing|ed)|spawn(?:ing|ed)|respawn(?:ing|ed)|launch(?:ing|ed)|fork(?:ing|ed))"
    rf"\s(?:up\s)?(?:a\s|the\s|new\s|another\s)?(?:\w{{1,20}}\s)?{_PART}e?s?\b"
    rf"|\b(?:new|another|replacement)\s{_PART}\b"
    rf"|\b{_PART}\b[^.;!?]{{0,40}}?\b(?:started|booted|spawned|respawned|is up|came up)\b"
    r"|^(?:starting|beginning|start of|begin)\s(?:epoch|step|iteration|round|training|evaluation)\b"
    # a supervisor starting a program again under its name ("spawned: 'postgresql' with pid 1288")
    r"|\bspawned:?\s'?[\w.@-]{1,60}'?\swith pid\b",
    re.I,
)
# A server answering: an access line with a 2xx status, or the server saying it serves.
_SERVING = re.compile(
    r"\"(?:GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS)\s[^\"]{0,400}\"\s{1,3}2\d\d\b"
    r"|\b(?:GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS)\s\S{1,300}\s\S{0,64}\s?2\d\d\b"
    r"|\b(?:ready to accept connections|accepting connections|listening on|startup complete|"
    r"server is ready|ready to serve|serving on|uvicorn running on|server started)\b",
    re.I,
)
# A server failing a request (5xx): not evidence that it serves.
_ACCESS_FAILED = re.compile(r"\"\s{1,3}5\d\d\b|\s5\d\d\s(?:Service Unavailable|Internal Server Error|Bad Gateway|Gateway Timeout)\b")
# The process is on its way out.
_ENDING = re.compile(
    r"\b(?:SIG[A-Z]{2,6} received|received (?:signal|SIG[A-Z]{2,6})|signal \d{1,2} received|"
    r"shutting down|shut(?:ting)? ?down (?:the )?(?:server|engine|workers?|shards?)|exiting|terminating|"
    r"terminated|aborting|aborted|killed|stopping (?:the )?(?:server|engine|workers?|job))\b",
    re.I,
)


# A death that announces the process's own way out ("..., shutting down client.",
# "shutting down executor"): no later answer shows that the server outlived it.
_GOING_DOWN = re.compile(r"\b(?:shutting down|shut ?down|exiting|aborting|stopping)\b", re.I)


def announces_shutdown(text: str) -> bool:
    """Whether a line says the process that wrote it is going down."""
    return _GOING_DOWN.search(text[:600]) is not None


def answered_request(text: str) -> bool:
    """Whether ``text`` is a server's access line for a request it answered, with any status.

    A 500 is an answer too: the server that wrote it is alive, whatever
    failed inside it (``[GIN] ... | 500 | ... | POST "/api/generate"``).
    """
    body = text[:600]
    return bool(_SERVING.search(body) or _ACCESS_FAILED.search(body) or "| 5" in body and _ACCESS_5XX.search(body))


# An access line whose status is 503: the server is up but says it cannot serve (its
# engine is dead or not ready): 'POST /v1/models HTTP/1.1" 503', "| 503 |", "503 Service Unavailable".
_UNAVAILABLE = re.compile(r"\"\s{1,3}503\b|\|\s{1,3}503\s{1,3}\||\b503 Service Unavailable\b")


def unavailable_answer(text: str) -> bool:
    """Whether ``text`` answers a request with 503: the server says it cannot serve it."""
    return "503" in text[:600] and _UNAVAILABLE.search(text[:600]) is not None


def next_step(text: str, sh: Shape | None = None) -> str | None:
    """What a line that follows an error says the process did next, if anything.

    ``"ending"``: it is being stopped or is shutting down; ``"restarted"``: a
    part starts again or anew (a worker boots, an epoch begins);
    ``"serving"``: a server answers requests; ``"carried-on"``: an ordinary
    line at the program's INFO/DEBUG level, with nothing error-looking in it.
    None: the line says nothing about it (no level, another error).
    Judged on the line's structure: its level, then the shape of its message.
    """
    sh = sh if sh is not None else shape(text)
    body = sh.body[:400]
    if sh.level in ("error", "fatal") or exception_line(body) is not None:
        return None
    if _ENDING.search(body):
        return "ending"
    if _ACCESS_FAILED.search(body):
        return None
    if _RESTARTED.search(body) or sh.source and "spawned" in sh.source and _RESTARTED.search(f"{sh.source}: {body}"):
        # (a supervisor's "spawned: 'x' with pid N" reads as a logger name and a message)
        return "restarted"
    if _SERVING.search(body):
        return "serving"
    if sh.level in ("info", "debug") and not is_errorish(body, gate_bits(body)):
        return "carried-on"
    return None


def judge_line(text: str, rule: object | None, stage_kind: str = "task", sh: Shape | None = None) -> Verdict | None:
    """The verdict for one line (worker prefix removed), or None for an ordinary line.

    ``rule`` is the first matching rule of the rule set, or None.
    """
    sh = sh if sh is not None else shape(text)
    body = sh.body
    level = sh.level
    if getattr(rule, "id", "") == "level-header":
        # That pack rule only brings a line whose header carries a level
        # (glog's "E0518 ...", Ray's "[... W pid tid]") here: the level decides.
        rule = None
    rkind = getattr(rule, "kind", None)
    g = gate_bits(sh.source + " " + body if sh.source else body)
    # 1. Python itself says the exception was ignored.
    if body.startswith("Exception ignored in") or (body.startswith("Exception ") and body.rstrip().endswith(" ignored")):
        return make("benign", "exception-ignored")
    # Python's header for a thread's exception that it attributes to its own shutdown.
    if body.startswith("Exception in thread ") and "during interpreter shutdown" in body:
        return make("benign", "exception-ignored")
    # The interpreter's own reports of an exception it printed and went on from: an exit
    # function that raised while the interpreter exits (the exit status is not changed),
    # a ``.pth`` line the site module could not run ("Remainder of file ignored" follows).
    if body.startswith(_INTERPRETER_WENT_ON) and body.rstrip().endswith(":"):
        return make("benign", "exception-ignored")
    # 2. The user's rules know the job best; the pack's specific harmless
    #    families come next (they name exactly what is harmless).
    # User rules and the Slurm pack (it matches only slurmstepd/srun's own wording) are authoritative.
    if rule is not None and getattr(rule, "source", "builtin") in ("user", "slurm"):
        return _from_rule(rule)
    if rkind == "benign" and rule.id == "fp16-overflow-skip" and _scale_collapsed(body):  # type: ignore[union-attr]
        return make("warning", "loss-scale-collapsed")
    if rkind == "benign":
        # A harmless family the program logged at INFO/DEBUG without any
        # error-looking word ("Server is not up yet. Retrying in 2.0
        # seconds..."): nothing looks wrong, so it is plain information.
        if level in ("info", "debug") and not sh.nccl and not is_errorish(body, g):
            return None
        return _from_rule(rule)
    service = stage_kind == "service"
    # 2a. The interpreter itself reports that it could not start the program
    #     ("python3: can't open file", "python: No module named x"): not a
    #     library missing an optional part, the stage's command is wrong.
    if sh.source == INTERPRETER_SOURCE:
        return make("fatal", "interpreter-failed")
    # 2b. Advice in the conditional mood, without an error level of its own.
    if body[:3] in ("If ", "if ") and level not in ("error", "fatal") and _CONDITIONAL.match(body):
        return None
    # 3. NCCL's own lines: its INFO-level error trace, its WARN-level failures.
    if sh.nccl:
        if level == "info" and g & G_NCCL_TRACE and _NCCL_TRACE.search(body):
            return make("fatal", "nccl-error-trace")
        if level in ("warning", "error"):
            if g & G_ABSENT and _ABSENT.search(body):
                return make("benign", "optional-missing")
            if g & G_ERRORISH and _ERRORISH.search(body) or "truncated" in body:
                return make("fatal", "nccl-failure")
            if g & G_FALLBACK and _FALLBACK.search(body) or _IGNORED_INPUT.search(body):
                return _from_rule(rule) if rule is not None else make("warning", "python-warning")
            # NCCL prints its failures at WARN, in its own words: "Bootstrap Root : rank 1 of 8
            # ranks has already checked in", "Net : Connection closed by remote peer". Fatal
            # unless the job shows it went on (progress after it).
            return make("fatal", "nccl-failure", pending=True)
        if g & G_ERRORISH and _ERRORISH.search(body):
            return make("benign", "nccl-info")
        return _from_rule(rule) if rule is not None and rkind == "info" else None
    # 4. A process of the job died or was killed; a launcher kills ranks.
    #    Not in a line whose own class is a warning ("(node:1) UnhandledPromiseRejectionWarning:
    #    Error: Exited with code 1"): the death it quotes is the subject of an error it reports
    #    and goes on from (the pack's death families still count, below).
    deaths = 0 if sh.category else g
    if deaths & G_LAUNCHER and _LAUNCHER_KILL.search(body):
        return make("fatal", "launcher-kill", recoverable=level == "warning")
    if deaths & G_DIED and _death(body) is not None and not (g & G_FALLBACK and _FALLBACK.search(body)):
        return make("fatal", "process-died", recoverable=level == "warning" or service)
    if deaths & G_NONZERO and _NONZERO_EXIT.search(body):
        # A server's manager restarts a worker that exited (gunicorn, Ray
        # Serve): as for a death, fatal unless a restart follows.
        return make("fatal", "nonzero-exit", recoverable=level == "warning" or service)
    if deaths:
        # The same told in the shapes of other supervisors and launchers (endings.py): an
        # exit status in systemd's or supervisord's words, a part declared dead, a part that
        # could not be started, named after the verb, a record whose verb is the ending.
        ended = endings.ending_reported(body, lambda cause: is_errorish(cause, gate_bits(cause)))
        if ended is not None:
            rule, final = ended
            return make("fatal", rule, recoverable=not final and (level == "warning" or service))
    if "worker_count=" in body:
        # A barrier counter above its total: a shape that can never reach its end.
        m = _BARRIER_COUNT.search(body)
        if m is not None and int(m.group(2)) > int(m.group(1)):
            return make("fatal", "barrier-overfull")
    exc = exception_line(body)
    if exc is None and body.startswith('Exception in thread "'):
        # The JVM's report of an exception nothing caught: the class follows the thread's name.
        m = _JAVA_UNCAUGHT.match(body)
        exc = exception_line(body[m.end() :]) if m else None
    # 5. Fatal by level or by the program's own words.
    if level == "fatal" or g & G_FATAL and _FATAL_WORDS.search(body) or body.startswith(_FATAL_HEADS):
        return make("fatal", "fatal-level") if rkind != "fatal" else _from_rule(rule)
    # 5a. The program says it stops, and why: fatal unless it shows it went on (the
    #     notice printed by a callback whose stop did not take: progress follows).
    if exc is None and level != "debug" and not sh.category and ", " in body and _announced_ending(body, g):
        return make("fatal", "announced-ending", pending=True)
    # 5b. The program reports a hang at its INFO/WARNING level (or none): worth knowing;
    #     whether the job is stuck only time tells (the stall detector's part).
    if exc is None and level in (None, "info", "warning") and g & G_HANG and _HANG_WORDS.search(body):
        return make("warning", "hang-reported")
    # 5c. A start-up that never completed, told as a timeout (not at the program's INFO or
    #     DEBUG level, and not with a retry in the same line: then it is still trying). In a
    #     server that goes on serving, one model's start failed, not the server (pending).
    if (exc is None and level not in ("info", "debug") and g & G_STARTUP and _STARTUP_TIMED_OUT.search(body)
            and not is_recovery(body, g)):
        return make("fatal", "startup-timed-out", pending=service)
    if (
        level == "error"
        and g & G_DIST
        and sh.source
        and _DIST_SOURCE.search(sh.source)
        and not (g & G_FALLBACK and _FALLBACK.search(body))
    ):
        if rkind == "fatal":
            return _from_rule(rule)
        return make("fatal", "nccl" if "NCCL" in sh.source else "dist-runtime-error")
    if g & G_NATIVE and _NATIVE_FAILURE.search(body):
        return make("fatal", "native-check-failed")
    # 6. Families of fatal errors from the pack, weighed by who says it.
    if rkind == "fatal":
        rid = getattr(rule, "id", "")
        if g & G_AUTOTUNE and _AUTOTUNE.search(sh.source + " " + body):
            return make("benign", "autotune-candidate")
        if g & G_SELF and exc is None and rid not in _DEATH_FAMILIES and self_account.clears_itself(body):
            # The program that hit the failure says in the same line that it is harmless ("Failed to
            # allocate memory for convolution redzone checking; skipping this check. This is benign ..."):
            # it knows its own failure best. A death it reports is never cleared.
            return make("benign", "cleared-by-itself")
        if level in ("info", "debug") and exc is None and rid not in _DEATH_FAMILIES:
            # "[c10d - debug] Read callback failed": an operation's failure the
            # program rates as information. A death it reports at INFO
            # ("Request x failed (engine dead)") stays fatal.
            return make("benign", "info-level-error")
        if rid not in _DEATH_FAMILIES and exc is None and endings.goes_on_without(body):
            # The program says it goes on without what it failed to get ("Failed to load
            # generation config for X: ... does not appear to have a file named
            # generation_config.json ... Proceeding without generation config."): optional.
            return make("benign", "optional-missing")
        if sh.category and rid not in _DEATH_FAMILIES:
            # Raised through Python's warnings module (``UserWarning: ... If you get
            # `CUDA error: ...` errors, ...``): the program itself calls it a warning.
            return make("warning", "python-warning")
        if service and rid not in _ENGINE_FAMILIES and (
            is_request_source(text, sh, g) or g & G_REQUEST_WORDS and _REQUEST_WORDS.search(body)
        ):
            return make("warning", "request-failed")
        if service and rid not in _ENGINE_FAMILIES:
            # A server can survive a failed allocation or load of one request:
            # fatal unless it goes on serving.
            v = _from_rule(rule)
            return Verdict(v.kind, v.rule, v.explanation, v.action, pending=True)
        return _from_rule(rule)
    errorish = is_errorish(body, g)
    generic = getattr(rule, "id", "") in _CATCH_ALL
    # A server error in an HTTP access line: that request failed; in a task it is someone else's server.
    if "| 5" in body and _ACCESS_5XX.search(body) or '" 500' in body and _ACCESS_LINE_500.search(body):
        return make("warning", "request-failed")
    # 6b. What the job needs to run is unusable, or a named step failed, at the
    #     program's ERROR level (or without a level): fatal, unless it is a
    #     request's failure in a server, or the program says what it does instead.
    if exc is None and level not in ("info", "debug", "warning") and not (g & G_FALLBACK and _FALLBACK.search(body)):
        model = g & G_MODEL and _MODEL_UNUSABLE.search(body) is not None
        # A command's own final report is no named step's record: 7a reads it, as the
        # command's last word or not ("sbatch: error: Batch job submission failed: ...").
        step = (level == "error" and "failed" in body and _STEP_FAILED.match(body) is not None
                and not endings.command_report(text))
        if model or step:
            if service and is_request_source(text, sh, g):
                return make("warning", "request-failed")
            return make("fatal", "model-unusable" if model else "step-failed", recoverable=step and not model)
    # 6c. The program warns that what it found can make the run fail: worth knowing,
    #     whatever else the line says about a missing or replaced part. Not at its
    #     INFO/DEBUG level ("This may lead to unexpected consequences if ...": advice).
    if exc is None and level not in ("info", "debug") and any(v in body for v in _TROUBLE_VERBS):
        if _PREDICTS_TROUBLE.search(body):
            return make("warning", "trouble-predicted")
    # The fp16 loss scaler's record of an overflow, whoever prints it (the pack's
    # fp16-overflow-skip names the known ones, step 2): a scale fallen this low is no
    # harmless overflow, whatever cue below would call the skip harmless. Only with the
    # overflow it reports: a progress record's "loss scale: 1.0" (bf16) is no such record.
    if rkind is None and exc is None and "oss scale" in body and "verflow" in body.lower() and _scale_collapsed(body):
        return make("warning", "loss-scale-collapsed")
    # 7. Harmless by its own account: optional part absent, fallback, deprecation.
    if exc is None and (level in ("warning", "error", "info", "debug") or errorish or sh.category or generic):
        if g & G_AUTOTUNE and _AUTOTUNE.search(sh.source + " " + body) and (errorish or level == "warning"):
            return make("benign", "autotune-candidate")
        if g & G_SELF and (errorish or level in ("warning", "error") or sh.category or generic):
            # Its own verdict on what it reports, or a notice about its own log stream.
            if self_account.clears_itself(body):
                return make("benign", "cleared-by-itself")
            if level != "error" and self_account.about_own_logging(body):
                return make("benign", "log-stream-notice")
        if (errorish or level in ("warning", "error")) and g & G_ABSENT and _ABSENT.search(body) and level != "error":
            return make("benign", "optional-missing")
        if level == "warning" and _CANNOT_FIND.search(body) and not g & G_MODEL:
            return make("benign", "optional-missing")
        if level == "warning" and (_IGNORED_INPUT.search(body) or _DISCARDED.search(body[-60:])):
            return make("benign", "fallback")
        if (errorish or level in ("warning", "error") or sh.category or generic) and g & G_FALLBACK and _FALLBACK.search(body):
            return make("benign", "fallback")
        # The cues below read the program's own level where the anatomy found none in a
        # header ("[nvidiamon] [warning] ...", "LAUNCH WARNING <date> ..."); at its ERROR
        # level a program that stops or cannot switch says so in the same words, so
        # only a failed probe counts there.
        ilvl = level if level is not None else _inline_level(body)
        if ilvl != "error" and (errorish or ilvl == "warning") and g & G_WITHOUT and _GOES_WITHOUT.search(body):
            return make("benign", "fallback")
        if ilvl != "error" and (errorish or ilvl == "warning") and g & G_WITHOUT and _OFF_HERE.search(body):
            return make("benign", "fallback")
        if ilvl != "error" and errorish and g & G_AUXILIARY and _AUXILIARY.search(body):
            return make("benign", "auxiliary-failed")
        if (errorish or ilvl in ("warning", "error")) and g & G_PROBE and _PROBE.search(body):
            return make("benign", "probe-failed")
        # A warning that reports a decision the program took and goes on with ("Casting
        # torch.bfloat16 to torch.float16.", "Default sampling parameters have been
        # overridden by ..."), with nothing in it that reports harm or demands a change.
        if (ilvl == "warning" or sh.category) and not errorish and g & G_DECIDED and notice_grammar.decided(
            body, leveled=True
        ):
            return make("benign", "decision-notice")
    # A plain line (no level) that states a substitution: something was not
    # given, is disabled or incompatible, and the program uses something else.
    if exc is None and level is None and g & G_FALLBACK and _SUBSTITUTION.search(body):
        return make("benign", "fallback")
    # The same decision printed bare, with the reason the program gives for it
    # ("OMP_NUM_THREADS set to 1 to avoid system overload", "Overlap scheduler is
    # disabled because of using eagle speculative decoding.").
    if (
        exc is None
        and level is None
        and not sh.category
        and not errorish
        and g & G_DECIDED
        and notice_grammar.decided(body, leveled=False)
    ):
        return make("benign", "decision-notice")
    # 7a. A command's own final error report, in the convention many command-line programs
    #     share ("sbatch: error: ...", "error: creating server: ...", "slurmstepd: fatal: ...",
    #     docker's "Error response from daemon: ...", apt's "E: ...", cobra's "Error: ..."),
    #     in a task or a service (a server that says so and nothing more did not start):
    #     fatal when it is the process's last word; a line of ordinary output after it says
    #     it went on (the monitor settles it), and live the exit code decides.
    if exc is None and level not in ("info", "debug", "warning") and len(body) > 2 and endings.command_report(text):
        if _INTRODUCES_LIST.search(body[-120:]):
            return make("warning", "error-line", held=True)
        # cobra's "Error: ..." keeps the name step 8 gave it before this step read the others.
        return make("fatal", "top-level-error" if text.startswith("Error: ") else "final-report", pending=True)
    # 8. An exception line outside any traceback: uncaught, unless a request failed.
    #    "Error: ..." at the very start of a line is a CLI's final report
    #    (Rust/Go main returning an error, click): the same, for other languages.
    #    In a task, so is any error-level record that names no source, whatever its header
    #    ("ERROR: " of pip and installers, logrus's "ERRO[0000] error loading config: ...",
    #    "[ERROR] ...", a JSON or logfmt record without a logger): a library or a module logs
    #    through a logger with a name or a file:line; a command's main writes its last words
    #    through the bare top-level one. Fatal unless the process goes on (pending: live, the
    #    exit code decides). A server's or daemon's error-level notice (a service: uvicorn's
    #    "ERROR: " for one request, syslog's "user.err mcelog: ...") is not its end.
    # A JSON record cut short keeps its raw text as its body: whether it names a logger
    # is unknown (pulsar-operator's '{"level":"error",...,"logger":"controller_...",'), so
    # it is no final report.
    final_report = text.startswith("Error: ") or not service and body[:1] != "{"
    if exc is None and level == "error" and not sh.source and final_report and len(body) > 2:
        if _INTRODUCES_LIST.search(body[-120:]):
            # A report that announces the lines after it ("... the source of the
            # following dependency conflicts.", "... these files:") heads a list
            # and is not the last word: what the process does after the list
            # decides, as for any error line.
            return make("warning", "error-line", held=True)
        return make("fatal", "top-level-error", pending=True)
    if exc is not None and sh.category:
        # A warning that quotes an error ("UnhandledPromiseRejectionWarning: Error: ..."):
        # the program rates what happened a warning and goes on.
        return make("warning", "python-warning")
    if exc is not None and level == "warning":
        # The program's own logger rated the exception a warning: it caught it and goes on
        # (dynamo's "W... convert_frame.py] BackendCompilerFailed", then the frame runs
        # eagerly). An uncaught one has no logger header; what comes next decides, as for
        # any error-looking warning.
        return make("warning", "python-warning", held=True)
    if exc is not None:
        if service and (is_request_source(text, sh, g) or sh.level == "error" and _REQUEST_SOURCE.search(sh.source or "")):
            return make("warning", "request-failed")
        v = _from_rule(rule) if rkind in ("fatal", "benign") else make("fatal", "uncaught-exception")
        return Verdict(v.kind, v.rule, v.explanation, v.action, pending=v.kind == "fatal")
    # 9. In a service, an error on a request path fails that request only.
    if service and (level == "error" or errorish or rkind == "warning") and is_request_source(text, sh, g):
        return make("warning", "request-failed")
    # 10. The program's own level.
    if level in ("info", "debug"):
        # An operation's failure the program rates as information ("LOG:  could not
        # bind IPv6 address", then it listens on IPv4): the failure-words pack rule
        # only passes such lines here, so it does not make them plain information.
        if errorish and (rkind != "info" or getattr(rule, "id", "") == "failure-words"):
            return make("benign", "info-level-error")
        return _from_rule(rule) if rule is not None and rkind in ("info", "progress") else None
    if rule is not None and generic and level is None and not sh.category:
        # The catch-alls match a word ("WARN", "Error") anywhere; without a
        # level in the header only an error-looking message counts.
        return make("warning", "error-line") if errorish or exc is not None else None
    if level == "warning" and generic and not errorish and not sh.category and _COUNTER_RECORD.search(body[:600]):
        # A loop that logs its counters through a logger at WARNING, to be seen past the
        # default level ("[verl_speco.trainer.base_trainer][WARNING] - [drafter loss] step=12
        # optimizer_step_total=12 lr=9.734e-05 loss=6.0625"): the record is its progress.
        return None
    if rule is not None and rkind in ("info", "progress", "warning"):
        v = _from_rule(rule)
        if generic and v.rule == "python-warning" and errorish:
            # A warning that reports a failure ("Background save may fail"): what
            # the process does next says whether it mattered, as for an error line.
            return Verdict(v.kind, v.rule, v.explanation, v.action, held=True)
        return v
    if level == "warning":
        return make("warning", "python-warning", held=errorish)
    if level == "error":
        return make("warning", "error-line")
    return None


def judge_traceback(
    exc_text: str, rule: object | None, *, ignored: bool, request: bool, stage_kind: str, warned: bool = False,
    after_notice: bool = False,
) -> Verdict | None:
    """The verdict for a closed traceback, or None to wait for what comes next.

    ``exc_text`` is its last (exception) line; ``ignored``: Python announced
    it with ``Exception ignored in``; ``request``: its frames or its opener
    show request handling; ``warned``: it is the message of a Python warning
    (``x.py:330: UserWarning: Error in stream_executor: Traceback (...)``);
    ``after_notice``: the line just above it introduced it (its message ends with a
    colon) and was judged harmless, so the traceback is that notice's detail.
    """
    if ignored:
        return make("benign", "exception-ignored")
    if warned:
        # warnings.warn() returns: the program formatted a caught exception
        # into a warning and carries on (under -W error the warning itself
        # would be raised, and its traceback would end in "UserWarning: ...").
        return make("warning", "traceback-in-warning")
    rid = getattr(rule, "id", "")
    rkind = getattr(rule, "kind", None)
    if stage_kind == "service" and request and rid not in _ENGINE_FAMILIES:
        return make("warning", "request-failed")
    sh = shape(exc_text)
    if rkind == "benign" or rkind == "fatal" and not _AUTOTUNE.search(exc_text):
        return _from_rule(rule)
    if rkind == "fatal":
        return make("benign", "autotune-candidate")
    body = sh.body
    if _DIED.search(body) or _NATIVE_FAILURE.search(body) or _FATAL_WORDS.search(body):
        return make("fatal", "process-died")
    if after_notice:
        # No family names its exception (an OOM, a death, a known failure would have
        # been named above): the harmless notice that introduced it says what it is.
        return make("benign", "notice-traceback")
    return None
