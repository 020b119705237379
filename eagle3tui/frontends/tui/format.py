"""Cell and line formatting for the TUI: plain ``rich.text.Text``, never markup.

Everything that can contain text from outside (stage names from the config,
log lines, alert messages) goes through ``Text(plain, style=...)`` so that
``[bold]`` or ``[/]`` in it is shown as written and can never raise.
"""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text

from eagle3tui.durations import format_duration
from eagle3tui.supervisor.state import StageState, StageStatus, describe_gpu_activity
from eagle3tui.textsafe import printable
from eagle3tui.view import describe_figures, remaining_now

STATE_STYLE = {
    StageState.PENDING: "dim",
    StageState.WAITING: "cyan",
    StageState.QUEUED: "cyan",
    StageState.RUNNING: "bold green",
    StageState.STALLED: "bold yellow",
    StageState.FAILING: "bold red reverse",
    StageState.SUCCEEDED: "green",
    StageState.FAILED: "bold red",
    StageState.STOPPED: "yellow",
    StageState.SKIPPED: "dim",
}
LEVEL_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}
SPARKS = "▁▂▃▄▅▆▇█"

# Stage table columns: (key, header, width). The note takes what is left.
COLUMNS: list[tuple[str, str, int]] = [
    ("name", "Stage", 12),
    ("state", "State", 9),
    ("bar", "Progress", 11),
    ("count", "Done", 10),
    ("elapsed", "Elapsed", 7),
    ("eta", "ETA", 7),
    ("drift", "Drift", 5),
    ("attempt", "Try", 3),
    ("gpus", "GPUs", 8),
    ("note", "Note", 40),
]
# On a narrow terminal whole columns go, least useful first, instead of the
# last one being cut mid-word; the note keeps at least NOTE_MIN cells. Drift
# (late or early against the estimate) outlives Done, whose fraction the
# progress bar's percentage already shows: at 80 columns Drift stays.
DROP_ORDER = ["gpus", "attempt", "count", "drift", "elapsed", "eta", "bar"]
NOTE_MIN = 12
COLUMN_GAP = 2


def fit_columns(width: int) -> list[tuple[str, str, int]]:
    """The columns that fit in ``width`` cells, the note widened to fill the rest."""
    cols = [c for c in COLUMNS if c[0] != "note"]

    def used(cs: list[tuple[str, str, int]]) -> int:
        return 1 + sum(w + COLUMN_GAP for _, _, w in cs)  # 1: the row's leading mark

    for key in DROP_ORDER:
        if used(cols) + NOTE_MIN <= width:
            break
        cols = [c for c in cols if c[0] != key]
    note = width - used(cols)
    if note >= 4:
        cols.append(("note", "Note", note))
    return cols


def num(x: Any) -> str:
    """A count as people write it: 1234, 12.3k, 4.5M."""
    if x is None:
        return "?"
    try:
        v = float(x)
    except (TypeError, ValueError):
        return printable(str(x))[:8]
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.1f}M"
    if a >= 1e4:
        return f"{v / 1e3:.1f}k"
    return str(int(v)) if v.is_integer() else f"{v:.1f}"


def bar(fraction: float | None, width: int) -> str:
    """A text progress bar of ``width`` cells (eighth-block resolution)."""
    if fraction is None or width <= 0:
        return ""
    fraction = min(1.0, max(0.0, fraction))
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    out = "█" * full
    if part and full < width:
        out += " ▏▎▍▌▋▊▉"[part]
    return out.ljust(width, "·")


def sparkline(values: list[float], width: int, top: float | None = None) -> str:
    """The last ``width`` values as block characters on a 0..``top`` scale.

    ``top`` defaults to the largest value; for GPU memory pass the card's
    total, so a flat line at 50% shows half-height blocks, not full ones.
    """
    vals = values[-width:]
    if not vals:
        return ""
    top = top or max(vals) or 1.0
    last = len(SPARKS) - 1
    return "".join(SPARKS[max(0, min(last, round(v / top * last)))] for v in vals)


def gib(n: int | None) -> str:
    """Bytes as GiB with one decimal."""
    return "?" if n is None else f"{n / (1 << 30):.1f}"


def drift_style(drift: float, threshold: float) -> str:
    """Green when ahead of the estimate or within half the threshold, yellow up
    to it, red beyond. Only running late is a warning."""
    if drift <= threshold / 2:
        return "green"
    if drift <= threshold:
        return "yellow"
    return "bold red"


def stage_cells(st: StageStatus, now: float, drift_threshold: float = 0.25,
                held: str | None = None, error: str | None = None) -> dict[str, Text]:
    """The stage table's cells for one stage, keyed like ``COLUMNS``.

    ``error``: why the stage cannot start (its program is missing); it leads
    the note, in red, until it is put right.

    A failing stage's note ends with what its GPUs do (``GPU 0,1: 70.2 GiB
    held, 100% busy``): whether it still holds them is the point.
    """
    live = st.live or {}
    prog = live.get("progress") or {}
    eta = live.get("eta") or {}
    state_txt = st.state.value
    if st.kind == "service" and st.state.active:
        state_txt = "ready" if st.ready else "starting"
    if st.reason == "stopping":
        state_txt = "stopping"
    state_style = STATE_STYLE.get(st.state, "")
    if st.stale:
        state_txt, state_style = ("changed" if st.changed else "stale"), "bold yellow"
    frac: float | None = None
    n, total = prog.get("n"), prog.get("total")
    if n is not None and total:
        try:
            frac = float(n) / float(total)
        except (TypeError, ValueError, ZeroDivisionError):
            frac = None
    elif st.state == StageState.SUCCEEDED:
        frac = 1.0
    pct = f"{frac * 100:3.0f}%" if frac is not None else ""
    count = ""
    if n is not None:
        count = f"{num(n)}/{num(total) if total else '?'}"
        if prog.get("unit"):
            count += f" {printable(str(prog['unit']))}"
    if eta.get("done") and st.state.active:
        # The bar finished but the stage goes on: it was a phase (model loading),
        # not the stage's progress.
        frac, pct, count = None, "", f"{printable(str(prog.get('desc') or 'phase'))[:12]} done"
    elapsed = st.elapsed(now)
    remaining = remaining_now(eta, now)
    drift = eta.get("drift")
    # After a fatal error the projection is from before it: marked, never shown live.
    # ... and figures a dead driver left behind are no longer live either.
    eta_stale = bool(eta.get("stale") or live.get("stale")) or st.state == StageState.FAILING
    note = st.reason or describe_figures(live.get("figures")) or lifecycle_note(st)
    if st.hint:
        note = f"{note} ({st.hint})" if note else st.hint
    gpus_now = describe_gpu_activity((live.get("failing") or {}).get("gpu"))
    if st.state == StageState.FAILING and gpus_now:
        note = f"{note}; {gpus_now}" if note else gpus_now
    gpus = compact_gpu_list(held) if held else ("" if st.gpus == "-" else st.gpus)
    return {
        "name": Text(printable(st.name), style="bold"),
        "state": Text(state_txt, style=state_style),
        "bar": Text(f"{bar(frac, 6)}{pct:>5}" if frac is not None else "",
                    style="green" if st.state == StageState.SUCCEEDED else "cyan"),
        "count": Text(count),
        "elapsed": Text(format_duration(elapsed) if elapsed is not None else ""),
        "eta": (Text("stale", style="dim") if eta_stale and remaining is not None else
                Text(format_duration(remaining) if remaining is not None and st.state.active else "")),
        "drift": (Text("stale", style="dim") if eta_stale and drift is not None else
                  Text(f"{drift:+.0%}" if drift is not None else "",
                       style=drift_style(drift, drift_threshold) if drift is not None else "")),
        "attempt": Text(str(st.attempt) if st.attempt else ""),
        "gpus": Text(printable(gpus)),
        "note": (Text(printable(f"{error}; {note}" if note else error), style="bold red")
                 if error else Text(printable(note))),
    }


def compact_gpu_list(text: str) -> str:
    """``"0,1,2,3,5"`` as ``"0-3,5"``, so eight GPUs fit the GPUs column."""
    try:
        idx = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        return text
    out: list[list[int]] = []
    for i in idx:
        if out and out[-1][1] == i - 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return ",".join(f"{a}-{b}" if b > a else str(a) for a, b in out)


def lifecycle_note(st: StageStatus) -> str:
    """When the stage started or ended, for the note column: the stage list
    carries these lifecycle events, so the alerts panel need not."""
    try:
        if st.state.active and st.started_at:
            how = "resumed" if st.resume else ("restarted" if st.attempt > 1 else "started")
            return f"{how} {clock_text(st.started_at)[:5]}"
        if st.state == StageState.SUCCEEDED and st.ended_at:
            return f"succeeded {clock_text(st.ended_at)[:5]}"
    except (TypeError, ValueError, OverflowError, OSError):
        pass
    return ""


def clock_text(ts: float) -> str:
    """HH:MM:SS in local time."""
    return time.strftime("%H:%M:%S", time.localtime(ts))


def alert_text(alert: dict[str, Any]) -> Text:
    """One alert as a line: time, level, stage#attempt, kind, message, explanation."""
    level = str(alert.get("level", "info"))
    stage = alert.get("stage")
    where = f"{stage}#{alert.get('attempt')}" if stage else "pipeline"
    details = alert.get("details") or {}
    t = Text(no_wrap=True, overflow="ellipsis")
    try:
        stamp = clock_text(float(alert.get("time", 0)))
    except (TypeError, ValueError):
        stamp = "--:--:--"
    t.append(stamp + " ", style="dim")
    t.append(f"{level[:4].upper():4} ", style=LEVEL_STYLE.get(level, ""))
    t.append(printable(str(where)) + " ", style="bold")
    t.append(printable(str(alert.get("kind", ""))) + ": ")
    t.append(printable(str(alert.get("message", ""))))
    count = alert.get("count") or 1
    if isinstance(count, int) and count > 1:
        t.append(f" (x{count})", style="dim")
    expl = details.get("explanation")
    if expl and expl not in str(alert.get("message", "")):
        t.append(" — " + printable(str(expl)), style="italic")
    if details.get("line"):
        t.append(f" [line {details['line']}]", style="dim")
    return t
