"""Messages tell the user a command that works from where they are (issue 16, finding 1).

After ``make run`` the ``eagle3tui`` script sits in ``.venv/bin``, off PATH.
These tests start eagle3tui the ways a user does (the script by its path, and
``python -m eagle3tui``) with PATH not containing it, take the command the
closing message prints, and run that command for real.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

from eagle3tui.frontends.invocation import invocation

VENV_BIN = Path(sys.executable).parent
SCRIPT = VENV_BIN / "eagle3tui"  # the console script pip installed beside the interpreter


def _env() -> dict[str, str]:
    """The environment with the venv's bin dir removed from PATH (a fresh shell after make run)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join(d for d in env.get("PATH", "").split(os.pathsep)
                                  if d and Path(d).resolve() != VENV_BIN.resolve())
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(__file__).resolve().parents[1])] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def _failing_pipeline(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pipeline.toml").write_text(textwrap.dedent(f"""
        [pipeline]
        name = "invoke"
        [[stage]]
        name = "boom"
        command = ["{sys.executable}", "-c", "print('the log line'); raise SystemExit(3)"]
    """))


def _logs_command(out: str) -> list[str]:
    """The ``… logs NAME`` command from --watch's closing line, as argv for stage boom."""
    tail = out.split("Logs: `", 1)[1]
    cmd = tail.split("`", 1)[0]
    return shlex.split(cmd.replace("logs NAME", "logs boom"))


def _watch_then_follow_advice(argv0: list[str], root: Path) -> tuple[str, subprocess.CompletedProcess[str]]:
    env = _env()
    run = subprocess.run([*argv0, "--config", "pipeline.toml", "--watch", "--run-all"],
                         cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    argv = _logs_command(run.stdout)
    again = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=60)
    return run.stdout, again


def test_script_off_path_prints_its_path_and_that_command_works(tmp_path: Path) -> None:
    assert SCRIPT.is_file(), f"{SCRIPT} missing: run make (pip install -e .) first"
    root = tmp_path / "p"
    _failing_pipeline(root)
    out, again = _watch_then_follow_advice([str(SCRIPT)], root)
    assert f"`{SCRIPT} --config" in out  # not a bare `eagle3tui`, which is not on PATH
    assert "`eagle3tui " not in out
    assert again.returncode == 0, again.stderr
    assert "the log line" in again.stdout


def test_python_m_prints_the_interpreter_and_that_command_works(tmp_path: Path) -> None:
    root = tmp_path / "p"
    _failing_pipeline(root)
    out, again = _watch_then_follow_advice([sys.executable, "-m", "eagle3tui"], root)
    assert f"`{sys.executable} -m eagle3tui --config" in out
    assert again.returncode == 0, again.stderr
    assert "the log line" in again.stdout


def test_invocation_rules(tmp_path: Path) -> None:
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    script = bin_dir / "eagle3tui"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    python = bin_dir / "python3"
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # On PATH and the same file: the bare name.
    assert invocation(str(script), str(python), str(bin_dir), str(elsewhere)) == "eagle3tui"
    # Off PATH: relative below the working directory, absolute elsewhere.
    assert invocation(str(script), str(python), "/nonexistent", str(tmp_path)) == "venv/bin/eagle3tui"
    assert invocation(str(script), str(python), "/nonexistent", str(elsewhere)) == str(script)
    # Another eagle3tui first on PATH is not the one running: keep the path.
    other = tmp_path / "other"
    other.mkdir()
    (other / "eagle3tui").write_text("#!/bin/sh\n")
    (other / "eagle3tui").chmod(0o755)
    assert invocation(str(script), str(python), str(other), str(elsewhere)) == str(script)
    # python -m eagle3tui (argv[0] is the package's __main__.py) or an importer.
    main_py = str(Path(__file__).resolve().parents[1] / "eagle3tui" / "__main__.py")
    assert invocation(main_py, str(python), "/nonexistent", str(elsewhere)) == f"{python} -m eagle3tui"
    assert invocation(main_py, str(python), str(bin_dir), str(elsewhere)) == "python3 -m eagle3tui"
    spaced = tmp_path / "my venv"
    spaced.mkdir()
    (spaced / "python3").write_text("")
    assert invocation("pytest", str(spaced / "python3"), "/nonexistent", str(elsewhere)) == \
        shlex.quote(str(spaced / "python3")) + " -m eagle3tui"
