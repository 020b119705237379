"""Which logger wrote a line: the source a log record's header names, and its next record.

Python's logging headers name where a record came from: DeepSpeed's ``[2025-08-28
18:19:07,039] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 1635397`` names the
file and the function, the default format's ``WARNING:torch.distributed.elastic.multiprocessing.api:``
the logger. Two records with one source are one speaker's, whatever other processes
wrote between them (a launcher's "Killing subprocess" and, after its ranks' tracebacks,
its "Main process received SIGINT, exiting").
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# "[launch.py:315:sigkill_handler]": file and function (the line number differs per call).
_FILE_FUNC = re.compile(r"\[([\w.-]{1,80}\.py):\d{1,6}:([\w<>]{1,80})\]")
# "WARNING:torch.distributed.elastic.multiprocessing.api:": logging's default format, at the start.
_LEVEL_LOGGER = re.compile(r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):([\w.]{1,120}):")


def source_of(line: str) -> str | None:
    """The logger source a record's header names (``launch.py:sigkill_handler``), or None."""
    m = _FILE_FUNC.search(line[:160])
    if m:
        return f"{m.group(1)}:{m.group(2)}"
    m = _LEVEL_LOGGER.match(line)
    return m.group(1) if m else None


def next_from_same_source(lines: Mapping[int, str], first: int, after: int) -> tuple[int, str] | None:
    """The source of line ``first``'s next record after line ``after``: (number, text), or None.

    The run of records from that source right after ``first`` (a launcher's "Killing
    subprocess" lines, one per rank) is skipped: the record wanted comes after something
    else was written.
    """
    src = source_of(lines.get(first, ""))
    if src is None:
        return None
    in_run = True
    for n in sorted(k for k in lines if k > after):
        same = source_of(lines[n]) == src
        if same and not in_run:
            return n, lines[n]
        in_run = in_run and same
    return None
