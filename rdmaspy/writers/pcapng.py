"""pcapng writer: Section Header, Interface Description, Enhanced Packet and Interface Statistics blocks.

Written in the host's byte order (the format allows either and readers swap).  The
hot call is ``write_packet``: one precompiled struct for the Enhanced Packet Block
header, the data appended as is, padding from a constant table.  Interfaces carry
their name, description, capture filter, timestamp resolution and snap length;
packets may carry comments (``annotate`` writes its findings that way).
"""
from __future__ import annotations

import os
import struct
from typing import BinaryIO, Iterable

from .. import __version__
from ..errors import RdmaspyError
from ..packet import Frame
from .base import Writer

BT_SHB = 0x0A0D0D0A
BT_IDB = 0x00000001
BT_EPB = 0x00000006
BT_ISB = 0x00000005
BYTE_ORDER_MAGIC = 0x1A2B3C4D

OPT_ENDOFOPT = 0
OPT_COMMENT = 1
SHB_HARDWARE = 2
SHB_OS = 3
SHB_USERAPPL = 4
IF_NAME = 2
IF_DESCRIPTION = 3
IF_TSRESOL = 9
IF_FILTER = 11
IF_OS = 12
IF_TSOFFSET = 14
EPB_FLAGS = 2
ISB_STARTTIME = 2
ISB_ENDTIME = 3
ISB_IFRECV = 4
ISB_IFDROP = 5
ISB_FILTERACCEPT = 6
ISB_OSDROP = 7
ISB_USRDELIV = 8

# EPB flags: inbound/outbound direction in the two low bits (pcapng spec, epb_flags).
DIRECTION_INBOUND = 1
DIRECTION_OUTBOUND = 2

EPB_HEAD = struct.Struct("=IIIIIII")      # type, total length, interface, ts high, ts low, captured, original
_EPB_HEAD = EPB_HEAD
_U32 = struct.Struct("=I")
_OPT_HEAD = struct.Struct("=HH")
_PAD = (b"", b"\0\0\0", b"\0\0", b"\0")   # indexed by length % 4


LINKTYPE_MAX = 0xFFFF                     # an interface's link type is 16 bits
OPTION_MAX = 0xFFFF                       # an option's length is 16 bits
TICKS_END = 1 << 64                       # a timestamp is 64 bits of ticks


def _option(code: int, value: bytes) -> bytes:
    return _OPT_HEAD.pack(code, len(value)) + value + _PAD[len(value) & 3]


def comment_pieces(text: str) -> list[bytes]:
    """A comment as the values of one or more opt_comment options: UTF-8, cut at character boundaries
    into pieces of at most 65,535 bytes (an option's most)."""
    data = text.encode("utf-8", "replace")
    if len(data) <= OPTION_MAX:
        return [data]
    pieces: list[bytes] = []
    start = 0
    while start < len(data):
        end = min(start + OPTION_MAX, len(data))
        while end < len(data) and data[end] & 0xC0 == 0x80:       # not inside a character
            end -= 1
        pieces.append(data[start:end])
        start = end
    return pieces


def _options(opts: Iterable[tuple[int, bytes]]) -> bytes:
    body = b"".join(_option(c, v) for c, v in opts)
    return body + _OPT_HEAD.pack(OPT_ENDOFOPT, 0) if body else b""


def _block(btype: int, body: bytes) -> bytes:
    total = 12 + len(body)
    return _U32.pack(btype) + _U32.pack(total) + body + _U32.pack(total)


def _ts_u64(ts_ns: int, ticks_per_s: int) -> int:
    return ts_ns if ticks_per_s == 1_000_000_000 else ts_ns * ticks_per_s // 1_000_000_000


def host_names() -> tuple[str, str]:
    """The section header's hardware and operating system ("x86_64", "Linux 6.1.0"): the kernel's own names,
    as platform.machine/system/release read them, with no module to import (which every command's start
    paid for, and which a capture that dropped root with -Z may no longer be let read)."""
    host = os.uname()
    return host.machine, f"{host.sysname} {host.release}"


class PcapngWriter(Writer):
    """Write a pcapng section to a binary stream (or a path, opened and owned here).

    ``tsresol`` is the power of ten of the timestamp unit for every interface
    (9: nanoseconds, 6: microseconds); timestamps are given in nanoseconds.
    """

    def __init__(self, target: str | os.PathLike | BinaryIO, *, application: str | None = None,
                 comment: str | None = None, buffering: int = 1 << 20) -> None:
        super().__init__(target, buffering)
        self._write = self.stream.write
        self.bytes_written = 0
        self.packets = 0
        self._ticks: list[int] = []          # per interface: timestamp ticks per second
        self._offsets: list[int] = []        # per interface: if_tsoffset in nanoseconds
        self.clamped = 0                     # packets whose time the interface cannot hold (written at its bound)
        self.split_comments = 0              # comments longer than one option, written as several
        opts: list[tuple[int, bytes]] = []
        if comment:
            opts.extend((OPT_COMMENT, piece) for piece in comment_pieces(comment))
        machine, system = host_names()
        opts.append((SHB_HARDWARE, machine.encode()))
        opts.append((SHB_OS, system.encode()))
        opts.append((SHB_USERAPPL, (application or f"rdmaspy {__version__}").encode()))
        # section length -1: not known in advance (the file is a stream)
        body = struct.pack("=IHHq", BYTE_ORDER_MAGIC, 1, 0, -1) + _options(opts)
        self._raw(_block(BT_SHB, body))

    def _raw(self, data: bytes) -> None:
        self._write(data)
        self.bytes_written += len(data)

    def add_interface(self, linktype: int, snaplen: int = 262144, *, name: str | None = None,
                      description: str | None = None, filter: str | None = None,
                      tsresol: int = 9, os_name: str | None = None, tsoffset: int = 0) -> int:
        """Describe an interface; returns its index for ``write_packet``.  ``tsoffset``: seconds added to
        every timestamp of the interface (if_tsoffset), so times before 1970 can be written exactly."""
        if not 0 <= tsresol <= 19:
            raise ValueError(f"tsresol {tsresol} out of range")
        if not 0 <= linktype <= LINKTYPE_MAX:
            raise RdmaspyError(f"link type {linktype} cannot be written in pcapng (its field is 16 bits)")
        opts: list[tuple[int, bytes]] = []
        if name:
            opts.append((IF_NAME, name.encode()))
        if description:
            opts.append((IF_DESCRIPTION, description.encode()))
        if tsresol != 6:                     # 6 (microseconds) is the default when absent
            opts.append((IF_TSRESOL, bytes((tsresol,))))
        if filter is not None:
            opts.append((IF_FILTER, b"\0" + filter.encode()))   # 0: a libpcap filter string
        if os_name:
            opts.append((IF_OS, os_name.encode()))
        if tsoffset:
            opts.append((IF_TSOFFSET, struct.pack("=q", tsoffset)))
        body = struct.pack("=HHI", linktype, 0, snaplen) + _options(opts)
        self._raw(_block(BT_IDB, body))
        self._ticks.append(10 ** tsresol)
        self._offsets.append(tsoffset * 1_000_000_000)
        return len(self._ticks) - 1

    def copy_frame(self, frame: Frame, interfaces: list[dict], copied: dict[int, int]) -> None:
        """Write a frame read from a capture as it was captured (time, lengths, comment), its interface
        (from the capture's ``interfaces``) described before its first frame; ``copied`` maps the capture's
        interface numbers to this file's, and is filled here."""
        idx = copied.get(frame.iface)
        if idx is None:
            desc = interfaces[frame.iface] if frame.iface < len(interfaces) else {}
            idx = copied[frame.iface] = self.add_interface(
                frame.linktype, int(desc.get("snaplen") or 262144), name=desc.get("name") or None,
                description=desc.get("description") or None, tsresol=9)
        self.write_packet(idx, frame.ts, frame.data, frame.wirelen, comment=frame.comment)

    def write_packet(self, iface: int, ts_ns: int, data: bytes | memoryview, wirelen: int | None = None,
                     comment: str | Iterable[str] | None = None, flags: int | None = None) -> None:
        n = len(data)
        ticks = self._ticks[iface]
        ts_ns -= self._offsets[iface]
        ts = ts_ns if ticks == 1_000_000_000 else ts_ns * ticks // 1_000_000_000
        if ts < 0 or ts >= TICKS_END:
            self.clamped += 1
            ts = 0 if ts < 0 else TICKS_END - 1
        pad = _PAD[n & 3]
        if comment is None and flags is None:
            total = 32 + n + len(pad)
            w = self._write
            w(_EPB_HEAD.pack(BT_EPB, total, iface, ts >> 32, ts & 0xFFFFFFFF, n, n if wirelen is None else wirelen))
            w(data)
            w(pad + _U32.pack(total))
            self.bytes_written += total
            self.packets += 1
            return
        opts: list[tuple[int, bytes]] = []
        if flags is not None:
            opts.append((EPB_FLAGS, _U32.pack(flags)))
        if comment is not None:
            for c in ([comment] if isinstance(comment, str) else comment):
                pieces = comment_pieces(c)
                if len(pieces) > 1:
                    self.split_comments += 1
                opts.extend((OPT_COMMENT, p) for p in pieces)
        tail = _options(opts)
        total = 32 + n + len(pad) + len(tail)
        self._raw(_EPB_HEAD.pack(BT_EPB, total, iface, ts >> 32, ts & 0xFFFFFFFF, n,
                                 n if wirelen is None else wirelen) + bytes(data) + pad + tail + _U32.pack(total))
        self.packets += 1

    def write_epb_bytes(self, chunk: bytes | bytearray | memoryview, packets: int) -> None:
        """Append Enhanced Packet Blocks already laid out by the caller (the capture ring's batch path)."""
        self._write(chunk)
        self.bytes_written += len(chunk)
        self.packets += packets

    def write_stats(self, iface: int, ts_ns: int, *, ifrecv: int | None = None, ifdrop: int | None = None,
                    filteraccept: int | None = None, osdrop: int | None = None, usrdeliv: int | None = None,
                    starttime_ns: int | None = None, endtime_ns: int | None = None,
                    comment: str | None = None) -> None:
        """Interface Statistics Block; counters are totals from the start of the capture."""
        ticks = self._ticks[iface]
        q = struct.Struct("=II")

        def tsopt(ns: int) -> bytes:
            t = _ts_u64(ns, ticks)
            return q.pack(t >> 32, t & 0xFFFFFFFF)

        opts: list[tuple[int, bytes]] = []
        if comment:
            opts.extend((OPT_COMMENT, piece) for piece in comment_pieces(comment))
        if starttime_ns is not None:
            opts.append((ISB_STARTTIME, tsopt(starttime_ns)))
        if endtime_ns is not None:
            opts.append((ISB_ENDTIME, tsopt(endtime_ns)))
        for code, v in ((ISB_IFRECV, ifrecv), (ISB_IFDROP, ifdrop), (ISB_FILTERACCEPT, filteraccept),
                        (ISB_OSDROP, osdrop), (ISB_USRDELIV, usrdeliv)):
            if v is not None:
                opts.append((code, struct.pack("=Q", v)))
        t = _ts_u64(ts_ns, ticks)
        self._raw(_block(BT_ISB, struct.pack("=III", iface, t >> 32, t & 0xFFFFFFFF) + _options(opts)))
