"""Colours for a terminal: a style name painted as the terminal's escape sequences.

rich decides whether and how to colour (terminal type, NO_COLOR); each style is rendered once into
its escape sequences and then wrapped around lines, because printing line by line through rich is
a hundred times slower.
"""
from __future__ import annotations

from typing import Callable


def terminal_painter() -> Callable[[str | None], Callable[[str], str]]:
    """``painter(style)`` → a function that paints a line in that style (``str`` when uncoloured)."""
    from rich.color import ColorSystem
    from rich.console import Console
    from rich.style import Style

    console = Console()
    systems = {"standard": ColorSystem.STANDARD, "256": ColorSystem.EIGHT_BIT, "truecolor": ColorSystem.TRUECOLOR,
               "windows": ColorSystem.STANDARD}
    system = systems.get(console.color_system or "")
    painters: dict[str | None, Callable[[str], str]] = {}

    def painter(style: str | None) -> Callable[[str], str]:
        fn = painters.get(style)
        if fn is None:
            if not style or system is None or console.no_color:
                fn = str
            else:
                before, _, after = Style.parse(style).render("\0", color_system=system).partition("\0")
                fn = _wrap(before, after)
            painters[style] = fn
        return fn

    return painter


def _wrap(before: str, after: str) -> Callable[[str], str]:
    def paint(line: str) -> str:
        return before + line + after
    return paint
