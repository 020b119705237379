"""Stall and hang detection: quiet log, no progress, optional GPU witness."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from eagle3tui.logs import families
from eagle3tui.textsafe import printable
from eagle3tui.witness import GpuWitness

__all__ = ["GpuWitness", "StallDetector", "StallVerdict", "serving_idle"]

# The verdicts this module makes, checked against the registry (families.toml).
STALLED = families.family_id("stalled")
HANG_SUSPECTED = families.family_id("hang-suspected")
QUIET_BUT_WORKING = families.family_id("quiet-but-working")


@dataclass(frozen=True, slots=True)
class StallVerdict:
    """Result of a stall check: ``rule`` is stalled / hang-suspected / quiet-but-working."""

    rule: str
    kind: str
    quiet_s: float
    threshold_s: float
    message: str
    # What the process kept printing meanwhile: (line text made safe, times repeated).
    repeated: tuple[tuple[str, int], ...] = field(default=())


class StallDetector:
    """No news for longer than ``max(k * time_per_item, floor_s)``.

    News is what the caller passes to :meth:`note_activity`: the monitor
    calls it for output that says something new, not for the same wait line
    printed again (:mod:`repeats`). Reports once per quiet episode; news
    re-arms it. The one
    exception: "quiet but working" can still become "hang suspected" later in
    the same episode, once the GPU goes flat too (a load that finished and
    then hung must not stay hidden behind the earlier verdict).
    """

    def __init__(self, floor_s: float = 300.0, k: float = 10.0,
                 clock: Callable[[], float] | None = None) -> None:
        self.floor_s = floor_s
        self.k = k
        # Wall time of the last news, for display (``last_news_at``).
        self.last_activity: float | None = None
        # ``clock`` (a monotonic one, for a live log) measures the quiet time: a
        # step of the wall clock (NTP) then changes no quiet time. Without it
        # (a log replayed offline, at its own times), the ``now`` arguments do.
        self.clock = clock
        self._news_on_clock: float | None = None
        self._reported: str | None = None

    def note_activity(self, now: float, age_s: float = 0.0) -> None:
        """News (new output, progress) was seen at ``now`` (wall time), ``age_s`` seconds ago."""
        self.last_activity = now
        if self.clock is not None:
            self._news_on_clock = self.clock() - max(0.0, age_s)
        self._reported = None

    def quiet_s(self, now: float) -> float | None:
        """Seconds since the last news (None before any): on ``clock`` when there is one."""
        if self.clock is not None and self._news_on_clock is not None:
            return self.clock() - self._news_on_clock
        return None if self.last_activity is None else now - self.last_activity

    def threshold(self, time_per_item: float | None) -> float:
        """Seconds of quiet that count as a stall."""
        if time_per_item and time_per_item > 0:
            return max(self.k * time_per_item, self.floor_s)
        return self.floor_s

    def check(
        self,
        now: float,
        time_per_item: float | None = None,
        gpu: GpuWitness | None = None,
        last_progress: str | None = None,
        repeated: Sequence[tuple[str, int]] = (),
        idle: bool = False,
    ) -> StallVerdict | None:
        """A verdict the first time the quiet period passes the threshold.

        ``repeated``: the lines the process printed again and again meanwhile
        (untrusted log text) with their counts; the message names them.
        ``idle``: the process is a server that is ready and has nothing to do
        (see :func:`serving_idle`): its silence is no stall.
        """
        quiet = self.quiet_s(now)
        if quiet is None or self._reported in (STALLED, HANG_SUSPECTED) or idle:
            return None
        limit = self.threshold(time_per_item)
        if quiet <= limit:
            return None
        working = gpu is not None and (gpu.busy or gpu.memory_changing)
        if self._reported == QUIET_BUT_WORKING and (gpu is None or working):
            return None
        self._reported = STALLED if gpu is None else (QUIET_BUT_WORKING if working else HANG_SUSPECTED)
        seen = f"last progress: {last_progress}" if last_progress else "no progress seen yet"
        reps = tuple((_quote(text), n) for text, n in repeated if n > 0)
        if reps:
            said = " and ".join(f"'{t}' repeated {n} time{'s' if n != 1 else ''}" for t, n in reps)
            head = f"no news for {_fmt(quiet)} (limit {_fmt(limit)}): only {said}; {seen}"
        else:
            head = f"no output for {_fmt(quiet)} (limit {_fmt(limit)}); {seen}"
        if gpu is None:
            return StallVerdict(STALLED, "warning", quiet, limit, f"Stalled: {head}.", reps)
        if gpu.busy or gpu.memory_changing:
            return StallVerdict(
                QUIET_BUT_WORKING,
                "info",
                quiet,
                limit,
                f"Quiet but working: {head}; the GPU is still busy, so it is probably computing.",
                reps,
            )
        return StallVerdict(
            HANG_SUSPECTED,
            "warning",
            quiet,
            limit,
            f"Hang suspected: {head}; GPU memory and utilisation are flat too.",
            reps,
        )


def serving_idle(ready_at: float | None, last_news_at: float | None, figures: Mapping[str, float]) -> bool:
    """Whether a server is ready and idle: quiet because no request came, not stuck.

    ``ready_at``: when it was seen ready (its readiness probe or log pattern), None if not
    yet. Idle when it said nothing new since it became ready (vLLM V1 and llama.cpp print
    nothing between requests), or when its last live figures say no request runs or waits
    (vLLM V0 repeats "Running: 0 reqs, ... Pending: 0 reqs" while idle). A server that is
    not ready yet, or whose last figures show requests running, stalls as any process.
    """
    if ready_at is None:
        return False
    if last_news_at is None or last_news_at <= ready_at:
        return True
    running = figures.get("running_reqs")
    return running is not None and running == 0 and figures.get("queued_reqs", 0) == 0


_QUOTE_MAX = 100


def _quote(text: str) -> str:
    """Untrusted log text as one short printable phrase for a message."""
    t = " ".join(printable(text).split())
    return t if len(t) <= _QUOTE_MAX else t[: _QUOTE_MAX - 1].rstrip() + "…"


def _fmt(seconds: float) -> str:
    s = round(seconds)
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"
