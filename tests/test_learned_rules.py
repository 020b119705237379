"""Teaching a rule: a marked line becomes a [[rule]] in the learned-rules file and applies.

The line is real: vLLM's tool-call parser failing one request while the server
keeps serving (https://github.com/vllm-project/vllm/issues/13473).
"""

from __future__ import annotations

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]
import re
from pathlib import Path

import pytest

from eagle3tui.learned_rules import CannotLearn, learn, message_literal
from eagle3tui.logs.offline import classify_log
from eagle3tui.logs.rules import build_ruleset

LINE = "ERROR 04-05 11:55:07 [hermes_tool_parser.py:110] Error in extracting tool call from response."
LATER = "ERROR 04-06 09:02:41 [hermes_tool_parser.py:110] Error in extracting tool call from response."


def kinds(log: Path, specs: list[dict]) -> list[tuple[str, str]]:
    events, _ = classify_log(log, rules=build_ruleset(specs, "learned.toml"))
    return [(e.kind, e.rule) for e in events]


def test_marked_benign_line_is_benign_from_then_on(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    log.write_text(LATER + "\n")
    before = kinds(log, [])
    assert before and before[0][0] != "benign", before
    rules_file = tmp_path / "eagle3tui-rules.toml"
    rule = learn(rules_file, LINE, "benign", stage="serve")
    assert rule.literal == "Error in extracting tool call from response."
    specs = tomllib.loads(rules_file.read_text())["rule"]
    assert specs[0]["id"] == "learned-benign-1" and specs[0]["stages"] == ["serve"]
    # The same message at another time, on another day: matched by the literal.
    assert kinds(log, specs)[0] == ("benign", "learned-benign-1")
    # A second rule is appended, the first kept.
    learn(rules_file, "[rank3]: NCCL WARN Cuda failure 'out of memory' while bootstrapping", "fatal")
    ids = [r["id"] for r in tomllib.loads(rules_file.read_text())["rule"]]
    assert ids == ["learned-benign-1", "learned-fatal-2"]


def test_hostile_text_cannot_become_a_pattern_or_break_the_file(tmp_path: Path) -> None:
    nasty = 'ERROR x] (a+)+$ "quoted" \\ back [bold]y[/] \x1b[31m \x00 zzzzzzzz'
    rules_file = tmp_path / "r.toml"
    rule = learn(rules_file, nasty, "benign")
    spec = tomllib.loads(rules_file.read_text())["rule"][0]
    assert "\x1b" not in spec["pattern"] and "\x00" not in spec["pattern"]
    # The pattern is the escaped literal: it matches the text itself, nothing broader.
    build_ruleset([spec], str(rules_file))
    assert rule.pattern.startswith("\\(a\\+\\)\\+\\$") or "\\(a\\+\\)\\+" in rule.pattern


def test_a_line_of_numbers_is_refused_with_a_fix() -> None:
    with pytest.raises(CannotLearn, match="by hand"):
        message_literal("2026-11-30 12:00:01 1234 5678 90")


def test_the_pipeline_loads_learned_rules_and_names_the_file_when_broken(tmp_path: Path) -> None:
    from eagle3tui.config import load_config
    from eagle3tui.errors import ConfigError

    (tmp_path / "pipeline.toml").write_text('[[stage]]\nname = "serve"\ncommand = ["true"]\n')
    learn(tmp_path / "eagle3tui-rules.toml", LINE, "benign", stage="serve")
    cfg = load_config(tmp_path / "pipeline.toml")
    assert cfg.learned_rules == tmp_path / "eagle3tui-rules.toml"
    assert [r["id"] for r in cfg.rules] == ["learned-benign-1"]
    with open(tmp_path / "eagle3tui-rules.toml", "a") as f:
        f.write('\n[[rule]]\nid = "oops"\nkind = "benign"\npattern = "(unclosed"\nexplanation = "x"\n')
    with pytest.raises(ConfigError) as e:
        load_config(tmp_path / "pipeline.toml")
    assert "eagle3tui-rules.toml" in str(e.value)


def test_rules_taught_from_a_front_end_go_to_the_state_directory(tmp_path: Path) -> None:
    from eagle3tui.config import load_config

    (tmp_path / "pipeline.toml").write_text('[pipeline]\nname = "lr"\n[[stage]]\nname = "s"\ncommand = ["true"]\n')
    cfg = load_config(tmp_path / "pipeline.toml")
    assert cfg.learned_rules == cfg.state_dir / "learned-rules.toml"
    learn(cfg.learned_rules, LINE, "benign", stage="s")
    assert not (tmp_path / "eagle3tui-rules.toml").exists()
    again = load_config(tmp_path / "pipeline.toml")
    assert any(r.get("id") == "learned-benign-1" for r in again.rules), again.rules


@pytest.mark.parametrize(("line", "literal"), [
    # the stretch after "12" began inside the token "layer12attention_weights"
    ("WARNING cache miss for layer12attention_weights, recomputing it now", "recomputing it now"),
    # a hex address and a device name glued to their numbers
    ("ERROR could not map 0x7f3adeadbeef on /dev/nvidia0 while pinning memory", "while pinning memory"),
    ("INFO rank3of8 finished the warmup phase early", "finished the warmup phase early"),
])
def test_a_learned_literal_starts_and_ends_on_token_boundaries(tmp_path: Path, line: str, literal: str) -> None:
    got = message_literal(line)
    assert got == literal, got
    # Whole tokens: at each end, the literal's own character and its neighbour in the line
    # are not both part of one word.
    at = line.index(got)
    before, after = line[at - 1:at], line[at + len(got):at + len(got) + 1]
    assert not (re.match(r"\w", before) and re.match(r"\w", got[0]))
    assert not (re.match(r"\w", after) and re.match(r"\w", got[-1]))
    # Taught, it matches the same message with other numbers in the learned file, through the real loader.
    rule = learn(tmp_path / "learned.toml", line, "benign")
    assert re.search(rule.pattern, line.replace("12", "40").replace("0x7f3a", "0x11aa").replace("rank3of8", "rank5of8"))
