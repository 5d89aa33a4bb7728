"""InfiniBand transport: LRH, GRH, BTH and every extended header, ICRC and VCRC.

Carried three ways: RoCEv2 (UDP port 4791, IPv4 or IPv6), RoCEv1 (ethertype
0x8915, GRH first) and native InfiniBand (LINKTYPE_INFINIBAND 247 and ERF, LRH
first).  The payload after the extended headers (pad bytes removed) is handed
to ``ib.qp`` dissectors by destination QP (0 and 1: management datagrams), then
to the ``ib.payload`` table, where upper layers register heuristics or bind
themselves to connections.
"""
from __future__ import annotations

import zlib
from struct import unpack_from as _unpack_words

from .. import conversation
from ..fields import F, Field, Header, declaring
from ..packet import Layer, Packet
from ..registry import Dissector, dissect_with, table
from ..session import wants_info
from ..typenames import Any, Callable, Final, i64, mypyc_attr
from .data import add_data_layer, data_layer
from .ethernet import eth_fast
from .hexfmt import hex8, hexn, with_decimal
from .ip import eth_ipv4_layers, ipv4_text as _ip_text, ipv6_text
from .transport import UDP
from .xdr import u32, u64

declaring(__name__)

# --- header declarations --------------------------------------------------------------------------
LNH_NAMES: Final = {0: "Raw (IPv6)", 1: "Raw (IPv4/Eth)", 2: "IBA local (BTH)", 3: "IBA global (GRH)"}
LRH: Final = Header("lrh", "Local Route Header", [
    F("vl", 4, "Virtual Lane"),
    F("lver", 4, "Link Version"),
    F("sl", 4, "Service Level"),
    F("reserved2", 2, "Reserved (2 bits)"),
    F("lnh", 2, "Link Next Header", names=LNH_NAMES),
    F("dlid", 16, "Destination Local ID", "hex"),
    F("reserved5", 5, "Reserved (5 bits)"),
    F("pktlen", 11, "Packet Length", unit="words"),
    F("slid", 16, "Source Local ID", "hex"),
])
GRH: Final = Header("grh", "Global Route Header", [
    F("ipver", 4, "IP Version"),
    F("tclass", 8, "Traffic Class", "hex"),
    F("flowlabel", 20, "Flow Label", "hex"),
    F("paylen", 16, "Payload Length", unit="bytes"),
    F("nxthdr", 8, "Next Header", "hex", {0x1B: "BTH"}),
    F("hoplmt", 8, "Hop Limit"),
    F("sgid", 128, "Source GID", "gid"),
    F("dgid", 128, "Destination GID", "gid"),
])

TRANSPORTS: Final = {0: "RC", 1: "UC", 2: "RD", 3: "UD", 4: "CNP", 5: "XRC", 6: "Manufacturer", 7: "Manufacturer"}
OPERATIONS: Final = {
    0: "SEND First", 1: "SEND Middle", 2: "SEND Last", 3: "SEND Last with Immediate", 4: "SEND Only",
    5: "SEND Only with Immediate", 6: "RDMA WRITE First", 7: "RDMA WRITE Middle", 8: "RDMA WRITE Last",
    9: "RDMA WRITE Last with Immediate", 10: "RDMA WRITE Only", 11: "RDMA WRITE Only with Immediate",
    12: "RDMA READ Request", 13: "RDMA READ Response First", 14: "RDMA READ Response Middle",
    15: "RDMA READ Response Last", 16: "RDMA READ Response Only", 17: "Acknowledge", 18: "ATOMIC Acknowledge",
    19: "CmpSwap", 20: "FetchAdd", 21: "RESYNC", 22: "SEND Last with Invalidate", 23: "SEND Only with Invalidate",
    28: "FLUSH", 29: "ATOMIC WRITE",
}
# Which operations each transport has (IBTA 9.2 and the 1.5 additions FLUSH / ATOMIC WRITE).
_RC_OPS: Final = set(range(0, 21)) | {22, 23, 28, 29}
_OPS_BY_TRANSPORT: Final = {
    0: _RC_OPS,
    1: set(range(0, 12)),
    2: set(range(0, 22)) | {28, 29},   # Wireshark (RD_FLUSH 0x5C, RD_ATOMIC_WRITE 0x5D)
    3: {4, 5},
    5: set(range(0, 21)) | {22, 23},   # Linux ib_pack.h: XRC has no FLUSH / ATOMIC WRITE
}

AETH_NAK_CODES: Final = {0: "PSN Sequence Error", 1: "Invalid Request", 2: "Remote Access Error",
                  3: "Remote Operational Error", 4: "Invalid RD Request"}
AETH_TYPES: Final = {0: "ACK", 1: "RNR NAK", 2: "Reserved", 3: "NAK"}
AETH_TYPE_ACK: Final = 0        # the syndrome's type (its bits 6:5), IBTA 9.7.5.1.1 ...
AETH_TYPE_RNR_NAK: Final = 1
AETH_TYPE_NAK: Final = 3
AETH_VALUE_MASK: Final = 31     # ... and its value: credit count, RNR timer or NAK code
PATH_MTU_MIN: Final = 256       # the path MTUs IBTA defines run from 256 to 4096 bytes
PATH_MTU_MAX: Final = 4096
# RNR NAK timer field -> milliseconds (IBTA table 45)
RNR_TIMER_MS: Final = (655.36, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.12, 0.16, 0.24, 0.32, 0.48, 0.64, 0.96, 1.28, 1.92,
                2.56, 3.84, 5.12, 7.68, 10.24, 15.36, 20.48, 30.72, 40.96, 61.44, 81.92, 122.88, 163.84, 245.76,
                327.68, 491.52)

OPCODE_NAMES: Final[dict[int, str]] = {}
for _t, _tn in TRANSPORTS.items():
    for _o in _OPS_BY_TRANSPORT.get(_t, ()):
        OPCODE_NAMES[(_t << 5) | _o] = f"{_tn} {OPERATIONS[_o]}"
OPCODE_NAMES[0x81] = "CNP"

BTH: Final = Header("bth", "Base Transport Header", [
    F("opcode", 8, "Opcode", names=OPCODE_NAMES),
    F("se", 1, "Solicited Event", "bool"),
    F("m", 1, "MigReq", "bool"),
    F("padcnt", 2, "Pad Count"),
    F("tver", 4, "Header Version"),
    F("p_key", 16, "Partition Key", "hex"),
    F("fecn", 1, "FECN", "bool"),
    F("becn", 1, "BECN", "bool"),
    F("reserved6", 6, "Reserved (6 bits)"),
    F("destqp", 24, "Destination Queue Pair", "hex"),
    F("ackreq", 1, "Acknowledge Request", "bool"),
    F("reserved7", 7, "Reserved (7 bits)"),
    F("psn", 24, "Packet Sequence Number"),
])
RDETH: Final = Header("rdeth", "Reliable Datagram Extended Transport Header", [
    F("reserved", 8, "Reserved"),
    F("ee_context", 24, "EE Context", "hex"),
])
DETH: Final = Header("deth", "Datagram Extended Transport Header", [
    F("q_key", 32, "Queue Key", "hex"),
    F("reserved", 8, "Reserved"),
    F("src_qp", 24, "Source Queue Pair", "hex"),
])
XRCETH: Final = Header("xrceth", "XRC Extended Transport Header", [
    F("reserved", 8, "Reserved"),
    F("xrcsrq", 24, "XRC Shared Receive Queue", "hex"),
])
RETH: Final = Header("reth", "RDMA Extended Transport Header", [
    F("va", 64, "Virtual Address", "hex"),
    F("r_key", 32, "Remote Key", "hex"),
    F("dma_length", 32, "DMA Length", unit="bytes"),
])
ATOMICETH: Final = Header("atomiceth", "Atomic Extended Transport Header", [
    F("va", 64, "Virtual Address", "hex"),
    F("r_key", 32, "Remote Key", "hex"),
    F("swap_or_add_data", 64, "Swap (Or Add) Data", "hex"),
    F("compare_data", 64, "Compare Data", "hex"),
])
AETH: Final = Header("aeth", "ACK Extended Transport Header", [
    F("syndrome", 8, "Syndrome", "hex"),
    F("msn", 24, "Message Sequence Number"),
])
ATOMICACKETH: Final = Header("atomicacketh", "Atomic ACK Extended Transport Header", [
    F("orig_rem_dt", 64, "Original Remote Data", "hex"),
])
IMMDT: Final = Header("immdt", "Immediate Data", [F("imm", 32, "Immediate Data", "hex")])
IETH: Final = Header("ieth", "Invalidate Extended Transport Header", [F("r_key", 32, "Key to Invalidate", "hex")])
FETH: Final = Header("feth", "Flush Extended Transport Header", [
    F("reserved", 26, "Reserved"),
    F("sel", 2, "Selectivity Level", names={0: "Memory Region Range", 1: "Memory Region"}),
    F("plt", 4, "Placement Type", names={1: "Global Visibility", 2: "Persistence"}),
])
CNP_RESERVED: Final = Header("cnp", "Congestion Notification Packet", [F("reserved", 128, "Reserved", "bytes")])

# Fields computed from the packet rather than read from a header.
AETH_TYPE: Final = Field("aeth.type", 2, "Type", "dec", AETH_TYPES)
AETH_CREDIT: Final = Field("aeth.credit", 5, "Credit Count")
AETH_NAK: Final = Field("aeth.nak", 5, "NAK Code", "dec", AETH_NAK_CODES)
AETH_RNR_TIMER: Final = Field("aeth.rnr_timer", 5, "RNR Timer")
AETH_RNR_MS: Final = Field("aeth.rnr_ms", 0, "RNR Delay", "float", unit="ms")
ICRC_VALUE: Final = Field("icrc.value", 32, "Invariant CRC", "hex")
ICRC_VALID: Final = Field("icrc.valid", 0, "ICRC valid", "bool")
ICRC_EXPECTED: Final = Field("icrc.expected", 32, "ICRC expected", "hex")
VCRC_VALUE: Final = Field("vcrc.value", 16, "Variant CRC", "hex")
VCRC_VALID: Final = Field("vcrc.valid", 0, "VCRC valid", "bool")
VCRC_EXPECTED: Final = Field("vcrc.expected", 16, "VCRC expected", "hex")
PAYLOAD_LEN: Final = Field("ib.payload_len", 0, "Payload length", unit="bytes")
PAD: Final = Field("ib.pad", 0, "Pad bytes", "bytes")

# --- per-opcode plan, computed once ---------------------------------------------------------------
_EXT_BY_OP: Final[dict[int, tuple[Header, ...]]] = {
    0: (), 1: (), 2: (), 3: (IMMDT,), 4: (), 5: (IMMDT,),
    6: (RETH,), 7: (), 8: (), 9: (IMMDT,), 10: (RETH,), 11: (RETH, IMMDT),
    12: (RETH,), 13: (AETH,), 14: (), 15: (AETH,), 16: (AETH,), 17: (AETH,), 18: (AETH, ATOMICACKETH),
    19: (ATOMICETH,), 20: (ATOMICETH,), 21: (), 22: (IETH,), 23: (IETH,),
    28: (FETH, RETH),   # FETH before RETH (IBTA 1.5 memory placement extensions; Linux rxe_opcode.c)
    29: (RETH,),
}
_RESPONSES: Final = {13, 14, 15, 16, 17, 18}
# What the payload of an operation is, for upper layers and analysis.
OP_KIND: Final = {0: "send", 1: "send", 2: "send", 3: "send", 4: "send", 5: "send", 22: "send", 23: "send",
           6: "write", 7: "write", 8: "write", 9: "write", 10: "write", 11: "write",
           12: "read_request", 13: "read_response", 14: "read_response", 15: "read_response", 16: "read_response",
           17: "ack", 18: "atomic_ack", 19: "atomic", 20: "atomic", 21: "resync", 28: "flush", 29: "atomic_write"}
# Position of an operation in its message: first / middle / last / only.
OP_POS: Final = {0: "first", 1: "middle", 2: "last", 3: "last", 4: "only", 5: "only", 6: "first", 7: "middle",
          8: "last", 9: "last", 10: "only", 11: "only", 13: "first", 14: "middle", 15: "last", 16: "only",
          22: "last", 23: "only"}


# Called with (pkt, ib, ctx) once a BTH's headers are parsed and before its payload is dissected, after
# the packet is attributed to its connection: for every BTH, or for the BTHs of one kind of operation
# (``OpcodePlan.kind``: "read_request", ...), so that a packet of another kind pays no call.  An observer
# of a kind is appended to that kind's list here: each plan holds its kind's list (no look-up a packet).
bth_observers: Final[list] = []
bth_kind_observers: Final[dict[str, list]] = {}


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class OpcodePlan:
    __slots__ = ("opcode", "transport", "op", "name", "exts", "kind", "pos", "valid", "connected", "datagram",
                 "observers")

    def __init__(self, opcode: int) -> None:
        self.opcode = opcode
        t, op = opcode >> 5, opcode & 31
        self.transport = TRANSPORTS[t]
        self.op = op
        self.valid = opcode == 0x81 or op in _OPS_BY_TRANSPORT.get(t, ())
        self.name = OPCODE_NAMES.get(opcode, f"Unknown opcode 0x{opcode:02x}")
        exts: tuple[Header, ...] = ()
        if opcode == 0x81:
            exts = (CNP_RESERVED,)
        elif self.valid:
            base = _EXT_BY_OP[op]
            if t == 2:   # RD: RDETH always, DETH on requests
                exts = (RDETH,) + (() if op in _RESPONSES else (DETH,)) + base
            elif t == 3:  # UD
                exts = (DETH,) + base
            elif t == 5:  # XRC: XRCETH on requests
                exts = (() if op in _RESPONSES else (XRCETH,)) + base
            else:
                exts = base
        self.exts = exts
        self.kind = "cnp" if opcode == 0x81 else OP_KIND.get(op, "unknown") if self.valid else "unknown"
        self.pos = OP_POS.get(op, "only") if self.valid else "only"
        self.connected = t in (0, 1, 5)        # RC, UC, XRC: the packet belongs to a connection
        # UD, RD: a payload by its QP (compiled, a bool read where two comparisons of strings were calls)
        self.datagram = self.transport in ("UD", "RD")
        self.observers: list = bth_kind_observers.setdefault(self.kind, [])


PLANS: Final = tuple(OpcodePlan(i) for i in range(256))


# Where each BTH fact sits in the BTH read as three 32-bit words, taken from the declaration once: a
# fact is (words[word] >> shift) & mask.
_OPCODE: Final = BTH.spot("opcode")
_SE: Final = BTH.spot("se")
_MIGREQ: Final = BTH.spot("m")
_PADCNT: Final = BTH.spot("padcnt")
_TVER: Final = BTH.spot("tver")
_PKEY: Final = BTH.spot("p_key")
_FECN: Final = BTH.spot("fecn")
_BECN: Final = BTH.spot("becn")
_DESTQP: Final = BTH.spot("destqp")
_ACKREQ: Final = BTH.spot("ackreq")
_PSN: Final = BTH.spot("psn")
# The facts every packet needs, as plain integers: constants in the per-packet code rather than attribute
# reads (mypyc keeps them as machine integers).
_OPCODE_W: Final = _OPCODE.word
_OPCODE_SH: Final = _OPCODE.shift
_OPCODE_M: Final = _OPCODE.mask
_PADCNT_W: Final = _PADCNT.word
_PADCNT_SH: Final = _PADCNT.shift
_PADCNT_M: Final = _PADCNT.mask
_PKEY_W: Final = _PKEY.word
_PKEY_SH: Final = _PKEY.shift
_PKEY_M: Final = _PKEY.mask
_DESTQP_W: Final = _DESTQP.word
_DESTQP_SH: Final = _DESTQP.shift
_DESTQP_M: Final = _DESTQP.mask
_PSN_W: Final = _PSN.word
_PSN_SH: Final = _PSN.shift
_PSN_M: Final = _PSN.mask
# FECN or BECN set: one test of the word that holds both, declared side by side (a packet without either
# is the rule).
_ECN_W: Final = _BECN.word
_ECN_BITS: Final = (_FECN.mask << _FECN.shift) | (_BECN.mask << _BECN.shift)
# FECN alone, which the transport analysis reads of every packet: no tuple of the words made for it.
_FECN_W: Final = _FECN.word
_FECN_SH: Final = _FECN.shift
_FECN_M: Final = _FECN.mask


def _word(i: int, w0: int, w1: int, w2: int) -> int:
    """Word ``i`` of the BTH's three."""
    return w0 if i == 0 else w1 if i == 1 else w2


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class IBInfo:
    """The transport facts of a packet, for upper layers and analysis (no text).

    Made for every packet: the BTH words are kept as unpacked and the rarer bits derived on demand.
    """

    __slots__ = ("opcode", "plan", "destqp", "psn", "pkey", "w0", "w1", "w2",
                 "payload_off", "payload_end", "icrc_ok", "reth", "aeth", "deth_srcqp", "imm", "ieth", "ecn",
                 "ip_id", "buf", "bth_off", "at", "exts", "icrc_off", "icrc_got", "icrc_expected", "icrc_at",
                 "eth_off", "made", "data_at", "data_off", "data_end")
    # Declared for the type checker (and for mypyc, which lays the object out from them).
    w0: int
    w1: int
    w2: int
    payload_off: int
    payload_end: int
    reth: tuple[int, int, int] | None
    aeth: tuple[int, int] | None
    deth_srcqp: int | None
    imm: int | None
    ieth: int | None
    icrc_ok: bool | None
    # Where the packet's BTH layers go when somebody reads them (_make_layers): the packet's buffer, the
    # BTH's offset, the index of the BTH among the layers made before it, how many extended headers were
    # whole, the ICRC read and computed and the index of its layer (-1: none yet), the offset of the
    # Ethernet header whose Ethernet, IPv4 and UDP layers the RoCEv2 fast path left unmade (-1: none);
    # the index among the layers made and the bytes of the payload's data layer left unmade (-1: none).
    buf: bytes
    bth_off: int
    at: int
    exts: int
    icrc_off: int
    icrc_got: int
    icrc_expected: int
    icrc_at: int
    eth_off: int
    made: bool
    data_at: int
    data_off: int
    data_end: int

    def __init__(self, opcode: int, plan: "OpcodePlan", w0: int, w1: int, w2: int) -> None:
        self.opcode = opcode
        self.plan = plan
        # The BTH's three 32-bit words, as machine integers (compiled: an unpacked tuple would be a tuple
        # and three int objects a packet); the declaration says where each field is.
        self.w0 = w0
        self.w1 = w1
        self.w2 = w2
        self.pkey: int = (_word(_PKEY_W, w0, w1, w2) >> _PKEY_SH) & _PKEY_M
        self.destqp: int = (_word(_DESTQP_W, w0, w1, w2) >> _DESTQP_SH) & _DESTQP_M
        self.psn: int = (_word(_PSN_W, w0, w1, w2) >> _PSN_SH) & _PSN_M
        self.reth = None        # (va, r_key, dma_length)
        self.aeth = None        # (syndrome, msn)
        self.deth_srcqp = None
        self.imm = None
        self.ieth = None
        self.icrc_ok = None     # None: no ICRC to check (truncated, or carried without one)
        self.ecn = 0
        # The carrier's IPv4 identification (-1: none, as over IPv6 or native InfiniBand): a sender that
        # numbers its packets from one counter (rxe) tells a copy made on the way (the same number) from a
        # packet sent again (a higher one) and from a delayed one (a lower one).
        self.ip_id = -1
        self.exts = 0
        self.icrc_at = -1
        self.eth_off = -1
        self.made = False
        self.data_at = -1

    @property
    def words(self) -> tuple[int, int, int]:
        """The BTH's words as ``BTH.words()`` unpacks them (what the declaration's spots refer to)."""
        return (self.w0, self.w1, self.w2)

    @property
    def se(self) -> int:
        return _SE.of(self.words)

    @property
    def migreq(self) -> int:
        return _MIGREQ.of(self.words)

    @property
    def padcnt(self) -> int:
        return _PADCNT.of(self.words)

    @property
    def tver(self) -> int:
        return _TVER.of(self.words)

    @property
    def fecn(self) -> int:
        return (_word(_FECN_W, self.w0, self.w1, self.w2) >> _FECN_SH) & _FECN_M

    @property
    def becn(self) -> int:
        return _BECN.of(self.words)

    @property
    def ackreq(self) -> int:
        return _ACKREQ.of(self.words)

    @property
    def payload_len(self) -> int:
        return self.payload_end - self.payload_off



ib_qp: Final = table("ib.qp", "InfiniBand destination QP")
ib_payload: Final = table("ib.payload", "InfiniBand payload")

_BTH_SIZE: Final = BTH.size
_FF8: Final = b"\xff" * 8
_crc32: Final = zlib.crc32
_CRC_FF8: Final = _crc32(_FF8)


def icrc_rocev2(buf: bytes, ip_off: int, version: int, bth: int, icrc_off: int) -> int:
    """ICRC of a RoCEv2 packet: 8 bytes of ones for the LRH, then IP/UDP/BTH with variant fields set to ones."""
    # One copy of the headers up to BTH byte 4 (inclusive), masked in place, then the rest straight from buf.
    h = bytearray(buf[ip_off:bth + 5])
    if version == 4:
        ihl = (h[0] & 15) * 4
        h[1] = 0xFF              # TOS (DSCP + ECN)
        h[8] = 0xFF              # TTL
        h[10] = h[11] = 0xFF     # header checksum
        h[ihl + 6] = h[ihl + 7] = 0xFF   # UDP checksum
    else:
        h[0] |= 0x0F             # traffic class (low nibble of byte 0, high nibble of byte 1) and flow label
        h[1] = h[2] = h[3] = 0xFF
        h[7] = 0xFF              # hop limit
        u = bth - 8 - ip_off
        h[u + 6] = h[u + 7] = 0xFF   # UDP checksum
    h[-1] = 0xFF                 # BTH byte 4: FECN, BECN, reserved
    return _crc32(memoryview(buf)[bth + 5:icrc_off], _crc32(h, _CRC_FF8))


def icrc_rocev2_ipv4_ok(buf: bytes, ip_off: int) -> bool:
    """Whether the RoCEv2 packet in the IPv4 datagram at ``ip_off`` carries the ICRC computed over it (sent
    low byte first), its end where the UDP length says."""
    udp = ip_off + (buf[ip_off] & 15) * 4
    icrc_off = udp + (buf[udp + 4] << 8 | buf[udp + 5]) - 4
    return icrc_rocev2(buf, ip_off, 4, udp + 8, icrc_off) == int.from_bytes(buf[icrc_off:icrc_off + 4], "little")


try:        # the same functions in C, built with the compiled decoder (setup.py)
    from ._icrc import icrc_rocev2 as _icrc_rocev2_c  # type: ignore[import-not-found,import-untyped,unused-ignore]
    from ._icrc import icrc_rocev2_ipv4_ok as _icrc_ipv4_ok_c  # type: ignore[import-not-found,import-untyped,unused-ignore]
except ImportError:
    _icrc_rocev2_c = _icrc_ipv4_ok_c = None
ICRC_ROCEV2: Final[Callable[..., int]] = _icrc_rocev2_c or icrc_rocev2
ICRC_ROCEV2_IPV4_OK: Final[Callable[..., bool]] = _icrc_ipv4_ok_c or icrc_rocev2_ipv4_ok


def icrc_grh(buf: bytes, lrh_off: int, grh_off: int, bth: int, icrc_off: int) -> int:
    """ICRC with a GRH (RoCEv1, or native IB with LNH=3).

    A global packet may cross routers, which rewrite the whole LRH, so the LRH counts as
    8 bytes of ones whether it is on the wire (native IB) or not (RoCEv1); in the GRH,
    TClass, FlowLabel and HopLmt are ones (IBTA vol. 1, 7.8.1).  ``lrh_off`` is kept for
    callers and is not read.
    """
    g = bytearray(buf[grh_off:grh_off + 40])
    g[0] |= 0x0F
    g[1] = g[2] = g[3] = 0xFF
    g[7] = 0xFF
    crc = _crc32(g, _CRC_FF8)
    crc = _crc32(buf[bth:bth + 4], crc)
    crc = _crc32(b"\xff", crc)
    return _crc32(buf[bth + 5:icrc_off], crc)


def icrc_local(buf: bytes, lrh_off: int, bth: int, icrc_off: int) -> int:
    """ICRC of a native IB packet without GRH: LRH with VL set to ones, BTH masked."""
    lrh = bytearray(buf[lrh_off:lrh_off + 8])
    lrh[0] |= 0xF0
    crc = _crc32(lrh)
    crc = _crc32(buf[bth:bth + 4], crc)
    crc = _crc32(b"\xff", crc)
    return _crc32(buf[bth + 5:icrc_off], crc)


def _vcrc_table() -> list[int]:
    # CRC-16 of the IBTA (polynomial 0x100B), computed bit-reflected as the spec's reference code does.
    poly = 0xD008   # 0x100B reflected
    out = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        out.append(c)
    return out


_VCRC_TABLE: Final = _vcrc_table()


_VCRC_WORDS: Final[list[int]] = []      # two bytes per step (65536 entries), built on first use


def _vcrc_words() -> list[int]:
    t = _VCRC_TABLE
    out = []
    for x in range(65536):
        c = (x >> 8) ^ t[x & 0xFF]
        out.append((c >> 8) ^ t[c & 0xFF])
    _VCRC_WORDS[:] = out
    return _VCRC_WORDS


def vcrc(data: bytes) -> int:
    """The IBTA VCRC of ``data``; it is sent low byte first."""
    # A reflected 16-bit CRC consumes a little-endian 16-bit word in one table step.
    words = _VCRC_WORDS or _vcrc_words()
    crc = 0xFFFF
    n = len(data) >> 1
    for w in _unpack_words(f"<{n}H", data):
        crc = words[crc ^ w]
    if len(data) & 1:
        crc = (crc >> 8) ^ _VCRC_TABLE[(crc ^ data[-1]) & 0xFF]
    return crc ^ 0xFFFF


# --- dissection ----------------------------------------------------------------------------------------
def dissect_bth(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any, expected_icrc: int = -1,
                eth_off: int = -1) -> IBInfo | None:
    """BTH, extended headers, ICRC, payload.  ``end`` is where the ICRC ends (VCRC excluded).

    ``expected_icrc`` is the ICRC its carrier computed over the packet (``icrc_of``), or -1 when
    the packet has none to check.  The BTH, extended header and ICRC layers are made only when the
    packet's layers are read (``_make_layers``), and with them the Ethernet, IPv4 and UDP layers of
    the RoCEv2 fast path when it gives ``eth_off``, the offset of their Ethernet header.
    """
    if end - off < _BTH_SIZE + 4:
        pkt.proto = "InfiniBand"
        pkt.truncated("bth", end - off, _BTH_SIZE + 4)
        return None
    w0 = u32(buf, off)
    w1 = u32(buf, off + 4)
    w2 = u32(buf, off + 8)
    opcode = (_word(_OPCODE_W, w0, w1, w2) >> _OPCODE_SH) & _OPCODE_M
    plan = PLANS[opcode]
    pkt.ib = ib = IBInfo(opcode, plan, w0, w1, w2)
    pkt.defer(_MAKE_LAYERS)
    ib.buf = buf
    ib.bth_off = off
    ib.at = pkt.made_count()
    ib.eth_off = eth_off
    if pkt.proto in ("", "IBA"):
        pkt.proto = "InfiniBand"
    icrc_off = end - 4
    texts = wants_info(ctx)
    # what the extended headers add to the Info after the PSN: the Info is made once they are read, in one
    # string (an AETH's text, a constant, is then no concatenation of its own)
    tail = ""

    # ICRC first: it covers everything, including headers we may fail to parse.
    if expected_icrc >= 0:
        expected = expected_icrc
        got = buf[icrc_off] | buf[icrc_off + 1] << 8 | buf[icrc_off + 2] << 16 | buf[icrc_off + 3] << 24
        ib.icrc_ok = ok = expected == got
        ib.icrc_off = icrc_off
        ib.icrc_got = got
        ib.icrc_expected = expected
        if not ok:
            pkt.add_expert("error", "checksum", f"Bad ICRC 0x{got:08x}, expected 0x{expected:08x}",
                           "IBTA 7.8.1: ICRC")

    pos = off + _BTH_SIZE
    if not plan.valid:
        pkt.set_malformed(f"bth: opcode 0x{opcode:02x} is reserved for {plan.transport}")
    exts = 0
    for hdr in plan.exts:
        size = hdr.size
        if icrc_off - pos < size:
            pkt.truncated(hdr.name, icrc_off - pos, size)
            pos = icrc_off
            break
        exts += 1
        if hdr is RETH:
            va = u64(buf, pos)     # whole words, as declared (checked at import)
            rkey = u32(buf, pos + 8)
            dlen = u32(buf, pos + 12)
            ib.reth = (va, rkey, dlen)
            if texts:
                tail += f" VA=0x{hexn(va)} R_Key=0x{hex8(rkey)} Len={dlen}"   # no format spec: see hexfmt
        elif hdr is AETH:
            w = u32(buf, pos)
            syn = (w >> _AETH_SYN_SH) & _AETH_SYN_M
            ib.aeth = (syn, (w >> _AETH_MSN_SH) & _AETH_MSN_M)
            if texts:
                tail += _AETH_TEXT[syn]
        elif hdr is DETH:
            ib.deth_srcqp = (u32(buf, pos + 4 * _DETH_SRCQP_W) >> _DETH_SRCQP_SH) & _DETH_SRCQP_M
        elif hdr is IMMDT:
            ib.imm = imm = u32(buf, pos)
            if texts:
                tail += f" Imm=0x{hex8(imm)}"
        elif hdr is IETH:
            ib.ieth = rkey = u32(buf, pos)
            if texts:
                tail += f" Inv R_Key=0x{hex8(rkey)}"
        pos += size
    ib.exts = exts
    pad = (_word(_PADCNT_W, w0, w1, w2) >> _PADCNT_SH) & _PADCNT_M
    pend = icrc_off - pad
    if pend < pos:
        pkt.set_malformed(f"bth: pad count {pad} exceeds the {icrc_off - pos} payload bytes")
        pend = pos
    ib.payload_off = pos
    ib.payload_end = pend
    if texts:
        if _word(_ECN_W, w0, w1, w2) & _ECN_BITS:
            tail += " [BECN]" if ib.becn else " [FECN]"
        pkt.info = [with_decimal(_head(plan, opcode, ib.destqp), ib.psn, tail)]
    if plan.connected:
        conversation.account(pkt, ib.destqp, ctx)
    for observe in bth_observers:
        observe(pkt, ib, ctx)
    for observe in plan.observers:
        observe(pkt, ib, ctx)
    if pend > pos and pkt.malformed is None:
        fn = ib_qp.by_key.get(ib.destqp) if plan.datagram or ib.destqp < 2 else None
        if fn is not None:
            fn.dissect(pkt, buf, pos, pend, ctx)
        else:
            dissect_with(ib_payload, plan.kind, pkt, buf, pos, pend, ctx)
    if expected_icrc >= 0:
        # the ICRC's layer comes after the payload's: unmade with the others, or made now if they are
        if ib.made:
            pkt.push(_icrc_layer(ib))
        else:
            ib.icrc_at = pkt.made_count()
        if not ok and texts:
            pkt.add_info(f"[Bad ICRC 0x{got:08x}, expected 0x{expected:08x}]")
    return ib


def add_payload_data(pkt: Packet, buf: bytes, off: int, end: int) -> None:
    """A BTH payload's undissected bytes (an RDMA WRITE's, a READ response's): while the BTH's layers
    are unmade, their data layer is made with them, where this call would have put it (a summary line
    reads none of them); else now."""
    ib = pkt.ib
    if isinstance(ib, IBInfo) and not ib.made and ib.data_at < 0 and buf is ib.buf:
        ib.data_at = pkt.made_count()
        ib.data_off = off
        ib.data_end = end
        return
    add_data_layer(pkt, buf, off, end)


def _icrc_layer(ib: IBInfo) -> Layer:
    lay = Layer("icrc", None, ib.buf, ib.icrc_off, 4)
    got = ib.icrc_got
    expected = ib.icrc_expected
    lay._vals = (got, ib.icrc_ok, expected)
    lay._label = "Invariant CRC"
    lay._fill = _FILL_ICRC
    return lay


def _make_layers(pkt: Packet) -> None:
    """The layers dissect_bth left unmade, put where it would have put them: the BTH and its whole
    extended headers where the BTH came, the ICRC after the payload's layers, and the RoCEv2 fast
    path's Ethernet, IPv4 and UDP first."""
    ib = pkt.ib
    assert isinstance(ib, IBInfo)
    ib.made = True
    layers = pkt.made_layers()
    buf = ib.buf
    if ib.icrc_at >= 0:
        layers.insert(ib.icrc_at, _icrc_layer(ib))
    if ib.data_at >= 0:       # at or before the ICRC's place: inserted after it, it comes before it
        layers.insert(ib.data_at, data_layer(buf, ib.data_off, ib.data_end))
    pos = ib.bth_off
    bth = BthLayer("bth", BTH, buf, pos, _BTH_SIZE)
    bth.ib = ib
    bth._fill = _FILL_BTH
    head: list[Layer] = [bth]
    pos += _BTH_SIZE
    exts = ib.plan.exts
    for k in range(ib.exts):
        hdr = exts[k]
        size = hdr.size
        lay = Layer(hdr.name, hdr, buf, pos, size)
        if hdr is AETH:
            lay._fill = _FILL_AETH
        head.append(lay)
        pos += size
    at = ib.at
    layers[at:at] = head
    if ib.eth_off >= 0:
        layers[0:0] = _eth_ip_udp(buf, ib.eth_off)


_MAKE_LAYERS: Final = _make_layers


def _eth_ip_udp(buf: bytes, eth: int) -> list[Layer]:
    """The layers under the BTH that the RoCEv2 fast path took in one step (Ethernet II, IPv4 without options)."""
    return [*eth_ipv4_layers(buf, eth), Layer("udp", UDP, buf, eth + 34, 8)]


# RETH, ImmDt and IETH are whole words (VA, R_Key, DMA Length; the immediate; the R_Key): read as such
# (compiled, machine integers, where their declared decode is a generic call making a tuple).
if (RETH.words().format, IMMDT.words().format, IETH.words().format) != (">4I", ">1I", ">1I") or \
        [f.bits for f in RETH.fields] != [64, 32, 32]:
    raise ImportError("infiniband: RETH/ImmDt/IETH no longer match their word reads")
# AETH and DETH pack fields narrower than a byte boundary: their declarations' decoders are Python
# functions around the unpack (generated by fields.Header), so the per-packet path reads their 32-bit
# words itself, at the positions the declarations give (tests/test_engine_fast_path.py holds them equal).
_AETH_SYN: Final = AETH.spot("syndrome")
_AETH_MSN: Final = AETH.spot("msn")
_AETH_SYN_SH: Final = _AETH_SYN.shift
_AETH_SYN_M: Final = _AETH_SYN.mask
_AETH_MSN_SH: Final = _AETH_MSN.shift
_AETH_MSN_M: Final = _AETH_MSN.mask
_DETH_SRCQP: Final = DETH.spot("src_qp")
_DETH_SRCQP_W: Final = _DETH_SRCQP.word
_DETH_SRCQP_SH: Final = _DETH_SRCQP.shift
_DETH_SRCQP_M: Final = _DETH_SRCQP.mask
assert _AETH_SYN.word == _AETH_MSN.word == 0


_head_text: Final[dict[int, str]] = {}


class _RecentHeads:
    """The head texts of the last two (opcode, QP) pairs, by their key as a machine integer: a flow's
    requests and its acknowledgements find theirs with an integer compare, where the dict's look-up of
    a new int object costs an allocation and a comparison of values."""

    __slots__ = ("key0", "text0", "key1", "text1")

    def __init__(self) -> None:
        self.key0: i64 = -1
        self.key1: i64 = -1
        self.text0 = self.text1 = ""


_RECENT_HEADS: Final = _RecentHeads()


def _head(plan: OpcodePlan, opcode: int, qp: int) -> str:
    """The Info's head, such as ``RC SEND Only QP=0x000012 PSN=``: a capture has few (opcode, QP) pairs
    and many packets."""
    r = _RECENT_HEADS
    # The opcode in the high bits and, spread, in the QP's (a bijection): an int is its own hash, and with
    # the opcode in the high bits alone the heads of one QP all began their dict probe in the same slot.
    key: i64 = i64(opcode) << 24 | (i64(qp) ^ i64(opcode) * 0x10101)
    if key == r.key0:
        return r.text0
    if key == r.key1:
        text = r.text1
    else:
        found = _head_text.get(int(key))
        if found is None:
            if len(_head_text) >= 65536:
                _head_text.clear()
            found = _head_text[int(key)] = f"{plan.name} QP=0x{qp:06x} PSN="
        text = found
    r.key1, r.text1 = r.key0, r.text0
    r.key0, r.text0 = key, text
    return text


def icrc_of(end: int, off: int, fn: Callable[..., int], *args: Any) -> int:
    """``fn(*args, icrc_off)`` for a BTH at ``off`` whose ICRC ends at ``end``; -1 if too short to have one."""
    return fn(*args, end - 4) & 0xFFFFFFFF if end - off >= _BTH_SIZE + 4 else -1


def _fill_icrc(lay: Layer) -> None:
    # The values were computed during dissection; the items are spelled out only when asked for.
    got, ok, expected = lay._vals
    off = lay.off
    lay.add(ICRC_VALUE, got, off, 4)
    lay.add(ICRC_VALID, ok, off, 4)
    lay.add(ICRC_EXPECTED, expected, off, 4)


# Final: compiled, a C static (a function named as a value is otherwise a look-up in the module's dict)
_FILL_ICRC: Final = _fill_icrc


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class BthLayer(Layer):
    """The BTH layer keeps its packet's IBInfo, from which its computed items are filled on demand."""

    __slots__ = ("ib",)
    ib: IBInfo


def _fill_bth(lay: Layer) -> None:
    assert isinstance(lay, BthLayer)
    ib = lay.ib
    lay.add(PAYLOAD_LEN, ib.payload_end - ib.payload_off)
    pad = ib.padcnt
    if pad:
        lay.add(PAD, bytes(lay.buf[ib.payload_end:ib.payload_end + pad]), ib.payload_end, pad)


_FILL_BTH: Final = _fill_bth


def _fill_aeth(lay: Layer) -> None:
    buf = lay.buf
    pos = lay.off
    syn = buf[pos]
    kind = (syn >> 5) & 3
    low = syn & 31
    lay.add(AETH_TYPE, kind, pos, 1)
    if kind == 0:
        lay.add(AETH_CREDIT, low, pos, 1)
    elif kind == 1:
        lay.add(AETH_RNR_TIMER, low, pos, 1)
        lay.add(AETH_RNR_MS, RNR_TIMER_MS[low], pos, 1)
    elif kind == 3:
        lay.add(AETH_NAK, low, pos, 1)


_FILL_AETH: Final = _fill_aeth


def _aeth_text(syn: int) -> str:
    kind = (syn >> 5) & 3
    low = syn & 31
    if kind == 0:
        return "ACK" if low != 31 else "ACK (credits invalid)"
    if kind == 1:
        return f"RNR NAK timer={RNR_TIMER_MS[low]}ms"
    if kind == 3:
        return f"NAK {AETH_NAK_CODES.get(low, f'reserved code {low}')}"
    return f"reserved syndrome 0x{syn:02x}"


# --- carriers -----------------------------------------------------------------------------------------
def dissect_rocev2(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    """UDP port 4791: BTH directly, ICRC over the masked IP/UDP headers."""
    layers = pkt.layers
    ip = layers[-2] if len(layers) >= 2 else None
    pkt.proto = "RoCEv2"
    if layers and layers[-1].proto == "udp":
        need = ((buf[off - 4] << 8) | buf[off - 3]) - 8
        if need > end - off:
            # The capture (or an ICMP error's quote) stops before the ICRC: there is nothing to verify; say
            # what is missing, and decode the headers the bytes hold, to their end (none of them is the ICRC).
            pkt.truncated("rocev2", end - off, need)
            dissect_bth(pkt, buf, off, end + 4 if end - off >= _BTH_SIZE else end, ctx)
            return
    if ip is None or ip.proto not in ("ip", "ipv6"):
        # IPv6 with extension headers: find the IP layer further down.
        ip = next((lay for lay in reversed(layers) if lay.proto in ("ip", "ipv6")), None)
    if ip is None:
        dissect_bth(pkt, buf, off, end, ctx)
        return
    ip_off = ip.off
    version = 4 if ip.proto == "ip" else 6
    ib = dissect_bth(pkt, buf, off, end, ctx, icrc_of(end, off, ICRC_ROCEV2, buf, ip_off, version, off))
    if ib is not None:
        if version == 4:
            ib.ecn = buf[ip_off + 1] & 3
            ib.ip_id = buf[ip_off + 4] << 8 | buf[ip_off + 5]
        else:
            ib.ecn = (buf[ip_off + 1] >> 4) & 3


def fast_rocev2_ipv4(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
    """Ethernet II, IPv4 without options, whole and unfragmented, UDP to port 4791: in one step.

    The same layers, columns and result as ethernet -> ip -> udp -> rocev2, without three calls and
    their generic checks; anything else (VLAN tags, options, fragments, short or snapped frames)
    returns False untouched and takes the general path.
    """
    # offsets in 64-bit machine integers (``i64``): compiled, each byte's index without checked arithmetic
    o: i64 = off
    n: i64 = end - off
    if n < 62 or buf[o + 14] != 0x45 or buf[o + 12] != 8 or buf[o + 13] or buf[o + 23] != 17 \
            or buf[o + 36] != 0x12 or buf[o + 37] != 0xB7 or buf[o + 20] & 0x3F or buf[o + 21]:
        return False
    total: i64 = i64(buf[o + 16]) << 8 | i64(buf[o + 17])
    ulen: i64 = i64(buf[o + 38]) << 8 | i64(buf[o + 39])
    if total > n - 14 or ulen < 8 or ulen > total - 20 or total < 28:
        return False
    ip = off + 14
    pkt.src = _ip_text(buf, ip + 12)
    pkt.dst = _ip_text(buf, ip + 16)
    pkt.proto = "RoCEv2"
    bth = ip + 28
    end = ip + 20 + ulen
    if end - bth < _BTH_SIZE + 4:
        pkt.made_layers().extend(_eth_ip_udp(buf, off))     # no BTH to make them with: made now
        dissect_bth(pkt, buf, bth, end, ctx)
        return True
    # Ethernet, IPv4 and UDP are made with the BTH's layers, when somebody reads them.  The usual ICRC, the
    # one computed, is read from the packet: no int object made for it, nor for the offsets of the call.
    t: i64 = end - 4
    if ICRC_ROCEV2_IPV4_OK(buf, ip):
        expected = i64(buf[t]) | i64(buf[t + 1]) << 8 | i64(buf[t + 2]) << 16 | i64(buf[t + 3]) << 24
    else:
        expected = ICRC_ROCEV2(buf, ip, 4, bth, t)
    ib = dissect_bth(pkt, buf, bth, end, ctx, expected, off)
    if ib is not None:
        ib.ecn = buf[ip + 1] & 3
        ib.ip_id = buf[ip + 4] << 8 | buf[ip + 5]
    return True


class _RoceV2(Dissector):
    """RoCEv2 on its UDP port, called directly (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        dissect_rocev2(pkt, buf, off, end, ctx)
        return True


class _FastRoceV2(Dissector):
    """The RoCEv2 fast path of Ethernet frames, called directly (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        return fast_rocev2_ipv4(pkt, buf, off, end, ctx)


def dissect_grh(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any, lrh_off: int = -1) -> None:
    if end - off < 40:
        pkt.proto = "InfiniBand"
        pkt.truncated("grh", end - off, 40)
        return
    pkt.add_layer("grh", GRH, buf, off)
    pkt.src = fmt_gid(buf[off + 8:off + 24])
    pkt.dst = fmt_gid(buf[off + 24:off + 40])
    nxt = buf[off + 6]
    if nxt != 0x1B:
        pkt.proto = "InfiniBand"
        pkt.set_info(f"GRH next header 0x{nxt:02x} (not BTH)")
        dissect_with(table("grh.nxthdr", "GRH next header"), nxt, pkt, buf, off + 40, end, ctx)
        return
    paylen = (buf[off + 4] << 8) | buf[off + 5]
    if lrh_off < 0:
        # RoCEv1: PayLen counts BTH..ICRC; trust it over Ethernet padding when it fits.
        if 16 <= paylen <= end - off - 40:
            end = off + 40 + paylen
        elif paylen > end - off - 40:
            # The capture stops before the ICRC: there is nothing to verify; say what is missing.
            pkt.proto = "RoCE"
            pkt.truncated("roce", end - off - 40, paylen)
            dissect_bth(pkt, buf, off + 40, end, ctx)
            return
        pkt.proto = "RoCE"
    ib = dissect_bth(pkt, buf, off + 40, end, ctx, icrc_of(end, off + 40, icrc_grh, buf, lrh_off, off, off + 40))
    if ib is not None and lrh_off < 0:
        pkt.proto = "RoCE"


def dissect_rocev1(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    dissect_grh(pkt, buf, off, end, ctx)


def fmt_gid(b: bytes) -> str:
    """A GID as IPv6 text, or the IPv4 address of an IPv4-mapped GID (what RoCE users know)."""
    if b[:12] == b"\0\0\0\0\0\0\0\0\0\0\xff\xff":
        return f"{b[12]}.{b[13]}.{b[14]}.{b[15]}"
    return ipv6_text(bytes(b))


def dissect_lrh(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    """Native InfiniBand, from the LRH: ... BTH ... ICRC(4) VCRC(2)."""
    pkt.proto = "InfiniBand"
    if end - off < 8:
        pkt.truncated("lrh", end - off, 8)
        return
    pkt.add_layer("lrh", LRH, buf, off)
    lnh = buf[off + 1] & 3
    dlid = (buf[off + 2] << 8) | buf[off + 3]
    pktlen = ((buf[off + 4] & 7) << 8 | buf[off + 5]) * 4
    slid = (buf[off + 6] << 8) | buf[off + 7]
    pkt.src = f"LID {slid}"
    pkt.dst = f"LID {dlid}"
    vcrc_off = off + pktlen
    if pktlen < 8 or vcrc_off + 2 > end:
        pkt.set_malformed(f"lrh: packet length {pktlen} bytes does not fit the {end - off} captured")
        vcrc_off = end - 2
    if vcrc_off - off >= 8:
        # The VCRC is computed bit-reflected and sent low byte first, like the ICRC.
        got = int.from_bytes(buf[vcrc_off:vcrc_off + 2], "little")
        expected = vcrc(buf[off:vcrc_off])
        v = Layer("vcrc", None, buf, vcrc_off, 2)
        v.label = "Variant CRC"
        v.add(VCRC_VALUE, got, vcrc_off, 2)
        vcrc_ok = got == expected
        v.add(VCRC_VALID, vcrc_ok, vcrc_off, 2)
        v.add(VCRC_EXPECTED, expected, vcrc_off, 2)
    else:
        v = None
        vcrc_ok = True
    crc_end = vcrc_off
    if lnh == 3:
        dissect_grh(pkt, buf, off + 8, crc_end, ctx, lrh_off=off)
    elif lnh == 2:
        dissect_bth(pkt, buf, off + 8, crc_end, ctx, icrc_of(crc_end, off + 8, icrc_local, buf, off, off + 8))
    else:
        pkt.set_info(f"LRH {LNH_NAMES[lnh]} packet")
        dissect_with(table("lrh.lnh", "LRH next header"), lnh, pkt, buf, off + 8, crc_end, ctx)
    if v is not None:
        pkt.push(v)
        if not vcrc_ok:
            pkt.add_expert("error", "checksum", f"Bad VCRC 0x{got:04x}, expected 0x{expected:04x}",
                           "IBTA 7.8.2: VCRC")
            pkt.add_info(f"[Bad VCRC 0x{got:04x}, expected 0x{expected:04x}]")


table("udp.port").register(4791, _RoceV2(dissect_rocev2))
eth_fast.add_heuristic("rocev2", _FastRoceV2(fast_rocev2_ipv4), first=True)     # most frames, tried first
table("ethertype").register(0x8915, dissect_rocev1)
table("linktype").register(247, dissect_lrh)


_AETH_TEXT: Final = tuple(" " + _aeth_text(syn) for syn in range(256))
