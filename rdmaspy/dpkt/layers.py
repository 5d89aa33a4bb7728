"""The dpkt classes of every header the dissectors declare, generated from the declarations, and the few
classes for what follows a header that is not one fixed header; which follows which is ``rdmaspy.stacking``'s."""
from __future__ import annotations

import contextvars
import struct
from typing import Any, Callable, Sequence

import dpkt
import dpkt.ip
import dpkt.ip6

from .. import stacking
from ..dissectors import ib_cm, infiniband, iwarp_ddp, iwarp_mpa, mad, nvme, rdma_cm, rpcrdma_pdata
from ..fields import Field, Header
from ..stacking import class_names, short_name
from .layout import Layout, bytes_property, shown
from .rpc_over_rdma import RPCRDMA, RPCRDMA2


class DeclaredPacket(dpkt.Packet):
    """A class generated from a header declaration; ``declaration`` is the Header it came from.

    Fields the packet's length decides (``computed``: pad counts, lengths) are computed on ``bytes()``
    when a packet is built without them; given to the constructor, or read from bytes, they are kept.
    """

    data: Any               # the payload: the next header's packet, or bytes
    declaration: Header | None = None
    field_names: tuple[str, ...] = ()           # the declared fields' names, in declaration order
    extra_names: tuple[str, ...] = ()           # entries of __hdr__ after the declared header
    computed: frozenset[str] = frozenset()
    _widths: dict[str, int] = {}                # each declared field's width, by name

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._auto = frozenset() if args else self.computed - kwargs.keys()
        super().__init__(*args, **kwargs)

    def unpack(self, buf: bytes) -> None:
        dpkt.Packet.unpack(self, buf)
        self.data = carry(self, self.follower(self.data), self.data)

    def follower(self, payload: bytes) -> stacking.Follower:
        """What follows this header in ``payload``, by its own fields (``rdmaspy.stacking``)."""
        return None

    def compute(self, *names: str) -> None:
        """Have ``bytes()`` compute these fields (every one of ``computed`` when none is named) from what the
        packet carries, as for a packet built without them."""
        wanted = frozenset(names) if names else self.computed
        if not wanted <= self.computed:
            raise ValueError(f"{type(self).__name__} computes {sorted(self.computed)}, "
                             f"not {sorted(wanted - self.computed)}")
        self._auto = self._auto | wanted

    def values(self) -> tuple:
        """The values in declaration order, as ``Header.decode`` returns them."""
        return tuple(getattr(self, name) for name in self.field_names)

    def _create_public_fields(self) -> None:
        # dpkt's repr and pprint list these: the declared names, in order (not dpkt's guesses from entry names)
        type(self).__public_fields__ = [*self.field_names, *self.extra_names]

    def _header_with(self, **values: int) -> bytes:
        """The header packed with ``values`` in place of the fields' own (computed ones), the packet unchanged."""
        saved = {name: getattr(self, name) for name in values}
        try:
            for name, value in values.items():
                setattr(self, name, value & ((1 << self._widths[name]) - 1))
            return self.pack_hdr()
        finally:
            for name, value in saved.items():
                setattr(self, name, value)


def carry(parent: dpkt.Packet, follower: stacking.Follower, payload: bytes) -> Any:
    """``payload`` as the class of ``follower``, named on ``parent`` as dpkt names its layers (``ip.udp``);
    the bytes themselves when nothing follows or they do not unpack as it."""
    cls = class_of(follower)
    if cls is None or not payload:
        return payload
    try:
        child = cls(payload)
    except dpkt.UnpackError:
        return payload
    setattr(parent, type(child).__name__.lower(), child)
    return child


class _Transport(DeclaredPacket):
    """BTH: the opcode's extended headers follow it, then the payload; the pad bytes and the ICRC are its
    trailer (``pad``, ``icrc``: None computes them on ``bytes()``, the ICRC over ``carrier``)."""

    icrc: int | None = None
    pad: bytes | None = None
    _carrier: dpkt.Packet | None = None
    _sealing = False

    def unpack(self, buf: bytes) -> None:
        dpkt.Packet.unpack(self, buf)
        body = self.data
        if len(body) < 4:
            raise dpkt.NeedData(f"BTH: {len(body)} bytes after the header, no room for the ICRC")
        self.icrc = int.from_bytes(body[-4:], "little")
        body = body[:-4]
        plan = infiniband.PLANS[self.opcode]
        below: dpkt.Packet = self
        whole = True
        for hdr in plan.exts:
            if len(body) < hdr.size:
                whole = False       # as rdmaspy: a truncated packet, its payload not dissected
                break
            ext = layer_of(hdr)(body)
            below.data = ext
            setattr(below, type(ext).__name__.lower(), ext)
            below, body = ext, ext.data
        cut = len(body) - self.padcnt
        whole = whole and cut >= 0
        body, self.pad = body[:max(cut, 0)], body[max(cut, 0):]
        if whole and plan.kind == "send" and plan.pos == "only" and self.destqp in NVME_RDMA_QPS:
            below.data = carry_capsule(below, body, NVME_RDMA_QIDS.get(self.destqp))
            return
        upper = stacking.transport_payload(self.opcode, self.destqp, body) if whole else None
        below.data = carry(below, upper, body)

    @property
    def carrier(self) -> dpkt.Packet | None:
        """The packet this BTH travels in, which its ICRC covers: the IPv4 or IPv6 packet of RoCEv2 (set it:
        dpkt's layers do not know what carries them), the GRH or the LRH (they set it themselves)."""
        return self._carrier

    @carrier.setter
    def carrier(self, packet: dpkt.Packet | None) -> None:
        if packet is not None and not isinstance(packet, (dpkt.ip.IP, dpkt.ip6.IP6, _Grh, _Lrh)):
            raise TypeError(f"a BTH travels in an IP, IP6, GRH or LRH packet, not {type(packet).__name__}")
        self._carrier = packet

    def _pad(self) -> bytes:
        if self.pad is not None:
            return bytes(self.pad)
        return b"\0" * (-len(self.data) & 3 if "padcnt" in self._auto else self.padcnt)

    def __len__(self) -> int:
        return self.__hdr_len__ + len(self.data) + len(self._pad()) + 4

    def __bytes__(self) -> bytes:
        pad = self._pad()
        head = self._header_with(padcnt=len(pad)) if "padcnt" in self._auto else self.pack_hdr()
        whole = head + bytes(self.data) + pad
        if self._sealing:
            return whole + bytes(4)
        icrc = self.icrc if self.icrc is not None else self.expected_icrc(whole)
        return whole + struct.pack("<I", (icrc or 0) & 0xFFFFFFFF)

    def expected_icrc(self, whole: bytes | None = None) -> int | None:
        """The ICRC of this packet in its carrier (rdmaspy's own functions), None without a carrier."""
        carrier = self._carrier
        if carrier is None:
            return None
        if whole is None:
            self._sealing = True
            try:
                whole = bytes(self)[:-4]
            finally:
                self._sealing = False
        self._sealing = True
        try:
            buf = _pure_bytes(carrier)
        finally:
            self._sealing = False
        if isinstance(carrier, _Grh):
            return infiniband.icrc_grh(buf, -1, 0, carrier.__hdr_len__, len(buf) - 4)
        if isinstance(carrier, _Lrh):
            return infiniband.icrc_local(buf, 0, carrier.__hdr_len__, len(buf) - 6)
        version = 4 if isinstance(carrier, dpkt.ip.IP) else 6
        return infiniband.icrc_rocev2(buf, 0, version, len(buf) - len(whole) - 4, len(buf) - 4)


def _pure_bytes(packet: dpkt.Packet) -> bytes:
    """``bytes(packet)`` without what dpkt's IP and IPv6 write back while they pack (lengths, checksums)."""
    layers = [packet]
    while isinstance(layers[-1].data, dpkt.Packet) and not isinstance(layers[-1].data, _Transport):
        layers.append(layers[-1].data)
    saved = [(p, {k: getattr(p, k) for k in p.__hdr_fields__}, dict(p.__dict__)) for p in layers]
    try:
        return bytes(packet)
    finally:
        for p, fields, attrs in saved:
            for k, v in fields.items():
                setattr(p, k, v)
            p.__dict__.clear()
            p.__dict__.update(attrs)


class _Grh(DeclaredPacket):
    """GRH: a BTH follows when the next header says so; PayLen counts BTH..ICRC, what follows it on Ethernet
    (RoCEv1) is padding, left out as dpkt's IP leaves it out."""

    def unpack(self, buf: bytes) -> None:
        dpkt.Packet.unpack(self, buf)
        if 16 <= self.paylen <= len(self.data):
            self.data = self.data[:self.paylen]
        follower = infiniband.BTH if self.nxthdr == stacking.BTH_NEXT_HEADER else None
        self.data = carry(self, follower, self.data)
        if isinstance(self.data, _Transport):
            self.data.carrier = self

    def __bytes__(self) -> bytes:
        if isinstance(self.data, _Transport):
            self.data.carrier = self
        body = bytes(self.data)
        head = self._header_with(paylen=len(body)) if "paylen" in self._auto else self.pack_hdr()
        return head + body


class _Lrh(DeclaredPacket):
    """LRH: a BTH (LNH 2) or a GRH (LNH 3) follows; the VCRC is its trailer (``vcrc``: None computes it),
    PktLen and LNH follow from what it carries when not given."""

    vcrc: int | None = None

    def unpack(self, buf: bytes) -> None:
        dpkt.Packet.unpack(self, buf)
        end = self.pktlen * 4
        if end < self.__hdr_len__ or end + 2 > len(buf):
            end = len(buf) - 2          # as rdmaspy reads a packet whose length does not fit
        if end < self.__hdr_len__:
            raise dpkt.NeedData("LRH: no room for the VCRC")
        self.vcrc = int.from_bytes(buf[end:end + 2], "little")
        follower = {stacking.LNH_LOCAL: infiniband.BTH, stacking.LNH_GLOBAL: infiniband.GRH}.get(self.lnh)
        self.data = carry(self, follower, buf[self.__hdr_len__:end])
        if isinstance(self.data, _Transport):
            self.data.carrier = self

    def __len__(self) -> int:
        return self.__hdr_len__ + len(self.data) + 2

    def __bytes__(self) -> bytes:
        if isinstance(self.data, _Transport):
            self.data.carrier = self
        body = bytes(self.data)
        values = {}
        if "lnh" in self._auto:
            values["lnh"] = stacking.LNH_GLOBAL if isinstance(self.data, _Grh) else \
                stacking.LNH_LOCAL if isinstance(self.data, _Transport) else self.lnh
        if "pktlen" in self._auto:
            values["pktlen"] = (self.__hdr_len__ + len(body)) // 4
        whole = self._header_with(**values) + body
        vcrc = self.vcrc if self.vcrc is not None else infiniband.vcrc(whole)
        return whole + struct.pack("<H", vcrc & 0xFFFF)


class _Mad(DeclaredPacket):
    """The common MAD header: its class's header follows; the SA record and the performance attribute after
    it are chosen by this header's attribute and method (dpkt's layers do not see the header above them)."""

    def follower(self, payload: bytes) -> stacking.Follower:
        return stacking.after_mad(self.mgmtclass, self.attributeid, self.method)

    def unpack(self, buf: bytes) -> None:
        super().unpack(buf)
        below = self.data
        if isinstance(below, layer_of(mad.RMPP)) and isinstance(below.data, layer_of(mad.SA)):
            sa = below.data
            record = stacking.sa_record(self.attributeid, self.method, below.rmpptype, below.data1, len(sa.data))
            sa.data = carry(sa, record, sa.data)
        elif isinstance(below, PerfReserved):
            below.data = carry(below, stacking.perf_attribute(self.attributeid, self.method), below.data)


class _MpaFrame(DeclaredPacket):
    """An MPA Request/Reply frame: its private data (``pdlength`` bytes) follows; the bytes after it in the
    segment are ``rest``."""

    rest = b""

    def follower(self, payload: bytes) -> stacking.Follower:
        return stacking.after_mpa_frame(self.rev, self.res, payload)

    def unpack(self, buf: bytes) -> None:
        dpkt.Packet.unpack(self, buf)
        private, self.rest = self.data[:self.pdlength], self.data[self.pdlength:]
        self.data = carry(self, self.follower(private), private)
        if _NVME.get():         # a TCP port of NVMe/RDMA: the private data (after IRD/ORD) is its record
            below = self.data if isinstance(self.data, layer_of(iwarp_mpa.IRD_ORD)) else self
            nvme_record(below, stacking.mpa_message_kind(bytes(self.key), self.rej_flag))

    def __len__(self) -> int:
        return self.__hdr_len__ + len(self.data) + len(self.rest)

    def __bytes__(self) -> bytes:
        return self.pack_hdr() + bytes(self.data) + bytes(self.rest)


class _Fpdu(DeclaredPacket):
    """An MPA FPDU: its ULPDU (a DDP segment), then ``pad`` to 4 bytes and ``crc``, the CRC32c when the MPA
    exchange negotiated it, else 0 (None computes both); the bytes after it in the segment are ``rest``.
    Only an FPDU whole in the bytes given unpacks (dpkt has no TCP reassembly). ``nvme_rdma``: read on an
    NVMe/RDMA connection (its Sends as capsules; pass it to ``fpdus`` for the ones in ``rest``)."""

    pad: bytes | None = None
    crc: int | None = None
    rest = b""
    nvme_rdma = False

    def unpack(self, buf: bytes) -> None:
        dpkt.Packet.unpack(self, buf)
        self.nvme_rdma = _NVME.get()
        n = self.ulpdulength
        pad = -(self.__hdr_len__ + n) & 3
        end = n + pad + 4
        if end > len(self.data):
            raise dpkt.NeedData(f"MPA FPDU: {end} bytes after the header, {len(self.data)} here")
        ulpdu, self.pad = self.data[:n], self.data[n:n + pad]
        self.crc = int.from_bytes(self.data[n + pad:end], "big")
        self.rest = self.data[end:]
        self.data = carry(self, stacking.ddp_header(ulpdu), ulpdu)

    def _pad(self) -> bytes:
        return bytes(self.pad) if self.pad is not None else b"\0" * (-(self.__hdr_len__ + len(self.data)) & 3)

    def __len__(self) -> int:
        return self.__hdr_len__ + len(self.data) + len(self._pad()) + 4 + len(self.rest)

    def __bytes__(self) -> bytes:
        body = bytes(self.data)
        head = self._header_with(ulpdulength=len(body)) if "ulpdulength" in self._auto else self.pack_hdr()
        whole = head + body + self._pad()
        crc = self.crc if self.crc is not None else iwarp_mpa.crc_field_value(iwarp_mpa.CRC32C(whole))
        return whole + struct.pack(">I", crc & 0xFFFFFFFF) + bytes(self.rest)


def fpdus(segment: bytes, nvme_rdma: bool = False) -> tuple[list[Any], bytes]:
    """Every whole MPA FPDU a TCP segment's payload holds from its start, and the bytes left after them
    (an FPDU that goes on in the next segment): a bound TCP port shows the first as its payload.
    ``nvme_rdma``: the connection carries NVMe/RDMA (its Sends are capsules)."""
    found: list[Any] = []
    with reading_nvme_rdma(nvme_rdma):
        while segment:
            try:
                fpdu = layer_of(iwarp_mpa.FPDU)(segment)
            except dpkt.UnpackError:
                break
            found.append(fpdu)
            segment = fpdu.rest
    return found, segment


# --- NVMe/RDMA ----------------------------------------------------------------------------------------------
# Which Sends are NVMe/RDMA capsules: those to these destination QPs (RoCE, InfiniBand; the CM names them),
# and on iWARP those of a TCP port in ``rdmaspy.dpkt.NVME_RDMA_PORTS`` (read within ``reading_nvme_rdma``).
NVME_RDMA_QPS: set[int] = set()
NVME_RDMA_QIDS: dict[int, int] = {}      # a destination QP -> the NVMe queue its commands are on (admin: 0)
_NVME: contextvars.ContextVar[bool] = contextvars.ContextVar("rdmaspy_dpkt_nvme_rdma", default=False)


class reading_nvme_rdma:
    """Within the block, iWARP Sends and MPA private data are read as NVMe/RDMA (``on``) or not."""

    def __init__(self, on: bool = True) -> None:
        self.on = on
        self.token: contextvars.Token[bool] | None = None

    def __enter__(self) -> None:
        self.token = _NVME.set(self.on)

    def __exit__(self, *exc: object) -> None:
        assert self.token is not None
        _NVME.reset(self.token)


def chain(headers: Sequence[Header], buf: bytes) -> Any:
    """``buf`` read as the classes of ``headers`` one after the other (each the data of the one before), the
    bytes after the last their data; the bytes themselves when the first does not fit."""
    top: Any = None
    below: dpkt.Packet | None = None
    body = buf
    for hdr in headers:
        if len(body) < hdr.size:
            break
        layer = layer_of(hdr)(body)
        if below is None:
            top = layer
        else:
            below.data = layer
            setattr(below, type(layer).__name__.lower(), layer)
        below, body = layer, layer.data
    return buf if top is None else top


def nvme_capsule(payload: bytes, qid: int | None = None, command: Any = None) -> Any:
    """An NVMe/RDMA Send's payload as its capsule's classes: a command (64 bytes or more: the SQE's headers,
    then any in-capsule SGL list or Dataset Management ranges, then data), or a response (16 bytes: the CQE,
    its dwords 0-1 read for ``command``), or the bytes themselves (any other length).

    The declarations are chosen as rdmaspy's dissector chooses them, which depends on the connection:
    ``qid`` is the command's queue (0 the admin queue; None: unknown, and a command naming a namespace with
    an NVM opcode is read as I/O), ``command`` the command a response completes (its packet as returned
    here, its SQE bytes, or rdmaspy's ``NvmeCommand``; None: not known, the CQE as plain dwords).
    """
    payload = bytes(payload)
    plan = stacking.nvme_plan(payload, qid, command)
    return chain(plan, payload) if plan else payload


def carry_capsule(parent: dpkt.Packet, payload: bytes, qid: int | None = None, command: Any = None) -> Any:
    """``payload`` as an NVMe/RDMA capsule (``nvme_capsule``), named on ``parent`` as ``carry`` names a layer."""
    got = nvme_capsule(payload, qid, command)
    if not isinstance(got, (bytes, bytearray)):
        setattr(parent, type(got).__name__.lower(), got)
    return got


def nvme_record(layer: dpkt.Packet, kind: str) -> Any:
    """The private data that is ``layer``'s payload read as the NVMe/RDMA CM record of a "req", "rep" or
    "rej" message (the bytes themselves when shorter than the record); it becomes ``layer``'s data."""
    data = layer.data
    raw = bytes(data)
    record = stacking.nvme_cm_record(kind)
    if len(raw) < record.size:
        return data
    got = layer_of(record)(raw)
    layer.data = got
    setattr(layer, type(got).__name__.lower(), got)
    return got


def nvme_rdma_cm(message: dpkt.Packet) -> Any:
    """The NVMe/RDMA record in a CM REQ, REP or REJ's private data (after a REQ's IP CM header), read as
    rdmaspy reads it on an NVMe/RDMA connection; None for other messages. A REQ to a port in
    ``NVME_RDMA_PORTS`` is read so when it is unpacked; a REP or REJ does not say what it answers."""
    kinds = {id(ib_cm.REQ): "req", id(ib_cm.REP): "rep", id(ib_cm.REJ): "rej"}
    kind = kinds.get(id(getattr(message, "declaration", None)))
    if kind is None:
        return None
    below = message.data if isinstance(message.data, layer_of(rdma_cm.IP_CM)) else message
    return nvme_record(below, kind)


class _NvmeCapsule(dpkt.Packet):
    """What ``carry`` makes of an NVMe/RDMA capsule: the head of its classes (``nvme_capsule``)."""

    def __new__(cls, buf: bytes = b"", **kwargs: Any) -> Any:
        got = nvme_capsule(buf)
        if isinstance(got, (bytes, bytearray)):
            raise dpkt.UnpackError("not an NVMe/RDMA capsule")
        return got


class _CmReq(DeclaredPacket):
    """A CM REQ: to an RDMA-CM service ID of a port in ``NVME_RDMA_PORTS``, its private data (after the IP CM
    header) is the NVMe/RDMA record."""

    def unpack(self, buf: bytes) -> None:
        super().unpack(buf)
        if stacking.nvme_rdma_port(self.serviceid, NVME_RDMA_PORTS) and isinstance(self.data,
                                                                               layer_of(rdma_cm.IP_CM)):
            nvme_record(self.data, "req")


NVME_RDMA_PORTS: set[int] = {stacking.NVME_RDMA_PORT}


# --- what follows a header that is not a fixed one ---------------------------------------------------
class PerfReserved(dpkt.Packet):
    """The reserved bytes between a performance management MAD's common header and its attribute."""

    __hdr__ = (("reserved", f"{mad.PERF_RESERVED}s", bytes(mad.PERF_RESERVED)),)


class PrivateDataPrefix(dpkt.Packet):
    """Consumer private data before an RFC 8797 Format Identifier found further in (RFC 8797 section 5.2):
    the bytes before it are ``skipped``, the RFC 8797 data follows."""

    __hdr__ = ()
    skipped = b""

    def unpack(self, buf: bytes) -> None:
        at = stacking.format_id_at(buf)
        if at < 0:
            raise dpkt.UnpackError("no RFC 8797 Format Identifier in the private data")
        self.skipped = buf[:at]
        self.data = carry(self, rpcrdma_pdata.PDATA, buf[at:])

    def __len__(self) -> int:
        return len(self.skipped) + len(self.data)

    def __bytes__(self) -> bytes:
        return bytes(self.skipped) + bytes(self.data)


# --- generation -----------------------------------------------------------------------------------------
def _follow_cm(self: DeclaredPacket, payload: bytes) -> stacking.Follower:
    assert self.declaration is not None
    return stacking.after_cm(self.declaration, getattr(self, "serviceid", 0), payload)


def _follow_private_data(self: DeclaredPacket, payload: bytes) -> stacking.Follower:
    return stacking.private_data(payload)


def _follow_untagged_ddp(self: DeclaredPacket, payload: bytes) -> stacking.Follower:
    if _NVME.get() and self.rsvdulp[0] & 15 in iwarp_ddp.SEND_OPS:
        return stacking.nvme_capsule(payload) if self.mo == 0 and self.last_flag else None
    return stacking.after_untagged_ddp(self.rsvdulp, self.mo, payload)


_BASES: dict[int, type[DeclaredPacket]] = {
    id(infiniband.BTH): _Transport, id(infiniband.GRH): _Grh, id(infiniband.LRH): _Lrh, id(mad.MAD): _Mad,
    id(iwarp_mpa.REQREP): _MpaFrame, id(iwarp_mpa.FPDU): _Fpdu, id(ib_cm.REQ): _CmReq}
_FOLLOW: dict[int, Callable[[DeclaredPacket, bytes], stacking.Follower]] = {
    id(mad.RMPP): lambda self, payload: mad.SA,
    **{id(h): _follow_cm for h in ib_cm.MESSAGE_HEADERS.values()},
    id(rdma_cm.IP_CM): _follow_private_data, id(iwarp_mpa.IRD_ORD): _follow_private_data,
    id(iwarp_ddp.DDP_UNTAGGED): _follow_untagged_ddp,
}
# Entries of __hdr__ after a declared header: the IP CM header's address area.
_EXTRA: dict[int, list[tuple[str, str, Any]]] = {
    id(rdma_cm.IP_CM): [("addresses", f"{stacking.IP_CM_ADDRESSES}s", bytes(stacking.IP_CM_ADDRESSES))]}
# What each class holds besides its header, which no declared field may be called.
_RESERVED = frozenset(dir(dpkt.Packet)) | {"data", "declaration", "field_names", "extra_names", "computed",
                                           "compute", "follower", "values", "icrc", "pad", "carrier",
                                           "expected_icrc", "vcrc", "crc", "rest", "nvme_rdma"}



def field_name(field: Field, header: Header) -> str:
    """A field's attribute: its name in the header (``short_name``), after the header's own last name where
    dpkt's class has that name (``rdmap.immediate.data`` is ``immediate_data``: ``data`` is the payload)."""
    name = short_name(field, header)
    return f"{header.name.rsplit('.', 1)[-1]}_{name}" if name in _RESERVED else name


LAYERS: dict[str, type[dpkt.Packet]] = {}          # class name -> class
LAYER_OF: dict[int, type[DeclaredPacket]] = {}     # id(Header) -> class


def make_class(name: str, header: Header, base: type[DeclaredPacket] = DeclaredPacket,
               extra: Sequence[tuple[str, str, Any]] = (), **attrs: Any) -> type[DeclaredPacket]:
    """A dpkt class for ``header``: ``__hdr__`` and ``__bit_fields__`` from its declared widths."""
    names = [field_name(f, header) for f in header.fields]
    layout = Layout(list(zip(names, header.fields, stacking.byte_fields(header))), header.little)
    body: dict[str, Any] = {
        "__doc__": f"{header.label} ({header.name}), generated from its declaration.",
        "__hdr__": [*layout.hdr, *extra], "__bit_fields__": layout.bit_fields,
        "__byte_order__": "<" if header.little else ">",
        "__pprint_funcs__": {n: fn for n, f in zip(names, header.fields) if (fn := shown(f)) is not None},
        "__module__": "rdmaspy.dpkt", "declaration": header, "field_names": tuple(names),
        "extra_names": tuple(e[0] for e in extra),
        "computed": frozenset(n for n, f in zip(names, header.fields) if f.name in stacking.COMPUTED),
        "_widths": {n: f.bits for n, f in zip(names, header.fields)}, **attrs}
    body.update({n: bytes_property(*where) for n, where in layout.in_bytes.items()})
    return type(name, (base,), body)


def _generate() -> None:
    for name, header in class_names():
        follow = _FOLLOW.get(id(header))
        attrs = {"follower": follow} if follow is not None else {}
        cls = make_class(name, header, _BASES.get(id(header), DeclaredPacket), _EXTRA.get(id(header), ()), **attrs)
        LAYERS[name] = cls
        LAYER_OF[id(header)] = cls
    LAYERS["RPCRDMA"] = RPCRDMA
    LAYERS["RPCRDMA2"] = RPCRDMA2


_generate()


def layer_of(header: Header) -> type[DeclaredPacket]:
    return LAYER_OF[id(header)]


def class_of(follower: stacking.Follower) -> type[dpkt.Packet] | None:
    """The class of what ``stacking`` says follows: a declared header's class, or one of the classes above."""
    if follower is None:
        return None
    if isinstance(follower, str):
        return {stacking.RPCRDMA_V1: RPCRDMA, stacking.RPCRDMA_V2: RPCRDMA2, stacking.PERF_RESERVED: PerfReserved,
                stacking.PDATA_PREFIX: PrivateDataPrefix, stacking.NVME_COMMAND: _NvmeCapsule,
                stacking.NVME_RESPONSE: _NvmeCapsule}[follower]
    return layer_of(follower)
