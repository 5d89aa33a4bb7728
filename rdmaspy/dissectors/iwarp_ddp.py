"""iWARP DDP (RFC 5041) and RDMAP (RFC 5040, RFC 7306) headers, inside one MPA ULPDU.

MPA (``iwarp_mpa``) finds each FPDU in the TCP stream and calls
``dissect_ddp_rdmap`` with the ULPDU.  DDP's control byte says tagged or
untagged; the next byte is RDMAP's control field.  Untagged Send messages that
span several DDP segments are put back together here (by queue number and
message sequence number) and the whole message goes to ``rdmacm.port``, keyed
by the server's TCP port, where RPC-over-RDMA registers 20049.  The facts of
every segment go to ``pkt.note(IWARP, [IWarpInfo, ...])`` for analysis.  RDMAP Read Requests,
Read Responses and Writes go to ``rdma_reassembly``, which puts the chunks of RPC-over-RDMA
messages back together from them (by STag and tagged offset) as it does over InfiniBand.
"""
from __future__ import annotations

from ..fields import F, Field, Header, declaring, repeatable
from ..packet import Layer, Note, Packet
from ..registry import dissect_with, table
from ..session import wants_info
from ..typenames import Any, Final, mypyc_attr
from .data import add_data_layer
from . import rdma_reassembly
from .hexfmt import hex8, hexn
from .rpcrdma import RPCRDMA, RpcRdmaMessage
from .xdr import u32, u64

declaring(__name__)
repeatable("ddp", "rdmap")        # one per FPDU

RDMAP_OPCODES: Final = {
    0: "Write", 1: "Read Request", 2: "Read Response", 3: "Send", 4: "Send with Invalidate",
    5: "Send with SE", 6: "Send with SE and Invalidate", 7: "Terminate", 8: "Immediate Data",
    9: "Immediate Data with SE", 10: "Atomic Request", 11: "Atomic Response",
}
# Which buffer model each opcode must use (RFC 5040 table 3, RFC 7306 section 8): True = tagged.
_TAGGED_OPS: Final = {0: True, 1: False, 2: True, 3: False, 4: False, 5: False, 6: False, 7: False, 8: False,
                      9: False, 10: False, 11: False}
# The queue each untagged RFC 5040 opcode goes to (RFC 5040 section 5.1).
_QUEUE_OF: Final = {1: 1, 3: 0, 4: 0, 5: 0, 6: 0, 7: 2}
SEND_OPS: Final = frozenset({3, 4, 5, 6})
# What an operation's payload is, for analysis (as infiniband.OP_KIND is for IB).
OP_KIND: Final = {0: "write", 1: "read_request", 2: "read_response", 3: "send", 4: "send", 5: "send", 6: "send",
                  7: "terminate", 8: "immediate", 9: "immediate", 10: "atomic", 11: "atomic_response"}
INVALIDATE_OPS: Final = frozenset({4, 6})

TERM_LAYERS: Final = {0: "RDMAP", 1: "DDP", 2: "LLP (MPA)"}
TERM_ETYPES: Final = {
    0: {0: "Local Catastrophic Error", 1: "Remote Protection Error", 2: "Remote Operation Error"},
    1: {0: "Local Catastrophic Error", 1: "Tagged Buffer Error", 2: "Untagged Buffer Error",
        3: "Reserved for the LLP"},
    2: {0: "MPA Error"},
}
_RDMAP_ERR_PROTECTION: Final = {0: "Invalid STag", 1: "Base or bounds violation", 2: "Access rights violation",
                                3: "STag not associated with RDMAP Stream", 4: "TO wrap",
                                9: "STag cannot be Invalidated", 0xFF: "Unspecified Error"}
_RDMAP_ERR_OPERATION: Final = {5: "Invalid RDMAP version", 6: "Unexpected OpCode",
                               7: "Catastrophic error, localized to RDMAP Stream", 8: "Catastrophic error, global",
                               9: "STag cannot be Invalidated", 0xFF: "Unspecified Error"}
TERM_CODES: Final = {
    (0, 0): {0: "Local Catastrophic Error"},
    (0, 1): _RDMAP_ERR_PROTECTION,
    (0, 2): _RDMAP_ERR_OPERATION,
    (1, 0): {0: "Local Catastrophic Error"},
    (1, 1): {0: "Invalid STag", 1: "Base or bounds violation", 2: "STag not associated with DDP Stream",
             3: "TO wrap", 4: "Invalid DDP version"},
    (1, 2): {1: "Invalid QN", 2: "Invalid MSN - no buffer available", 3: "Invalid MSN - MSN range is not valid",
             4: "Invalid MO", 5: "DDP Message too long for available buffer", 6: "Invalid DDP version"},
    (2, 0): {1: "TCP connection closed, terminated or lost", 2: "MPA CRC Error",
             3: "MPA Marker and ULPDU Length field mismatch",
             4: "Invalid MPA Request Frame or MPA Response Frame", 5: "Local Catastrophic Error",
             6: "Insufficient IRD Resources", 7: "No Matching RTR Option"},
}
ATOMIC_OPCODES: Final = {0: "FetchAdd", 1: "Swap", 2: "CmpSwap"}

# --- header declarations --------------------------------------------------------------------------
DDP_TAGGED: Final = Header("ddp", "DDP Tagged Buffer Header", [
    F("tagged_flag", 1, "Tagged flag", "bool"),
    F("last_flag", 1, "Last flag", "bool"),
    F("rsvd", 4, "Reserved", "hex"),
    F("dv", 2, "DDP protocol version"),
    F("rsvdulp", 8, "Reserved for use by the ULP", "bytes"),
    F("stag", 32, "(Data Sink) Steering Tag", "hex"),
    F("tagged_offset", 64, "(Data Sink) Tagged offset", "hex"),
])
DDP_UNTAGGED: Final = Header("ddp", "DDP Untagged Buffer Header", [
    F("tagged_flag", 1, "Tagged flag", "bool"),
    F("last_flag", 1, "Last flag", "bool"),
    F("rsvd", 4, "Reserved", "hex"),
    F("dv", 2, "DDP protocol version"),
    F("rsvdulp", 40, "Reserved for use by the ULP", "bytes"),
    F("qn", 32, "Queue number"),
    F("msn", 32, "Message sequence number"),
    F("mo", 32, "Message offset"),
])
RDMAP_CTRL: Final = Header("rdmap", "RDMAP Header", [
    F("version", 2, "Version"),
    F("rsv", 2, "Reserved", "hex"),
    F("opcode", 4, "OpCode", "hex", RDMAP_OPCODES),
])
READ_REQUEST: Final = Header("rdmap.rr", "RDMA Read Request", [
    F("sinkstag", 32, "Data Sink STag", "hex"),
    F("sinkto", 64, "Data Sink Tagged Offset", "hex"),
    F("rdmardsz", 32, "RDMA Read Message Size", unit="bytes"),
    F("srcstag", 32, "Data Source STag", "hex"),
    F("srcto", 64, "Data Source Tagged Offset", "hex"),
])
TERMINATE: Final = Header("rdmap.term", "Terminate", [
    F("layer", 4, "Layer", names=TERM_LAYERS),
    F("etype", 4, "Error Type"),
    F("errcode", 8, "Error Code", "hex"),
    F("hdrct_m", 1, "M bit (DDP Segment Length valid)", "bool"),
    F("hdrct_d", 1, "D bit (Terminated DDP Header included)", "bool"),
    F("hdrct_r", 1, "R bit (Terminated RDMA Header included)", "bool"),
    F("rsvd", 13, "Reserved", "hex"),
])
ATOMIC_REQUEST: Final = Header("rdmap.atomic", "Atomic Request", [
    F("reserved", 28, "Reserved", "hex"),
    F("opcode", 4, "Atomic OpCode", names=ATOMIC_OPCODES),
    F("request_identifier", 32, "Request Identifier"),
    F("remote_stag", 32, "Remote STag", "hex"),
    F("remote_tagged_offset", 64, "Remote Tagged Offset", "hex"),
    F("add_swap_data", 64, "Add or Swap Data", "hex"),
    F("add_swap_mask", 64, "Add or Swap Mask", "hex"),
    F("compare_data", 64, "Compare Data", "hex"),
    F("compare_mask", 64, "Compare Mask", "hex"),
])
ATOMIC_RESPONSE: Final = Header("rdmap.atomic_resp", "Atomic Response", [
    F("original_request_identifier", 32, "Original Request Identifier"),
    F("original_remote_data_value", 64, "Original Remote Data Value", "hex"),
])
IMMEDIATE: Final = Header("rdmap.immediate", "Immediate Data", [F("data", 64, "Immediate Data", "hex")])
# The header each untagged opcode carries after the DDP header (what _segment below reads).
HEADER_OF_OPCODE: Final = {1: READ_REQUEST, 7: TERMINATE, 8: IMMEDIATE, 9: IMMEDIATE, 10: ATOMIC_REQUEST,
                           11: ATOMIC_RESPONSE}

INVAL_STAG: Final = Field("rdmap.inval_stag", 32, "Invalidate STag", "hex")
RDMAP_RESERVED: Final = Field("rdmap.reserved", 32, "Reserved", "hex")
TERM_ETYPE_NAME: Final = Field("rdmap.term.etype_name", 0, "Error Type", "str")
TERM_ERRCODE_NAME: Final = Field("rdmap.term.errcode_name", 0, "Error Code", "str")
TERM_DDP_SEG_LEN: Final = Field("rdmap.term.ddp_seg_len", 16, "DDP Segment Length", unit="bytes")
TERM_DDP_H: Final = Field("rdmap.term.ddp_h", 0, "Terminated DDP Header", "bytes")
TERM_RDMA_H: Final = Field("rdmap.term.rdma_h", 0, "Terminated RDMA Header", "bytes")
PAYLOAD_LEN: Final = Field("ddp.payload_len", 0, "Payload length", unit="bytes")
MSG_LEN: Final = Field("rdmap.send.reassembled_length", 0, "Reassembled Send message length", unit="bytes")
MSG_FRAMES: Final = Field("rdmap.send.fragment_count", 0, "DDP segments in the message")

_TAGGED_HDR: Final = DDP_TAGGED.size
_UNTAGGED_HDR: Final = DDP_UNTAGGED.size


def _start(hdr: Header, name: str) -> int:
    """Where a whole-byte field of a header starts, as declared."""
    return hdr.spans[hdr.index[name]][0]


def _end(hdr: Header, name: str) -> int:
    at, size, _bit = hdr.spans[hdr.index[name]]
    return at + size


# Where the segment's facts are, from the declarations: the DDP control byte's flags and version (the same
# in both DDP headers) and RDMAP's control byte, as (word, shift, mask) with the header read as bytes;
# the whole-byte fields as [start, end) in the header.
_TAGGED_FLAG: Final = DDP_TAGGED.spot("tagged_flag", 8)
_LAST_FLAG: Final = DDP_TAGGED.spot("last_flag", 8)
_DDP_VERSION: Final = DDP_TAGGED.spot("dv", 8)
_RDMAP_VERSION: Final = RDMAP_CTRL.spot("version", 8)
_RDMAP_OPCODE: Final = RDMAP_CTRL.spot("opcode", 8)
_STAG_AT: Final = _start(DDP_TAGGED, "stag")
_STAG_END: Final = _end(DDP_TAGGED, "stag")
_TO_AT: Final = _start(DDP_TAGGED, "tagged_offset")
_TO_END: Final = _end(DDP_TAGGED, "tagged_offset")
_QN_AT: Final = _start(DDP_UNTAGGED, "qn")
_QN_END: Final = _end(DDP_UNTAGGED, "qn")
_MSN_AT: Final = _start(DDP_UNTAGGED, "msn")
_MSN_END: Final = _end(DDP_UNTAGGED, "msn")
_MO_AT: Final = _start(DDP_UNTAGGED, "mo")
_MO_END: Final = _end(DDP_UNTAGGED, "mo")
# RDMAP's use of the untagged header's ULP bytes (RFC 5040 section 4.3): its control byte, then the
# Invalidate STag (or reserved).
_RDMAP_AT: Final = _start(DDP_UNTAGGED, "rsvdulp")
_INV_STAG_AT: Final = _RDMAP_AT + RDMAP_CTRL.size
_INV_STAG_END: Final = _INV_STAG_AT + INVAL_STAG.bits // 8
# The words after the control bytes, read one by one where the declarations put them (compiled, machine
# integers: an unpack is a generic call making a tuple and an int object a word): STag and TO of a tagged
# segment; the Invalidate STag (or reserved), QN, MSN and MO of an untagged one.
if (_STAG_END, _TO_AT, _TO_END) != (_STAG_AT + 4, _STAG_END, _STAG_END + 8) or \
        (_QN_AT, _MSN_AT, _MO_AT, _MO_END) != (_INV_STAG_END, _INV_STAG_END + 4, _INV_STAG_END + 8, _INV_STAG_END + 12):
    raise ImportError("iwarp_ddp: the DDP declarations no longer match the unpacks of the segment's words")
# Untagged messages being put together: bounded so that bogus MSNs cannot hoard memory.
MAX_PARTIAL_MESSAGES: Final = 64
MAX_MESSAGE_BYTES: Final = 1 << 20
rdmacm_port = table("rdmacm.port", "RDMA-CM port (upper layers over RDMA connections)")


class IWarpInfo:
    """The DDP/RDMAP facts of one DDP segment (no text), as ``IBInfo`` is for InfiniBand."""

    __slots__ = ("opcode", "name", "tagged", "last", "stag", "to", "qn", "msn", "mo", "inv_stag",
                 "read_request", "terminate", "atomic", "immediate", "buf", "payload_off", "payload_end",
                 "frames", "crc_ok", "conn", "from_initiator", "message_len", "message", "rpcrdma")
    # Set by the parser for every segment (the others start empty below).
    opcode: int
    name: str
    tagged: bool
    last: bool
    buf: bytes
    payload_off: int
    payload_end: int

    def __init__(self) -> None:
        self.stag: int | None = None
        self.to: int | None = None
        self.qn: int | None = None
        self.msn: int | None = None
        self.mo: int | None = None
        self.inv_stag: int | None = None
        self.read_request: tuple | None = None   # (sink stag, sink TO, size, source stag, source TO)
        self.terminate: tuple | None = None      # (layer, error type, error code)
        self.atomic: tuple | None = None         # the Atomic Request / Response header values
        self.immediate: int | None = None
        self.frames: list[int] = []
        self.crc_ok: bool | None = None
        self.conn: Any = None
        self.from_initiator: bool | None = None
        self.message_len: int | None = None      # untagged: whole message length once complete
        self.message: bytes | None = None        # a Send put together from several DDP segments
        self.rpcrdma: RpcRdmaMessage | None = None   # the RPC-over-RDMA message this Send carried

    @property
    def payload_len(self) -> int:
        return self.payload_end - self.payload_off

    @property
    def kind(self) -> str:
        return OP_KIND.get(self.opcode, "unknown")


# The DDP segments of a packet, in stream order (an MPA FPDU may hold several).
IWARP: Final[Note[list[IWarpInfo]]] = Note("iwarp")
# The summary line as the upper layer left it after the last Send message of this packet.
UPPER_LINE: Final[Note[list[str]]] = Note("iwarp.upper_line")


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class UntaggedAssembly:
    """Segments of untagged messages still missing their last segment, per direction."""

    __slots__ = ("partial", "sizes", "last_parts")

    def __init__(self) -> None:
        self.partial: dict[tuple[int, int], list[tuple[int, bytes]]] = {}
        self.sizes: dict[tuple[int, int], int] = {}     # bytes held per message
        self.last_parts = 0          # DDP segments of the message last completed

    def add(self, qn: int, msn: int, mo: int, data: bytes, last: bool) -> bytes | None:
        """Returns the whole message when ``last`` completes a contiguous one, else None."""
        key: tuple = (qn, msn)  # plain tuple: see docs/architecture.md
        parts = self.partial.get(key)
        if parts is None:
            if len(self.partial) >= MAX_PARTIAL_MESSAGES:
                old = next(iter(self.partial))
                del self.partial[old]
                del self.sizes[old]
            parts = self.partial[key] = []
            self.sizes[key] = 0
        held = self.sizes[key] + len(data)
        if mo + len(data) > MAX_MESSAGE_BYTES or held > MAX_MESSAGE_BYTES:
            del self.partial[key]
            del self.sizes[key]
            return None
        parts.append((mo, data))
        self.sizes[key] = held
        if not last:
            return None
        del self.partial[key]
        del self.sizes[key]
        parts.sort()
        self.last_parts = len(parts)
        pos = 0
        out = []
        for o, d in parts:
            if o > pos:
                return None
            if o + len(d) > pos:
                out.append(d[pos - o:])
                pos = o + len(d)
        return b"".join(out)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class DdpStream:
    """The stream DDP segments come in, as DDP reads it (an MPA direction, ``iwarp_mpa.MpaDir``, is one):
    declared here, below MPA, so that DDP reads it typed (compiled, an untyped stream was a generic
    attribute read each time, half a dozen a segment)."""

    __slots__ = ("is_initiator", "untagged", "frames_now", "crc_now")

    def __init__(self, is_initiator: bool | None) -> None:
        self.is_initiator = is_initiator
        self.untagged = UntaggedAssembly()
        self.frames_now: list[int] = []         # the frames the FPDU at hand came in
        self.crc_now: bool | None = None        # its CRC's verdict (None: no CRC in use)

    def owner(self) -> object:
        """The connection the stream belongs to (``IWarpInfo.conn``)."""
        return None

    def port(self) -> int | None:
        """The server's port: the key of ``rdmacm.port`` for the stream's Send messages."""
        return None


def _name(op: int) -> str:
    name = RDMAP_OPCODES.get(op)       # not .get(op, f"..."): the default would be made at every call
    return name if name is not None else f"Reserved opcode {op}"


# The tables above by the 4-bit opcode, for the segment's path: compiled, a bit of a mask or an item of a
# tuple, where a dict or set look-up boxed and hashed the opcode (a dozen a segment).
_KNOWN_MASK: Final = sum(1 << op for op in RDMAP_OPCODES)
_TAGGED_MASK: Final = sum(1 << op for op, tagged in _TAGGED_OPS.items() if tagged)
_SEND_MASK: Final = sum(1 << op for op in SEND_OPS)
_INVALIDATE_MASK: Final = sum(1 << op for op in INVALIDATE_OPS)
_OP_NAMES: Final[tuple[str, ...]] = tuple(_name(op) for op in range(16))
_QUEUE_BY_OP: Final[tuple[int, ...]] = tuple(_QUEUE_OF.get(op, -1) for op in range(16))


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class DdpLayer(Layer):
    """The DDP header's layer keeps the segment's payload length, its item filled on demand."""

    __slots__ = ("plen",)
    plen: int


def _fill_ddp(lay: Layer) -> None:
    assert isinstance(lay, DdpLayer)
    lay.add(PAYLOAD_LEN, lay.plen)


def _fill_rdmap_untagged(lay: Layer) -> None:
    # The word after the control byte of an untagged segment: an Invalidate STag, or reserved.
    buf = lay.buf
    at = lay.off - _RDMAP_AT + _INV_STAG_AT
    op = (buf[lay.off] >> _RDMAP_OPCODE.shift) & _RDMAP_OPCODE.mask
    n = _INV_STAG_END - _INV_STAG_AT
    # a word read in place (int.from_bytes of a slice: a bytes object and a method call), when it is whole
    word = u32(buf, at) if n == 4 and at + 4 <= len(buf) else int.from_bytes(buf[at:at + n], "big")
    lay.add(INVAL_STAG if op in INVALIDATE_OPS else RDMAP_RESERVED, word, at, n)


# Final: compiled, C statics (a function named as a value is otherwise a look-up in the module's dict)
_FILL_DDP: Final = _fill_ddp
_FILL_RDMAP_UNTAGGED: Final = _fill_rdmap_untagged


# Where a Send's line goes in the Info column while its message is with the upper layer, which usually writes
# the line anew: the Send's own text is made only if the upper layer kept it (a run-time object, found by
# identity, never shown).
_SEND_LINE = "".join(["\0", "iwarp: a Send's line"])


def _untagged_line(info: IWarpInfo, plen: int) -> str:
    """The Info text of an untagged segment without an RDMAP header of its own (a Send)."""
    text = f"iWARP RDMAP {info.name}{' Last' if info.last else ''} QN={info.qn} MSN={info.msn}"
    if info.mo:
        text += f" MO={info.mo}"
    if info.inv_stag is not None:
        text += f" Inv STag=0x{hex8(info.inv_stag)}"
    return f"{text} Len={plen}"


def _send_line_at(info_col: list[str]) -> int:
    """Where the Send's place holder stands in ``info_col``, or -1 (by identity: compiled, a pointer
    comparison an item, where ``in`` compared the texts)."""
    holder = _SEND_LINE
    for i in range(len(info_col)):
        if info_col[i] is holder:
            return i
    return -1


def _resolve_send_line(info_col: list[str], line: str) -> bool:
    """Put ``line`` where the Send's place holder stands in ``info_col``; False when it stands nowhere."""
    at = _send_line_at(info_col)
    if at < 0:
        return False
    info_col[at] = line
    return True


def dissect_ddp_rdmap(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any, *, stream: DdpStream | None = None,
                      out: list | None = None) -> IWarpInfo | None:
    """One DDP segment (an MPA ULPDU) in ``buf[off:end]``.

    ``stream`` is the MPA direction it came in (server port, untagged reassembly, frames);
    without it (a lone ULPDU) upper layers are looked up under key None.  The segment's
    ``IWarpInfo`` is appended to ``out`` before the payload goes to upper layers.
    """
    n = end - off
    if n < 2:
        pkt.truncated("ddp", n, 2)
        return None
    tagged = (buf[off + _TAGGED_FLAG.word] >> _TAGGED_FLAG.shift) & _TAGGED_FLAG.mask
    hlen = _TAGGED_HDR if tagged else _UNTAGGED_HDR
    if n < hlen:
        pkt.truncated("ddp", n, hlen)
        return None
    last = (buf[off + _LAST_FLAG.word] >> _LAST_FLAG.shift) & _LAST_FLAG.mask
    dv = (buf[off + _DDP_VERSION.word] >> _DDP_VERSION.shift) & _DDP_VERSION.mask
    ddp = DdpLayer("ddp", DDP_TAGGED if tagged else DDP_UNTAGGED, buf, off, hlen)
    pkt.push(ddp)
    rdmap = pkt.add_layer("rdmap", RDMAP_CTRL, buf, off + _RDMAP_AT, RDMAP_CTRL.size)
    r = buf[off + _RDMAP_AT]
    op = (r >> _RDMAP_OPCODE.shift) & _RDMAP_OPCODE.mask
    rv = (r >> _RDMAP_VERSION.shift) & _RDMAP_VERSION.mask
    info = IWarpInfo()
    info.opcode = op
    info.name = _OP_NAMES[op]
    info.tagged = bool(tagged)
    info.last = bool(last)
    info.buf = buf
    if stream is not None:
        info.conn = stream.owner()
        info.from_initiator = stream.is_initiator
    n_expert = len(pkt.expert) if pkt.expert else 0
    if dv != 1:
        pkt.set_malformed(f"ddp: version {dv}, expected 1 (RFC 5041)")
    if rv != 1:
        pkt.set_malformed(f"rdmap: version {rv}, expected 1 (RFC 5040)")
    if not (_KNOWN_MASK >> op) & 1:
        pkt.set_malformed(f"rdmap: reserved opcode {op}")
    elif (_TAGGED_MASK >> op) & 1 != tagged:
        pkt.add_expert("error", "protocol", f"{info.name} must use the {'tagged' if _TAGGED_OPS[op] else 'untagged'}"
                       " buffer model", "RFC 5040 / RFC 7306")
    pos = off + hlen
    # typed, so that compiled they stay machine integers (unpack_from gives a tuple of Any)
    texts = wants_info(ctx)
    text = ""
    send = not tagged and (_SEND_MASK >> op) & 1 == 1
    if tagged:
        stag = u32(buf, off + _STAG_AT)
        to = u64(buf, off + _TO_AT)
        info.stag = stag
        info.to = to
        if texts:
            text = f"iWARP RDMAP {info.name} STag=0x{hex8(stag)} TO=0x{hexn(to)}"   # no format spec: see hexfmt
    else:
        w = u32(buf, off + _INV_STAG_AT)
        qn = u32(buf, off + _QN_AT)
        msn = u32(buf, off + _MSN_AT)
        mo = u32(buf, off + _MO_AT)
        info.qn = qn
        info.msn = msn
        info.mo = mo
        if (_INVALIDATE_MASK >> op) & 1:
            info.inv_stag = w
        rdmap._fill = _FILL_RDMAP_UNTAGGED      # the Invalidate STag or reserved word, spelled out on demand
        if texts and not send:
            text = f"iWARP RDMAP {info.name}{' Last' if last else ''} QN={info.qn} MSN={info.msn}"
            if info.mo:
                text += f" MO={info.mo}"
            if info.inv_stag is not None:
                text += f" Inv STag=0x{hex8(w)}"
        want_qn = _QUEUE_BY_OP[op]
        if want_qn >= 0 and qn != want_qn:
            pkt.add_expert("warning", "protocol", f"{info.name} on queue {info.qn}, expected {want_qn}",
                           "RFC 5040")
    if op == 1 and not tagged:
        pos, text = _read_request(pkt, rdmap, info, buf, pos, end, text)
    elif op == 7 and not tagged:
        pos, text = _terminate(pkt, rdmap, info, buf, pos, end, text)
    elif op == 10 and not tagged:
        if end - pos >= ATOMIC_REQUEST.size:
            rdmap.child("rdmap.atomic", ATOMIC_REQUEST, pos)
            info.atomic = ATOMIC_REQUEST.decode(buf, pos)
            text += f" {ATOMIC_OPCODES.get(info.atomic[1], f'op {info.atomic[1]}')} STag=0x{info.atomic[3]:08x}" \
                    f" TO=0x{info.atomic[4]:x}"
            pos += ATOMIC_REQUEST.size
        else:
            pkt.truncated("rdmap atomic request", end - pos, ATOMIC_REQUEST.size)
    elif op == 11 and not tagged:
        if end - pos >= ATOMIC_RESPONSE.size:
            rdmap.child("rdmap.atomic_resp", ATOMIC_RESPONSE, pos)
            info.atomic = ATOMIC_RESPONSE.decode(buf, pos)
            text += f" ReqID={info.atomic[0]} Orig=0x{info.atomic[1]:x}"
            pos += ATOMIC_RESPONSE.size
        else:
            pkt.truncated("rdmap atomic response", end - pos, ATOMIC_RESPONSE.size)
    elif op in (8, 9) and not tagged:
        if end - pos >= IMMEDIATE.size:
            rdmap.child("rdmap.immediate", IMMEDIATE, pos)
            info.immediate = imm = IMMEDIATE.decode(buf, pos)[0]
            text += f" Imm=0x{imm:016x}"
            pos += IMMEDIATE.size
        else:
            pkt.truncated("rdmap immediate data", end - pos, IMMEDIATE.size)
    info.payload_off = pos
    info.payload_end = end
    plen = end - pos
    ddp.plen = plen
    ddp._fill = _FILL_DDP
    if stream is not None:
        info.frames = stream.frames_now
        info.crc_ok = stream.crc_now
    if texts:
        pkt.add_info(_SEND_LINE if send else f"{text} Len={plen}")
    if out is not None:
        out.append(info)
    if pkt.expert and any(e.group == "malformed" for e in pkt.expert[n_expert:]):
        if send and texts:
            _resolve_send_line(pkt.info, _untagged_line(info, plen))
        return info       # this segment is bad: its payload is not handed on
    if send:
        try:
            _send_payload(pkt, buf, pos, end, ctx, info, stream, ddp)
        finally:
            if texts and _send_line_at(pkt.info) >= 0:
                _resolve_send_line(pkt.info, _untagged_line(info, plen))
        return info
    if plen > 0:
        add_data_layer(pkt, buf, pos, end)
    if tagged and (op == 0 or op == 2) and info.stag is not None and info.to is not None:
        rdma_reassembly.iwarp_tagged(pkt, op, info.stag, info.to, buf, pos, end, ctx)
    elif info.read_request is not None:
        rdma_reassembly.iwarp_read_request(pkt, info.read_request, ctx)
    return info


def _read_request(pkt: Packet, rdmap: Layer, info: IWarpInfo, buf: bytes, pos: int, end: int,
                  text: str) -> tuple[int, str]:
    size = READ_REQUEST.size
    if end - pos < size:
        pkt.truncated("rdmap read request", end - pos, size)
        return end, text
    rdmap.child("rdmap.rr", READ_REQUEST, pos)
    rr = info.read_request = READ_REQUEST.decode(buf, pos)
    text += " Sink STag=0x%08x TO=0x%x Src STag=0x%08x TO=0x%x Size=%d" % (rr[0], rr[1], rr[3], rr[4], rr[2])
    return pos + size, text


def _terminate(pkt: Packet, rdmap: Layer, info: IWarpInfo, buf: bytes, pos: int, end: int,
               text: str) -> tuple[int, str]:
    if end - pos < TERMINATE.size:
        pkt.truncated("rdmap terminate", end - pos, TERMINATE.size)
        return end, text
    term = rdmap.child("rdmap.term", TERMINATE, pos)
    layer, etype, code, _m, with_ddp, with_rdma, _rsvd = TERMINATE.decode(buf, pos)
    info.terminate = (layer, etype, code)
    ename = TERM_ETYPES.get(layer, {}).get(etype, f"Reserved error type {etype}")
    cname = TERM_CODES.get((layer, etype), {}).get(code)
    if cname is None:
        cname = f"Error code 0x{code:02x}"
    term.add(TERM_ETYPE_NAME, ename, pos, 1)
    term.add(TERM_ERRCODE_NAME, cname, pos + 1, 1)
    text += f" {TERM_LAYERS.get(layer, f'Layer {layer}')}: {ename}: {cname}"
    pkt.add_expert("error", "protocol", f"Terminate from {TERM_LAYERS.get(layer, f'layer {layer}')}: {ename}: "
                   f"{cname}", "RFC 5040")
    p = pos + TERMINATE.size
    if with_ddp:          # D: DDP Segment Length, then the terminated DDP header
        if end - p < 2:
            pkt.truncated("rdmap terminate ddp segment length", end - p, 2)
            return end, text
        term.add(TERM_DDP_SEG_LEN, (buf[p] << 8) | buf[p + 1], p, 2)
        p += 2
        if end - p >= 1:
            tagged = (buf[p + _TAGGED_FLAG.word] >> _TAGGED_FLAG.shift) & _TAGGED_FLAG.mask
            hl = _TAGGED_HDR if tagged else _UNTAGGED_HDR
            if end - p < hl:
                pkt.truncated("rdmap terminated ddp header", end - p, hl)
                return end, text
            term.add(TERM_DDP_H, bytes(buf[p:p + hl]), p, hl)
            p += hl
    if with_rdma:         # R: the terminated RDMA header (a Read Request's 28 bytes)
        hl = min(READ_REQUEST.size, end - p)
        if hl > 0:
            term.add(TERM_RDMA_H, bytes(buf[p:p + hl]), p, hl)
            p += hl
    term.length = p - pos
    return p, text


def _send_payload(pkt: Packet, buf: bytes, pos: int, end: int, ctx: Any, info: IWarpInfo, stream: DdpStream | None,
                  ddp: Layer) -> None:
    """A Send's payload: whole messages to ``rdmacm.port``; segments of longer ones are kept."""
    port = stream.port() if stream is not None else None
    qn, msn, mo = info.qn, info.msn, info.mo
    assert qn is not None and msn is not None and mo is not None     # read from every untagged header
    if qn != 0:
        if end > pos:
            add_data_layer(pkt, buf, pos, end)
        return
    if info.last and mo == 0 and (stream is None or not stream.untagged.partial
                                  or (qn, msn) not in stream.untagged.partial):
        info.message_len = end - pos
        _upper(pkt, buf, pos, end, ctx, info, port)
        return
    if stream is None:
        add_data_layer(pkt, buf, pos, end)
        return
    whole = stream.untagged.add(qn, msn, mo, buf[pos:end], info.last)
    if whole is None:
        if end > pos:
            add_data_layer(pkt, buf, pos, end)
        if info.last:
            pkt.add_expert("warning", "reassembly", f"Send message MSN={info.msn} has missing segments",
                           "RFC 5041")
        return
    info.message_len = len(whole)
    info.message = whole
    ddp.add(MSG_LEN, len(whole))
    ddp.add(MSG_FRAMES, stream.untagged.last_parts)
    pkt.add_info(f"[reassembled {len(whole)} bytes]")
    _upper(pkt, whole, 0, len(whole), ctx, info, port)


def _upper(pkt: Packet, buf: bytes, pos: int, end: int, ctx: Any, info: IWarpInfo, port: int | None) -> None:
    """A whole Send message to the protocol of the connection's port.  One TCP segment may carry several
    Sends: each keeps the RPC-over-RDMA message it carried, so that the analysis sees them all, and the
    summary line shows them all, ``; ``-separated (as tshark shows several PDUs of one frame)."""
    before = pkt.noted(RPCRDMA)
    shown = list(pkt.info)
    try:
        dissect_with(rdmacm_port, port, pkt, buf, pos, end, ctx)
    finally:
        # the upper layer kept the Send's line: it is made now (in what was shown too, for the test below)
        if _send_line_at(pkt.info) >= 0:
            line = _untagged_line(info, info.payload_end - info.payload_off)
            _resolve_send_line(pkt.info, line)
            _resolve_send_line(shown, line)
    after = pkt.noted(RPCRDMA)
    if after is not before:
        info.rpcrdma = after
    if pkt.info[:len(shown)] == shown:
        return                    # the upper layer added to the line: nothing of it was replaced
    earlier = pkt.noted(UPPER_LINE)
    if earlier is not None and pkt.info:
        # the upper layer starts the line anew for its message: the earlier messages of the segment stay
        pkt.info = earlier[:-1] + [earlier[-1] + ";"] + pkt.info
    pkt.note(UPPER_LINE, list(pkt.info))
