"""Untrusted text made safe to print: no escape sequences, no control characters.

Log lines are data. Before a line reaches a terminal (CLI output, the TUI,
alert lines) its ANSI/VT escape sequences are removed and other control
characters are replaced, so a log can never move the cursor, change colours,
set the window title or hide text.
"""

from __future__ import annotations

_ESC = "\x1b"


def strip_escapes(text: str) -> str:
    """Remove CSI, OSC and other escape sequences in one linear pass."""
    if _ESC not in text and "\x9b" not in text:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\x9b" or (ch == _ESC and i + 1 < n and text[i + 1] == "["):
            # CSI: parameters and intermediates, then one final byte @..~
            i += 1 if ch == "\x9b" else 2
            while i < n and not ("@" <= text[i] <= "~"):
                i += 1
            i += 1
        elif ch == _ESC and i + 1 < n and text[i + 1] in "]PX^_":
            # OSC / DCS / SOS / PM / APC: up to BEL or ST (ESC \\)
            i += 2
            while i < n:
                if text[i] == "\x07":
                    i += 1
                    break
                if text[i] == _ESC and i + 1 < n and text[i + 1] == "\\":
                    i += 2
                    break
                i += 1
        elif ch == _ESC:
            # Short escapes: ESC c, ESC 7 (two chars), ESC ( B charset selection (three).
            i += 3 if i + 1 < n and text[i + 1] in "()*+" else 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def printable(text: str, keep_newlines: bool = False) -> str:
    """``text`` with escapes removed and other control characters shown as spaces."""
    text = strip_escapes(text)
    keep = "\n\t" if keep_newlines else "\t"
    if text.isprintable():
        return text
    return "".join(ch if (ch.isprintable() or ch in keep) else " " for ch in text)
