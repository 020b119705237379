"""Deadlines that survive a driver restart and a step of the wall clock.

A retry's back-off is written to ``intent.json`` so that a driver started
later still honours it. Written as wall-clock time alone, an NTP step of one
hour backwards makes a 5 s back-off last an hour. So a deadline also carries
the system's monotonic clock (``CLOCK_MONOTONIC``, the same for every process
of one boot) and the boot it was taken in: within that boot the monotonic
deadline decides; after a reboot, when monotonic time starts again, the wall
clock is all there is.
"""

from __future__ import annotations

import time
from typing import Any

_BOOT_ID = "/proc/sys/kernel/random/boot_id"


def boot_id() -> str | None:
    """This boot's id (Linux), or None where there is none to read."""
    try:
        with open(_BOOT_ID, encoding="ascii") as f:
            return f.read().strip() or None
    except OSError:
        return None


def deadline(delay_s: float) -> dict[str, Any]:
    """The fields of a deadline ``delay_s`` from now, to merge into a persisted entry."""
    return {"not_before": time.time() + delay_s, "not_before_mono": time.monotonic() + delay_s,
            "boot": boot_id()}


def seconds_left(entry: dict[str, Any]) -> float:
    """Seconds until ``entry``'s deadline (<= 0 when due); 0 for an entry without one."""
    mono = entry.get("not_before_mono")
    if isinstance(mono, (int, float)) and entry.get("boot") and entry.get("boot") == boot_id():
        return float(mono) - time.monotonic()
    try:
        return float(entry.get("not_before", 0)) - time.time()
    except (TypeError, ValueError):
        return 0.0


def due(entry: dict[str, Any]) -> bool:
    """True once ``entry``'s deadline has passed (or it has none)."""
    return seconds_left(entry) <= 0
