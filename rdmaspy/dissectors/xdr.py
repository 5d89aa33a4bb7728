"""A small bounded XDR reader (RFC 4506) shared by the RPC-over-RDMA, ONC RPC and NFS dissectors.

Every read checks the bytes left first, and every count read from the wire is
checked against the bytes it claims before anything is built from it, so a
count of 2^32-1 in a 60-byte message is a short-read error, not an allocation.
A failed read raises ``XdrError``, which each dissector catches at its entry:
it never leaves the dissector.
"""
from __future__ import annotations

import struct

from ..fields import XdrList
from ..typenames import Callable, Final, Sequence, TypeVar, i64

_U32: Final = struct.Struct(">I")
_U64: Final = struct.Struct(">Q")
_U32x2: Final = struct.Struct(">II")
_U32x4: Final = struct.Struct(">IIII")
_TRUE: Final = _U32.pack(1)
_FALSE: Final = _U32.pack(0)
T = TypeVar("T")


class XdrError(Exception):
    """The XDR stream ended, or a count does not fit the bytes left."""

    __slots__ = ("what", "have", "need")

    def __init__(self, what: str, have: int, need: int) -> None:
        super().__init__(what)
        self.what = what
        self.have = have
        self.need = need

    def __str__(self) -> str:
        return f"{self.what}: truncated ({max(self.have, 0)} of {self.need} bytes)"


class XdrInvalid(XdrError):
    """An item that is there but not allowed: a count or length over its declared bound, a boolean
    that is neither 0 nor 1, a union discriminant with no arm."""

    def __init__(self, what: str) -> None:
        super().__init__(what, 0, 0)

    def __str__(self) -> str:
        return self.what


def u32(buf: bytes, at: int) -> int:
    """The big-endian 32-bit word at ``buf[at]`` (the caller knows the four bytes are there).  Compiled,
    four byte reads, where a struct's unpack is a method call making a tuple and an int object per word;
    in 64-bit machine integers (``i64``), half the instructions of checked ``int`` arithmetic."""
    a: i64 = at
    return i64(buf[a]) << 24 | i64(buf[a + 1]) << 16 | i64(buf[a + 2]) << 8 | i64(buf[a + 3])


def bytes_at(buf: bytes, start: int, end: int) -> bytes:
    """``bytes(buf[start:end])``: the slice itself when it is bytes (``bytes()`` of bytes, compiled, is a
    call that looks up ``__bytes__`` and parses its arguments only to return it), a copy of another's."""
    raw = buf[start:end]
    return raw if type(raw) is bytes else bytes(raw)


def u64(buf: bytes, at: int) -> int:
    """The big-endian 64-bit word at ``buf[at]`` (the caller knows the eight bytes are there): an address
    or tagged offset.  Compiled, in machine integers up to 2**63, and past it (a kernel's addresses) one
    addition of a Python int, where ``u32(...) << 32 | u32(...)`` made two operations on Python ints."""
    a: i64 = at
    hi: i64 = i64(buf[a]) << 24 | i64(buf[a + 1]) << 16 | i64(buf[a + 2]) << 8 | i64(buf[a + 3])
    lo: i64 = i64(buf[a + 4]) << 24 | i64(buf[a + 5]) << 16 | i64(buf[a + 6]) << 8 | i64(buf[a + 7])
    if hi < 0x80000000:
        return hi << 32 | lo
    low63: int = (hi & 0x7FFFFFFF) << 32 | lo
    return low63 + 0x8000000000000000


class Cursor:
    """Reads big-endian XDR items from ``buf[pos:end]``."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: bytes, pos: int, end: int) -> None:
        self.buf = buf
        self.pos = pos
        self.end = end

    @property
    def left(self) -> int:
        return self.end - self.pos

    def need(self, n: int, what: str) -> int:
        """Check that ``n`` bytes are left; return the position where they start."""
        p = self.pos
        if n < 0 or self.end - p < n:
            raise XdrError(what, self.end - p, n)
        return p

    def u32(self, what: str = "uint32") -> int:
        p = self.pos
        if self.end - p < 4:
            raise XdrError(what, self.end - p, 4)
        self.pos = p + 4
        return u32(self.buf, p)

    def u64(self, what: str = "uint64") -> int:
        p = self.pos
        if self.end - p < 8:
            raise XdrError(what, self.end - p, 8)
        self.pos = p + 8
        return _U64.unpack_from(self.buf, p)[0]

    def discriminator(self, what: str) -> int:
        """An optional-data discriminator: 0 (FALSE) or 1 (TRUE); anything else is an error."""
        v = self.u32(what)
        if v > 1:
            raise XdrError(f"{what}: discriminator {v} is not 0 or 1", 0, 0)
        return v

    def count(self, item_size: int, what: str) -> int:
        """A counted-array length, checked against the bytes its items need (``item_size`` each, at least 1)."""
        n = self.u32(what)
        if n * max(item_size, 1) > self.end - self.pos:
            raise XdrError(what, self.end - self.pos, n * max(item_size, 1))
        return n

    def opaque_span(self, what: str = "opaque") -> tuple[int, int]:
        """Variable-length opaque: returns (start, length) in ``buf`` and skips the padded bytes."""
        n = self.u32(what)
        padded = (n + 3) & ~3
        p = self.pos
        if padded > self.end - p:
            raise XdrError(what, self.end - p, padded)
        self.pos = p + padded
        return p, n

    def opaque(self, what: str = "opaque") -> bytes:
        p, n = self.opaque_span(what)
        return bytes(self.buf[p:p + n])

    def fixed(self, n: int, what: str = "fixed opaque") -> bytes:
        padded = (n + 3) & ~3
        p = self.need(padded, what)
        self.pos = p + padded
        return bytes(self.buf[p:p + n])

    def string(self, what: str = "string") -> str:
        p, n = self.opaque_span(what)
        return bytes(self.buf[p:p + n]).decode("utf-8", "replace")

    def skip(self, n: int, what: str = "data") -> None:
        self.pos = self.need(n, what) + n

    def skip_opaque(self, what: str = "opaque") -> None:
        self.opaque_span(what)

    def skip_u32s(self, what: str = "uint32 array") -> int:
        """A counted array of uint32 (e.g. a bitmap4): skip it, return the count."""
        n = self.count(4, what)
        self.pos += 4 * n
        return n

    def u32_array(self, what: str = "uint32 array") -> list[int]:
        n = self.count(4, what)
        p = self.pos
        self.pos = p + 4 * n
        return list(struct.unpack_from(f">{n}I", self.buf, p)) if n else []


def read_list(cur: Cursor, lst: XdrList, make: Callable[[tuple[int, ...], int], T], entries: list[list[T]]) -> None:
    """The entries of a declared XDR list appended to ``entries`` as they are read, each a list of its items
    (one item for an entry that is not a counted array); ``make(values, at)`` turns an item's values and
    its offset in the buffer into what the caller keeps.  Short or out-of-range input raises XdrError
    naming the part; the entries read before it stay."""
    item = lst.item
    size = item.size
    unpack = item.struct.unpack_from
    counted = lst.count is not None
    while cur.discriminator(lst.what):
        n = cur.count(size, lst.count_what) if counted else 1
        entry: list[T] = []
        for _ in range(n):
            at = cur.need(size, item.what)
            cur.pos = at + size
            entry.append(make(unpack(cur.buf, at), at))
        entries.append(entry)
        if not lst.chained:
            break


# --- encoding helpers (used by the encoders beside the decoders and by tests) -----------------------
def p32(*values: int) -> bytes:
    return b"".join([_U32.pack(v & 0xFFFFFFFF) for v in values])


def p64(value: int) -> bytes:
    return _U64.pack(value & 0xFFFFFFFFFFFFFFFF)


def popaque(data: bytes) -> bytes:
    return _U32.pack(len(data)) + bytes(data) + b"\0" * (-len(data) % 4)


def pstring(text: str) -> bytes:
    return popaque(text.encode())


def pack_list(lst: XdrList, entries: Sequence[Sequence[Sequence[int]]]) -> bytes:
    """A declared XDR list from its entries, each a sequence of items' values (in the declared order);
    an entry that is not a counted array has one item.  Values are cut to their widths."""
    if not lst.chained and len(entries) > 1:
        raise ValueError(f"{lst.what}: at most one entry, not {len(entries)}")
    item = lst.item
    pack = item.struct.pack
    masks = item.masks
    counted = lst.count is not None
    out = []
    for entry in entries:
        if not counted and len(entry) != 1:
            raise ValueError(f"{lst.what}: an entry is one {item.what}, not {len(entry)}")
        out.append(_TRUE + _U32.pack(len(entry)) if counted else _TRUE)
        for values in entry:
            out.append(pack(*[v & m for v, m in zip(values, masks)]))
    if lst.chained or not entries:
        out.append(_FALSE)
    return b"".join(out)
