"""A finished pipeline whose settings change is out of date, and says what changed.

Real runs of the CLI (``--watch --run-all``, ``status``) on a small pipeline
in a temp dir: after a completed run, ``--set`` of a variable a stage uses
marks that stage and its dependents ``changed`` (with what changed), run-all
reruns exactly those, and a run-all with nothing to do says so and how to
force a rerun.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

from eagle3tui.config import load_config
from eagle3tui.supervisor.fingerprint import fingerprint, what_changed

STEP = "import sys\nopen(sys.argv[1], 'a').write(' '.join(sys.argv[2:]) + '\\n')\nprint('done', *sys.argv[1:])\n"


def _write(pipeline, extra_c: str = "") -> None:
    (pipeline.root / "step.py").write_text(STEP)
    pipeline.write(f"""
        [pipeline]
        name = "chg"

        [vars]
        n = "1"
        m = "x"

        [[stage]]
        name = "a"
        command = ["{sys.executable}", "step.py", "a.out", "{{n}}"]
        outputs = ["a.out"]

        [[stage]]
        name = "b"
        depends_on = ["a"]
        command = ["{sys.executable}", "step.py", "b.out"]

        [[stage]]
        name = "c"
        command = ["{sys.executable}", "step.py", "c.out", "{{m}}"{extra_c}]
    """)


def _attempts(pipeline) -> dict[str, list[int]]:
    return {n: [r["attempt"] for r in pipeline.records(n)] for n in ("a", "b", "c")}


def _by_name(doc: dict) -> dict[str, dict]:
    return {s["name"]: s for s in doc["stages"]}


def test_set_marks_the_stage_and_its_dependents_changed_and_run_all_reruns_exactly_those(pipeline) -> None:
    _write(pipeline)
    first = pipeline.cli("--watch", "--run-all", timeout=120)
    assert first.returncode == 0, first.stdout + first.stderr
    assert _attempts(pipeline) == {"a": [1], "b": [1], "c": [1]}
    # The fingerprint is in the record that says the attempt succeeded.
    rec = pipeline.records("a")[0]
    assert rec["exit_code"] == 0 and rec["extra"]["fingerprint"]["vars"] == {"n": "1"}

    # Same settings: nothing is changed.
    same = _by_name(pipeline.status())
    assert all(s["changed"] == "" and s["state"] == "succeeded" for s in same.values()), same

    # --set n=2: a uses n, b depends on a; c uses neither.
    doc = json.loads(pipeline.cli("--set", "n=2", "status", "--json").stdout)
    st = _by_name(doc)
    assert st["a"]["changed"] == "n 1 → 2", st["a"]
    assert st["b"]["changed"] == "a changed: n 1 → 2", st["b"]
    assert st["c"]["changed"] == "", st["c"]
    assert "run all to rerun it" in st["a"]["reason"]
    text = pipeline.cli("--set", "n=2", "status").stdout
    row_a = next(ln for ln in text.splitlines() if ln.startswith("a "))
    row_c = next(ln for ln in text.splitlines() if ln.startswith("c "))
    assert "changed" in row_a and "n 1 → 2" in row_a, text
    assert "changed" not in row_c and "succeeded" in row_c, text

    rerun = pipeline.cli("--set", "n=2", "--watch", "--run-all", timeout=120)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "a: changed (n 1 → 2); rerun queued" in rerun.stdout, rerun.stdout
    assert _attempts(pipeline) == {"a": [1, 2], "b": [1, 2], "c": [1]}
    assert (pipeline.root / "a.out").read_text().splitlines() == ["1", "2"]
    after = _by_name(json.loads(pipeline.cli("--set", "n=2", "status", "--json").stdout))
    assert all(s["changed"] == "" and not s["stale"] for s in after.values()), after

    # Nothing to do: it says so, and how to run a stage again anyway.
    idle = pipeline.cli("--set", "n=2", "--watch", "--run-all", timeout=120)
    assert idle.returncode == 0, idle.stdout + idle.stderr
    assert "nothing to do" in idle.stdout and "restart NAME" in idle.stdout, idle.stdout
    assert "start --all: \n" not in idle.stdout and not idle.stdout.rstrip().endswith("start --all:")
    assert _attempts(pipeline) == {"a": [1, 2], "b": [1, 2], "c": [1]}


def test_an_edited_command_marks_the_stage_changed(pipeline) -> None:
    _write(pipeline)
    assert pipeline.cli("--watch", "--run-all", timeout=120).returncode == 0
    _write(pipeline, extra_c=', "--more"')
    st = _by_name(pipeline.status())
    assert st["c"]["changed"] == "command changed", st["c"]
    assert st["a"]["changed"] == "" and st["b"]["changed"] == ""


def test_what_changed_names_variables_then_parts(tmp_path: Path) -> None:
    def stage(n: str, env: str = "") -> object:
        (tmp_path / "pipeline.toml").write_text(textwrap.dedent(f"""
            [pipeline]
            name = "fp"
            [vars]
            n = "{n}"
            [[stage]]
            name = "s"
            command = ["/bin/true", "--n", "{{n}}"]
            {env}
        """))
        return load_config(tmp_path / "pipeline.toml").stage("s")

    base = fingerprint(stage("1"))
    assert what_changed(base, stage("1")) == ""
    assert what_changed(base, stage("2")) == "n 1 → 2"
    assert what_changed(base, stage("1", 'env = { X = "1" }')) == "env changed"
    # A record from before fingerprints were kept is never called changed.
    assert what_changed(None, stage("2")) == ""
    assert what_changed({}, stage("2")) == ""

