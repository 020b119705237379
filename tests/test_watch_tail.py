"""The observer's reader of alerts.jsonl: whole lines only, robust to repair and rotation."""

from __future__ import annotations

import json
import os
from pathlib import Path

from eagle3tui.alerts import JsonlTail


def test_partial_lines_wait_and_existing_content_is_skipped(tmp_path: Path) -> None:
    p = tmp_path / "alerts.jsonl"
    p.write_text(json.dumps({"kind": "old"}) + "\n")
    tail = JsonlTail(p)  # from the current end
    assert tail.read() == []
    with open(p, "a") as f:
        f.write('{"kind": "ne')
    assert tail.read() == []  # half a line is not an alert yet
    with open(p, "a") as f:
        f.write('w"}\n{"kind": "next"}\nnot json\n')
    assert [o["kind"] for o in tail.read()] == ["new", "next"]
    assert tail.problems and "not JSON" in tail.problems[0]
    assert [o["kind"] for o in JsonlTail(p, from_start=True).read()] == ["old", "new", "next"]


def test_torn_line_cut_by_a_repair_then_new_lines_are_read(tmp_path: Path) -> None:
    p = tmp_path / "alerts.jsonl"
    p.write_text('{"kind": "a"}\n')
    tail = JsonlTail(p)
    with open(p, "a") as f:
        f.write('{"kind": "torn by a cra')  # a writer died mid-line
    assert tail.read() == []
    # The next driver's AlertLog cuts the torn line and appends after it.
    with open(p, "r+") as f:
        f.truncate(len('{"kind": "a"}\n'))
    with open(p, "a") as f:
        f.write('{"kind": "alerts-repaired"}\n{"kind": "c"}\n')
    assert [o["kind"] for o in tail.read()] == ["alerts-repaired", "c"]
    assert tail.problems == []


def test_replaced_file_is_read_from_its_start(tmp_path: Path) -> None:
    p = tmp_path / "alerts.jsonl"
    p.write_text('{"kind": "a"}\n{"kind": "b"}\n')
    tail = JsonlTail(p)
    tmp = tmp_path / "new.jsonl"
    tmp.write_text('{"kind": "fresh"}\n')
    os.replace(tmp, p)
    assert [o["kind"] for o in tail.read()] == ["fresh"]


def test_tail_bytes_starts_at_a_whole_line(tmp_path: Path) -> None:
    p = tmp_path / "alerts.jsonl"
    p.write_bytes(json.dumps({"kind": "a"}).encode() + b"\n" + json.dumps({"kind": "b"}).encode()
                  + b"\n" + b'{"kind": "c"')
    # The last 30 bytes begin inside line "a": the tail starts at line "b".
    tail = JsonlTail(p, tail_bytes=30)
    assert [o["kind"] for o in tail.read()] == ["b"]
    with open(p, "ab") as f:
        f.write(b"}\n")
    assert [o["kind"] for o in tail.read()] == ["c"]
