"""Reassembly under RPC-over-RDMA: multi-packet SENDs, and messages reduced into chunks.

1. RC SEND First/Middle/Last are joined per direction and queue pair, in PSN
   order, before anything parses the transport header: inline thresholds go up
   to 256 KiB, so one RPC-over-RDMA message may span many packets.  The whole
   message is offered to the ``ib.payload`` heuristics (the connection's port
   first), and the frames it came in are noted as ``rdma.send_frames``.
2. The data of Read chunks crosses by RDMA READ (request from the responder,
   responses from the requester) and that of Write and Reply chunks by RDMA
   WRITE.  Only the handles some RPC-over-RDMA message advertised are
   followed, so other RDMA traffic costs one dictionary lookup.  Every packet's
   bytes are placed at their own address in the advertised segment, so packets
   out of order and retransmitted ones land where they belong and a repeat is
   kept once: on InfiniBand the address of a Middle or Last packet follows from
   the READ request's or WRITE First's RETH and the packet's PSN (the R_Key is
   the handle, the virtual address the offset); on iWARP every tagged DDP
   segment carries its STag and tagged offset (an RDMAP Write's are the
   handle and offset; a Read Response's are the Read Request's Data Sink, which
   that request ties to the Data Source STag and offset of the Read chunk).
   When all of a message's Read chunks are covered, the whole RPC call is
   rebuilt and dissected in the packet that completed it (as Wireshark does
   for v1); a reply sent through a Reply chunk is rebuilt from the WRITEs when
   its RDMA_NOMSG arrives; a reply whose results went into Write chunks is
   rebuilt in its own packet, each chunk's data put back where the NFS walk
   found the reduced item.  Versions 1 and 2, InfiniBand and iWARP.
3. Any upper layer may want the bytes of one buffer it advertised (``want_data``: an NVMe Identify's data,
   written by the controller; a Connect's data, read by it): the packets are placed as for chunks, by
   address, and the upper layer's ``DataDone`` is called with the whole buffer in the packet that completes
   it (``take_data`` gives what came so far, when its command ends first).
"""
from __future__ import annotations

from itertools import islice

from ..fields import Field, declaring, repeatable
from ..packet import Layer, Note, Packet
from ..budget import Budget, Holder
from ..registry import Dissector, table, try_heuristics
from ..session import wants_info
from ..typenames import TYPE_CHECKING, Any, Final, i64, mypyc_attr
from .data import add_data_layer
from . import infiniband, onc_rpc
from .hexfmt import hex8

declaring(__name__)
repeatable("rdma")                # a fragment layer and its flag share the name; one per message

if TYPE_CHECKING:
    from ..session import Session
    from .infiniband import IBInfo
    from .rpcrdma_message import RpcRdmaMessage, Segment

FRAGMENT: Final = Field("rdma.fragment", 0, "SEND fragment of a message", "bool")
FRAG_INDEX: Final = Field("rdma.fragment.index", 0, "Fragment number")
REASM_FRAMES: Final = Field("rdma.reassembled.frames", 0, "Reassembled from frames", "str")
REASM_LEN: Final = Field("rdma.reassembled.length", 0, "Reassembled length", unit="bytes")
# The RPC-over-RDMA message (rpcrdma.RpcRdmaMessage) whose whole RPC message was rebuilt here.
REBUILT: Final[Note[Any]] = Note("rpcrdma.rebuilt")
SEND_FRAMES: Final[Note[list[int]]] = Note("rdma.send_frames")   # the frames of a Send made of several
REBUILT_XID: Final = Field("rpcrdma.rebuilt.xid", 32, "XID", "hex")
REBUILT_FRAMES: Final = Field("rpcrdma.rebuilt.frames", 0, "Rebuilt from frames", "str")
REBUILT_LEN: Final = Field("rpcrdma.rebuilt.length", 0, "Rebuilt RPC message length", unit="bytes")
REBUILT_KIND: Final = Field("rpcrdma.rebuilt.kind", 0, "Rebuilt from", "str")

_SEND_LIMIT: Final = 1 << 20          # a SEND message larger than this is not kept (thresholds stop at 256 KiB)
_WANT_LIMIT: Final = 8192             # advertised handles followed at once
_BYTES_LIMIT: Final = 64 << 20        # chunk data kept at once
_ENTRY: Final = 256                   # what an entry costs beside its bytes, charged to the memory budget
_PIECE: Final = 64                    # what a placed packet's bytes cost beside themselves
_RECENT: Final = 16                   # READ requests / WRITE First packets remembered per direction
_MIN_MTU: Final = 256                 # the smallest InfiniBand path MTU
_HALF_PSN: Final = 1 << 23            # half the 24-bit PSN space: a step beyond it is one backwards

ib_payload: Final = table("ib.payload")


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _Charged:
    """An entry of the reassembly's state, with the bytes charged to the memory budget for it (one base
    class: compiled, ``charged`` is read in place, where a union of the entries' classes was a generic
    attribute look-up at every charge)."""

    __slots__ = ("charged",)

    def __init__(self) -> None:
        self.charged = 0


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _Partial(_Charged):
    __slots__ = ("parts", "frames", "next_psn", "size")

    def __init__(self, psn: int, data: bytes, frame: int) -> None:
        super().__init__()
        self.parts = [data]
        self.frames = [frame]
        self.next_psn = (psn + 1) & 0xFFFFFF
        self.size = len(data)


# A handle's owner: the host whose memory it names, and the peer it was given to: (str, str).
# R_Keys and STags are small numbers of each device: two clients of one server use the same ones, so a
# handle is known by its owner and itself: (host, peer, handle), one flat tuple (a nested one is hashed
# and compared a level deeper at each of the three to six look-ups a packet).  Both are typed as plain
# tuples: compiled, a tuple of fixed shape is kept unpacked and made again every time it is used as a
# dict key; a plain tuple stays the one object.
Pair = tuple
Key = tuple


def _key(owner: Pair, handle: int) -> Key:
    """The key of ``handle`` in ``owner``'s memory."""
    return (owner[0], owner[1], handle)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _ReadJob(_Charged):
    """The Read chunks of one message, waiting for their data: per segment, the bytes placed so far
    by offset in the segment (a packet repeated or out of order lands where it belongs)."""

    __slots__ = ("msg", "owner", "reduced", "flow", "pieces", "filled", "frames", "need")

    def __init__(self, msg: RpcRdmaMessage, owner: Pair, reduced: bytes, flow: tuple | None) -> None:
        super().__init__()
        self.msg = msg
        self.owner = owner        # whose memory the chunks are in (who advertised them), and to whom
        self.reduced = reduced
        self.flow = flow
        reads = msg.reads
        self.pieces: list[dict[int, bytes]] = [{} for _ in reads]
        self.filled = [0] * len(reads)        # bytes placed per segment (overlaps counted twice)
        self.need = {i for i, s in enumerate(reads) if s.length}
        self.frames: list[int] = []


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _Request:
    """Where an RDMA READ's or a multi-packet RDMA WRITE's data goes: the advertised handle and address
    of its first byte, its length, and what the packets that follow are matched by (the PSN of the
    request on InfiniBand, the Data Sink tagged offset of a Read Request on iWARP)."""

    __slots__ = ("key", "va", "length", "base")

    def __init__(self, key: Key, va: int, length: int, base: int) -> None:
        self.key = key
        self.va = va
        self.length = length
        self.base = base


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _Recent(_Charged):
    """The last requests of one direction (a retransmitted one replaces its first copy).

    ``breaks``: how many of the requests came after the one before them out of PSN order (a step of
    half the PSN space or more: a capture replayed, a QP reused), ``span`` the sum of the steps from
    the oldest to the newest.  With no break and a span under half the space, a packet that a request
    can reach (from less than half the space away) is nearer to it than to any older one, and
    ``_ib_address``, looking from the newest, stops at the first: a WRITE's or READ response's packets
    follow their request, usually the newest."""

    __slots__ = ("items", "breaks", "span")

    def __init__(self) -> None:
        super().__init__()
        self.items: list[_Request] = []
        self.breaks = 0
        self.span = 0


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _Written(_Charged):
    """A handle a call advertised for RDMA WRITEs (its Write list, its Reply chunk), under ``key``: the
    call's XID, [lo, hi) from the lowest offset to the end of the highest segment under the handle, and
    the bytes WRITEs put there by address (a packet carries its own address, so neither order nor repeats
    matter; a repeat of bytes already placed is not kept).  One entry for both: a WRITE and the reply
    find the handle, and the reply lets it go, with one look-up each.  Only the bytes are charged."""

    __slots__ = ("key", "xid", "lo", "hi", "pieces")

    def __init__(self, key: Key, xid: int, lo: int, hi: int) -> None:
        super().__init__()
        self.key = key            # the very key it is under: deleting by it is compared by identity
        self.xid = xid
        self.lo = lo
        self.hi = hi
        self.pieces: dict[int, tuple[bytes, int]] | None = None     # address -> (bytes, frame)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class DataDone:
    """What an upper layer runs when the buffer it wanted is whole (``want_data``): ``done(pkt, ctx, data,
    frames)`` in the packet that completed it."""

    def done(self, pkt: Packet, ctx: Session, data: bytes, frames: list[int]) -> None:
        return None


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _DataWant(_Charged):
    """One buffer an upper layer wants the bytes of: [address, address + length) under its handle, the
    pieces placed so far by offset, the frames they came in."""

    __slots__ = ("address", "length", "pieces", "filled", "frames", "then")

    def __init__(self, address: int, length: int, then: DataDone) -> None:
        super().__init__()
        self.address = address
        self.length = length
        self.pieces: dict[int, bytes] = {}
        self.filled = 0
        self.frames: list[int] = []
        self.then = then


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _State(Holder):
    """What reassembly keeps across packets; a holder of the memory budget, which it charges with the
    bytes it keeps (and a fixed cost per entry) and releases as entries go."""

    __slots__ = ("sends", "read_jobs", "read_reqs", "write_reqs", "written", "kept", "budget", "data_wants",
                 "read_key", "write_key", "write_qp", "read_rec", "write_rec", "read_known", "write_known")

    def __init__(self, budget: Budget) -> None:
        self.name = "reassemblies (SEND fragments, RDMA READ/WRITE chunk data)"
        self.held = 0
        self.budget = budget
        budget.join(self)
        self.sends: dict[tuple, _Partial] = {}
        self.read_jobs: dict[Key, _ReadJob] = {}
        # READ requests for an advertised Read chunk: (requester, responder) on InfiniBand,
        # (requester, responder, Data Sink STag) on iWARP
        self.read_reqs: dict[tuple, _Recent] = {}
        self.write_reqs: dict[tuple, _Recent] = {}         # (src, dst, QP) -> WRITE First packets
        self.written: dict[Key, _Written] = {}        # handles advertised for WRITEs, and their bytes
        self.kept = 0             # bytes charged for ``written``
        self.data_wants: dict[Key, _DataWant] = {}    # buffers upper layers want whole (want_data)
        # The last keys looked up in read_reqs and write_reqs, kept made: a flow's next packet has the same
        # (compiled, a tuple made and freed a packet).  Typed ``tuple``: a tuple of fixed types would be
        # kept unboxed, and made again at each look-up.
        self.read_key: tuple = ("", "")
        self.write_key: tuple = ("", "", -1)
        self.write_qp = -1        # write_key's QP, as a machine integer
        # What read_reqs and write_reqs hold under those keys, once looked up: hashing the key tuple was
        # some 300 instructions a packet.  An entry into or out of either table (``_tables_changed``)
        # makes the next packet look it up again.
        self.read_rec: _Recent | None = None
        self.write_rec: _Recent | None = None
        self.read_known = False
        self.write_known = False

    def charge(self, obj: _Charged, n: int) -> None:
        obj.charged += n
        self.budget.charge(self, n)

    def uncharge(self, obj: _Charged, n: int) -> None:
        obj.charged -= n
        self.budget.release(self, n)

    def free(self, obj: _Charged | None) -> None:
        if obj is not None and obj.charged:
            self.budget.release(self, obj.charged)
            obj.charged = 0

    def forget_written(self, entry: _Written) -> None:
        """Let go of the bytes placed under a handle (the handle stays followed)."""
        if entry.pieces is not None:
            entry.pieces = None
            self.kept -= entry.charged
            self.free(entry)

    def shed(self, need: int) -> int:
        """Memory budget: give up the oldest SEND messages, requests, chunk data and Read jobs (their
        messages are then shown without the rebuild)."""
        start = self.held
        gone = 0
        _tables_changed(self)
        for d in (self.sends, self.write_reqs, self.read_reqs):
            for key in list(d):          # keys listed once: popping the first key again and again is quadratic
                if start - self.held >= need:
                    return gone
                self.free(d.pop(key))
                gone += 1
        for entry in list(self.written.values()):
            if entry.pieces is None:
                continue
            if start - self.held >= need:
                return gone
            self.forget_written(entry)
            gone += 1
        for key in list(self.read_jobs):
            if start - self.held >= need:
                return gone
            if key in self.read_jobs:
                _drop_job(self, key)
                gone += 1
        for key in list(self.data_wants):
            if start - self.held >= need:
                return gone
            self.free(self.data_wants.pop(key))
            gone += 1
        return gone


def _tables_changed(st: _State) -> None:
    """An entry came into or went out of read_reqs or write_reqs: their last keys are to be looked up again."""
    st.read_known = st.write_known = False
    st.read_rec = st.write_rec = None


def _drop_job(st: _State, key: Key) -> None:
    """Give up the Read job under ``key``, under every handle it is listed (a message's segments)."""
    jobs = st.read_jobs
    job = jobs.pop(key)
    for s in job.msg.reads:
        k = _key(job.owner, s.handle)
        if jobs.get(k) is job:
            del jobs[k]
    st.free(job)


def _state(ctx: Session) -> _State:
    st: _State | None = ctx.reassembly
    if st is None:
        # made here alone, kept in both: the slot for the packets, ``state`` for what reads the session
        st = ctx.reassembly = ctx.state["rdma_reassembly"] = _State(ctx.budget)
    return st


def _bound(d: dict, limit: int = _WANT_LIMIT, st: _State | None = None) -> None:
    """Keep at most ``limit`` entries.  Past it the oldest eighth goes at once: deleting a dict's first
    key one at a time makes each next lookup of the first key walk the holes the earlier deletions
    left, so a capture with thousands of unanswered operations would slow down quadratically.  With
    ``st`` the entries' charges go back to the memory budget."""
    if len(d) > limit:
        for key in list(islice(d, len(d) - limit + limit // 8)):
            v = d.pop(key)
            if st is not None:
                st.free(v)


def _offer(pkt: Packet, buf: bytes, off: int, end: int, ctx: Session) -> None:
    if not try_heuristics(ib_payload, pkt, buf, off, end, ctx):
        add_data_layer(pkt, buf, off, end)


# --- SEND First/Middle/Last ---------------------------------------------------------------------------
def dissect_send(pkt: Packet, buf: bytes, off: int, end: int, ctx: Session) -> None:
    ib: IBInfo | None = pkt.ib
    if ib is None or ib.plan.pos == "only":
        _offer(pkt, buf, off, end, ctx)
        return
    pos = ib.plan.pos
    st = _state(ctx)
    key: tuple = (pkt.src, pkt.dst, ib.destqp)  # plain tuple: see docs/architecture.md
    psn = ib.psn
    num = pkt.frame.num
    if pos == "first":
        st.free(st.sends.get(key))
        opened = st.sends[key] = _Partial(psn, buf[off:end], num)
        st.charge(opened, end - off + _ENTRY)
        _bound(st.sends, st=st)
        _fragment(pkt, buf, off, end, 1, "SEND First")
        return
    part = st.sends.get(key)
    if part is None or psn != part.next_psn:
        if part is not None and (part.next_psn - psn) & 0xFFFFFF < 0x800000:
            pkt.add_info("[retransmitted SEND fragment]")
        else:
            pkt.add_expert("warning", "reassembly", "SEND Middle/Last whose First is not in the capture",
                           "IBTA 9.4.1: SEND First/Middle/Last")
        add_data_layer(pkt, buf, off, end)
        return
    part.parts.append(buf[off:end])
    part.frames.append(num)
    part.size += end - off
    part.next_psn = (psn + 1) & 0xFFFFFF
    st.charge(part, end - off)
    if part.size > _SEND_LIMIT:
        del st.sends[key]
        st.free(part)
        pkt.add_expert("warning", "reassembly", f"SEND message over {_SEND_LIMIT} bytes: not reassembled")
        add_data_layer(pkt, buf, off, end)
        return
    if pos == "middle":
        _fragment(pkt, buf, off, end, len(part.frames), "SEND Middle")
        return
    del st.sends[key]
    st.free(part)
    whole = b"".join(part.parts)
    lay = pkt.add_layer("rdma.reassembled", None, whole, 0, len(whole),
                        f"[{len(part.frames)} reassembled SEND fragments ({len(whole)} bytes)]")
    lay.add(REASM_FRAMES, ",".join(map(str, part.frames)))
    lay.add(REASM_LEN, len(whole))
    pkt.note(SEND_FRAMES, part.frames)
    _offer(pkt, whole, 0, len(whole), ctx)


def _fragment(pkt: Packet, buf: bytes, off: int, end: int, index: int, what: str) -> None:
    lay = pkt.add_layer("rdma.fragment", None, buf, off, end - off, f"{what} fragment {index}")
    lay.add(FRAGMENT, True)
    lay.add(FRAG_INDEX, index)
    pkt.add_info(f"[{what} fragment {index}]")
    add_data_layer(pkt, buf, off, end)


# --- RDMA READ and WRITE moving chunk data --------------------------------------------------------------
def _remember(st: _State, d: dict[tuple, _Recent], key: tuple, req: _Request) -> None:
    rec = d.get(key)
    if rec is None:
        rec = d[key] = _Recent()
        _bound(d, st=st)
        _tables_changed(st)
    items = rec.items
    for i, old in enumerate(items):
        if old.base == req.base:      # the same request again (retransmitted), or its buffer reused
            items[i] = req
            return
    if items:
        step = (req.base - items[-1].base) & 0xFFFFFF
        if step >= _HALF_PSN:
            rec.breaks += 1
        rec.span += step
    items.append(req)
    st.charge(rec, _ENTRY)
    if len(items) > _RECENT:
        step = (items[1].base - items[0].base) & 0xFFFFFF
        if step >= _HALF_PSN:
            rec.breaks -= 1
        rec.span -= step
        del items[0]
        st.uncharge(rec, _ENTRY)


def _ib_address(rec: _Recent, psn: int, pos: str, plen: int) -> tuple[_Request, int] | None:
    """The request a Middle or Last packet belongs to (the nearest PSN at or before its own that the
    request's length can reach) and the address of its first byte.  Every packet but the last of a
    message carries a path MTU of bytes, so a packet's address follows from its PSN and its own
    length, and a Last's from the end of the message: packets out of order or repeated land right."""
    items = rec.items
    # a machine integer (``i64``): compiled, the product and the compares without checked arithmetic
    d: i64
    if rec.breaks == 0 and rec.span < _HALF_PSN:
        # newest first: the first that reaches the packet from less than half the PSN space away is the
        # nearest (every older one is further by its step from it); the answer is usually the newest
        i = len(items) - 1
        while i >= 0:
            r = items[i]
            d = (psn - r.base) & 0xFFFFFF
            if d != 0 and d < _HALF_PSN and d * _MIN_MTU < r.length:
                return _address(r, d, pos, plen)
            i -= 1
    best: _Request | None = None
    best_d: i64 = 0
    for r in items:
        d = (psn - r.base) & 0xFFFFFF
        if d == 0 or d * _MIN_MTU >= r.length:
            continue
        if best is None or d < best_d:
            best, best_d = r, d
    if best is None:
        return None
    return _address(best, best_d, pos, plen)


def _address(req: _Request, d: int, pos: str, plen: int) -> tuple[_Request, int]:
    """The request of a packet ``d`` PSNs after it and the address of the packet's first byte."""
    if pos == "last":
        return req, req.va + req.length - plen if req.length >= plen else req.va
    return req, req.va + d * plen


def observe_read_request(pkt: Packet, ib: IBInfo, ctx: Session) -> None:
    """BTH observer: remember READ requests that target an advertised Read chunk (their payload is empty)."""
    if ib.plan.kind != "read_request" or ib.reth is None:
        return
    st = _state(ctx)
    va, rkey, dlen = ib.reth
    key: Key = (pkt.dst, pkt.src, rkey)      # the responder's memory, read by the requester
    if key in st.read_jobs or (st.data_wants and key in st.data_wants):
        _remember(st, st.read_reqs, (pkt.src, pkt.dst), _Request(key, va, dlen, ib.psn))


def dissect_read_response(pkt: Packet, buf: bytes, off: int, end: int, ctx: Session) -> None:
    infiniband.add_payload_data(pkt, buf, off, end)
    ib: IBInfo | None = pkt.ib
    if ib is None:
        return
    st: _State | None = ctx.reassembly
    if st is None or not st.read_reqs:
        return
    key = st.read_key
    dst = pkt.dst
    src = pkt.src
    if key[0] is not dst or key[1] is not src:
        key = st.read_key = (dst, src)
        st.read_known = False
    if not st.read_known:
        st.read_rec = st.read_reqs.get(key)
        st.read_known = True
    rec = st.read_rec
    if rec is None:
        return
    pos = ib.plan.pos
    if pos in ("first", "only"):
        for r in reversed(rec.items):
            if r.base == ib.psn:
                _place_read(pkt, ctx, st, r.key, r.va, buf, off, end)
                return
        return
    found = _ib_address(rec, ib.psn, pos, end - off)
    if found is not None:
        _place_read(pkt, ctx, st, found[0].key, found[1], buf, off, end)


def _place_read(pkt: Packet, ctx: Session, st: _State, key: Key, addr: int, buf: bytes, off: int,
                end: int) -> None:
    """Put a READ response packet's bytes in the Read chunk segments they belong to (cut at each
    segment's length: bytes past it are an overrun the chunk analysis reports, never state); the
    packet that leaves no segment with a hole rebuilds the call."""
    job = st.read_jobs.get(key)
    if job is None:
        if st.data_wants:
            _place_wanted(pkt, ctx, st, key, addr, buf, off, end)
        return
    handle = key[2]
    segs = job.msg.reads
    n = end - off
    placed = False
    for i, s in enumerate(segs):
        if s.handle != handle:
            continue
        # [lo, hi) relative to the segment: one subtraction of two addresses (kernel addresses are beyond
        # machine integers compiled, each operation on them a Python long's)
        rel = addr - s.offset
        lo = rel if rel > 0 else 0
        hi = rel + n
        if hi > s.length:
            hi = s.length
        if lo >= hi:
            continue
        pieces = job.pieces[i]
        old = pieces.get(lo)
        if old is not None and len(old) >= hi - lo:
            continue          # a repeat of bytes already placed
        data = buf[off + lo - rel:off + hi - rel]
        pieces[lo] = data
        grown = len(data) - (len(old) if old is not None else -_PIECE)
        st.charge(job, grown)
        job.filled[i] += len(data) - (len(old) if old is not None else 0)
        placed = True
        if i in job.need and job.filled[i] >= s.length and _covered(list(pieces.items()), s.length):
            job.need.discard(i)
    if not placed:
        return
    num = pkt.frame.num
    if not job.frames or job.frames[-1] != num:
        job.frames.append(num)
    if job.need:
        return
    for s in segs:
        k = _key(job.owner, s.handle)
        if st.read_jobs.get(k) is job:
            del st.read_jobs[k]
    st.free(job)
    _rebuild_call(pkt, ctx, job)


def _place_written(st: _State, entry: _Written, addr: int, buf: bytes, off: int, end: int, frame: int) -> None:
    """Keep a WRITE packet's bytes at their address, within the segments advertised under the handle."""
    lo = entry.lo
    hi = entry.hi
    if not lo <= addr < hi:
        return      # outside every segment advertised with this handle: a finding of the analysis, no state
    if end - off > hi - addr:
        end = off + hi - addr
    if end <= off:
        return
    pieces = entry.pieces
    if pieces is None:
        pieces = entry.pieces = {}
    old = pieces.get(addr)
    if old is not None and len(old[0]) >= end - off:
        return        # a retransmission of bytes already placed
    data = buf[off:end]
    grown = len(data) - (len(old[0]) if old is not None else -_PIECE)
    if st.kept + grown > _BYTES_LIMIT:
        for other in list(st.written.values()):       # the oldest chunk data goes first
            if other is not entry:
                st.forget_written(other)
            if st.kept + grown <= _BYTES_LIMIT:
                break
    pieces[addr] = (data, frame)
    st.kept += grown
    st.charge(entry, grown)


def dissect_write(pkt: Packet, buf: bytes, off: int, end: int, ctx: Session) -> None:
    infiniband.add_payload_data(pkt, buf, off, end)
    ib: IBInfo | None = pkt.ib
    if ib is None:
        return
    st: _State | None = ctx.reassembly
    if st is None or (not st.written and not st.data_wants):
        return
    pos = ib.plan.pos
    akey = st.write_key
    src = pkt.src
    dst = pkt.dst
    qp = ib.destqp
    if qp != st.write_qp or akey[0] is not src or akey[1] is not dst:
        akey = st.write_key = (src, dst, qp)
        st.write_qp = qp
        st.write_known = False
    if pos in ("first", "only"):
        if ib.reth is None:
            return
        va, rkey, dlen = ib.reth
        key: Key = (pkt.dst, pkt.src, rkey)      # the receiver's memory, written by the sender
        entry = st.written.get(key)
        if entry is None:
            if not st.data_wants or key not in st.data_wants:
                return
            if pos == "first":
                _remember(st, st.write_reqs, akey, _Request(key, va, dlen, ib.psn))
            _place_wanted(pkt, ctx, st, key, va, buf, off, end)
            return
        if pos == "first":
            _remember(st, st.write_reqs, akey, _Request(key, va, dlen, ib.psn))
        _place_written(st, entry, va, buf, off, end, pkt.frame.num)
        return
    if not st.write_known:
        st.write_rec = st.write_reqs.get(akey)
        st.write_known = True
    rec = st.write_rec
    if rec is None:
        return
    found = _ib_address(rec, ib.psn, pos, end - off)
    if found is not None:
        if st.data_wants and found[0].key in st.data_wants:
            _place_wanted(pkt, ctx, st, found[0].key, found[1], buf, off, end)
        else:
            placed = st.written.get(found[0].key)
            if placed is not None:
                _place_written(st, placed, found[1], buf, off, end, pkt.frame.num)


# --- the same over iWARP: a tagged DDP segment carries its own STag and tagged offset -----------------
def iwarp_read_request(pkt: Packet, request: tuple, ctx: Session) -> None:
    """An RDMAP Read Request (sink STag, sink TO, size, source STag, source TO) for an advertised Read
    chunk: its Read Responses come to the sink STag at the sink TO on."""
    st: _State | None = ctx.reassembly
    sink_stag, sink_to, size, src_stag, src_to = request
    if st is None:
        return
    key: Key = (pkt.dst, pkt.src, src_stag)      # the responder's memory, read by the requester
    if key not in st.read_jobs and (not st.data_wants or key not in st.data_wants):
        return
    _remember(st, st.read_reqs, (pkt.src, pkt.dst, sink_stag), _Request(key, src_to, size, sink_to))


def iwarp_tagged(pkt: Packet, opcode: int, stag: int, to: int, buf: bytes, off: int, end: int,
                 ctx: Session) -> None:
    """An RDMAP Write (opcode 0) or Read Response (2) segment's payload ``buf[off:end]``, placed at
    ``to`` in the buffer ``stag`` names."""
    st: _State | None = ctx.reassembly
    if st is None or end <= off:
        return
    if opcode == 0:
        key: Key = (pkt.dst, pkt.src, stag)
        entry = st.written.get(key)
        if entry is not None:
            _place_written(st, entry, to, buf, off, end, pkt.frame.num)
        elif st.data_wants and key in st.data_wants:
            _place_wanted(pkt, ctx, st, key, to, buf, off, end)
        return
    rec = st.read_reqs.get((pkt.dst, pkt.src, stag)) if opcode == 2 else None
    if rec is None:
        return
    for r in reversed(rec.items):
        if r.base <= to < r.base + r.length:
            _place_read(pkt, ctx, st, r.key, r.va + to - r.base, buf, off, end)
            return


def _covered(pieces: list[tuple[int, bytes]], length: int) -> bool:
    """Whether the pieces (offset in the segment, bytes) cover [0, length) without a hole.  Their offsets
    are distinct (keys of a dict of placed pieces): sorted as tuples, they sort by offset alone."""
    reach = 0
    for delta, data in sorted(pieces):
        if delta > reach:
            return False
        if delta + len(data) > reach:
            reach = delta + len(data)
        if reach >= length:
            return True
    return reach >= length


def _segment_bytes(pieces: list[tuple[int, bytes]], length: int) -> bytes | None:
    """The segment's first ``length`` bytes from the pieces that cover them, or None when a hole is
    left.  Nothing is allocated before the pieces are known to cover the length, so what the
    result costs is bounded by the bytes captured, whatever length the wire claims."""
    if len(pieces) == 1:
        delta, data = pieces[0]
        if delta == 0:
            # one transfer from the segment's start (the common case): no copy unless it overran
            if len(data) < length:
                return None
            return data if len(data) == length else data[:length]
    if not _covered(pieces, length):
        return None
    # pieces joined once (compiled, a bytearray grown with += is a generic call a piece)
    parts: list[bytes] = []
    have = 0
    for delta, data in sorted(pieces):
        if delta + len(data) > have:
            piece = data[have - delta:length - delta]
            parts.append(piece)
            have += len(piece)
        if have >= length:
            break
    return b"".join(parts)


def _rebuild_call(pkt: Packet, ctx: Session, job: _ReadJob) -> None:
    """Insert each Read chunk at its position in the reduced stream (padding restored, RFC 8166 §3.5.3)."""
    msg = job.msg
    seg_data: list[bytes] = []
    for i, s in enumerate(msg.reads):
        data = _segment_bytes(list(job.pieces[i].items()), s.length)
        if data is None:
            return
        seg_data.append(data)
    index = {id(s): i for i, s in enumerate(msg.reads)}
    reduced = job.reduced
    parts: list[bytes] = []
    size = 0
    taken = 0
    for position, segs in sorted(msg.read_chunks, key=lambda c: c[0] or 0):
        pos = position or 0         # a read segment's position is never None
        data = seg_data[index[id(segs[0])]] if len(segs) == 1 else \
            b"".join([seg_data[index[id(s)]] for s in segs])
        if pos == 0:
            parts = [data]
            taken = len(reduced)
            break
        need = pos - size
        if need > 0:
            piece = reduced[taken:taken + need]
            parts.append(piece)
            size += len(piece)
            taken += need
        parts.append(data)
        pad = -len(data) % 4
        size += len(data) + pad
        if pad:
            parts.append(b"\0" * pad)
    parts.append(reduced[taken:])
    whole = b"".join(parts)
    kind = ("RDMA READ" if pkt.ib is not None else "RDMAP Read") + \
        (" (Position Zero Read chunk)" if any(p == 0 for p, _ in msg.read_chunks) else " (Read chunks)")
    _show_rebuilt(pkt, ctx, msg, whole, [msg.frame] + sorted(set(job.frames)), kind, job.flow)


def _rebuild_reply(pkt: Packet, ctx: Session, msg: RpcRdmaMessage, got: list[tuple[bytes, list[int]] | None],
                   frames: list[int]) -> None:
    """A reply whose DDP-eligible results went into Write chunks: put each chunk's data back where the
    reply's NFS walk found the reduced item (the Write chunk it was paired with: the n-th DDP-eligible
    result takes the n-th Write chunk), padded."""
    rpc = msg.rpc
    span = msg.rpc_span
    if rpc is None or span is None or not rpc.ddp:
        return
    items = [d for d in rpc.ddp if not d.inline]
    if not items or any(d.chunk < 0 or d.chunk >= len(got) for d in items):
        return
    rbuf, roff, rend = span
    parts: list[bytes] = []
    taken = roff
    shift = 0
    for item in items:
        placed = got[item.chunk]
        if placed is None:
            return                  # a Write chunk with a hole: nothing to rebuild yet
        data = placed[0]
        at = roff + item.position - shift        # where the item stood in the reduced stream
        if at < taken or at > rend:
            return
        parts.append(rbuf[taken:at])
        taken = at
        parts.append(data)
        pad = -len(data) % 4
        if pad:
            parts.append(b"\0" * pad)
        shift += (item.length + 3) & ~3
    parts.append(rbuf[taken:rend])
    _show_rebuilt(pkt, ctx, msg, b"".join(parts), frames, _writes(pkt) + " (Write chunks)", msg.rpc_flow, quiet=True)


def _writes(pkt: Packet) -> str:
    """What moved a Write or Reply chunk, named as the reply's transport names it."""
    return "RDMA WRITE" if pkt.ib is not None else "RDMAP Write"


def _fill_rebuilt(lay: Layer) -> None:
    msg, frames, kind = lay._vals
    lay.add(REBUILT_XID, msg.xid)
    lay.add(REBUILT_FRAMES, ",".join(map(str, frames)))
    lay.add(REBUILT_LEN, lay.length)
    lay.add(REBUILT_KIND, kind)


# Final: compiled, a C static (a function named as a value is otherwise a look-up in the module's dict)
_FILL_REBUILT: Final = _fill_rebuilt


def _show_rebuilt(pkt: Packet, ctx: Session, msg: RpcRdmaMessage, whole: bytes, frames: list[int], kind: str,
                  flow: tuple | None, quiet: bool = False) -> None:
    xid = hex8(msg.xid)        # made once for the label and the Info text
    lay = pkt.add_layer("rpcrdma.rebuilt", None, whole, 0, len(whole),
                        f"[Rebuilt RPC message of XID 0x{xid}: {len(whole)} bytes from {len(frames)} frames]")
    lay._vals = (msg, frames, kind)     # the items are spelled out only when somebody asks for them
    lay._fill = _FILL_REBUILT
    msg.rebuilt_frames = frames
    msg.rebuilt_frame = pkt.frame.num
    pkt.note(REBUILT, msg)
    if pkt.proto in ("RoCEv2", "RoCE", "InfiniBand", ""):
        pkt.proto = "RPCoRDMA"
    if not quiet and wants_info(ctx):
        pkt.add_info(f"[rebuilt XID 0x{xid}]")   # no format spec: see hexfmt
    msg.rebuilt_rpc = onc_rpc.dissect_rpc(pkt, whole, 0, len(whole), ctx, flow, quiet=quiet)


def _written(st: _State, segs: list[Segment], host: str, peer: str,
             found: list[_Written]) -> tuple[bytes, list[int]] | None:
    """The bytes RDMA WRITEs put in these segments of ``host``'s memory, advertised to ``peer`` (lengths
    as the reply reports them), and the frames they came in, or None while a segment has a hole.  The
    entries of the handles are added to ``found``."""
    out = []
    frames: list[int] = []       # a set only when there are several (one, as a rule: a WRITE of a reply)
    written = st.written
    for s in segs:
        placed = written.get((host, peer, s.handle))
        if placed is not None:
            found.append(placed)
        pieces = placed.pieces if placed is not None else None
        if pieces is None:
            if s.length:
                return None
            continue
        lo = s.offset
        span = s.length if s.length > 1 else 1
        inside = []
        for addr, (data, frame) in pieces.items():
            rel = addr - lo           # one subtraction of two addresses (beyond machine integers, compiled)
            if rel < span and rel + len(data) > 0:        # a packet may straddle two segments
                inside.append((rel, data))
                frames.append(frame)
        piece = _segment_bytes(inside, s.length)
        if piece is None:
            return None
        out.append(piece)
    return b"".join(out), frames if len(frames) < 2 else sorted(set(frames))


def _want(st: _State, key: Key, xid: int, lo: int, hi: int) -> None:
    """Follow WRITEs to ``key`` within [lo, hi); a handle offered twice by one call covers both, and
    what WRITEs left under it for an earlier call goes."""
    written = st.written
    old = written.get(key)
    if old is None:
        written[key] = _Written(key, xid, lo, hi)
    elif old.xid == xid:
        if lo < old.lo:
            old.lo = lo
        if hi > old.hi:
            old.hi = hi
    else:
        st.forget_written(old)
        old.xid = xid
        old.lo = lo
        old.hi = hi


def _rpc_flow(pkt: Packet) -> tuple:
    return onc_rpc.rpc_flow(pkt)


def after_message(pkt: Packet, buf: bytes, off: int, end: int, ctx: Session, msg: RpcRdmaMessage) -> None:
    """Called by the RPC-over-RDMA dissectors for each message: follow its chunks."""
    if msg.proc not in (0, 1, 2) or msg.malformed is not None:
        return
    if not (msg.reads or msg.writes or msg.reply):
        return
    st = _state(ctx)
    if msg.reads:
        reduced = buf[off + msg.header_len:end] if msg.proc != 1 else b""
        owner = (pkt.src, pkt.dst)
        job = _ReadJob(msg, owner, reduced, msg.rpc_flow if msg.rpc_flow is not None else _rpc_flow(pkt))
        if job.need:
            jobs = st.read_jobs
            for s in msg.reads:
                key = _key(owner, s.handle)
                if key in jobs:
                    # an older message's Read chunks under this handle cannot complete now: give them up
                    _drop_job(st, key)
            for s in msg.reads:
                jobs[_key(owner, s.handle)] = job
            st.charge(job, len(reduced) + _ENTRY)
            if len(jobs) > _WANT_LIMIT:
                for key in list(islice(jobs, len(jobs) - _WANT_LIMIT + _WANT_LIMIT // 8)):
                    if key in jobs:
                        _drop_job(st, key)
    chunks = list(msg.writes)
    if msg.reply is not None:
        chunks.append(msg.reply)
    if not msg.is_reply:
        if chunks:
            xid = msg.xid
            host, peer = pkt.src, pkt.dst
            for c in chunks:
                for s in c:
                    _want(st, (host, peer, s.handle), xid, s.offset, s.offset + s.length)
            written = st.written
            if len(written) > _WANT_LIMIT:
                for key in list(islice(written, len(written) - _WANT_LIMIT + _WANT_LIMIT // 8)):
                    _let_go(st, written[key])
        return
    host, peer = pkt.dst, pkt.src   # a reply's Write list and Reply chunk are in its receiver's memory
    holes = False
    found: list[_Written] = []
    searched = 0          # how many of the chunks _written looked up
    if msg.reply is not None and msg.proc == 1:
        searched = 1
        got = _written(st, msg.reply, host, peer, found)
        holes = got is None
        if got is not None and got[0]:
            whole, frames = got
            _show_rebuilt(pkt, ctx, msg, whole, frames,          # sorted, each once (_written)
                          _writes(pkt) + " (Reply chunk)", _rpc_flow(pkt))
    elif msg.writes:
        searched = len(msg.writes)
        got_all = [_written(st, c, host, peer, found) for c in msg.writes]
        holes = any(g is None for g in got_all)
        frames = sorted({f for g in got_all if g is not None for f in g[1]})
        if frames:
            msg.rebuilt_frames = frames
            _rebuild_reply(pkt, ctx, msg, got_all, frames)
    if holes:
        # WRITE packets lost before the reply are sent again after it, and the reply with them: the
        # chunks stay followed (until the handle is advertised again, or the bounds give them up).
        return
    written = st.written
    if searched == len(chunks):
        # every handle of the reply is among those found: each let go by the very key it is under (and
        # once, a handle named twice), without making and looking up its key again
        for entry in found:
            if written.get(entry.key) is entry:
                _let_go(st, entry)
        return
    for c in chunks:
        for s in c:
            named = written.get((host, peer, s.handle))
            if named is not None:       # not pop(key, None): compiled, a method call is generic
                _let_go(st, named)


def _let_go(st: _State, entry: _Written) -> None:
    """Stop following a handle advertised for WRITEs, and let go of its bytes."""
    del st.written[entry.key]
    st.forget_written(entry)


# --- buffers an upper layer wants whole ----------------------------------------------------------------------
_DATA_WANT_LIMIT: Final = 1024        # buffers wanted at once
_DATA_WANT_BYTES: Final = 1 << 20     # the largest buffer wanted (an admin command's data is a few KiB)


def want_data(ctx: Session, owner: str, peer: str, handle: int, address: int, length: int, then: DataDone) -> bool:
    """Follow the RDMA WRITEs of ``peer`` into, or READs by ``peer`` of, the buffer [address, address + length)
    that ``owner`` advertised under ``handle``; ``then`` gets the whole buffer in the packet completing it.
    A handle wanted again replaces its earlier want.  False (nothing followed) for an empty buffer or one
    larger than an upper layer's structures are."""
    if length <= 0 or length > _DATA_WANT_BYTES:
        return False
    st = _state(ctx)
    key: Key = (owner, peer, handle)
    wants = st.data_wants
    old = wants.get(key)
    if old is not None:
        del wants[key]
        st.free(old)
    want = wants[key] = _DataWant(address, length, then)
    st.charge(want, _ENTRY)
    if len(wants) > _DATA_WANT_LIMIT:
        _bound(wants, _DATA_WANT_LIMIT, st)
    return True


def take_data(ctx: Session, owner: str, peer: str, handle: int) -> tuple[bytes, list[int]] | None:
    """Stop following the buffer ``owner`` advertised under ``handle`` (its command ended): the bytes that
    came for it from its start without a hole, and their frames; None when it was not followed or nothing
    came."""
    st: _State | None = ctx.reassembly
    if st is None:
        return None
    key: Key = (owner, peer, handle)
    want = st.data_wants.get(key)
    if want is None:
        return None
    del st.data_wants[key]
    st.free(want)
    if not want.pieces:
        return None
    reach = 0
    parts: list[bytes] = []
    for at, data in sorted(want.pieces.items()):
        if at > reach:
            break
        if at + len(data) > reach:
            parts.append(data[reach - at:])
            reach = at + len(data)
    return (b"".join(parts), want.frames) if parts else None


def _place_wanted(pkt: Packet, ctx: Session, st: _State, key: Key, addr: int, buf: bytes, off: int,
                  end: int) -> None:
    """A packet's bytes at ``addr`` in a wanted buffer (cut at its bounds); the packet that leaves no hole
    hands the whole buffer over."""
    want = st.data_wants.get(key)
    if want is None:
        return
    rel = addr - want.address
    lo = rel if rel > 0 else 0
    hi = rel + (end - off)
    if hi > want.length:
        hi = want.length
    if lo >= hi:
        return
    old = want.pieces.get(lo)
    if old is not None and len(old) >= hi - lo:
        return            # a repeat of bytes already placed
    data = buf[off + lo - rel:off + hi - rel]
    want.pieces[lo] = data
    st.charge(want, len(data) - (len(old) if old is not None else -_PIECE))
    want.filled += len(data) - (len(old) if old is not None else 0)
    num = pkt.frame.num
    if not want.frames or want.frames[-1] != num:
        want.frames.append(num)
    if want.filled < want.length or not _covered(list(want.pieces.items()), want.length):
        return
    del st.data_wants[key]
    st.free(want)
    whole = _segment_bytes(list(want.pieces.items()), want.length)
    if whole is not None:
        want.then.done(pkt, ctx, whole, want.frames)


class _Send(Dissector):
    """SEND payloads, called directly (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        dissect_send(pkt, buf, off, end, ctx)
        return True


class _ReadResponse(Dissector):
    """RDMA READ response payloads, called directly (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        dissect_read_response(pkt, buf, off, end, ctx)
        return True


class _Write(Dissector):
    """RDMA WRITE payloads, called directly (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        dissect_write(pkt, buf, off, end, ctx)
        return True


def _register(key: str, fn: Dissector) -> None:
    if ib_payload.by_key.get(key) is None:
        ib_payload.register(key, fn)


_register("send", _Send(dissect_send))
_register("read_response", _ReadResponse(dissect_read_response))
_register("write", _Write(dissect_write))
infiniband.bth_kind_observers.setdefault("read_request", []).append(observe_read_request)


# rpcrdma imports this module; bound last, the cycle resolves whichever is imported first.
