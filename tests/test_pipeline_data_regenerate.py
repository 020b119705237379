"""regenerate against a small OpenAI-compatible server on loopback (a real HTTP server in a thread).

The server scripts failures per prompt (503/429/dropped connections/400) so
retries, error records, reasoning capture, resume and SIGTERM are exercised
through real sockets and a real subprocess.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pipeline.common import StageError
from pipeline.regenerate import (
    RegenerateConfig,
    load_done_ids,
    prompt_messages,
    regenerate,
)
from pipeline.serve import wait_ready

ROOT = Path(__file__).resolve().parent.parent


class Behaviour:
    """What the scripted server does, keyed by the last user message."""

    def __init__(self) -> None:
        self.fail: dict[str, list[int]] = {}  # prompt -> statuses to return first (0 = drop connection)
        self.reasoning = False
        self.delay = 0.0
        self.model = "scripted-model"
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()


def make_handler(b: Behaviour) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # keep pytest output clean
            pass

        def _send(self, status: int, obj: Any) -> None:
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": b.model, "object": "model"}]})
            else:
                self._send(404, {"error": "not found"})

        def do_POST(self) -> None:
            req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            prompt = req["messages"][-1]["content"]
            with b.lock:
                b.calls[prompt] += 1
                todo = b.fail.get(prompt)
                status = todo.pop(0) if todo else 200
            if b.delay:
                time.sleep(b.delay)
            if status == 0:
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if status != 200:
                self._send(status, {"error": {"message": f"scripted {status}"}})
                return
            assert req["model"] == b.model and req["max_tokens"] > 0
            msg: dict[str, Any] = {"role": "assistant", "content": f"answer to {prompt}"}
            if b.reasoning:
                msg["reasoning_content"] = f"thinking about {prompt}"
            self._send(200, {"id": "x", "model": b.model,
                             "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
                             "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

    return Handler


@pytest.fixture()
def server() -> Iterator[tuple[str, Behaviour]]:
    b = Behaviour()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(b))
    httpd.daemon_threads = True
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", b
    finally:
        httpd.shutdown()
        httpd.server_close()


def write_prompts(path: Path, n: int) -> list[str]:
    ids = [f"p{i:03d}" for i in range(n)]
    with open(path, "w") as fh:
        fh.writelines(json.dumps({"id": sid, "conversations": [{"role": "user", "content": f"q-{sid}"}]}) + "\n" for sid in ids)
    return ids


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def cfg_for(tmp_path: Path, url: str, **kw: Any) -> RegenerateConfig:
    base: dict[str, Any] = {"input": tmp_path / "in.jsonl", "output": tmp_path / "out.jsonl",
                            "errors": tmp_path / "out.errors.jsonl", "servers": [url], "concurrency": 4,
                            "max_tokens": 8, "backoff": 0.01, "wait_ready": 5, "show_progress": False}
    base.update(kw)
    return RegenerateConfig(**base)


def test_retries_errors_reasoning_and_resume(tmp_path: Path, server: tuple[str, Behaviour]) -> None:
    url, b = server
    ids = write_prompts(tmp_path / "in.jsonl", 12)
    b.reasoning = True
    b.fail = {"q-p001": [503, 429], "q-p002": [0], "q-p003": [400], "q-p004": [500] * 10}
    stats = regenerate(cfg_for(tmp_path, url, retries=3))
    out = read_jsonl(tmp_path / "out.jsonl")
    errs = read_jsonl(tmp_path / "out.errors.jsonl")
    assert sorted(r["id"] for r in out) == [i for i in ids if i not in ("p003", "p004")]
    assert {e["id"]: e["status"] for e in errs} == {"p003": 400, "p004": None}
    assert b.calls["q-p001"] == 3 and b.calls["q-p002"] == 2 and b.calls["q-p003"] == 1
    assert b.calls["q-p004"] == 4  # 1 try + 3 retries
    assert stats.done == 10 and stats.errors == 2 and stats.reasoning == 10
    assert stats.completion_tokens == 50 and stats.prompt_tokens == 100
    rec = next(r for r in out if r["id"] == "p001")
    assert rec["conversations"][-1] == {"role": "assistant", "content": "answer to q-p001",
                                        "reasoning_content": "thinking about q-p001"}
    assert rec["model"] == "scripted-model" and rec["usage"] == {"prompt_tokens": 10, "completion_tokens": 5}
    line = stats.summary()
    assert "10 samples" in line and "2 errors" in line and "reasoning captured 100.0%" in line

    # Resume: only the two failed ids are requested again; nothing is duplicated.
    b.fail = {}
    before = sum(b.calls.values())
    stats2 = regenerate(cfg_for(tmp_path, url))
    assert sum(b.calls.values()) - before == 2
    assert stats2.resumed == 10 and stats2.done == 2 and stats2.errors == 0
    assert Counter(r["id"] for r in read_jsonl(tmp_path / "out.jsonl")) == Counter(ids)
    assert read_jsonl(tmp_path / "out.errors.jsonl") == []


def test_round_robin_over_two_servers(tmp_path: Path, server: tuple[str, Behaviour]) -> None:
    url, b = server
    b2 = Behaviour()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(b2))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        write_prompts(tmp_path / "in.jsonl", 10)
        regenerate(cfg_for(tmp_path, url, servers=[url, f"http://127.0.0.1:{httpd.server_address[1]}/v1"]))
        assert sum(b.calls.values()) == 5 and sum(b2.calls.values()) == 5
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_torn_last_line_is_cut_and_corruption_is_named(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_bytes(b'{"id": "a"}\n{"id": "b"}\n{"id": "c", "conv')
    assert load_done_ids(out) == {"a", "b"}
    assert out.read_bytes() == b'{"id": "a"}\n{"id": "b"}\n'
    out.write_bytes(b'{"id": "a"}\nnot json\n{"id": "b"}\n')
    with pytest.raises(StageError, match=r"out\.jsonl:2: not a valid result record"):
        load_done_ids(out)


def test_prompt_messages_drops_trailing_assistant() -> None:
    conv = [{"role": "system", "content": "s"}, {"role": "user", "content": "u1"},
            {"role": "assistant", "content": "a1"}, {"role": "user", "content": "u2"},
            {"role": "assistant", "content": "old answer"}]
    assert [m["content"] for m in prompt_messages(conv)] == ["s", "u1", "a1", "u2"]


def test_unreachable_server_is_a_clear_error(tmp_path: Path) -> None:
    write_prompts(tmp_path / "in.jsonl", 1)
    with pytest.raises(StageError, match=r"127\.0\.0\.1:9: /v1/models not answering"):
        regenerate(cfg_for(tmp_path, "http://127.0.0.1:9", wait_ready=0.2))
    with pytest.raises(TimeoutError, match="not ready"):
        wait_ready("http://127.0.0.1:9", timeout=0.3)


def test_wait_ready_returns_models(server: tuple[str, Behaviour]) -> None:
    url, _ = server
    assert wait_ready(url, timeout=5) == ["scripted-model"]
    proc = subprocess.run(check=False, args=[sys.executable, "-m", "pipeline.serve", "--probe", url, "--timeout", "5"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "ready" in proc.stdout


def test_sigterm_stops_cleanly_and_resume_completes(tmp_path: Path, server: tuple[str, Behaviour]) -> None:
    url, b = server
    b.delay = 0.15
    ids = write_prompts(tmp_path / "in.jsonl", 40)
    out = tmp_path / "out.jsonl"
    cmd = [sys.executable, "-m", "pipeline.regenerate", "-i", str(tmp_path / "in.jsonl"), "-o", str(out),
           "--server", url, "--concurrency", "2", "--max-tokens", "8"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (out.exists() and len(out.read_bytes().splitlines()) >= 4):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no results appeared"
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    assert "stopped by SIGTERM" in stdout
    data = out.read_bytes()
    assert data.endswith(b"\n")  # nothing half-written
    first = [json.loads(line)["id"] for line in data.splitlines()]
    assert 4 <= len(first) < 40 and len(set(first)) == len(first)

    b.delay = 0.0
    done = subprocess.run(cmd, check=False, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"({len(first)} already done)" in done.stdout
    assert Counter(r["id"] for r in read_jsonl(out)) == Counter(ids)


def test_cli_usage_errors(tmp_path: Path) -> None:
    r = subprocess.run(check=False, args=[sys.executable, "-m", "pipeline.regenerate", "-i", "x"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("usage: python -m pipeline.regenerate")
    bad = tmp_path / "in.jsonl"
    bad.write_text('{"id": "a", "conversations": []}\n{"conversations": []}\n')
    r = subprocess.run(check=False, args=[sys.executable, "-m", "pipeline.regenerate", "-i", str(bad), "-o", str(tmp_path / "o.jsonl")],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and f"{bad}:2: record has no 'id'" in r.stderr


def test_serve_builds_argv_lists_for_both_backends(tmp_path: Path) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    r = subprocess.run([sys.executable, "-m", "pipeline.serve", "--model", str(gguf), "--port", "8123",
                        "--ctx", "4096", "--served-model-name", "tgt", "--print-argv"],
                       check=False, cwd=ROOT, capture_output=True, text=True, timeout=60)
    argv = json.loads(r.stdout)
    assert argv[1:3] == ["-m", "llama_cpp.server"]
    assert argv[3:] == ["--model", str(gguf), "--host", "127.0.0.1", "--port", "8123",
                        "--model_alias", "tgt", "--n_ctx", "4096"]
    r = subprocess.run([sys.executable, "-m", "pipeline.serve", "--backend", "vllm", "--model", "/models/t",
                        "--print-argv", "--", "--tensor-parallel-size", "8"],
                       check=False, cwd=ROOT, capture_output=True, text=True, timeout=60)
    argv = json.loads(r.stdout)
    assert argv[argv.index("serve"):] == ["serve", "/models/t", "--host", "127.0.0.1", "--port", "8000",
                                          "--tensor-parallel-size", "8"]
    r = subprocess.run([sys.executable, "-m", "pipeline.serve", "--model", str(tmp_path / "no.gguf")],
                       check=False, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "no.gguf: GGUF model file not found" in r.stderr
    r = subprocess.run([sys.executable, "-m", "pipeline.serve", "--port", "0"],
                       check=False, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("usage: python -m pipeline.serve")
