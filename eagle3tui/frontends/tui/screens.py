"""Modal screens: confirmation (stop, restart) and help (every binding)."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class ConfirmScreen(ModalScreen[bool]):
    """Asks a yes/no question; dismisses with True for yes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n", "answer(False)", "No"),
        Binding("escape", "answer(False)", "Cancel"),
    ]
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical { width: 60; max-width: 90%; height: auto; border: thick $warning;
                              background: $panel; padding: 1 2; }
    ConfirmScreen Horizontal { height: auto; align: center middle; margin-top: 1; }
    ConfirmScreen Button { margin: 0 1; }
    """

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.question), id="question")
            with Horizontal():
                yield Button("Yes (y)", variant="error", id="yes")
                yield Button("No (n)", variant="primary", id="no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class HelpScreen(ModalScreen[None]):
    """Lists the keys; any of escape, q or ? closes it.

    The keys are a two-column grid, so a description that wraps stays in its
    column; the list scrolls (up/down, page up/down, home/end) where the
    terminal is shorter than it, as at 80×24.
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "close", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 80; max-width: 95%; height: auto; max-height: 90%;
                                 border: thick $primary; background: $panel; padding: 0 1; }
    """

    def __init__(self, rows: list[tuple[str, str]], footer: str) -> None:
        super().__init__()
        self.rows = rows
        self.footer = footer

    @property
    def plain(self) -> str:
        """Everything the screen lists, as plain text (one key a line)."""
        return "\n".join(["eagle3tui keys", *(f"{k}  {d}" for k, d in self.rows), self.footer])

    def compose(self) -> ComposeResult:
        keys = Table.grid(padding=(0, 2))
        keys.add_column(justify="right", style="bold cyan", no_wrap=True)
        keys.add_column()
        for key, desc in self.rows:
            keys.add_row(key, Text(desc))
        with VerticalScroll():
            yield Static(Text("eagle3tui keys (scroll: up/down)", style="bold"))
            yield Static(keys, id="help-keys")
            yield Static(Text(self.footer, style="dim"), id="help-footer")

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()

    def action_close(self) -> None:
        self.dismiss(None)
