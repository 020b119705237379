"""The real app in a real terminal: tmux runs ``eagle3tui``, we send keys and read the screen.

Skipped only when tmux is missing (``.ci/run`` installs it). The tmux server
runs on a private socket so it never touches a user's sessions.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from eagle3tui.config import load_config
from eagle3tui.supervisor.lock import lock_held

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

DEADLINE_S = 60.0


class Tmux:
    """A private tmux server with one session."""

    def __init__(self, socket: str) -> None:
        self.socket = socket

    def run(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True,
                              text=True, timeout=30).stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "e3")

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "e3", *keys)

    def wait_for(self, text: str, timeout: float = DEADLINE_S) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} did not appear within {timeout:.0f}s; screen:\n{screen}")


def test_real_app_in_tmux(tmp_path: Path) -> None:
    (tmp_path / "work.py").write_text(textwrap.dedent("""
        import sys
        for i in range(3):
            print(f"working [bold]{i}[/]", flush=True)
        print("all done", flush=True)
    """))
    (tmp_path / "pipeline.toml").write_text(textwrap.dedent(f"""
        [pipeline]
        name = "tmuxdemo"
        [[stage]]
        name = "prepare"
        command = ["{sys.executable}", "work.py"]
        [[stage]]
        name = "train"
        command = ["{sys.executable}", "work.py"]
        depends_on = ["prepare"]
    """))
    tmux = Tmux(f"e3test-{os.getpid()}")
    # COLUMNS/LINES from the test's environment would override the pane's size.
    (tmp_path / "paged").mkdir()
    env_cmd = (f"cd {tmp_path} && unset COLUMNS LINES && export PAGER='cp -t {tmp_path}/paged' && "
               f"NO_COLOR=1 {sys.executable} -m eagle3tui --config pipeline.toml;"
               " echo EXITED $?; sleep 60")
    # Size the window first, then start the app in it, so it starts at 120x40
    # whatever tmux's default size for detached sessions is.
    tmux.run("new-session", "-d", "-s", "e3", "-x", "120", "-y", "40", "sleep 600")
    tmux.run("resize-window", "-t", "e3", "-x", "120", "-y", "40")
    tmux.run("respawn-pane", "-k", "-t", "e3", env_cmd)
    try:
        screen = tmux.wait_for("driver not running")
        assert len(screen.splitlines()[0]) <= 120
        assert "GPUs" in screen  # the wide layout: all columns fit in 120
        assert "prepare" in screen and "train" in screen and "pending" in screen
        tmux.keys("a")  # run all
        tmux.wait_for("stage-succeeded: succeeded")
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            screen = tmux.screen()
            if screen.count("succeeded  ") >= 2 and "train#1 stage-succeeded" in screen:
                break
            time.sleep(0.1)
        rows = [ln for ln in screen.splitlines()
                if ln.split()[:1] in (["prepare"], ["train"]) and "#" not in ln]
        assert len(rows) == 2 and all("succeeded" in r for r in rows), screen
        # The selected stage's log, markup-like text shown literally.
        assert "working [bold]0[/]" in screen
        tmux.keys("?")
        tmux.wait_for("eagle3tui keys")
        tmux.keys("Escape")
        deadline = time.monotonic() + DEADLINE_S
        while "eagle3tui keys" in tmux.screen() and time.monotonic() < deadline:
            time.sleep(0.1)
        # o opens the selected stage's log in $PAGER (here cp, which copies it
        # where we can look), the app suspended meanwhile and back afterwards.
        tmux.keys("o")
        copied = tmp_path / "paged" / "prepare.log"
        deadline = time.monotonic() + DEADLINE_S
        # cp creates the file before it writes it: wait for the content.
        while time.monotonic() < deadline and not (
                copied.exists() and "all done" in copied.read_text()):
            time.sleep(0.1)
        assert "working [bold]2[/]" in copied.read_text()
        tmux.wait_for("driver not running")
        tmux.keys("q")
        screen = tmux.wait_for("EXITED 0")
        # The command works from the pane's shell: the interpreter that ran
        # `python -m eagle3tui`, not a bare `eagle3tui` that is not on PATH.
        assert f"Come back with: {sys.executable} -m eagle3tui --config pipeline.toml" in screen
    finally:
        tmux.run("kill-server")
        cfg = load_config(tmp_path / "pipeline.toml")
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline and lock_held(cfg.state_dir):
            time.sleep(0.1)
