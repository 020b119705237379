"""Untrusted text made safe to print: no escape sequences, no control characters.

Log lines are data. Before a line reaches a terminal (CLI output, the TUI,
alert lines) its ANSI/VT escape sequences are removed and other control
characters are replaced, so a log can never move the cursor, change colours,
set the window title or hide text. The log reader strips with the same
patterns before classifying.
"""

from __future__ import annotations

import re

# ANSI/VT escape sequences. Linear time: every alternative starts with ESC and
# its repeated classes are disjoint from what follows them ([0-?] then [ -/]
# then one final byte in [@-~]), so a failed attempt gives back at most the
# parameter run of that one sequence, and runs of different ESCs don't overlap.
# OSC strings stop at BEL, ESC or a newline so one bad sequence can't swallow
# the rest of the log. A lone ESC that starts nothing known is dropped.
_ANSI = r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[ -/]*[0-~])?"
_ANSI_STR = re.compile(_ANSI)
_ANSI_BYTES = re.compile(_ANSI.encode())


def strip_ansi(text: str) -> str:
    """Return ``text`` without ANSI escape sequences (colours, cursor moves)."""
    if "\x1b" not in text:
        return text
    return _ANSI_STR.sub("", text)


def strip_ansi_bytes(data: bytes) -> bytes:
    """Bytes version of :func:`strip_ansi`."""
    if b"\x1b" not in data:
        return data
    return _ANSI_BYTES.sub(b"", data)


def printable(text: str, keep_newlines: bool = False) -> str:
    """``text`` with escapes removed and other control characters shown as spaces."""
    text = strip_ansi(text)
    if text.isprintable():
        return text
    keep = "\n\t" if keep_newlines else "\t"
    return "".join(ch if (ch.isprintable() or ch in keep) else " " for ch in text)
