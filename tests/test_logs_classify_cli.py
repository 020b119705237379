"""``eagle3tui classify`` run as a real process on real logs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FIX = Path(__file__).parent / "fixtures" / "logs"
BASE_KEYS = {"line", "end_line", "kind", "rule", "text", "worker", "explanation"}
PROGRESS_KEYS = BASE_KEYS | {"desc", "n", "total", "elapsed_s", "remaining_s", "rate", "unit"}


def classify(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "eagle3tui.frontends.classify_cmd", *args],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,  # the exit status is what these tests check
    )


def _json(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_summary_for_seed_log_with_estimate() -> None:
    r = classify("--estimate", "22m", str(FIX / "issues" / "seed_extraction.log"))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "0 fatal" in out and "1 benign" in out
    assert "triton-kernels-import ×1 (line 1)" in out
    assert "safe to ignore" in out
    assert "LAST PROGRESS (line 8): Loading safetensors checkpoint shards 4/64" in out
    assert "estimate 22:00, drift +" in out


def test_fatal_exit_code_and_json_schema() -> None:
    r = classify("--json", str(FIX / "captured_torch_oom.log"))
    assert r.returncode == 1
    events = _json(r.stdout)
    fatal = [e for e in events if e["kind"] == "fatal"]
    assert len(fatal) == 1
    assert set(fatal[0]) == BASE_KEYS
    assert (fatal[0]["line"], fatal[0]["end_line"], fatal[0]["rule"]) == (2, 6, "oom")
    assert "DefaultCPUAllocator" in fatal[0]["text"]


def test_progress_events_in_json_with_estimate() -> None:
    r = classify("--json", "--estimate", "22m", str(FIX / "issues" / "seed_extraction.log"))
    assert r.returncode == 0
    events = _json(r.stdout)
    prog = [e for e in events if e["kind"] == "progress"]
    assert [e["line"] for e in prog] == [4, 5, 6, 7, 8]
    for e in prog:
        assert set(e) == PROGRESS_KEYS | {"projected_s", "drift"}
        assert e["worker"] == "Worker_TP0"
    last = prog[-1]
    assert (last["n"], last["total"], last["elapsed_s"], last["remaining_s"]) == (4, 64, 93, 1637)
    assert 30 * 60 <= last["projected_s"] <= 33 * 60 and last["drift"] > 0.25
    r2 = classify("--json", str(FIX / "issues" / "seed_extraction.log"))
    for e in _json(r2.stdout):
        if e["kind"] == "progress":
            assert set(e) == PROGRESS_KEYS  # no estimate: no projected_s/drift


def test_info_only_with_all() -> None:
    path = str(FIX / "issues" / "vllm_worker_loading.log")
    plain = _json(classify("--json", path).stdout)
    full = _json(classify("--json", "--all", path).stdout)
    assert not [e for e in plain if e["kind"] == "info"]
    info = [e for e in full if e["kind"] == "info"]
    assert {e["rule"] for e in info} >= {"weights-loaded"}
    assert any(e["worker"] == "VllmWorker rank=0" for e in info)


def test_stdin(tmp_path: Path) -> None:
    data = (FIX / "captured_argparse_unrecognized.log").read_bytes()
    r = classify("-", stdin=data)
    assert r.returncode == 1
    assert "<stdin>" in r.stdout
    assert "usage-error" in r.stdout and "unrecognized arguments" in r.stdout


def test_user_rules_file_overrides_builtin(tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(
        "[[rule]]\n"
        'id = "triton-kernels-import"\n'
        "pattern = '''Failed to import Triton kernels'''\n"
        'kind = "fatal"\n'
        'explanation = "here the fallback is too slow"\n'
    )
    r = classify("--rules", str(rules), str(FIX / "issues" / "vllm_triton_import_benign.log"))
    assert r.returncode == 1
    assert "here the fallback is too slow" in r.stdout


def test_bad_rules_file_names_rule(tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\nid = "broken"\npattern = "(x"\nkind = "fatal"\nexplanation = "x"\n')
    r = classify("--rules", str(rules), str(FIX / "captured_tqdm.log"))
    assert r.returncode == 2
    assert f"{rules}:2" in r.stderr and "rule 'broken'" in r.stderr and "fix:" in r.stderr


def test_bad_arguments() -> None:
    r = classify("/nonexistent/file.log")
    assert r.returncode == 2 and "no such file" in r.stderr
    r = classify("--estimate", "soon", str(FIX / "captured_tqdm.log"))
    assert r.returncode == 2 and "--estimate" in r.stderr


def test_control_characters_in_summary_are_escaped(tmp_path: Path) -> None:
    p = tmp_path / "evil.log"
    p.write_bytes(b"ERROR 1 [x.py:1] bad \x07\x08 thing \x1b[31mred\x1b[0m\n")
    r = classify(str(p))
    # 0 or 1 (a fatal verdict: in a task, an error line without a source that ends the log is
    # its final report); what this test checks is the escaping
    assert r.returncode in (0, 1)
    assert "\x07" not in r.stdout and "\x1b" not in r.stdout
    assert "\\x07" in r.stdout


def test_golden_summaries() -> None:
    """The readable summary, byte for byte (regenerate with the command in the golden file's test)."""
    root = Path(__file__).resolve().parent.parent
    for name in ("issues/seed_extraction", "issues/vllm_engine_dead", "captured_traceback_chained"):
        r = subprocess.run(
            [sys.executable, "-m", "eagle3tui.frontends.classify_cmd", "--estimate", "22m", f"tests/fixtures/logs/{name}.log"],
            capture_output=True, text=True, cwd=root, check=False,
        )
        golden = (FIX / "golden" / (Path(name).name + ".txt")).read_text()
        assert r.stdout == golden, name


def test_repeated_fatal_lines_are_capped_in_summary(tmp_path: Path) -> None:
    p = tmp_path / "many.log"
    p.write_text("".join(f"[rank{i}]: torch.OutOfMemoryError: CUDA out of memory.\n" for i in range(8)))
    r = classify(str(p))
    assert r.returncode == 1
    assert r.stdout.count("(oom)") == 5
    assert "… and 3 more oom event(s)" in r.stdout
