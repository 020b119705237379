"""User [[rule]] patterns run on RE2 (linear time); over-long lines are still classified."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from eagle3tui.config import ConfigError
from eagle3tui.logs.follower import LogWatcher
from eagle3tui.logs.monitor import StageLogMonitor
from eagle3tui.logs.offline import classify_log
from eagle3tui.logs.rules import build_ruleset, compile_user_pattern

PATHOLOGICAL = {
    "id": "runaway",
    "pattern": "(a+)+$",
    "kind": "warning",
    "explanation": "a pattern that backtracks exponentially in a backtracking engine",
}


def test_pathological_pattern_is_compiled_by_re2() -> None:
    rx = compile_user_pattern(PATHOLOGICAL["pattern"])
    assert type(rx).__module__.startswith("re2")
    t0 = time.perf_counter()
    assert rx.search("a" * 40 + "!") is None  # ~2**40 steps for Python's re
    assert rx.search("a" * 200_000 + "!") is None
    assert time.perf_counter() - t0 < 1.0
    rules = build_ruleset([PATHOLOGICAL])
    assert rules.classify("aaaa") is not None and rules.classify("aaaa!") is None


def test_oom_after_pathological_line_is_classified_live(tmp_path: Path) -> None:
    """A writer appends lines that would hang a backtracking engine, then an OOM."""
    log = tmp_path / "stage.log"
    log.write_bytes(b"")
    script = tmp_path / "writer.py"
    written = tmp_path / "oom-written-at"
    script.write_text(textwrap.dedent(f"""
        import time
        with open({str(log)!r}, "a") as out:
            for n in (25, 34, 40, 5000, 100000):
                print("a" * n + "!", file=out, flush=True)
            print("aaaa", file=out, flush=True)
            print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", file=out, flush=True)
            with open({str(written)!r} + ".tmp", "w") as f:
                f.write(repr(time.time()))
            import os
            os.replace({str(written)!r} + ".tmp", {str(written)!r})
            time.sleep(30)
        """))
    mon = StageLogMonitor(log, rules=build_ruleset([PATHOLOGICAL]))
    proc = subprocess.Popen([sys.executable, str(script)])
    events: list = []
    found_at = None
    try:
        with LogWatcher([log], poll_interval=0.05) as w:
            t0 = time.monotonic()
            while time.monotonic() - t0 < 20 and found_at is None:
                w.wait(0.1)
                events += mon.poll()
                if any(e.kind == "fatal" for e in events):
                    found_at = time.time()
    finally:
        proc.kill()
        proc.wait()
    fatal = [e for e in events if e.kind == "fatal"]
    assert fatal and fatal[0].rule == "oom" and fatal[0].line == 7
    assert [e.line for e in events if e.rule == "runaway"] == [6]  # the rule still works
    assert found_at is not None and found_at - float(written.read_text()) < 2.0  # issue 12: alerted within 2 s


def test_pattern_re2_cannot_run_is_rejected_at_check(pipeline) -> None:
    pipeline.write("""
        [[stage]]
        name = "train"
        command = ["true"]

        [[rule]]
        id = "repeated-word"
        kind = "warning"
        explanation = "a word said twice"
        pattern = '(\\w+) \\1'
        """)
    r = pipeline.cli("check")
    assert r.returncode == 2, r.stdout + r.stderr
    out = r.stdout + r.stderr
    assert f"{pipeline.config}:10" in out  # the pattern's own line
    assert "rule.pattern" in out and "RE2" in out and "backreference" in out


@pytest.mark.parametrize("pattern", ["foo(?=bar)", "(?<!x)y", "(a)\\1"])
def test_lookaround_and_backreference_are_rejected(pattern: str) -> None:
    with pytest.raises(ConfigError) as e:
        build_ruleset([{**PATHOLOGICAL, "pattern": pattern}])
    assert e.value.fix and "lookahead" in e.value.fix


def test_anchored_user_rule_matches_mid_chunk(tmp_path: Path) -> None:
    """Chunk scans search many lines at once: ^ and $ still mean a line's ends."""
    log = tmp_path / "x.log"
    log.write_text("first\nloss went nan\nlast\n")
    rule = {"id": "nan-end", "pattern": "nan$", "kind": "fatal", "explanation": "loss is NaN"}
    events, _ = classify_log(log, rules=build_ruleset([rule]))
    assert [(e.line, e.rule) for e in events if e.kind == "fatal"] == [(2, "nan-end")]


@pytest.mark.parametrize("size", [70_000, 500_000])
def test_fatal_line_longer_than_64k_is_classified(tmp_path: Path, size: int) -> None:
    head = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. keys: "
    log = tmp_path / "long.log"
    log.write_text("step 1\n" + head + "x" * (size - len(head)) + "\n")
    events, _ = classify_log(log)
    fatal = [e for e in events if e.kind == "fatal"]
    assert fatal and fatal[0].rule == "oom" and fatal[0].line == 2
