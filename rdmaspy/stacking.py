"""How the headers rdmaspy declares stack, for the packet libraries (``rdmaspy.scapy``, ``rdmaspy.dpkt``).

Each library makes one class per ``Header`` the dissectors declare; what the classes share is here, so that a
class, a field or a rule of what follows what is said once for both: the class names (``class_names``), the
field names (``short_name``), the values a new header starts with (``DEFAULTS``), and which header follows
which, read from the dissectors' tables (opcode plans, MAD class and attribute tables, the CM message table,
the RDMAP opcode table) and decided by the dissectors' own parsers.

A follower is a ``Header``, one of the names below for what is not one fixed header, or None: the bytes are
data.
"""
from __future__ import annotations

import struct
from typing import Any, Iterator, Union

from .dissectors import (erf, ethernet, ib_cm, icmp, infiniband, ip, iwarp_ddp, iwarp_mpa, mad, nvme, nvme_rdma,
                         rdma_cm, rpcrdma, rpcrdma2, rpcrdma_pdata, sll, transport)
from .dissectors import nvme_names
from .fields import Field, Header

# What follows a header when it is not one declared Header.
RPCRDMA_V1 = "rpcrdma"                  # an RPC-over-RDMA version 1 transport header
RPCRDMA_V2 = "rpcrdma2"                 # ... version 2
PERF_RESERVED = "perf_reserved"         # the reserved bytes between a performance MAD's header and its attribute
PDATA_PREFIX = "pdata_prefix"           # consumer private data before an RFC 8797 Format Identifier
NVME_COMMAND = "nvme_command"           # an NVMe/RDMA command capsule (the SQE's headers, then in-capsule data)
NVME_RESPONSE = "nvme_response"         # an NVMe/RDMA response capsule (the CQE's headers)
Follower = Union[Header, str, None]

# Modules whose headers become classes; Ethernet, IP, UDP, TCP, ICMP, SLL and ERF are the libraries' own.
MODULES = (infiniband, mad, ib_cm, rdma_cm, rpcrdma_pdata, iwarp_mpa, iwarp_ddp, nvme, nvme_rdma)
# Modules whose classes are named after the declaring variable, with a prefix: NVMe declares several layouts
# under one header name (``nvme.cmd``), and its CM records share the CM messages' names (``NVME_RDMA_CM_REQ``).
# Tables of headers there (Set Features by feature) give a class per entry, named by its key.
PREFIXED = {id(nvme): "NVME", id(nvme_rdma): "NVME_RDMA"}
LIBRARIES_HAVE = (ethernet, ip, transport, icmp, sll, erf)
# Values a new header starts with where 0 would not be a valid header (the dissectors' own constants).
DEFAULTS: dict[str, Any] = {
    "bth.p_key": 0xFFFF, "grh.ipver": 6, "grh.nxthdr": 0x1B, "grh.hoplmt": 64, "mad.baseversion": 1,
    "rpcrdma.pdata.format_id": rpcrdma_pdata.FORMAT_ID, "rpcrdma.pdata.version": 1,
    "mpa.key": iwarp_mpa.KEY_REQ, "ddp.dv": 1, "rpcrdma.version": 1, "rpcrdma2.version": 2,
}
# Fields a library computes when a packet is built: lengths and the pad count follow from what it carries.
COMPUTED = frozenset({"bth.padcnt", "grh.paylen", "lrh.pktlen", "lrh.lnh", "mpa.ulpdulength"})
# The IP CM header is followed by its address area (IPv4 at its end, or IPv6 in full).
IP_CM_ADDRESSES = rdma_cm.IP_CM_SIZE - rdma_cm.IP_CM.size
FORMAT_ID = rpcrdma_pdata.FORMAT_ID.to_bytes(4, "big")
ROCEV2_PORT = 4791
ROCEV1_ETHERTYPE = 0x8915
BTH_NEXT_HEADER = 0x1B                  # GRH next header: a BTH follows
LNH_LOCAL, LNH_GLOBAL = 2, 3            # LRH link next header: a BTH, or a GRH, follows
LINKTYPE_INFINIBAND = 247


def short_name(field: Field, header: Header) -> str:
    """A field's name in its class: the declared name relative to its header (``bth.destqp`` -> ``destqp``)."""
    return field.name[len(header.name) + 1:].replace(".", "_")


def byte_fields(header: Header) -> tuple[bool, ...]:
    """Which fields the declaration decodes as bytes (addresses, GIDs, opaque data) rather than integers."""
    return tuple(isinstance(v, bytes) for v in header.decode(bytes(header.size)))


def little_words(header: Header) -> list[tuple[int, list[int]]]:
    """A little-endian header's groups as (bytes, indices of its fields most significant first), a field
    read as bytes a group of its own with no indices: the order big-endian bit fields are written in over
    the group's bytes reversed (scapy's low-endian bit fields). A group is the integer fields up to the next
    whole byte, as ``Header`` groups them; its first field is its least significant."""
    out: list[tuple[int, list[int]]] = []
    pending: list[int] = []
    bits = 0
    for i, (field, as_bytes) in enumerate(zip(header.fields, byte_fields(header))):
        if as_bytes and not pending:
            out.append((field.bits // 8, []))
            continue
        pending.append(i)
        bits += field.bits
        if bits % 8 == 0:
            out.append((bits // 8, pending[::-1]))
            pending, bits = [], 0
    return out


def class_names() -> Iterator[tuple[str, Header]]:
    """(class name, declaration) for every header the dissectors declare, each once.

    A class is named after its header (``bth`` -> ``BTH``, ``cm.req`` -> ``CM_REQ``); where one header name
    has several layouts (``ddp``, ``mpa``) the declaring variable tells them apart (``DDP_TAGGED``,
    ``MPA_FPDU``).
    """
    found: list[tuple[str, Header]] = []
    prefixed: list[tuple[str, Header]] = []
    seen = {id(v) for module in LIBRARIES_HAVE for v in vars(module).values() if isinstance(v, Header)}
    for module in MODULES:
        prefix = PREFIXED.get(id(module))
        for var, value in vars(module).items():
            if isinstance(value, Header) and id(value) not in seen:
                seen.add(id(value))
                (found if prefix is None else prefixed).append((var if prefix is None else f"{prefix}_{var}", value))
            elif prefix is not None and isinstance(value, dict) and var.isupper():
                for key, entry in value.items():
                    if isinstance(entry, Header) and isinstance(key, int) and id(entry) not in seen:
                        seen.add(id(entry))
                        prefixed.append((f"{prefix}_{var}_{key:02X}", entry))
    yield from prefixed
    counts: dict[str, int] = {}
    for _var, h in found:
        counts[h.name] = counts.get(h.name, 0) + 1
    for var, h in found:
        base = h.name.upper().replace(".", "_")
        if counts[h.name] == 1:
            yield base, h
        elif var.startswith(base):
            yield var, h
        else:
            yield f"{base}_{var}", h


# Headers that lie inside the one before them rather than after it: the RDMAP control byte is the DDP
# header's ULP byte, the directed-route SMP words are the common MAD header's, an SMP attribute lies in the
# SMP's data field. Their classes exist, to be read from those bytes; no header is followed by them.
OVERLAPPING = frozenset({id(iwarp_ddp.RDMAP_CTRL), id(mad.SMP_DR_HEAD), *map(id, mad.SMP_ATTRIBUTE_HEADERS.values())})


# --- what follows what ----------------------------------------------------------------------------------
def transport_payload(opcode: int, destqp: int, payload: bytes) -> Follower:
    """What the payload of a BTH (after its opcode's extended headers) is: a MAD for QP0 and QP1,
    RPC-over-RDMA in the first or only SEND of a message when the dissectors' parser reads it, else data."""
    plan = infiniband.PLANS[opcode & 0xFF]
    if not plan.valid:
        return None             # a reserved opcode: rdmaspy marks the packet malformed there
    if plan.transport in ("UD", "RD") or destqp < 2:
        return mad.MAD if destqp in (0, 1) else None
    if plan.kind == "send" and plan.pos in ("first", "only"):
        return rpcrdma_version(payload)
    return None


def after_mad(mgmtclass: int, attributeid: int, method: int) -> Follower:
    """By management class (an SMP's attribute lies inside the SMP's data field: see ``OVERLAPPING``)."""
    if mgmtclass == 0x04:
        return PERF_RESERVED
    if mgmtclass == 0x07:
        if attributeid == 0x0001:
            return mad.CLASSPORTINFO if method != 0x01 else None
        return ib_cm.MESSAGE_HEADERS.get(attributeid)
    return {0x01: mad.SMP_LID, 0x81: mad.SMP_DR_BODY, 0x03: mad.RMPP}.get(mgmtclass)


def perf_attribute(attributeid: int, method: int) -> Header | None:
    """The attribute after a performance MAD's reserved bytes (a Get's attribute data is empty)."""
    if method == 0x01:
        return None
    return mad.CLASSPORTINFO if attributeid == 0x0001 else mad.PERF_ATTRIBUTE_HEADERS.get(attributeid)


def sa_record(attributeid: int, method: int, rmpptype: int, data1: int, left: int) -> Header | None:
    """The record after the SA header: only an unsegmented MAD or the first RMPP DATA segment starts with one."""
    if attributeid == 0x0001:
        return mad.CLASSPORTINFO if method != 0x01 else None
    hdr = mad.SA_RECORD_HEADERS.get(attributeid)
    first = rmpptype == 0 or (rmpptype == 1 and data1 == 1)
    return hdr if hdr is not None and first and left >= hdr.size else None


def format_id_at(payload: bytes) -> int:
    """Where RFC 8797 private data starts in consumer private data (searched for as rdmaspy does), or -1."""
    at = payload.find(FORMAT_ID)
    return at if at >= 0 and len(payload) - at >= rpcrdma_pdata.PDATA.size else -1


def private_data(payload: bytes) -> Follower:
    """Consumer private data: RFC 8797 data where its Format Identifier is found, the bytes before it first."""
    at = format_id_at(payload)
    if at < 0:
        return None
    return rpcrdma_pdata.PDATA if at == 0 else PDATA_PREFIX


def after_cm(message: Header, serviceid: int, payload: bytes) -> Follower:
    """A CM message's private data: for a REQ to an RDMA-CM service ID, the IP CM header first."""
    if message is ib_cm.REQ and rdma_cm.split_service_id(serviceid) is not None:
        return rdma_cm.IP_CM
    return private_data(payload)


def mpa_frame(segment: bytes) -> Header:
    """A TCP segment of an iWARP connection read as starting with an MPA frame: Request/Reply, or an FPDU."""
    return iwarp_mpa.REQREP if segment[:16] in (iwarp_mpa.KEY_REQ, iwarp_mpa.KEY_REP) else iwarp_mpa.FPDU


def after_mpa_frame(rev: int, res: int, payload: bytes) -> Follower:
    """An MPA Request/Reply's private data: IRD/ORD when revision 2 sets Res bit 0x10, then RFC 8797 data."""
    if rev == 2 and res & 0x10 and len(payload) >= iwarp_mpa.IRD_ORD.size:
        return iwarp_mpa.IRD_ORD
    return private_data(payload)


def ddp_header(ulpdu: bytes) -> Header:
    """The DDP header a ULPDU starts with, by its Tagged flag."""
    return iwarp_ddp.DDP_TAGGED if ulpdu[:1] and ulpdu[0] & 0x80 else iwarp_ddp.DDP_UNTAGGED


def after_untagged_ddp(rsvdulp: bytes, mo: int, payload: bytes) -> Follower:
    """After an untagged DDP header: the RDMAP header of its opcode, or RPC-over-RDMA at the start of a Send.
    (A tagged one carries data placed at its offset.)"""
    opcode = rsvdulp[0] & 15
    if opcode in iwarp_ddp.SEND_OPS:
        return rpcrdma_version(payload) if mo == 0 else None
    return iwarp_ddp.HEADER_OF_OPCODE.get(opcode)


def rpcrdma_version(payload: bytes) -> Follower:
    """RPC-over-RDMA when the dissectors' parser reads a whole, known transport header from ``payload``."""
    if len(payload) < 16:
        return None
    version = struct.unpack_from(">I", payload, 4)[0]
    if version == 1:
        msg, err = rpcrdma.parse_v1(payload, 0, len(payload))
        return RPCRDMA_V1 if err is None and msg is not None else None
    if version == 2:
        msg, err = rpcrdma2.parse_v2(payload, 0, len(payload))
        return RPCRDMA_V2 if err is None and msg is not None else None
    return None


# --- NVMe/RDMA -------------------------------------------------------------------------------------------
# Which Sends carry NVMe/RDMA capsules cannot be told from their bytes: rdmaspy knows it from the connection
# (the CM's service ID or the MPA exchange's port, 4420 or ``--decode-as``, or a command answered by its
# completion). The libraries are told: by port where the CM or TCP shows one, by queue pair otherwise.
NVME_RDMA_PORT = nvme_rdma.NVME_RDMA_PORT


def nvme_rdma_port(serviceid: int, ports: set[int] | frozenset[int]) -> bool:
    """Whether a CM REQ's service ID is an RDMA-CM TCP port space ID of one of ``ports``."""
    got = rdma_cm.split_service_id(serviceid)
    return got is not None and got[2] in ports


def nvme_cm_record(kind: str) -> Header:
    """The NVMe/RDMA private data record of a CM (or MPA) message: "req", "rep" or "rej"."""
    return {"req": nvme_rdma.CM_REQ, "rep": nvme_rdma.CM_REP, "rej": nvme_rdma.CM_REJ}[kind]


def mpa_message_kind(key: bytes, rejected: int) -> str:
    """An MPA Request/Reply frame as a CM message: "req", "rep", or "rej" (a Reply with its R flag)."""
    if key == iwarp_mpa.KEY_REQ:
        return "req"
    return "rej" if rejected else "rep"


def nvme_capsule(payload: bytes) -> Follower:
    """A Send of an NVMe/RDMA connection: a command capsule (64 bytes or more) or a response (16 bytes);
    rdmaspy marks any other length malformed, its bytes data."""
    n = len(payload)
    if n == nvme.CQE_SIZE:
        return NVME_RESPONSE
    return NVME_COMMAND if n >= nvme.SQE_SIZE else None


def nvme_command(sqe: bytes, qid: int | None = None) -> nvme.NvmeCommand:
    """The facts of a 64-byte SQE the dissector picks declarations by; ``qid`` its queue's, None unknown."""
    u32 = struct.unpack_from("<6I", sqe, nvme.CDW10_AT)
    opcode = sqe[0]
    fabrics = opcode == nvme_names.FABRICS_OPCODE
    cmd = nvme.NvmeCommand(qid, sqe[2] | sqe[3] << 8, opcode, sqe[4] if fabrics else None,
                           0 if fabrics else struct.unpack_from("<I", sqe, 4)[0], 0, 0)
    cmd.cdw10, cmd.cdw11, cmd.cdw12, cmd.cdw13, cmd.cdw14, cmd.cdw15 = u32
    return cmd


def nvme_command_headers(cmd: nvme.NvmeCommand, sqe: bytes) -> list[Header]:
    """The declarations the dissector reads the 64-byte SQE ``sqe`` of ``cmd`` with, one after the other."""
    sgl = nvme_sgl(sqe[nvme.SGL_AT:nvme.SGL_AT + nvme.SGL_SIZE])
    if cmd.fctype is None:
        admin = nvme.is_admin(cmd)
        return [nvme.ADMIN_SQE if admin else nvme.IO_SQE, sgl, nvme._dwords(cmd, admin)]
    fctype = cmd.fctype
    if fctype == nvme.FCTYPE_CONNECT:
        return [nvme.FABRICS_SQE, nvme.CONNECT_HEAD, sgl, nvme.CONNECT]
    if fctype == nvme.FCTYPE_PROPERTY_SET:
        return [nvme.FABRICS_SQE, nvme.PROPERTY, nvme._property_header(cmd), nvme.PROPERTY_SET_TAIL]
    if fctype == nvme.FCTYPE_PROPERTY_GET:
        return [nvme.FABRICS_SQE, nvme.PROPERTY, nvme.PROPERTY_GET_TAIL]
    if fctype == nvme.FCTYPE_DISCONNECT:
        return [nvme.FABRICS_SQE, nvme.DISCONNECT]
    if fctype in (nvme.FCTYPE_AUTH_SEND, nvme.FCTYPE_AUTH_RECEIVE):
        return [nvme.FABRICS_SQE, nvme.AUTH_HEAD, sgl, nvme.AUTH]
    return [nvme.FABRICS_SQE, nvme.FABRICS_GENERIC]


def nvme_sgl(descriptor: bytes) -> Header:
    """An SGL descriptor's declaration, by its type (a keyed data block has a key and a 24-bit length)."""
    return nvme.SGL_KEYED if descriptor[15] >> 4 == nvme.SGL_KEYED_TYPE else nvme.SGL_UNKEYED


def nvme_in_capsule(cmd: nvme.NvmeCommand, sqe: bytes, data: bytes) -> list[Header]:
    """The declarations of a command's in-capsule data where SGL1 points at its start: a Last Segment's
    descriptors, or a Dataset Management command's ranges (rdmaspy shows other data as data)."""
    sgl = sqe[nvme.SGL_AT:nvme.SGL_AT + nvme.SGL_SIZE]
    kind, sub = sgl[15] >> 4, sgl[15] & 0xF
    address, length = struct.unpack_from("<QI", sgl)
    if sub != nvme.SUBTYPE_OFFSET or address != 0 or length > len(data):
        return []
    if kind in (nvme.SGL_LAST_SEGMENT, nvme.SGL_SEGMENT):
        if length % nvme.SGL_SIZE or length == 0:
            return []
        n = min(length // nvme.SGL_SIZE, nvme.MAX_SGL_LIST)
        return [nvme_sgl(data[i * nvme.SGL_SIZE:(i + 1) * nvme.SGL_SIZE]) for i in range(n)]
    if kind == nvme.SGL_DATA_TYPE and cmd.fctype is None and not nvme.is_admin(cmd) and cmd.opcode == 0x09:
        n = min((cmd.cdw10 & 0xFF) + 1, length // nvme.DSM_RANGE.size, nvme.MAX_DSM_RANGES)
        return [nvme.DSM_RANGE] * n
    return []


def nvme_completion_headers(cmd: nvme.NvmeCommand | None) -> list[Header]:
    """The declarations the dissector reads a 16-byte CQE with, for the command it completes (None: not
    known, as rdmaspy reads a completion whose command it has not seen)."""
    head = nvme._completion_dwords(cmd)
    if head is None:
        return [nvme.CQE]
    fabrics = cmd is not None and cmd.fctype is not None
    return [head, nvme.FABRICS_CQE_TAIL if fabrics else nvme.CQE_TAIL]


def nvme_plan(capsule: bytes, qid: int | None = None, command: Any = None) -> list[Header]:
    """The declarations an NVMe/RDMA capsule is read with, one after the other from its start, as the
    dissector picks them (none for a Send of another length): for a command, its SQE's and those of its
    in-capsule descriptor list or ranges, ``qid`` its queue (None: unknown); for a response, its CQE's,
    ``command`` the command it completes (an ``nvme.NvmeCommand``, or its SQE bytes; None: unknown)."""
    kind = nvme_capsule(capsule)
    if kind == NVME_RESPONSE:
        cmd = command if isinstance(command, nvme.NvmeCommand) else None
        if command is not None and cmd is None:
            sqe = bytes(command)[:nvme.SQE_SIZE]
            cmd = nvme_command(sqe, qid) if len(sqe) == nvme.SQE_SIZE else None
        return nvme_completion_headers(cmd)
    if kind == NVME_COMMAND:
        sqe = capsule[:nvme.SQE_SIZE]
        cmd = nvme_command(sqe, qid)
        return [*nvme_command_headers(cmd, sqe), *nvme_in_capsule(cmd, sqe, capsule[nvme.SQE_SIZE:])]
    return []
