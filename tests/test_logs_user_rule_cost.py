"""The work a user [[rule]] does per log line is bounded: by its RE2 program's
size (refused at ``check``) and by the text it meets (a long line's head and tail)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for

from eagle3tui.config import ConfigError
from eagle3tui.logs.monitor import StageLogMonitor
from eagle3tui.logs.offline import classify_log
from eagle3tui.logs.rules import (
    USER_PROGRAM_LIMIT,
    USER_WINDOW,
    PatternTooCostly,
    Rule,
    RuleSet,
    build_ruleset,
    compile_user_pattern,
    load_shipped_rules,
)

# RE2 accepts it; its program has ~12,000 instructions, and RE2 took 7 s on one 64 KiB line.
COSTLY = r"(?i)(?:\w+ ){2,1000}boom"
# The costliest shape under the limit: the same repetition, bounded lower.
ALLOWED = r"(?:\w+\s){1,200}fatal"


def test_costly_pattern_is_refused_at_check_with_a_fix(pipeline) -> None:
    pipeline.write(f"""
        [[stage]]
        name = "train"
        command = ["true"]

        [[rule]]
        id = "long-sentence"
        kind = "warning"
        explanation = "a long sentence that ends in boom"
        pattern = '''{COSTLY}'''
        """)
    r = pipeline.cli("check")
    assert r.returncode == 2, r.stdout + r.stderr
    out = r.stdout + r.stderr
    assert f"{pipeline.config}:10" in out  # the pattern's own line
    assert "rule.pattern" in out and "rule 'long-sentence'" in out and "instructions" in out
    assert "fix:" in out and "(?:\\w+ )+" in out


def test_program_size_limit() -> None:
    with pytest.raises(PatternTooCostly):
        compile_user_pattern(COSTLY)
    assert compile_user_pattern(ALLOWED).programsize <= USER_PROGRAM_LIMIT
    with pytest.raises(ConfigError) as e:
        build_ruleset([{"id": "x", "pattern": COSTLY, "kind": "fatal", "explanation": "x"}])
    assert e.value.key == "rule.pattern" and e.value.fix


def test_ordinary_patterns_fit_the_limit() -> None:
    """Most shipped patterns, compiled as a user's would be, fit the limit (those that do not
    are long alternations of literals: a user splits one into several rules)."""
    sizes = []
    for r in load_shipped_rules():
        try:
            sizes.append(compile_user_pattern(r.pattern, limit=None).programsize)
        except ValueError:
            continue  # a lookaround: shipped rules may use Python's re
    assert sum(s <= USER_PROGRAM_LIMIT for s in sizes) >= 0.8 * len(sizes)


class _Recording:
    """A rule's RE2 regex that records the length of every text it meets."""

    def __init__(self, rx: Any) -> None:
        self.rx = rx
        self.lengths: list[int] = []

    def search(self, text: str, *args: int) -> Any:
        self.lengths.append(len(text))
        return self.rx.search(text, *args)


def test_user_pattern_meets_a_bounded_window_of_each_line(tmp_path: Path) -> None:
    """Through the live monitor: 64 KiB lines the rule's keyword routes to it, then another
    stage-killing line; the rule meets at most USER_WINDOW characters of each line, and the
    fatal line after them is still found, in order."""
    rec = _Recording(compile_user_pattern(ALLOWED))
    rule = Rule(id="sentence", pattern=ALLOWED, kind="warning", explanation="x",
                keywords=("fatal",), source="user", regex=rec)
    rules = RuleSet.from_specs(load_shipped_rules(), [rule])
    log = tmp_path / "stage.log"
    log.write_bytes(b"")
    mon = StageLogMonitor(log, rules=rules)
    mon.poll(now=1000.0)
    line = ("INFO fatal word " * 5000)[: 64 * 1024]
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    with open(log, "a") as f:
        f.write((line + "\n") * 4 + oom + "\n")
    events = mon.poll(now=1001.0)
    assert rec.lengths and max(rec.lengths) <= USER_WINDOW
    fatal = [e for e in events if e.kind == "fatal"]
    assert fatal and fatal[0].rule == "oom" and fatal[0].line == 5


@pytest.mark.parametrize("pattern", ["MARK-[0-9]+", "(?i)mark-[0-9]+"])  # keyed, and unkeyed (block scan)
def test_long_line_matches_in_head_and_tail_only(tmp_path: Path, pattern: str) -> None:
    rule = {"id": "mark", "pattern": pattern, "kind": "fatal", "explanation": "a mark"}
    rules = build_ruleset([rule])
    pad = "x" * USER_WINDOW  # lines under the follower's own cut (64 KiB)
    log = tmp_path / "long.log"
    log.write_text(
        "step 1\n"
        f"MARK-1 {pad}\n"  # in the head
        f"{pad} MARK-2 {pad}\n"  # in the middle of a long line: not met
        f"{pad} MARK-3\n"  # in the tail
        "MARK-4\n"  # a short line
    )
    events, _ = classify_log(log, rules=rules)
    assert [e.line for e in events if e.rule == "mark"] == [2, 4, 5]


# The costliest shape ``check`` accepts: the refused one's repetition, cut to fit the limit.
COSTLIEST_ACCEPTED = r"(?i)(?:\w+ ){2,166}boom"


def test_costliest_accepted_rule_leaves_alerts_and_stop_prompt(pipeline) -> None:
    """A stage prints 64 KiB lines that the costliest accepted rule must search; another
    stage runs out of memory just after, then a ``stop`` comes: the driver's alert and
    its stop each come within the product's 2 s (README: commands are answered within 2 s)."""
    assert compile_user_pattern(COSTLIEST_ACCEPTED).programsize <= USER_PROGRAM_LIMIT
    py = sys.executable
    pipeline.write(f"""
        [[stage]]
        name = "noisy"
        command = ["{py}", "-c", "import time\\nline = ('INFO fatal word ' * 5000)[:65536]\\nfor _ in range(20):\\n    print(line, flush=True)\\ntime.sleep(120)"]

        [[stage]]
        name = "crash"
        command = ["{py}", "-c", "import time\\nopen('oom-at', 'w').write(repr(time.time()))\\nprint('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB', flush=True)\\nraise SystemExit(1)"]

        [[rule]]
        id = "long-sentence"
        kind = "warning"
        explanation = "a long sentence that ends in boom"
        pattern = '''{COSTLIEST_ACCEPTED}'''
        """)
    pipeline.cli("check", check=True)
    pipeline.cli("start", "noisy", check=True)
    noisy_log = pipeline.state_dir / "logs" / "noisy.log"
    wait_for(lambda: noisy_log.exists() and noisy_log.stat().st_size >= 20 * 65537, what="20 long lines")
    pipeline.cli("start", "crash", check=True)

    def oom_alert() -> dict | None:
        return next((a for a in pipeline.alerts() if a["kind"] == "fatal-log-event" and a["stage"] == "crash"), None)

    alert = wait_for(oom_alert, timeout=30, what="the crash stage's OOM alert")
    assert alert["details"]["rule"] == "oom"
    assert alert["time"] - float((pipeline.root / "oom-at").read_text()) < 2.0
    asked = time.time()
    r = pipeline.cli("stop", "noisy", check=True)
    assert "stopping noisy" in r.stdout
    wait_for(lambda: pipeline.stage("noisy")["state"] == "stopped", timeout=15, what="noisy stopped")
    stopped = next(a for a in pipeline.alerts() if a["stage"] == "noisy" and a["kind"] in ("stage-stopped", "stage-killed"))
    assert stopped["time"] - asked < 2.0
    pipeline.cli("stop", "--all")
