"""dpkt's ``__hdr__`` and ``__bit_fields__`` made from a declaration's names and widths, and how ``pprint``
shows each field (its declared value names, or its declared display)."""
from __future__ import annotations

import socket
from typing import Any, Callable, Literal, Sequence

import dpkt

from .. import stacking
from ..fields import Field

_WORD_CODES = {8: "B", 16: "H", 32: "I", 64: "Q"}


def _words(widths: Sequence[int]) -> list[tuple[int, int]] | None:
    """Split consecutive integer fields into runs that each fill one 1, 2, 4 or 8-byte word, as
    ``[(first, end), ...]`` indices; None if none fits. A field fills a word alone where it can, and fields
    share the smallest words that hold them (the BTH's last 8 bytes are two 32-bit words, not one of 64)."""
    n = len(widths)
    cost: list[int | None] = [None] * n + [0]
    step = [0] * n
    for i in range(n - 1, -1, -1):
        bits = 0
        for j in range(i, n):
            bits += widths[j]
            if bits > 64:
                break
            after = cost[j + 1]
            if bits in _WORD_CODES and after is not None:
                c = after + (bits * bits if j > i else 0)
                current = cost[i]
                if current is None or c < current:
                    cost[i], step[i] = c, j + 1
    if cost[0] is None:
        return None
    runs, i = [], 0
    while i < n:
        runs.append((i, step[i]))
        i = step[i]
    return runs


class Layout:
    """A declaration's fields as dpkt's ``__hdr__`` and ``__bit_fields__``.

    A field the declaration decodes as bytes (an address, a GID, opaque data) is a ``Ns`` entry; integer
    fields fill words of 1, 2, 4 or 8 bytes: one field alone is its own entry, several share a word named
    after them (``_se_m_padcnt_tver``) and are dpkt bit fields. Integer fields that fill no such words
    (three bytes standing between two byte fields) share one ``Ns`` entry, read and written by properties
    made here.

    ``little``: the words are little-endian (the class's ``__byte_order__`` is ``<``) and their fields are
    declared from the least significant bit up (``Header(little=True)``), so a word's bit fields are its
    members in reverse (dpkt names a word's bits from the most significant down).
    """

    def __init__(self, fields: Sequence[tuple[str, Field, bool]], little: bool = False) -> None:
        self.little = little
        self.byteorder: Literal["little", "big"] = "little" if little else "big"
        self.hdr: list[tuple[str, str, Any]] = []
        self.bit_fields: dict[str, tuple[tuple[str, int], ...]] = {}
        self.in_bytes: dict[str, tuple[str, int, int, int, str]] = {}   # name -> (entry, bytes, shift, width, order)
        run: list[tuple[str, Field]] = []
        for name, field, as_bytes in fields:
            if as_bytes:
                self._integers(run)
                run = []
                default = stacking.DEFAULTS.get(field.name, bytes(field.bits // 8))
                self.hdr.append((name, f"{field.bits // 8}s", default))
            else:
                run.append((name, field))
        self._integers(run)

    def _integers(self, run: list[tuple[str, Field]]) -> None:
        if not run:
            return
        widths = [f.bits for _, f in run]
        words = _words(widths) or [(0, len(run))]
        for first, end in words:
            members = run[first:end]
            if self.little:             # most significant first, as dpkt's bit fields and big-endian words
                members = members[::-1]
            bits = sum(widths[first:end])
            default, shift = 0, bits
            for _name, f in members:
                shift -= f.bits
                default |= (stacking.DEFAULTS.get(f.name, 0) & ((1 << f.bits) - 1)) << shift
            if len(members) == 1 and bits in _WORD_CODES:
                self.hdr.append((members[0][0], _WORD_CODES[bits], default))
                continue
            entry = "_" + "_".join(name for name, _ in members)
            if bits in _WORD_CODES:
                self.hdr.append((entry, _WORD_CODES[bits], default))
                self.bit_fields[entry] = tuple((name, f.bits) for name, f in members)
                continue
            self.hdr.append((entry, f"{bits // 8}s", default.to_bytes(bits // 8, self.byteorder)))
            shift = bits
            for name, f in members:
                shift -= f.bits
                self.in_bytes[name] = (entry, bits // 8, shift, f.bits, self.byteorder)


def bytes_property(entry: str, size: int, shift: int, width: int, byteorder: str = "big") -> property:
    """An integer field inside a ``Ns`` entry (see ``Layout``)."""
    mask = (1 << width) - 1
    order: Any = byteorder

    def get(self: dpkt.Packet) -> int:
        return (int.from_bytes(getattr(self, entry), order) >> shift) & mask

    def set_(self: dpkt.Packet, value: int) -> None:
        if not 0 <= value <= mask:
            raise ValueError(f"value {value} does not fit in {width} bits")
        word = int.from_bytes(getattr(self, entry), order) & ~(mask << shift)
        setattr(self, entry, (word | value << shift).to_bytes(size, order))
    return property(get, set_)


def shown(field: Field) -> Callable[[Any], str] | None:
    """How dpkt's ``pprint`` shows a field's value: its declared name, or its declared display."""
    names = field.names
    if names is not None:
        return lambda v: names.get(v, "unknown")
    display = field.display
    if display == "hex":
        return hex
    if display == "ipv4":
        return lambda v: socket.inet_ntop(socket.AF_INET, v)
    if display in ("ipv6", "gid"):
        return lambda v: socket.inet_ntop(socket.AF_INET6, v)
    if display == "mac":
        return lambda v: ":".join(f"{b:02x}" for b in v)
    return None
