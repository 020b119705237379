"""``pipeline`` is a separate product: it must never import ``eagle3tui`` (issue 15).

Two checks that can fail independently: every ``import`` statement in the
package's source, and the modules actually loaded when every pipeline module
is imported in a fresh interpreter.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PIPELINE = REPO / "pipeline"


def _imported_names(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_no_pipeline_source_imports_eagle3tui() -> None:
    offenders = [
        f"{p.relative_to(REPO)}: imports {name}"
        for p in sorted(PIPELINE.rglob("*.py"))
        for name in _imported_names(p)
        if name == "eagle3tui" or name.startswith("eagle3tui.")
    ]
    assert offenders == []


def test_importing_every_pipeline_module_loads_no_eagle3tui() -> None:
    modules = sorted(f"pipeline.{p.stem}" for p in PIPELINE.glob("*.py") if p.stem != "__init__")
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}:\n"
        "    importlib.import_module(m)\n"
        "print(sorted(n for n in sys.modules if n == 'eagle3tui' or n.startswith('eagle3tui.')))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
