"""Finding the lines of a block worth reading: the progress markers and where they sit.

The monitor's scans (by line, and by line template) read only the lines a rule's
keyword or a progress marker points at; this module finds the marker lines.
"""

from __future__ import annotations

import re

from eagle3tui.logs.progress import PROGRESS_SHAPE, RESULT_MARKERS

try:
    import ahocorasick_rs as _ahocorasick
except ImportError:  # pragma: no cover
    _ahocorasick = None  # type: ignore[assignment]

# Literals that every line parse_progress can use contains one of, but for
# the counters and meter rows that progress.PROGRESS_SHAPE finds by shape.
PROGRESS_MARKERS = [
    b"it/s",
    b"s/it",
    b"/s]",
    b"/s,",
    b"/s ",
    b"%|",
    b"Completed |",
    "━".encode(),
    b"'loss'",
    b'"loss"',
    b"'epoch'",
    b"throughput",
    b"Throughput",
    b"step",
    b"Step",
    b"STEP",
    b"loss",
    b"Loss",
    b"Epoch",
    b"epoch",
    b"iter",
    b"Iter",
    b"PerSec",
    b"per second",
    b"/sec",
    b"acc",
    b"Acc",
    b"metric",
    b"progress",
    b"Decode batch",
    b"Prefill batch",
    b"/step",
    b"t/s",
    b"/s)",
    b"Progress",
    b"Batch",  # "Pass 0, Batch 100, Cost 2.261713"
    b"elapsed",  # a counter and the time spent: "boosting round 0, 1 sec elapsed"
    b"% complete",
    b"BLEU",
    b"bleu",
    b"rouge",
    b"ROUGE",
    b"ppl",
    b"perplexity",
    b"Perplexity",
    b"reward",
    b"samples/s",
    # counter shapes: a count's percentage "(45%)", an ETA field
    b"%)",
    b"ETA",
    b"eta",
    # a rate that ends the line ("eval rate:  24.61 tokens/s")
    b"/s\n",
    b"/s\r",
    # a boosting round's evaluation record ("[12]\tvalid-auc:0.81", "[64]  train-rmse:1.66")
    b"]\t",
    b"]:\t",  # LightGBM's cross-validation rounds ("[3]:\tvalid's l2:0.0003+0.0006")
    b"-rmse:",
    b"-auc:",
    b"logloss:",
    # counter shapes, not words (round progress3): a percentage then its count ("45% (184/408)"), a
    # remaining time ("remaining: 1h 39m 38s"), a round led by its number ("0:\tlearn: ..."), a figure
    # with its spread ("0.7054|±  |0.0094"), a rate by its name ("tokens_per_sec"), wget's dots, a drawn
    # bar's head ("[==>   ]", "[>   ]"), seconds per spaced unit ("2.13s/ examples]")
    b"% (",
    b"remaining",
    b":\t",
    "±".encode(),
    b"per_sec",
    b"........ ",
    b"=>",
    b"[>",
    b"s/ ",
    # a percentage that ends the line or says it is done ("Downloading: 45%", "Uploading 45% done")
    b"%\n",
    b"%\r",
    b"% done",
    *RESULT_MARKERS,  # a report's measured figures (progress.RESULT_MARKERS)
]


class Markers:
    """Finds progress-marker lines in a block of bytes."""

    def __init__(self) -> None:
        self._ac = (
            _ahocorasick.BytesAhoCorasick(PROGRESS_MARKERS, implementation=_ahocorasick.Implementation.DFA)
            if _ahocorasick
            else None
        )
        self._rx = re.compile(b"|".join(re.escape(m) for m in PROGRESS_MARKERS))

    def positions(self, data: bytes, start: int = 0) -> list[int]:
        """Match positions (sorted) in ``data[start:]``; a shape counts where it starts."""
        view = data[start:] if start else data
        if self._ac is not None:
            got = [s + start for _k, s, _e in self._ac.find_matches_as_indexes(view)]
        else:
            got = [m.start() + start for m in self._rx.finditer(view)]
        rows = [m.start() + start for m in PROGRESS_SHAPE.finditer(view)]
        if rows:
            got = sorted(got + rows)
        return got

    def last_lines(self, data: bytes, k: int) -> list[int]:
        """Starts of the last ``k`` lines holding a marker, searching from the end."""
        n = len(data)
        window = 64 * 1024
        while True:
            start = max(0, n - window)
            # The first line of a window may be cut: begin at a line start.
            if start:
                start = data.find(b"\n", start) + 1 or n
            pos = self.positions(data, start)
            if pos:
                out: list[int] = []
                for p in reversed(pos):
                    ls = data.rfind(b"\n", 0, p) + 1
                    if not out or ls != out[-1]:
                        out.append(ls)
                        if len(out) == k:
                            break
                return out[::-1]
            if start == 0 or window >= n:
                return []
            window *= 8

    def line_starts(self, data: bytes) -> list[int]:
        """Starts of all lines holding a marker."""
        out: list[int] = []
        end = -1
        for p in self.positions(data):
            if p > end:
                ls = data.rfind(b"\n", 0, p) + 1
                end = data.find(b"\n", p)
                if end < 0:
                    end = len(data)
                out.append(ls)
        return out


_MARKERS: Markers | None = None


def markers() -> Markers:
    global _MARKERS
    if _MARKERS is None:
        _MARKERS = Markers()
    return _MARKERS

