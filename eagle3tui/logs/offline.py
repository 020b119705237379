"""Classify a finished log in one call: what ``eagle3tui classify`` runs.

One function, so that the CLI, the corpus scorer and the benchmark all judge
a log through the same path (the same :class:`StageLogMonitor` the supervisor
uses while a stage runs, read to the end and settled with an unknown exit).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from operator import attrgetter

from eagle3tui.logs.events import LogEvent
from eagle3tui.logs.monitor import StageLogMonitor
from eagle3tui.logs.rules import RuleSet

STAGE_KINDS = ("task", "service")


def classify_log(
    path: str | os.PathLike[str],
    *,
    rules: RuleSet | None = None,
    stage: str | None = None,
    stage_kind: str = "task",
    estimate_s: float | None = None,
    progress_events: bool = False,
    include_info: bool = False,
    list_per_rule: int | None = None,
) -> tuple[list[LogEvent], StageLogMonitor]:
    """Every event of the log at ``path``, sorted by line, and the monitor.

    ``stage_kind`` is the stage's ``kind`` (``task`` or ``service``): in a
    service a per-request failure that the server survives is a warning,
    and only what ends the engine is fatal. ``progress_events`` adds one
    progress event per progress line (``classify --json``); ``include_info``
    adds info events. The monitor carries the summary state (``counts``,
    ``progress``, ``eta``, ``line_no``). ``list_per_rule`` (for a summary):
    of the non-fatal events of one kind and rule, at least that many are
    listed, the earliest by line; the others may only be counted, in
    ``monitor.unlisted[(kind, rule)]`` (see :class:`StageLogMonitor`).
    """
    mon = _monitor(path, rules=rules, stage=stage, stage_kind=stage_kind, estimate_s=estimate_s,
                   progress_events=progress_events, include_info=include_info, list_per_rule=list_per_rule)
    # Reading a whole log makes an object per event and per candidate line,
    # and no reference cycles: the cyclic collector would scan them all over
    # and over (a third of the time on a log of 2 M lines).
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        events = mon.poll()
        events += mon.finish(exit_code=None)
        # By line, then end line, ties in their order: two stable sorts on one int
        # each (the last decides first), which is the order of one sort on the pair
        # without a tuple per event (a third of a million on a long log).
        events.sort(key=attrgetter("end_line"))
        events.sort(key=attrgetter("line"))
    finally:
        if paused:
            gc.enable()
    return events, mon


def _monitor(
    path: str | os.PathLike[str],
    *,
    rules: RuleSet | None,
    stage: str | None,
    stage_kind: str,
    estimate_s: float | None,
    progress_events: bool,
    include_info: bool,
    list_per_rule: int | None,
) -> StageLogMonitor:
    if stage_kind not in STAGE_KINDS:
        raise ValueError(f"stage_kind must be one of {', '.join(STAGE_KINDS)}, not {stage_kind!r}")
    mon = StageLogMonitor(
        path,
        rules=rules,
        stage=stage,
        stage_kind=stage_kind,
        estimate_s=estimate_s,
        progress_events=progress_events,
        progress_mode="all" if progress_events else "sample",
        include_info=include_info,
        list_per_rule=list_per_rule,
        went_on_s=0.0,
        recover_s=0.0,
        # The exit status of a log read offline is unknown: a line saying the
        # process is being stopped is what tells that an error ended it.
        exit_known=False,
    )
    return mon


# Bytes one poll of a streamed classification reads: its events are written before the next.
STREAM_CHUNK_BYTES = 1 << 20


def iter_log_events(
    path: str | os.PathLike[str],
    mon_out: list[StageLogMonitor],
    *,
    rules: RuleSet | None = None,
    stage: str | None = None,
    stage_kind: str = "task",
    estimate_s: float | None = None,
    progress_events: bool = False,
    include_info: bool = False,
) -> Iterator[LogEvent]:
    """The events of :func:`classify_log`, in its order, as the log is read (``classify --json``).

    Memory does not grow with the log: a poll reads at most ``STREAM_CHUNK_BYTES``,
    and its events are given out once no event still to come can sort before them
    (a traceback or held error not yet judged starts at or after the earliest line
    still open). ``mon_out`` gets the monitor first, for its summary state.
    """
    mon = _monitor(path, rules=rules, stage=stage, stage_kind=stage_kind, estimate_s=estimate_s,
                   progress_events=progress_events, include_info=include_info, list_per_rule=None)
    mon_out.append(mon)
    buf: list[LogEvent] = []
    while True:
        before = mon.follower.offset
        new = mon.poll(max_bytes=STREAM_CHUNK_BYTES)
        buf += new
        open_lines = [e.line for e in mon.pending] + [e.line for e in mon.held]
        mark = min(open_lines) if open_lines else mon.line_no + 1
        buf.sort(key=attrgetter("end_line"))
        buf.sort(key=attrgetter("line"))
        cut = 0
        while cut < len(buf) and buf[cut].line < mark:
            cut += 1
        yield from buf[:cut]
        del buf[:cut]
        if mon.follower.offset == before:
            break
    buf += mon.finish(exit_code=None)
    buf.sort(key=attrgetter("end_line"))
    buf.sort(key=attrgetter("line"))
    yield from buf
