"""Human durations: "22m", "1h30m", "90s", "1.5h", "10min", "1 hour", "01:33", "1:02:03"."""

from __future__ import annotations

import difflib
import math
import re

# Every spelling of a unit that people write, to its length in seconds.
_UNITS: dict[str, float] = {}
for _secs, _names in ((86400.0, ("d", "day", "days")),
                      (3600.0, ("h", "hr", "hrs", "hour", "hours")),
                      (60.0, ("m", "min", "mins", "minute", "minutes")),
                      (1.0, ("s", "sec", "secs", "second", "seconds"))):
    for _n in _names:
        _UNITS[_n] = _secs

# One "<number><unit>" group; spaces may separate the number, the unit and the groups.
_GROUP = re.compile(r"\s*(?P<num>\d+(?:\.\d+)?|\.\d+)?\s*(?P<unit>[a-z]+)?\s*")
_EXAMPLES = "e.g. \"22m\", \"1h30m\", \"90s\", \"10min\" or \"1 hour\""


def parse_duration(text: str | float) -> float:
    """Return ``text`` as seconds.

    Accepts a number (seconds, as TOML numbers and internal defaults are),
    unit groups ("1h30m", "22m", "1.5h", "45s", "2d", "10min", "10 minutes",
    "1 hour 30 min"), or a clock ("01:33", "1:02:03"). A string holding a bare
    number ("90") is refused: seconds or minutes is a guess. Raises ValueError
    with a message that names the offending word and shows the accepted forms.
    """
    if isinstance(text, bool):
        raise ValueError(f"not a duration: {text!r}")
    if isinstance(text, (int, float)):
        if not math.isfinite(text):
            raise ValueError(f"duration must be a finite number of seconds, got {text!r}")
        if text < 0:
            raise ValueError(f"duration must not be negative: {text!r}")
        return float(text)
    s = str(text).strip().lower()
    if not s:
        raise ValueError(f"empty duration; use {_EXAMPLES}")
    if ":" in s:
        parts = s.replace(" ", "").split(":")
        if len(parts) > 3 or not all(p.isdigit() for p in parts):
            raise ValueError(f"bad clock duration {text!r}; use MM:SS or H:MM:SS")
        total = 0.0
        for p in parts:
            total = total * 60 + int(p)
        return total
    if s.startswith("-"):
        raise ValueError(f"duration must not be negative: {text!r}")
    try:
        value = float(s)
    except ValueError:
        pass
    else:
        if math.isfinite(value):
            raise ValueError(f"bad duration {text!r}: the number has no unit; write "
                             f"\"{s}s\" for seconds or \"{s}m\" for minutes")
        raise ValueError(f"duration must be a finite number of seconds, got {text!r}")
    total = 0.0
    pos = 0
    while pos < len(s):
        m = _GROUP.match(s, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"bad duration {text!r}: unexpected {s[pos:]!r}; use {_EXAMPLES}")
        num, unit = m.group("num"), m.group("unit")
        if num is None:
            raise ValueError(f"bad duration {text!r}: {s[pos:].strip()!r} has no number before "
                             f"it; use {_EXAMPLES}")
        if unit is None:
            raise ValueError(f"bad duration {text!r}: {num!r} has no unit; write e.g. "
                             f"\"{num}s\" or \"{num}m\"")
        if unit not in _UNITS:
            close = difflib.get_close_matches(unit, list(_UNITS), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(f"bad duration {text!r}: unknown unit {unit!r}; {hint}units are "
                             "s/sec/seconds, m/min/minutes, h/hr/hours and d/days (e.g. \"1h30m\")")
        total += float(num) * _UNITS[unit]
        pos = m.end()
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
