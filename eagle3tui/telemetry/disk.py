"""Disk watcher: free space, write rate and a "disk full in ~N min" forecast.

Hidden-state extraction can write hundreds of GB, so disk space is watched
like GPU memory. Free space comes from ``statvfs`` (one system call, so it is
read on every poll); the bytes written *into* a stage's directory come from
walking it, which is expensive on a big tree, so walks are spaced out: at
most one every ``rescan_s`` seconds, and never more than ``max_scan_fraction``
of wall time (a walk that took 2 s waits at least 100 s at 2%).
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from eagle3tui.telemetry.signals import format_bytes

# A drop in free space smaller than this over the window is noise (journals,
# other tiny writers), not a trend worth forecasting from.
_MIN_CONSUMED = 1 << 20


@dataclass(frozen=True)
class DiskStatus:
    """One directory's disk figures at one poll."""

    path: str  # as declared (may not exist yet)
    watched: str  # the directory measured: path, or its nearest existing parent
    exists: bool
    free_bytes: int | None
    total_bytes: int | None
    dir_bytes: int | None  # size of the files under path at the last walk
    write_bps: float | None  # bytes/s written into path (between walks)
    consume_bps: float | None  # bytes/s of free space lost on its filesystem
    full_in_s: float | None  # forecast; None when free space is not shrinking
    error: str | None = None

    def forecast_text(self) -> str:
        """'disk full in ~12 min'; 'not growing' when the path gets no writes; '' unknown."""
        if self.full_in_s is None:
            return "not growing" if self.write_bps == 0 else ""
        minutes = self.full_in_s / 60.0
        if minutes < 1:
            return "disk full in <1 min"
        if minutes < 120:
            return f"disk full in ~{minutes:.0f} min"
        return f"disk full in ~{minutes / 60:.1f} h"


@dataclass(frozen=True)
class DiskEvent:
    """The forecast says the disk fills before the stage is projected to end."""

    time: float
    path: str
    kind: str  # "disk_full_before_end"
    message: str
    full_at: float
    projected_end: float


@dataclass
class _Watch:
    path: Path
    free: deque[tuple[float, int]]
    sizes: deque[tuple[float, int]]
    next_scan: float = 0.0
    warned: bool = False


def nearest_existing(path: Path) -> Path:
    """``path`` if it exists, else its nearest existing parent."""
    p = path
    while not p.exists():
        if p.parent == p:
            return p
        p = p.parent
    return p


def tree_size(root: Path) -> int:
    """Sum of the sizes of regular files under ``root`` (symlinks not followed;
    entries that vanish or cannot be read during the walk are skipped)."""
    total = 0
    stack = [str(root)]
    while stack:
        top = stack.pop()
        try:
            with os.scandir(top) as it:
                for entry in it:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        elif entry.is_file(follow_symlinks=False):
                            total += entry.stat(follow_symlinks=False).st_size
                    except OSError:
                        continue  # removed mid-walk: a running job does that
        except OSError:
            continue
    return total


class DiskWatcher:
    """Watches output directories; call :meth:`poll` periodically (e.g. 1 Hz).

    ``window_s`` is the span over which rates are measured. ``clock`` is
    injectable so tests can step time; files are always real.
    """

    def __init__(
        self,
        paths: Iterable[str | os.PathLike[str]],
        *,
        rescan_s: float = 10.0,
        window_s: float = 120.0,
        max_scan_fraction: float = 0.02,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.rescan_s = rescan_s
        self.window_s = window_s
        self.max_scan_fraction = max_scan_fraction
        self._clock = clock
        self._watches = {str(p): _Watch(Path(p), deque(), deque()) for p in paths}
        self.scan_count = 0  # how many directory walks were made (for benchmarks/tests)

    @property
    def paths(self) -> list[str]:
        """The declared paths, in order."""
        return list(self._watches)

    def poll(self) -> list[DiskStatus]:
        """Measure every path now; walks a directory only when its turn is due."""
        now = self._clock()
        return [self._poll_one(key, w, now) for key, w in self._watches.items()]

    def _poll_one(self, key: str, w: _Watch, now: float) -> DiskStatus:
        watched = nearest_existing(w.path)
        exists = watched == w.path
        try:
            st = os.statvfs(watched)
        except OSError as exc:
            return DiskStatus(
                key,
                str(watched),
                exists,
                None,
                None,
                None,
                None,
                None,
                None,
                error=f"cannot stat {watched}: {exc.strerror or exc}",
            )
        free = st.f_bavail * st.f_frsize  # what an unprivileged writer can use
        total = st.f_blocks * st.f_frsize
        self._push(w.free, (now, free), now)
        if now >= w.next_scan:
            started = time.monotonic()
            size = (
                tree_size(w.path) if exists else 0
            )  # not created yet: nothing written
            took = time.monotonic() - started
            self.scan_count += 1
            self._push(w.sizes, (now, size), now)
            w.next_scan = now + max(self.rescan_s, took / self.max_scan_fraction)
        dir_bytes = w.sizes[-1][1] if w.sizes else None
        write_bps = self._rate(w.sizes, growing=True)
        consumed = self._rate(w.free, growing=False)
        # Forecast only while the directory grows (a stage writing nothing
        # there fills nothing, whatever else writes to the disk), then from the
        # faster of: bytes written into it (this stage's own output, measured
        # by walks) and free space lost on the filesystem (every writer counts,
        # e.g. two stages sharing a disk).
        rate = max(write_bps, consumed or 0.0) if write_bps else 0.0
        full_in = free / rate if rate > 0 else None
        return DiskStatus(
            key,
            str(watched),
            exists,
            free,
            total,
            dir_bytes,
            write_bps,
            consumed,
            full_in,
        )

    def _push(
        self, ring: deque[tuple[float, int]], point: tuple[float, int], now: float
    ) -> None:
        ring.append(point)
        # Keep one point older than the window so the rate spans all of it.
        while len(ring) > 2 and ring[1][0] <= now - self.window_s:
            ring.popleft()

    @staticmethod
    def _rate(ring: deque[tuple[float, int]], *, growing: bool) -> float | None:
        """Bytes/s between the oldest and newest point; None without a span.
        For free space (``growing=False``) the rate is of shrinking, and
        small or negative changes give 0 (not filling)."""
        if len(ring) < 2:
            return None
        (t0, v0), (t1, v1) = ring[0], ring[-1]
        if t1 <= t0:
            return None
        delta = (v1 - v0) if growing else (v0 - v1)
        if not growing and delta < _MIN_CONSUMED:
            return 0.0
        return max(0.0, delta / (t1 - t0))

    def forecast_events(
        self,
        statuses: Iterable[DiskStatus],
        projected_end: float | dict[str, float] | None,
    ) -> list[DiskEvent]:
        """Events for paths whose forecast "full" time falls before the
        projected end (one time for all paths, or per declared path). Fires
        once per path until the forecast moves past the end again."""
        events: list[DiskEvent] = []
        if projected_end is None:
            return events
        for s in statuses:
            w = self._watches.get(s.path)
            end = (
                projected_end.get(s.path)
                if isinstance(projected_end, dict)
                else projected_end
            )
            if w is None or end is None:
                continue
            now = self._clock()
            if s.full_in_s is None or now + s.full_in_s >= end:
                w.warned = False
                continue
            if w.warned:
                continue
            w.warned = True
            full_at = now + s.full_in_s
            events.append(
                DiskEvent(
                    time=now,
                    path=s.path,
                    kind="disk_full_before_end",
                    message=(
                        f"{s.path}: {s.forecast_text()} (free {format_bytes(s.free_bytes)}, "
                        f"filling at {format_bytes(s.consume_bps)}/s), before the stage's projected "
                        f"end in ~{max(0.0, end - now) / 60:.0f} min; fix: free space on {s.watched} "
                        "or point the stage's output at a bigger disk"
                    ),
                    full_at=full_at,
                    projected_end=end,
                )
            )
        return events
