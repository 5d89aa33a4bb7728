"""RPC-over-RDMA v1 and v2 as the traffic generator speaks it: pure logic, no device.

Everything here works on bytes and numbers so that it can be tested without RDMA
hardware: building and parsing transport headers (RFC 8166, RFC 5666's RDMA_DONE,
the v2 draft), RFC 8797 connection private data, the ONC RPC messages of the
generator's own small program, credit accounting, and chunk planning (which of
inline / Read chunk / Write chunk / Reply chunk / responder-provided Read chunk a
transaction uses given the inline thresholds of the connection).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Iterable

# ---------------------------------------------------------------- constants

PDATA_MAGIC = 0xF6AB0E18          # RFC 8797 Format Identifier
V1_INLINE_DEFAULT = 1024          # RFC 8166: inline threshold without private data
V2_INLINE_DEFAULT = 4096          # v2 draft 4.2.2

# v1 procedures (RFC 8166; MSGP and DONE from RFC 5666)
RDMA_MSG, RDMA_NOMSG, RDMA_MSGP, RDMA_DONE, RDMA_ERROR = 0, 1, 2, 3, 4
ERR_VERS, ERR_CHUNK = 1, 2
# v2 header types and flags
RDMA2_MSG, RDMA2_NOMSG, RDMA2_ERROR, RDMA2_CONNPROP = 0, 1, 4, 5
F_RESPONSE, F_MORE, F_TPMORE = 0x1, 0x2, 0x4
RDMA2_ERR_VERS, RDMA2_ERR_BAD_XDR, RDMA2_ERR_INVAL_HTYPE = 1, 2, 4
RDMA2_ERR_WRITE_RESOURCE, RDMA2_ERR_REPLY_RESOURCE = 9, 10
# v2 transport properties
PROP_MAX_SEND, PROP_RECV_BUF, PROP_MAX_SEG_SIZE, PROP_MAX_SEG_COUNT, PROP_RVRSDIR = 1, 2, 3, 4, 5

# ONC RPC (RFC 5531)
RPC_CALL, RPC_REPLY = 0, 1
MSG_ACCEPTED, SUCCESS, PROC_UNAVAIL, GARBAGE_ARGS = 0, 0, 3, 4

# The generator's RPC program: a number from the "defined by user" range of RFC 5531.
PROGRAM = 0x2D5A5900
PROGRAM_VERSION = 1
PROC_NULL, PROC_ECHO, PROC_READ, PROC_WRITE, PROC_BIGREPLY, PROC_PULLREPLY = range(6)
PROC_NAMES = {PROC_NULL: "null", PROC_ECHO: "echo", PROC_READ: "read", PROC_WRITE: "write",
              PROC_BIGREPLY: "bigreply", PROC_PULLREPLY: "pullreply"}
OPS = {v: k for k, v in PROC_NAMES.items()}

_U32 = struct.Struct(">I")
_U32x2 = struct.Struct(">II")
_U32x4 = struct.Struct(">IIII")
_U32x5 = struct.Struct(">IIIII")
_SEG = struct.Struct(">IIQ")           # handle, length, offset
_RSEG = struct.Struct(">IIIQ")         # position, handle, length, offset


class ProtocolError(ValueError):
    """A message the generator cannot accept (bad XDR, wrong version, bad chunk)."""


def pad4(n: int) -> int:
    return (n + 3) & ~3


# ---------------------------------------------------------------- RFC 8797

@dataclass(frozen=True, slots=True)
class PrivateData:
    """RFC 8797 CM private data: what a peer can send and receive inline."""
    send_size: int = V1_INLINE_DEFAULT
    recv_size: int = V1_INLINE_DEFAULT
    remote_invalidate: bool = False
    version: int = 1

    def encode(self) -> bytes:
        for size in (self.send_size, self.recv_size):
            if not 1024 <= size <= 256 * 1024 or size % 1024:
                raise ValueError(f"RFC 8797 sizes are multiples of 1024 from 1 KiB to 256 KiB, not {size}")
        return struct.pack(">IBBBB", PDATA_MAGIC, self.version, 1 if self.remote_invalidate else 0,
                           self.send_size // 1024 - 1, self.recv_size // 1024 - 1)

    @classmethod
    def find(cls, data: bytes) -> "PrivateData | None":
        """The RFC 8797 message at any offset of the consumer private data, or None."""
        i = data.find(_U32.pack(PDATA_MAGIC))
        while i >= 0 and i + 8 <= len(data):
            vers, flags, ssz, rsz = data[i + 4:i + 8]
            if vers == 1:
                return cls((ssz + 1) * 1024, (rsz + 1) * 1024, bool(flags & 1), vers)
            i = data.find(_U32.pack(PDATA_MAGIC), i + 1)
        return None


@dataclass(frozen=True, slots=True)
class Inline:
    """The two inline thresholds of a connection (RFC 8797 section 4)."""
    call: int = V1_INLINE_DEFAULT      # requester -> responder
    reply: int = V1_INLINE_DEFAULT     # responder -> requester

    @classmethod
    def negotiate(cls, client: PrivateData | None, server: PrivateData | None,
                  default: int = V1_INLINE_DEFAULT) -> "Inline":
        # RFC 8797 section 4: without the message from both peers, the defaults hold.
        if client is None or server is None:
            return cls(default, default)
        return cls(min(client.send_size, server.recv_size), min(server.send_size, client.recv_size))


# ---------------------------------------------------------------- chunks

@dataclass(frozen=True, slots=True)
class Segment:
    handle: int
    length: int
    offset: int


@dataclass(frozen=True, slots=True)
class ReadSegment:
    position: int
    handle: int
    length: int
    offset: int


@dataclass(frozen=True, slots=True)
class Chunks:
    reads: tuple[ReadSegment, ...] = ()
    writes: tuple[tuple[Segment, ...], ...] = ()
    reply: tuple[Segment, ...] | None = None

    @property
    def empty(self) -> bool:
        return not self.reads and not self.writes and self.reply is None


def encode_chunks(ch: Chunks) -> bytes:
    out = bytearray()
    for r in ch.reads:
        out += _U32.pack(1) + _RSEG.pack(r.position, r.handle, r.length, r.offset)
    out += _U32.pack(0)
    for w in ch.writes:
        out += _U32x2.pack(1, len(w))
        for s in w:
            out += _SEG.pack(s.handle, s.length, s.offset)
    out += _U32.pack(0)
    if ch.reply is None:
        out += _U32.pack(0)
    else:
        out += _U32x2.pack(1, len(ch.reply))
        for s in ch.reply:
            out += _SEG.pack(s.handle, s.length, s.offset)
    return bytes(out)


class _Reader:
    __slots__ = ("buf", "off", "end")

    def __init__(self, buf: bytes, off: int, end: int) -> None:
        self.buf, self.off, self.end = buf, off, end

    def u32(self) -> int:
        if self.off + 4 > self.end:
            raise ProtocolError("header ends early")
        v = _U32.unpack_from(self.buf, self.off)[0]
        self.off += 4
        return v

    def take(self, st: struct.Struct) -> tuple:
        if self.off + st.size > self.end:
            raise ProtocolError("header ends early")
        v = st.unpack_from(self.buf, self.off)
        self.off += st.size
        return v

    def segments(self) -> tuple[Segment, ...]:
        n = self.u32()
        if n * _SEG.size > self.end - self.off:
            raise ProtocolError(f"{n} segments do not fit in the message")
        return tuple(Segment(*self.take(_SEG)) for _ in range(n))

    def chunks(self) -> Chunks:
        reads = []
        while self._present():
            reads.append(ReadSegment(*self.take(_RSEG)))
        writes = []
        while self._present():
            writes.append(self.segments())
        reply = self.segments() if self._present() else None
        return Chunks(tuple(reads), tuple(writes), reply)

    def _present(self) -> bool:
        v = self.u32()
        if v > 1:
            raise ProtocolError(f"XDR optional-data discriminator {v}")
        return v == 1


# ---------------------------------------------------------------- headers

@dataclass(slots=True)
class Message:
    """A parsed (or to-be-built) RPC-over-RDMA transport header and what follows it."""
    xid: int
    vers: int
    credit: int
    proc: int                      # v1 rdma_proc, v2 rdma_htype
    flags: int = 0                 # v2 only
    inv_handle: int = 0            # v2 MSG/NOMSG only
    chunks: Chunks = field(default_factory=Chunks)
    payload: bytes = b""           # the RPC message (MSG) or the rest
    error: tuple[int, ...] = ()    # (code, args...) of an ERROR
    props: tuple[tuple[int, bytes], ...] = ()   # v2 CONNPROP
    align: int = 0                 # v1 MSGP
    thresh: int = 0                # v1 MSGP
    header_len: int = 0            # bytes before the payload

    # v2 credit word: high 16 = max outstanding at the sender, low 16 = credits granted
    @property
    def grant(self) -> int:
        return self.credit & 0xFFFF if self.vers == 2 else self.credit

    @property
    def max_outstanding(self) -> int:
        return self.credit >> 16 if self.vers == 2 else self.credit


def credit2(max_outstanding: int, granted: int) -> int:
    if not 0 < granted <= 0xFFFF or not 0 <= max_outstanding <= 0xFFFF:
        raise ValueError("v2 credits are 16-bit and the grant is never 0")
    return (max_outstanding << 16) | granted


def build(m: Message) -> bytes:
    """Encode a Message (version 1 or 2) to its wire bytes."""
    if m.vers == 1:
        out = bytearray(_U32x4.pack(m.xid, 1, m.credit, m.proc))
        if m.proc in (RDMA_MSG, RDMA_NOMSG):
            out += encode_chunks(m.chunks)
        elif m.proc == RDMA_MSGP:
            out += _U32x2.pack(m.align, m.thresh) + encode_chunks(m.chunks)
        elif m.proc == RDMA_ERROR:
            out += b"".join(_U32.pack(v) for v in m.error)
        elif m.proc != RDMA_DONE:
            raise ValueError(f"v1 procedure {m.proc}")
    elif m.vers == 2:
        out = bytearray(_U32x5.pack(m.xid, 2, m.credit, m.proc, m.flags))
        if m.proc in (RDMA2_MSG, RDMA2_NOMSG):
            out += _U32.pack(m.inv_handle) + encode_chunks(m.chunks)
        elif m.proc == RDMA2_ERROR:
            out += b"".join(_U32.pack(v) for v in m.error)
        elif m.proc == RDMA2_CONNPROP:
            out += _U32.pack(len(m.props))
            for which, val in m.props:
                out += _U32x2.pack(which, len(val)) + val + bytes(pad4(len(val)) - len(val))
        else:
            raise ValueError(f"v2 header type {m.proc}")
    else:
        raise ValueError(f"RPC-over-RDMA version {m.vers}")
    m.header_len = len(out)
    if m.payload:
        if m.proc == RDMA_MSGP and m.vers == 1 and m.align:
            out += bytes(-len(out) % m.align)
        out += m.payload
    return bytes(out)


def parse(buf: bytes, off: int = 0, end: int | None = None) -> Message:
    """Decode a transport header; the payload is what follows it."""
    end = len(buf) if end is None else end
    r = _Reader(buf, off, end)
    xid, vers, credit, proc = r.take(_U32x4)
    m = Message(xid, vers, credit, proc)
    if vers == 1:
        if proc in (RDMA_MSG, RDMA_NOMSG):
            m.chunks = r.chunks()
        elif proc == RDMA_MSGP:
            m.align, m.thresh = r.take(_U32x2)
            m.chunks = r.chunks()
        elif proc == RDMA_ERROR:
            code = r.u32()
            m.error = (code, *r.take(_U32x2)) if code == ERR_VERS else (code,)
        elif proc != RDMA_DONE:
            raise ProtocolError(f"v1 procedure {proc}")
    elif vers == 2:
        m.flags = r.u32()
        if proc in (RDMA2_MSG, RDMA2_NOMSG):
            m.inv_handle = r.u32()
            m.chunks = r.chunks()
        elif proc == RDMA2_ERROR:
            code = r.u32()
            nargs = {RDMA2_ERR_VERS: 2, 6: 1, 7: 1, 8: 1, RDMA2_ERR_WRITE_RESOURCE: 2,
                     RDMA2_ERR_REPLY_RESOURCE: 1}.get(code, 0)
            m.error = (code, *(r.u32() for _ in range(nargs)))
        elif proc == RDMA2_CONNPROP:
            n = r.u32()
            if n * 8 > end - r.off:
                raise ProtocolError(f"{n} properties do not fit in the message")
            props = []
            for _ in range(n):
                which, ln = r.take(_U32x2)
                if pad4(ln) > end - r.off:
                    raise ProtocolError("property value overruns the message")
                props.append((which, bytes(buf[r.off:r.off + ln])))
                r.off += pad4(ln)
            m.props = tuple(props)
        else:
            raise ProtocolError(f"v2 header type {proc}")
    else:
        raise ProtocolError(f"RPC-over-RDMA version {vers}")
    m.header_len = r.off - off
    if vers == 1 and proc == RDMA_MSGP and m.align:
        r.off += -(r.off - off) % m.align
    m.payload = bytes(buf[r.off:end])
    return m


def props_u32(props: Iterable[tuple[int, int]]) -> tuple[tuple[int, bytes], ...]:
    """Transport properties whose values are single uint32s (all of 1..5)."""
    return tuple((w, _U32.pack(v)) for w, v in props)


def props_dict(props: tuple[tuple[int, bytes], ...]) -> dict[int, int]:
    return {w: _U32.unpack(v)[0] for w, v in props if len(v) == 4}


# ---------------------------------------------------------------- ONC RPC

def rpc_call(xid: int, proc: int, args: bytes = b"") -> bytes:
    # AUTH_NONE credential and verifier
    return struct.pack(">IIIIIIIIII", xid, RPC_CALL, 2, PROGRAM, PROGRAM_VERSION, proc, 0, 0, 0, 0) + args


def rpc_reply(xid: int, results: bytes = b"", accept_stat: int = SUCCESS) -> bytes:
    return struct.pack(">IIIIII", xid, RPC_REPLY, MSG_ACCEPTED, 0, 0, accept_stat) + results


RPC_CALL_HEADER = 40
RPC_REPLY_HEADER = 24


@dataclass(frozen=True, slots=True)
class Rpc:
    xid: int
    mtype: int
    proc: int               # calls: procedure; replies: accept_stat
    body: bytes


def parse_rpc(buf: bytes) -> Rpc:
    if len(buf) < 8:
        raise ProtocolError("RPC message shorter than its header")
    xid, mtype = _U32x2.unpack_from(buf, 0)
    if mtype == RPC_CALL:
        if len(buf) < RPC_CALL_HEADER:
            raise ProtocolError("RPC call shorter than its header")
        _, _, rpcvers, prog, vers, proc, cfl, clen = struct.unpack_from(">IIIIIIII", buf, 0)
        off = 32 + pad4(clen)
        if rpcvers != 2 or off + 8 > len(buf):
            raise ProtocolError("bad RPC call header")
        vlen = _U32.unpack_from(buf, off + 4)[0]
        off += 8 + pad4(vlen)
        if prog != PROGRAM or vers != PROGRAM_VERSION:
            raise ProtocolError(f"RPC program {prog:#x} version {vers}")
        return Rpc(xid, mtype, proc, bytes(buf[off:]))
    if mtype == RPC_REPLY:
        if len(buf) < RPC_REPLY_HEADER:
            raise ProtocolError("RPC reply shorter than its header")
        _, _, stat, vfl, vlen = struct.unpack_from(">IIIII", buf, 0)
        off = 20 + pad4(vlen)
        if stat != MSG_ACCEPTED or off + 4 > len(buf):
            raise ProtocolError("RPC reply not accepted")
        astat = _U32.unpack_from(buf, off)[0]
        return Rpc(xid, mtype, astat, bytes(buf[off + 4:]))
    raise ProtocolError(f"RPC message type {mtype}")


def xdr_opaque(data: bytes) -> bytes:
    return _U32.pack(len(data)) + data + bytes(pad4(len(data)) - len(data))


def xdr_u32(v: int) -> bytes:
    return _U32.pack(v)


def read_u32(buf: bytes, off: int = 0) -> int:
    if off + 4 > len(buf):
        raise ProtocolError("XDR uint32 past the end")
    return _U32.unpack_from(buf, off)[0]


def pattern(size: int, seed: int) -> bytes:
    """Deterministic payload bytes so that every transfer can be checked end to end."""
    unit = struct.pack(">I", seed & 0xFFFFFFFF) + b"rdmaspy-"
    return (unit * (size // len(unit) + 1))[:size]


# ---------------------------------------------------------------- credits

class Credits:
    """Requester-side credit accounting: never more Sends outstanding than granted.

    v1 (RFC 8166 section 3.3.1): each reply carries the responder's current grant.
    v2: the low 16 bits of the credit word are the grant and are never 0.
    ``overcommit`` lets the fault option exceed the grant on purpose.
    """
    __slots__ = ("granted", "outstanding", "overcommit", "high_water")

    def __init__(self, initial: int = 1, overcommit: int = 0) -> None:
        # Before the first reply only one message may be outstanding (v2 draft 4.2.3).
        self.granted = initial
        self.outstanding = 0
        self.overcommit = overcommit
        self.high_water = 0

    @property
    def limit(self) -> int:
        return self.granted + self.overcommit

    def can_send(self) -> bool:
        return self.outstanding < self.limit

    def sent(self) -> None:
        if not self.can_send():
            raise ProtocolError(f"credit grant {self.granted} exhausted")
        self.outstanding += 1
        self.high_water = max(self.high_water, self.outstanding)

    def replied(self, grant: int) -> None:
        if self.outstanding <= 0:
            raise ProtocolError("a reply with no call outstanding")
        self.outstanding -= 1
        if grant == 0:
            raise ProtocolError("a credit grant of 0 would deadlock")
        self.granted = grant


# ---------------------------------------------------------------- chunk planning

# The inline reply header budget the requester reserves when it decides whether a
# reply fits inline: the largest transport header a reply to this program can carry.
REPLY_HEADER_BUDGET = 64


@dataclass(frozen=True, slots=True)
class CallPlan:
    """How one transaction moves its bytes."""
    proc: int
    size: int                   # the operation's data size
    long_call: bool             # the whole call goes as a Position Zero Read chunk (RDMA_NOMSG)
    read_chunk: bool            # the argument data goes as a Read chunk
    write_chunk: bool           # the result data comes back through a Write chunk
    reply_chunk: int            # bytes of Reply chunk to offer (0: none)
    reply_inline_max: int       # what the requester can take inline

    @property
    def rdma_buffer(self) -> int:
        """Bytes of requester memory the transaction needs registered."""
        n = self.reply_chunk
        if self.read_chunk or self.write_chunk or self.long_call:
            n += pad4(self.size) + (RPC_CALL_HEADER + 8 if self.long_call else 0)
        return n


def reply_size(proc: int, size: int) -> int:
    """Bytes of the RPC reply (header + results) before any reduction."""
    if proc in (PROC_ECHO, PROC_BIGREPLY, PROC_PULLREPLY, PROC_READ):
        return RPC_REPLY_HEADER + 4 + pad4(size)
    if proc == PROC_WRITE:
        return RPC_REPLY_HEADER + 4
    return RPC_REPLY_HEADER


def plan_call(proc: int, size: int, inline: Inline, vers: int = 1, hdr_len: int = 28) -> CallPlan:
    """Choose the chunks of a call from the procedure, its size and the inline thresholds.

    READ always returns its data through a Write chunk and WRITE always sends its data
    as a Read chunk (they are the DDP-eligible items of this program); BIGREPLY asks for
    a Reply chunk when the reply cannot come inline; PULLREPLY never offers one, so a
    reply too large for inline comes back as a responder-provided Read chunk.
    ECHO's call goes as a Position Zero Read chunk when it does not fit inline.
    """
    if proc not in PROC_NAMES:
        raise ValueError(f"procedure {proc}")
    if proc == PROC_PULLREPLY and vers != 1:
        raise ValueError("responder-provided Read chunks use RDMA_DONE, a version 1 procedure")
    call_len = hdr_len + RPC_CALL_HEADER + (4 + pad4(size) if proc in (PROC_ECHO, PROC_WRITE) else 4)
    long_call = proc == PROC_ECHO and call_len > inline.call
    reply_max = inline.reply - REPLY_HEADER_BUDGET
    rsize = reply_size(proc, size)
    reply_chunk = 0
    if proc in (PROC_ECHO, PROC_BIGREPLY) and rsize > reply_max:
        reply_chunk = rsize
    return CallPlan(proc, size, long_call, proc == PROC_WRITE, proc == PROC_READ, reply_chunk, reply_max)


def split_segments(handle: int, addr: int, length: int, max_seg: int) -> tuple[Segment, ...]:
    """One chunk as segments of at most ``max_seg`` bytes over one registered region."""
    if length <= 0:
        return ()
    return tuple(Segment(handle, min(max_seg, length - o), addr + o) for o in range(0, length, max_seg))


def read_segments(position: int, segs: Iterable[Segment]) -> tuple[ReadSegment, ...]:
    return tuple(ReadSegment(position, s.handle, s.length, s.offset) for s in segs)


def fill_segments(segs: Iterable[Segment], total: int) -> tuple[Segment, ...]:
    """The segments a responder reports back: what it actually wrote into each."""
    out = []
    left = total
    for s in segs:
        n = min(s.length, left)
        out.append(Segment(s.handle, n, s.offset))
        left -= n
    if left:
        raise ProtocolError(f"{total} bytes do not fit in the chunk")
    return tuple(out)
