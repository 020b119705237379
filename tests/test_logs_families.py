"""One registry of verdict families (eagle3tui/logs/families.toml) that every module reads.

The ids a run can report, the id sets the supervisor acts on and ``retry.on``'s validation
come from one catalog; an id the code emits that the catalog lacks fails here, and a
``retry.on`` that names an unknown id is rejected with the closest ones.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from eagle3tui.config import load_config
from eagle3tui.errors import ConfigError
from eagle3tui.logs import catalog, families, judge, monitor_terms, stall
from eagle3tui.logs.offline import classify_log
from eagle3tui.supervisor import stage_alerts

ROOT = Path(__file__).resolve().parent.parent
WHOLE = ROOT / "tests" / "fixtures" / "whole_logs"
CORPUS = ROOT / "tests" / "fixtures" / "corpus" / "corpus.jsonl"


def test_every_family_the_judge_explains_is_in_the_registry() -> None:
    assert set(judge.EXPLAIN) == set(families.code_families())
    for fid, (expl, _action) in judge.EXPLAIN.items():
        assert expl.strip(), fid


def test_an_unknown_family_fails_where_the_code_names_it() -> None:
    with pytest.raises(KeyError, match=r"'error-then-endd' is not a verdict family .*did you mean 'error-then-ended'"):
        families.family_id("error-then-endd")
    with pytest.raises(KeyError, match="did you mean"):
        judge.make("fatal", "proces-died")


def test_the_id_sets_the_code_acts_on_are_the_registrys_flags() -> None:
    # What each module used to spell out by hand, now read from the registry.
    assert judge._DEATH_FAMILIES == {"vllm-engine-dead", "crash-signal", "killed", "shell-job-died",
                                     "torchrun-child-failed", "container-failed"}
    assert judge._ENGINE_FAMILIES == judge._DEATH_FAMILIES | {"cuda-error", "nccl", "disk-full"}
    assert monitor_terms.STOP_ENDINGS == {"fatal-level", "nonzero-exit", "process-died", "launcher-kill",
                                           "error-then-ended", "top-level-error", "announced-ending"}
    assert monitor_terms.SPECIAL_RULES == {"exception-ignored", "request-failed", "request-error-survived"}
    assert monitor_terms.GENERIC_RULES == judge._CATCH_ALL == {"error-line", "python-warning"}
    assert stage_alerts.STALL_RULES == {stall.STALLED, stall.HANG_SUSPECTED}
    assert stage_alerts.ONCE_PER_ATTEMPT == {"torchrun-child-failed"}
    assert stage_alerts.LAUNCHER_REPORT_RULE == "torchrun-child-failed"
    assert stage_alerts.LAUNCHER_KILL_RULE == "launcher-kill"


def test_every_flag_in_use_is_documented_and_every_documented_flag_is_used() -> None:
    used = {f for fam in catalog.registry().values() for f in fam.flags}
    assert used == set(families.FLAGS)
    header = (ROOT / "eagle3tui" / "logs" / "families.toml").read_text().split("[[family]]")[0]
    assert all(f"#   {flag} " in header for flag in families.FLAGS)


def test_a_malformed_registry_is_refused_with_the_entry_and_the_fix() -> None:
    base = 'id = "x"\nkind = "fatal"\nexplanation = "x"\n'
    with pytest.raises(families.RegistryError, match="defined twice"):
        families._parse(f"[[family]]\n{base}\n[[family]]\n{base}", "f.toml")
    with pytest.raises(families.RegistryError, match="unknown flag"):
        families._parse(f'[[family]]\n{base}flags = ["deth"]\n', "f.toml")
    with pytest.raises(families.RegistryError, match="kind must be one of"):
        families._parse('[[family]]\nid = "x"\nkind = "deadly"\nexplanation = "x"\n', "f.toml")


def _emitted(path: Path, kind: str) -> set[str]:
    events, _ = classify_log(path, stage_kind=kind, progress_events=True, include_info=True)
    return {e.rule for e in events}


def test_every_id_the_monitor_emits_on_the_whole_logs_and_the_corpus_is_registered(tmp_path: Path) -> None:
    known = catalog.verdict_ids()
    seen: set[str] = set()
    rows = [json.loads(x) for x in (WHOLE / "manifest.jsonl").read_text().splitlines() if x.strip()]
    for row in rows:
        seen |= _emitted(WHOLE / f"{row['id']}.log", row["kind"])
    # The corpus's excerpts, one log per stage kind (an excerpt after another: the ids, not the verdicts, count).
    for kind in ("task", "service"):
        log = tmp_path / f"corpus-{kind}.log"
        texts = [json.loads(raw) for raw in CORPUS.read_text(encoding="utf-8").splitlines()]
        log.write_text("\n\n".join(ex["text"] for ex in texts if ex["kind"] == kind) + "\n", encoding="utf-8")
        seen |= _emitted(log, kind)
    assert seen - known == set()
    assert len(seen) > 60  # the replay reached most of the catalog


# -- retry.on reads the same registry ------------------------------------------------------


def _config(tmp_path: Path, on: list[str]) -> Path:
    p = tmp_path / "pipeline.toml"
    p.write_text('[[stage]]\nname = "train"\ncommand = ["true"]\n'
                 f"retry = {{ max_attempts = 2, on = {json.dumps(on)} }}\n")
    return p


def test_retry_on_accepts_every_id_a_run_can_report(tmp_path: Path) -> None:
    ids = sorted(catalog.verdict_ids())
    assert {"error-then-ended", "error-went-on", "stop-requested", "traceback-logged", "stalled"} <= set(ids)
    cfg = load_config(_config(tmp_path, ids))
    assert cfg.stage("train").retry.on == tuple(ids)


def test_retry_on_a_typo_names_the_file_line_key_and_the_closest_ids(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        load_config(_config(tmp_path, ["error-then-endd"]))
    msg = str(e.value)
    assert "'error-then-endd'" in msg and "did you mean 'error-then-ended'" in msg, msg
    assert "pipeline.toml:4" in msg and "stage[train].retry.on" in msg, msg


def test_eagle3tui_check_accepts_a_retry_on_an_error_that_ended_the_process(tmp_path: Path) -> None:
    # The driver matches retry.on against the ids the monitor emits, error-then-ended among them.
    cfg = _config(tmp_path, ["error-then-ended"])
    run = subprocess.run([sys.executable, "-m", "eagle3tui", "--config", str(cfg), "check"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    bad = _config(tmp_path, ["error-then-endd"])
    run = subprocess.run([sys.executable, "-m", "eagle3tui", "--config", str(bad), "check"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 2 and "did you mean 'error-then-ended'" in run.stderr, run.stdout + run.stderr
