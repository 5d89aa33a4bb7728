"""The analysis views of the TUI, one module each, registered by the digit key that shows them.

A view module calls ``register_view`` at import; the app imports every module of this package, so
adding a view is adding a module.  Key ``1`` is the packets view (``rdmaspy.tui.packets_view``).

A view is a Textual widget made by ``factory(model)`` (``model`` is the app's ``CaptureModel``: the
packet index, ``model.analysis`` (the ``AnalysisModel`` the background pass fills: transactions,
connections, credits, findings...), the capture's name).  What a view receives and may send:

- ``ModelUpdated`` (``rdmaspy.tui.messages``) is posted to every view while the capture is indexed
  (a few times a second) and once more when it is done; ``message.done`` says which.
- ``JumpToFrame(frame)`` posted by a view (it bubbles to the app) switches to the packets view and
  selects that frame (1-based); ``app.show_frame(frame)`` does the same.
- ``ApplyFilter(expr)`` posted by a view sets the display filter (an empty one clears it).
- ``app.selected_frame`` is the frame selected in the packet list (0 when none).
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from textual.widget import Widget

    from ..model import CaptureModel


@dataclass(frozen=True, slots=True)
class ViewSpec:
    key: str          # the digit that shows it: "2".."6"
    name: str         # its id in the app ("transactions")
    title: str        # its tab and help text ("Transactions")
    factory: Callable[["CaptureModel"], "Widget"]


VIEWS: dict[str, ViewSpec] = {}

# The keys and names the issue fixes; a view module registers under its own key.
VIEW_NAMES: dict[str, tuple[str, str]] = {
    "1": ("packets", "Packets"),
    "2": ("transactions", "Transactions"),
    "3": ("connections", "Connections"),
    "4": ("credits", "Credits"),
    "5": ("segments", "Segments"),
    "6": ("expert", "Expert"),
}


def register_view(key: str, factory: Callable[["CaptureModel"], "Widget"]) -> None:
    if key not in VIEW_NAMES or key == "1":
        raise ValueError(f"view key {key!r} is not one of 2..6")
    if key in VIEWS:
        raise ValueError(f"view key {key!r} registered twice")
    name, title = VIEW_NAMES[key]
    VIEWS[key] = ViewSpec(key, name, title, factory)


_LOADED = False


def load_views() -> dict[str, ViewSpec]:
    """Import every view module of this package (importing is registering)."""
    global _LOADED
    if not _LOADED:
        for info in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{info.name}")
        _LOADED = True
    return VIEWS
