"""The core never imports Textual: a new front end must not need it.

Imports every core module in a fresh interpreter and checks that neither
``textual`` nor the TUI package was loaded along the way.
"""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import eagle3tui


def core_modules() -> list[str]:
    mods = []
    for info in pkgutil.walk_packages(eagle3tui.__path__, "eagle3tui."):
        if info.name.startswith("eagle3tui.frontends.tui") or info.name == "eagle3tui.__main__":
            continue
        mods.append(info.name)
    return mods


def test_core_modules_do_not_import_textual():
    mods = core_modules()
    assert "eagle3tui.supervisor.driver" in mods and "eagle3tui.logs.monitor" in mods
    code = (
        "import importlib, sys\n"
        f"for m in {mods!r}:\n"
        "    importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.')"
        " or m.startswith('eagle3tui.frontends.tui'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"core imports Textual: {out.stdout.strip()}"


def test_cli_status_does_not_import_textual(tmp_path):
    (tmp_path / "pipeline.toml").write_text('[[stage]]\nname = "a"\ncommand = ["true"]\n')
    code = (
        "import sys\n"
        "from eagle3tui.frontends.cli import main\n"
        f"rc = main(['--config', {str(tmp_path / 'pipeline.toml')!r}, 'status'])\n"
        "print('TEXTUAL' if any(m.startswith('textual') for m in sys.modules) else 'CLEAN')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().endswith("CLEAN"), out.stdout + out.stderr


def test_architecture_contracts_hold() -> None:
    """The import-linter contracts of pyproject.toml (layers, the protocol, pipeline/)."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    exe = Path(sys.executable).parent / "lint-imports"
    out = subprocess.run([str(exe)], cwd=root, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout
