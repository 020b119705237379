"""Modal screens: confirmation (stop, restart) and help (every binding)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
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
    """Lists the keys; any of escape, q or ? closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "close", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical { width: 76; max-width: 95%; height: auto; max-height: 90%;
                           border: thick $primary; background: $panel; padding: 0 1; }
    """

    def __init__(self, rows: list[tuple[str, str]], footer: str) -> None:
        super().__init__()
        self.rows = rows
        self.footer = footer

    def compose(self) -> ComposeResult:
        t = Text()
        t.append("eagle3tui keys\n\n", style="bold")
        for key, desc in self.rows:
            t.append(f"{key:>12}  ", style="bold cyan")
            t.append(desc + "\n")
        t.append("\n" + self.footer, style="dim")
        with Vertical():
            yield Static(t)

    def action_close(self) -> None:
        self.dismiss(None)
