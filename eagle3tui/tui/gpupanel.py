"""GPU panel: per GPU a memory bar, utilisation, temperature, a memory sparkline
and who holds the memory; a clear line when NVML is unavailable."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from eagle3tui.gpu.monitor import TelemetryUpdate
from eagle3tui.textsafe import printable
from eagle3tui.tui.format import bar, gib, sparkline


def gpu_lines(update: TelemetryUpdate | None, history: dict[int, list[float]],
              width: int = 60) -> Text:
    """The panel's text for one telemetry update (plain ``Text``, no markup)."""
    out = Text(no_wrap=True, overflow="ellipsis")
    if update is None:
        out.append("GPU: waiting for the first sample…", style="dim")
        return out
    snap = update.snapshot
    if not snap.available:
        out.append(printable(snap.error or "NVML unavailable"), style="yellow")
        return out
    if not snap.gpus:
        out.append("NVML sees no GPUs on this host", style="yellow")
        return out
    holders: dict[int, list[tuple[str, int]]] = {}
    for name, use in update.attribution.stages.items():
        for idx, b in use.bytes_by_gpu.items():
            holders.setdefault(idx, []).append((name, b))
    others: dict[int, int] = {}
    for p in update.attribution.other:
        others[p.gpu_index] = others.get(p.gpu_index, 0) + (p.used_bytes or 0)
    bar_w = 10 if width < 70 else 16
    for i, g in enumerate(snap.gpus):
        if i:
            out.append("\n")
        out.append(f"GPU{g.index} ", style="bold")
        if g.error:
            out.append(printable(g.error), style="red")
            continue
        frac = g.mem_fraction
        style = "green" if (frac or 0) < 0.8 else ("yellow" if (frac or 0) < 0.95 else "bold red")
        out.append(bar(frac, bar_w), style=style)
        out.append(f" {gib(g.mem_used)}/{gib(g.mem_total)}G")
        if g.util_pct is not None:
            out.append(f" {g.util_pct:3.0f}%")
        if g.temp_c is not None:
            out.append(f" {g.temp_c:.0f}°C")
        spark = sparkline(history.get(g.index, []), 12 if width < 70 else 24,
                          top=float(g.mem_total) if g.mem_total else None)
        if spark:
            out.append(" " + spark, style="cyan")
        who = [f"{printable(n)} {gib(b)}G" for n, b in sorted(holders.get(g.index, []))]
        if others.get(g.index):
            who.append(f"other {gib(others[g.index])}G")
        out.append("\n    " + (" · ".join(who) if who else "no compute processes"),
                   style="" if who else "dim")
    return out


class GpuPanel(Static):
    """Shows the latest ``TelemetryUpdate``; the app calls ``show``."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(gpu_lines(None, {}), id=id)
        self._shown = ""

    def show(self, update: TelemetryUpdate | None, history: dict[int, list[float]]) -> None:
        """Redraw from ``update`` and per-GPU memory history (bytes, oldest first)."""
        text = gpu_lines(update, history, self.size.width or 60)
        if text.plain != self._shown:  # NVML down or an idle GPU: nothing to redraw
            self._shown = text.plain
            self.update(text)
