"""The state of one capture's dissection, kept across its packets (connections, pending calls, messages
being rebuilt), and the memory budget every holder of state charges.  Below the dissectors: they and the
connection tracker receive it as ``ctx``; the engine makes one per capture."""
from __future__ import annotations

from typing import Any, Callable

from mypy_extensions import mypyc_attr

from .budget import Budget


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Session:
    """State kept across the packets of one capture."""

    __slots__ = ("state", "options", "budget")

    def __init__(self, options: dict[str, Any] | None = None, budget: Budget | None = None) -> None:
        self.state: dict[str, Any] = {}
        self.options: dict[str, Any] = options or {}
        self.budget = budget if budget is not None else Budget()   # shared by every holder of state

    def get(self, key: str, factory: Callable[[], Any]) -> Any:
        v = self.state.get(key)
        if v is None:
            v = self.state[key] = factory()
        return v
