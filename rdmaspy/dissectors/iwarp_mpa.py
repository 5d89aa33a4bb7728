"""iWARP MPA (RFC 5044, RFC 6581): the framing of DDP segments in a TCP stream.

iWARP has no port of its own.  A heuristic on ``tcp.port`` recognises the MPA
Request ("MPA ID Req Frame") and remembers the connection in the session
(``ctx.get("iwarp.streams", dict)``, keyed by (source, destination) endpoint),
so that every later segment of it comes here.  Each direction is reassembled
by ``tcp_stream.HalfStream``; MPA then walks the stream: first the Request or
Reply frame (flags, revision, private data with the RFC 6581 IRD/ORD word and
the consumer's data for ``cm.private_data``), then FPDUs.  An FPDU is
ULPDU_Length, the ULPDU (DDP/RDMAP, see ``iwarp_ddp``), pad to 4 bytes and a
CRC32c, checked when the Request or Reply set the C bit.  When a peer asked
for markers (M bit), a 4-byte marker stands every 512 bytes of the other
direction's stream, counted from its first FPDU; markers are removed before
the ULPDU is parsed and are covered by the CRC.

Connections whose MPA exchange is not in the capture are found by a strict
heuristic instead: a segment must be exactly a chain of FPDUs whose DDP and
RDMAP versions are 1, reserved bits 0, opcodes known and buffer models right.
Such a connection has no CRC or marker settings to go by: CRCs are shown, not
checked, and markers are assumed absent.

The CRC32c is stored least significant byte first, as iSCSI stores it (Linux
siw does the same); ``mpa.crc`` shows the four bytes read big-endian, as
Wireshark shows them, and ``iwarp.crc.expected`` in the same reading.
"""
from __future__ import annotations

from .. import conversation as _conversation
from ..fields import F, Field, Header, declaring, protocol, repeatable
from ..packet import Packet
from ..registry import Dissector, add_data, dissect_with, table
from ..rules import declare
from ..session import Session
from ..typenames import Any, Callable, Final, mypyc_attr
from . import iwarp_ddp
from .rpcrdma_pdata import RPCRDMA_PDATA

declaring(__name__)
protocol("tcp_stream", "TCP stream reassembly")
protocol("mpa.marker", "MPA Marker")
protocol("mpa.v2", "Enhanced MPA IRD/ORD (RFC 6581)")
repeatable("mpa", "iwarp")        # a TCP segment carries several FPDUs
from .transport import TcpLayer, take_line
from .xdr import u32
from .tcp_stream import AFTER_GAP, HELD, NEW, OVERLAP, RETRANSMISSION, HalfStream, StreamView, seq_delta

KEY_REQ: Final = b"MPA ID Req Frame"
KEY_REP: Final = b"MPA ID Rep Frame"
MARKER_INTERVAL: Final = 512
MAX_PD_LENGTH: Final = 512          # RFC 5044: private data is at most 512 bytes

REQREP: Final = Header("mpa", "MPA Request/Reply Frame", [
    F("key", 128, "Key", "bytes"),
    F("marker_flag", 1, "Marker flag (M)", "bool"),
    F("crc_flag", 1, "CRC flag (C)", "bool"),
    F("rej_flag", 1, "Connection rejected flag (R)", "bool"),
    F("res", 5, "Reserved", "hex"),
    F("rev", 8, "Revision"),
    F("pdlength", 16, "Private data length", unit="bytes"),
])
IRD_ORD: Final = Header("mpa", "Enhanced MPA IRD/ORD (RFC 6581)", [
    F("p2p", 1, "Peer-to-Peer connection model (A)", "bool"),
    F("rtr_send", 1, "Zero-length Send RTR (B)", "bool"),
    F("ird", 14, "IRD (inbound RDMA Read queue depth)"),
    F("rtr_write", 1, "Zero-length RDMA Write RTR (C)", "bool"),
    F("rtr_read", 1, "Zero-length RDMA Read RTR (D)", "bool"),
    F("ord", 14, "ORD (outbound RDMA Read queue depth)"),
])
FPDU: Final = Header("mpa", "MPA FPDU", [F("ulpdulength", 16, "ULPDU length", unit="bytes")])
MARKER: Final = Header("mpa", "MPA Marker", [
    F("marker_res", 16, "Reserved", "hex"),
    F("marker_fpduptr", 16, "FPDU back pointer", unit="bytes"),
])
PRIVATE_DATA: Final = Field("mpa.privatedata", 0, "Private data", "bytes")
# Bit 0x10 of Res: Linux (siw, cxgb4) sets it with revision 2 to say the private data begins with
# the RFC 6581 IRD/ORD word, and reads that word only when both are there.
ENHANCED: Final = Field("mpa.enhanced", 0, "Enhanced connection setup (Res bit 0x10, RFC 6581 IRD/ORD present)", "bool")
PAD: Final = Field("mpa.pad", 0, "Padding", "bytes")
CRC: Final = Field("mpa.crc", 32, "CRC", "hex")
CRC_VALID: Final = Field("iwarp.crc.valid", 0, "CRC32c valid", "bool")
CRC_EXPECTED: Final = Field("iwarp.crc.expected", 32, "CRC32c expected", "hex")
CRC_CHECKED: Final = Field("iwarp.crc.checked", 0, "CRC negotiated (checked)", "bool")
FRAMES: Final = Field("mpa.frames", 0, "Reassembled from frames", "str")
FPDU_LEN: Final = Field("mpa.fpdu_len", 0, "FPDU length on the wire (with markers)", unit="bytes")
MARKER_COUNT: Final = Field("mpa.markers", 0, "Markers removed")
FRAGMENT: Final = Field("mpa.fragment", 0, "FPDU bytes waiting for later segments", unit="bytes")
STREAM_POS: Final = Field("mpa.stream_pos", 0, "Position in the TCP stream", unit="bytes")
GAP: Final = Field("tcp_stream.gap", 0, "Bytes missing from the capture before this segment", unit="bytes")
OVERLAP_LEN: Final = Field("tcp_stream.retransmitted", 0, "Bytes already seen (dropped)", unit="bytes")
STREAM_STATUS: Final = Field("tcp_stream.status", 0, "Segment in the stream", "str")

cm_private_data = table("cm.private_data", "CM private data (by server port)")
tcp_port = table("tcp.port", "TCP port")
tcp_end = table("tcp.end", "TCP connection ends (FIN, RST)")


# --- CRC32c (Castagnoli), reflected, as iSCSI and MPA use it -----------------------------------------
def _crc32c_table() -> tuple[int, ...]:
    out = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        out.append(c)
    return tuple(out)


_CRC32C_TABLE: Final = _crc32c_table()


def crc32c(data: Any, crc: int = 0) -> int:
    """CRC32c of ``data`` (iSCSI test vector: 32 zero bytes give 0x8a9136aa)."""
    t = _CRC32C_TABLE
    c = crc ^ 0xFFFFFFFF
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


try:        # the same CRC in C (SSE4.2's instruction where the CPU has it), built with the compiled decoder
    from ._icrc import crc32c as _crc32c_c  # type: ignore[import-not-found,import-untyped,unused-ignore]
except ImportError:
    _crc32c_c = None
CRC32C: Final[Callable[..., int]] = _crc32c_c or crc32c


def crc_field_value(crc: int) -> int:
    """The CRC as its four wire bytes read big-endian (how ``mpa.crc`` shows it)."""
    return int.from_bytes(crc.to_bytes(4, "little"), "big")


# --- connection state ----------------------------------------------------------------------------
@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class MpaConn:
    """One iWARP connection: what the MPA exchange negotiated."""

    __slots__ = ("initiator", "responder", "server_port", "rev", "req_flags", "rep_flags", "crc",
                 "rejected", "req", "rep", "req_frame", "rep_frame", "dirs", "midstream", "connection",
                 "full_operation", "first_fin", "table")

    def __init__(self, initiator: tuple[str, int], responder: tuple[str, int]) -> None:
        self.initiator = initiator
        self.responder = responder
        self.server_port = responder[1]
        self.rev: int | None = None
        self.req_flags = 0        # M C R Res byte of the Request
        self.rep_flags = 0
        self.crc = False          # CRC32c in use (either side set C)
        self.rejected = False
        self.req: MpaParams | None = None
        self.rep: MpaParams | None = None
        self.req_frame = 0
        self.rep_frame = 0
        self.dirs: dict[tuple[str, int], MpaDir] = {}
        self.midstream = False    # found by the FPDU heuristic, no MPA exchange seen
        self.connection: Any = None     # the entry of the connection table, when there is one
        # that table (the session's): each segment is counted in it without finding it in the session again
        self.table: _conversation.ConnectionTable | None = None
        self.full_operation = False
        self.first_fin: tuple[str, int] | None = None   # the endpoint whose FIN came first


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class MpaParams:
    """What one Request or Reply said."""

    __slots__ = ("flags", "rev", "ird", "ord", "p2p", "rtr", "pdata", "frame")

    def __init__(self, flags: int, rev: int, frame: int) -> None:
        self.flags = flags
        self.rev = rev
        self.frame = frame
        self.ird: int | None = None
        self.ord: int | None = None
        self.p2p = False
        self.rtr = 0              # B C D bits (Send, Write, Read RTR), as a 3-bit number
        self.pdata = b""          # the consumer's private data (after IRD/ORD)

    @property
    def markers(self) -> bool:
        return bool(self.flags & 0x80)

    @property
    def crc(self) -> bool:
        return bool(self.flags & 0x40)

    @property
    def rejected(self) -> bool:
        return bool(self.flags & 0x20)


STARTUP: Final = "startup"
FULL: Final = "full"
LOST: Final = "lost"
CLOSED: Final = "closed"


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class MpaDir(iwarp_ddp.DdpStream):
    """One direction of an iWARP connection (to DDP, the stream its segments come in)."""

    __slots__ = ("conn", "src", "stream", "phase", "markers", "mstart", "fpdus", "finished")

    def __init__(self, conn: MpaConn, src: tuple[str, int], is_initiator: bool | None) -> None:
        super().__init__(is_initiator)
        self.conn = conn
        self.src = src
        self.stream = HalfStream()
        self.phase = STARTUP
        self.markers = False
        self.mstart = 0            # stream position of the first FPDU (marker origin)
        self.fpdus = 0
        self.finished = False      # its FIN came with every byte before it in the stream

    @property
    def server_port(self) -> int:
        return self.conn.server_port

    def owner(self) -> object:
        return self.conn

    def port(self) -> int | None:
        return self.conn.server_port


def _streams(ctx: Session) -> dict:
    return ctx.get("iwarp.streams", dict)       # typed: compiled, a direct call (on Any, a generic one)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _LastTwo:
    """The directions the last two segments found, by their addresses (the same text objects: ip.ipv4_text
    keeps them) and ports as one integer: an iWARP connection's segments alternate between its two
    directions, and finding one here costs a few comparisons where the dict of streams hashed and
    compared a key of three tuples made for each segment.  Emptied whenever the dict changes."""

    __slots__ = ("src0", "dst0", "ports0", "hit0", "src1", "dst1", "ports1", "hit1")

    def __init__(self) -> None:
        self.src0 = self.dst0 = self.src1 = self.dst1 = ""
        self.ports0 = self.ports1 = -1
        self.hit0: MpaDir | None = None
        self.hit1: MpaDir | None = None

    def forget(self) -> None:
        self.hit0 = self.hit1 = None
        self.ports0 = self.ports1 = -1


def _last_two(ctx: Session) -> _LastTwo:
    return ctx.get("iwarp.last_two", _LastTwo)


def _find_stream(ctx: Session, src: str, sport: int, dst: str, dport: int) -> MpaDir | None:
    """The direction (src, sport) -> (dst, dport) of a known connection, or None."""
    last = _last_two(ctx)
    ports = sport << 16 | dport
    if ports == last.ports0 and src is last.src0 and dst is last.dst0:
        return last.hit0
    if ports == last.ports1 and src is last.src1 and dst is last.dst1:
        return last.hit1
    d: MpaDir | None = _streams(ctx).get(((src, sport), (dst, dport)))
    if d is not None:
        last.src1, last.dst1, last.ports1, last.hit1 = last.src0, last.dst0, last.ports0, last.hit0
        last.src0, last.dst0, last.ports0, last.hit0 = src, dst, ports, d
    return d


def mpa_connections(ctx: Session) -> list[MpaConn]:
    """The iWARP connections still open at this point of the capture, in order of appearance: one that
    ended (both FINs, or a RST) or whose endpoints began a new one is let go, so that a long capture
    keeps only what is open (the connection table keeps each one's record)."""
    return ctx.get("iwarp.connections", list)


def _release(ctx: Any, conn: MpaConn, pkt: Packet, ts: int | None = None,
             by: tuple[str, int] | None = None) -> None:
    """Forget ``conn``'s streams: later segments between its endpoints start a new connection.  Its entry
    in the connection table is closed at ``ts`` by the endpoint ``by`` (None: its endpoints began another
    connection, so it ended after its last packet, by nobody seen), and noted on ``pkt`` as ended."""
    table_conn = conn.connection
    if table_conn is not None:
        side = None if by is None else "client" if by == conn.initiator else "server"
        _conversation.connections(ctx).end_tcp(table_conn, table_conn.t_last if ts is None else ts, side)
        ended = pkt.noted(_conversation.ENDED)
        if ended is None:
            pkt.note(_conversation.ENDED, [table_conn])
        else:
            ended.append(table_conn)
    streams = _streams(ctx)
    _last_two(ctx).forget()
    for key in ((conn.initiator, conn.responder), (conn.responder, conn.initiator)):
        d = streams.get(key)
        if d is not None and d.conn is conn:
            del streams[key]
    live = mpa_connections(ctx)
    for i, c in enumerate(live):
        if c is conn:
            del live[i]
            break


def _new_conn(ctx: Any, pkt: Packet, initiator: tuple[str, int], responder: tuple[str, int],
              src_is_initiator: bool | None) -> MpaConn:
    streams = _streams(ctx)
    _last_two(ctx).forget()
    for key in ((initiator, responder), (responder, initiator)):
        old = streams.get(key)
        if old is not None:                  # the same endpoints again: the old connection is over
            _release(ctx, old.conn, pkt)
    conn = MpaConn(initiator, responder)
    a = MpaDir(conn, initiator, True if src_is_initiator is not None else None)
    b = MpaDir(conn, responder, False if src_is_initiator is not None else None)
    conn.dirs[initiator] = a
    conn.dirs[responder] = b
    mpa_connections(ctx).append(conn)
    streams[(initiator, responder)] = a
    streams[(responder, initiator)] = b
    return conn


# --- the TCP hook ----------------------------------------------------------------------------------
def _tcp_layer(pkt: Packet, buf: bytes) -> TcpLayer | None:
    """The TCP header's layer under this payload (its ports and sequence number), or None."""
    for lay in reversed(pkt.made_layers()):     # the last, as a rule; TCP's layer is made, never left to a maker
        if isinstance(lay, TcpLayer):
            return lay if lay.buf is buf else None
    return None


def heuristic_mpa(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
    """``tcp.port`` heuristic: segments of known iWARP connections, MPA Requests/Replies, lone FPDUs."""
    tcp = _tcp_layer(pkt, buf)
    if tcp is None:
        return False
    sport = tcp.sport
    dport = tcp.dport
    seq = tcp.seq
    d = _find_stream(ctx, pkt.src, sport, pkt.dst, dport)
    n = end - off
    # "M" first: an FPDU begins with its length, which is never 0x4d.. in a segment (a slice a segment spared)
    if d is not None and d.phase != STARTUP and n >= 16 and buf[off] == 0x4D and buf[off:off + 16] == KEY_REQ:
        d = None      # the same addresses and ports again: a new connection (no FPDU starts so)
    if d is None:
        src = (pkt.src, sport)
        dst = (pkt.dst, dport)
        if n >= 16 and buf[off:off + 16] == KEY_REQ:
            conn = _new_conn(ctx, pkt, src, dst, True)
            d = conn.dirs[src]
        elif n >= 16 and buf[off:off + 16] == KEY_REP:
            conn = _new_conn(ctx, pkt, dst, src, True)   # the Request went by before the capture started
            conn.dirs[dst].phase = FULL               # so the initiator's next bytes are FPDUs
            d = conn.dirs[src]
        elif fpdu_chain(buf, off, end, exact=True) > 0:
            conn = _new_conn(ctx, pkt, src, dst, None)
            conn.midstream = True
            ports = iwarp_ddp.rdmacm_port.by_key
            conn.server_port = sport if sport in ports else dport if dport in ports else min(sport, dport)
            for side in conn.dirs.values():
                side.phase = FULL
            d = conn.dirs[src]
        else:
            return False
    dissect_mpa_segment(pkt, buf, off, end, ctx, d, seq, tcp)
    return True


def tcp_end_mpa(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
    """``tcp.end``: a FIN or RST of a known iWARP connection (``buf[off:]`` is its TCP header). After a
    RST, or once each direction's FIN came with every byte before it, the connection's stream state
    goes; a FIN ahead of missing bytes keeps it, so that their retransmission still finds it."""
    if end - off < 20:
        return False
    sport = (buf[off] << 8) | buf[off + 1]
    dport = (buf[off + 2] << 8) | buf[off + 3]
    d = _streams(ctx).get(((pkt.src, sport), (pkt.dst, dport)))
    if d is None:
        return False
    flags = buf[off + 13]
    src = (pkt.src, sport)
    if flags & 0x04:
        _release(ctx, d.conn, pkt, pkt.frame.ts, src)
        return True
    seglen = end - off - (buf[off + 12] >> 4) * 4
    seq = int.from_bytes(buf[off + 4:off + 8], "big")
    nxt = d.stream.next_seq
    if d.conn.first_fin is None:
        d.conn.first_fin = src              # who began to close, as a DREQ's sender does on IB
    if nxt >= 0 and not d.stream.held and seq_delta((seq + seglen) & 0xFFFFFFFF, nxt) == 0:
        d.finished = True
    if all(side.finished for side in d.conn.dirs.values()):
        _release(ctx, d.conn, pkt, pkt.frame.ts, d.conn.first_fin)
    return True


# --- rules of the TCP stream under MPA ----------------------------------------------------------------
# A copy of bytes already seen is one event, said here once: the FPDUs in it are not dissected again.
TCP_RETRANSMISSION: Final = declare(
    "tcp.retransmission", "note", "sequence",
    "TCP retransmission of {bytes} bytes already seen",
    "RFC 9293 §3.4, §3.10.7.4 (a segment of sequence numbers already received is acknowledged and dropped)")
TCP_HELD: Final = declare(
    "tcp.held", "warning", "sequence",
    "Segment ahead of a hole in the TCP stream",
    "RFC 9293 §3.10.7.4 (a segment beyond the next sequence number expected waits until the hole is filled)")
TCP_OVERLAP: Final = declare(
    "tcp.overlap", "note", "sequence",
    "{bytes} bytes of this segment were seen already (dropped)",
    "RFC 9293 §3.10.7.4 (the part of a segment already received is trimmed)")
TCP_MISSING: Final = declare(
    "tcp.missing", "warning", "sequence",
    "{bytes} bytes of the TCP stream are missing from the capture",
    "RFC 9293 §3.4 (a stream's sequence numbers have no gaps: the capture missed these bytes)")
MPA_RESYNC: Final = declare(
    "mpa.resync", "note", "sequence",
    "FPDU boundary found again after missing bytes",
    "RFC 5044 (FPDUs follow one another in the stream, each after its ULPDU_Length; markers, when negotiated, "
    "point at them)")


# --- stream walking -------------------------------------------------------------------------------
def dissect_mpa_segment(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any, d: MpaDir, seq: int,
                        tcp: TcpLayer | None = None) -> None:
    """The segment ``buf[off:end]`` at ``seq`` of direction ``d``'s stream; ``tcp``: its TCP layer, whose
    own Info line this writes over (transport.take_line) once it has written anything of its own."""
    view = d.stream.feed(seq, buf, off, end, pkt.frame.num)
    pkt.proto = "MPA"
    _account(ctx, d, pkt)
    status = view.status
    if status != NEW:
        # Only unusual segments get a reassembly layer: the in-order case stays free.
        st_lay = pkt.add_layer("tcp_stream", None, buf, off, end - off, "TCP stream reassembly")
        st_lay.add(STREAM_STATUS, status)
        if view.dropped:
            st_lay.add(OVERLAP_LEN, view.dropped, off, min(view.dropped, end - off))
        if view.gap:
            st_lay.add(GAP, view.gap)
    if status == RETRANSMISSION:
        pkt.add_info("[iWARP: retransmitted bytes, dissected in their first frame]")
        pkt.add_finding(TCP_RETRANSMISSION, bytes=view.dropped)
        return
    if status == HELD:
        pkt.add_info("[iWARP: out-of-order segment held until the missing bytes arrive]")
        pkt.add_finding(TCP_HELD)
        return
    if status == OVERLAP:
        pkt.add_finding(TCP_OVERLAP, bytes=view.dropped)
    if status == AFTER_GAP or view.gap:
        pkt.add_finding(TCP_MISSING, bytes=view.gap)
        if d.phase == FULL:
            d.phase = LOST
    iw: list[iwarp_ddp.IWarpInfo] = []
    p = view.off
    vend = view.end
    # TCP's own line when it was made before (none when it comes after, or the Info column is not wanted):
    # the iWARP summary replaces it below
    k = len(pkt.info)
    tcp_info = pkt.info[0] if k == 1 else list(pkt.info) if k else None
    while p < vend:
        phase = d.phase
        if phase == FULL:
            q = _fpdu(pkt, view, p, ctx, d, iw)
            if q < 0:
                break
            p = q
        elif phase == STARTUP:
            q = _reqrep(pkt, view, p, ctx, d)
            if q < 0:
                break
            p = q
        elif phase == LOST:
            start = _resync(view, p, d)
            if start < 0:
                start = vend
            if start > p:
                pkt.add_info(f"[iWARP: {start - p} bytes after missing data, FPDU boundary unknown]")
                add_data(pkt, view.buf, p, start)
                p = start
            if p < vend:
                d.phase = FULL
                pkt.add_finding(MPA_RESYNC)
        else:
            add_data(pkt, view.buf, p, vend)
            p = vend
    d.stream.keep(view, p)
    if p < vend and d.phase == FULL:
        _note_fragment(pkt, view, p, d)
    if iw and pkt.proto == "MPA":
        pkt.proto = "iWARP"
    info = pkt.info
    if k and len(info) > k and (info[0] == tcp_info if k == 1 else info[:k] == tcp_info):
        del info[:k]          # the iWARP summary replaces TCP's own line
    elif len(info) > k and tcp is not None:
        take_line(tcp)        # TCP's own line, not made yet: the iWARP summary takes its place


def _resync(view: StreamView, p: int, d: MpaDir) -> int:
    """Where the next FPDU begins after missing bytes, or -1.

    With markers, a marker's FPDU pointer says where the FPDU holding it begins.  Without,
    records usually begin where segments begin: each segment start is tried with the strict
    FPDU heuristic.
    """
    buf, vend = view.buf, view.end
    if d.markers:
        rel = (view.stream_pos(p) - d.mstart) % MARKER_INTERVAL
        m = p + (MARKER_INTERVAL - rel) % MARKER_INTERVAL
        while m + 4 <= vend:
            start = m - ((buf[m + 2] << 8) | buf[m + 3])
            if start >= p and (start - m) % 4 == 0:
                return start
            m += MARKER_INTERVAL
        return -1
    for b in [p] + [s for s, _e, _n in view.spans if s > p]:
        if fpdu_chain(buf, b, vend, exact=False) > 0:
            return b
    return -1


def _note_fragment(pkt: Packet, view: StreamView, p: int, d: MpaDir) -> None:
    have = view.end - p
    lay = pkt.add_layer("mpa", None, view.buf, p, have, "MPA FPDU fragment")
    lay.add(FRAGMENT, have, p, have)
    lay.add(STREAM_POS, view.stream_pos(p))
    total = ""
    if have >= 2 and not d.markers:
        ul = (view.buf[p] << 8) | view.buf[p + 1]
        total = f" of {_fpdu_size(ul)}"
    pkt.add_info(f"[MPA FPDU continues: {have}{total} bytes]")


def _fpdu_size(ulpdu_len: int) -> int:
    return ((2 + ulpdu_len + 3) & ~3) + 4


def _reqrep(pkt: Packet, view: StreamView, p: int, ctx: Any, d: MpaDir) -> int:
    """An MPA Request or Reply frame at ``p``; returns where it ends, or -1 when incomplete."""
    buf = view.buf
    vend = view.end
    if vend - p < 20:
        pkt.add_info(f"[MPA frame continues: {vend - p} bytes]")
        return -1
    key = bytes(buf[p:p + 16])
    is_req = key == KEY_REQ
    if not is_req and key != KEY_REP:
        pkt.set_malformed("mpa: expected an MPA Request or Reply frame (RFC 5044)")
        d.phase = CLOSED
        return p
    pdlen = (buf[p + 18] << 8) | buf[p + 19]
    need = 20 + pdlen
    if pdlen > MAX_PD_LENGTH:
        # Not an MPA frame any peer would accept; waiting for that many bytes would hoard the stream.
        pkt.add_layer("mpa", REQREP, buf, p, 20, "MPA Request Frame" if is_req else "MPA Reply Frame")
        pkt.set_malformed(f"mpa: private data length {pdlen} exceeds 512 bytes (RFC 5044)")
        d.phase = CLOSED
        return p + 20
    if vend - p < need:
        pkt.add_info(f"[MPA {'Request' if is_req else 'Reply'} continues: {vend - p} of {need} bytes]")
        return -1
    conn = d.conn
    flags = buf[p + 16]
    rev = buf[p + 17]
    lay = pkt.add_layer("mpa", REQREP, buf, p, need, "MPA Request Frame" if is_req else "MPA Reply Frame")
    frames = view.frames(p, p + need)
    if len(frames) > 1:
        lay.add(FRAMES, ", ".join(map(str, frames)))
    params = MpaParams(flags, rev, pkt.frame.num)
    pkt.proto = "MPA"
    what = "Request" if is_req else "Reply"
    text = f"MPA {what} Rev {rev}"
    if flags & 0x80:
        text += " M"
    if flags & 0x40:
        text += " C"
    if flags & 0x20:
        text += " [Rejected]"
    enhanced = rev == 2 and bool(flags & 0x10)
    lay.add(ENHANCED, enhanced, p + 16, 1)
    if flags & (0x0F if enhanced else 0x1F):
        pkt.add_expert("warning", "protocol", "MPA Res bits are not zero", "RFC 5044")
    if rev not in (1, 2):
        pkt.add_expert("warning", "protocol", f"MPA revision {rev} is neither 1 (RFC 5044) nor 2 (RFC 6581)")
    if is_req and flags & 0x20:
        pkt.add_expert("warning", "protocol", "R bit set in an MPA Request", "RFC 5044")
    pd = p + 20
    pdend = p + need
    if pdlen:
        lay.add(PRIVATE_DATA, bytes(buf[pd:pdend]), pd, pdlen)
    if enhanced and pdlen >= 4:
        lay.child("mpa.v2", IRD_ORD, pd, 4, "Enhanced MPA IRD/ORD (RFC 6581)")
        w = int.from_bytes(buf[pd:pd + 4], "big")
        params.p2p = bool(w >> 31)
        params.ird = (w >> 16) & 0x3FFF
        params.ord = w & 0x3FFF
        params.rtr = ((w >> 30) & 1) << 2 | ((w >> 15) & 1) << 1 | ((w >> 14) & 1)
        text += f" IRD={params.ird} ORD={params.ord}"
        if params.p2p:
            text += " P2P"
        pd += 4
    elif enhanced:
        pkt.add_expert("warning", "malformed", "Enhanced MPA private data shorter than the IRD/ORD word",
                       "RFC 6581")
    text += f" PD={pdlen}"
    params.pdata = bytes(buf[pd:pdend])
    if is_req:
        conn.req = params
        conn.req_flags = flags
        conn.req_frame = pkt.frame.num
        conn.rev = rev
        conn.crc = conn.crc or bool(flags & 0x40)
        # M in the Request: the responder must put markers in what it sends (RFC 5044).
        conn.dirs[conn.responder].markers = bool(flags & 0x80)
    else:
        conn.rep = params
        conn.rep_flags = flags
        conn.rep_frame = pkt.frame.num
        conn.crc = conn.crc or bool(flags & 0x40)
        conn.dirs[conn.initiator].markers = bool(flags & 0x80)
        conn.rejected = bool(flags & 0x20)
        if conn.rev is not None and rev != conn.rev:
            pkt.add_expert("warning", "protocol", f"Reply revision {rev} differs from the Request's {conn.rev}")
        conn.full_operation = not conn.rejected
        if conn.rejected:
            pkt.add_expert("note", "protocol", "The responder rejected the connection (R bit)", "RFC 5044")
    pkt.set_info(text)
    n_info = len(pkt.info)
    d.phase = CLOSED if (not is_req and conn.rejected) else FULL
    d.mstart = view.stream_pos(pdend)
    if pd < pdend:
        dissect_with(cm_private_data, conn.server_port, pkt, buf, pd, pdend, ctx)
        if len(pkt.info) > n_info:
            pkt.info.insert(n_info, "|")
    open_connection(ctx, conn, pkt, replied=not is_req)
    return pdend


def open_connection(ctx: Any, conn: MpaConn, pkt: Packet, replied: bool) -> None:
    """Enter the MPA exchange into the connection table (``rdmaspy.conversation``).

    Called at the Request with the client's RFC 8797 data and at the Reply with the server's;
    the table takes the inline thresholds from the pair.
    """
    if conn.midstream:
        return
    pdata = pkt.noted(RPCRDMA_PDATA)
    tab = _conversation.connections(ctx)
    kw: dict[str, Any] = {"pdata_server": pdata, "replied": True, "rejected": conn.rejected} if replied \
        else {"pdata_client": pdata}
    conn.connection = tab.open_from_mpa(conn.initiator, conn.responder, pkt.frame.ts, port=conn.server_port, **kw)
    conn.table = tab
    ulp = pkt.noted(_conversation.ULP_PDATA)
    if ulp is not None:
        _conversation.take_ulp(conn.connection, ulp, not replied)
    if pkt.conv is None:
        # the Request's segment, seen before the connection was known: it is the connection's first
        tab.account(pkt, conn.connection, not replied)


def _account(ctx: Any, d: MpaDir, pkt: Packet) -> None:
    conn = d.conn
    c = conn.connection
    if c is not None:
        tab = conn.table
        (tab if tab is not None else _conversation.connections(ctx)).account(pkt, c, bool(d.is_initiator))


# --- FPDUs ----------------------------------------------------------------------------------------
def _gather(buf: bytes, p: int, end: int, spos: int, mstart: int, need: int) -> tuple[bytes, int, list[int]] | None:
    """``need`` bytes of FPDU content from ``buf[p:]`` with the markers left out.

    ``spos`` is the stream position of ``p``; markers stand where (position - mstart) is a
    multiple of 512 and come before any content byte at that position.  Returns (content, raw
    length, marker offsets in buf), or None when ``end`` comes first.
    """
    out = bytearray()
    marks: list[int] = []
    rel = (spos - mstart) % MARKER_INTERVAL
    next_m = p + (MARKER_INTERVAL - rel) % MARKER_INTERVAL
    q = p
    while len(out) < need:
        if q == next_m:
            if q + 4 > end:
                return None
            marks.append(q)
            q += 4
            next_m += MARKER_INTERVAL
            continue
        take = min(need - len(out), next_m - q, end - q)
        if take <= 0:
            return None
        out += buf[q:q + take]
        q += take
    return bytes(out), q - p, marks


def _fpdu(pkt: Packet, view: StreamView, p: int, ctx: Any, d: MpaDir, iw: list) -> int:
    """One FPDU at ``p``; returns where it ends, or -1 when it is not complete yet."""
    buf = view.buf
    vend = view.end
    conn = d.conn
    spos = view.stream_pos(p)
    marks: list[int] = []
    if d.markers:
        head = _gather(buf, p, vend, spos, d.mstart, 2)
        if head is None:
            return -1
        ulen = (head[0][0] << 8) | head[0][1]
        size = _fpdu_size(ulen)
        got = _gather(buf, p, vend, spos, d.mstart, size)
        if got is None:
            return -1
        content, raw, marks = got
        cbuf = content
        c0 = 0
    else:
        if vend - p < 2:
            return -1
        ulen = (buf[p] << 8) | buf[p + 1]
        size = raw = _fpdu_size(ulen)
        if vend - p < size:
            return -1
        cbuf = buf
        c0 = p
    # a view of the frame's own bytes has one span, that frame's: no walk of the spans
    frames = [pkt.frame.num] if view.in_frame else view.frames(p, p + raw)
    d.frames_now = frames
    d.fpdus += 1
    lay = pkt.add_layer("mpa", FPDU, cbuf, c0, size, "MPA FPDU").lazy(_FILL_FPDU)
    if len(frames) > 1 or (frames and frames[0] != pkt.frame.num):
        lay.add(FRAMES, ", ".join(map(str, frames)))
    if marks:
        lay.add(FPDU_LEN, raw)
        lay.add(MARKER_COUNT, len(marks))
        for m in marks:
            mk = lay.child("mpa.marker", MARKER, m, 4, "MPA Marker", buf=buf)
            ptr = (buf[m + 2] << 8) | buf[m + 3]
            want = view.stream_pos(m) - spos
            if ptr != want:
                mk.add(FPDU_LEN, want)
                pkt.add_expert("warning", "protocol", f"Marker FPDU pointer {ptr}, expected {want}",
                               "RFC 5044")
    ul_end = c0 + 2 + ulen
    pad_end = c0 + size - 4
    d.crc_now = None
    if conn.crc:
        wire = int.from_bytes(cbuf[pad_end:pad_end + 4], "big")
        expected = crc_field_value(CRC32C(memoryview(buf)[p:p + raw - 4]))
        ok = expected == wire
        d.crc_now = ok
        lay.add(CRC_CHECKED, True)
        lay.add(CRC_VALID, ok, pad_end, 4)
        lay.add(CRC_EXPECTED, expected, pad_end, 4)
        if not ok:
            pkt.add_expert("error", "checksum", f"Bad MPA CRC 0x{wire:08x}, expected 0x{expected:08x}",
                           "RFC 5044")
    if ulen == 0:
        pkt.add_info("iWARP MPA empty FPDU")
    else:
        if not iw:
            pkt.note(iwarp_ddp.IWARP, iw)     # noted first: upper layers may look for it
        else:
            pkt.add_info("|")
        iwarp_ddp.dissect_ddp_rdmap(pkt, cbuf, c0 + 2, ul_end, ctx, stream=d, out=iw)
    if d.crc_now is False:
        pkt.add_info(f"[Bad MPA CRC 0x{wire:08x}, expected 0x{expected:08x}]")
    pkt.proto = "iWARP"
    return p + raw


def _fill_fpdu(lay: Any) -> None:
    """Pad and CRC of an FPDU layer, added when somebody looks (a summary line does not)."""
    b, o = lay.buf, lay.off
    ul_end = o + 2 + ((b[o] << 8) | b[o + 1])
    pad_end = o + lay.length - 4
    if pad_end > ul_end:
        lay.add(PAD, bytes(b[ul_end:pad_end]), ul_end, pad_end - ul_end)
    # the word read in place (int.from_bytes of a slice: a bytes object and a method call), when it is whole
    whole = 0 <= pad_end and pad_end + 4 <= len(b)
    crc = u32(b, pad_end) if whole else int.from_bytes(b[pad_end:pad_end + 4], "big")
    lay.add(CRC, crc, pad_end, 4)


# Final: compiled, a C static (a function named as a value is otherwise a look-up in the module's dict)
_FILL_FPDU: Final = _fill_fpdu


def fpdu_chain(buf: bytes, p: int, end: int, exact: bool) -> int:
    """How many plausible FPDUs follow each other from ``p`` (no markers); 0 if the first is not one.

    ``exact``: the chain must end exactly at ``end``.  Otherwise a last FPDU cut short by the
    segment boundary is accepted when its header is plausible.
    """
    count = 0
    while p < end:
        if end - p < 4:
            return 0 if exact or count == 0 else count
        ulen = (buf[p] << 8) | buf[p + 1]
        ctrl = buf[p + 2]
        r = buf[p + 3]
        tagged = ctrl >> 7
        op = r & 15
        if ctrl & 0x3F != 1 or r & 0xF0 != 0x40 or op not in iwarp_ddp.RDMAP_OPCODES \
                or bool(tagged) != iwarp_ddp._TAGGED_OPS[op] or ulen < (14 if tagged else 18):
            return 0 if exact or count == 0 else count
        size = _fpdu_size(ulen)
        if end - p < size:
            return 0 if exact else count + 1
        count += 1
        p += size
    return count


class _Mpa(Dissector):
    """MPA recognised in a TCP segment, called directly (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        return heuristic_mpa(pkt, buf, off, end, ctx)


tcp_port.add_heuristic("iwarp_mpa", _Mpa(heuristic_mpa))
tcp_end.add_heuristic("iwarp_mpa", tcp_end_mpa)
