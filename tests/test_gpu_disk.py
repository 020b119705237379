"""DiskWatcher with real files in a temporary directory (the clock is stepped)."""

from __future__ import annotations

import os
from pathlib import Path

from eagle3tui.telemetry.disk import DiskWatcher, nearest_existing, tree_size

MiB = 1 << 20


class StepClock:
    def __init__(self, t: float = 1_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def write(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write(os.urandom(size))
        f.flush()
        os.fsync(f.fileno())  # so statvfs sees the blocks as used


def test_tree_size_counts_nested_files_and_skips_symlinks(tmp_path: Path) -> None:
    write(tmp_path / "a.bin", 1000)
    write(tmp_path / "sub" / "deeper" / "b.bin", 2345)
    os.symlink(tmp_path / "a.bin", tmp_path / "link")
    os.symlink(tmp_path, tmp_path / "sub" / "loop")  # a directory loop must not hang
    assert tree_size(tmp_path) == 3345


def test_directory_not_created_yet_watches_nearest_parent(tmp_path: Path) -> None:
    target = tmp_path / "hidden_states" / "run1"
    assert nearest_existing(target) == tmp_path
    (status,) = DiskWatcher([target]).poll()
    assert not status.exists and status.watched == str(tmp_path)
    assert status.dir_bytes == 0 and status.free_bytes and status.free_bytes > 0
    assert status.total_bytes and status.total_bytes >= status.free_bytes
    assert status.write_bps is None and status.full_in_s is None


def test_write_rate_and_forecast_from_real_writes(tmp_path: Path) -> None:
    clock = StepClock()
    out = tmp_path / "out"
    watcher = DiskWatcher([out], rescan_s=0, clock=clock)
    (_s0,) = watcher.poll()
    write(out / "shard-0.safetensors", 32 * MiB)
    write(out / "shard-1.safetensors", 32 * MiB)
    clock.t += 10
    (s1,) = watcher.poll()
    assert s1.exists and s1.dir_bytes == 64 * MiB
    assert s1.write_bps == 64 * MiB / 10
    # Free-space loss on a shared disk is noisy (other writers, deleters), so
    # only its presence is checked; the forecast uses the faster rate, which
    # is at least our own write rate.
    assert s1.consume_bps is not None and s1.consume_bps >= 0
    assert s1.free_bytes is not None and s1.full_in_s is not None
    assert 0 < s1.full_in_s <= s1.free_bytes / (64 * MiB / 10)
    assert s1.forecast_text().startswith("disk full in")


def test_walks_are_spaced_out(tmp_path: Path) -> None:
    clock = StepClock()
    watcher = DiskWatcher([tmp_path], rescan_s=30, clock=clock)
    for _ in range(5):
        watcher.poll()
        clock.t += 1
    assert watcher.scan_count == 1
    write(tmp_path / "x.bin", MiB)
    (s,) = watcher.poll()
    assert s.dir_bytes == 0  # not walked again yet: the figure is from the last walk
    clock.t += 30
    (s,) = watcher.poll()
    assert watcher.scan_count == 2 and s.dir_bytes == MiB


def test_forecast_event_before_projected_end_fires_once(tmp_path: Path) -> None:
    clock = StepClock()
    watcher = DiskWatcher([tmp_path], rescan_s=0, clock=clock)
    watcher.poll()
    write(tmp_path / "big.bin", 64 * MiB)
    clock.t += 1
    statuses = watcher.poll()
    (s,) = statuses
    assert s.full_in_s is not None
    full_at = clock.t + s.full_in_s
    assert (
        watcher.forecast_events(statuses, full_at - 3600) == []
    )  # the stage ends in time
    assert watcher.forecast_events(statuses, {"/some/other/path": full_at + 3600}) == []
    (ev,) = watcher.forecast_events(statuses, {str(tmp_path): full_at + 3600})
    assert ev.kind == "disk_full_before_end" and ev.path == str(tmp_path)
    assert "disk full in" in ev.message and "fix:" in ev.message
    assert ev.full_at < ev.projected_end
    assert watcher.forecast_events(statuses, full_at + 3600) == []  # once
    assert (
        watcher.forecast_events(statuses, full_at - 3600) == []
    )  # back in time: re-armed
    assert len(watcher.forecast_events(statuses, full_at + 3600)) == 1
    assert watcher.forecast_events(statuses, None) == []


def test_no_writes_no_forecast(tmp_path: Path) -> None:
    clock = StepClock()
    watcher = DiskWatcher([tmp_path], rescan_s=0, clock=clock)
    watcher.poll()
    clock.t += 5
    (s,) = watcher.poll()
    assert s.write_bps == 0 and s.dir_bytes == 0
    assert s.full_in_s is None and s.forecast_text() == "not growing"


def test_other_writers_do_not_forecast_a_directory_nobody_writes(tmp_path: Path) -> None:
    """Another process fills the same filesystem: the quiet stage's path is 'not growing'."""
    quiet = tmp_path / "quiet"
    quiet.mkdir()
    clock = StepClock()
    watcher = DiskWatcher([quiet], rescan_s=0, clock=clock)
    watcher.poll()
    with open(tmp_path / "someone-else.bin", "wb") as f:
        f.write(os.urandom(64 * MiB))
        f.flush()
        os.fsync(f.fileno())
    clock.t += 10
    (s,) = watcher.poll()
    assert s.write_bps == 0
    assert s.full_in_s is None and s.forecast_text() == "not growing"
