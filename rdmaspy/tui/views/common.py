"""What the analysis views share: the model they read, the connection the user chose, and how
numbers are written (XIDs, times, byte counts), so that every view says them the same way."""
from __future__ import annotations

from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from textual.containers import Vertical

from ..messages import ModelUpdated

if TYPE_CHECKING:
    from ..model import CaptureModel


class ConnectionFocus:
    """The connection chosen in the connections view; every analysis view shows only its records."""

    __slots__ = ("connection",)

    def __init__(self) -> None:
        self.connection: int | None = None

    def admits(self, conn: int | None) -> bool:
        return self.connection is None or conn == self.connection


_FOCUS: "WeakKeyDictionary[CaptureModel, ConnectionFocus]" = WeakKeyDictionary()


def focus_of(model: "CaptureModel") -> ConnectionFocus:
    focus = _FOCUS.get(model)
    if focus is None:
        focus = _FOCUS[model] = ConnectionFocus()
    return focus


class AnalysisView(Vertical):
    """A view over ``model.analysis``: redrawn while the capture is indexed and when the user chooses
    another connection (``refresh_view``)."""

    def __init__(self, model: "CaptureModel", *, id: str | None = None) -> None:
        super().__init__(id=id, classes="analysis-view")
        self.model = model
        self.focus_state = focus_of(model)

    def on_model_updated(self, message: ModelUpdated) -> None:
        self.refresh_view()

    def on_show(self) -> None:
        self.refresh_view()

    def refresh_view(self) -> None:
        """Take what the analysis holds now (subclasses redraw their tables)."""


def xid_text(xid: int | None) -> str:
    return "" if xid is None else f"0x{xid:08x}"


def duration_text(ns: int | None) -> str:
    """A latency or time offset: µs below a millisecond, ms below a second, then seconds."""
    if ns is None:
        return ""
    if abs(ns) < 1_000_000:
        return f"{ns / 1000:.1f} µs"
    if abs(ns) < 1_000_000_000:
        return f"{ns / 1e6:.3f} ms"
    return f"{ns / 1e9:.3f} s"


def bytes_text(n: int | None) -> str:
    if n is None:
        return ""
    if n < 10_000:
        return f"{n} B"
    if n < 10_000_000:
        return f"{n / 1024:.1f} KiB"
    return f"{n / 2**20:.1f} MiB"
