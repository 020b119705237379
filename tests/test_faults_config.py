"""Issue 13, findings 10, 12 and 13: configuration faults.

Edits and --set values reach a live driver (it reloads and says so); every
validation gap is refused by `check` and `start` with exit 2, file:line and
a fix; a "lost" stage keeps its reason and hint.
"""

from __future__ import annotations

import json
import os
import signal

import pytest

from conftest import wait_for

BASE = """
[[stage]]
name = "a"
command = ["true"]
"""


@pytest.mark.parametrize("snippet, key_line, needle", [
    ('[pipeline]\nstop_grace = nan\n' + BASE, 2, "finite"),
    ('[pipeline]\nstop_grace = inf\n' + BASE, 2, "finite"),
    ('[pipeline]\ndrift_threshold = nan\n' + BASE, 2, "drift_threshold"),
    (BASE + 'estimate = "inf"\n', 5, "finite"),
    (BASE.replace('["true"]', '["echo", "a\\u0000b"]'), 4, "NUL"),
    (BASE + 'env = { "A=B" = "x" }\n', 5, "'='"),
    (BASE + 'env = { A = "x\\u0000y" }\n', 5, "NUL"),
    (BASE + 'log = "logdir"\n', 5, "is a directory"),
    ('[pipeline]\nstate_dir = "afile"\n' + BASE, 2, "not a directory"),
    ('[alerts]\nrate_limit = 0\n' + BASE, 2, "rate_limit"),
    ('[alerts]\ndedup_window = "soon"\n' + BASE, 2, "dedup_window"),
])
def test_validation_gaps_exit_2_with_line_and_fix(pipeline, snippet, key_line, needle):
    (pipeline.root / "logdir").mkdir()
    (pipeline.root / "afile").write_text("")
    pipeline.config.write_text(snippet)
    for cmd in (["check"], ["start", "a"]):
        r = pipeline.cli(*cmd)
        assert r.returncode == 2, (cmd, r.stdout, r.stderr)
        assert f"{pipeline.config}:{key_line}" in r.stderr, r.stderr
        assert needle in r.stderr and "fix:" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
    assert not (pipeline.state_dir / "runs").exists()


def test_non_utf8_config_names_line_and_fix(pipeline):
    pipeline.config.write_bytes(b'[[stage]]\nname = "a"\ncommand = ["echo", "caf\xe9"]\n')
    r = pipeline.cli("check")
    assert r.returncode == 2 and f"{pipeline.config}:3" in r.stderr and "UTF-8" in r.stderr \
        and "fix:" in r.stderr, r.stderr


def _gate_pipeline(pipeline, b_command: str) -> None:
    gate = pipeline.root / "gate"
    pipeline.write(f"""
        [vars]
        word = "old"

        [[stage]]
        name = "a"
        command = ["sh", "-c", "while [ ! -e {gate} ]; do sleep 0.05; done"]

        [[stage]]
        name = "b"
        command = {b_command}
    """)


def test_config_edit_reaches_live_driver(pipeline):
    out = pipeline.root / "b.out"
    _gate_pipeline(pipeline, f'["sh", "-c", "echo before > {out}"]')
    pipeline.cli("start", "a", check=True)
    wait_for(lambda: pipeline.stage("a")["state"] == "running", what="a running")
    driver = pipeline.driver_pid()
    _gate_pipeline(pipeline, f'["sh", "-c", "echo after > {out}"]')
    r = pipeline.cli("start", "b", "--wait", "--timeout", "30")
    assert r.returncode == 0, r.stdout + r.stderr
    assert pipeline.driver_pid() == driver
    assert "configuration reloaded" in r.stdout
    assert out.read_text() == "after\n"
    assert "config-reloaded" in [a["kind"] for a in pipeline.alerts()]
    (pipeline.root / "gate").touch()


def test_set_values_reach_live_driver(pipeline):
    out = pipeline.root / "b.out"
    _gate_pipeline(pipeline, f'["sh", "-c", "echo {{word}} > {out}"]')
    pipeline.cli("start", "a", check=True)
    wait_for(lambda: pipeline.stage("a")["state"] == "running", what="a running")
    r = pipeline.cli("--set", "word=new", "start", "b", "--wait", "--timeout", "30")
    if r.returncode == 2 and "--set" in r.stderr:  # global flag placed after the command
        r = pipeline.cli("start", "b", "--set", "word=new", "--wait", "--timeout", "30")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "--set word=new" in r.stdout
    assert out.read_text() == "new\n"
    (pipeline.root / "gate").touch()


def test_invalid_edit_is_refused_not_ignored(pipeline):
    _gate_pipeline(pipeline, '["true"]')
    pipeline.cli("start", "a", check=True)
    wait_for(lambda: pipeline.stage("a")["state"] == "running", what="a running")
    text = pipeline.config.read_text()
    pipeline.config.write_text(text + '\n[pipeline]\nstop_grace = nan\n')
    wait_for(lambda: "config-not-reloaded" in [a["kind"] for a in pipeline.alerts()],
             what="the driver says it kept the old configuration")
    (pipeline.root / "gate").touch()


def test_lost_stage_keeps_reason_and_hint(pipeline):
    pipeline.write("""
        [[stage]]
        name = "s"
        command = ["sleep", "300"]
    """)
    pipeline.cli("start", "s", check=True)
    pipeline.running("s")
    rec = pipeline.records("s")[0]
    os.kill(rec["wrapper_pid"], signal.SIGKILL)  # the wrapper dies: nobody records the exit
    os.killpg(rec["pgid"], signal.SIGKILL)
    wait_for(lambda: pipeline.records("s")[0].get("extra", {}).get("finalized"), timeout=30,
             what="the driver settled the lost attempt")
    st = pipeline.stage("s")
    assert st["state"] == "failed"
    assert "lost" in st["reason"] and "exit None" not in st["reason"], st
    assert "wrapper" in st["reason"] + st["hint"]
    json.dumps(st)
