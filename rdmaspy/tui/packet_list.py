"""The packet list: one row per displayed frame, drawn from the index a line at a time.

A line-API widget (``ScrollView.render_line``): only the rows on screen are read, so a million-frame
capture draws as fast as a ten-frame one.  Rows show the summary line ``rdmaspy decode`` prints,
coloured by protocol, and errors and warnings of the expert stand out.
"""
from __future__ import annotations

import time
from array import array

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from .index import SEVERITY_ERROR, SEVERITY_WARNING, PacketIndex

# The column heading, aligned on the summary line's fixed widths (decode's layout).
HEADING = "    No.         Time          Source → Destination     Protocol Length Info"
# Below this width the Time column is left out, so that Info still shows on an 80-column terminal.
NARROW = 110
NARROW_HEADING = HEADING[:7] + HEADING[20:]
GROW_SECONDS = 1.0      # while the file is read, rows below a full screen are taken in this often


def without_time(line: str) -> str:
    """A summary line without its Time column (when the line has decode's usual widths there)."""
    if len(line) > 21 and line[7] == " " and line[20] == " " and line[19] != " ":
        return line[:7] + line[20:]
    return line

# Protocol colours (foreground on the terminal's background), by the start of the Protocol column.
_PROTOCOL_COLOURS: tuple[tuple[str, str], ...] = (
    ("NFS", "#87afd7"), ("NVMe", "#afafd7"), ("RPCoRDMA", "#87d7d7"), ("RPC", "#87d7af"), ("IB CM", "#afd787"),
    ("MAD", "#afd787"), ("LID", "#afd787"), ("MPA", "#d7af87"), ("iWARP", "#d7af87"), ("TCP", "#a8a8a8"),
    ("RoCE", "#d7afd7"), ("IB", "#d7afd7"), ("InfiniBand", "#d7afd7"), ("ICMP", "#d7d787"),
    ("ARP", "#a8a8a8"),
)
ERROR_STYLE = Style(color="#ffffff", bgcolor="#870000", bold=True)
WARNING_STYLE = Style(color="#000000", bgcolor="#d7af00")
CURSOR_STYLE = Style(reverse=True, bold=True)


def protocol_style(proto: str) -> Style:
    for prefix, colour in _PROTOCOL_COLOURS:
        if proto.startswith(prefix):
            return Style(color=colour)
    return Style()


class PacketList(ScrollView, can_focus=True):
    """The displayed frames of a ``PacketIndex``; ``displayed`` None means every frame."""

    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown,space", "page(1)", "Page down", show=False),
        Binding("g,home", "top", "Top", show=False),
        Binding("G,end", "bottom", "Bottom", show=False),
        Binding("enter", "open", "Open", show=False),
    ]
    DEFAULT_CSS = """
    PacketList { height: 1fr; overflow-x: auto; overflow-y: scroll; }
    """

    cursor: reactive[int] = reactive(0, always_update=True, repaint=False)

    class Selected(Message):
        """The cursor moved to a frame (``frame``: 1-based number; 0 when the list is empty)."""

        def __init__(self, frame: int) -> None:
            super().__init__()
            self.frame = frame

    class Opened(Message):
        """Enter on a row: show its detail."""

    def __init__(self, index: PacketIndex, *, follow: bool = False, id: str | None = None) -> None:
        super().__init__(id=id)
        self.index = index
        self.displayed: array | None = None     # row numbers (0-based) shown, in order; None: all
        self.follow = follow                    # keep the last row selected while rows arrive (live)
        self._may_follow = follow               # live mode: G and the last row start following again
        self._rows = 0
        self._coloured = 0                      # rows whose colour was final when last drawn
        self._grown_at = 0.0                    # when the list last took in rows below a full screen
        self._styles: dict[int, Style] = {}
        self._width = len(HEADING)

    # -- size -----------------------------------------------------------------------------------
    @property
    def rows(self) -> int:
        return self._rows

    @property
    def available(self) -> int:
        """The rows there are to show by now (the list takes them in at ``refresh_rows``)."""
        return self.index.count if self.displayed is None else len(self.displayed)

    def refresh_rows(self) -> None:
        """Take the rows the index has published by now (called by the app as the index grows)."""
        n = self.available
        coloured = self.index.coloured
        if n != self._rows and self._later(n):
            n = self._rows
        if n == self._rows:
            if coloured != self._coloured:
                # the analysis reached more rows: those on screen may have changed colour
                shown_to = round(self.scroll_offset.y) + self.size.height
                if self._coloured < shown_to:
                    self.refresh()
                self._coloured = coloured
            return
        self._coloured = coloured
        at_end = self.follow and (self._rows <= 0 or self.cursor >= self._rows - 1)
        was_empty = self._rows <= 0
        self._rows = n
        self.virtual_size = Size(max(self._width, 200), n)
        if at_end:
            self.cursor = n - 1
        elif self._rows and self.cursor >= n:
            self.cursor = n - 1
        self.refresh()
        if was_empty and n and self.cursor == 0:
            self._announce()        # the first row appeared under the cursor: show its detail

    def _later(self, n: int) -> bool:
        """Whether rows that came below a full screen wait: while the file is read and the list does not
        follow them, it takes them in once a second, since each change of its size lays the screen out
        again (for the scroll bar), which took the app's process a good part of its time."""
        if self.follow or self.displayed is not None or self.index.done or n < self._rows:
            return False
        if self._rows < round(self.scroll_offset.y) + self.size.height:
            return False
        now = time.monotonic()
        if now - self._grown_at < GROW_SECONDS:
            return True
        self._grown_at = now
        return False

    def set_displayed(self, rows: array | None) -> None:
        """Show only these rows (a display filter's result), keeping the selected frame when it stays."""
        keep = self.selected_row()
        self.displayed = rows
        self._rows = -1
        self.refresh_rows()
        pos = 0
        if keep is not None:
            pos = self.position_of(keep)
            if pos < 0:
                pos = 0
        self.cursor = min(pos, max(self._rows - 1, 0))
        self.scroll_to_cursor(center=True)
        self.refresh()

    def position_of(self, row: int) -> int:
        """Where row ``row`` stands in the list, -1 when it is not displayed."""
        shown = self.displayed
        if shown is None:
            return row if 0 <= row < self._rows else -1
        lo, hi = 0, len(shown)
        while lo < hi:
            mid = (lo + hi) // 2
            if shown[mid] < row:
                lo = mid + 1
            else:
                hi = mid
        return lo if lo < len(shown) and shown[lo] == row else -1

    def row_at(self, pos: int) -> int:
        return pos if self.displayed is None else self.displayed[pos]

    def selected_row(self) -> int | None:
        if not self._rows:
            return None
        return self.row_at(min(self.cursor, self._rows - 1))

    def selected_frame(self) -> int:
        row = self.selected_row()
        return 0 if row is None else row + 1

    # -- moving ---------------------------------------------------------------------------------
    def watch_cursor(self, old: int, new: int) -> None:
        if self._rows:
            clamped = max(0, min(new, self._rows - 1))
            if clamped != new:
                self.cursor = clamped
                return
        self.scroll_to_cursor()
        # the list may just have grown: scroll again once the new size is laid out
        self.call_after_refresh(self.scroll_to_cursor)
        self.refresh()
        self._announce()

    def _announce(self) -> None:
        self.post_message(self.Selected(self.selected_frame()))

    def scroll_to_cursor(self, center: bool = False) -> None:
        height = self.scrollable_content_region.height or 1
        top = round(self.scroll_y)
        if center:
            self.scroll_to(y=max(self.cursor - height // 2, 0), animate=False, immediate=True)
        elif self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True)

    def go_to_frame(self, frame: int) -> bool:
        """Select frame ``frame`` (1-based) if it is displayed; says whether it is."""
        pos = self.position_of(frame - 1)
        if pos < 0:
            return False
        self.follow = self._may_follow and pos >= self._rows - 1
        self.cursor = pos
        self.scroll_to_cursor(center=True)
        return True

    def action_cursor(self, delta: int) -> None:
        self.follow = False
        self.cursor = self.cursor + delta
        if self.cursor >= self._rows - 1:
            self.follow = self._may_follow

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * max(self.scrollable_content_region.height - 1, 1))

    def action_top(self) -> None:
        self.follow = False
        self.cursor = 0

    def action_bottom(self) -> None:
        self.follow = self._may_follow
        self.cursor = max(self._rows - 1, 0)

    def action_open(self) -> None:
        self.post_message(self.Opened())

    def on_click(self, event: events.Click) -> None:
        y = event.y + round(self.scroll_y)
        if 0 <= y < self._rows:
            self.follow = self._may_follow and y >= self._rows - 1
            self.cursor = y

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self.follow = False

    # -- drawing --------------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        pos = scroll_y + y
        width = self.scrollable_content_region.width
        base = self.rich_style
        if pos >= self._rows:
            return Strip.blank(width, base)
        row = self.row_at(pos)
        text = self.index.row(row)
        if self.size.width < NARROW:
            text = without_time(text)
        style = self._row_style(self.index.code(row))
        if pos == self.cursor:
            style = style + CURSOR_STYLE
        strip = Strip([Segment(text, base + style)], len(text))
        return strip.crop_extend(scroll_x, scroll_x + width, base + style)

    def _row_style(self, code: int) -> Style:
        style = self._styles.get(code)
        if style is None:
            sev = PacketIndex.severity(code)
            if sev == SEVERITY_ERROR:
                style = ERROR_STYLE
            elif sev == SEVERITY_WARNING:
                style = WARNING_STYLE
            else:
                style = protocol_style(self.index.protocol(code))
            self._styles[code] = style
        return style
