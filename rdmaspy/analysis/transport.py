"""InfiniBand transport analysis: PSNs per queue pair, in the manner of Wireshark's tcp.analysis.

On a reliable (or unreliable) connection each requester numbers its request packets with a 24-bit
PSN that grows by one per packet (an RDMA READ request takes as many PSNs as its responses have
packets), and the responder answers in the same PSN space: ACKs and NAKs name a request PSN, READ
responses carry the PSNs their request reserved.  So a connection has two PSN spaces, one per
requester; both the requests and the responses to them are followed in their requester's space.

For each request packet the analysis says whether it is in order, follows a gap (PSNs not
captured: lost before the capture point, or the capture missed them), fills a gap (out of order),
is sent again (retransmission: after a NAK, an RNR NAK or a timeout) or is a duplicate (the same
packet again at once, with nothing to make the requester go back).  For the responses it counts
the PSNs each ACK covers (coalescing), reports NAKs by code and RNR NAKs (with the delay until the
requester retries), and matches READ responses to their request (number of packets at the path
MTU and length).  CNPs and ECN Congestion Experienced marks are counted per flow; a bad ICRC is a
finding.  Per-packet results become ``ib.analysis.*`` fields on an ``ib.analysis`` layer; each
sequence event is also a ``PsnEvent`` record, and at the end each requester's counters are a
``PsnStats`` and each flow's congestion a ``CongestionFlow``.

Memory per connection is bounded: a ring of the last PSNs sent, a few gap ranges, and the READ
requests still waiting for their responses.
"""
from __future__ import annotations

import struct
from collections import deque
from typing import TYPE_CHECKING, Callable, Final

from mypy_extensions import mypyc_attr

from ..dissectors.infiniband import (AETH_NAK_CODES, AETH_TYPE_ACK, AETH_TYPE_NAK, AETH_TYPE_RNR_NAK, AETH_VALUE_MASK,
                                     PATH_MTU_MAX, PATH_MTU_MIN, RNR_TIMER_MS, IBInfo)
from ..fields import Field, declaring, protocol
from ..packet import Layer, Packet
from .analyzer import Analyzer, Module, register
from .model import DIRECTION_OF, OTHER, CongestionFlow, Direction, PsnEvent, PsnEventKind, PsnStats

if TYPE_CHECKING:
    from ..conversation import Connection as LiveConnection
from .rules import declare

declaring(__name__)
protocol("ib.analysis", "InfiniBand transport analysis")
# --- per-packet fields --------------------------------------------------------------------------------
RETRANSMISSION: Final = Field("ib.analysis.retransmission", 0, "Retransmission (PSN already sent)", "bool")
DUPLICATE: Final = Field("ib.analysis.duplicate", 0, "Duplicate packet", "bool")
LOST_SEGMENT: Final = Field("ib.analysis.lost_segment", 0, "Previous PSN(s) not captured", "bool")
LOST_PSNS: Final = Field("ib.analysis.lost_psns", 0, "PSNs not captured before this one")
OUT_OF_ORDER: Final = Field("ib.analysis.out_of_order", 0, "Out of order (fills a gap)", "bool")
ORIGINAL_FRAME: Final = Field("ib.analysis.original_frame", 0, "First sent in frame")
NAK_FRAME: Final = Field("ib.analysis.nak_frame", 0, "Sent again after the NAK in frame")
RNR_NAK_FRAME: Final = Field("ib.analysis.rnr_nak_frame", 0, "Retry after the RNR NAK in frame")
RNR_DELAY: Final = Field("ib.analysis.rnr_delay", 0, "Delay caused by the RNR NAK", "float", unit="seconds")
ACK_PSNS: Final = Field("ib.analysis.ack_psns", 0, "PSNs acknowledged")
ACK_COALESCED: Final = Field("ib.analysis.ack_coalesced", 0, "ACK covers several PSNs", "bool")
ACKS_FRAME: Final = Field("ib.analysis.acks_frame", 0, "Acknowledges the request in frame")
ACK_RTT: Final = Field("ib.analysis.ack_rtt", 0, "Time since the acknowledged request", "float", unit="seconds")
DUPLICATE_ACK: Final = Field("ib.analysis.duplicate_ack", 0, "Duplicate ACK (acknowledges nothing new)", "bool")
ACKED_UNSEEN: Final = Field("ib.analysis.acked_unseen", 0, "Acknowledges PSNs not captured", "bool")
NAK_CODE: Final = Field("ib.analysis.nak", 0, "NAK", "dec", AETH_NAK_CODES)
RNR_NAK: Final = Field("ib.analysis.rnr_nak", 0, "RNR NAK", "bool")
READ_REQUEST_FRAME: Final = Field("ib.analysis.read_request_frame", 0, "Response to the READ request in frame")
READ_PACKETS: Final = Field("ib.analysis.read_packets", 0, "READ response packets")
READ_EXPECTED: Final = Field("ib.analysis.read_packets_expected", 0, "READ response packets expected")
READ_BYTES: Final = Field("ib.analysis.read_bytes", 0, "READ response bytes", unit="bytes")
READ_TIME: Final = Field("ib.analysis.read_time", 0, "Time since the READ request", "float", unit="seconds")
PATH_MTU: Final = Field("ib.analysis.path_mtu", 0, "Path MTU used", unit="bytes")
CNP_COUNT: Final = Field("ib.analysis.cnp_count", 0, "CNPs on this flow so far")
ECN_CE: Final = Field("ib.analysis.ecn_ce", 0, "Congestion Experienced", "bool")
CE_COUNT: Final = Field("ib.analysis.ce_count", 0, "Congestion marks on this flow so far")
BAD_ICRC: Final = Field("ib.analysis.bad_icrc", 0, "Invalid ICRC", "bool")

# --- rules ---------------------------------------------------------------------------------------------
LOST: Final = declare(
    "ib.lost_segment", "warning", "sequence",
    "PSN {psn}: {count} earlier PSN(s) not captured (expected {expected})",
    "IBTA vol. 1 9.7 (a requester's PSN grows by one per request packet)")
OUT_OF_ORDER_RULE: Final = declare(
    "ib.out_of_order", "warning", "sequence",
    "PSN {psn} arrives after later PSNs (expected {expected})",
    "IBTA vol. 1 9.7 (request packets arrive in PSN order)")
RETRANSMIT: Final = declare(
    "ib.retransmission", "note", "sequence",
    "PSN {psn} sent again ({first})",
    "IBTA vol. 1 9.7 (go-back-N retry after a NAK, an RNR NAK or a timeout)")
DUPLICATE_RULE: Final = declare(
    "ib.duplicate", "warning", "sequence",
    "PSN {psn} again: a duplicate of {original}",
    "IBTA vol. 1 9.7 (a duplicate request is answered again, never executed twice)")
ACKED_UNSEEN_RULE: Final = declare(
    "ib.acked_unseen", "warning", "sequence",
    "ACK of PSN {psn}, beyond the last PSN captured ({last})",
    "IBTA vol. 1 9.7 (an ACK acknowledges request packets up to its PSN)")
NAK_RULES: Final = {
    0: declare("ib.nak.psn_sequence", "warning", "sequence",
               "NAK PSN sequence error: the responder expects PSN {psn}",
               "IBTA vol. 1 9.7 (AETH syndrome NAK code 0: PSN sequence error)"),
    1: declare("ib.nak.invalid_request", "error", "protocol",
               "NAK invalid request at PSN {psn}",
               "IBTA vol. 1 9.7 (AETH syndrome NAK code 1: invalid request)"),
    2: declare("ib.nak.remote_access", "error", "protocol",
               "NAK remote access error at PSN {psn}",
               "IBTA vol. 1 9.7 (AETH syndrome NAK code 2: remote access error)"),
    3: declare("ib.nak.remote_operational", "error", "protocol",
               "NAK remote operational error at PSN {psn}",
               "IBTA vol. 1 9.7 (AETH syndrome NAK code 3: remote operational error)"),
    4: declare("ib.nak.invalid_rd_request", "error", "protocol",
               "NAK invalid RD request at PSN {psn}",
               "IBTA vol. 1 9.7 (AETH syndrome NAK code 4: invalid RD request)"),
}
NAK_RESERVED: Final = declare(
    "ib.nak.reserved", "error", "protocol",
    "NAK with reserved code {code} at PSN {psn}",
    "IBTA vol. 1 9.7 (AETH NAK codes 5-31 are reserved)")
RNR_RULE: Final = declare(
    "ib.rnr_nak", "warning", "sequence",
    "RNR NAK at PSN {psn}: receiver not ready, retry after {timer_ms} ms",
    "IBTA vol. 1 9.7 (RNR NAK; timer encoding in table 45)")
READ_COUNT: Final = declare(
    "ib.read_response_count", "error", "protocol",
    "READ of {length} bytes answered in {packets} packet(s), {expected} expected at path MTU {mtu}",
    "IBTA vol. 1 9.7 (a READ response has one packet per path MTU of the requested length)")
READ_LENGTH: Final = declare(
    "ib.read_response_length", "error", "protocol",
    "READ response returned {got} bytes for a {length}-byte request (frame {request})",
    "IBTA vol. 1 9.7 (a READ response returns the DMA length of its request)")
READ_SEQUENCE: Final = declare(
    "ib.read_response_sequence", "error", "protocol",
    "READ response to the request of frame {request} begins with {opcode} (a First or an Only is due "
    "at PSN {psn}): the requester discards it and the READ cannot complete",
    "IBTA vol. 1 9.7 (the responses to a READ request, a retried one too, open with READ Response First or Only)")
CNP_RULE: Final = declare(
    "ib.cnp", "note", "congestion",
    "CNP to QP 0x{qp:06x}: congestion notified ({count} on this flow)",
    "IBTA vol. 1 Annex A17 (RoCEv2 congestion management: CNP)")
ECN_RULE: Final = declare(
    "ib.ecn_ce", "note", "congestion",
    "congestion marked on the way ({mark}; {count} on this flow)",
    "IBTA vol. 1 Annex A17 / RFC 3168 (ECN Congestion Experienced); IBTA 9.2 (FECN)")
ICRC_RULE: Final = declare(
    "ib.bad_icrc", "error", "checksum",
    "invalid ICRC 0x{got:08x} (expected 0x{expected:08x}): the receiver drops the packet",
    "IBTA vol. 1 7.8.1 (ICRC)")

_MASK: Final = 0xFFFFFF
_HALF: Final = 0x800000
_RING: Final = 4096            # request PSNs remembered per requester (for original frames and RTTs)
# What the state of a connection, a requester's stream and a ring slot cost, charged to the memory budget
# (tracemalloc over 20,000 queue pairs of one packet each, rounded up).
_CONN_COST: Final = 512
_STREAM_COST: Final = 2048
_SLOT_COST: Final = 32          # four machine integers (a ring slot of Python ints took 100)
_MAX_HOLES: Final = 64         # gap ranges remembered per requester
_MAX_READS: Final = 256        # READ requests waiting for responses per requester
# Below the smallest local ACK timeout (4.096 us * 2^1) a requester cannot resend on its own: the
# same PSN again within it, with no NAK between, is a copy made on the way (or by the capture).
DUPLICATE_WINDOW_NS: Final = 8192
_REQUEST_KINDS: Final = frozenset({"send", "write", "read_request", "atomic", "flush", "atomic_write", "resync"})
_RESPONSE_KINDS: Final = frozenset({"ack", "atomic_ack", "read_response"})
_CONNECTED: Final = frozenset({"RC", "UC", "XRC"})


def _ceil(a: int, b: int) -> int:
    return max(1, -(-a // b))


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _Read:
    __slots__ = ("psn", "length", "frame", "ts", "nmax", "next", "packets", "bytes")

    def __init__(self, psn: int, length: int, frame: int, ts: int, nmax: int) -> None:
        self.psn = psn
        self.length = length
        self.frame = frame
        self.ts = ts
        self.nmax = nmax          # the most packets the response can have (smallest MTU, or the known MTU)
        self.next = psn
        self.packets = 0
        self.bytes = 0


# A ring slot: the PSN (-1: empty), its frame, its time and its mark (ICRC and IPv4 identification: what
# tells a copy of a packet from the packet sent again; 0 when not known), four native-order 64-bit integers
# in a bytearray.  rdmaspy/analysis/_ring.c reads and writes them in one call; these are the same in
# Python, where it is not built.
_SLOT: Final = struct.Struct("=qqqq")
_SLOT_PSN: Final = struct.Struct("=q")
_EMPTY_SLOT: Final = _SLOT.pack(-1, 0, 0, 0)


def _put_py(slots: bytearray, mask: int, psn: int, frame: int, ts: int, mark: int) -> bool:
    at = (psn & mask) * _SLOT.size
    old: int = _SLOT_PSN.unpack_from(slots, at)[0]
    if old >= 0 and old != psn and (old ^ psn) & (_RING - 1) and mask < _RING - 1:
        return False
    _SLOT.pack_into(slots, at, psn, frame, ts, mark)
    return True


def _find_py(slots: bytearray, mask: int, psn: int) -> int:
    slot = psn & mask
    old: int = _SLOT_PSN.unpack_from(slots, slot * _SLOT.size)[0]
    return slot if old == psn else -1


def _frame_of_py(slots: bytearray, mask: int, psn: int) -> int:
    old, frame, _ts, _mark = _SLOT.unpack_from(slots, (psn & mask) * _SLOT.size)
    return frame if old == psn else -1


def _entry_py(slots: bytearray, slot: int) -> tuple[int, int, int]:
    _psn, frame, ts, mark = _SLOT.unpack_from(slots, slot * _SLOT.size)
    return frame, ts, mark


def _grown_py(slots: bytearray, mask: int) -> bytearray:
    # Entries in distinct slots stay in distinct slots when the mask gains a bit.
    nmask = mask * 2 + 1
    out = bytearray(_EMPTY_SLOT * (nmask + 1))
    for psn, frame, ts, mark in _SLOT.iter_unpack(slots):
        if psn >= 0:
            _SLOT.pack_into(out, (psn & nmask) * _SLOT.size, psn, frame, ts, mark)
    return out


try:
    from ._ring import entry as _entry_c  # type: ignore[import-not-found,import-untyped,unused-ignore]
    from ._ring import find as _find_c  # type: ignore[import-not-found,import-untyped,unused-ignore]
    from ._ring import frame_of as _frame_of_c  # type: ignore[import-not-found,import-untyped,unused-ignore]
    from ._ring import grown as _grown_c  # type: ignore[import-not-found,import-untyped,unused-ignore]
    from ._ring import put as _put_c  # type: ignore[import-not-found,import-untyped,unused-ignore]
except ImportError:         # not built (a source checkout): the same in Python
    _put_c = _find_c = _frame_of_c = _entry_c = _grown_c = None
_RING_PUT: Final[Callable[[bytearray, int, int, int, int, int], bool]] = _put_c or _put_py
_RING_FIND: Final[Callable[[bytearray, int, int], int]] = _find_c or _find_py
_RING_FRAME_OF: Final[Callable[[bytearray, int, int], int]] = _frame_of_c or _frame_of_py
_RING_ENTRY: Final[Callable[[bytearray, int], tuple[int, int, int]]] = _entry_c or _entry_py
_RING_GROWN: Final[Callable[[bytearray, int], bytearray]] = _grown_c or _grown_py


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class PsnRing:
    """Frame, time and mark of the PSNs last sent, as a ring of ``_RING`` slots indexed by the PSN's
    low bits holds them, grown on use: it starts with 8 slots and doubles only when two PSNs that the
    full ring keeps apart meet in one slot.  So it always holds what the full ring would, and a queue
    pair costs what it has sent (thousands of queue pairs of one packet each cost little).  The slots are
    machine integers in one bytearray (``_SLOT``): a full ring of Python ints took some 470 KB a
    requester, 60 MiB for the 128 requesters of 64 NFS mounts."""

    __slots__ = ("slots", "mask")

    def __init__(self) -> None:
        self.slots = bytearray(_EMPTY_SLOT * 8)
        self.mask = 7

    def find(self, psn: int) -> int:
        """The slot holding ``psn``, or -1."""
        return _RING_FIND(self.slots, self.mask, psn)

    def entry(self, slot: int) -> tuple[int, int, int]:
        """(frame, time, mark) of the packet in ``slot``."""
        return _RING_ENTRY(self.slots, slot)

    def frame_of(self, psn: int) -> int | None:
        """The frame that sent request ``psn`` last, if the ring holds it."""
        frame = _RING_FRAME_OF(self.slots, self.mask, psn)
        return frame if frame >= 0 else None

    def put(self, psn: int, frame: int, ts: int, mark: int = 0) -> None:
        while not _RING_PUT(self.slots, self.mask, psn, frame, ts, mark):
            self.slots = _RING_GROWN(self.slots, self.mask)
            self.mask = self.mask * 2 + 1

    @property
    def size(self) -> int:
        return self.mask + 1


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class ReqStream:
    """One requester's PSN space on one connection: its requests and the responses to them."""

    __slots__ = ("conn_id", "direction", "first", "nxt", "slack", "last_psn", "last_op", "last_ts", "last_frame",
                 "ring", "holes", "acked", "expect", "nak", "rnr", "reads", "last_read", "done_reads",
                 "packets", "retransmissions", "duplicates", "lost", "out_of_order", "naks", "rnr_naks",
                 "rnr_delay_ns", "acks", "coalesced", "duplicate_acks", "read_requests", "read_responses",
                 "psn_acked", "send_bytes", "write_bytes", "read_bytes")

    def __init__(self, conn_id: int, direction: Direction) -> None:
        self.conn_id = conn_id
        self.direction = direction
        self.first: int | None = None     # first request PSN seen
        self.nxt: int | None = None       # next PSN expected from the requester
        self.slack = 0                    # a READ of unknown packet count: nxt may be up to this much later
        self.last_psn = -1
        self.last_op = -1
        self.last_ts = 0
        self.last_frame = 0
        self.ring = PsnRing()
        self.holes: list[list[int]] = []  # [start, count] of PSNs skipped and not seen since
        self.acked: int | None = None     # last PSN acknowledged
        # The PSN the responder takes next, as the capture shows it: an RC responder takes only that one
        # and drops a request beyond it (IBTA vol. 1 9.7.5), until the requester sends it again.
        self.expect: int | None = None
        self.nak: tuple[int, int, int] | None = None   # (psn, frame, ts) of the last NAK not yet answered
        self.rnr: tuple[int, int, int] | None = None
        self.reads: list[_Read] = []
        self.last_read: _Read | None = None
        # READs whose responses all went by: a retry after a response was lost on the way (past the
        # capture point) asks again from inside one of them.
        self.done_reads: deque[_Read] | None = None      # made on first use (a deque costs 600 bytes)
        self.packets = 0
        self.retransmissions = 0
        self.duplicates = 0
        self.lost = 0
        self.out_of_order = 0
        self.naks: dict[int, int] = {}
        self.rnr_naks = 0
        self.rnr_delay_ns = 0
        self.acks = 0
        self.coalesced = 0
        self.duplicate_acks = 0
        self.read_requests = 0
        self.read_responses = 0
        self.psn_acked = 0
        self.send_bytes = 0               # payload bytes of SENDs, RDMA WRITEs, READ responses (all copies)
        self.write_bytes = 0
        self.read_bytes = 0

    def stats(self, path_mtu: int | None) -> PsnStats:
        return PsnStats(self.conn_id, self.direction, self.first, self.nxt, self.packets, self.retransmissions,
                        self.duplicates, self.lost, self.out_of_order, dict(sorted(self.naks.items())),
                        self.rnr_naks, self.rnr_delay_ns, self.acks, self.coalesced, self.psn_acked,
                        self.duplicate_acks, self.read_requests, self.read_responses, self.send_bytes,
                        self.write_bytes, self.read_bytes, path_mtu)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _Conn:
    __slots__ = ("conv", "streams", "mtu", "mtu_seen", "last", "charged")

    def __init__(self, conv: LiveConnection) -> None:
        self.conv = conv
        self.last = 0                # the last frame that touched it (the memory budget gives up the idlest)
        self.charged = _CONN_COST    # bytes charged to the memory budget for it
        self.streams: dict[Direction, ReqStream] = {}      # made on first use: most queue pairs request one way
        self.mtu: int | None = conv.path_mtu or None
        self.mtu_seen = False        # True once a full-size packet showed the path MTU

    def stream(self, direction: Direction) -> ReqStream:
        st = self.streams.get(direction)
        if st is None:
            st = self.streams[direction] = ReqStream(self.conv.conn_id, direction)
        return st


def _layer(pkt: Packet) -> Layer:
    """The packet's ``ib.analysis`` sub-tree, made on first use under the BTH (as Wireshark puts
    tcp.analysis under TCP), so that it is not counted among the packet's protocols."""
    bth = None
    for lay in pkt.layers:
        if lay.proto == "bth":
            bth = lay
            break
    if bth is None:
        for lay in pkt.layers:
            if lay.proto == "ib.analysis":
                return lay
        lay = Layer("ib.analysis", None, pkt.frame.data, 0, 0)
        lay.label = "InfiniBand transport analysis"
        pkt.layers.append(lay)
        return lay
    kids = bth.children
    if kids:
        for lay in kids:
            if lay.proto == "ib.analysis":
                return lay
    return bth.child("ib.analysis", None, 0, 0, label="InfiniBand transport analysis")


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _Unshown(Layer):
    """Where the analysis fields go when no packet is shown (``stats``, ``flows``, ``expert``): nowhere."""

    def add(self, field: Field, value: object, off: int = -1, length: int = 0) -> None:
        return


_UNSHOWN: Final = _Unshown("ib.analysis", None, b"", 0, 0)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Transport(Module):
    """The analysis module: sees every packet, keeps per-connection PSN state."""

    name = "queue pairs' PSN states"

    def __init__(self, analyzer: Analyzer) -> None:
        self.an = analyzer
        self.packet_fields = analyzer.packet_fields   # False: no packet is shown, nor its fields added
        self.held = 0
        self.budget = analyzer.budget
        self.budget.join(self)
        self.conns: dict[int, _Conn] = {}
        self.flows: dict[tuple[str, str, int], list[int]] = {}    # (src, dst, qp) -> [cnps, congestion marks]
        # The packet being analysed repeats one already captured (a request PSN sent again whose first
        # sending is in the capture, or a READ response already received): the modules after this one
        # (transactions, chunks, credits) leave such a copy alone, so that it is one event, said once.
        self.again = False
        self.again_of = 0            # the frame of the earlier copy (0: not known)
        # The request packet being analysed lies beyond the PSN its responder takes next (an earlier
        # one was not captured, or the responder NAKed it): the responder dropped it, unless the
        # capture missed what it took (``taken`` tells, later).  Its copy in sequence stands for it.
        self.provisional = False

    # -- per packet ----------------------------------------------------------------------------------
    def packet(self, pkt: Packet) -> None:
        self.again = False
        self.again_of = 0
        self.provisional = False
        # typed (Packet.ib and .conv are Any): compiled, their attributes are read directly
        ib: IBInfo | None = pkt.ib
        if ib is None:
            return
        plan = ib.plan
        if ib.icrc_ok is False:
            self._bad_icrc(pkt)
        kind = plan.kind
        if kind == "cnp":
            self._cnp(pkt, ib)
            return
        if ib.ecn == 3 or ib.fecn:
            self._marked(pkt, ib)
        conv: LiveConnection | None = pkt.conv
        if conv is None or plan.transport not in _CONNECTED:
            return
        cs = self.conns.get(conv.conn_id)
        if cs is None:
            cs = self.conns[conv.conn_id] = _Conn(conv)
            cs.last = pkt.frame.num
            self.budget.charge(self, _CONN_COST)
        cs.last = pkt.frame.num
        d = DIRECTION_OF[conv.ib_direction(pkt, ib.destqp)]
        if kind in _REQUEST_KINDS:
            st = cs.streams.get(d) or self._new_stream(cs, d)
            if st.first is None:
                # The first PSN seen starts the space: implementations disagree on which CM Starting
                # PSN (the REQ's or the REP's) numbers which direction, so neither is assumed.
                st.first = st.nxt = st.expect = ib.psn
                st.acked = (st.first - 1) & _MASK
            self._request(cs, st, pkt, ib, kind)
        elif kind in _RESPONSE_KINDS:
            other = OTHER[d]
            st = cs.streams.get(other) or self._new_stream(cs, other)
            self._response(cs, st, pkt, ib, kind)

    def _fields(self, pkt: Packet) -> Layer:
        """Where this packet's ``ib.analysis`` fields go: its sub-tree, or nowhere when none is shown."""
        return _layer(pkt) if self.packet_fields else _UNSHOWN

    def _new_stream(self, cs: _Conn, d: Direction) -> ReqStream:
        cs.charged += _STREAM_COST
        self.budget.charge(self, _STREAM_COST)
        return cs.stream(d)

    def shed(self, need: int) -> int:
        """Memory budget: give up the idlest connections' PSN state, their statistics given out as at
        the end of the capture (a connection that goes on starts again from its next packet)."""
        freed = 0
        gone = 0
        now = max((c.last for c in self.conns.values()), default=0)
        for cs in sorted(self.conns.values(), key=lambda c: c.last):
            if freed >= need or cs.last == now:      # never the connection of the packet at hand
                break
            self._emit_stats(cs)
            del self.conns[cs.conv.conn_id]
            freed += cs.charged
            self.budget.release(self, cs.charged)
            gone += 1
        return gone

    def _event(self, st: ReqStream, kind: PsnEventKind, frame: int, ts: int, psn: int, count: int = 1,
               original: int | None = None) -> None:
        if self.an.psn_events:
            self.an.emit(PsnEvent(st.conn_id, st.direction, kind, frame, ts, psn, count, original))

    # -- requests ------------------------------------------------------------------------------------
    def _request(self, cs: _Conn, st: ReqStream, pkt: Packet, ib: IBInfo, kind: str) -> None:
        psn = ib.psn
        frame = pkt.frame
        ts = frame.ts
        plan = ib.plan
        st.packets += 1
        n = ib.payload_end - ib.payload_off
        if kind == "send":
            st.send_bytes += n
        elif kind == "write":
            st.write_bytes += n
        if plan.pos in ("first", "middle") and n >= PATH_MTU_MIN and not n & (n - 1) and (
                cs.mtu is None or n < cs.mtu):
            # A First/Middle packet is exactly one path MTU (256..4096).  What the wire shows wins over
            # the CM's Path MTU: the QP's active MTU may be lower (rxe: 1024 on a 1500-byte netdev).
            cs.mtu = n
            cs.mtu_seen = True
        count = 1
        slack = 0
        if kind == "read_request" and ib.reth is not None:
            length = ib.reth[2]
            if cs.mtu and cs.mtu_seen:
                count = _ceil(length, cs.mtu)
            else:
                # Not seen on the wire yet: the responses number between ceil(length/MTU) for the
                # largest MTU in question and ceil(length/256).
                count = _ceil(length, cs.mtu or PATH_MTU_MAX)
                slack = _ceil(length, PATH_MTU_MIN) - count
        nxt = st.nxt
        assert nxt is not None                # set with the stream's first PSN, before its first request
        d = (psn - nxt) & _MASK
        lay = None
        expect = st.expect
        if d == 0 or d <= st.slack:
            st.nxt = (psn + count) & _MASK
            st.slack = slack
            if expect == nxt:
                st.expect = st.nxt
            else:
                self._responder_takes(st, psn, count)
        elif d < _HALF:
            # PSNs skipped: lost before the capture point (or missed by the capture)
            expected: int = st.nxt          # type: ignore[assignment]  # d was computed from it
            lost = d - st.slack if st.slack else d
            st.lost += lost
            if len(st.holes) < _MAX_HOLES:
                st.holes.append([expected, d])
            lay = self._fields(pkt)
            lay.add(LOST_SEGMENT, True)
            lay.add(LOST_PSNS, lost)
            self.an.report(LOST, frame.num, ts, conn=st.conn_id, pkt=pkt, psn=psn, count=lost, expected=expected)
            self._event(st, PsnEventKind.LOST, frame.num, ts, psn, lost)
            st.nxt = (psn + count) & _MASK
            if st.slack and expect == nxt:
                st.expect = st.nxt          # the PSN due was not known: no telling what the responder took
            else:
                self._responder_takes(st, psn, count)
            st.slack = slack
        else:
            self._responder_takes(st, psn, count)
            lay = self._fields(pkt)
            hole = self._fill_hole(st, psn)
            original = st.ring.frame_of(psn)
            resumed = None
            if original is None and kind == "read_request":
                # A requester retrying a READ asks again from the first response PSN it lacks,
                # which lies inside the PSNs the original request reserved.
                resumed = next((r for reads in (st.reads, st.done_reads or ()) for r in reversed(reads)
                                if ((psn - r.psn) & _MASK) < r.nmax), None)
            nak = st.nak if st.nak is not None and ((psn - st.nak[0]) & _MASK) < _HALF else None
            rnr = st.rnr if st.rnr is not None and st.rnr[0] == psn else None
            if hole and nak is None and rnr is None:
                st.out_of_order += 1
                lay.add(OUT_OF_ORDER, True)
                self.an.report(OUT_OF_ORDER_RULE, frame.num, ts, conn=st.conn_id, pkt=pkt, psn=psn,
                               expected=st.nxt)
                self._event(st, PsnEventKind.OUT_OF_ORDER, frame.num, ts, psn)
            elif (not hole and psn == st.last_psn and plan.opcode == st.last_op and nak is None and rnr is None
                  and ts - st.last_ts < DUPLICATE_WINDOW_NS):
                st.duplicates += 1
                lay.add(DUPLICATE, True)
                lay.add(ORIGINAL_FRAME, st.last_frame)
                self.an.report(DUPLICATE_RULE, (frame.num, st.last_frame), ts, conn=st.conn_id, pkt=pkt, psn=psn,
                               original=f"frame {st.last_frame}")
                self.again = True
                self.again_of = st.last_frame
                self._event(st, PsnEventKind.DUPLICATE, frame.num, ts, psn, original=st.last_frame)
            else:
                st.retransmissions += 1
                lay.add(RETRANSMISSION, True)
                if original is not None:
                    first = f"first in frame {original}"
                    self.again = True
                    self.again_of = original
                elif resumed is not None:
                    original = resumed.frame
                    first = (f"resumes the READ request of frame {original} "
                             f"from its response packet {((psn - resumed.psn) & _MASK) + 1}")
                else:
                    first = "its first sending was not captured"
                if original is not None:
                    lay.add(ORIGINAL_FRAME, original)
                frames: tuple[int, ...] = (frame.num,) if original is None else (frame.num, original)
                if nak is not None:
                    lay.add(NAK_FRAME, nak[1])
                    frames += (nak[1],)
                self.an.report(RETRANSMIT, frames, ts, conn=st.conn_id, pkt=pkt, psn=psn, first=first)
                self._event(st, PsnEventKind.RETRANSMISSION, frame.num, ts, psn, original=original)
            if rnr is not None:
                delay = ts - rnr[2]
                st.rnr_delay_ns += delay
                lay.add(RNR_NAK_FRAME, rnr[1])
                lay.add(RNR_DELAY, delay / 1e9)
                st.rnr = None
            if nak is not None and nak[0] == psn:
                st.nak = None
        if kind == "read_request" and ib.reth is not None:
            st.read_requests += 1
            r = _Read(psn, ib.reth[2], frame.num, ts, count + slack)
            reads = st.reads
            if len(reads) >= _MAX_READS:
                del reads[0]
            reads.append(r)
            st.last_read = r
        ring = st.ring
        size = ring.mask
        ring.put(psn, frame.num, ts)
        if ring.mask != size:
            grown = (ring.mask - size) * _SLOT_COST
            cs.charged += grown
            self.budget.charge(self, grown)
        st.last_psn = psn
        st.last_op = plan.opcode
        st.last_ts = ts
        st.last_frame = frame.num

    def _responder_takes(self, st: ReqStream, psn: int, count: int) -> None:
        """The responder's side of a request packet: taken when its PSN is the one due, else dropped
        when beyond it (``provisional``: the capture may have missed what the responder took), else a
        copy of one taken already.  A requester far ahead of the PSN due had those PSNs taken."""
        expect = st.expect
        d = (psn - expect) & _MASK if expect is not None else 0
        if d == 0 or d > _RING and d < _HALF:
            st.expect = (psn + count) & _MASK
        elif d < _HALF:
            self.provisional = True

    def taken(self, conn_id: int, direction: Direction, psn: int) -> bool:
        """True when the responder is seen to have taken request ``psn`` (the PSN it takes next lies beyond
        it), or its queue pair is no longer followed."""
        cs = self.conns.get(conn_id)
        st = cs.streams.get(direction) if cs is not None else None
        if st is None or st.expect is None:
            return True
        return 0 < ((st.expect - psn) & _MASK) < _HALF

    @staticmethod
    def _responder_acked(st: ReqStream, psn: int) -> None:
        """An ACK of ``psn``: the responder took every PSN up to it."""
        nxt = (psn + 1) & _MASK
        if st.expect is None or 0 < ((nxt - st.expect) & _MASK) < _HALF:
            st.expect = nxt

    @staticmethod
    def _fill_hole(st: ReqStream, psn: int) -> bool:
        for h in st.holes:
            off = (psn - h[0]) & _MASK
            if off < h[1]:
                # split the range around psn
                start, n = h
                st.holes.remove(h)
                if off:
                    st.holes.append([start, off])
                if n - off - 1 > 0:
                    st.holes.append([(psn + 1) & _MASK, n - off - 1])
                return True
        return False

    # -- responses -----------------------------------------------------------------------------------
    def _response(self, cs: _Conn, st: ReqStream, pkt: Packet, ib: IBInfo, kind: str) -> None:
        psn = ib.psn
        frame = pkt.frame
        aeth = ib.aeth
        if kind == "read_response":
            self._read_response(cs, st, pkt, ib)
            if aeth is None:
                return
        elif aeth is None:
            return
        syn = aeth[0]
        t = (syn >> 5) & 3
        if t == AETH_TYPE_ACK:
            self._responder_acked(st, psn)
            if kind != "read_response":
                self._ack(st, pkt, psn)
            else:
                self._advance_acked(st, psn)
        elif t == AETH_TYPE_NAK:
            code = syn & AETH_VALUE_MASK
            st.naks[code] = st.naks.get(code, 0) + 1
            if code == 0:
                # the requester goes back to this PSN; the other codes are fatal to the QP (nothing is resent)
                st.nak = (psn, frame.num, frame.ts)
                st.expect = psn
            lay = self._fields(pkt)
            lay.add(NAK_CODE, code)
            rule = NAK_RULES.get(code, NAK_RESERVED)
            self.an.report(rule, frame.num, frame.ts, conn=st.conn_id, pkt=pkt, psn=psn, code=code)
            self._event(st, PsnEventKind.NAK, frame.num, frame.ts, psn, code)
            self._advance_acked(st, (psn - 1) & _MASK)
        elif t == AETH_TYPE_RNR_NAK:
            st.rnr_naks += 1
            st.rnr = (psn, frame.num, frame.ts)
            st.expect = psn
            lay = self._fields(pkt)
            lay.add(RNR_NAK, True)
            self.an.report(RNR_RULE, frame.num, frame.ts, conn=st.conn_id, pkt=pkt, psn=psn,
                           timer_ms=RNR_TIMER_MS[syn & AETH_VALUE_MASK])
            self._event(st, PsnEventKind.RNR_NAK, frame.num, frame.ts, psn)
            self._advance_acked(st, (psn - 1) & _MASK)

    @staticmethod
    def _advance_acked(st: ReqStream, psn: int) -> None:
        if st.acked is None or 0 < ((psn - st.acked) & _MASK) < _HALF:
            st.acked = psn

    def _ack(self, st: ReqStream, pkt: Packet, psn: int) -> None:
        frame = pkt.frame
        st.acks += 1
        lay = self._fields(pkt)
        if st.acked is None:
            self._advance_acked(st, psn)
            return
        n = (psn - st.acked) & _MASK
        if n == 0:
            st.duplicate_acks += 1
            lay.add(DUPLICATE_ACK, True)
            return
        if n >= _HALF:
            return                         # an old ACK overtaken by a later one
        lay.add(ACK_PSNS, n)
        st.psn_acked += n
        if n > 1:
            st.coalesced += 1
            lay.add(ACK_COALESCED, True)
        if self.packet_fields:      # the request acknowledged and the round trip are shown, not counted
            slot = st.ring.find(psn)
            if slot >= 0:
                sent, sent_ts, _mark = st.ring.entry(slot)
                lay.add(ACKS_FRAME, sent)
                lay.add(ACK_RTT, (frame.ts - sent_ts) / 1e9)
        st.acked = psn
        if st.nxt is not None and ((psn - st.nxt) & _MASK) < _HALF and not self._in_read(st, psn):
            lay.add(ACKED_UNSEEN, True)
            last = (st.nxt - 1) & _MASK
            self.an.report(ACKED_UNSEEN_RULE, frame.num, frame.ts, conn=st.conn_id, pkt=pkt, psn=psn, last=last)
            self._event(st, PsnEventKind.ACKED_UNSEEN, frame.num, frame.ts, psn)

    @staticmethod
    def _in_read(st: ReqStream, psn: int) -> bool:
        r = st.last_read
        return r is not None and ((psn - r.psn) & _MASK) < r.nmax

    def _read_response(self, cs: _Conn, st: ReqStream, pkt: Packet, ib: IBInfo) -> None:
        psn = ib.psn
        frame = pkt.frame
        plan = ib.plan
        size = ib.payload_end - ib.payload_off
        st.read_responses += 1
        st.read_bytes += size
        if plan.pos in ("first", "middle") and size >= PATH_MTU_MIN and not size & (size - 1) and (
                cs.mtu is None or size < cs.mtu):
            cs.mtu = size
            cs.mtu_seen = True
        r = None
        for cand in reversed(st.reads):
            if ((psn - cand.psn) & _MASK) < cand.nmax:
                r = cand
                break
        if r is None:
            done = st.done_reads
            if done is not None:
                for cand in reversed(done):
                    if ((psn - cand.psn) & _MASK) < cand.packets:
                        # a copy of a response to a READ already complete
                        self._response_again(st, pkt, cand)
                        return
            return                        # its request is not in the capture
        lay = self._fields(pkt)
        lay.add(READ_REQUEST_FRAME, r.frame)
        if psn == r.psn:
            if plan.pos in ("first", "only"):
                r.next = psn
                r.packets = 0
                r.bytes = 0
            elif r.packets == 0:
                # rxe (Linux 6.1) answers a retried READ this way, and its own requester then stalls
                self.an.report(READ_SEQUENCE, (frame.num, r.frame), frame.ts, conn=st.conn_id, pkt=pkt,
                               request=r.frame, opcode=f"READ Response {plan.pos.capitalize()}", psn=psn)
        d = (psn - r.next) & _MASK
        if d and d < _HALF:
            st.lost += d
            lay.add(LOST_SEGMENT, True)
            lay.add(LOST_PSNS, d)
            self.an.report(LOST, frame.num, frame.ts, conn=st.conn_id, pkt=pkt, psn=psn, count=d, expected=r.next)
            self._event(st, PsnEventKind.LOST, frame.num, frame.ts, psn, d)
        elif d:
            self._response_again(st, pkt, r)
            return
        r.next = (psn + 1) & _MASK
        r.packets += 1
        r.bytes += size
        if plan.pos not in ("last", "only"):
            return
        packets = ((psn - r.psn) & _MASK) + 1
        mtu = cs.mtu
        lay.add(READ_PACKETS, packets)
        lay.add(READ_BYTES, r.bytes)
        lay.add(READ_TIME, (frame.ts - r.ts) / 1e9)
        if mtu:
            expected = _ceil(r.length, mtu)
            lay.add(READ_EXPECTED, expected)
            lay.add(PATH_MTU, mtu)
            if packets != expected:
                self.an.report(READ_COUNT, (frame.num, r.frame), frame.ts, conn=st.conn_id, pkt=pkt,
                               length=r.length, packets=packets, expected=expected, mtu=mtu)
        if r.packets == packets and r.bytes != r.length:
            self.an.report(READ_LENGTH, (frame.num, r.frame), frame.ts, conn=st.conn_id, pkt=pkt, got=r.bytes,
                           length=r.length, request=r.frame)
        if r is st.last_read and st.slack and st.nxt is not None:
            # the READ's packet count is known now: the next request PSN is exact
            end = (r.psn + packets) & _MASK
            if ((st.nxt - r.psn) & _MASK) <= packets:
                st.nxt = end
                st.slack = 0
        self._advance_acked(st, psn)
        # responses come back in request order: this READ and the ones before it are done
        i = st.reads.index(r)
        if st.done_reads is None:
            st.done_reads = deque(maxlen=8)
        st.done_reads.extend(st.reads[:i + 1])
        del st.reads[:i + 1]
        if st.last_read is r:
            st.last_read = None

    def _response_again(self, st: ReqStream, pkt: Packet, r: _Read) -> None:
        """A READ response whose PSN was received already: a duplicate, said here and left alone after."""
        frame = pkt.frame
        st.duplicates += 1
        lay = self._fields(pkt)
        lay.add(READ_REQUEST_FRAME, r.frame)
        lay.add(DUPLICATE, True)
        self.an.report(DUPLICATE_RULE, frame.num, frame.ts, conn=st.conn_id, pkt=pkt, psn=pkt.ib.psn,
                       original=f"a response already received to the READ request of frame {r.frame}")
        self._event(st, PsnEventKind.DUPLICATE, frame.num, frame.ts, pkt.ib.psn, original=r.frame)
        self.again = True

    # -- congestion and checksums --------------------------------------------------------------------
    def _flow_counts(self, pkt: Packet, ib: IBInfo) -> list[int]:
        """[CNPs, congestion marks] seen so far on the packet's flow (addresses and destination QP)."""
        key: tuple = (pkt.src, pkt.dst, ib.destqp)  # plain tuple: see docs/architecture.md
        c = self.flows.get(key)
        if c is None:
            c = self.flows[key] = [0, 0]
        return c

    def _cnp(self, pkt: Packet, ib: IBInfo) -> None:
        c = self._flow_counts(pkt, ib)
        c[0] += 1
        lay = self._fields(pkt)
        lay.add(CNP_COUNT, c[0])
        self.an.report(CNP_RULE, pkt.frame.num, pkt.frame.ts, conn=None, pkt=pkt, qp=ib.destqp, count=c[0],
                       src=pkt.src, dst=pkt.dst)

    def _marked(self, pkt: Packet, ib: IBInfo) -> None:
        c = self._flow_counts(pkt, ib)
        c[1] += 1
        lay = self._fields(pkt)
        lay.add(ECN_CE, True)
        lay.add(CE_COUNT, c[1])
        mark = "ECN CE" if ib.ecn == 3 else "FECN"
        conv = pkt.conv
        self.an.report(ECN_RULE, pkt.frame.num, pkt.frame.ts, conn=conv.conn_id if conv is not None else None,
                       pkt=pkt, mark=mark, count=c[1], qp=ib.destqp)

    def _bad_icrc(self, pkt: Packet) -> None:
        lay = None
        for x in pkt.layers:
            if x.proto == "icrc":
                lay = x
                break
        if lay is None:
            return
        got, _ok, expected = lay._vals
        # The finding takes the place of the dissector's own expert item for the same check.
        if pkt.expert:
            pkt.expert = [e for e in pkt.expert if not (getattr(e, "group", "") == "checksum"
                                                         and getattr(e, "source", "").startswith("IBTA 7.8.1"))]
        self._fields(pkt).add(BAD_ICRC, True)
        conv = pkt.conv
        self.an.report(ICRC_RULE, pkt.frame.num, pkt.frame.ts, conn=conv.conn_id if conv is not None else None,
                       pkt=pkt, got=got, expected=expected)

    # -- the end -------------------------------------------------------------------------------------
    def finish(self) -> None:
        for cs in self.conns.values():
            self._emit_stats(cs)
        for (src, dst, qp), (cnps, marks) in self.flows.items():
            self.an.emit(CongestionFlow(src, dst, qp, cnps, marks))


    def _emit_stats(self, cs: _Conn) -> None:
        for _d, st in sorted(cs.streams.items()):    # c2s, then s2c, as before
            if st.packets or st.acks or st.read_responses:
                self.an.emit(st.stats(cs.mtu))


register("ib.transport", Transport)
