"""scapy layers generated from rdmaspy's own header declarations (``pip install 'rdmaspy[scapy]'``).

Every ``Header`` a dissector declares (InfiniBand LRH, GRH, BTH and the extended headers, the MADs and the
Communication Manager, the IP CM header, RFC 8797 private data, MPA, DDP and RDMAP, NVMe's capsules and the
NVMe/RDMA CM records) becomes a scapy ``Packet`` class whose ``fields_desc`` is made from the declared
names, widths and value names; the
RPC-over-RDMA transport headers (v1 and v2), declared as ``Field``s over XDR, become classes whose chunk
lists, error arms and properties are read and written by the dissectors' own XDR parsers and encoders.
``bind_layers`` joins them as rdmaspy's dissector tables do, so scapy builds and dissects RDMA traffic:

    from rdmaspy.scapy import BTH, RETH
    pkt = Ether(dst="02:00:00:00:00:02") / IP(dst="192.0.2.2") / UDP() / BTH(opcode=0x0A, destqp=0x11) / RETH(dma_length=8) / (b"x" * 8)
    wrpcap("out.pcap", pkt)                  # the ICRC, pad count and lengths are filled on build
    rdpcap("captures/rxe-nfsv3-rdma.pcap")   # dissected down to the CM, RFC 8797 data and RPC-over-RDMA

What a layer is, and which one follows which, comes from the dissectors (opcode plans, MAD class and
attribute tables, the CM message table, the RDMAP opcode table); this module only presents them in scapy.
"""
from __future__ import annotations

import contextvars
import keyword
import struct
import sys
from typing import Any, Callable

try:
    import scapy.config  # noqa: F401  (scapy is an optional extra)
except ImportError:
    raise ImportError("rdmaspy.scapy needs scapy: pip install 'rdmaspy[scapy]'") from None
from scapy.config import conf
from scapy.fields import (BitEnumField, BitField, ConditionalField, FCSField, Field as ScapyField, IP6Field,
                          IPField, MACField, StrField, StrFixedLenField, XBitField)
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw, bind_layers, split_bottom_up

from . import fields as _fields
from . import stacking
from .dissectors import (ib_cm, infiniband, iwarp_ddp, iwarp_mpa, mad, nfs, nfs2, nfs3, nfs_side, nvme, nvme_rdma,
                         rdma_cm, rpcrdma, rpcrdma2, rpcrdma_pdata, xdrlang)
from .dissectors.xdr import Cursor, XdrError, p32
from .stacking import class_names, short_name

Header = _fields.Header
Declared = _fields.Field
_DEFAULTS = stacking.DEFAULTS
# Fields filled on build when left as None: lengths and the pad count follow from the packet.
_COMPUTED = stacking.COMPUTED


# --- fields -------------------------------------------------------------------------------------------
def scapy_field(field: Declared, name: str, as_bytes: bool, **little: int) -> ScapyField:
    """One declared field as a scapy field of the same width, shown as the declaration says; ``little``:
    the ``tot_size``/``end_tot_size`` of a bit field in a little-endian group (``header_fields``)."""
    default = None if field.name in _COMPUTED else _DEFAULTS.get(field.name, 0)
    if as_bytes:
        n = field.bits // 8
        if field.display == "ipv4":
            return IPField(name, "0.0.0.0")
        if field.display in ("ipv6", "gid"):
            return IP6Field(name, "::")
        if field.display == "mac":
            return MACField(name, "00:00:00:00:00:00")
        return StrFixedLenField(name, _DEFAULTS.get(field.name, b"\0" * n), n)
    if field.names:
        return BitEnumField(name, default, field.bits, dict(field.names), **little)
    if field.display == "hex":
        return XBitField(name, default, field.bits, **little)
    return BitField(name, default, field.bits, **little)


def header_fields(header: Header) -> list[ScapyField]:
    # A field the declaration decodes as bytes (addresses, GIDs, opaque data) stays bytes in scapy.
    kinds = stacking.byte_fields(header)
    if not header.little:
        return [scapy_field(f, short_name(f, header), as_bytes) for f, as_bytes in zip(header.fields, kinds)]
    # Little-endian (NVMe): each group's bytes reversed, its fields most significant first (scapy's
    # low-endian bit fields: the group's size, negative, on its first and last field).
    out: list[ScapyField] = []
    byte_index = 0
    for nbytes, members in stacking.little_words(header):
        if not members:
            f = header.fields[[i for i, b in enumerate(kinds) if b][byte_index]]
            byte_index += 1
            out.append(scapy_field(f, short_name(f, header), True))
            continue
        for k, i in enumerate(members):
            sizes = {"tot_size": -nbytes} if k == 0 else {}
            if k == len(members) - 1:
                sizes["end_tot_size"] = -nbytes
            f = header.fields[i]
            out.append(scapy_field(f, short_name(f, header), kinds[i], **sizes))
    return out


def raw_value(layer: Packet, name: str) -> Any:
    """A field's value as rdmaspy decodes it: an int, or the bytes on the wire for byte fields."""
    fld = layer.get_field(name)
    value = layer.getfieldval(name)
    if isinstance(fld, (IPField, IP6Field, MACField, StrFixedLenField)):
        return fld.addfield(layer, b"", value)
    return value


# --- the layer classes --------------------------------------------------------------------------------
class DeclaredLayer(Packet):
    """A layer generated from a header declaration; ``declaration`` is the Header it came from."""

    declaration: Header | None = None
    next_layer: Callable[[Packet, bytes], type[Packet] | None] | None = None

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        choose = type(self).next_layer
        cls = choose(self, payload) if choose is not None and payload else None
        return cls if cls is not None else super().guess_payload_class(payload)

    def values(self) -> tuple:
        """The layer's values in declaration order, as ``Header.decode`` returns them."""
        decl = self.declaration
        assert decl is not None
        return tuple(raw_value(self, short_name(f, decl)) for f in decl.fields)


def make_class(name: str, header: Header, extra: list[Any] | None = None,
               base: type[DeclaredLayer] = DeclaredLayer, **attrs: Any) -> type[DeclaredLayer]:
    fields_desc = header_fields(header) + list(extra or ())
    # scapy consults dispatch_hook only where a class defines it itself
    hook = {"dispatch_hook": base.__dict__["dispatch_hook"]} if "dispatch_hook" in base.__dict__ else {}
    return type(name, (base,), {"name": header.label, "fields_desc": fields_desc, "declaration": header,
                                "__module__": __name__, **hook, **attrs})


# --- InfiniBand transport -----------------------------------------------------------------------------
class _Transport(DeclaredLayer):
    """BTH: the ICRC is its trailer (filled on build from the carrier below it), the pad is kept in place."""

    def do_dissect_payload(self, s: bytes) -> None:
        pad = self.padcnt or 0
        if pad and len(s) >= pad:
            super().do_dissect_payload(s[:-pad])
            self.add_payload(Pad(pad=s[-pad:]))
        else:
            super().do_dissect_payload(s)

    def post_build(self, p: bytes, pay: bytes) -> bytes:
        body = pay[:-4]             # the trailer's placeholder is the last 4 bytes
        if self.padcnt is None:
            given = self.getlayer(Pad)
            if given is not None:
                pad = len(given.pad)
            else:
                pad = -len(body) & 3
                body += b"\0" * pad
            p = p[:1] + bytes(((p[1] & 0xCF) | (pad << 4),)) + p[2:]
        whole = p + body
        icrc = self.icrc if self.icrc is not None else icrc_for(self, whole)
        return whole + struct.pack("<I", icrc & 0xFFFFFFFF)


def _alone(layer: Packet, payload: Packet) -> Packet:
    """``layer`` with the values it has in its packet (those its payload set too), over ``payload``."""
    return layer.__class__(**{**layer.overloaded_fields, **layer.fields}) / payload


def icrc_for(bth: Packet, whole: bytes) -> int:
    """The ICRC of the BTH..payload bytes ``whole`` under the carrier ``bth`` sits on (0 without one)."""
    placeholder = whole + b"\0\0\0\0"
    under = bth.underlayer
    if isinstance(under, UDP) and isinstance(under.underlayer, (IP, IPv6)):
        ip = under.underlayer
        buf = bytes(_alone(ip, _alone(under, Raw(placeholder))))
        bth_off = len(buf) - len(placeholder)
        return infiniband.icrc_rocev2(buf, 0, 4 if isinstance(ip, IP) else 6, bth_off, len(buf) - 4)
    if isinstance(under, layer_of(infiniband.GRH)):
        buf = bytes(_alone(under, Raw(placeholder)))
        return infiniband.icrc_grh(buf, -1, 0, 40, len(buf) - 4)
    if isinstance(under, layer_of(infiniband.LRH)):
        buf = bytes(_alone(under, Raw(placeholder)))
        return infiniband.icrc_local(buf, 0, 8, len(buf) - 6)
    return 0


class _Grh(DeclaredLayer):
    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        # RoCEv1: PayLen counts BTH..ICRC; what follows it is Ethernet padding (as the dissector reads it).
        n = self.paylen or 0
        return (s[:n], s[n:]) if 16 <= n <= len(s) else (s, b"")

    def post_build(self, p: bytes, pay: bytes) -> bytes:
        if self.paylen is None:
            p = p[:4] + struct.pack(">H", len(pay) & 0xFFFF) + p[6:]
        return p + pay


class _Lrh(DeclaredLayer):
    """LRH: the VCRC is its trailer; PktLen and LNH follow from what it carries."""

    def post_build(self, p: bytes, pay: bytes) -> bytes:
        body = pay[:-2]
        if self.lnh is None:
            p = p[:1] + bytes(((p[1] & 0xFC) | (3 if isinstance(self.payload, layer_of(infiniband.GRH)) else 2),)) + p[2:]
        if self.pktlen is None:
            words = (len(p) + len(body)) // 4
            p = p[:4] + struct.pack(">H", (struct.unpack(">H", p[4:6])[0] & 0xF800) | (words & 0x7FF)) + p[6:]
        whole = p + body
        vcrc = self.vcrc if self.vcrc is not None else infiniband.vcrc(whole)
        return whole + struct.pack("<H", vcrc & 0xFFFF)


class Pad(Packet):
    """Pad bytes that align a payload before its CRC: InfiniBand's (the BTH pad count), MPA's (to 4 bytes)."""
    name = "Pad"
    fields_desc = [StrField("pad", b"")]


# --- RPC-over-RDMA: XDR parts read and written by the dissectors' own code -----------------------------
_Segments = list[tuple[Any, ...]]
Chunks = tuple[_Segments, list[_Segments], _Segments | None]


class ChunkListsField(ScapyField[Chunks, bytes]):
    """The Read list, Write list and Reply chunk (RFC 8166 section 4.3), as
    ``([(position, handle, length, offset)...], [[(handle, length, offset)...]...], [(handle, length, offset)...] or None)``."""

    islist = 1          # one value, not a set of values for scapy to iterate over

    def __init__(self, name: str) -> None:
        super().__init__(name, ([], [], None), fmt="!I")

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, Chunks]:
        msg = rpcrdma.RpcRdmaMessage(1, 0, 0, 0)
        cur = Cursor(s, 0, len(s))
        try:
            rpcrdma.parse_lists(cur, msg)
        except XdrError:
            return s, ([], [], None)
        reads = [(g.position, g.handle, g.length, g.offset) for g in msg.reads]
        writes = [[(g.handle, g.length, g.offset) for g in chunk] for chunk in msg.writes]
        reply = None if msg.reply is None else [(g.handle, g.length, g.offset) for g in msg.reply]
        return s[cur.pos:], (reads, writes, reply)

    def addfield(self, pkt: Packet, s: bytes, val: Chunks | None) -> bytes:
        reads, writes, reply = val if val is not None else ([], [], None)
        return s + rpcrdma.encode_lists(reads, writes, reply)

    def i2len(self, pkt: Packet, x: Chunks) -> int:
        return len(self.addfield(pkt, b"", x))


class Words32Field(ScapyField[list[int], bytes]):
    """Consecutive uint32s whose number follows from another field (an XDR union arm)."""

    __slots__ = ["count"]

    islist = 1          # one value, not a set of values for scapy to iterate over

    def __init__(self, name: str, count: Callable[[Packet], int]) -> None:
        super().__init__(name, [], fmt="!I")
        self.count = count

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, list[int]]:
        n = min(self.count(pkt), len(s) // 4)
        return s[4 * n:], list(struct.unpack(f">{n}I", s[:4 * n]))

    def addfield(self, pkt: Packet, s: bytes, val: list[int] | None) -> bytes:
        return s + p32(*(val or []))

    def i2len(self, pkt: Packet, x: list[int]) -> int:
        return 4 * len(x or [])


class PropertiesField(ScapyField[list[tuple[int, bytes]], bytes]):
    """An RPC-over-RDMA v2 property set: [(property id, its data bytes)...]."""

    islist = 1          # one value, not a set of values for scapy to iterate over

    def __init__(self, name: str) -> None:
        super().__init__(name, [], fmt="!I")

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, list[tuple[int, bytes]]]:
        cur = Cursor(s, 0, len(s))
        try:
            props = rpcrdma2._parse_props(cur)
        except XdrError:
            return s, []
        return s[cur.pos:], [(which, bytes(s[dp:dp + dl])) for which, (_at, dp, dl) in props]

    def addfield(self, pkt: Packet, s: bytes, val: list[tuple[int, bytes]] | None) -> bytes:
        props = val or []
        return s + p32(len(props)) + b"".join(rpcrdma2.encode_prop(w, bytes(d) if d else None) for w, d in props)


def word_field(field: Declared, name: str) -> ScapyField:
    default = _DEFAULTS.get(field.name, 0)
    if field.names:
        return BitEnumField(name, default, field.bits, dict(field.names))
    return (XBitField if field.display == "hex" else BitField)(name, default, field.bits)


class RPCRDMA(Packet):
    """RPC-over-RDMA version 1 (RFC 8166): its fields are the dissector's declarations."""
    name = "RPC over RDMA"
    fields_desc = [
        word_field(rpcrdma.XID, "xid"), BitField("version", 1, 32), word_field(rpcrdma.CREDITS, "credits"),
        word_field(rpcrdma.PROC, "proc"),
        ConditionalField(word_field(rpcrdma.ALIGN, "align"), lambda p: p.proc == rpcrdma.RDMA_MSGP),
        ConditionalField(word_field(rpcrdma.THRESH, "thresh"), lambda p: p.proc == rpcrdma.RDMA_MSGP),
        ConditionalField(ChunkListsField("chunks"), lambda p: p.proc in (0, 1, 2)),
        ConditionalField(word_field(rpcrdma.ERRCODE, "errcode"), lambda p: p.proc == rpcrdma.RDMA_ERROR),
        ConditionalField(word_field(rpcrdma.VERS_LOW, "vers_low"),
                         lambda p: p.proc == rpcrdma.RDMA_ERROR and p.errcode == rpcrdma.ERR_VERS),
        ConditionalField(word_field(rpcrdma.VERS_HIGH, "vers_high"),
                         lambda p: p.proc == rpcrdma.RDMA_ERROR and p.errcode == rpcrdma.ERR_VERS),
    ]


class RPCRDMA2(Packet):
    """RPC-over-RDMA version 2 (draft-ietf-nfsv4-rpcrdma-version-two-01), from the dissector's declarations."""
    name = "RPC over RDMA version 2"
    fields_desc = [
        word_field(rpcrdma2.XID, "xid"), BitField("version", 2, 32),
        word_field(rpcrdma2.MAX_CREDITS, "max_credits"), word_field(rpcrdma2.GRANTED, "granted"),
        word_field(rpcrdma2.HTYPE, "htype"), word_field(rpcrdma2.FLAGS, "flags"),
        ConditionalField(word_field(rpcrdma2.INV_HANDLE, "inv_handle"), lambda p: p.htype in (0, 1)),
        ConditionalField(ChunkListsField("chunks"), lambda p: p.htype in (0, 1)),
        ConditionalField(word_field(rpcrdma2.ERRCODE, "errcode"), lambda p: p.htype == 4),
        ConditionalField(Words32Field("error_args", lambda p: len(rpcrdma2.ERROR_ARMS.get(p.errcode, ()))),
                         lambda p: p.htype == 4),
        ConditionalField(PropertiesField("props"), lambda p: p.htype == 5),
    ]


def rpcrdma_class(payload: bytes) -> type[Packet] | None:
    """RPC-over-RDMA when the dissectors' parser reads a whole, known transport header from ``payload``."""
    return class_of(stacking.rpcrdma_version(payload))


class _Fpdu(DeclaredLayer):
    """An MPA FPDU: its ULPDU (a DDP segment), then the pad and, when negotiated, the CRC."""

    @classmethod
    def dispatch_hook(cls, _pkt: bytes | None = None, *args: Any, **kargs: Any) -> type[Packet]:
        return LAYER_OF[id(stacking.mpa_frame(_pkt))] if _pkt else cls

    def do_dissect_payload(self, s: bytes) -> None:
        n = self.ulpdulength or 0
        super().do_dissect_payload(s[:n])
        if s[n:]:
            self.add_payload(Pad(pad=s[n:]))

    def post_build(self, p: bytes, pay: bytes) -> bytes:
        body = pay[:-4]             # the CRC trailer's placeholder is the last 4 bytes
        given = self.getlayer(Pad)
        ulpdu = len(body) - (len(given.pad) if given is not None else 0)
        if given is None:
            body += b"\0" * (-(2 + ulpdu) & 3)
        if self.ulpdulength is None:
            p = struct.pack(">H", ulpdu & 0xFFFF) + p[2:]
        whole = p + body
        crc = self.crc if self.crc is not None else iwarp_mpa.crc_field_value(iwarp_mpa.crc32c(whole))
        return whole + struct.pack(">I", crc & 0xFFFFFFFF)


class _MpaFrame(DeclaredLayer):
    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        n = self.pdlength or 0
        return s[:n], s[n:]


class _Ddp(DeclaredLayer):
    @classmethod
    def dispatch_hook(cls, _pkt: bytes | None = None, *args: Any, **kargs: Any) -> type[Packet]:
        return LAYER_OF[id(stacking.ddp_header(_pkt))] if _pkt else cls


# --- generation -----------------------------------------------------------------------------------------
_BASES: dict[int, type[DeclaredLayer]] = {
    id(infiniband.BTH): _Transport, id(infiniband.GRH): _Grh, id(infiniband.LRH): _Lrh, id(iwarp_mpa.FPDU): _Fpdu,
    id(iwarp_mpa.REQREP): _MpaFrame, id(iwarp_ddp.DDP_TAGGED): _Ddp, id(iwarp_ddp.DDP_UNTAGGED): _Ddp}
_TRAILERS: dict[int, list[Any]] = {
    id(infiniband.BTH): [FCSField("icrc", None, fmt="<I")],
    id(infiniband.LRH): [FCSField("vcrc", None, fmt="<H")],
    # Every FPDU ends in a CRC field: CRC32c when the MPA exchange negotiated it, else 0 (give crc=0).
    id(iwarp_mpa.FPDU): [FCSField("crc", None, fmt=">I")],
    # The IP CM header is followed by its 32-byte address area (IPv4 at its end, or IPv6 in full).
    id(rdma_cm.IP_CM): [StrFixedLenField("addresses", b"\0" * stacking.IP_CM_ADDRESSES, stacking.IP_CM_ADDRESSES)],
}
LAYERS: dict[str, type[Packet]] = {}          # class name -> class
LAYER_OF: dict[int, type[DeclaredLayer]] = {}        # id(Header) -> class


def _generate() -> None:
    module = sys.modules[__name__]
    for name, header in class_names():
        cls = make_class(name, header, _TRAILERS.get(id(header)), _BASES.get(id(header), DeclaredLayer))
        LAYERS[name] = cls
        LAYER_OF[id(header)] = cls
        setattr(module, name, cls)
    LAYERS["RPCRDMA"] = RPCRDMA
    LAYERS["RPCRDMA2"] = RPCRDMA2


_generate()


def layer_of(header: Header) -> type[DeclaredLayer]:
    return LAYER_OF[id(header)]


def class_of(follower: stacking.Follower) -> type[Packet] | None:
    """The class of what ``stacking`` says follows: a declared header's layer, or one of the classes below."""
    if follower is None:
        return None
    if isinstance(follower, str):
        return {stacking.RPCRDMA_V1: RPCRDMA, stacking.RPCRDMA_V2: RPCRDMA2, stacking.PERF_RESERVED: PerfReserved,
                stacking.PDATA_PREFIX: PrivateDataPrefix, stacking.NVME_COMMAND: NvmeCapsule,
                stacking.NVME_RESPONSE: NvmeCapsule}[follower]
    return layer_of(follower)


# --- what follows what (the dissectors' tables) -------------------------------------------------------------
def _bth_of(layer: Packet) -> Packet | None:
    found: Packet | None = layer
    while found is not None and not isinstance(found, _Transport):
        found = found.underlayer
    return found


def _after_transport(layer: Packet, payload: bytes) -> type[Packet] | None:
    """BTH and each extended header: the next header of the opcode's plan, then the payload's layer."""
    bth = _bth_of(layer)
    if bth is None:
        return None
    plan = infiniband.PLANS[bth.opcode & 0xFF]
    index = 0
    below: Packet | None = layer
    while below is not None and below is not bth:
        index += 1
        below = below.underlayer
    if index < len(plan.exts):
        return layer_of(plan.exts[index])
    if bth.destqp in NVME_RDMA_QPS and plan.valid and plan.kind == "send" and plan.pos == "only":
        return class_of(stacking.nvme_capsule(payload))
    return class_of(stacking.transport_payload(bth.opcode, bth.destqp, payload))


def _after_mad(layer: Packet, payload: bytes) -> type[Packet] | None:
    return class_of(stacking.after_mad(layer.mgmtclass, layer.attributeid, layer.method))


def _mad_below(layer: Packet) -> Packet | None:
    found: Packet | None = layer
    while found is not None and getattr(found, "declaration", None) is not mad.MAD:
        found = found.underlayer
    return found


class PerfReserved(Packet):
    """The reserved bytes between a performance management MAD's common header and its attribute."""
    name = "Performance Management reserved"
    fields_desc = [StrFixedLenField("reserved", b"\0" * mad.PERF_RESERVED, mad.PERF_RESERVED)]

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        m = _mad_below(self)
        hdr = stacking.perf_attribute(m.attributeid, m.method) if m is not None else None
        return layer_of(hdr) if hdr is not None else conf.raw_layer


def _after_sa(layer: Packet, payload: bytes) -> type[Packet] | None:
    m = _mad_below(layer)
    rmpp = layer.underlayer
    if m is None or rmpp is None:
        return None
    return class_of(stacking.sa_record(m.attributeid, m.method, rmpp.rmpptype, rmpp.data1, len(payload)))


_FORMAT_ID = stacking.FORMAT_ID


class PrivateDataPrefix(Packet):
    """Consumer private data before an RFC 8797 Format Identifier found further in (RFC 8797 section 5.2)."""
    name = "Private data before the RPC-over-RDMA data"
    fields_desc = [StrField("skipped", b"")]

    def do_dissect(self, s: bytes) -> bytes:
        at = max(stacking.format_id_at(s), 0)
        self.fields["skipped"] = self.raw_packet_cache = s[:at]
        return s[at:]

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        return layer_of(rpcrdma_pdata.PDATA) if payload[:4] == _FORMAT_ID else conf.raw_layer


def _private_data(payload: bytes) -> type[Packet] | None:
    return class_of(stacking.private_data(payload))


def _after_cm_req(layer: Packet, payload: bytes) -> type[Packet] | None:
    return class_of(stacking.after_cm(ib_cm.REQ, layer.serviceid, payload))


def _after_mpa_frame(layer: Packet, payload: bytes) -> type[Packet] | None:
    follower = stacking.after_mpa_frame(layer.rev, layer.res, payload)
    if _on_nvme_port(layer) and follower is not iwarp_mpa.IRD_ORD:
        return _nvme_record(stacking.mpa_message_kind(layer.key, layer.rej_flag), payload)
    return class_of(follower)


def _after_ird_ord(layer: Packet, payload: bytes) -> type[Packet] | None:
    frame = layer.underlayer
    if frame is not None and _on_nvme_port(layer):
        return _nvme_record(stacking.mpa_message_kind(frame.key, frame.rej_flag), payload)
    return _private_data(payload)


def _after_untagged_ddp(layer: Packet, payload: bytes) -> type[Packet] | None:
    if _on_nvme_port(layer) and layer.rsvdulp[0] & 15 in iwarp_ddp.SEND_OPS:
        return class_of(stacking.nvme_capsule(payload)) if layer.mo == 0 and layer.last_flag else None
    return class_of(stacking.after_untagged_ddp(layer.rsvdulp, layer.mo, payload))


def _after_ip_cm(layer: Packet, payload: bytes) -> type[Packet] | None:
    req = layer.underlayer
    if req is not None and stacking.nvme_rdma_port(getattr(req, "serviceid", 0) or 0, NVME_RDMA_PORTS):
        return _nvme_record("req", payload)
    return _private_data(payload)


# --- NVMe/RDMA ----------------------------------------------------------------------------------------------
# Which Sends are NVMe/RDMA capsules: those to these destination QPs (RoCE, InfiniBand: the CM names them),
# and on iWARP those of a TCP port in NVME_RDMA_PORTS (also the RDMA-CM ports whose REQs carry its record).
NVME_RDMA_QPS: set[int] = set()
NVME_RDMA_QIDS: dict[int, int] = {}      # a destination QP -> the NVMe queue its commands are on (admin: 0)
NVME_RDMA_PORTS: set[int] = {stacking.NVME_RDMA_PORT}
# What the connection says about the capsule being dissected (nvme_capsule): its queue, the command answered
_NVME_CONTEXT: contextvars.ContextVar[tuple[int | None, Any]] = contextvars.ContextVar(
    "rdmaspy_scapy_nvme", default=(None, None))
_NVME_HEADERS = frozenset(id(h) for name, h in class_names() if name.startswith("NVME_") and
                          not name.startswith("NVME_RDMA_"))


def _on_nvme_port(layer: Packet) -> bool:
    """Whether the TCP segment ``layer`` is in has a port in ``NVME_RDMA_PORTS``."""
    tcp = layer.underlayer
    while tcp is not None and not isinstance(tcp, TCP):
        tcp = tcp.underlayer
    return tcp is not None and (tcp.sport in NVME_RDMA_PORTS or tcp.dport in NVME_RDMA_PORTS)


def _nvme_record(kind: str, payload: bytes) -> type[Packet] | None:
    record = stacking.nvme_cm_record(kind)
    return layer_of(record) if len(payload) >= record.size else None


class NvmeCapsule(Packet):
    """An NVMe/RDMA capsule: dissected as the first of its layers (``stacking.nvme_plan``), or Raw."""
    name = "NVMe/RDMA capsule"
    fields_desc = [StrField("load", b"")]

    @classmethod
    def dispatch_hook(cls, _pkt: bytes | None = None, *args: Any, **kargs: Any) -> type[Packet]:
        plan = stacking.nvme_plan(bytes(_pkt or b""), *_capsule_context(kargs.get("_underlayer")))
        return layer_of(plan[0]) if plan else conf.raw_layer


def _capsule_context(layer: Packet | None) -> tuple[int | None, Any]:
    """What is known of the capsule at hand: given to ``nvme_capsule``, or its QP's queue (``NVME_RDMA_QIDS``)."""
    qid, command = _NVME_CONTEXT.get()
    bth = _bth_of(layer) if layer is not None else None
    if qid is None and bth is not None:
        qid = NVME_RDMA_QIDS.get(bth.destqp)
    return qid, command


def _after_nvme(layer: Packet, payload: bytes) -> type[Packet] | None:
    """The next layer of a capsule: the capsule's plan, computed once by its first layer."""
    head, depth = layer, 0
    while isinstance(head.underlayer, DeclaredLayer) and id(head.underlayer.declaration) in _NVME_HEADERS:
        head, depth = head.underlayer, depth + 1
    plan = head.__dict__.get("nvme_plan")
    if plan is None:
        plan = stacking.nvme_plan(bytes(head.original or b""), *_capsule_context(head))
        head.__dict__["nvme_plan"] = plan
    if depth + 1 < len(plan) and plan[depth] is layer.declaration and len(payload) >= plan[depth + 1].size:
        return layer_of(plan[depth + 1])
    return None


def nvme_capsule(payload: bytes, qid: int | None = None, command: Any = None) -> Packet:
    """An NVMe/RDMA Send's payload dissected as its capsule: a command (64 bytes or more: the SQE's layers,
    then any in-capsule SGL list or Dataset Management ranges), a response (16 bytes: the CQE), else Raw.

    The declarations are chosen as rdmaspy's dissector chooses them, which depends on the connection:
    ``qid`` is the command's queue (0 the admin queue; None: unknown, and a command naming a namespace with
    an NVM opcode is read as I/O), ``command`` the command a response completes (its packet or SQE bytes,
    or rdmaspy's ``NvmeCommand``; None: not known, the CQE as plain dwords).
    """
    token = _NVME_CONTEXT.set((qid, command))
    try:
        return NvmeCapsule(bytes(payload))
    finally:
        _NVME_CONTEXT.reset(token)


def nvme_rdma_cm(message: Packet) -> Packet | None:
    """A CM REQ, REP or REJ layer whose private data (after a REQ's IP CM header) is read again as its
    NVMe/RDMA record, as rdmaspy reads it on an NVMe/RDMA connection: a REP or REJ does not say what it
    answers (a REQ to a port in NVME_RDMA_PORTS is read so when dissected). The record layer, or None."""
    kinds = {id(ib_cm.REQ): "req", id(ib_cm.REP): "rep", id(ib_cm.REJ): "rej"}
    kind = kinds.get(id(getattr(message, "declaration", None)))
    if kind is None:
        return None
    below = message.payload if isinstance(message.payload, layer_of(rdma_cm.IP_CM)) else message
    data = bytes(below.payload)
    cls = _nvme_record(kind, data)
    if cls is None:
        return None
    below.remove_payload()
    below.add_payload(cls(data))
    return below.payload


def bind_nvme_rdma(port: int | None = None, qp: int | None = None, qid: int | None = None) -> None:
    """Dissect NVMe/RDMA where rdmaspy would (its Sends as capsules, the CM private data as its records).

    ``port``: an RDMA-CM port (a CM REQ to its service ID carries the NVMe/RDMA REQ record), also bound as
    an iWARP TCP port whose Sends are capsules; 4420 is bound on import. ``qp``: a destination QP whose
    Sends (RoCE, InfiniBand) are capsules: a Send's bytes do not say they are one, the CM exchange does
    (the REQ's and the REP's ``localqpn``), or the capture's user knows. ``qid``: the NVMe queue of the
    controller's QP ``qp`` (the CM REQ record's ``qid``), so its commands read as the admin queue's (0) or an
    I/O queue's rather than guessed.
    """
    if port is not None:
        NVME_RDMA_PORTS.add(port)
        bind_iwarp(port)
    if qp is not None:
        NVME_RDMA_QPS.add(qp)
        if qid is not None:
            NVME_RDMA_QIDS[qp] = qid


def _bind() -> None:
    for hdr in (infiniband.BTH, *{h for plan in infiniband.PLANS for h in plan.exts}):
        layer_of(hdr).next_layer = _after_transport
    layer_of(mad.MAD).next_layer = _after_mad
    layer_of(mad.RMPP).next_layer = lambda layer, payload: layer_of(mad.SA)
    layer_of(mad.SA).next_layer = _after_sa
    layer_of(ib_cm.REQ).next_layer = _after_cm_req
    for hdr in ib_cm.MESSAGE_HEADERS.values():
        if hdr is not ib_cm.REQ:
            layer_of(hdr).next_layer = lambda layer, payload: _private_data(payload)
    layer_of(rdma_cm.IP_CM).next_layer = _after_ip_cm
    layer_of(iwarp_mpa.REQREP).next_layer = _after_mpa_frame
    layer_of(iwarp_mpa.IRD_ORD).next_layer = _after_ird_ord
    for name, hdr in class_names():
        if id(hdr) in _NVME_HEADERS:
            layer_of(hdr).next_layer = _after_nvme
    layer_of(iwarp_mpa.FPDU).next_layer = lambda layer, payload: layer_of(iwarp_ddp.DDP_TAGGED)
    layer_of(iwarp_ddp.DDP_UNTAGGED).next_layer = _after_untagged_ddp

    roce = sys.modules.get("scapy.contrib.roce")
    if roce is not None:        # scapy's own RoCE layers would take UDP port 4791 first
        split_bottom_up(UDP, roce.BTH, dport=stacking.ROCEV2_PORT)
    bth, grh, lrh = layer_of(infiniband.BTH), layer_of(infiniband.GRH), layer_of(infiniband.LRH)
    bind_layers(UDP, bth, dport=stacking.ROCEV2_PORT)
    bind_layers(Ether, grh, type=stacking.ROCEV1_ETHERTYPE)
    bind_layers(grh, bth, nxthdr=stacking.BTH_NEXT_HEADER)
    bind_layers(lrh, bth, lnh=stacking.LNH_LOCAL)
    bind_layers(lrh, grh, lnh=stacking.LNH_GLOBAL)
    conf.l2types.register(stacking.LINKTYPE_INFINIBAND, lrh)     # rdpcap reads native IB captures


_bind()


def bind_iwarp(port: int) -> None:
    """Dissect TCP ``port`` as iWARP: MPA Request/Reply frames, then FPDUs of DDP/RDMAP.

    iWARP has no port of its own (rdmaspy learns it from the MPA exchange); 20049, NFS/RDMA, is bound
    on import.  Each TCP segment is read as starting with an MPA frame, as the Linux senders align them.
    """
    fpdu = layer_of(iwarp_mpa.FPDU)
    bind_layers(TCP, fpdu, dport=port)
    bind_layers(TCP, fpdu, sport=port)


bind_iwarp(rpcrdma.NFS_RDMA_PORT)
bind_iwarp(stacking.NVME_RDMA_PORT)

# --- NFS and its side programs: one class per procedure's call and reply, from the XDR declarations ---------
class XdrField(ScapyField[Any, bytes]):
    """One member of an XDR declaration (``rdmaspy.dissectors.xdrlang``), read and written by the
    declaration itself: an integer, bytes or text, a dict for a struct, (discriminant, arm value) for a
    union, None or the value for an optional item, a list for an array or a linked list."""

    __slots__ = ["xdr"]

    islist = 1          # one value, not a set of values for scapy to iterate over

    def __init__(self, name: str, xdr: xdrlang.XdrType) -> None:
        super().__init__(name, None, fmt="!I")
        self.xdr = xdr

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, Any]:
        try:
            value, end = xdrlang.decode(self.xdr, s)
        except XdrError:
            return s, None              # left to the payload (Raw), as a short header is
        return s[end:], value

    def addfield(self, pkt: Packet, s: bytes, val: Any) -> bytes:
        if val is None and not isinstance(self.xdr, (xdrlang.Optional, xdrlang.Void)):
            return s
        return s + xdrlang.encode(self.xdr, val)

    def i2len(self, pkt: Packet, x: Any) -> int:
        return len(self.addfield(pkt, b"", x))


class XdrPacket(Packet):
    """An RPC body declared in XDR: the members of a struct, or one ``body`` field for any other type."""

    declaration: xdrlang.XdrType = xdrlang.VOID

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


def _xdr_fields(decl: xdrlang.XdrType) -> list[ScapyField]:
    if isinstance(decl, xdrlang.Struct):     # a member named as a Python keyword gets a "_" (RENAME's from_)
        return [XdrField(f"{key}_" if keyword.iskeyword(key) else key, t) for key, t in decl.members]
    return [XdrField("body", decl)]


NFS_LAYERS: dict[str, type[XdrPacket]] = {}     # "NFS3_READ_Call" -> class; MOUNT3_, NLM4_, NFSACL3_ too


def _generate_nfs() -> None:
    module = sys.modules[__name__]
    programs = {nfs.NFS_PROG: {2: (nfs2.ARGS, nfs2.RES), 3: (nfs3.ARGS, nfs3.RES)}, **nfs_side.PROGRAMS}
    for prog, versions in programs.items():
        prog_name = {nfs.NFS_PROG: "NFS", nfs.MOUNT_PROG: "MOUNT", nfs.NLM_PROG: "NLM",
                     nfs.NFSACL_PROG: "NFSACL"}[prog]
        for vers, (args, results) in versions.items():
            names = nfs.PROC_TABLES.get((prog_name.lower(), vers)) or {2: nfs.NFS2_PROCS}.get(vers, nfs.NFS3_PROCS)
            for side, table in (("Call", args), ("Reply", results)):
                for proc, decl in table.items():
                    name = f"{prog_name}{vers}_{names.get(proc, f'PROC{proc}')}_{side}"
                    cls = type(name, (XdrPacket,), {"name": name.replace("_", " "), "declaration": decl,
                                                    "fields_desc": _xdr_fields(decl)})
                    NFS_LAYERS[name] = cls
                    setattr(module, name, cls)


_generate_nfs()

__all__ = ["LAYERS", "NFS_LAYERS", "bind_iwarp", "bind_nvme_rdma", "nvme_capsule", "nvme_rdma_cm", "NvmeCapsule",
           "NVME_RDMA_QPS", "NVME_RDMA_QIDS", "NVME_RDMA_PORTS", "layer_of", "RPCRDMA", "RPCRDMA2", "Pad",
           "ChunkListsField",
           "PerfReserved", "PrivateDataPrefix", "XdrField", "XdrPacket", *LAYERS, *NFS_LAYERS]
