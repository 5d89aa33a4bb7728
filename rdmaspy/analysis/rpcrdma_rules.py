"""The rules of RPC-over-RDMA that a receiver (and so an analyzer) can check from the wire.

RFC 8166 (version 1), RFC 8797 (CM private data: inline thresholds, remote invalidation),
seeds/001 (responder-provided Read chunks, RDMA_DONE) and draft-ietf-nfsv4-rpcrdma-version-two-01
sections 4.2, 6 and 7.  Each rule is declared once with its source; the transactions module calls
``check_message`` for every RPC-over-RDMA message and ``check_reply`` / ``check_invalidate`` once
a reply is matched to its call.  docs/expert.md lists them all.
"""
from __future__ import annotations

from ..dissectors.infiniband import IBInfo
from ..dissectors.rpcrdma import RpcRdmaMessage
from ..dissectors.rpcrdma2 import ERRCODES as V2_ERRCODES
from ..dissectors.rpcrdma2 import F_DEFINED, F_MORE, F_RESPONSE, F_TPMORE, PROP_RBSIZ_ID
from ..dissectors.rpcrdma2 import HTYPES as V2_HTYPES
from ..dissectors.rpcrdma_pdata import DEFAULT_INLINE
from ..packet import Packet
from ..typenames import Final
from .model import Direction
from .rpcrdma_facts import ChunkList
from .rpcrdma_state import ConnState, OpenTransaction, Reporter
from .rules import declare

# --- RFC 8166 ---------------------------------------------------------------------------------------
XID_MISMATCH: Final = declare(
    "rpcrdma.xid_mismatch", "error", "protocol",
    "rdma_xid 0x{rdma_xid:08x} != RPC xid 0x{rpc_xid:08x}",
    "RFC 8166 §4.2.1 (rdma_xid is the XID of the RPC message)")
VERSION_UNKNOWN: Final = declare(
    "rpcrdma.version_unknown", "error", "protocol",
    "RPC-over-RDMA version {version} is not defined (a responder answers ERR_VERS)",
    "RFC 8166 §4.2.1, §4.5.1")
VERSION_CHANGED: Final = declare(
    "rpcrdma.version_changed", "error", "protocol",
    "version {version} {direction} after version {was} on the same connection",
    "draft-01 §4.2.3.3 (the version does not change for the connection's life); RFC 8166 §4.5.1")
RC_ONLY: Final = declare(
    "rpcrdma.not_rc", "error", "protocol",
    "RPC-over-RDMA carried on a {transport} queue pair",
    "RFC 8166 §3.3.1; draft-01 §4.2.1 (RPC-over-RDMA uses Reliable Connected queue pairs)")
MSGP: Final = declare(
    "rpcrdma.msgp", "warning", "protocol",
    "RDMA_MSGP is no longer part of RPC-over-RDMA version 1",
    "RFC 8166 §4.6.1")
DONE_UNEXPECTED: Final = declare(
    "rpcrdma.done_unexpected", "warning", "protocol",
    "RDMA_DONE for XID 0x{rxid:08x}, which has no responder-provided Read chunk waiting (dropped by the responder)",
    "RFC 8166 §4.6.2; seeds/001 (pull completion for an unknown XID is silently dropped)")
DONE_MISSING: Final = declare(
    "rpcrdma.done_missing", "warning", "transaction",
    "no pull completion (RDMA_DONE) for the responder-provided Read chunk of XID 0x{rxid:08x}",
    "seeds/001 (the requester MUST inform the responder of pull completion)")
NOMSG_EMPTY: Final = declare(
    "rpcrdma.nomsg_without_chunk", "error", "protocol",
    "RDMA_NOMSG {role} with no {want}: nothing conveys the RPC message",
    "RFC 8166 §3.5.3 (a Long Call uses a Position Zero Read chunk, a Long Reply the Reply chunk)")
POS_ZERO_MSG: Final = declare(
    "rpcrdma.position_zero_in_msg", "error", "protocol",
    "a Position Zero Read chunk in an RDMA_MSG (it conveys the whole message: only with RDMA_NOMSG)",
    "RFC 8166 §3.5.3")
READ_ORDER: Final = declare(
    "rpcrdma.read_list_order", "error", "protocol",
    "Read list position {position} after position {previous}: Read chunks are listed in XDR stream order",
    "RFC 8166 §3.4.5")
READ_ALIGN: Final = declare(
    "rpcrdma.read_position_unaligned", "error", "protocol",
    "Read chunk position {position} is not a multiple of 4 (XDR alignment)",
    "RFC 8166 §3.4.5")
REPLY_READS: Final = declare(
    "rpcrdma.reply_read_list", "error", "protocol",
    "a reply with a Read list that is not a Position Zero Read chunk in RDMA_NOMSG",
    "RFC 8166 §3.4.5; seeds/001 (responder-provided Read chunks are Position Zero, RDMA_NOMSG)")
RESPONDER_READ: Final = declare(
    "rpcrdma.responder_read_chunk", "note", "protocol",
    "reply conveyed by a responder-provided Read chunk ({length} bytes): not part of RFC 8166",
    "seeds/001 (draft-cel-nfsv4-rpcrdma-reliable-reply)")
WRITE_LIST_SHAPE: Final = declare(
    "rpcrdma.write_list_shape", "error", "chunk",
    "the reply's Write list {what}",
    "RFC 8166 §3.4.6 (the reply returns the call's Write list, segment for segment)")
WRITE_LIST_LONGER: Final = declare(
    "rpcrdma.write_list_length", "error", "chunk",
    "the reply gives {reported} bytes for segment {segment} of Write chunk {chunk}, the call offered {offered}",
    "RFC 8166 §3.4.6")
REPLY_CHUNK_UNOFFERED: Final = declare(
    "rpcrdma.reply_chunk_unoffered", "error", "chunk",
    "the reply uses a Reply chunk {what}",
    "RFC 8166 §3.5.3 (the responder uses only the Reply chunk the call provided)")
INLINE: Final = declare(
    "rpcrdma.inline_threshold", "error", "protocol",
    "a {size}-byte Send {direction}, larger than the {threshold}-byte inline threshold",
    "RFC 8797 §4.2 (negotiated thresholds); RFC 8166 §3.3.2")
INITIAL_SIZE: Final = declare(
    "rpcrdma.initial_size", "error", "protocol",
    f"the first version 2 message is {{size}} bytes, more than the {DEFAULT_INLINE} of version 1",
    "draft-01 §4.2.3")
INVALIDATE_NOT_NEGOTIATED: Final = declare(
    "rpcrdma.invalidate_not_negotiated", "warning", "protocol",
    "reply sent with Send With Invalidate (handle 0x{handle:x}) although {who} cleared the R bit",
    "RFC 8797 §4.1 (when either peer clears R, the responder uses only RDMA Send for replies)")
INVALIDATE_FOREIGN: Final = declare(
    "rpcrdma.invalidate_foreign", "error", "protocol",
    "Send With Invalidate invalidates handle 0x{handle:x}, which the call of XID 0x{rxid:08x} did not advertise",
    "RFC 8797 §4.1 (each Send With Invalidate invalidates an STag of its XID only)")
ERR_VERS_RANGE: Final = declare(
    "rpcrdma.err_vers_range", "error", "protocol",
    "ERR_VERS reports versions {low}..{high}: low above high",
    "RFC 8166 §4.5.1; draft-01 §7.1.1")
VERSION_AFTER_ERR_VERS: Final = declare(
    "rpcrdma.version_after_err_vers", "error", "protocol",
    "version {version} sent after the responder said it supports {low}..{high}",
    "draft-01 §7.1.1 (a Requester MUST NOT send a version the Responder does not support)")

# --- draft-01 (version 2) ---------------------------------------------------------------------------
V2_RESPONSE: Final = declare(
    "rpcrdma2.response_flag", "error", "protocol",
    "RDMA2_F_RESPONSE is {flag} on a {what}",
    "draft-01 §6.2.2.1")
V2_MORE_HTYPE: Final = declare(
    "rpcrdma2.more_htype", "error", "protocol",
    "RDMA2_F_MORE on header type {htype} (only RDMA2_MSG and RDMA2_CONNPROP continue): RDMA2_ERR_INVAL_CONT",
    "draft-01 §6.2.2.2")
V2_MORE_CHUNKS: Final = declare(
    "rpcrdma2.more_with_chunks", "error", "protocol",
    "RDMA2_F_MORE set with non-empty chunk lists (chunks go in the final message): RDMA2_ERR_INVAL_CONT",
    "draft-01 §6.2.2.2")
V2_CONT_BROKEN: Final = declare(
    "rpcrdma2.continuation_broken", "error", "protocol",
    "continuation of XID 0x{was_xid:08x} (header type {was_htype}) followed by XID 0x{rxid:08x} (header type "
    "{htype}): RDMA2_ERR_INVAL_CONT",
    "draft-01 §6.2.2.2 (a sequence keeps one rdma_xid and rdma_htype)")
V2_TPMORE: Final = declare(
    "rpcrdma2.tpmore_htype", "error", "protocol",
    "RDMA2_F_TPMORE on header type {htype}: RDMA2_ERR_INVAL_HTYPE",
    "draft-01 §6.2.2.3")
V2_CONNPROP_AFTER: Final = declare(
    "rpcrdma2.connprop_after_last", "error", "protocol",
    "RDMA2_CONNPROP after this peer's last one (TPMORE was clear): RDMA2_ERR_INVAL_HTYPE",
    "draft-01 §6.2.2.3")
V2_RESERVED: Final = declare(
    "rpcrdma2.reserved_flags", "warning", "protocol",
    "reserved flags 0x{flags:x} set (a sender sets them to zero)",
    "draft-01 §6.2.2")
V2_HTYPE: Final = declare(
    "rpcrdma2.unknown_htype", "error", "protocol",
    "header type {htype} is not defined: RDMA2_ERR_INVAL_HTYPE",
    "draft-01 §6.1")
V2_HTYPE_AGAIN: Final = declare(
    "rpcrdma2.htype_after_inval", "error", "protocol",
    "header type {htype} sent again after RDMA2_ERR_INVAL_HTYPE",
    "draft-01 §7.1.2")
V2_REFRESH_XID: Final = declare(
    "rpcrdma2.refresh_xid", "error", "protocol",
    "credit refresh (RDMA2_NOMSG without chunks) with XID 0x{rxid:08x}: the XID is zero",
    "draft-01 §6.3.2")
V2_INV_HANDLE: Final = declare(
    "rpcrdma2.inv_handle_unknown", "warning", "protocol",
    "rdma_inv_handle 0x{handle:x} is none of the call's handles",
    "draft-01 §6.2.4")
V2_INV_MISMATCH: Final = declare(
    "rpcrdma2.invalidate_handle", "error", "protocol",
    "Send With Invalidate invalidates 0x{handle:x}, the call's rdma_inv_handle is 0x{inv_handle:x}",
    "draft-01 §6.2.4 (the Responder uses the call's rdma_inv_handle)")
V2_ERRCODE: Final = declare(
    "rpcrdma2.unknown_error", "warning", "protocol",
    "RDMA2_ERROR code {code} is not defined (the receiver discards it)",
    "draft-01 §7")
V2_ERROR_VERSION: Final = declare(
    "rpcrdma2.error_version", "error", "protocol",
    "RDMA2_ERROR in version {version} answers a version {call_version} message",
    "draft-01 §7 (rdma_vers is the ingress request's)")
V2_WRITE_INDEX: Final = declare(
    "rpcrdma2.write_resource_index", "error", "protocol",
    "RDMA2_ERR_WRITE_RESOURCE names Write chunk {index}, the call has {chunks}",
    "draft-01 §7.3.4 (the index points at a Write chunk of the call, or is zero)")

def message_size(msg: RpcRdmaMessage) -> int:
    return msg.header_len + msg.payload_len


def check_message(an: Reporter, st: ConnState, pkt: Packet, msg: RpcRdmaMessage, d: Direction, is_reply: bool) -> None:
    """Rules a single message can break, whatever its transaction."""
    frame = pkt.frame.num
    ts = pkt.frame.ts
    cid = st.conn_id
    xid = msg.xid
    v = msg.version
    ib: IBInfo | None = pkt.ib        # typed (Packet.ib is Any): its attributes read directly
    if ib is not None and ib.plan.transport != "RC":
        an.report(RC_ONLY, frame, ts, conn=cid, xid=xid, pkt=pkt, transport=ib.plan.transport)
    if v not in (1, 2):
        an.report(VERSION_UNKNOWN, frame, ts, conn=cid, xid=xid, pkt=pkt, version=v)
    # Version changes per direction; an ERR_VERS answer and the requester's switch into its range are allowed.
    err_vers = (v == 1 and msg.proc == 4 and msg.errcode == 1) or (v == 2 and msg.proc == 4 and msg.errcode == 1)
    if not err_vers:
        was = st.version.get(d)
        if was is not None and was != v:
            rng = st.err_vers
            if rng is not None and rng[0] <= v <= rng[1]:
                pass
            else:
                an.report(VERSION_CHANGED, frame, ts, conn=cid, xid=xid, pkt=pkt, version=v, was=was,
                    direction=_dir_text(d))
        st.version[d] = v
        rng = st.err_vers
        if rng is not None and not is_reply and not rng[0] <= v <= rng[1]:
            an.report(VERSION_AFTER_ERR_VERS, frame, ts, conn=cid, xid=xid, pkt=pkt, version=v, low=rng[0], high=rng[1])
    else:
        low, high = msg.vers_low, msg.vers_high
        if low is not None and high is not None:
            if low > high:
                an.report(ERR_VERS_RANGE, frame, ts, conn=cid, xid=xid, pkt=pkt, low=low, high=high)
            else:
                st.err_vers = (low, high)
    if msg.malformed is not None:
        return
    size = message_size(msg)
    thr = st.threshold(d, v)
    if thr is not None and size > thr:
        an.report(INLINE, frame, ts, conn=cid, xid=xid, pkt=pkt, size=size, threshold=thr, direction=_dir_text(d))
    if v == 2 and not st.v2_first_seen:
        st.v2_first_seen = True
        if size > DEFAULT_INLINE and d is Direction.C2S:
            an.report(INITIAL_SIZE, frame, ts, conn=cid, xid=xid, pkt=pkt, size=size)
    if v == 1:
        _check_v1(an, st, pkt, msg, d, is_reply)
    elif v == 2:
        _check_v2(an, st, pkt, msg, d, is_reply)


def _dir_text(d: Direction) -> str:
    return "client to server" if d is Direction.C2S else "server to client"


def _check_lists(an: Reporter, st: ConnState, pkt: Packet, msg: RpcRdmaMessage, is_reply: bool, nomsg: bool) -> None:
    frame, ts, cid, xid = pkt.frame.num, pkt.frame.ts, st.conn_id, msg.xid
    prev = None
    seen: set[int] = set()
    for s in msg.reads:
        pos = s.position or 0             # a Read list segment always has its position
        if prev is not None and pos != prev and (pos < prev or pos in seen):
            an.report(READ_ORDER, frame, ts, conn=cid, xid=xid, pkt=pkt, position=pos, previous=prev)
        if pos % 4:
            an.report(READ_ALIGN, frame, ts, conn=cid, xid=xid, pkt=pkt, position=pos)
        seen.add(pos)
        prev = pos
    pos0 = 0 in seen
    if pos0 and not nomsg:
        an.report(POS_ZERO_MSG, frame, ts, conn=cid, xid=xid, pkt=pkt)
    if is_reply and msg.reads:
        if not (nomsg and pos0 and len(seen) == 1):
            an.report(REPLY_READS, frame, ts, conn=cid, xid=xid, pkt=pkt)
        else:
            an.report(RESPONDER_READ, frame, ts, conn=cid, xid=xid, pkt=pkt, length=sum(s.length for s in msg.reads))
    if nomsg:
        if is_reply and msg.reply is None and not pos0:
            an.report(NOMSG_EMPTY, frame, ts, conn=cid, xid=xid, pkt=pkt, role="reply",
                want="Reply chunk (nor Position Zero Read chunk)")
        elif not is_reply and not pos0 and msg.version == 1:
            an.report(NOMSG_EMPTY, frame, ts, conn=cid, xid=xid, pkt=pkt, role="call", want="Position Zero Read chunk")


def _check_v1(an: Reporter, st: ConnState, pkt: Packet, msg: RpcRdmaMessage, d: Direction, is_reply: bool) -> None:
    frame, ts, cid, xid = pkt.frame.num, pkt.frame.ts, st.conn_id, msg.xid
    proc = msg.proc
    if proc == 2:
        an.report(MSGP, frame, ts, conn=cid, xid=xid, pkt=pkt)
    if proc in (0, 1, 2):
        _check_lists(an, st, pkt, msg, is_reply, proc == 1)
    _check_xids(an, st, pkt, msg)


def _check_xids(an: Reporter, st: ConnState, pkt: Packet, msg: RpcRdmaMessage) -> None:
    rpc = msg.rpc
    if rpc is not None and rpc.xid != msg.xid:
        an.report(XID_MISMATCH, pkt.frame.num, pkt.frame.ts, conn=st.conn_id, xid=msg.xid, pkt=pkt,
                  rdma_xid=msg.xid, rpc_xid=rpc.xid)


def check_rebuilt(an: Reporter, st: ConnState, pkt: Packet, msg: RpcRdmaMessage) -> None:
    """A call rebuilt from its Read chunks, or a reply from its Reply chunk: the RPC XID is checked there."""
    rpc = msg.rebuilt_rpc
    if rpc is not None and rpc.xid != msg.xid:
        an.report(XID_MISMATCH, pkt.frame.num, pkt.frame.ts, conn=st.conn_id, xid=msg.xid, pkt=pkt,
                  rdma_xid=msg.xid, rpc_xid=rpc.xid)


def _check_v2(an: Reporter, st: ConnState, pkt: Packet, msg: RpcRdmaMessage, d: Direction, is_reply: bool) -> None:
    frame, ts, cid, xid = pkt.frame.num, pkt.frame.ts, st.conn_id, msg.xid
    htype = msg.proc
    flags = msg.flags or 0
    if flags & ~F_DEFINED:
        an.report(V2_RESERVED, frame, ts, conn=cid, xid=xid, pkt=pkt, flags=flags & ~F_DEFINED)
    if htype not in V2_HTYPES:
        an.report(V2_HTYPE, frame, ts, conn=cid, xid=xid, pkt=pkt, htype=htype)
    if htype in st.bad_htypes.get(d, ()):
        an.report(V2_HTYPE_AGAIN, frame, ts, conn=cid, xid=xid, pkt=pkt, htype=htype)
    if flags & F_TPMORE and htype != 5:
        an.report(V2_TPMORE, frame, ts, conn=cid, xid=xid, pkt=pkt, htype=V2_HTYPES.get(htype, htype))
    if htype == 5:
        if st.connprop_done.get(d):
            an.report(V2_CONNPROP_AFTER, frame, ts, conn=cid, xid=xid, pkt=pkt)
        if not flags & F_TPMORE:
            st.connprop_done[d] = True
        props = dict(msg.props or ())
        rbsiz = props.get(PROP_RBSIZ_ID)
        if isinstance(rbsiz, int):
            # The sender's Receive Buffer Size bounds what its peer may Send to it.
            st.v2_recv[d] = rbsiz
    more = bool(flags & F_MORE)
    if more and htype not in (0, 5):
        an.report(V2_MORE_HTYPE, frame, ts, conn=cid, xid=xid, pkt=pkt, htype=V2_HTYPES.get(htype, htype))
    if more and msg.has_chunks:
        an.report(V2_MORE_CHUNKS, frame, ts, conn=cid, xid=xid, pkt=pkt)
    was = st.continuing.get(d)
    if was is not None and (was[0] != xid or was[1] != htype):
        an.report(V2_CONT_BROKEN, frame, ts, conn=cid, xid=xid, pkt=pkt, was_xid=was[0], was_htype=was[1], htype=htype,
            rxid=xid)
        st.discard[d] = was[0]
        if len(st.broken) > 1024:
            st.broken.clear()
        st.broken.add(was[0])
    if more and htype in (0, 5):
        st.continuing[d] = (xid, htype)
    else:
        st.continuing.pop(d, None)
    if htype == 4:
        if not flags & F_RESPONSE:
            an.report(V2_RESPONSE, frame, ts, conn=cid, xid=xid, pkt=pkt, flag="clear", what="RDMA2_ERROR")
        if msg.errcode is not None and msg.errcode not in V2_ERRCODES:
            an.report(V2_ERRCODE, frame, ts, conn=cid, xid=xid, pkt=pkt, code=msg.errcode)
        if msg.errcode == 4:
            # The responder refused a header type: remember which one its peer sent with this XID.
            bad = st.sent_htypes.get((d.other, xid))
            if bad is not None:
                st.bad_htypes.setdefault(d.other, set()).add(bad)
    if htype in (0, 1):
        rpc = msg.rpc
        if rpc is not None and rpc.msgtype in (0, 1) and bool(flags & F_RESPONSE) != (rpc.msgtype == 1):
            an.report(V2_RESPONSE, frame, ts, conn=cid, xid=xid, pkt=pkt, flag="set" if flags & F_RESPONSE else "clear",
                what="call" if rpc.msgtype == 0 else "reply")
        if htype == 1 and not msg.has_chunks:
            if xid != 0:
                an.report(V2_REFRESH_XID, frame, ts, conn=cid, xid=xid, pkt=pkt, rxid=xid)
        elif not more:
            _check_lists(an, st, pkt, msg, is_reply, htype == 1)
        if msg.inv_handle and not is_reply and not _advertised(msg, msg.inv_handle):
            an.report(V2_INV_HANDLE, frame, ts, conn=cid, xid=xid, pkt=pkt, handle=msg.inv_handle)
        _check_xids(an, st, pkt, msg)
    st.sent_htypes[(d, xid)] = htype
    if len(st.sent_htypes) > 4096:
        del st.sent_htypes[next(iter(st.sent_htypes))]


def note_versions(st: ConnState, msg: RpcRdmaMessage, d: Direction) -> None:
    """A message dropped unchecked still tells which version its direction speaks."""
    st.version[d] = msg.version


def check_reply(an: Reporter, st: ConnState, pkt: Packet, msg: RpcRdmaMessage, txn: OpenTransaction) -> None:
    """A reply against its call: the Write list and Reply chunk it returns."""
    frame, ts, cid, xid = pkt.frame.num, pkt.frame.ts, st.conn_id, msg.xid
    call = txn.call_msg
    if msg.proc == 4:
        if msg.version == 2 and call.version != msg.version and msg.errcode != 1:
            an.report(V2_ERROR_VERSION, frame, ts, conn=cid, xid=xid, pkt=pkt, version=msg.version,
                call_version=call.version)
        if msg.version == 2 and msg.errcode == 9 and msg.error_args:
            idx = msg.error_args.get("chunk_index", 0)
            if idx > len(call.writes):
                an.report(V2_WRITE_INDEX, frame, ts, conn=cid, xid=xid, pkt=pkt, index=idx, chunks=len(call.writes))
        return
    if msg.proc not in (0, 1, 2):
        return
    if msg.writes:
        if len(msg.writes) != len(call.writes):
            an.report(WRITE_LIST_SHAPE, frame, ts, conn=cid, xid=xid, pkt=pkt,
                what=f"has {len(msg.writes)} chunks, the call offered {len(call.writes)}")
        for ci, (got, off) in enumerate(zip(msg.writes, call.writes)):
            if len(got) != len(off):
                an.report(WRITE_LIST_SHAPE, frame, ts, conn=cid, xid=xid, pkt=pkt,
                    what=f"chunk {ci} has {len(got)} segments, the call offered {len(off)}")
                continue
            for si, (g, o) in enumerate(zip(got, off)):
                if g.handle != o.handle:
                    an.report(WRITE_LIST_SHAPE, frame, ts, conn=cid, xid=xid, pkt=pkt,
                        what=f"chunk {ci} segment {si} has handle 0x{g.handle:x}, the call offered 0x{o.handle:x}")
                elif g.length > o.length and not _overrun(txn, ci, si):   # an overrun is reported as such
                    an.report(WRITE_LIST_LONGER, frame, ts, conn=cid, xid=xid, pkt=pkt, chunk=ci, segment=si,
                        reported=g.length, offered=o.length)
    if msg.reply is not None and msg.reply:
        offered = call.reply
        if offered is None:
            an.report(REPLY_CHUNK_UNOFFERED, frame, ts, conn=cid, xid=xid, pkt=pkt, what="the call did not provide")
        elif not any(s.overrun for s in txn.txn.segments if s.kind is ChunkList.REPLY):   # reported as such
            total = sum(s.length for s in msg.reply)
            room = sum(s.length for s in offered)
            if total > room:
                an.report(REPLY_CHUNK_UNOFFERED, frame, ts, conn=cid, xid=xid, pkt=pkt,
                    what=f"of {total} bytes, the call provided {room}")


def _overrun(txn: OpenTransaction, chunk: int, index: int) -> bool:
    seg = txn.txn.segment_at(ChunkList.WRITE, chunk, index)
    return seg is not None and seg.overrun > 0


def check_invalidate(an: Reporter, st: ConnState, pkt: Packet, msg: RpcRdmaMessage, txn: OpenTransaction,
                     handle: int) -> None:
    """A reply sent with Send With Invalidate."""
    frame, ts, cid, xid = pkt.frame.num, pkt.frame.ts, st.conn_id, msg.xid
    conn = st.conn
    if msg.version == 1 and conn is not None and conn.setup_known:
        pc, ps = conn.pdata_client, conn.pdata_server
        who = []
        if pc is None or not pc.valid or not pc.remote_invalidate:
            who.append("the client")
        if ps is None or not ps.valid or not ps.remote_invalidate:
            who.append("the server")
        if who:
            # (its arguments as a dict, positionally: this one is frequent, one a reply on some setups)
            an.report_args(INVALIDATE_NOT_NEGOTIATED, frame, ts, cid, xid, pkt,
                           {"handle": handle, "who": " and ".join(who)})
    call = txn.call_msg
    if msg.version == 2:
        if call.inv_handle != handle:
            an.report_args(V2_INV_MISMATCH, frame, ts, cid, xid, pkt,
                           {"handle": handle, "inv_handle": call.inv_handle or 0})
        return
    if not _advertised(call, handle):
        an.report_args(INVALIDATE_FOREIGN, frame, ts, cid, xid, pkt, {"handle": handle, "rxid": xid})


def _advertised(msg: RpcRdmaMessage, handle: int) -> bool:
    """Whether a segment of the message's chunks has ``handle`` (loops, not a set grown by generators:
    compiled, each generator a generic call)."""
    for s in msg.reads:
        if s.handle == handle:
            return True
    for chunk in msg.writes:
        for s in chunk:
            if s.handle == handle:
                return True
    if msg.reply is not None:
        for s in msg.reply:
            if s.handle == handle:
                return True
    return False
