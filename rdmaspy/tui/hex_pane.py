"""The bytes of the selected frame, as ``decode -x`` lays them out, with the selected field's bytes lit.

Clicking a byte, or moving the byte cursor (arrows when the pane has focus), asks for the field that
covers it (``ByteSelected``); the detail tree then selects that field.
"""
from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

HEX_START = 6          # "0000  " before the first byte
ASCII_START = 56       # offset, two spaces, 49 columns of hex, one space
HIGHLIGHT = Style(bgcolor="#005f87", color="#ffffff", bold=True)
CURSOR = Style(reverse=True)
OFFSET_STYLE = Style(dim=True)


def hex_column(j: int) -> int:
    """Screen column of byte ``j`` (0..15) of a line in the hex part."""
    return HEX_START + 3 * j + (1 if j >= 8 else 0)


def byte_at_column(x: int) -> int | None:
    """Which byte (0..15) of a line column ``x`` shows, in the hex or the ASCII part."""
    if ASCII_START <= x < ASCII_START + 16:
        return x - ASCII_START
    rel = x - HEX_START
    if rel < 0:
        return None
    if rel >= 24:
        rel -= 1
    j = rel // 3
    return j if 0 <= j < 16 and rel % 3 != 2 else None


class HexPane(ScrollView, can_focus=True):
    BINDINGS = [
        Binding("left", "move(-1)", "Byte left", show=False),
        Binding("right", "move(1)", "Byte right", show=False),
        Binding("up", "move(-16)", "Line up", show=False),
        Binding("down", "move(16)", "Line down", show=False),
    ]
    DEFAULT_CSS = """
    HexPane { width: 75; max-width: 55%; overflow-y: auto; overflow-x: auto; border-left: solid $primary-darken-2; }
    """

    class ByteSelected(Message):
        def __init__(self, offset: int) -> None:
            super().__init__()
            self.offset = offset

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.data = b""
        self.span: tuple[int, int] = (0, 0)      # highlighted bytes: start, length
        self.cursor = -1                          # the byte cursor, -1 when none

    def show(self, data: bytes) -> None:
        self.data = data
        self.span = (0, 0)
        self.cursor = -1
        self.virtual_size = Size(ASCII_START + 16, (len(data) + 15) // 16)
        self.scroll_to(y=0, animate=False, immediate=True)
        self.refresh()

    def highlight(self, start: int, length: int) -> None:
        self.span = (start, length) if start >= 0 else (0, 0)
        if length > 0 and start >= 0:
            line = start // 16
            height = self.scrollable_content_region.height or 1
            top = round(self.scroll_y)
            if not top <= line < top + height:
                self.scroll_to(y=max(line - 1, 0), animate=False, immediate=True)
        self.refresh()

    def select_byte(self, offset: int) -> None:
        if 0 <= offset < len(self.data):
            self.cursor = offset
            self.refresh()
            self.post_message(self.ByteSelected(offset))

    def action_move(self, delta: int) -> None:
        start = self.cursor if self.cursor >= 0 else (self.span[0] if self.span[1] else 0)
        self.select_byte(min(max(start + delta, 0), len(self.data) - 1))

    def on_click(self, event: events.Click) -> None:
        line = event.y + round(self.scroll_y)
        j = byte_at_column(event.x + round(self.scroll_x))
        if j is not None:
            self.select_byte(line * 16 + j)

    def render_line(self, y: int) -> Strip:
        line = y + round(self.scroll_y)
        width = self.scrollable_content_region.width
        base = self.rich_style
        data = self.data
        start = line * 16
        if start >= len(data):
            return Strip.blank(width, base)
        chunk = data[start:start + 16]
        lo, n = self.span
        segs = [Segment(f"{start:04x}  ", base + OFFSET_STYLE)]
        hexpart: list[Segment] = []
        text: list[Segment] = []
        for j, b in enumerate(chunk):
            pos = start + j
            style = base
            if lo <= pos < lo + n:
                style = base + HIGHLIGHT
            if pos == self.cursor:
                style = style + CURSOR
            sep = "  " if j == 7 else " "
            hexpart.append(Segment(f"{b:02x}", style))
            if j < len(chunk) - 1:
                lit = lo <= pos + 1 < lo + n and lo <= pos < lo + n
                hexpart.append(Segment(sep, base + HIGHLIGHT if lit else base))
            text.append(Segment(chr(b) if 32 <= b < 127 else ".", style))
        segs.extend(hexpart)
        used = HEX_START + sum(len(s.text) for s in hexpart)
        segs.append(Segment(" " * (ASCII_START - used), base))
        segs.extend(text)
        return Strip(segs).crop_extend(0, width, base)
