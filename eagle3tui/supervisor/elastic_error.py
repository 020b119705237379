"""torchrun's error file: the root cause of a distributed job's failure, as the launcher recorded it.

torchrun (``torch.distributed.run``, the elastic launcher) writes the first failed child's
error record to the file named by ``TORCHELASTIC_ERROR_FILE`` when its own ``main`` ends in
``ChildFailedError`` and the child left a record (an entry point decorated with
``torch.distributed.elastic.multiprocessing.errors.record``), or its own exception when the
launcher itself fails (a rendezvous that timed out). The record is JSON:
``{"message": {"message": "RuntimeError: ...", "extraInfo": {"py_callstack": "Traceback ...",
"timestamp": "..."}, "errorCode": 1}}`` (see ``ErrorHandler.record_exception`` and
``dump_error_file`` in torch/distributed/elastic/multiprocessing/errors/error_handler.py).

A stage whose argv launches torchrun gets the variable set, when the user has not set it, to
an owner-only path in the attempt's own state directory (``runs/<stage>/`` is 0700): never a
predictable name in a world-writable directory. After the attempt the driver reads it back
(bounded, a regular file owned by the driver's user, JSON of that shape), and the failure
message leads with the exception and where it was raised. The text is the job's own and is
sanitised (no escapes, no control characters, bounded) before it reaches an alert.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eagle3tui.textsafe import printable
from eagle3tui.trusted import NotRegularFile, UntrustedFile, check_owned, open_regular

ENV = "TORCHELASTIC_ERROR_FILE"
SUFFIX = ".elastic-error.json"
MAX_BYTES = 256 * 1024  # a record is a message and a traceback; more is not torchrun's
_LAUNCHER_MODULES = frozenset({"torch.distributed.run", "torch.distributed.launch"})
_LAUNCHER_PROGRAMS = frozenset({"torchrun"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh"})
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")"})
_WRAPPERS = frozenset({"exec", "nohup", "env", "time", "srun", "run", "nice", "stdbuf", "numactl", "setsid",
                       "uv", "poetry", "pdm", "pixi", "conda", "mamba"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_FRAME = re.compile(r'^\s*File "([^"\n]{1,400})", line (\d{1,7}), in (\S{1,200})')


def launches_elastic(argv: Sequence[str]) -> bool:
    """Whether ``argv`` starts torch's elastic launcher (``torchrun``, ``python -m torch.distributed.run``).

    Only a program position counts: the first word, or the word after a shell separator or
    a wrapper (``exec``, ``env``, ``srun -N2``, ``uv run``) and its options. A shell stage
    (``/bin/sh -c SCRIPT``) is looked into: its script's words are read the same way
    (without running anything).
    """
    words = list(argv)
    if len(words) >= 3 and os.path.basename(words[0]) in _SHELLS and words[1] == "-c":
        try:
            lexer = shlex.shlex(words[2], posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            words = list(lexer)
        except ValueError:
            words = words[2].split()
    expect = True
    for i, w in enumerate(words):
        name = os.path.basename(w)
        if w in _SEPARATORS:
            expect = True
        elif not expect:
            continue
        elif name in _WRAPPERS or w.startswith("-") or _ASSIGNMENT.match(w):
            continue  # still before the program
        elif name in _LAUNCHER_PROGRAMS:
            return True
        elif name.startswith("python"):
            rest = words[i + 1:]
            for j, a in enumerate(rest):
                if not a.startswith("-"):
                    break
                if a == "-m" and j + 1 < len(rest) and rest[j + 1] in _LAUNCHER_MODULES or a[2:] in _LAUNCHER_MODULES:
                    return True
            expect = False
        else:
            expect = False
    return False


def error_file_env(argv: Sequence[str], stage_env: Mapping[str, str], prefix: str) -> dict[str, str]:
    """The variable to add for an attempt whose record prefix is ``prefix``, or nothing.

    Nothing when the stage does not launch torchrun, or when the user set the variable
    (in the stage's ``env`` or the driver's environment): their file is theirs. A file
    left at the path (an attempt number reused after its records were removed) is removed,
    so that what is read back is this attempt's.
    """
    if ENV in stage_env or not launches_elastic(argv):
        return {}
    path = prefix + SUFFIX
    try:
        os.unlink(path)
    except OSError:
        pass
    return {ENV: path}


@dataclass(frozen=True)
class ElasticError:
    """The root cause torchrun recorded."""

    message: str  # "RuntimeError: boom on rank 1"
    where: str = ""  # "train.py:12 in step", the innermost frame of its traceback
    exitcode: int | None = None

    def describe(self) -> str:
        return self.message + (f" (raised at {self.where})" if self.where else "")


def read_error_file(path: str) -> ElasticError | None:
    """The record at ``path``, or None when there is none or it is not one to trust.

    Trusted only as a regular file (no symlink followed) owned by this user and not
    writable by others, at most :data:`MAX_BYTES`, JSON in torchrun's shape.
    """
    try:
        fd = open_regular(path)
    except (OSError, NotRegularFile):
        return None
    try:
        st = os.fstat(fd)
        check_owned(st, path, "torchrun error file")
        if st.st_size > MAX_BYTES:
            return None
        data = os.read(fd, MAX_BYTES + 1)
    except (OSError, UntrustedFile):
        return None
    finally:
        os.close(fd)
    try:
        doc = json.loads(data.decode("utf-8", "replace"))
    except ValueError:
        return None
    return parse_record(doc)


def parse_record(doc: Any) -> ElasticError | None:
    """torchrun's record (``{"message": {"message": ..., "extraInfo": {...}, "errorCode": N}}``) read."""
    if not isinstance(doc, dict):
        return None
    msg = doc.get("message")
    code: Any = None
    stack = ""
    if isinstance(msg, dict):
        text = msg.get("message")
        code = msg.get("errorCode")
        extra = msg.get("extraInfo")
        if isinstance(extra, dict) and isinstance(extra.get("py_callstack"), str):
            stack = extra["py_callstack"]
    else:
        text = msg  # the "new message format": a plain string
    if not isinstance(text, str) or not text.strip():
        return None
    first = _clean(text.strip().splitlines()[0], 300)
    return ElasticError(first, _innermost_frame(stack), code if isinstance(code, int) else None)


def _innermost_frame(stack: str) -> str:
    last = None
    for line in stack.splitlines()[-400:]:
        m = _FRAME.match(line)
        if m:
            last = m
    if last is None:
        return ""
    return _clean(f"{last.group(1)}:{last.group(2)} in {last.group(3)}", 300)


def _clean(text: str, limit: int) -> str:
    out = " ".join(printable(text).split())
    return out if len(out) <= limit else out[: limit - 3] + "..."


def explain(cause: dict[str, Any] | None, extra: Mapping[str, Any]) -> dict[str, Any] | None:
    """``cause`` (a StageWatch cause) led by the attempt's torchrun record, when there is one.

    ``extra``: the attempt record's extras (``elastic_error_file``, set at launch). The
    rank stays the one the log named (the record has none); the quote becomes the
    exception and where it was raised, and the log's own quote is kept for the record.
    """
    path = extra.get("elastic_error_file")
    if not isinstance(path, str):
        return cause
    err = read_error_file(path)
    if err is None:
        return cause
    out = dict(cause or {"rule": "torchrun-error-file"})
    out["log_text"] = out.get("text")
    out["text"] = err.describe()
    out["elastic_error"] = {"message": err.message, "where": err.where, "exitcode": err.exitcode, "file": path}
    if out.get("rule") in (None, "early-exit"):
        out["rule"] = "torchrun-error-file"
    return out
