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
        # Starts and successes are in the stage list (the alerts panel shows
        # warnings and above by default).
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            screen = tmux.screen()
            if screen.count("succeeded  ") >= 2:
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
        # The log pane follows the stage that ran last until the user picks one, so the
        # selected stage is prepare or train (both print the same lines).
        paged = tmp_path / "paged"
        deadline = time.monotonic() + DEADLINE_S
        # cp creates the file before it writes it: wait for the content.
        copied = None
        while time.monotonic() < deadline and copied is None:
            copied = next((p for p in paged.glob("*.log") if "all done" in p.read_text()), None)
            time.sleep(0.1)
        assert copied is not None and copied.name in ("prepare.log", "train.log"), list(paged.iterdir())
        assert "working [bold]2[/]" in copied.read_text()
        tmux.wait_for("driver not running")
        tmux.keys("q")
        screen = tmux.wait_for("EXITED 0")
        # The command names the interpreter that ran `python -m eagle3tui`
        # (by name only when PATH finds that very file), never a bare `eagle3tui`.
        again = screen.split("Come back with: ", 1)[1].splitlines()[0].strip()
        assert again.endswith(" -m eagle3tui --config pipeline.toml"), again
        python = again.split(" -m ", 1)[0]
        assert python == sys.executable or shutil.which(python) == sys.executable, again
    finally:
        tmux.run("kill-server")
        cfg = load_config(tmp_path / "pipeline.toml")
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline and lock_held(cfg.state_dir):
            time.sleep(0.1)


def test_80x24_in_tmux_keeps_failed_running_help_and_quit_in_view(tmp_path: Path) -> None:
    """Nine stages on an 80x24 terminal: all in view (the failed 8th and running 9th too),
    the footer ends with ? Help and q Quit, and the quit message's command works."""
    parts = ['[pipeline]\nname = "narrow"\n']
    for i in range(1, 10):
        code = {8: "raise SystemExit(4)", 9: "import time; time.sleep(120)"}.get(i, "pass")
        parts.append(f'[[stage]]\nname = "stage{i}"\ncommand = ["{sys.executable}", "-c", "{code}"]\n'
                     'stop_grace = "2s"\n')
    (tmp_path / "pipeline.toml").write_text("\n".join(parts))
    tmux = Tmux(f"e3narrow-{os.getpid()}")
    env_cmd = (f"cd {tmp_path} && unset COLUMNS LINES && "
               f"NO_COLOR=1 {sys.executable} -m eagle3tui --config pipeline.toml;"
               " echo EXITED $?; sleep 60")
    tmux.run("new-session", "-d", "-s", "e3", "-x", "80", "-y", "24", "sleep 600")
    tmux.run("resize-window", "-t", "e3", "-x", "80", "-y", "24")
    tmux.run("respawn-pane", "-k", "-t", "e3", env_cmd)
    cfg = load_config(tmp_path / "pipeline.toml")
    try:
        tmux.wait_for("driver not running")
        tmux.keys("a")
        deadline = time.monotonic() + DEADLINE_S
        screen = ""
        while time.monotonic() < deadline:
            screen = tmux.screen()
            # A stage's row comes first; the log pane's title ("stage9 #1 · ...") later.
            rows: dict[str, str] = {}
            for ln in screen.splitlines():
                if ln.strip() and ln.split()[0].lstrip("⋮").startswith("stage"):
                    rows.setdefault(ln.split()[0].lstrip("⋮"), ln)
            if "failed" in rows.get("stage8", "") and "running" in rows.get("stage9", ""):
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"stage8 failed / stage9 running not both on screen:\n{screen}")
        lines = screen.splitlines()
        assert len(lines) <= 24 and all(len(ln) <= 80 for ln in lines)
        assert "stage1" in screen  # the top of the list too
        assert sorted(rows) == [f"stage{i}" for i in range(1, 10)], screen  # every stage
        assert "? Help" in lines[-1] and "q Quit" in lines[-1], lines[-1]
        assert " Tr " not in lines[1] and not lines[1].rstrip().endswith("Tr")
        tmux.keys("q")
        tmux.wait_for("EXITED 0")
        # A long interpreter path wraps at 80 columns: read the lines tmux wrapped, joined.
        joined = tmux.run("capture-pane", "-p", "-J", "-t", "e3")
        status_cmd = joined.split("Status without the UI: ", 1)[1].splitlines()[0].strip()
        assert status_cmd.endswith("-m eagle3tui --config pipeline.toml status"), status_cmd
        # The status command it prints runs as printed, from that directory, in
        # the pane's environment.
        run = subprocess.run(f"cd {tmp_path} && {status_cmd}", shell=True, capture_output=True,
                             text=True, timeout=60)
        assert "stage9" in run.stdout and "running" in run.stdout, run.stdout + run.stderr
    finally:
        tmux.run("kill-server")
        subprocess.run([sys.executable, "-m", "eagle3tui", "--config", str(cfg.path), "stop",
                        "stage9"], capture_output=True, timeout=60)
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline and lock_held(cfg.state_dir):
            time.sleep(0.1)
