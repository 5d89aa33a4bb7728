"""Colours for a terminal: whether to colour, and a style name painted as the terminal's escape sequences.

``--color auto`` colours a terminal unless NO_COLOR is set, and colours anything when FORCE_COLOR is
set (both as https://no-color.org and https://force-color.org say: set and not empty); ``always``
and ``never`` decide alone.  rich renders each style once into its escape sequences, which are then
wrapped around lines, because printing line by line through rich is a hundred times slower.
"""
from __future__ import annotations

import os
import sys

from ..typenames import Callable, TextIO


def color_wanted(choice: str = "auto", stream: TextIO | None = None) -> bool:
    """Whether text written to ``stream`` (standard output) is coloured, for a ``--color`` choice."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    out = sys.stdout if stream is None else stream
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


def color_forced(choice: str = "auto") -> bool:
    """Whether colour is asked for whatever the output is (``always``, or FORCE_COLOR under ``auto``)."""
    return choice == "always" or (choice == "auto" and not os.environ.get("NO_COLOR")
                                  and bool(os.environ.get("FORCE_COLOR")))


def terminal_painter(force: bool = False) -> Callable[[str | None], Callable[[str], str]]:
    """``painter(style)`` → a function that paints a line in that style (``str`` when uncoloured).
    ``force``: colour whatever the output is (the choice is made already, ``color_wanted``)."""
    from rich.color import ColorSystem
    from rich.console import Console
    from rich.style import Style

    console = Console(force_terminal=True, no_color=False) if force else Console()
    systems = {"standard": ColorSystem.STANDARD, "256": ColorSystem.EIGHT_BIT, "truecolor": ColorSystem.TRUECOLOR,
               "windows": ColorSystem.STANDARD}
    system = systems.get(console.color_system or "")
    if system is None and force:
        system = ColorSystem.STANDARD        # no TERM to go by: the eight colours every terminal has
    painters: dict[str | None, Callable[[str], str]] = {}

    def painter(style: str | None) -> Callable[[str], str]:
        fn = painters.get(style)
        if fn is None:
            if not style or system is None or (console.no_color and not force):
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
