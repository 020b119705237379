"""prepare: normalize chat datasets into ``{"id", "conversations": [{"role", "content"}]}`` JSONL.

Reads local JSONL / JSON / Parquet files (or a Hugging Face dataset already in
the local cache) in any of these shapes, detected per record:

- ShareGPT: ``{"conversations": [{"from": "human", "value": ...}, ...]}``
- OpenAI messages: ``{"messages": [{"role": "user", "content": ...}, ...]}``
  (also ultrachat_200k, which uses ``messages``)
- ultrachat (original): ``{"data": ["user turn", "assistant turn", ...]}``
- plain prompts: a bare string, or ``{"prompt" | "instruction" | "question" | "text": ...}``

Ids are stable: the record's own ``id`` (or ``prompt_id``/``conversation_id``)
when present, else the first 16 hex digits of the SHA-1 of the normalized
conversation. Dropped records are counted by reason and reported with their
file and line. With no input, the prompt set shipped in ``pipeline/data`` is used.

Run ``python -m pipeline.prepare --help``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.common import (
    StageError,
    atomic_write_text,
    fail,
    iter_jsonl,
    log,
    make_parser,
    progress,
)

__all__ = [
    "SHIPPED_PROMPTS",
    "Dropped",
    "PrepareReport",
    "conversation_id",
    "detect_format",
    "find_cached_hf_dataset",
    "iter_records",
    "main",
    "normalize_record",
    "prepare",
]

SHIPPED_PROMPTS = Path(__file__).resolve().parent / "data" / "prompts.jsonl"

ROLE_MAP = {
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "chatgpt": "assistant",
    "bard": "assistant",
    "bing": "assistant",
    "model": "assistant",
    "system": "system",
}
PROMPT_KEYS = ("prompt", "instruction", "question", "query", "text", "input")
ID_KEYS = ("id", "prompt_id", "conversation_id", "uuid")
FORMATS = ("auto", "sharegpt", "messages", "ultrachat", "prompts")


class Dropped(Exception):
    """A record that cannot be used; ``reason`` is a short, countable phrase."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


@dataclass
class PrepareReport:
    """What ``prepare`` did: counts by source format and drops by reason."""

    written: int = 0
    read: int = 0
    formats: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)  # "file:line: reason (detail)"
    held_out: int = 0

    def drop(self, where: str, exc: Dropped) -> None:
        """Count a dropped record and keep the first few locations for the report."""
        self.dropped[exc.reason] += 1
        if len(self.examples) < 10:
            self.examples.append(f"{where}: {exc.reason}" + (f" ({exc.detail})" if exc.detail else ""))

    def summary(self) -> str:
        """One line the supervisor can show."""
        drops = sum(self.dropped.values())
        why = ", ".join(f"{n} {r}" for r, n in self.dropped.most_common())
        fmts = ", ".join(f"{n} {f}" for f, n in self.formats.most_common())
        return (
            f"prepare: {self.written} samples written ({fmts or 'none'}), "
            + (f"{self.held_out} held out, " if self.held_out else "")
            + f"{drops} dropped" + (f" ({why})" if why else "")
        )


def detect_format(record: Any) -> str | None:
    """Return the format name of one record, or None when no known shape matches."""
    if isinstance(record, str):
        return "prompts"
    if not isinstance(record, dict):
        return None
    conv = record.get("conversations")
    if isinstance(conv, list) and (not conv or isinstance(conv[0], dict)):
        if conv and isinstance(conv[0], dict) and "role" in conv[0] and "from" not in conv[0]:
            return "messages"  # our own normalized output re-read
        return "sharegpt"
    if isinstance(record.get("messages"), list):
        return "messages"
    data = record.get("data")
    if isinstance(data, list) and all(isinstance(x, str) for x in data):
        return "ultrachat"
    if any(isinstance(record.get(k), str) for k in PROMPT_KEYS):
        return "prompts"
    return None


def _text(content: Any) -> str:
    """Content as text: strings pass; OpenAI content-part lists keep only text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise Dropped("non-text content", f"content part of type {kind!r}")
        return "".join(parts)
    if content is None:
        return ""
    raise Dropped("bad content", f"content is {type(content).__name__}")


def _turns(record: Any, fmt: str) -> list[dict[str, str]]:
    if fmt == "prompts":
        if isinstance(record, str):
            return [{"role": "user", "content": record}]
        if isinstance(record.get("instruction"), str) and isinstance(record.get("input"), str) and record["input"].strip():
            # Alpaca style: the input is context for the instruction.
            return [{"role": "user", "content": record["instruction"].rstrip() + "\n\n" + record["input"]}]
        for key in PROMPT_KEYS:
            if isinstance(record.get(key), str):
                turns = []
                if isinstance(record.get("system"), str) and record["system"].strip():
                    turns.append({"role": "system", "content": record["system"]})
                turns.append({"role": "user", "content": record[key]})
                return turns
        raise Dropped("unrecognized record", "no prompt field")
    if fmt == "ultrachat":
        roles = ("user", "assistant")
        return [{"role": roles[i % 2], "content": t} for i, t in enumerate(record["data"])]
    if fmt == "sharegpt":
        raw = record["conversations"]
        out = []
        for turn in raw:
            if not isinstance(turn, dict):
                raise Dropped("bad turn", f"turn is {type(turn).__name__}")
            who = turn.get("from", turn.get("role"))
            role = ROLE_MAP.get(str(who).lower()) if who is not None else None
            if role is None:
                raise Dropped("unknown role", f"from={who!r}")
            out.append({"role": role, "content": _text(turn.get("value", turn.get("content")))})
        if isinstance(record.get("system"), str) and record["system"].strip() and (not out or out[0]["role"] != "system"):
            out.insert(0, {"role": "system", "content": record["system"]})
        return out
    if fmt == "messages":
        raw = record.get("messages", record.get("conversations"))
        out = []
        for turn in raw:
            if not isinstance(turn, dict):
                raise Dropped("bad turn", f"turn is {type(turn).__name__}")
            who = turn.get("role")
            role = ROLE_MAP.get(str(who).lower()) if who is not None else None
            if role is None:
                # tool/function turns have no place in draft training data.
                raise Dropped("unknown role", f"role={who!r}")
            out.append({"role": role, "content": _text(turn.get("content"))})
        return out
    raise Dropped("unrecognized record", "no known fields (conversations, messages, data, prompt)")


def _validate(turns: list[dict[str, str]]) -> list[dict[str, str]]:
    if not turns:
        raise Dropped("empty conversation")
    for i, t in enumerate(turns):
        if not t["content"].strip():
            raise Dropped("empty turn", f"turn {i} ({t['role']})")
        if t["role"] == "system" and i != 0:
            raise Dropped("system turn not first", f"turn {i}")
    if not any(t["role"] == "user" for t in turns):
        raise Dropped("no user turn")
    return turns


def conversation_id(turns: list[dict[str, str]]) -> str:
    """Stable id of a normalized conversation: 16 hex digits of SHA-1 over canonical JSON."""
    blob = json.dumps(turns, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(blob.encode("utf-8")).hexdigest()[:16]


def normalize_record(record: Any, fmt: str = "auto") -> tuple[str, list[dict[str, str]], str]:
    """Normalize one record to ``(id, conversations, detected_format)``; raise :class:`Dropped`."""
    detected = detect_format(record) if fmt == "auto" else fmt
    if detected is None:
        raise Dropped("unrecognized record", "no known fields (conversations, messages, data, prompt)")
    # An explicit --format that does not fit this record (e.g. a string under sharegpt);
    # normalized {"conversations": [{role, content}]} input counts as messages.
    if (
        fmt != "auto"
        and detect_format(record) not in (fmt, None)
        and not (fmt == "messages" and isinstance(record, dict) and isinstance(record.get("conversations"), list))
    ):
            raise Dropped("format mismatch", f"record looks like {detect_format(record)}, not {fmt}")
    try:
        turns = _validate(_turns(record, detected))
    except (KeyError, TypeError, AttributeError) as exc:
        raise Dropped("malformed record", f"{type(exc).__name__}: {exc}") from exc
    sid = None
    if isinstance(record, dict):
        for key in ID_KEYS:
            v = record.get(key)
            if isinstance(v, (str, int)) and not isinstance(v, bool) and str(v).strip():
                sid = str(v)
                break
    return sid or conversation_id(turns), turns, detected


def iter_records(path: Path) -> Iterator[tuple[str, Any]]:
    """Yield ``(where, record)`` from a JSONL, JSON or Parquet file; ``where`` is ``file:line`` or ``file[#i]``.

    Raises :class:`StageError` naming the file (and line) for unreadable input.
    """
    suffix = "".join(path.suffixes[-2:]).lower() if path.suffix.lower() == ".gz" else path.suffix.lower()
    if not path.is_file():
        raise StageError(f"{path}: input file not found\n  fix: check the --input path")
    if suffix in (".parquet", ".pq"):
        try:
            import pyarrow.parquet as pq  # type: ignore[import-not-found, import-untyped, unused-ignore]
        except ImportError as exc:
            raise StageError(
                f"{path}: reading Parquet needs pyarrow, which is not installed\n"
                "  fix: pip install pyarrow (or convert the file to JSONL)"
            ) from exc
        try:
            table = pq.read_table(path)
        except Exception as exc:  # pyarrow raises ArrowInvalid and OSError subclasses
            raise StageError(f"{path}: not a readable Parquet file: {exc}") from exc
        for i, row in enumerate(table.to_pylist()):
            yield f"{path}[#{i}]", row
        return
    if suffix == ".json":
        try:
            obj = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise StageError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from exc
        except UnicodeDecodeError as exc:
            raise StageError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
        if isinstance(obj, dict):
            for key in ("data", "rows", "train", "examples", "conversations", "prompts"):
                if isinstance(obj.get(key), list):
                    obj = obj[key]
                    break
            else:
                obj = [obj]
        if not isinstance(obj, list):
            raise StageError(f"{path}: expected a JSON list of records, got {type(obj).__name__}")
        for i, rec in enumerate(obj):
            yield f"{path}[#{i}]", rec
        return
    # Everything else is read as JSONL (.jsonl, .ndjson, .txt of JSON lines).
    try:
        fix = "repair or delete that line, or pass --skip-invalid to drop bad lines"
        for n, rec in iter_jsonl(path, fix=fix):
            yield f"{path}:{n}", rec
    except UnicodeDecodeError as exc:
        raise StageError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def _iter_records_lenient(path: Path, report: PrepareReport) -> Iterator[tuple[str, Any]]:
    """JSONL reader that drops invalid lines (counted) instead of failing."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield f"{path}:{n}", json.loads(line)
            except json.JSONDecodeError as exc:
                report.drop(f"{path}:{n}", Dropped("invalid JSON", exc.msg))


def find_cached_hf_dataset(name: str, split: str | None = None, cache_dir: str | None = None) -> list[Path]:
    """Data files of a Hugging Face dataset already in the local hub cache (no network).

    Looks under ``$HF_HUB_CACHE`` (or ``$HF_HOME/hub``, ``~/.cache/huggingface/hub``)
    for ``datasets--owner--name/snapshots/*`` and returns its Parquet/JSONL/JSON
    files, restricted to ``split`` when file names mention it.
    """
    if cache_dir is None:
        hub = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
        if not hub:
            home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
            hub = os.path.join(home, "hub")
        cache_dir = hub
    repo_dir = Path(cache_dir) / ("datasets--" + name.replace("/", "--"))
    snaps = repo_dir / "snapshots"
    if not snaps.is_dir():
        raise StageError(
            f"dataset {name!r} is not in the local Hugging Face cache ({repo_dir} not found)\n"
            "  fix: download it on a machine with network access (huggingface-cli download --repo-type dataset "
            f"{name}) and copy the cache, or pass local files with --input"
        )
    # Newest snapshot first: the one most recently downloaded.
    snapshots = sorted(snaps.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)
    for snap in snapshots:
        files = sorted(
            p for p in snap.rglob("*") if p.suffix.lower() in (".parquet", ".jsonl", ".json") and p.is_file()
        )
        files = [p for p in files if not p.name.startswith(("dataset_info", "README", "."))]
        if split:
            chosen = [p for p in files if split in p.name or split in p.parent.name]
            files = chosen
        if files:
            return files
    raise StageError(
        f"dataset {name!r} is cached at {repo_dir} but has no data files"
        + (f" for split {split!r}" if split else "")
        + "\n  fix: check --split, or pass local files with --input"
    )


def prepare(
    inputs: list[Path],
    output: Path,
    fmt: str = "auto",
    limit: int | None = None,
    skip_invalid: bool = False,
    show_progress: bool = True,
    holdout: int = 0,
    holdout_output: Path | None = None,
) -> PrepareReport:
    """Normalize ``inputs`` into ``output`` JSONL (written atomically); return the report.

    Duplicate ids keep the first occurrence. Raises :class:`StageError` for
    unreadable files (with file and line). With ``holdout`` N, N records go to
    ``holdout_output`` instead of ``output``: those whose ids hash lowest
    (sha256), so the choice depends only on the ids, not on the input order, and
    the two files are disjoint by construction. The held-out file is written
    first, so an ``output`` on disk always has its held-out partner.
    """
    report = PrepareReport()
    seen: set[str] = set()
    lines: list[str] = []
    bar = progress(None, desc="prepare", unit="rec", disable=not show_progress)
    try:
        for path in inputs:
            source = _iter_records_lenient(path, report) if skip_invalid and path.suffix.lower() not in (
                ".json", ".parquet", ".pq") else iter_records(path)
            for where, rec in source:
                report.read += 1
                bar.update(1)
                try:
                    sid, turns, detected = normalize_record(rec, fmt)
                    if sid in seen:
                        raise Dropped("duplicate id", sid)
                except Dropped as exc:
                    report.drop(where, exc)
                    continue
                seen.add(sid)
                report.formats[detected] += 1
                lines.append(json.dumps({"id": sid, "conversations": turns}, ensure_ascii=False))
                report.written += 1
                if limit is not None and report.written >= limit:
                    break
            if limit is not None and report.written >= limit:
                break
    finally:
        bar.close()
    if holdout:
        if holdout_output is None:
            raise StageError("--holdout needs --holdout-output FILE\n  fix: name the held-out prompts file")
        if holdout >= len(lines):
            raise StageError(f"--holdout {holdout}: only {len(lines)} samples; nothing would be left to train on\n"
                             "  fix: hold out fewer prompts")
        ids = [json.loads(line)["id"] for line in lines]
        chosen = set(sorted(ids, key=lambda i: hashlib.sha256(i.encode()).hexdigest())[:holdout])
        held = [line for line, i in zip(lines, ids) if i in chosen]
        lines = [line for line, i in zip(lines, ids) if i not in chosen]
        atomic_write_text(holdout_output, "".join(line + "\n" for line in held))
        report.held_out = len(held)
        report.written -= len(held)
    atomic_write_text(output, "".join(line + "\n" for line in lines))
    return report


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: ``python -m pipeline.prepare``."""
    p = make_parser(
        "python -m pipeline.prepare",
        "Normalize chat/prompt datasets (ShareGPT, OpenAI messages, ultrachat, plain prompts; "
        "JSONL/JSON/Parquet or a locally cached HF dataset) into {id, conversations} JSONL.",
    )
    p.add_argument("--input", "-i", action="append", type=Path, default=[],
                   help="input file (repeatable); default: the prompt set shipped with the pipeline")
    p.add_argument("--hf-dataset", help="Hugging Face dataset name, read from the local cache only")
    p.add_argument("--split", default=None, help="split to read from --hf-dataset (matched against file names)")
    p.add_argument("--output", "-o", type=Path, required=True, help="normalized JSONL to write")
    p.add_argument("--format", choices=FORMATS, default="auto", help="record format; auto detects per record")
    p.add_argument("--limit", type=int, default=None, help="stop after this many samples")
    p.add_argument("--skip-invalid", action="store_true", help="drop invalid JSONL lines instead of failing")
    p.add_argument("--report", type=Path, default=None, help="also write the drop report as JSON here")
    p.add_argument("--holdout", type=int, default=0, metavar="N",
                   help="set N prompts aside (chosen by id hash) for evaluation; they never reach --output")
    p.add_argument("--holdout-output", type=Path, default=None, help="JSONL file for the held-out prompts")
    args = p.parse_args(argv)
    if args.holdout < 0 or (args.holdout and args.holdout_output is None):
        p.error("--holdout must be >= 0 and needs --holdout-output")
    if args.limit is not None and args.limit <= 0:
        p.error("--limit must be positive")
    inputs: list[Path] = list(args.input)
    try:
        if args.hf_dataset:
            inputs += find_cached_hf_dataset(args.hf_dataset, args.split)
        if not inputs:
            inputs = [SHIPPED_PROMPTS]
        log(f"prepare: reading {len(inputs)} file(s): {', '.join(str(i) for i in inputs[:3])}"
            + (" ..." if len(inputs) > 3 else ""))
        report = prepare(inputs, args.output, args.format, args.limit, args.skip_invalid,
                         holdout=args.holdout, holdout_output=args.holdout_output)
    except StageError as exc:
        fail(str(exc))
    for ex in report.examples:
        log(f"dropped {ex}")
    if args.report:
        from pipeline.common import atomic_write_json

        atomic_write_json(args.report, {
            "read": report.read, "written": report.written, "held_out": report.held_out,
            "holdout_output": str(args.holdout_output) if args.holdout else None, "formats": dict(report.formats),
            "dropped": dict(report.dropped), "examples": report.examples,
        })
    print(report.summary() + f" -> {args.output}", flush=True)
    if report.written == 0:
        fail(f"no usable samples in {', '.join(map(str, inputs))}; see the drop reasons above")
    return 0


if __name__ == "__main__":
    sys.exit(main())
