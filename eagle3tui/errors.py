"""Errors a user sees: each says what happened, where, and what to do."""

from __future__ import annotations


class ConfigError(Exception):
    """An invalid pipeline.toml (or rules file).

    ``where`` names the file, and the key (and line) when known; ``fix`` says
    what to change. ``str()`` gives the whole message on one or two lines.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        key: str | None = None,
        line: int | None = None,
        fix: str | None = None,
    ) -> None:
        self.message = message
        self.path = path
        self.key = key
        self.line = line
        self.fix = fix
        super().__init__(self.render())

    def render(self) -> str:
        where = []
        if self.path:
            where.append(str(self.path) + (f":{self.line}" if self.line else ""))
        if self.key:
            where.append(f"key '{self.key}'")
        head = ": ".join([", ".join(where), self.message]) if where else self.message
        return head + (f"\n  fix: {self.fix}" if self.fix else "")


class ConfigErrors(ConfigError):
    """Several configuration problems found in one pass, reported together."""

    def __init__(self, errors: list[ConfigError]) -> None:
        self.errors = errors
        Exception.__init__(self, self.render())

    def render(self) -> str:  # type: ignore[override]
        return "\n".join(e.render() for e in self.errors)
