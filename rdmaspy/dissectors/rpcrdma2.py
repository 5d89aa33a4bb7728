"""RPC-over-RDMA Version 2, draft-ietf-nfsv4-rpcrdma-version-two-01 (seeds/004).

The 20-byte prefix (xid, version 2, the credit word split into the sender's
maximum outstanding credits (high 16 bits) and the credits it grants (low 16),
header type, flags RESPONSE / MORE / TPMORE); RDMA2_MSG and RDMA2_NOMSG with
rdma_inv_handle and the three chunk lists (encoded as in v1); RDMA2_ERROR with
every error code and its arm of the union; RDMA2_CONNPROP with the transport
properties 1-6 decoded by their types and unknown ones kept raw; Message
Continuation (payloads of consecutive RDMA2_MSG with MORE set, same xid and
header type, concatenated into one RPC message).  Every MUST of sections 4.2,
6 and 7 that a receiver can check becomes an expert item.

Known defects of the draft, decided as its text says: section 8.3's XDR gives
RDMA2_RVRSDIR_CONT = 1 where section 5.2.5 gives 2 (2 is used here); section
6.2.2.3's RDMA2_F_TPDONE is defined nowhere and means a clear RDMA2_F_TPMORE.
"""
from __future__ import annotations

import struct

from ..budget import Budget, Holder
from ..fields import Field, declaring, protocol, repeatable
from ..packet import Layer, Packet
from ..registry import add_data
from ..session import wants_info
from ..typenames import Any, Final, Sequence, mypyc_attr
from . import rdma_reassembly
from . import rpcrdma as v1
from .rpcrdma import RpcRdmaMessage
from .hexfmt import hex8
from .xdr import Cursor, XdrError, p32, popaque, u32

declaring(__name__)
protocol("rpcrdma2", "RPC over RDMA version 2")
repeatable("rpcrdma2")

HTYPES: Final = {0: "RDMA2_MSG", 1: "RDMA2_NOMSG", 4: "RDMA2_ERROR", 5: "RDMA2_CONNPROP"}
HTYPE_MSG, HTYPE_NOMSG, HTYPE_ERROR, HTYPE_CONNPROP = 0, 1, 4, 5
F_RESPONSE, F_MORE, F_TPMORE = 1, 2, 4
F_DEFINED: Final = F_RESPONSE | F_MORE | F_TPMORE      # the other flag bits are reserved (section 6.2.2)
ERRCODES: Final = {1: "RDMA2_ERR_VERS", 2: "RDMA2_ERR_BAD_XDR", 3: "RDMA2_ERR_BAD_PROPVAL", 4: "RDMA2_ERR_INVAL_HTYPE",
                   5: "RDMA2_ERR_INVAL_CONT", 6: "RDMA2_ERR_READ_CHUNKS", 7: "RDMA2_ERR_WRITE_CHUNKS",
                   8: "RDMA2_ERR_SEGMENTS", 9: "RDMA2_ERR_WRITE_RESOURCE", 10: "RDMA2_ERR_REPLY_RESOURCE",
                   100: "RDMA2_ERR_SYSTEM"}
# The arm of rpcrdma2_error for each code: the names of its uint32 fields (default: void).
ERROR_ARMS: dict[int, tuple[str, ...]] = {1: ("vers_low", "vers_high"), 6: ("max_chunks",), 7: ("max_chunks",),
                                          8: ("max_segments",), 9: ("chunk_index", "length_needed"),
                                          10: ("length_needed",)}
PROPS: Final = {1: "Maximum Send Size", 2: "Receive Buffer Size", 3: "Maximum RDMA Segment Size",
                4: "Maximum RDMA Segment Count", 5: "Reverse-Direction Support", 6: "Host Auth Message"}
PROP_ABBREV: Final = {1: "sbsiz", 2: "rbsiz", 3: "rssiz", 4: "rcsiz", 5: "brs", 6: "hostauth"}
PROP_DEFAULTS: Final = {1: 4096, 2: 4096, 3: 1048576, 4: 16, 5: 0}
PROP_RBSIZ_ID: Final = 2           # Receive Buffer Size: what the peer may Send inline (section 4.2.2)
# Section 5.2.5's values (the XDR of 8.3 says CONT = 1: a defect; the text's 2 is right).
RVRSDIR: Final = {0: "NONE", 1: "SIMPLE", 2: "CONT", 3: "GENL"}

XID: Final = Field("rpcrdma2.xid", 32, "XID", "hex")
VERSION: Final = Field("rpcrdma2.version", 32, "Version")
CREDITS: Final = Field("rpcrdma2.credits", 32, "Credit word", "hex")
MAX_CREDITS: Final = Field("rpcrdma2.credits.max", 16, "Maximum outstanding credits at the sender")
GRANTED: Final = Field("rpcrdma2.credits.granted", 16, "Credits granted")
HTYPE: Final = Field("rpcrdma2.htype", 32, "Header type", names=HTYPES)
FLAGS: Final = Field("rpcrdma2.flags", 32, "Flags", "hex")
FLAG_RESPONSE: Final = Field("rpcrdma2.flags.response", 1, "RDMA2_F_RESPONSE", "bool")
FLAG_MORE: Final = Field("rpcrdma2.flags.more", 1, "RDMA2_F_MORE", "bool")
FLAG_TPMORE: Final = Field("rpcrdma2.flags.tpmore", 1, "RDMA2_F_TPMORE", "bool")
FLAG_RESERVED: Final = Field("rpcrdma2.flags.reserved", 29, "Reserved flags", "hex")
INV_HANDLE: Final = Field("rpcrdma2.inv_handle", 32, "Handle to invalidate", "hex")
ERRCODE: Final = Field("rpcrdma2.errcode", 32, "Error code", names=ERRCODES)
ERR_FIELDS: Final = {name: Field(f"rpcrdma2.error.{name}", 32, label) for name, label in (
    ("vers_low", "Version low"), ("vers_high", "Version high"), ("max_chunks", "Maximum chunks"),
    ("max_segments", "Maximum segments"), ("chunk_index", "Write chunk index"),
    ("length_needed", "Length needed"))}
PROP_COUNT: Final = Field("rpcrdma2.props.count", 32, "Properties")
PROP_WHICH: Final = Field("rpcrdma2.prop.which", 32, "Property", names=PROPS)
PROP_LEN: Final = Field("rpcrdma2.prop.length", 32, "Data length", unit="bytes")
PROP_SBSIZ: Final = Field("rpcrdma2.prop.sbsiz", 32, "Maximum Send Size", unit="bytes")
PROP_RBSIZ: Final = Field("rpcrdma2.prop.rbsiz", 32, "Receive Buffer Size", unit="bytes")
PROP_RSSIZ: Final = Field("rpcrdma2.prop.rssiz", 32, "Maximum RDMA Segment Size", unit="bytes")
PROP_RCSIZ: Final = Field("rpcrdma2.prop.rcsiz", 32, "Maximum RDMA Segment Count")
PROP_BRS: Final = Field("rpcrdma2.prop.brs", 32, "Reverse-Direction Support", names=RVRSDIR)
PROP_HOSTAUTH: Final = Field("rpcrdma2.prop.hostauth", 0, "Host Auth Message", "bytes")
PROP_RAW: Final = Field("rpcrdma2.prop.data", 0, "Property data (not known)", "bytes")
PROP_DEFAULT: Final = Field("rpcrdma2.prop.default", 0, "Default value (empty data)", "bool")
_PROP_FIELDS: Final = {1: PROP_SBSIZ, 2: PROP_RBSIZ, 3: PROP_RSSIZ, 4: PROP_RCSIZ, 5: PROP_BRS}
CONT_FRAMES: Final = Field("rpcrdma2.continuation.frames", 0, "Continued from frames", "str")
CONT_LEN: Final = Field("rpcrdma2.continuation.length", 0, "Reassembled RPC message length", unit="bytes")
CONT_PART: Final = Field("rpcrdma2.continuation.part", 0, "Part of a continued message", "bool")

_PREFIX: Final = struct.Struct(">IIIII")
_CONT_LIMIT: Final = 16 << 20     # a continued message larger than this is not kept


class _Sequence:
    """A Message Continuation in progress on one direction of a connection."""

    __slots__ = ("xid", "htype", "parts", "frames", "size")

    def __init__(self, xid: int, htype: int) -> None:
        self.xid = xid
        self.htype = htype
        self.parts: list[bytes] = []
        self.frames: list[int] = []
        self.size = 0


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _Continuations(Holder):
    """Message Continuations in progress, by direction of a connection; a holder of the memory budget
    (each part's bytes are charged until its message completes or is given up)."""

    __slots__ = ("by_flow", "budget")

    def __init__(self, budget: Budget) -> None:
        self.by_flow: dict[Any, _Sequence] = {}
        self.held = 0
        self.budget = budget
        self.name = "RPC-over-RDMA v2 continued messages"
        budget.join(self)

    def add(self, seq: _Sequence, data: bytes, frame: int) -> None:
        seq.parts.append(data)
        seq.frames.append(frame)
        seq.size += len(data)
        self.budget.charge(self, len(data) + 64)

    def drop(self, key: Any) -> _Sequence:
        seq = self.by_flow.pop(key)
        self.budget.release(self, seq.size + 64 * len(seq.parts))
        return seq

    def shed(self, need: int) -> int:
        start = self.held
        gone = 0
        for key in list(self.by_flow):
            if start - self.held >= need:
                break
            self.drop(key)
            gone += 1
        return gone


def _continuations(ctx: Any) -> _Continuations:
    c: _Continuations | None = ctx.state.get("rpcrdma2.continuations")
    if c is None:
        c = ctx.state["rpcrdma2.continuations"] = _Continuations(ctx.budget)
    return c


# --- parsing ------------------------------------------------------------------------------------------
def parse_v2(buf: bytes, off: int, end: int) -> tuple[RpcRdmaMessage | None, str | None]:
    if end - off < 20:
        return None, f"header prefix: truncated ({end - off} of 20 bytes)"
    # the words read one by one: compiled, machine integers (an unpack gives a tuple of Any)
    credits = u32(buf, off + 8)
    htype = u32(buf, off + 12)
    msg = RpcRdmaMessage(u32(buf, off + 4), u32(buf, off), credits, htype)
    msg.max_credits = credits >> 16
    msg.granted = credits & 0xFFFF
    msg.flags = u32(buf, off + 16)
    if (htype == 0 or htype == 1) and end - off >= 24:
        # RDMA2_MSG and RDMA2_NOMSG, well formed: v1's chunk lists read with a few words (one encoding)
        msg.inv_handle = u32(buf, off + 20)
        p = v1.fast_lists(buf, off + 24, end, msg)
        if p >= 0:
            msg.header_len = p - off
            msg.payload_len = end - p
            return msg, None
        msg.reads.clear()         # what the fast walk took before it stopped: the careful walk says why
        msg.read_chunks.clear()
        msg.writes.clear()
        msg.reply = None
    cur = Cursor(buf, off + 20, end)
    try:
        if htype in (0, 1):
            msg.inv_handle = cur.u32("rdma_inv_handle")
            v1.parse_lists(cur, msg)
        elif htype == 4:
            code = msg.errcode = cur.u32("rdma_err")
            arm = ERROR_ARMS.get(code, ())
            msg.error_args = {name: cur.u32(name) for name in arm}
            if code == 1:
                msg.vers_low = msg.error_args["vers_low"]
                msg.vers_high = msg.error_args["vers_high"]
        elif htype == 5:
            msg.props = _parse_props(cur)
    except XdrError as e:
        msg.header_len = cur.pos - off
        return msg, str(e)
    msg.header_len = cur.pos - off
    msg.payload_len = end - cur.pos
    return msg, None


def _parse_props(cur: Cursor) -> list[tuple[int, Any]]:
    """rpcrdma2_propset: count, then (rdma_which, opaque rdma_data<>) each at least 8 bytes."""
    n = cur.count(8, "property count")
    props: list[tuple[int, Any]] = []
    for _ in range(n):
        at = cur.pos
        which = cur.u32("rdma_which")
        dp, dl = cur.opaque_span("rdma_data")
        props.append((which, (at, dp, dl)))
    return props


def prop_value(buf: bytes, which: int, dp: int, dl: int) -> tuple[Any, str | None]:
    """A property's value by its type (None and the default when the data is empty); error text if bad."""
    if dl == 0:
        return PROP_DEFAULTS.get(which), None
    if which in _PROP_FIELDS:
        if dl < 4:
            return None, f"{PROPS[which]}: {dl} bytes cannot hold a uint32 (RDMA2_ERR_BAD_PROPVAL)"
        v = int.from_bytes(buf[dp:dp + 4], "big")
        if which == 5 and v not in RVRSDIR:
            return v, f"Reverse-Direction Support value {v} is not defined (RDMA2_ERR_BAD_PROPVAL)"
        return v, None
    if which == 6:
        c = Cursor(buf, dp, dp + dl)
        try:
            return c.opaque("rpcrdma2_prop_hostauth"), None
        except XdrError as e:
            return bytes(buf[dp:dp + dl]), f"Host Auth Message: {e} (RDMA2_ERR_BAD_PROPVAL)"
    return bytes(buf[dp:dp + dl]), None


def decode_propsubset(words: list[int], count: int) -> list[int]:
    """rpcrdma2_propsubset: bit N mod 32 of word N div 32 selects element N of a property set
    of ``count`` elements; missing words are zero (section 5.1)."""
    return [i for i in range(count) if i // 32 < len(words) and words[i // 32] >> (i % 32) & 1]


def encode_propsubset(indices: list[int]) -> bytes:
    if not indices:
        return p32(0)
    words = [0] * (max(indices) // 32 + 1)
    for i in indices:
        words[i // 32] |= 1 << (i % 32)
    return p32(len(words), *words)


# --- encoding ----------------------------------------------------------------------------------------
def encode_prop(which: int, value: Any) -> bytes:
    """One rpcrdma2_propval: ints become the uint32 of properties 1-5, bytes for property 6 are wrapped
    as its opaque<>, other bytes are the raw rdma_data; None is the empty (default) data."""
    if value is None:
        data = b""
    elif isinstance(value, int):
        data = p32(value)
    elif which == 6:
        data = popaque(bytes(value))
    else:
        data = bytes(value)
    return p32(which) + popaque(data)


def encode(xid: int, htype: int = 0, *, max_credits: int = 128, granted: int = 128, flags: int = 0,
           inv_handle: int = 0, reads: Sequence = (), writes: Sequence = (), reply: Sequence | None = None,
           payload: bytes = b"", errcode: int = 1, error_args: dict[str, int] | None = None,
           props: Sequence[tuple[int, Any]] = (), version: int = 2, credits: int | None = None) -> bytes:
    """An RPC-over-RDMA v2 message (draft -01).  ``credits`` overrides the max/granted split when given."""
    word = credits if credits is not None else ((max_credits & 0xFFFF) << 16) | (granted & 0xFFFF)
    head = p32(xid, version, word, htype, flags)
    if htype in (0, 1):
        return head + p32(inv_handle) + v1.encode_lists(reads, writes, reply) + payload
    if htype == 4:
        args = error_args or {}
        defaults = {"vers_low": 1, "vers_high": 2}
        return head + p32(errcode, *[args.get(n, defaults.get(n, 0)) for n in ERROR_ARMS.get(errcode, ())]) + payload
    if htype == 5:
        return head + p32(len(props)) + b"".join([encode_prop(w, v) for w, v in props]) + payload
    return head + payload


# --- dissection ---------------------------------------------------------------------------------------
def dissect_v2(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    msg, err = parse_v2(buf, off, end)
    show_v2(pkt, buf, off, end, ctx, msg, err)


def show_v2(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any, msg: RpcRdmaMessage | None,
            err: str | None) -> None:
    pkt.proto = "RPCoRDMA"
    if msg is None:
        pkt.set_info("RPC-over-RDMA v2")
        pkt.set_malformed(f"rpcrdma2: {err} (section 7: a receiver discards it silently)")
        return
    lay = pkt.add_layer("rpcrdma2", None, buf, off, msg.header_len, "RPC over RDMA version 2")
    flags = msg.flags or 0
    htype = msg.proc
    msg.frame = pkt.frame.num
    msg.frames = v1.send_frames(pkt)
    facts: _Facts | None = None
    if (htype == 0 or htype == 1) and err is None:
        # The tree is made only when somebody asks for it (a summary line needs the text alone): the
        # fill spells out what this function and the payload's would have added, in the same order.
        facts = _Facts(msg)
        lay._vals = facts
        lay._fill = _FILL_V2
    else:
        _add_prefix(lay, msg, off)
    if flags & ~7:
        pkt.add_expert("note", "protocol", f"reserved flags 0x{flags & ~7:x} set (the receiver ignores them)",
                       "draft-01 §6.2.2")
    pkt.note(v1.RPCRDMA, msg)
    name = HTYPES.get(htype)
    if name is None:                        # the f-string as .get's default would be made for every message
        name = f"htype {htype}"
    texts = wants_info(ctx)
    text = ""
    if texts:
        text = f"RPC-over-RDMA v2 {name} xid=0x{hex8(msg.xid)} credits={msg.granted}/{msg.max_credits}"
        if flags & 7:
            fl = [n for bit, n in ((F_RESPONSE, "RESPONSE"), (F_MORE, "MORE"), (F_TPMORE, "TPMORE")) if flags & bit]
            text += f" [{' '.join(fl)}]"
    if msg.granted == 0:
        pkt.add_expert("error", "protocol", "granted credits are zero (deadlock)", "draft-01 §4.2.1.1")
    if flags & F_TPMORE and htype != 5:
        pkt.add_expert("error", "protocol", f"RDMA2_F_TPMORE on {name}: the receiver answers "
                       "RDMA2_ERR_INVAL_HTYPE", "draft-01 §6.2.2.3")
    if flags & F_MORE and htype not in (0, 5):
        pkt.add_expert("error", "protocol", f"RDMA2_F_MORE on {name}: the receiver answers RDMA2_ERR_INVAL_CONT",
                       "draft-01 §6.2.2.2")
    _connection_checks(pkt, ctx, msg, end - off)
    p = off + 20
    if htype in (0, 1):
        if facts is None:
            lay.add(INV_HANDLE, msg.inv_handle, p, 4)
            v1.add_lists(lay, msg, p + 4)
        if texts:
            lt = v1.lists_text(msg)
            if lt:
                text += " " + lt
            if msg.inv_handle:
                text += f" inv=0x{msg.inv_handle:x}"
    elif htype == 4 and msg.errcode is not None:
        lay.add(ERRCODE, msg.errcode, p, 4)
        text += f" {ERRCODES.get(msg.errcode, f'error {msg.errcode}')}"
        q = p + 4
        for k, v in (msg.error_args or {}).items():
            lay.add(ERR_FIELDS[k], v, q, 4)
            q += 4
            text += f" {k}={v}"
        if msg.errcode not in ERRCODES:
            pkt.add_expert("warning", "protocol", f"error code {msg.errcode} is not defined: the receiver "
                           "discards the message", "draft-01 §7")
        if not flags & F_RESPONSE:
            pkt.add_expert("warning", "protocol", "RDMA2_ERROR without RDMA2_F_RESPONSE", "draft-01 §6.2.2.1")
    elif htype == 5 and msg.props is not None:
        text += " props:" + _show_props(pkt, lay, buf, msg)
    elif htype not in HTYPES:
        pkt.add_expert("error", "protocol", f"header type {htype} is not defined by draft-01: the receiver "
                       "answers RDMA2_ERR_INVAL_HTYPE and drops the message", "draft-01 §6.1")
    if texts:
        pkt.set_info(text)
    if err is not None:
        msg.malformed = err
        pkt.set_malformed(f"rpcrdma2: {err} (RDMA2_ERR_BAD_XDR)")
        return
    pstart = off + msg.header_len
    if htype == 0:
        assert facts is not None
        _msg_payload(pkt, buf, pstart, end, ctx, msg, facts)
    elif htype == 1:
        if not msg.has_chunks:
            msg.shape = "credit refresh"
            if msg.xid != 0:
                pkt.add_expert("warning", "protocol", "a credit refresh (NOMSG without chunks) has a non-zero XID",
                               "draft-01 §6.3.2")
        if end > pstart:
            pkt.add_expert("warning", "protocol", f"{end - pstart} bytes after an RDMA2_NOMSG header",
                           "draft-01 §6.3.2")
            add_data(pkt, buf, pstart, end)
    elif end > pstart:
        add_data(pkt, buf, pstart, end)
    if htype in (0, 1):
        _check_inv_handle(pkt, msg)
        if flags & F_MORE and msg.has_chunks:
            pkt.add_expert("error", "protocol", "chunks in a message with RDMA2_F_MORE set: the receiver answers "
                           "RDMA2_ERR_INVAL_CONT", "draft-01 §6.2.2.2")
    if msg.is_reply is None:
        msg.is_reply = bool(flags & F_RESPONSE)
    if not msg.shape:
        msg.shape = v1.shape_of(msg, msg.is_reply)
    if msg.shape and facts is None:
        lay.add(v1.SHAPE, msg.shape)
    rdma_reassembly.after_message(pkt, buf, off, end, ctx, msg)
    msg.rpc_span = None       # the buffer is not kept alive by the facts


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _Facts:
    """What the tree of an RDMA2_MSG or RDMA2_NOMSG says past its header, kept for its fill."""

    __slots__ = ("msg", "payload_len", "cont_part", "cont_frames", "cont_len")

    def __init__(self, msg: RpcRdmaMessage) -> None:
        self.msg = msg
        self.payload_len = -1           # RDMA2_MSG: the RPC message's bytes in this one
        self.cont_part = False          # a part of a continued message (RDMA2_F_MORE)
        self.cont_frames = ""           # the last part: the frames of the whole ...
        self.cont_len = 0               # ... and its length


def _add_prefix(lay: Layer, msg: RpcRdmaMessage, off: int) -> None:
    """The header prefix's fields, and the frames of the message's Sends."""
    flags = msg.flags or 0
    lay.add(XID, msg.xid, off, 4)
    lay.add(VERSION, msg.version, off + 4, 4)
    lay.add(CREDITS, msg.credits, off + 8, 4)
    lay.add(MAX_CREDITS, msg.max_credits, off + 8, 2)
    lay.add(GRANTED, msg.granted, off + 10, 2)
    lay.add(HTYPE, msg.proc, off + 12, 4)
    lay.add(FLAGS, flags, off + 16, 4)
    lay.add(FLAG_RESPONSE, bool(flags & F_RESPONSE), off + 19, 1)
    lay.add(FLAG_MORE, bool(flags & F_MORE), off + 19, 1)
    lay.add(FLAG_TPMORE, bool(flags & F_TPMORE), off + 19, 1)
    if flags & ~7:
        lay.add(FLAG_RESERVED, flags & ~7, off + 16, 4)
    if len(msg.frames) > 1:
        lay.add(v1.SEND_FRAMES, ",".join(map(str, msg.frames)))


def _fill_v2(lay: Layer) -> None:
    facts: _Facts = lay._vals
    msg = facts.msg
    off = lay.off
    _add_prefix(lay, msg, off)
    lay.add(INV_HANDLE, msg.inv_handle, off + 20, 4)
    v1.add_lists(lay, msg, off + 24)
    if facts.payload_len >= 0:
        lay.add(v1.PAYLOAD_LEN, facts.payload_len)
    if facts.cont_part:
        lay.add(CONT_PART, True)
    if facts.cont_frames:
        lay.add(CONT_FRAMES, facts.cont_frames)
        lay.add(CONT_LEN, facts.cont_len)
    if msg.shape:
        lay.add(v1.SHAPE, msg.shape)


# Final: compiled, a C static (a function named as a value is otherwise a look-up in the module's dict)
_FILL_V2: Final = _fill_v2


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _FlowState:
    """What one direction of a connection has sent so far, for the checks that span messages."""

    __slots__ = ("messages", "props_done")

    def __init__(self) -> None:
        self.messages = 0
        self.props_done = False


def _connection_checks(pkt: Packet, ctx: Any, msg: RpcRdmaMessage, size: int) -> None:
    flows: dict = ctx.get("rpcrdma2.flows", dict)
    key = v1.flow_key(pkt)
    st = flows.get(key)
    if st is None:
        st = flows[key] = _FlowState()
        if len(flows) > 65536:
            del flows[next(iter(flows))]
    st.messages += 1
    if st.messages == 1 and size > 1024:
        pkt.add_expert("warning", "protocol", f"first message of the connection is {size} bytes: until the "
                       "peer answers it must fit version 1's 1024-byte inline threshold", "draft-01 §4.2.3")
    if msg.proc == 5:
        if st.props_done:
            pkt.add_expert("error", "protocol", "RDMA2_CONNPROP after this peer's final one (RDMA2_F_TPMORE was "
                           "clear): the receiver answers RDMA2_ERR_INVAL_HTYPE", "draft-01 §6.2.2.3")
        if not (msg.flags or 0) & F_TPMORE:
            st.props_done = True


def _check_inv_handle(pkt: Packet, msg: RpcRdmaMessage) -> None:
    h = msg.inv_handle
    if not h or msg.flags and msg.flags & F_RESPONSE:
        return
    handles = {s.handle for s in msg.reads}
    handles.update(s.handle for c in msg.writes for s in c)
    if msg.reply:
        handles.update(s.handle for s in msg.reply)
    if h not in handles:
        pkt.add_expert("warning", "protocol", f"rdma_inv_handle 0x{h:x} matches no handle of the header",
                       "draft-01 §6.2.4")


def _show_props(pkt: Packet, lay, buf: bytes, msg: RpcRdmaMessage) -> str:
    props = msg.props or []
    decoded: list[tuple[int, Any]] = []
    start = props[0][1][0] - 4 if props else lay.off + 20
    lay.add(PROP_COUNT, len(props), start, 4)
    parts = []
    for which, (at, dp, dl) in props:
        sub = lay.child("rpcrdma2.prop", None, at, 8 + ((dl + 3) & ~3),
                        f"Property: {PROPS.get(which, f'unknown property {which}')}")
        sub.add(PROP_WHICH, which, at, 4)
        sub.add(PROP_LEN, dl, at + 4, 4)
        value, problem = prop_value(buf, which, dp, dl)
        decoded.append((which, value))
        if dl == 0:
            sub.add(PROP_DEFAULT, True, at + 4, 4)
        if which in _PROP_FIELDS:
            if value is not None:
                sub.add(_PROP_FIELDS[which], value, dp if dl else -1, 4 if dl else 0)
        elif which == 6:
            sub.add(PROP_HOSTAUTH, value, dp, dl)
        else:
            sub.add(PROP_RAW, value, dp, dl)
        if problem:
            pkt.add_expert("error", "malformed", problem, "draft-01 §5.1")
        abbrev = PROP_ABBREV.get(which, f"prop{which}")
        if which == 5 and isinstance(value, int):
            parts.append(f"{abbrev}={RVRSDIR.get(value, value)}")
        elif which == 6 or which not in PROP_ABBREV:
            parts.append(f"{abbrev}=<{dl} bytes>")
        else:
            parts.append(f"{abbrev}={value}")
    msg.props = decoded
    return " " + " ".join(parts) if parts else " none"


def _msg_payload(pkt: Packet, buf: bytes, pstart: int, end: int, ctx: Any, msg: RpcRdmaMessage,
                 facts: _Facts) -> None:
    """RDMA2_MSG: the RPC message, or a part of it when Message Continuation is used."""
    flags = msg.flags or 0
    conts = _continuations(ctx)
    seqs = conts.by_flow
    key = v1.flow_key(pkt)
    seq: _Sequence | None = seqs.get(key)
    if seq is not None and (seq.xid != msg.xid or seq.htype != msg.proc):
        pkt.add_expert("error", "protocol", f"continuation of XID 0x{seq.xid:08x} interrupted by XID "
                       f"0x{msg.xid:08x}: the receiver drops it and answers RDMA2_ERR_INVAL_CONT",
                       "draft-01 §6.2.2.2")
        conts.drop(key)
        seq = None
    facts.payload_len = end - pstart
    if flags & F_MORE:
        if seq is None:
            seq = seqs[key] = _Sequence(msg.xid, msg.proc)
        conts.add(seq, bytes(buf[pstart:end]), pkt.frame.num)
        msg.continuation = list(seq.frames)
        facts.cont_part = True
        msg.shape = "continued message (part)"
        pkt.add_info(f"[continued, part {len(seq.frames)}]")
        if end > pstart:
            add_data(pkt, buf, pstart, end)
        if seq.size > _CONT_LIMIT:
            pkt.add_expert("warning", "reassembly", f"continued message over {_CONT_LIMIT} bytes: not kept",
                           "draft-01 §6.2.2.2")
            conts.drop(key)
        return
    if seq is not None:
        conts.drop(key)
        seq.parts.append(bytes(buf[pstart:end]))
        seq.frames.append(pkt.frame.num)
        whole = b"".join(seq.parts)
        msg.continuation = seq.frames
        msg.shape = "continued message"
        facts.cont_frames = ",".join(map(str, seq.frames))
        facts.cont_len = len(whole)
        pkt.add_info(f"[continuation of {len(seq.frames)} messages, {len(whole)} bytes]")
        v1.carry_rpc(pkt, whole, 0, len(whole), ctx, msg)
    elif end > pstart:
        v1.carry_rpc(pkt, buf, pstart, end, ctx, msg)
    if msg.rpc is not None and msg.rpc.msgtype in (0, 1) and bool(flags & F_RESPONSE) != (msg.rpc.msgtype == 1):
        pkt.add_expert("warning", "protocol", "RDMA2_F_RESPONSE does not match the RPC message type",
                       "draft-01 §6.2.2.1")


# --- heuristic -------------------------------------------------------------------------------------------
def heuristic(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
    """Version 2 on the wire without the CM exchange: everything must be consistent."""
    if end - off < 24:
        return False
    xid, _vers, credits, htype, flags = _PREFIX.unpack_from(buf, off)
    if htype not in HTYPES or flags & ~7 or not credits & 0xFFFF:
        return False
    msg, err = parse_v2(buf, off, end)
    if err is not None or msg is None:
        return False
    rest = end - off - msg.header_len
    if htype == 0:
        seq = _continuations(ctx).by_flow.get(v1.flow_key(pkt))
        if seq is None or seq.xid != xid:
            p = off + msg.header_len
            if rest < 8 or buf[p:p + 4] != buf[off:off + 4] or buf[p + 4:p + 7] != b"\0\0\0" \
                    or buf[p + 7] != (flags & F_RESPONSE):
                return False
    elif rest:
        return False
    if htype == 4 and msg.errcode not in ERRCODES:
        return False
    show_v2(pkt, buf, off, end, ctx, msg, None)
    return True


v1.VERSIONS.register(2, dissect_v2)
v1.VERSION_HEURISTICS.register(2, heuristic)
