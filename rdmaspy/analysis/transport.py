"""InfiniBand transport analysis: PSNs per queue pair, in the manner of Wireshark's tcp.analysis.

On a reliable (or unreliable) connection each requester numbers its request packets with a 24-bit
PSN that grows by one per packet (an RDMA READ request takes as many PSNs as its responses have
packets), and the responder answers in the same PSN space: ACKs and NAKs name a request PSN, READ
responses carry the PSNs their request reserved.  So a connection has two PSN spaces, one per
requester; both the requests and the responses to them are followed in their requester's space.

For each request packet the analysis says whether it is in order, follows a gap (PSNs not
captured: lost before the capture point, or the capture missed them), fills a gap (out of order: sent
before the packets it follows and delayed on the way), is sent again (retransmission: after a NAK, an
RNR NAK or a timeout) or is a copy made on the way (a duplicate: the same bytes again).  Where the
carrier numbers its packets (rxe's IPv4 identification counts every packet it sends to a host), that
number tells the three apart: the same number and bytes, a copy; a higher one, a packet sent again; a
lower one than a number already seen, a delayed original.  For the responses it counts the PSNs each
ACK covers (coalescing), reports NAKs by code and RNR NAKs (with the delay until the requester
retries), and matches READ responses to their request (number of packets at the path MTU and length):
each answer to the READ that asks for it, a READ sent again answered by its own responses.  CNPs and
ECN Congestion Experienced marks are counted per flow; a bad ICRC is a finding.  Per-packet results
become ``ib.analysis.*`` fields on an ``ib.analysis`` layer; each sequence event is also a ``PsnEvent``
record, and at the end each requester's counters are a ``PsnStats`` and each flow's congestion a
``CongestionFlow``.

A finding the capture may still refute is held: PSNs skipped before a packet (``ib.lost_segment``)
until each of them is seen again (a delayed original refutes it, a packet sent again confirms it) or
``HOLD_NS`` / ``HOLD_FRAMES`` have passed; a READ answered from its middle (``ib.read_response_sequence``)
until the requester shows what it does next.  While one is held, ``Analyzer.hold_from`` names its frame,
and the pipeline shows no packet from that frame on until it is decided, so that every presentation
gets the packet with its findings final.

Memory per connection is bounded: a ring of the last PSNs sent, one of the last READ response PSNs, a
few gap ranges, the READ requests still waiting for their responses (at most ``_MAX_READS``, charged to
the memory budget; a READ sent again names only the READs its answers may still change, however often
it is retried) and the findings held (a decided one lets go of its packet).
"""
from __future__ import annotations

import struct
from collections import deque

from ..dissectors.infiniband import (AETH_NAK_CODES, AETH_TYPE_ACK, AETH_TYPE_NAK, AETH_TYPE_RNR_NAK, AETH_VALUE_MASK,
                                     PATH_MTU_MAX, PATH_MTU_MIN, PLANS, RNR_TIMER_MS, IBInfo)
from ..fields import Field, declaring, protocol
from ..packet import Layer, Packet
from ..typenames import TYPE_CHECKING, Callable, Final, mypyc_attr
from .analyzer import Analyzer, Module, register
from .model import CongestionFlow, Direction, PsnEvent, PsnEventKind, PsnStats

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
    "PSN {psn} out of order: {what}",
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
    "READ response to the request of frame {request} begins with {opcode} (a First or an Only is due at PSN "
    "{psn}, as for every READ, a retried one too); then {after}",
    "IBTA vol. 1 9.7 (the responses to a READ request, a retried one too, open with READ Response First or Only)")
GO_BACK_N_STALL: Final = declare(
    "ib.go_back_n_stall", "error", "sequence",
    "after the NAK of PSN {psn} (frame {nak}) the requester sent again PSN {psn}..{resent} of the {count} "
    "PSN(s) up to {top} it had sent, and no request after it",
    "IBTA vol. 1 9.7.5 (after a PSN sequence error NAK the requester sends again every request packet from the "
    "PSN it names)")
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

_C2S: Final = Direction.C2S
_S2C: Final = Direction.S2C
_MASK: Final = 0xFFFFFF
_HALF: Final = 0x800000
_PSN_BITS: Final = 24         # a PSN is the low bits of what the ring's put takes, its mark the rest
_PSN_MASK: Final = (1 << _PSN_BITS) - 1
_RING: Final = 4096            # request PSNs remembered per requester (for original frames and RTTs)
# What the state of a connection, a requester's stream and a ring slot cost, charged to the memory budget
# (tracemalloc over 20,000 queue pairs of one packet each, rounded up).
_CONN_COST: Final = 512
_STREAM_COST: Final = 2048
_SLOT_COST: Final = 32          # four machine integers (a ring slot of Python ints took 100)
_MAX_HOLES: Final = 64         # gap ranges remembered per requester (and per READ)
_MAX_READS: Final = 256        # READ requests waiting for responses per requester
_DONE_READS: Final = 8         # READs answered in full remembered per requester (a retry may ask inside one)
_READ_COST: Final = 512        # a READ waiting for responses (or just answered), with a hole or two
_MAX_HELD: Final = 256         # findings held at once; beyond, the oldest is decided with what is known
_HELD_COST: Final = 8192       # a finding held with its packet
# How long a finding the capture may refute is held: a delayed original comes within the reordering of
# the path (netem's delay, a few milliseconds), a packet sent again within the NAK's round trip; a
# requester asks again for a READ after its ACK timeout (rxe: seconds).  Never more than HOLD_FRAMES.
HOLD_NS: Final = 1_000_000_000
ASK_HOLD_NS: Final = 10_000_000_000
HOLD_FRAMES: Final = 1024
# Below the smallest local ACK timeout (4.096 us * 2^1) a requester cannot resend on its own: the
# same bytes at the same PSN within it, with no NAK between, are a copy made on the way (or by the
# capture).  Where the sender numbers its packets (the IPv4 identification counts), the same number
# with the same bytes is a copy whenever it comes.
DUPLICATE_WINDOW_NS: Final = 8192
_ID_MASK: Final = 0xFFFF
_ID_HALF: Final = 0x8000
_ID_STEP: Final = 4096         # a step of a counter shared with other queue pairs to the same host
_COUNTING: Final = 4           # small forward steps of the identification before it is taken as a counter
_RUN_STEP: Final = 4           # identifications between two responses of one burst (other queue pairs' between)
_RECENT: Final = 8             # READ responses remembered, whose bursts the next responses may go on
_MARK_ID_SHIFT: Final = 13     # of a packet's mark (``_mark``): its IPv4 identification from bit 13,
_MARK_CHECKED: Final = 1 << 12  # bit 12 set (a mark is never 0),
_MARK_ICRC_MASK: Final = _MARK_CHECKED - 1   # and the low 12 bits of its ICRC
_REQUEST_KINDS: Final = frozenset({"send", "write", "read_request", "atomic", "flush", "atomic_write", "resync"})
_RESPONSE_KINDS: Final = frozenset({"ack", "atomic_ack", "read_response"})
# The role of each opcode's packets in a connection's PSN spaces (its plan's kind), by opcode: compiled, an
# item of a list of ints where a string looked up in a set cost some 90 instructions a packet.
_UNCONNECTED: Final = -1      # not of a connection (RD, UD, CNP ...)
_NO_ROLE: Final = 0           # of a connection, neither a request nor a response (an unknown opcode)
_REQUEST: Final = 1
_RESPONSE: Final = 2
_ROLE_BY_OPCODE: Final[list[int]] = [
    _UNCONNECTED if p.transport not in ("RC", "UC", "XRC") else _REQUEST if p.kind in _REQUEST_KINDS
    else _RESPONSE if p.kind in _RESPONSE_KINDS else _NO_ROLE for p in PLANS]


def _ceil(a: int, b: int) -> int:
    return max(1, -(-a // b))


def _mark(ib: IBInfo) -> int:
    """What tells a copy of a packet from the packet sent again: its IPv4 identification (bits 13 and up, one
    more: 0 where there is none) with the low bits of its ICRC, which covers every byte that does not change
    on the way; 0 when the packet has no ICRC that was checked (bit 12 is set in every other mark, so that
    a packet without IPv4 whose ICRC ends in zero bits still has one).  Under 2**30, where Python keeps an
    int in one digit: the ring's calls convert it at machine speed."""
    if ib.icrc_ok is None:
        return 0
    return (ib.ip_id + 1) << _MARK_ID_SHIFT | _MARK_CHECKED | ib.icrc_got & _MARK_ICRC_MASK


def _mark_ident(mark: int) -> int:
    """The IPv4 identification in a mark (-1: none)."""
    return (mark >> _MARK_ID_SHIFT) - 1


def _burst(psns: int, idents: int) -> bool:
    """Whether a response ``psns`` PSNs after another, with an identification ``idents`` after its, can be of
    the same burst (the responder's other queue pairs may take a few identifications between)."""
    return psns <= idents < psns + _RUN_STEP


def _id_order(top: int, ident: int) -> int:
    """Where identification ``ident`` stands against the highest one seen, ``top``: 1 a later packet, 0 the
    same packet, -1 one sent before a packet already captured; 1 when either is not known."""
    if ident < 0 or top < 0:
        return 1
    d = (ident - top) & _ID_MASK
    if d == 0:
        return 0
    return 1 if d < _ID_HALF else -1


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _Ids:
    """The IPv4 identifications of one sender's packets on a stream: the highest seen, and whether they
    count (``counting``: enough small forward steps; a sender that sends 0, or random numbers, never does)."""

    __slots__ = ("top", "steps")

    def __init__(self) -> None:
        self.top = -1
        self.steps = 0

    def see(self, ident: int) -> None:
        """A packet's identification: a later one than the highest seen moves it on (as ``_id_order``, written
        out: it is called for every packet)."""
        top = self.top
        if ident < 0 or ident == top:
            return
        if top < 0:
            self.top = ident
            return
        step = (ident - top) & _ID_MASK
        if step < _ID_HALF:
            if step <= _ID_STEP:
                self.steps += 1
            self.top = ident

    @property
    def counting(self) -> bool:
        return self.steps >= _COUNTING


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _Recent:
    """A READ response remembered: its PSN, its IPv4 identification and the READ it answered (None: its
    request is not in the capture).  A requester keeps a few, written over in turn (no object a response)."""

    __slots__ = ("psn", "ident", "read")

    def __init__(self, psn: int, ident: int, read: _Read | None) -> None:
        self.psn = psn
        self.ident = ident
        self.read = read


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _Held:
    """A finding held until the capture shows whether it stands (module docstring): its packet (let go
    once decided: a READ's holes keep their gap), its frame and time, its requester's stream."""

    __slots__ = ("pkt", "frame", "ts", "st", "decided")

    def __init__(self, pkt: Packet, st: ReqStream) -> None:
        self.pkt: Packet | None = pkt
        self.frame: int = pkt.frame.num
        self.ts: int = pkt.frame.ts
        self.st = st
        self.decided = False


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _Gap(_Held):
    """PSNs skipped before a packet, which it overtook or which were lost: ``open`` of them not seen since,
    ``lost`` seen sent again (their first sending not captured: ``ib.lost_segment``), ``late`` seen sent
    before it and delayed on the way (``ib.out_of_order``, the first in frame ``first_late``).  ``ident``:
    the packet's IPv4 identification, which a delayed original's precedes (-1: none)."""

    __slots__ = ("psn", "expected", "count", "open", "lost", "late", "first_late", "ident")

    def __init__(self, pkt: Packet, st: ReqStream, psn: int, expected: int, count: int, ident: int) -> None:
        super().__init__(pkt, st)
        self.psn = psn
        self.expected = expected
        self.count = count
        self.open = count
        self.lost = 0
        self.late = 0
        self.first_late = 0
        self.ident = ident


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _Opened(_Held):
    """A READ answered from its middle (``ib.read_response_sequence``), held until the requester shows what
    it does next; refuted when the packet before it in its burst comes late (``ident``: its IPv4
    identification; -1: none)."""

    __slots__ = ("read", "opcode", "ident")

    def __init__(self, pkt: Packet, st: ReqStream, read: _Read, opcode: str, ident: int) -> None:
        super().__init__(pkt, st)
        self.read = read
        self.opcode = opcode
        self.ident = ident


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _Hole:
    """PSNs skipped and not seen since, with the gap they belong to (None: none held)."""

    __slots__ = ("start", "count", "gap")

    def __init__(self, start: int, count: int, gap: _Gap | None) -> None:
        self.start = start
        self.count = count
        self.gap = gap


def _complete(r: _Read) -> bool:
    """Whether a READ waits for no response any more: none of its gaps is still held."""
    for h in r.holes:
        g = h.gap
        if g is None or not g.decided:
            return False
    return True


def _held_holes(r: _Read) -> bool:
    """Whether one of a READ's holes belongs to a gap still held (a response filling it is a finding)."""
    for h in r.holes:
        g = h.gap
        if g is not None and not g.decided:
            return True
    return False


def _fill(holes: list[_Hole], psn: int) -> _Hole | None:
    """The hole ``psn`` fills, split around it (None: in none)."""
    for h in holes:
        off = (psn - h.start) & _MASK
        if off < h.count:
            holes.remove(h)
            if off:
                holes.append(_Hole(h.start, off, h.gap))
            if h.count - off - 1 > 0:
                holes.append(_Hole((psn + 1) & _MASK, h.count - off - 1, h.gap))
            return h
    return None


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _Read:
    """A READ request and the responses it got: each PSN once, the holes between them, and the READs it asks
    again for (a READ sent again, whole or from a response PSN its responses lacked): ``retried`` says it is
    one, ``retries`` holds those of them whose holes its answers may still fill (``_asked_again``)."""

    __slots__ = ("psn", "length", "frame", "ts", "nmax", "next", "got", "bytes", "holes", "end", "retried",
                 "retries", "floor", "ident")

    def __init__(self, psn: int, length: int, frame: int, ts: int, nmax: int, retried: bool,
                 retries: list[_Read], floor: int) -> None:
        self.psn = psn
        self.length = length
        self.frame = frame
        self.ts = ts
        self.nmax = nmax          # the most packets the response can have (smallest MTU, or the known MTU)
        self.next = psn           # the PSN after the highest response received
        self.got = 0              # response packets received, each PSN once
        self.bytes = 0
        self.holes: list[_Hole] = []
        self.end = -1             # the PSN after its Last or Only (-1: not received)
        self.retried = retried
        # oldest first, a flat list (a chain of READs, each naming the one before, got too deep to pickle)
        self.retries = retries
        # the responder's highest IPv4 identification when the request was captured: a response with one
        # not beyond it was sent before the responder had the request, and answers another READ (-1: none)
        self.floor = floor
        self.ident = -1           # the identification of the last response it got (-1: none)

    def wants(self, psn: int) -> bool:
        """Whether response ``psn`` is one it asks for and has not received."""
        off = (psn - self.psn) & _MASK
        if off >= self.nmax or self.end >= 0 and off >= ((self.end - self.psn) & _MASK):
            return False
        if ((psn - self.next) & _MASK) < _HALF:
            return True
        for h in self.holes:
            if ((psn - h.start) & _MASK) < h.count:
                return True
        return False


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _Nak:
    """A PSN sequence error NAK and the requester's answer: it goes back to ``psn`` and sends again every
    request up to ``top`` (the highest PSN sent before the NAK); ``resent``: the highest PSN sent again
    since (-1: none), in frame ``resent_frame``."""

    __slots__ = ("psn", "frame", "ts", "top", "used", "resent", "resent_frame")

    def __init__(self, psn: int, frame: int, ts: int, top: int) -> None:
        self.psn = psn
        self.frame = frame
        self.ts = ts
        self.top = top
        self.used = False         # the NAKed PSN was sent again (its retransmission names the NAK)
        self.resent = -1
        self.resent_frame = 0


# A ring slot: the PSN (-1: empty), its frame, its time and its mark (``_mark``: ICRC and IPv4
# identification, 0 when not known), four native-order 64-bit integers in a bytearray.
# rdmaspy/analysis/_ring.c reads and writes them in one call; these are the same in Python, where it is
# not built.
_SLOT: Final = struct.Struct("=qqqq")
_SLOT_PSN: Final = struct.Struct("=q")
_EMPTY_SLOT: Final = _SLOT.pack(-1, 0, 0, 0)


def _mask_of(slots: bytearray) -> int:
    """The ring's slot count less one: a PSN's slot is ``psn & mask``."""
    return len(slots) // _SLOT.size - 1


def _put_py(slots: bytearray, psn_mark: int, frame: int, ts: int) -> bool:
    if psn_mark < 0:
        raise ValueError("a PSN and a mark are not negative")
    psn = psn_mark & _PSN_MASK
    mark = psn_mark >> _PSN_BITS
    mask = _mask_of(slots)
    at = (psn & mask) * _SLOT.size
    old: int = _SLOT_PSN.unpack_from(slots, at)[0]
    if old >= 0 and old != psn and (old ^ psn) & (_RING - 1) and mask < _RING - 1:
        return False
    _SLOT.pack_into(slots, at, psn, frame, ts, mark)
    return True


def _lookup_py(slots: bytearray, psn: int) -> tuple[int, int, int] | None:
    old, frame, ts, mark = _SLOT.unpack_from(slots, (psn & _mask_of(slots)) * _SLOT.size)
    return (frame, ts, mark) if old == psn else None


def _copy_of_py(slots: bytearray, psn_mark: int) -> tuple[int, int] | None:
    if psn_mark < 0:
        raise ValueError("a PSN and a mark are not negative")
    psn = psn_mark & _PSN_MASK
    old, frame, ts, mark = _SLOT.unpack_from(slots, (psn & _mask_of(slots)) * _SLOT.size)
    return (frame, ts) if old == psn and mark == psn_mark >> _PSN_BITS else None


def _grown_py(slots: bytearray) -> bytearray:
    # Entries in distinct slots stay in distinct slots when the mask gains a bit.
    nmask = _mask_of(slots) * 2 + 1
    out = bytearray(_EMPTY_SLOT * (nmask + 1))
    for psn, frame, ts, mark in _SLOT.iter_unpack(slots):
        if psn >= 0:
            _SLOT.pack_into(out, (psn & nmask) * _SLOT.size, psn, frame, ts, mark)
    return out


try:
    from ._ring import copy_of as _copy_of_c  # type: ignore[import-not-found,import-untyped,unused-ignore]
    from ._ring import grown as _grown_c  # type: ignore[import-not-found,import-untyped,unused-ignore]
    from ._ring import lookup as _lookup_c  # type: ignore[import-not-found,import-untyped,unused-ignore]
    from ._ring import put as _put_c  # type: ignore[import-not-found,import-untyped,unused-ignore]
except ImportError:         # not built (a source checkout): the same in Python
    _put_c = _grown_c = _lookup_c = _copy_of_c = None
# The mask is told by the slots' size, not passed, and put takes a PSN and its mark in one int
# (``mark << _PSN_BITS | psn``): compiled, each int argument is an object made and freed.
_RING_PUT: Final[Callable[[bytearray, int, int, int], bool]] = _put_c or _put_py
_RING_LOOKUP: Final[Callable[[bytearray, int], tuple[int, int, int] | None]] = _lookup_c or _lookup_py
_RING_COPY_OF: Final[Callable[[bytearray, int], tuple[int, int] | None]] = _copy_of_c or _copy_of_py
_RING_GROWN: Final[Callable[[bytearray], bytearray]] = _grown_c or _grown_py


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

    def lookup(self, psn: int) -> tuple[int, int, int] | None:
        """(frame, time, mark) of the packet that sent ``psn`` last, if the ring holds it."""
        return _RING_LOOKUP(self.slots, psn)

    def copy_of(self, psn: int, mark: int) -> tuple[int, int] | None:
        """(frame, time) of the packet that sent ``psn`` last, if the ring holds it and it had ``mark``."""
        return _RING_COPY_OF(self.slots, mark << _PSN_BITS | psn)

    def put(self, psn: int, frame: int, ts: int, mark: int = 0) -> None:
        """Remember ``psn`` (24 bits) as sent in ``frame`` at ``ts`` with ``mark`` (``_mark``: not negative)."""
        psn_mark = mark << _PSN_BITS | psn
        while not _RING_PUT(self.slots, psn_mark, frame, ts):
            self.slots = _RING_GROWN(self.slots)
            self.mask = self.mask * 2 + 1

    @property
    def size(self) -> int:
        return self.mask + 1


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class ReqStream:
    """One requester's PSN space on one connection: its requests and the responses to them."""

    __slots__ = ("conn_id", "direction", "first", "nxt", "slack", "last_psn", "last_op", "last_ts", "last_frame",
                 "ring", "holes", "acked", "expect", "nak", "rnr", "reads", "last_read", "done_reads", "run",
                 "answers", "answer_top", "sent_ids", "answer_ids", "opened", "recent", "recent_at",
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
        self.holes: list[_Hole] = []      # PSNs skipped and not seen since
        self.acked: int | None = None     # last PSN acknowledged
        # The PSN the responder takes next, as the capture shows it: an RC responder takes only that one
        # and drops a request beyond it (IBTA vol. 1 9.7.5), until the requester sends it again.
        self.expect: int | None = None
        self.nak: _Nak | None = None      # the last PSN sequence error NAK, until the requester has gone back
        self.rnr: tuple[int, int, int] | None = None
        self.reads: list[_Read] = []      # READs waiting for responses, in the order they were sent
        self.last_read: _Read | None = None
        # READs whose responses all went by: a retry after a response was lost on the way (past the
        # capture point) asks again from inside one of them.
        self.done_reads: deque[_Read] | None = None      # made on first use (a deque costs 600 bytes)
        self.run: _Read | None = None     # the READ the last response answered
        self.answers: PsnRing | None = None   # READ response PSNs received (made on the first)
        self.answer_top = -1              # the highest of them (-1: none)
        self.sent_ids = _Ids()            # the requester's IPv4 identifications
        self.answer_ids = _Ids()          # the responder's
        self.opened: list[_Opened] = []   # READs answered from their middle, held until the requester acts
        # The last READ responses (PSN, IPv4 identification, the READ each answered): the next packet of
        # one's burst goes with it.
        self.recent: list[_Recent] = []
        self.recent_at = 0
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
    __slots__ = ("conv", "streams", "mtu", "mtu_seen", "last", "charged", "last_stream")

    def __init__(self, conv: LiveConnection) -> None:
        self.conv = conv
        self.last = 0                # the last frame that touched it (the memory budget gives up the idlest)
        self.charged = _CONN_COST    # bytes charged to the memory budget for it
        self.streams: dict[Direction, ReqStream] = {}      # made on first use: most queue pairs request one way
        self.mtu: int | None = conv.path_mtu or None
        self.mtu_seen = False        # True once a full-size packet showed the path MTU
        # The stream of the last packet: a request and the responses to it are one stream's
        self.last_stream: ReqStream | None = None

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
        # The connection of the last packet (most packets follow one of their own): no look-up for the next
        self.last_conn: _Conn | None = None
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
        # The direction of the packet being analysed on its connection, when this module worked it out
        # (``pkt_direction_known``): the modules after this one take it instead of asking the connection again.
        self.pkt_direction_known = False
        self.pkt_direction = Direction.C2S
        # Findings held until the capture shows whether they stand, in the order of their frames: the
        # gaps (held HOLD_NS at most), the READs answered from their middle (ASK_HOLD_NS).
        self.waiting: deque[_Held] = deque()
        self.asking: deque[_Held] = deque()
        self.holding = 0             # findings held and not decided yet (the deques keep decided ones behind)
        # When the window of the oldest finding held passes (a frame number, a time): none is looked at before.
        self.due_frame = 0
        self.due_ts = 0

    # -- per packet ----------------------------------------------------------------------------------
    def packet(self, pkt: Packet) -> None:
        self.again = False
        self.again_of = 0
        self.provisional = False
        self.pkt_direction_known = False
        if self.holding:
            frame = pkt.frame
            if frame.num > self.due_frame or frame.ts > self.due_ts or self.holding > _MAX_HELD:
                self._expire(frame.num, frame.ts, False)
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
        role = _ROLE_BY_OPCODE[plan.opcode]
        if conv is None or role == _UNCONNECTED:
            return
        cs = self.last_conn
        if cs is None or cs.conv is not conv:
            cs = self.conns.get(conv.conn_id)
            if cs is None:
                cs = self.conns[conv.conn_id] = _Conn(conv)
                cs.last = pkt.frame.num
                self.budget.charge(self, _CONN_COST)
            self.last_conn = cs
        cs.last = pkt.frame.num
        # the two directions as constants (not model.DIRECTION_OF and OTHER: compiled, a dict look-up each)
        d = _C2S if conv.ib_direction(pkt, ib.destqp) == "c2s" else _S2C
        self.pkt_direction = d
        self.pkt_direction_known = True
        if role == _REQUEST:
            st = self._stream_of(cs, d)
            if st.first is None:
                # The first PSN seen starts the space: implementations disagree on which CM Starting
                # PSN (the REQ's or the REP's) numbers which direction, so neither is assumed.
                st.first = st.nxt = st.expect = ib.psn
                st.acked = (st.first - 1) & _MASK
            self._request(cs, st, pkt, ib, kind)
        elif role == _RESPONSE:
            other = _S2C if d is _C2S else _C2S
            st = self._stream_of(cs, other)
            self._response(cs, st, pkt, ib, kind)

    def _stream_of(self, cs: _Conn, d: Direction) -> ReqStream:
        """Requester ``d``'s stream on ``cs``: the one of the connection's last packet, or looked up (made on
        first use)."""
        st = cs.last_stream
        if st is None or st.direction is not d:
            st = cs.streams.get(d) or self._new_stream(cs, d)
            cs.last_stream = st
        return st

    def _fields(self, pkt: Packet) -> Layer:
        """Where this packet's ``ib.analysis`` fields go: its sub-tree, or nowhere when none is shown."""
        return _layer(pkt) if self.packet_fields and pkt.fields_wanted else _UNSHOWN

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
            if cs is self.last_conn:
                self.last_conn = None
            freed += cs.charged
            self.budget.release(self, cs.charged)
            gone += 1
        return gone

    def _event(self, st: ReqStream, kind: PsnEventKind, frame: int, ts: int, psn: int, count: int = 1,
               original: int | None = None) -> None:
        if self.an.psn_events:
            self.an.emit(PsnEvent(st.conn_id, st.direction, kind, frame, ts, psn, count, original))

    # -- findings held -------------------------------------------------------------------------------
    def _hold(self, h: _Held) -> None:
        asking = isinstance(h, _Opened)
        (self.asking if asking else self.waiting).append(h)
        due_ts = h.ts + (ASK_HOLD_NS if asking else HOLD_NS)
        due_frame = h.frame + HOLD_FRAMES
        if not self.holding or due_ts < self.due_ts:
            self.due_ts = due_ts
        if not self.holding or due_frame < self.due_frame:
            self.due_frame = due_frame
        self.holding += 1
        self.budget.charge(self, _HELD_COST)
        if not self.an.hold_from or h.frame < self.an.hold_from:
            self.an.hold_from = h.frame

    def _hold_from(self) -> None:
        """The frame of the oldest finding still held, for the pipeline (0: none)."""
        first = 0
        for held in (self.waiting, self.asking):
            while held and held[0].decided:
                held.popleft()
            if held and (not first or held[0].frame < first):
                first = held[0].frame
        self.an.hold_from = first

    def _expire(self, num: int, ts: int, every: bool) -> None:
        """Decide the findings held past their window (``every``: all of them) with what the capture showed,
        and when the next one's window passes."""
        due_frame = num + HOLD_FRAMES
        due_ts = ts + HOLD_NS
        for held, window in ((self.waiting, HOLD_NS), (self.asking, ASK_HOLD_NS)):
            while held:
                h = held[0]
                if h.decided:
                    held.popleft()
                    continue
                if not every and ts - h.ts <= window and num - h.frame <= HOLD_FRAMES and self.holding <= _MAX_HELD:
                    due_frame = min(due_frame, h.frame + HOLD_FRAMES)
                    due_ts = min(due_ts, h.ts + window)
                    break
                if isinstance(h, _Gap):
                    self._gap_decided(h)
                elif isinstance(h, _Opened):
                    self._opened_decided(h, "the capture shows no later request from the requester")
                else:
                    self._decided(h)
        self.due_frame = due_frame
        self.due_ts = due_ts

    def _decided(self, h: _Held) -> Packet:
        """``h`` decided: its packet, which it lets go of (its charge to the memory budget is given back)."""
        pkt = h.pkt
        assert pkt is not None              # decided once
        h.pkt = None
        h.decided = True
        self.holding -= 1
        self.budget.release(self, _HELD_COST)
        if h.frame == self.an.hold_from:
            self._hold_from()               # the packets up to the next finding held may be shown
        return pkt

    def _gap(self, st: ReqStream, holes: list[_Hole], pkt: Packet, psn: int, expected: int, count: int,
             ident: int) -> None:
        """PSNs ``expected``..``psn``-1 skipped (``count`` of them lost at most): what they were (lost, or
        overtaken) is held until each is seen again or the window passes (said at once when no more can be
        held)."""
        g = _Gap(pkt, st, psn, expected, count, ident)
        self._hold(g)
        if len(holes) >= _MAX_HOLES:
            # the holes of gaps decided already make room (a packet filling one is still said out of order)
            holes[:] = [h for h in holes if h.gap is not None and not h.gap.decided]
        if len(holes) >= _MAX_HOLES or self.holding > _MAX_HELD:
            self._gap_decided(g)
            return
        holes.append(_Hole((psn - count) & _MASK, count, g))

    @staticmethod
    def _sent_before(hole: _Hole | None, ident: int, counting: bool, otherwise: bool) -> bool:
        """Whether the packet filling ``hole`` was sent before the packet that skipped it (a delayed
        original), by the identifications where they count, else ``otherwise``."""
        g = hole.gap if hole is not None else None
        if counting and g is not None and g.ident >= 0 and ident >= 0:
            return _id_order(g.ident, ident) < 0
        return otherwise

    def _filled(self, hole: _Hole | None, sent_again: bool, num: int, count: int = 1) -> None:
        """``count`` PSNs of ``hole`` seen (in frame ``num``): sent again (their first sending was not
        captured) or late (sent before the packet that skipped them, delayed on the way)."""
        g = hole.gap if hole is not None else None
        if g is None or g.decided:
            return
        count = min(count, g.open)
        g.open -= count
        if sent_again:
            g.lost += count
        else:
            g.late += count
            if not g.first_late:
                g.first_late = num
        if g.open <= 0:
            self._gap_decided(g)

    def _filled_beyond(self, holes: list[_Hole], psn: int, count: int, sent_again: bool, num: int) -> None:
        """The PSNs after ``psn`` a READ request reserves for its responses (``count`` in all) fill the holes
        they lie in as its first PSN does."""
        end = (psn + count) & _MASK
        for h in list(holes):
            off = (h.start - psn) & _MASK
            if 0 < off < count:
                n = min(h.count, ((end - h.start) & _MASK))
                holes.remove(h)
                if n < h.count:
                    holes.append(_Hole((h.start + n) & _MASK, h.count - n, h.gap))
                self._filled(h, sent_again, num, n)

    def _gap_decided(self, g: _Gap) -> None:
        """What the PSNs a packet skipped were: late ones make it a packet that overtook them
        (``ib.out_of_order``), lost ones (sent again, or never seen) ``ib.lost_segment``."""
        pkt = self._decided(g)
        st = g.st
        lay = self._fields(pkt)
        if g.late:
            self.an.report(OUT_OF_ORDER_RULE, (g.frame, g.first_late), g.ts, conn=st.conn_id, pkt=pkt,
                           psn=g.psn, what=f"it overtook {g.late} earlier PSN(s) from {g.expected}, sent before it "
                                           f"and delayed on the way (the first in frame {g.first_late})")
        n = g.lost + g.open
        if n <= 0:
            return                      # every PSN came late: the capture refutes the loss
        st.lost += n
        lay.add(LOST_SEGMENT, True)
        lay.add(LOST_PSNS, n)
        self.an.report(LOST, g.frame, g.ts, conn=st.conn_id, pkt=pkt, psn=g.psn, count=n, expected=g.expected)
        self._event(st, PsnEventKind.LOST, g.frame, g.ts, g.psn, n)

    def _opened_decided(self, o: _Opened, after: str) -> None:
        pkt = self._decided(o)
        st = o.st
        if o in st.opened:
            st.opened.remove(o)
        r = o.read
        self.an.report(READ_SEQUENCE, (o.frame, r.frame), o.ts, conn=st.conn_id, pkt=pkt, request=r.frame,
                       opcode=o.opcode, psn=r.psn, after=after)

    def _burst_goes_on(self, st: ReqStream, psn: int, ident: int) -> None:
        """A response sent just before one that seemed to open a READ's answer from its middle, in the same
        burst (the PSN and identification before it), came late: that one opened nothing."""
        for o in list(st.opened):
            if o.ident >= 0 and ident == (o.ident - 1) & _ID_MASK and psn == (o.read.psn - 1) & _MASK:
                st.opened.remove(o)
                self._decided(o)

    def _requester_acts(self, st: ReqStream, psn: int, num: int, kind: str) -> None:
        """A request after READs answered from their middle: it asks again for one, or goes on past it."""
        for o in list(st.opened):
            r = o.read
            off = (psn - r.psn) & _MASK
            if off < r.nmax and kind == "read_request":
                self._opened_decided(o, f"the requester asks for it again (frame {num})")
            elif r.nmax <= off < _HALF:
                self._opened_decided(o, f"the requester goes on without asking for it again (frame {num})")

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
                not cs.mtu_seen or cs.mtu is None or n < cs.mtu):
            self._full_packet(cs, n)
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
        if st.opened:
            self._requester_acts(st, psn, frame.num, kind)
        ids = st.sent_ids
        ident = ib.ip_id
        if ident >= 0 and ident != ids.top:
            # _Ids.see, written out (every request packet)
            step = (ident - ids.top) & _ID_MASK
            if ids.top < 0 or step < _ID_HALF:
                if ids.top >= 0 and step <= _ID_STEP:
                    ids.steps += 1
                ids.top = ident
        # _mark, written out
        mark = (ident + 1) << _MARK_ID_SHIFT | _MARK_CHECKED | ib.icrc_got & _MARK_ICRC_MASK \
            if ib.icrc_ok is not None else 0
        nxt = st.nxt
        assert nxt is not None                # set with the stream's first PSN, before its first request
        d = (psn - nxt) & _MASK
        expect = st.expect
        put = True
        resumed: _Read | None = None
        if d == 0 or d <= st.slack:
            st.nxt = (psn + count) & _MASK
            st.slack = slack
            if st.nak is not None:
                self._new_psn_after_nak(st, st.nak, psn, count)
            if expect == nxt:
                st.expect = st.nxt
            else:
                self._responder_takes(st, psn, count)
        elif d < _HALF:
            # PSNs skipped: lost before the capture point (or missed by the capture), or delayed on the way
            lost = d - st.slack if st.slack else d
            self._gap(st, st.holes, pkt, psn, nxt, lost, ib.ip_id)
            st.nxt = (psn + count) & _MASK
            if st.nak is not None:
                self._new_psn_after_nak(st, st.nak, psn, count)
            if st.slack and expect == nxt:
                st.expect = st.nxt          # the PSN due was not known: no telling what the responder took
            else:
                self._responder_takes(st, psn, count)
            st.slack = slack
        else:
            put, resumed = self._request_again(st, pkt, ib, kind, count, mark)
        if kind == "read_request" and ib.reth is not None:
            st.read_requests += 1
            if resumed is None:
                # sent again whole: the READ it asks again for is the last one from that PSN
                resumed = next((r for reads in (st.reads, st.done_reads or ()) for r in reversed(reads)
                                if r.psn == psn), None)
            retries = self._asked_again(st, resumed) if resumed is not None else []
            r = _Read(psn, ib.reth[2], frame.num, ts, count + slack, resumed is not None, retries,
                      st.answer_ids.top)
            reads = st.reads
            if len(reads) >= _MAX_READS:
                self._forgotten(st, reads.pop(0))     # one READ out, one in: the charge stays
            else:
                cs.charged += _READ_COST
                self.budget.charge(self, _READ_COST)
            reads.append(r)
            st.last_read = r
        if put:
            ring = st.ring
            size = ring.mask
            ring.put(psn, frame.num, ts, mark)
            if ring.mask != size:
                grown = (ring.mask - size) * _SLOT_COST
                cs.charged += grown
                self.budget.charge(self, grown)
        st.last_psn = psn
        st.last_op = plan.opcode
        st.last_ts = ts
        st.last_frame = frame.num

    @staticmethod
    def _asked_again(st: ReqStream, resumed: _Read) -> list[_Read]:
        """The READs whose holes the answers to a READ sent again (asking again for ``resumed``) fill, oldest
        first: ``resumed`` and the ones it asks again for, less those no answer can change anything in any
        more.  A READ retried again and again so keeps only what responses can still arrive for, not every
        retry before it (thousands, on a long capture)."""
        if st.answer_ids.counting:
            # the responder's identifications tell its bursts apart: an answer fills its own READ's holes
            # only, and they count from now on (``_Ids.steps`` only grows), so no list is walked again
            resumed.retries.clear()
            return []
        # The READs an answer can still go to, or a READ sent again can ask again for: filling their holes
        # changes what they want.  Any other READ counts only for a gap still held in its holes.
        reach = {id(x) for x in st.reads}
        if st.done_reads is not None:
            reach.update(id(x) for x in st.done_reads)
        if st.run is not None:
            reach.add(id(st.run))
        for e in st.recent:
            if e.read is not None:
                reach.add(id(e.read))
        kept = [x for x in resumed.retries if id(x) in reach or _held_holes(x)]
        resumed.retries[:] = kept
        if id(resumed) in reach or _held_holes(resumed):
            kept = kept + [resumed]
        return kept

    @staticmethod
    def _forgotten(st: ReqStream, r: _Read) -> None:
        """A READ the stream forgets (no answer goes to it, no READ sent again asks for it): the READs it
        asks again for are never walked again, and let go (each kept a list of the ones before it: a READ
        retried without end kept every retry before it alive)."""
        if r is st.run:
            return
        for e in st.recent:
            if e.read is r:
                return
        r.retries.clear()

    @staticmethod
    def _new_psn_after_nak(st: ReqStream, nak: _Nak, psn: int, count: int) -> None:
        """A new PSN after a PSN sequence error NAK: sent before the requester took the NAK (it goes back
        through it too), or after it went back (go-back-N is over)."""
        if nak.resent < 0:
            nak.top = (psn + count - 1) & _MASK
        else:
            st.nak = None

    def _request_again(self, st: ReqStream, pkt: Packet, ib: IBInfo, kind: str, count: int,
                       mark: int) -> tuple[bool, _Read | None]:
        """A request PSN below the next one due: a late one filling a gap, a copy made on the way, a
        delayed original of a PSN sent again already, or sent again.  Returns (whether the ring takes it
        as the PSN's last sending, the READ a READ request asks again for from one of its responses)."""
        psn = ib.psn
        frame = pkt.frame
        ts = frame.ts
        self._responder_takes(st, psn, count)
        lay = self._fields(pkt)
        hole = _fill(st.holes, psn)
        counting = st.sent_ids.counting
        ring = st.ring
        sent = ring.lookup(psn)
        original = -1
        sent_mark = 0
        sent_ts = 0
        if sent is not None and sent[0] >= 0:
            original = sent[0]
            if mark:
                sent_mark = sent[2]
            if not counting:
                sent_ts = sent[1]       # the time: copies are told by it, without numbers
        nak = st.nak if st.nak is not None and ((psn - st.nak.psn) & _MASK) < _HALF else None
        rnr = st.rnr if st.rnr is not None and st.rnr[0] == psn else None
        resumed: _Read | None = None
        if original < 0 and kind == "read_request":
            # A requester retrying a READ asks again from the first response PSN it lacks,
            # which lies inside the PSNs the original request reserved.
            resumed = next((r for reads in (st.reads, st.done_reads or ()) for r in reversed(reads)
                            if ((psn - r.psn) & _MASK) < r.nmax), None)
        put = True
        ident = ib.ip_id
        sent_id = _mark_ident(sent_mark) if sent_mark else -1
        if hole is not None and self._sent_before(hole, ident, counting, nak is None and rnr is None):
            # sent before the packet that skipped it (an earlier identification), delayed on the way
            self._late(st, pkt, lay, psn)
            self._filled(hole, False, frame.num)
            if count > 1:
                self._filled_beyond(st.holes, psn, count, False, frame.num)
        elif hole is None and original >= 0 and (
                mark and mark == sent_mark and (counting or ts - sent_ts < DUPLICATE_WINDOW_NS)
                or not mark and psn == st.last_psn and ib.plan.opcode == st.last_op and nak is None
                and rnr is None and ts - st.last_ts < DUPLICATE_WINDOW_NS):
            # the same bytes again (and the same identification): a copy made on the way
            st.duplicates += 1
            lay.add(DUPLICATE, True)
            lay.add(ORIGINAL_FRAME, original)
            self.an.report(DUPLICATE_RULE, (frame.num, original), ts, conn=st.conn_id, pkt=pkt, psn=psn,
                           original=f"frame {original}, copied on the way (the same bytes)")
            self.again = True
            self.again_of = original
            self._event(st, PsnEventKind.DUPLICATE, frame.num, ts, psn, original=original)
            put = False
        elif hole is None and original >= 0 and counting and sent_id >= 0 and ident >= 0 \
                and _id_order(sent_id, ident) < 0:
            # an earlier sending of a PSN sent again already, delayed on the way: late, and a copy of what
            # went before
            self._late(st, pkt, lay, psn)
            lay.add(ORIGINAL_FRAME, original)
            self.an.report(OUT_OF_ORDER_RULE, (frame.num, original), ts, conn=st.conn_id, pkt=pkt, psn=psn,
                           what=f"sent before its sending again in frame {original}, it arrives after it")
            self.again = True
            self.again_of = original
            put = False
        else:
            st.retransmissions += 1
            lay.add(RETRANSMISSION, True)
            first_frame: int | None = original if original >= 0 else None
            if first_frame is not None:
                first = f"first in frame {first_frame}"
                self.again = True
                self.again_of = first_frame
            elif resumed is not None:
                first_frame = resumed.frame
                first = (f"resumes the READ request of frame {first_frame} "
                         f"from its response packet {((psn - resumed.psn) & _MASK) + 1}")
            else:
                first = "its first sending was not captured"
            if first_frame is not None:
                lay.add(ORIGINAL_FRAME, first_frame)
            frames: tuple[int, ...] = (frame.num,) if first_frame is None else (frame.num, first_frame)
            if nak is not None and not nak.used:
                # sent again after the NAK: said on the packets up to the NAKed PSN's
                nak.used = psn == nak.psn
                lay.add(NAK_FRAME, nak.frame)
                frames += (nak.frame,)
            self.an.report(RETRANSMIT, frames, ts, conn=st.conn_id, pkt=pkt, psn=psn, first=first)
            self._event(st, PsnEventKind.RETRANSMISSION, frame.num, ts, psn, original=first_frame)
            self._filled(hole, True, frame.num)
            if hole is not None and count > 1:
                self._filled_beyond(st.holes, psn, count, True, frame.num)
            if nak is not None and ((nak.top - psn) & _MASK) < _HALF:
                if nak.resent < 0 or ((psn - nak.resent) & _MASK) < _HALF:
                    nak.resent = psn
                    nak.resent_frame = frame.num
                if psn == nak.top:
                    st.nak = None           # gone back through every PSN it had sent
        if rnr is not None:
            delay = ts - rnr[2]
            st.rnr_delay_ns += delay
            lay.add(RNR_NAK_FRAME, rnr[1])
            lay.add(RNR_DELAY, delay / 1e9)
            st.rnr = None
        return put, resumed

    def _late(self, st: ReqStream, pkt: Packet, lay: Layer, psn: int) -> None:
        """A packet sent before others already captured, delayed on the way: out of order."""
        frame = pkt.frame
        st.out_of_order += 1
        lay.add(OUT_OF_ORDER, True)
        self._event(st, PsnEventKind.OUT_OF_ORDER, frame.num, frame.ts, psn)

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

    # -- responses -----------------------------------------------------------------------------------
    def _response(self, cs: _Conn, st: ReqStream, pkt: Packet, ib: IBInfo, kind: str) -> None:
        psn = ib.psn
        frame = pkt.frame
        aeth = ib.aeth
        st.answer_ids.see(ib.ip_id)
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
                # the requester goes back to this PSN and sends every request from it again; the other
                # codes are fatal to the QP (nothing is resent)
                top = (st.nxt - 1) & _MASK if st.nxt is not None else psn
                st.nak = _Nak(psn, frame.num, frame.ts, top)
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
        if self.packet_fields and pkt.fields_wanted:     # the request acknowledged and the round trip: shown, not counted
            entry = st.ring.lookup(psn)
            if entry is not None:
                sent, sent_ts, _mark_ = entry
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

    @staticmethod
    def _answered(st: ReqStream, psn: int, ident: int) -> _Read | None:
        """The READ a response answers.  The responder answers READs in the order it takes them, each from
        its PSN on, in one burst of packets.  Where its identifications count they tell the bursts: the
        response fills a gap of the burst it belongs to (sent before the packet that overtook it), or opens
        the answer of the first READ that has none yet and asks from its PSN (a response sent before the
        responder had that READ, its identification not beyond the responder's when the READ was captured,
        opens none), or goes on with the first READ still lacking it whose burst it can belong to, or is the
        first of a READ whose first responses were not captured.  Otherwise: it opens the answer of the first
        READ that has none yet and asks from its PSN (a READ sent again is answered again), or goes on with
        the answer under way, or is the one the first READ still lacking it is due.  (The next packet of a
        burst goes with the packet before it: ``_read_response``.)"""
        reads = st.reads
        run = st.run
        if st.answer_ids.counting and ident >= 0:
            for r in reads:
                for h in r.holes:
                    g = h.gap
                    if g is not None and not g.decided and g.ident >= 0 and ((psn - h.start) & _MASK) < h.count:
                        if _burst((g.psn - psn) & _MASK, (g.ident - ident) & _ID_MASK):
                            return r
            for r in reads:
                if r.got == 0 and r.psn == psn and (r.floor < 0 or _id_order(r.floor, ident) > 0):
                    return r
            for r in reads:
                if r.ident >= 0 and r.wants(psn) and ((psn - r.next) & _MASK) < _HALF and _burst(
                        (psn - r.next + 1) & _MASK, (ident - r.ident) & _ID_MASK):
                    return r
            for r in reads:
                if r.got == 0 and r.wants(psn):
                    return r
        else:
            for r in reads:
                if r.got == 0 and r.psn == psn:
                    return r
        if run is not None and psn == run.next and run.wants(psn):
            return run
        for r in reads:
            if r.wants(psn):
                return r
        return None

    @staticmethod
    def _burst_before(st: ReqStream, psn: int, ident: int) -> _Recent | None:
        """The recent First or Middle whose burst a response is the next packet of (the PSN and identification
        before its), with the READ it answered (None: its request is not in the capture); None: none."""
        before = (psn - 1) & _MASK
        follows = (ident - 1) & _ID_MASK
        for e in st.recent:
            if e.psn == before and e.ident == follows:
                return e
        return None

    def _read_response(self, cs: _Conn, st: ReqStream, pkt: Packet, ib: IBInfo) -> None:
        psn = ib.psn
        frame = pkt.frame
        ts = frame.ts
        plan = ib.plan
        pos = plan.pos
        size = ib.payload_end - ib.payload_off
        st.read_responses += 1
        st.read_bytes += size
        if pos in ("first", "middle") and size >= PATH_MTU_MIN and not size & (size - 1) and (
                not cs.mtu_seen or cs.mtu is None or size < cs.mtu):
            self._full_packet(cs, size)
        counting = st.answer_ids.counting
        mark = _mark(ib)
        answers = st.answers
        if answers is not None and mark and not 0 < ((psn - st.answer_top) & _MASK) < _HALF:
            # a PSN not beyond every response received: perhaps one again (a PSN beyond them is new); a copy
            # has the same mark (most such PSNs were sent again, with another)
            copy = answers.copy_of(psn, mark)
            if copy is not None:
                first, first_ts = copy
                if counting or ts - first_ts < DUPLICATE_WINDOW_NS:
                    self._response_again(st, pkt, first, f"frame {first}, copied on the way (the same bytes)")
                    return
        ident = ib.ip_id
        goes_on = False
        if counting and ident >= 0:
            # A Middle or Last that is the next packet of a recent First's or Middle's burst goes with it (to no
            # READ when that one's request is not in the capture), and opens no answer.
            r = None
            if pos == "middle" or pos == "last":
                run = st.run
                if run is not None and run.ident == (ident - 1) & _ID_MASK and psn == run.next:
                    goes_on = True
                    r = run
                else:
                    e = self._burst_before(st, psn, ident)
                    if e is not None:
                        goes_on = True
                        r = e.read
                if r is not None and not r.wants(psn):
                    r = None
                    goes_on = False
            if not goes_on:
                r = self._answered(st, psn, ident)
            if pos == "first" or pos == "middle":
                recent = st.recent
                if len(recent) < _RECENT:
                    recent.append(_Recent(psn, ident, r))
                else:
                    e = recent[st.recent_at]
                    e.psn = psn
                    e.ident = ident
                    e.read = r
                    st.recent_at = (st.recent_at + 1) % _RECENT
        else:
            r = self._answered(st, psn, ident)
        if st.opened and counting:
            self._burst_goes_on(st, psn, ident)
        if r is None:
            done = st.done_reads
            if done is not None:
                for cand in reversed(done):
                    if ((psn - cand.psn) & _MASK) < cand.nmax:
                        if counting and ib.ip_id >= 0:
                            # sent again by the responder (not a copy): the answer to a READ asked again whose
                            # request is not in the capture; what it carries was received already
                            self.again = True
                            return
                        # an answer again to a READ already complete
                        self._response_again(st, pkt, 0, f"a response already received to the READ request of "
                                                         f"frame {cand.frame}")
                        return
            return                        # its request is not in the capture
        st.run = r
        if ((psn - r.next) & _MASK) < _HALF:
            r.ident = ib.ip_id          # the latest of its burst (a late one fills a gap behind it)
        if answers is None:
            answers = st.answers = PsnRing()
            cs.charged += 8 * _SLOT_COST
            self.budget.charge(self, 8 * _SLOT_COST)
        size0 = answers.mask
        answers.put(psn, frame.num, ts, mark)
        if st.answer_top < 0 or 0 < ((psn - st.answer_top) & _MASK) < _HALF:
            st.answer_top = psn
        if answers.mask != size0:
            grown = (answers.mask - size0) * _SLOT_COST
            cs.charged += grown
            self.budget.charge(self, grown)
        lay = self._fields(pkt)
        lay.add(READ_REQUEST_FRAME, r.frame)
        if psn == r.psn and r.got == 0 and pos not in ("first", "only") and not goes_on:
            # rxe (Linux 6.1) answers a READ sent again from a response PSN this way
            o = _Opened(pkt, st, r, f"READ Response {pos.capitalize()}", ib.ip_id)
            if len(st.opened) < _MAX_HOLES:
                st.opened.append(o)
                self._hold(o)
            else:
                self._hold(o)
                self._opened_decided(o, "the capture shows no later request from the requester")
        d = (psn - r.next) & _MASK
        if d == 0:
            r.next = (psn + 1) & _MASK
        elif d < _HALF:
            # responses skipped: lost before the capture point, or delayed on the way
            self._gap(st, r.holes, pkt, psn, r.next, d, ib.ip_id)
            r.next = (psn + 1) & _MASK
        else:
            # a response the READ lacked: late (sent before responses already captured), or an answer to a
            # READ sent again
            hole = _fill(r.holes, psn)
            late = self._sent_before(hole, ib.ip_id, counting, not r.retried)
            if late:
                self._late(st, pkt, lay, psn)
            self._filled(hole, not late, frame.num)
        # The answer to a READ sent again fills what the READs it asks again for lacked; where the responder's
        # identifications tell its bursts, a gap waits for its own burst's packet (delayed, or not captured).
        if r.retries:
            if counting:
                r.retries.clear()           # told apart by the identifications from now on (``_asked_again``)
            for back in reversed(r.retries):
                self._filled(_fill(back.holes, psn), True, frame.num)
        r.got += 1
        r.bytes += size
        if pos in ("last", "only"):
            r.end = (psn + 1) & _MASK
            self._read_last(cs, st, pkt, r, psn)
        if r.end >= 0 and _complete(r):
            self._read_done(cs, st, r, pkt)

    def _full_packet(self, cs: _Conn, n: int) -> None:
        """A First or Middle packet of ``n`` bytes, exactly one path MTU (256..4096).  What the wire shows
        wins over the CM's Path MTU (the QP's active MTU may be lower: rxe's 1024 on a 1500-byte netdev),
        and one equal to it confirms it."""
        mtu = cs.mtu
        if mtu is None or n < mtu:
            cs.mtu = mtu = n
        if n == mtu:
            cs.mtu_seen = True
            self._mtu_known(cs)

    @staticmethod
    def _mtu_known(cs: _Conn) -> None:
        """The path MTU is seen on the wire: the READs sized before it take the packets it gives them, and
        the PSN after the last one is exact."""
        mtu = cs.mtu
        if not mtu:
            return
        for st in cs.streams.values():
            for r in st.reads:
                if r.end < 0:
                    r.nmax = min(r.nmax, _ceil(r.length, mtu))
            last = st.last_read
            if st.slack and last is not None and last.end < 0:
                st.nxt = (last.psn + _ceil(last.length, mtu)) & _MASK
                st.slack = 0

    def _read_last(self, cs: _Conn, st: ReqStream, pkt: Packet, r: _Read, psn: int) -> None:
        """The last response of a READ: how many it has against what its length asks at the path MTU."""
        frame = pkt.frame
        packets = ((psn - r.psn) & _MASK) + 1
        mtu = cs.mtu
        lay = self._fields(pkt)
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
        if r is st.last_read and st.slack and st.nxt is not None:
            # the READ's packet count is known now: the next request PSN is exact
            end = (r.psn + packets) & _MASK
            if ((st.nxt - r.psn) & _MASK) <= packets:
                st.nxt = end
                st.slack = 0
        self._advance_acked(st, psn)

    def _read_done(self, cs: _Conn, st: ReqStream, r: _Read, pkt: Packet) -> None:
        """Every response of a READ received: its bytes against its length; it leaves the READs waiting,
        with the ones before it that asked for the same PSNs and got nothing (answered by it)."""
        packets = (r.end - r.psn) & _MASK
        if r.got == packets and r.bytes != r.length:
            frame = pkt.frame
            self.an.report(READ_LENGTH, (frame.num, r.frame), frame.ts, conn=st.conn_id, pkt=pkt, got=r.bytes,
                           length=r.length, request=r.frame)
        reads = st.reads
        if r in reads:
            i = reads.index(r)
            # the READs before it that asked for the same PSNs are answered by now, or never will be
            gone = [x for x in reads[:i] if ((x.psn - r.psn) & _MASK) < packets
                    and (x.got == 0 or x.end >= 0 and _complete(x))]
            gone.append(r)
            for x in gone:
                reads.remove(x)
            done = st.done_reads
            if done is None:
                done = st.done_reads = deque(maxlen=_DONE_READS)
            for x in gone:
                if len(done) == _DONE_READS:
                    self._forgotten(st, done[0])
                    cs.charged -= _READ_COST
                    self.budget.release(self, _READ_COST)
                done.append(x)
        if st.last_read is r:
            st.last_read = None
        if st.run is r:
            st.run = None

    def _response_again(self, st: ReqStream, pkt: Packet, original: int, what: str) -> None:
        """A READ response whose PSN was received already: a copy made on the way (``original``: its frame)
        or an answer again, said here and left alone after."""
        frame = pkt.frame
        st.duplicates += 1
        lay = self._fields(pkt)
        lay.add(DUPLICATE, True)
        if original:
            lay.add(ORIGINAL_FRAME, original)
        frames: tuple[int, ...] = (frame.num, original) if original else (frame.num,)
        self.an.report(DUPLICATE_RULE, frames, frame.ts, conn=st.conn_id, pkt=pkt, psn=pkt.ib.psn, original=what)
        self._event(st, PsnEventKind.DUPLICATE, frame.num, frame.ts, pkt.ib.psn, original=original or None)
        self.again = True
        self.again_of = original

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
        self._expire(0, 0, True)
        for cs in self.conns.values():
            for st in cs.streams.values():
                self._stalled(st)
        for cs in self.conns.values():
            self._emit_stats(cs)
        for (src, dst, qp), (cnps, marks) in self.flows.items():
            self.an.emit(CongestionFlow(src, dst, qp, cnps, marks))

    def _stalled(self, st: ReqStream) -> None:
        """A requester that went back after a PSN sequence error NAK and stopped before the PSNs it had sent
        beyond it: go-back-N never finished."""
        nak = st.nak
        if nak is None or nak.resent < 0 or nak.resent == nak.top:
            return
        count = ((nak.top - nak.psn) & _MASK) + 1
        self.an.report(GO_BACK_N_STALL, (nak.frame, nak.resent_frame), nak.ts, conn=st.conn_id, psn=nak.psn,
                       nak=nak.frame, resent=nak.resent, top=nak.top, count=count)

    def _emit_stats(self, cs: _Conn) -> None:
        for _d, st in sorted(cs.streams.items()):    # c2s, then s2c, as before
            if st.packets or st.acks or st.read_responses:
                self.an.emit(st.stats(cs.mtu))


register("ib.transport", Transport)
