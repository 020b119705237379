"""What a valid configuration still needs from this host, checked before anything runs.

``load_config`` judges the file; these checks judge the machine it runs on:
a stage log or a state directory whose directory cannot be created (a path
through a regular file, a read-only or foreign directory), and an
``[alerts] command`` whose program is not there. Each is a ConfigError with
the file, the key's line and a fix, so ``check`` and ``start`` exit 2 with
it instead of a driver failing later where nobody looks.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from eagle3tui.config import PipelineConfig, _Locator
from eagle3tui.errors import ConfigError


def unwritable_reason(target: Path, *, is_dir: bool) -> str | None:
    """Why ``target`` (a directory, or a file) cannot be created or written; None if it can.

    Creates nothing: walks up to the nearest path that exists and asks the
    kernel (``access(2)``, which also knows a read-only filesystem).
    """
    if os.path.lexists(target):
        if is_dir and not target.is_dir():
            return f"{target} exists and is not a directory"
        if not os.access(target, os.W_OK | (os.X_OK if is_dir else 0)):
            return f"{target} is not writable by uid {os.geteuid()}"
        return None
    above = target.parent
    while not os.path.lexists(above) and above != above.parent:
        above = above.parent
    if not above.is_dir():
        return f"cannot create {target}: {above} is not a directory"
    if not os.access(above, os.W_OK | os.X_OK):
        return f"cannot create {target}: {above} is not writable by uid {os.geteuid()}"
    return None


def host_problems(config: PipelineConfig, names: list[str] | None = None) -> list[ConfigError]:
    """The state directory, the stages' logs (all, or ``names``) and the alert command."""
    try:
        loc = _Locator(config.path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        loc = _Locator("")
    path = str(config.path)
    errors = []
    why = unwritable_reason(config.state_dir, is_dir=True)
    if why:
        errors.append(ConfigError(
            f"state_dir: {why}", path=path, key="pipeline.state_dir",
            line=loc.key_line("pipeline", "state_dir") or loc.table_line("pipeline"),
            fix="point [pipeline] state_dir at a directory you can write (it is created if missing)"))
    for i, s in enumerate(config.stages):
        if names is not None and s.name not in names:
            continue
        if errors and Path(s.log).is_relative_to(config.state_dir):
            continue  # its default place, in the state directory already reported
        why = unwritable_reason(Path(s.log), is_dir=False)
        if why:
            errors.append(ConfigError(
                f"stage {s.name!r}: log {s.log}: {why}", path=path, key=f"stage[{s.name}].log",
                line=loc.key_line("stage", "log", i) or s.line,
                fix=f"point log at a file in a directory you can write, e.g. "
                    f"log = \"{config.state_dir / 'logs' / (s.name + '.log')}\""))
    command = config.alerts.command
    if command:
        prog = command[0]
        if os.sep in prog:
            p = Path(prog) if os.path.isabs(prog) else config.path.parent / prog
            ok = p.is_file() and os.access(p, os.X_OK)
        else:
            ok = shutil.which(prog) is not None
        if not ok:
            errors.append(ConfigError(
                f"alerts.command: executable {prog!r} not found", path=path, key="alerts.command",
                line=loc.key_line("alerts", "command") or loc.table_line("alerts"),
                fix="install it, give its full path, or remove [alerts] command "
                    "(alerts still go to the alerts file and stdout)"))
    return errors
