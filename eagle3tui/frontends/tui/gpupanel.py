"""GPU panel: per GPU a memory bar, utilisation, temperature, a memory sparkline
and who holds the memory; a clear line when there is nothing to show.

It draws the read model's GPU rows (the driver's samples): the TUI samples
nothing itself.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from eagle3tui.frontends.tui.format import bar, gib, sparkline
from eagle3tui.textsafe import printable
from eagle3tui.view import PipelineView


def gpu_lines(view: PipelineView | None, width: int = 60) -> Text:
    """The panel's text for one view (plain ``Text``, no markup)."""
    out = Text(no_wrap=True, overflow="ellipsis")
    if view is None:
        out.append("GPU: waiting for the first state read…", style="dim")
        return out
    note = view.gpu_note()
    if note is not None:
        out.append(printable(note), style="dim" if note.startswith("GPU:") else "yellow")
        return out
    bar_w = 10 if width < 70 else 16
    for i, g in enumerate(view.gpu_rows()):
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
        spark = sparkline(g.history, 12 if width < 70 else 24,
                          top=float(g.mem_total) if g.mem_total else None)
        if spark:
            out.append(" " + spark, style="cyan")
        who = [f"{printable(n)} {gib(b)}G" for n, b in g.holders]
        if g.other_bytes:
            who.append(f"other {gib(g.other_bytes)}G")
        out.append("\n    " + (" · ".join(who) if who else "no compute processes"),
                   style="" if who else "dim")
    return out


class GpuPanel(Static):
    """Shows the read model's GPUs; the app calls ``show``."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(gpu_lines(None), id=id)
        self._shown = ""

    def show(self, view: PipelineView | None) -> None:
        """Redraw from ``view``'s GPU rows (only when the text changed)."""
        text = gpu_lines(view, self.size.width or 60)
        if text.plain != self._shown:  # NVML down or an idle GPU: nothing to redraw
            self._shown = text.plain
            self.update(text)
