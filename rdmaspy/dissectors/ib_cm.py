"""The InfiniBand Communication Manager (IBTA chapter 12): management class 0x07.

Every CM message is one 232-byte attribute after the MAD common header: REQ,
MRA, REJ, REP, RTU, DREQ, DREP, SIDR_REQ, SIDR_REP, LAP, APR and ClassPortInfo.
Each registers into ``cm.attribute``.  The private data at the end of a message
goes to rdma_cm (the RDMA IP CM service, then consumers by port), and the
connection tracker (rdmaspy.conversation) learns QPNs, PSNs and states here.
"""
from __future__ import annotations

from .. import conversation
from ..fields import F, Field, Header, declaring
from ..packet import Layer, Packet
from ..registry import Dissector, DissectorTable, table
from ..typenames import Any, Final
from . import mad as _mad
from .mad import byte_offset, field_at, span_bytes, u64_at
from . import rdma_cm
from .infiniband import fmt_gid
from .rpcrdma_pdata import RPCRDMA_PDATA, RpcRdmaPdata

declaring(__name__)

ATTRIBUTES: Final = {
    0x0001: "ClassPortInfo", 0x0010: "ConnectRequest", 0x0011: "MsgRcptAck", 0x0012: "ConnectReject",
    0x0013: "ConnectReply", 0x0014: "ReadyToUse", 0x0015: "DisconnectRequest", 0x0016: "DisconnectReply",
    0x0017: "ServiceIDResReq", 0x0018: "ServiceIDResReqResp", 0x0019: "LoadAlternatePath",
    0x001A: "AlternatePathResponse",
}
TRANSPORT_SERVICE = {0: "RC", 1: "UC", 2: "RD", 3: "Reserved"}
MTU_CODES = {1: "256", 2: "512", 3: "1024", 4: "2048", 5: "4096"}
MTU_BYTES: Final = {1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}
MESSAGE_REJECTED: Final = {0: "REQ", 1: "REP", 2: "No message", 3: "Reserved"}
MESSAGE_MRAED: Final = {0: "REQ", 1: "REP", 2: "LAP", 3: "Reserved"}
REJ_REASONS: Final = {
    1: "No QP available", 2: "No EEC available", 3: "No resources available", 4: "Timeout",
    5: "Unsupported request", 6: "Invalid Communication ID", 7: "Invalid Communication Instance",
    8: "Invalid Service ID", 9: "Invalid Transport Service Type", 10: "Stale connection",
    11: "RDC does not exist", 12: "Primary Remote Port GID rejected", 13: "Primary Remote Port LID rejected",
    14: "Invalid Primary SL", 15: "Invalid Primary Traffic Class", 16: "Invalid Primary Hop Limit",
    17: "Invalid Primary Packet Rate", 18: "Alternate Remote Port GID rejected",
    19: "Alternate Remote Port LID rejected", 20: "Invalid Alternate SL", 21: "Invalid Alternate Traffic Class",
    22: "Invalid Alternate Hop Limit", 23: "Invalid Alternate Packet Rate", 24: "Port and CM Redirection",
    25: "Port Redirection", 26: "Invalid Path MTU", 27: "Insufficient Responder Resources",
    28: "Consumer Reject", 29: "Invalid RNR NAK Retry Count", 30: "Duplicate Local Comm ID",
    31: "Unsupported Class Version", 32: "Invalid Primary Flow Label", 33: "Invalid Alternate Flow Label",
    35: "Vendor Option Not Supported",
}
SIDR_STATUS: Final = {0: "Valid QPN", 1: "Service ID not supported", 2: "Rejected by the service provider",
               3: "No QP available", 4: "Redirect", 5: "Unsupported class version"}
APR_STATUS: Final = {0: "Alternate path loaded", 1: "Invalid Communication ID", 2: "Option not supported",
              3: "Rejected", 4: "Redirect", 5: "Same as the current path", 6: "Invalid QPN/EECN",
              7: "Invalid alternate LID", 8: "Invalid alternate GID", 9: "Invalid alternate flow label",
              10: "Invalid alternate traffic class", 11: "Invalid alternate hop limit",
              12: "Invalid alternate packet rate", 13: "Invalid alternate SL"}


def _path(prefix: str, who: str) -> list[Field]:
    """The 44 bytes of a path in a REQ (primary or alternate)."""
    fields = [
        F(f"{prefix}_locallid", 16, "Local Port LID"),
        F(f"{prefix}_remotelid", 16, "Remote Port LID"),
        F(f"{prefix}_localgid", 128, "Local Port GID", "gid"),
        F(f"{prefix}_remotegid", 128, "Remote Port GID", "gid"),
        F(f"{prefix}_flowlabel", 20, "Flow Label", "hex"),
        F(f"{prefix}_reserved0", 6, "Reserved", "hex"),
        F(f"{prefix}_pktrate", 6, "Packet Rate", "hex"),
        F(f"{prefix}_tfcclass", 8, "Traffic Class", "hex"),
        F(f"{prefix}_hoplim", 8, "Hop Limit", "hex"),
        F(f"{prefix}_sl", 4, "SL", "hex"),
        F(f"{prefix}_subnetlocal", 1, "Subnet Local", "hex"),
        F(f"{prefix}_reserved1", 3, "Reserved", "hex"),
        F(f"{prefix}_localacktout", 5, "Local ACK Timeout", "hex"),
    ]
    for f in fields:
        if not f.label.startswith("Reserved"):
            f.label = f"{who} {f.label}"
    return fields


REQ: Final = Header("cm.req", "CM ConnectRequest", [
    F("localcommid", 32, "Local Communication ID", "hex"),
    F("reserved", 32, "Reserved", "hex"),
    F("serviceid", 64, "ServiceID", "hex"),
    F("localcaguid", 64, "Local CA GUID", "hex"),
    F("reserved2", 32, "Reserved", "hex"),
    F("localqkey", 32, "Local Q_Key", "hex"),
    F("localqpn", 24, "Local QPN", "hex"),
    F("responderres", 8, "Responder Resources", "hex"),
    F("localeecn", 24, "Local EECN", "hex"),
    F("initdepth", 8, "Initiator Depth", "hex"),
    F("remoteeecn", 24, "Remote EECN", "hex"),
    F("remoteresptout", 5, "Remote CM Response Timeout", "hex"),
    F("transpsvctype", 2, "Transport Service Type", "hex", TRANSPORT_SERVICE),
    F("e2eflowctrl", 1, "End-to-End Flow Control", "hex"),
    F("startpsn", 24, "Starting PSN", "hex"),
    F("localresptout", 5, "Local CM Response Timeout", "hex"),
    F("retrcount", 3, "Retry Count", "hex"),
    F("pkey", 16, "Partition Key", "hex"),
    F("pppmtu", 4, "Path Packet Payload MTU", "hex", MTU_CODES),
    F("rdcexist", 1, "RDC Exists", "hex"),
    F("rnrretrcount", 3, "RNR Retry Count", "hex"),
    F("maxcmretr", 4, "Max CM Retries", "hex"),
    F("srq", 1, "SRQ", "hex"),
    F("ext_transport", 3, "Extended Transport", "hex"),
    *_path("prim", "Primary"),
    F("prim_reserved2", 3, "Reserved", "hex"),
    *_path("alt", "Alternate"),
    F("sap_supported", 1, "SAP Supported", "hex"),
    F("alt_reserved2", 2, "Reserved", "hex"),
])
REQ_PRIVATE: Final = Field("cm.req.private", 0, "PrivateData", "bytes")

MRA: Final = Header("cm.mra", "CM MsgRcptAck", [
    F("localcommid", 32, "Local Communication ID", "hex"),
    F("remotecommid", 32, "Remote Communication ID", "hex"),
    F("msgmraed", 2, "Message MRAed", "hex", MESSAGE_MRAED),
    F("reserved0", 6, "Reserved", "hex"),
    F("servicetimeout", 5, "Service Timeout", "hex"),
    F("reserved1", 3, "Reserved", "hex"),
])
MRA_PRIVATE: Final = Field("cm.mra.private", 0, "PrivateData", "bytes")

REJ: Final = Header("cm.rej", "CM ConnectReject", [
    F("localcommid", 32, "Local Communication ID", "hex"),
    F("remotecommid", 32, "Remote Communication ID", "hex"),
    F("msgrej", 2, "Message REJected", "hex", MESSAGE_REJECTED),
    F("reserved0", 6, "Reserved", "hex"),
    F("rejinfolen", 7, "Reject Info Length", "hex"),
    F("reserved1", 1, "Reserved", "hex"),
    F("reason", 16, "Reason", "hex", REJ_REASONS),
    F("ari", 576, "Additional Reject Information (ARI)", "bytes"),
])
REJ_PRIVATE: Final = Field("cm.rej.private", 0, "PrivateData", "bytes")

REP: Final = Header("cm.rep", "CM ConnectReply", [
    F("localcommid", 32, "Local Communication ID", "hex"),
    F("remotecommid", 32, "Remote Communication ID", "hex"),
    F("localqkey", 32, "Local Q_Key", "hex"),
    F("localqpn", 24, "Local QPN", "hex"),
    F("vendorid_h", 8, "Vendor ID (high byte)", "hex"),
    F("localeecn", 24, "Local EE Context Number", "hex"),
    F("vendorid_m", 8, "Vendor ID (middle byte)", "hex"),
    F("startpsn", 24, "Starting PSN", "hex"),
    F("vendorid_l", 8, "Vendor ID (low byte)", "hex"),
    F("respres", 8, "Responder Resources", "hex"),
    F("initdepth", 8, "Initiator Depth", "hex"),
    F("tgtackdelay", 5, "Target ACK Delay", "hex"),
    F("failoveracc", 2, "Failover Accepted", "hex"),
    F("e2eflowctrl", 1, "End-To-End Flow Control", "hex"),
    F("rnrretrcount", 3, "RNR Retry Count", "hex"),
    F("srq", 1, "SRQ", "hex"),
    F("reserved", 4, "Reserved", "hex"),
    F("localcaguid", 64, "Local CA GUID", "hex"),
])
REP_PRIVATE: Final = Field("cm.rep.private", 0, "PrivateData", "bytes")

RTU: Final = Header("cm.rtu", "CM ReadyToUse", [
    F("localcommid", 32, "Local Communication ID", "hex"),
    F("remotecommid", 32, "Remote Communication ID", "hex"),
])
RTU_PRIVATE: Final = Field("cm.rtu.private", 0, "PrivateData", "bytes")

DREQ: Final = Header("cm.dreq", "CM DisconnectRequest", [
    F("localcommid", 32, "Local Communication ID", "hex"),
    F("remotecommid", 32, "Remote Communication ID", "hex"),
    F("remoteqpneecn", 24, "Remote QPN/EECN", "hex"),
    F("reserved", 8, "Reserved", "hex"),
])
DREQ_PRIVATE: Final = Field("cm.dreq.private", 0, "PrivateData", "bytes")

DREP: Final = Header("cm.drsp", "CM DisconnectReply", [
    F("localcommid", 32, "Local Communication ID", "hex"),
    F("remotecommid", 32, "Remote Communication ID", "hex"),
])
DREP_PRIVATE: Final = Field("cm.drsp.private", 0, "PrivateData", "bytes")

SIDR_REQ: Final = Header("cm.sidr_req", "CM ServiceIDResReq", [
    F("requestid", 32, "Request ID", "hex"),
    F("pkey", 16, "Partition Key", "hex"),
    F("reserved", 16, "Reserved", "hex"),
    F("serviceid", 64, "ServiceID", "hex"),
])
SIDR_REQ_PRIVATE: Final = Field("cm.sidr_req.private", 0, "PrivateData", "bytes")

SIDR_REP: Final = Header("cm.sidr_rep", "CM ServiceIDResReqResp", [
    F("requestid", 32, "Request ID", "hex"),
    F("status", 8, "Status", "hex", SIDR_STATUS),
    F("addinfolen", 8, "Additional Information Length", "hex"),
    F("vendorid_h", 16, "Vendor ID (high bytes)", "hex"),
    F("qpn", 24, "QPN", "hex"),
    F("vendorid_l", 8, "Vendor ID (low byte)", "hex"),
    F("serviceid", 64, "ServiceID", "hex"),
    F("qkey", 32, "Q_Key", "hex"),
    F("addinfo", 576, "Additional Information (ClassPortInfo)", "bytes"),
])
SIDR_REP_PRIVATE: Final = Field("cm.sidr_rep.private", 0, "PrivateData", "bytes")

LAP: Final = Header("cm.lap", "CM LoadAlternatePath", [
    F("localcommid", 32, "Local Communication ID", "hex"),
    F("remotecommid", 32, "Remote Communication ID", "hex"),
    F("reserved0", 32, "Reserved", "hex"),
    F("remoteqpneecn", 24, "Remote QPN/EECN", "hex"),
    F("remoteresptout", 5, "Remote CM Response Timeout", "hex"),
    F("reserved1", 3, "Reserved", "hex"),
    F("reserved2", 32, "Reserved", "hex"),
    F("alt_locallid", 16, "Alternate Local Port LID"),
    F("alt_remotelid", 16, "Alternate Remote Port LID"),
    F("alt_localgid", 128, "Alternate Local Port GID", "gid"),
    F("alt_remotegid", 128, "Alternate Remote Port GID", "gid"),
    F("alt_flowlabel", 20, "Alternate Flow Label", "hex"),
    F("reserved3", 4, "Reserved", "hex"),
    F("alt_tfcclass", 8, "Alternate Traffic Class", "hex"),
    F("alt_hoplim", 8, "Alternate Hop Limit", "hex"),
    F("reserved4", 2, "Reserved", "hex"),
    F("alt_pktrate", 6, "Alternate Packet Rate", "hex"),
    F("alt_sl", 4, "Alternate SL", "hex"),
    F("alt_subnetlocal", 1, "Alternate Subnet Local", "hex"),
    F("reserved5", 3, "Reserved", "hex"),
    F("alt_localacktout", 5, "Alternate Local ACK Timeout", "hex"),
    F("reserved6", 3, "Reserved", "hex"),
])
LAP_PRIVATE: Final = Field("cm.lap.private", 0, "PrivateData", "bytes")

APR: Final = Header("cm.apr", "CM AlternatePathResponse", [
    F("localcommid", 32, "Local Communication ID", "hex"),
    F("remotecommid", 32, "Remote Communication ID", "hex"),
    F("addinfolen", 8, "Additional Information Length", "hex"),
    F("apstatus", 8, "AP Status", "hex", APR_STATUS),
    F("reserved", 16, "Reserved", "hex"),
    F("addinfo", 576, "Additional Information", "bytes"),
])
APR_PRIVATE: Final = Field("cm.apr.private", 0, "PrivateData", "bytes")

CM_DATA_SIZE = 232
# The message each CM attribute ID carries (its fixed part; the private data fills the rest of the MAD).
MESSAGE_HEADERS = {0x0010: REQ, 0x0011: MRA, 0x0012: REJ, 0x0013: REP, 0x0014: RTU, 0x0015: DREQ, 0x0016: DREP,
                   0x0017: SIDR_REQ, 0x0018: SIDR_REP, 0x0019: LAP, 0x001A: APR}
cm_attribute: Final[DissectorTable] = table("cm.attribute", "CM attribute ID")
# The Info column's text of each attribute ID.
INFO_TEXTS: Final = {attr: f"CM {name}" for attr, name in ATTRIBUTES.items()}

# What the connection tracker and the Info column read of a REQ, a REP and the messages naming two
# communication IDs, each read alone where it sits (the layer's values are decoded only if a sink reads them).
_REQ_COMM: Final = REQ.spot("localcommid")
_REQ_SID_AT: Final = byte_offset(REQ, "serviceid")
_REQ_QPN: Final = REQ.spot("localqpn")
_REQ_PSN: Final = REQ.spot("startpsn")
_REQ_MTU: Final = REQ.spot("pppmtu")
_REQ_SERVICE_TYPE: Final = REQ.spot("transpsvctype")
_REQ_CLIENT_GID_AT: Final = byte_offset(REQ, "prim_localgid")
_REQ_SERVER_GID_AT: Final = byte_offset(REQ, "prim_remotegid")
_REQ_PRIVATE_SIZE: Final = 92
_REP_LOCAL: Final = REP.spot("localcommid")
_REP_REMOTE: Final = REP.spot("remotecommid")
_REP_QPN: Final = REP.spot("localqpn")
_REP_PSN: Final = REP.spot("startpsn")
_REP_PRIVATE_SIZE: Final = 196
_DREQ_QPN: Final = DREQ.spot("remoteqpneecn")
_LOCAL: Final = RTU.spot("localcommid")
_REMOTE: Final = RTU.spot("remotecommid")
if any(h.spot("localcommid") != _LOCAL or h.spot("remotecommid") != _REMOTE for h in (MRA, REJ, DREQ, DREP, LAP, APR)):
    raise ValueError("ib_cm: a message read by dissect_two_ids does not open with the two communication IDs")


def dissect_cm(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    """Management class 0x07: dispatch on the attribute ID."""
    attr = _mad.mad_of(pkt).attribute
    text = INFO_TEXTS.get(attr)
    pkt.proto = "IB CM"
    pkt.set_info(text if text is not None else f"CM attribute 0x{attr:04x}")
    fn = cm_attribute.by_key.get(attr)
    if fn is not None:
        fn.dissect(pkt, buf, off, end, ctx)
    elif end > off:
        pkt.layers[-1].add(_mad.MAD_CLASS_DATA, bytes(buf[off:end]), off, end - off)


def _fixed(pkt: Packet, hdr: Header, buf: bytes, off: int, end: int, private: Field,
           psize: int) -> tuple[Layer | None, int, int]:
    """Add the message's fixed part and its private data; None when the message is short."""
    if end - off < hdr.size:
        pkt.truncated(hdr.name, end - off, hdr.size)
        return None, 0, 0
    lay = pkt.add_layer(hdr.name, hdr, buf, off)
    poff = off + hdr.size
    pend = min(end, poff + psize)
    if pend < poff + psize:
        pkt.add_expert("warning", "malformed", f"{hdr.name}: private data is {pend - poff} of {psize} bytes",
                       "IBTA 12.6")
    lay.add(private, span_bytes(buf, poff, pend), poff, pend - poff)
    return lay, poff, pend


def _pdata_of(pkt: Packet) -> RpcRdmaPdata | None:
    return pkt.noted(RPCRDMA_PDATA)


def _take_ulp(pkt: Packet, conn: conversation.Connection, client: bool) -> None:
    """What the upper layer's private data said, for the connection (the client's REQ, the server's REP
    or REJ)."""
    facts = pkt.noted(conversation.ULP_PDATA)
    if facts is not None:
        conversation.take_ulp(conn, facts, client)


def _timeout_us(code: int) -> float:
    """CM timeouts are 4.096 us * 2^code."""
    return 4.096 * (1 << code)


def dissect_req(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    if end - off < REQ.size:
        pkt.truncated("cm.req", end - off, REQ.size)
        return
    lay = pkt.add_layer("cm.req", REQ, buf, off)
    sid = u64_at(buf, off + _REQ_SID_AT)
    qpn = field_at(buf, off, _REQ_QPN)
    psn = field_at(buf, off, _REQ_PSN)
    poff = off + REQ.size
    pend = min(end, poff + _REQ_PRIVATE_SIZE)
    rc = rdma_cm.split_service_id(sid)
    port = rc[2] if rc is not None else None
    # hex(): an f-string with a format spec is compiled into a str.format call for each of its fields
    pkt.add_info(f"QPN={hex(qpn)} PSN={psn} SID={rdma_cm.service_text(sid)}")
    if pend < poff + _REQ_PRIVATE_SIZE:
        pkt.add_expert("warning", "malformed", f"cm.req: private data is {pend - poff} of 92 bytes", "IBTA 12.6")
    sport = None
    if rc is not None:
        sport = rdma_cm.dissect_req_private(pkt, lay, buf, off + _REQ_SID_AT, poff, pend, ctx, rc)
    else:
        lay.add(REQ_PRIVATE, bytes(buf[poff:pend]), poff, pend - poff)
        rdma_cm.hand_private(pkt, buf, poff, pend, ctx, None)
    conn = conversation.connections(ctx).cm_req(
        pkt, field_at(buf, off, _REQ_COMM), sid, port, rc[1] if rc is not None else None, qpn, psn,
        MTU_BYTES.get(field_at(buf, off, _REQ_MTU)), field_at(buf, off, _REQ_SERVICE_TYPE), _pdata_of(pkt))
    _take_ulp(pkt, conn, True)
    at = off + _REQ_CLIENT_GID_AT
    conn.client_gid = fmt_gid(buf[at:at + 16])
    at = off + _REQ_SERVER_GID_AT
    conn.server_gid = fmt_gid(buf[at:at + 16])
    if sport is not None:
        conn.client_port, conn.server_port = sport, port


def dissect_rep(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    tab = conversation.connections(ctx)
    if end - off < REP.size:
        pkt.truncated("cm.rep", end - off, REP.size)
        return
    lay = pkt.add_layer("cm.rep", REP, buf, off)
    local, remote = field_at(buf, off, _REP_LOCAL), field_at(buf, off, _REP_REMOTE)
    qpn, psn = field_at(buf, off, _REP_QPN), field_at(buf, off, _REP_PSN)
    conn = tab.by_comm(pkt.dst, remote)
    pkt.add_info(f"QPN={hex(qpn)} PSN={psn}")
    poff = off + REP.size
    pend = min(end, poff + _REP_PRIVATE_SIZE)
    if pend < poff + _REP_PRIVATE_SIZE:
        pkt.add_expert("warning", "malformed", f"cm.rep: private data is {pend - poff} of 196 bytes", "IBTA 12.6")
    lay.add(REP_PRIVATE, span_bytes(buf, poff, pend), poff, pend - poff)
    rdma_cm.hand_private(pkt, buf, poff, pend, ctx, conn.port if conn is not None else None)
    _take_ulp(pkt, tab.cm_rep(pkt, local, remote, qpn, psn, _pdata_of(pkt)), False)


# The messages that name the two communication IDs (``_TwoIds.kind``).
MRA_KIND: Final = 0
REJ_KIND: Final = 1
RTU_KIND: Final = 2
DREQ_KIND: Final = 3
DREP_KIND: Final = 4
LAP_KIND: Final = 5
APR_KIND: Final = 6


def dissect_two_ids(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any, hdr: Header, private: Field,
                    psize: int, kind: int) -> None:
    """A message that opens with the sender's and the receiver's communication IDs: MRA, REJ, RTU, DREQ,
    DREP, LAP, APR."""
    tab = conversation.connections(ctx)
    lay, poff, pend = _fixed(pkt, hdr, buf, off, end, private, psize)
    if lay is None:
        return
    local, remote = field_at(buf, off, _LOCAL), field_at(buf, off, _REMOTE)
    conn = tab.by_comm(pkt.src, local) or tab.by_comm(pkt.dst, remote)
    if kind == DREQ_KIND:
        qpn = field_at(buf, off, _DREQ_QPN)
        pkt.add_info(f"QPN={hex(qpn)}")
        if conn is not None:
            from_client = pkt.src == conn.client_addr and local == conn.client_comm
            peer = conn.server_qpn if from_client else conn.client_qpn
            if peer is not None and peer != qpn:
                pkt.add_expert("warning", "protocol", f"DREQ names QPN 0x{qpn:x}, but the connection's "
                               f"{'server' if from_client else 'client'} QP is 0x{peer:x}", "IBTA 12.6.10")
    elif kind == REJ_KIND:
        v = lay.values
        reason = v[hdr.index["reason"]]
        text = (f"reason={REJ_REASONS.get(reason, 'reserved')} ({reason}) "
                f"rejecting {MESSAGE_REJECTED[v[hdr.index['msgrej']]]}")
        pkt.add_info(text)
        pkt.add_expert("note", "protocol", f"Connection rejected: {text}", "IBTA 12.6.7")
        conn = tab.by_comm(pkt.dst, remote) or tab.by_comm(pkt.src, local)
    elif kind == MRA_KIND:
        v = lay.values
        pkt.add_info(f"{MESSAGE_MRAED[v[2]]} timeout={_timeout_us(v[4]):.0f}us")
    elif kind == LAP_KIND:
        pkt.add_info(f"QPN=0x{lay.values[3]:x}")
    elif kind == APR_KIND:
        st = lay.values[hdr.index["apstatus"]]
        pkt.add_info(f"status={APR_STATUS.get(st, 'reserved')} ({st})")
    rdma_cm.hand_private(pkt, buf, poff, pend, ctx, conn.port if conn is not None else None)
    if kind == RTU_KIND:
        tab.cm_rtu(pkt, local, remote)
    elif kind == REJ_KIND:
        rejected = tab.cm_rej(pkt, local, remote, lay.values[hdr.index["reason"]])
        if rejected is not None:
            _take_ulp(pkt, rejected, False)
    elif kind == DREQ_KIND:
        tab.cm_dreq(pkt, local, remote)
    elif kind == DREP_KIND:
        tab.cm_drep(pkt, local, remote)
    elif conn is not None:
        pkt.conv = conn


class _TwoIds(Dissector):
    """One of the messages ``dissect_two_ids`` reads, called directly (``registry.Dissector``)."""

    __slots__ = ("hdr", "private", "psize", "kind")

    def __init__(self, hdr: Header, private: Field, psize: int, kind: int) -> None:
        super().__init__(dissect_two_ids)
        self.hdr = hdr
        self.private = private
        self.psize = psize
        self.kind = kind

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        dissect_two_ids(pkt, buf, off, end, ctx, self.hdr, self.private, self.psize, self.kind)
        return True


class _Req(Dissector):
    """A REQ, called directly (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        dissect_req(pkt, buf, off, end, ctx)
        return True


class _Rep(Dissector):
    """A REP, called directly (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        dissect_rep(pkt, buf, off, end, ctx)
        return True


class _Cm(Dissector):
    """Management class 0x07, called directly (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        dissect_cm(pkt, buf, off, end, ctx)
        return True


def dissect_sidr_req(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    lay, poff, pend = _fixed(pkt, SIDR_REQ, buf, off, end, SIDR_REQ_PRIVATE, 216)
    if lay is None:
        return
    sid = lay.values[3]
    pkt.add_info(f"SID={rdma_cm.service_text(sid)}")
    rc = rdma_cm.split_service_id(sid)
    if rc is not None:
        rdma_cm.add_service_id(pkt, lay, buf, off + 8, rc)
    rdma_cm.hand_private(pkt, buf, poff, pend, ctx, rc[2] if rc is not None else None)


def dissect_sidr_rep(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    lay, poff, pend = _fixed(pkt, SIDR_REP, buf, off, end, SIDR_REP_PRIVATE, 136)
    if lay is None:
        return
    v = lay.values
    pkt.add_info(f"status={SIDR_STATUS.get(v[1], 'reserved')} QPN=0x{v[4]:x} Q_Key=0x{v[7]:08x}")
    rc = rdma_cm.split_service_id(v[6])
    rdma_cm.hand_private(pkt, buf, poff, pend, ctx, rc[2] if rc is not None else None)


def dissect_cm_classportinfo(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    _mad.dissect_classportinfo(pkt, buf, off, end)


cm_attribute.register(0x0001, dissect_cm_classportinfo)
cm_attribute.register(0x0010, _Req(dissect_req))
cm_attribute.register(0x0011, _TwoIds(MRA, MRA_PRIVATE, 222, MRA_KIND))
cm_attribute.register(0x0012, _TwoIds(REJ, REJ_PRIVATE, 148, REJ_KIND))
cm_attribute.register(0x0013, _Rep(dissect_rep))
cm_attribute.register(0x0014, _TwoIds(RTU, RTU_PRIVATE, 224, RTU_KIND))
cm_attribute.register(0x0015, _TwoIds(DREQ, DREQ_PRIVATE, 220, DREQ_KIND))
cm_attribute.register(0x0016, _TwoIds(DREP, DREP_PRIVATE, 224, DREP_KIND))
cm_attribute.register(0x0017, dissect_sidr_req)
cm_attribute.register(0x0018, dissect_sidr_rep)
cm_attribute.register(0x0019, _TwoIds(LAP, LAP_PRIVATE, 168, LAP_KIND))
cm_attribute.register(0x001A, _TwoIds(APR, APR_PRIVATE, 148, APR_KIND))
table("mad.class").register(0x07, _Cm(dissect_cm))
