"""What the log pane shows, as plain data: bounded lines, ``\\r`` collapsing, filters, search.

This module does not import Textual, so its logic is testable (and reusable)
without a terminal. The widget in ``logview.py`` only draws what this holds.

Every line keeps its 1-based physical line number in the log file (what
``grep -n`` prints: earlier attempts and the attempt's header line count), the
same numbering the driver's alerts use in ``details["line"]``, so "jump to
line" works across both.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from eagle3tui.textsafe import printable

FILTERS = ("all", "events", "fatal")
# Rule kinds that count as "events" for the events-only filter.
EVENT_KINDS = frozenset({"fatal", "warning", "benign", "error"})


@dataclass(slots=True)
class ShownLine:
    """One line as the pane shows it: plain, printable text, never markup."""

    no: int
    text: str
    kind: str = ""  # rule kind: fatal, warning, benign, error, progress, info or ""


def clean(text: str) -> str:
    """Log text made displayable: escape sequences removed, controls blanked."""
    return printable(text)


class LogModel:
    """A bounded window on one attempt's log.

    ``add(no, text, kind)`` appends a line, or replaces the last one when it
    has the same number (a ``\\r`` progress bar redrawing its line), so a
    tqdm bar shows as its latest state. At most ``max_lines`` are kept; the
    count of lines dropped from the front is in ``dropped``.
    """

    def __init__(self, max_lines: int = 10_000) -> None:
        self.max_lines = max_lines
        self.lines: deque[ShownLine] = deque()
        self.dropped = 0
        self.filter = "all"
        self._view: list[ShownLine] | None = None  # filtered view, rebuilt lazily
        # The driver's verdicts (line -> kind); a line may be read before its verdict.
        self._kinds: dict[int, str] = {}

    # -- content ---------------------------------------------------------
    def clear(self) -> None:
        """Forget every line (a new attempt, or the file was truncated)."""
        self.lines.clear()
        self.dropped = 0
        self._view = None
        self._kinds.clear()

    def mark(self, first: int, last: int, kind: str) -> None:
        """Apply the driver's verdict ``kind`` to lines ``first``..``last``."""
        last = max(first, min(last, first + 10_000))  # a runaway range costs nothing
        for no in range(first, last + 1):
            self._kinds[no] = kind
        i = self._position(first)
        while i is not None and i < len(self.lines) and self.lines[i].no <= last:
            self.lines[i].kind = kind
            i += 1
        self._view = None

    def add(self, no: int, text: str, kind: str = "") -> int:
        """Add line ``no``, or replace it when it is the last one; returns how many rows fell off the front.

        ``text`` may hold several rows separated by ``\\n`` (a redrawn line's
        progress frame and a message that shared it): they replace every row
        of line ``no`` at the end (a ``\\r`` bar redrawing its line).
        """
        kind = kind or self._kinds.get(no, "")
        # A redraw keeps the strongest classification its line ever had.
        while self.lines and self.lines[-1].no == no:
            prev = self.lines.pop()
            kind = kind or prev.kind
        for row in text.split("\n"):
            self.lines.append(ShownLine(no, clean(row), kind))
        fell = 0
        while len(self.lines) > self.max_lines:
            self.lines.popleft()
            fell += 1
        self.dropped += fell
        self._view = None
        return fell

    def _position(self, no: int) -> int | None:
        """Index in ``lines`` of the first row of line ``no`` or, failing that, of a later line."""
        if not self.lines or no > self.lines[-1].no:
            return None
        # Rows are in line order, one or more per line: line ``no`` is at or
        # after ``no - first``, a few rows later when redrawn lines have two.
        n = len(self.lines)
        i = max(0, no - self.lines[0].no)
        if i >= n or self.lines[i].no > no:
            i = 0  # numbering with a gap: look from the start
        while i < n and self.lines[i].no < no:
            i += 1
        return i if i < n else None

    # -- filtered view ---------------------------------------------------
    def set_filter(self, name: str) -> None:
        """Show ``all`` lines, ``events`` only, or ``fatal`` only."""
        if name not in FILTERS:
            raise ValueError(f"unknown filter {name!r}; use one of {', '.join(FILTERS)}")
        self.filter = name
        self._view = None

    def next_filter(self) -> str:
        """Cycle all -> events -> fatal -> all; returns the new filter."""
        self.set_filter(FILTERS[(FILTERS.index(self.filter) + 1) % len(FILTERS)])
        return self.filter

    def _keep(self, line: ShownLine) -> bool:
        if self.filter == "all":
            return True
        if self.filter == "events":
            return line.kind in EVENT_KINDS
        return line.kind in ("fatal", "error")

    @property
    def view(self) -> list[ShownLine]:
        """The lines the current filter shows, oldest first."""
        if self._view is None:
            if self.filter == "all":
                self._view = list(self.lines)
            else:
                self._view = [ln for ln in self.lines if self._keep(ln)]
        return self._view

    def view_len(self) -> int:
        """Number of lines the current filter shows (cheap for ``all``)."""
        if self.filter == "all":
            return len(self.lines)
        return len(self.view)

    def view_line(self, index: int) -> ShownLine | None:
        """Line ``index`` of the filtered view, or None past the end."""
        if self.filter == "all":
            return self.lines[index] if 0 <= index < len(self.lines) else None
        v = self.view
        return v[index] if 0 <= index < len(v) else None

    def index_of(self, no: int) -> int | None:
        """View index of physical line ``no`` (or the first shown line after it)."""
        if self.filter == "all":
            return self._position(no)
        for j, ln in enumerate(self.view):
            if ln.no >= no:
                return j
        return None

    def search(self, needle: str, start: int, backwards: bool = False) -> int | None:
        """View index of the next line containing ``needle`` (case-insensitive).

        The search starts after ``start`` (before it when ``backwards``) and
        wraps around once.
        """
        if not needle:
            return None
        needle = needle.lower()
        n = self.view_len()
        if n == 0:
            return None
        step = -1 if backwards else 1
        for k in range(1, n + 1):
            i = (start + step * k) % n
            ln = self.view_line(i)
            if ln is not None and needle in ln.text.lower():
                return i
        return None
