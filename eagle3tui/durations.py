"""Human durations: "22m", "1h30m", "90s", "1.5h", "01:33", "1:02:03"."""

from __future__ import annotations

import math

_UNITS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}


def parse_duration(text: str | float) -> float:
    """Return ``text`` as seconds.

    Accepts a number (seconds), unit groups ("1h30m", "22m", "1.5h", "45s",
    "2d"), or a clock ("01:33", "1:02:03"). Raises ValueError with a message
    that shows the accepted forms.
    """
    if isinstance(text, bool):
        raise ValueError(f"not a duration: {text!r}")
    if isinstance(text, (int, float)):
        if not math.isfinite(text):
            raise ValueError(f"duration must be a finite number of seconds, got {text!r}")
        if text < 0:
            raise ValueError(f"duration must not be negative: {text!r}")
        return float(text)
    s = str(text).strip().lower().replace(" ", "")
    if not s:
        raise ValueError("empty duration; use e.g. \"22m\", \"1h30m\" or \"90s\"")
    if ":" in s:
        parts = s.split(":")
        if len(parts) > 3 or not all(p.isdigit() for p in parts):
            raise ValueError(f"bad clock duration {text!r}; use MM:SS or H:MM:SS")
        total = 0.0
        for p in parts:
            total = total * 60 + int(p)
        return total
    try:
        value = float(s)
    except ValueError:
        pass
    else:
        if not math.isfinite(value):
            raise ValueError(f"duration must be a finite number of seconds, got {text!r}")
        if value < 0:
            raise ValueError(f"duration must not be negative: {text!r}")
        return value
    total = 0.0
    number = ""
    seen_unit = False
    for ch in s:
        if ch.isdigit() or ch == ".":
            number += ch
        elif ch in _UNITS:
            if not number or number.count(".") > 1:
                raise ValueError(
                    f"bad duration {text!r}; use e.g. \"22m\", \"1h30m\", \"1.5h\" or \"90s\""
                )
            total += float(number) * _UNITS[ch]
            number = ""
            seen_unit = True
        else:
            raise ValueError(
                f"bad duration {text!r}: unknown unit {ch!r}; units are d, h, m, s (e.g. \"1h30m\")"
            )
    if number or not seen_unit:
        raise ValueError(f"bad duration {text!r}; every number needs a unit, e.g. \"1h30m\"")
    return total


def format_duration(seconds: float | None, unknown: str = "-") -> str:
    """Compact clock text: "27:17", "1:02:03", ``unknown`` for None."""
    if seconds is None or not math.isfinite(seconds):
        return unknown
    sign = "-" if seconds < 0 else ""
    s = round(abs(seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    if h:
        return f"{sign}{h}:{m:02d}:{sec:02d}"
    return f"{sign}{m:02d}:{sec:02d}"
