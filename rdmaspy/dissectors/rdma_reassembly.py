"""Reassembly under RPC-over-RDMA: multi-packet SENDs, and messages reduced into chunks.

1. RC SEND First/Middle/Last are joined per direction and queue pair, in PSN
   order, before anything parses the transport header: inline thresholds go up
   to 256 KiB, so one RPC-over-RDMA message may span many packets.  The whole
   message is offered to the ``ib.payload`` heuristics (the connection's port
   first), and the frames it came in are noted as ``rdma.send_frames``.
2. The data of Read chunks crosses by RDMA READ (request from the responder,
   responses from the requester, matched by PSN) and that of Write and Reply
   chunks by RDMA WRITE (matched by R_Key and virtual address to the segments'
   handle and offset).  Only the handles some RPC-over-RDMA message advertised
   are followed, so other RDMA traffic costs one dictionary lookup.  When all
   of a message's Read chunks have arrived, the whole RPC call is rebuilt and
   dissected in the packet that completed it (as Wireshark does for v1); a
   reply sent through a Reply chunk is rebuilt from the WRITEs when its
   RDMA_NOMSG arrives; a reply whose results went into Write chunks is rebuilt
   in its own packet, each chunk's data put back where the NFS walk found the
   reduced item.  Versions 1 and 2 both; InfiniBand transports only (iWARP
   messages are decoded, their chunks are not followed).
"""
from __future__ import annotations

from itertools import islice

from typing import TYPE_CHECKING, Any, Final

from ..fields import Field
from ..packet import Layer, Note, Packet
from ..budget import Budget
from ..registry import add_data, table, try_heuristics
from . import infiniband, onc_rpc

if TYPE_CHECKING:
    from ..engine import Session
    from .infiniband import IBInfo

FRAGMENT: Final = Field("rdma.fragment", 0, "SEND fragment of a message", "bool")
FRAG_INDEX: Final = Field("rdma.fragment.index", 0, "Fragment number")
REASM_FRAMES: Final = Field("rdma.reassembled.frames", 0, "Reassembled from frames", "str")
REASM_LEN: Final = Field("rdma.reassembled.length", 0, "Reassembled length", unit="bytes")
SEND_FRAMES: Final[Note[list[int]]] = Note("rdma.send_frames")   # the frames of a Send made of several
REBUILT_XID: Final = Field("rpcrdma.rebuilt.xid", 32, "XID", "hex")
REBUILT_FRAMES: Final = Field("rpcrdma.rebuilt.frames", 0, "Rebuilt from frames", "str")
REBUILT_LEN: Final = Field("rpcrdma.rebuilt.length", 0, "Rebuilt RPC message length", unit="bytes")
REBUILT_KIND: Final = Field("rpcrdma.rebuilt.kind", 0, "Rebuilt from", "str")

_SEND_LIMIT: Final = 1 << 20          # a SEND message larger than this is not kept (thresholds stop at 256 KiB)
_WANT_LIMIT: Final = 8192             # advertised handles followed at once
_BYTES_LIMIT: Final = 64 << 20        # chunk data kept at once
_ENTRY: Final = 256                   # what an entry costs beside its bytes, charged to the memory budget

ib_payload: Final = table("ib.payload")


class _Partial:
    __slots__ = ("parts", "frames", "next_psn", "size", "charged")

    def __init__(self, psn: int, data: bytes, frame: int) -> None:
        self.parts = [data]
        self.frames = [frame]
        self.next_psn = (psn + 1) & 0xFFFFFF
        self.size = len(data)
        self.charged = 0          # bytes charged to the memory budget for it


# A handle's owner: the host whose memory it names, and the peer it was given to.
Pair = tuple[str, str]


class _ReadJob:
    """The Read chunks of one message, waiting for their data."""

    __slots__ = ("msg", "owner", "reduced", "flow", "pieces", "frames", "need", "charged")

    def __init__(self, msg: Any, owner: Pair, reduced: bytes, flow: Any) -> None:
        self.msg = msg
        self.owner = owner        # whose memory the chunks are in (who advertised them), and to whom
        self.reduced = reduced
        self.flow = flow
        reads = msg.reads
        if len(reads) == 1:      # the common case, without building comprehensions
            self.pieces: dict[int, list[tuple[int, bytes]]] = {0: []}
            self.need = {0} if reads[0].length else set()
        else:
            self.pieces = {i: [] for i in range(len(reads))}
            self.need = {i for i, s in enumerate(reads) if s.length}
        self.frames: list[int] = []
        self.charged = 0


class _Transfer:
    """An RDMA READ response or RDMA WRITE in progress (or a READ request waiting for its response)."""

    __slots__ = ("owner", "handle", "va", "length", "parts", "frames", "next_psn", "kept", "charged")

    def __init__(self, owner: Pair, handle: int, va: int, length: int, psn: int) -> None:
        self.owner = owner        # whose memory ``handle`` names (the READ's or WRITE's target), and who moves it
        self.handle = handle
        self.va = va
        self.length = length      # the most bytes kept: the advertised room from ``va`` on, not the claimed length
        self.parts: list[bytes] = []
        self.frames: list[int] = []
        self.next_psn = psn
        self.kept = 0
        self.charged = 0

    def take(self, buf: bytes, off: int, end: int) -> int:
        """Keep this packet's payload, cut at the room the segment has left: bytes past it are an
        overrun the chunk analysis reports, never state.  Returns the bytes kept."""
        room = self.length - self.kept
        if end - off > room:
            end = off + max(room, 0)
        if end <= off:
            return 0
        self.parts.append(bytes(buf[off:end]))
        self.kept += end - off
        return end - off


_Charged = _Partial | _ReadJob | _Transfer


class _State:
    """What reassembly keeps across packets; a holder of the memory budget, which it charges with the
    bytes it keeps (and a fixed cost per entry) and releases as entries go."""

    __slots__ = ("sends", "read_jobs", "read_reqs", "read_active", "write_wants", "write_active", "written",
                 "kept", "held", "budget", "name")

    def __init__(self, budget: Budget) -> None:
        self.name = "reassemblies (SEND fragments, RDMA READ/WRITE chunk data)"
        self.held = 0
        self.budget = budget
        budget.join(self)
        self.sends: dict[tuple, _Partial] = {}
        # Handles are keyed with the host whose memory they name and the peer it gave them to: R_Keys
        # are small numbers of each device, two clients of one server use the same ones.
        self.read_jobs: dict[tuple[Pair, int], _ReadJob] = {}   # (owner, handle) -> job
        self.read_reqs: dict[tuple, _Transfer] = {}        # (requester of READ, target, PSN) -> request
        self.read_active: dict[tuple, _Transfer] = {}      # (src, dst, QP) -> response in progress
        # (owner, handle) -> (XID of the call that advertised it, lowest offset, end of its highest segment)
        self.write_wants: dict[tuple[Pair, int], tuple[int, int, int]] = {}
        self.write_active: dict[tuple, _Transfer] = {}
        # (owner, handle) -> (va, data, frames)
        self.written: dict[tuple[Pair, int], list[tuple[int, bytes, list[int]]]] = {}
        self.kept = 0             # bytes in ``written``

    def charge(self, obj: _Charged, n: int) -> None:
        obj.charged += n
        self.budget.charge(self, n)

    def free(self, obj: _Charged | None) -> None:
        if obj is not None and obj.charged:
            self.budget.release(self, obj.charged)
            obj.charged = 0

    def forget_written(self, key: tuple[Pair, int]) -> None:
        data = self.written.pop(key, None)
        if data:
            n = sum(len(d) + _ENTRY for _, d, _f in data)
            self.kept -= n
            self.budget.release(self, n)

    def shed(self, need: int) -> int:
        """Memory budget: give up the oldest SEND messages, transfers, chunk data and Read jobs (their
        messages are then shown without the rebuild)."""
        start = self.held
        gone = 0
        for d in (self.sends, self.write_active, self.read_active, self.read_reqs):
            for key in list(d):          # keys listed once: popping the first key again and again is quadratic
                if start - self.held >= need:
                    return gone
                self.free(d.pop(key))
                gone += 1
        for key in list(self.written):
            if start - self.held >= need:
                return gone
            self.forget_written(key)
            gone += 1
        for key in list(self.read_jobs):
            if start - self.held >= need:
                return gone
            if key in self.read_jobs:
                _drop_job(self, key)
                gone += 1
        return gone


def _drop_job(st: _State, key: tuple[Pair, int]) -> None:
    """Give up the Read job under ``key``, under every handle it is listed (a message's segments)."""
    jobs = st.read_jobs
    job = jobs.pop(key)
    for s in job.msg.reads:
        k = (job.owner, s.handle)
        if jobs.get(k) is job:
            del jobs[k]
    st.free(job)


def _state(ctx: Session) -> _State:
    st: _State | None = ctx.state.get("rdma_reassembly")
    if st is None:
        st = ctx.state["rdma_reassembly"] = _State(ctx.budget)
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
        add_data(pkt, buf, off, end)


# --- SEND First/Middle/Last ---------------------------------------------------------------------------
def dissect_send(pkt: Packet, buf: bytes, off: int, end: int, ctx: Session) -> None:
    ib: IBInfo | None = pkt.ib
    if ib is None or ib.plan.pos == "only":
        _offer(pkt, buf, off, end, ctx)
        return
    pos = ib.plan.pos
    st = _state(ctx)
    key = (pkt.src, pkt.dst, ib.destqp)
    psn = ib.psn
    num = pkt.frame.num
    if pos == "first":
        st.free(st.sends.get(key))
        opened = st.sends[key] = _Partial(psn, bytes(buf[off:end]), num)
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
        add_data(pkt, buf, off, end)
        return
    part.parts.append(bytes(buf[off:end]))
    part.frames.append(num)
    part.size += end - off
    part.next_psn = (psn + 1) & 0xFFFFFF
    st.charge(part, end - off)
    if part.size > _SEND_LIMIT:
        del st.sends[key]
        st.free(part)
        pkt.add_expert("warning", "reassembly", f"SEND message over {_SEND_LIMIT} bytes: not reassembled")
        add_data(pkt, buf, off, end)
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
    add_data(pkt, buf, off, end)


# --- RDMA READ and WRITE moving chunk data --------------------------------------------------------------
def observe_read_request(pkt: Packet, ib: IBInfo, ctx: Session) -> None:
    """BTH observer: remember READ requests that target an advertised Read chunk (their payload is empty)."""
    if ib.plan.kind != "read_request" or ib.reth is None:
        return
    st = _state(ctx)
    va, rkey, dlen = ib.reth
    owner = (pkt.dst, pkt.src)
    if (owner, rkey) in st.read_jobs:
        t = _Transfer(owner, rkey, va, dlen, ib.psn)
        st.free(st.read_reqs.get((pkt.src, pkt.dst, ib.psn)))
        st.read_reqs[(pkt.src, pkt.dst, ib.psn)] = t
        st.charge(t, _ENTRY)
        _bound(st.read_reqs, st=st)


def dissect_read_response(pkt: Packet, buf: bytes, off: int, end: int, ctx: Session) -> None:
    add_data(pkt, buf, off, end)
    ib: IBInfo | None = pkt.ib
    if ib is None:
        return
    st: _State | None = ctx.state.get("rdma_reassembly")
    if st is None or not st.read_reqs and not st.read_active:
        return
    pos = ib.plan.pos
    akey = (pkt.src, pkt.dst, ib.destqp)
    if pos in ("first", "only"):
        t = st.read_reqs.pop((pkt.dst, pkt.src, ib.psn), None)
        if t is None:
            return
        t.next_psn = ib.psn
    else:
        t = st.read_active.get(akey)
        if t is None:
            return
    if ib.psn != t.next_psn:
        st.read_active.pop(akey, None)
        st.free(t)
        pkt.add_expert("warning", "reassembly", f"READ response PSN {ib.psn}, expected {t.next_psn}: "
                       "the chunk is not rebuilt")
        return
    st.charge(t, t.take(buf, off, end))
    t.frames.append(pkt.frame.num)
    t.next_psn = (ib.psn + 1) & 0xFFFFFF
    if pos == "first":
        old = st.read_active.get(akey)
        if old is not t:
            st.free(old)
        st.read_active[akey] = t
        _bound(st.read_active, st=st)
        return
    if pos == "middle":
        return
    st.read_active.pop(akey, None)
    st.free(t)
    _read_done(pkt, ctx, st, t)


def _read_done(pkt: Packet, ctx: Session, st: _State, t: _Transfer) -> None:
    job = st.read_jobs.get((t.owner, t.handle))
    if job is None:
        return
    data = b"".join(t.parts)
    st.charge(job, len(data))
    job.frames.extend(t.frames)
    segs = job.msg.reads
    for i, s in enumerate(segs):
        if s.handle == t.handle and s.offset <= t.va < s.offset + max(s.length, 1):
            job.pieces[i].append((t.va - s.offset, data))
            if _covered(job.pieces[i], s.length):
                job.need.discard(i)
            break
    if job.need:
        return
    for s in segs:
        st.read_jobs.pop((job.owner, s.handle), None)
    st.free(job)
    _rebuild_call(pkt, ctx, job)


def _covered(pieces: list[tuple[int, bytes]], length: int) -> bool:
    """Whether the pieces (offset in the segment, bytes) cover [0, length) without a hole."""
    reach = 0
    for delta, data in sorted(pieces, key=lambda p: p[0]):
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
    out = bytearray()
    for delta, data in sorted(pieces, key=lambda p: p[0]):
        if delta + len(data) > len(out):
            out += data[len(out) - delta:length - delta]
        if len(out) >= length:
            break
    return bytes(out)


def _rebuild_call(pkt: Packet, ctx: Session, job: _ReadJob) -> None:
    """Insert each Read chunk at its position in the reduced stream (padding restored, RFC 8166 §3.5.3)."""
    msg = job.msg
    seg_data: list[bytes] = []
    for i, s in enumerate(msg.reads):
        data = _segment_bytes(job.pieces[i], s.length)
        if data is None:
            return
        seg_data.append(data)
    index = {id(s): i for i, s in enumerate(msg.reads)}
    reduced = job.reduced
    parts: list[bytes] = []
    size = 0
    taken = 0
    for pos, segs in sorted(msg.read_chunks, key=lambda c: c[0]):
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
    kind = "RDMA READ (Position Zero Read chunk)" if any(p == 0 for p, _ in msg.read_chunks) \
        else "RDMA READ (Read chunks)"
    _show_rebuilt(pkt, ctx, msg, whole, [msg.frame] + job.frames, kind, job.flow)


def _rebuild_reply(pkt: Packet, ctx: Session, msg: Any, got: list, frames: list[int]) -> None:
    """A reply whose DDP-eligible results went into Write chunks: put each chunk's data back where the
    reply's NFS walk found the reduced item (the n-th reduced item is the n-th Write chunk), padded."""
    rpc = msg.rpc
    span = msg.rpc_span
    if rpc is None or span is None or not rpc.ddp:
        return
    items = [d for d in rpc.ddp if not d.inline]
    if not items or len(items) > len(got) or any(g is None for g in got[:len(items)]):
        return
    rbuf, roff, rend = span
    parts: list[bytes] = []
    taken = roff
    shift = 0
    for item, (data, _fr) in zip(items, got):
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
    _show_rebuilt(pkt, ctx, msg, b"".join(parts), frames, "RDMA WRITE (Write chunks)", msg.rpc_flow, quiet=True)


def _fill_rebuilt(lay: Layer) -> None:
    msg, frames, kind = lay._vals
    lay.add(REBUILT_XID, msg.xid)
    lay.add(REBUILT_FRAMES, ",".join(map(str, frames)))
    lay.add(REBUILT_LEN, lay.length)
    lay.add(REBUILT_KIND, kind)


def _show_rebuilt(pkt: Packet, ctx: Session, msg: Any, whole: bytes, frames: list[int], kind: str, flow: Any,
                  quiet: bool = False) -> None:
    lay = pkt.add_layer("rpcrdma.rebuilt", None, whole, 0, len(whole),
                        f"[Rebuilt RPC message of XID 0x{msg.xid:08x}: {len(whole)} bytes from {len(frames)} frames]")
    lay._vals = (msg, frames, kind)     # the items are spelled out only when somebody asks for them
    lay._fill = _fill_rebuilt
    msg.rebuilt_frames = frames
    msg.rebuilt_frame = pkt.frame.num
    pkt.note(rpcrdma.REBUILT, msg)
    if pkt.proto in ("RoCEv2", "RoCE", "InfiniBand", ""):
        pkt.proto = "RPCoRDMA"
    if not quiet:
        pkt.add_info(f"[rebuilt XID 0x{msg.xid:08x}]")
    msg.rebuilt_rpc = onc_rpc.dissect_rpc(pkt, whole, 0, len(whole), ctx, flow, quiet=quiet)


def dissect_write(pkt: Packet, buf: bytes, off: int, end: int, ctx: Session) -> None:
    add_data(pkt, buf, off, end)
    ib: IBInfo | None = pkt.ib
    if ib is None:
        return
    st: _State | None = ctx.state.get("rdma_reassembly")
    if st is None or not st.write_wants:
        return
    pos = ib.plan.pos
    akey = (pkt.src, pkt.dst, ib.destqp)
    if pos in ("first", "only"):
        if ib.reth is None:
            return
        va, rkey, dlen = ib.reth
        owner = (pkt.dst, pkt.src)
        want = st.write_wants.get((owner, rkey))
        if want is None:
            return
        _xid, lo, hi = want
        if not lo <= va < hi:
            return      # outside every segment advertised with this handle: a finding of the analysis, no state
        t = _Transfer(owner, rkey, va, min(dlen, hi - va), ib.psn)
    else:
        active = st.write_active.get(akey)
        if active is None:
            return
        t = active
        if ib.psn != t.next_psn:
            del st.write_active[akey]
            st.free(t)
            return
    st.charge(t, t.take(buf, off, end))
    t.frames.append(pkt.frame.num)
    t.next_psn = (ib.psn + 1) & 0xFFFFFF
    if pos == "first":
        st.free(st.write_active.get(akey))
        st.write_active[akey] = t
        _bound(st.write_active, st=st)
        return
    if pos == "middle":
        return
    st.write_active.pop(akey, None)
    st.free(t)
    data = b"".join(t.parts)
    if st.written and st.kept + len(data) > _BYTES_LIMIT:
        for key in list(st.written):          # the oldest chunk data goes first
            st.forget_written(key)
            if st.kept + len(data) <= _BYTES_LIMIT:
                break
    n = len(data) + _ENTRY
    st.kept += n
    st.budget.charge(st, n)
    st.written.setdefault((t.owner, t.handle), []).append((t.va, data, t.frames))


def _written(st: _State, segs: list, owner: Pair) -> tuple[bytes, list[int]] | None:
    """The bytes RDMA WRITEs put in these segments of ``owner``'s memory (lengths as the reply reports
    them), or None."""
    written = st.written
    if len(segs) == 1:
        # one segment filled by one WRITE from its start: the common case, no copy
        s = segs[0]
        pieces = written.get((owner, s.handle))
        if pieces is not None and len(pieces) == 1:
            va, data, fr = pieces[0]
            if va == s.offset:
                if len(data) < s.length:
                    return None
                return (data if len(data) == s.length else data[:s.length]), list(fr)
    out = []
    frames: list[int] = []
    for s in segs:
        pieces = written.get((owner, s.handle))
        if not pieces:
            if s.length:
                return None
            continue
        inside = [(va - s.offset, d) for va, d, fr in pieces if s.offset <= va < s.offset + max(s.length, 1)]
        for va, _d, fr in pieces:
            if s.offset <= va < s.offset + max(s.length, 1):
                frames.extend(fr)
        piece = _segment_bytes(inside, s.length)
        if piece is None:
            return None
        out.append(piece)
    return b"".join(out), frames


def _want(wants: dict[tuple[Pair, int], tuple[int, int, int]], key: tuple[Pair, int], xid: int, lo: int,
          hi: int) -> None:
    """Follow WRITEs to ``key`` (owner, handle) within [lo, hi); a handle offered twice by one call covers
    both."""
    old = wants.get(key)
    if old is not None and old[0] == xid:
        lo = min(lo, old[1])
        hi = max(hi, old[2])
    wants[key] = (xid, lo, hi)


def _rpc_flow(pkt: Packet) -> tuple:
    return rpcrdma.rpc_flow(pkt)


def after_message(pkt: Packet, buf: bytes, off: int, end: int, ctx: Session, msg: Any) -> None:
    """Called by the RPC-over-RDMA dissectors for each message: follow its chunks."""
    if msg.proc not in (0, 1, 2) or msg.malformed is not None:
        return
    if not (msg.reads or msg.writes or msg.reply):
        return
    st = _state(ctx)
    if msg.reads:
        reduced = bytes(buf[off + msg.header_len:end]) if msg.proc != 1 else b""
        owner = (pkt.src, pkt.dst)
        job = _ReadJob(msg, owner, reduced, msg.rpc_flow if msg.rpc_flow is not None else _rpc_flow(pkt))
        if job.need:
            jobs = st.read_jobs
            for s in msg.reads:
                if (owner, s.handle) in jobs:
                    # an older message's Read chunks under this handle cannot complete now: give them up
                    _drop_job(st, (owner, s.handle))
            for s in msg.reads:
                jobs[(owner, s.handle)] = job
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
            wants = st.write_wants
            xid = msg.xid
            owner = (pkt.src, pkt.dst)
            for c in chunks:
                for s in c:
                    _want(wants, (owner, s.handle), xid, s.offset, s.offset + s.length)
            if len(wants) > _WANT_LIMIT:
                _bound(wants)
        return
    client = (pkt.dst, pkt.src)   # a reply's Write list and Reply chunk are in its receiver's memory
    if msg.reply is not None and msg.proc == 1:
        got = _written(st, msg.reply, client)
        if got is not None and got[0]:
            whole, frames = got
            _show_rebuilt(pkt, ctx, msg, whole, sorted(set(frames)),
                          "RDMA WRITE (Reply chunk)", _rpc_flow(pkt))
    elif msg.writes:
        got_all = [_written(st, c, client) for c in msg.writes]
        frames = sorted({f for g in got_all if g is not None for f in g[1]})
        if frames:
            msg.rebuilt_frames = frames
            _rebuild_reply(pkt, ctx, msg, got_all, frames)
    for c in chunks:
        for s in c:
            st.write_wants.pop((client, s.handle), None)
            st.forget_written((client, s.handle))


def _register(key: str, fn: Any) -> None:
    if ib_payload.by_key.get(key) is None:
        ib_payload.register(key, fn)


_register("send", dissect_send)
_register("read_response", dissect_read_response)
_register("write", dissect_write)
infiniband.bth_observers.append(observe_read_request)


# rpcrdma imports this module; bound last, the cycle resolves whichever is imported first.
from . import rpcrdma  # noqa: E402
