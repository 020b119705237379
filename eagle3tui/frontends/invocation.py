"""The words that run eagle3tui again from where the user is.

After ``make run`` the ``eagle3tui`` script lives in ``.venv/bin``, which is
not on PATH, so a message saying "run ``eagle3tui …``" would answer
``command not found``. Every message that tells the user what to type next
takes its program words from :func:`invocation` instead.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys


def _shortest_path(path: str, cwd: str) -> str:
    """``path`` relative to ``cwd`` when it lies below it (``.venv/bin/x``), else absolute."""
    absolute = os.path.abspath(path)
    try:
        rel = os.path.relpath(absolute, cwd)
    except ValueError:  # another drive (Windows): keep it absolute
        return absolute
    if rel.startswith(os.pardir):
        return absolute
    # A bare name would be looked up on PATH: keep a slash in it.
    return rel if os.sep in rel else os.path.join(os.curdir, rel)


def invocation(argv0: str | None = None, executable: str | None = None,
               path_env: str | None = None, cwd: str | None = None) -> str:
    """Shell words that start eagle3tui the way this process was started.

    * ``eagle3tui`` when that name on PATH is the script that is running;
    * the script's path (relative to ``cwd`` when below it) when it is not on PATH;
    * ``PYTHON -m eagle3tui`` with the interpreter in use otherwise (``python -m
      eagle3tui``, or a caller that imported the CLI).

    The arguments default to this process's ``sys.argv[0]``, ``sys.executable``,
    ``$PATH`` and working directory; tests pass their own.
    """
    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = executable or sys.executable or "python3"
    path_env = os.environ.get("PATH", "") if path_env is None else path_env
    cwd = cwd or os.getcwd()
    if os.path.basename(argv0) == "eagle3tui":
        script = argv0 if os.sep in argv0 else shutil.which(argv0, path=path_env)
        if script:
            on_path = shutil.which("eagle3tui", path=path_env)
            if on_path and os.path.realpath(on_path) == os.path.realpath(script):
                return "eagle3tui"
            return shlex.quote(_shortest_path(script, os.path.abspath(cwd)))
    # The interpreter by its bare name only when PATH finds this very file.
    name = os.path.basename(executable)
    found = shutil.which(name, path=path_env)
    python = name if found and os.path.abspath(found) == os.path.abspath(executable) \
        else _shortest_path(executable, os.path.abspath(cwd))
    return f"{shlex.quote(python)} -m eagle3tui"

