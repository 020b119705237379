"""The log pane's drawing surface: a Line-API widget over a ``LogModel``.

Only the rows on screen are rendered (``render_line``), so a fast log costs
a deque append per line, not a repaint of everything. Text is drawn as plain
``Segment``s: nothing in a log line is ever interpreted as markup.

Scrolling: while the view sits at the bottom it follows new output; once the
user scrolls up it stays put (new lines, and lines falling off the front of
the bounded buffer, never move what they are reading).
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Size
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


class LogView(ScrollView, can_focus=True):
    """Shows a ``LogModel``; follows the end unless the user scrolled back."""

    DEFAULT_CSS = """
    LogView { background: $surface; }
    """

    def __init__(self, max_lines: int = 10_000, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.model = LogModel(max_lines)
        self.marked: int | None = None  # view index highlighted by search / jump
        self._width = 0
        self.follow = True
        self._internal = False

    # -- data in (called by the app on the UI thread) --------------------------
    def _scroll_internal(self, y: int) -> None:
        """Scroll without the move counting as the user's (which would stop following)."""
        self._internal = True
        try:
            self.scroll_to(y=max(0, y), animate=False, immediate=True)
        finally:
            self._internal = False

    def _to_end(self) -> None:
        self._scroll_internal(self.max_scroll_y)

    def reset(self) -> None:
        """Empty the pane (a new attempt is shown)."""
        self.model.clear()
        self.marked = None
        self._width = 0
        self.virtual_size = Size(0, 0)
        self._scroll_internal(0)
        self.follow = True
        self.refresh()

    def append(self, lines: list[tuple[int, str, str]]) -> None:
        """Add ``(line_no, text, kind)`` lines; keep the reader's place unless following."""
        if not lines:
            return
        fell = 0
        for no, text, kind in lines:
            fell += self.model.add(no, text, kind)
            if len(text) + GUTTER > self._width:
                self._width = min(len(text) + GUTTER, 4000)
        if fell and self.marked is not None:
            self.marked = self.marked - fell if self.marked >= fell else None
        self.virtual_size = Size(self._width, self.model.view_len())
        if self.follow:
            self._to_end()
        elif fell and self.model.filter == "all":
            # Lines dropped from the front: shift so the same text stays on screen.
            self._scroll_internal(int(self.scroll_y) - fell)
        self.refresh()

    def mark(self, verdicts: list[tuple[int, int, str]]) -> None:
        """Apply the driver's ``(first_line, last_line, kind)`` verdicts."""
        for first, last, kind in verdicts:
            self.model.mark(first, last, kind)
        if verdicts:
            self.virtual_size = Size(self._width, self.model.view_len())
            self.refresh()

    def on_resize(self) -> None:
        if self.follow:
            self.call_after_refresh(self._to_end)

    def refilter(self, name: str | None = None) -> str:
        """Apply filter ``name`` (or the next one); returns the filter shown."""
        if name is None:
            name = self.model.next_filter()
        else:
            self.model.set_filter(name)
        self.marked = None
        self.virtual_size = Size(self._width, self.model.view_len())
        self.follow = True
        self._to_end()
        self.refresh()
        return name

    def goto(self, index: int) -> None:
        """Scroll so view line ``index`` is in the middle, highlighted; stop following."""
        self.marked = index
        self.follow = False
        self._scroll_internal(index - self.size.height // 2)
        self.refresh()

    def follow_end(self) -> None:
        """Jump to the end and follow new output again."""
        self.follow = True
        self.marked = None
        self._to_end()
        self.refresh()

    # Keyboard and wheel scrolling: decide "following" from the user's intent
    # at once, and move without animation, so new output arriving mid-animation
    # cannot snap the view back to the end.
    def _user_scroll(self, dy: int) -> None:
        if dy < 0:
            self.follow = False
        self._scroll_internal(int(self.scroll_y) + dy)
        if dy > 0 and self.scroll_y >= self.max_scroll_y:
            self.follow = True

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

    @property
    def top_index(self) -> int:
        """View index of the first line on screen."""
        return int(self.scroll_y)

    # -- drawing -------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        """Draw screen row ``y``: gutter with the line number, then the plain text."""
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        base = self.rich_style
        line = self.model.view_line(index)
        if line is None:
            return Strip.blank(width, base)
        style = base + KIND_STYLE[line.kind] if line.kind in KIND_STYLE else base
        if index == self.marked:
            style = style + MARK_STYLE
        strip = Strip([Segment(f"{line.no:>6} ", base + GUTTER_STYLE), Segment(line.text, style)])
        return strip.crop_extend(scroll_x, scroll_x + width, base)
