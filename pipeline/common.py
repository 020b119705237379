"""Small helpers shared by every pipeline stage.

Atomic writes (temp file in the same directory, fsync, ``os.replace``) so a
killed stage never leaves a file that looks complete; an argparse factory whose
errors exit 2 with the usage line; tqdm progress tuned for log files; timestamped
log lines; a SIGTERM flag for clean stops; and ``fail`` for user-facing errors.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NoReturn, TypeVar, overload

from pipeline.atomic import atomic_write_bytes, fsync_dir

T = TypeVar("T")

__all__ = [
    "StageError",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "fail",
    "fsync_dir",
    "install_sigterm_flag",
    "iter_jsonl",
    "load_manifest",
    "log",
    "make_parser",
    "progress",
    "run_stage",
]


class StageError(Exception):
    """A user-facing stage failure: the message names the file/record and the fix.

    Stage ``main`` functions catch it and call :func:`fail`, so library callers
    get an exception while the CLI gets ``error: ...`` and exit code 1.
    """


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_write_bytes`)."""
    atomic_write_bytes(path, text.encode(encoding))


def atomic_write_json(path: str | os.PathLike[str], obj: Any, indent: int | None = 2) -> None:
    """Write ``obj`` as JSON (UTF-8, trailing newline) to ``path`` atomically."""
    atomic_write_text(path, json.dumps(obj, indent=indent, ensure_ascii=False) + "\n")


def make_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """Return an ArgumentParser for a stage CLI.

    argparse already prints the usage line and exits 2 on bad arguments; this
    only fixes ``prog`` (so usage reads ``python -m pipeline.x``, not ``__main__.py``)
    and shows defaults in ``--help``.
    """
    return argparse.ArgumentParser(
        prog=prog,
        description=description,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )


@overload
def progress(iterable_or_total: Iterable[T], desc: str = ..., unit: str = ..., **kwargs: Any) -> Any: ...
@overload
def progress(iterable_or_total: int | None, desc: str = ..., unit: str = ..., **kwargs: Any) -> Any: ...


def progress(iterable_or_total: Any, desc: str = "", unit: str = "it", **kwargs: Any) -> Any:
    """A tqdm bar on stderr suited to log files the supervisor follows.

    Pass an iterable to wrap it, or an int (or None) total to get a bar you
    ``update()`` yourself. ``mininterval`` is 1 s so a log does not fill with
    carriage-return frames; ``ascii`` is off because the supervisor parses the
    standard tqdm format. Extra keyword arguments go to tqdm.
    """
    from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]  # imported lazily: the eagle3tui core must not need tqdm

    opts: dict[str, Any] = {
        "desc": desc,
        "unit": unit,
        "file": sys.stderr,
        "mininterval": 1.0,
        "dynamic_ncols": False,
        "smoothing": 0.1,
    }
    opts.update(kwargs)
    if isinstance(iterable_or_total, int) or iterable_or_total is None:
        return tqdm(total=iterable_or_total, **opts)
    return tqdm(iterable_or_total, **opts)


def log(msg: str, *, stream: Any = None) -> None:
    """Print ``msg`` as one timestamped line (local time, ISO-like) and flush.

    Goes to stderr by default so stdout stays free for machine-readable output.
    """
    out = stream if stream is not None else sys.stderr
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    print(f"[{stamp}] {msg}", file=out, flush=True)


def install_sigterm_flag(also_sigint: bool = False) -> threading.Event:
    """Install a SIGTERM handler that sets and returns an Event.

    Stages poll ``flag.is_set()`` at safe points (between records/batches) and
    stop cleanly instead of dying mid-write. A second SIGTERM after the flag is
    set restores the default action and re-raises, so a stuck stage can still be
    killed. Must be called from the main thread.
    """
    flag = threading.Event()

    def _handler(signum: int, _frame: Any) -> None:
        if flag.is_set():
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        flag.set()
        log(f"received {signal.Signals(signum).name}; stopping at the next safe point")

    signal.signal(signal.SIGTERM, _handler)
    if also_sigint:
        signal.signal(signal.SIGINT, _handler)
    return flag


def fail(msg: str, code: int = 1) -> NoReturn:
    """Print ``error: msg`` to stderr and exit with ``code``."""
    print(f"error: {msg}", file=sys.stderr, flush=True)
    sys.exit(code)


def iter_jsonl(path: Path, fix: str | None = None) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, object)`` for the non-blank lines of a JSONL file.

    A line that is not JSON raises StageError naming the file, line and column
    (and ``fix``, when given).
    """
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield n, json.loads(line)
            except json.JSONDecodeError as exc:
                hint = f"\n  fix: {fix}" if fix else ""
                raise StageError(f"{path}:{n}: invalid JSON ({exc.msg} at column {exc.colno}){hint}") from exc


def run_stage(parser: argparse.ArgumentParser, run: Callable[[argparse.Namespace], int],
              argv: list[str] | None = None) -> int:
    """The body of every stage's ``main``: parse ``argv``, call ``run``, report failures.

    Bad arguments exit 2 (argparse); a :class:`StageError` or a missing input
    file prints ``error: ...`` and exits 1; otherwise ``run``'s exit code is returned.
    """
    args = parser.parse_args(argv)
    try:
        return run(args)
    except StageError as exc:
        fail(str(exc))
    except FileNotFoundError as exc:
        fail(f"{exc.filename or exc}: not found\n  fix: check the path, or run the stage that writes it first")


def load_manifest(directory: str | os.PathLike[str], fmt: str, producer: str,
                  require_complete: bool = False) -> dict[str, Any]:
    """Read and check ``directory/manifest.json`` of a dataset written by a stage.

    ``fmt`` is the expected ``format`` value; ``producer`` names the command that
    writes the directory (for the fix line). With ``require_complete`` the
    manifest must also say ``"complete": true``. Raises StageError naming the
    file, the key and the fix.
    """
    path = Path(directory) / "manifest.json"
    if not path.is_file():
        raise StageError(f"{path}: missing; {path.parent} is not a complete dataset\n"
                         f"  fix: run (or finish) `{producer}` for it")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise StageError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}\n  fix: rerun `{producer}`") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != fmt:
        got = manifest.get("format") if isinstance(manifest, dict) else None
        raise StageError(f"{path}: key 'format' is {got!r}, expected {fmt!r}\n"
                         f"  fix: rerun `{producer}` with this version of the pipeline")
    if require_complete and manifest.get("complete") is not True:
        raise StageError(f"{path}: key 'complete' is not true: the dataset was not finished\n"
                         f"  fix: rerun `{producer}` to finish it")
    return manifest
