"""Hexadecimal text for the info lines of the per-packet path.

Compiled with mypyc, ``"%08x" % n`` costs some 1,000 instructions (the format string parsed at every
call, the integer formatted the general way), an f-string with a format spec (``f"{n:08x}"``) is a
``str.format`` method call, and a chain of ``+`` makes a new string at every step.  An f-string
without a spec is one ``CPyStr_Build``: a 32-bit value from the wire is four bytes, each two digits
from a table, put together in one step.
"""
from __future__ import annotations

from typing import Final

_HEX2: Final[list[str]] = ["%02x" % b for b in range(256)]


def hex8(n: int) -> str:
    """``n`` as ``"%08x" % n`` writes it: eight lowercase digits for a 32-bit value."""
    if n < 0 or n > 0xFFFFFFFF:
        return "%08x" % n
    h = _HEX2
    return f"{h[n >> 24]}{h[(n >> 16) & 255]}{h[(n >> 8) & 255]}{h[n & 255]}"


def hexn(n: int) -> str:
    """``n`` as ``"%x" % n`` writes it: lowercase digits, no padding."""
    if n < 0:
        return "%x" % n
    return hex(n)[2:]
