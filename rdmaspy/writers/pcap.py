"""Classic pcap writer (nanosecond or microsecond timestamps, one link type per file)."""
from __future__ import annotations

import os
import struct
from typing import BinaryIO

from ..errors import RdmaspyError
from .base import Writer

LINKTYPE_MAX = 0xFFFF                # bits 16-31 of the header's link-type word are FCS and reserved bits
MAGIC_US = 0xA1B2C3D4
MAGIC_NS = 0xA1B23C4D
_REC = struct.Struct("=IIII")        # seconds, sub-second ticks, captured length, original length


class PcapWriter(Writer):
    """Write pcap records to a binary stream or a path (opened and owned here); timestamps in nanoseconds."""

    def __init__(self, target: str | os.PathLike | BinaryIO, linktype: int, snaplen: int = 262144, *,
                 nanosecond: bool = True, buffering: int = 1 << 20) -> None:
        if not 0 <= linktype <= LINKTYPE_MAX:
            raise RdmaspyError(f"link type {linktype} cannot be written in pcap (its field is 16 bits)")
        super().__init__(target, buffering)
        self.linktype = linktype
        self.snaplen = snaplen
        self.nanosecond = nanosecond
        self._div = 1 if nanosecond else 1000
        self._write = self.stream.write
        self.packets = 0
        hdr = struct.pack("=IHHiIII", MAGIC_NS if nanosecond else MAGIC_US, 2, 4, 0, 0, snaplen, linktype)
        self._write(hdr)
        self.bytes_written = len(hdr)

    def write_packet(self, ts_ns: int, data: bytes | memoryview, wirelen: int | None = None) -> None:
        n = len(data)
        if n > self.snaplen:                 # a pcap record never exceeds the file's snap length
            data = data[:self.snaplen]
            wirelen = n if wirelen is None else wirelen
            n = self.snaplen
        sec, frac = divmod(ts_ns, 1_000_000_000)
        self._write(_REC.pack(sec & 0xFFFFFFFF, frac // self._div, n, n if wirelen is None else wirelen))
        self._write(data)
        self.bytes_written += 16 + n
        self.packets += 1
