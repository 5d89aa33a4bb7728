"""Messages between the views and the app."""
from __future__ import annotations

from textual.message import Message


class JumpToFrame(Message):
    """Show frame ``frame`` (1-based) in the packet list; posted by any view, handled by the app."""

    def __init__(self, frame: int) -> None:
        super().__init__()
        self.frame = frame


class ApplyFilter(Message):
    """Set the display filter to ``expr`` (empty: clear it); posted by any view, handled by the app."""

    def __init__(self, expr: str) -> None:
        super().__init__()
        self.expr = expr


class ModelUpdated(Message):
    """Posted by the app to every view as the capture is indexed; ``done`` once the pass has ended."""

    def __init__(self, packets: int, done: bool) -> None:
        super().__init__()
        self.packets = packets
        self.done = done
