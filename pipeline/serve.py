"""serve: run the target model behind an OpenAI-compatible API (a ``kind = "service"`` stage).

Two backends, same client-facing API:

- ``llama_cpp`` (default): ``python -m llama_cpp.server`` on CPU with a GGUF
  file (the packaged SmolLM2-135M-Instruct when ``--model smollm2``).
- ``vllm``: ``vllm serve MODEL`` on GPU hosts; extra arguments after ``--``
  are passed through (``--tensor-parallel-size 8`` and the like).

The wrapper ``exec``s the server (argv list, no shell), so the supervisor's
signals reach the server process directly. Readiness is ``GET /v1/models``
answering 200 with at least one model: ``python -m pipeline.serve --probe URL``
or :func:`wait_ready` from Python.

Run ``python -m pipeline.serve --help``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from pipeline.common import StageError, fail, log, make_parser

__all__ = ["build_argv", "list_models", "main", "models_url", "wait_ready"]

BACKENDS = ("llama_cpp", "vllm")


def models_url(base_url: str) -> str:
    """``http://h:p`` or ``http://h:p/v1`` (with or without a trailing slash) -> ``.../v1/models``."""
    base = base_url.rstrip("/")
    if base.endswith("/v1/models"):
        return base
    if not base.endswith("/v1"):
        base += "/v1"
    return base + "/models"


def list_models(base_url: str, timeout: float = 5.0) -> list[str]:
    """Return the model ids a server lists at ``/v1/models`` (raises OSError/ValueError on failure)."""
    req = urllib.request.Request(models_url(base_url), headers={"Accept": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        body = json.loads(resp.read().decode("utf-8"))
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise ValueError(f"{models_url(base_url)}: response has no 'data' list")  # noqa: TRY004 - bad server data
    return [str(m.get("id")) for m in data if isinstance(m, dict) and m.get("id") is not None]


def wait_ready(url: str, timeout: float = 300.0, interval: float = 0.25) -> list[str]:
    """Poll ``/v1/models`` until the server lists a model; return the model ids.

    Raises ``TimeoutError`` naming the URL and the last error after ``timeout``
    seconds. The interval grows to at most 2 s so a slow model load is not
    hammered.
    """
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    delay = interval
    while True:
        try:
            models = list_models(url, timeout=min(5.0, max(0.5, deadline - time.monotonic())))
            if models:
                return models
            last = "server answered but lists no models yet"
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code}"
        except (OSError, ValueError) as exc:
            last = f"{type(exc).__name__}: {exc}"
        if time.monotonic() + delay > deadline:
            raise TimeoutError(f"{models_url(url)} not ready after {timeout:.0f} s (last: {last})")
        time.sleep(delay)
        delay = min(2.0, delay * 1.5)


def build_argv(
    backend: str,
    model: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    served_model_name: str | None = None,
    ctx: int | None = None,
    threads: int | None = None,
    extra: Sequence[str] = (),
    python: str | None = None,
) -> list[str]:
    """The server's argv for ``backend``; ``model`` is a path (or ``smollm2``/a HF id for vLLM)."""
    if backend == "llama_cpp":
        model_path = _resolve_gguf(model)
        argv = [python or sys.executable, "-m", "llama_cpp.server",
                "--model", str(model_path), "--host", host, "--port", str(port)]
        if served_model_name:
            argv += ["--model_alias", served_model_name]
        if ctx:
            argv += ["--n_ctx", str(ctx)]
        if threads:
            argv += ["--n_threads", str(threads)]
        return argv + list(extra)
    if backend == "vllm":
        exe = shutil.which("vllm")
        argv = [exe] if exe else [python or sys.executable, "-m", "vllm.entrypoints.cli.main"]
        argv += ["serve", model, "--host", host, "--port", str(port)]
        if served_model_name:
            argv += ["--served-model-name", served_model_name]
        if ctx:
            argv += ["--max-model-len", str(ctx)]
        return argv + list(extra)
    raise StageError(f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")


def _resolve_gguf(model: str) -> Path:
    if model == "smollm2":
        from pipeline.model_io import ModelNotFoundError, find_smollm2_gguf

        try:
            return find_smollm2_gguf()
        except ModelNotFoundError as exc:
            raise StageError(str(exc)) from exc
    p = Path(model).expanduser()
    if not p.is_file():
        raise StageError(
            f"{p}: GGUF model file not found\n"
            "  fix: pass --model with a .gguf path, or 'smollm2' for the packaged demo model"
        )
    return p


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: ``python -m pipeline.serve``."""
    raw = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in raw:
        i = raw.index("--")
        raw, extra = raw[:i], raw[i + 1:]
    p = make_parser(
        "python -m pipeline.serve",
        "Serve the target model with an OpenAI-compatible API (llama.cpp on CPU, or vLLM), "
        "or probe a server's readiness. Arguments after -- go to the server unchanged.",
    )
    p.add_argument("--backend", choices=BACKENDS, default="llama_cpp", help="server implementation")
    p.add_argument("--model", default="smollm2",
                   help="GGUF file for llama_cpp ('smollm2' = packaged demo model); model dir or id for vllm")
    p.add_argument("--host", default="127.0.0.1", help="address to bind")
    p.add_argument("--port", type=int, default=8000, help="port to bind")
    p.add_argument("--served-model-name", default=None, help="model name the API reports")
    p.add_argument("--ctx", type=int, default=None, help="context length (n_ctx / --max-model-len)")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (llama_cpp)")
    p.add_argument("--print-argv", action="store_true", help="print the server command as JSON and exit")
    p.add_argument("--probe", metavar="URL", default=None,
                   help="instead of serving, wait until URL/v1/models lists a model; exit 0 when ready")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds --probe waits before failing")
    args = p.parse_args(raw)
    if not 0 < args.port < 65536:
        p.error(f"--port {args.port} is out of range 1..65535")

    if args.probe:
        try:
            models = wait_ready(args.probe, args.timeout)
        except TimeoutError as exc:
            fail(f"{exc}\n  fix: check that the server is running and the URL/port are right")
        print(f"serve: ready at {args.probe} (models: {', '.join(models)})", flush=True)
        return 0

    try:
        cmd = build_argv(args.backend, args.model, args.host, args.port, args.served_model_name,
                         args.ctx, args.threads, extra)
    except StageError as exc:
        fail(str(exc))
    if args.print_argv:
        print(json.dumps(cmd), flush=True)
        return 0
    log(f"serve: exec {' '.join(cmd)}")
    log(f"serve: readiness probe: python -m pipeline.serve --probe http://{args.host}:{args.port}")
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        # exec, not a child: signals from the supervisor go straight to the server.
        os.execv(cmd[0], cmd)
    except OSError as exc:
        fail(f"cannot start {cmd[0]}: {exc}\n  fix: install the backend "
             f"({'pip install llama-cpp-python[server]' if args.backend == 'llama_cpp' else 'pip install vllm'})")
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
