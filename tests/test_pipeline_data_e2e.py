"""End to end: the real llama.cpp server with the real SmolLM2 GGUF on loopback.

prepare -> serve -> regenerate (SIGTERM, then SIGKILL mid-run, resumed each
time) -> tokenize -> vocab. Every id must appear exactly once in the results.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.serve import wait_ready

ROOT = Path(__file__).resolve().parent.parent
N_PROMPTS = 8

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """The running llama.cpp server: its URL, process and log file."""

    def __init__(self, url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.url, self.proc, self.log = url, proc, log

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            hint = " (SIGILL: this llama.cpp build uses CPU instructions the machine refuses, e.g. AMX in a VM;" \
                   " rebuild llama-cpp-python with CMAKE_ARGS=-DGGML_NATIVE=OFF)" if self.proc.returncode in (-4, 132) else ""
            pytest.fail(f"llama.cpp server exited with {self.proc.returncode}{hint}:\n" + self.log.read_text()[-2000:])


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    pytest.importorskip("llama_cpp")
    from pipeline.model_io import ModelNotFoundError, find_smollm2_gguf

    try:
        find_smollm2_gguf()
    except ModelNotFoundError as exc:  # the real model is part of the setup: missing is a failure
        pytest.fail(str(exc))
    port = free_port()
    log = open(tmp_path_factory.mktemp("server") / "server.log", "w")  # noqa: SIM115 - closed at teardown
    proc = subprocess.Popen([sys.executable, "-m", "pipeline.serve", "--model", "smollm2", "--port", str(port),
                             "--ctx", "2048", "--threads", "2"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        srv = Server(url, proc, Path(log.name))
        try:
            wait_ready(url, timeout=180)
        except TimeoutError:
            log.flush()
            srv.check_alive()
            pytest.fail("llama.cpp server did not become ready:\n" + srv.log.read_text()[-3000:])
        yield srv
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def lines(path: Path) -> int:
    return len(path.read_bytes().splitlines()) if path.exists() else 0


def start_regen(prompts: Path, out: Path, url: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pipeline.regenerate", "-i", str(prompts), "-o", str(out), "--server", url,
         "--concurrency", "4", "--max-tokens", "32", "--temperature", "0", "--no-progress"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_lines(proc: subprocess.Popen[str], out: Path, n: int, server: Server, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while lines(out) < n:
        server.check_alive()
        if proc.poll() is not None:
            return  # finished before we could interrupt it; the checks below still hold
        assert time.monotonic() < deadline, f"fewer than {n} results after {timeout} s"
        time.sleep(0.05)


def test_regenerate_kill_resume_then_tokenize_and_vocab(llama_server: Server, tmp_path: Path) -> None:
    url = llama_server.url
    prompts = tmp_path / "prompts.jsonl"
    r = subprocess.run(check=False, args=[sys.executable, "-m", "pipeline.prepare", "-o", str(prompts), "--limit", str(N_PROMPTS)],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    ids = [json.loads(line)["id"] for line in prompts.read_text().splitlines()]
    out = tmp_path / "regen.jsonl"

    # 1: SIGTERM after two results -> clean stop, exit 143, only complete lines.
    p = start_regen(prompts, out, url)
    wait_lines(p, out, 2, llama_server)
    p.send_signal(signal.SIGTERM)
    stdout, stderr = p.communicate(timeout=60)
    assert p.returncode == 143, stderr
    assert "stopped by SIGTERM" in stdout
    assert out.read_bytes().endswith(b"\n")
    after_term = lines(out)
    assert 2 <= after_term < N_PROMPTS

    # 2: SIGKILL after one more result -> whatever is on disk is resumable.
    p = start_regen(prompts, out, url)
    wait_lines(p, out, after_term + 1, llama_server)
    p.kill()
    assert p.wait(timeout=30) == -signal.SIGKILL
    assert lines(out) < N_PROMPTS  # the kill really interrupted the run

    # 3: resume to completion.
    p = start_regen(prompts, out, url)
    stdout, stderr = p.communicate(timeout=300)
    llama_server.check_alive()
    assert p.returncode == 0, stderr
    assert stdout.startswith("regenerate: ") and "0 errors" in stdout
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert Counter(r["id"] for r in rows) == Counter(ids)  # every id exactly once
    for row in rows:
        answer = row["conversations"][-1]
        assert answer["role"] == "assistant" and answer["content"].strip()
        assert 0 < row["usage"]["completion_tokens"] <= 32

    # tokenize + vocab on the real answers.
    ds = tmp_path / "prepared"
    r = subprocess.run(check=False, args=[sys.executable, "-m", "pipeline.tokenize_data", "-i", str(out), "-o", str(ds),
                        "--model", "smollm2", "--max-len", "512"], cwd=ROOT, capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"tokenize: {N_PROMPTS} samples")
    vocab = tmp_path / "vocab.safetensors"
    r = subprocess.run(check=False, args=[sys.executable, "-m", "pipeline.vocab", "--prepared", str(ds), "-o", str(vocab),
                        "--draft-vocab-size", "64"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("vocab: draft 64 / target 49152, coverage ")
    summary = json.loads(vocab.with_suffix(".json").read_text())
    assert 0.0 < summary["coverage"] <= 1.0
    assert os.path.getsize(vocab) > 49152  # t2d bool [49152] is in there
