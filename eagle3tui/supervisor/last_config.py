"""The configuration a running driver works under, kept in its state directory.

An edit that breaks pipeline.toml does not change what a live driver does
(it refuses the reload and keeps its configuration), so it must not stop a
person from seeing (``status``) or stopping (``stop``) what that driver
runs. The driver writes the text it loaded to ``<state_dir>/config.json``
(owner-only) when it starts and after every reload; ``status`` and ``stop``
fall back to it, and say so, when the file on disk is invalid and a driver
holds the lock.

Where the state directory is, when the file cannot be parsed: its
``state_dir`` line if that line parses on its own (a literal path, without
``{vars}``), else the default ``.eagle3tui`` beside the file.
"""

from __future__ import annotations

import json
import os
import re
import stat
import time
from pathlib import Path

import tomllib

from eagle3tui.atomic import atomic_write_json
from eagle3tui.config import PipelineConfig, build_config
from eagle3tui.errors import ConfigError
from eagle3tui.supervisor.lock import lock_held

RECORD = "config.json"
_STATE_DIR_LINE = re.compile(r"^\s*state_dir\s*=")


def record_config(config: PipelineConfig) -> None:
    """Keep the text ``config`` was loaded from (never fails: a stale record is still useful)."""
    try:
        text = config.path.read_text(encoding="utf-8")
        # Edited since it was loaded: keep the text only if it is the same configuration.
        if build_config(tomllib.loads(text), config.path, text,
                        dict(config.overrides)).state_dir != config.state_dir:
            return
        kept = _read_record(config.state_dir / RECORD)
        if kept and (kept.get("path"), kept.get("text"), kept.get("overrides")) == \
                (str(config.path), text, dict(config.overrides)):
            return  # the same configuration as the last driver's: nothing to write
        atomic_write_json(config.state_dir / RECORD, {
            "schema": 1, "path": str(config.path), "overrides": dict(config.overrides),
            "text": text, "time": time.time(), "pid": os.getpid()})
    except (OSError, ValueError, ConfigError):
        pass


def state_dir_candidates(path: Path) -> list[Path]:
    """Where the state directory of the (possibly unparseable) file ``path`` may be."""
    out: list[Path] = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        if not _STATE_DIR_LINE.match(line):
            continue
        try:
            value = tomllib.loads(line).get("state_dir")
        except tomllib.TOMLDecodeError:
            continue
        if isinstance(value, str) and "{" not in value:
            out.append(Path(value) if os.path.isabs(value) else (path.parent / value).resolve())
    out.append((path.parent / ".eagle3tui").resolve())
    return list(dict.fromkeys(out))


def driver_config(path: str | os.PathLike[str], error: ConfigError) -> tuple[PipelineConfig, str] | None:
    """The running driver's configuration of ``path`` (whose file gave ``error``), and a note.

    None when no driver runs for it, or its record is missing, not ours, or
    for another file: then the error on disk is the answer.
    """
    path = Path(path).absolute()
    for state_dir in state_dir_candidates(path):
        doc = _read_record(state_dir / RECORD)
        if doc is None or doc.get("path") != str(path) or not lock_held(state_dir):
            continue
        text = doc.get("text")
        overrides = doc.get("overrides") if isinstance(doc.get("overrides"), dict) else {}
        try:
            config = build_config(tomllib.loads(str(text)), path, str(text),
                                  {str(k): str(v) for k, v in overrides.items()})
        except (ConfigError, tomllib.TOMLDecodeError):
            continue
        if config.state_dir != state_dir:
            continue
        when = time.strftime("%H:%M:%S", time.localtime(float(doc.get("time") or 0)))
        first = str(error).splitlines()[0]
        note = (f"{first}; using the configuration the running driver works under "
                f"(recorded at {when} in {state_dir / RECORD}). Fix the file: the driver "
                "goes on with its configuration until it is valid again")
        return config, note
    return None


def _read_record(path: Path) -> dict | None:
    # Trusted only when it is ours: a regular file of this user that nobody else may write.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            doc = json.loads(f.read(16 << 20))
        return doc if isinstance(doc, dict) else None
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
