"""eagle3tui/logs/slurm_rules.toml: valid rules, and the right verdict for the
lines a real Slurm wrote into job outputs (tests/fixtures/slurm/*.out)."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagle3tui.logs.rules import RuleSet, load_builtin_rules, load_rules_file, rules_from_specs

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "eagle3tui" / "logs" / "slurm_rules.toml"
FIX = ROOT / "tests" / "fixtures" / "slurm"


@pytest.fixture(scope="module")
def ruleset() -> RuleSet:
    # Loading checks every example against its pattern and keywords.
    slurm = rules_from_specs(load_rules_file(RULES), str(RULES), "slurm")
    # As the loader will: Slurm's rules first, then the builtin pack.
    return RuleSet([*slurm, *load_builtin_rules()])


@pytest.mark.parametrize("output, rule_id", [
    ("timeout.out", "slurm-time-limit"),
    ("preempted.out", "slurm-preempted"),
    ("node_fail.out", "slurm-node-failure"),
    ("cancelled.out", "slurm-cancelled"),
    ("oom_batch.out", "slurm-oom"),
    ("oom_srun.out", "slurm-oom"),
])
def test_measured_slurm_lines_get_slurm_verdicts(ruleset, output, rule_id):
    lines = [ln for ln in (FIX / output).read_text().splitlines() if "slurmstepd" in ln or ln.startswith("srun:")]
    assert lines, f"{output} holds no Slurm line"
    verdicts = {ruleset.classify(ln).id for ln in lines}
    assert verdicts == {rule_id}, verdicts


def test_stage_output_is_left_to_the_other_rules(ruleset):
    for line in ["tick 12", "hello", "job 3 waits for signals", "low priority job", "about to exit 3"]:
        r = ruleset.classify(line)
        assert r is None or not r.id.startswith("slurm-"), (line, r.id)


def test_lookalikes_are_not_slurm_verdicts(ruleset):
    # A program's own words must not read as Slurm's.
    for line in ["print('*** JOB DONE ***')", "we hit the time limit of the warmup",
                 "*** JOB 5 finished, CANCELLED AT nothing", "task 0: Out Of Memory in my simulator"]:
        r = ruleset.classify(line)
        assert r is None or not r.id.startswith("slurm-"), (line, r.id)
    assert ruleset.classify("srun: error: vm: task 0: Out Of Memory").id == "slurm-oom"
