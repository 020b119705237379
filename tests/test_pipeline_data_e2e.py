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


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("llama_cpp")
    from pipeline.model_io import ModelNotFoundError, find_smollm2_gguf

    try:
        find_smollm2_gguf()
    except ModelNotFoundError as exc:
        pytest.skip(str(exc))
    port = free_port()
    log = open(tmp_path_factory.mktemp("server") / "server.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "pipeline.serve", "--model", "smollm2", "--port", str(port),
                             "--ctx", "2048", "--threads", "2"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_ready(url, timeout=180)
        except TimeoutError:
            log.flush()
            pytest.fail("llama.cpp server did not become ready:\n" + Path(log.name).read_text()[-3000:])
        yield url
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


def wait_lines(proc: subprocess.Popen[str], out: Path, n: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while lines(out) < n:
        if proc.poll() is not None:
            return  # finished before we could interrupt it; the checks below still hold
        assert time.monotonic() < deadline, f"fewer than {n} results after {timeout} s"
        time.sleep(0.05)


def test_regenerate_kill_resume_then_tokenize_and_vocab(llama_server: str, tmp_path: Path) -> None:
    prompts = tmp_path / "prompts.jsonl"
    r = subprocess.run([sys.executable, "-m", "pipeline.prepare", "-o", str(prompts), "--limit", str(N_PROMPTS)],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    ids = [json.loads(line)["id"] for line in prompts.read_text().splitlines()]
    out = tmp_path / "regen.jsonl"

    # 1: SIGTERM after two results -> clean stop, exit 143, only complete lines.
    p = start_regen(prompts, out, llama_server)
    wait_lines(p, out, 2)
    p.send_signal(signal.SIGTERM)
    stdout, stderr = p.communicate(timeout=60)
    assert p.returncode in (143, 0), stderr
    assert out.read_bytes().endswith(b"\n")
    after_term = lines(out)

    # 2: SIGKILL after one more result -> whatever is on disk is resumable.
    p = start_regen(prompts, out, llama_server)
    wait_lines(p, out, after_term + 1)
    p.kill()
    p.wait(timeout=30)

    # 3: resume to completion.
    p = start_regen(prompts, out, llama_server)
    stdout, stderr = p.communicate(timeout=300)
    assert p.returncode == 0, stderr
    assert stdout.startswith(f"regenerate: ") and "0 errors" in stdout
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert Counter(r["id"] for r in rows) == Counter(ids)  # every id exactly once
    for row in rows:
        answer = row["conversations"][-1]
        assert answer["role"] == "assistant" and answer["content"].strip()
        assert 0 < row["usage"]["completion_tokens"] <= 32

    # tokenize + vocab on the real answers.
    ds = tmp_path / "prepared"
    r = subprocess.run([sys.executable, "-m", "pipeline.tokenize_data", "-i", str(out), "-o", str(ds),
                        "--model", "smollm2", "--max-len", "512"], cwd=ROOT, capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"tokenize: {N_PROMPTS} samples")
    vocab = tmp_path / "vocab.safetensors"
    r = subprocess.run([sys.executable, "-m", "pipeline.vocab", "--prepared", str(ds), "-o", str(vocab),
                        "--draft-vocab-size", "64"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("vocab: draft 64 / target 49152, coverage ")
    summary = json.loads(vocab.with_suffix(".json").read_text())
    assert 0.0 < summary["coverage"] <= 1.0
    assert os.path.getsize(vocab) > 49152  # t2d bool [49152] is in there
