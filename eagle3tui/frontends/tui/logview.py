"""The log pane's drawing surface: a Line-API widget over a ``LogModel``.

Only the rows on screen are rendered (``render_line``), so a fast log costs
a deque append per line, not a repaint of everything. Text is drawn as plain
``Segment``s: nothing in a log line is ever interpreted as markup.

Scrolling: while the view sits at the bottom it follows new output; once the
user scrolls up it stays put (new lines, and lines falling off the front of
the bounded buffer, never move what they are reading).

Long lines: by default a line is one row, cut at the pane's edge with a dim
``…``, and left/right scroll sideways. ``wrap`` (the app's ``w`` key) shows
every line in full over as many rows as it needs. There is no horizontal
scrollbar: a bar one cell wide drew its thumb as a lone ``▌`` at the pane's
bottom-left corner, and it took a row from the log.
"""

from __future__ import annotations

from bisect import bisect_right

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from eagle3tui.frontends.tui.logmodel import LogModel

KIND_STYLE = {
    "fatal": Style(color="red", bold=True),
    "error": Style(color="red"),
    "warning": Style(color="yellow"),
    "benign": Style(dim=True, italic=True),
}
GUTTER_STYLE = Style(dim=True)
MARK_STYLE = Style(reverse=True)
GUTTER = 7  # "123456 "
CUT_MARK = "…"  # the last cell of a line that goes on past the pane's edge
CUT_STYLE = Style(dim=True, bold=True)
SIDE_STEP = 8  # columns per left/right key press


class LogView(ScrollView, can_focus=True):
    """Shows a ``LogModel``; follows the end unless the user scrolled back."""

    DEFAULT_CSS = """
    LogView { background: $surface; overflow-x: hidden; }
    """

    class Changed(Message):
        """Following, wrapping or the sideways position changed (the title shows them)."""

    def __init__(self, max_lines: int = 10_000, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.model = LogModel(max_lines)
        self.marked: int | None = None  # view index highlighted by search / jump
        self._width = 0
        self.follow = True
        self.wrap = False
        self._internal = False
        # Wrapped layout: the first row of each view line, and the total rows;
        # rebuilt when the lines, the filter or the width change.
        self._starts: list[int] | None = None
        self._starts_width = 0
        self._told: tuple[bool, bool, int, bool] | None = None

    # -- geometry: view lines <-> rows ----------------------------------------
    def _text_width(self) -> int:
        # The vertical scrollbar's columns are kept free whether it is drawn or
        # not, so wrapping does not change when it comes and goes.
        return max(1, self.size.width - self.styles.scrollbar_size_vertical - GUTTER)

    def _layout(self) -> list[int] | None:
        """Row starts of the wrapped view (None when not wrapping)."""
        if not self.wrap:
            return None
        width = self._text_width()
        if self._starts is None or self._starts_width != width:
            model = self.model
            lines = model.lines if model.filter == "all" else model.view
            starts = [0]
            total = 0
            for line in lines:
                text = line.text
                cells = len(text) if text.isascii() else cell_len(text)
                total += max(1, -(-cells // width))
                starts.append(total)
            self._starts = starts
            self._starts_width = width
        return self._starts

    def row_of(self, index: int) -> int:
        """First screen row (in the scrolled content) of view line ``index``."""
        starts = self._layout()
        if starts is None:
            return index
        return starts[max(0, min(index, len(starts) - 1))]

    def line_at(self, row: int) -> tuple[int, int]:
        """``(view line, row within it)`` shown at content row ``row``."""
        starts = self._layout()
        if starts is None:
            return row, 0
        index = max(0, bisect_right(starts, row) - 1)
        return index, row - starts[index]

    def _rows(self) -> int:
        starts = self._layout()
        return self.model.view_len() if starts is None else starts[-1]

    def _resize_content(self) -> None:
        """Set the scrollable size after the lines, the filter or the wrapping changed."""
        self._starts = None
        self.virtual_size = Size(0 if self.wrap else self._width, self._rows())

    def _tell(self) -> None:
        state = (self.follow, self.wrap, int(self.scroll_x), self.cut)
        if state != self._told:
            self._told = state
            self.post_message(self.Changed())

    @property
    def cut(self) -> bool:
        """Whether some line is wider than the pane and wrapping is off."""
        return not self.wrap and self._width > self.size.width - self.scrollbar_size_vertical

    @property
    def allow_horizontal_scroll(self) -> bool:
        # No scrollbar (overflow-x: hidden), but left/right and shift+wheel still
        # scroll sideways through unwrapped long lines.
        return not self.wrap and self.max_scroll_x > 0

    def toggle_wrap(self) -> bool:
        """Wrap long lines, or cut them again; keeps the top line in view. Returns ``wrap``."""
        top = self.top_index
        self.wrap = not self.wrap
        self._resize_content()
        if self.wrap:
            self.scroll_to(x=0, animate=False, immediate=True, force=True)
        if self.follow:
            self._to_end()
        else:
            self._scroll_internal(self.row_of(top))
        self.refresh()
        self._tell()
        return self.wrap

    # -- data in (called by the app on the UI thread) --------------------------
    def _scroll_internal(self, y: int) -> None:
        """Scroll without the move counting as the user's (which would stop following)."""
        self._internal = True
        try:
            # force: the vertical scrollbar that allows scrolling appears only
            # at the next layout, after content that just grew past the pane.
            self.scroll_to(y=max(0, y), animate=False, immediate=True, force=True)
        finally:
            self._internal = False

    def _to_end(self) -> None:
        self._scroll_internal(self.max_scroll_y)

    def reset(self) -> None:
        """Empty the pane (a new attempt is shown)."""
        self.model.clear()
        self.marked = None
        self._width = 0
        self._resize_content()
        self._scroll_internal(0)
        self.scroll_to(x=0, animate=False, immediate=True, force=True)
        self.follow = True
        self.refresh()
        self._tell()

    def append(self, lines: list[tuple[int, str, str]]) -> None:
        """Add ``(line_no, text, kind)`` lines; keep the reader's place unless following."""
        if not lines:
            return
        top, within = self.line_at(int(self.scroll_y))
        fell = 0
        for no, text, kind in lines:
            fell += self.model.add(no, text, kind)
            longest = max(map(len, text.split("\n"))) if "\n" in text else len(text)
            if longest + GUTTER > self._width:
                self._width = min(longest + GUTTER, 4000)
        if fell and self.marked is not None:
            self.marked = self.marked - fell if self.marked >= fell else None
        self._resize_content()
        if self.follow:
            self._to_end()
        elif fell and self.model.filter == "all":
            # Lines dropped from the front: shift so the same text stays on screen.
            self._scroll_internal(self.row_of(top - fell) + within if top >= fell else 0)
        self.refresh()
        self._tell()

    def mark(self, verdicts: list[tuple[int, int, str]]) -> None:
        """Apply the driver's ``(first_line, last_line, kind)`` verdicts."""
        for first, last, kind in verdicts:
            self.model.mark(first, last, kind)
        if verdicts:
            self._resize_content()
            self.refresh()

    def on_resize(self) -> None:
        if self.wrap:
            top = self.top_index
            self._resize_content()
            if not self.follow:
                self.call_after_refresh(self._scroll_internal, self.row_of(top))
        if self.follow:
            self.call_after_refresh(self._to_end)
        self._tell()

    def refilter(self, name: str | None = None) -> str:
        """Apply filter ``name`` (or the next one); returns the filter shown."""
        if name is None:
            name = self.model.next_filter()
        else:
            self.model.set_filter(name)
        self.marked = None
        self._resize_content()
        self.follow = True
        self._to_end()
        self.refresh()
        self._tell()
        return name

    def goto(self, index: int) -> None:
        """Scroll so view line ``index`` is in the middle, highlighted; stop following."""
        self.marked = index
        self.follow = False
        self._scroll_internal(self.row_of(index) - self.size.height // 2)
        self.refresh()
        self._tell()

    def follow_end(self) -> None:
        """Jump to the end and follow new output again."""
        self.follow = True
        self.marked = None
        self._to_end()
        self.refresh()
        self._tell()

    # Keyboard and wheel scrolling: decide "following" from the user's intent
    # at once, and move without animation, so new output arriving mid-animation
    # cannot snap the view back to the end.
    def _user_scroll(self, dy: int) -> None:
        if dy < 0:
            self.follow = False
        self._scroll_internal(int(self.scroll_y) + dy)
        if dy > 0 and self.scroll_y >= self.max_scroll_y:
            self.follow = True
        self._tell()

    def _side_scroll(self, dx: int) -> None:
        if self.wrap:
            return
        self.scroll_to(x=max(0, int(self.scroll_x) + dx), animate=False, immediate=True, force=True)
        self._tell()

    def action_scroll_left(self) -> None:
        self._side_scroll(-SIDE_STEP)

    def action_scroll_right(self) -> None:
        self._side_scroll(SIDE_STEP)

    def action_scroll_up(self) -> None:
        self._user_scroll(-1)

    def action_scroll_down(self) -> None:
        self._user_scroll(1)

    def action_page_up(self) -> None:
        self._user_scroll(-max(1, self.size.height - 1))

    def action_page_down(self) -> None:
        self._user_scroll(max(1, self.size.height - 1))

    def action_scroll_home(self) -> None:
        self._user_scroll(-int(self.scroll_y) - 1)

    def action_scroll_end(self) -> None:
        self.follow_end()

    def _on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        event.stop()
        self._user_scroll(-3)

    def _on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        event.stop()
        self._user_scroll(3)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        # A user scroll up stops following; scrolling back to the bottom resumes it.
        super().watch_scroll_y(old_value, new_value)
        if self._internal:
            return
        if new_value < old_value:
            self.follow = False
        elif new_value >= self.max_scroll_y:
            self.follow = True
        self._tell()

    def watch_scroll_x(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_x(old_value, new_value)
        self._tell()

    @property
    def top_index(self) -> int:
        """View index of the first line on screen."""
        return self.line_at(int(self.scroll_y))[0]

    # -- drawing -------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        """Draw screen row ``y``: gutter with the line number, then the plain text."""
        scroll_x, scroll_y = self.scroll_offset
        index, within = self.line_at(scroll_y + y)
        width = self.size.width
        base = self.rich_style
        line = self.model.view_line(index)
        if line is None:
            return Strip.blank(width, base)
        style = base + KIND_STYLE[line.kind] if line.kind in KIND_STYLE else base
        if index == self.marked:
            style = style + MARK_STYLE
        if self.wrap:
            # Row ``within`` of a wrapped line: its slice of the text; the line
            # number on its first row only, so continuation rows read as such.
            text_width = self._text_width()
            gutter = f"{line.no:>6} " if within == 0 else " " * GUTTER
            piece = Strip([Segment(line.text, style)]).crop(within * text_width,
                                                             (within + 1) * text_width)
            return Strip([Segment(gutter, base + GUTTER_STYLE), *piece]).extend_cell_length(
                width, base)
        strip = Strip([Segment(f"{line.no:>6} ", base + GUTTER_STYLE), Segment(line.text, style)])
        visible = width - self.scrollbar_size_vertical  # the scrollbar is drawn over the rest
        if strip.cell_length - scroll_x > visible >= 2:
            # More of this line lies past the right edge: say so in its last visible cell.
            shown = strip.crop(scroll_x, scroll_x + visible - 1)
            return Strip([*shown, Segment(CUT_MARK, base + CUT_STYLE)]).extend_cell_length(
                width, base)
        return strip.crop_extend(scroll_x, scroll_x + width, base)
