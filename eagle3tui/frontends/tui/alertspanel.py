"""Alerts panel: newest first, each with its explanation; Enter jumps to its log line.

By default it lists warnings and criticals only: starts and successes are
info alerts that the stage list already shows, and a run's two warnings must
not drown among them. One key (``l``) shows every level.
"""

from __future__ import annotations

from typing import Any

from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from eagle3tui.frontends.tui.format import alert_text

MAX_ALERTS = 300
LEVEL_RANK = {"info": 0, "warning": 1, "critical": 2}
DEFAULT_MIN_LEVEL = "warning"


def level_rank(alert: dict[str, Any]) -> int:
    """0 info, 1 warning, 2 critical; an unknown level counts as a warning (shown)."""
    return LEVEL_RANK.get(str(alert.get("level", "")), 1)


class AlertsPanel(OptionList):
    """A bounded, newest-first list of alert dicts (the ``alerts.jsonl`` objects)."""

    class JumpTo(Message):
        """The user chose an alert: show its stage's log at its line."""

        def __init__(self, alert: dict[str, Any]) -> None:
            super().__init__()
            self.alert = alert

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.received: list[dict[str, Any]] = []  # every level, newest first
        self.alerts: list[dict[str, Any]] = []  # the ones shown, newest first
        self.min_level = DEFAULT_MIN_LEVEL

    @property
    def hidden(self) -> int:
        """How many received alerts the level filter hides."""
        return len(self.received) - len(self.alerts)

    def add_alerts(self, new: list[dict[str, Any]]) -> None:
        """Prepend ``new`` (oldest first, as read from the file)."""
        if not new:
            return
        self.received[:0] = list(reversed(new))
        del self.received[MAX_ALERTS:]
        self._rebuild(sum(1 for a in new if self._keep(a)))

    def set_min_level(self, level: str) -> None:
        """Show alerts of ``level`` and above (``info`` shows all)."""
        if level not in LEVEL_RANK:
            raise ValueError(f"unknown level {level!r}; use one of {', '.join(LEVEL_RANK)}")
        self.min_level = level
        self.highlighted = None
        self._rebuild(0)

    def toggle_levels(self) -> str:
        """Every level ↔ warnings and above; returns the new minimum level."""
        self.set_min_level("info" if self.min_level != "info" else DEFAULT_MIN_LEVEL)
        return self.min_level

    def _keep(self, alert: dict[str, Any]) -> bool:
        return level_rank(alert) >= LEVEL_RANK[self.min_level]

    def _rebuild(self, added: int) -> None:
        shown = [a for a in self.received if self._keep(a)]
        if shown == self.alerts and not added:
            return
        self.alerts = shown
        keep = self.highlighted
        self.clear_options()
        self.add_options([Option(alert_text(a)) for a in self.alerts])
        if keep is not None and self.alerts:
            # The same alert stays highlighted after newer ones arrive above it.
            self.highlighted = min(keep + added, len(self.alerts) - 1)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if 0 <= event.option_index < len(self.alerts):
            self.post_message(self.JumpTo(self.alerts[event.option_index]))
