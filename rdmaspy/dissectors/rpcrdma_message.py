"""The facts of one RPC-over-RDMA message (either version) and its RDMA segments, as the dissectors
find them and the reassembly, the analysis and the outputs read them.

Apart from ``rpcrdma`` (which parses them) so that the reassembly below it, which ``rpcrdma`` calls for
each message, can name their class without importing its caller: compiled, a message typed by its
class has its attributes read in place, where ``Any`` made each a generic look-up.
"""
from __future__ import annotations

from ..typenames import Any, mypyc_attr
from . import onc_rpc


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Segment:
    """One RDMA segment; ``position`` is set for read segments only.  ``at`` is its offset in the buffer."""

    __slots__ = ("position", "handle", "length", "offset", "at")

    def __init__(self, position: int | None, handle: int, length: int, offset: int, at: int) -> None:
        self.position = position
        self.handle = handle
        self.length = length
        self.offset = offset
        self.at = at

    def __repr__(self) -> str:
        pos = f"pos={self.position} " if self.position is not None else ""
        return f"<Segment {pos}handle=0x{self.handle:x} len={self.length} off=0x{self.offset:x}>"


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class RpcRdmaMessage:
    """The facts of one RPC-over-RDMA message (v1 or v2), noted on the packet as ``rpcrdma``.

    ``proc`` is the v1 procedure or the v2 header type; ``credits`` is the raw credit word, and
    for v2 ``max_credits`` (high 16 bits) and ``granted`` (low 16 bits).  ``reads`` are the read
    segments in wire order, ``read_chunks`` the same grouped by position as (position, [segments]);
    ``writes`` is the Write list (a list of chunks, each a list of segments), ``reply`` the Reply
    chunk's segments or None.  ``rpc`` is the onc_rpc.RpcInfo of the RPC message carried inline
    (reduced when chunks were taken out of it); its ``ddp`` lists the DDP-eligible items.
    ``frames`` are the frames of the SENDs this message came in (several for SEND First..Last).
    ``rebuilt_frames`` are the frames whose bytes make the whole RPC message (this SEND and the
    RDMA READ responses of its Read chunks, or the RDMA WRITEs of its Reply or Write chunks);
    ``rebuilt_rpc`` is the RpcInfo of the rebuilt message and ``rebuilt_frame`` the frame where
    it was rebuilt and dissected (noted there as ``rpcrdma.rebuilt``).  ``shape`` names the
    message as seeds/002 and 001 do; ``is_reply`` is known from the RPC message, the v2
    RESPONSE flag, a pending call's XID or the connection's direction; ``continuation`` (v2)
    lists the frames of a Message Continuation.  ``malformed`` is the parse error, if any.
    """

    __slots__ = ("version", "xid", "proc", "credits", "max_credits", "granted", "flags", "inv_handle", "align",
                 "thresh", "reads", "read_chunks", "writes", "reply", "errcode", "vers_low", "vers_high",
                 "error_args", "props", "header_len", "payload_len", "rpc", "shape", "frame", "frames",
                 "rebuilt_frames", "rebuilt_rpc", "rebuilt_frame", "continuation", "malformed", "is_reply",
                 "rpc_span", "rpc_flow")

    def __init__(self, version: int, xid: int, credits: int, proc: int) -> None:
        self.version = version
        self.xid = xid
        self.credits = credits
        self.proc = proc
        self.max_credits: int | None = None
        self.granted: int | None = None
        self.flags: int | None = None
        self.inv_handle: int | None = None
        self.align: int | None = None
        self.thresh: int | None = None
        self.reads: list[Segment] = []
        self.read_chunks: list[tuple[int | None, list[Segment]]] = []
        self.writes: list[list[Segment]] = []
        self.reply: list[Segment] | None = None
        self.errcode: int | None = None
        self.vers_low: int | None = None
        self.vers_high: int | None = None
        self.error_args: dict[str, int] | None = None   # v2: the error union's arm
        self.props: list[tuple[int, Any]] | None = None  # v2 CONNPROP: (property id, decoded value or raw bytes)
        self.header_len = 0
        self.payload_len = 0
        self.rpc: onc_rpc.RpcInfo | None = None
        self.shape = ""
        self.frame = 0
        self.frames: list[int] = []
        self.rebuilt_frames: list[int] | None = None
        self.rebuilt_rpc: onc_rpc.RpcInfo | None = None
        self.rebuilt_frame: int | None = None
        self.continuation: list[int] | None = None      # v2: frames of a Message Continuation sequence
        self.malformed: str | None = None
        self.is_reply: bool | None = None
        self.rpc_span: tuple[bytes, int, int] | None = None   # (buffer, start, end) of the RPC message carried
        self.rpc_flow: tuple | None = None             # where its call and reply meet (onc_rpc.rpc_flow)

    @property
    def has_chunks(self) -> bool:
        return bool(self.reads or self.writes or self.reply)

    def __repr__(self) -> str:
        return f"<RpcRdmaMessage v{self.version} xid=0x{self.xid:08x} proc={self.proc}>"
