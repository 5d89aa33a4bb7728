"""Hexadecimal text for the info lines of the per-packet path.

Compiled with mypyc, ``"%08x" % n`` costs some 1,000 instructions (the format string parsed at every
call, the integer formatted the general way), an f-string with a format spec (``f"{n:08x}"``) is a
``str.format`` method call, and a chain of ``+`` makes a new string at every step.  An f-string
without a spec is one ``CPyStr_Build``: a 32-bit value from the wire is four bytes, each two digits
from a table, put together in one step.  Where the compiled decoder is built, C writes the digits
straight into the string (rdmaspy/dissectors/_hex.c); these stay the reference and the fallback.
"""
from __future__ import annotations


from ..typenames import Callable, Final
try:        # the digits written in C (rdmaspy/dissectors/_hex.c), built with the compiled decoder (setup.py)
    from ._hex import (  # type: ignore[import-not-found,import-untyped,unused-ignore]
        hex8 as _hex8_c, hexn as _hexn_c, with_decimal as _with_decimal_c)
except ImportError:
    _hex8_c = _hexn_c = _with_decimal_c = None
# Final: compiled, C statics (a name imported is otherwise a look-up in the module's dict at each call)
HEX8_C: Final[Callable[[int], str] | None] = _hex8_c
HEXN_C: Final[Callable[[int], str] | None] = _hexn_c
WITH_DECIMAL_C: Final[Callable[[str, int, str], str] | None] = _with_decimal_c

_HEX2: Final[list[str]] = ["%02x" % b for b in range(256)]


def hex8(n: int) -> str:
    """``n`` as ``"%08x" % n`` writes it: eight lowercase digits for a 32-bit value."""
    if n < 0 or n > 0xFFFFFFFF:
        return "%08x" % n
    c = HEX8_C
    if c is not None:
        return c(n)
    h = _HEX2
    return f"{h[n >> 24]}{h[(n >> 16) & 255]}{h[(n >> 8) & 255]}{h[n & 255]}"


def hexn(n: int) -> str:
    """``n`` as ``"%x" % n`` writes it: lowercase digits, no padding."""
    c = HEXN_C
    if c is not None:
        # C says ValueError for what it does not format (below 0, from 2**64): no comparison made here
        # first (a 64-bit address is a Python long, compiled; each comparison of it a generic call)
        try:
            return c(n)
        except ValueError:
            pass
    return "%x" % n


def with_decimal(head: str, n: int, tail: str = "") -> str:
    """``head + str(n) + tail``: an Info line with a number (compiled, a number's text and each
    concatenation are a string made; in C one)."""
    c = WITH_DECIMAL_C
    if c is not None:
        return c(head, n, tail)
    return head + str(n) + tail
