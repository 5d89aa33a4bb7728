"""Management datagrams (IBTA chapter 13): the common MAD header and the classes an analyzer meets.

A MAD is the 256-byte payload of a UD SEND to QP0 (subnet management) or QP1
(general services).  The common header names the management class; each class
registers into ``mad.class``: subnet management LID-routed (0x01) and directed
route (0x81), subnet administration (0x03), performance management (0x04) here,
the Communication Manager (0x07) in ib_cm.  Other classes are shown as data under
their class name.
"""
from __future__ import annotations

from ..fields import BitSpot, F, Field, Header, declaring, protocol
from ..packet import Note, Packet
from ..registry import Dissector, DissectorTable, table
from ..typenames import Any, Final
from .xdr import u32

declaring(__name__)
protocol("smpdirected.route", "Directed route data")

MAD_SIZE = 256
MGMT_CLASSES: Final = {
    0x01: "Subnet Management (LID routed)", 0x81: "Subnet Management (Directed Route)",
    0x03: "Subnet Administration", 0x04: "Performance Management", 0x05: "Baseboard Management",
    0x06: "Device Management", 0x07: "Communication Management", 0x08: "SNMP Tunneling",
    0x10: "Application (0x10)", 0x21: "Congestion Control",
}
for _c in range(0x09, 0x10):
    MGMT_CLASSES[_c] = f"Vendor Specific (0x{_c:02x})"
for _c in range(0x30, 0x50):
    MGMT_CLASSES[_c] = f"Vendor Specific with OUI (0x{_c:02x})"
# Short names for the decode line.
CLASS_SHORT: Final = {0x01: "SMP", 0x81: "SMP-DR", 0x03: "SA", 0x04: "PerfMgt", 0x05: "BM", 0x06: "DevMgt",
               0x07: "CM", 0x08: "SNMP", 0x21: "CC"}

METHODS: Final = {0x01: "Get()", 0x02: "Set()", 0x03: "Send()", 0x05: "Trap()", 0x06: "Report()", 0x07: "TrapRepress()",
           0x12: "GetTable()", 0x13: "GetTraceTable()", 0x14: "GetMulti()", 0x15: "Delete()",
           0x81: "GetResp()", 0x86: "ReportResp()", 0x92: "GetTableResp()", 0x94: "GetMultiResp()",
           0x95: "DeleteResp()"}

# Attributes every class shares, then those of subnet management and administration.
COMMON_ATTRIBUTES = {0x0001: "ClassPortInfo", 0x0002: "Notice", 0x0003: "InformInfo"}
SMP_ATTRIBUTES = {**COMMON_ATTRIBUTES,
                  0x0010: "NodeDescription", 0x0011: "NodeInfo", 0x0012: "SwitchInfo", 0x0014: "GUIDInfo",
                  0x0015: "PortInfo", 0x0016: "P_KeyTable", 0x0017: "SLtoVLMappingTable",
                  0x0018: "VLArbitrationTable", 0x0019: "LinearForwardingTable",
                  0x001A: "RandomForwardingTable", 0x001B: "MulticastForwardingTable",
                  0x001C: "LinkSpeedWidthPairsTable", 0x0020: "SMInfo", 0x0030: "VendorDiag", 0x0031: "LedInfo"}
SA_ATTRIBUTES = {**COMMON_ATTRIBUTES,
                 0x0011: "NodeRecord", 0x0012: "PortInfoRecord", 0x0013: "SLtoVLMappingTableRecord",
                 0x0014: "SwitchInfoRecord", 0x0015: "LinearForwardingTableRecord",
                 0x0016: "RandomForwardingTableRecord", 0x0017: "MulticastForwardingTableRecord",
                 0x0018: "SMInfoRecord", 0x0019: "LinkSpeedWidthPairsTableRecord", 0x00F3: "InformInfoRecord",
                 0x0020: "LinkRecord", 0x0030: "GuidInfoRecord", 0x0031: "ServiceRecord",
                 0x0033: "P_KeyTableRecord", 0x0035: "PathRecord", 0x0036: "VLArbitrationTableRecord",
                 0x0038: "MCMemberRecord", 0x0039: "TraceRecord", 0x003A: "MultiPathRecord",
                 0x003B: "ServiceAssociationRecord"}
PERF_ATTRIBUTES = {0x0001: "ClassPortInfo", 0x0010: "PortSamplesControl", 0x0011: "PortSamplesResult",
                   0x0012: "PortCounters", 0x001D: "PortCountersExtended", 0x001E: "PortXmitDataSL",
                   0x001F: "PortRcvDataSL"}
SA_METHODS = {0x01: "SubnAdmGet()", 0x81: "SubnAdmGetResp()", 0x02: "SubnAdmSet()", 0x06: "SubnAdmReport()",
              0x86: "SubnAdmReportResp()", 0x12: "SubnAdmGetTable()", 0x92: "SubnAdmGetTableResp()",
              0x13: "SubnAdmGetTraceTable()", 0x14: "SubnAdmGetMulti()", 0x94: "SubnAdmGetMultiResp()",
              0x15: "SubnAdmDelete()", 0x95: "SubnAdmDeleteResp()"}
SMP_METHODS = {0x01: "SubnGet()", 0x02: "SubnSet()", 0x81: "SubnGetResp()", 0x05: "SubnTrap()",
               0x07: "SubnTrapRepress()"}

MAD: Final = Header("mad", "MAD Common Header", [
    F("baseversion", 8, "Base Version", "hex"),
    F("mgmtclass", 8, "Management Class", "hex", MGMT_CLASSES),
    F("classversion", 8, "Class Version", "hex"),
    F("method", 8, "Method", "hex", METHODS),
    F("status", 16, "Status", "hex"),
    F("classspecific", 16, "Class Specific", "hex"),
    F("transactionid", 64, "Transaction ID", "hex"),
    F("attributeid", 16, "Attribute ID", "hex"),
    F("reserved", 16, "Reserved", "hex"),
    F("attributemodifier", 32, "Attribute Modifier", "hex"),
])
MAD_DATA: Final = Field("mad.data", 0, "MAD Data Payload", "bytes")
MAD_CLASS_DATA: Final = Field("mad.class_data", 0, "Class data (not decoded)", "bytes")
MAD_ATTRIBUTE = Field("mad.attribute", 0, "Attribute", "str")

SMP_LID = Header("smplid", "Subnet Management Packet (LID Routed)", [
    F("mkey", 64, "M_Key", "hex"),
    F("reserved", 256, "Reserved", "bytes"),
    F("smpdata", 512, "SMP Data", "bytes"),
    F("reserved2", 1024, "Reserved", "bytes"),
])
MTU_NAMES = {1: "256", 2: "512", 3: "1024", 4: "2048", 5: "4096"}
NODE_TYPES = {1: "Channel Adapter", 2: "Switch", 3: "Router"}
NODEINFO = Header("nodeinfo", "NodeInfo", [
    F("baseversion", 8, "BaseVersion", "hex"),
    F("classversion", 8, "ClassVersion", "hex"),
    F("nodetype", 8, "NodeType", "hex", NODE_TYPES),
    F("numports", 8, "NumPorts", "hex"),
    F("systemimageguid", 64, "SystemImageGUID", "hex"),
    F("nodeguid", 64, "NodeGUID", "hex"),
    F("portguid", 64, "PortGUID", "hex"),
    F("partitioncap", 16, "PartitionCap", "hex"),
    F("deviceid", 16, "DeviceID", "hex"),
    F("revision", 32, "Revision", "hex"),
    F("localportnum", 8, "LocalPortNum", "hex"),
    F("vendorid", 24, "VendorID", "hex"),
])
SM_STATES = {0: "Not Active", 1: "Discovering", 2: "Standby", 3: "Master"}
SMINFO = Header("sminfo", "SMInfo", [
    F("guid", 64, "GUID", "hex"),
    F("sm_key", 64, "SM_Key", "hex"),
    F("actcount", 32, "ActCount", "hex"),
    F("priority", 4, "Priority", "hex"),
    F("smstate", 4, "SMState", "hex", SM_STATES),
])
NODEDESCRIPTION = Header("nodedescription", "NodeDescription", [
    F("nodestring", 512, "NodeString", "str"),
])
PORT_STATES = {0: "No State Change", 1: "Down", 2: "Initialize", 3: "Armed", 4: "Active"}
PHYS_STATES = {0: "No State Change", 1: "Sleep", 2: "Polling", 3: "Disabled", 4: "PortConfigurationTraining",
               5: "LinkUp", 6: "LinkErrorRecovery", 7: "Phy Test"}
PORTINFO = Header("portinfo", "PortInfo", [
    F("m_key", 64, "M_Key", "hex"),
    F("guid", 64, "GidPrefix", "hex"),
    F("lid", 16, "LID", "hex"),
    F("mastersmlid", 16, "MasterSMLID", "hex"),
    F("capabilitymask", 32, "CapabilityMask", "hex"),
    F("diagcode", 16, "DiagCode", "hex"),
    F("m_keyleaseperiod", 16, "M_KeyLeasePeriod", "hex"),
    F("localportnum", 8, "LocalPortNum", "hex"),
    F("linkwidthenabled", 8, "LinkWidthEnabled", "hex"),
    F("linkwidthsupported", 8, "LinkWidthSupported", "hex"),
    F("linkwidthactive", 8, "LinkWidthActive", "hex"),
    F("linkspeedsupported", 4, "LinkSpeedSupported", "hex"),
    F("portstate", 4, "PortState", "hex", PORT_STATES),
    F("portphysicalstate", 4, "PortPhysicalState", "hex", PHYS_STATES),
    F("linkdowndefaultstate", 4, "LinkDownDefaultState", "hex"),
    F("m_keyprotectbits", 2, "M_KeyProtectBits", "hex"),
    F("reserved", 3, "Reserved", "hex"),
    F("lmc", 3, "LMC", "hex"),
    F("linkspeedactive", 4, "LinkSpeedActive", "hex"),
    F("linkspeedenabled", 4, "LinkSpeedEnabled", "hex"),
    F("neighbormtu", 4, "NeighborMTU", "hex", MTU_NAMES),
    F("mastersmsl", 4, "MasterSMSL", "hex"),
    F("vlcap", 4, "VLCap", "hex"),
    F("inittype", 4, "InitType", "hex"),
    F("vlhighlimit", 8, "VLHighLimit", "hex"),
    F("vlarbitrationhighcap", 8, "VLArbitrationHighCap", "hex"),
    F("vlarbitrationlowcap", 8, "VLArbitrationLowCap", "hex"),
    F("inittypereply", 4, "InitTypeReply", "hex"),
    F("mtucap", 4, "MTUCap", "hex", MTU_NAMES),
    F("vlstallcount", 3, "VLStallCount", "hex"),
    F("hoqlife", 5, "HOQLife", "hex"),
    F("operationalvls", 4, "OperationalVLs", "hex"),
    F("partitionenforcementinbound", 1, "PartitionEnforcementInbound", "hex"),
    F("partitionenforcementoutbound", 1, "PartitionEnforcementOutbound", "hex"),
    F("filterrawinbound", 1, "FilterRawInbound", "hex"),
    F("filterrawoutbound", 1, "FilterRawOutbound", "hex"),
    F("m_keyviolations", 16, "M_KeyViolations", "hex"),
    F("p_keyviolations", 16, "P_KeyViolations", "hex"),
    F("q_keyviolations", 16, "Q_KeyViolations", "hex"),
    F("guidcap", 8, "GUIDCap", "hex"),
    F("clientreregister", 1, "ClientReregister", "hex"),
    F("reserved2", 2, "Reserved", "hex"),
    F("subnettimeout", 5, "SubnetTimeOut", "hex"),
    F("reserved3", 3, "Reserved", "hex"),
    F("resptimevalue", 5, "RespTimeValue", "hex"),
    F("localphyerrors", 4, "LocalPhyErrors", "hex"),
    F("overrunerrors", 4, "OverrunErrors", "hex"),
    F("maxcredithint", 16, "MaxCreditHint", "hex"),
    F("reserved4", 8, "Reserved", "hex"),
    F("linkroundtriplatency", 24, "LinkRoundTripLatency", "hex"),
    F("capabilitymask2", 16, "CapabilityMask2", "hex"),
    F("linkspeedextactive", 4, "LinkSpeedExtActive", "hex"),
    F("linkspeedextsupported", 4, "LinkSpeedExtSupported", "hex"),
    F("reserved5", 3, "Reserved", "hex"),
    F("linkspeedextenabled", 5, "LinkSpeedExtEnabled", "hex"),
])
# SMP attributes decoded field by field (the rest stay as SMP data).
SMP_ATTRIBUTE_HEADERS = {0x0010: NODEDESCRIPTION, 0x0011: NODEINFO, 0x0015: PORTINFO, 0x0020: SMINFO}

RMPP_TYPES = {0: "Not an RMPP packet", 1: "DATA", 2: "ACK", 3: "STOP", 4: "ABORT"}
RMPP = Header("rmpp", "RMPP (Reliable Multi-Packet Transaction Protocol)", [
    F("rmppversion", 8, "RMPP Version", "hex"),
    F("rmpptype", 8, "RMPP Type", "hex", RMPP_TYPES),
    F("rresptime", 5, "R Resp Time", "hex"),
    F("rmppflags", 3, "RMPP Flags", "hex"),
    F("rmppstatus", 8, "RMPP Status", "hex"),
    F("data1", 32, "RMPP Data 1", "hex"),
    F("data2", 32, "RMPP Data 2", "hex"),
])
RMPP_SEGMENT = Field("rmpp.segmentnumber", 32, "Segment Number", "hex")
RMPP_PAYLOAD_LENGTH = Field("rmpp.payloadlength", 32, "Payload Length", "hex", unit="bytes")
RMPP_NEW_WINDOW_LAST = Field("rmpp.newwindowlast", 32, "New Window Last", "hex")
SA = Header("sa", "Subnet Administration", [
    F("smkey", 64, "SM_Key (Verification Key)", "hex"),
    F("attributeoffset", 16, "Attribute Offset", "hex"),
    F("reserved", 16, "Reserved", "hex"),
    F("componentmask", 64, "Component Mask", "hex"),
])
SA_DATA = Field("sa.subnetadmindata", 0, "Subnet Admin Data", "bytes")
SELECTORS = {0: "greater than", 1: "less than", 2: "exactly", 3: "largest available"}
PATHRECORD = Header("pathrecord", "PathRecord", [
    F("serviceid", 64, "ServiceID (Reserved)", "hex"),
    F("dgid", 128, "DGID", "gid"),
    F("sgid", 128, "SGID", "gid"),
    F("dlid", 16, "DLID", "hex"),
    F("slid", 16, "SLID", "hex"),
    F("rawtraffic", 1, "RawTraffic", "hex"),
    F("reserved", 3, "Reserved", "hex"),
    F("flowlabel", 20, "FlowLabel", "hex"),
    F("hoplimit", 8, "HopLimit", "hex"),
    F("tclass", 8, "TClass", "hex"),
    F("reversible", 1, "Reversible", "hex"),
    F("numbpath", 7, "NumbPath", "hex"),
    F("p_key", 16, "P_Key", "hex"),
    F("qosclass", 12, "QoSClass", "hex"),
    F("sl", 4, "SL", "hex"),
    F("mtuselector", 2, "MTUSelector", "hex", SELECTORS),
    F("mtu", 6, "MTU", "hex", MTU_NAMES),
    F("rateselector", 2, "RateSelector", "hex", SELECTORS),
    F("rate", 6, "Rate", "hex"),
    F("packetlifetimeselector", 2, "PacketLifeTimeSelector", "hex", SELECTORS),
    F("packetlifetime", 6, "PacketLifeTime", "hex"),
    F("preference", 8, "Preference", "hex"),
    F("reserved2", 48, "Reserved", "hex"),
])
MCMEMBERRECORD = Header("mcmemberrecord", "MCMemberRecord", [
    F("mgid", 128, "MGID", "gid"),
    F("portgid", 128, "PortGID", "gid"),
    F("q_key", 32, "Q_Key", "hex"),
    F("mlid", 16, "MLID", "hex"),
    F("mtuselector", 2, "MTUSelector", "hex", SELECTORS),
    F("mtu", 6, "MTU", "hex", MTU_NAMES),
    F("tclass", 8, "TClass", "hex"),
    F("p_key", 16, "P_Key", "hex"),
    F("rateselector", 2, "RateSelector", "hex", SELECTORS),
    F("rate", 6, "Rate", "hex"),
    F("packetlifetimeselector", 2, "PacketLifeTimeSelector", "hex", SELECTORS),
    F("packetlifetime", 6, "PacketLifeTime", "hex"),
    F("sl", 4, "SL", "hex"),
    F("flowlabel", 20, "FlowLabel", "hex"),
    F("hoplimit", 8, "HopLimit", "hex"),
    F("scope", 4, "Scope", "hex"),
    F("joinstate", 4, "JoinState", "hex"),
    F("proxyjoin", 1, "ProxyJoin", "hex"),
    F("reserved", 23, "Reserved", "hex"),
])
# SA records decoded field by field (the first record of the MAD; the rest stay as data).
SA_RECORD_HEADERS = {0x0035: PATHRECORD, 0x0038: MCMEMBERRECORD}

# ClassPortInfo (IBTA 13.4.8.1): the same 72 bytes in every class that has it.
CLASSPORTINFO = Header("classportinfo", "ClassPortInfo", [
    F("baseversion", 8, "BaseVersion", "hex"),
    F("classversion", 8, "ClassVersion", "hex"),
    F("capabilitymask", 16, "CapabilityMask", "hex"),
    F("capabilitymask2", 27, "CapabilityMask2", "hex"),
    F("resptimevalue", 5, "RespTimeValue", "hex"),
    F("redirectgid", 128, "RedirectGID", "gid"),
    F("redirecttc", 8, "RedirectTC", "hex"),
    F("redirectsl", 4, "RedirectSL", "hex"),
    F("redirectfl", 20, "RedirectFL", "hex"),
    F("redirectlid", 16, "RedirectLID", "hex"),
    F("redirectpkey", 16, "RedirectP_Key", "hex"),
    F("reserved", 8, "Reserved", "hex"),
    F("redirectqp", 24, "RedirectQP", "hex"),
    F("redirectqkey", 32, "RedirectQ_Key", "hex"),
    F("trapgid", 128, "TrapGID", "gid"),
    F("traptc", 8, "TrapTC", "hex"),
    F("trapsl", 4, "TrapSL", "hex"),
    F("trapfl", 20, "TrapFL", "hex"),
    F("traplid", 16, "TrapLID", "hex"),
    F("trappkey", 16, "TrapP_Key", "hex"),
    F("traphl", 8, "TrapHL", "hex"),
    F("trapqp", 24, "TrapQP", "hex"),
    F("trapqkey", 32, "TrapQ_Key", "hex"),
])

PERF_RESERVED = 40      # performance MADs: 40 reserved bytes between the common header and the attribute
PORTCOUNTERS = Header("portcounters", "PortCounters", [
    F("reserved", 8, "Reserved", "hex"),
    F("portselect", 8, "PortSelect", "hex"),
    F("counterselect", 16, "CounterSelect", "hex"),
    F("symbolerrorcounter", 16, "SymbolErrorCounter"),
    F("linkerrorrecoverycounter", 8, "LinkErrorRecoveryCounter"),
    F("linkdownedcounter", 8, "LinkDownedCounter"),
    F("portrcverrors", 16, "PortRcvErrors"),
    F("portrcvremotephysicalerrors", 16, "PortRcvRemotePhysicalErrors"),
    F("portrcvswitchrelayerrors", 16, "PortRcvSwitchRelayErrors"),
    F("portxmitdiscards", 16, "PortXmitDiscards"),
    F("portxmitconstrainterrors", 8, "PortXmitConstraintErrors"),
    F("portrcvconstrainterrors", 8, "PortRcvConstraintErrors"),
    F("counterselect2", 8, "CounterSelect2", "hex"),
    F("locallinkintegrityerrors", 4, "LocalLinkIntegrityErrors"),
    F("excessivebufferoverrunerrors", 4, "ExcessiveBufferOverrunErrors"),
    F("qp1dropped", 16, "QP1Dropped"),
    F("vl15dropped", 16, "VL15Dropped"),
    F("portxmitdata", 32, "PortXmitData", unit="words"),
    F("portrcvdata", 32, "PortRcvData", unit="words"),
    F("portxmitpkts", 32, "PortXmitPkts"),
    F("portrcvpkts", 32, "PortRcvPkts"),
    F("portxmitwait", 32, "PortXmitWait"),
])
PORTCOUNTERS_EXT = Header("portcounters_ext", "PortCountersExtended", [
    F("reserved", 8, "Reserved", "hex"),
    F("portselect", 8, "PortSelect", "hex"),
    F("counterselect", 16, "CounterSelect", "hex"),
    F("reserved2", 32, "Reserved", "hex"),
    F("portxmitdata", 64, "PortXmitData", unit="words"),
    F("portrcvdata", 64, "PortRcvData", unit="words"),
    F("portxmitpkts", 64, "PortXmitPkts"),
    F("portrcvpkts", 64, "PortRcvPkts"),
    F("portunicastxmitpkts", 64, "PortUnicastXmitPkts"),
    F("portunicastrcvpkts", 64, "PortUnicastRcvPkts"),
    F("portmulticastxmitpkts", 64, "PortMulticastXmitPkts"),
    F("portmulticastrcvpkts", 64, "PortMulticastRcvPkts"),
])
PERF_ATTRIBUTE_HEADERS = {0x0012: PORTCOUNTERS, 0x001D: PORTCOUNTERS_EXT}
PERF_DATA = Field("perf.data", 0, "Performance Management data (not decoded)", "bytes")

mad_class: Final[DissectorTable] = table("mad.class", "MAD management class")


def field_at(buf: bytes, off: int, spot: BitSpot) -> int:
    """The field of a header at ``buf[off]`` whose place in its 32-bit words is ``spot`` (``Header.spot``):
    one field read where the header's decoder would make them all."""
    return (u32(buf, off + 4 * spot.word) >> spot.shift) & spot.mask


def u64_at(buf: bytes, at: int) -> int:
    """The big-endian 64-bit integer at ``buf[at]`` (the caller knows the eight bytes are there)."""
    return u32(buf, at) << 32 | u32(buf, at + 4)


def span_bytes(buf: bytes, start: int, end: int) -> bytes:
    """``buf[start:end]`` as bytes: the slice itself when it is (a call of ``bytes`` on bytes costs as
    much as the copy)."""
    part = buf[start:end]
    return part if type(part) is bytes else bytes(part)


def byte_offset(hdr: Header, name: str) -> int:
    """Where field ``name`` of ``hdr`` starts in the header (a field of whole bytes)."""
    return hdr.spans[hdr.index[name]][0]


MAD_HEADER_SIZE: Final = MAD.size
_MGMTCLASS: Final = MAD.spot("mgmtclass")
_CLASSVERSION: Final = MAD.spot("classversion")
_METHOD: Final = MAD.spot("method")
_STATUS: Final = MAD.spot("status")
_TID_AT: Final = byte_offset(MAD, "transactionid")
_ATTRIBUTE: Final = MAD.spot("attributeid")
_MODIFIER: Final = MAD.spot("attributemodifier")


class MadInfo:
    """The common header's values, for the class dissectors (no text)."""

    __slots__ = ("mgmtclass", "classversion", "method", "status", "tid", "attribute", "modifier", "off")

    def __init__(self, buf: bytes, off: int) -> None:
        """The common header at ``buf[off]`` (the caller knows its bytes are there), read field by field
        as the declaration places them: the layer's values are decoded only if a sink reads them."""
        self.mgmtclass = field_at(buf, off, _MGMTCLASS)
        self.classversion = field_at(buf, off, _CLASSVERSION)
        self.method = field_at(buf, off, _METHOD)
        self.status = field_at(buf, off, _STATUS)
        self.tid = u64_at(buf, off + _TID_AT)
        self.attribute = field_at(buf, off, _ATTRIBUTE)
        self.modifier = field_at(buf, off, _MODIFIER)
        self.off = off


MAD_INFO: Final[Note[MadInfo]] = Note("mad")     # the common header's facts, for the class dissectors


def dissect_mad(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    """QP0 / QP1: one MAD.  Hands the bytes after the common header to ``mad.class``."""
    size = MAD_HEADER_SIZE
    if end - off < size:
        pkt.truncated("mad", end - off, size)
        return
    lay = pkt.add_layer("mad", MAD, buf, off)
    lay.add(MAD_DATA, span_bytes(buf, off + size, end), off + size, end - off - size)
    info = MadInfo(buf, off)
    pkt.note(MAD_INFO, info)
    cls = info.mgmtclass
    pkt.proto = "MAD" if cls != 0x07 else "IB CM"
    if buf[off] != 1:
        pkt.add_expert("warning", "protocol", f"MAD base version {buf[off]} (InfiniBand MADs are version 1)",
                       "IBTA 13.4.2")
    if end - off < MAD_SIZE:
        # Some senders trim trailing zeros; Linux never does.  Class dissectors check what they read.
        pkt.add_expert("warning", "malformed", f"MAD is {end - off} bytes, expected {MAD_SIZE}", "IBTA 13.4.2")
    fn = mad_class.by_key.get(cls)
    if fn is not None:
        fn.dissect(pkt, buf, off + size, end, ctx)
        _status(pkt, info)
        return
    name = CLASS_SHORT.get(cls) or MGMT_CLASSES.get(cls) or f"class 0x{cls:02x}"
    pkt.set_info(f"{name} {METHODS.get(info.method, f'method 0x{info.method:02x}')} "
                 f"attr=0x{info.attribute:04x} TID=0x{info.tid:x}")
    if end > off + size:
        lay.add(MAD_CLASS_DATA, bytes(buf[off + size:end]), off + size, end - off - size)


STATUS_CODES = {0: "", 1: "bad version", 2: "method not supported", 3: "method/attribute combination not supported",
                7: "invalid attribute or modifier value"}


def _status(pkt: Packet, info: MadInfo) -> None:
    """MAD status (IBTA 13.4.7): bit 0 busy, bit 1 redirect, bits 2-4 the invalid-field code."""
    st = info.status & 0x7FFF if info.mgmtclass == 0x81 else info.status
    if not st:
        return
    parts = []
    if st & 1:
        parts.append("busy")
    if st & 2:
        parts.append("redirect required")
    code = (st >> 2) & 7
    if code:
        parts.append(STATUS_CODES.get(code, f"reserved code {code}"))
    if st >> 8:
        parts.append(f"class-specific 0x{st >> 8:02x}")
    text = ", ".join(parts)
    pkt.add_info(f"[status 0x{st:04x}: {text}]")
    pkt.add_expert("warning" if code else "note", "protocol", f"MAD status 0x{st:04x}: {text}", "IBTA 13.4.7")


def mad_of(pkt: Packet) -> MadInfo:
    """The MAD of a packet a class dissector was handed (the MAD dissector noted it first)."""
    info = pkt.noted(MAD_INFO)
    assert info is not None
    return info


def dissect_classportinfo(pkt: Packet, buf: bytes, off: int, end: int) -> bool:
    """ClassPortInfo in a response or a Set (a Get's attribute data is empty by definition)."""
    if mad_of(pkt).method == 0x01:
        return False
    if end - off < CLASSPORTINFO.size:
        pkt.truncated("classportinfo", end - off, CLASSPORTINFO.size)
        return False
    pkt.add_layer("classportinfo", CLASSPORTINFO, buf, off)
    return True


def dissect_smp_lid(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    info = mad_of(pkt)
    attr = SMP_ATTRIBUTES.get(info.attribute, f"0x{info.attribute:04x}")
    pkt.set_info(f"SMP {SMP_METHODS.get(info.method, f'method 0x{info.method:02x}()')[:-2]}({attr})")
    if end - off < SMP_LID.size:
        pkt.truncated("smplid", end - off, SMP_LID.size)
        return
    lay = pkt.add_layer("smplid", SMP_LID, buf, off)
    lay.add(MAD_ATTRIBUTE, attr)
    _smp_attribute(pkt, info, buf, off + 40)


def _smp_attribute(pkt: Packet, info: MadInfo, buf: bytes, data_off: int) -> None:
    """The 64 bytes of SMP data, decoded for the attributes we know, in a response or a Set."""
    hdr = SMP_ATTRIBUTE_HEADERS.get(info.attribute)
    if hdr is None or info.method == 0x01:
        return
    lay = pkt.add_layer(hdr.name, hdr, buf, data_off)
    if hdr is NODEINFO:
        v = lay.values
        pkt.add_info(f"{NODE_TYPES.get(v[2], 'node type ' + str(v[2]))} GUID=0x{v[5]:016x} ports={v[3]}")
    elif hdr is NODEDESCRIPTION:
        pkt.add_info(repr(bytes(lay.values[0]).split(b"\0", 1)[0].decode("utf-8", "replace")))
    elif hdr is PORTINFO:
        v = lay.values
        pkt.add_info(f"port={v[7]} LID=0x{v[2]:04x} {PORT_STATES.get(v[12], v[12])}/"
                     f"{PHYS_STATES.get(v[13], v[13])}")
    else:
        v = lay.values
        pkt.add_info(f"SM GUID=0x{v[0]:016x} priority={v[3]} state={SM_STATES.get(v[4], v[4])}")


# The directed-route SMP uses the common header's Status and Class Specific words for its own fields:
# D bit and status, hop pointer, hop count.  Its body follows the common header.
SMP_DR_HEAD = Header("smpdirected", "Subnet Management Packet (Directed Route)", [
    F("d", 1, "D (Direction Bit)", "bool"),
    F("smpstatus", 15, "Status", "hex"),
    F("hoppointer", 8, "Hop Pointer", "hex"),
    F("hopcount", 8, "Hop Count", "hex"),
])
SMP_DR_BODY = Header("smpdirected", "Directed Route Data", [
    F("mkey", 64, "M_Key", "hex"),
    F("drslid", 16, "DrSLID", "hex"),
    F("drdlid", 16, "DrDLID", "hex"),
    F("reserved", 224, "Reserved", "bytes"),
    F("smpdata", 512, "SMP Data", "bytes"),
    F("initialpath", 512, "Initial Path", "bytes"),
    F("returnpath", 512, "Return Path", "bytes"),
])


def dissect_smp_dr(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    info = mad_of(pkt)
    attr = SMP_ATTRIBUTES.get(info.attribute, f"0x{info.attribute:04x}")
    start = info.off + 4
    pkt.set_info(f"SMP-DR {SMP_METHODS.get(info.method, f'method 0x{info.method:02x}()')[:-2]}({attr})")
    if end - off < SMP_DR_BODY.size:
        pkt.truncated("smpdirected", end - off, SMP_DR_BODY.size)
        return
    lay = pkt.add_layer("smpdirected", SMP_DR_HEAD, buf, start)
    lay.add(MAD_ATTRIBUTE, attr)
    lay.child("smpdirected.route", SMP_DR_BODY, off, label=f"Directed Route Data ({buf[start + 3]} hops)")
    _smp_attribute(pkt, info, buf, off + 40)


def dissect_sa(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    info = mad_of(pkt)
    attr = SA_ATTRIBUTES.get(info.attribute, f"0x{info.attribute:04x}")
    pkt.set_info(f"SA {SA_METHODS.get(info.method, f'method 0x{info.method:02x}()')[:-2]}({attr})")
    need = RMPP.size + SA.size
    if end - off < need:
        pkt.truncated("sa", end - off, need)
        return
    rmpp = pkt.add_layer("rmpp", RMPP, buf, off)
    rtype = buf[off + 1]
    if rtype in (1, 2):     # DATA and ACK: Data1 is the segment number; Data2 the length or the window
        rmpp.add(RMPP_SEGMENT, int.from_bytes(buf[off + 4:off + 8], "big"), off + 4, 4)
        rmpp.add(RMPP_PAYLOAD_LENGTH if rtype == 1 else RMPP_NEW_WINDOW_LAST,
                 int.from_bytes(buf[off + 8:off + 12], "big"), off + 8, 4)
    lay = pkt.add_layer("sa", SA, buf, off + RMPP.size)
    lay.add(MAD_ATTRIBUTE, attr)
    pos = off + need
    rec = SA_RECORD_HEADERS.get(info.attribute)
    if info.attribute == 0x0001:
        dissect_classportinfo(pkt, buf, pos, end)
    elif rec is not None and end - pos >= rec.size and (
            buf[off + 1] == 0 or (buf[off + 1] == 1 and int.from_bytes(buf[off + 4:off + 8], "big") == 1)):
        # Only an unsegmented MAD or the first RMPP DATA segment starts with a record.
        r = pkt.add_layer(rec.name, rec, buf, pos)
        if rec is PATHRECORD:
            v = r.values
            pkt.add_info(f"DLID=0x{v[3]:04x} SLID=0x{v[4]:04x} MTU={MTU_NAMES.get(v[16], v[16])}")
        if end > pos + rec.size:
            lay.add(SA_DATA, bytes(buf[pos + rec.size:end]), pos + rec.size, end - pos - rec.size)
    elif end > pos:
        lay.add(SA_DATA, bytes(buf[pos:end]), pos, end - pos)


def dissect_perf(pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> None:
    info = mad_of(pkt)
    attr = PERF_ATTRIBUTES.get(info.attribute, f"0x{info.attribute:04x}")
    method = METHODS.get(info.method, f"method 0x{info.method:02x}")
    pkt.set_info(f"PerfMgt {method[:-2]}({attr})")
    pos = off + PERF_RESERVED
    if end < pos:
        pkt.truncated("perf", end - off, PERF_RESERVED)
        return
    hdr = PERF_ATTRIBUTE_HEADERS.get(info.attribute)
    if info.attribute == 0x0001:
        dissect_classportinfo(pkt, buf, pos, end)
        return
    if hdr is None:
        if end > pos:
            lay = pkt.add_layer("perf", None, buf, pos, end - pos, f"Performance Management {attr}")
            lay.add(MAD_ATTRIBUTE, attr)
            lay.add(PERF_DATA, bytes(buf[pos:end]), pos, end - pos)
        return
    if end - pos < hdr.size:
        pkt.truncated(hdr.name, end - pos, hdr.size)
        return
    lay = pkt.add_layer(hdr.name, hdr, buf, pos)
    if info.method == 0x81:
        v = lay.values
        if hdr is PORTCOUNTERS:
            pkt.add_info(f"port={v[1]} xmit={v[19]}pkts rcv={v[20]}pkts")
        else:
            pkt.add_info(f"port={v[1]} xmit={v[6]}pkts rcv={v[7]}pkts")


ib_qp = table("ib.qp", "InfiniBand destination QP")


class _Mad(Dissector):
    """A MAD on QP0 or QP1, called directly (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        dissect_mad(pkt, buf, off, end, ctx)
        return True


_MAD: Final = _Mad(dissect_mad)
ib_qp.register(0, _MAD)
ib_qp.register(1, _MAD)
mad_class.register(0x01, dissect_smp_lid)
mad_class.register(0x81, dissect_smp_dr)
mad_class.register(0x03, dissect_sa)
mad_class.register(0x04, dissect_perf)
