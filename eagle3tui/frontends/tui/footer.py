"""The key footer, with ``? Help`` and ``q Quit`` pinned to its right end.

Textual's footer lays the bindings out left to right and cuts what does not
fit, so on an 80-column terminal the two keys a newcomer needs most were the
ones cut. Here they are drawn in a group docked right; the other keys fill
what is left and are cut first.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import HorizontalGroup
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

# (key, key as shown, description): the bindings the app declares with show=False
# so the plain footer does not draw them a second time.
PINNED: list[tuple[str, str, str]] = [("question_mark", "?", "Help"), ("q", "q", "Quit")]


class PinnedFooter(Footer):
    """A footer whose last keys (help, quit) are always visible."""

    DEFAULT_CSS = """
    PinnedFooter #pinned-keys {
        dock: right;
        width: auto;
        height: 1;
        background: $footer-background;
    }
    """

    def compose(self) -> ComposeResult:
        yield from super().compose()
        if not self._bindings_ready:
            return
        with HorizontalGroup(id="pinned-keys"):
            for key, shown, description in PINNED:
                yield FooterKey(key, shown, description, key).data_bind(compact=Footer.compact)
