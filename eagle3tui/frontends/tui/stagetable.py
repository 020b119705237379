"""The stage list: one row per stage, drawn with the Line API.

A ``DataTable`` re-renders every cell whenever any cell changes (its render
cache is keyed on a global update counter), which made a once-a-second
"elapsed" tick the largest CPU cost of an idle UI. This widget caches one
rendered strip per row, keyed on the row's content, so a tick repaints only
the rows whose text changed. Every cell is plain ``Text``: nothing from the
config or the logs is read as markup.
"""

from __future__ import annotations

from typing import ClassVar

from rich.cells import set_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from eagle3tui.supervisor.state import StageState, StageStatus
from eagle3tui.frontends.tui.format import COLUMN_GAP, fit_columns, stage_cells

GAP = COLUMN_GAP
HEADER_STYLE = Style(bold=True)
CURSOR_STYLE = Style(reverse=True)
# Without focus the selected row is still marked, but quietly: the reverse
# bar shows where the keys go.
CURSOR_STYLE_UNFOCUSED = Style(underline=True, bold=True)
GAP_MARK = "⋮"  # leading mark of a row shown after hidden ones
# States that must stay on screen however short the table is.
MUST_SHOW = (StageState.RUNNING, StageState.STALLED, StageState.FAILED)


def shown_rows(count: int, slots: int, cursor: int, important: set[int]) -> list[int]:
    """Which of ``count`` rows to draw in ``slots`` lines, in order.

    All of them when they fit. Otherwise the cursor row and the ``important``
    rows (running, failed) first, nearest the cursor first; the lines left
    go to the cursor's neighbours, so the list still reads as a list.
    """
    if slots >= count:
        return list(range(count))
    if slots <= 0 or count <= 0:
        return []
    cursor = max(0, min(count - 1, cursor))
    must = [cursor] + sorted(important - {cursor}, key=lambda i: (abs(i - cursor), i))
    keep = set(must[:slots])
    dist = 1
    while len(keep) < slots and dist < count:
        for i in (cursor + dist, cursor - dist):
            if 0 <= i < count and len(keep) < slots:
                keep.add(i)
        dist += 1
    return sorted(keep)


class StageTable(ScrollView, can_focus=True):
    """Stages with state, progress, counts, elapsed, ETA, drift, attempt, GPUs and a note.

    It never scrolls: when the stages do not fit, rows are chosen by
    :func:`shown_rows` so running and failed stages stay in view, and columns
    by :func:`fit_columns` so a narrow terminal drops whole columns.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("home", "cursor_to(0)", "First", show=False),
        Binding("end", "cursor_to(-1)", "Last", show=False),
    ]
    DEFAULT_CSS = """
    StageTable { height: auto; background: $surface; overflow: hidden hidden; }
    """

    cursor: reactive[int] = reactive(0)

    class Highlighted(Message):
        """The cursor moved to stage ``name``; ``by_user``: a key, a click or a caller's choice,
        not the app following the running stage."""

        def __init__(self, name: str, by_user: bool = False) -> None:
            super().__init__()
            self.name = name
            self.by_user = by_user

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.names: list[str] = []
        self.rows: dict[str, dict[str, Text]] = {}
        self.important: set[int] = set()
        self._sigs: dict[str, str] = {}
        self._cache: dict[tuple[str, bool, bool, bool, int], Strip] = {}
        self._by_user = False  # who moves the cursor now (read by watch_cursor)

    # -- data in ---------------------------------------------------------------
    def show(self, statuses: list[StageStatus], now: float, drift_threshold: float,
             held: dict[str, str], errors: dict[str, str] | None = None) -> None:
        """Bring the rows up to date with ``statuses``; repaint only changed rows.

        ``errors``: per stage, why it cannot start (shown in its note)."""
        names = [s.name for s in statuses]
        first = not self.names
        if names != self.names:
            self.names = names
            self._cache.clear()
            self.virtual_size = Size(self.size.width or 80, len(names) + 1)
            self.refresh(layout=True)
        important = {i for i, st in enumerate(statuses) if st.state in MUST_SHOW}
        if important != self.important:
            self.important = important
            self.refresh()
        shown = self.shown()
        for i, st in enumerate(statuses):
            cells = stage_cells(st, now, drift_threshold, held.get(st.name),
                                (errors or {}).get(st.name))
            sig = "\0".join(c.plain + "\1" + str(c.style) for c in cells.values())
            if self._sigs.get(st.name) != sig:
                self._sigs[st.name] = sig
                self.rows[st.name] = cells
                if i in shown:
                    self.refresh_line(shown.index(i) + 1)
        if first and names:
            self.cursor = min(self.cursor, len(names) - 1)
            self.post_message(self.Highlighted(self.names[self.cursor]))

    def shown(self) -> list[int]:
        """Indices of the stages on screen now, top to bottom."""
        return shown_rows(len(self.names), max(0, self.size.height - 1), self.cursor,
                          self.important)

    def refresh_line(self, y: int) -> None:
        """Repaint screen row ``y`` (out-of-view rows are skipped)."""
        if 0 <= y < max(1, self.size.height):
            self.refresh_lines(y, 1)

    def on_resize(self) -> None:
        self._cache.clear()
        self.virtual_size = Size(self.size.width, len(self.names) + 1)
        self.refresh()

    def on_focus(self) -> None:
        self._cache.clear()
        self.refresh()

    def on_blur(self) -> None:
        self._cache.clear()
        self.refresh()

    # -- cursor --------------------------------------------------------------------
    @property
    def selected_stage(self) -> str | None:
        """Name of the stage under the cursor."""
        return self.names[self.cursor] if 0 <= self.cursor < len(self.names) else None

    def select_stage(self, name: str, by_user: bool = True) -> None:
        """Move the cursor to ``name``; ``by_user=False`` when the app follows the running stage."""
        if name in self.names:
            self._move(self.names.index(name), by_user)

    def _move(self, index: int, by_user: bool) -> None:
        self._by_user = by_user
        try:
            self.cursor = index
        finally:
            self._by_user = False

    def action_cursor(self, delta: int) -> None:
        if self.names:
            self._move(max(0, min(len(self.names) - 1, self.cursor + delta)), True)

    def action_cursor_to(self, index: int) -> None:
        if self.names:
            self._move(index % len(self.names), True)

    def watch_cursor(self, old: int, new: int) -> None:
        if not self.names:
            return
        self.refresh()
        self.post_message(self.Highlighted(self.names[new], by_user=self._by_user))

    def on_click(self, event: object) -> None:
        y = getattr(event, "y", 0)
        shown = self.shown()
        if 1 <= y <= len(shown):
            self._move(shown[y - 1], True)

    # -- drawing ---------------------------------------------------------------------
    def _cells_strip(self, cells: list[tuple[str, Style]], base: Style,
                     columns: list[tuple[str, str, int]], mark: str = " ") -> Strip:
        segs: list[Segment] = [Segment(mark, base)]
        for (text, style), (_, _, width) in zip(cells, columns):
            segs.append(Segment(set_cell_size(text, width) + " " * GAP, base + style))
        return Strip(segs)

    def render_line(self, y: int) -> Strip:
        """Row 0 is the header; the others are the shown stages."""
        width = self.size.width
        base = self.rich_style
        columns = fit_columns(width)
        shown = self.shown()
        if y == 0:
            hidden = len(self.names) - len(shown)
            labels = [(label, HEADER_STYLE) for _, label, _ in columns]
            if hidden and labels and columns[-1][0] == "note":
                labels[-1] = (f"Note ({hidden} more: ↑↓)", HEADER_STYLE)
            focus = Style(underline=True) if self.has_focus else Style()
            strip = self._cells_strip(labels, base + focus, columns)
            return strip.crop_extend(0, width, base)
        if not 0 <= y - 1 < len(shown):
            return Strip.blank(width, base)
        idx = shown[y - 1]
        name = self.names[idx]
        selected = idx == self.cursor
        after_gap = idx > 0 and (y == 1 or shown[y - 2] != idx - 1)
        key = (self._sigs.get(name, ""), selected, selected and self.has_focus, after_gap, width)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        row = self.rows.get(name, {})
        cells: list[tuple[str, Style]] = []
        for col, _, _ in columns:
            c = row.get(col)
            if c is None:
                cells.append(("", Style()))
            else:
                cells.append((c.plain, Style.parse(str(c.style)) if c.style else Style()))
        if selected:
            row_style = base + (CURSOR_STYLE if self.has_focus else CURSOR_STYLE_UNFOCUSED)
        else:
            row_style = base
        strip = self._cells_strip(cells, row_style, columns, GAP_MARK if after_gap else " ")
        strip = strip.crop_extend(0, width, base)
        if len(self._cache) > 512:
            self._cache.clear()
        self._cache[key] = strip
        return strip
