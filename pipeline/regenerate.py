"""regenerate: answer every prompt with the target model through OpenAI-compatible servers.

Reads the normalized JSONL from ``prepare`` (``{"id", "conversations"}``), sends
each conversation up to its last user turn to ``/v1/chat/completions`` and
appends ``{"id", "conversations": [... , {"role": "assistant", "content",
"reasoning_content"?}], "finish_reason", "usage", "model", "server"}`` to the
output JSONL as answers complete.

- Several servers (``--server`` repeated) are used round-robin; a retry goes to
  the next server.
- asyncio with ``--concurrency`` requests in flight (default 64) over a small
  stdlib HTTP/1.1 keep-alive client (no third-party HTTP dependency).
- Per-request timeout; retries with exponential backoff and jitter on
  connection errors, timeouts, 429 and 5xx. Other 4xx are recorded as errors
  at once (retrying cannot fix them).
- The model name comes from each server's ``/v1/models`` unless ``--model``.
- ``reasoning_content`` (or ``reasoning``) is kept when the server returns it.
- Resume is by id: ids already in the output are skipped. A torn last line (a
  SIGKILL during a write) is cut off before appending. Errors go to a separate
  JSONL that holds the latest run's failures; those ids are retried next run.
- SIGTERM/SIGINT: no new requests, in-flight ones are abandoned, everything
  completed is written and fsynced, then exit 143 (130 for SIGINT).

Run ``python -m pipeline.regenerate --help``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import random
import signal
import ssl
import sys
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.common import (
    StageError,
    atomic_write_json,
    atomic_write_text,
    fail,
    iter_jsonl,
    log,
    make_parser,
    progress,
)

__all__ = [
    "HttpResponse",
    "RegenerateConfig",
    "RegenerateStats",
    "Server",
    "load_done_ids",
    "expand_samples",
    "load_prompts",
    "main",
    "prompt_messages",
    "regenerate",
]

USER_AGENT = "eagle3tui-regenerate/1"


class ProtocolError(Exception):
    """The server's HTTP response could not be parsed."""


@dataclass
class HttpResponse:
    """Status and body of one HTTP response."""

    status: int
    body: bytes
    reused: bool = False


class Server:
    """One OpenAI-compatible endpoint with a pool of idle keep-alive connections."""

    def __init__(self, url: str, api_key: str | None = None) -> None:
        parsed = urllib.parse.urlsplit(url if "://" in url else "http://" + url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise StageError(f"--server {url!r}: expected a URL like http://127.0.0.1:8000 or https://host/v1")
        self.url = url
        self.host = parsed.hostname
        self.port = parsed.port or (443 if parsed.scheme == "https" else 80)
        self.ssl: ssl.SSLContext | None = ssl.create_default_context() if parsed.scheme == "https" else None
        prefix = parsed.path.rstrip("/")
        if not prefix.endswith("/v1"):
            prefix += "/v1"
        self.prefix = prefix
        self.api_key = api_key
        self.model: str | None = None
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection(self.host, self.port, ssl=self.ssl, limit=1 << 22)

    async def request(self, method: str, path: str, body: bytes | None = None) -> HttpResponse:
        """Send one request on a pooled connection; a stale pooled connection is retried once fresh."""
        reused = bool(self._idle)
        conn = self._idle.pop() if self._idle else await self._connect()
        try:
            return await self._exchange(conn, method, path, body, reused)
        except (ConnectionError, asyncio.IncompleteReadError, ProtocolError) as exc:
            _close(conn)
            # A keep-alive connection the server closed while idle fails at once;
            # that is not the server being down, so retry on a new connection.
            if reused and not getattr(exc, "_got_status", False):
                conn = await self._connect()
                try:
                    return await self._exchange(conn, method, path, body, False)
                except BaseException:
                    _close(conn)
                    raise
            raise
        except BaseException:
            _close(conn)
            raise

    async def _exchange(
        self,
        conn: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        method: str,
        path: str,
        body: bytes | None,
        reused: bool,
    ) -> HttpResponse:
        reader, writer = conn
        host = self.host if self.port in (80, 443) else f"{self.host}:{self.port}"
        head = [f"{method} {self.prefix}{path} HTTP/1.1", f"Host: {host}", f"User-Agent: {USER_AGENT}",
                "Accept: application/json", "Connection: keep-alive"]
        if self.api_key:
            head.append(f"Authorization: Bearer {self.api_key}")
        if body is not None:
            head += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (body or b""))
        await writer.drain()
        status_line = await reader.readline()
        if not status_line:
            raise ConnectionResetError("server closed the connection before answering")
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
            raise ProtocolError(f"bad status line {status_line[:80]!r}")
        status = int(parts[1])
        headers: dict[str, str] = {}
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            k, _, v = line.decode("latin-1").partition(":")
            headers[k.strip().lower()] = v.strip()
        try:
            if "chunked" in headers.get("transfer-encoding", "").lower():
                chunks = []
                while True:
                    size_line = await reader.readline()
                    size = int(size_line.split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                            pass  # trailers
                        break
                    chunks.append(await reader.readexactly(size))
                    await reader.readexactly(2)
                data = b"".join(chunks)
                keep = True
            elif "content-length" in headers:
                data = await reader.readexactly(int(headers["content-length"]))
                keep = True
            else:
                data = await reader.read()
                keep = False
        except (ConnectionError, asyncio.IncompleteReadError, ValueError) as exc:
            err = ProtocolError(f"response body cut off: {exc}")
            err._got_status = True  # type: ignore[attr-defined]
            raise err from exc
        if headers.get("connection", "").lower() == "close":
            keep = False
        if keep:
            self._idle.append(conn)
        else:
            _close(conn)
        return HttpResponse(status, data, reused)

    def close(self) -> None:
        """Close all idle connections."""
        while self._idle:
            _close(self._idle.pop())


def _close(conn: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> None:
    try:
        conn[1].close()
    except Exception:  # noqa: BLE001, S110 - closing a broken transport may raise; it is gone either way
        pass


@dataclass
class RegenerateConfig:
    """Everything one regenerate run needs (the CLI fills it from arguments)."""

    input: Path | list[Path]
    output: Path
    errors: Path
    servers: list[str]
    model: str | None = None
    concurrency: int = 64
    max_tokens: int = 2048
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    timeout: float = 600.0
    retries: int = 5
    backoff: float = 1.0
    backoff_max: float = 60.0
    limit: int | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)
    api_key: str | None = None
    wait_ready: float = 30.0
    summary: Path | None = None
    show_progress: bool = True
    samples: int = 1  # answers per prompt (ids get "#j" when more than one)
    backend: str = "openai"  # or "local": batched transformers generation here
    batch_size: int = 256  # local backend: prompts per generate call
    device: str = "auto"
    dtype: str = "auto"
    decoder: str = "auto"  # local backend: slots (continuous batching), generate, or auto (slots where it can)


@dataclass
class RegenerateStats:
    """Counters for the final summary line (this run only, plus resumed count)."""

    total: int = 0
    resumed: int = 0
    done: int = 0
    errors: int = 0
    reasoning: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    wall_s: float = 0.0
    client_cpu_s: float = 0.0  # this process's CPU time during the run: the client's overhead
    stopped: str | None = None

    def summary(self) -> str:
        """The one line the supervisor shows at the end."""
        pct = 100.0 * self.reasoning / self.done if self.done else 0.0
        rate = self.completion_tokens / self.wall_s if self.wall_s > 0 else 0.0
        line = (
            f"regenerate: {self.done} samples ({self.resumed} already done), {self.errors} errors, "
            f"reasoning captured {pct:.1f}%, prompt tokens {self.prompt_tokens}, "
            f"completion tokens {self.completion_tokens}, wall {_hms(self.wall_s)} "
            f"({self.done / self.wall_s if self.wall_s > 0 else 0.0:.2f} samples/s, {rate:.1f} tok/s)"
        )
        if self.stopped:
            line += f"; stopped by {self.stopped}, {self.total - self.resumed - self.done - self.errors} left"
        return line

    def as_dict(self) -> dict[str, Any]:
        """JSON form for ``--summary``."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _hms(s: float) -> str:
    s_int = round(s)
    return f"{s_int // 3600}:{s_int // 60 % 60:02d}:{s_int % 60:02d}"


def load_prompts(path: Path) -> list[dict[str, Any]]:
    """Read ``{"id", "conversations"}`` JSONL; errors name the file and line."""
    if not path.is_file():
        raise StageError(f"{path}: input file not found\n  fix: run `python -m pipeline.prepare -o {path}` first")
    out = []
    seen: set[str] = set()
    for n, rec in iter_jsonl(path):
        if not isinstance(rec, dict) or not isinstance(rec.get("id"), (str, int)):
            raise StageError(f"{path}:{n}: record has no 'id'\n  fix: produce the input with pipeline.prepare")
        conv = rec.get("conversations")
        if not isinstance(conv, list) or not all(
            isinstance(t, dict) and isinstance(t.get("role"), str) and isinstance(t.get("content"), str)
            for t in conv
        ):
            raise StageError(
                f"{path}:{n}: key 'conversations' must be a list of {{role, content}} turns\n"
                "  fix: produce the input with pipeline.prepare"
            )
        sid = str(rec["id"])
        if sid in seen:
            raise StageError(f"{path}:{n}: duplicate id {sid!r}\n  fix: ids must be unique (pipeline.prepare dedupes)")
        seen.add(sid)
        out.append({"id": sid, "conversations": conv})
    return out


def load_done_ids(path: Path, repair: bool = True) -> set[str]:
    """Ids already in the output JSONL. A torn final line (no newline) is cut off when ``repair``.

    Raises :class:`StageError` if a complete line in the middle is not valid JSON,
    since that is corruption resume cannot reason about.
    """
    if not path.exists():
        return set()
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        if not repair:
            raise StageError(f"{path}: last line is incomplete")
        log(f"regenerate: {path}: dropping an incomplete last line ({len(data) - end} bytes) left by a killed run")
        with open(path, "r+b") as fh:
            fh.truncate(end)
            fh.flush()
            os.fsync(fh.fileno())
    ids: set[str] = set()
    for n, line in enumerate(data[:end].split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            ids.add(str(json.loads(line)["id"]))
        except (json.JSONDecodeError, KeyError, TypeError, UnicodeDecodeError) as exc:
            raise StageError(
                f"{path}:{n}: not a valid result record ({type(exc).__name__})\n"
                "  fix: delete that line (its sample will be regenerated) and run again"
            ) from exc
    return ids


def prompt_messages(conversations: list[dict[str, str]]) -> list[dict[str, str]]:
    """The turns to send: everything up to and including the last user turn."""
    last_user = max((i for i, t in enumerate(conversations) if t["role"] == "user"), default=-1)
    return [{"role": t["role"], "content": t["content"]} for t in conversations[: last_user + 1]]


class _Retryable(Exception):
    pass


class _Fatal(Exception):
    def __init__(self, msg: str, status: int | None = None) -> None:
        super().__init__(msg)
        self.status = status


async def _discover_models(servers: list[Server], model: str | None, wait: float) -> None:
    """Fill ``server.model`` from ``/v1/models`` (or ``model``); wait up to ``wait`` s per server."""
    for srv in servers:
        deadline = time.monotonic() + wait
        last = ""
        while True:
            try:
                resp = await asyncio.wait_for(srv.request("GET", "/models"), timeout=10)
                if resp.status == 200:
                    data = json.loads(resp.body).get("data") or []
                    ids = [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]
                    if ids:
                        if model is None and len(ids) > 1:
                            log(f"regenerate: {srv.url} serves {ids}; using {ids[0]} (pass --model to choose)")
                        srv.model = model or ids[0]
                        break
                    last = "no models listed"
                else:
                    last = f"HTTP {resp.status}"
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ProtocolError, ValueError) as exc:
                last = f"{type(exc).__name__}: {exc}"
            if time.monotonic() >= deadline:
                raise StageError(
                    f"{srv.url}: /v1/models not answering ({last})\n"
                    "  fix: start the server (python -m pipeline.serve) or check --server; "
                    "--wait-ready sets how long to wait"
                )
            await asyncio.sleep(0.5)


async def _complete(srv: Server, rec: dict[str, Any], cfg: RegenerateConfig) -> dict[str, Any]:
    messages = prompt_messages(rec["conversations"])
    if not messages:
        raise _Fatal("conversation has no user turn")
    payload: dict[str, Any] = {"model": srv.model, "messages": messages, "max_tokens": cfg.max_tokens}
    if cfg.temperature is not None:
        payload["temperature"] = cfg.temperature
    if cfg.top_p is not None:
        payload["top_p"] = cfg.top_p
    if cfg.seed is not None:
        payload["seed"] = cfg.seed + int(rec.get("sample", 0))  # several samples of one prompt must differ
    payload.update(cfg.extra_body)
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    t0 = time.monotonic()
    try:
        resp = await asyncio.wait_for(srv.request("POST", "/chat/completions", body), timeout=cfg.timeout)
    except asyncio.TimeoutError as exc:
        raise _Retryable(f"timeout after {cfg.timeout:.0f} s") from exc
    except (OSError, asyncio.IncompleteReadError, ProtocolError) as exc:
        raise _Retryable(f"{type(exc).__name__}: {exc}") from exc
    if resp.status == 429 or resp.status >= 500:
        raise _Retryable(f"HTTP {resp.status}: {resp.body[:200].decode('utf-8', 'replace')}")
    if resp.status != 200:
        raise _Fatal(f"HTTP {resp.status}: {resp.body[:500].decode('utf-8', 'replace')}", resp.status)
    try:
        answer = json.loads(resp.body)
        choice = answer["choices"][0]
        msg = choice["message"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise _Retryable(f"malformed completion response ({type(exc).__name__})") from exc
    content = msg.get("content") or ""
    assistant: dict[str, Any] = {"role": "assistant", "content": content}
    reasoning = msg.get("reasoning_content") or msg.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        assistant["reasoning_content"] = reasoning
    usage = answer.get("usage") or {}
    return {
        "id": rec["id"],
        "conversations": messages + [assistant],
        "finish_reason": choice.get("finish_reason"),
        "usage": {
            "prompt_tokens": int(usage.get("prompt_tokens") or 0),
            "completion_tokens": int(usage.get("completion_tokens") or 0),
        },
        "model": answer.get("model") or srv.model,
        "server": srv.url,
        "latency_s": round(time.monotonic() - t0, 3),
    }


async def _run(cfg: RegenerateConfig, pending: list[dict[str, Any]], stats: RegenerateStats) -> None:
    servers = [Server(u, cfg.api_key) for u in cfg.servers]
    await _discover_models(servers, cfg.model, cfg.wait_ready)
    log("regenerate: servers: " + ", ".join(f"{s.url} ({s.model})" for s in servers))

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def _on_signal(name: str) -> None:
        if stats.stopped is None:
            stats.stopped = name
            log(f"regenerate: received {name}; writing completed results and stopping")
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, _on_signal, signal.Signals(sig).name)
        except (NotImplementedError, RuntimeError):  # not the main thread / platform without it
            pass

    todo: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for rec in pending:
        todo.put_nowait(rec)
    results: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
    rr = 0
    t_start = time.monotonic()
    cpu_start = time.process_time()
    bar = progress(len(pending), desc="regenerate", unit="sample", disable=not cfg.show_progress)

    async def worker() -> None:
        nonlocal rr
        while not stop.is_set():
            try:
                rec = todo.get_nowait()
            except asyncio.QueueEmpty:
                return
            attempt = 0
            while True:
                srv = servers[rr % len(servers)]
                rr += 1
                try:
                    res = await _complete(srv, rec, cfg)
                    results.put_nowait(("ok", res))
                    break
                except _Fatal as exc:
                    results.put_nowait(("err", {"id": rec["id"], "error": str(exc), "status": exc.status,
                                                "attempts": attempt + 1, "server": srv.url}))
                    break
                except _Retryable as exc:
                    if attempt >= cfg.retries:
                        results.put_nowait(("err", {"id": rec["id"], "error": str(exc), "status": None,
                                                    "attempts": attempt + 1, "server": srv.url}))
                        break
                    stats.retries += 1
                    delay = min(cfg.backoff_max, cfg.backoff * (2 ** attempt)) * (0.5 + random.random() / 2)
                    attempt += 1
                    try:
                        await asyncio.wait_for(stop.wait(), timeout=delay)
                        return  # stopping: the record stays undone and is retried next run
                    except asyncio.TimeoutError:
                        pass

    # File writes and fsync run on one worker thread so the event loop keeps
    # feeding the servers; results that arrive meanwhile form the next batch.
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="regen-writer")
    out_fd = os.open(cfg.output, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    err_fd = os.open(cfg.errors, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write_batch(ok_blob: bytes, err_blob: bytes) -> None:
        # One write per file per batch: complete lines only, then fsync, so a
        # crash leaves at most a torn tail that load_done_ids cuts off.
        for fd, blob in ((out_fd, ok_blob), (err_fd, err_blob)):
            if blob:
                view = memoryview(blob)
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
                os.fsync(fd)

    def encode(item: dict[str, Any]) -> bytes:
        return (json.dumps(item, ensure_ascii=False) + "\n").encode("utf-8")

    async def drain(final: bool = False) -> bool:
        """Write everything queued now; return False when nothing was queued."""
        ok: list[bytes] = []
        errs: list[bytes] = []
        while True:
            try:
                kind, item = results.get_nowait()
            except asyncio.QueueEmpty:
                break
            if kind == "ok":
                ok.append(encode(item))
                stats.done += 1
                stats.prompt_tokens += item["usage"]["prompt_tokens"]
                stats.completion_tokens += item["usage"]["completion_tokens"]
                if "reasoning_content" in item["conversations"][-1]:
                    stats.reasoning += 1
            else:
                item["time"] = time.strftime("%Y-%m-%dT%H:%M:%S")
                errs.append(encode(item))
                stats.errors += 1
        if not ok and not errs:
            return False
        await loop.run_in_executor(pool, write_batch, b"".join(ok), b"".join(errs))
        elapsed = max(1e-9, time.monotonic() - t_start)
        bar.set_postfix_str(f"tok/s={stats.completion_tokens / elapsed:.1f}, err={stats.errors}", refresh=False)
        bar.update(len(ok) + len(errs))
        return True

    workers = [asyncio.create_task(worker()) for _ in range(max(1, min(cfg.concurrency, len(pending))))]
    gather = asyncio.gather(*workers, return_exceptions=True)
    stop_wait = asyncio.create_task(stop.wait())
    try:
        while True:
            if not await drain():
                if gather.done() or stop.is_set():
                    break
                get_task = asyncio.create_task(results.get())
                waiting: set[asyncio.Future[Any]] = {get_task, gather, stop_wait}
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if get_task.done():
                    results.put_nowait(get_task.result())  # put back; drain() takes it
                else:
                    get_task.cancel()
        if stop.is_set():
            for w in workers:
                w.cancel()
        await asyncio.gather(gather, return_exceptions=True)
        for w in workers:
            if w.done() and not w.cancelled() and w.exception() is not None:
                raise w.exception()  # type: ignore[misc]
        await drain(final=True)
    finally:
        stop_wait.cancel()
        bar.close()
        pool.shutdown(wait=True)
        stats.wall_s = time.monotonic() - t_start
        stats.client_cpu_s = time.process_time() - cpu_start
        os.close(out_fd)
        os.close(err_fd)
        for srv in servers:
            srv.close()


def expand_samples(prompts: list[dict[str, Any]], samples: int) -> list[dict[str, Any]]:
    """One record per wanted answer: ``id`` itself for one sample, ``id#0``.. ``id#N-1`` for N."""
    if samples <= 1:
        return [dict(r, sample=0) for r in prompts]
    return [dict(r, id=f"{r['id']}#{j}", sample=j) for r in prompts for j in range(samples)]


def regenerate(cfg: RegenerateConfig) -> RegenerateStats:
    """Run one regenerate pass (resuming from ``cfg.output``) and return its stats."""
    prompts: list[dict[str, Any]] = []
    seen: dict[str, Path] = {}
    for path in cfg.input if isinstance(cfg.input, list) else [cfg.input]:
        for rec in load_prompts(path):
            if rec["id"] in seen:
                raise StageError(f"{path}: id {rec['id']!r} is also in {seen[rec['id']]}\n"
                                 "  fix: give the inputs distinct ids (prepare and synthesise prefix theirs)")
            seen[rec["id"]] = path
            prompts.append(rec)
    if cfg.limit is not None:
        prompts = prompts[: cfg.limit]
    prompts = expand_samples(prompts, cfg.samples)
    cfg.output.parent.mkdir(parents=True, exist_ok=True)
    cfg.errors.parent.mkdir(parents=True, exist_ok=True)
    done_ids = load_done_ids(cfg.output)
    pending = [r for r in prompts if r["id"] not in done_ids]
    stats = RegenerateStats(total=len(prompts), resumed=len(prompts) - len(pending))
    # The errors file lists the latest run's failures only; those ids are
    # pending again now, so their old entries are stale.
    atomic_write_text(cfg.errors, "")
    log(f"regenerate: {len(prompts)} prompts, {stats.resumed} already in {cfg.output}, {len(pending)} to do")
    if pending and cfg.backend == "local":
        from pipeline.local_generate import generate_local

        for rec in pending:
            rec["messages"] = prompt_messages(rec["conversations"])
        t = time.process_time()
        generate_local(cfg, [r for r in pending if r["messages"]], stats)
        stats.client_cpu_s = time.process_time() - t
    elif pending:
        asyncio.run(_run(cfg, pending, stats))
    if cfg.summary:
        atomic_write_json(cfg.summary, stats.as_dict())
    return stats


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: ``python -m pipeline.regenerate``."""
    p = make_parser(
        "python -m pipeline.regenerate",
        "Regenerate assistant answers for prepared prompts through OpenAI-compatible servers "
        "(resumable by id; results and errors appended to JSONL as they complete).",
    )
    p.add_argument("--input", "-i", type=Path, action="append", required=True,
                   help="prompts JSONL from pipeline.prepare or pipeline.synthesise (repeatable; ids must be unique)")
    p.add_argument("--output", "-o", type=Path, required=True, help="results JSONL (appended; resumed by id)")
    p.add_argument("--errors", type=Path, default=None, help="errors JSONL (default: OUTPUT with .errors.jsonl)")
    p.add_argument("--backend", choices=["openai", "local"], default="openai",
                   help="openai: OpenAI-compatible servers (--server); local: batched transformers generation here")
    p.add_argument("--samples-per-prompt", type=int, default=1, help="answers per prompt (sample with --temperature)")
    p.add_argument("--batch-size", type=int, default=256, help="local backend: prompts per generate call")
    p.add_argument("--device", default="auto", help="local backend: auto, cuda, cpu")
    p.add_argument("--dtype", default="auto", help="local backend: auto (bf16 on GPU), float32, ...")
    p.add_argument("--decoder", choices=["auto", "slots", "generate"], default="auto",
                   help="local backend: slots = continuous batching over a preallocated KV cache; generate = "
                        "transformers' generate per batch; auto = slots where the model allows it")
    p.add_argument("--server", action="append", default=[], metavar="URL",
                   help="server base URL, repeatable for round-robin (default http://127.0.0.1:8000)")
    p.add_argument("--model", default=None,
                   help="openai: model name to request (default: first of /v1/models); local: model dir, .gguf "
                        "or 'smollm2'")
    p.add_argument("--concurrency", type=int, default=64, help="requests in flight")
    p.add_argument("--max-tokens", type=int, default=2048, help="max_tokens per answer")
    p.add_argument("--temperature", type=float, default=None, help="sampling temperature (default: server's)")
    p.add_argument("--top-p", type=float, default=None, help="nucleus sampling (default: server's)")
    p.add_argument("--seed", type=int, default=None, help="sampling seed sent to the server")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per request")
    p.add_argument("--retries", type=int, default=5, help="retries on connection errors, timeouts, 429, 5xx")
    p.add_argument("--backoff", type=float, default=1.0, help="first retry delay in seconds (doubles each retry)")
    p.add_argument("--limit", type=int, default=None, help="only the first N prompts")
    p.add_argument("--extra-body", default=None, metavar="JSON",
                   help='extra request fields, e.g. \'{"chat_template_kwargs": {"thinking": true}}\'')
    p.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY"), help="bearer token (env OPENAI_API_KEY)")
    p.add_argument("--wait-ready", type=float, default=30.0, help="seconds to wait for /v1/models at start")
    p.add_argument("--summary", type=Path, default=None, help="also write the summary as JSON here")
    p.add_argument("--no-progress", action="store_true", help="no tqdm bar")
    p.add_argument("--allow-errors", action="store_true",
                   help="exit 0 even if some samples failed (they are retried on the next run)")
    args = p.parse_args(argv)
    for name in ("concurrency", "max_tokens", "samples_per_prompt", "batch_size"):
        if getattr(args, name) <= 0:
            p.error(f"--{name.replace('_', '-')} must be positive")
    if args.timeout <= 0 or args.retries < 0 or args.backoff < 0:
        p.error("--timeout must be positive and --retries/--backoff not negative")
    extra: dict[str, Any] = {}
    if args.extra_body:
        try:
            extra = json.loads(args.extra_body)
        except json.JSONDecodeError as exc:
            p.error(f"--extra-body is not valid JSON: {exc.msg} at column {exc.colno}")
        if not isinstance(extra, dict):
            p.error("--extra-body must be a JSON object")
    if args.backend == "local" and args.server:
        p.error("--server is for --backend openai; the local backend generates in this process")
    errors = args.errors or args.output.with_name(
        args.output.name[: -len(".jsonl")] + ".errors.jsonl" if args.output.name.endswith(".jsonl")
        else args.output.name + ".errors.jsonl")
    cfg = RegenerateConfig(
        input=args.input, output=args.output, errors=errors,
        servers=args.server or ["http://127.0.0.1:8000"], model=args.model, concurrency=args.concurrency,
        max_tokens=args.max_tokens, temperature=args.temperature, top_p=args.top_p, seed=args.seed,
        timeout=args.timeout, retries=args.retries, backoff=args.backoff, limit=args.limit,
        extra_body=extra, api_key=args.api_key, wait_ready=args.wait_ready, summary=args.summary,
        show_progress=not args.no_progress, samples=args.samples_per_prompt, backend=args.backend,
        batch_size=args.batch_size, device=args.device, dtype=args.dtype, decoder=args.decoder,
    )
    try:
        stats = regenerate(cfg)
    except StageError as exc:
        fail(str(exc))
    print(stats.summary(), flush=True)
    if stats.stopped:
        return 130 if stats.stopped == "SIGINT" else 143
    return 1 if stats.errors and not args.allow_errors else 0


if __name__ == "__main__":
    sys.exit(main())
