"""The names of NVM Express values: opcodes, Fabrics command types, status codes, features, log pages,
Identify structures and controller properties (NVM Express Base Specification 2.0, NVM Command Set 1.0,
NVMe over Fabrics 1.1).  Tables only: the declarations in ``nvme`` and ``nvme_data`` show them."""
from __future__ import annotations


from ..typenames import Final
ADMIN_OPCODES: Final = {
    0x00: "Delete I/O Submission Queue", 0x01: "Create I/O Submission Queue", 0x02: "Get Log Page",
    0x04: "Delete I/O Completion Queue", 0x05: "Create I/O Completion Queue", 0x06: "Identify", 0x08: "Abort",
    0x09: "Set Features", 0x0A: "Get Features", 0x0C: "Asynchronous Event Request",
    0x0D: "Namespace Management", 0x10: "Firmware Commit", 0x11: "Firmware Image Download",
    0x14: "Device Self-test", 0x15: "Namespace Attachment", 0x18: "Keep Alive", 0x19: "Directive Send",
    0x1A: "Directive Receive", 0x1C: "Virtualization Management", 0x1D: "NVMe-MI Send", 0x1E: "NVMe-MI Receive",
    0x20: "Capacity Management", 0x24: "Lockdown", 0x7C: "Doorbell Buffer Config", 0x7F: "Fabrics Command",
    0x80: "Format NVM", 0x81: "Security Send", 0x82: "Security Receive", 0x84: "Sanitize",
    0x86: "Get LBA Status",
}
IO_OPCODES: Final = {
    0x00: "Flush", 0x01: "Write", 0x02: "Read", 0x04: "Write Uncorrectable", 0x05: "Compare",
    0x08: "Write Zeroes", 0x09: "Dataset Management", 0x0C: "Verify", 0x0D: "Reservation Register",
    0x0E: "Reservation Report", 0x11: "Reservation Acquire", 0x15: "Reservation Release", 0x19: "Copy",
    0x7F: "Fabrics Command",
}
FABRICS_OPCODE: Final = 0x7F
FCTYPES: Final = {0x00: "Property Set", 0x01: "Connect", 0x04: "Property Get", 0x05: "Authentication Send",
                  0x06: "Authentication Receive", 0x08: "Disconnect"}
FUSE: Final = {0: "Normal", 1: "First of a fused operation", 2: "Second of a fused operation", 3: "Reserved"}
PSDT: Final = {0: "PRPs", 1: "SGLs, MPTR a contiguous buffer", 2: "SGLs, MPTR an SGL segment", 3: "Reserved"}

# SGL descriptor types and the sub types the RDMA transport uses
SGL_TYPES: Final = {0x0: "Data Block", 0x1: "Bit Bucket", 0x2: "Segment", 0x3: "Last Segment",
                    0x4: "Keyed Data Block", 0x5: "Transport Data Block", 0xF: "Vendor Specific"}
SGL_SUBTYPES: Final = {0x0: "Address", 0x1: "Offset", 0xA: "Transport specific", 0xF: "Transport specific"}

# --- status (NVMe Base 2.0 §4.6.1) ---------------------------------------------------------------------
SCT: Final = {0: "Generic Command Status", 1: "Command Specific Status", 2: "Media and Data Integrity Errors",
              3: "Path Related Status", 7: "Vendor Specific"}
GENERIC_STATUS: Final = {
    0x00: "Successful Completion", 0x01: "Invalid Command Opcode", 0x02: "Invalid Field in Command",
    0x03: "Command ID Conflict", 0x04: "Data Transfer Error", 0x05: "Commands Aborted due to Power Loss Notification",
    0x06: "Internal Error", 0x07: "Command Abort Requested", 0x08: "Command Aborted due to SQ Deletion",
    0x09: "Command Aborted due to Failed Fused Command", 0x0A: "Command Aborted due to Missing Fused Command",
    0x0B: "Invalid Namespace or Format", 0x0C: "Command Sequence Error", 0x0D: "Invalid SGL Segment Descriptor",
    0x0E: "Invalid Number of SGL Descriptors", 0x0F: "Data SGL Length Invalid", 0x10: "Metadata SGL Length Invalid",
    0x11: "SGL Descriptor Type Invalid", 0x12: "Invalid Use of Controller Memory Buffer", 0x13: "PRP Offset Invalid",
    0x14: "Atomic Write Unit Exceeded", 0x15: "Operation Denied", 0x16: "SGL Offset Invalid",
    0x18: "Host Identifier Inconsistent Format", 0x19: "Keep Alive Timer Expired", 0x1A: "Keep Alive Timeout Invalid",
    0x1B: "Command Aborted due to Preempt and Abort", 0x1C: "Sanitize Failed", 0x1D: "Sanitize In Progress",
    0x1E: "SGL Data Block Granularity Invalid", 0x1F: "Command Not Supported for Queue in CMB",
    0x20: "Namespace is Write Protected", 0x21: "Command Interrupted", 0x22: "Transient Transport Error",
    0x23: "Command Prohibited by Command and Feature Lockdown", 0x24: "Admin Command Media Not Ready",
    0x80: "LBA Out of Range", 0x81: "Capacity Exceeded", 0x82: "Namespace Not Ready", 0x83: "Reservation Conflict",
    0x84: "Format In Progress", 0x85: "Invalid Value Size", 0x86: "Invalid Key Size", 0x87: "KV Key Does Not Exist",
    0x88: "Unrecovered Error", 0x89: "Key Exists",
}
COMMAND_STATUS: Final = {
    0x00: "Completion Queue Invalid", 0x01: "Invalid Queue Identifier", 0x02: "Invalid Queue Size",
    0x03: "Abort Command Limit Exceeded", 0x05: "Asynchronous Event Request Limit Exceeded",
    0x06: "Invalid Firmware Slot", 0x07: "Invalid Firmware Image", 0x08: "Invalid Interrupt Vector",
    0x09: "Invalid Log Page", 0x0A: "Invalid Format", 0x0B: "Firmware Activation Requires Conventional Reset",
    0x0C: "Invalid Queue Deletion", 0x0D: "Feature Identifier Not Saveable", 0x0E: "Feature Not Changeable",
    0x0F: "Feature Not Namespace Specific", 0x10: "Firmware Activation Requires NVM Subsystem Reset",
    0x11: "Firmware Activation Requires Controller Level Reset",
    0x12: "Firmware Activation Requires Maximum Time Violation", 0x13: "Firmware Activation Prohibited",
    0x14: "Overlapping Range", 0x15: "Namespace Insufficient Capacity", 0x16: "Namespace Identifier Unavailable",
    0x18: "Namespace Already Attached", 0x19: "Namespace Is Private", 0x1A: "Namespace Not Attached",
    0x1B: "Thin Provisioning Not Supported", 0x1C: "Controller List Invalid", 0x1D: "Device Self-test In Progress",
    0x1E: "Boot Partition Write Prohibited", 0x1F: "Invalid Controller Identifier",
    0x20: "Invalid Secondary Controller State", 0x21: "Invalid Number of Controller Resources",
    0x22: "Invalid Resource Identifier", 0x23: "Sanitize Prohibited While Persistent Memory Region is Enabled",
    0x24: "ANA Group Identifier Invalid", 0x25: "ANA Attach Failed", 0x26: "Insufficient Capacity",
    0x27: "Namespace Attachment Limit Exceeded", 0x28: "Prohibition of Command Execution Not Supported",
    0x29: "I/O Command Set Not Supported", 0x2A: "I/O Command Set Not Enabled",
    0x2B: "I/O Command Set Combination Rejected", 0x2C: "Invalid I/O Command Set",
    0x2D: "Identifier Unavailable",
}
# Command specific codes 0x80 and up differ by command set: those of the NVM command set, and of Fabrics
IO_COMMAND_STATUS: Final = {
    **COMMAND_STATUS, 0x80: "Conflicting Attributes", 0x81: "Invalid Protection Information",
    0x82: "Attempted Write to Read Only Range", 0x83: "Command Size Limit Exceeded",
}
FABRICS_COMMAND_STATUS: Final = {
    **COMMAND_STATUS, 0x80: "Incompatible Format", 0x81: "Controller Busy", 0x82: "Connect Invalid Parameters",
    0x83: "Connect Restart Discovery", 0x84: "Connect Invalid Host", 0x85: "Invalid Queue Type",
    0x90: "Discover Restart", 0x91: "Authentication Required",
}
MEDIA_STATUS: Final = {
    0x80: "Write Fault", 0x81: "Unrecovered Read Error", 0x82: "End-to-end Guard Check Error",
    0x83: "End-to-end Application Tag Check Error", 0x84: "End-to-end Reference Tag Check Error",
    0x85: "Compare Failure", 0x86: "Access Denied", 0x87: "Deallocated or Unwritten Logical Block",
    0x88: "End-to-End Storage Tag Check Error",
}
PATH_STATUS: Final = {
    0x00: "Internal Path Error", 0x01: "Asymmetric Access Persistent Loss", 0x02: "Asymmetric Access Inaccessible",
    0x03: "Asymmetric Access Transition", 0x60: "Controller Pathing Error", 0x70: "Host Pathing Error",
    0x71: "Command Aborted By Host",
}


def status_name(sct: int, sc: int, fabrics: bool = False, io: bool = False) -> str:
    """The name of status code ``sc`` of type ``sct``; command specific codes by the command's set."""
    if sct == 0:
        table = GENERIC_STATUS
    elif sct == 1:
        table = FABRICS_COMMAND_STATUS if fabrics else IO_COMMAND_STATUS if io else COMMAND_STATUS
    elif sct == 2:
        table = MEDIA_STATUS
    elif sct == 3:
        table = PATH_STATUS
    elif sct == 7:
        return f"Vendor Specific 0x{sc:02x}"
    else:
        return f"Reserved type {sct} code 0x{sc:02x}"
    name = table.get(sc)
    return name if name is not None else f"Reserved 0x{sc:02x}"


# --- Identify, log pages, features ----------------------------------------------------------------------
CNS: Final = {
    0x00: "Identify Namespace", 0x01: "Identify Controller", 0x02: "Active Namespace ID list",
    0x03: "Namespace Identification Descriptor list", 0x04: "NVM Set List",
    0x05: "I/O Command Set specific Identify Namespace", 0x06: "I/O Command Set specific Identify Controller",
    0x07: "I/O Command Set specific Active Namespace ID list",
    0x08: "I/O Command Set Independent Identify Namespace", 0x10: "Allocated Namespace ID list",
    0x11: "Identify Namespace (allocated)", 0x12: "Namespace Attached Controller list", 0x13: "Controller list",
    0x14: "Primary Controller Capabilities", 0x15: "Secondary Controller list", 0x16: "Namespace Granularity List",
    0x17: "UUID List", 0x18: "Domain List", 0x19: "Endurance Group List",
    0x1A: "I/O Command Set specific Allocated Namespace ID list",
    0x1B: "I/O Command Set specific Identify Namespace (allocated)", 0x1C: "I/O Command Set data structure",
}
LOG_PAGES: Final = {
    0x00: "Supported Log Pages", 0x01: "Error Information", 0x02: "SMART / Health Information",
    0x03: "Firmware Slot Information", 0x04: "Changed Namespace List", 0x05: "Commands Supported and Effects",
    0x06: "Device Self-test", 0x07: "Telemetry Host-Initiated", 0x08: "Telemetry Controller-Initiated",
    0x09: "Endurance Group Information", 0x0A: "Predictable Latency Per NVM Set",
    0x0B: "Predictable Latency Event Aggregate", 0x0C: "Asymmetric Namespace Access", 0x0D: "Persistent Event Log",
    0x0E: "LBA Status Information", 0x0F: "Endurance Group Event Aggregate", 0x70: "Discovery",
    0x80: "Reservation Notification", 0x81: "Sanitize Status",
}
FEATURES: Final = {
    0x01: "Arbitration", 0x02: "Power Management", 0x03: "LBA Range Type", 0x04: "Temperature Threshold",
    0x05: "Error Recovery", 0x06: "Volatile Write Cache", 0x07: "Number of Queues", 0x08: "Interrupt Coalescing",
    0x09: "Interrupt Vector Configuration", 0x0A: "Write Atomicity Normal", 0x0B: "Asynchronous Event Configuration",
    0x0C: "Autonomous Power State Transition", 0x0D: "Host Memory Buffer", 0x0E: "Timestamp",
    0x0F: "Keep Alive Timer", 0x10: "Host Controlled Thermal Management", 0x11: "Non-Operational Power State Config",
    0x12: "Read Recovery Level Config", 0x13: "Predictable Latency Mode Config",
    0x14: "Predictable Latency Mode Window", 0x15: "LBA Status Information Report Interval",
    0x16: "Host Behavior Support", 0x17: "Sanitize Config", 0x18: "Endurance Group Event Configuration",
    0x19: "I/O Command Set Profile", 0x1A: "Spinup Control", 0x7D: "Enhanced Controller Metadata",
    0x7E: "Controller Metadata", 0x7F: "Namespace Metadata", 0x80: "Software Progress Marker",
    0x81: "Host Identifier", 0x82: "Reservation Notification Mask", 0x83: "Reservation Persistence",
    0x84: "Namespace Write Protection Config",
}
FEATURE_SELECT: Final = {0: "Current", 1: "Default", 2: "Saved", 3: "Supported capabilities"}
AER_TYPES: Final = {0: "Error status", 1: "SMART / Health status", 2: "Notice", 6: "I/O Command specific status",
                    7: "Vendor specific"}

# --- controller properties (NVMe over Fabrics 1.1 §3.4, the registers of NVMe Base 2.0 §3.1.3) ---------
PROPERTIES: Final = {
    0x00: "Controller Capabilities (CAP)", 0x08: "Version (VS)", 0x0C: "Interrupt Mask Set (INTMS)",
    0x10: "Interrupt Mask Clear (INTMC)", 0x14: "Controller Configuration (CC)", 0x1C: "Controller Status (CSTS)",
    0x20: "NVM Subsystem Reset (NSSR)", 0x24: "Admin Queue Attributes (AQA)",
    0x28: "Admin Submission Queue Base Address (ASQ)", 0x30: "Admin Completion Queue Base Address (ACQ)",
    0x38: "Controller Memory Buffer Location (CMBLOC)", 0x3C: "Controller Memory Buffer Size (CMBSZ)",
    0x40: "Boot Partition Information (BPINFO)", 0x44: "Boot Partition Read Select (BPRSEL)",
    0x48: "Boot Partition Memory Buffer Location (BPMBL)",
}
PROPERTY_SIZES: Final = {0: "4 bytes", 1: "8 bytes"}
SHUTDOWN_NOTIFICATION: Final = {0: "No notification", 1: "Normal shutdown", 2: "Abrupt shutdown", 3: "Reserved"}
SHUTDOWN_STATUS: Final = {0: "Normal operation", 1: "Shutdown processing occurring", 2: "Shutdown complete",
                          3: "Reserved"}

# --- Fabrics: the Discovery log page, Connect --------------------------------------------------------------
TRTYPES: Final = {0: "Reserved", 1: "RDMA Transport", 2: "Fibre Channel Transport", 3: "TCP Transport",
                  254: "Intra-host Transport (loopback)"}
ADRFAMS: Final = {1: "AF_INET (IPv4)", 2: "AF_INET6 (IPv6)", 3: "AF_IB (InfiniBand)", 4: "Fibre Channel",
                  254: "Intra-host"}
DISCOVERY_SUBTYPES: Final = {1: "Referral to a discovery service", 2: "NVM subsystem", 3: "Current discovery subsystem"}
TREQ_SECURE_CHANNEL: Final = {0: "Not specified", 1: "Required", 2: "Not required", 3: "Reserved"}
RDMA_QPTYPES: Final = {1: "Reliable Connected", 2: "Reliable Datagram"}
RDMA_PRTYPES: Final = {1: "No provider specified", 2: "InfiniBand", 3: "RoCE (v1)", 4: "RoCE v2", 5: "iWARP"}
RDMA_CMS: Final = {1: "RDMA_IP_CM"}
PRIORITY_CLASSES: Final = {0: "Urgent", 1: "High", 2: "Medium", 3: "Low"}
NIDT: Final = {1: "IEEE Extended Unique Identifier (EUI64)", 2: "Namespace Globally Unique Identifier (NGUID)",
               3: "Namespace UUID", 4: "Command Set Identifier"}
ANA_STATES: Final = {1: "Optimized", 2: "Non-Optimized", 3: "Inaccessible", 4: "Persistent Loss", 15: "Change"}
