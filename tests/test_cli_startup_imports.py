"""The CLI commands a user types often import only what they need (issue 34).

Each command runs in a fresh interpreter; what is checked is which modules it
imported (the classifier's are most of the start-up), never how long it took.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLASSIFIER = ("eagle3tui.logs.monitor", "eagle3tui.logs.judge", "eagle3tui.logs.anatomy", "eagle3tui.logs.rules")
PROBE = """
import json, sys
from eagle3tui.frontends.cli import main
try:
    rc = main(sys.argv[1:])
except SystemExit as e:
    rc = e.code
sys.stdout.flush()
print("\\nMODULES " + json.dumps(sorted(m for m in sys.modules if m.startswith("eagle3tui"))), file=sys.stderr)
"""


def _modules(cwd: Path, *args: str) -> tuple[set[str], str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=cwd, env=env, capture_output=True,
                         text=True, timeout=60, check=False)
    line = [x for x in out.stderr.splitlines() if x.startswith("MODULES ")][-1]
    return set(json.loads(line[len("MODULES "):])), out.stdout


def test_help_imports_no_classifier(tmp_path: Path) -> None:
    mods, out = _modules(tmp_path, "--help")
    assert "classify" in out and "gpus" in out
    assert not mods.intersection(CLASSIFIER), sorted(mods.intersection(CLASSIFIER))


def test_status_imports_no_classifier(tmp_path: Path) -> None:
    (tmp_path / "pipeline.toml").write_text('[[stage]]\nname = "a"\ncommand = ["true"]\n')
    mods, out = _modules(tmp_path, "status")
    assert "pending" in out
    assert not mods.intersection(CLASSIFIER), sorted(mods.intersection(CLASSIFIER))


def test_classify_still_has_its_arguments(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("hello\n")
    mods, out = _modules(tmp_path, "classify", str(log))
    assert "1 lines" in out or "lines" in out
    assert "eagle3tui.logs.monitor" in mods
    mods, out = _modules(tmp_path, "classify", "--help")
    assert "--json" in out
