"""The kernel events rdmaspy reads, declared once: event name -> side, stage, how it is tied to an RPC,
and the fields it carries; and what each field means.

Formats are those of Linux 6.1 (include/trace/events/rpcrdma.h, sunrpc.h, fs/nfs/nfs4trace.h and
nfstrace.h, fs/nfsd/trace.h, drivers/infiniband/core/cma_trace.h and cm_trace.h), as ``trace-cmd report``
prints them from TP_printk and with ``-R`` from the raw fields.  The parser (``parse``) takes every
``name=value`` it finds, under the names of ``FIELDS`` (``ALIASES`` maps the names of other kernels and of
the raw form to them), so an event that gains or loses a field still parses; an event not declared here
is counted by name and skipped.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final


class Side(StrEnum):
    """Whose event: the RPC client's (xprtrdma, sunrpc client, nfs), the server's (svcrdma, nfsd) or the
    connection manager's (rdma_cma, ib_cma: either peer)."""
    CLIENT = "client"
    SERVER = "server"
    CM = "cm"


class Stage(StrEnum):
    """What the event marks in an RPC's life; the timeline names it by this."""
    CALL = "call"                 # the RPC layer starts a call (rpc_request, xprt_reserve)
    MARSHAL = "marshal"           # the RPC-over-RDMA header is built
    REGISTER = "register"         # memory registered for a chunk (MR map, FastReg, the chunk's segment)
    POST = "post"                 # a Send or an RDMA READ/WRITE is posted to the queue pair
    COMPLETE = "complete"         # a posted work request completed
    RECEIVE = "receive"           # a receive completed (a message arrived)
    DECODE = "decode"             # the received message was parsed (its chunk lists, the reply's segments)
    IO = "io"                     # the server's file I/O (nfsd)
    REPLY = "reply"               # the client handled the reply (xprtrdma_reply, the RPC's statistics)
    INVALIDATE = "invalidate"     # a registration ended (local or remote invalidation, unmap)
    CREDITS = "credits"           # the host's credit and congestion window accounting
    RETRANSMIT = "retransmit"     # the RPC layer sent a call again
    CONNECT = "connect"           # connection set-up and tear-down
    ERROR = "error"               # an error the host traced
    NFS = "nfs"                   # the NFS layer (a file's read or write, a session's sequence)


class Join(StrEnum):
    """How an event is tied to an RPC XID inside its own trace (``resolve``)."""
    XID = "xid"                   # it carries the XID
    TASK = "task"                 # its RPC task's XID (xprt_reserve, xprtrdma_marshal ... name it)
    THREAD = "thread"             # the request the server thread is working on (its last decode_rqst)
    RECV_CONTEXT = "recv_context"  # a receive context (cq_id, cid) the decode_rqst of which names the XID
    SEND_CONTEXT = "send_context"  # the completion of a context posted for an XID (cq_id, cid)
    MR = "mr"                     # the memory registration (mr_id) of an XID's chunk
    HANDLE = "handle"             # the R_Key of an XID's chunk
    NEXT_ON_THREAD = "next_on_thread"  # the next event with an XID on the same thread (a receive, then its reply)
    NONE = "none"                 # the connection's, not an RPC's


@dataclass(frozen=True, slots=True)
class EventDecl:
    name: str
    side: Side
    stage: Stage
    join: Join
    fields: tuple[str, ...]       # the fields it carries (canonical names)
    sets_thread: bool = False     # names the request its (server) thread works on from now
    posts: bool = False           # posts a context (cq_id, cid) whose completion belongs to its XID
    resolves_context: bool = False  # names the XID of a receive context (cq_id, cid)
    cid_is_mr: bool = False       # its completion id is an MR's id (FastReg and LocalInv completions)


# What each field means (the canonical names; docs/hosttrace.md lists them).
FIELDS: Final[dict[str, str]] = {
    "xid": "RPC transaction id",
    "task": "RPC task id (sunrpc tk_pid)",
    "client": "RPC client id",
    "snd_task": "the task holding the transport's send lock",
    "handle": "R_Key of the registered memory (the segment's handle)",
    "length": "bytes of the segment (or of the I/O)",
    "offset": "address of the segment (for a Linux client, the XID in its top 32 bits), or the file offset",
    "pos": "XDR position of a Read chunk",
    "nents": "scatter-gather entries mapped",
    "nsegs": "segments the chunk has",
    "mr_id": "memory region id",
    "dir": "DMA direction",
    "cq_id": "completion queue id",
    "cid": "completion id (the context posted)",
    "status": "work completion status",
    "vendor_err": "vendor error of a failed completion",
    "received": "bytes received",
    "num_sge": "scatter-gather entries posted",
    "signaled": "whether the Send is signaled",
    "credits": "credit value (the client's: the grant as it took it, clamped; the server's: what the call asked)",
    "hdrlen": "length of the RPC-over-RDMA header",
    "vers": "RPC-over-RDMA version",
    "proc": "RPC-over-RDMA procedure",
    "segno": "segment number in its chunk",
    "inv_rkey": "R_Key invalidated by Send With Invalidate (0: none)",
    "sqecount": "send queue entries the RDMA READs or WRITEs take",
    "totalbytes": "bytes the RDMA READs moved",
    "latency_us": "microseconds from post to completion",
    "backlog": "microseconds the call waited before it was sent",
    "rtt": "microseconds from send to reply",
    "execute": "microseconds of the whole call",
    "seqno": "transmission sequence number",
    "ntrans": "transmissions of the call so far",
    "timeout": "retransmit timeout",
    "cong": "congestion: requests in flight, in units of 256",
    "cwnd": "congestion window, in units of 256 (credits x 256)",
    "wait": "the task waits for the window",
    "count": "receives posted now",
    "active": "receives posted in all",
    "qp_num": "queue pair number",
    "cm_id": "RDMA-CM id",
    "local_id": "CM local communication id",
    "remote_id": "CM remote communication id",
    "rc": "return code",
    "connect_status": "connection status",
    "delay": "reconnect delay (jiffies)",
    "fh_hash": "file handle hash (CRC-32 of the handle, as nfs.fh.hash)",
    "fhandle": "file handle hash (CRC-32 of the handle, as nfs.fh.hash)",
    "error": "error number",
    "operation": "NFSv4 operation",
    "ret": "return value",
    "fixup": "bytes copied into the receive buffer",
    "peer": "the peer's address and port",
    "addr": "the peer's address (the raw form's; with port it makes peer)",
    "port": "the peer's port (the raw form's)",
    "src": "source address and port",
    "dst": "destination address and port",
    "state": "state",
    "inline_send": "inline threshold for Sends, as negotiated (RFC 8797 private data)",
    "inline_recv": "inline threshold for receives, as negotiated (RFC 8797 private data)",
    "max_send": "largest inline Send the client computed",
    "max_recv": "largest inline receive the client computed",
}

# Other names of the same fields: the raw form's (``trace-cmd report -R``) and other kernels'.
ALIASES: Final[dict[str, str]] = {
    "task_id": "task", "client_id": "client", "snd_task_id": "snd_task", "completion_id": "cid",
    "cq.id": "cq_id", "mr.id": "mr_id", "cm.id": "cm_id", "position": "pos", "latency-us": "latency_us",
    "read_latency": "latency_us", "len": "length", "posted": "active", "hdr": "hdrlen", "version": "vers",
    "pd.id": "pd_id",
}

C, S, M = Side.CLIENT, Side.SERVER, Side.CM
_SEG = ("handle", "length", "offset")
_MR = ("task", "mr_id", "nents") + _SEG + ("dir",)
_WC = ("cq_id", "cid", "status", "vendor_err")
_WC_MR = ("cq_id", "mr_id", "status", "vendor_err")
_CONG = ("task", "snd_task", "cong", "cwnd", "wait")


def _d(name: str, side: Side, stage: Stage, join: Join, fields: tuple[str, ...], **flags: bool) -> EventDecl:
    return EventDecl(name, side, stage, join, fields, **flags)


DECLARATIONS: Final[tuple[EventDecl, ...]] = (
    # --- the client: xprtrdma (include/trace/events/rpcrdma.h) ---
    _d("xprtrdma_marshal", C, Stage.MARSHAL, Join.XID, ("task", "xid", "hdrlen")),
    _d("xprtrdma_marshal_failed", C, Stage.ERROR, Join.XID, ("task", "xid", "ret")),
    _d("xprtrdma_prepsend_failed", C, Stage.ERROR, Join.XID, ("task", "xid", "ret")),
    _d("xprtrdma_chunk_read", C, Stage.REGISTER, Join.TASK, ("task", "pos", "nents") + _SEG + ("nsegs",)),
    _d("xprtrdma_chunk_write", C, Stage.REGISTER, Join.TASK, ("task", "nents") + _SEG + ("nsegs",)),
    _d("xprtrdma_chunk_reply", C, Stage.REGISTER, Join.TASK, ("task", "nents") + _SEG + ("nsegs",)),
    _d("xprtrdma_chunk_wp", C, Stage.REGISTER, Join.TASK, ("task", "nents") + _SEG + ("nsegs",)),
    _d("xprtrdma_mr_map", C, Stage.REGISTER, Join.TASK, _MR),
    _d("xprtrdma_mr_fastreg", C, Stage.REGISTER, Join.TASK, _MR),
    _d("xprtrdma_mr_localinv", C, Stage.INVALIDATE, Join.TASK, _MR),
    _d("xprtrdma_mr_reminv", C, Stage.INVALIDATE, Join.TASK, _MR),
    _d("xprtrdma_mr_unmap", C, Stage.INVALIDATE, Join.MR, ("mr_id", "nents") + _SEG + ("dir",)),
    _d("xprtrdma_post_send", C, Stage.POST, Join.TASK, ("cq_id", "cid", "task", "num_sge", "signaled"), posts=True),
    _d("xprtrdma_post_send_err", C, Stage.ERROR, Join.TASK, ("cq_id", "task", "rc")),
    _d("xprtrdma_wc_send", C, Stage.COMPLETE, Join.SEND_CONTEXT, _WC),
    _d("xprtrdma_wc_receive", C, Stage.RECEIVE, Join.NEXT_ON_THREAD, _WC + ("received",)),
    _d("xprtrdma_wc_fastreg", C, Stage.REGISTER, Join.MR, _WC_MR, cid_is_mr=True),
    _d("xprtrdma_wc_li", C, Stage.INVALIDATE, Join.MR, _WC_MR, cid_is_mr=True),
    _d("xprtrdma_wc_li_wake", C, Stage.INVALIDATE, Join.MR, _WC_MR, cid_is_mr=True),
    _d("xprtrdma_wc_li_done", C, Stage.INVALIDATE, Join.MR, _WC_MR, cid_is_mr=True),
    _d("xprtrdma_frwr_done", C, Stage.INVALIDATE, Join.MR, ("mr_id", "status")),          # <= 5.12
    _d("xprtrdma_post_recvs", C, Stage.CREDITS, Join.NONE, ("peer", "cq_id", "count", "active")),
    _d("xprtrdma_post_recvs_err", C, Stage.ERROR, Join.NONE, ("peer", "cq_id", "rc")),
    _d("xprtrdma_reply", C, Stage.REPLY, Join.XID, ("task", "xid", "credits")),
    _d("xprtrdma_reply_vers_err", C, Stage.ERROR, Join.XID, ("peer", "xid", "vers", "proc")),
    _d("xprtrdma_reply_rqst_err", C, Stage.ERROR, Join.XID, ("peer", "xid", "vers", "proc")),
    _d("xprtrdma_reply_short_err", C, Stage.ERROR, Join.XID, ("peer", "xid", "vers", "proc")),
    _d("xprtrdma_reply_hdr_err", C, Stage.ERROR, Join.XID, ("peer", "xid", "vers", "proc")),
    _d("xprtrdma_err_vers", C, Stage.ERROR, Join.XID, ("task", "xid")),
    _d("xprtrdma_err_chunk", C, Stage.ERROR, Join.XID, ("task", "xid")),
    _d("xprtrdma_err_unrecognized", C, Stage.ERROR, Join.XID, ("task", "xid")),
    _d("xprtrdma_decode_seg", C, Stage.DECODE, Join.HANDLE, _SEG),
    _d("xprtrdma_fixup", C, Stage.DECODE, Join.TASK, ("task", "fixup")),
    _d("xprtrdma_inline_thresh", C, Stage.CONNECT, Join.NONE,
       ("src", "dst", "inline_send", "inline_recv", "max_send", "max_recv")),
    _d("xprtrdma_connect", C, Stage.CONNECT, Join.NONE, ("peer", "rc", "connect_status")),
    _d("xprtrdma_disconnect", C, Stage.CONNECT, Join.NONE, ("peer", "rc", "connect_status")),
    _d("xprtrdma_op_connect", C, Stage.CONNECT, Join.NONE, ("peer", "delay")),
    _d("xprtrdma_op_inject_dsc", C, Stage.CONNECT, Join.NONE, ("peer",)),
    _d("xprtrdma_op_set_cto", C, Stage.CONNECT, Join.NONE, ("peer",)),
    _d("xprtrdma_qp_event", C, Stage.ERROR, Join.NONE, ("peer",)),                        # <= 5.12
    _d("xprtrdma_mrs_zap", C, Stage.CONNECT, Join.NONE, ("peer",)),
    _d("xprtrdma_createmrs", C, Stage.CONNECT, Join.NONE, ("peer", "count")),
    _d("xprtrdma_nomrs_err", C, Stage.ERROR, Join.TASK, ("peer", "task")),
    _d("xprtrdma_cb_call", C, Stage.CALL, Join.XID, ("task", "xid")),
    _d("xprtrdma_cb_reply", C, Stage.REPLY, Join.XID, ("task", "xid")),
    # --- the client: sunrpc (include/trace/events/sunrpc.h) ---
    _d("rpc_request", C, Stage.CALL, Join.TASK, ("task",)),
    _d("xprt_reserve", C, Stage.CALL, Join.XID, ("task", "xid")),
    _d("xprt_transmit", C, Stage.POST, Join.XID, ("task", "xid", "seqno", "status")),
    _d("xprt_retransmit", C, Stage.RETRANSMIT, Join.XID, ("task", "xid", "ntrans", "timeout")),
    _d("rpc_stats_latency", C, Stage.REPLY, Join.XID, ("task", "xid", "backlog", "rtt", "execute")),
    _d("xprt_get_cong", C, Stage.CREDITS, Join.TASK, _CONG),
    _d("xprt_put_cong", C, Stage.CREDITS, Join.TASK, _CONG),
    _d("xprt_reserve_cong", C, Stage.CREDITS, Join.TASK, _CONG),
    _d("xprt_release_cong", C, Stage.CREDITS, Join.TASK, _CONG),
    _d("xprt_connect", C, Stage.CONNECT, Join.NONE, ("peer", "state")),
    _d("xprt_disconnect_auto", C, Stage.CONNECT, Join.NONE, ("peer", "state")),
    _d("xprt_disconnect_force", C, Stage.CONNECT, Join.NONE, ("peer", "state")),
    _d("xprt_disconnect_done", C, Stage.CONNECT, Join.NONE, ("peer", "state")),
    # --- the client: NFS (fs/nfs/nfs4trace.h, nfstrace.h) ---
    _d("nfs4_xdr_status", C, Stage.REPLY, Join.XID, ("task", "xid", "error", "operation")),
    _d("nfs4_sequence_done", C, Stage.NFS, Join.NONE, ("error",)),
    _d("nfs4_read", C, Stage.NFS, Join.TASK, ("fhandle", "offset", "count")),
    _d("nfs4_write", C, Stage.NFS, Join.TASK, ("fhandle", "offset", "count")),
    _d("nfs_initiate_read", C, Stage.NFS, Join.NONE, ("fhandle", "offset", "count")),
    _d("nfs_initiate_write", C, Stage.NFS, Join.NONE, ("fhandle", "offset", "count")),
    # --- the server: svcrdma ---
    _d("svcrdma_wc_recv", S, Stage.RECEIVE, Join.RECV_CONTEXT, ("cq_id", "cid", "received")),
    _d("svcrdma_wc_recv_flush", S, Stage.RECEIVE, Join.NONE, _WC),
    _d("svcrdma_wc_recv_err", S, Stage.ERROR, Join.NONE, _WC),
    _d("svcrdma_decode_rqst", S, Stage.DECODE, Join.XID, ("cq_id", "cid", "xid", "vers", "credits", "proc", "hdrlen"),
       sets_thread=True, resolves_context=True),
    _d("svcrdma_decode_short_err", S, Stage.ERROR, Join.RECV_CONTEXT, ("cq_id", "cid")),
    _d("svcrdma_decode_badvers_err", S, Stage.ERROR, Join.XID, ("cq_id", "cid", "xid")),
    _d("svcrdma_decode_drop_err", S, Stage.ERROR, Join.XID, ("cq_id", "cid", "xid")),
    _d("svcrdma_decode_badproc_err", S, Stage.ERROR, Join.XID, ("cq_id", "cid", "xid")),
    _d("svcrdma_decode_parse_err", S, Stage.ERROR, Join.XID, ("cq_id", "cid", "xid")),
    _d("svcrdma_decode_rseg", S, Stage.DECODE, Join.RECV_CONTEXT, ("cq_id", "cid", "segno", "pos") + _SEG),
    _d("svcrdma_decode_wseg", S, Stage.DECODE, Join.RECV_CONTEXT, ("cq_id", "cid", "segno") + _SEG),
    _d("svcrdma_post_read_chunk", S, Stage.POST, Join.THREAD, ("cq_id", "cid", "sqecount"), posts=True),
    _d("svcrdma_post_write_chunk", S, Stage.POST, Join.THREAD, ("cq_id", "cid", "sqecount"), posts=True),
    _d("svcrdma_post_reply_chunk", S, Stage.POST, Join.THREAD, ("cq_id", "cid", "sqecount"), posts=True),
    _d("svcrdma_wc_read", S, Stage.COMPLETE, Join.SEND_CONTEXT, ("cq_id", "cid", "totalbytes", "latency_us")),
    _d("svcrdma_wc_read_flush", S, Stage.ERROR, Join.SEND_CONTEXT, _WC),
    _d("svcrdma_wc_read_err", S, Stage.ERROR, Join.SEND_CONTEXT, _WC),
    _d("svcrdma_wc_write", S, Stage.COMPLETE, Join.SEND_CONTEXT, ("cq_id", "cid")),
    _d("svcrdma_wc_write_flush", S, Stage.ERROR, Join.SEND_CONTEXT, _WC),
    _d("svcrdma_wc_write_err", S, Stage.ERROR, Join.SEND_CONTEXT, _WC),
    _d("svcrdma_encode_wseg", S, Stage.POST, Join.THREAD, ("cq_id", "cid", "segno") + _SEG),
    _d("svcrdma_send_pullup", S, Stage.POST, Join.THREAD, ("cq_id", "cid", "hdrlen")),
    _d("svcrdma_post_send", S, Stage.POST, Join.THREAD, ("cq_id", "cid", "num_sge", "inv_rkey"), posts=True),
    _d("svcrdma_wc_send", S, Stage.COMPLETE, Join.SEND_CONTEXT, ("cq_id", "cid")),
    _d("svcrdma_wc_send_flush", S, Stage.ERROR, Join.SEND_CONTEXT, _WC),
    _d("svcrdma_wc_send_err", S, Stage.ERROR, Join.SEND_CONTEXT, _WC),
    _d("svcrdma_err_vers", S, Stage.ERROR, Join.XID, ("xid",)),
    _d("svcrdma_err_chunk", S, Stage.ERROR, Join.XID, ("xid",)),
    _d("svcrdma_send_err", S, Stage.ERROR, Join.XID, ("xid",)),
    _d("svcrdma_small_wrch_err", S, Stage.ERROR, Join.THREAD, ()),
    _d("svcrdma_sq_full", S, Stage.CREDITS, Join.NONE, ()),
    _d("svcrdma_sq_retry", S, Stage.CREDITS, Join.NONE, ()),
    _d("svcrdma_sq_post_err", S, Stage.ERROR, Join.NONE, ()),
    _d("svcrdma_qp_error", S, Stage.ERROR, Join.NONE, ()),
    # --- the server: nfsd (fs/nfsd/trace.h) ---
    _d("nfsd_read_start", S, Stage.IO, Join.XID, ("xid", "fh_hash", "offset", "length"), sets_thread=True),
    _d("nfsd_read_splice", S, Stage.IO, Join.XID, ("xid", "fh_hash", "offset", "length")),
    _d("nfsd_read_vector", S, Stage.IO, Join.XID, ("xid", "fh_hash", "offset", "length")),
    _d("nfsd_read_io_done", S, Stage.IO, Join.XID, ("xid", "fh_hash", "offset", "length")),
    _d("nfsd_read_done", S, Stage.IO, Join.XID, ("xid", "fh_hash", "offset", "length")),
    _d("nfsd_read_err", S, Stage.ERROR, Join.XID, ("xid", "fh_hash", "offset", "status")),
    _d("nfsd_write_start", S, Stage.IO, Join.XID, ("xid", "fh_hash", "offset", "length"), sets_thread=True),
    _d("nfsd_write_opened", S, Stage.IO, Join.XID, ("xid", "fh_hash", "offset", "length")),
    _d("nfsd_write_io_done", S, Stage.IO, Join.XID, ("xid", "fh_hash", "offset", "length")),
    _d("nfsd_write_done", S, Stage.IO, Join.XID, ("xid", "fh_hash", "offset", "length")),
    _d("nfsd_write_err", S, Stage.ERROR, Join.XID, ("xid", "fh_hash", "offset", "status")),
    _d("nfsd_commit_start", S, Stage.IO, Join.XID, ("xid", "fh_hash", "offset", "length")),
    _d("nfsd_commit_done", S, Stage.IO, Join.XID, ("xid", "fh_hash", "offset", "length")),
    # --- the connection manager (rdma_cma: cma_trace.h; ib_cma: cm_trace.h) ---
    _d("cm_qp_create", M, Stage.CONNECT, Join.NONE, ("cm_id", "src", "dst", "qp_num", "rc")),
    _d("cm_qp_destroy", M, Stage.CONNECT, Join.NONE, ("cm_id", "src", "dst", "qp_num")),
    _d("cm_send_req", M, Stage.CONNECT, Join.NONE, ("cm_id", "src", "dst", "qp_num")),
    _d("cm_send_rep", M, Stage.CONNECT, Join.NONE, ("cm_id", "src", "dst", "qp_num")),
    _d("cm_disconnect", M, Stage.CONNECT, Join.NONE, ("cm_id", "src", "dst")),
    _d("cm_event_handler", M, Stage.CONNECT, Join.NONE, ("cm_id", "src", "dst")),
    _d("icm_send_req", M, Stage.CONNECT, Join.NONE, ("local_id", "remote_id", "state")),
    _d("icm_send_rep", M, Stage.CONNECT, Join.NONE, ("local_id", "remote_id", "state")),
    _d("icm_send_rtu", M, Stage.CONNECT, Join.NONE, ("local_id", "remote_id", "state")),
    _d("icm_send_dreq", M, Stage.CONNECT, Join.NONE, ("local_id", "remote_id", "state")),
    _d("icm_send_drep", M, Stage.CONNECT, Join.NONE, ("local_id", "remote_id", "state")),
    _d("icm_send_rej", M, Stage.CONNECT, Join.NONE, ("local_id", "remote_id", "state")),
)

EVENTS: Final[dict[str, EventDecl]] = {d.name: d for d in DECLARATIONS}
if len(EVENTS) != len(DECLARATIONS):
    raise ValueError("a host trace event is declared twice")
for _decl in DECLARATIONS:
    for _f in _decl.fields:
        if _f not in FIELDS:
            raise ValueError(f"{_decl.name}: field {_f} has no meaning declared")

# The names of ib_wc_status (include/rdma/ib_verbs.h), for a completion's status in the raw form.
WC_STATUS: Final[tuple[str, ...]] = (
    "SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR", "LOC_PROT_ERR", "WR_FLUSH_ERR", "MW_BIND_ERR",
    "BAD_RESP_ERR", "LOC_ACCESS_ERR", "REM_INV_REQ_ERR", "REM_ACCESS_ERR", "REM_OP_ERR", "RETRY_EXC_ERR",
    "RNR_RETRY_EXC_ERR", "LOC_RDD_VIOL_ERR", "REM_INV_RD_REQ_ERR", "REM_ABORT_ERR", "INV_EECN_ERR",
    "INV_EEC_STATE_ERR", "FATAL_ERR", "RESP_TIMEOUT_ERR", "GENERAL_ERR")
