"""Progress as the monitor tracks it: the newest state per worker, the ETA it feeds, drift.

:meth:`ProgressTracking._progress` reads one progress line (or a server's figures), keeps
the newest state of each worker, feeds the ETA tracker and says when the stage drifts
past its estimate; :func:`describe_progress` is its short human form.
"""

from __future__ import annotations

from eagle3tui.durations import format_duration
from eagle3tui.logs.events import LogEvent
from eagle3tui.logs.monitor_terms import ETA_DRIFT as _ETA_DRIFT, MAX_TEXT as _MAX_TEXT, PROGRESS as _PROGRESS
from eagle3tui.logs.progress import ProgressUpdate, parse_progress, serving_figures


def _fmt_s(seconds: float | None) -> str:
    return format_duration(seconds, unknown="?")


def describe_progress(p: ProgressUpdate) -> str:
    """Short human form: ``Loading safetensors checkpoint shards 4/64``."""
    parts = [p.desc or p.source]
    if p.n is not None:
        n = f"{p.n:g}"
        parts.append(f"{n}/{p.total:g}" if p.total is not None else n)
    elif p.percent is not None:
        parts.append(f"{p.percent:g}%")
    if p.metrics and p.source in ("trainer", "metrics", "throughput"):
        parts.append(", ".join(f"{k}={v:g}" for k, v in list(p.metrics.items())[:4]))
    return " ".join(parts)


class ProgressTracking:
    """The progress of a stage's log, line by line (a part of :class:`~eagle3tui.logs.monitor.StageLogMonitor`)."""

    def _progress(self, rest: str, worker: str | None, no: int, seg: str, force: bool = False) -> bool:
        """Parse ``rest`` as progress and emit it; False when it is none."""
        upd = parse_progress(rest.strip(), worker)
        if (
            (upd is None or upd.n is None)
            and worker is None
            and (seg[:1].isdigit() or seg[:1] == "[" and seg[1:2].isdigit())
        ):
            # Peeling took a boosting round's number for a stamp or a rank prefix
            # ("[163]\tname0's multi_logloss: 0.33", "0:\tlearn: 56.259\ttest: 56.098"):
            # the whole record says which round it is.
            whole = parse_progress(seg.strip(), worker)
            if whole is not None and whole.n is not None:
                upd = whole
        if upd is None:
            return False
        self.progress = upd
        self.progress_line = no
        # Stall news: a state that moved, not a bar or a stats line redrawn the same.
        key = (upd.desc, upd.n, upd.total, upd.percent, tuple(upd.metrics.items()))
        if self._progress_keys.get(worker) != key:
            if len(self._progress_keys) >= 64:
                self._progress_keys.clear()
            self._progress_keys[worker] = key
            self._moved = True
        if upd.metrics:
            figs = serving_figures(upd.metrics)
            if figs:
                self.figures.update(figs)
                self.figures_line = no
                if self.stage_kind == "service" and figs.get("running_reqs") == 0 and not figs.get("queued_reqs"):
                    # An idle server saying so (no request running or waiting) is
                    # healthy, not hung: its unchanging stats are news.
                    self._moved = True
        if upd.n != 0:
            # A counter still at zero did no work since: tqdm draws its bar once
            # more when an exception unwinds through it ("Processed prompts: 0%
            # 0/1" under the traceback), which is no sign the process went on.
            self.worked_line = no
            if len(self.worked_lines) < 1024:
                self.worked_lines.append(no)
            for p in self._pending:
                p.progress_after = True
        if self._held:
            keep = [h for h in self._held if h.event.line >= no]
            for h in self._held:
                if h.event.line < no:
                    self._settle_held(h, "progress", no)
            self._held = keep
        crossed = self.eta_tracker.feed(upd, self._now)
        eta = self.eta_tracker.eta
        projected = eta.projected_s if eta else None
        drift = eta.drift if eta else None
        self._emit(
            LogEvent(
                line=no,
                end_line=no,
                kind="progress",
                rule=_PROGRESS,
                text=rest.strip()[:_MAX_TEXT],
                worker=worker,
                explanation=describe_progress(upd),
                progress=upd,
                projected_s=projected,
                drift=drift,
                has_estimate=self.eta_tracker.estimate_s is not None,
            )
        )
        if crossed and eta is not None and drift is not None:
            tpi = eta.time_per_item
            rate = f"{tpi:.1f} s/{upd.unit}" if tpi and tpi >= 1 else (f"{1 / tpi:.2f} {upd.unit}/s" if tpi else "?")
            claim = eta.claim if eta.claim is not None else drift
            if eta.rate_evidence:
                msg = (
                    f"{describe_progress(upd)}: projected {_fmt_s(projected)} against an estimate of "
                    f"{_fmt_s(eta.estimate_s)} ({drift:+.0%})"
                )
                said = f"At the observed rate ({rate}) this will take {drift:+.0%} longer than estimated."
            else:
                # Only the time already run is evidence: the alert claims that, not the bar's projection.
                msg = f"{describe_progress(upd)}: over its estimate of {_fmt_s(eta.estimate_s)} by {claim:+.0%} so far"
                said = (f"The stage has already run {claim:+.0%} longer than estimated; this bar's rate "
                        f"({rate}) is too early or too uneven to project its end.")
            self._emit(
                LogEvent(
                    line=no,
                    end_line=no,
                    kind="warning",
                    rule=_ETA_DRIFT,
                    text=msg,
                    worker=worker,
                    explanation=said,
                    action="Expect a later finish; if the rate is abnormal, check disk/network throughput or the GPUs.",
                    progress=upd,
                    projected_s=projected,
                    drift=drift,
                )
            )
        return True
