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

from eagle3tui.supervisor.state import StageStatus
from eagle3tui.frontends.tui.format import COLUMNS, stage_cells

GAP = 2
HEADER_STYLE = Style(bold=True)
CURSOR_STYLE = Style(reverse=True)


class StageTable(ScrollView, can_focus=True):
    """Stages with state, progress, counts, elapsed, ETA, drift, attempt, GPUs and a note."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("home", "cursor_to(0)", "First", show=False),
        Binding("end", "cursor_to(-1)", "Last", show=False),
    ]
    DEFAULT_CSS = """
    StageTable { height: auto; background: $surface; }
    """

    cursor: reactive[int] = reactive(0)

    class Highlighted(Message):
        """The cursor moved to stage ``name``."""

        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.names: list[str] = []
        self.rows: dict[str, dict[str, Text]] = {}
        self._sigs: dict[str, str] = {}
        self._cache: dict[tuple[str, bool, int], Strip] = {}
        self._width = sum(w for _, _, w in COLUMNS) + GAP * len(COLUMNS)

    # -- data in ---------------------------------------------------------------
    def show(self, statuses: list[StageStatus], now: float, drift_threshold: float,
             held: dict[str, str]) -> None:
        """Bring the rows up to date with ``statuses``; repaint only changed rows."""
        names = [s.name for s in statuses]
        first = not self.names
        if names != self.names:
            self.names = names
            self._cache.clear()
            self.virtual_size = Size(self._width, len(names) + 1)
            self.refresh(layout=True)
        for i, st in enumerate(statuses):
            cells = stage_cells(st, now, drift_threshold, held.get(st.name))
            sig = "\0".join(c.plain + "\1" + str(c.style) for c in cells.values())
            if self._sigs.get(st.name) != sig:
                self._sigs[st.name] = sig
                self.rows[st.name] = cells
                self.refresh_line(i + 1 - int(self.scroll_y))
        if first and names:
            self.cursor = min(self.cursor, len(names) - 1)
            self.post_message(self.Highlighted(self.names[self.cursor]))

    def refresh_line(self, y: int) -> None:
        """Repaint screen row ``y`` (out-of-view rows are skipped)."""
        if 0 <= y < max(1, self.size.height):
            self.refresh_lines(y, 1)

    # -- cursor --------------------------------------------------------------------
    @property
    def selected_stage(self) -> str | None:
        """Name of the stage under the cursor."""
        return self.names[self.cursor] if 0 <= self.cursor < len(self.names) else None

    def select_stage(self, name: str) -> None:
        """Move the cursor to ``name``."""
        if name in self.names:
            self.cursor = self.names.index(name)

    def action_cursor(self, delta: int) -> None:
        if self.names:
            self.cursor = max(0, min(len(self.names) - 1, self.cursor + delta))

    def action_cursor_to(self, index: int) -> None:
        if self.names:
            self.cursor = index % len(self.names)

    def watch_cursor(self, old: int, new: int) -> None:
        if not self.names:
            return
        # Keep the cursor row on screen (row 0 is the header).
        visible = max(1, self.size.height - 1)
        if new < self.scroll_y:
            self.scroll_to(y=new, animate=False)
        elif new >= self.scroll_y + visible:
            self.scroll_to(y=new - visible + 1, animate=False)
        self.refresh()
        self.post_message(self.Highlighted(self.names[new]))

    def on_click(self, event: object) -> None:
        y = getattr(event, "y", 0)
        idx = int(self.scroll_y) + y - 1
        if 0 <= idx < len(self.names):
            self.cursor = idx

    # -- drawing ---------------------------------------------------------------------
    def _cells_strip(self, cells: list[tuple[str, Style]], base: Style) -> Strip:
        segs: list[Segment] = [Segment(" ", base)]
        for (text, style), (_, _, width) in zip(cells, COLUMNS):
            segs.append(Segment(set_cell_size(text, width) + " " * GAP, base + style))
        return Strip(segs)

    def render_line(self, y: int) -> Strip:
        """Row 0 is the header; the others are stages from the scroll position."""
        width = self.size.width
        base = self.rich_style
        scroll_x = int(self.scroll_x)
        if y == 0:
            strip = self._cells_strip([(label, HEADER_STYLE) for _, label, _ in COLUMNS], base)
            return strip.crop_extend(scroll_x, scroll_x + width, base)
        idx = int(self.scroll_y) + y - 1
        if not 0 <= idx < len(self.names):
            return Strip.blank(width, base)
        name = self.names[idx]
        selected = idx == self.cursor
        key = (self._sigs.get(name, ""), selected, width + 10_000 * scroll_x)
        # (Selection is drawn the same focused or not, so focus is not in the key.)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        row = self.rows.get(name, {})
        cells: list[tuple[str, Style]] = []
        for col, _, _ in COLUMNS:
            c = row.get(col)
            if c is None:
                cells.append(("", Style()))
            else:
                cells.append((c.plain, Style.parse(str(c.style)) if c.style else Style()))
        strip = self._cells_strip(cells, base + CURSOR_STYLE if selected else base)
        strip = strip.crop_extend(scroll_x, scroll_x + width, base)
        if len(self._cache) > 512:
            self._cache.clear()
        self._cache[key] = strip
        return strip
