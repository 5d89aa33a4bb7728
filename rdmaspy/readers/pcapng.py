"""pcapng files: several sections, several interfaces with their own link types and clocks.

Blocks read: Section Header (either byte order; a new section forgets the
interfaces of the previous one), Interface Description (if_name,
if_description, if_tsresol in both its power-of-10 and power-of-2 forms,
if_tsoffset, if_filter, snaplen), Enhanced Packet (with opt_comment), Simple
Packet and the obsolete Packet Block.  Every other block is skipped by its
length.  Interfaces are numbered over the whole file, as Wireshark numbers
them, so ``Frame.iface`` indexes ``Capture.interfaces``.
"""
from __future__ import annotations

import itertools
import struct

from ..errors import CaptureError
from ..packet import Frame
from ..typenames import BinaryIO, Final, Iterator, i64
from .base import Capture, chunk_reader, chunk_seeker, next_chunk

# A frame's time is kept in nanoseconds since 1970 in a signed 64-bit integer, as every writer and JSON
# reader can take it (±292 years).  A time beyond (a bogus if_tsresol or if_tsoffset) is clamped to
# the bound and counted (``Capture.clamped``); within it, times are exact.
MAX_NS: Final = (1 << 63) - 1
MIN_NS: Final = -(1 << 63)
# Compiled, an integer within ±2**62 is a machine word: times compared against these first take no
# arbitrary-precision comparison (every time of this century is within them).
_SMALL_MAX: Final = (1 << 62) - 1
_SMALL_MIN: Final = -(1 << 62)

CHUNK: Final = 1 << 20
MAX_BLOCK: Final = 16 << 20        # larger than any packet a capture tool writes; a bigger length is damage

SHB_TYPE: Final = 0x0A0D0D0A       # the same in both byte orders
IDB_TYPE: Final = 1
OPB_TYPE: Final = 2                # obsolete Packet Block
SPB_TYPE: Final = 3
EPB_TYPE: Final = 6
BOM_LE: Final = b"\x4d\x3c\x2b\x1a"
BOM_BE: Final = b"\x1a\x2b\x3c\x4d"

OPT_ENDOFOPT: Final = 0
OPT_COMMENT: Final = 1
IF_NAME: Final = 2
IF_DESCRIPTION: Final = 3
IF_TSRESOL: Final = 9
IF_FILTER: Final = 11
IF_TSOFFSET: Final = 14

BLOCK_NAMES: Final = {SHB_TYPE: "section header block", IDB_TYPE: "interface description block",
                      OPB_TYPE: "packet block", SPB_TYPE: "simple packet block", 4: "name resolution block",
                      5: "interface statistics block", EPB_TYPE: "enhanced packet block", 9: "systemd journal block",
                      10: "decryption secrets block", 0x00000BAD: "custom block", 0x40000BAD: "custom block"}


class Damage(Exception):
    """A block that cannot be read: ends the iteration with a problem at ``offset``."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


# An interface of the section being read: global index, link type, timestamp ticks to ns as
# (ticks * mul) // den, offset in ns, snapshot length.
Interface = tuple[int, int, int, int, int, int]


class _Order:
    """The structs of one byte order, built once per order."""

    __slots__ = ("hdr", "u32", "u16x2", "epb", "opb", "spb", "shb", "idb", "q")

    def __init__(self, e: str) -> None:
        self.hdr = struct.Struct(e + "II").unpack_from            # type, total length
        self.u32 = struct.Struct(e + "I").unpack_from
        self.u16x2 = struct.Struct(e + "HH").unpack_from          # option code, option length
        self.epb = struct.Struct(e + "IIIIIII").unpack_from       # type, length, iface, ts hi, ts lo, caplen, len
        self.opb = struct.Struct(e + "IIHHIIII").unpack_from      # type, length, iface, drops, ts hi, lo, caplen, len
        self.spb = struct.Struct(e + "III").unpack_from           # type, length, original length
        self.shb = struct.Struct(e + "IIIHHq").unpack_from        # type, length, BOM, major, minor, section length
        self.idb = struct.Struct(e + "IIHHI").unpack_from         # type, length, linktype, reserved, snaplen
        self.q = struct.Struct(e + "q").unpack_from


_LE: Final = _Order("<")
_BE: Final = _Order(">")


def _gcd(a: int, b: int) -> int:
    """``math.gcd`` of two positive integers (an interface's ticks a second and 10**9): without ``math``, a
    shared object of its own that a summary's start imported for this alone."""
    while b:
        a, b = b, a % b
    return a


def u32le(buf: bytes, at: int) -> int:
    """The little-endian 32-bit word at ``buf[at]`` (the caller knows the four bytes are there); in
    64-bit machine integers (``i64``), compiled half the instructions of checked ``int`` arithmetic."""
    a: i64 = at
    return i64(buf[a]) | i64(buf[a + 1]) << 8 | i64(buf[a + 2]) << 16 | i64(buf[a + 3]) << 24


def _options(buf: bytes, pos: int, end: int, order: _Order, base: int, what: str) -> Iterator[tuple[int, bytes]]:
    """(code, value) of the options in ``buf[pos:end]`` up to opt_endofopt."""
    u16x2 = order.u16x2
    while pos + 4 <= end:
        code, length = u16x2(buf, pos)
        if code == OPT_ENDOFOPT:
            return
        vend = pos + 4 + length
        if vend > end:
            raise Damage(f"{what}: option {code} of {length} bytes runs past the end of the block", base + pos)
        yield code, buf[pos + 4:vend]
        pos = vend + (-length & 3)
    if pos != end:
        raise Damage(f"{what}: {end - pos} stray bytes after the options", base + pos)


def _comment(buf: bytes, pos: int, end: int, order: _Order, base: int, what: str) -> str | None:
    comments = [v.decode("utf-8", "replace") for code, v in _options(buf, pos, end, order, base, what)
                if code == OPT_COMMENT]
    return "; ".join(comments) if comments else None


def _text(v: bytes) -> str:
    return v.rstrip(b"\0").decode("utf-8", "replace")


# Frames taken at most by one call of _plain_epbs: held until the pipeline has had them all.
_BATCH: Final = 256


def _plain_epbs(buf: bytes, pos: int, blen: int, local: list[Interface], nlocal: int, num: int, base: int,
                out: list[Frame]) -> int:
    """The run of plain Enhanced Packet Blocks from ``pos`` (little-endian, wholly in ``buf``, without
    options, of an interface of this section, a time stamp in the usual range), up to ``_BATCH`` of them,
    as frames appended to ``out``, numbered on from ``num``: where the run ends.  The reader's loop takes
    anything else, a block at a time, as before (options, clamped times, damage, the end of the chunk)."""
    # offsets and lengths in machine integers (``i64``): compiled, without checked arithmetic
    # The words are read in line, byte by byte: a call of u32le a word was some 45 instructions.
    p: i64 = pos
    n: i64 = blen
    while n - p >= 32 and len(out) < _BATCH:
        if buf[p] != 6 or buf[p + 1] or buf[p + 2] or buf[p + 3]:
            break
        length: i64 = i64(buf[p + 4]) | i64(buf[p + 5]) << 8 | i64(buf[p + 6]) << 16 | i64(buf[p + 7]) << 24
        iface: i64 = i64(buf[p + 8]) | i64(buf[p + 9]) << 8 | i64(buf[p + 10]) << 16 | i64(buf[p + 11]) << 24
        if length < 32 or length > n - p or length & 3 or iface >= nlocal:
            break
        caplen: i64 = i64(buf[p + 20]) | i64(buf[p + 21]) << 8 | i64(buf[p + 22]) << 16 | i64(buf[p + 23]) << 24
        bend = p + length
        dend = p + 28 + caplen
        t: i64 = bend - 4
        if dend > t or (i64(buf[t]) | i64(buf[t + 1]) << 8 | i64(buf[t + 2]) << 16 | i64(buf[t + 3]) << 24) != length \
                or dend + (-caplen & 3) < t:
            break
        gi, lt, mul, den, toff, _snap = local[iface]
        hi: i64 = i64(buf[p + 12]) | i64(buf[p + 13]) << 8 | i64(buf[p + 14]) << 16 | i64(buf[p + 15]) << 24
        lo: i64 = i64(buf[p + 16]) | i64(buf[p + 17]) << 8 | i64(buf[p + 18]) << 16 | i64(buf[p + 19]) << 24
        ts = (int(hi) << 32) | int(lo)
        if mul != 1:            # the usual resolutions (µs, ns) skip the big product
            ts *= mul
        if den != 1:
            ts //= den
        ts += toff
        if ts > _SMALL_MAX or ts < _SMALL_MIN:
            break
        num += 1
        wirelen: i64 = i64(buf[p + 24]) | i64(buf[p + 25]) << 8 | i64(buf[p + 26]) << 16 | i64(buf[p + 27]) << 24
        out.append(Frame(num, ts, lt, buf[p + 28:dend], wirelen, gi, None, base + p))
        p = bend
    return p


class PcapngReader(Capture):
    format = "pcapng"

    def __init__(self, stream: BinaryIO, path: str) -> None:
        super().__init__(stream, path)
        read = chunk_reader(stream, self)
        try:
            first = read(CHUNK)
            while 0 < len(first) < 12:        # a pipe may give the section header in pieces
                more = read(CHUNK)
                if not more:
                    break
                first += more
        except OSError as exc:
            stream.close()
            raise CaptureError(f"{path}: cannot read: {exc}") from None
        if len(first) < 12:
            stream.close()
            raise CaptureError(f"{path}: pcapng section header truncated ({len(first)} of 12 bytes)", 0)
        if first[8:12] not in (BOM_LE, BOM_BE):
            stream.close()
            raise CaptureError(f"{path}: not a pcapng file (byte-order magic {first[8:12].hex()})", 8)
        self.sections: list[dict] = []
        self._gen = self._frames(first)
        # Read up to the first frame now, so the interfaces described before it are known at open.
        self._first = next(self._gen, None)

    def __iter__(self) -> Iterator[Frame]:
        first, self._first = self._first, None
        if first is None:
            return self._gen
        return itertools.chain((first,), self._gen)

    # -- the block loop (hot path: one unpack per packet block header) -------------------------------
    def _frames(self, buf: bytes) -> Iterator[Frame]:
        read = chunk_reader(self.stream, self)
        seek = chunk_seeker(self.stream)
        blen = len(buf)
        pos = 0
        base = 0                   # file offset of buf[0]
        num = 0
        order = _LE
        hdr = order.hdr
        u32 = order.u32
        epb = order.epb
        local: list[Interface] = []    # this section's interfaces
        # The unpacked words, typed: compiled, they stay machine integers (unpack_from gives Any).
        btype: int
        length: int
        iface: int
        hi: int
        lo: int
        caplen: int
        wirelen: int
        seen_shb = False
        nlocal = 0                 # len(local), kept by the code that changes it
        try:
            while True:
                avail = blen - pos
                if avail >= 32:
                    # Fast path: a well-formed Enhanced Packet Block wholly in the buffer.  Anything
                    # unusual falls through to the general code below, which checks and reports.
                    # Little-endian words are read byte by byte: compiled, a few instructions each,
                    # where a struct's unpack makes a tuple and an int object per word.
                    if order is _LE:
                        # a run of plain blocks, taken by a plain function (compiled, this generator's
                        # locals live in an object: each read and write of one is an attribute's)
                        batch: list[Frame] = []
                        stop = _plain_epbs(buf, pos, blen, local, nlocal, num, base, batch)
                        if batch:
                            num += len(batch)
                            pos = stop
                            for frame in batch:
                                yield frame
                            continue
                        btype = u32le(buf, pos)
                        if btype == 6:
                            length = u32le(buf, pos + 4)
                            iface = u32le(buf, pos + 8)
                            hi = u32le(buf, pos + 12)
                            lo = u32le(buf, pos + 16)
                            caplen = u32le(buf, pos + 20)
                            wirelen = u32le(buf, pos + 24)
                    else:
                        btype, length, iface, hi, lo, caplen, wirelen = epb(buf, pos)
                    if btype == 6 and 32 <= length <= avail and not length & 3 and iface < nlocal:
                        bend = pos + length
                        dend = pos + 28 + caplen
                        if dend <= bend - 4:
                            # typed: compiled, compared as machine integers (an unpack gives Any)
                            trailer: int = u32le(buf, bend - 4) if order is _LE else u32(buf, bend - 4)[0]
                        else:
                            trailer = -1
                        if trailer == length:
                            gi, lt, mul, den, toff, _snap = local[iface]
                            opt = dend + (-caplen & 3)
                            num += 1
                            ts = (hi << 32) | lo
                            if mul != 1:            # the usual resolutions (µs, ns) skip the big product
                                ts *= mul
                            if den != 1:
                                ts //= den
                            ts += toff
                            if (ts > _SMALL_MAX or ts < _SMALL_MIN) and (ts > MAX_NS or ts < MIN_NS):
                                ts = self._clamp(ts)
                            yield Frame(num, ts, lt, buf[pos + 28:dend], wirelen, gi,
                                        _comment(buf, opt, bend - 4, order, base, "enhanced packet block")
                                        if opt < bend - 4 else None, base + pos)
                            pos = bend
                            continue
                elif avail < 12:
                    buf = next_chunk(read, seek, buf, pos, base + pos, CHUNK)
                    if len(buf) == avail:
                        self.ended(f"truncated block header ({avail} of 12 bytes)" if avail else None, base + pos)
                        return
                    base += pos
                    pos = 0
                    blen = len(buf)
                    continue
                btype, length = hdr(buf, pos)
                if btype == SHB_TYPE:
                    bom = buf[pos + 8:pos + 12]
                    if bom == BOM_LE:
                        order = _LE
                    elif bom == BOM_BE:
                        order = _BE
                    else:
                        self.problem(f"section header block: bad byte-order magic {bom.hex()}", base + pos)
                        return
                    hdr, u32, epb = order.hdr, order.u32, order.epb
                    length = u32(buf, pos + 4)[0]
                elif not seen_shb:
                    self.problem(f"the file does not start with a section header block (block type {btype:#x})",
                                 base + pos)
                    return
                if length < 12 or length & 3 or length > MAX_BLOCK:
                    why = "shorter than 12" if length < 12 else "not a multiple of 4" if length & 3 else \
                        f"larger than {MAX_BLOCK}"
                    self.problem(f"{_name(btype)}: bad block length {length} ({why})", base + pos)
                    return
                if length > avail:
                    buf = next_chunk(read, seek, buf, pos, base + pos, max(CHUNK, length - avail))
                    if len(buf) == avail:
                        self.ended(f"truncated {_name(btype)}: {avail} of {length} bytes", base + pos)
                        return
                    base += pos
                    pos = 0
                    blen = len(buf)
                    continue
                bend = pos + length
                if u32(buf, bend - 4)[0] != length:
                    self.problem(f"{_name(btype)}: trailing block length {u32(buf, bend - 4)[0]} does not match "
                                 f"the leading {length}", base + pos)
                    return
                if btype == EPB_TYPE:
                    if length < 32:
                        self.problem(f"enhanced packet block: length {length} is shorter than 32", base + pos)
                        return
                    _t, _l, iface, hi, lo, caplen, wirelen = epb(buf, pos)
                    got = self._packet("enhanced packet block", buf, pos, bend, length, local, order, base,
                                       num + 1, iface, hi, lo, caplen, wirelen)
                    if got is None:
                        return
                    num += 1
                    yield got
                elif btype == SPB_TYPE:
                    if length < 16:
                        self.problem(f"simple packet block: length {length} is shorter than 16", base + pos)
                        return
                    if not local:
                        self.problem("simple packet block before any interface description block", base + pos)
                        return
                    gi, lt, _mul, _den, _toff, snap = local[0]
                    wirelen = order.spb(buf, pos)[2]
                    # The captured length is implied: the original length, cut to the interface's snapshot length.
                    caplen = min(wirelen, snap) if snap else wirelen
                    if caplen > length - 16:
                        self.problem(f"simple packet block: {caplen} bytes of packet data do not fit the block of "
                                     f"{length} bytes", base + pos)
                        return
                    num += 1
                    yield Frame(num, 0, lt, buf[pos + 12:pos + 12 + caplen], wirelen, gi, None, base + pos)
                elif btype == IDB_TYPE:
                    self._interface(buf, pos, bend, order, base, local)
                    nlocal = len(local)
                elif btype == SHB_TYPE:
                    self._section(buf, pos, bend, order, base)
                    local = []
                    nlocal = 0
                    seen_shb = True
                elif btype == OPB_TYPE:
                    if length < 32:
                        self.problem(f"packet block: length {length} is shorter than 32", base + pos)
                        return
                    _t, _l, iface, _drops, hi, lo, caplen, wirelen = order.opb(buf, pos)
                    got = self._packet("packet block", buf, pos, bend, length, local, order, base,
                                       num + 1, iface, hi, lo, caplen, wirelen)
                    if got is None:
                        return
                    num += 1
                    yield got
                pos = bend
        except Damage as exc:
            self.problem(str(exc), exc.offset)
        except OSError as exc:
            self.problem(f"read error ({exc})", base + pos)

    # -- the description blocks ----------------------------------------------------------------------
    def _packet(self, what: str, buf: bytes, pos: int, bend: int, length: int, local: list[Interface], order: _Order,
                base: int, num: int, iface: int, hi: int, lo: int, caplen: int, wirelen: int) -> Frame | None:
        """The frame of an Enhanced or obsolete Packet Block (data at offset 28), or None with the problem."""
        dend = pos + 28 + caplen
        if dend > bend - 4:
            self.problem(f"{what}: captured length {caplen} does not fit the block of {length} bytes", base + pos)
            return None
        try:
            gi, lt, mul, den, toff, _snap = local[iface]
        except IndexError:
            self.problem(f"{what} for interface {iface}, which no interface description block of this section "
                         f"declared", base + pos)
            return None
        opt = dend + (-caplen & 3)
        comment = _comment(buf, opt, bend - 4, order, base, what) if opt < bend - 4 else None
        ts = (((hi << 32) | lo) * mul) // den + toff
        if ts > MAX_NS or ts < MIN_NS:
            ts = self._clamp(ts)
        return Frame(num, ts, lt, buf[pos + 28:dend], wirelen, gi, comment, base + pos)

    def _clamp(self, ts: int) -> int:
        return self.clamp(MAX_NS if ts > MAX_NS else MIN_NS)

    def _section(self, buf: bytes, pos: int, bend: int, order: _Order, base: int) -> None:
        if bend - pos < 28:
            raise Damage(f"section header block: length {bend - pos} is shorter than 28", base + pos)
        _t, _l, _bom, major, minor, _seclen = order.shb(buf, pos)
        if major != 1:
            raise Damage(f"section header block: unsupported pcapng version {major}.{minor}", base + pos)
        info: dict = {"offset": base + pos, "byte_order": "little" if order is _LE else "big",
                      "version": f"{major}.{minor}"}
        names = {OPT_COMMENT: "comment", 2: "hardware", 3: "os", 4: "application"}
        for code, v in _options(buf, pos + 24, bend - 4, order, base, "section header block"):
            key = names.get(code)
            if key is not None:
                info[key] = _text(v) if key not in info else f"{info[key]}; {_text(v)}"
        self.sections.append(info)

    def _interface(self, buf: bytes, pos: int, bend: int, order: _Order, base: int, local: list[Interface]) -> None:
        if bend - pos < 20:
            raise Damage(f"interface description block: length {bend - pos} is shorter than 20", base + pos)
        _t, _l, linktype, _res, snaplen = order.idb(buf, pos)
        name = description = ""
        filt: str | None = None
        tsresol = 6
        tsoffset = 0
        what = "interface description block"
        for code, v in _options(buf, pos + 16, bend - 4, order, base, what):
            if code == IF_NAME:
                name = _text(v)
            elif code == IF_DESCRIPTION:
                description = _text(v)
            elif code == IF_TSRESOL:
                if len(v) != 1:
                    raise Damage(f"{what}: if_tsresol of {len(v)} bytes (1 expected)", base + pos)
                tsresol = v[0]
            elif code == IF_TSOFFSET:
                if len(v) != 8:
                    raise Damage(f"{what}: if_tsoffset of {len(v)} bytes (8 expected)", base + pos)
                tsoffset = order.q(v, 0)[0]
            elif code == IF_FILTER and v:
                # first byte: 0 = libpcap filter string, 1 = BPF program
                filt = _text(v[1:]) if v[0] == 0 else f"BPF program ({(len(v) - 1) // 8} instructions)"
        exp = tsresol & 0x7F
        ticks = (1 << exp) if tsresol & 0x80 else 10 ** exp      # ticks per second
        g = _gcd(1_000_000_000, ticks)
        mul, den = 1_000_000_000 // g, ticks // g                 # ns = ticks * mul // den, exactly
        gi = len(self.interfaces)
        self.interfaces.append({"name": name, "description": description, "linktype": linktype,
                                "snaplen": snaplen, "ns_per_tick": mul if den == 1 else mul / den,
                                "filter": filt, "tsoffset": tsoffset, "section": len(self.sections) - 1})
        self.linktypes[gi] = linktype
        local.append((gi, linktype, mul, den, tsoffset * 1_000_000_000, snaplen))


def _name(btype: int) -> str:
    return BLOCK_NAMES.get(btype, f"block of type {btype:#x}")
