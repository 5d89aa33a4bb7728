"""JSON Lines (``decode -T json``) as a pipeline sink: one object per packet and line."""
from __future__ import annotations

from ..packet import Packet
from .jsonout import packet_json
from .sinks import TimedSink


class JsonLinesSink(TimedSink):
    """One JSON object per packet and line, times relative to the pipeline's first frame."""

    __slots__ = ()

    def packet(self, pkt: Packet) -> None:
        self.out.line(packet_json(pkt, self.t0()))
