"""The stage list: one row per stage, updated in place by row key.

Only cells whose text changed are rewritten (a DataTable repaint is the
expensive part), and every cell is a plain ``Text`` so nothing from the
config or the logs is read as markup.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from eagle3tui.state import StageStatus
from eagle3tui.tui.format import COLUMNS, stage_cells


class StageTable(DataTable[Text]):
    """Stages with state, progress, counts, elapsed, ETA, drift, attempt and GPUs."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False)
        self._cells: dict[str, dict[str, str]] = {}

    def on_mount(self) -> None:
        for key, label, width in COLUMNS:
            self.add_column(label, key=key, width=width)

    def show(self, statuses: list[StageStatus], now: float, drift_threshold: float,
             held: dict[str, str]) -> None:
        """Bring the rows up to date with ``statuses`` (configuration order)."""
        names = [s.name for s in statuses]
        if list(self._cells) != names:
            # The set of stages changed (first fill): rebuild rows once.
            cursor = self.cursor_row
            self.clear()
            self._cells = {}
            for st in statuses:
                cells = stage_cells(st, now, drift_threshold, held.get(st.name))
                self.add_row(*(cells[k] for k, _, _ in COLUMNS), key=st.name)
                self._cells[st.name] = {k: c.plain + "\0" + str(c.style) for k, c in cells.items()}
            if statuses:
                self.move_cursor(row=min(max(cursor, 0), len(statuses) - 1))
            return
        for st in statuses:
            cells = stage_cells(st, now, drift_threshold, held.get(st.name))
            old = self._cells[st.name]
            for key, cell in cells.items():
                # Compare text and style: a state change can keep its width.
                sig = cell.plain + "\0" + str(cell.style)
                if old.get(key) != sig:
                    old[key] = sig
                    self.update_cell(st.name, key, cell)

    @property
    def selected_stage(self) -> str | None:
        """Name of the stage under the cursor."""
        if not self._cells or self.cursor_row < 0:
            return None
        names = list(self._cells)
        return names[self.cursor_row] if self.cursor_row < len(names) else None

    def select_stage(self, name: str) -> None:
        """Move the cursor to ``name``."""
        names = list(self._cells)
        if name in names:
            self.move_cursor(row=names.index(name))
