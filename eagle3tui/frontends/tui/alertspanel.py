"""Alerts panel: newest first, each with its explanation; Enter jumps to its log line."""

from __future__ import annotations

from typing import Any

from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from eagle3tui.frontends.tui.format import alert_text

MAX_ALERTS = 300


class AlertsPanel(OptionList):
    """A bounded, newest-first list of alert dicts (the ``alerts.jsonl`` objects)."""

    class JumpTo(Message):
        """The user chose an alert: show its stage's log at its line."""

        def __init__(self, alert: dict[str, Any]) -> None:
            super().__init__()
            self.alert = alert

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.alerts: list[dict[str, Any]] = []  # newest first

    def add_alerts(self, new: list[dict[str, Any]]) -> None:
        """Prepend ``new`` (oldest first, as read from the file)."""
        if not new:
            return
        self.alerts[:0] = list(reversed(new))
        del self.alerts[MAX_ALERTS:]
        keep = self.highlighted
        self.clear_options()
        self.add_options([Option(alert_text(a)) for a in self.alerts])
        if keep is not None:
            # The same alert stays highlighted after newer ones arrive above it.
            self.highlighted = min(keep + len(new), len(self.alerts) - 1)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if 0 <= event.option_index < len(self.alerts):
            self.post_message(self.JumpTo(self.alerts[event.option_index]))
