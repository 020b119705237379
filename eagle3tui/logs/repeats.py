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
  clocks, dates and glued durations) were not seen with it: a count that moved
  ("Attempt 213", "worker_count=2"), a loss, a throughput, a new rank.

A line of a known template with values already seen is a repeat: the same
wait printed again. The monitor adds the news the parsers see (progress that
moved, an idle server's stats; see :meth:`StageLogMonitor._process`).

Memory is bounded (``max_templates`` templates, ``max_values`` value sets
each, least recently seen forgotten first) and only the last ``max_lines``
lines of a read are looked at (``big_lines`` of a read of ``big_read`` bytes
or more, i.e. catching up): a chatty loop's last lines say what it is doing
now, and a catch-up read is news anyway (its templates are new to the
filter). A line costs ~10 us here (a regex over its numbers): 64 lines of
each 1 MiB catch-up block would cost the catch-up ~15 %, 4 lines ~0.5 %.
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
# A line's values: its standalone numbers. Not a number glued to letters or a
# dot (``DP4``, ``v0.8.3``, ``26m 2s``, ``1.5s``, hex ids: names and
# durations), nor one joined to the next by ``:`` or ``-`` or following one of
# ``:,-`` (clocks, dates, milliseconds: ``12-09 11:25:53``, ``13:17:36,147``,
# ``2024-10-16T10:48:41.374Z``), which change on every line of a wait. One
# plain pattern: an alternation of clock and date shapes took 15 us a line.
_VALUES = re.compile(rb"(?<![\w.:,-])\d+(?:\.\d+)?(?![\w.]|[:-]\d)")


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

    def __init__(self, max_templates: int = 128, max_values: int = 64, max_lines: int = 64,
                 big_read: int = 256 * 1024, big_lines: int = 4) -> None:
        self.max_templates = max_templates
        self.max_values = max_values
        self.max_lines = max_lines
        self.big_read = big_read
        self.big_lines = big_lines
        self._seen: OrderedDict[bytes, _Seen] = OrderedDict()
        self.episode = 0  # bumped by news: repeats are counted per episode

    def feed(self, data: bytes) -> bool:
        """Whether ``data`` (complete lines) holds news; learns its lines."""
        end = len(data)
        if data.endswith(b"\n"):
            end -= 1
        # The last max_lines lines, found from the end (a catch-up read is MBs).
        start = end
        for _ in range(self.max_lines if end < self.big_read else self.big_lines):
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
