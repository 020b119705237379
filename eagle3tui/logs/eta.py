"""ETA and drift against an estimate, from a robust per-item time.

tqdm's own rate is an exponential average that the first, cached item drags
around (the seed run's shard 1 loaded at 1.79 it/s, the rest at ~27-30 s/it).
Here the time per item is the median of the recent per-item intervals plus
the bar's latest reported rate, so one outlier in either moves it little.

The drift *alert* asks more of a projection than the display does. An early
rate is no evidence (the H200's synthesise bar projected +234% 34 s in and
finished at +20%), nor is a bar of unequal steps (the demo's evaluate, 7 runs
of 2-46 s, projected +170% at 3/7 and finished at +32%), nor time (the demo's
answer loaded its model for a minute, then projected +67% from 5% of its bar
and finished at +17%; its train, slowed by load to ~15 s a step for half its
estimate, projected at least +1694% at 4/200, and then the load lifted and
its steps took ~3.8 s), nor a
bar seen in one or two updates however many units they hold (the demo's
extract: 17,600 tokens in one step, +36%, finished at +10%). It fires when the
overshoot is certain (the stage already ran longer than the estimate plus the
threshold) or when the bar's rate is evidence: a fifth of the bar has passed,
at least three steps were seen, their per-item times agree (standard
deviation within 35% of their mean) and none was over within a second among
longer ones, and even the faster of the recent and the whole-bar rates
overshoots. ``Eta.basis`` says which, for the alert's text, and ``Eta.claim``
the drift it is sure of: what the alert claims, the time already run when
only that is evidence.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace

from eagle3tui.durations import format_duration
from eagle3tui.logs.progress import ProgressUpdate

# What makes a projection trustworthy enough to alert on (see the module docstring).
TRUST_BAR_FRACTION = 0.2
TRUST_MIN_INTERVALS = 3
TRUST_MAX_SPREAD = 0.35
# A bar's own elapsed time (tqdm's "[01:33<...]") is printed in whole seconds.
ELAPSED_RESOLUTION_S = 1.0


@dataclass(frozen=True, slots=True)
class Eta:
    """The stage's projection from its current progress bar: the one drift formula.

    ``projected_s`` is the stage's projected duration: the time since the stage
    started plus the current bar's remaining time (a lower bound: a stage often
    draws several bars, load then work), or, for a bar that is a named phase
    with its own estimate, that bar's elapsed plus remaining. ``drift`` =
    projected/estimate - 1 (None without an estimate). The drift alert and
    every display read these same fields. A bar that has completed while the
    stage goes on is a finished phase: it projects nothing (``done``).
    ``at`` is the wall clock of the observation, so a display can count the
    remaining time down between updates.
    """

    elapsed_s: float
    remaining_s: float | None
    projected_s: float | None
    time_per_item: float | None
    drift: float | None
    estimate_s: float | None
    phase: str | None = None
    done: bool = False
    at: float | None = None
    # How sure the drift is, in words ("certain: ..." or "from 34% of the bar, ..."); ""
    # while the projection is not trustworthy (see the module docstring).
    basis: str = ""
    # The drift the basis is sure of (at least this much over the estimate; at most ``drift``):
    # what the alert claims. None while the projection is not trustworthy.
    claim: float | None = None
    # Whether the bar's rate is part of that evidence (not only the time already run).
    rate_evidence: bool = False

    def remaining_at(self, now: float) -> float | None:
        """The remaining time counted down to ``now`` (never below zero)."""
        if self.remaining_s is None:
            return None
        return max(0.0, self.remaining_s - max(0.0, now - (self.at or now)))


class EtaTracker:
    """Feed :class:`ProgressUpdate` s; read :attr:`eta`.

    :meth:`feed` returns True when drift first rises above
    ``drift_threshold`` (once per crossing: it re-arms when drift falls back
    below 80 % of the threshold).
    """

    def __init__(self, estimate_s: float | None = None, drift_threshold: float = 0.25, window: int = 9,
                 phases: dict[str, float] | None = None, stage_started_at: float | None = None) -> None:
        """``stage_started_at``: when the stage started (wall clock); without it
        (an offline log) the stage is taken to start with its current bar."""
        self.estimate_s = estimate_s
        self.stage_started_at = stage_started_at
        # Estimates for named phases of a stage ("Loading safetensors checkpoint
        # shards" = 22 min): a bar whose description starts with a phase name
        # is judged against that phase's estimate, not the whole stage's.
        self.stage_estimate_s = estimate_s
        self.phases = dict(phases or {})
        self.phase: str | None = None
        self.drift_threshold = drift_threshold
        self.window = window
        self.eta: Eta | None = None
        self._key: tuple[str, float | None] | None = None
        self._t0: float | None = None  # wall clock of the bar's first sample
        self._base: tuple[float, float] | None = None  # (t, n) of the last interval end
        self._intervals: list[float] = []
        self._steps = 0  # intervals recorded on this bar
        # Steps seen to take under the bar's time resolution (drawn twice in one whole
        # second): (intervals recorded before it, an upper bound of its time per item).
        self._bounds: list[tuple[int, float]] = []
        self._first_interval: float | None = None
        # (t, n) where the bar's whole-bar rate is measured from (after a cached first item).
        self._origin: tuple[float, float] | None = None
        self._armed = True
        # The projection of the last drift crossing, for the alert's text.
        self.crossing: Eta | None = None
        # The state of bars the stage left for another one (an epoch's bar while its
        # validation bar runs): coming back to a bar resumes its intervals.
        self._saved: dict[tuple[str, float | None], tuple] = {}

    def reset(self) -> None:
        """Forget the current bar (a new bar started)."""
        self._key = None
        self._t0 = None
        self._base = None
        self._intervals = []
        self._steps = 0
        self._bounds = []
        self._first_interval = None
        self._origin = None
        self.eta = None

    def _following_unfinished_bar(self) -> bool:
        """Whether the bar followed now has a total and has not reached it."""
        return self._key is not None and self._key[1] is not None and self.eta is not None and not self.eta.done

    def _save(self) -> None:
        """Keep the followed bar's state, to resume it if the stage comes back to it."""
        if self._key is None or self._key[1] is None:
            return
        self._saved.pop(self._key, None)
        self._saved[self._key] = (self._t0, self._base, list(self._intervals), self._first_interval, self.eta,
                                  self.phase, self.estimate_s, self._armed, self._origin, self._steps,
                                  list(self._bounds))
        while len(self._saved) > 4:
            del self._saved[next(iter(self._saved))]

    def _restore(self, key: tuple[str, float | None]) -> None:
        """Resume a bar left earlier (see :meth:`_save`)."""
        (self._t0, self._base, intervals, self._first_interval, self.eta, self.phase, self.estimate_s,
         self._armed, self._origin, self._steps, self._bounds) = self._saved.pop(key)
        self._intervals = intervals
        self._key = key

    def _reported_remaining(self, upd: ProgressUpdate, now: float) -> None:
        """A line that says how long is left and counts nothing ("remaining: 1h 39m 38s", CatBoost):
        its own remaining time is the projection; no per-item time, so no drift alert from it alone."""
        if self._key is not None:
            self._save()
            self.reset()
        if upd.elapsed_s is not None:
            elapsed = upd.elapsed_s
        elif self.stage_started_at is not None:
            elapsed = max(0.0, now - self.stage_started_at)
        else:
            elapsed = 0.0
        remaining = upd.remaining_s
        projected = elapsed + remaining if remaining is not None else None
        self.phase = None
        self.estimate_s = self.stage_estimate_s
        drift = projected / self.estimate_s - 1.0 if projected is not None and self.estimate_s else None
        self.eta = Eta(elapsed, remaining, projected, None, drift, self.estimate_s, at=now)

    @property
    def time_per_item(self) -> float | None:
        """Current robust seconds per item, if known."""
        return self.eta.time_per_item if self.eta else None

    def feed(self, upd: ProgressUpdate, now: float) -> bool:
        """Add one observation at wall-clock ``now``; True on a drift crossing."""
        n, total = upd.n, upd.total
        if n is None and upd.percent is not None:
            # A bar that shows only its percentage (wget's dots, curl's meter, "Downloading: 45%")
            # counts percentage points out of a hundred.
            n, total = upd.percent, 100.0
        if n is None:
            if upd.remaining_s is not None and not self._following_unfinished_bar():
                self._reported_remaining(upd, now)
            return False
        # Not keyed by worker: tensor-parallel workers draw the same bar.
        key = (upd.desc, total)
        if key != self._key and total is None and self._following_unfinished_bar():
            # A counter without a total (an evaluation's metrics line, a trainer's
            # log dict, "epoch=0 step=14 ...") projects nothing: it must not
            # replace the bar that does, nor restart that bar's intervals.
            return False
        if key != self._key:
            self._save()
            if key in self._saved:
                self._restore(key)
        if key != self._key or (self._base is not None and n < self._base[1]):
            self.reset()
            self._key = key
            self.phase = next((p for p in self.phases if (upd.desc or "").startswith(p)), None)
            self.estimate_s = self.phases[self.phase] if self.phase else self.stage_estimate_s
            self._armed = True
        if self._t0 is None:
            self._t0 = now - (upd.elapsed_s or 0.0)
        t = upd.elapsed_s if upd.elapsed_s is not None else now - self._t0
        if self._base is None:
            self._base = (t, n)
            if n > 0:
                self._origin = (t, n)
        else:
            bt, bn = self._base
            if bn == 0 and n > 0:
                # The first item is often served from a cache (the seed run's
                # shard 1 took under a second, the rest ~27-30 s): keep it
                # out of the median, and start intervals after it.
                if t > bt:
                    self._first_interval = (t - bt) / n
                self._base = (t, n)
                self._origin = (t, n)
            elif n > bn and t > bt:
                # Both must advance: tqdm prints whole seconds, so two updates
                # in one second merge into a longer interval instead of a 0.
                self._intervals.append((t - bt) / (n - bn))
                del self._intervals[: -self.window]
                self._steps += 1
                self._base = (t, n)
            elif n > bn and t == bt and upd.elapsed_s is not None:
                # Drawn again within the same whole second of the bar's own clock: these
                # items took under a second. Their time merges into the next interval (a
                # median of zeros would say nothing), but a step that short among long
                # ones says the steps are unequal (see _rate_evidence).
                self._bounds.append((self._steps, ELAPSED_RESOLUTION_S / (n - bn)))
                del self._bounds[: -self.window]
        samples = list(self._intervals)
        reported = 1.0 / upd.rate if upd.rate else None
        if reported is not None:
            samples.append(reported)
        if not self._intervals and self._first_interval is not None and reported is None:
            samples.append(self._first_interval)
        tpi: float | None
        if samples:
            tpi = statistics.median(samples)
        elif n > 0 and t > 0:
            tpi = t / n
        else:
            tpi = None
        remaining: float | None = None
        if total is not None:
            left = max(total - n, 0.0)
            if not self._intervals and upd.remaining_s is not None:
                # One sample only: the bar's own remaining time is the best guess.
                remaining = upd.remaining_s
            elif tpi is not None:
                remaining = left * tpi
        done = total is not None and n >= total
        elapsed = t
        if self.phase is None and self.stage_started_at is not None:
            elapsed = max(t, now - self.stage_started_at)
        projected = elapsed + remaining if remaining is not None and not done else None
        drift = projected / self.estimate_s - 1.0 if projected is not None and self.estimate_s else None
        self.eta = Eta(t, None if done else remaining, projected, tpi, drift, self.estimate_s,
                       phase=self.phase, done=done, at=now)
        if drift is None:
            return False
        basis, claim, from_rate = self._trust(n, total, t, elapsed, drift, left if total is not None else None)
        if basis:
            self.eta = replace(self.eta, basis=basis, claim=claim, rate_evidence=from_rate)
        if drift > self.drift_threshold and self._armed and basis:
            self._armed = False
            self.crossing = self.eta
            return True
        if drift < self.drift_threshold * 0.8:
            self._armed = True
        return False

    def _trust(self, n: float, total: float | None, t: float, elapsed: float, drift: float,
               left: float | None) -> tuple[str, float | None, bool]:
        """How sure an overshoot is, in words, the drift it is sure of, and whether the bar's
        rate is part of the evidence; ("", None, False) when nothing is evidence of one (see
        the module docstring)."""
        est = self.estimate_s
        if not est or drift <= self.drift_threshold:
            return "", None, False
        parts: list[str] = []
        claims: list[float] = []
        if elapsed >= est * (1.0 + self.drift_threshold):
            parts.append(f"certain: {format_duration(elapsed)} already ran against {format_duration(est)}")
            claims.append(elapsed / est - 1.0)
        from_rate = self._rate_evidence(n, total, t, elapsed, left, est)
        if from_rate is not None:
            parts.append(from_rate[0])
            claims.append(from_rate[1])
        if not claims:
            return "", None, False
        return "; ".join(parts), min(max(claims), drift), from_rate is not None

    def _rate_evidence(self, n: float, total: float | None, t: float, elapsed: float, left: float | None,
                       est: float) -> tuple[str, float] | None:
        """The overshoot the bar's rate is evidence of, or None (what the rate says is no evidence)."""
        if total is None or left is None or not total:
            return None
        bar = n / total
        # Only the share of the bar seen bounds how far its rate is stretched (from a fifth: 4
        # times). Time is no evidence: not the stage's (a model load before the bar), nor the
        # bar's own (the demo's train: ~15 s a step under load for half its estimate, "at least
        # +1694%" at 4/200, then ~3.8 s a step once the load lifted). A bar too slow to reach
        # a fifth in time is certain to overshoot first.
        if bar < TRUST_BAR_FRACTION:
            return None  # an early rate is no evidence: warm-up, caches, ramps and load even out
        # Steps the bar was seen to take, not the units it counts: 17,600 tokens in two updates
        # are two observations of the rate, however many tokens they hold.
        recent = list(self._intervals)
        if len(recent) < TRUST_MIN_INTERVALS:
            return None
        med = statistics.median(recent)
        mean = statistics.fmean(recent)
        if med <= 0 or mean <= 0:
            return None
        # Not a robust spread: one short step among long ones is the point (unequal steps).
        spread = statistics.pstdev(recent) / mean
        if spread > TRUST_MAX_SPREAD:
            return None  # steps of unequal size: the next ones may be short
        if any(self._steps - at <= self.window and bound < med * (1.0 - TRUST_MAX_SPREAD)
               for at, bound in self._bounds):
            # A recent step was over within a second, surely shorter than steady steps can
            # be (under the median less the spread allowed): the next ones may be too.
            return None
        rates = [med]
        if self._origin is not None and n > self._origin[1] and t > self._origin[0]:
            rates.append((t - self._origin[0]) / (n - self._origin[1]))
        at_least = (elapsed + left * min(rates)) / est - 1.0
        if at_least <= self.drift_threshold:
            return None  # the bar's own average says it may still make it
        return (f"from {bar:.0%} of the bar and {format_duration(elapsed)} of "
                f"{format_duration(est)}, the rate steady within {spread:.0%}: at least "
                f"{at_least:+.0%}"), at_least
