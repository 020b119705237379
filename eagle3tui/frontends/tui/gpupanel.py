"""GPU panel: one GPU per row with a memory bar, utilisation, temperature and
the stage holding its memory; a compact grid when the rows do not fit
(8 GPUs on an 80x24 terminal); a clear line when there is nothing to show.

It draws the read model's GPU rows (the driver's samples): the TUI samples
nothing itself.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from eagle3tui.frontends.tui.format import bar, compact_gpu_list, gib, sparkline
from eagle3tui.textsafe import printable
from eagle3tui.view import GpuRow, PipelineView

COMPACT_CELL = 19  # cells per GPU in the compact grid (four in 80 columns)


def _mem_style(frac: float | None) -> str:
    f = frac or 0
    return "green" if f < 0.8 else ("yellow" if f < 0.95 else "bold red")


def holder_text(g: GpuRow, with_bytes: bool) -> str:
    """Who holds the GPU's memory: stage names (with GiB when asked), then others."""
    who = [f"{printable(n)} {gib(b)}G" if with_bytes else printable(n) for n, b in g.holders]
    if g.other_bytes:
        who.append(f"other {gib(g.other_bytes)}G" if with_bytes else "other")
    return ", ".join(who)


def gpu_row_line(g: GpuRow, width: int, index_width: int = 1) -> Text:
    """One GPU on one line: ``GPU3 ████····  61.0/80.0G  87%  64°C  serve 58.0G``."""
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(f"GPU{printable(g.label):<{index_width}} ", style="bold")
    if g.stale:
        t.append("(no report) ", style="yellow")
    if g.error:
        t.append(printable(g.error), style="red")
        return t
    bar_w = 16 if width >= 90 else 10
    t.append(bar(g.mem_fraction, bar_w), style=_mem_style(g.mem_fraction))
    t.append(f" {gib(g.mem_used):>5}/{gib(g.mem_total)}G")
    t.append(f" {g.util_pct:3.0f}%" if g.util_pct is not None else "    ?")
    t.append(f" {g.temp_c:3.0f}°C" if g.temp_c is not None else "     ")
    room = width - t.cell_len - 2
    who = holder_text(g, with_bytes=True)
    if len(who) > room:
        who = holder_text(g, with_bytes=False)
    t.append("  " + (who or "idle"), style="" if who else "dim")
    room = width - t.cell_len - 2
    if room >= 8 and g.history:
        t.append("  " + sparkline(g.history, min(room, 24),
                                  top=float(g.mem_total) if g.mem_total else None), style="cyan")
    return t


def gpu_cell(g: GpuRow) -> Text:
    """One GPU in COMPACT_CELL - 1 cells for the compact grid: ``3 ██▌·119G 90% 60°``."""
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(f"{printable(g.label)} ", style="bold")
    if g.error:
        t.append("error", style="red")
    else:
        t.append(bar(g.mem_fraction, 4), style=_mem_style(g.mem_fraction))
        used = f"{g.mem_used / (1 << 30):.0f}G" if g.mem_used is not None else "?G"
        t.append(f"{used:>4}")
        t.append(f"{g.util_pct:3.0f}%" if g.util_pct is not None else "   ?")
        t.append(f" {g.temp_c:2.0f}°" if g.temp_c is not None else "    ")
    t.truncate(COMPACT_CELL - 1, overflow="ellipsis")
    t.pad_right(COMPACT_CELL - t.cell_len)
    return t


def holders_line(rows: list[GpuRow]) -> Text:
    """Which stage holds which GPUs, grouped: ``serve-eval 0-7 · other 3 · idle 4-5``."""
    by_holder: dict[str, list[int]] = {}
    for g in rows:
        names = [printable(n) for n, _ in g.holders] + (["other"] if g.other_bytes else [])
        for n in names or ["idle"]:
            # Another node's GPUs are listed under "<holder> on <node>".
            key = f"{n} on {printable(g.node)}" if g.node else n
            by_holder.setdefault(key, []).append(g.index)
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append("held: ", style="dim")
    for i, (name, idx) in enumerate(by_holder.items()):
        if i:
            t.append(" · ", style="dim")
        t.append(name, style="dim" if name.startswith("idle") else "bold")
        t.append(f" {compact_gpu_list(','.join(map(str, idx)))}")
    return t


def gpu_lines(view: PipelineView | None, width: int = 60, max_lines: int = 1000) -> Text:
    """The panel's text for one view (plain ``Text``, no markup).

    One GPU per line while they fit in ``max_lines``; otherwise a grid of
    compact cells, as many per line as ``width`` allows, and a line saying
    which stage holds which GPUs.
    """
    out = Text(no_wrap=True, overflow="ellipsis")
    if view is None:
        out.append("GPU: waiting for the first state read…", style="dim")
        return out
    note = view.gpu_note()
    if note is not None:
        out.append(printable(note), style="dim" if note.startswith("GPU:") else "yellow")
        return out
    rows = view.gpu_rows()
    if len(rows) <= max_lines:
        index_width = max((len(printable(g.label)) for g in rows), default=1)
        for i, g in enumerate(rows):
            if i:
                out.append("\n")
            out.append_text(gpu_row_line(g, width, index_width))
        return out
    per_line = max(1, width // COMPACT_CELL)
    for i, g in enumerate(rows):
        if i and i % per_line == 0:
            out.append("\n")
        out.append_text(gpu_cell(g))
    out.append("\n")
    out.append_text(holders_line(rows))
    return out


class GpuPanel(Static):
    """Shows the read model's GPUs; the app calls ``show``."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(gpu_lines(None), id=id)
        self._shown = ""
        self._view: PipelineView | None = None
        self.max_lines = 1000

    def show(self, view: PipelineView | None) -> None:
        """Redraw from ``view``'s GPU rows (only when the text changed)."""
        self._view = view
        text = gpu_lines(view, self.content_size.width or 60, self.max_lines)
        if text.plain != self._shown:  # NVML down or an idle GPU: nothing to redraw
            self._shown = text.plain
            self.update(text)

    def on_resize(self) -> None:
        # The layout (how many GPUs per line) depends on the width.
        if self._view is not None:
            self.show(self._view)
