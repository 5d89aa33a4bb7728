"""RPC-over-RDMA Version 1 (RFC 8166; RDMA_MSGP and RDMA_DONE from RFC 5666) and the entry for all versions.

Reached two ways: by the connection's RDMA-CM port (``rdmacm.port`` 20049, the
NFS/RDMA service; also iWARP) or, for captures without the CM exchange, by a
strict heuristic on ``ib.payload`` (version 1 or 2, procedure in range, chunk
lists consistent with the length, RDMA_MSG's XID equal to the RPC message's).
The version word tells v1 from v2 (rpcrdma2.py).  The transport header is
parsed once into an ``RpcRdmaMessage`` (the facts, with no text), which becomes
the layers, the info line and the per-packet note ``rpcrdma`` for analysis; the
RPC message that follows goes to onc_rpc.  Read chunks whose data crosses by
RDMA READ and Reply chunks written by RDMA WRITE are rebuilt into the whole RPC
message by rdma_reassembly when those packets are in the capture.

A well-formed v1 header is read with a few struct unpacks (``_parse_v1_fast``); anything short or
out of range goes to ``parse_v1``, which says what is wrong.  The tree is spelled out from the
facts only when somebody asks for it.
"""
from __future__ import annotations

import struct

from ..conversation import Connection
from ..fields import XDR_UNIT, F, Field, XdrList, XdrStruct, declaring, protocol, repeatable
from ..packet import Layer, Note, Packet
from ..registry import Dissector, add_data, declare_ulp, table
from ..session import wants_info
from ..typenames import Any, Final, Sequence
from . import onc_rpc, rdma_reassembly, rpcrdma_pdata
from .hexfmt import hex8
from .onc_rpc import rpc_flow
from .rpcrdma_message import RpcRdmaMessage, Segment
from .xdr import Cursor, XdrError, p32, pack_list, read_list, u32, u64

declaring(__name__)
protocol("rpcrdma", "RPC over RDMA")
# Sub-trees of the chunk lists
protocol("rpcrdma.read_list", "Read list")
protocol("rpcrdma.read_chunk", "Read chunk")
protocol("rpcrdma.write_chunk", "Write chunk")
protocol("rpcrdma.reply_chunk", "Reply chunk")
repeatable("rpcrdma")             # several FPDUs in a TCP segment; segments of a chunk list

NFS_RDMA_PORT: Final = 20049

RDMA_MSG, RDMA_NOMSG, RDMA_MSGP, RDMA_DONE, RDMA_ERROR = 0, 1, 2, 3, 4
ERR_VERS: Final = 1
PROCS: Final = {0: "RDMA_MSG", 1: "RDMA_NOMSG", 2: "RDMA_MSGP", 3: "RDMA_DONE", 4: "RDMA_ERROR"}
ERRCODES: Final = {1: "ERR_VERS", 2: "ERR_CHUNK"}

XID: Final = Field("rpcrdma.xid", 32, "XID", "hex")
VERSION: Final = Field("rpcrdma.version", 32, "Version")
CREDITS: Final = Field("rpcrdma.credits", 32, "Credits (flow control)")
PROC: Final = Field("rpcrdma.proc", 32, "Message Type", names=PROCS)
ALIGN: Final = Field("rpcrdma.align", 32, "RDMA align", unit="bytes")
THRESH: Final = Field("rpcrdma.thresh", 32, "RDMA threshold", unit="bytes")
READS_COUNT: Final = Field("rpcrdma.reads_count", 0, "Read segments")
READ_CHUNKS: Final = Field("rpcrdma.read_chunks", 0, "Read chunks")
WRITES_COUNT: Final = Field("rpcrdma.writes_count", 0, "Write chunks")
REPLY_COUNT: Final = Field("rpcrdma.reply_count", 0, "Reply chunk present", "bool")

# --- the chunk lists (RFC 8166 section 4.3), declared once: parse, build and tree read these ---------
# struct xdr_rdma_segment { uint32 handle; uint32 length; uint64 offset; };
_RDMA_SEGMENT: Final = [F("handle", 32, "RDMA handle", "hex"), F("length", 32, "RDMA length", unit="bytes"),
                        F("offset", 64, "RDMA offset", "hex")]
# struct xdr_read_chunk { uint32 position; struct xdr_rdma_segment target; };
READ_SEGMENT: Final = XdrStruct("rpcrdma.read_segment", "Read segment", "read segment", "rpcrdma.read.segment",
                                [F("position", 32, "Position in XDR", unit="bytes"), *_RDMA_SEGMENT])
RCHUNK_POS: Final = Field("rpcrdma.read.chunk.position", 0, "Chunk position", unit="bytes")
RCHUNK_SEGS: Final = Field("rpcrdma.read.chunk.segments", 0, "Segments")
RCHUNK_LEN: Final = Field("rpcrdma.read.chunk.length", 0, "Chunk length", unit="bytes")
WCHUNK_SEGS: Final = Field("rpcrdma.write.chunk.segment_count", 32, "Segment count")
WCHUNK_LEN: Final = Field("rpcrdma.write.chunk.length", 0, "Chunk length", unit="bytes")
WRITE_SEGMENT: Final = XdrStruct("rpcrdma.write_segment", "RDMA segment", "segment", "rpcrdma.write.segment",
                                 _RDMA_SEGMENT)
REPLY_SEGS: Final = Field("rpcrdma.reply.segment_count", 32, "Segment count")
REPLY_LEN: Final = Field("rpcrdma.reply.length", 0, "Chunk length", unit="bytes")
REPLY_SEGMENT: Final = XdrStruct("rpcrdma.reply_segment", "RDMA segment", "segment", "rpcrdma.reply.segment",
                                 _RDMA_SEGMENT)
# struct xdr_read_list { struct xdr_read_chunk entry; struct xdr_read_list *next; };
READ_LIST: Final = XdrList("read list", READ_SEGMENT)
# struct xdr_write_chunk { struct xdr_rdma_segment target<>; };  and the Write list of them, chained
WRITE_LIST: Final = XdrList("write list", WRITE_SEGMENT, count=WCHUNK_SEGS, count_what="write chunk segment count")
# struct xdr_write_chunk *rdma_reply;
REPLY_CHUNK: Final = XdrList("reply chunk", REPLY_SEGMENT, chained=False, count=REPLY_SEGS,
                             count_what="reply chunk segment count")
CHUNK_LISTS: Final = (READ_LIST, WRITE_LIST, REPLY_CHUNK)     # in this order after the header
ERRCODE: Final = Field("rpcrdma.errcode", 32, "Error code", names=ERRCODES)
VERS_LOW: Final = Field("rpcrdma.vers_low", 32, "Version low")
VERS_HIGH: Final = Field("rpcrdma.vers_high", 32, "Version high")
SHAPE: Final = Field("rpcrdma.shape", 0, "Message shape", "str")
PAYLOAD_LEN: Final = Field("rpcrdma.payload_len", 0, "RPC payload length", unit="bytes")
HEADER_LEN: Final = Field("rpcrdma.header_len", 0, "Transport header length", unit="bytes")
SEND_FRAMES: Final = Field("rpcrdma.send_frames", 0, "Reassembled from SEND frames", "str")

_HDR: Final = struct.Struct(">IIII")


# The facts this module leaves on a packet: its RPC-over-RDMA message (either version), the whole
# message rebuilt from its chunks (rdma_reassembly notes it where the rebuilding ends), and for NFS,
# while the RPC message is dissected, which items the chunks took out: (Read chunk XDR positions,
# number of Write chunks).
RPCRDMA: Final[Note[RpcRdmaMessage]] = Note("rpcrdma")
REBUILT: Final[Note[RpcRdmaMessage]] = rdma_reassembly.REBUILT
# What NFS needs to place its DDP-eligible items: the positions of the Read chunks (a call) and the length
# of each Write chunk (a reply: the bytes returned in it; an empty or unused chunk leaves its item inline)
CHUNKS: Final[Note[tuple[frozenset[int], tuple[int, ...]]]] = Note("rpcrdma.chunks")


def chunk_lengths(chunks: list[list[Segment]]) -> tuple[int, ...]:
    """The length of each chunk: the sum of its segments' lengths."""
    out: list[int] = []
    for c in chunks:
        n = 0
        for s in c:
            n += s.length
        out.append(n)
    return tuple(out)


# --- parsing (shared by v1 and v2: the chunk lists have one encoding) ------------------------------
def _read_segment(values: tuple[int, ...], at: int) -> Segment:
    """A READ_SEGMENT item: its declared keys are Segment's first four attributes, in order."""
    return Segment(values[0], values[1], values[2], values[3], at)


def _rdma_segment(values: tuple[int, ...], at: int) -> Segment:
    """A WRITE_SEGMENT or REPLY_SEGMENT item: Segment's handle, length and offset, in order."""
    return Segment(None, values[0], values[1], values[2], at)


def group_reads(msg: RpcRdmaMessage) -> None:
    """The read segments grouped by position into Read chunks, in the order each position first comes."""
    reads = msg.reads
    if len(reads) == 1:
        msg.read_chunks = [(reads[0].position, [reads[0]])]
    elif reads:
        groups: dict[int | None, list[Segment]] = {}
        for s in reads:
            groups.setdefault(s.position, []).append(s)
        msg.read_chunks = list(groups.items())


def parse_lists(cur: Cursor, msg: RpcRdmaMessage) -> None:
    """Read list, Write list, Reply chunk (RFC 8166; draft-01 section 6.2.3 for v2): the declared walk."""
    reads: list[list[Segment]] = []
    try:
        read_list(cur, READ_LIST, _read_segment, reads)
    finally:        # a malformed list still shows the segments read before the fault
        msg.reads = [entry[0] for entry in reads]
    group_reads(msg)
    read_list(cur, WRITE_LIST, _rdma_segment, msg.writes)
    reply: list[list[Segment]] = []
    read_list(cur, REPLY_CHUNK, _rdma_segment, reply)
    if reply:
        msg.reply = reply[0]


def parse_v1(buf: bytes, off: int, end: int) -> tuple[RpcRdmaMessage | None, str | None]:
    """The v1 transport header; returns (message, None) or (partial message or None, reason)."""
    if end - off < 16:
        return None, f"transport header: truncated ({end - off} of 16 bytes)"
    xid, vers, credits, proc = _HDR.unpack_from(buf, off)
    msg = RpcRdmaMessage(vers, xid, credits, proc)
    cur = Cursor(buf, off + 16, end)
    try:
        if proc in (0, 1, 2):
            if proc == 2:
                msg.align = cur.u32("rdma_align")
                msg.thresh = cur.u32("rdma_thresh")
            parse_lists(cur, msg)
        elif proc == 4:
            msg.errcode = cur.u32("rdma_err")
            if msg.errcode == 1:
                msg.vers_low = cur.u32("rdma_vers_low")
                msg.vers_high = cur.u32("rdma_vers_high")
            elif msg.errcode != 2:
                msg.header_len = cur.pos - off
                return msg, f"RDMA_ERROR: error code {msg.errcode} is not defined"
        elif proc != 3:
            msg.header_len = 16
            return msg, f"procedure {proc} is not defined"
    except XdrError as e:
        msg.header_len = cur.pos - off
        return msg, str(e)
    msg.header_len = cur.pos - off
    msg.payload_len = end - cur.pos
    return msg, None


# The fused fast path reads the declared items word by word (their layout checked below); the
# discriminators and counts are XDR units.  tests/test_rpc_fast_paths.py holds it to parse_lists.
_EMPTY_SIZE: Final = XDR_UNIT * len(CHUNK_LISTS)
# every list empty: one FALSE discriminator each (compared as bytes: compiled, one native comparison)
_NO_CHUNKS: Final = bytes(_EMPTY_SIZE)
_BARE_V1: Final = _HDR.size + _EMPTY_SIZE                # a v1 header with no chunk: 28 bytes
_READ_ENTRY: Final = XDR_UNIT + READ_SEGMENT.size      # discriminator, then the item
# An RDMA segment, read word by word (compiled, machine integers: an unpack is a generic call making a
# tuple and an int object a word): handle, length, 64-bit offset, in Write and Reply chunks alike; a read
# segment is its position, then the same.
_SEG_SIZE: Final = WRITE_SEGMENT.size
if (WRITE_SEGMENT.struct.format, REPLY_SEGMENT.struct.format, READ_SEGMENT.struct.format) != (">IIQ", ">IIQ", ">IIIQ"):
    raise ImportError("rpcrdma: the segment declarations no longer match the fast path's word reads")


def _fast_segments(buf: bytes, p: int, end: int, out: list[Segment]) -> int:
    """A counted array of RDMA segments appended to ``out``; returns where it ends, or -1."""
    if end - p < XDR_UNIT:
        return -1
    n = u32(buf, p)
    p += XDR_UNIT
    if n * _SEG_SIZE > end - p:
        return -1
    for _ in range(n):
        out.append(Segment(None, u32(buf, p), u32(buf, p + 4), u64(buf, p + 8), p))
        p += _SEG_SIZE
    return p


def fast_lists(buf: bytes, p: int, end: int, msg: RpcRdmaMessage) -> int:
    """The chunk lists read with a few unpacks; returns where they end, or -1 when anything is short or
    out of range (``parse_lists`` then says what)."""
    if end - p >= _EMPTY_SIZE and buf[p:p + _EMPTY_SIZE] == _NO_CHUNKS:     # the common case: no chunk at all
        return p + _EMPTY_SIZE
    reads = msg.reads
    while True:
        if end - p < XDR_UNIT:
            return -1
        d = u32(buf, p)
        if d == 0:
            p += XDR_UNIT
            break
        if d != 1 or end - p < _READ_ENTRY:
            return -1
        q = p + XDR_UNIT
        reads.append(Segment(u32(buf, q), u32(buf, q + 4), u32(buf, q + 8), u64(buf, q + 12), q))
        p += _READ_ENTRY
    if reads:
        group_reads(msg)
    writes = msg.writes
    while True:
        if end - p < XDR_UNIT:
            return -1
        d = u32(buf, p)
        if d == 0:
            p += XDR_UNIT
            break
        if d != 1:
            return -1
        chunk: list[Segment] = []
        p = _fast_segments(buf, p + XDR_UNIT, end, chunk)
        if p < 0:
            return -1
        writes.append(chunk)
    if end - p < XDR_UNIT:
        return -1
    d = u32(buf, p)
    if d == 0:
        return p + XDR_UNIT
    if d != 1:
        return -1
    reply: list[Segment] = []
    p = _fast_segments(buf, p + XDR_UNIT, end, reply)
    msg.reply = reply
    return p


def _parse_v1_fast(buf: bytes, off: int, end: int, xid: int, vers: int, credits: int,
                   proc: int) -> RpcRdmaMessage | None:
    """RDMA_MSG, RDMA_NOMSG or RDMA_MSGP of version 1, well formed: the facts, or None (then parse_v1).
    The caller has unpacked the first four words."""
    if end - off < _BARE_V1:
        return None
    msg = RpcRdmaMessage(vers, xid, credits, proc)
    p = off + 16
    if proc == 2:
        if end - p < 8:
            return None
        msg.align = u32(buf, p)
        msg.thresh = u32(buf, p + 4)
        p += 8
    p = fast_lists(buf, p, end, msg)
    if p < 0:
        return None
    msg.header_len = p - off
    msg.payload_len = end - p
    return msg


# --- encoding (tests and the traffic generator build messages with these) -------------------------
def encode_lists(reads: Sequence = (), writes: Sequence = (), reply: Sequence | None = None) -> bytes:
    """``reads``: (position, handle, length, offset) tuples; ``writes``: lists of (handle, length, offset);
    ``reply``: a list of (handle, length, offset) or None."""
    return (pack_list(READ_LIST, [[r] for r in reads]) + pack_list(WRITE_LIST, writes)
            + pack_list(REPLY_CHUNK, [] if reply is None else [reply]))


def encode_v1(xid: int, proc: int = 0, credits: int = 128, *, reads: Sequence = (), writes: Sequence = (),
              reply: Sequence | None = None, payload: bytes = b"", align: int = 0, thresh: int = 0,
              errcode: int | None = None, vers_low: int = 1, vers_high: int = 1, version: int = 1) -> bytes:
    """An RPC-over-RDMA v1 message: transport header, then ``payload`` (the RPC message or its reduction)."""
    head = p32(xid, version, credits, proc)
    if proc in (0, 1):
        return head + encode_lists(reads, writes, reply) + payload
    if proc == 2:
        return head + p32(align, thresh) + encode_lists(reads, writes, reply) + payload
    if proc == 4:
        code = 1 if errcode is None else errcode
        return head + (p32(code, vers_low, vers_high) if code == 1 else p32(code)) + payload
    return head + payload


# --- layers and text ----------------------------------------------------------------------------------
def add_lists(lay: Layer, msg: RpcRdmaMessage, start: int) -> None:
    """The chunk lists as sub-trees of ``lay``."""
    lay.add(READS_COUNT, len(msg.reads))
    lay.add(WRITES_COUNT, len(msg.writes))
    lay.add(REPLY_COUNT, msg.reply is not None)
    if msg.reads:
        lay.add(READ_CHUNKS, len(msg.read_chunks))
        size = READ_SEGMENT.size
        first = msg.reads[0].at - XDR_UNIT
        rl = lay.child("rpcrdma.read_list", None, first, msg.reads[-1].at + size - first,
                       f"Read list ({len(msg.reads)} segments, {len(msg.read_chunks)} chunks)")
        for pos, segs in msg.read_chunks:
            total = sum(s.length for s in segs)
            ch = rl.child("rpcrdma.read_chunk", None, segs[0].at, size * len(segs),
                          f"Read chunk at position {pos} ({len(segs)} segments, {total} bytes)")
            ch.add(RCHUNK_POS, pos)
            ch.add(RCHUNK_SEGS, len(segs))
            ch.add(RCHUNK_LEN, total)
            for s in segs:
                _add_item(ch, READ_SEGMENT, s)
    for i, chunk in enumerate(msg.writes):
        _segment_chunk(lay, "rpcrdma.write_chunk", f"Write chunk {i}", WRITE_LIST, WCHUNK_LEN, chunk, start)
    if msg.reply is not None:
        _segment_chunk(lay, "rpcrdma.reply_chunk", "Reply chunk", REPLY_CHUNK, REPLY_LEN, msg.reply, start)


def _add_item(parent: Layer, item: XdrStruct, seg: Segment) -> None:
    """One declared item as a sub-tree: each field at its declared place, its value the segment's own."""
    at = seg.at
    sub = parent.child(item.tree, None, at, item.size, item.label)
    for f, key, (rel, size) in zip(item.fields, item.keys, item.spans):
        sub.add(f, getattr(seg, key), at + rel, size)


def _segment_chunk(lay: Layer, proto: str, label: str, lst: XdrList, len_f: Field, segs: list[Segment],
                   start: int) -> None:
    """A Write chunk or the Reply chunk: its segment count, then each segment."""
    at = segs[0].at - XDR_UNIT if segs else start
    total = sum(s.length for s in segs)
    ch = lay.child(proto, None, at, XDR_UNIT + lst.item.size * len(segs),
                   f"{label} ({len(segs)} segments, {total} bytes)")
    if lst.count is not None:
        ch.add(lst.count, len(segs), at, XDR_UNIT)
    ch.add(len_f, total)
    for s in segs:
        _add_item(ch, lst.item, s)


def _segs_text(segs: list[Segment]) -> str:
    n = len(segs)
    if n == 1:
        return f"1 seg {segs[0].length}B"
    total = 0
    for s in segs:
        total += s.length
    return f"{n} segs {total}B"


def lists_text(msg: RpcRdmaMessage) -> str:
    reply = msg.reply
    if not msg.reads and not msg.writes:
        # a Reply chunk alone (a call expecting a long reply, the RDMA_NOMSG reply): one string made
        return f"reply=chunk({_segs_text(reply)})" if reply is not None else ""
    parts = []
    if msg.reads:
        chunks = [f"chunk(pos {pos}, {_segs_text(segs)})" for pos, segs in msg.read_chunks]
        parts.append(f"reads={len(msg.read_chunks)} {' '.join(chunks)}")
    if msg.writes:
        chunks = [f"chunk({_segs_text(c)})" for c in msg.writes]
        parts.append(f"writes={len(msg.writes)} {' '.join(chunks)}")
    if msg.reply is not None:
        parts.append(f"reply=chunk({_segs_text(msg.reply)})")
    return " ".join(parts)


def shape_of(msg: RpcRdmaMessage, is_reply: bool | None) -> str:
    """The message shapes as seeds/002 and seeds/001 name them."""
    proc = msg.proc
    if msg.version == 1 and proc == 3:
        return "pull completion (RDMA_DONE)"
    if proc not in (0, 1, 2):
        return ""
    if proc != 1 and not msg.reads and not msg.writes and not msg.reply:
        return "pure inline"
    pos0 = any(pos == 0 for pos, _ in msg.read_chunks)
    if proc == 1:
        if pos0:
            return "responder-provided Read chunk reply" if is_reply else "Special call (Position Zero Read chunk)"
        if msg.reply is not None:
            # a reply's Reply chunk carries the reply; a call's, with no Read chunk, carries nothing
            return "Special reply (Reply chunk)" if is_reply is not False else "call without payload"
        if not msg.has_chunks:
            return "credit refresh"
        return "external message"
    if not msg.has_chunks:
        return "pure inline"
    if msg.reads:
        return "reduced call (Read list)"
    if is_reply:
        return "reply with Write list" if msg.writes else "reply"
    if msg.writes and msg.reply is not None:
        return "call with Write list and Reply chunk"
    if msg.writes:
        return "call with Write list"
    return "call with Reply chunk"


# --- the connection's state -------------------------------------------------------------------------
def flow_key(pkt: Packet) -> tuple:
    """One direction of one connection."""
    conv: Connection | None = pkt.conv
    if conv is not None:
        return (conv.conn_id, conv.direction(pkt))
    ib = pkt.ib
    return (pkt.src, pkt.dst, ib.destqp if ib is not None else None)


def _is_reply(pkt: Packet, msg: RpcRdmaMessage, ctx: Any) -> bool | None:
    """Whether a message without an RPC payload is a reply: the flag in v2, else a pending call's XID."""
    if msg.flags is not None:
        return bool(msg.flags & 1)
    calls = onc_rpc.calls_of(ctx)
    conv: Connection | None = pkt.conv
    # the key onc_rpc.call_key makes of rpc_flow(pkt), made at once
    key: tuple = ("conn", conv.conn_id, msg.xid) if conv is not None else onc_rpc.call_key(rpc_flow(pkt), msg.xid)
    if key in calls.by_key:
        return True
    if conv is not None:
        return conv.direction(pkt) == "s2c"
    return None


def send_frames(pkt: Packet) -> list[int]:
    frames = pkt.noted(rdma_reassembly.SEND_FRAMES)
    return list(frames) if frames else [pkt.frame.num]


def carry_rpc(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any, msg: RpcRdmaMessage) -> None:
    """Hand the RPC message after the transport header to onc_rpc, telling NFS which items were reduced."""
    chunks = msg.read_chunks or msg.writes
    if chunks:
        positions = frozenset(pos for pos, _ in msg.read_chunks if pos)
        pkt.note(CHUNKS, (positions, chunk_lengths(msg.writes)))
    msg.rpc_span = (buf, off, end)
    conv: Connection | None = pkt.conv
    flow: tuple     # ("conn", id), or the two addresses: not one tuple type (compiled, it is checked)
    if conv is not None:
        msg.rpc_flow = flow = ("conn", conv.conn_id)
    else:
        msg.rpc_flow = flow = rpc_flow(pkt)
    msg.rpc = rpc = onc_rpc.dissect_rpc(pkt, buf, off, end, ctx, flow)
    if chunks:
        pkt.forget(CHUNKS)
    if rpc is not None:
        msg.is_reply = rpc.msgtype == 1
        if rpc.xid != msg.xid:
            pkt.add_expert("warning", "protocol",
                           f"RPC XID 0x{rpc.xid:08x} differs from the transport header's 0x{msg.xid:08x}",
                           "RFC 8166: rdma_xid")


# --- dissection -------------------------------------------------------------------------------------
# Versions other than 1 register here (rpcrdma2.py: 2), as dissector and as heuristic, by version number.
VERSIONS: Final = table("rpcrdma.version", "RPC-over-RDMA versions after 1")
VERSION_HEURISTICS: Final = table("rpcrdma.version.heuristic", "RPC-over-RDMA versions after 1, recognised")


def dissect_rpcrdma(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    """Any version: the dissector of the NFS/RDMA port."""
    if end - off >= 8 and buf[off + 4] == 0 and buf[off + 5] == 0 and buf[off + 6] == 0 and buf[off + 7] == 2:
        v2 = VERSIONS.by_key.get(2)
        if v2 is not None:
            v2.dissect(pkt, buf, off, end, ctx)
            return
    msg = None
    if end - off >= _BARE_V1:
        # the words read one by one: compiled, machine integers (an unpack gives a tuple of Any)
        vers = u32(buf, off + 4)
        proc = u32(buf, off + 12)
        if vers == 1 and proc <= 2:
            xid = u32(buf, off)
            credits = u32(buf, off + 8)
            msg = _parse_v1_fast(buf, off, end, xid, vers, credits, proc)
    if msg is not None:
        show_v1(pkt, buf, off, end, ctx, msg, None)
        return
    msg, err = parse_v1(buf, off, end)
    show_v1(pkt, buf, off, end, ctx, msg, err)


def show_v1(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any, msg: RpcRdmaMessage | None,
            err: str | None) -> None:
    pkt.proto = "RPCoRDMA"
    if msg is None:
        pkt.set_info("RPC-over-RDMA")
        pkt.truncated("rpcrdma", end - off, 16)
        return
    # The tree is made only when somebody asks for it (a summary line needs the text alone).
    lay = pkt.add_layer("rpcrdma", None, buf, off, msg.header_len, "RPC over RDMA")
    lay._vals = (msg, end)      # what the fill needs (a layer without a header keeps no values of its own)
    lay._fill = _FILL_MSG
    msg.frame = num = pkt.frame.num
    frames = pkt.noted(rdma_reassembly.SEND_FRAMES)
    msg.frames = list(frames) if frames else [num]
    pkt.note(RPCRDMA, msg)
    if msg.version != 1:
        pkt.set_info(f"RPC-over-RDMA version {msg.version} xid=0x{msg.xid:08x}")
        pkt.add_expert("warning", "protocol", f"RPC-over-RDMA version {msg.version} is not known "
                       "(a v1 responder answers RDMA_ERROR ERR_VERS)", "RFC 8166: ERR_VERS")
        if end > off + 16:
            add_data(pkt, buf, off + 16, end)
        return
    proc = msg.proc
    name = PROCS.get(proc) or f"proc {proc}"
    chunked = bool(msg.reads or msg.writes or msg.reply)
    if wants_info(ctx):
        text = f"RPC-over-RDMA v1 {name} xid=0x{hex8(msg.xid)} credits={msg.credits}"   # no format spec: see hexfmt
        if proc <= 2:
            if chunked or msg.reply is not None:
                text += " " + lists_text(msg)
        elif proc == 4 and msg.errcode is not None:
            text += f" {ERRCODES.get(msg.errcode, f'error {msg.errcode}')}"
            if msg.vers_high is not None:
                text += f" versions {msg.vers_low}..{msg.vers_high}"
        pkt.info = [text]
    if err is not None:
        msg.malformed = err
        pkt.set_malformed(f"rpcrdma: {err}")
        return
    pstart = off + msg.header_len
    if proc == 0 or proc == 2:
        if proc == 2 and msg.align:
            # RDMA_MSGP: the RPC message starts at the next multiple of rdma_align (RFC 5666).
            rel = pstart - off
            pad = (-rel) % msg.align if msg.align <= 4096 else 0
            pstart = min(end, pstart + pad)
        if end > pstart:
            carry_rpc(pkt, buf, pstart, end, ctx, msg)
    else:
        if proc == 1 and not chunked:
            pkt.add_expert("warning", "protocol", "RDMA_NOMSG with no chunk: nothing conveys the RPC message",
                           "RFC 8166: RDMA_NOMSG")
        if proc in (1, 3, 4) and end > pstart:
            pkt.add_expert("warning", "protocol", f"{end - pstart} bytes after a {name} header",
                           "RFC 8166: RDMA_NOMSG")
            add_data(pkt, buf, pstart, end)
    if msg.is_reply is None:
        msg.is_reply = _is_reply(pkt, msg, ctx)
    msg.shape = shape_of(msg, msg.is_reply)
    if chunked:
        rdma_reassembly.after_message(pkt, buf, off, end, ctx, msg)
    msg.rpc_span = None       # the buffer is not kept alive by the facts


def _fill_msg(lay: Layer) -> None:
    msg, end = lay._vals
    _fill_v1(lay, msg, lay.off, end)


# Final: compiled, a C static (a function named as a value is otherwise a look-up in the module's dict)
_FILL_MSG: Final = _fill_msg


def _fill_v1(lay: Layer, msg: RpcRdmaMessage, off: int, end: int) -> None:
    lay.add(XID, msg.xid, off, 4)
    lay.add(VERSION, msg.version, off + 4, 4)
    lay.add(CREDITS, msg.credits, off + 8, 4)
    lay.add(PROC, msg.proc, off + 12, 4)
    if len(msg.frames) > 1:
        lay.add(SEND_FRAMES, ",".join(map(str, msg.frames)))
    if msg.version != 1:
        return
    p = off + 16
    if msg.proc == 2 and msg.align is not None:
        lay.add(ALIGN, msg.align, p, 4)
        if msg.thresh is not None:
            lay.add(THRESH, msg.thresh, p + 4, 4)
        p += 8
    if msg.proc in (0, 1, 2):
        add_lists(lay, msg, p)
    elif msg.proc == 4 and msg.errcode is not None:
        lay.add(ERRCODE, msg.errcode, p, 4)
        if msg.vers_low is not None:
            lay.add(VERS_LOW, msg.vers_low, p + 4, 4)
            if msg.vers_high is not None:
                lay.add(VERS_HIGH, msg.vers_high, p + 8, 4)
    if msg.malformed is not None:
        return
    lay.add(HEADER_LEN, msg.header_len)
    if msg.proc in (0, 2):
        lay.add(PAYLOAD_LEN, end - off - msg.header_len)
    if msg.shape:
        lay.add(SHAPE, msg.shape)


# --- recognising RPC-over-RDMA without the CM exchange -------------------------------------------------
def heuristic(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
    """Strict: version, procedure, lists that fit the length exactly, XID equal to the RPC message's."""
    n = end - off
    if n < 16:
        return False
    xid = u32(buf, off)
    vers = u32(buf, off + 4)
    credits = u32(buf, off + 8)
    proc = u32(buf, off + 12)
    if vers > 255 or proc > 255:
        return False
    if vers == 2:
        v2 = VERSION_HEURISTICS.by_key.get(2)
        return v2 is not None and v2.dissect(pkt, buf, off, end, ctx)
    if vers != 1:
        return False
    if proc > 4:
        return False
    if proc == 0 and n >= _BARE_V1 + 8 and buf[off + 16:off + 16 + _EMPTY_SIZE] == _NO_CHUNKS:
        # The common case, RDMA_MSG without chunks: the RPC message's XID and type decide.
        if u32(buf, off + _BARE_V1) != xid or u32(buf, off + _BARE_V1 + 4) > 1:
            return False
        msg = RpcRdmaMessage(vers, xid, credits, 0)
        msg.header_len = _BARE_V1
        msg.payload_len = n - _BARE_V1
        show_v1(pkt, buf, off, end, ctx, msg, None)
        return True
    if proc == 3:
        if n != 16:
            return False
        show_v1(pkt, buf, off, end, ctx, *parse_v1(buf, off, end))
        return True
    fast = _parse_v1_fast(buf, off, end, xid, vers, credits, proc) if proc != 4 else None
    if fast is not None:
        msg, err = fast, None
    else:
        parsed, err = parse_v1(buf, off, end)
        if parsed is None:
            return False
        msg = parsed
    if err is not None:
        # A cut RDMA_ERROR is still recognisable by its error code; anything else cut is not taken.
        if proc == 4 and msg.errcode in (1, 2) and n < 28:
            show_v1(pkt, buf, off, end, ctx, msg, err)
            return True
        return False
    rest = n - msg.header_len
    if proc == 4:
        if rest:
            return False
        if msg.errcode == 1 and msg.vers_low > msg.vers_high:   # type: ignore[operator]
            return False
    elif proc == 1:
        if rest or not msg.has_chunks:
            return False
    elif proc == 0:
        # An RPC message must follow: its XID is the transport's, its type call or reply.
        if rest < 8:
            return False
        if u32(buf, off + msg.header_len) != xid or u32(buf, off + msg.header_len + 4) > 1:
            return False
    elif proc == 2:
        if msg.align not in (0, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096):
            return False
    show_v1(pkt, buf, off, end, ctx, msg, None)
    return True


class _OnPort(Dissector):
    """RPC-over-RDMA on the NFS/RDMA port, called directly (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        dissect_rpcrdma(pkt, buf, off, end, ctx)
        return True


class _Recognised(Dissector):
    """RPC-over-RDMA recognised in a SEND, called directly (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        return heuristic(pkt, buf, off, end, ctx)


ON_PORT: Final = _OnPort(dissect_rpcrdma)
table("rdmacm.port", "RC payload of RDMA-CM connections, by port").register(NFS_RDMA_PORT, ON_PORT)
# --decode-as PORT=rpcrdma: its messages, and the RFC 8797 private data of its connections' setup
declare_ulp("rpcrdma", [("rdmacm.port", ON_PORT), ("cm.private_data", rpcrdma_pdata.ON_PORT)])
table("ib.payload").add_heuristic("rpcrdma", _Recognised(heuristic))


# Version 2 builds on this module's message and chunk types; bound last, the import cycle resolves.
