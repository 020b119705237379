"""What a valid configuration still needs from this host, said before anything runs.

``load_config`` judges the file; these judge the machine: an ``[alerts]
command`` whose program is not there (``check`` exits 2 with it), and a
state directory that cannot be made when a command is sent (an error naming
the file, the key's line and a fix, never a traceback). The state and log
directories are checked at ``check`` by ``config.uncreatable_dirs``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from eagle3tui.config import PipelineConfig, _Locator
from eagle3tui.errors import ConfigError


def _locator(config: PipelineConfig) -> _Locator:
    try:
        return _Locator(config.path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return _Locator("")


def alert_command_problems(config: PipelineConfig) -> list[ConfigError]:
    """The ``[alerts] command`` program, when it cannot be found or run."""
    command = config.alerts.command
    if not command:
        return []
    prog = command[0]
    if os.sep in prog:
        p = Path(prog) if os.path.isabs(prog) else config.path.parent / prog
        ok = p.is_file() and os.access(p, os.X_OK)
    else:
        ok = shutil.which(prog) is not None
    if ok:
        return []
    loc = _locator(config)
    return [ConfigError(
        f"alerts.command: executable {prog!r} not found", path=str(config.path),
        key="alerts.command", line=loc.key_line("alerts", "command") or loc.table_line("alerts"),
        fix="install it, give its full path, or remove [alerts] command "
            "(alerts still go to the alerts file and stdout)")]


def state_dir_error(config: PipelineConfig, e: OSError) -> ConfigError:
    """``e``, met making or writing the state directory, as the configuration's error."""
    loc = _locator(config)
    where = f"{e.filename}: " if e.filename else ""
    return ConfigError(
        f"the state directory {config.state_dir} cannot be used: {where}{e.strerror or e}",
        path=str(config.path), key="pipeline.state_dir",
        line=loc.key_line("pipeline", "state_dir") or loc.table_line("pipeline"),
        fix="point [pipeline] state_dir at a directory you can write (it is created if missing)")
