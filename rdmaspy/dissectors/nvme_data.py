"""The data NVMe admin commands move: Identify structures, log pages (the Discovery log page among them) and
the Fabrics Connect data (NVMe Base 2.0 §5.17, §5.16; NVMe over Fabrics 1.1 §3.3, §5.3).

Declared once each, little-endian; a structure of several kilobytes is declared in the sections the
specification gives it, so that data cut short (a Get Log Page of a header only, a capture that lost a
packet) still shows the sections it holds.  ``show_data`` takes the bytes of one command's data, however
they came (RDMA WRITE or READ, in the capsule), with the command, and adds their layers.
"""
from __future__ import annotations

from ..fields import F, Field, Header, declaring, filled, protocol, repeatable
from ..packet import Layer, Packet, add_parts
from ..typenames import Callable, Final
from . import nvme_names as N
from .nvme import NvmeCommand, is_admin

declaring(__name__)
protocol("nvme.data", "NVMe data")
repeatable("nvme.cmd.identify.ctrl.psds", "nvme.cmd.identify.ns.lbafs", "nvme.cmd.identify.nslist",
           "nvme.cmd.get_logpage.identify.rcrd", "nvme.cmd.get_logpage.errinf", "nvme.cmd.get_logpage.ana.grp",
           "nvme.cmd.get_logpage.cmd_and_eff", "nvme.cmd.identify.nsdesc")

DATA_FRAMES: Final = Field("nvme.data.frames", 0, "Data from frames", "str")
DATA_LENGTH: Final = Field("nvme.data.length", 0, "Data length", unit="bytes")
DATA_CMD: Final = Field("nvme.data.cmd", 0, "Data of the command", "str")
DATA_PKT: Final = Field("nvme.data_req", 0, "Command in frame")
NOT_DECODED: Final = Field("nvme.data.not_decoded", 0, "Not decoded", "str")


def _h(name: str, bits: int, label: str, names: dict[int, str] | None = None) -> Field:
    return F(name, bits, label, "hex", names)


def _bits(word: str, *names: tuple[str, int, str]) -> list[Field]:
    """A word's parts: (name relative to the word, width, label), from bit 0 up; a name starting "rsvd" is
    shown in hex, a one-bit part as a flag."""
    out = []
    for name, width, label in names:
        display = "hex" if name.startswith("rsvd") or width > 1 else "bool"
        out.append(F(f"{word}.{name}", width, label, display))
    return out


# --- Identify Controller (CNS 01h), in its sections ---------------------------------------------------------
IDCTRL: Final = "nvme.cmd.identify.ctrl"
IDCTRL_BASIC: Final = Header(IDCTRL, "Controller Capabilities and Features", [
    _h("vid", 16, "PCI Vendor ID (VID)"), _h("ssvid", 16, "PCI Subsystem Vendor ID (SSVID)"),
    F("sn", 160, "Serial Number (SN)", "str"), F("mn", 320, "Model Number (MN)", "str"),
    F("fr", 64, "Firmware Revision (FR)", "bytes"), F("rab", 8, "Recommended Arbitration Burst (RAB)"),
    _h("ieee", 24, "IEEE OUI Identifier (IEEE)"),
    _h("cmic", 8, "Controller Multi-Path I/O and Namespace Sharing Capabilities (CMIC)"),
    F("mdts", 8, "Maximum Data Transfer Size (MDTS, 2 ^ n minimum pages)"), _h("cntlid", 16, "Controller ID (CNTLID)"),
    _h("ver", 32, "Version (VER)"), F("rtd3r", 32, "RTD3 Resume Latency (RTD3R)", unit="us"),
    F("rtd3e", 32, "RTD3 Entry Latency (RTD3E)", unit="us"),
    _h("oaes", 32, "Optional Asynchronous Events Supported (OAES)"), _h("ctratt", 32, "Controller Attributes (CTRATT)"),
    _h("rrls", 16, "Read Recovery Levels Support (RRLS)"), F("rsvd0", 72, "Reserved", "bytes"),
    _h("cntrltype", 8, "Controller Type (CNTRLTYPE)", {0: "Reserved", 1: "I/O controller", 2: "Discovery controller",
                                                       3: "Administrative controller"}),
    _h("fguid.vse", 64, "FGUID: Vendor Specific Extension Identifier"),
    _h("fguid.oui", 24, "FGUID: Organizationally Unique Identifier"), _h("fguid.ei", 40, "FGUID: Extension Identifier"),
    F("crdt1", 16, "Command Retry Delay Time 1", unit="x 100 ms"), F("crdt2", 16, "Command Retry Delay Time 2",
                                                                     unit="x 100 ms"),
    F("crdt3", 16, "Command Retry Delay Time 3", unit="x 100 ms"), F("rsvd1", 848, "Reserved", "bytes"),
    F("mi.rsvd", 104, "Reserved", "bytes"), _h("mi.nvmsr", 8, "NVM Subsystem Report (NVMSR)"),
    _h("mi.vwci", 8, "VPD Write Cycle Information (VWCI)"), _h("mi.mec", 8, "Management Endpoint Capabilities (MEC)"),
], little=True, parts={
    "cmic": _bits("cmic", ("mp", 1, "Multiple Ports Support"), ("mc", 1, "Multiple Controllers Support"),
                  ("sriov", 1, "SR-IOV Association"), ("ana", 1, "ANA Reporting Support"), ("rsvd", 4, "Reserved")),
    "ver": [F("ver.ter", 8, "Tertiary Version Number (TER)"), F("ver.min", 8, "Minor Version Number (MNR)"),
            F("ver.mjr", 16, "Major Version Number (MJR)")],
    "oaes": _bits("oaes", ("rsvd0", 8, "Reserved"), ("nan", 1, "Namespace Attribute Notices Supported"),
                  ("fan", 1, "Firmware Activation Notices Supported"), ("rsvd1", 1, "Reserved"),
                  ("ana", 1, "Asymmetric Namespace Access Change Notices Supported"),
                  ("ple", 1, "Predictable Latency Event Aggregate Log Change Notices Supported"),
                  ("lba", 1, "LBA Status Information Notices Supported"),
                  ("ege", 1, "Endurance Group Event Aggregate Log Page Change Notices Supported"),
                  ("rsvd2", 17, "Reserved")),
    "ctratt": _bits("ctratt", ("hi_128", 1, "128-bit Host Identifier Support"),
                    ("nopspm", 1, "Non-Operational Power State Permissive Mode Supported"),
                    ("nvmset", 1, "NVM Sets Supported"), ("rrl", 1, "Read Recovery Levels Supported"),
                    ("eg", 1, "Endurance Groups Supported"), ("plm", 1, "Predictable Latency Mode Supported"),
                    ("tbkas", 1, "Traffic Based Keep Alive Support (TBKAS)"), ("ng", 1, "Namespace Granularity"),
                    ("sqa", 1, "SQ Associations Support"), ("uuidl", 1, "UUID List Support"),
                    ("rsvd", 22, "Reserved")),
    "rrls": _bits("rrls", *[(f"rrls{i}", 1, f"Read Recovery Level {i} Support") for i in range(16)]),
    "mi.nvmsr": _bits("mi.nvmsr", ("nvmesd", 1, "NVMe Storage Device (NVMESD)"), ("nvmee", 1, "NVMe Enclosure (NVMEE)"),
                      ("rsvd", 6, "Reserved")),
    "mi.vwci": [_h("mi.vwci.vwcr", 7, "VPD Write Cycles Remaining (VWCR)"),
                F("mi.vwci.vwcrv", 1, "VPD Write Cycle Remaining Valid (VWCRV)", "bool")],
    "mi.mec": _bits("mi.mec", ("smbusme", 1, "SMBus/I2C Port Management Endpoint (SMBUSME)"),
                    ("pcieme", 1, "PCIe Port Management Endpoint (PCIEME)"), ("rsvd", 6, "Reserved")),
})
IDCTRL_ADMIN: Final = Header(IDCTRL, "Admin Command Set Attributes & Optional Controller Capabilities", [
    _h("oacs", 16, "Optional Admin Command Support (OACS)"), F("acl", 8, "Abort Command Limit (ACL, 0's based)"),
    F("aerl", 8, "Asynchronous Event Request Limit (AERL, 0's based)"), _h("frmw", 8, "Firmware Updates (FRMW)"),
    _h("lpa", 8, "Log Page Attributes (LPA)"), F("elpe", 8, "Error Log Page Entries (ELPE, 0's based)"),
    F("npss", 8, "Number of Power States Supported (NPSS, 0's based)"),
    _h("avscc", 8, "Admin Vendor Specific Command Configuration (AVSCC)"),
    _h("apsta", 8, "Autonomous Power State Transition Attributes (APSTA)"),
    F("wctemp", 16, "Warning Composite Temperature Threshold (WCTEMP)", unit="K"),
    F("cctemp", 16, "Critical Composite Temperature Threshold (CCTEMP)", unit="K"),
    F("mtfa", 16, "Maximum Time for Firmware Activation (MTFA)", unit="x 100 ms"),
    F("hmpre", 32, "Host Memory Buffer Preferred Size (HMPRE)", unit="x 4 KiB"),
    F("hmmin", 32, "Host Memory Buffer Minimum Size (HMMIN)", unit="x 4 KiB"),
    F("tnvmcap", 128, "Total NVM Capacity (TNVMCAP)", "bytes"),
    F("unvmcap", 128, "Unallocated NVM Capacity (UNVMCAP)", "bytes"),
    _h("rpmbs", 32, "Replay Protected Memory Block Support (RPMBS)"),
    F("edstt", 16, "Extended Device Self-test Time (EDSTT)", unit="minutes"),
    _h("dsto", 8, "Device Self-test Options (DSTO)"),
    F("fwug", 8, "Firmware Update Granularity (FWUG)", unit="x 4 KiB"),
    F("kas", 16, "Keep Alive Support (KAS)", unit="x 100 ms"),
    _h("hctma", 16, "Host Controlled Thermal Management Attributes (HCTMA)"),
    F("mntmt", 16, "Minimum Thermal Management Temperature (MNTMT)", unit="K"),
    F("mxtmt", 16, "Maximum Thermal Management Temperature (MXTMT)", unit="K"),
    _h("sanicap", 32, "Sanitize Capabilities (SANICAP)"),
    F("hmmminds", 32, "Host Memory Buffer Minimum Descriptor Entry Size (HMMINDS)", unit="x 4 KiB"),
    F("hmmaxd", 16, "Host Memory Maximum Descriptors Entries (HMMAXD)"),
    _h("nsetidmax", 16, "NVM Set Identifier Maximum (NSETIDMAX)"),
    _h("endgidmax", 16, "Endurance Group Identifier Maximum (ENDGIDMAX)"),
    F("anatt", 8, "ANA Transition Time (ANATT)", unit="s"),
    _h("anacap", 8, "Asymmetric Namespace Access Capabilities (ANACAP)"),
    _h("anagrpmax", 32, "ANA Group Identifier Maximum (ANAGRPMAX)"),
    F("nanagrpid", 32, "Number of ANA Group Identifiers (NANAGRPID)"),
    F("pels", 32, "Persistent Event Log Size (PELS)", unit="x 64 KiB"), F("rsvd2", 1248, "Reserved", "bytes"),
], little=True, parts={
    "oacs": _bits("oacs", ("sec", 1, "Security Send and Security Receive Support"), ("fmt", 1, "Format NVM Support"),
                  ("fw", 1, "Firmware Download and Commit Support"), ("nsmgmt", 1, "Namespace Management Support"),
                  ("stst", 1, "Device Self-Test Support"), ("dtv", 1, "Directive Send and Directive Receive Support"),
                  ("mi", 1, "NVMe-MI Send and NVMe-MI Receive Support"), ("vm", 1, "Virtualization Management Support"),
                  ("db", 1, "Doorbell Buffer Config Support"), ("sec.lba", 1, "Get LBA Status Support"),
                  ("sec.rsvd", 6, "Reserved")),
    "frmw": [F("frmw.fro", 1, "First Firmware Slot Read-Only", "bool"), F("frmw.fsn", 3, "Number of Firmware Slots"),
             F("frmw.anr", 1, "Supports Activation Without Reset", "bool"), _h("frmw.rsvd", 3, "Reserved")],
    "lpa": _bits("lpa", ("smrt", 1, "SMART Log Page per Namespace Support"),
                 ("cmds", 1, "Commands Supported and Effects Log Page Support"),
                 ("elp", 1, "Extended Data Get Log Page Support"), ("tel", 1, "Telemetry Log Page and Notices Support"),
                 ("ple", 1, "Persistent Event Log Support"), ("rsvd", 3, "Reserved")),
    "avscc": _bits("avscc", ("std", 1, "Standard Command Format"), ("rsvd", 7, "Reserved")),
    "apsta": _bits("apsta", ("aut", 1, "Autonomous Power State Transitions Supported"), ("rsvd", 7, "Reserved")),
    "rpmbs": [F("rpmbs.nu", 3, "Number of RPMB Units"), _h("rpmbs.au", 3, "Authentication Method"),
              _h("rpmbs.rsvd", 10, "Reserved"), F("rpmbs.ts", 8, "Total RPMB Unit Size (128 KiB blocks, 0's based)"),
              F("rpmbs.as", 8, "Access Size (512-byte blocks, 0's based)")],
    "dsto": _bits("dsto", ("mds", 1, "Concurrent Self-Tests for Multiple Devices Support"), ("rsvd", 7, "Reserved")),
    "hctma": _bits("hctma", ("sup", 1, "Controller Supports Thermal Management"), ("rsvd", 15, "Reserved")),
    "sanicap": _bits("sanicap", ("ces", 1, "Crypto Erase Support (CES)"), ("bes", 1, "Block Erase Support (BES)"),
                     ("ows", 1, "Overwrite Support (OWS)"), ("rsvd", 26, "Reserved"),
                     ("ndi", 1, "No-Deallocate Inhibited (NDI)"),
                     ("nodmmas", 2, "No-Deallocate Modifies Media After Sanitize (NODMMAS)")),
    "anacap": _bits("anacap", ("osr", 1, "Reports ANA Optimized State"), ("nosr", 1, "Reports ANA Non-Optimized State"),
                    ("isr", 1, "Reports ANA Inaccessible State"), ("plsr", 1, "Reports ANA Persistent Loss State"),
                    ("csr", 1, "Reports ANA Change State"), ("rsvd", 1, "Reserved"),
                    ("panagrpid", 1, "ANAGRPID in Identify Namespace does not change"),
                    ("nzpanagrpid", 1, "Supports a non-zero ANAGRPID")),
})
IDCTRL_NVM: Final = Header(IDCTRL, "NVM Command Set Attributes", [
    _h("sqes", 8, "Submission Queue Entry Size (SQES)"), _h("cqes", 8, "Completion Queue Entry Size (CQES)"),
    F("maxcmd", 16, "Maximum Outstanding Commands (MAXCMD)"), F("nn", 32, "Number of Namespaces (NN)"),
    _h("oncs", 16, "Optional NVM Command Support (ONCS)"), _h("fuses", 16, "Fused Operation Support (FUSES)"),
    _h("fna", 8, "Format NVM Attributes (FNA)"), _h("vwc", 8, "Volatile Write Cache (VWC)"),
    F("awun", 16, "Atomic Write Unit Normal (AWUN, 0's based)"),
    F("awupf", 16, "Atomic Write Unit Power Fail (AWUPF, 0's based)"),
    _h("nvscc", 8, "NVM Vendor Specific Command Configuration (NVSCC)"),
    _h("nwpc", 8, "Namespace Write Protection Capabilities (NWPC)"),
    F("acwu", 16, "Atomic Compare & Write Unit (ACWU, 0's based)"), F("rsvd3", 16, "Reserved", "bytes"),
    _h("sgls", 32, "SGL Support (SGLS)"), F("mnan", 32, "Maximum Number of Allowed Namespaces (MNAN)"),
    F("rsvd4", 1792, "Reserved", "bytes"),
], little=True, parts={
    "sqes": [F("sqes.mins", 4, "Minimum (required) Size (2 ^ n)"), F("sqes.maxs", 4, "Maximum (allowed) Size (2 ^ n)")],
    "cqes": [F("cqes.mins", 4, "Minimum (required) Size (2 ^ n)"), F("cqes.maxs", 4, "Maximum (allowed) Size (2 ^ n)")],
    "oncs": _bits("oncs", ("ccs", 1, "Supports Compare"), ("wus", 1, "Supports Write Uncorrectable"),
                  ("dsms", 1, "Supports Dataset Management"), ("wzs", 1, "Supports Write Zeroes"),
                  ("nzfs", 1, "Supports a non-zero Save field in Set/Get Features"),
                  ("ress", 1, "Supports Reservations"),
                  ("tstmps", 1, "Supports Timestamps"), ("vers", 1, "Supports Verify"), ("rsvd", 8, "Reserved")),
    "fuses": _bits("fuses", ("cws", 1, "Compare and Write Fused Operation Support"), ("rsvd", 15, "Reserved")),
    "fna": _bits("fna", ("fall", 1, "Format Operation Applies to all Namespaces"),
                 ("seall", 1, "Secure Erase Operation Applies to all Namespaces"),
                 ("ces", 1, "Cryptographic Erase Supported"), ("rsvd", 5, "Reserved")),
    "vwc": [F("vwc.cp", 1, "Volatile Write Cache Present", "bool"), _h("vwc.cfb", 2, "Flush Command Behavior"),
            _h("vwc.rsvd", 5, "Reserved")],
    "nvscc": _bits("nvscc", ("std", 1, "Standard Format Used for Vendor Specific Commands"), ("rsvd", 7, "Reserved")),
    "nwpc": _bits("nwpc", ("wpss", 1, "No Write Protect and Write Protect states Support"),
                  ("wppcs", 1, "Write Protect Until Power Cycle state Support"),
                  ("pwpss", 1, "Permanent Write Protect state Support"), ("rsvd", 5, "Reserved")),
    "sgls": [_h("sgls.sgls", 2, "SGL Supported"), F("sgls.kdbs", 1, "Supports Keyed SGL Data Block Descriptor", "bool"),
             _h("sgls.rsvd0", 13, "Reserved"), F("sgls.bbd", 1, "Supports SGL Bit Bucket Descriptor", "bool"),
             F("sgls.bufmptr", 1, "Supports byte aligned contiguous buffer in MPTR", "bool"),
             F("sgls.lsgl", 1, "Supports Larger SGL List than Command Requires", "bool"),
             F("sgls.kmptr", 1, "Supports SGL Segment in MPTR", "bool"),
             F("sgls.offs", 1, "Supports Address as offset in Data Block, Segment and Last Segment SGLs", "bool"),
             F("sgls.tdbd", 1, "Supports Transport SGL Data Block Descriptor", "bool"),
             _h("sgls.rsvd1", 10, "Reserved")],
})
IDCTRL_SUBNQN: Final = Header(IDCTRL, "NVM Subsystem", [
    F("subnqn", 2048, "NVM Subsystem NVMe Qualified Name (SUBNQN)", "str")], little=True)
IDCTRL_FABRICS: Final = Header(IDCTRL, "NVMe over Fabrics Attributes", [
    F("rsvd5", 6144, "Reserved", "bytes"),
    F("nvmeof.ioccsz", 32, "I/O Queue Command Capsule Supported Size (IOCCSZ)", unit="x 16 bytes"),
    F("nvmeof.iorcsz", 32, "I/O Queue Response Capsule Supported Size (IORCSZ)", unit="x 16 bytes"),
    F("nvmeof.icdoff", 16, "In Capsule Data Offset (ICDOFF)", unit="x 16 bytes"),
    _h("nvmeof.fcatt", 8, "Fabrics Controller Attributes (FCATT)"),
    F("nvmeof.msdbd", 8, "Maximum SGL Data Block Descriptors (MSDBD)"),
    _h("nvmeof.ofcs", 16, "Optional Fabric Commands Support (OFCS)"), F("nvmeof.rsvd", 1936, "Reserved", "bytes"),
], little=True, parts={
    "nvmeof.fcatt": _bits("nvmeof.fcatt", ("dcm", 1, "Dynamic Controller Model"), ("rsvd", 7, "Reserved")),
    "nvmeof.ofcs": _bits("nvmeof.ofcs", ("dcs", 1, "Supports Disconnect Command"), ("rsvd", 15, "Reserved")),
})
IDCTRL_PSD: Final = Header(IDCTRL, "Power State Descriptor", [
    F("psds.psd.mp", 16, "Maximum Power (MP)"), _h("psds.psd.rsvd0", 8, "Reserved"),
    F("psds.psd.mxps", 1, "Max Power Scale (MXPS)", "bool"),
    F("psds.psd.nops", 1, "Non-Operational State (NOPS)", "bool"),
    _h("psds.psd.rsvd1", 6, "Reserved"),
    F("psds.psd.enlat", 32, "Entry Latency (ENLAT)", unit="us"),
    F("psds.psd.exlat", 32, "Exit Latency (EXLAT)", unit="us"),
    F("psds.psd.rrt", 5, "Relative Read Throughput (RRT)"), _h("psds.psd.rsvd2", 3, "Reserved"),
    F("psds.psd.rrl", 5, "Relative Read Latency (RRL)"), _h("psds.psd.rsvd3", 3, "Reserved"),
    F("psds.psd.rwt", 5, "Relative Write Throughput (RWT)"), _h("psds.psd.rsvd4", 3, "Reserved"),
    F("psds.psd.rwl", 5, "Relative Write Latency (RWL)"), _h("psds.psd.rsvd5", 3, "Reserved"),
    F("psds.psd.idlp", 16, "Idle Power (IDLP)"), _h("psds.psd.rsvd6", 6, "Reserved"),
    _h("psds.psd.ips", 2, "Idle Power Scale (IPS)"), _h("psds.psd.rsvd7", 8, "Reserved"),
    F("psds.psd.actp", 16, "Active Power (ACTP)"), _h("psds.psd.apw", 3, "Active Power Workload (APW)"),
    _h("psds.psd.rsvd8", 3, "Reserved"), _h("psds.psd.aps", 2, "Active Power Scale (APS)"),
    F("psds.psd.rsvd9", 72, "Reserved", "bytes"),
], little=True)
IDCTRL_VS: Final = Header(IDCTRL, "Vendor Specific", [F("vs", 8192, "Vendor Specific", "bytes")], little=True)
# (offset, header, how many) of Identify Controller's sections; PSD0..31 are 32 of one declaration
IDENTIFY_CONTROLLER: Final[tuple[tuple[int, Header, int], ...]] = (
    (0, IDCTRL_BASIC, 1), (256, IDCTRL_ADMIN, 1), (512, IDCTRL_NVM, 1), (768, IDCTRL_SUBNQN, 1),
    (1024, IDCTRL_FABRICS, 1), (2048, IDCTRL_PSD, 32), (3072, IDCTRL_VS, 1))

# --- Identify Namespace (CNS 00h) ------------------------------------------------------------------------
IDNS: Final = "nvme.cmd.identify.ns"
IDENTIFY_NS: Final = Header(IDNS, "Identify Namespace", [
    F("nsze", 64, "Namespace Size (NSZE)", unit="blocks"), _h("ncap", 64, "Namespace Capacity (NCAP)"),
    _h("nuse", 64, "Namespace Utilization (NUSE)"), _h("nsfeat", 8, "Namespace Features (NSFEAT)"),
    F("nlbaf", 8, "Number of LBA Formats (NLBAF, 0's based)"), F("flbas", 8, "Formatted LBA Size (FLBAS)"),
    _h("mc", 8, "Metadata Capabilities (MC)"), _h("dpc", 8, "End-to-end Data Protection Capabilities (DPC)"),
    _h("dps", 8, "End-to-end Data Protection Type Settings (DPS)"),
    _h("nmic", 8, "Namespace Multi-path I/O and Namespace Sharing Capabilities (NMIC)"),
    _h("rescap", 8, "Reservation Capabilities (RESCAP)"), _h("fpi", 8, "Format Progress Indicator (FPI)"),
    _h("dlfeat", 8, "Deallocate Logical Block Features (DLFEAT)"),
    F("nawun", 16, "Namespace Atomic Write Unit Normal (NAWUN)"),
    F("nawupf", 16, "Namespace Atomic Write Unit Power Fail (NAWUPF)"),
    F("nacwu", 16, "Namespace Atomic Compare & Write Unit (NACWU)"),
    F("nabsn", 16, "Namespace Atomic Boundary Size Normal (NABSN)"),
    F("nabo", 16, "Namespace Atomic Boundary Offset (NABO)"),
    F("nabspf", 16, "Namespace Atomic Boundary Size Power Fail (NABSPF)"),
    F("noiob", 16, "Namespace Optimal I/O Boundary (NOIOB)"), F("nvmcap", 128, "NVM Capacity (NVMCAP)", "bytes"),
    F("npwg", 16, "Namespace Preferred Write Granularity (NPWG)"),
    F("npwa", 16, "Namespace Preferred Write Alignment (NPWA)"),
    F("npdg", 16, "Namespace Preferred Deallocate Granularity (NPDG)"),
    F("npda", 16, "Namespace Preferred Deallocate Alignment (NPDA)"),
    F("nows", 16, "Namespace Optimal Write Size (NOWS)"),
    F("mssrl", 16, "Maximum Single Source Range Length (MSSRL)"), F("mcl", 32, "Maximum Copy Length (MCL)"),
    F("msrc", 8, "Maximum Source Range Count (MSRC)"), F("rsvd0", 88, "Reserved", "bytes"),
    _h("anagrpid", 32, "ANA Group Identifier (ANAGRPID)"), F("rsvd1", 24, "Reserved", "bytes"),
    _h("nsattr", 8, "Namespace Attributes (NSATTR)"), _h("nvmsetid", 16, "NVM Set Identifier (NVMSETID)"),
    _h("endgid", 16, "Endurance Group Identifier (ENDGID)"),
    F("nguid", 128, "Namespace Globally Unique Identifier (NGUID)", "bytes"),
    F("eui64", 64, "IEEE Extended Unique Identifier (EUI64)", "bytes"),
], little=True)
LBAF: Final = Header(IDNS, "LBA Format", [_h("lbaf", 32, "LBA Format")], little=True, parts={"lbaf": [
    F("lbaf.ms", 16, "Metadata Size (MS)", unit="bytes"), F("lbaf.lbads", 8, "LBA Data Size (LBADS, 2 ^ n bytes)"),
    _h("lbaf.rp", 2, "Relative Performance (RP)", {0: "Best", 1: "Better", 2: "Good", 3: "Degraded"}),
    _h("lbaf.rsvd", 6, "Reserved")]})
IDNS_TAIL: Final = Header(IDNS, "Reserved and vendor specific", [
    F("rsvd", 27648, "Reserved", "bytes"), F("vs", 2048, "Vendor Specific", "bytes")], little=True)
LBA_SIZE: Final = Field("nvme.cmd.identify.ns.lba_size", 0, "Formatted LBA data size", unit="bytes")

NSLIST_NSID: Final = Field("nvme.cmd.identify.nslist.nsid", 32, "Namespace list element", "hex")
NSDESC: Final = Header("nvme.cmd.identify.nsdesc", "Namespace Identification Descriptor", [
    _h("nidt", 8, "Namespace Identifier Type (NIDT)", N.NIDT), F("nidl", 8, "Namespace Identifier Length (NIDL)"),
    _h("rsvd", 16, "Reserved")], little=True)
NSDESC_NID: Final = Field("nvme.cmd.identify.nsdesc.nid", 0, "Namespace Identifier (NID)", "bytes")

# --- log pages -----------------------------------------------------------------------------------------
LOG: Final = "nvme.cmd.get_logpage"
ERROR_INFO: Final = Header(f"{LOG}.errinf", "Error Information Log Entry", [
    F("errcnt", 64, "Error Count"), _h("sqid", 16, "Submission Queue ID"), _h("cid", 16, "Command ID"),
    _h("sf", 16, "Status Field"), _h("pel", 16, "Parameter Error Location"), _h("lba", 64, "LBA"),
    _h("nsid", 32, "Namespace ID"), _h("vsi", 8, "Vendor Specific Information Available"),
    _h("trype", 8, "Transport Type", N.TRTYPES), _h("rsvd0", 16, "Reserved"),
    _h("csi", 64, "Command Specific Information"), _h("tsi", 16, "Transport Type Specific Information"),
    F("rsvd1", 176, "Reserved", "bytes")], little=True, parts={
        "sf": [_h("sf.ptag", 1, "Phase Tag"), _h("sf.val", 15, "Status Field Value")],
        "pel": [_h("pel.bytee", 8, "Byte in command that contained the error"),
                _h("pel.bite", 3, "Bit in command that contained the error"), _h("pel.rsvd", 5, "Reserved")]})
SMART: Final = Header(f"{LOG}.smart", "SMART / Health Information", [
    _h("cw", 8, "Critical Warning"), F("ct", 16, "Composite Temperature", unit="K"),
    F("asc", 8, "Available Spare Capacity", unit="%"), F("ast", 8, "Available Spare Capacity Threshold", unit="%"),
    F("lae", 8, "Percentage Used (Life Age Estimate)", unit="%"),
    _h("egcws", 8, "Endurance Group Critical Warning Summary"), F("rsvd0", 200, "Reserved", "bytes"),
    F("dur", 128, "Data Units Read (x 1000 x 512 bytes)", "bytes"),
    F("duw", 128, "Data Units Written (x 1000 x 512 bytes)", "bytes"),
    F("hrc", 128, "Host Read Commands", "bytes"), F("hwc", 128, "Host Write Commands", "bytes"),
    F("cbt", 128, "Controller Busy Time (minutes)", "bytes"), F("pc", 128, "Power Cycles", "bytes"),
    F("poh", 128, "Power On Hours", "bytes"), F("us", 128, "Unsafe Shutdowns", "bytes"),
    F("mie", 128, "Media and Data Integrity Errors", "bytes"),
    F("ele", 128, "Number of Error Information Log Entries", "bytes"),
    F("wctt", 32, "Warning Composite Temperature Time", unit="minutes"),
    F("cctt", 32, "Critical Composite Temperature Time", unit="minutes"),
    *[F(f"ts.s{i}", 16, f"Temperature Sensor {i}", unit="K") for i in range(1, 9)],
    F("tmt1c", 32, "Thermal Management Temperature 1 Transition Count"),
    F("tmt2c", 32, "Thermal Management Temperature 2 Transition Count"),
    F("tmt1t", 32, "Total Time For Thermal Management Temperature 1", unit="s"),
    F("tmt2t", 32, "Total Time For Thermal Management Temperature 2", unit="s"),
    F("rsvd1", 2240, "Reserved", "bytes")], little=True, parts={
        "cw": _bits("cw", ("sc", 1, "Spare Capacity Below Threshold"), ("temp", 1, "Temperature Crossed Threshold"),
                    ("sme", 1, "Reliability Degraded due to Significant Media Errors"),
                    ("ro", 1, "Media Placed in Read Only State"),
                    ("bdf", 1, "Volatile Memory Backup Device Has Failed"),
                    ("mrro", 1, "Persistent Memory Region Placed in Read Only State"), ("rsvd", 2, "Reserved")),
        "egcws": _bits("egcws", ("sc", 1, "Spare Capacity of an Endurance Group Below Threshold"),
                       ("rsvd0", 1, "Reserved"), ("me", 1, "Reliability of an Endurance Group Degraded"),
                       ("ro", 1, "A Namespace in an Endurance Group Placed in Read Only State"),
                       ("rsvd1", 4, "Reserved"))})
FW_SLOT: Final = Header(f"{LOG}.fw_slot", "Firmware Slot Information", [
    _h("afi", 8, "Active Firmware Info (AFI)"), F("rsvd0", 56, "Reserved", "bytes"),
    *[F(f"frs.s{i}", 64, f"Firmware Revision for Slot {i}", "bytes") for i in range(1, 8)],
    F("rsvd1", 3584, "Reserved", "bytes")], little=True, parts={"afi": [
        F("afi.afs", 3, "Active Firmware Slot"), _h("afi.rsvd0", 1, "Reserved"),
        F("afi.nfs", 3, "Next Reset Firmware Slot"), _h("afi.rsvd1", 1, "Reserved")]})
CSE_WORD: Final = Header(f"{LOG}.cmd_and_eff", "Commands Supported and Effects", [
    _h("cseds", 32, "Commands Supported and Effects Data Structure")], little=True, parts={"cseds": _bits(
        "cseds", ("csupp", 1, "Command Supported (CSUPP)"), ("lbcc", 1, "Logical Block Content Change (LBCC)"),
        ("ncc", 1, "Namespace Capability Change (NCC)"), ("nic", 1, "Namespace Inventory Change (NIC)"),
        ("ccc", 1, "Controller Capability Change (CCC)"), ("rsvd0", 11, "Reserved"),
        ("cse", 3, "Command Submission and Execution (CSE)"), ("uss", 1, "UUID Selection Supported"),
        ("rsvd1", 12, "Reserved"))})
CSE_OPCODE: Final = Field(f"{LOG}.cmd_and_eff.opcode", 0, "Opcode", "str")
ANA_HEAD: Final = Header(f"{LOG}.ana", "Asymmetric Namespace Access", [
    F("chcnt", 64, "Change Count"), F("ngd", 16, "Number of ANA Group Descriptors"), F("rsvd", 48, "Reserved", "bytes"),
], little=True)
ANA_GROUP: Final = Header(f"{LOG}.ana.grp", "ANA Group Descriptor", [
    _h("id", 32, "ANA Group ID"), F("nns", 32, "Number of NSID Values"), F("chcnt", 64, "Change Count"),
    _h("anas", 8, "ANA State"), F("rsvd", 120, "Reserved", "bytes")], little=True, parts={"anas": [
        _h("anas.state", 4, "Asymmetric Namespace Access State", N.ANA_STATES), _h("anas.rsvd", 4, "Reserved")]})
ANA_NSID: Final = Field(f"{LOG}.ana.grp.nsid", 32, "Namespace Identifier", "hex")
DISCOVERY_HEAD: Final = Header(f"{LOG}.identify", "Discovery Log Page", [
    F("genctr", 64, "Generation Counter (GENCTR)"), F("numrec", 64, "Number of Records (NUMREC)"),
    F("recfmt", 16, "Record Format (RECFMT)"), F("rsvd", 8048, "Reserved", "bytes")], little=True)
DISCOVERY_ENTRY: Final = Header(f"{LOG}.identify.rcrd", "Discovery Log Page Entry", [
    _h("trtype", 8, "Transport Type (TRTYPE)", N.TRTYPES), _h("adrfam", 8, "Address Family (ADRFAM)", N.ADRFAMS),
    _h("subtype", 8, "Subsystem Type (SUBTYPE)", N.DISCOVERY_SUBTYPES), _h("treq", 8, "Transport Requirements (TREQ)"),
    _h("portid", 16, "Port ID (PORTID)"), _h("cntlid", 16, "Controller ID (CNTLID)"),
    F("asqsz", 16, "Admin Max SQ Size (ASQSZ)"), F("rsvd0", 176, "Reserved", "bytes"),
    F("trsvcid", 256, "Transport Service Identifier (TRSVCID)", "str"), F("rsvd1", 1536, "Reserved", "bytes"),
    F("subnqn", 2048, "NVM Subsystem Qualified Name (SUBNQN)", "str"),
    F("traddr", 2048, "Transport Address (TRADDR)", "str"),
], little=True, parts={"treq": [
    _h("treq.secch", 2, "Secure Channel Connection Requirement", N.TREQ_SECURE_CHANNEL),
    F("treq.sqfc", 1, "Disable SQ Flow Control Support", "bool"), _h("treq.rsvd", 5, "Reserved")]})
TSAS_RDMA: Final = Header(f"{LOG}.identify.rcrd.tsas", "Transport Specific Address Subtype (RDMA)", [
    _h("rdma_qptype", 8, "RDMA QP Service Type (RDMA_QPTYPE)", N.RDMA_QPTYPES),
    _h("rdma_prtype", 8, "RDMA Provider Type (RDMA_PRTYPE)", N.RDMA_PRTYPES),
    _h("rdma_cms", 8, "RDMA Connection Management Service (RDMA_CMS)", N.RDMA_CMS),
    F("rdma_rsvd0", 40, "Reserved", "bytes"), _h("rdma_pkey", 16, "RDMA Partition Key (RDMA_PKEY)"),
    F("rdma_rsvd1", 1968, "Reserved", "bytes")], little=True)
TSAS_OTHER: Final = Header(f"{LOG}.identify.rcrd.tsas", "Transport Specific Address Subtype", [
    F("raw", 2048, "Transport Specific Address Subtype", "bytes")], little=True)

# --- Fabrics Connect data (NVMe over Fabrics 1.1 §3.3, Figure 20) --------------------------------------------
CONNECT_DATA: Final = Header("nvme.fabrics.cmd.connect.data", "Connect Data", [
    F("hostid", 128, "Host Identifier", "bytes"), _h("cntrlid", 16, "Controller ID"),
    F("rsvd0", 1904, "Reserved", "bytes"), F("subnqn", 2048, "Subsystem NQN", "str"),
    F("hostnqn", 2048, "Host NQN", "str"), F("rsvd1", 2048, "Reserved", "bytes")], little=True)
CONNECT_DATA_SIZE: Final = CONNECT_DATA.size
# every section is made by the data layer's fill (show_data)
filled(IDCTRL_BASIC, IDCTRL_ADMIN, IDCTRL_NVM, IDCTRL_SUBNQN, IDCTRL_FABRICS, IDCTRL_PSD, IDCTRL_VS, IDENTIFY_NS,
       LBAF, IDNS_TAIL, NSDESC, ERROR_INFO, SMART, FW_SLOT, CSE_WORD, ANA_HEAD, ANA_GROUP, DISCOVERY_HEAD,
       DISCOVERY_ENTRY, TSAS_RDMA, TSAS_OTHER, CONNECT_DATA)


def _section(parent: Layer, proto: str, hdr: Header, at: int, label: str | None = None) -> Layer:
    lay = parent.child(proto, hdr, at, hdr.size, label)
    if hdr.parts:
        lay.lazy(add_parts)
    return lay


def _sections(parent: Layer, proto: str, data: bytes, sections: tuple[tuple[int, Header, int], ...]) -> int:
    """Each section that the data holds whole; returns the bytes shown."""
    shown = 0
    for at, hdr, count in sections:
        for i in range(count):
            start = at + i * hdr.size
            if start + hdr.size > len(data):
                return shown
            label = f"Power State {i} Descriptor (PSD{i})" if hdr is IDCTRL_PSD else None
            _section(parent, proto if hdr is not IDCTRL_PSD else f"{proto}.psds", hdr, start, label)
            shown = start + hdr.size
    return shown


def _identify_controller(lay: Layer, data: bytes) -> int:
    return _sections(lay, IDCTRL, data, IDENTIFY_CONTROLLER)


def _identify_namespace(lay: Layer, data: bytes) -> int:
    if len(data) < IDENTIFY_NS.size:
        return 0
    ns = _section(lay, IDNS, IDENTIFY_NS, 0)
    nlbaf = data[25]
    flbas = data[26] & 0xF
    count = min(nlbaf + 1, 64)
    at = IDENTIFY_NS.size
    for i in range(count):
        if at + 4 > len(data):
            return at
        f = _section(lay, f"{IDNS}.lbafs", LBAF, at, f"LBA Format {i}{' (in use)' if i == flbas else ''}")
        if i == flbas:
            ns.add(LBA_SIZE, 1 << data[at + 2] if data[at + 2] < 64 else 0, at + 2, 1)
        del f
        at += 4
    if len(data) >= 384 + IDNS_TAIL.size:
        _section(lay, IDNS, IDNS_TAIL, 384)
        return 384 + IDNS_TAIL.size
    return at


def lba_size(data: bytes) -> int | None:
    """The LBA data size of the format in use, from Identify Namespace data (None when it does not say)."""
    if len(data) < IDENTIFY_NS.size + 64:
        return None
    flbas = data[26] & 0xF
    at = IDENTIFY_NS.size + 4 * flbas
    shift = data[at + 2]
    return 1 << shift if 9 <= shift < 64 else None


def _namespace_list(lay: Layer, data: bytes) -> int:
    sub = lay.child("nvme.cmd.identify.nslist", None, 0, len(data), "Namespace ID list")
    for at in range(0, len(data) - 3, 4):
        nsid = data[at] | data[at + 1] << 8 | data[at + 2] << 16 | data[at + 3] << 24
        if nsid == 0:
            break              # the list ends at its first zero
        sub.add(NSLIST_NSID, nsid, at, 4)
    return len(data)


def _namespace_descriptors(lay: Layer, data: bytes) -> int:
    at = 0
    while at + NSDESC.size <= len(data) and data[at]:
        nidl = data[at + 1]
        if at + NSDESC.size + nidl > len(data):
            break                  # reported when the data is shown (_nsdesc_overrun)
        d = lay.child("nvme.cmd.identify.nsdesc", NSDESC, at, NSDESC.size + nidl,
                      f"Namespace Identification Descriptor: {N.NIDT.get(data[at], 'Reserved')}")
        d.add(NSDESC_NID, bytes(data[at + 4:at + 4 + nidl]), at + 4, nidl)
        at += NSDESC.size + nidl
    return len(data)


def _nsdesc_overrun(data: bytes) -> int | None:
    """The length of the first Namespace Identification Descriptor that runs past ``data``, if one does."""
    at = 0
    while at + NSDESC.size <= len(data) and data[at]:
        nidl = data[at + 1]
        if at + NSDESC.size + nidl > len(data):
            return nidl
        at += NSDESC.size + nidl
    return None


def _error_log(lay: Layer, data: bytes) -> int:
    n = len(data) // ERROR_INFO.size
    for i in range(n):
        _section(lay, f"{LOG}.errinf", ERROR_INFO, i * ERROR_INFO.size, f"Error Information Log Entry {i}")
    return n * ERROR_INFO.size


def _one(hdr: Header, proto: str) -> Callable[[Layer, bytes], int]:
    def show(lay: Layer, data: bytes) -> int:
        if len(data) < hdr.size:
            return 0
        _section(lay, proto, hdr, 0)
        return hdr.size
    return show


def _effects(lay: Layer, data: bytes) -> int:
    """Commands Supported and Effects: 256 admin entries, then 256 I/O entries, each by its opcode."""
    n = min(len(data) // 4, 512)
    for i in range(n):
        at = i * 4
        opcode = i & 0xFF
        table = N.ADMIN_OPCODES if i < 256 else N.IO_OPCODES
        name = table.get(opcode, f"0x{opcode:02x}")
        kind = "Admin" if i < 256 else "I/O"
        e = _section(lay, f"{LOG}.cmd_and_eff", CSE_WORD, at,
                     f"{kind} command {name}{'' if data[at] & 1 else ' (not supported)'}")
        e.add(CSE_OPCODE, f"{kind} {name} (0x{opcode:02x})", at, 4)
    return n * 4


def _ana(lay: Layer, data: bytes) -> int:
    if len(data) < ANA_HEAD.size:
        return 0
    _section(lay, f"{LOG}.ana", ANA_HEAD, 0)
    ngd = data[8] | data[9] << 8
    at = ANA_HEAD.size
    for i in range(ngd):
        if at + ANA_GROUP.size > len(data):
            break
        nns = int.from_bytes(data[at + 4:at + 8], "little")
        grp = _section(lay, f"{LOG}.ana.grp", ANA_GROUP, at, f"ANA Group Descriptor {i}")
        at += ANA_GROUP.size
        for _ in range(nns):
            if at + 4 > len(data):
                break
            grp.add(ANA_NSID, int.from_bytes(data[at:at + 4], "little"), at, 4)
            at += 4
    return at


def _discovery(lay: Layer, data: bytes) -> int:
    if len(data) < 18:
        return 0
    if len(data) >= DISCOVERY_HEAD.size:
        _section(lay, f"{LOG}.identify", DISCOVERY_HEAD, 0)
    else:
        # a host reads the header alone first: its counters, without the reserved bytes after them
        head = lay.child(f"{LOG}.identify", None, 0, 18, "Discovery Log Page (header)")
        head.add(DISCOVERY_HEAD.fields[0], int.from_bytes(data[0:8], "little"), 0, 8)
        head.add(DISCOVERY_HEAD.fields[1], int.from_bytes(data[8:16], "little"), 8, 8)
        head.add(DISCOVERY_HEAD.fields[2], data[16] | data[17] << 8, 16, 2)
        return 18
    numrec = int.from_bytes(data[8:16], "little")
    at = DISCOVERY_HEAD.size
    i = 0
    while i < numrec and at + DISCOVERY_ENTRY.size + TSAS_RDMA.size <= len(data):
        e = _section(lay, f"{LOG}.identify.rcrd", DISCOVERY_ENTRY, at, f"Discovery Log Entry {i}")
        tsas = TSAS_RDMA if data[at] == 1 else TSAS_OTHER
        e.child(f"{LOG}.identify.rcrd.tsas", tsas, at + DISCOVERY_ENTRY.size, tsas.size)
        at += DISCOVERY_ENTRY.size + tsas.size
        i += 1
    return at


def _connect_data(lay: Layer, data: bytes) -> int:
    if len(data) < CONNECT_DATA_SIZE:
        return 0
    _section(lay, "nvme.fabrics.cmd.connect.data", CONNECT_DATA, 0)
    return CONNECT_DATA_SIZE


_IDENTIFY: Final[dict[int, Callable[[Layer, bytes], int]]] = {
    0x00: _identify_namespace, 0x01: _identify_controller, 0x02: _namespace_list, 0x03: _namespace_descriptors,
    0x07: _namespace_list, 0x10: _namespace_list}
_LOGS: Final[dict[int, Callable[[Layer, bytes], int]]] = {
    0x01: _error_log, 0x02: _one(SMART, f"{LOG}.smart"), 0x03: _one(FW_SLOT, f"{LOG}.fw_slot"), 0x05: _effects,
    0x0C: _ana, 0x70: _discovery}


def decoder(cmd: NvmeCommand) -> Callable[[Layer, bytes], int] | None:
    """How the data of ``cmd`` reads, or None when it is not a structure declared here."""
    if cmd.fctype is not None:
        return _connect_data if cmd.fctype == 0x01 else None
    if not is_admin(cmd):
        return None
    if cmd.opcode == 0x06:
        return _IDENTIFY.get(cmd.cdw10 & 0xFF)
    if cmd.opcode == 0x02 and cmd.cdw12 == 0 and cmd.cdw13 == 0:     # from the log page's start
        return _LOGS.get(cmd.cdw10 & 0xFF)
    return None


def wants_data(cmd: NvmeCommand) -> bool:
    """Whether the data ``cmd`` moves is a structure shown here (Identify, log pages, Connect data)."""
    return decoder(cmd) is not None


def _fill_data(lay: Layer) -> None:
    """The items and sections of a data layer (``show_data``), from what it left in ``_vals``."""
    show, what, frame, frames = lay._vals
    data = lay.buf
    lay.add(DATA_CMD, what, -1, 0)
    lay.add(DATA_PKT, frame, -1, 0)
    lay.add(DATA_FRAMES, frames, -1, 0)
    lay.add(DATA_LENGTH, len(data), -1, 0)
    if show(lay, data) == 0 and data:
        lay.add(NOT_DECODED, f"{len(data)} bytes: shorter than the structure", 0, len(data))


# Final: compiled, a C static (a function named as a value is otherwise a look-up in the module's dict)
_FILL_DATA: Final = _fill_data


def show_data(pkt: Packet, cmd: NvmeCommand, data: bytes, frames: list[int], how: str) -> Layer | None:
    """The data of ``cmd`` (``data``: the bytes the transport moved, from ``frames``; ``how``: what moved
    them) as a layer of its own, its structure decoded where it is one declared here."""
    show = decoder(cmd)
    if show is None:
        return None
    what = cmd.name
    if cmd.fctype is None and cmd.opcode == 0x06:
        cns = N.CNS.get(cmd.cdw10 & 0xFF)
        what = cns if cns is not None and cns.startswith("Identify") else \
            f"Identify {cns if cns is not None else f'CNS 0x{cmd.cdw10 & 0xFF:02x}'}"
    elif cmd.fctype is None and cmd.opcode == 0x02:
        lid = cmd.cdw10 & 0xFF
        what = f"{N.LOG_PAGES.get(lid, f'LID 0x{lid:02x}')} log page"
    elif cmd.fctype is not None:
        what = "Connect data"
    frames_text = ",".join(map(str, frames))
    lay = pkt.add_layer("nvme.data", None, data, 0, len(data),
                        f"NVMe data: {what} ({len(data)} bytes, {how}, frames {frames_text})")
    # the structure (some 4 KiB of it for an Identify) is spelled out when a sink first reads the items
    lay._vals = (show, what, cmd.frame, frames_text)
    lay._fill = _FILL_DATA
    if show is _namespace_descriptors:
        nidl = _nsdesc_overrun(data)
        if nidl is not None:
            pkt.add_expert("warning", "malformed", f"Namespace Identification Descriptor of {nidl} bytes runs past "
                           "the data", "NVMe Base 2.0 §5.17.2.3")
    if cmd.fctype is None and cmd.opcode == 0x06 and cmd.cdw10 & 0xFF == 0 and cmd.qid == 0:
        cmd.lba_size = lba_size(data)           # Identify Namespace (CNS 0): for the analysis, a typed fact
    if cmd.connect is not None and len(data) >= CONNECT_DATA_SIZE:
        c = cmd.connect
        c.hostid = bytes(data[0:16])
        c.cntlid = data[16] | data[17] << 8
        c.subnqn = data[256:512].split(b"\0", 1)[0].decode("utf-8", "replace")
        c.hostnqn = data[512:768].split(b"\0", 1)[0].decode("utf-8", "replace")
    if pkt.proto in ("RoCEv2", "RoCE", "InfiniBand", "MPA", "DDP/RDMAP", ""):
        pkt.proto = "NVMe"
    pkt.add_info(f"[NVMe {what} of CID 0x{cmd.cid:04x}]")
    return lay
