"""The backlog scout (supervisor/backlog.py) on real files: the fatal line it finds
ahead of a reader carries the number the reader gives it, look-alikes are not
reported, and nothing past a stop's byte is looked at."""

from __future__ import annotations

from eagle3tui.logs.rules import build_ruleset
from eagle3tui.supervisor.backlog import BacklogScout

FATAL = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB\n"
NCCL_INFO = "node-03:26841:26900 [0] NCCL INFO Channel {i:02d}/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"


def _log(tmp_path, fatal_at: int, n: int = 5000) -> str:
    lines = [NCCL_INFO.format(i=i % 32) if i % 3 else f"\rTraining: {i % 100}%|#| {i}/9000\n"
             for i in range(n)]
    lines[fatal_at - 1] = FATAL
    path = tmp_path / "job.log"
    path.write_text("".join(lines))
    return str(path)


def test_fatal_ahead_has_the_readers_line_number(tmp_path):
    path = _log(tmp_path, fatal_at=4321)
    rules = build_ruleset([], "test")
    scout = BacklogScout(path, "job")
    # A reader that stopped 5 bytes into line 10 (9 complete lines read): the rest of
    # line 10 is counted by its newline.
    with open(path, "rb") as f:
        head = f.read()
    offset = sum(len(x) for x in head.split(b"\n")[:9]) + 9 + 5
    found = scout.look(offset, 9, rules)
    assert [f.line for f in found] == [4321], found
    assert found[0].rule and "out of memory" in found[0].text
    # The reader's numbering: the line after the complete lines before its first byte.
    with open(path, "rb") as f:
        assert f.read()[: found[0].offset].count(b"\n") + 1 == found[0].line

def test_no_report_for_look_alikes_nor_past_the_limit(tmp_path):
    path = _log(tmp_path, fatal_at=4000)
    rules = build_ruleset([], "test")
    scout = BacklogScout(path, "job")
    limit = sum(len(x) for x in open(path, encoding="utf-8", newline="").readlines()[:3999])
    assert scout.look(0, 0, rules, limit=limit) == []  # NCCL INFO lines hit a keyword, none is fatal
    assert scout.look(0, 0, rules) and list(scout.reported) == [4000]
