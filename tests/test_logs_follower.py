"""LogFollower and LogWatcher on real files: partial lines, \\r, rotation, truncation."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from eagle3tui.logs.follower import LogFollower, LogWatcher, strip_ansi


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def _texts(lines):
    return [(ln.no, ln.text, ln.is_update) for ln in lines]


def test_incremental_reads_and_partial_line(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    p.write_bytes(b"one\ntwo\nthr")
    f = LogFollower(p)
    assert _texts(f.poll()) == [(1, "one", False), (2, "two", False)]
    assert f.line_no == 2
    assert f.offset == 11  # all bytes consumed, the partial line is held
    assert f.poll() == []
    _append(p, b"ee\nfour\n")
    assert _texts(f.poll()) == [(3, "three", False), (4, "four", False)]
    assert f.offset == p.stat().st_size


def test_resume_from_offset(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    p.write_bytes(b"alpha\nbeta\ngamma\n")
    f = LogFollower(p, offset=6, line_no=1)
    assert _texts(f.poll()) == [(2, "beta", False), (3, "gamma", False)]


def test_carriage_return_segments_are_updates(tmp_path: Path) -> None:
    p = tmp_path / "bar.log"
    p.write_bytes(b"start\n\rbar 1/3\rbar 2/3\rbar 3/3\nafter\r\n")
    lines = LogFollower(p).poll()
    assert _texts(lines) == [
        (1, "start", False),
        (2, "bar 1/3", True),
        (2, "bar 2/3", True),
        (2, "bar 3/3", False),
        (3, "after", False),  # \r\n is a plain line end
    ]


def test_never_ending_progress_bar_emits_updates_with_bounded_memory(tmp_path: Path) -> None:
    p = tmp_path / "bar.log"
    f = LogFollower(p, max_line=1024)
    p.write_bytes(b"")
    seen: list[str] = []
    for i in range(2000):
        _append(p, f"\rloading {i}/2000 ".encode() + b"#" * 50)
        if i % 100 == 99:
            seen.extend(ln.text for ln in f.poll() if ln.is_update)
            assert len(f._pending) <= 1024
    seen.extend(ln.text for ln in f.poll())
    # Segments before the last \r were emitted as updates; the latest one
    # is still on screen, readable as pending_text().
    assert seen and seen[-1].startswith("loading 1998/2000")
    assert f.pending_text().startswith("loading 1999/2000")
    assert f.line_no == 0


def test_pathological_long_line_without_newline_is_cut_to_its_tail(tmp_path: Path) -> None:
    p = tmp_path / "long.log"
    with open(p, "wb") as fh:
        fh.write(b"x" * (8 << 20) + b"THE END")
    f = LogFollower(p, max_line=64 * 1024, block_size=1 << 20)
    assert f.poll() == []
    assert len(f._pending) <= 64 * 1024
    assert f.cut_bytes > (7 << 20)
    _append(p, b"\nnext\n")
    lines = f.poll()
    assert lines[0].text.endswith("THE END") and len(lines[0].text) <= 64 * 1024
    assert lines[1].text == "next" and lines[1].no == 2


def test_invalid_utf8_and_binary_bytes(tmp_path: Path) -> None:
    p = tmp_path / "bin.log"
    p.write_bytes(b"ok \xff\xfe bad\n\x00\x01\x02 nul\n\xe2\x94\n")
    lines = LogFollower(p).poll()
    assert lines[0].text == "ok \ufffd\ufffd bad"
    assert lines[1].text == "\x00\x01\x02 nul"
    assert lines[2].text == "\ufffd"


def test_ansi_sequences_stripped(tmp_path: Path) -> None:
    p = tmp_path / "color.log"
    p.write_bytes(
        b"\x1b[1;31mERROR\x1b[0m red\n\x1b]0;title\x07after osc\n\x1b[2K\x1b[1A\rbar\n\x1b[12\nplain\n"
    )
    texts = [ln.text for ln in LogFollower(p).poll()]
    # An unterminated sequence loses only its ESC and introducer, never the
    # next line.
    assert texts == ["ERROR red", "after osc", "bar", "12", "plain"]


def test_ansi_stripper_is_linear_on_hostile_input() -> None:
    hostile = "\x1b[" + "1;" * 200_000 + "\n" + "\x1b]" + "x" * 200_000
    t = time.perf_counter()
    out = strip_ansi(hostile * 3)
    assert time.perf_counter() - t < 1.0
    assert "\x1b" not in out


def test_truncation_restarts_at_zero(tmp_path: Path) -> None:
    p = tmp_path / "t.log"
    p.write_bytes(b"a\nb\nc\n")
    f = LogFollower(p)
    assert len(f.poll()) == 3
    # copytruncate: same inode, size goes back to 0, then new writes.
    with open(p, "r+b") as fh:
        fh.truncate(0)
    _append(p, b"new1\n")
    lines = f.poll()
    assert _texts(lines) == [(1, "new1", False)]
    assert f.resets == 1


def test_rotation_reads_rest_of_old_file_then_new(tmp_path: Path) -> None:
    p = tmp_path / "r.log"
    p.write_bytes(b"old1\n")
    f = LogFollower(p)
    assert _texts(f.poll()) == [(1, "old1", False)]
    _append(p, b"old2\nold-partial")
    os.rename(p, tmp_path / "r.log.1")
    p.write_bytes(b"new1\nnew2\n")
    lines = f.poll()
    assert _texts(lines) == [
        (2, "old2", False),
        (3, "old-partial", False),  # the old file's last line, finished by rotation
        (1, "new1", False),
        (2, "new2", False),
    ]
    assert f.resets == 1


def test_file_appears_later(tmp_path: Path) -> None:
    p = tmp_path / "later.log"
    f = LogFollower(p)
    assert f.poll() == []
    p.write_bytes(b"hello\n")
    assert _texts(f.poll()) == [(1, "hello", False)]


def test_large_file_in_bounded_blocks(tmp_path: Path) -> None:
    p = tmp_path / "big.log"
    line = b"INFO some ordinary log line with a few words in it\n"
    with open(p, "wb") as fh:
        fh.write(line * 200_000)
    f = LogFollower(p, block_size=256 * 1024)
    chunks = 0
    biggest = 0
    while True:
        c = f.read_chunk()
        if c is None:
            break
        chunks += 1
        biggest = max(biggest, len(c.data))
    assert f.line_no == 200_000
    assert biggest <= 256 * 1024 + len(line)
    assert chunks >= p.stat().st_size // (256 * 1024)


def _wait_for(cond, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


@pytest.mark.parametrize("use_inotify", [True, False])
def test_watcher_wakes_on_append(tmp_path: Path, use_inotify: bool) -> None:
    p = tmp_path / "w.log"
    p.write_bytes(b"")
    with LogWatcher([p], poll_interval=0.05, use_inotify=use_inotify) as w:
        assert w.mode == ("inotify" if use_inotify else "polling")
        w.wait(0)  # clear anything from start-up
        _append(p, b"line\n")
        assert _wait_for(lambda: w.changed.is_set())
        assert w.wait(0) is True
        assert w.wait(0) is False


def test_watcher_add_later(tmp_path: Path) -> None:
    p = tmp_path / "late.log"
    with LogWatcher([], poll_interval=0.05) as w:
        w.add(p)
        w.wait(0)
        p.write_bytes(b"x\n")
        assert _wait_for(lambda: w.changed.is_set())
