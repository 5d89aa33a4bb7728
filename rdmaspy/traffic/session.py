"""Requester and responder of the generator, written against an abstract link.

The link is what moves bytes: Sends, RDMA Reads and Writes, and registered memory.
``verbs.VerbsLink`` is the real one (pyverbs control path, native hot path);
``LoopLink`` below joins two sessions in memory so that the whole protocol logic
(marshalling, credits, chunk planning, version fallback, faults) runs in tests
without an RDMA device.
"""
from __future__ import annotations

import collections
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

from . import protocol as P
from .protocol import Chunks, Inline, Message, ProtocolError, Segment

FAULTS_CLIENT = ("exceed-credits", "xid-mismatch", "skip-done")
FAULTS_SERVER = ("overrun-reply", "xid-mismatch")
OVERRUN_BYTES = 64        # how far past a Reply chunk the overrun fault writes
REGION_SLACK = 4096       # registered bytes past every chunk, so an overrun stays in the region
F_RESP = P.F_RESPONSE


class Link(Protocol):
    """What a session needs from the transport (see verbs.VerbsLink, LoopLink)."""

    def send(self, data: bytes, invalidate: int = 0) -> None: ...
    def write(self, segs: Sequence[Segment], data: bytes) -> None: ...
    def read(self, segs: Sequence[Segment]) -> bytes: ...
    def region(self, slot: int, size: int) -> "Region": ...


@dataclass(slots=True)
class Region:
    """A slice of registered memory: what a chunk advertises and where its bytes are."""
    handle: int
    addr: int
    size: int
    view: memoryview

    def segments(self, length: int, max_seg: int, skip: int = 0) -> tuple[Segment, ...]:
        if skip + length > self.size:
            raise ProtocolError(f"{length} bytes do not fit a {self.size}-byte region")
        return P.split_segments(self.handle, self.addr + skip, length, max_seg)

    def read_at(self, segs: Sequence[Segment]) -> bytes:
        return b"".join(bytes(self.view[s.offset - self.addr:s.offset - self.addr + s.length]) for s in segs)


# ---------------------------------------------------------------- responder

@dataclass(slots=True)
class ServerStats:
    calls: int = 0
    by_proc: collections.Counter = field(default_factory=collections.Counter)
    errors: int = 0
    dones: int = 0
    vers_errors: int = 0


class Server:
    """The responder: executes the generator's RPC program, one message at a time."""

    def __init__(self, link: Link, *, versions: Sequence[int] = (1, 2), credits: int = 32,
                 inline: Inline = Inline(), max_seg: int = 1 << 20, pull_slots: int = 16,
                 pull_size: int = 1 << 20, faults: Sequence[str] = ()) -> None:
        self.link = link
        self.versions = tuple(versions)
        self.credits = credits
        self.inline = inline
        self.max_seg = max_seg
        self.faults = frozenset(faults)
        self.vers: int | None = None
        self.stats = ServerStats()
        self.pull_size = pull_size
        self._pull_free = collections.deque(range(pull_slots))
        self._pull_pending: collections.OrderedDict[int, int] = collections.OrderedDict()
        self.peer_props: dict[int, int] = {}

    # the credit word this responder puts in every message
    def _credit(self, vers: int) -> int:
        return P.credit2(self.credits, self.credits) if vers == 2 else self.credits

    def handle(self, data: bytes) -> None:
        try:
            m = P.parse(data)
        except ProtocolError:
            self._bad_header(data)
            return
        if m.vers not in self.versions:
            self._err_vers(m)
            return
        if m.vers == 2 and m.proc == P.RDMA2_CONNPROP:
            self.vers = 2
            self.peer_props = P.props_dict(m.props)
            self.inline = Inline(min(self.inline.call, self.peer_props.get(P.PROP_MAX_SEND, self.inline.call)),
                                 min(self.inline.reply, self.peer_props.get(P.PROP_RECV_BUF, self.inline.reply)))
            self.link.send(P.build(Message(m.xid, 2, self._credit(2), P.RDMA2_CONNPROP, F_RESP,
                                           props=self.props())))
            return
        if m.vers == 1 and m.proc == P.RDMA_DONE:
            self.stats.dones += 1
            slot = self._pull_pending.pop(m.xid, None)
            if slot is not None:
                self._pull_free.append(slot)
            return
        if m.proc not in (P.RDMA_MSG, P.RDMA_NOMSG):        # same numbers in v1 and v2
            self._error(m, P.ERR_CHUNK if m.vers == 1 else P.RDMA2_ERR_INVAL_HTYPE)
            return
        self.vers = m.vers
        try:
            call = self._call_bytes(m)
            rpc = P.parse_rpc(call)
        except ProtocolError:
            self._error(m, P.ERR_CHUNK if m.vers == 1 else P.RDMA2_ERR_BAD_XDR)
            return
        self.stats.calls += 1
        self.stats.by_proc[rpc.proc] += 1
        try:
            self._execute(m, rpc)
        except ProtocolError:
            # chunks the results do not fit, a segment the peer did not register: answer, serve on
            self._error(m, P.ERR_CHUNK if m.vers == 1 else P.RDMA2_ERR_REPLY_RESOURCE, 0)

    def props(self) -> tuple[tuple[int, bytes], ...]:
        return P.props_u32(((P.PROP_MAX_SEND, self.inline.reply), (P.PROP_RECV_BUF, self.inline.call),
                            (P.PROP_MAX_SEG_SIZE, self.max_seg), (P.PROP_MAX_SEG_COUNT, 16),
                            (P.PROP_RVRSDIR, 0)))

    def _call_bytes(self, m: Message) -> bytes:
        reads = m.chunks.reads
        if m.proc == P.RDMA_NOMSG:
            if not reads or any(r.position != 0 for r in reads):
                raise ProtocolError("RDMA_NOMSG call without a Position Zero Read chunk")
            return self.link.read([Segment(r.handle, r.length, r.offset) for r in reads])
        if not reads:
            return m.payload
        # One Read chunk at a position past the RPC header: the data item it stands for
        # goes back into the XDR stream there, with its round-up padding.
        pos = reads[0].position
        if any(r.position != pos for r in reads) or pos > len(m.payload):
            raise ProtocolError("Read chunk position outside the call")
        data = self.link.read([Segment(r.handle, r.length, r.offset) for r in reads])
        return m.payload[:pos] + data + bytes(P.pad4(len(data)) - len(data)) + m.payload[pos:]

    def _execute(self, m: Message, rpc: P.Rpc) -> None:
        proc, body, xid = rpc.proc, rpc.body, m.xid
        writes: tuple[tuple[Segment, ...], ...] = ()
        if proc == P.PROC_NULL:
            results = b""
        elif proc == P.PROC_ECHO:
            n = P.read_u32(body)
            results = body[:4 + P.pad4(n)]
        elif proc in (P.PROC_READ, P.PROC_BIGREPLY, P.PROC_PULLREPLY):
            n = P.read_u32(body)
            if n > self._reply_room(m, proc):
                # the size is the peer's to choose: check it against where the reply can go before
                # making the data, so a hostile 4 GiB asks for nothing but this error
                self._error(m, P.ERR_CHUNK if m.vers == 1 else P.RDMA2_ERR_REPLY_RESOURCE, n)
                return
            data = P.pattern(n, xid)
            if proc == P.PROC_READ and m.chunks.writes:
                # DDP: the data goes into the first Write chunk; the reply keeps the length.
                chunk = m.chunks.writes[0]
                writes = (P.fill_segments(chunk, n),) + m.chunks.writes[1:]
                self.link.write(writes[0], data)
                results = P.xdr_u32(n)
            else:
                results = P.xdr_opaque(data)
        elif proc == P.PROC_WRITE:
            n = P.read_u32(body)
            data = body[4:4 + n]
            ok = len(data) == n and data == P.pattern(n, xid)
            results = P.xdr_u32(n if ok else 0)
        else:
            self._send_reply(m, P.rpc_reply(rpc.xid, b"", P.PROC_UNAVAIL), ())
            return
        # The reply carries the call's RPC XID (which the requester's fault may have made
        # differ from the transport XID); the responder's own fault changes it.
        rxid = rpc.xid ^ 0x5A5A if "xid-mismatch" in self.faults else rpc.xid
        self._send_reply(m, P.rpc_reply(rxid, results), writes)

    def _reply_room(self, m: Message, proc: int) -> int:
        """The most result bytes this call's reply can carry: its first Write chunk for a READ that
        offers one, else inline, its Reply chunk or (version 1) a responder-provided Read chunk."""
        if proc == P.PROC_READ and m.chunks.writes:
            return sum(s.length for s in m.chunks.writes[0])
        room = self.inline.reply
        if m.chunks.reply is not None:
            room = max(room, sum(s.length for s in m.chunks.reply))
        if m.vers == 1:
            room = max(room, self.pull_size)
        return room

    def _send_reply(self, m: Message, reply: bytes, writes) -> None:
        vers = m.vers
        hdr = self._hdr(m, P.RDMA_MSG, Chunks(writes=writes))
        inline = P.build(_with_payload(hdr, reply))
        if len(inline) <= self.inline.reply:
            self.link.send(inline)
            return
        rc = m.chunks.reply
        if rc is not None and sum(s.length for s in rc) >= len(reply):
            filled = P.fill_segments(rc, len(reply))
            data = reply
            if "overrun-reply" in self.faults:
                # Write past the chunk the requester offered (its region has slack, so the
                # transfer succeeds on the wire; an analyzer flags it).
                data = reply + bytes(OVERRUN_BYTES)
                last = filled[-1]
                filled = filled[:-1] + (Segment(last.handle, last.length + OVERRUN_BYTES, last.offset),)
                self.link.write(filled, data)
                filled = P.fill_segments(rc, len(reply))
            else:
                self.link.write(filled, data)
            self.link.send(P.build(self._hdr(m, P.RDMA_NOMSG, Chunks(writes=writes, reply=filled))))
            return
        if vers == 1 and len(reply) <= self.pull_size:
            # seeds/001: a responder-provided Position Zero Read chunk, released by RDMA_DONE.
            slot = self._pull_slot()
            region = self.link.region(1000 + slot, self.pull_size)
            region.view[:len(reply)] = reply
            self._pull_pending[m.xid] = slot
            segs = region.segments(len(reply), self.max_seg)
            self.link.send(P.build(self._hdr(m, P.RDMA_NOMSG,
                                             Chunks(reads=P.read_segments(0, segs), writes=writes))))
            return
        self._error(m, P.ERR_CHUNK if vers == 1 else P.RDMA2_ERR_REPLY_RESOURCE, len(reply))

    def _pull_slot(self) -> int:
        if not self._pull_free:
            # A requester that never sends RDMA_DONE: take back the oldest exposure.
            _, slot = self._pull_pending.popitem(last=False)
            return slot
        return self._pull_free.popleft()

    def _hdr(self, m: Message, proc: int, chunks: Chunks) -> Message:
        if m.vers == 2:
            return Message(m.xid, 2, self._credit(2), proc, F_RESP, 0, chunks)
        return Message(m.xid, 1, self._credit(1), proc, chunks=chunks)

    def _error(self, m: Message, code: int, *args: int) -> None:
        self.stats.errors += 1
        if m.vers == 2:
            err = (code, *args) if code in (P.RDMA2_ERR_REPLY_RESOURCE,) else (code,)
            self.link.send(P.build(Message(m.xid, 2, self._credit(2), P.RDMA2_ERROR, F_RESP, error=err)))
        else:
            self.link.send(P.build(Message(m.xid, 1, self._credit(1), P.RDMA_ERROR, error=(code,))))

    def _err_vers(self, m: Message) -> None:
        # The responder answers in the highest version it speaks, naming its range.
        self.stats.vers_errors += 1
        lo, hi = min(self.versions), max(self.versions)
        if hi >= 2:
            self.link.send(P.build(Message(m.xid, 2, self._credit(2), P.RDMA2_ERROR, F_RESP,
                                           error=(P.RDMA2_ERR_VERS, lo, hi))))
        else:
            self.link.send(P.build(Message(m.xid, 1, self._credit(1), P.RDMA_ERROR,
                                           error=(P.ERR_VERS, lo, hi))))

    def _bad_header(self, data: bytes) -> None:
        self.stats.errors += 1
        if len(data) >= 4:
            xid = int.from_bytes(data[:4], "big")
            self.link.send(P.build(Message(xid, 1, self._credit(1), P.RDMA_ERROR, error=(P.ERR_CHUNK,))))


def _with_payload(m: Message, payload: bytes) -> Message:
    m.payload = payload
    return m


# ---------------------------------------------------------------- requester

@dataclass(slots=True)
class Txn:
    xid: int
    plan: P.CallPlan
    slot: int
    start: float
    region: Region | None = None
    reply_off: int = 0


@dataclass(slots=True)
class Result:
    xid: int
    proc: int
    size: int
    ok: bool
    latency: float
    how: str            # inline / write-chunk / reply-chunk / read-chunk-reply / error
    detail: str = ""


class Client:
    """The requester: plans, marshals and completes calls within the credit grant."""

    def __init__(self, link: Link, *, version: int = 1, credits: int = 32, inline: Inline | None = None,
                 max_seg: int = 1 << 20, slots: int = 32, slot_size: int = 1 << 20,
                 faults: Sequence[str] = (), clock: Callable[[], float] = time.perf_counter,
                 first_xid: int = 0x2D000001) -> None:
        self.link = link
        self.want_version = version
        self.vers = version
        self.request = credits
        self.inline = inline or Inline(P.V1_INLINE_DEFAULT, P.V1_INLINE_DEFAULT)
        self.max_seg = max_seg
        self.slot_size = slot_size
        self.faults = frozenset(faults)
        self.credits = P.Credits(1, overcommit=1 if "exceed-credits" in self.faults else 0)
        self.clock = clock
        self._xid = first_xid
        self._free = collections.deque(range(slots))
        self.pending: dict[int, Txn] = {}
        self.ready = version == 1           # v2 waits for the CONNPROP exchange
        self.fell_back = False
        self.peer_props: dict[int, int] = {}
        self._handshake_xid = 0
        self._deferred: list[bytes] = []

    def next_xid(self) -> int:
        x = self._xid
        self._xid = (self._xid + 1) & 0xFFFFFFFF or 1
        return x

    def _credit(self) -> int:
        return P.credit2(self.request, self.request) if self.vers == 2 else self.request

    # -- connection start

    def start(self) -> None:
        """v2: the first message is RDMA2_CONNPROP, no larger than v1's 1024-byte inline."""
        if self.want_version != 2:
            return
        self._handshake_xid = self.next_xid()
        props = P.props_u32(((P.PROP_MAX_SEND, self.inline.call), (P.PROP_RECV_BUF, self.inline.reply),
                             (P.PROP_MAX_SEG_SIZE, self.max_seg), (P.PROP_MAX_SEG_COUNT, 16),
                             (P.PROP_RVRSDIR, 0)))
        self.credits.sent()
        self.link.send(P.build(Message(self._handshake_xid, 2, self._credit(), P.RDMA2_CONNPROP, 0,
                                       props=props)))

    def can_call(self) -> bool:
        return self.ready and bool(self._free) and self.credits.can_send()

    # -- calls

    def call(self, proc: int, size: int = 0, defer: bool = False) -> int:
        """Start one call; ``defer`` holds its Send back until ``flush`` (a burst)."""
        if not self.can_call():
            raise ProtocolError("no credit or slot for another call")
        xid = self.next_xid()
        plan = P.plan_call(proc, size, self.inline, self.vers, 28 if self.vers == 1 else 32)
        slot = self._free.popleft()
        txn = Txn(xid, plan, slot, self.clock())
        args = b""
        reads: tuple[P.ReadSegment, ...] = ()
        writes: tuple[tuple[Segment, ...], ...] = ()
        reply = None
        need = plan.rdma_buffer
        if need + REGION_SLACK // 2 > self.slot_size:
            self._free.appendleft(slot)
            raise ProtocolError(f"{need} bytes of chunks exceed the {self.slot_size}-byte slot")
        region = self.link.region(slot, self.slot_size) if need or proc in (P.PROC_READ, P.PROC_WRITE) else None
        txn.region = region
        off = 0
        if proc == P.PROC_ECHO:
            args = P.xdr_opaque(P.pattern(size, xid))
        elif proc in (P.PROC_READ, P.PROC_BIGREPLY, P.PROC_PULLREPLY):
            args = P.xdr_u32(size)
        if proc == P.PROC_READ:
            assert region is not None
            writes = (region.segments(size, self.max_seg),)
            off = P.pad4(size)
        if plan.reply_chunk:
            assert region is not None       # a Reply chunk is in rdma_buffer
            reply = region.segments(plan.reply_chunk, self.max_seg, off)
            txn.reply_off = off
            off += plan.reply_chunk + REGION_SLACK // 2
        rpc_xid = xid ^ 0xFFFF if "xid-mismatch" in self.faults else xid
        mproc = P.RDMA_MSG
        if proc == P.PROC_WRITE:
            assert region is not None
            data = P.pattern(size, xid)
            region.view[:size] = data
            # The Read chunk stands for the data item's bytes (no XDR padding); the
            # length word stays inline at the chunk's position.
            call = P.rpc_call(rpc_xid, proc, P.xdr_u32(size))
            reads = P.read_segments(len(call), region.segments(size, self.max_seg))
            payload = call
        else:
            payload = P.rpc_call(rpc_xid, proc, args)
            if plan.long_call:
                assert region is not None   # a long call is in rdma_buffer
                region.view[off:off + len(payload)] = payload
                reads = P.read_segments(0, region.segments(len(payload), self.max_seg, off))
                payload = b""
                mproc = P.RDMA_NOMSG
        m = Message(xid, self.vers, self._credit(), mproc, chunks=Chunks(reads, writes, reply), payload=payload)
        if self.vers == 2:
            m.proc = P.RDMA2_MSG if mproc == P.RDMA_MSG else P.RDMA2_NOMSG
        self.credits.sent()
        self.pending[xid] = txn
        if defer:
            self._deferred.append(P.build(m))
        else:
            self.link.send(P.build(m))
        return xid

    def flush(self) -> None:
        """Send the deferred calls, in one chain where the link can."""
        msgs, self._deferred = self._deferred, []
        if not msgs:
            return
        many = getattr(self.link, "send_many", None)
        if many is not None:
            many(msgs)
        else:
            for data in msgs:
                self.link.send(data)

    # -- replies

    def on_message(self, data: bytes) -> Result | None:
        """Handle one received message; returns the completed transaction, if any."""
        m = P.parse(data)
        if not self.ready:
            self._handshake(m)
            return None
        txn = self.pending.get(m.xid)
        if txn is None:
            if m.vers == 1 and m.proc == P.RDMA_NOMSG and m.chunks.reads:
                # seeds/001: a pulled reply for an XID we forgot still gets its DONE.
                self._done(m.xid)
            return None
        if m.vers != self.vers:
            raise ProtocolError(f"reply in version {m.vers} on a version {self.vers} connection")
        if (m.flags & P.F_RESPONSE) == 0 and m.vers == 2:
            raise ProtocolError("v2 reply without RDMA2_F_RESPONSE")
        return self._complete(txn, m)

    def _handshake(self, m: Message) -> None:
        if m.xid != self._handshake_xid:
            raise ProtocolError(f"unexpected message {m.xid:#x} before the version exchange ended")
        if m.vers == 2 and m.proc == P.RDMA2_CONNPROP:
            self.peer_props = P.props_dict(m.props)
            self.inline = Inline(min(self.inline.call, self.peer_props.get(P.PROP_RECV_BUF, P.V2_INLINE_DEFAULT)),
                                 min(self.inline.reply, self.peer_props.get(P.PROP_MAX_SEND, P.V2_INLINE_DEFAULT)))
            self.credits.replied(m.grant)
        elif m.error and m.error[0] in (P.ERR_VERS, P.RDMA2_ERR_VERS) and m.proc in (P.RDMA_ERROR, P.RDMA2_ERROR):
            low, high = m.error[1], m.error[2]
            if not low <= 1 <= high:
                raise ProtocolError(f"the server speaks versions {low}..{high} only")
            # RDMA2_ERR_VERS: continue in version 1 with its defaults.
            self.vers = 1
            self.fell_back = True
            self.inline = Inline(min(self.inline.call, P.V1_INLINE_DEFAULT),
                                 min(self.inline.reply, P.V1_INLINE_DEFAULT))
            self.credits.replied(m.credit if m.vers == 1 else m.grant)
        else:
            raise ProtocolError("the server answered the version exchange with something else")
        self.ready = True
        return None

    def _complete(self, txn: Txn, m: Message) -> Result:
        del self.pending[txn.xid]
        self._free.append(txn.slot)
        self.credits.replied(m.grant)
        plan = txn.plan
        lat = self.clock() - txn.start
        if m.proc == P.RDMA_ERROR:          # RDMA2_ERROR has the same number
            return Result(txn.xid, plan.proc, plan.size, False, lat, "error", f"transport error {m.error}")
        how = "inline"
        if m.proc == P.RDMA_MSG:
            reply = m.payload
        elif m.chunks.reply is not None:
            if txn.region is None:
                return Result(txn.xid, plan.proc, plan.size, False, lat, "error", "a Reply chunk the call did not offer")
            how = "reply-chunk"
            reply = txn.region.read_at(m.chunks.reply)
        elif m.chunks.reads:
            how = "read-chunk-reply"
            segs = [Segment(r.handle, r.length, r.offset) for r in m.chunks.reads]
            reply = self.link.read(segs)
            if "skip-done" not in self.faults:
                self._done(txn.xid)
        else:
            return Result(txn.xid, plan.proc, plan.size, False, lat, "error", "RDMA_NOMSG without a chunk")
        try:
            rpc = P.parse_rpc(reply)
        except ProtocolError as exc:
            return Result(txn.xid, plan.proc, plan.size, False, lat, how, str(exc))
        ok, detail = self._check(txn, m, rpc)
        if plan.proc == P.PROC_READ and m.chunks.writes:
            how = "write-chunk"
        elif plan.proc == P.PROC_WRITE:
            how = "read-chunk"
        elif plan.long_call and how == "inline":
            how = "long-call"
        return Result(txn.xid, plan.proc, plan.size, ok, lat, how, detail)

    def _check(self, txn: Txn, m: Message, rpc: P.Rpc) -> tuple[bool, str]:
        plan = txn.plan
        expect_xid = txn.xid ^ 0xFFFF if "xid-mismatch" in self.faults else txn.xid
        if rpc.xid != expect_xid:
            return False, f"RPC XID {rpc.xid:#x} in the reply to {txn.xid:#x}"
        if rpc.proc != P.SUCCESS:
            return False, f"accept_stat {rpc.proc}"
        body = rpc.body
        n = plan.size
        if plan.proc == P.PROC_NULL:
            return body == b"", "NULL returned data" if body else ""
        if plan.proc == P.PROC_WRITE:
            got = P.read_u32(body)
            return got == n, "" if got == n else f"server saw {got} of {n} bytes"
        if plan.proc == P.PROC_READ and m.chunks.writes and txn.region is not None:
            written = sum(s.length for s in m.chunks.writes[0])
            data = txn.region.read_at(m.chunks.writes[0])
            ok = P.read_u32(body) == n and written == n and data == P.pattern(n, txn.xid)
            return ok, "" if ok else "Write chunk data differ"
        got_len = P.read_u32(body)
        data = body[4:4 + got_len]
        want = P.pattern(n, txn.xid)
        ok = got_len == n and data == want
        return ok, "" if ok else "reply data differ"

    def _done(self, xid: int) -> None:
        self.link.send(P.build(Message(xid, 1, self._credit(), P.RDMA_DONE)))


# ---------------------------------------------------------------- in-memory link

class Fabric:
    """Registered memory of both peers, addressed by (handle, address) as RDMA is."""

    def __init__(self) -> None:
        self.regions: dict[int, tuple[int, bytearray]] = {}
        self._next_handle = 0x1000
        self._next_addr = 0x7F0000000000

    def register(self, size: int) -> Region:
        h = self._next_handle
        self._next_handle += 0x101
        buf = bytearray(size + REGION_SLACK)
        addr = self._next_addr
        self._next_addr += (size + REGION_SLACK + 0xFFFF) & ~0xFFFF
        self.regions[h] = (addr, buf)
        return Region(h, addr, size, memoryview(buf))

    def _loc(self, s: Segment) -> tuple[bytearray, int]:
        addr, buf = self.regions[s.handle]
        o = s.offset - addr
        if o < 0 or o + s.length > len(buf):
            raise ProtocolError(f"remote access error: {s}")
        return buf, o


@dataclass(slots=True)
class Op:
    kind: str            # send / write / read
    data: bytes
    segs: tuple = ()


class LoopLink:
    """One end of an in-memory RC connection; ``log`` keeps every operation in order."""

    def __init__(self, fabric: Fabric, log: list[tuple[str, Op]], name: str) -> None:
        self.fabric, self.log, self.name = fabric, log, name
        self.peer: LoopLink | None = None
        self.inbox: collections.deque[bytes] = collections.deque()
        self._regions: dict[int, Region] = {}

    @staticmethod
    def pair() -> tuple["LoopLink", "LoopLink", list[tuple[str, Op]]]:
        fab, log = Fabric(), list[tuple[str, Op]]()
        a, b = LoopLink(fab, log, "client"), LoopLink(fab, log, "server")
        a.peer, b.peer = b, a
        return a, b, log

    def send(self, data: bytes, invalidate: int = 0) -> None:
        self.log.append((self.name, Op("send", bytes(data))))
        if self.peer is None:
            raise ProtocolError("the link has no peer")
        self.peer.inbox.append(bytes(data))

    def write(self, segs: Sequence[Segment], data: bytes) -> None:
        self.log.append((self.name, Op("write", bytes(data), tuple(segs))))
        o = 0
        for s in segs:
            buf, at = self.fabric._loc(s)
            buf[at:at + s.length] = data[o:o + s.length]
            o += s.length

    def read(self, segs: Sequence[Segment]) -> bytes:
        out = b"".join(bytes(b[at:at + s.length]) for s in segs for b, at in [self.fabric._loc(s)])
        self.log.append((self.name, Op("read", out, tuple(segs))))
        return out

    def region(self, slot: int, size: int) -> Region:
        r = self._regions.get(slot)
        if r is None or r.size < size:
            r = self._regions[slot] = self.fabric.register(size)
        return r
