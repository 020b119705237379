"""Alerts: the record (model), the crash-safe file (log), the fan-out (hub), the command (notifier)."""

from eagle3tui.alerts.hub import AlertHub, AlertSink, build_hub, stdout_sink
from eagle3tui.alerts.log import AlertLog, JsonlTail, read_alerts
from eagle3tui.alerts.model import LEVEL_ORDER, LEVELS, Alert, level_at_least

__all__ = ["LEVELS", "LEVEL_ORDER", "Alert", "AlertHub", "AlertLog", "AlertSink", "build_hub", "level_at_least",
           "JsonlTail", "read_alerts", "stdout_sink"]
