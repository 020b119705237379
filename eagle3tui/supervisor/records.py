"""Run records: one JSON file per stage attempt, written atomically.

Layout under the state directory::

    runs/<stage>/<attempt>.json          the record (driver-owned)
    runs/<stage>/<attempt>.started.json  written by the wrapper once the stage runs
    runs/<stage>/<attempt>.result.json   written by the wrapper when the stage ends
    runs/<stage>/<attempt>.gpu.json      the node's GPUs, by the wrapper of a stage on
                                         another node (telemetry/node_report.py)

The wrapper's files are merged into the record when read, so the outcome is
known even if no supervisor was alive when the stage ended. When the state
directory refused the result (full, read-only), it is found in the reserved
file, the fallback file outside the state directory (in an owner-only
directory with a random name), or the log's marker line, which is believed
only when it carries the attempt's MAC (the key is in the record, which the
stage log never shows: a log line that imitates the marker is refused).

Every file here is read through :func:`eagle3tui.trusted.read_trusted`: a
file that is not regular, or is owned by someone else, or writable by others,
is refused and reported in ``problems`` (the driver alerts them).

A corrupt or half-written record is reported in ``RunStore.problems``. The
newest attempt is never skipped for being unreadable: ``latest`` then returns
a stand-in built from the wrapper's files (``extra["unreadable"]``), so an
unreadable record can never make a running or finished stage look pending
and be launched a second time.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import secrets
import stat
import tempfile
import threading
import uuid
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from eagle3tui.atomic import atomic_write_json
from eagle3tui.supervisor.procs import is_alive
from eagle3tui.trusted import open_regular, read_trusted, read_trusted_json

# The wrapper's last-resort line in the stage log (see stagewrap.RESULT_MARKER).
RESULT_MARKER = b"[eagle3tui] result "


@dataclass
class RunRecord:
    """Everything known about one attempt of one stage."""

    stage: str
    attempt: int
    run_id: str
    argv: list[str]
    cwd: str
    log: str
    log_offset: int = 0
    # Lines of the log before log_offset (earlier attempts, this attempt's header): the
    # attempt's first line is line log_line + 1 of the file, as grep -n counts.
    log_line: int = 0
    resume: bool = False
    resumed_from: int | None = None
    launched_at: float = 0.0
    wrapper_pid: int | None = None
    wrapper_create_time: float | None = None
    pid: int | None = None
    pgid: int | None = None
    create_time: float | None = None
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    signal: int | None = None
    stop_requested_at: float | None = None
    stop_reason: str | None = None
    killed_after_grace: bool = False
    error: str | None = None
    trigger: str = "user"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.ended_at is not None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunRecord:
        """A record from its JSON; ``ValueError`` naming the first field of the wrong type."""
        if not isinstance(data, dict):
            raise ValueError(f"a run record is a JSON object, got {type(data).__name__}")
        names = {f.name for f in fields(cls)}
        missing = [n for n in ("stage", "attempt", "run_id", "argv", "cwd", "log") if n not in data]
        if missing:
            raise ValueError(f"missing fields: {', '.join(missing)}")
        for name, value in data.items():
            kind = _FIELD_TYPES.get(name)
            if kind is not None and not _has_type(value, kind):
                raise ValueError(f"field {name!r} must be {_TYPE_WORDS[kind]}, got "
                                 f"{type(value).__name__} {value!r:.40}")
        if isinstance(data["argv"], list) and not all(isinstance(a, str) for a in data["argv"]):
            raise ValueError("field 'argv' must be a list of strings")
        return cls(**{k: v for k, v in data.items() if k in names})


# The JSON type each field of a record must have (None allowed where it says "?"),
# so a hand-edited or corrupt record is refused by name instead of crashing
# whoever reads it later ("attempt": "2" makes every "attempt + 1" a TypeError).
_FIELD_TYPES = {
    "stage": "str", "attempt": "int", "run_id": "str", "argv": "list", "cwd": "str", "log": "str",
    "log_offset": "int", "log_line": "int", "resume": "bool", "resumed_from": "int?", "launched_at": "num",
    "wrapper_pid": "int?", "wrapper_create_time": "num?", "pid": "int?", "pgid": "int?",
    "create_time": "num?", "started_at": "num?", "ended_at": "num?", "exit_code": "int?",
    "signal": "int?", "stop_requested_at": "num?", "stop_reason": "str?",
    "killed_after_grace": "bool", "error": "str?", "trigger": "str", "extra": "dict",
}
_TYPE_WORDS = {"str": "a string", "int": "an integer", "list": "a list", "bool": "true or false",
               "num": "a number", "dict": "an object", "int?": "an integer or null",
               "num?": "a number or null", "str?": "a string or null"}


def _has_type(value: Any, kind: str) -> bool:
    if kind.endswith("?"):
        if value is None:
            return True
        kind = kind[:-1]
    if kind == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False  # true is not a pid, an attempt or a time
    if kind == "int":
        return isinstance(value, int)
    if kind == "num":
        return isinstance(value, (int, float)) and math.isfinite(value)
    return isinstance(value, {"str": str, "list": list, "dict": dict}[kind])


def _read_json(path: Path) -> Any:
    return read_trusted_json(path)


class RunStore:
    """Reads and writes run records under ``state_dir``."""

    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        self.state_dir = Path(state_dir)
        self.runs_dir = self.state_dir / "runs"
        self._fallback_lock = threading.Lock()
        self.problems: list[str] = []

    def stage_dir(self, stage: str) -> Path:
        return self.runs_dir / stage

    def prefix(self, stage: str, attempt: int) -> str:
        return str(self.stage_dir(stage) / f"{attempt:04d}")

    def fallback_dir(self) -> Path:
        """The owner-only directory outside the state directory for results it refuses.

        Made once per state directory with ``mkdtemp`` (0700, a random name) in
        ``$XDG_RUNTIME_DIR`` when that is ours, else the temp directory; its
        path is kept in ``result-fallback.json`` and reused while it still
        passes the checks (ours, a directory, closed to others).
        """
        with self._fallback_lock:  # launches of one pass run in threads: one directory for all
            return self._fallback_dir()

    def _fallback_dir(self) -> Path:
        note = self.state_dir / "result-fallback.json"
        try:
            known = Path(str(read_trusted_json(note)["dir"]))
            st = os.lstat(known)
            if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077:
                return known
        except (OSError, ValueError, KeyError, TypeError):
            pass
        base = os.environ.get("XDG_RUNTIME_DIR") or ""
        try:
            st = os.stat(base) if base else None
        except OSError:
            st = None
        if st is None or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            base = tempfile.gettempdir()
        made = Path(tempfile.mkdtemp(prefix="eagle3tui-results-", dir=base))
        atomic_write_json(note, {"dir": str(made), "state_dir": str(self.state_dir)})
        return made

    def discard_fallback_dir(self) -> None:
        """Remove the fallback directory if nothing was ever written there (a driver going idle)."""
        note = self.state_dir / "result-fallback.json"
        try:
            os.rmdir(str(read_trusted_json(note)["dir"]))  # fails, harmlessly, unless empty
            note.unlink()
        except (OSError, ValueError, KeyError, TypeError):
            pass

    def gpu_report_path(self, stage: str, attempt: int) -> str:
        """Where the wrapper of a stage on another node reports that node's GPUs."""
        return gpu_report_path(self.prefix(stage, attempt))

    def records(self, stage: str) -> list[RunRecord]:
        """All readable attempts of ``stage``, oldest first, wrapper files merged."""
        d = self.stage_dir(stage)
        if not d.is_dir():
            return []
        recs = (self._load(p) for p in sorted(d.glob("[0-9][0-9][0-9][0-9].json")))
        return [r for r in recs if r is not None]

    def _load(self, path: Path) -> RunRecord | None:
        """One record with its wrapper files merged; None (and a problem) if unreadable."""
        try:
            rec = RunRecord.from_json(_read_json(path))
        except (OSError, ValueError, TypeError, UnicodeDecodeError) as e:
            self._problem(f"{path}: unreadable run record ({e}); skipped. "
                          "Move it away if it keeps appearing.")
            return None
        self.merge_wrapper_files(rec)
        return rec

    def latest(self, stage: str) -> RunRecord | None:
        """The newest attempt; a stand-in record when its file cannot be read."""
        d = self.stage_dir(stage)
        if not d.is_dir():
            return None
        paths = sorted(d.glob("[0-9][0-9][0-9][0-9].json"), reverse=True)
        if not paths:
            return None
        rec = self._load(paths[0])
        if rec is None:
            return self._stand_in(stage, int(paths[0].name[:4]), paths[0])
        return rec

    def _stand_in(self, stage: str, attempt: int, path: Path) -> RunRecord:
        """A record for an attempt whose file is unreadable, from the wrapper's files.

        It is running when its wrapper's started file names a live process,
        finished with the wrapper's exit code when the result exists, and
        otherwise failed with the reason. Drivers never act on it except to
        follow and stop it: it is not finalized, retried or saved over.
        """
        rec = RunRecord(stage=stage, attempt=attempt, run_id=f"unreadable-{attempt:04d}",
                        argv=[], cwd="", log="",
                        extra={"unreadable": f"{path}: the run record cannot be read"})
        self.merge_wrapper_files(rec)
        rec.launched_at = rec.started_at or 0.0
        if rec.pid is None and not rec.finished:
            rec.error = (f"unreadable run record {path}; nothing shows the attempt ran. "
                         "Move the file away and use restart.")
        return rec

    def next_attempt(self, stage: str) -> int:
        d = self.stage_dir(stage)
        nums = [int(p.name[:4]) for p in d.glob("[0-9][0-9][0-9][0-9]*.json")] if d.is_dir() else []
        return max(nums, default=0) + 1

    def new_record(self, stage: str, argv: list[str], cwd: str, log: str, **kw: Any) -> RunRecord:
        rec = RunRecord(stage=stage, attempt=self.next_attempt(stage), run_id=uuid.uuid4().hex[:12],
                        argv=argv, cwd=cwd, log=log, **kw)
        # The key of the wrapper's last-resort marker line (see _result_from_log):
        # in the owner-only record, never in an argv, an environment or the log.
        rec.extra.setdefault(RESULT_KEY, secrets.token_hex(16))
        return rec

    def save(self, rec: RunRecord, *, durable: bool = True) -> None:
        """Replace ``rec``'s file atomically; fsynced unless ``durable`` is False (a
        fact that a power loss makes moot, such as the pid of a process it ends)."""
        atomic_write_json(self.prefix(rec.stage, rec.attempt) + ".json", rec.to_json(), fsync=durable)

    def merge_wrapper_files(self, rec: RunRecord) -> bool:
        """Fold the wrapper's started/result files into ``rec``; True if anything changed."""
        changed = False
        prefix = self.prefix(rec.stage, rec.attempt)
        if rec.pid is None or (rec.wrapper_pid is None and rec.ended_at is None):
            started = self._read_optional(prefix + ".started.json")
            if started and not all(_has_type(started.get(k), t) for k, t in (
                    ("pid", "int?"), ("pgid", "int?"), ("wrapper_pid", "int?"),
                    ("create_time", "num?"), ("wrapper_create_time", "num?"), ("started_at", "num?"))):
                self._problem(f"{prefix}.started.json: fields of the wrong type; ignored")
                started = None
            if started and rec.pid is None:
                rec.pid = started.get("pid")
                rec.pgid = started.get("pgid")
                rec.create_time = started.get("create_time")
                rec.started_at = started.get("started_at")
                changed = True
            if started and rec.wrapper_pid is None and started.get("wrapper_create_time") is not None:
                # A driver died before saving the wrapper's pid: the wrapper said it itself.
                rec.wrapper_pid = started.get("wrapper_pid")
                rec.wrapper_create_time = started.get("wrapper_create_time")
                changed = True
        if rec.ended_at is None:
            result = self._find_result(rec, prefix)
            if result and not _valid_result(result):
                self._problem(f"{prefix}.result.json: the wrapper's result has fields of the wrong "
                              f"type ({json.dumps(result)[:120]}); ignored")
                result = None
            if result:
                rec.exit_code = result.get("exit_code")
                rec.signal = result.get("signal")
                # Never before the attempt began (a wall clock stepped back): no negative elapsed.
                rec.ended_at = max(float(result["ended_at"]), rec.started_at or rec.launched_at or 0.0)
                if result.get("error") and not rec.error:
                    rec.error = result["error"]
                if result.get("killed_after_grace"):
                    rec.extra["wrapper_killed_after_grace"] = True
                if result.get("write_errors"):
                    rec.extra["result_write_errors"] = list(result["write_errors"])
                placed = result.get("slurm_placement")
                job = rec.extra.get("slurm")
                if isinstance(placed, dict) and isinstance(job, dict):
                    # What the job itself saw, where no poll caught it running.
                    if not job.get("nodes") and placed.get("node"):
                        job["nodes"] = placed["node"]
                    if not job.get("gpu_indices") and placed.get("gpu_indices"):
                        job["gpu_indices"] = list(placed["gpu_indices"])
                changed = True
        return changed

    def _find_result(self, rec: RunRecord, prefix: str) -> dict[str, Any] | None:
        """The wrapper's result, wherever the wrapper managed to put it."""
        result = self._read_optional(prefix + ".result.json")
        if result:
            return result
        # Reserved in advance and written in place when a rename was refused.
        reserved = self._read_optional(prefix + ".result.json.reserve", blank_ok=True)
        if reserved:
            return reserved
        fallback = rec.extra.get("result_fallback")
        if fallback:
            result = self._read_optional(str(fallback))
            if result:
                return result
        if rec.wrapper_pid and rec.log and not is_alive(rec.wrapper_pid, rec.wrapper_create_time):
            found = _result_from_log(rec.log, rec.log_offset, rec.extra.get(RESULT_KEY))
            if isinstance(found, str):
                self._problem(found)
                return None
            return found
        return None

    def _read_optional(self, path: str, blank_ok: bool = False) -> dict[str, Any] | None:
        try:
            raw = read_trusted(path)
            if blank_ok and not raw.strip():
                return None  # a reserve not written yet
            data = json.loads(raw.decode("utf-8"))
        except FileNotFoundError:
            return None
        except PermissionError as e:  # UntrustedFile says who owns it and why it is refused
            self._problem(str(e) if "refused" in str(e) else f"{path}: unreadable ({e}); ignored")
            return None
        except (OSError, ValueError, UnicodeDecodeError) as e:
            self._problem(f"{path}: unreadable ({e}); ignored")
            return None
        return data if isinstance(data, dict) else None

    def _problem(self, text: str) -> None:
        if text not in self.problems:
            self.problems.append(text)


def gpu_report_path(prefix: str) -> str:
    """The node report's path for the attempt whose files start with ``prefix``."""
    return prefix + ".gpu.json"


def result_mac(key: str, payload: bytes) -> str:
    """The MAC of a marker line's JSON (the wrapper computes the same, see stagewrap.py)."""
    return hmac.new(key.encode(), payload, hashlib.sha256).hexdigest()


def _valid_result(result: dict[str, Any]) -> bool:
    ended = result.get("ended_at")
    return (_has_type(ended, "num") and _has_type(result.get("exit_code"), "int?")
            and _has_type(result.get("signal"), "int?"))


def _result_from_log(log: str, offset: int, key: str | None) -> dict[str, Any] | str | None:
    """The wrapper's result marker line from the end of the attempt's log, if any.

    A log is the stage's text, which anyone who can make the stage print a
    line controls: the marker is believed only with the attempt's MAC. Returns
    the result, None when there is no marker, or the reason a marker was refused.
    """
    try:
        fd = open_regular(log)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            start = max(offset, size - 65536)
            f.seek(start)
            tail = f.read()
    except OSError:
        return None
    end = len(tail)
    refused = None
    while (at := tail.rfind(RESULT_MARKER, 0, end)) >= 0:
        end = at
        line = tail[at + len(RESULT_MARKER):].split(b"\n", 1)[0]
        mac, _, payload = line.partition(b" ")
        if not key or not hmac.compare_digest(mac.decode("ascii", "replace"),
                                              result_mac(str(key), payload)):
            refused = (f"{log}: a line that looks like the wrapper's result marker has no valid "
                       "MAC for this attempt; refused (a log line cannot report an exit code)")
            continue  # an imitation printed after the real marker must not hide it
        try:
            data = json.loads(payload.decode("utf-8"))
        except ValueError:
            continue
        if isinstance(data, dict) and "ended_at" in data:
            return data
    return refused


# The record's extra key that holds the attempt's marker key.
RESULT_KEY = "result_key"
