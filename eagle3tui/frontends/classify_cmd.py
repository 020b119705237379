"""``eagle3tui classify [--estimate DURATION] [--rules FILE] [--json] [--all] PATH|-``.

Classifies a finished log offline with the same monitor the supervisor uses.
Exit status: 0, or 1 if any fatal event was found (2 for bad arguments).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sys
import tempfile
from collections import defaultdict
from typing import TextIO

from eagle3tui.durations import format_duration
from eagle3tui.errors import ConfigError
from eagle3tui.logs.events import LogEvent
from eagle3tui.logs.monitor import StageLogMonitor, describe_progress
from eagle3tui.logs.offline import STAGE_KINDS, classify_log, iter_log_events
from eagle3tui.logs.rules import build_ruleset, load_rules_file

from eagle3tui.durations import parse_duration


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add classify's arguments to ``parser`` (used by eagle3tui's CLI)."""
    parser.add_argument("path", metavar="PATH|-", help="log file to classify, or - for standard input")
    parser.add_argument(
        "--estimate",
        metavar="DURATION",
        help='expected duration of the progress bar/stage ("22m", "1h30m"), for ETA drift',
    )
    parser.add_argument("--rules", metavar="FILE", help="TOML file with extra [[rule]] tables")
    parser.add_argument("--json", action="store_true", help="one JSON object per event, one per line")
    parser.add_argument("--all", action="store_true", help="include info events")
    parser.add_argument("--stage", help="stage name, for rules limited to some stages")
    parser.add_argument(
        "--kind",
        choices=STAGE_KINDS,
        default="task",
        help="the stage's kind: in a service, a request that fails while the server keeps serving is a warning",
    )


_MAX_FATAL_PER_RULE = 5
_LINES_PER_RULE = 5  # line numbers the summary shows per warning (benign, info) rule


def _fmt(seconds: float | None) -> str:
    return format_duration(seconds, unknown="?")


def _one_line(text: str, limit: int = 160) -> str:
    # Log text is untrusted: show control characters escaped, never raw.
    t = text.replace("\n", " | ")
    t = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in t)
    return t if len(t) <= limit else t[: limit - 1] + "…"


def _summary(events: list[LogEvent], mon: StageLogMonitor, out: TextIO, show_all: bool) -> None:
    counts = mon.counts
    kinds = ("fatal", "warning", "benign", "info", "progress")
    out.write(
        f"{mon.path}: {mon.line_no} lines; "
        + ", ".join(f"{counts.get(k, 0)} {k}" for k in kinds)
        + "\n"
    )
    fatal = [e for e in events if e.kind == "fatal"]
    if fatal:
        out.write("\nFATAL\n")
        shown: dict[str, int] = defaultdict(int)
        hidden: dict[str, int] = defaultdict(int)
        for e in fatal:
            # A log can repeat one fatal error per worker or per retry: show
            # the first few of each rule, count the rest.
            if shown[e.rule] >= _MAX_FATAL_PER_RULE:
                hidden[e.rule] += 1
                continue
            shown[e.rule] += 1
            where = f"line {e.line}" if e.end_line == e.line else f"lines {e.line}-{e.end_line}"
            who = f" [{e.worker}]" if e.worker else ""
            out.write(f"  {where}{who} ({e.rule}): {_one_line(e.text)}\n")
            out.write(f"    {e.explanation}\n")
            if e.action:
                out.write(f"    fix: {e.action}\n")
        out.writelines(f"  … and {n} more {rule} event(s) (--json lists all)\n" for rule, n in hidden.items())
    for kind in ("warning", "benign") + (("info",) if show_all else ()):
        group: dict[str, list[LogEvent]] = defaultdict(list)
        for e in events:
            if e.kind == kind:
                group[e.rule].append(e)
        if not group:
            continue
        out.write(f"\n{kind.upper()}\n")
        for rule, evs in group.items():
            first = evs[0]
            # Events catch-up counted without listing them (classify_log's list_per_rule)
            # come after the listed ones of their rule.
            n = len(evs) + mon.unlisted.get((kind, rule), 0)
            lines = ", ".join(str(e.line) for e in evs[:_LINES_PER_RULE]) + (", …" if n > _LINES_PER_RULE else "")
            out.write(f"  {rule} ×{n} (line {lines}): {_one_line(first.text)}\n")
            out.write(f"    {first.explanation}\n")
    p = mon.progress
    eta = mon.eta
    if p is not None:
        # A line of figures with no count (a final "loss 1.23" summary) is not the bar's progress.
        counted = p.n is not None or p.percent is not None
        out.write(f"\n{'LAST PROGRESS' if counted else 'LAST FIGURES'} (line {mon.progress_line}): "
                  f"{describe_progress(p)}")
        if p.rate:
            out.write(f" at {p.rate:.3g} {p.unit}/s" if p.rate >= 1 else f" at {1 / p.rate:.3g} s/{p.unit}")
        if eta is not None and eta.projected_s is not None:
            out.write(f"; projected {_fmt(eta.projected_s)}, remaining {_fmt(eta.remaining_s)}")
            if eta.drift is not None:
                out.write(f", estimate {_fmt(eta.estimate_s)}, drift {eta.drift:+.0%}")
        out.write("\n")
    if eta is not None and eta.done and eta.estimate_s:
        # A finished bar projects nothing; what it took is the drift that counts. The same
        # whether its frames were \r-redrawn (only the last one read) or one per line.
        took = eta.elapsed_s / eta.estimate_s - 1.0
        out.write(f"FINISHED BAR: took {_fmt(eta.elapsed_s)} against an estimate of "
                  f"{_fmt(eta.estimate_s)} ({took:+.0%})\n")


def run(args: argparse.Namespace, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run classify with parsed ``args``; returns the exit status."""
    # An object per event and no cycles: the cyclic collector would only
    # rescan them while the summary is written (a tenth of the time on 2 M lines).
    paused = gc.isenabled()
    gc.disable()
    try:
        return _run(args, stdout, stderr)
    finally:
        if paused:
            gc.enable()


def _run(args: argparse.Namespace, stdout: TextIO | None, stderr: TextIO | None) -> int:
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    estimate = None
    if args.estimate:
        try:
            estimate = parse_duration(args.estimate)
        except ValueError as e:
            err.write(f"eagle3tui classify: --estimate: {e}\n")
            return 2
    try:
        user = load_rules_file(args.rules) if args.rules else []
        rules = build_ruleset(user, args.rules or "pipeline.toml")
    except ConfigError as e:
        err.write(f"eagle3tui classify: {e}\n")
        return 2
    tmp = None
    path = args.path
    if path == "-":
        # Standard input may be a pipe: spool it so the monitor can follow a file.
        fd, tmp = tempfile.mkstemp(prefix="eagle3tui-classify-", suffix=".log")
        with os.fdopen(fd, "wb") as f:
            shutil.copyfileobj(sys.stdin.buffer, f, 1 << 20)
        path = tmp
    elif not os.path.isfile(path):
        err.write(f"eagle3tui classify: {path}: no such file; give a log file or - for standard input\n")
        return 2
    try:
        if args.json:
            # One event per line as the log is read: memory does not grow with the log.
            mons: list[StageLogMonitor] = []
            for ev in iter_log_events(
                path,
                mons,
                rules=rules,
                stage=getattr(args, "stage", None),
                stage_kind=getattr(args, "kind", "task"),
                estimate_s=estimate,
                progress_events=True,
                include_info=bool(args.all),
            ):
                out.write(json.dumps(ev.to_json(), ensure_ascii=False) + "\n")
            mon = mons[0]
        else:
            events, mon = classify_log(
                path,
                rules=rules,
                stage=getattr(args, "stage", None),
                stage_kind=getattr(args, "kind", "task"),
                estimate_s=estimate,
                include_info=bool(args.all),
                # The summary shows the first few events of a rule and counts the others:
                # those need not be made.
                list_per_rule=_LINES_PER_RULE,
            )
            if tmp is not None:
                mon.path = "<stdin>"
            _summary(events, mon, out, bool(args.all))
    finally:
        if tmp is not None:
            os.unlink(tmp)
    return 1 if mon.counts.get("fatal", 0) else 0


def main(argv: list[str] | None = None) -> int:
    """``python -m eagle3tui.frontends.classify_cmd``."""
    parser = argparse.ArgumentParser(
        prog="eagle3tui classify", description="Classify a log offline: errors, their meaning, progress."
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
