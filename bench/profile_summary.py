"""Summarise a py-spy ``--format raw`` profile (folded stacks) into self and inclusive shares.

    python bench/profile_summary.py PROFILE.raw [--top 25] [--by function|line] [--title TEXT]

``bench/bench_follow.py`` writes such a file when ``BENCH_PYSPY=FILE`` is set.
Each line of the input is ``frame;frame;...;leaf COUNT``; a frame is
``function (file:line)``. ``--by function`` drops the line numbers, so that
one function's lines add up.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

_LINE = re.compile(r"^(?P<fn>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")


def frame_key(frame: str, by: str) -> str:
    """The name a frame is counted under: with its line number, or the function's alone."""
    if by == "line":
        return frame
    m = _LINE.match(frame)
    return f"{m['fn']} ({m['file']})" if m else frame


def summarise(text: str, by: str) -> tuple[int, Counter[str], Counter[str]]:
    """Total samples, samples per leaf frame (self) and per frame anywhere on the stack (inclusive)."""
    total = 0
    own: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    for raw in text.splitlines():
        stack, _, count = raw.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = [frame_key(f, by) for f in stack.split(";") if f]
        if frames:
            own[frames[-1]] += n
        for f in set(frames):
            incl[f] += n
    return total, own, incl


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profile")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--by", choices=["function", "line"], default="function")
    ap.add_argument("--title", default="")
    args = ap.parse_args()
    total, own, incl = summarise(Path(args.profile).read_text(errors="replace"), args.by)
    if args.title:
        print(f"# {args.title}")
    print(f"# py-spy raw profile {Path(args.profile).name}: {total} samples, counted by {args.by}\n")
    for name, table in (("self", own), ("inclusive", incl)):
        print(f"## {name}")
        for frame, n in table.most_common(args.top):
            print(f"{100.0 * n / max(total, 1):5.1f}% {frame}")
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
