"""Catch-up by line template gives the same events as the line-by-line scan."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import eagle3tui.logs.scan as scan_mod
from eagle3tui.logs.offline import classify_log
from eagle3tui.logs.rules import build_ruleset
from eagle3tui.logs.templates import BY_TEMPLATE, EXACT, SENSITIVE, TemplateIndex, digit_valued

CORPUS = Path(__file__).parent / "fixtures" / "corpus" / "corpus.jsonl"
# Rows from here on are never-tuned batches (eleven, twelve): nobody may see their verdicts, and a
# failing comparison below prints the events (kind, rule, text) of the lines it mixes in.
NEVER_TUNED_FROM_ROW = 1618


def _d(rnd: random.Random, k: int = 1) -> str:
    return "".join(str(rnd.randrange(10)) for _ in range(k))


def _stress(rnd: random.Random, n: int) -> str:
    """Lines whose meaning depends on context (pending, echo, continuation,
    recovery, service requests) and on digit values (HTTP status, exit codes,
    NCCL's '-> N', glog W/E levels), repeated with other digits."""
    d = lambda k=1: _d(rnd, k)  # noqa: E731
    makers = [
        lambda: f"(Worker_TP{d()} pid={d(5)}) WARNING 05-06 10:{d(2)}:{d(2)} [custom_op.py:{d(2)}] Priority of op {d()} will be ignored",
        lambda: f"(Worker_TP{d()} pid={d(5)}) ERROR 05-06 10:{d(2)}:{d(2)} [core.py:{d(3)}] Worker proc VllmWorker-{d()} died unexpectedly, shutting down executor.",
        lambda: f'INFO:     127.0.0.1:{d(5)} - "POST /v1/chat/completions HTTP/1.1" {rnd.choice(["200", "500", "400", "404"])} OK',
        lambda: f"Process {d(4)} exited with code {rnd.choice(['0', '1', '0'])}",
        lambda: f"host-{d()}:{d(4)}:{d(4)} [{d()}] NCCL INFO transport/net.cc:{d(3)} -> {rnd.choice(['0', '2'])}",
        lambda: f"host-{d()}:{d(4)}:{d(4)} [{d()}] NCCL WARN NET/IB : Got async event : port error",
        lambda: f"/usr/lib/python3/site-packages/torch/utils/checkpoint.py:{d(2)}: UserWarning: None of the inputs have requires_grad=True.",
        lambda: "  warnings.warn(",
        lambda: f"[rank{d()}]:[W{d(3)} 10:{d(2)}:{d(2)}.{d(6)} ProcessGroupNCCL.cpp:{d(4)}] Warning: something {d()} happened",
        lambda: f"[rank{d()}]:[E{d(3)} 10:{d(2)}:{d(2)}.{d(6)} ProcessGroupNCCL.cpp:{d(4)}] [Rank {d()}] Watchdog caught collective operation timeout",
        lambda: f"RuntimeError: CUDA error: an illegal memory access was encountered {d()}",
        lambda: f"Restarting worker {d()} after failure",
        lambda: f"ERROR 05-06 10:{d(2)}:{d(2)} [serving_chat.py:{d(3)}] Error in preprocessing prompt inputs",
        lambda: "  [WARNING]  async_io requires the dev libaio .so object and headers but these were not found.",
        lambda: "  [WARNING]  If libaio is already installed (perhaps from source), try setting the CFLAGS",
        lambda: f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {d()}.{d(2)} GiB",
        lambda: f"Exception ignored in: <function Foo.__del__ at 0x{d(8)}>",
        lambda: f"{{'loss': {d()}.{d(4)}, 'grad_norm': {d()}.{d(3)}, 'learning_rate': 2e-05, 'epoch': {d()}.{d(2)}}}",
        lambda: f"Processed prompts:  {d(2)}%|#####     | {d(3)}/1000 [00:{d(2)}<00:{d(2)}, {d(2)}.{d(2)}it/s]",
        lambda: f"return code {rnd.choice(['0', '1', '-9'])} from process {d(4)}",
        lambda: f"2025-05-06 10:{d(2)}:{d(2)},{d(3)} - ERROR - uvicorn.error - Exception in ASGI application",
        lambda: f"WARNING 05-06 10:{d(2)}:{d(2)} [scheduler.py:{d(4)}] Sequence group cmpl-{d(4)} is preempted",
        lambda: f"(EngineCore_DP0 pid={d(4)}) (VllmWorker TP{d()} pid={d(4)}) INFO 05-06 10:{d(2)}:{d(2)} [gpu_model_runner.py:{d(4)}] Model loading took {d(2)}.{d()} GiB",
        # what comes next decides (round six): held errors, restarts, stops, ordinary INFO lines
        lambda: f"[2024-07-05 09:13:{d(2)} +0200] [{d(7)}] [ERROR] Worker (pid:{d(7)}) exited with code {rnd.choice(['1', '0'])}",
        lambda: f"[2024-07-05 09:13:{d(2)} +0200] [{d(7)}] [INFO] Booting worker with pid: {d(7)}",
        lambda: f"0.00.{d(3)}.{d(3)} W common_fit_params: failed to fit params to free device memory, abort {d()}",
        lambda: f"[2026-04-27 03:20:{d(2)}] SIGTERM received. signum=None frame=None. Draining requests and shutting down...",
        lambda: f"0.04.{d(3)}.{d(3)} I cmn          init: llama threadpool init, n_threads = {d()}",
    ]
    traceback = ["Traceback (most recent call last):", '  File "/x/y.py", line 10, in <module>', "    main()",
                 f"ValueError: bad value {d()}"]
    out: list[str] = []
    while len(out) < n:
        out.extend(traceback if rnd.random() < 0.01 else [rnd.choice(makers)()])
    return "\n".join(out) + "\n"


def _events(path: Path, kind: str, templates: bool, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(scan_mod, "_TEMPLATE_BLOCK", 256 * 1024 if templates else 1 << 62)
    events, mon = classify_log(path, stage_kind=kind)
    return [(e.line, e.end_line, e.kind, e.rule, e.text, e.worker, e.explanation) for e in events], dict(mon.counts)


@pytest.mark.parametrize("kind", ["task", "service"])
def test_template_scan_gives_the_same_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    rnd = random.Random(11)
    log = tmp_path / "stress.log"
    corpus = [json.loads(x)["text"] for x in CORPUS.read_text().splitlines()[:NEVER_TUNED_FROM_ROW]]
    parts = [_stress(rnd, 20_000)]
    for _ in range(3):  # the corpus again, with other digits of the same count
        rnd.shuffle(corpus)
        parts.append("\n".join("".join(str(rnd.randrange(10)) if c.isdigit() else c for c in t) for t in corpus) + "\n")
        parts.append(_stress(rnd, 5_000))
    log.write_text("".join(parts))
    assert log.stat().st_size > 4 * 256 * 1024
    plain = _events(log, kind, False, monkeypatch)
    fast = _events(log, kind, True, monkeypatch)
    assert fast[1] == plain[1]
    assert fast[0] == plain[0]
    assert plain[1].get("fatal") and plain[1].get("warning") and plain[1].get("benign")


def test_template_modes() -> None:
    rules = build_ruleset()
    tix = TemplateIndex(rules)
    assert tix.usable
    lines = {
        # "[W0" ... "[W9" all name the same rule: that keyword's digit cannot change the line's rules
        b"[rank0]:[W000 00:00:00.000 ProcessGroupNCCL.cpp:0000] Warning: x": BY_TEMPLATE,
        b"[rank0]:W0000 00:00:00.000000 000 torch/x.py:000] Warning: x": EXACT,  # "]:W0", "]:W1" only: it can
        b'INFO:     000.0.0.0:00000 - "POST /v0/chat HTTP/0.0" 000 OK': EXACT,  # a rule reads the status
        b"Process 0000 exited with code 0": SENSITIVE,  # the judge reads the exit code
        b"WARNING 00-00 00:00:00 [scheduler.py:0000] Sequence group cmpl-0000 is preempted": BY_TEMPLATE,
    }
    tix.learn(set(lines))
    for t, mode in lines.items():
        e = tix.by_template[t]
        assert e is not None and e.mode == mode, t
    e = tix.by_template[b"[rank0]:[W000 00:00:00.000 ProcessGroupNCCL.cpp:0000] Warning: x"]
    w = tix.line_rules(e, b"[rank3]:[W506 10:20:33.715 ProcessGroupNCCL.cpp:4115] Warning: x")
    assert w == rules.line_candidates(b"[rank3]:[W506 10:20:33.715 ProcessGroupNCCL.cpp:4115] Warning: x")
    e = tix.by_template[b"[rank0]:W0000 00:00:00.000000 000 torch/x.py:000] Warning: x"]
    for line in (b"[rank0]:W0409 07:28:49.530000 135 torch/x.py:719] Warning: x",
                 b"[rank0]:W1409 07:28:49.530000 135 torch/x.py:719] Warning: x",
                 b"[rank0]:W5409 07:28:49.530000 135 torch/x.py:719] Warning: x"):
        assert tix.line_rules(e, line) == rules.line_candidates(line), line


def test_digit_valued() -> None:
    assert digit_valued(r'" 5\d\d') and digit_valued("exit code [1-9]") and digit_valued("code 137")
    assert not digit_valued(r"step \d{1,6}") and not digit_valued(r"[\w.]+:\d+") and not digit_valued("[0-9]+ it/s")


@pytest.mark.parametrize("status_line", [
    # https://github.com/ollama/ollama/issues/8387 (Gin's access column)
    'Dec 11 09:58:58 quorra ollama[1543654]: [GIN] 2024/12/11 - 09:58:58 | {s} |        29m59s |      10.0.0.123 | '
    'POST     "/api/chat"',
    # the common access format (uvicorn): the status after the quoted request
    'INFO:     10.0.0.1:48532 - "POST /v1/chat/completions HTTP/1.1" {s} Internal Server Error',
])
def test_an_access_status_is_read_per_line_when_catching_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status_line: str
) -> None:
    # The judge reads the status column (a 5xx fails that request). Lines of one template
    # differ only in it, so catching up by template must judge each line on its own: a 500
    # after thousands of 200s of the same shape is still the failed request.
    log = tmp_path / "access.log"
    ok = status_line.format(s="200") + "\n"
    log.write_text(ok * (300 * 1024 // len(ok) + 1) + status_line.format(s="500") + "\n" + ok * 10)
    assert digit_valued(r"5\d\d")  # the rules' side already tells such digits apart
    plain = _events(log, "service", False, monkeypatch)
    fast = _events(log, "service", True, monkeypatch)
    assert fast == plain
    assert [e for e in fast[0] if e[3] == "request-failed"], fast[1]
