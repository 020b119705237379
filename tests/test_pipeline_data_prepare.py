"""prepare stage and shared helpers: format detection, ids, drops, errors, atomic writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.common import StageError, atomic_write_json, atomic_write_text
from pipeline.prepare import (
    SHIPPED_PROMPTS,
    Dropped,
    conversation_id,
    detect_format,
    find_cached_hf_dataset,
    normalize_record,
    prepare,
)

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(check=False, args=[sys.executable, "-m", "pipeline.prepare", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def write_jsonl(path: Path, records: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


SHAREGPT = {"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}
MESSAGES = {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "2+2?"}]}
ULTRACHAT = {"id": "u1", "data": ["q1", "a1", "q2"]}


def test_detect_format_each_shape() -> None:
    assert detect_format(SHAREGPT) == "sharegpt"
    assert detect_format(MESSAGES) == "messages"
    assert detect_format(ULTRACHAT) == "ultrachat"
    assert detect_format("just a prompt") == "prompts"
    assert detect_format({"prompt": "p"}) == "prompts"
    assert detect_format({"instruction": "do", "input": "x"}) == "prompts"
    assert detect_format({"conversations": [{"role": "user", "content": "x"}]}) == "messages"
    assert detect_format({"foo": 1}) is None
    assert detect_format(42) is None


def test_normalize_maps_roles_and_keeps_given_ids() -> None:
    sid, turns, fmt = normalize_record(SHAREGPT)
    assert fmt == "sharegpt"
    assert turns == [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert sid == conversation_id(turns) and len(sid) == 16
    sid, turns, _ = normalize_record(ULTRACHAT)
    assert sid == "u1"
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    # Content-part lists keep their text parts.
    _, turns, _ = normalize_record({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"},
                                                                              {"type": "text", "text": "b"}]}]})
    assert turns[0]["content"] == "ab"
    # Alpaca-style instruction + input become one user turn.
    _, turns, _ = normalize_record({"instruction": "Summarize", "input": "long text"})
    assert turns == [{"role": "user", "content": "Summarize\n\nlong text"}]


def test_ids_are_stable_and_content_sensitive() -> None:
    a = normalize_record("What is 2+2?")[0]
    assert a == normalize_record({"prompt": "What is 2+2?"})[0]
    assert a != normalize_record("What is 2+3?")[0]


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ({"messages": []}, "empty conversation"),
        ({"messages": [{"role": "assistant", "content": "x"}]}, "no user turn"),
        ({"messages": [{"role": "user", "content": "  "}]}, "empty turn"),
        ({"conversations": [{"from": "tool", "value": "x"}]}, "unknown role"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]}, "non-text content"),
        ({"weird": True}, "unrecognized record"),
        ({"messages": [{"role": "user", "content": "a"}, {"role": "system", "content": "b"}]}, "system turn not first"),
    ],
)
def test_drop_reasons(record: object, reason: str) -> None:
    with pytest.raises(Dropped) as exc:
        normalize_record(record)
    assert exc.value.reason == reason


def test_prepare_mixed_jsonl_reports_drops(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", [SHAREGPT, MESSAGES, ULTRACHAT, "plain", SHAREGPT, {"x": 1}])
    out = tmp_path / "out.jsonl"
    report = prepare([src], out, show_progress=False)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert report.written == len(rows) == 4
    assert report.dropped == {"duplicate id": 1, "unrecognized record": 1}
    assert any(e.startswith(f"{src}:5: duplicate id") for e in report.examples)
    assert any(e.startswith(f"{src}:6: unrecognized record") for e in report.examples)
    assert all(set(r) == {"id", "conversations"} for r in rows)
    assert "4 samples written" in report.summary() and "2 dropped" in report.summary()


def test_prepare_json_list_and_dict_wrapper(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps(["p1", "p2", {"prompt": "p3"}]))
    (tmp_path / "b.json").write_text(json.dumps({"data": [MESSAGES]}))
    out = tmp_path / "o.jsonl"
    report = prepare([tmp_path / "a.json", tmp_path / "b.json"], out, show_progress=False)
    assert report.written == 4 and report.formats == {"prompts": 3, "messages": 1}


def test_invalid_jsonl_names_file_and_line(tmp_path: Path) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_text('{"prompt": "ok"}\n{"prompt": \n')
    with pytest.raises(StageError, match=r"bad\.jsonl:2: invalid JSON"):
        prepare([src], tmp_path / "o.jsonl", show_progress=False)
    assert not (tmp_path / "o.jsonl").exists()  # nothing written on failure
    report = prepare([src], tmp_path / "o.jsonl", skip_invalid=True, show_progress=False)
    assert report.written == 1 and report.dropped == {"invalid JSON": 1}


def test_parquet_without_pyarrow_is_a_clear_error_or_works(tmp_path: Path) -> None:
    try:
        import pyarrow as pa  # type: ignore[import-not-found, import-untyped, unused-ignore]
        import pyarrow.parquet as pq  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError:
        src = tmp_path / "d.parquet"
        src.write_bytes(b"PAR1")
        with pytest.raises(StageError, match="pip install pyarrow"):
            prepare([src], tmp_path / "o.jsonl", show_progress=False)
        return
    src = tmp_path / "d.parquet"
    pq.write_table(pa.table({"prompt": ["a", "b"]}), src)
    assert prepare([src], tmp_path / "o.jsonl", show_progress=False).written == 2


def test_cached_hf_dataset_lookup(tmp_path: Path) -> None:
    snap = tmp_path / "datasets--org--chat" / "snapshots" / "abc123" / "data"
    snap.mkdir(parents=True)
    write_jsonl(snap / "train-00000.jsonl", [MESSAGES])
    write_jsonl(snap / "test-00000.jsonl", [SHAREGPT])
    files = find_cached_hf_dataset("org/chat", "train", cache_dir=str(tmp_path))
    assert [f.name for f in files] == ["train-00000.jsonl"]
    with pytest.raises(StageError, match="not in the local Hugging Face cache"):
        find_cached_hf_dataset("org/missing", cache_dir=str(tmp_path))


def test_shipped_prompt_set_is_varied_and_clean(tmp_path: Path) -> None:
    out = tmp_path / "p.jsonl"
    report = prepare([SHIPPED_PROMPTS], out, show_progress=False)
    assert report.written >= 300 and not report.dropped
    cats = {json.loads(line)["category"] for line in SHIPPED_PROMPTS.read_text().splitlines()}
    assert {"coding", "math", "writing", "reasoning", "explain", "multiturn"} <= cats
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sum(len(r["conversations"]) > 1 for r in rows) >= 20  # multi-turn prompts present


def test_cli_default_input_summary_and_usage_errors(tmp_path: Path) -> None:
    out = tmp_path / "p.jsonl"
    proc = run_cli("-o", str(out), "--limit", "10")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("prepare: 10 samples written")
    assert len(out.read_text().splitlines()) == 10
    bad = run_cli("--limit", "3")  # missing --output
    assert bad.returncode == 2 and bad.stderr.startswith("usage: python -m pipeline.prepare")
    missing = run_cli("-i", str(tmp_path / "nope.jsonl"), "-o", str(out))
    assert missing.returncode == 1 and "nope.jsonl: input file not found" in missing.stderr
    helped = run_cli("--help")
    assert helped.returncode == 0 and "ShareGPT" in helped.stdout


def test_atomic_writes_leave_no_temp_files(tmp_path: Path) -> None:
    atomic_write_json(tmp_path / "a.json", {"x": 1})
    atomic_write_text(tmp_path / "a.json", "replaced")
    assert (tmp_path / "a.json").read_text() == "replaced"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]
