"""A full state disk never leaves a torn line in alerts.jsonl that the next alert is glued to.

"Full" is real: a 1 MiB tmpfs mounted for the test (CI runs as root) and
filled until ENOSPC. tmpfs then still accepts the bytes that fit in the last
page the alerts file already owns, so a long alert is written part-way (a
short count) and the next write fails: exactly the torn write a full disk
makes. A torn line written by another process (one killed mid-write) is made
by a real second process.
"""

from __future__ import annotations

import errno
import json
import subprocess
import sys

import pytest
from conftest import fill_to_enospc, free_filled

from eagle3tui.alerts.log import AlertLog, JsonlTail, read_alerts
from eagle3tui.alerts.model import Alert


@pytest.fixture
def small_fs(tmp_path):
    mnt = tmp_path / "state"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True)
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def _lines(path) -> list[dict]:
    """Every line of the file parsed as JSON: a glued or torn line fails here."""
    return [json.loads(line) for line in path.read_bytes().decode("ascii").splitlines() if line]


def test_full_disk_cuts_a_torn_alert_and_the_next_one_starts_clean(small_fs):
    path = small_fs / "alerts.jsonl"
    log = AlertLog(path)
    log.append(Alert(level="info", kind="first", message="before the disk filled"))
    before = path.stat().st_size
    fill_to_enospc(small_fs)
    # Longer than the slack of the file's last page: tmpfs takes a part, then refuses.
    with pytest.raises(OSError) as failed:
        log.append(Alert(level="critical", kind="long", message="x" * 20000))
    assert failed.value.errno == errno.ENOSPC
    assert path.stat().st_size == before, "the torn part was cut at once"
    assert failed.value.filename == str(path), "the failure names the alerts file"
    assert log.take_error() is not None, "the failed write is reported to the driver"
    free_filled(small_fs)
    log.append(Alert(level="critical", kind="after", message="once space returned"))
    log.close()
    assert [a["kind"] for a in _lines(path)] == ["first", "after"]
    assert [a.kind for a in read_alerts(path)] == ["first", "after"]


def test_torn_line_left_by_another_process_is_not_glued_to_the_next(tmp_path):
    path = tmp_path / "alerts.jsonl"
    log = AlertLog(path)
    log.append(Alert(level="info", kind="first", message="whole"))
    # A second writer (the --watch mirror, a process killed mid-write) leaves half a line.
    torn = ("import os,sys; fd=os.open(sys.argv[1], os.O_WRONLY|os.O_APPEND); "
            "os.write(fd, b'{\"level\":\"critical\",\"kind\":\"to'); os._exit(9)")
    subprocess.run([sys.executable, "-c", torn, str(path)], check=False)
    tail = JsonlTail(path, from_start=True)
    log.append(Alert(level="critical", kind="next", message="after the torn one"))
    log.close()
    assert [a.kind for a in read_alerts(path)] == ["first", "next"]
    problems: list[str] = []
    read_alerts(path, problems)
    assert len(problems) == 1 and f"{path}:2:" in problems[0], problems
    assert [o["kind"] for o in tail.read()] == ["first", "next"]
    assert len(tail.problems) == 1, "the reader says it skipped a line"


def test_torn_line_in_the_middle_is_skipped_and_reported(tmp_path):
    # What today's files may already hold: a torn alert with the next one glued to it.
    path = tmp_path / "alerts.jsonl"
    whole = json.dumps(Alert(level="info", kind="whole", message="m").to_json())
    path.write_text(whole + "\n" + '{"level":"crit' + whole + "\n" + whole + "\n")
    problems: list[str] = []
    assert [a.kind for a in read_alerts(path, problems)] == ["whole", "whole"]
    assert problems and f"{path}:2:" in problems[0]
