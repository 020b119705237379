"""A log that repeats itself is not activity: news versus the same wait again.

A hung job rarely goes silent. vLLM's engine prints "No available shared
memory broadcast block found in 60 seconds" every minute while a worker is
stuck; torch prints "Waiting in store based barrier ..." every ten seconds
while a rank never comes; a client prints "Server is not up yet. Retrying"
forever. Any output used to re-arm the stall detector, so those hangs never
stalled. :class:`RepeatFilter` says whether a block of output holds *news*:

* a line whose template (digits, hex ids masked, as :mod:`templates` maps
  digits) was not seen recently: a new kind of message;
* a line of a known template whose *values* (its standalone numbers, less
  clocks, dates and durations) were not seen with it: a count that moved
  ("Attempt 213", "worker_count=2"), a loss, a throughput, a new rank.

A line of a known template with values already seen is a repeat: the same
wait printed again. The monitor adds the news the parsers see (progress that
moved, an idle server's stats; see :meth:`StageLogMonitor._process`).

Memory is bounded (``max_templates`` templates, ``max_values`` value sets
each, least recently seen forgotten first) and only the last ``max_lines``
lines of a read are looked at: a catch-up read is news anyway (its templates
are new), and a chatty loop's last lines say what it is doing now.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass

from eagle3tui.logs.templates import MAX_TEMPLATE, TO_ZERO

__all__ = ["RepeatFilter", "Repeated"]

# On a template (digits already 0): a run of hex digits holding a digit (ids,
# addresses, request hashes) and any digit run, as one mark, so that lines
# differing only in an id or a number's width ("DP4 pid=3431" and
# "DP12 pid=3518") share a template. Every unbounded run starts where a run
# starts (the lookbehinds): linear time on a line of 100,000 "a" or digits.
_MASK = re.compile(rb"(?<![0a-fA-F])[0a-fA-F]*0[0a-fA-F]*")
# What is time, not a value: dates, clocks (with fractions), durations with a
# unit. Matched first, so their digits never count; the group is the value.
# A number glued to letters or dots on either side (``DP4``, ``v0.8.3``,
# ``26m``, ``1.5s``, hex ids) is a name or a duration, not a count.
_VALUES = re.compile(
    rb"\d{4}-\d\d-\d\d|\d{1,2}-\d{1,2}(?= \d)|\d{1,2}:\d\d(?::\d\d)?(?:[.,]\d+)?"
    rb"|(?<!\d)\d+(?:\.\d+)? ?(?:ms|s|secs?|seconds?|min|mins|minutes?|h|hours?)\b"
    rb"|(?<![\w.])(\d+(?:\.\d+)?)(?![\w.])"
)


@dataclass(slots=True)
class Repeated:
    """A template repeated in the current episode: its last line and how often."""

    line: bytes
    count: int


@dataclass(slots=True)
class _Seen:
    values: OrderedDict[tuple[bytes, ...], None]
    episode: int = -1
    count: int = 0
    last: bytes = b""


class RepeatFilter:
    """Tells news from repeats; counts the repeats since the last news."""

    def __init__(self, max_templates: int = 128, max_values: int = 64, max_lines: int = 64) -> None:
        self.max_templates = max_templates
        self.max_values = max_values
        self.max_lines = max_lines
        self._seen: OrderedDict[bytes, _Seen] = OrderedDict()
        self.episode = 0  # bumped by news: repeats are counted per episode

    def feed(self, data: bytes) -> bool:
        """Whether ``data`` (complete lines) holds news; learns its lines."""
        end = len(data)
        if data.endswith(b"\n"):
            end -= 1
        # The last max_lines lines, found from the end (a catch-up read is MBs).
        start = end
        for _ in range(self.max_lines):
            start = data.rfind(b"\n", 0, start)
            if start < 0:
                break
        lines = data[start + 1 : end].split(b"\n")
        news = False
        seen = self._seen
        for raw in lines:
            if not raw.strip():
                continue
            if len(raw) > MAX_TEMPLATE:
                news = True  # a line this long is a dump, not a wait printed again
                self.episode += 1
                continue
            key = _MASK.sub(b"#", raw.translate(TO_ZERO))
            s = seen.get(key)
            vals = tuple(_VALUES.findall(raw)) if b"0" in key or b"#" in key else ()
            if s is None:
                if len(seen) >= self.max_templates:
                    seen.popitem(last=False)
                seen[key] = _Seen(OrderedDict({vals: None}))
                news = True
                self.episode += 1
                continue
            seen.move_to_end(key)
            if vals not in s.values:
                if len(s.values) >= self.max_values:
                    s.values.popitem(last=False)
                s.values[vals] = None
                news = True
                self.episode += 1
                continue
            s.values.move_to_end(vals)
            if s.episode != self.episode:
                s.episode = self.episode
                s.count = 0
            s.count += 1
            s.last = raw
        return news

    def news(self) -> None:
        """News came from elsewhere (progress that moved): repeats count afresh."""
        self.episode += 1

    def repeated(self, k: int = 2) -> list[Repeated]:
        """The ``k`` templates repeated most since the last news, most first."""
        ep = self.episode
        got = [Repeated(s.last, s.count) for s in self._seen.values() if s.episode == ep and s.count]
        got.sort(key=lambda r: -r.count)
        return got[:k]
