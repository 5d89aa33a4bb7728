"""NVM Express commands and completions, as any NVMe over Fabrics transport carries them.

A command capsule begins with the 64-byte Submission Queue Entry (NVMe Base 2.0 §4.2): opcode, flags, CID,
NSID, metadata pointer, the first SGL descriptor (§4.3.2) and command dwords 10 to 15; a Fabrics command
(opcode 0x7F, NVMe over Fabrics 1.1 §3.3) has its command type at byte 4 instead of the NSID.  A response
capsule is the 16-byte Completion Queue Entry (§4.6): dwords 0 and 1, SQ head, SQ identifier, CID and the
status (phase, SC, SCT, CRD, More, DNR).  Everything is little-endian.

The structures are declared once (``fields.Header`` with ``little=True``; a word's named bits as its
``parts``); a command's dwords 10-15 and a completion's dword 0 are read by the declaration of the command
(Identify, Get Log Page, Set/Get Features by feature, Read/Write/Compare, Dataset Management, the Fabrics
types).  The transport binding (``nvme_rdma``) hands capsules here with the queue they travel on
(``NvmeQueue``: its QID, and the commands waiting for their completion by CID); what is found is left as
typed notes (``NVME_COMMANDS``, ``NVME_COMPLETIONS``) for the analysis: no text in them.
"""
from __future__ import annotations

from ..budget import Budget, Holder
from ..fields import F, Field, Header, declaring, protocol, repeatable
from ..packet import Layer, Note, Packet, add_parts
from ..session import Session
from ..typenames import Final, mypyc_attr
from . import nvme_names as N

declaring(__name__)
protocol("nvme", "NVM Express")
protocol("nvme.cmd.sgl1", "SGL1")
protocol("nvme.cmd.sgl_list", "SGL descriptor list (Last Segment)")
protocol("nvme.cqe", "NVMe Completion Queue Entry")
protocol("nvme.fabrics", "NVMe over Fabrics")
protocol("nvme.dsm_range", "Dataset Management range")
repeatable("nvme")                 # several capsules in one TCP segment (iWARP); SGL lists, DSM ranges

SQE_SIZE: Final = 64
CQE_SIZE: Final = 16
SGL_SIZE: Final = 16
SGL_AT: Final = 24                 # SGL1 in the SQE
CDW10_AT: Final = 40
MAX_SGL_LIST: Final = 64           # descriptors of a Last Segment list shown (the capsule bounds the rest)
MAX_DSM_RANGES: Final = 256        # Dataset Management: NR is 8 bits, 0's based


def _hexw(name: str, bits: int, label: str, names: dict[int, str] | None = None) -> Field:
    return F(name, bits, label, "hex", names)


# --- the Submission Queue Entry -----------------------------------------------------------------------------
def _sqe_head(opcodes: dict[int, str]) -> Header:
    return Header("nvme.cmd", "NVMe Command", [
        F("opc", 8, "Opcode", "hex", opcodes),
        F("fuse_op", 2, "Fuse Operation", "hex", N.FUSE),
        F("rsvd", 4, "Reserved", "hex"),
        F("psdt", 2, "PRP Or SGL", "hex", N.PSDT),
        F("cid", 16, "Command ID", "hex"),
        F("nsid", 32, "Namespace Id", "hex"),
        F("rsvd1", 64, "Reserved", "bytes"),
        F("mptr", 64, "Metadata Pointer", "hex"),
    ], little=True)


ADMIN_SQE: Final = _sqe_head(N.ADMIN_OPCODES)
IO_SQE: Final = _sqe_head(N.IO_OPCODES)
FABRICS_SQE: Final = Header("nvme.fabrics.cmd", "NVMe Fabrics Command", [
    F("opc", 8, "Opcode", "hex", {N.FABRICS_OPCODE: "Fabrics Command"}),
    F("rsvd", 8, "Reserved", "hex"),
    F("cid", 16, "Command Identifier", "hex"),
    F("fctype", 8, "Fabric Command Type", "hex", N.FCTYPES),
], little=True)

# SGL descriptors (§4.3.2): a keyed data block has a 24-bit length and a key; the others a 32-bit length.
_SGL_ID: Final = [F("sgl.subtype", 4, "Descriptor Sub Type", "hex", N.SGL_SUBTYPES),
                  F("sgl.type", 4, "Descriptor Type", "hex", N.SGL_TYPES)]
SGL_KEYED: Final = Header("nvme.cmd", "SGL Keyed Data Block descriptor", [
    F("sgl1.addr", 64, "Address", "hex"),
    F("sgl1.len", 24, "Length", unit="bytes"),
    F("sgl1.key", 32, "Key", "hex"),
    *_SGL_ID,
], little=True)
SGL_UNKEYED: Final = Header("nvme.cmd", "SGL descriptor", [
    F("sgl1.addr", 64, "Address", "hex"),
    F("sgl1.len", 32, "Length", unit="bytes"),
    F("sgl1.rsvd", 24, "Reserved", "bytes"),
    *_SGL_ID,
], little=True)
SGL_KEYED_TYPE: Final = 0x4
SGL_DATA_TYPE: Final = 0x0
SGL_LAST_SEGMENT: Final = 0x3
SGL_SEGMENT: Final = 0x2
SUBTYPE_OFFSET: Final = 0x1
SUBTYPE_INVALIDATE: Final = 0xF

# --- command dwords 10 to 15, by command ------------------------------------------------------------------
_DW12_15: Final = [_hexw("dword12", 32, "DWORD12"), _hexw("dword13", 32, "DWORD13"),
                   _hexw("dword14", 32, "DWORD14"), _hexw("dword15", 32, "DWORD15")]
GENERIC_DWORDS: Final = Header("nvme.cmd", "Command Dwords", [
    _hexw("dword10", 32, "DWORD10"), _hexw("dword11", 32, "DWORD11"), *_DW12_15], little=True)

IDENTIFY: Final = Header("nvme.cmd", "Identify", [
    _hexw("identify.dword10", 32, "DWORD10"), _hexw("identify.dword11", 32, "DWORD11"),
    _hexw("dword12", 32, "DWORD12"), _hexw("dword13", 32, "DWORD13"),
    _hexw("identify.dword14", 32, "DWORD14"), _hexw("dword15", 32, "DWORD15"),
], little=True, parts={
    "identify.dword10": [_hexw("identify.dword10.cns", 8, "Controller or Namespace Structure (CNS)", N.CNS),
                         _hexw("identify.dword10.rsvd", 8, "Reserved"),
                         _hexw("identify.dword10.cntid", 16, "Controller Identifier (CNTID)")],
    "identify.dword11": [_hexw("identify.dwrod11.nvmesetid", 16, "NVM Set Identifier (NVMSETID)"),
                         _hexw("identify.dword11.rsvd", 16, "Reserved")],
    "identify.dword14": [_hexw("identify.dword14.uuid_index", 7, "UUID Index"),
                         _hexw("identify.dword14.rsvd", 25, "Reserved")],
})

GET_LOG_PAGE: Final = Header("nvme.cmd", "Get Log Page", [
    _hexw("get_logpage.dword10", 32, "DWORD 10"), _hexw("get_logpage.dword11", 32, "DWORD 11"),
    F("get_logpage.lpo", 64, "Log Page Offset (DWORD 12 and DWORD 13)"),
    _hexw("get_logpage.dword14", 32, "DWORD 14"), _hexw("dword15", 32, "DWORD15"),
], little=True, parts={
    "get_logpage.dword10": [F("get_logpage.dword10.id", 8, "Log Page Identifier (LID)", "hex", N.LOG_PAGES),
                            _hexw("get_logpage.dword10.lsp", 5, "Log Specific Field (LSP)"),
                            _hexw("get_logpage.dword10.rsvd", 2, "Reserved"),
                            F("get_logpage.dword10.rae", 1, "Retain Asynchronous Event (RAE)", "bool"),
                            _hexw("get_logpage.dword10.numdl", 16, "Number of Dwords Lower (NUMDL)")],
    "get_logpage.dword11": [_hexw("get_logpage.dword11.numdu", 16, "Number of Dwords Upper (NUMDU)"),
                            _hexw("get_logpage.dword11.lsi", 16, "Log Specific Identifier")],
    "get_logpage.dword14": [_hexw("identify.get_logpage.dword14.uuid_index", 6, "UUID Index"),
                            _hexw("identify.get_logpage.dword14.rsvd", 26, "Reserved")],
})
LOG_NUMD: Final = Field("nvme.cmd.get_logpage.numd", 32, "Number of Dwords (0's based: NUMDU, NUMDL)")

# Features (§5.27.1): dword 11 of Set Features and dword 0 of a Get Features completion share a layout,
# declared once per feature: (key, the word's parts as Set Features names them, as Get Features does).
_AEC: Final = [_hexw("smart", 8, "SMART and Health Critical Warnings Bitmask"),
               F("ns", 1, "Namespace Attribute Notices", "bool"), F("fwa", 1, "Firmware Activation Notices", "bool"),
               F("tel", 1, "Telemetry Log Notices", "bool"), F("ana", 1, "ANA Change Notices", "bool"),
               F("plat", 1, "Predictable Latency Event Aggregate Log Change Notices", "bool"),
               F("lba", 1, "LBA Status Information Notices", "bool"),
               F("eg", 1, "Endurance Group Event Aggregate Log Change Notices", "bool"),
               _hexw("rsvd", 16, "Reserved"), F("disc", 1, "Discovery Log Page Change Notification", "bool")]
_FEATURE_WORDS: Final[dict[int, tuple[str, list[Field], list[Field]]]] = {
    0x01: ("arb", [_hexw("ab", 3, "Arbitration Burst"), _hexw("rsvd", 5, "Reserved"),
                   _hexw("lpw", 8, "Low Priority Weight"), _hexw("mpw", 8, "Medium Priority Weight"),
                   _hexw("hpw", 8, "High Priority Weight")], []),
    0x02: ("pm", [_hexw("ps", 5, "Power State"), _hexw("wh", 3, "Work Hint"), _hexw("rsvd", 24, "Reserved")], []),
    0x04: ("tt", [_hexw("tmpth", 16, "Temperature Threshold"), _hexw("tmpsel", 4, "Threshold Temperature Select"),
                  _hexw("thpsel", 2, "Threshold Type Select"), _hexw("rsvd", 10, "Reserved")], []),
    0x05: ("erec", [_hexw("tler", 16, "Time Limited Error Recovery (100 ms units)"),
                    F("dulbe", 1, "Deallocated or Unwritten Logical Block Error Enable", "bool"),
                    _hexw("rsvd", 15, "Reserved")], []),
    0x06: ("vwce", [F("wce", 1, "Volatile Write Cache Enable", "bool"), _hexw("rsvd", 31, "Reserved")], []),
    0x07: ("nq", [F("nsqr", 16, "Number of IO Submission Queues Requested (0's based)"),
                  F("ncqr", 16, "Number of IO Completion Queues Requested (0's based)")],
           [F("nsqa", 16, "Number of IO Submission Queues Allocated (0's based)"),
            F("ncqa", 16, "Number of IO Completion Queues Allocated (0's based)")]),
    0x08: ("irqc", [_hexw("thr", 16, "Aggregation Threshold"), _hexw("time", 16, "Aggregation Time (100 us units)")],
           []),
    0x0A: ("wan", [F("dn", 1, "Disable Normal", "bool"), _hexw("rsvd", 31, "Reserved")], []),
    0x0B: ("aec", _AEC, []),
    0x0C: ("apst", [F("apste", 1, "Autonomous Power State Transition Enable", "bool"), _hexw("rsvd", 31, "Reserved")],
           []),
    0x0F: ("kat", [F("kato", 32, "Keep Alive Timeout", unit="ms")], []),
    0x11: ("nops", [_hexw("noppme", 1, "Non-Operational Power State Permissive Mode Enable"),
                    _hexw("rsvd", 31, "Reserved")], []),
    0x17: ("san", [F("nodrm", 1, "No-Deallocate Response Mode", "bool"), _hexw("rsvd", 31, "Reserved")], []),
    0x80: ("swp", [_hexw("pbslc", 8, "Pre-boot Software Load Count"), _hexw("rsvd", 24, "Reserved")], []),
    0x81: ("hid", [F("exhid", 1, "Enable Extended Host Identifier", "bool"), _hexw("rsvd", 31, "Reserved")], []),
    0x83: ("rsrvp", [F("ptpl", 1, "Persist Through Power Loss", "bool"), _hexw("rsvd", 31, "Reserved")], []),
}


def _named(prefix: str, fields: list[Field]) -> list[Field]:
    return [F(f"{prefix}.{f.name}", f.bits, f.label, f.display, f.names, f.unit) for f in fields]


def _set_features(fid: int) -> Header:
    word = _FEATURE_WORDS.get(fid)
    dword11 = f"set_features.dword11.{word[0]}" if word is not None else "dword11"
    parts: dict[str, list[Field]] = {
        "set_features.dword10": [_hexw("set_features.dword10.fid", 8, "Feature Identifier", N.FEATURES),
                                 _hexw("set_features.dword10.rsvd", 23, "Reserved"),
                                 _hexw("set_features.dword10.sv", 1, "Save")],
        "set_features.dword14": [_hexw("set_features.dword14.uuid", 7, "UUID Index"),
                                 _hexw("set_features.dword14.rsvd", 25, "Reserved")]}
    if word is not None:
        parts[dword11] = _named(dword11, word[1])
    return Header("nvme.cmd", "Set Features", [
        _hexw("set_features.dword10", 32, "DWORD 10"), _hexw(dword11, 32, "DWORD11"),
        _hexw("dword12", 32, "DWORD12"), _hexw("dword13", 32, "DWORD13"),
        _hexw("set_features.dword14", 32, "DWORD 14"), _hexw("dword15", 32, "DWORD15")], little=True, parts=parts)


SET_FEATURES: Final = {fid: _set_features(fid) for fid in _FEATURE_WORDS}
SET_FEATURES_OTHER: Final = _set_features(-1)
GET_FEATURES: Final = Header("nvme.cmd", "Get Features", [
    _hexw("get_features.dword10", 32, "DWORD 10"), _hexw("dword11", 32, "DWORD11"),
    _hexw("dword12", 32, "DWORD12"), _hexw("dword13", 32, "DWORD13"),
    _hexw("get_features.dword14", 32, "DWORD 14"), _hexw("dword15", 32, "DWORD15"),
], little=True, parts={
    "get_features.dword10": [_hexw("get_features.dword10.fid", 8, "Feature Identifier", N.FEATURES),
                             _hexw("set_features.dword10.sel", 3, "Select", N.FEATURE_SELECT),
                             _hexw("get_features.dword10.rsvd", 21, "Reserved")],
    "get_features.dword14": [_hexw("get_features.dword14.uuid", 7, "UUID Index"),
                             _hexw("get_features.dword14.rsvd", 25, "Reserved")],
})

# NVM Read, Write, Compare (NVM Command Set 1.0 §3.2.4, §3.2.6, §3.3.1); Write Zeroes and Verify share it
_DSM_FREQ: Final = {0: "No frequency information", 1: "Typical", 2: "Infrequent writes and reads",
                    3: "Infrequent writes, frequent reads", 4: "Frequent writes, infrequent reads",
                    5: "Frequent writes and reads", 6: "One time read", 7: "Speculative read", 8: "Overwritten soon"}
_DSM_LAT: Final = {0: "None", 1: "Idle", 2: "Normal", 3: "Low"}
READ_WRITE: Final = Header("nvme.cmd", "Read/Write", [
    F("slba", 64, "Start LBA", "hex"),
    F("nlb", 16, "Number of Logical Blocks (0's based)"),
    _hexw("rsvd2", 10, "Reserved"),
    _hexw("prinfo.lbrtag", 1, "Check Logical Block Reference Tag"),
    _hexw("prinfo.apptag", 1, "Check Application Tag"),
    _hexw("prinfo.guard", 1, "Check Guard"),
    _hexw("prinfo.action", 1, "Protection Information Action (PRACT)"),
    _hexw("fua", 1, "Force Unit Access"),
    _hexw("lr", 1, "Limited Retry"),
    _hexw("dsm.access_freq", 4, "Access frequency", _DSM_FREQ),
    _hexw("dsm.access_lat", 2, "Access latency", _DSM_LAT),
    _hexw("dsm.seq_req", 1, "Sequential Request"),
    _hexw("dsm.incompressible", 1, "Incompressible"),
    F("rsvd3", 24, "Reserved", "bytes"),
    _hexw("eilbrt", 32, "Expected Initial Logical Block Reference Tag"),
    _hexw("elbat", 16, "Expected Logical Block Application Tag"),
    _hexw("elbatm", 16, "Expected Logical Block Application Tag Mask"),
], little=True)
NLB_COUNT: Final = Field("nvme.cmd.nlb_count", 0, "Logical blocks (NLB + 1)")
DATASET_MANAGEMENT: Final = Header("nvme.cmd", "Dataset Management", [
    F("dsm.nr", 8, "Number of Ranges (0's based)"), _hexw("dsm.rsvd0", 24, "Reserved"),
    F("dsm.idr", 1, "Integral Dataset for Read", "bool"), F("dsm.idw", 1, "Integral Dataset for Write", "bool"),
    F("dsm.ad", 1, "Deallocate", "bool"), _hexw("dsm.rsvd1", 29, "Reserved"), *_DW12_15,
], little=True)
DSM_RANGE: Final = Header("nvme.dsm", "Dataset Management range", [
    _hexw("range.cattr", 32, "Context Attributes"), F("range.nlb", 32, "Length in logical blocks"),
    F("range.slba", 64, "Starting LBA", "hex"),
], little=True)

# Command dwords 10-15 by opcode: admin queue, then I/O queues (Set Features: by feature, below)
ADMIN_DWORDS: Final[dict[int, Header]] = {0x06: IDENTIFY, 0x02: GET_LOG_PAGE, 0x0A: GET_FEATURES}
IO_DWORDS: Final[dict[int, Header]] = {0x01: READ_WRITE, 0x02: READ_WRITE, 0x05: READ_WRITE, 0x08: READ_WRITE,
                                       0x04: READ_WRITE, 0x0C: READ_WRITE, 0x09: DATASET_MANAGEMENT}
IO_DATA_OUT: Final = frozenset({0x01, 0x05, 0x09, 0x0D, 0x11, 0x15, 0x19})   # host to controller
IO_DATA_IN: Final = frozenset({0x02, 0x0E})
NO_DATA_IO: Final = frozenset({0x00, 0x04, 0x08})

# --- Fabrics commands (NVMe over Fabrics 1.1 §3.3) --------------------------------------------------------
CONNECT_HEAD: Final = Header("nvme.fabrics.cmd.connect", "Connect", [F("rsvd1", 152, "Reserved", "bytes")],
                             little=True)
CONNECT: Final = Header("nvme.fabrics.cmd.connect", "Connect", [
    F("recfmt", 16, "Record Format"),
    F("qid", 16, "Queue ID"),
    F("sqsize", 16, "Submission Queue Size (0's based)"),
    _hexw("cattr", 8, "Connect Attributes"),
    F("rsvd2", 8, "Reserved", "bytes"),
    F("kato", 32, "Keep Alive Timeout", unit="ms"),
    F("rsvd3", 96, "Reserved", "bytes"),
], little=True, parts={"cattr": [_hexw("cattr.pc", 2, "Priority Class", N.PRIORITY_CLASSES),
                                 _hexw("cattr.dfc", 1, "Disable SQ Flow Control"),
                                 _hexw("cattr.dioq", 1, "Support Deletion of IO Queues"),
                                 _hexw("cattr.rsvd", 4, "Reserved")]})
PROPERTY: Final = Header("nvme.fabrics.cmd.prop_get_set", "Property Get/Set", [
    F("rsvd0", 280, "Reserved", "bytes"),
    _hexw("attrib", 8, "Attributes"),
    F("rsvd1", 24, "Reserved", "bytes"),
    _hexw("offset", 32, "Offset", N.PROPERTIES),
], little=True, parts={"attrib": [_hexw("attrib.size", 3, "Property Size", N.PROPERTY_SIZES),
                                  _hexw("attrib.rsvd", 5, "Reserved")]})
PROPERTY_GET_TAIL: Final = Header("nvme.fabrics.cmd.prop_get", "Property Get", [F("rsvd2", 128, "Reserved", "bytes")],
                                  little=True)
PROPERTY_SET_TAIL: Final = Header("nvme.fabrics.cmd.prop_set", "Property Set", [F("rsvd", 64, "Reserved", "bytes")],
                                  little=True)
DISCONNECT: Final = Header("nvme.fabrics.cmd.disconnect", "Disconnect", [
    F("rsvd0", 280, "Reserved", "bytes"), F("recfmt", 16, "Record Format"), F("rsvd1", 176, "Reserved", "bytes"),
], little=True)
AUTH_HEAD: Final = Header("nvme.fabrics.cmd.auth", "Authentication", [F("rsvd1", 152, "Reserved", "bytes")],
                          little=True)
AUTH: Final = Header("nvme.fabrics.cmd.auth", "Authentication", [
    _hexw("rsvd2", 8, "Reserved"), _hexw("spsp0", 8, "SP Specific 0"), _hexw("spsp1", 8, "SP Specific 1"),
    _hexw("secp", 8, "Security Protocol"), F("al", 32, "Allocation Length (Receive) / Transfer Length (Send)"),
    F("rsvd3", 128, "Reserved", "bytes"),
], little=True)
FABRICS_GENERIC: Final = Header("nvme.fabrics.cmd.generic", "Fabrics Command", [
    F("rsvd1", 152, "Reserved", "bytes"), F("field", 320, "Fabric Cmd specific field", "bytes"),
], little=True)
FCTYPE_CONNECT: Final = 0x01
FCTYPE_PROPERTY_SET: Final = 0x00
FCTYPE_PROPERTY_GET: Final = 0x04
FCTYPE_DISCONNECT: Final = 0x08
FCTYPE_AUTH_SEND: Final = 0x05
FCTYPE_AUTH_RECEIVE: Final = 0x06

# Controller properties: the value of a Property Set, or of a Property Get's completion (dwords 0-1)
CC: Final = Header("nvme.fabrics.prop_get_set", "Controller Configuration", [
    _hexw("cc", 32, "Controller Configuration"), _hexw("data.rsvd", 32, "Reserved")], little=True, parts={"cc": [
        _hexw("cc.en", 1, "Enable"), _hexw("cc.rsvd0", 3, "Reserved"), _hexw("cc.css", 3, "I/O Command Set Selected"),
        F("cc.mps", 4, "Memory Page Size (2 ^ (12 + MPS))"), _hexw("cc.ams", 3, "Arbitration Mechanism Selected"),
        _hexw("cc.shn", 2, "Shutdown Notification", N.SHUTDOWN_NOTIFICATION),
        F("cc.iosqes", 4, "I/O Submission Queue Entry Size (2 ^ n)"),
        F("cc.iocqes", 4, "I/O Completion Queue Entry Size (2 ^ n)"), _hexw("cc.rsvd1", 8, "Reserved")]})
CSTS: Final = Header("nvme.fabrics.prop_get_set", "Controller Status", [
    _hexw("csts", 32, "Controller Status"), _hexw("data.rsvd", 32, "Reserved")], little=True, parts={"csts": [
        _hexw("csts.rdy", 1, "Ready"), _hexw("csts.cfs", 1, "Controller Fatal Status"),
        _hexw("csts.shst", 2, "Shutdown Status", N.SHUTDOWN_STATUS),
        _hexw("csts.nssro", 1, "NVM Subsystem Reset Occurred"),
        _hexw("csts.pp", 1, "Processing Paused"), _hexw("csts.rsvd", 26, "Reserved")]})
VS: Final = Header("nvme.fabrics", "Version", [
    _hexw("prop_get.vs", 32, "Version"), _hexw("prop_get_set.data.rsvd", 32, "Reserved")], little=True, parts={
        "prop_get.vs": [F("prop_get.vs.ter", 8, "Tertiary Version"), F("prop_get.vs.mnr", 8, "Minor Version"),
                        F("prop_get.vs.mjr", 16, "Major Version")]})
CAP: Final = Header("nvme.fabrics.prop_get", "Controller Capabilities", [_hexw("ccap", 64, "Controller Capabilities")],
                    little=True, parts={"ccap": [
                        F("ccap.mqes", 16, "Maximum Queue Entries Supported (0's based)"),
                        F("ccap.cqr", 1, "Contiguous Queues Required", "bool"),
                        F("ccap.ams.wrr", 1, "Weighted Round Robin with Urgent Priority Class", "bool"),
                        F("ccap.ams.vs", 1, "Arbitration Mechanism Vendor Specific", "bool"),
                        _hexw("ccap.rsvd0", 5, "Reserved"), F("ccap.to", 8, "Timeout (500 ms units)"),
                        F("ccap.dstrd", 4, "Doorbell Stride"),
                        F("ccap.nssrs", 1, "NVM Subsystem Reset Supported", "bool"),
                        _hexw("ccap.css", 8, "Command Sets Supported"),
                        F("ccap.bps", 1, "Boot Partition Support", "bool"),
                        _hexw("ccap.rsdv1", 2, "Reserved"), F("ccap.mpsmin", 4, "Memory Page Size Minimum"),
                        F("ccap.mpsmax", 4, "Memory Page Size Maximum"),
                        F("ccap.pmrs", 1, "Persistent Memory Region Supported", "bool"),
                        F("ccap.cmbs", 1, "Controller Memory Buffer Supported", "bool"),
                        _hexw("ccap.rsvd2", 6, "Reserved")]})
PROPERTY_DATA: Final = Header("nvme.fabrics.prop_get_set", "Property Data", [
    _hexw("data.4B", 32, "Value"), _hexw("data.rsvd", 32, "Reserved")], little=True)
PROPERTY_DATA8: Final = Header("nvme.fabrics.prop_get_set", "Property Data", [_hexw("data.8B", 64, "Value")],
                               little=True)
PROPERTY_VALUES: Final[dict[int, Header]] = {0x00: CAP, 0x08: VS, 0x14: CC, 0x1C: CSTS}
PROPERTY_RAW: Final = Field("nvme.fabrics.prop_get_set.data", 64, "Property Data", "bytes")

# --- the Completion Queue Entry ---------------------------------------------------------------------------
CQE: Final = Header("nvme.cqe", "NVMe Completion", [
    _hexw("dword0", 32, "DWORD0"),
    _hexw("dword1", 32, "DWORD1"),
    _hexw("sqhd", 16, "SQ Head Pointer"),
    _hexw("sqid", 16, "SQ Identifier"),
    _hexw("cid", 16, "Command Identifier"),
    _hexw("status", 16, "Status Field"),
], little=True, parts={"status": [
    _hexw("status.p", 1, "Phase Tag"), _hexw("status.sc", 8, "Status Code"),
    _hexw("status.sct", 3, "Status Code Type", N.SCT), _hexw("status.crd", 2, "Command Retry Delay"),
    F("status.m", 1, "More Information in Log Page", "bool"), F("status.dnr", 1, "Do Not Retry", "bool")]})
STATUS_NAME: Final = Field("nvme.cqe.status.name", 0, "Status", "str")
# A Fabrics command's completion: dwords 0-1 by command type, then the same tail
FABRICS_CQE_TAIL: Final = Header("nvme.cqe", "NVMe Completion", [
    _hexw("sqhd", 16, "SQ Head Pointer"), _hexw("sqid", 16, "SQ Identifier"), _hexw("cid", 16, "Command Identifier"),
    _hexw("status", 16, "Status Field")], little=True, parts={"status": [
        _hexw("status.rsvd", 1, "Reserved"), _hexw("status.sc", 8, "Status Code"),
        _hexw("status.sct", 3, "Status Code Type", N.SCT), _hexw("status.crd", 2, "Command Retry Delay"),
        F("status.m", 1, "More Information in Log Page", "bool"), F("status.dnr", 1, "Do Not Retry", "bool")]})
CONNECT_CQE: Final = Header("nvme.fabrics.cqe.connect", "Connect Response", [
    _hexw("cntrlid", 16, "Controller ID"), _hexw("authreq", 16, "Authentication Required"),
    F("rsvd", 32, "Reserved", "bytes")], little=True)
PROPERTY_SET_CQE: Final = Header("nvme.fabrics.cqe.prop_set", "Property Set Response", [
    F("rsvd", 64, "Reserved", "bytes")], little=True)
FABRICS_CQE: Final = Header("nvme.fabrics.cqe", "Fabrics Response", [_hexw("sts", 64, "Cmd specific Status")],
                            little=True)
# dword 0 of a completion, by command: Asynchronous Event, Set Features Number of Queues, Get Features
AER_DWORD0: Final = Header("nvme.cqe", "Asynchronous Event", [
    _hexw("dword0.aev", 32, "DWORD0"), _hexw("dword1", 32, "DWORD1")], little=True, parts={"dword0.aev": [
        _hexw("dword0.aev.aet", 3, "Asynchronous Event Type", N.AER_TYPES), _hexw("dword0.aev.rsvd0", 5, "Reserved"),
        _hexw("dword0.aev.aei", 8, "Asynchronous Event Information"),
        F("dword0.aev.lpi", 8, "Log Page Identifier", "hex", N.LOG_PAGES), _hexw("dword0.aev.rsvd1", 8, "Reserved")]})
SET_NQ_DWORD0: Final = Header("nvme.cqe", "Number of Queues", [
    _hexw("dword0.set_features.nq", 32, "Number of Queues Allocated"), _hexw("dword1", 32, "DWORD1")], little=True,
    parts={"dword0.set_features.nq": [
        F("dword0.set_features.nq.nsqa", 16, "I/O Submission Queues Allocated (0's based)"),
        F("dword0.set_features.ncqa", 16, "I/O Completion Queues Allocated (0's based)")]})


def _get_features_dword0(fid: int) -> Header:
    key, set_parts, get_parts = _FEATURE_WORDS[fid]
    name = f"dword0.get_features.{key}"
    return Header("nvme.cqe", "Get Features", [_hexw(name, 32, "DWORD0"), _hexw("dword1", 32, "DWORD1")],
                  little=True, parts={name: _named(name, get_parts or set_parts)})


GET_FEATURES_DWORD0: Final = {fid: _get_features_dword0(fid) for fid in _FEATURE_WORDS}
CQE_TAIL: Final = Header("nvme.cqe", "NVMe Completion", [
    _hexw("sqhd", 16, "SQ Head Pointer"), _hexw("sqid", 16, "SQ Identifier"), _hexw("cid", 16, "Command Identifier"),
    _hexw("status", 16, "Status Field")], little=True, parts={"status": [
        _hexw("status.p", 1, "Phase Tag"), _hexw("status.sc", 8, "Status Code"),
        _hexw("status.sct", 3, "Status Code Type", N.SCT), _hexw("status.crd", 2, "Command Retry Delay"),
        F("status.m", 1, "More Information in Log Page", "bool"), F("status.dnr", 1, "Do Not Retry", "bool")]})

# Links between the packets of one command, as tshark names them
CMD_PKT: Final = Field("nvme.cmd_pkt", 0, "Command in frame")
CMD_LATENCY: Final = Field("nvme.cmd_latency", 0, "Command latency", "float", unit="ms")
FABRICS_CMD_PKT: Final = Field("nvme.fabrics.cmd_pkt", 0, "Fabric Command in frame")
FABRICS_CMD_LATENCY: Final = Field("nvme.fabrics.cmd_latency", 0, "Fabric command latency", "float", unit="ms")
CMD_NAME: Final = Field("nvme.cmd.name", 0, "Command", "str")
ICD_LEN: Final = Field("nvme.icd_len", 0, "In-capsule data length", unit="bytes")
UNMATCHED: Final = Field("nvme.cqe.unmatched", 0, "No command with this CID is outstanding", "bool")


# --- the facts, for the layers above and the analysis ------------------------------------------------------
@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Sgl:
    """One SGL descriptor of a command: its type and sub type, address (or offset in the capsule), length,
    and key (keyed data blocks only; else None)."""

    __slots__ = ("type", "subtype", "address", "length", "key")

    def __init__(self, type: int, subtype: int, address: int, length: int, key: int | None) -> None:
        self.type = type
        self.subtype = subtype
        self.address = address
        self.length = length
        self.key = key

    @property
    def keyed(self) -> bool:
        return self.type == SGL_KEYED_TYPE

    @property
    def invalidate(self) -> bool:
        """A keyed data block whose key the controller may invalidate remotely (sub type 0xF, RDMA binding)."""
        return self.type == SGL_KEYED_TYPE and self.subtype == SUBTYPE_INVALIDATE

    @property
    def in_capsule(self) -> bool:
        return self.type == SGL_DATA_TYPE and self.subtype == SUBTYPE_OFFSET

    def __repr__(self) -> str:
        key = f" key=0x{self.key:x}" if self.key is not None else ""
        return f"<Sgl {self.type:x}/{self.subtype:x} addr=0x{self.address:x} len={self.length}{key}>"


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Connect:
    """What a Fabrics Connect asks: the queue, its size, attributes and keep-alive, and (from its data, when
    the capture holds it) the host and subsystem it names and the controller it asks for."""

    __slots__ = ("recfmt", "qid", "sqsize", "cattr", "kato", "hostid", "cntlid", "subnqn", "hostnqn")

    def __init__(self, recfmt: int, qid: int, sqsize: int, cattr: int, kato: int) -> None:
        self.recfmt = recfmt
        self.qid = qid
        self.sqsize = sqsize          # 0's based
        self.cattr = cattr
        self.kato = kato              # ms
        self.hostid: bytes | None = None
        self.cntlid: int | None = None
        self.subnqn: str | None = None
        self.hostnqn: str | None = None


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class NvmeCommand:
    """One command capsule.  ``qid`` is the queue's (None while unknown), ``fctype`` set for Fabrics commands;
    ``sgls`` the data descriptors in wire order (SGL1, or the Last Segment list it points at); ``icd`` the
    in-capsule data length; ``nlb`` the NVM commands' 0's based block count, ``slba`` their first block;
    ``cdw10``..``cdw15`` the command dwords; ``frames`` the SENDs the capsule came in; ``seq`` the
    transport's sequence number of the capsule (a retransmitted SEND has the same), ``retransmission_of``
    the frame of the first copy when this is a copy of a capsule seen already."""

    __slots__ = ("qid", "cid", "opcode", "fctype", "nsid", "psdt", "fuse", "sgls", "icd", "slba", "nlb", "cdw10",
                 "cdw11", "cdw12", "cdw13", "cdw14", "cdw15", "connect", "frame", "frames", "ts", "malformed",
                 "name", "completion", "seq", "retransmission_of", "lba_size")

    def __init__(self, qid: int | None, cid: int, opcode: int, fctype: int | None, nsid: int, frame: int,
                 ts: int) -> None:
        self.qid = qid
        self.cid = cid
        self.opcode = opcode
        self.fctype = fctype
        self.nsid = nsid
        self.psdt = 0
        self.fuse = 0
        self.sgls: list[Sgl] = []
        self.icd = 0
        self.slba: int | None = None
        self.nlb: int | None = None
        self.cdw10 = self.cdw11 = self.cdw12 = self.cdw13 = self.cdw14 = self.cdw15 = 0
        self.connect: Connect | None = None
        self.frame = frame
        self.frames: list[int] = [frame]
        # Identify Namespace: the LBA data size of the format in use, once its data came (analysis: NLB x it)
        self.lba_size: int | None = None
        self.ts = ts
        self.malformed: str | None = None
        self.name = ""
        self.completion: NvmeCompletion | None = None
        self.seq: int | None = None
        self.retransmission_of: int | None = None

    @property
    def admin(self) -> bool:
        return self.qid == 0

    @property
    def fabrics(self) -> bool:
        return self.fctype is not None

    @property
    def blocks(self) -> int | None:
        """Logical blocks moved by an NVM command (NLB + 1), else None."""
        return self.nlb + 1 if self.nlb is not None else None

    def __repr__(self) -> str:
        return f"<NvmeCommand q={self.qid} cid=0x{self.cid:04x} {self.name}>"


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class NvmeCompletion:
    """One response capsule; ``command`` the command it completes (None when not seen), ``invalidated`` the key
    the transport invalidated with it (Send with Invalidate), ``latency`` ns since the command."""

    __slots__ = ("qid", "cid", "sqid", "sqhd", "dw0", "dw1", "status", "frame", "ts", "command", "invalidated",
                 "latency", "seq", "retransmission_of")

    def __init__(self, qid: int | None, cid: int, sqid: int, sqhd: int, dw0: int, dw1: int, status: int, frame: int,
                 ts: int) -> None:
        self.qid = qid
        self.cid = cid
        self.sqid = sqid
        self.sqhd = sqhd
        self.dw0 = dw0
        self.dw1 = dw1
        self.status = status        # the 16-bit field: phase, SC, SCT, CRD, More, DNR
        self.frame = frame
        self.ts = ts
        self.command: NvmeCommand | None = None
        self.invalidated: int | None = None
        self.latency: int | None = None
        self.seq: int | None = None
        self.retransmission_of: int | None = None    # a copy of the completion in that frame

    @property
    def sc(self) -> int:
        return (self.status >> 1) & 0xFF

    @property
    def sct(self) -> int:
        return (self.status >> 9) & 0x7

    @property
    def crd(self) -> int:
        return (self.status >> 12) & 0x3

    @property
    def more(self) -> bool:
        return bool(self.status & 0x4000)

    @property
    def dnr(self) -> bool:
        return bool(self.status & 0x8000)

    @property
    def ok(self) -> bool:
        return (self.status >> 1) & 0x7FF == 0

    def __repr__(self) -> str:
        return f"<NvmeCompletion q={self.qid} cid=0x{self.cid:04x} sct={self.sct} sc=0x{self.sc:02x}>"


NVME_COMMANDS: Final[Note[list[NvmeCommand]]] = Note("nvme.commands")         # the command capsules of a packet
NVME_COMPLETIONS: Final[Note[list[NvmeCompletion]]] = Note("nvme.completions")  # its response capsules


def command_name(cmd: NvmeCommand) -> str:
    """The command's name, by its queue's command set."""
    if cmd.fctype is not None:
        name = N.FCTYPES.get(cmd.fctype)
        return name if name is not None else f"Fabrics type 0x{cmd.fctype:02x}"
    table = N.ADMIN_OPCODES if cmd.qid == 0 or (cmd.qid is None and not _looks_io(cmd)) else N.IO_OPCODES
    name = table.get(cmd.opcode)
    return name if name is not None else f"Opcode 0x{cmd.opcode:02x}"


def _looks_io(cmd: NvmeCommand) -> bool:
    """A command on a queue whose QID is not known yet: I/O when it names a namespace with an NVM opcode."""
    return cmd.nsid != 0 and cmd.opcode in N.IO_OPCODES


def is_admin(cmd: NvmeCommand) -> bool:
    return cmd.qid == 0 or (cmd.qid is None and not _looks_io(cmd))


def status_text(cqe: NvmeCompletion) -> str:
    cmd = cqe.command
    fabrics = cmd is not None and cmd.fctype is not None
    io = cmd is not None and not fabrics and not is_admin(cmd)
    return N.status_name(cqe.sct, cqe.sc, fabrics, io)


# --- the queues ---------------------------------------------------------------------------------------------
_COMMAND_COST: Final = 512          # what an outstanding command costs, charged to the memory budget
MAX_OUTSTANDING: Final = 4096       # commands waiting for their completion on one queue (CIDs are 16 bits)
MAX_QUEUES: Final = 65536           # queues followed at once (the oldest goes first)
MAX_RECENT: Final = 256             # completed commands kept per queue to know copies by


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class NvmeQueue:
    """One NVMe queue (a queue pair of the transport): its QID and controller when known, the sizes its
    setup gave, and its commands waiting for their completion, by CID."""

    __slots__ = ("key", "qid", "cntlid", "hsqsize", "hrqsize", "crqsize", "sqsize", "kato", "learnt", "pending",
                 "recent", "state")

    def __init__(self, key: tuple, state: NvmeState) -> None:
        self.key = key
        self.qid: int | None = None
        self.cntlid: int | None = None
        self.hsqsize: int | None = None   # transport binding's sizes (RDMA CM private data)
        self.hrqsize: int | None = None
        self.crqsize: int | None = None
        self.sqsize: int | None = None    # Connect's (0's based)
        self.kato: int | None = None
        self.learnt = ""                  # where the QID came from: "cm", "connect", "completion"
        self.pending: dict[int, NvmeCommand] = {}
        # the last commands completed, by CID: a copy of a command or completion sent again after its
        # completion (the transport retransmitting) is known by them
        self.recent: dict[int, NvmeCommand] = {}
        self.state = state

    def learn_qid(self, qid: int, how: str) -> None:
        if self.qid is None:
            self.qid = qid
            self.learnt = how

    def submit(self, cmd: NvmeCommand) -> NvmeCommand | None:
        """Keep ``cmd`` until its completion; returns a command it replaces (its CID was still outstanding)."""
        pending = self.pending
        old = pending.get(cmd.cid)
        if old is not None:
            del pending[cmd.cid]
        else:
            self.state.charge(_COMMAND_COST)
        pending[cmd.cid] = cmd
        if len(pending) > MAX_OUTSTANDING:
            first = next(iter(pending))
            del pending[first]
            self.state.release(_COMMAND_COST)
        return old

    def complete(self, cid: int) -> NvmeCommand | None:
        """The outstanding command ``cid`` completes (None: none is): it moves to the recent ones, with its
        charge to the memory budget."""
        cmd = self.pending.pop(cid, None)
        if cmd is None:
            return None
        recent = self.recent
        if recent.pop(cid, None) is not None:
            self.state.release(_COMMAND_COST)        # the older command of this CID goes
        elif len(recent) >= MAX_RECENT:
            del recent[next(iter(recent))]
            self.state.release(_COMMAND_COST)
        recent[cid] = cmd
        return cmd

    def copy_of(self, cid: int, seq: int | None) -> NvmeCommand | None:
        """The command a capsule with ``cid`` and transport sequence ``seq`` is a copy of: an outstanding or
        recently completed command that came with the same sequence number (None: a new command)."""
        if seq is None:
            return None
        cmd = self.pending.get(cid)
        if cmd is None:
            cmd = self.recent.get(cid)
        return cmd if cmd is not None and cmd.seq == seq else None


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class NvmeState(Holder):
    """Every queue of a capture, by the transport's key for it; a holder of the memory budget (outstanding
    commands), giving up the oldest queues' commands first."""

    __slots__ = ("queues", "budget")

    def __init__(self, budget: Budget) -> None:
        self.name = "outstanding NVMe commands"
        self.held = 0
        self.budget = budget
        budget.join(self)
        self.queues: dict[tuple, NvmeQueue] = {}

    def queue(self, key: tuple) -> NvmeQueue:
        q = self.queues.get(key)
        if q is None:
            if len(self.queues) >= MAX_QUEUES:
                old = self.queues.pop(next(iter(self.queues)))
                self.release(_COMMAND_COST * (len(old.pending) + len(old.recent)))
            q = self.queues[key] = NvmeQueue(key, self)
        return q

    def charge(self, n: int) -> None:
        self.budget.charge(self, n)

    def release(self, n: int) -> None:
        self.budget.release(self, n)

    def shed(self, need: int) -> int:
        start = self.held
        gone = 0
        for q in list(self.queues.values()):
            for kept in (q.recent, q.pending):
                while kept and start - self.held < need:
                    del kept[next(iter(kept))]
                    self.release(_COMMAND_COST)
                    gone += 1
            if start - self.held >= need:
                break
        return gone


def state_of(ctx: object) -> NvmeState:
    """The capture's NVMe state (``ctx``: the engine's Session; a bare call gets a state of its own)."""
    if not isinstance(ctx, Session):
        return NvmeState(Budget())
    st: NvmeState | None = ctx.state.get("nvme")
    if st is None:
        st = ctx.state["nvme"] = NvmeState(ctx.budget)
    return st


# --- dissection ------------------------------------------------------------------------------------------
def _u16(b: bytes, o: int) -> int:
    return b[o] | b[o + 1] << 8


def _u32(b: bytes, o: int) -> int:
    return b[o] | b[o + 1] << 8 | b[o + 2] << 16 | b[o + 3] << 24


def _u64(b: bytes, o: int) -> int:
    return _u32(b, o) | _u32(b, o + 4) << 32


def _layer(parent: Layer, proto: str, hdr: Header, off: int, label: str | None = None) -> Layer:
    lay = parent.child(proto, hdr, off, hdr.size, label)
    if hdr.parts:
        lay.lazy(add_parts)
    return lay


class _PartsThen:
    """A layer's fill: its header's parts, then one item more, in the order adding them at once gives."""

    __slots__ = ("field", "value", "off", "length")

    def __init__(self, field: Field, value: object, off: int, length: int) -> None:
        self.field = field
        self.value = value
        self.off = off
        self.length = length

    def __call__(self, lay: Layer) -> None:
        add_parts(lay)
        lay.add(self.field, self.value, self.off, self.length)


def _add_after_parts(lay: Layer, hdr: Header, field: Field, value: object, off: int, length: int) -> None:
    """Add an item after the parts of ``lay`` (made by ``_layer`` with ``hdr``) without decoding them now:
    added at once, it would run the layer's fill, and a summary line reads neither."""
    if hdr.parts:
        lay.lazy(_PartsThen(field, value, off, length))
    else:
        lay.add(field, value, off, length)


def read_sgl(buf: bytes, off: int) -> Sgl:
    ident = buf[off + 15]
    kind, sub = ident >> 4, ident & 0xF
    if kind == SGL_KEYED_TYPE:
        return Sgl(kind, sub, _u64(buf, off), buf[off + 8] | buf[off + 9] << 8 | buf[off + 10] << 16,
                   _u32(buf, off + 11))
    return Sgl(kind, sub, _u64(buf, off), _u32(buf, off + 8), None)


def _show_sgl(parent: Layer, buf: bytes, off: int, sgl: Sgl, proto: str = "nvme.cmd.sgl1") -> Layer:
    return parent.child(proto, SGL_KEYED if sgl.keyed else SGL_UNKEYED, off, SGL_SIZE, "SGL1" if proto ==
                        "nvme.cmd.sgl1" else f"SGL descriptor: {N.SGL_TYPES.get(sgl.type, 'Reserved')}")


def dissect_command(pkt: Packet, buf: bytes, off: int, end: int, queue: NvmeQueue | None) -> NvmeCommand:
    """The command capsule ``buf[off:end]`` (at least the 64-byte SQE): its layers, Info, and facts."""
    opcode = buf[off]
    cid = _u16(buf, off + 2)
    qid = queue.qid if queue is not None else None
    fabrics = opcode == N.FABRICS_OPCODE
    cmd = NvmeCommand(qid, cid, opcode, buf[off + 4] if fabrics else None, 0 if fabrics else _u32(buf, off + 4),
                      pkt.frame.num, pkt.frame.ts)
    flags = buf[off + 1]
    cmd.fuse = flags & 3
    cmd.psdt = flags >> 6
    cmd.cdw10, cmd.cdw11, cmd.cdw12 = _u32(buf, off + 40), _u32(buf, off + 44), _u32(buf, off + 48)
    cmd.cdw13, cmd.cdw14, cmd.cdw15 = _u32(buf, off + 52), _u32(buf, off + 56), _u32(buf, off + 60)
    cmd.name = command_name(cmd)
    admin = is_admin(cmd)
    head = FABRICS_SQE if fabrics else ADMIN_SQE if admin else IO_SQE
    lay = pkt.add_layer("nvme", head, buf, off, end - off, f"NVMe {'Fabrics ' if fabrics else ''}Command: {cmd.name}")
    lay.add(CMD_NAME, cmd.name, off, 1)
    sgl = read_sgl(buf, off + SGL_AT)
    if fabrics:
        _fabrics_command(pkt, lay, buf, off, cmd, sgl)
    else:
        _show_sgl(lay, buf, off + SGL_AT, sgl)
        cmd.sgls.append(sgl)
        tail = _dwords(cmd, admin)
        dw = _layer(lay, "nvme.cmd", tail, off + CDW10_AT, f"{cmd.name} (DWORD10-15)")
        if tail is GET_LOG_PAGE:
            _add_after_parts(dw, tail, LOG_NUMD, (cmd.cdw11 & 0xFFFF) << 16 | cmd.cdw10 >> 16, off + 42, 4)
        elif tail is READ_WRITE:
            cmd.slba = _u64(buf, off + 40)
            cmd.nlb = cmd.cdw12 & 0xFFFF
            _add_after_parts(dw, tail, NLB_COUNT, cmd.nlb + 1, off + 48, 2)
    pkt.proto = "NVMe"
    return cmd


def _dwords(cmd: NvmeCommand, admin: bool) -> Header:
    if admin:
        if cmd.opcode == 0x09:
            hdr = SET_FEATURES.get(cmd.cdw10 & 0xFF)
            return hdr if hdr is not None else SET_FEATURES_OTHER
        got = ADMIN_DWORDS.get(cmd.opcode)
    else:
        got = IO_DWORDS.get(cmd.opcode)
    return got if got is not None else GENERIC_DWORDS


def _fabrics_command(pkt: Packet, lay: Layer, buf: bytes, off: int, cmd: NvmeCommand, sgl: Sgl) -> None:
    fctype = cmd.fctype
    if fctype == FCTYPE_CONNECT:
        lay.child("nvme.fabrics.cmd.connect", CONNECT_HEAD, off + 5, CONNECT_HEAD.size, "Connect")
        _show_sgl(lay, buf, off + SGL_AT, sgl)
        cmd.sgls.append(sgl)
        _layer(lay, "nvme.fabrics.cmd.connect", CONNECT, off + CDW10_AT, "Connect")
        cmd.connect = Connect(_u16(buf, off + 40), _u16(buf, off + 42), _u16(buf, off + 44), buf[off + 46],
                              _u32(buf, off + 48))
    elif fctype in (FCTYPE_PROPERTY_GET, FCTYPE_PROPERTY_SET):
        _layer(lay, "nvme.fabrics.cmd.prop_get_set", PROPERTY, off + 5)
        if fctype == FCTYPE_PROPERTY_SET:
            value_hdr = _property_header(cmd)
            value = _layer(lay, "nvme.fabrics.prop_get_set", value_hdr, off + 48, "Property Data")
            value.add(PROPERTY_RAW, bytes(buf[off + 48:off + 56]), off + 48, 8)
            lay.child("nvme.fabrics.cmd.prop_set", PROPERTY_SET_TAIL, off + 56, PROPERTY_SET_TAIL.size)
        else:
            lay.child("nvme.fabrics.cmd.prop_get", PROPERTY_GET_TAIL, off + 48, PROPERTY_GET_TAIL.size)
    elif fctype == FCTYPE_DISCONNECT:
        lay.child("nvme.fabrics.cmd.disconnect", DISCONNECT, off + 5, DISCONNECT.size)
    elif fctype in (FCTYPE_AUTH_SEND, FCTYPE_AUTH_RECEIVE):
        lay.child("nvme.fabrics.cmd.auth", AUTH_HEAD, off + 5, AUTH_HEAD.size, "Authentication")
        _show_sgl(lay, buf, off + SGL_AT, sgl)
        cmd.sgls.append(sgl)
        lay.child("nvme.fabrics.cmd.auth", AUTH, off + CDW10_AT, AUTH.size, "Authentication")
    else:
        lay.child("nvme.fabrics.cmd.generic", FABRICS_GENERIC, off + 5, FABRICS_GENERIC.size)


def _property_header(cmd: NvmeCommand) -> Header:
    """The declaration of the property a Property Get or Set names (by its offset), or its raw value."""
    got = PROPERTY_VALUES.get(cmd.cdw11)
    if got is not None:
        return got
    return PROPERTY_DATA8 if cmd.cdw10 & 0x7 == 1 else PROPERTY_DATA


def in_capsule_sgls(pkt: Packet, lay: Layer, buf: bytes, off: int, end: int, cmd: NvmeCommand) -> None:
    """SGL1 a Last Segment in the capsule (sub type Offset): its descriptors, read where it points."""
    first = cmd.sgls[0] if cmd.sgls else None
    if first is None or first.type not in (SGL_LAST_SEGMENT, SGL_SEGMENT):
        return
    if first.subtype != SUBTYPE_OFFSET:
        pkt.add_expert("warning", "protocol", "SGL segment not in the capsule (sub type is not Offset): the "
                       "RDMA transport carries descriptor lists in the command capsule", "NVMe-oF 1.1 §2.3.1")
        return
    at = off + SQE_SIZE + first.address
    if first.length % SGL_SIZE or first.length == 0:
        pkt.set_malformed(f"nvme: SGL segment of {first.length} bytes is not a whole number of 16-byte descriptors")
        return
    if at + first.length > end or at < off + SQE_SIZE:
        pkt.set_malformed(f"nvme: SGL segment at capsule offset {first.address} + {first.length} bytes runs past the "
                          f"{end - off - SQE_SIZE} bytes of in-capsule data")
        return
    n = first.length // SGL_SIZE
    sub = lay.child("nvme.cmd.sgl_list", None, at, first.length, f"SGL Last Segment: {n} descriptors")
    shown = min(n, MAX_SGL_LIST)
    for i in range(shown):
        s = read_sgl(buf, at + i * SGL_SIZE)
        cmd.sgls.append(s)
        sub.child("nvme.cmd.sgl1", SGL_KEYED if s.keyed else SGL_UNKEYED, at + i * SGL_SIZE, SGL_SIZE,
                  f"SGL descriptor {i + 1}: {N.SGL_TYPES.get(s.type, 'Reserved')}")
    if n > shown:
        pkt.add_expert("note", "protocol", f"SGL segment holds {n} descriptors; the first {shown} are shown")
    del cmd.sgls[0]           # the segment descriptor stands for the list it points at


def show_dsm_ranges(pkt: Packet, lay: Layer, buf: bytes, off: int, end: int, cmd: NvmeCommand) -> None:
    """A Dataset Management command's range list, carried in the capsule."""
    n = (cmd.cdw10 & 0xFF) + 1
    have = (end - off) // DSM_RANGE.size
    if have < n:
        pkt.add_expert("warning", "malformed", f"Dataset Management names {n} ranges, the data holds {have}",
                       "NVM Command Set 1.0 §3.2.3")
    for i in range(min(n, have, MAX_DSM_RANGES)):
        lay.child("nvme.dsm_range", DSM_RANGE, off + i * DSM_RANGE.size, DSM_RANGE.size, f"Range {i}")


def dissect_completion(pkt: Packet, buf: bytes, off: int, queue: NvmeQueue | None,
                       cmd: NvmeCommand | None) -> NvmeCompletion:
    """The 16-byte response capsule at ``off``; ``cmd`` the command it completes, if known."""
    cqe = NvmeCompletion(queue.qid if queue is not None else None, _u16(buf, off + 12), _u16(buf, off + 10),
                         _u16(buf, off + 8), _u32(buf, off), _u32(buf, off + 4), _u16(buf, off + 14), pkt.frame.num,
                         pkt.frame.ts)
    cqe.command = cmd
    name = cmd.name if cmd is not None else "unknown command"
    lay = pkt.add_layer("nvme", None, buf, off, CQE_SIZE, f"NVMe Completion: {name}")
    lay.add(CMD_NAME, name, -1, 0)
    fabrics = cmd is not None and cmd.fctype is not None
    if cmd is not None:
        cqe.latency = cqe.ts - cmd.ts
        lay.add(FABRICS_CMD_PKT if fabrics else CMD_PKT, cmd.frame, -1, 0)
        lay.add(FABRICS_CMD_LATENCY if fabrics else CMD_LATENCY, cqe.latency / 1e6, -1, 0)
    else:
        lay.add(UNMATCHED, True, off + 12, 2)
    head = _completion_dwords(cmd)
    if head is None:
        tail = CQE
        cq = _layer(lay, "nvme.cqe", tail, off)
    else:
        proto = "nvme.fabrics.cqe" if fabrics else "nvme.cqe"
        result = _layer(lay, proto, head, off, "Command specific result (DWORD0-1)")
        if cmd is not None and cmd.fctype == FCTYPE_PROPERTY_GET:
            _add_after_parts(result, head, PROPERTY_RAW, bytes(buf[off:off + 8]), off, 8)
        tail = FABRICS_CQE_TAIL if fabrics else CQE_TAIL
        cq = _layer(lay, "nvme.cqe", tail, off + 8)
    _add_after_parts(cq, tail, STATUS_NAME, status_text(cqe), off + 14, 2)
    pkt.proto = "NVMe"
    return cqe


def _completion_dwords(cmd: NvmeCommand | None) -> Header | None:
    """How a completion's dwords 0-1 read for ``cmd`` (None: as plain dwords)."""
    if cmd is None:
        return None
    fctype = cmd.fctype
    if fctype is not None:
        if fctype == FCTYPE_CONNECT:
            return CONNECT_CQE
        if fctype == FCTYPE_PROPERTY_GET:
            return _property_header(cmd)
        if fctype == FCTYPE_PROPERTY_SET:
            return PROPERTY_SET_CQE
        return FABRICS_CQE
    if not is_admin(cmd):
        return None
    if cmd.opcode == 0x0C:
        return AER_DWORD0
    fid = cmd.cdw10 & 0xFF
    if cmd.opcode == 0x0A:
        return GET_FEATURES_DWORD0.get(fid)
    if cmd.opcode == 0x09 and fid == 0x07:
        return SET_NQ_DWORD0
    return None


def command_info(cmd: NvmeCommand) -> str:
    """The Info column's text for a command."""
    text = f"NVMe {cmd.name}"
    if cmd.connect is not None:
        c = cmd.connect
        text += f" QID {c.qid} SQSIZE {c.sqsize + 1}"
        if c.kato:
            text += f" KATO {c.kato} ms"
    elif cmd.fctype in (FCTYPE_PROPERTY_GET, FCTYPE_PROPERTY_SET):
        prop = N.PROPERTIES.get(cmd.cdw11)
        text += f" {prop.split(' (')[1].rstrip(')') if prop is not None else f'0x{cmd.cdw11:x}'}"
    elif cmd.nlb is not None:
        text += f" NSID {cmd.nsid} SLBA {cmd.slba} NLB {cmd.nlb + 1}"
    elif cmd.fctype is None and is_admin(cmd):
        if cmd.opcode == 0x06:
            text += f" CNS 0x{cmd.cdw10 & 0xFF:02x}"
        elif cmd.opcode == 0x02:
            lid = cmd.cdw10 & 0xFF
            name = N.LOG_PAGES.get(lid)
            text += f" {name}" if name is not None else f" LID 0x{lid:02x}"
        elif cmd.opcode in (0x09, 0x0A):
            fid = cmd.cdw10 & 0xFF
            name = N.FEATURES.get(fid)
            text += f" {name}" if name is not None else f" FID 0x{fid:02x}"
    return f"{text} CID 0x{cmd.cid:04x}"


def completion_info(cqe: NvmeCompletion) -> str:
    cmd = cqe.command
    text = f"NVMe Completion {cmd.name if cmd is not None else '(command not seen)'} CID 0x{cqe.cid:04x}"
    if not cqe.ok:
        text += f" {status_text(cqe)}"
        if cqe.dnr:
            text += " DNR"
    return text
