"""What a ``\\r``-redrawn log line shows: its latest progress frame, and any message on it.

A tqdm bar writes hundreds of ``\\r``-separated frames on one physical line.
A terminal leaves only the last one, which is right for the frames but hides
a message that shares the line: ``...| 430/2500 [00:10<00:50, 43it/s]received
SIGTERM; stopping at the next safe point`` (printed while the bar was open),
or a frame overwritten by a message after a ``\\r``. ``logs`` and the TUI's
log pane show such a line as rows: the latest progress frame, then the
message as a row of its own. The log file itself keeps every frame.

Which segment is a progress frame is the core's own parser's answer
(:func:`eagle3tui.logs.progress.parse_progress`), asked only about the last
few segments of a line, so a line of 10,000 frames costs as much as one of 16.
"""

from __future__ import annotations

from eagle3tui.logs.follower import split_segments
from eagle3tui.logs.progress import parse_progress, split_glued

# Segments of one physical line looked at (the newest ones): older frames
# were overwritten many redraws ago.
TAIL_SEGMENTS = 16
# Messages kept from one line; more are the line's own redraws, not news.
MAX_MESSAGES = 3


def _is_frame(piece: str) -> bool:
    return parse_progress(piece.strip()) is not None


def shown_rows(line: str) -> list[str]:
    """The rows a physical log ``line`` (no newline) is shown as.

    A line without ``\\r`` is itself. A redrawn line shows its latest
    progress frame, and after it (or before it, when the bar went on
    drawing) up to three messages that shared the line. A line redrawn with
    no progress frame at all (a spinner, a counter) shows its last segment,
    as a terminal would.
    """
    if "\r" not in line:
        return [line]
    segs = split_segments(line)
    if not segs:
        return [""]
    pieces = split_glued(segs[-TAIL_SEGMENTS:])
    if len(pieces) == 1:
        return pieces
    rows: list[str] = []
    frame_at: int | None = None  # index in rows of the latest frame
    for piece in pieces:
        if _is_frame(piece):
            if frame_at is not None:
                del rows[frame_at]
            frame_at = len(rows)
        rows.append(piece)
    if frame_at is None:
        return [pieces[-1]]
    messages = [i for i in range(len(rows)) if i != frame_at]
    keep = set(messages[-MAX_MESSAGES:]) | {frame_at}
    return [row for i, row in enumerate(rows) if i in keep]
