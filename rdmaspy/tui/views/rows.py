"""A table of many rows drawn a line at a time, shared by the analysis views.

Like the packet list, it is a line-API widget (``ScrollView.render_line``): only the rows on the
screen are formatted, so a view over 100,000 transactions opens as fast as one over ten.  A view
hands it a ``RowSource`` (how many rows, the cells of row i, its style) and is told through
messages when the cursor moves (``Highlighted``) or a row is opened with Enter or a click
(``Chosen``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

HEADING_STYLE = Style(bold=True, underline=True)
CURSOR_STYLE = Style(reverse=True, bold=True)
ERROR_STYLE = Style(color="#ffffff", bgcolor="#870000", bold=True)
WARNING_STYLE = Style(color="#000000", bgcolor="#d7af00")
NOTE_STYLE = Style(color="#87afd7")
SEVERITY_STYLES: dict[str, Style] = {"error": ERROR_STYLE, "warning": WARNING_STYLE, "note": NOTE_STYLE}


@dataclass(frozen=True, slots=True)
class Column:
    title: str
    width: int
    right: bool = False     # numbers are right-aligned


def cell(text: str, col: Column) -> str:
    """``text`` cut or padded to the column's width (one space between columns)."""
    if len(text) > col.width:
        text = text[:max(col.width - 1, 0)] + "…"
    return text.rjust(col.width) if col.right else text.ljust(col.width)


def line_of(cells: Sequence[str], columns: Sequence[Column]) -> str:
    """One row's text; the last column takes what it needs."""
    parts = [cell(c, col) for c, col in zip(cells[:-1], columns[:-1])]
    if cells:
        parts.append(cells[-1] if len(cells) == len(columns) else cell(cells[-1], columns[len(cells) - 1]))
    return " ".join(parts)


class RowSource:
    """What a table shows: ``count()`` rows, the cells of each, and an optional style per row."""

    def __init__(self, count: Callable[[], int], cells: Callable[[int], Sequence[str]],
                 style: Callable[[int], Style | None] | None = None) -> None:
        self.count = count
        self.cells = cells
        self.style = style


class RowTable(ScrollView, can_focus=True):
    """Rows of a ``RowSource`` under a heading line; the cursor row is highlighted."""

    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown,space", "page(1)", "Page down", show=False),
        Binding("home", "top", "Top", show=False),
        Binding("end", "bottom", "Bottom", show=False),
        Binding("enter", "choose", "Open", show=False),
    ]
    DEFAULT_CSS = """
    RowTable { height: 1fr; overflow-x: auto; overflow-y: scroll; }
    RowTable:focus { background-tint: $foreground 4%; }
    """

    cursor: reactive[int] = reactive(0, always_update=True, repaint=False)

    class Highlighted(Message):
        """The cursor moved to row ``row`` (0-based; -1 when the table is empty)."""

        def __init__(self, table: "RowTable", row: int) -> None:
            super().__init__()
            self.table = table
            self.row = row

        @property
        def control(self) -> "RowTable":
            return self.table

    class Chosen(Message):
        """Enter or a click on row ``row``."""

        def __init__(self, table: "RowTable", row: int) -> None:
            super().__init__()
            self.table = table
            self.row = row

        @property
        def control(self) -> "RowTable":
            return self.table

    def __init__(self, columns: Sequence[Column], source: RowSource, *, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.columns = list(columns)
        self.source = source
        self._rows = 0
        self._width = sum(c.width + 1 for c in self.columns) + 40
        self._announced = -2

    @property
    def rows(self) -> int:
        return self._rows

    def set_columns(self, columns: Sequence[Column]) -> None:
        """Show other columns (the words of other upper layers came into view)."""
        if list(columns) != self.columns:
            self.columns = list(columns)
            self._width = sum(c.width + 1 for c in self.columns) + 40
            self.virtual_size = Size(self._width, self._rows + 1)
            self.refresh()

    def reload(self) -> None:
        """Take the source's row count anew (rows were added, or the view's selection changed)."""
        n = self.source.count()
        changed = n != self._rows
        self._rows = n
        self.virtual_size = Size(self._width, n + 1)
        if self.cursor >= n:
            self.cursor = max(n - 1, 0)
        self.refresh()
        if changed:
            self._announce()

    # -- drawing ----------------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        scroll_x, scroll_y = self.scroll_offset
        if y == 0:
            text = line_of([c.title for c in self.columns], self.columns)
            return self._strip(text, HEADING_STYLE, scroll_x, width)
        row = scroll_y + y - 1
        if row >= self._rows:
            return Strip.blank(width)
        text = line_of(self.source.cells(row), self.columns)
        style = self.source.style(row) if self.source.style is not None else None
        if row == self.cursor:
            style = CURSOR_STYLE if style is None else style + CURSOR_STYLE
        return self._strip(text, style or Style(), scroll_x, width)

    @staticmethod
    def _strip(text: str, style: Style, scroll_x: int, width: int) -> Strip:
        visible = text[scroll_x:scroll_x + width].ljust(width)
        return Strip([Segment(visible, style)], width)

    # -- moving -----------------------------------------------------------------------------------
    def watch_cursor(self, old: int, new: int) -> None:
        height = max(self.scrollable_content_region.height - 1, 1)
        top = int(self.scroll_offset.y)
        if new < top:
            self.scroll_to(y=new, animate=False)
        elif new >= top + height:
            self.scroll_to(y=new - height + 1, animate=False)
        self.refresh()
        self._announce()

    def _announce(self) -> None:
        row = self.cursor if self._rows else -1
        if row != self._announced:
            self._announced = row
            self.post_message(self.Highlighted(self, row))

    def move_to(self, row: int) -> None:
        if self._rows:
            self.cursor = min(max(row, 0), self._rows - 1)

    def action_cursor(self, step: int) -> None:
        self.move_to(self.cursor + step)

    def action_page(self, direction: int) -> None:
        self.move_to(self.cursor + direction * max(self.scrollable_content_region.height - 2, 1))

    def action_top(self) -> None:
        self.move_to(0)

    def action_bottom(self) -> None:
        self.move_to(self._rows - 1)

    def action_choose(self) -> None:
        if self._rows:
            self.post_message(self.Chosen(self, self.cursor))

    def on_click(self, event: events.Click) -> None:
        row = int(self.scroll_offset.y) + event.y - 1
        if 0 <= row < self._rows:
            self.move_to(row)
            if event.chain >= 2:
                self.post_message(self.Chosen(self, row))
