"""NFSv4.x operations declared in XDR (RFC 7530, 8881, 7862), as tshark names their fields.

``ARGS[op]`` and ``RES[op]`` declare an operation's arguments and its results when its status is NFS4_OK;
the COMPOUND walk (nfs.py) reads them when the layer is filled and skips over them (``XdrType.skip``) on the
summary path.  Operations not declared here are walked by nfs.py's hand-written walkers until they are.
``PARTIAL`` names the declarations that do not yet show everything tshark shows.  The attributes
(``bitmap4``, ``fattr4``, ``nfsstat4``) are declared in ``nfs4_attrs.py``.
"""
from __future__ import annotations

import zlib
from typing import Final

from ..fields import declaring
from .nfs3 import fhandle
# the attribute types the operations use (and their users find here too)
from .nfs4_attrs import BITMAP4, FATTR4, NFS4_STATUS, STATUS4, Bitmap4, fattr4  # noqa: F401
from .xdrlang import VOID, XdrType, boolean, ddp, enum, field, opaque, struct, tree, uint32, uint64

declaring(__name__)

STABLE_HOW4: Final = {0: "UNSTABLE4", 1: "DATA_SYNC4", 2: "FILE_SYNC4"}
SEQUENCE_FLAGS: Final = (
    ("cb_path_down", 0x1), ("cb_gss_contexts_expiring", 0x2), ("cb_gss_contexts_expired", 0x4),
    ("expired_all_state_revoked", 0x8), ("expired_some_state_revoked", 0x10), ("admin_state_revoked", 0x20),
    ("recallable_state_revoked", 0x40), ("lease_moved", 0x80), ("restart_reclaim_needed", 0x100),
    ("cb_path_down_session", 0x200), ("backchannel_fault", 0x400), ("devid_changed", 0x800),
    ("devid_deleted", 0x1000))


def crc16_x25(data: bytes) -> int:
    """tshark's ``nfs.stateid.hash``: CRC-16/X-25 (reflected 0x1021, init and xorout 0xFFFF)."""
    crc = 0xFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x8408 if crc & 1 else crc >> 1
    return crc ^ 0xFFFF


FH4: Final = tree(fhandle(128), "nfs.fh", "FileHandle")
STATEID4: Final = tree(struct(
    "stateid4", ("seqid", uint32("nfs.stateid.seqid", "StateID seqid")),
    ("other", opaque("nfs.stateid.other", "StateID Other", fixed=12,
                     derived=[(field("nfs.stateid.other_hash", "StateID Other hash", "hex"), zlib.crc32)])),
    derived=[(field("nfs.stateid", "StateID", "bytes"), bytes),
             (field("nfs.stateid.hash", "StateID Hash", "hex"), crc16_x25)]), "nfs.stateid4", "stateid")
OFFSET4: Final = uint64("nfs.offset4", "offset")
COUNT4: Final = uint32("nfs.count4", "count")
SESSIONID4: Final = opaque("nfs.session_id4", "sessionid", fixed=16)
SEQID: Final = uint32("nfs.seqid", "seqid", "hex")
SLOTID: Final = uint32("nfs.slotid", "slot id")
HIGH_SLOTID: Final = uint32("nfs.high_slotid", "high slot id")

ARGS: Final[dict[int, XdrType]] = {
    5: struct("COMMIT4args", ("offset", OFFSET4), ("count", COUNT4)),
    9: struct("GETATTR4args", ("attr_request", BITMAP4)),
    10: VOID,
    22: struct("PUTFH4args", ("object", FH4)),
    23: VOID,
    24: VOID,
    25: struct("READ4args", ("stateid", STATEID4), ("offset", OFFSET4), ("count", COUNT4)),
    31: VOID,
    32: VOID,
    38: struct("WRITE4args", ("stateid", STATEID4), ("offset", OFFSET4),
               ("stable", enum("nfs.stable_how4", "stable_how4", STABLE_HOW4)),
               ("data", ddp("write_data", "nfs.data", "Data", length="nfs.write.data_length"))),
    44: struct("DESTROY_SESSION4args", ("sessionid", SESSIONID4)),
    53: struct("SEQUENCE4args", ("sessionid", SESSIONID4), ("sequenceid", SEQID), ("slotid", SLOTID),
               ("highest_slotid", HIGH_SLOTID), ("cachethis", boolean("nfs.cachethis4", "cache this?"))),
}
RES: Final[dict[int, XdrType]] = {
    5: struct("COMMIT4resok", ("writeverf", uint64("nfs.verifier4", "verifier", "hex"))),
    9: struct("GETATTR4resok", ("obj_attributes", FATTR4)),
    10: struct("GETFH4resok", ("object", tree(fhandle(128), "nfs.fh", "Filehandle"))),
    22: VOID,
    23: VOID,
    24: VOID,
    25: struct("READ4resok", ("eof", uint32("nfs.eof", "eof")),
               ("data", ddp("read_data", "nfs.data", "Data", length="nfs.read.data_length"))),
    31: VOID,
    32: VOID,
    38: struct("WRITE4resok", ("count", COUNT4), ("committed", enum("nfs.stable_how4", "stable_how4", STABLE_HOW4)),
               ("writeverf", uint64("nfs.verifier4", "verifier", "hex"))),
    44: VOID,
    53: struct("SEQUENCE4resok", ("sessionid", SESSIONID4), ("sequenceid", SEQID), ("slotid", SLOTID),
               ("highest_slotid", HIGH_SLOTID),
               ("target_highest_slotid", uint32("nfs.target_high_slotid", "target high slot id")),
               ("status_flags", uint32("nfs.sequence.flags", "status flags", "hex", flags=[
                   (f"nfs.sequence.flags.{name}", f"SEQ4_STATUS_{name.upper()}", mask)
                   for name, mask in SEQUENCE_FLAGS]))),
}
# Results declared but not yet shown in full (tshark shows more): the operations' numbers
PARTIAL: Final[frozenset[int]] = frozenset()
