"""The display filter bar: the language of ``decode -Y``, checked as it is typed.

A mistake is shown under the bar with a caret at its column; field names complete from the list of
every known field (Right arrow takes the suggestion); Up and Down walk the filters applied before.
"""
from __future__ import annotations

import re

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.suggester import Suggester
from textual.widgets import Input, Static

from ..filter import FilterError, compile_filter, known_fields

_LAST_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*$")


class FieldNames(Suggester):
    """Completes the field or protocol name being typed at the end of the filter."""

    def __init__(self) -> None:
        super().__init__(use_cache=True, case_sensitive=True)
        self._names: list[str] | None = None

    def names(self) -> list[str]:
        if self._names is None:
            cat = known_fields()
            self._names = sorted(set(cat.fields) | set(cat.protocols))
        return self._names

    async def get_suggestion(self, value: str) -> str | None:
        return complete(value, self.names())


def complete(value: str, names: list[str]) -> str | None:
    """``value`` with its last word completed to the first name it begins, None if it begins none."""
    m = _LAST_WORD.search(value)
    if m is None:
        return None
    word = m.group(0)
    for name in names:
        if name.startswith(word) and name != word:
            return value[:m.start()] + name
    return None


def check(expr: str) -> FilterError | None:
    """The mistake in ``expr``, None when it compiles (an empty filter is no mistake)."""
    if not expr.strip():
        return None
    try:
        compile_filter(expr)
    except FilterError as exc:
        return exc
    return None


class FilterInput(Input):
    BINDINGS = [
        Binding("up", "history(-1)", "Older filter", show=False),
        Binding("down", "history(1)", "Newer filter", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(placeholder="Apply a display filter ... (/ to focus, Enter to apply)",
                         suggester=FieldNames(), id=id)
        self.history: list[str] = []
        self._at = 0

    def remember(self, expr: str) -> None:
        if expr and (not self.history or self.history[-1] != expr):
            self.history.append(expr)
        self._at = len(self.history)

    def action_history(self, step: int) -> None:
        if not self.history:
            return
        self._at = max(0, min(self._at + step, len(self.history)))
        self.value = self.history[self._at] if self._at < len(self.history) else ""
        self.cursor_position = len(self.value)


class FilterBar(Vertical):
    DEFAULT_CSS = """
    FilterBar { height: auto; }
    FilterBar > FilterInput, FilterBar > FilterInput:focus { border: none; height: 1; padding: 0 1;
                                                             background: $boost; }
    FilterBar > FilterInput:focus { background: $primary 25%; }
    FilterBar > FilterInput.-invalid { background: $error 30%; }
    FilterBar > FilterInput.-valid-filter { background: $success 20%; }
    FilterBar > #filter-error { height: auto; color: $text-error; padding: 0 1; display: none; }
    FilterBar > #filter-error.-shown { display: block; }
    """

    class Applied(Message):
        """Enter in the bar: ``expr`` is the filter to apply ('' clears it)."""

        def __init__(self, expr: str) -> None:
            super().__init__()
            self.expr = expr

    def compose(self) -> ComposeResult:
        yield FilterInput(id="filter-input")
        yield Static(id="filter-error")

    @property
    def input(self) -> FilterInput:
        return self.query_one(FilterInput)

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.show_check(event.value)

    def show_check(self, expr: str) -> FilterError | None:
        err = check(expr)
        box = self.query_one("#filter-error", Static)
        inp = self.input
        inp.set_class(err is not None, "-invalid")
        inp.set_class(err is None and bool(expr.strip()), "-valid-filter")
        if err is None:
            box.update("")
            box.remove_class("-shown")
        else:
            text = Text()
            text.append(f"  {err.expr}\n", style="bold")
            text.append("  " + " " * (err.column - 1) + "^ ", style="bold red")
            text.append(f"{err.reason} (column {err.column})")
            box.update(text)
            box.add_class("-shown")
        return err

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        expr = event.value.strip()
        if self.show_check(expr) is not None:
            return
        self.input.remember(expr)
        self.post_message(self.Applied(expr))

    def set_expr(self, expr: str, focus: bool = False) -> None:
        inp = self.input
        inp.value = expr
        inp.cursor_position = len(expr)
        if focus:
            inp.focus()
