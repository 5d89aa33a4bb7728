"""``decode -w``: the packets a display filter shows, written again as pcapng.

Each interface of the capture read becomes an interface of the file written (its link type, name,
description and snap length), on first use; frames keep their timestamps (in
nanoseconds), original lengths and comments.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, BinaryIO

from ..packet import Packet
from ..writers.pcapng import PcapngWriter

if TYPE_CHECKING:
    from ..pipeline import Pipeline


class PcapngSink:
    """Writes every shown packet's frame to a pcapng stream."""

    __slots__ = ("writer", "_interfaces", "_described")

    def __init__(self, stream: BinaryIO, comment: str | None = None) -> None:
        self.writer = PcapngWriter(stream, comment=comment)
        self._interfaces: list[dict[str, Any]] = []
        self._described: dict[tuple[int, int], int] = {}      # (interface read, link type) -> written

    def attach(self, pipe: Pipeline) -> None:
        self._interfaces = list(getattr(pipe.source, "interfaces", None) or ())

    def packet(self, pkt: Packet) -> None:
        f = pkt.frame
        key = (f.iface, f.linktype)
        idx = self._described.get(key)
        if idx is None:
            idx = self._described[key] = self._describe(f.iface, f.linktype)
        self.writer.write_packet(idx, f.ts, f.data, f.wirelen, comment=f.comment or None)

    def _describe(self, iface: int, linktype: int) -> int:
        info = self._interfaces[iface] if 0 <= iface < len(self._interfaces) else {}
        return self.writer.add_interface(linktype, info.get("snaplen") or 262144, name=info.get("name") or None,
                                         description=info.get("description") or None, tsresol=9,
                                         tsoffset=info.get("tsoffset") or 0)

    def flush(self) -> None:
        self.writer.flush()

    def finish(self) -> None:
        self.writer.flush()
