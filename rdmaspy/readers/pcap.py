"""Classic libpcap files, both byte orders, micro- and nanosecond timestamps."""
from __future__ import annotations

import struct

from ..errors import CaptureError
from ..packet import Frame
from ..typenames import BinaryIO, Final, Iterator, i64
from .base import PCAP_MAGICS, Capture, chunk_reader, chunk_seeker, next_chunk
from .pcapng import u32le

CHUNK: Final = 1 << 20
# libpcap and Wireshark refuse records above 256 KiB unless the snapshot length asks for more;
# the cap keeps a damaged length from making us allocate gigabytes.
MAX_RECORD: Final = 262144
MAX_SNAPLEN_RECORD: Final = 1 << 24
LINKTYPE_MASK: Final = 0x0000FFFF
FCS_PRESENT: Final = 0x04000000
RESERVED_BITS: Final = 0x0BFF0000


class PcapReader(Capture):
    format = "pcap"

    def __init__(self, stream: BinaryIO, path: str) -> None:
        super().__init__(stream, path)
        try:
            hdr = stream.read(24)
        except OSError as exc:
            stream.close()
            raise CaptureError(f"{path}: cannot read: {exc}") from None
        if len(hdr) < 24:
            stream.close()
            damage = getattr(stream, "damage", None)
            raise CaptureError(f"{path}: pcap file header truncated ({len(hdr)} of 24 bytes)"
                               + (f", {damage}" if damage else ""), 0)
        order, self.ns_per_tick = PCAP_MAGICS[hdr[:4]]
        _magic, self.major, self.minor, _tz, _sigfigs, self.snaplen, network = struct.unpack(order + "4sHHiIII", hdr)
        # The link-type word (pcap-linktype(7)): the link type in bits 0-15, reserved bits 16-25 and 27,
        # "FCS length present" in bit 26 and the FCS length in 16-bit units in bits 28-31.
        self.linktype = network & LINKTYPE_MASK
        self.fcs_len = (network >> 28) * 2 if network & FCS_PRESENT else 0
        reserved = network & RESERVED_BITS
        if reserved:
            self.warn(f"the pcap header's link-type word {network:#010x} has reserved bits set "
                                 f"({reserved:#010x}); they are ignored: link type {self.linktype}")
        self.linktypes[0] = self.linktype
        self.interfaces.append({"name": "", "description": "", "linktype": self.linktype,
                                "snaplen": self.snaplen, "ns_per_tick": self.ns_per_tick, "filter": None,
                                "fcs_len": self.fcs_len})
        self._rec = struct.Struct(order + "IIII")
        self._little = order == "<"
        self._limit = max(MAX_RECORD, min(self.snaplen, MAX_SNAPLEN_RECORD))

    def __iter__(self) -> Iterator[Frame]:
        return self._frames()

    def _frames(self) -> Iterator[Frame]:
        read = chunk_reader(self.stream, self)
        seek = chunk_seeker(self.stream)
        unpack = self._rec.unpack_from
        little = self._little
        lt = self.linktype
        # sub-second units to nanoseconds: microsecond files count 1e6 per second, nanosecond files 1e9
        sub = 1000 if self.ns_per_tick == 1000 else 1
        limit = self._limit
        buf = b""
        blen = 0
        pos = 0
        base = 24          # file offset of buf[0]
        num = 0
        # The record header's words, typed: compiled, they stay machine integers (unpack_from gives Any).
        sec: int
        frac: int
        caplen: int
        wirelen: int
        try:
            while True:
                if blen - pos < 16:
                    left = blen - pos
                    buf = next_chunk(read, seek, buf, pos, base + pos, CHUNK)
                    if len(buf) == left:
                        self.ended(f"truncated record header ({left} of 16 bytes)" if left else None, base + pos)
                        return
                    base += pos
                    pos = 0
                    blen = len(buf)
                    continue
                if little:
                    # byte by byte: compiled, a few instructions a word, where the unpack makes a tuple
                    # and an int object per word
                    sec = u32le(buf, pos)
                    frac = u32le(buf, pos + 4)
                    caplen = u32le(buf, pos + 8)
                    wirelen = u32le(buf, pos + 12)
                else:
                    sec, frac, caplen, wirelen = unpack(buf, pos)
                end = pos + 16 + caplen
                if caplen > limit:
                    self.problem(f"bad record: captured length {caplen} is larger than the maximum {limit}",
                                 base + pos)
                    return
                if end > blen:
                    left = blen - pos
                    buf = next_chunk(read, seek, buf, pos, base + pos, max(CHUNK, end - blen))
                    if len(buf) == left:
                        self.ended(f"truncated record: {left - 16} of {caplen} bytes", base + pos)
                        return
                    base += pos
                    pos = 0
                    blen = len(buf)
                    continue
                num += 1
                # in 64 bits: as an int, a second count times 10^9 is a multiplication of big integers
                yield Frame(num, i64(sec) * 1_000_000_000 + frac * sub, lt, buf[pos + 16:end], wirelen, 0, None,
                            base + pos)
                pos = end
        except OSError as exc:
            self.problem(f"read error ({exc})", base + pos)
