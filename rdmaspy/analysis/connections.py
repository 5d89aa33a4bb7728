"""Connections as records: a ``model.Connection`` for each connection the packets belong to.

The connection table (rdmaspy.conversation) follows each connection's setup, state and counters
as the dissectors see them.  This module hands a snapshot of each to the record sink when the
connection's first packet is analysed, again every ``REFRESH`` packets when it changed (updated
in place, so a live view's counters move) and at the end, so that a sink that keeps connections by id always
holds their latest values.
"""
from __future__ import annotations

from ..conversation import ENDED
from ..packet import Packet
from ..typenames import TYPE_CHECKING, Final, mypyc_attr
from .analyzer import Analyzer, Module, register
from .model import Connection

if TYPE_CHECKING:
    from ..conversation import Connection as LiveConnection

REFRESH: Final = 4096          # packets between two refreshes of the snapshots


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Connections(Module):
    """The analysis module: one snapshot per connection, kept up to date."""

    def __init__(self, analyzer: Analyzer) -> None:
        self.an = analyzer
        self.seen: dict[int, tuple[LiveConnection, Connection]] = {}
        # The connection of the last packet, known to be in ``seen``: most packets follow one of the same
        # connection, which needs no look-up (compiled, some 150 instructions a packet).
        self.last: LiveConnection | None = None
        self.countdown = REFRESH

    def packet(self, pkt: Packet) -> None:
        conv: LiveConnection | None = pkt.conv      # typed (Packet.conv is Any): its attributes read directly
        if conv is not None:
            if conv is not self.last:
                if conv.conn_id not in self.seen:
                    snap = Connection.of(conv)
                    self.seen[conv.conn_id] = (conv, snap)
                    self.an.emit(snap)
                self.last = conv
            self.countdown -= 1
            if self.countdown <= 0:
                self.countdown = REFRESH
                self._refresh()
        # a packet without notes (most) has no ended connections: no call for it
        ended = pkt.noted(ENDED) if pkt.extra is not None else None
        if ended:
            self.last = None
            for live in ended:
                # its last snapshot now: nothing changes it any more, and it leaves the refreshes
                got = self.seen.pop(live.conn_id, None)
                if got is not None:
                    self._again(*got)

    def _refresh(self) -> None:
        """Emit again the connections that changed since their last snapshot."""
        for live, snap in self.seen.values():
            self._again(live, snap)

    def _again(self, live: LiveConnection, snap: Connection) -> None:
        if (live.packets_c2s, live.packets_s2c, live.state, live.t_end) != (
                snap.packets_c2s, snap.packets_s2c, snap.state, snap.t_end):
            snap.update(live)
            self.an.emit(snap)

    def finish(self) -> None:
        self._refresh()


register("connections", Connections)
