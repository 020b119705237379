"""The error line: what went wrong, kept on screen until it is put right.

A toast vanishes after a few seconds; a refused command, a configuration that
``check`` rejects, or state that cannot be read stays here (one row per
source, the newest first) and is counted in the title until the condition
goes: a later command that succeeds, a configuration that checks clean.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from eagle3tui.config import PipelineConfig, missing_executables, uncreatable_dirs
from eagle3tui.textsafe import printable

MAX_ROWS = 3


def config_problems(config: PipelineConfig) -> tuple[list[str], dict[str, str]]:
    """What ``eagle3tui check`` rejects in ``config``, and a short note per stage
    whose program is missing (for its row in the stage list).

    Runs the same checks as ``check`` (missing executables, directories that
    cannot be made, an ``[alerts] command`` that cannot run); it may make the
    state and log directories, as ``check`` does.
    """
    from eagle3tui.preflight import alert_command_problems

    errors = [str(e) for e in uncreatable_dirs(config) + alert_command_problems(config)]
    notes: dict[str, str] = {}
    for stage in config.stages:
        missing = missing_executables(config, [stage.name])
        errors += [str(e) for e in missing]
        if missing and stage.command:
            notes[stage.name] = f"cannot start: {stage.command[0]!r} not found"
    return errors, notes


class ErrorLine(Static):
    """Persistent errors by source (``config``, ``command``, ``state``...); hidden when none."""

    DEFAULT_CSS = """
    ErrorLine { display: none; height: auto; max-height: 3; background: $error-darken-2;
                color: $text; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    ErrorLine.visible { display: block; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Text(""), id=id)
        self.errors: dict[str, str] = {}  # source -> message, newest last

    def put(self, source: str, message: str) -> None:
        """Show ``message`` for ``source`` (replacing its last one)."""
        self.errors.pop(source, None)
        self.errors[source] = message
        self._draw()

    def clear(self, source: str) -> None:
        """``source``'s error is put right."""
        if self.errors.pop(source, None) is not None:
            self._draw()

    @property
    def plain(self) -> str:
        """The rows as drawn, for tests and the title."""
        return self._text().plain

    def _text(self) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis")
        items = list(reversed(self.errors.items()))
        for i, (source, message) in enumerate(items[:MAX_ROWS]):
            lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
            if i:
                t.append("\n")
            t.append(f"error ({source}): ", style="bold")
            t.append(printable(" · ".join(lines)))
        return t

    def _draw(self) -> None:
        self.update(self._text())
        self.set_class(bool(self.errors), "visible")
