"""Classic libpcap files, both byte orders, micro- and nanosecond timestamps."""
from __future__ import annotations

import struct
from typing import BinaryIO, Iterator

from ..errors import CaptureError
from ..packet import Frame
from . import PCAP_MAGICS, Capture

CHUNK = 1 << 20


class PcapReader(Capture):
    format = "pcap"

    def __init__(self, stream: BinaryIO, path: str) -> None:
        super().__init__(stream, path)
        hdr = stream.read(24)
        if len(hdr) < 24:
            raise CaptureError(f"{path}: pcap file header truncated ({len(hdr)} of 24 bytes)", 0)
        order, self.ns_per_tick = PCAP_MAGICS[hdr[:4]]
        _magic, self.major, self.minor, _tz, _sigfigs, self.snaplen, network = struct.unpack(order + "4sHHiIII", hdr)
        # The upper bits of the link-type word may carry FCS information (pcap-linktype(7)).
        self.linktype = network & 0x0FFFFFFF
        self.fcs_len = (network >> 28) * 2 if network & 0x04000000 else 0
        self.linktypes[0] = self.linktype
        self.interfaces.append({"name": "", "linktype": self.linktype, "snaplen": self.snaplen,
                                "ns_per_tick": self.ns_per_tick})
        self._rec = struct.Struct(order + "IIII")

    def __iter__(self) -> Iterator[Frame]:
        read = self.stream.read
        unpack = self._rec.unpack_from
        lt = self.linktype
        scale = self.ns_per_tick
        # ticks per second: microsecond files count 1e6 sub-second units, nanosecond files 1e9
        sub = 1000 if scale == 1000 else 1
        buf = b""
        pos = 0
        file_off = 24          # file offset of buf[0]
        num = 0
        limit = max(self.snaplen, 262144) * 4
        while True:
            if len(buf) - pos < 16:
                more = read(CHUNK)
                buf = buf[pos:] + more
                file_off += pos
                pos = 0
                if not more:
                    if buf:
                        self.problem(f"truncated record header ({len(buf)} of 16 bytes)", file_off)
                    return
                continue
            sec, frac, caplen, wirelen = unpack(buf, pos)
            if caplen > limit:
                self.problem(f"bad record: captured length {caplen} is impossible", file_off + pos)
                return
            end = pos + 16 + caplen
            if end > len(buf):
                more = read(max(CHUNK, caplen + 16))
                if not more:
                    self.problem(f"truncated record: {len(buf) - pos - 16} of {caplen} bytes", file_off + pos)
                    # decode what there is of the last packet
                    num += 1
                    yield Frame(num, sec * 1_000_000_000 + frac * sub, lt, buf[pos + 16:], wirelen, 0, None,
                                file_off + pos)
                    return
                buf = buf[pos:] + more
                file_off += pos
                pos = 0
                continue
            num += 1
            yield Frame(num, sec * 1_000_000_000 + frac * sub, lt, buf[pos + 16:end], wirelen, 0, None, file_off + pos)
            pos = end
