"""The drift alert on real progress bars nobody here wrote: false alarms against their own time, and recall.

Every bar in the recorded logs under tests/fixtures (tqdm-style, with its elapsed time)
that runs to its total over at least ``MIN_S`` seconds and ``MIN_FRAMES`` frames is fed,
frame by frame at its own elapsed time, to :class:`~eagle3tui.logs.eta.EtaTracker`
twice: with an estimate equal to the time it took (it finished at +0%: any alert whose
claim exceeds the threshold is a false alarm the end contradicts) and with an estimate
of a half and a third of it (+100%, +200%: an alert should fire, and before the end).

    python bench/drift_real_bars.py [ROOT ...]
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from eagle3tui.logs.eta import EtaTracker  # noqa: E402
from eagle3tui.logs.progress import ProgressUpdate, parse_progress  # noqa: E402

MIN_S = 20.0
MIN_FRAMES = 10
THRESHOLD = 0.25


@dataclass
class Bar:
    source: str
    desc: str
    frames: list[ProgressUpdate]

    @property
    def took_s(self) -> float:
        return float(self.frames[-1].elapsed_s or 0.0)


def bars_in(path: Path) -> list[Bar]:
    """Completed bars of ``path`` (frames split on ``\\r`` and newlines), each in the order drawn."""
    open_bars: dict[tuple[str | None, float], list[ProgressUpdate]] = {}
    out: list[Bar] = []
    text = path.read_text(errors="replace").replace("\r", "\n")
    for line in text.splitlines():
        upd = parse_progress(line.strip())
        if upd is None or upd.n is None or upd.total is None or upd.elapsed_s is None or not upd.total:
            continue
        key = (upd.desc, upd.total)
        frames = open_bars.setdefault(key, [])
        if frames and (upd.n < frames[-1].n or upd.elapsed_s < (frames[-1].elapsed_s or 0)):
            frames.clear()  # the same bar drawn again from the start
        if frames and upd.n == frames[-1].n:
            continue
        frames.append(upd)
        if upd.n >= upd.total:
            if len(frames) >= MIN_FRAMES and upd.elapsed_s >= MIN_S:
                out.append(Bar(str(path.relative_to(ROOT)), upd.desc or "", list(frames)))
            frames.clear()
    return out


def alerts(bar: Bar, estimate_s: float) -> list[tuple[float, float]]:
    """(elapsed, claim) of each drift alert the tracker raises on ``bar`` against ``estimate_s``."""
    t = EtaTracker(estimate_s, THRESHOLD, stage_started_at=0.0)
    fired = []
    for upd in bar.frames:
        now = float(upd.elapsed_s or 0.0)
        if t.feed(upd, now=now) and t.eta is not None:
            claim = getattr(t.eta, "claim", None)
            fired.append((now, claim if claim is not None else float(t.eta.drift or 0.0)))
    return fired


def main(argv: list[str]) -> int:
    roots = [Path(a) for a in argv] or [ROOT / "tests" / "fixtures"]
    bars = [b for r in roots for p in sorted(r.rglob("*.log")) for b in bars_in(p)]
    false_alarms, caught, late = [], {2.0: 0, 3.0: 0}, {2.0: 0, 3.0: 0}
    for b in bars:
        wrong = [(t, c) for t, c in alerts(b, b.took_s) if c - 0.0 > THRESHOLD]
        if wrong:
            false_alarms.append((b, wrong))
        for factor in caught:
            fired = alerts(b, b.took_s / factor)
            if fired and fired[0][0] < b.took_s:
                caught[factor] += 1
                if fired[0][0] >= b.took_s / factor * (1 + THRESHOLD):
                    late[factor] += 1  # only once it was certain
    print(f"{len(bars)} completed bars (>= {MIN_FRAMES} frames, >= {MIN_S:g} s) in {len(roots)} root(s)")
    print(f"estimate = the bar's own time: {len(false_alarms)} bar(s) with a contradicted alert")
    for b, wrong in false_alarms:
        t, c = wrong[0]
        print(f"    {b.source}: {b.desc!r} {len(b.frames)} frames, {b.took_s:.0f}s: at {t:.0f}s claimed {c:+.0%}")
    for factor in caught:
        print(f"estimate = its time / {factor:g} (+{factor - 1:.0%}): alerted before the end on {caught[factor]} "
              f"of {len(bars)}, {late[factor]} of them only once certain")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
