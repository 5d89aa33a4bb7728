"""The analysis model: typed records of what the analysis of a capture found.

Analysis modules fill these records and hand them to the analyzer's sinks (``Analyzer.emit``) as
soon as they are final: a ``Transaction`` when its response closes it (every upper layer's: RPC-over-RDMA,
NVMe/RDMA, their own facts in ``Transaction.facts``), a piece of a ``CreditSeries`` when it fills, a
``Connection`` when first seen (and again, updated, later), a ``PsnEvent`` for each sequence event, the
summaries (``UlpSummary``, ``PsnStats``, ``CongestionFlow``) at the end; ``Finding``s go to the finding
sink.  Presentations (flows JSON, stats, expert, annotate, the JSON ``*.analysis.*`` fields, the TUI) read
them; nothing here formats text for a user, parses bytes or knows a sink.

``AnalysisModel`` is the sink that keeps everything (the TUI's): other sinks (the flows document,
stats) keep what they need and let the rest go, so that their memory stays bounded.

Enumerations are ``StrEnum``s: a member equals its value ("c2s", "complete", ...), which is what
the JSON documents carry.
"""
from __future__ import annotations

from enum import StrEnum

from ..records import record_eq, record_repr
from ..rules import RULES, Rule, Severity   # declared below the dissectors, which declare rules too
from ..typenames import TYPE_CHECKING, Any, Callable, ClassVar, Union, cast, mypyc_attr

if TYPE_CHECKING:
    from ..conversation import Connection as LiveConnection
    from ..dissectors.rpcrdma_pdata import RpcRdmaPdata
    from .hostmodel import HostView


# --- enumerations --------------------------------------------------------------------------------------
class Direction(StrEnum):
    """The way a packet travels on a connection."""
    C2S = "c2s"     # client to server (the client sent the CM REQ or MPA Request)
    S2C = "s2c"

    @property
    def other(self) -> Direction:
        return Direction.S2C if self is Direction.C2S else Direction.C2S

    @property
    def sender(self) -> Side:
        return Side.CLIENT if self is Direction.C2S else Side.SERVER

    @property
    def receiver(self) -> Side:
        return Side.SERVER if self is Direction.C2S else Side.CLIENT

    @property
    def calls(self) -> CallDirection:
        """The direction of the calls sent this way: forward from the client, backchannel from the server."""
        return CallDirection.FORWARD if self is Direction.C2S else CallDirection.BACKCHANNEL


# The connection table names directions by their values: this maps them to members without a call of
# the enumeration (which is slow on the per-packet path).
DIRECTION_OF: dict[str, Direction] = {"c2s": Direction.C2S, "s2c": Direction.S2C}
# ``d.other`` without the enumeration's property (a generic attribute read compiled), for the per-packet path.
OTHER: dict[Direction, Direction] = {Direction.C2S: Direction.S2C, Direction.S2C: Direction.C2S}


class CallDirection(StrEnum):
    """Which peer calls: the client (forward channel) or the server (backchannel)."""
    FORWARD = "forward"
    BACKCHANNEL = "backchannel"


class Side(StrEnum):
    """A peer of a connection (whose memory a segment names, who closed a connection)."""
    CLIENT = "client"
    SERVER = "server"


class ConnectionState(StrEnum):
    REQUESTED = "requested"
    ESTABLISHED = "established"
    REJECTED = "rejected"
    CLOSED = "closed"
    UNKNOWN_SETUP = "unknown-setup"     # the setup was not captured: known by its traffic only


class TransactionState(StrEnum):
    OPEN = "open"                       # the request is out, the response (or what ends it) has not come yet
    COMPLETE = "complete"
    UNANSWERED = "unanswered"           # no response in the capture
    PULL_INCOMPLETE = "pull_incomplete" # RPC-over-RDMA: a reply through a responder-provided Read chunk without
                                        # its RDMA_DONE


class StepKind(StrEnum):
    """What a step of a transaction did.  The values name the request and response by RPC's words, which
    the flows document has carried since its first version."""
    REQUEST = "call"                    # the Send (or Sends) of the request
    RDMA_READ = "read"                  # an RDMA READ of memory the requester advertised (request and responses)
    RDMA_WRITE = "write"                # an RDMA WRITE into memory the requester advertised
    RESPONSE = "reply"                  # the Send of the response (with Invalidate: ``Step.invalidated``)
    DONE = "done"                       # a Send after the response that ends the transaction (RPC-over-RDMA's
                                        # RDMA_DONE after a responder-provided Read chunk was pulled)


class PacketRole(StrEnum):
    """The part a packet plays in its transaction (``rpcrdma.analysis.role``)."""
    REQUEST = "call"
    RESPONSE = "reply"
    DONE = "done"
    RDMA_READ = "rdma_read"
    READ_RESPONSE = "rdma_read_response"
    RDMA_WRITE = "rdma_write"
    RELATED = "related"


class SegmentState(StrEnum):
    """What became of an advertised segment once its transaction closed."""
    FULL = "full"
    PARTIAL = "partial"
    UNUSED = "unused"
    EMPTY = "empty"                     # a zero-length segment
    OVERRUN = "overrun"                 # bytes were moved past its end


class PsnEventKind(StrEnum):
    """Sequence events in a requester's PSN space (``ib.analysis``)."""
    LOST = "lost"                       # PSNs skipped: not captured
    OUT_OF_ORDER = "out_of_order"       # a PSN fills an earlier gap
    RETRANSMISSION = "retransmission"
    DUPLICATE = "duplicate"
    NAK = "nak"
    RNR_NAK = "rnr_nak"
    ACKED_UNSEEN = "acked_unseen"       # an ACK of PSNs not captured


# The records built for every message spell their ``__init__`` out (a dataclass's __init__ is not compiled
# by mypyc: it runs in the interpreter, some 3,500 instructions a record), the records made once a connection
# or at the end too (mypyc 2.4 runs the standard decorator on a compiled dataclass at import, some 3 M
# instructions a class); their repr and equality are by their ``_FIELDS`` (``rdmaspy.records``).  They allow
# interpreted subclasses: a class mypyc 2.4 makes serializable without it, called from interpreted code (a
# test, the TUI), runs no __init__ and leaves every attribute undefined.


# --- rules and findings --------------------------------------------------------------------------------
@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Finding:
    """One breach of a rule, with the frames and values that show it.  Its message is rendered
    from the rule's template only when a presentation asks for ``text``.  It stands in a packet's
    expert list beside the dissectors' ``Expert`` items (same ``severity``/``group``/``text``/``rule``)."""

    __slots__ = ("rule_def", "frames", "conn", "xid", "args", "ts")

    def __init__(self, rule_def: Rule, frames: tuple[int, ...], conn: int | None, xid: int | None,
                args: dict[str, object], ts: int) -> None:
        self.rule_def = rule_def
        self.frames = frames                    # the frame that shows it first, then related frames
        self.conn = conn                        # the connection's id
        self.xid = xid
        self.args = args                        # the values the message template names (numbers, strings)
        self.ts = ts                            # timestamp (ns) of the first frame

    @property
    def level(self) -> Severity:
        return self.rule_def.severity

    @property
    def severity(self) -> str:
        return str(self.rule_def.severity)       # its value, without enum's descriptor (Python code)

    @property
    def group(self) -> str:
        return self.rule_def.group

    @property
    def text(self) -> str:
        return self.rule_def.text(self.args)

    @property
    def rule(self) -> str:
        """The rule's id, as a dissector's expert item names it (``expert.rule``)."""
        return self.rule_def.id

    @property
    def source(self) -> str:
        """The specification the rule comes from (``expert.source``)."""
        return self.rule_def.source

    def __repr__(self) -> str:
        return f"<Finding {self.rule_def.id} frames={self.frames}>"


# --- connections ---------------------------------------------------------------------------------------
@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Endpoint:
    """A peer of a connection: its address and what the capture named it by."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("address", "gid", "qpn", "tcp_port", "comm_id")
    __slots__ = _FIELDS

    def __init__(self, address: str, gid: str | None = None, qpn: int | None = None, tcp_port: int | None = None,
                 comm_id: int | None = None) -> None:
        self.address = address
        self.gid = gid
        self.qpn = qpn
        self.tcp_port = tcp_port
        self.comm_id = comm_id

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)

    def __eq__(self, other: object) -> bool:
        return record_eq(self, other, self._FIELDS)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Connection:
    """An RDMA connection as the analysis last saw it (a snapshot of the connection table's entry)."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("id", "transport", "client", "server", "state", "setup_known", "service_id",
                                          "port_space", "port", "service_type", "start_psn_c2s", "start_psn_s2c",
                                          "path_mtu", "t_start", "t_end", "t_requested", "t_established", "t_closed",
                                          "closed_by", "reject_reason", "pdata_client", "pdata_server", "inline_c2s",
                                          "inline_s2c", "remote_invalidate", "ulp", "ulp_client", "ulp_server",
                                          "packets_c2s", "packets_s2c", "bytes_c2s", "bytes_s2c")
    __slots__ = _FIELDS

    def __init__(self, id: int, transport: str, client: Endpoint, server: Endpoint,
                 state: ConnectionState = ConnectionState.UNKNOWN_SETUP, setup_known: bool = False,
                 service_id: int | None = None, port_space: int | None = None, port: int | None = None,
                 service_type: int | None = None, start_psn_c2s: int | None = None, start_psn_s2c: int | None = None,
                 path_mtu: int | None = None, t_start: int = 0, t_end: int = 0, t_requested: int | None = None,
                 t_established: int | None = None, t_closed: int | None = None, closed_by: Side | None = None,
                 reject_reason: int | None = None, pdata_client: RpcRdmaPdata | None = None,
                 pdata_server: RpcRdmaPdata | None = None, inline_c2s: int = 0, inline_s2c: int = 0,
                 remote_invalidate: bool = False, ulp: str | None = None, ulp_client: Any = None,
                 ulp_server: Any = None, packets_c2s: int = 0, packets_s2c: int = 0, bytes_c2s: int = 0,
                 bytes_s2c: int = 0) -> None:
        self.id = id
        self.transport = transport  # "ib" (InfiniBand, RoCE) or "iwarp"
        self.client = client
        self.server = server
        self.state = state
        self.setup_known = setup_known
        self.service_id = service_id
        self.port_space = port_space
        self.port = port
        self.service_type = service_type  # CM transport service type: 0 RC, 1 UC, 2 RD
        self.start_psn_c2s = start_psn_c2s
        self.start_psn_s2c = start_psn_s2c
        self.path_mtu = path_mtu
        self.t_start = t_start
        self.t_end = t_end
        self.t_requested = t_requested
        self.t_established = t_established
        self.t_closed = t_closed
        self.closed_by = closed_by
        self.reject_reason = reject_reason
        self.pdata_client = pdata_client  # RPC-over-RDMA private data (RFC 8797) each side sent
        self.pdata_server = pdata_server
        self.inline_c2s = inline_c2s  # negotiated inline thresholds (RFC 8797 §4.3)
        self.inline_s2c = inline_s2c
        self.remote_invalidate = remote_invalidate  # both peers set R
        self.ulp = ulp  # the upper layer a dissector found on it ("nvme-rdma"); None: not said
        self.ulp_client = ulp_client  # that upper layer's own facts from the client's and the server's
        self.ulp_server = ulp_server  # CM or MPA private data (nvme_rdma.NvmeRdmaCm)
        self.packets_c2s = packets_c2s
        self.packets_s2c = packets_s2c
        self.bytes_c2s = bytes_c2s
        self.bytes_s2c = bytes_s2c

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)

    @property
    def inline_applies(self) -> bool:
        """Whether RPC-over-RDMA's inline thresholds are the connection's (not when another upper layer,
        NVMe/RDMA, is found on it)."""
        return self.ulp is None or self.ulp == "rpcrdma"

    @staticmethod
    def of(live: LiveConnection) -> Connection:
        c = Connection(live.conn_id, live.transport, Endpoint(live.client_addr), Endpoint(live.server_addr))
        c.update(live)
        return c

    def update(self, live: LiveConnection) -> None:
        """Take the connection table's current values."""
        cl, sv = self.client, self.server
        cl.address, cl.gid, cl.qpn, cl.tcp_port, cl.comm_id = (live.client_addr, live.client_gid, live.client_qpn,
                                                              live.client_port, live.client_comm)
        sv.address, sv.gid, sv.qpn, sv.tcp_port, sv.comm_id = (live.server_addr, live.server_gid, live.server_qpn,
                                                              live.server_port, live.server_comm)
        self.state = ConnectionState(live.state)
        self.setup_known = live.setup_known
        self.service_id = live.service_id
        self.port_space = live.port_space
        self.port = live.port
        self.service_type = live.service_type
        self.start_psn_c2s = live.start_psn_c2s
        self.start_psn_s2c = live.start_psn_s2c
        self.path_mtu = live.path_mtu
        self.t_start = live.t_start
        self.t_end = live.t_end
        self.t_requested = live.t_requested
        self.t_established = live.t_established
        self.t_closed = live.t_closed
        self.closed_by = None if live.closed_by is None else Side(live.closed_by)
        self.reject_reason = live.reject_reason
        self.pdata_client = live.pdata_client
        self.pdata_server = live.pdata_server
        self.inline_c2s = live.inline_c2s
        self.inline_s2c = live.inline_s2c
        self.remote_invalidate = live.remote_invalidate
        self.ulp = live.ulp
        self.ulp_client = live.ulp_client
        self.ulp_server = live.ulp_server
        self.packets_c2s = live.packets_c2s
        self.packets_s2c = live.packets_s2c
        self.bytes_c2s = live.bytes_c2s
        self.bytes_s2c = live.bytes_s2c


# --- transactions --------------------------------------------------------------------------------------
# A transaction is one request of an upper layer over RDMA and everything that answered it: RPC-over-RDMA's
# call and reply (by XID), NVMe/RDMA's command and completion (by CID on its queue), and so iSER's SCSI
# command and response (ITT) or SMB Direct's SMB2 request and response (MessageId).  What the upper layers
# share is here: the Sends of the request and of the response, the memory the request advertised for the
# peer's RDMA READs and WRITEs (``Segment``: the data ledger) and what those moved, the steps in time order,
# the times.  What each says of its own is its ``Facts``, declared with the upper layer (analysis.ulp).
@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Segment:
    """One advertised piece of memory (handle, offset, length) and what the RDMA operations did to it: an
    RPC-over-RDMA chunk segment, an NVMe keyed SGL data block, iSER's STag and address, an SMB Direct buffer
    descriptor.  ``kind`` names where it was advertised, as its upper layer calls it (``ChunkList`` for
    RPC-over-RDMA); ``access`` is the operation the peer is to use on it (RDMA READ or WRITE; None: either);
    ``invalidate`` says the peer may invalidate its handle remotely with the response."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("kind", "chunk", "index", "position", "handle", "offset", "length", "side",
                                          "transaction", "spans", "overrun", "reported", "ops", "frames", "access",
                                          "invalidate")
    __slots__ = _FIELDS

    def __init__(self, kind: str, chunk: int, index: int, position: int | None, handle: int, offset: int,
                length: int, side: Side, transaction: Transaction | None = None,
                spans: list[list[int]] | None = None, overrun: int = 0, reported: int | None = None, ops: int = 0,
                frames: list[int] | None = None, access: StepKind | None = None, invalidate: bool = False) -> None:
        self.kind = kind
        self.chunk = chunk                      # its group in its list (RPC-over-RDMA: the chunk; Read chunks: the
                                                # XDR position); 0 where the upper layer has no groups
        self.index = index                      # its number in its group
        self.position = position                # RPC-over-RDMA Read chunks: XDR position
        self.handle = handle
        self.offset = offset
        self.length = length
        self.side = side                        # whose memory
        self.transaction = transaction
        # merged [start, end) moved, relative to offset
        self.spans: list[list[int]] = [] if spans is None else spans
        self.overrun = overrun                  # bytes moved past the end by operations that started inside
        self.reported = reported                # the length the response gives back (RPC-over-RDMA's Write list)
        self.ops = ops                          # RDMA operations that touched it
        self.frames: list[int] = [] if frames is None else frames  # frames that moved its bytes
        self.access = access
        self.invalidate = invalidate

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)

    @property
    def end(self) -> int:
        return self.offset + self.length

    @property
    def used(self) -> int:
        """Bytes moved inside the segment (each byte once, however often it was moved)."""
        n = 0
        for s, e in self.spans:
            n += e - s
        return n

    @property
    def state(self) -> SegmentState:
        if self.overrun:
            return SegmentState.OVERRUN
        used = self.used
        if used == 0:
            return SegmentState.UNUSED if self.length else SegmentState.EMPTY
        return SegmentState.FULL if used >= self.length else SegmentState.PARTIAL

    def add(self, start: int, end: int, frame: int) -> None:
        """Count [start, end) (relative to the segment) as moved by ``frame``; ranges are merged."""
        frames = self.frames
        if not frames or frames[-1] != frame:
            frames.append(frame)
        spans = self.spans
        if spans and spans[-1][1] == start:      # the common case: the next packet of one operation
            spans[-1][1] = end
            return
        spans.append([start, end])
        if len(spans) > 1:
            spans.sort()
            merged = [spans[0]]
            for s, e in spans[1:]:
                last = merged[-1]
                if s <= last[1]:
                    if e > last[1]:
                        last[1] = e
                else:
                    merged.append([s, e])
            self.spans = merged


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Step:
    """One step of a transaction: a Send of the request or the response, an RDMA READ or WRITE, a Send that
    ends it (RPC-over-RDMA's RDMA_DONE)."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("kind", "frames", "ts", "bytes", "handle", "offset", "length", "segment",
                                          "response_frames", "invalidated")
    __slots__ = _FIELDS

    def __init__(self, kind: StepKind, frames: list[int], ts: int, bytes: int | None = None,
                handle: int | None = None, offset: int | None = None, length: int | None = None,
                segment: Segment | None = None, response_frames: list[int] | None = None,
                invalidated: int | None = None) -> None:
        self.kind = kind
        self.frames = frames                    # the Sends, the READ request, the WRITE packets
        self.ts = ts
        self.bytes = bytes                      # bytes moved (None for a step that moves none)
        self.handle = handle                    # RDMA READ / WRITE: the R_Key or STag ...
        self.offset = offset                    # ... the address ...
        self.length = length                    # ... and the length asked for (or written)
        self.segment = segment                  # the advertised segment it moved (where it started)
        self.response_frames = response_frames  # RDMA READ: the frames of its responses
        self.invalidated = invalidated          # a response's Send With Invalidate: the handle invalidated

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Message:
    """The request or the response of a transaction: the Sends that carried it."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("frames", "ts", "size", "retransmissions", "invalidated")
    __slots__ = _FIELDS

    def __init__(self, frames: list[int], ts: int, size: int, retransmissions: list[list[int]] | None = None,
                 invalidated: int | None = None) -> None:
        self.frames = frames                    # the Sends that carried it
        self.ts = ts
        self.size = size                        # bytes sent inline (the upper layer's header and payload)
        # a request's resendings, the frames of each
        self.retransmissions: list[list[int]] = [] if retransmissions is None else retransmissions
        self.invalidated = invalidated          # a response's Send With Invalidate: the handle it invalidated

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)

    def __eq__(self, other: object) -> bool:
        return record_eq(self, other, self._FIELDS)

    @property
    def frame(self) -> int:
        return self.frames[-1]


# Facts as plain values (``Facts.record``): the name its maker is declared by (``declare_facts_maker``),
# and the values the maker takes.
FactsRecord = tuple[str, tuple[object, ...]]
# The makers of facts by name, declared by the upper layers (a record names its maker: read back by this
# table alone, never by importing a name).
FACTS_MAKERS: dict[str, Callable[[Any], "Facts"]] = {}
# The members of the upper layers' enumerations of segment kinds by value (``declare_segment_kinds``);
# a kind not here is a plain string (NVMe's).
SEGMENT_KINDS: dict[str, str] = {}


def declare_facts_maker(name: str, make: Callable[[Any], "Facts"]) -> None:
    """Declare the function that makes facts again of the values their ``record`` gives with ``name``."""
    FACTS_MAKERS[name] = make


def declare_segment_kinds(kinds: list[str]) -> None:
    """Declare an upper layer's enumeration of segment kinds, so that a record's kind is read back as one."""
    for kind in kinds:
        SEGMENT_KINDS[_value(kind)] = kind


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Facts:
    """What an upper layer says of a transaction beyond what they all share: RPC-over-RDMA's version, message
    types and RPC call, NVMe's queue, opcode, namespace and status.  Each upper layer derives its own and
    declares how they are shown and exported (``analysis.ulp.UlpModel``)."""

    __slots__ = ()

    def record(self) -> FactsRecord | None:
        """Its values as plain values (the facts inside it as theirs), with the name of the function that
        makes it again of them (``declare_facts_maker``): in a transaction's record (``transaction_record``),
        marshalled.  None: the record holds the object itself (and the block is pickled)."""
        return None


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Transaction:
    """One request of an upper layer on one connection, its response and everything that moved its data
    between them.  ``key`` is what pairs them on the connection (RPC's XID, NVMe's CID); ``expected`` the
    bytes the request says the RDMA operations move, when its upper layer says (NVMe: NLB × LBA size);
    ``data_first`` and ``data_last`` the times of the first and last packet that moved its data."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("protocol", "conn", "key", "request_direction", "request", "response",
                                          "state", "facts", "steps", "segments", "findings", "bytes_read",
                                          "bytes_written", "expected", "data_first", "data_last", "dropped")
    __slots__ = _FIELDS + ("host",)              # what the host traces say: not shown

    def __init__(self, protocol: str, conn: int, key: int, request_direction: Direction, request: Message,
                 facts: Facts, response: Message | None = None, state: TransactionState = TransactionState.OPEN,
                 steps: list[Step] | None = None, segments: list[Segment] | None = None,
                 findings: list[Finding] | None = None, bytes_read: int = 0, bytes_written: int = 0,
                 expected: int | None = None, data_first: int | None = None, data_last: int | None = None,
                 dropped: int = 0, host: HostView | None = None) -> None:
        self.protocol = protocol                # the upper layer ("rpcrdma", "nvme-rdma": analysis.ulp)
        self.conn = conn
        self.key = key
        self.request_direction = request_direction    # the way the request went (c2s: from the client)
        self.request = request
        self.response = response
        self.state = state
        self.facts = facts
        self.steps: list[Step] = [] if steps is None else steps
        self.segments: list[Segment] = [] if segments is None else segments
        self.findings: list[Finding] = [] if findings is None else findings
        self.bytes_read = bytes_read            # moved by RDMA READ
        self.bytes_written = bytes_written      # moved by RDMA WRITE
        self.expected = expected
        self.data_first = data_first
        self.data_last = data_last
        self.dropped = dropped                  # steps, findings and resendings past the caps: counted, not kept
        self.host = host                        # what the host traces say of it (--host-trace; analysis.hostjoin)

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)

    @property
    def direction(self) -> CallDirection:
        """Forward (the client asked) or backchannel (the server did)."""
        return self.request_direction.calls

    @property
    def latency_ns(self) -> int | None:
        rep = self.response
        return None if rep is None else rep.ts - self.request.ts

    @property
    def request_frame(self) -> int:
        return self.request.frames[-1]

    @property
    def response_frame(self) -> int | None:
        rep = self.response
        return rep.frames[-1] if rep is not None and rep.frames else None

    @property
    def bytes_inline(self) -> int:
        rep = self.response
        return self.request.size + (rep.size if rep is not None else 0)

    def segment_at(self, kind: str, chunk: int, index: int) -> Segment | None:
        for s in self.segments:
            if s.kind == kind and s.chunk == chunk and s.index == index:
                return s
        return None

    def frames(self) -> list[int]:
        """Every frame of the transaction in capture order: the request and its resendings, the RDMA
        operations and their responses, the response and the Sends after it."""
        frames = set(self.request.frames)
        for again in self.request.retransmissions:
            frames.update(again)
        for step in self.steps:
            frames.update(step.frames)
            if step.response_frames:
                frames.update(step.response_frames)
        rep = self.response
        if rep is not None:
            frames.update(rep.frames)
        return sorted(frames)

    def role_of(self, frame: int) -> tuple[PacketRole, Step | None]:
        """The part ``frame`` plays in this transaction, and the step it belongs to."""
        if frame in self.request.frames:
            return PacketRole.REQUEST, None
        rep = self.response
        if rep is not None and frame in rep.frames:
            return PacketRole.RESPONSE, None
        for step in reversed(self.steps):
            kind = step.kind
            if kind is StepKind.RDMA_READ and step.response_frames and frame in step.response_frames:
                return PacketRole.READ_RESPONSE, step
            if frame in step.frames:
                if kind is StepKind.RDMA_READ:
                    return PacketRole.RDMA_READ, step
                if kind is StepKind.RDMA_WRITE:
                    return PacketRole.RDMA_WRITE, step
                if kind is StepKind.DONE:
                    return PacketRole.DONE, step
        return PacketRole.RELATED, None


# --- a transaction as plain values ---------------------------------------------------------------------
# The TUI keeps every closed transaction on disk and builds it again when a view draws it.  Pickled as
# objects, each of its messages, steps, segments and findings went through pickle's way for any object (a
# __reduce_ex__ and a dict of its attributes each, most of the analysis pass's cost in the TUI).  As one
# tuple of plain values (strings, numbers, lists, tuples, dicts: its enumerations by their values, its
# rules by their ids, its facts as ``Facts.record`` gives them) a block of transactions is marshalled, which
# keeps no memo of every tuple as pickle does.  What marshal refuses (a segment of another transaction,
# host views, facts without a record) makes the block pickled, the same record.  The segments point back at
# their transaction and the steps at its segments: the record has neither pointer, and
# ``transaction_from_record`` ties them again.
if TYPE_CHECKING:
    # a transaction as plain values: its messages, segments, steps and findings as tuples of their fields
    MessageRecord = tuple[list[int], int, int, list[list[int]], int | None]
    # ... a segment's last field: True where it is the transaction's own (its ``transaction``), else that
    SegmentRecord = tuple[str, int, int, int | None, int, int, int, str, list[list[int]], int, int | None, int,
                          list[int], str | None, bool, object]
    # ... a step's segment: its place in the transaction's ``segments`` (a segment not there: itself)
    StepRecord = tuple[str, list[int], int, int | None, int | None, int | None, int | None, object,
                       list[int] | None, int | None]
    FindingRecord = tuple[str, tuple[int, ...], int | None, int | None, dict[str, object], int]
    TransactionRecord = tuple[str, int, int, str, MessageRecord, MessageRecord | None, str,
                              Facts | FactsRecord, list[StepRecord], list[SegmentRecord], list[FindingRecord], int,
                              int, int | None, int | None, int | None, int, HostView | None]

# the members of the enumerations a record holds by value, read back without a call of the enumeration
_STATE_OF: dict[str, TransactionState] = {s.value: s for s in TransactionState}
_STEP_KIND_OF: dict[str, StepKind] = {k.value: k for k in StepKind}
_SIDE_OF: dict[str, Side] = {s.value: s for s in Side}


def transaction_record(t: Transaction) -> TransactionRecord:
    """``t`` as plain values, which ``transaction_from_record`` makes it again from."""
    segments = t.segments
    rep = t.response
    # each step's segment by its (first) place: the segments indexed by identity once, not scanned a step
    places: dict[int, int] = {}
    if t.steps:
        for i, seg in enumerate(segments):
            places.setdefault(id(seg), i)
    return (t.protocol, t.conn, t.key, _value(t.request_direction), _message_record(t.request),
            None if rep is None else _message_record(rep), _value(t.state), _facts_record(t.facts),
            [_step_record(s, places) for s in t.steps], [_segment_record(s, t) for s in segments],
            [(f.rule_def.id, f.frames, f.conn, f.xid, f.args, f.ts) for f in t.findings], t.bytes_read,
            t.bytes_written, t.expected, t.data_first, t.data_last, t.dropped, t.host)


def transaction_from_record(r: TransactionRecord) -> Transaction:
    """The transaction ``transaction_record`` made ``r`` of."""
    (protocol, conn, key, request_direction, request, response, state, facts, step_records, segment_records,
     finding_records, bytes_read, bytes_written, expected, data_first, data_last, dropped, host) = r
    t = Transaction(protocol, conn, key, DIRECTION_OF[request_direction], _message_from(request),
                    _facts_from(facts), None if response is None else _message_from(response), _STATE_OF[state],
                    None, None, [Finding(RULES[f[0]], f[1], f[2], f[3], f[4], f[5]) for f in finding_records],
                    bytes_read, bytes_written, expected, data_first, data_last, dropped, host)
    segments = t.segments
    kinds = SEGMENT_KINDS
    for g in segment_records:
        owner = g[15]
        kind = g[0]
        access = g[13]
        segments.append(Segment(kinds.get(kind, kind), g[1], g[2], g[3], g[4], g[5], g[6], _SIDE_OF[g[7]],
                                t if owner is True else _transaction_or_none(owner), g[8], g[9], g[10], g[11],
                                g[12], None if access is None else _STEP_KIND_OF[access], g[14]))
    steps = t.steps
    for p in step_records:
        at = p[7]
        seg = segments[at] if isinstance(at, int) else at if isinstance(at, Segment) else None
        steps.append(Step(_STEP_KIND_OF[p[0]], p[1], p[2], p[3], p[4], p[5], p[6], seg, p[8], p[9]))
    return t


def _value(member: str) -> str:
    """An enumeration's member (of strings) as its value, a plain string (what marshal takes); a plain
    string as itself.  Its ``_value_``: its ``value`` is a property written in Python."""
    if type(member) is str:
        return member
    value: str = cast(Any, member)._value_
    return value


def _facts_record(f: Facts) -> Facts | FactsRecord:
    rec = f.record()
    return f if rec is None else rec


def _facts_from(r: Facts | FactsRecord) -> Facts:
    if isinstance(r, Facts):
        return r
    maker, values = r
    return FACTS_MAKERS[maker](values)


def _message_record(m: Message) -> MessageRecord:
    return (m.frames, m.ts, m.size, m.retransmissions, m.invalidated)


def _message_from(r: MessageRecord) -> Message:
    return Message(r[0], r[1], r[2], r[3], r[4])


def _segment_record(s: Segment, t: Transaction) -> SegmentRecord:
    owner = s.transaction
    access = s.access
    return (_value(s.kind), s.chunk, s.index, s.position, s.handle, s.offset, s.length, _value(s.side), s.spans,
            s.overrun, s.reported, s.ops, s.frames, None if access is None else _value(access), s.invalidate,
            True if owner is t else owner)


def _step_record(s: Step, places: dict[int, int]) -> StepRecord:
    seg = s.segment
    at: object = None
    if seg is not None:
        at = places.get(id(seg), seg)
    return (_value(s.kind), s.frames, s.ts, s.bytes, s.handle, s.offset, s.length, at, s.response_frames,
            s.invalidated)


def _transaction_or_none(owner: object) -> Transaction | None:
    return owner if isinstance(owner, Transaction) else None


# --- credits and queue depth ---------------------------------------------------------------------------
# The flow control of the upper layers in one shape: a limit the peer set (RPC-over-RDMA's credit grant,
# NVMe's submission queue size, iSCSI's command window, SMB Direct's send credits) and the requests
# outstanding against it, per direction of requests.
@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class CreditSample:
    """Credits (or a queue's depth) of one direction of requests at one instant (the state after everything
    at ``ts``)."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("conn", "direction", "ts", "frame", "granted", "requested", "outstanding")
    __slots__ = _FIELDS

    def __init__(self, conn: int, direction: CallDirection, ts: int, frame: int, granted: int | None,
                requested: int | None, outstanding: int) -> None:
        self.conn = conn
        self.direction = direction
        self.ts = ts
        self.frame = frame
        self.granted = granted                  # the limit in force (None: none seen yet)
        self.requested = requested              # RPC-over-RDMA v1: the last credit value a call asked for
        self.outstanding = outstanding          # requests sent and not answered

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)

    def __eq__(self, other: object) -> bool:
        return record_eq(self, other, self._FIELDS)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class CreditSeries:
    """A piece of a credit time series, in time order; the pieces of one direction follow each other."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("conn", "direction", "samples")
    __slots__ = _FIELDS

    def __init__(self, conn: int, direction: CallDirection, samples: list[CreditSample]) -> None:
        self.conn = conn
        self.direction = direction
        self.samples = samples

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)

    def __eq__(self, other: object) -> bool:
        return record_eq(self, other, self._FIELDS)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class CreditSummary:
    """Credits (or a queue's depth) of one direction of requests over the whole capture."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("direction", "requested", "granted", "granted_min", "granted_max",
                                          "max_outstanding", "calls", "grants", "peak_outstanding",
                                          "outstanding_at_end", "zero_grants", "exceeded", "refreshes")
    __slots__ = _FIELDS

    def __init__(self, direction: CallDirection, requested: int | None, granted: int | None, granted_min: int | None,
                 granted_max: int | None, max_outstanding: int | None, calls: int, grants: int, peak_outstanding: int,
                 outstanding_at_end: int, zero_grants: int, exceeded: int, refreshes: int) -> None:
        self.direction = direction
        self.requested = requested
        self.granted = granted
        self.granted_min = granted_min
        self.granted_max = granted_max
        self.max_outstanding = max_outstanding  # v2: the grantor's maximum
        self.calls = calls
        self.grants = grants
        self.peak_outstanding = peak_outstanding
        self.outstanding_at_end = outstanding_at_end
        self.zero_grants = zero_grants
        self.exceeded = exceeded
        self.refreshes = refreshes

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)

    def __eq__(self, other: object) -> bool:
        return record_eq(self, other, self._FIELDS)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class UlpSummary:
    """The traffic of one upper layer on one connection, when it ends (or the capture does)."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("protocol", "conn", "messages", "transactions", "unanswered", "versions",
                                          "credits", "unadvertised_operations", "unadvertised_bytes")
    __slots__ = _FIELDS

    def __init__(self, protocol: str, conn: int, messages: int, transactions: int, unanswered: int, versions: list[int],
                 credits: list[CreditSummary], unadvertised_operations: int, unadvertised_bytes: int) -> None:
        self.protocol = protocol
        self.conn = conn
        self.messages = messages
        self.transactions = transactions
        self.unanswered = unanswered
        self.versions = versions  # the upper layer's versions seen (RPC-over-RDMA's)
        self.credits = credits  # by direction, forward first: credits, or the queue's depth
        self.unadvertised_operations = unadvertised_operations  # RDMA operations on memory no open request advertised
        self.unadvertised_bytes = unadvertised_bytes

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)

    def __eq__(self, other: object) -> bool:
        return record_eq(self, other, self._FIELDS)


# --- transport -----------------------------------------------------------------------------------------
@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class PsnEvent:
    """A sequence event in one requester's PSN space."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("conn", "direction", "kind", "frame", "ts", "psn", "count", "original_frame")
    __slots__ = _FIELDS

    def __init__(self, conn: int, direction: Direction, kind: PsnEventKind, frame: int, ts: int, psn: int,
                count: int = 1, original_frame: int | None = None) -> None:
        self.conn = conn
        self.direction = direction              # the requester's direction
        self.kind = kind
        self.frame = frame
        self.ts = ts
        self.psn = psn
        self.count = count                      # PSNs lost (LOST); the NAK code (NAK)
        self.original_frame = original_frame    # RETRANSMISSION / DUPLICATE: the first sending

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)

    def __eq__(self, other: object) -> bool:
        return record_eq(self, other, self._FIELDS)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class PsnStats:
    """One requester's PSN space on one connection, at the end of the capture."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("conn", "direction", "first_psn", "next_psn", "packets", "retransmissions",
                                          "duplicates", "lost", "out_of_order", "naks", "rnr_naks", "rnr_delay_ns",
                                          "acks", "coalesced_acks", "psns_acked", "duplicate_acks", "read_requests",
                                          "read_responses", "send_bytes", "write_bytes", "read_bytes", "path_mtu")
    __slots__ = _FIELDS

    def __init__(self, conn: int, direction: Direction, first_psn: int | None, next_psn: int | None, packets: int,
                 retransmissions: int, duplicates: int, lost: int, out_of_order: int, naks: dict[int, int],
                 rnr_naks: int, rnr_delay_ns: int, acks: int, coalesced_acks: int, psns_acked: int, duplicate_acks: int,
                 read_requests: int, read_responses: int, send_bytes: int, write_bytes: int, read_bytes: int,
                 path_mtu: int | None) -> None:
        self.conn = conn
        self.direction = direction
        self.first_psn = first_psn
        self.next_psn = next_psn
        self.packets = packets
        self.retransmissions = retransmissions
        self.duplicates = duplicates
        self.lost = lost
        self.out_of_order = out_of_order
        self.naks = naks  # NAK code -> count
        self.rnr_naks = rnr_naks
        self.rnr_delay_ns = rnr_delay_ns
        self.acks = acks
        self.coalesced_acks = coalesced_acks
        self.psns_acked = psns_acked
        self.duplicate_acks = duplicate_acks
        self.read_requests = read_requests
        self.read_responses = read_responses
        self.send_bytes = send_bytes  # payload of SENDs, RDMA WRITEs, READ responses (every copy)
        self.write_bytes = write_bytes
        self.read_bytes = read_bytes
        self.path_mtu = path_mtu

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)

    def __eq__(self, other: object) -> bool:
        return record_eq(self, other, self._FIELDS)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class CongestionFlow:
    """Congestion notifications on one flow (source, destination, destination QP)."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("src", "dst", "qp", "cnps", "ce_marks")
    __slots__ = _FIELDS

    def __init__(self, src: str, dst: str, qp: int, cnps: int, ce_marks: int) -> None:
        self.src = src
        self.dst = dst
        self.qp = qp
        self.cnps = cnps
        self.ce_marks = ce_marks

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)

    def __eq__(self, other: object) -> bool:
        return record_eq(self, other, self._FIELDS)


# What the analyzer hands to its record sink.
Record = Union[Transaction, CreditSeries, UlpSummary, Connection, PsnEvent, PsnStats, CongestionFlow]


class AnalysisModel:
    """Everything the analysis produced, kept: the sink a live view (the TUI) reads.

    Pass ``model.on_record`` and ``model.on_finding`` to the Analyzer.  ``on_change`` is called
    with each record or finding after it is stored, so that a view can refresh.  Unlike the flows
    and stats sinks it keeps every transaction: its memory grows with the capture.
    """

    __slots__ = ("connections", "transactions", "findings", "credits", "summaries", "psn_events", "psn_stats",
                 "congestion", "on_change")

    def __init__(self, on_change: Callable[[Record | Finding], None] | None = None) -> None:
        self.connections: dict[int, Connection] = {}
        self.transactions: list[Transaction] = []
        self.findings: list[Finding] = []
        self.credits: dict[tuple[int, CallDirection], list[CreditSample]] = {}
        self.summaries: dict[int, UlpSummary] = {}       # by connection
        self.psn_events: list[PsnEvent] = []
        self.psn_stats: dict[tuple[int, Direction], PsnStats] = {}
        self.congestion: list[CongestionFlow] = []
        self.on_change = on_change

    @property
    def segments(self) -> list[Segment]:
        """Every advertised segment of the transactions closed so far."""
        out: list[Segment] = []
        for t in self.transactions:
            out.extend(t.segments)
        return out

    def on_record(self, rec: Record) -> None:
        if isinstance(rec, Transaction):
            self.transactions.append(rec)
        elif isinstance(rec, CreditSeries):
            key: tuple = (rec.conn, rec.direction)  # plain tuple: see docs/architecture.md
            series = self.credits.get(key)
            if series is None:
                self.credits[key] = list(rec.samples)
            else:
                series.extend(rec.samples)
        elif isinstance(rec, Connection):
            self.connections[rec.id] = rec
        elif isinstance(rec, PsnEvent):
            self.psn_events.append(rec)
        elif isinstance(rec, UlpSummary):
            self.summaries[rec.conn] = rec
        elif isinstance(rec, PsnStats):
            self.psn_stats[(rec.conn, rec.direction)] = rec
        elif isinstance(rec, CongestionFlow):
            self.congestion.append(rec)
        if self.on_change is not None:
            self.on_change(rec)

    def on_finding(self, f: Finding) -> None:
        self.findings.append(f)
        if self.on_change is not None:
            self.on_change(f)
