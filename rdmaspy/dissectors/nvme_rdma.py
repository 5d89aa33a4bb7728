"""NVMe over Fabrics on RDMA: the RDMA transport binding (NVMe over Fabrics 1.1 §7.3; Linux nvme-rdma.h).

Reached three ways.  By the RDMA-CM port of the connection (4420, the IANA NVM Express port; others with
``--decode-as PORT=nvme-rdma``), on InfiniBand and RoCE (the CM's service ID) and on iWARP (the TCP port of
the MPA exchange); there the CM private data is read too: the host's REQ (record format, QID, host receive
and send queue sizes, controller ID), the controller's REP (controller receive queue size) and a REJ's
status.  And without the CM: a connection whose SENDs have the shape of NVMe capsules, a 64-byte command
answered by a 16-byte completion with the same CID, is recognised from that pair on (an expert note says
so), whatever its port.

Every SEND (also SEND First..Last, reassembled below) is a capsule: 64 bytes or more from the host is a
command capsule (the SQE, then any in-capsule data, which SGL1's offset descriptor points into), exactly 16
bytes from the controller a response capsule (the CQE, by Send or by Send with Invalidate).  The commands
wait on their queue by CID for their completion, which is decoded by its command.  The data of an Identify
or Get Log Page moves by RDMA WRITE into the host's keyed SGL, a Connect's data on the admin queue by RDMA
READ of it: those are followed (``rdma_reassembly.want_data``) and decoded in the packet that completes
them (``nvme_data``).  The RDMA operations that move I/O data are left to the analysis, which has every
command's SGLs in the ``nvme.commands`` note.
"""
from __future__ import annotations

from .. import conversation
from ..conversation import Connection
from ..fields import F, Field, Header, declaring, protocol
from ..packet import Layer, Note, Packet
from ..registry import Dissector, declare_ulp, table
from ..rules import declare
from ..session import Session, wants_info
from ..typenames import Any, Final, mypyc_attr
from . import nvme, nvme_data, rdma_reassembly
from . import nvme_names as N
from .data import add_data_layer
from .iwarp_ddp import IWARP
from .nvme import NvmeCommand, NvmeCompletion, NvmeQueue

declaring(__name__)
protocol("nvme-rdma", "NVM Express Fabrics RDMA")
protocol("nvme-rdma.cm", "NVMe/RDMA CM private data")
protocol("nvme.icd", "In-capsule data")

NVME_RDMA_PORT: Final = 4420
ULP: Final = "nvme-rdma"          # the upper layer's name (Connection.ulp, --decode-as)
REJ_STATUS: Final = {1: "Invalid private data length", 2: "Invalid record format", 3: "Invalid queue ID",
                     4: "Invalid host send queue size", 5: "Invalid host receive queue size",
                     6: "No resources (controller)", 7: "Invalid IRD", 8: "Invalid ORD", 9: "Invalid controller ID"}

# --- the CM private data (NVMe over Fabrics 1.1 §7.3.2, nvme_rdma_cm_req/rep/rej) ---------------------------
CM_REQ: Final = Header("nvme-rdma.cm.req", "NVMe/RDMA CM Request private data", [
    F("recfmt", 16, "Record Format"), F("qid", 16, "Queue Id"),
    F("hrqsize", 16, "RDMA QP Host Receive Queue Size"), F("hsqsize", 16, "RDMA QP Host Send Queue Size (0's based)"),
    F("cntlid", 16, "Controller ID", "hex"), F("reserved", 176, "Reserved", "bytes"),
], little=True)
CM_REP: Final = Header("nvme-rdma.cm.rsp", "NVMe/RDMA CM Reply private data", [
    F("recfmt", 16, "Record Format"), F("crqsize", 16, "RDMA QP Controller Receive Queue Size"),
    F("reserved", 224, "Reserved", "bytes"),
], little=True)
CM_REJ: Final = Header("nvme-rdma.cm.rej", "NVMe/RDMA CM Reject private data", [
    F("recfmt", 16, "Record Format"), F("status", 16, "Status", "hex", REJ_STATUS),
], little=True)
CM_SHORT: Final = Field("nvme-rdma.cm.short", 0, "Private data shorter than the NVMe/RDMA record", "bool")

QID: Final = Field("nvme-rdma.cmd.qid", 16, "Queue ID")
CAPSULE: Final = Field("nvme-rdma.capsule", 0, "Capsule", "str")
CAPSULE_LEN: Final = Field("nvme-rdma.capsule_len", 0, "Capsule length", unit="bytes")
INVALIDATE: Final = Field("nvme-rdma.invalidate_key", 32, "Key invalidated (Send with Invalidate)", "hex")
RECOGNISED: Final = Field("nvme-rdma.recognised", 0, "Recognised by", "str")
COPY_OF: Final = Field("nvme-rdma.retransmission_of", 0, "Copy of the capsule in frame (sent again)")


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class NvmeRdmaCm(conversation.UlpSetup):
    """What one CM message's NVMe/RDMA private data says (``kind``: "req", "rep" or "rej")."""

    __slots__ = ("kind", "recfmt", "qid", "hrqsize", "hsqsize", "cntlid", "crqsize", "status", "short")

    def __init__(self, kind: str, recfmt: int) -> None:
        super().__init__(ULP)
        self.kind = kind
        self.recfmt = recfmt
        self.qid: int | None = None
        self.hrqsize: int | None = None
        self.hsqsize: int | None = None      # 0's based
        self.cntlid: int | None = None
        self.crqsize: int | None = None
        self.status: int | None = None
        self.short = False

    def __repr__(self) -> str:
        return f"<NvmeRdmaCm {self.kind} qid={self.qid} hsqsize={self.hsqsize} crqsize={self.crqsize}>"


NVME_RDMA_CM: Final[Note[NvmeRdmaCm]] = Note("nvme-rdma.cm")

RULE_CM: Final = "NVMe over Fabrics 1.1 §7.3.2 (RDMA_CM_REQUEST/REPLY/REJECT private data)"
RULE_CAPSULE: Final = "NVMe over Fabrics 1.1 §7.3.1 (command capsules of 64 bytes and more, responses of 16)"
CID_REUSED: Final = declare(
    "nvme.cid_reused", "warning", "protocol",
    "CID 0x{cid:04x} reused on queue {qid} while its command (frame {frame}) is still outstanding",
    "NVMe Base 2.0 §3.3.1 (a CID is unique among a queue's outstanding commands)")
SHAPE_RECOGNISED: Final = declare(
    "nvme-rdma.recognised", "note", "protocol",
    "NVMe/RDMA recognised on this connection from its capsules (command in frame {frame}, completion with "
    "the same CID): no CM exchange names it",
    "NVMe over Fabrics 1.1 §7.3.1 (64-byte commands, 16-byte completions)")


def _message_kind(pkt: Packet) -> str | None:
    """Which CM or MPA message the private data at hand is in: "req", "rep" or "rej"; None for the others
    (an RTU's, a DREQ's private data has no NVMe/RDMA record)."""
    layers = pkt.made_layers()
    if not layers:
        return None
    lay = layers[-1]
    proto = lay.proto
    if proto == "cm.req":
        return "req"
    if proto == "cm.rep":
        return "rep"
    if proto == "cm.rej":
        return "rej"
    if proto == "mpa" and lay.off + 17 <= len(lay.buf):
        key = bytes(lay.buf[lay.off:lay.off + 16])
        if key.endswith(b"Req Frame"):
            return "req"
        if key.endswith(b"Rep Frame"):
            return "rej" if lay.buf[lay.off + 16] & 0x20 else "rep"
    return None


def dissect_cm_private(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    """``cm.private_data`` of the NVMe/RDMA port: the record of the message it is in."""
    kind = _message_kind(pkt)
    if kind is None:
        return
    hdr = CM_REQ if kind == "req" else CM_REP if kind == "rep" else CM_REJ
    n = end - off
    if n < 4:
        pkt.add_expert("warning", "malformed", f"NVMe/RDMA CM private data of {n} bytes (a record is "
                       f"{hdr.size})", RULE_CM)
        return
    facts = NvmeRdmaCm(kind, buf[off] | buf[off + 1] << 8)
    if n < hdr.size:
        # a REQ or REP cut short still names its first fields (Linux always sends the whole record)
        lay = pkt.add_layer("nvme-rdma.cm", None, buf, off, n, f"{hdr.label} (short: {n} of {hdr.size} bytes)")
        lay.add(CM_SHORT, True, off, n)
        facts.short = True
        pkt.add_expert("warning", "malformed", f"NVMe/RDMA CM {kind.upper()} private data of {n} bytes, short of "
                       f"the {hdr.size}-byte record", RULE_CM)
        vals = [buf[off + i] | buf[off + i + 1] << 8 for i in range(0, n - 1, 2)]
        for f, v, i in zip(hdr.fields, vals, range(0, n - 1, 2)):
            if f.display != "bytes":
                lay.add(f, v, off + i, 2)
    else:
        lay = pkt.add_layer("nvme-rdma.cm", hdr, buf, off, hdr.size, hdr.label)
        vals = list(lay.values)
    if kind == "req":
        have = vals + [None] * (5 - len(vals))
        facts.qid, facts.hrqsize, facts.hsqsize, facts.cntlid = have[1], have[2], have[3], have[4]
        info = f"NVMe/RDMA QID {facts.qid} HSQSIZE {(facts.hsqsize or 0) + 1} HRQSIZE {facts.hrqsize}"
    elif kind == "rep":
        if len(vals) >= 2:
            facts.crqsize = vals[1]
        info = f"NVMe/RDMA CRQSIZE {facts.crqsize}"
    else:
        facts.status = vals[1] if len(vals) >= 2 else None
        name = REJ_STATUS.get(facts.status or 0, "reserved")
        info = f"NVMe/RDMA reject status {facts.status} ({name})"
        pkt.add_expert("note", "protocol", f"NVMe/RDMA connection rejected: {name}", RULE_CM)
    if facts.recfmt != 0:
        pkt.add_expert("warning", "protocol", f"NVMe/RDMA CM record format {facts.recfmt} (only 0 is defined)",
                       RULE_CM)
    pkt.add_info(info)
    pkt.note(NVME_RDMA_CM, facts)
    pkt.note(conversation.ULP_PDATA, facts)


# --- capsules ----------------------------------------------------------------------------------------------
_RECENT_SHAPES: Final = 64        # candidate commands remembered per connection not yet recognised
_SHAPE_CONNS: Final = 1024        # connections with candidates at once


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _Binding:
    """The NVMe/RDMA state of a capture: per connection, whether it carries NVMe, and on connections not
    yet recognised the recent command-shaped SENDs (CID -> (frame, SQE bytes)), bounded."""

    __slots__ = ("recognised", "candidates")

    def __init__(self) -> None:
        self.recognised: dict[tuple, str] = {}        # queue key -> how it was recognised ("shape")
        self.candidates: dict[tuple, dict[int, tuple[int, bytes, int]]] = {}


def _binding(ctx: Any) -> _Binding:
    if not isinstance(ctx, Session):
        return _Binding()
    b: _Binding | None = ctx.state.get("nvme-rdma")
    if b is None:
        b = ctx.state["nvme-rdma"] = _Binding()
    return b


def _queue_key(pkt: Packet) -> tuple:
    """The key of the queue a capsule travels on: its connection, else (iWARP without the MPA exchange)
    its TCP connection's two endpoints, else its two hosts."""
    conv: Connection | None = pkt.conv
    if conv is not None:
        return ("conn", conv.conn_id)
    infos = pkt.noted(IWARP)
    if infos:
        mpa = infos[-1].conn             # the MPA connection the DDP stream belongs to (iwarp_mpa.MpaConn)
        one: tuple[str, int] | None = getattr(mpa, "initiator", None)
        other: tuple[str, int] | None = getattr(mpa, "responder", None)
        if one is not None and other is not None:
            return ("tcp", one, other) if one <= other else ("tcp", other, one)
    a, b = (pkt.src, pkt.dst) if pkt.src <= pkt.dst else (pkt.dst, pkt.src)
    return ("hosts", a, b)


def _queue(pkt: Packet, ctx: Any) -> NvmeQueue:
    q = nvme.state_of(ctx).queue(_queue_key(pkt))
    conv: Connection | None = pkt.conv
    if q.qid is None and conv is not None:
        req = conv.ulp_client
        if isinstance(req, NvmeRdmaCm) and req.qid is not None:
            q.learn_qid(req.qid, "cm")
            q.hsqsize, q.hrqsize = req.hsqsize, req.hrqsize
        rep = conv.ulp_server
        if isinstance(rep, NvmeRdmaCm) and rep.crqsize is not None:
            q.crqsize = rep.crqsize
    return q


def _invalidated(pkt: Packet) -> int | None:
    """The key a Send with Invalidate invalidates (InfiniBand's IETH, iWARP's Invalidate STag)."""
    ib = pkt.ib
    if ib is not None:
        return ib.ieth
    infos = pkt.noted(IWARP)
    if infos:
        return infos[-1].inv_stag
    return None


def dissect_capsule(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    """One Send message of an NVMe/RDMA connection: a command capsule or a response capsule."""
    n = end - off
    conv: Connection | None = pkt.conv
    if conv is not None and conv.ulp is None:
        conv.ulp = ULP
    if n == nvme.CQE_SIZE:
        _response(pkt, buf, off, ctx)
    elif n >= nvme.SQE_SIZE:
        _command(pkt, buf, off, end, ctx)
    else:
        lay = pkt.add_layer("nvme-rdma", None, buf, off, n, "NVM Express Fabrics RDMA")
        lay.add(CAPSULE_LEN, n, off, n)
        add_data_layer(pkt, buf, off, end)
        pkt.set_malformed(f"nvme-rdma: a Send of {n} bytes is neither a command capsule (64 bytes or more) nor a "
                          "response capsule (16 bytes)")
        pkt.proto = "NVMe"


def _rdma_layer(pkt: Packet, buf: bytes, off: int, end: int, kind: str, q: NvmeQueue) -> Layer:
    lay = pkt.add_layer("nvme-rdma", None, buf, off, end - off, "NVM Express Fabrics RDMA")
    lay.add(CAPSULE, kind, off, end - off)
    lay.add(CAPSULE_LEN, end - off, off, end - off)
    if q.qid is not None:
        lay.add(QID, q.qid, -1, 0)
    return lay


def _seq(pkt: Packet) -> int | None:
    """The transport's sequence number of the Send at hand (InfiniBand's PSN, iWARP's MSN): a copy of a
    capsule the transport sent again has the same."""
    ib = pkt.ib
    if ib is not None:
        return ib.psn
    infos = pkt.noted(IWARP)
    if infos:
        return infos[-1].msn
    return None


def _command(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> NvmeCommand:
    q = _queue(pkt, ctx)
    rdma = _rdma_layer(pkt, buf, off, end, "command", q)
    cmd = nvme.dissect_command(pkt, buf, off, end, q)
    cmd.seq = _seq(pkt)
    frames = pkt.noted(rdma_reassembly.SEND_FRAMES)
    if frames is not None:
        cmd.frames = list(frames)
    copy = q.copy_of(cmd.cid, cmd.seq)
    if copy is not None:
        # the transport sent the capsule again (its retransmission is the transport analysis' to explain)
        cmd.retransmission_of = copy.frame
        rdma.add(COPY_OF, copy.frame, -1, 0)
        if wants_info(ctx):
            pkt.add_info(f"{nvme.command_info(cmd)} [copy of frame {copy.frame}]")
        _note(pkt, nvme.NVME_COMMANDS, cmd)
        return cmd
    if cmd.connect is not None:
        q.learn_qid(cmd.connect.qid, "connect")
        q.sqsize, q.kato = cmd.connect.sqsize, cmd.connect.kato
        if cmd.qid is None:
            cmd.qid = cmd.connect.qid
            rdma.add(QID, cmd.qid, -1, 0)
    lay = pkt.made_layers()[-1]
    if wants_info(ctx):
        pkt.add_info(nvme.command_info(cmd))
    _in_capsule(pkt, lay, buf, off, end, cmd)
    old = q.submit(cmd)
    if old is not None:
        pkt.add_finding(CID_REUSED, cid=cmd.cid, qid=q.qid if q.qid is not None else "?", frame=old.frame)
    if nvme_data.wants_data(cmd):
        _want(pkt, ctx, cmd)
    _note(pkt, nvme.NVME_COMMANDS, cmd)
    return cmd


def _in_capsule(pkt: Packet, lay: Layer, buf: bytes, off: int, end: int, cmd: NvmeCommand) -> None:
    """The data in a command capsule after its SQE: where SGL1 says (an offset descriptor), or the descriptor
    list of a Last Segment; anything else there is said to be unexpected."""
    icd = end - off - nvme.SQE_SIZE
    if not cmd.sgls:
        if icd:
            add_data_layer(pkt, buf, off + nvme.SQE_SIZE, end)
        return
    first = cmd.sgls[0]
    if first.type in (nvme.SGL_LAST_SEGMENT, nvme.SGL_SEGMENT):
        nvme.in_capsule_sgls(pkt, lay, buf, off, end, cmd)
        return
    if not first.in_capsule:
        if icd:
            pkt.add_expert("warning", "protocol", f"{icd} bytes after the SQE, but SGL1 does not point into the "
                           "capsule", RULE_CAPSULE)
            add_data_layer(pkt, buf, off + nvme.SQE_SIZE, end)
        return
    start = off + nvme.SQE_SIZE + first.address
    if first.address > icd or first.length > icd - first.address:
        pkt.set_malformed(f"nvme: in-capsule SGL at offset {first.address} for {first.length} bytes runs past the "
                          f"{icd} bytes of data in the capsule")
        if icd:
            add_data_layer(pkt, buf, off + nvme.SQE_SIZE, end)
        return
    cmd.icd = first.length
    stop = start + first.length
    data = lay.child("nvme.icd", None, start, first.length, f"In-capsule data ({first.length} bytes)")
    data.add(nvme.ICD_LEN, first.length, start, first.length)
    if cmd.fctype == nvme.FCTYPE_CONNECT or (cmd.fctype is None and nvme_data.wants_data(cmd)):
        nvme_data.show_data(pkt, cmd, bytes(buf[start:stop]), [pkt.frame.num], "in the capsule")
    elif cmd.fctype is None and not nvme.is_admin(cmd) and cmd.opcode == 0x09:
        nvme.show_dsm_ranges(pkt, data, buf, start, stop, cmd)
    elif stop > start:
        add_data_layer(pkt, buf, start, stop)



@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class _DataOf(rdma_reassembly.DataDone):
    """Shows a command's data when the RDMA operations that move it have put all of it together."""

    __slots__ = ("cmd", "how")

    def __init__(self, cmd: NvmeCommand, how: str) -> None:
        self.cmd = cmd
        self.how = how

    def done(self, pkt: Packet, ctx: Session, data: bytes, frames: list[int]) -> None:
        nvme_data.show_data(pkt, self.cmd, data, frames, self.how)


def _want(pkt: Packet, ctx: Any, cmd: NvmeCommand) -> None:
    """Follow the keyed SGL of a command whose data is a structure shown: the controller writes it into
    the host's buffer (Identify, log pages) or reads it from there (Connect data)."""
    if not isinstance(ctx, Session) or len(cmd.sgls) != 1 or not cmd.sgls[0].keyed:
        return
    sgl = cmd.sgls[0]
    key = sgl.key
    if key is None:
        return
    how = "RDMA READ" if cmd.fctype is not None else "RDMA WRITE"
    if pkt.ib is None:
        how = "RDMAP Read" if cmd.fctype is not None else "RDMAP Write"
    rdma_reassembly.want_data(ctx, pkt.src, pkt.dst, key, sgl.address, sgl.length, _DataOf(cmd, how))


def _response(pkt: Packet, buf: bytes, off: int, ctx: Any) -> NvmeCompletion:
    q = _queue(pkt, ctx)
    cid = buf[off + 12] | buf[off + 13] << 8
    if q.qid is None:
        q.learn_qid(buf[off + 10] | buf[off + 11] << 8, "completion")
    seq = _seq(pkt)
    cmd = q.complete(cid)
    copy_of: int | None = None
    if cmd is None:
        done = q.recent.get(cid)
        first = done.completion if done is not None else None
        if first is not None and seq is not None and first.seq == seq:
            cmd, copy_of = done, first.frame          # the completion sent again
    rdma = _rdma_layer(pkt, buf, off, off + nvme.CQE_SIZE, "response", q)
    inv = _invalidated(pkt)
    if inv is not None:
        rdma.add(INVALIDATE, inv, -1, 0)
    cqe = nvme.dissect_completion(pkt, buf, off, q, cmd)
    cqe.invalidated = inv
    cqe.seq = seq
    if copy_of is not None:
        cqe.retransmission_of = copy_of
        rdma.add(COPY_OF, copy_of, -1, 0)
    elif cmd is not None:
        cmd.completion = cqe
        if cmd.connect is not None and cmd.fctype == nvme.FCTYPE_CONNECT and cqe.ok:
            q.cntlid = cqe.dw0 & 0xFFFF
    _note(pkt, nvme.NVME_COMPLETIONS, cqe)
    if wants_info(ctx):
        pkt.add_info(nvme.completion_info(cqe) + (f" [copy of frame {copy_of}]" if copy_of is not None else ""))
    if cmd is not None and copy_of is None and isinstance(ctx, Session):
        _data_left(pkt, ctx, cmd)
    return cqe


def _data_left(pkt: Packet, ctx: Session, cmd: NvmeCommand) -> None:
    """The command ends: a structure whose data came only in part is shown with what came."""
    if not nvme_data.wants_data(cmd) or len(cmd.sgls) != 1 or cmd.sgls[0].key is None:
        return
    key = cmd.sgls[0].key
    assert key is not None
    got = rdma_reassembly.take_data(ctx, pkt.dst, pkt.src, key)
    if got is not None:
        data, frames = got
        nvme_data.show_data(pkt, cmd, data, frames, "in part")


def _note(pkt: Packet, key: Note[list[Any]], value: Any) -> None:
    got = pkt.noted(key)
    if got is None:
        pkt.note(key, [value])
    else:
        got.append(value)


# --- recognition without the CM ------------------------------------------------------------------------------
_ADMIN_IO: Final = frozenset(N.ADMIN_OPCODES) | frozenset(N.IO_OPCODES)


def _command_shaped(buf: bytes, off: int, end: int) -> bool:
    """A SEND that can be a command capsule: a known opcode, SGLs for data (PSDT 01b or 10b, the reserved
    flag bits clear), and SGL1 a descriptor the RDMA binding uses: a keyed data block (sub type Address or
    Invalidate; an all-zero one for no data), or an offset into in-capsule data that is there."""
    if buf[off] not in _ADMIN_IO:
        return False
    flags = buf[off + 1]
    if flags & 0x3C or (flags >> 6) not in (1, 2):
        return False
    ident = buf[off + 39]
    kind, sub = ident >> 4, ident & 0xF
    if kind == nvme.SGL_KEYED_TYPE:
        return sub in (nvme.SUBTYPE_INVALIDATE, 0)
    if kind in (nvme.SGL_DATA_TYPE, nvme.SGL_LAST_SEGMENT):
        return sub == nvme.SUBTYPE_OFFSET and end - off > nvme.SQE_SIZE
    return False


def heuristic(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
    """``ib.payload`` / ``rdmacm.port`` heuristic: the SENDs of a connection recognised as NVMe/RDMA, and the
    completion that recognises one (a command-shaped SEND answered by a 16-byte SEND with its CID)."""
    n = end - off
    if n != nvme.CQE_SIZE and n < nvme.SQE_SIZE:
        return False
    if n > nvme.CQE_SIZE and not _command_shaped(buf, off, end):
        return False           # most SENDs of other traffic stop here, before any look-up
    b = _binding(ctx)
    if not b.recognised and not b.candidates and n == nvme.CQE_SIZE:
        return False
    qkey = _queue_key(pkt)
    if qkey in b.recognised:
        dissect_capsule(pkt, buf, off, end, ctx)
        return True
    if n > nvme.CQE_SIZE:
        seen = b.candidates.get(qkey)
        if seen is None:
            if len(b.candidates) >= _SHAPE_CONNS:
                del b.candidates[next(iter(b.candidates))]
            seen = b.candidates[qkey] = {}
        cid = buf[off + 2] | buf[off + 3] << 8
        if cid in seen:
            del seen[cid]
        seen[cid] = (pkt.frame.num, bytes(buf[off:off + nvme.SQE_SIZE]), pkt.frame.ts)
        if len(seen) > _RECENT_SHAPES:
            del seen[next(iter(seen))]
        return False
    seen = b.candidates.get(qkey)
    if not seen:
        return False
    got = seen.get(buf[off + 12] | buf[off + 13] << 8)
    if got is None:
        return False
    # recognised: from now on every SEND of the connection is a capsule
    del b.candidates[qkey]
    if len(b.recognised) >= nvme.MAX_QUEUES:
        del b.recognised[next(iter(b.recognised))]
    b.recognised[qkey] = "shape"
    _resubmit(pkt, ctx, got, buf[off + 10] | buf[off + 11] << 8)
    pkt.add_finding(SHAPE_RECOGNISED, frame=got[0])
    dissect_capsule(pkt, buf, off, end, ctx)
    lay = pkt.layer("nvme-rdma")
    if lay is not None:
        lay.add(RECOGNISED, "capsule shapes (no CM exchange)", -1, 0)
    return True


def _resubmit(pkt: Packet, ctx: Any, got: tuple[int, bytes, int], sqid: int) -> None:
    """The command the recognising completion answers, seen (and shown as plain data) before: its facts,
    on its queue, so that the completion reads as its command's."""
    frame, sqe, ts = got
    q = _queue(pkt, ctx)
    q.learn_qid(sqid, "completion")
    fabrics = sqe[0] == N.FABRICS_OPCODE
    cmd = NvmeCommand(q.qid, sqe[2] | sqe[3] << 8, sqe[0], sqe[4] if fabrics else None,
                      0 if fabrics else int.from_bytes(sqe[4:8], "little"), frame, ts)
    cmd.cdw10 = int.from_bytes(sqe[40:44], "little")
    cmd.cdw11 = int.from_bytes(sqe[44:48], "little")
    cmd.cdw12 = int.from_bytes(sqe[48:52], "little")
    cmd.name = nvme.command_name(cmd)
    cmd.sgls.append(nvme.read_sgl(sqe, nvme.SGL_AT))
    q.submit(cmd)


# --- binding ------------------------------------------------------------------------------------------------
class _Capsule(Dissector):
    """The Sends of an NVMe/RDMA connection, by its port (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        dissect_capsule(pkt, buf, off, end, ctx)
        return True


class _Recognise(Dissector):
    """The capsule-shape heuristic (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        return heuristic(pkt, buf, off, end, ctx)


CAPSULES: Final = _Capsule(dissect_capsule)
CM_PRIVATE: Final = Dissector(dissect_cm_private)
table("rdmacm.port").register(NVME_RDMA_PORT, CAPSULES)
table("cm.private_data").register(NVME_RDMA_PORT, CM_PRIVATE)
table("ib.payload").add_heuristic("nvme-rdma", _Recognise(heuristic))
table("rdmacm.port").add_heuristic("nvme-rdma", _Recognise(heuristic))
declare_ulp(ULP, [("rdmacm.port", CAPSULES), ("cm.private_data", CM_PRIVATE)])
