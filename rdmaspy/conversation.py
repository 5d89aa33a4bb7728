"""Connections of a capture, learnt from their setup (IB CM, MPA) or from their traffic alone.

The CM dissector reports REQ/REP/RTU/REJ/DREQ/DREP here; the iWARP dissector
reports MPA exchanges.  Every RC/UC/XRC packet is then attributed to its
connection by the InfiniBand dissector (``account``): one dict lookup on the destination address, one on
the destination QPN.  A packet whose connection was set up before the capture
began opens a connection known by its QPN pair only (``setup_known`` False).

This module holds data only; presentation lives in rdmaspy.commands.
"""
from __future__ import annotations

from .packet import Note
from .typenames import TYPE_CHECKING, Any, Final, i64, mypyc_attr

if TYPE_CHECKING:
    from .session import Session
    from .packet import Packet

DEFAULT_INLINE: Final = 1024          # RFC 8166 §3.3.2; RFC 8797 §5.1 when the private data is absent or malformed

REQUESTED: Final = "requested"
ESTABLISHED: Final = "established"
REJECTED: Final = "rejected"
CLOSED: Final = "closed"
UNKNOWN_SETUP: Final = "unknown-setup"


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Connection:
    """One RDMA connection.  "client" is the side that sent the REQ (or MPA Request); for a
    connection known by traffic only it is the side seen sending first."""

    __slots__ = ("conn_id", "transport", "service_id", "port", "port_space", "service_type",
                 "client_addr", "server_addr", "client_gid", "server_gid", "client_qpn", "server_qpn",
                 "client_port", "server_port",
                 "req_psn", "rep_psn", "path_mtu", "state", "setup_known",
                 "t_requested", "t_established", "t_closed", "t_first", "t_last",
                 "reject_reason", "closed_by", "client_comm", "server_comm", "pdata_client", "pdata_server",
                 "inline_c2s", "inline_s2c", "remote_invalidate", "ulp", "ulp_client", "ulp_server",
                 "packets_c2s", "packets_s2c", "bytes_c2s", "bytes_s2c")

    def __init__(self, conn_id: int, client_addr: str, server_addr: str, ts: int, setup_known: bool = True,
                 transport: str = "ib") -> None:
        self.conn_id = conn_id
        self.transport = transport           # "ib" (IB / RoCE) or "iwarp"
        self.service_id: int | None = None
        self.port: int | None = None         # RDMA-CM port (TCP port for iWARP)
        self.port_space: int | None = None
        self.service_type: int | None = None  # CM transport service type: 0 RC, 1 UC, 2 RD
        self.client_addr = client_addr
        self.server_addr = server_addr
        self.client_gid: str | None = None   # IB CM: the REQ's primary path GIDs (the address of a LID-routed path)
        self.server_gid: str | None = None
        self.client_qpn: int | None = None
        self.server_qpn: int | None = None
        self.client_port: int | None = None  # iWARP: TCP ports; RDMA-CM over IB: IP CM source port, service port
        self.server_port: int | None = None
        # Starting PSNs of the REQ and the REP.  Linux (rxe, real captures) starts server -> client traffic
        # at the REQ's Starting PSN and client -> server traffic at the REP's: see start_psn_c2s/_s2c.
        self.req_psn: int | None = None
        self.rep_psn: int | None = None
        self.path_mtu: int | None = None     # bytes
        self.state = REQUESTED if setup_known else UNKNOWN_SETUP
        self.setup_known = setup_known
        self.t_requested: int | None = ts if setup_known else None
        self.t_established: int | None = None
        self.t_closed: int | None = None
        self.t_first = ts
        self.t_last = ts
        self.reject_reason: int | None = None
        self.closed_by: str | None = None    # "client" | "server"
        self.client_comm: int | None = None
        self.server_comm: int | None = None
        self.pdata_client: Any = None        # RpcRdmaPdata the client sent, if any
        self.pdata_server: Any = None
        self.inline_c2s = DEFAULT_INLINE
        self.inline_s2c = DEFAULT_INLINE
        self.remote_invalidate = False
        # The upper layer a dissector found on the connection ("nvme-rdma"), and what its setup data said
        # (facts of the dissector of the port's CM or MPA private data, other than RFC 8797's)
        self.ulp: str | None = None
        self.ulp_client: Any = None
        self.ulp_server: Any = None
        self.packets_c2s = 0
        self.packets_s2c = 0
        self.bytes_c2s = 0
        self.bytes_s2c = 0

    def direction(self, pkt: Packet) -> str:
        """"c2s" or "s2c" for a packet of this connection."""
        ib = pkt.ib
        if ib is not None and self.server_qpn is not None:
            return self.ib_direction(pkt, ib.destqp)
        if pkt.dst != self.server_addr:
            return "s2c"
        if self.client_addr != self.server_addr or self.server_port is None:
            return "c2s"
        tcp = pkt.layer("tcp")
        return "c2s" if tcp is not None and tcp.get("dstport") == self.server_port else "s2c"

    def ib_direction(self, pkt: Packet, destqp: int) -> str:
        """``direction`` of an InfiniBand packet sent to ``destqp``, for a caller that has its facts typed
        (compiled, reading them from ``pkt.ib`` here is a generic attribute read a packet)."""
        server_qpn = self.server_qpn
        if server_qpn is None:
            return self.direction(pkt)
        return "c2s" if destqp == server_qpn and pkt.dst == self.server_addr else "s2c"

    @property
    def start_psn_c2s(self) -> int | None:
        """First PSN client -> server: the REP's Starting PSN (the responder's receive queue PSN)."""
        return self.rep_psn

    @property
    def start_psn_s2c(self) -> int | None:
        """First PSN server -> client: the REQ's Starting PSN (the requester's receive queue PSN)."""
        return self.req_psn

    @property
    def t_start(self) -> int:
        return self.t_requested if self.t_requested is not None else self.t_first

    @property
    def t_end(self) -> int:
        return self.t_closed if self.t_closed is not None and self.t_closed > self.t_last else self.t_last

    def negotiate(self) -> None:
        """RFC 8797 §4.3: client-to-server = min(client send, server receive), and the reverse."""
        cs, cr, crinv = _advertised(self.pdata_client)
        ss, sr, srinv = _advertised(self.pdata_server)
        self.inline_c2s = min(cs, sr)
        self.inline_s2c = min(ss, cr)
        self.remote_invalidate = crinv and srinv

    def __repr__(self) -> str:
        return (f"<Connection {self.conn_id} {self.client_addr}/{self.client_qpn} -> "
                f"{self.server_addr}/{self.server_qpn} {self.state}>")


# The connections that ended at a packet (an iWARP connection's RST or second in-sequence FIN, or its
# endpoints beginning another): no later packet belongs to them, so the analysis can let their state go.
ENDED: Final[Note[list[Connection]]] = Note("conversation.ended")


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class UlpSetup:
    """What an upper layer's dissector found in a CM or MPA message's private data: the upper layer's name
    (``Connection.ulp``) and, in its subclass, its own facts (nvme_rdma.NvmeRdmaCm)."""

    __slots__ = ("ulp",)

    def __init__(self, ulp: str) -> None:
        self.ulp = ulp


# For the connection the CM or MPA message sets up: the message's dissector enters it as the connection's
# ``ulp``, ``ulp_client`` (a REQ's, an MPA Request's) or ``ulp_server`` (a REP's or REJ's, an MPA Reply's).
ULP_PDATA: Final[Note[UlpSetup]] = Note("conversation.ulp_pdata")


def take_ulp(conn: Connection, facts: UlpSetup, client: bool) -> None:
    """Enter what an upper layer's private data said for ``conn`` (the client's or the server's)."""
    conn.ulp = facts.ulp
    if client:
        conn.ulp_client = facts
    else:
        conn.ulp_server = facts


def _advertised(p: Any) -> tuple[int, int, bool]:
    if p is None or not p.valid:
        return DEFAULT_INLINE, DEFAULT_INLINE, False
    return p.send_size, p.recv_size, bool(p.remote_invalidate)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class ConnectionTable:
    """The connections of one capture, in order of appearance."""

    __slots__ = ("conns", "by_dst", "_comm", "_half", "_no_rep", "_tcp", "_dst0", "_qpn0", "_hit0", "_dst1",
                 "_qpn1", "_hit1")

    def __init__(self) -> None:
        self.conns: list[Connection] = []
        # destination address -> destination QPN -> (connection, packet goes client-to-server)
        self.by_dst: dict[str, dict[int, tuple[Connection, bool]]] = {}
        # the last two entries of by_dst found, by the identity of the address text (the dissectors
        # cache it) and the QPN as a machine integer: a connection's two directions find theirs
        # without two hashed look-ups (the QPN's a new int object each time); cleared by _bind
        self._dst0 = self._dst1 = ""
        self._qpn0: i64 = -1
        self._qpn1: i64 = -1
        self._hit0: tuple[Connection, bool] | None = None
        self._hit1: tuple[Connection, bool] | None = None
        self._comm: dict[tuple[str, int], Connection] = {}
        # (client address, server address) -> traffic-only connections still missing the client's QPN
        self._half: dict[tuple[str, str], list[Connection]] = {}
        # (client address, server address) -> connections whose REQ was seen but not their REP
        self._no_rep: dict[tuple[str, str], list[Connection]] = {}
        self._tcp: dict[tuple[str, int, str, int], tuple[Connection, bool]] = {}

    def __iter__(self):
        return iter(self.conns)

    def __len__(self) -> int:
        return len(self.conns)

    def _new(self, client: str, server: str, ts: int, setup_known: bool, transport: str = "ib") -> Connection:
        conn = Connection(len(self.conns) + 1, client, server, ts, setup_known, transport)
        self.conns.append(conn)
        return conn

    def _bind(self, addr: str, qpn: int, conn: Connection, c2s: bool) -> None:
        self._hit0 = self._hit1 = None
        self._qpn0 = self._qpn1 = -1
        d = self.by_dst.get(addr)
        if d is None:
            d = self.by_dst[addr] = {}
        d[qpn] = (conn, c2s)

    def by_comm(self, addr: str, comm_id: int) -> Connection | None:
        """The connection in which ``addr`` uses the CM communication ID ``comm_id``."""
        return self._comm.get((addr, comm_id))

    # -- the IB CM ---------------------------------------------------------------------------------
    def cm_req(self, pkt: Packet, comm_id: int, service_id: int, port: int | None, port_space: int | None,
               qpn: int, psn: int, mtu: int | None, service_type: int, pdata: Any) -> Connection:
        ts = pkt.frame.ts
        conn = self._comm.get((pkt.src, comm_id))
        if conn is None or conn.client_qpn != qpn:      # not a retransmission
            conn = self._new(pkt.src, pkt.dst, ts, True)
            self._comm[(pkt.src, comm_id)] = conn
        conn.client_comm = comm_id
        conn.service_id = service_id
        conn.port = port
        conn.port_space = port_space
        conn.client_qpn = qpn
        conn.req_psn = psn
        conn.path_mtu = mtu
        conn.service_type = service_type
        conn.pdata_client = pdata
        conn.negotiate()
        self._bind(conn.client_addr, qpn, conn, False)
        if conn.server_qpn is None:
            waiting = self._no_rep.setdefault((conn.client_addr, conn.server_addr), [])
            if conn not in waiting:
                waiting.append(conn)
        pkt.conv = conn
        return conn

    def cm_rep(self, pkt: Packet, local: int, remote: int, qpn: int, psn: int, pdata: Any) -> Connection:
        ts = pkt.frame.ts
        conn = self._comm.get((pkt.dst, remote))
        if conn is None:       # the REQ is not in the capture
            conn = self._new(pkt.dst, pkt.src, ts, True)
            conn.client_comm = remote
            self._comm[(pkt.dst, remote)] = conn
        conn.server_comm = local
        waiting = self._no_rep.get((conn.client_addr, conn.server_addr))
        if waiting and conn in waiting:
            waiting.remove(conn)
        conn.server_qpn = qpn
        conn.rep_psn = psn
        conn.pdata_server = pdata
        conn.negotiate()
        conn.t_last = max(conn.t_last, ts)
        self._comm[(pkt.src, local)] = conn
        self._bind(conn.server_addr, qpn, conn, True)
        pkt.conv = conn
        return conn

    def _find(self, pkt: Packet, local: int, remote: int) -> Connection | None:
        return self._comm.get((pkt.src, local)) or self._comm.get((pkt.dst, remote))

    def cm_rtu(self, pkt: Packet, local: int, remote: int) -> Connection | None:
        conn = self._find(pkt, local, remote)
        if conn is not None:
            if conn.state == REQUESTED:
                conn.state = ESTABLISHED
                conn.t_established = pkt.frame.ts
            conn.t_last = max(conn.t_last, pkt.frame.ts)
            pkt.conv = conn
        return conn

    def cm_rej(self, pkt: Packet, local: int, remote: int, reason: int) -> Connection | None:
        # A REJ names the rejected side's ID as remote; its own local ID may be 0 (REQ rejected at once).
        conn = self._comm.get((pkt.dst, remote)) or self._comm.get((pkt.src, local))
        if conn is not None:
            conn.state = REJECTED
            conn.reject_reason = reason
            conn.t_closed = pkt.frame.ts
            conn.closed_by = "client" if pkt.src == conn.client_addr and conn.client_comm == local else "server"
            pkt.conv = conn
        return conn

    def cm_dreq(self, pkt: Packet, local: int, remote: int) -> Connection | None:
        conn = self._find(pkt, local, remote)
        if conn is not None:
            if conn.state != CLOSED:
                conn.state = CLOSED
                conn.t_closed = pkt.frame.ts
                conn.closed_by = "client" if local == conn.client_comm and pkt.src == conn.client_addr \
                    else "server"
            pkt.conv = conn
        return conn

    def cm_drep(self, pkt: Packet, local: int, remote: int) -> Connection | None:
        conn = self._find(pkt, local, remote)
        if conn is not None:
            if conn.state != CLOSED:      # the DREQ was not captured
                conn.state = CLOSED
                conn.t_closed = pkt.frame.ts
            pkt.conv = conn
        return conn

    # -- iWARP -------------------------------------------------------------------------------------
    def open_from_mpa(self, client: tuple[str, int], server: tuple[str, int], ts: int,
                      pdata_client: Any = None, pdata_server: Any = None, port: int | None = None,
                      replied: bool = False, rejected: bool = False) -> Connection:
        """Open (or update) the connection of an MPA exchange on the TCP connection client -> server.

        Call it at the MPA Request with the client's RFC 8797 data, and again at the MPA Reply with
        ``replied=True`` and the server's (``rejected=True`` when the Reply has the Reject bit).
        """
        key = (client[0], client[1], server[0], server[1])
        hit = self._tcp.get(key)
        if hit is None:
            conn = self._new(client[0], server[0], ts, True, "iwarp")
            conn.client_port, conn.server_port = client[1], server[1]
            conn.port = port if port is not None else server[1]
            conn.port_space = 0x06
            self._tcp[key] = (conn, True)
            self._tcp[(server[0], server[1], client[0], client[1])] = (conn, False)
        else:
            conn = hit[0]
        if pdata_client is not None:
            conn.pdata_client = pdata_client
        if pdata_server is not None:
            conn.pdata_server = pdata_server
        conn.negotiate()
        if replied and conn.state == REQUESTED:
            conn.state = REJECTED if rejected else ESTABLISHED
            if rejected:
                conn.t_closed = ts
            else:
                conn.t_established = ts
        conn.t_last = max(conn.t_last, ts)
        return conn

    def tcp_lookup(self, src: str, sport: int, dst: str, dport: int) -> tuple[Connection, bool] | None:
        """(connection, client-to-server) of a TCP segment, for iWARP connections."""
        return self._tcp.get((src, sport, dst, dport))

    def account(self, pkt: Packet, conn: Connection, c2s: bool) -> None:
        """Count a packet (iWARP: each TCP segment carrying the connection) and attribute it."""
        pkt.conv = conn
        n = pkt.frame.wirelen
        if c2s:
            conn.packets_c2s += 1
            conn.bytes_c2s += n
        else:
            conn.packets_s2c += 1
            conn.bytes_s2c += n
        conn.t_last = pkt.frame.ts

    def end_tcp(self, conn: Connection, ts: int, by: str | None = None) -> None:
        """An iWARP connection's TCP connection ended (a RST, both FINs, or its endpoints began another):
        it is closed unless rejected, and its endpoints lead to it no more, so that a new MPA exchange on
        them makes a new connection rather than updating this one."""
        if conn.state != REJECTED:
            self.close(conn, ts, by)
        cport, sport = conn.client_port, conn.server_port
        if cport is None or sport is None:          # not entered by open_from_mpa: no endpoints to free
            return
        for key in ((conn.client_addr, cport, conn.server_addr, sport),
                    (conn.server_addr, sport, conn.client_addr, cport)):
            hit = self._tcp.get(key)
            if hit is not None and hit[0] is conn:
                del self._tcp[key]

    def close(self, conn: Connection, ts: int, by: str | None = None) -> None:
        if conn.state != CLOSED:
            conn.state = CLOSED
            conn.t_closed = ts
            conn.closed_by = by

    # -- traffic without setup ---------------------------------------------------------------------
    def _from_traffic(self, pkt: Any, qpn: int) -> tuple[Connection, bool]:
        src, dst = pkt.src, pkt.dst
        lost_rep = self._no_rep.get((src, dst))
        if lost_rep:
            # The REP was not captured: the client's traffic names the server's QPN.
            conn = lost_rep.pop(0)
            conn.server_qpn = qpn
            self._bind(dst, qpn, conn, True)
            return conn, True
        waiting = self._half.get((dst, src))
        if waiting:
            conn = waiting.pop(0)
            conn.client_qpn = qpn
            hit = (conn, False)
            self._bind(dst, qpn, conn, False)
            return hit
        conn = self._new(src, dst, pkt.frame.ts, False)
        conn.server_qpn = qpn
        self._bind(dst, qpn, conn, True)
        self._half.setdefault((src, dst), []).append(conn)
        return conn, True


KEY: Final = "conversation.connections"


def connections(ctx: Session | None) -> ConnectionTable:
    """The connection table of the capture that ``ctx`` (the engine's Session) belongs to.

    A dissector called without a session (a unit test handing bytes to one dissector) gets a
    table of its own that nothing keeps.
    """
    if ctx is None:
        return ConnectionTable()
    tab = ctx.connections
    if tab is None:
        # typed: compiled, a direct call (on Any, a generic one: iWARP asks for every segment)
        tab = ctx.connections = ctx.get(KEY, ConnectionTable)
    return tab


def account(pkt: Packet, destqp: int, ctx: Session | None) -> None:
    """Attribute a packet of a connected transport (RC, UC, XRC), sent to ``destqp``, to its connection."""
    if ctx is None:
        return
    found = ctx.connections
    tab: ConnectionTable = connections(ctx) if found is None else found
    dst = pkt.dst
    qpn: i64 = destqp
    if qpn == tab._qpn0 and dst is tab._dst0:
        hit = tab._hit0
    else:
        if qpn == tab._qpn1 and dst is tab._dst1:
            hit = tab._hit1
        else:
            d = tab.by_dst.get(dst)
            hit = d.get(destqp) if d is not None else None
        if hit is not None:
            tab._dst1, tab._qpn1, tab._hit1 = tab._dst0, tab._qpn0, tab._hit0
            tab._dst0, tab._qpn0, tab._hit0 = dst, qpn, hit
    if hit is None:
        hit = tab._from_traffic(pkt, destqp)
    conn, c2s = hit
    pkt.conv = conn
    frame = pkt.frame
    if c2s:
        conn.packets_c2s += 1
        conn.bytes_c2s += frame.wirelen
    else:
        conn.packets_s2c += 1
        conn.bytes_s2c += frame.wirelen
    conn.t_last = frame.ts
    if conn.state == REQUESTED and conn.server_qpn is not None:
        # The responder may send before the RTU arrives (IBTA 12.9.7.2: the first packet counts as RTU).
        conn.state = ESTABLISHED
        conn.t_established = frame.ts
