"""The shapes a traceback is assembled from: an open traceback's state and the tests on its lines.

:class:`StageLogMonitor` feeds an open traceback line by line; what it keeps of one,
and how an exception line is told from the lines around it, live here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TB_MAX_LINES = 5000  # a "traceback" longer than this is not one
# Raw lines of another stream that may come between two lines of a logged traceback (a
# process's "Process EngineCore:" written to stderr while its logger writes the traceback
# record line by line): more than this in a row and the traceback has ended.
TB_MAX_FOREIGN = 3
# The message of an exception that announces it goes on ("Ninja output:") runs at most
# this many lines (another program's output it quotes); longer, it is the process going on.
TB_MAX_BODY = 400
CHAIN = (
    "During handling of the above exception",
    "The above exception was the direct cause",
    "Traceback (most recent call last)",
)


@dataclass
class OpenTraceback:
    start: int
    worker: str | None
    lines: int = 1
    first_text: str = ""
    ignored: bool = False  # announced by Python's "Exception ignored in"
    warned: bool = False  # the message of a Python warning ("x.py:1: UserWarning: ...: Traceback (...)")
    request: bool = False  # its frames or its opener show request handling
    # Its exception line, read, when it wraps another exception; the traceback
    # ends there unless the next line is another frame (see _tb_feed).
    exc_text: str = ""
    exc_no: int = 0
    exc_at: float = 0.0
    # A run of frames with no "Traceback (most recent call last):" above it (frames.py):
    # a cut paste, the header on another stream, a faulthandler or native dump.
    headless: bool = False
    last_frame: int = 0  # its last frame-shaped line (blank lines after it are not its end)
    level: str | None = None  # the level its first line was logged at, if it has a logger header
    detail: bool = False  # the stack of the record just above it, which was judged already
    # The logger header (level, source) every line of a traceback logged through a logger
    # carries ("ERROR 06-08 05:02:33 [core.py:1199]   File ..."), or None for a raw one; a
    # raw line between two of its lines is another stream's, which does not end it.
    record: tuple[str | None, str] | None = None
    foreign: int = 0  # raw lines of another stream read since its last own line
    # Its exception line's message ends with a colon ("RuntimeError: Ninja build failed. Ninja
    # output:"): the lines after it are that message (exc_no: its last line), see _tb_feed.
    body: int = 0  # lines of that message read so far


# The end of an exception line whose message is another process's traceback.
QUOTED_TRACEBACK = "Traceback (most recent call last):"
# A frame line ('  File "x.py", line 3, in f') or the caret line under a
# frame's code: what only a traceback's body holds.
FRAME_LINE = re.compile(r"[ \t]{1,40}(?:File \"|[\^~]{1,4000}[ \t]{0,40}$)")  # bounded: see tests/test_logs_patterns_bounded.py
# A traceback whose exception line was read and nothing after it for this
# long has ended there (a process that hangs after it writes nothing more).
TB_END_S = 1.0


def looks_like_exception(line: str) -> bool:
    """``KeyError: 'x'``, ``torch.OutOfMemoryError: ...``, ``KeyboardInterrupt``.

    Also Ray's wrapper, which names the exception it wraps:
    ``ray.exceptions.RayTaskError(ActorUnavailableError): ray::f() ...``.
    """
    head = line.split(":", 1)[0].strip()
    if head.endswith(")") and "(" in head:
        head, _, inner = head[:-1].partition("(")
        if not inner.isidentifier():
            return False
    return 0 < len(head) <= 120 and all(part.isidentifier() for part in head.split("."))


def announces_more(line: str) -> bool:
    """``RuntimeError: Ninja build failed. Ninja output:``: an exception whose message says the rest follows.

    Not ``FooError: Traceback (most recent call last):`` (a quoted traceback, read as one)
    nor a message that is only the colon.
    """
    msg = line.split(":", 1)[1].strip() if ":" in line else ""
    return len(msg) > 1 and msg.endswith(":") and not msg.endswith(QUOTED_TRACEBACK)


def wraps_another(line: str) -> bool:
    """``RayTaskError(ActorUnavailableError): ...``: an exception line naming the exception it wraps."""
    return line.split(":", 1)[0].strip().endswith(")")
