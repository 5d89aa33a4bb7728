"""NFSv4.1 and v4.2 operations (RFC 8881 §18.35-18.51, RFC 7862 §15, RFC 8276 §8.4) and the NFSv4.1
callback program's operations (RFC 8881 §20, RFC 7862 §16), declared in XDR as tshark 4.0 names them.

``ARGS``, ``RES`` and ``FAILED`` join nfs4's tables when this module loads; ``CB_ARGS``/``CB_RES`` declare
CB_COMPOUND's operations.  tshark 4.0 does not decode GET_DIR_DELEGATION, SET_SSV, WANT_DELEGATION nor
seven callback operations' arguments (CB_NOTIFY, CB_PUSH_DELEG, CB_RECALL_ANY, CB_RECALLABLE_OBJ_AVAIL,
CB_RECALL_SLOT, CB_WANTS_CANCELLED, CB_NOTIFY_DEVICEID): their own items are named here
(``nfs.gdd.*``, ``nfs.set_ssv.*``, ``nfs.deleg_want``, ``nfs.cb.*``), the pieces they share with the other
operations (stateids, handles, attribute masks, delegations) keep tshark's names.  Layout bodies are decoded
for the files and flexfiles layout types, as tshark decodes them, and kept as bytes for the others.
"""
from __future__ import annotations

import zlib

from ..fields import Field, declaring
from ..packet import Layer
from ..typenames import Any, Final, Iterator, Mapping, Sequence
from . import nfs4
from .nfs3 import fhandle
from .nfs4 import (BITMAP4, CB_PROGRAM, CHANGE_INFO4, CLIENTID4, COUNT4, FATTR4, FH4, HIGH_SLOTID, LENGTH4,
                   LOCK_OWNER4, NFS4_STATUS, NFSACE4, OFFSET4, SECINFO4RES, SEQID, SESSIONID4, SLOTID, STABLE_HOW4,
                   STATEID4, STATUS4, VERIFIER4)
from .nfs4_attrs import LAYOUTTYPE as LAYOUTTYPE4, NFSTIME4
from .xdr import Cursor, XdrInvalid, p32
from .xdrlang import (VOID, Array, Int, Out, Walk, XdrType, array, boolean, enum, field, opaque, string, struct,
                      tree, uint32, uint64, union)

declaring(__name__)

# --- kinds of tshark's own shapes ----------------------------------------------------------------------


class Bits(XdrType):
    """A ``bitmap4`` of numbered things (operations, notification types, hints), as tshark shows one: each
    word that is not zero as ``mask``, how many bits it sets as ``count`` (where tshark shows that) and
    the number of each bit set as ``bit``.  The value is the list of words."""

    __slots__ = ("mask", "count", "bit")

    def __init__(self, mask: Field, bit: Field, count: Field | None = None) -> None:
        super().__init__(-1, 4)
        self.mask = mask
        self.count = count
        self.bit = bit

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        what = self.mask.name
        n = cur.count(4, what)
        words: list[int] = []
        for i in range(n):
            p = cur.pos
            word = cur.u32(what)
            words.append(word)
            if lay is not None and word:
                lay.add(self.mask, word, p, 4)
                if self.count is not None:
                    lay.add(self.count, bin(word).count("1"), p, 4)
                for b in range(32):
                    if word >> b & 1:
                        lay.add(self.bit, 32 * i + b, -1, 0)
        return words

    def skip(self, cur: Cursor, w: Walk) -> None:
        cur.skip_u32s(self.mask.name)

    def write(self, value: Any, out: Out) -> None:
        out.parts.append(p32(len(value), *value))

    def fields(self) -> Iterator[Field]:
        yield self.mask
        if self.count is not None:
            yield self.count
        yield self.bit


def set_bits(words: Sequence[int]) -> list[int]:
    """The numbers of the bits a bitmap4's words set, in ascending order."""
    return [32 * i + b for i, word in enumerate(words) for b in range(32) if word >> b & 1]


def bitmap_words(bits: Sequence[int]) -> list[int]:
    """The words of a bitmap4 setting ``bits`` (as few as hold the highest)."""
    words = [0] * (max(bits) // 32 + 1 if bits else 0)
    for b in bits:
        words[b // 32] |= 1 << (b % 32)
    return words


class Body(XdrType):
    """An ``opaque<>`` whose bytes are the XDR of a type of their own (a layout's or device address's body,
    by its layout type): decoded within the opaque, which it must fill.  The value is the inner value."""

    __slots__ = ("item", "what")

    def __init__(self, item: XdrType, what: str) -> None:
        super().__init__(-1, 4)
        self.item = item
        self.what = what

    def _inner(self, cur: Cursor) -> tuple[Cursor, int]:
        n = cur.u32(self.what)
        p = cur.need((n + 3) & ~3, self.what)
        cur.pos = p + ((n + 3) & ~3)
        return Cursor(cur.buf, p, p + n), p + n

    def _done(self, inner: Cursor, end: int) -> None:
        if inner.pos != end:
            raise XdrInvalid(f"{self.what}: {end - inner.pos} bytes after its contents")

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        inner, end = self._inner(cur)
        v = self.item.read(inner, w, lay)
        self._done(inner, end)
        return v

    def skip(self, cur: Cursor, w: Walk) -> None:
        inner, end = self._inner(cur)
        self.item.skip(inner, w)
        self._done(inner, end)

    def write(self, value: Any, out: Out) -> None:
        inner = Out(out.reduce)
        self.item.write(value, inner)
        raw = b"".join(inner.parts)
        out.parts.append(p32(len(raw)) + raw + b"\0" * (-len(raw) % 4))

    def fields(self) -> Iterator[Field]:
        return self.item.fields()


class Indexed(XdrType):
    """``item x<bound>`` as tshark shows some lists: the count as ``count``, each item after its index
    (``index``, its place in the list from 0)."""

    __slots__ = ("item", "count", "index", "bound")

    def __init__(self, item: XdrType, count: Field, index: Field, bound: int | None = None) -> None:
        super().__init__(-1, 4)
        self.item = item
        self.count = count
        self.index = index
        self.bound = bound

    def _count(self, cur: Cursor) -> int:
        what = self.count.name
        n = cur.u32(what)
        if self.bound is not None and n > self.bound:
            raise XdrInvalid(f"{what}: count {n} over its bound {self.bound}")
        need = n * max(self.item.min_size, 1)
        if need > cur.end - cur.pos:
            raise XdrInvalid(f"{what}: {n} items need {need} bytes, {cur.end - cur.pos} left")
        return n

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        p = cur.pos
        n = self._count(cur)
        if lay is not None:
            lay.add(self.count, n, p, 4)
        out: list[Any] = []
        for i in range(n):
            if lay is not None:
                lay.add(self.index, i, cur.pos, 0)
            out.append(self.item.read(cur, w, lay))
        return out

    def skip(self, cur: Cursor, w: Walk) -> None:
        for _ in range(self._count(cur)):
            self.item.skip(cur, w)

    def write(self, value: Any, out: Out) -> None:
        if self.bound is not None and len(value) > self.bound:
            raise ValueError(f"{self.count.name}: {len(value)} items over its bound {self.bound}")
        out.parts.append(p32(len(value)))
        for v in value:
            self.item.write(v, out)

    def fields(self) -> Iterator[Field]:
        yield self.count
        yield self.index
        yield from self.item.fields()


class NotifyList(XdrType):
    """``notify4 {bitmap4 notify_mask; opaque notify_vals<>}``: a value for each bit of the mask, in
    ascending order of bit, each of the type its bit names, decoded from inside the opaque (which they
    must fill).  The value is the list of (bit, value) pairs."""

    __slots__ = ("bits", "arms")

    def __init__(self, bits: Bits, arms: Mapping[int, XdrType]) -> None:
        super().__init__(-1, 8)
        self.bits = bits
        self.arms = dict(arms)

    def _values(self, cur: Cursor, w: Walk, lay: Layer | None, reading: bool) -> list[tuple[int, Any]]:
        words = self.bits.read(cur, w, lay) if reading else self.bits.read(cur, w, None)
        what = self.bits.mask.name
        n = cur.u32(what)
        p = cur.need((n + 3) & ~3, what)
        cur.pos = p + ((n + 3) & ~3)
        inner = Cursor(cur.buf, p, p + n)
        out: list[tuple[int, Any]] = []
        for b in set_bits(words):
            arm = self.arms.get(b)
            if arm is None:
                raise XdrInvalid(f"{what}: no value declared for bit {b}")
            if reading:
                out.append((b, arm.read(inner, w, lay)))
            else:
                arm.skip(inner, w)
        if inner.pos != p + n:
            raise XdrInvalid(f"{what}: {p + n - inner.pos} bytes after its values")
        return out

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        return self._values(cur, w, lay, True)

    def skip(self, cur: Cursor, w: Walk) -> None:
        self._values(cur, w, None, False)

    def write(self, value: Any, out: Out) -> None:
        bits = [b for b, _v in value]
        if bits != sorted(set(bits)):
            raise ValueError(f"{self.bits.mask.name}: bits {bits} not each once, ascending")
        self.bits.write(bitmap_words(bits), out)
        inner = Out(out.reduce)
        for b, v in value:
            self.arms[b].write(v, inner)
        raw = b"".join(inner.parts)
        out.parts.append(p32(len(raw)) + raw)

    def fields(self) -> Iterator[Field]:
        yield from self.bits.fields()
        for arm in self.arms.values():
            yield from arm.fields()


class NflUtil(Int):
    """``nfl_util4`` of a files layout: the stripe unit in its high bits (tshark shows the word under the
    mask, not shifted), whether commits go through the metadata server, whether the layout is dense."""

    __slots__ = ("stripe", "commit", "dense")

    def __init__(self) -> None:
        super().__init__(field("nfs.nfl_util", "nfl_util", "hex"))
        self.stripe = field("nfs.nfl_util.stripe_size", "stripe size")
        self.commit = field("nfs.nfl_util.commit_thru_mds", "commit thru mds", "bool")
        self.dense = field("nfs.nfl_util.dense", "dense", "bool")

    def show(self, lay: Layer, v: int, p: int) -> None:
        super().show(lay, v, p)
        lay.add(self.stripe, v & 0xFFFFFFC0, p, 4)
        lay.add(self.commit, bool(v & 0x2), p, 4)
        lay.add(self.dense, bool(v & 0x1), p, 4)

    def fields(self) -> Iterator[Field]:
        yield from super().fields()
        yield from (self.stripe, self.commit, self.dense)


class UniversalAddress(XdrType):
    """``netaddr4 {string r_netid; string r_addr}`` where tshark reads the address: for the "tcp" netid the
    IPv4 address of its universal address (RFC 5665: four bytes then the port's two), shown as
    ``nfs.universal_address.ipv4`` (0.0.0.0 when it is not one, as tshark shows)."""

    __slots__ = ("item", "ipv4")

    def __init__(self, item: XdrType) -> None:
        super().__init__(-1, item.min_size)
        self.item = item
        self.ipv4 = field("nfs.universal_address.ipv4", "universal_address", "ipv4")

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        p = cur.pos
        v = self.item.read(cur, w, lay)
        if lay is not None and v["netid"] == "tcp":
            at = p + 4 + ((len(v["netid"].encode()) + 3) & ~3)
            lay.add(self.ipv4, universal_ipv4(v["addr"]), at, 4)
        return v

    def skip(self, cur: Cursor, w: Walk) -> None:
        self.item.skip(cur, w)

    def write(self, value: Any, out: Out) -> None:
        self.item.write(value, out)

    def fields(self) -> Iterator[Field]:
        yield from self.item.fields()
        yield self.ipv4


def universal_ipv4(addr: str) -> bytes:
    """The IPv4 address of an IPv4 universal address ("h1.h2.h3.h4.p1.p2"), 0.0.0.0 for anything else."""
    parts = addr.split(".")
    if len(parts) == 6 and all(x.isdigit() and len(x) <= 3 and int(x) < 256 for x in parts):
        return bytes([int(x) for x in parts[:4]])
    return b"\0\0\0\0"


# --- names ------------------------------------------------------------------------------------------------
IOMODES: Final = {1: "IOMODE_READ", 2: "IOMODE_RW", 3: "IOMODE_ANY"}
RETURN_TYPES: Final = {1: "RETURN_FILE", 2: "RETURN_FSID", 3: "RETURN_ALL"}
RECALL_TYPES: Final = {1: "RECALL_FILE", 2: "RECALL_FSID", 3: "RECALL_ALL"}
STATE_PROTECT: Final = {0: "SP4_NONE", 1: "SP4_MACH_CRED", 2: "SP4_SSV"}
AUTH_FLAVORS: Final = {0: "AUTH_NONE", 1: "AUTH_SYS", 6: "RPCSEC_GSS"}
GSS_SERVICES: Final = {1: "RPC_GSS_SVC_NONE", 2: "RPC_GSS_SVC_INTEGRITY", 3: "RPC_GSS_SVC_PRIVACY"}
DIR_FROM_CLIENT: Final = {1: "CDFC4_FORE", 2: "CDFC4_BACK", 3: "CDFC4_FORE_OR_BOTH", 7: "CDFC4_BACK_OR_BOTH"}
DIR_FROM_SERVER: Final = {1: "CDFS4_FORE", 2: "CDFS4_BACK", 3: "CDFS4_BOTH"}
SECINFO_STYLES: Final = {0: "SECINFO_STYLE4_CURRENT_FH", 1: "SECINFO_STYLE4_PARENT"}
NETLOC_TYPES: Final = {1: "NL4_NAME", 2: "NL4_URL", 3: "NL4_NETADDR"}
DATA_CONTENT: Final = {0: "NFS4_CONTENT_DATA", 1: "NFS4_CONTENT_HOLE"}
IO_ADVISE_HINTS: Final = {0: "Normal", 1: "Sequential", 2: "Sequential Backwards", 3: "Random", 4: "Will Need",
                          5: "Will Need Opportunistic", 6: "Don't Need", 7: "No Reuse", 8: "Read", 9: "Write",
                          10: "Init Proximity"}
DEVICE_NOTIFY_TYPES: Final = {1: "NOTIFY_DEVICEID4_CHANGE", 2: "NOTIFY_DEVICEID4_DELETE"}
DIR_NOTIFY_TYPES: Final = {0: "NOTIFY4_CHANGE_CHILD_ATTRS", 1: "NOTIFY4_CHANGE_DIR_ATTRS", 2: "NOTIFY4_REMOVE_ENTRY",
                           3: "NOTIFY4_ADD_ENTRY", 4: "NOTIFY4_RENAME_ENTRY", 5: "NOTIFY4_CHANGE_COOKIE_VERIFIER"}
RECALL_ANY_TYPES: Final = {0: "RCA4_TYPE_MASK_RDATA_DLG", 1: "RCA4_TYPE_MASK_WDATA_DLG", 2: "RCA4_TYPE_MASK_DIR_DLG",
                           3: "RCA4_TYPE_MASK_FILE_LAYOUT", 4: "RCA4_TYPE_MASK_BLK_LAYOUT",
                           8: "RCA4_TYPE_MASK_OBJ_LAYOUT_MIN", 9: "RCA4_TYPE_MASK_OBJ_LAYOUT_MAX",
                           12: "RCA4_TYPE_MASK_OTHER_LAYOUT_MIN", 15: "RCA4_TYPE_MASK_OTHER_LAYOUT_MAX"}
DELEGATION_TYPES: Final = {0: "OPEN_DELEGATE_NONE", 1: "OPEN_DELEGATE_READ", 2: "OPEN_DELEGATE_WRITE",
                           3: "OPEN_DELEGATE_NONE_EXT"}
WHY_NO_DELEGATION: Final = {0: "WND4_NOT_WANTED", 1: "WND4_CONTENTION", 2: "WND4_RESOURCE", 3: "WND4_NOT_SUPP_FTYPE",
                            4: "WND4_WRITE_DELEG_NOT_SUPP_FTYPE", 5: "WND4_NOT_SUPP_UPGRADE",
                            6: "WND4_NOT_SUPP_DOWNGRADE", 7: "WND4_CANCELLED", 8: "WND4_IS_DIR"}
LIMIT_BY: Final = {1: "NFS_LIMIT_SIZE", 2: "NFS_LIMIT_BLOCKS"}
CLAIM_TYPES: Final = {0: "CLAIM_NULL", 1: "CLAIM_PREVIOUS", 2: "CLAIM_DELEGATE_CUR", 3: "CLAIM_DELEGATE_PREV",
                      4: "CLAIM_FH", 5: "CLAIM_DELEG_CUR_FH", 6: "CLAIM_DELEG_PREV_FH"}
SETXATTR_OPTIONS: Final = {0: "SETXATTR4_EITHER", 1: "SETXATTR4_CREATE", 2: "SETXATTR4_REPLACE"}
GDD_STATUS: Final = {0: "GDD4_OK", 1: "GDD4_UNAVAIL"}
EXCHGID_FLAGS: Final = (("confirmed_r", "CONFIRMED_R", 0x80000000),
                        ("confirmed_rec_a", "UPD_CONFIRMED_REC_A", 0x40000000),
                        ("pnfs_ds", "USE_PNFS_DS", 0x40000), ("pnfs_mds", "USE_PNFS_MDS", 0x20000),
                        ("non_pnfs", "USE_NON_PNFS", 0x10000), ("bind_princ", "BIND_PRINC_STATEID", 0x100),
                        ("moved_migr", "SUPP_MOVED_MIGR", 0x2), ("moved_refer", "SUPP_MOVED_REFER", 0x1))
NFS4ERR_LAYOUTTRYLATER: Final = 10058
NFS4ERR_OFFLOAD_NO_REQS: Final = 10094

# --- shared pieces --------------------------------------------------------------------------------------
COOKIE4: Final = uint64("nfs.cookie4", "cookie")
COOKIEVERF4: Final = uint64("nfs.cookie_verf4", "cookie_verf")
MAXCOUNT: Final = uint32("nfs.maxcount", "maxcount")
EOF4: Final = uint32("nfs.eof", "eof")
DEVICEID4: Final = opaque("nfs.deviceid", "device ID", fixed=16)
IOMODE4: Final = enum("nfs.iomode", "IO mode", IOMODES)
RECLAIM4: Final = boolean("nfs.reclaim4", "reclaim")
STABLE4: Final = enum("nfs.stable_how4", "stable_how4", STABLE_HOW4)
FSID4: Final = tree(struct("fsid4", ("major", uint64("nfs.fsid4.major", "fsid4.major")),
                           ("minor", uint64("nfs.fsid4.minor", "fsid4.minor"))), "nfs.fsid4", "fsid")
XATTRKEY4: Final = string("nfs.xattr.key", "Name")
OPNUM4: Final = enum("nfs.ff_ioerrs_op", "OP", nfs4.OP_NAMES)
# A status shown as tshark shows one inside results (nfsstat4 and the status of every version)
STATUS_ITEM: Final = STATUS4


def netaddr4(netid: str = "nfs.r_netid", addr: str = "nfs.r_addr") -> XdrType:
    """``netaddr4``: a transport (``r_netid``) and a universal address (``r_addr``)."""
    return struct("netaddr4", ("netid", string(netid, "r_netid")), ("addr", string(addr, "r_addr")))


NETADDR4: Final = netaddr4()
# netaddr4 where tshark reads its IPv4 address (copy servers, flexfiles layout statistics)
NETADDR4_READ: Final = tree(UniversalAddress(NETADDR4), "nfs.netaddr4", "netaddr")
NETLOC4: Final = union("netloc4", enum("nfs.netloctype", "netloc type", NETLOC_TYPES), {
    1: string("nfs.nl_name", "net loc name"), 2: string("nfs.nl_url", "net loc url"), 3: NETADDR4_READ})
WRITE_RESPONSE4: Final = struct(
    "write_response4",
    ("callback_id", Indexed(STATEID4, field("nfs.callback_ids", "Callback StateIds"),
                            field("nfs.ff.callback_id_index", "Callback Id"), bound=1)),
    ("count", LENGTH4), ("committed", STABLE4), ("writeverf", VERIFIER4))
CONSECUTIVE: Final = boolean("nfs.consecutive", "copy consecutively?")
SYNCHRONOUS: Final = boolean("nfs.synchronous", "copy synchronous?")
COPY_REQUIREMENTS4: Final = struct("copy_requirements4", ("consecutive", CONSECUTIVE), ("synchronous", SYNCHRONOUS))
SOURCE_SERVERS: Final = Indexed(NETLOC4, field("nfs.source_servers", "Source Server count"),
                                field("nfs.ff.source_server_index", "Source Server"))
DEVICE_ERROR4: Final = struct("device_error4", ("deviceid", DEVICEID4), ("status", STATUS_ITEM), ("opnum", OPNUM4))
DEVICE_ERRORS: Final = Indexed(DEVICE_ERROR4, field("nfs.device_error_count", "Device Error count"),
                               field("nfs.device_errors_index", "Device Error index"))
OP_MASK: Final = Bits(field("nfs.op_mask", "op_mask", "hex"), nfs4.OPCODE)
STATE_PROTECT_OPS4: Final = struct("state_protect_ops4",
                                   ("must_enforce", tree(OP_MASK, "nfs.spo_must_enforce", "spo_must_enforce")),
                                   ("must_allow", tree(OP_MASK, "nfs.spo_must_allow", "spo_must_allow")))
SEC_OID4: Final = opaque("nfs.secinfo.flavor_info.rpcsec_gss_info.oid", "oid")

# the delegations an OPEN, WANT_DELEGATION or CB_PUSH_DELEG hands out
OPEN_DELEGATION4: Final = union("open_delegation4", enum("nfs.open.delegation_type", "Delegation Type",
                                                         DELEGATION_TYPES), {
    0: None,
    1: struct("open_read_delegation4", ("stateid", STATEID4), ("recall", boolean("nfs.recall4", "recall")),
              ("permissions", NFSACE4)),
    2: struct("open_write_delegation4", ("stateid", STATEID4), ("recall", boolean("nfs.recall", "Recall")),
              ("space_limit", union("nfs_space_limit4", enum("nfs.open.limit_by", "Limit By", LIMIT_BY), {
                  1: uint64("nfs.filesize", "filesize"),
                  2: struct("nfs_modified_limit4", ("num_blocks", uint32("nfs.num_blocks", "num_blocks")),
                            ("bytes_per_block", uint32("nfs.bytes_per_block", "bytes_per_block")))})),
              ("permissions", NFSACE4)),
    3: union("open_none_delegation4", enum("nfs.open.why_no_delegation", "why no delegation", WHY_NO_DELEGATION), {
        1: boolean("nfs.open.will_push_deleg", "server will push delegation"),
        2: boolean("nfs.open.will_signal_deleg_avail", "server will signal delegation available")}, None)})

# --- EXCHANGE_ID, CREATE_SESSION, BIND_CONN_TO_SESSION, BACKCHANNEL_CTL -----------------------------------


def _exchgid_flags(name: str) -> Int:
    return uint32(name, "flags", "hex", flags=[(f"nfs.exchange_id.flags.{n}", f"EXCHGID4_FLAG_{label}", mask)
                                                for n, label, mask in EXCHGID_FLAGS])


STATE_PROTECT_HOW4: Final = enum("nfs.exchange_id.state_protect", "eia_state_protect", STATE_PROTECT)
NFS_IMPL_ID4: Final = struct(
    "nfs_impl_id4", ("domain", string("nfs.nii_domain4", "Implementor DNS domain name(nii_domain)", bound=1024)),
    ("name", string("nfs.nii_name4", "Implementation product name(nii_name)", bound=1024)),
    ("date", tree(NFSTIME4, "nfs.nii_date", "Build timestamp(nii_date)")))


def impl_id(label: str) -> XdrType:
    return tree(array(NFS_IMPL_ID4, bound=1), "nfs.impl_id4", label)


EXCHANGE_ID4ARGS: Final = struct(
    "EXCHANGE_ID4args",
    ("clientowner", tree(struct("client_owner4", ("verifier", VERIFIER4),
                                ("ownerid", opaque("nfs.data", "Data", bound=1024))),
                         "nfs.client_owner4", "eia_clientowner")),
    ("flags", _exchgid_flags("nfs.exchange_id.call_flags")),
    ("state_protect", union("state_protect4_a", STATE_PROTECT_HOW4, {
        0: None, 1: STATE_PROTECT_OPS4,
        2: struct("ssv_sp_parms4", ("ops", STATE_PROTECT_OPS4),
                  ("hash_algs", tree(array(SEC_OID4), "nfs.sp_parms4_hash_algs", "State Protect hash algorithms")),
                  ("encr_algs", tree(array(SEC_OID4), "nfs.sp_parms4_encr_algs",
                                     "State Protect encryption algorithms")),
                  ("window", uint32("nfs.state_protect_window", "State Protect window", "hex")),
                  ("num_gss_handles", uint32("nfs.state_protect_num_gss_handles", "State Protect num gss handles",
                                             "hex")))})),
    ("client_impl_id", impl_id("eia_client_impl_id")))
EXCHANGE_ID4RESOK: Final = struct(
    "EXCHANGE_ID4resok", ("clientid", CLIENTID4), ("sequenceid", SEQID),
    ("flags", _exchgid_flags("nfs.exchange_id.reply_flags")),
    ("state_protect", union("state_protect4_r", STATE_PROTECT_HOW4, {
        0: None, 1: STATE_PROTECT_OPS4,
        2: struct("ssv_prot_info4", ("ops", STATE_PROTECT_OPS4),
                  ("hash_alg", uint32("nfs.prot_info4_hash_alg", "Prot Info hash algorithm", "hex")),
                  ("encr_alg", uint32("nfs.prot_info4_encr_alg", "Prot Info encryption algorithm", "hex")),
                  ("ssv_len", uint32("nfs.prot_info4_svv_length", "Prot Info svv_length", "hex")),
                  ("window", uint32("nfs.prot_info4_spi_window", "Prot Info spi window", "hex")),
                  ("handles", array(opaque("nfs.gsshandle4", "gsshandle4"))))})),
    ("server_owner", tree(struct("server_owner4", ("minor_id", uint64("nfs.minorid4", "minor ID")),
                                 ("major_id", opaque("nfs.majorid4", "major ID", bound=1024))),
                          "nfs.server_owner4", "eir_server_owner")),
    ("server_scope", opaque("nfs.scope", "server scope", bound=1024)),
    ("server_impl_id", impl_id("eir_server_impl_id")))

CHANNEL_ATTRS4: Final = struct(
    "channel_attrs4", ("headerpadsize", uint32("nfs.padsize4", "hdr pad size")),
    ("maxrequestsize", uint32("nfs.maxreqsize4", "max req size")),
    ("maxresponsesize", uint32("nfs.maxrespsize4", "max resp size")),
    ("maxresponsesize_cached", uint32("nfs.maxrespsizecached4", "max resp size cached")),
    ("maxoperations", uint32("nfs.maxops4", "max ops")), ("maxrequests", uint32("nfs.maxreqs4", "max reqs")),
    ("rdma_ird", array(uint32("nfs.rdmachanattrs4", "RDMA chan attrs"), bound=1)))
CREATE_SESSION_FLAGS: Final = uint32("nfs.create_session_flags", "csa_flags", "hex", flags=[
    ("nfs.create_session.flags.persist", "CREATE_SESSION4_FLAG_PERSIST", 0x1),
    ("nfs.create_session.flags.conn_back_chan", "CREATE_SESSION4_FLAG_CONN_BACK_CHAN", 0x2),
    ("nfs.create_session.flags.conn_rdma", "CREATE_SESSION4_FLAG_CONN_RDMA", 0x4)])
CALLBACK_SEC_PARMS4: Final = union("callback_sec_parms4", enum("nfs.flavor4", "flavor", AUTH_FLAVORS), {
    0: None,
    1: struct("authsys_parms", ("stamp", uint32("nfs.stamp4", "stamp")),
              ("machinename", string("nfs.machinename4", "machine name", bound=255)),
              ("uid", uint32("nfs.uid4", "uid")), ("gid", uint32("nfs.gid4", "gid")),
              ("gids", array(uint32("nfs.gid4", "gid"), bound=16))),
    6: struct("gss_cb_handles4", ("service", enum("nfs.service4", "service", GSS_SERVICES)),
              ("handle_from_server", opaque("nfs.data", "Data")), ("handle_from_client", opaque("nfs.data", "Data")))})
SEC_PARMS: Final = tree(array(CALLBACK_SEC_PARMS4), "nfs.sec_parms", "callback_sec_parms4")

# --- pNFS: devices, layouts -------------------------------------------------------------------------------
FILES_DS_ADDR4: Final = struct(
    "nfsv4_1_file_layout_ds_addr4", ("stripe_indices", array(uint32("nfs.deviceidx", "device index"))),
    ("multipath_ds_list", array(array(NETADDR4))))
FF_DEVICE_ADDR4: Final = struct(
    "ff_device_addr4", ("netaddrs", array(NETADDR4)),
    ("versions", array(struct("ff_device_versions4", ("version", uint32("nfs.ff.version", "version")),
                              ("minorversion", uint32("nfs.ff.minorversion", "minorversion")),
                              ("rsize", uint32("nfs.ff.rsize", "max_rsize")),
                              ("wsize", uint32("nfs.ff.wsize", "max_wsize")),
                              ("tightly_coupled", boolean("nfs.ff.tightly_coupled", "tightly coupled"))))))
DEVICE_ADDR4: Final = union("device_addr4", LAYOUTTYPE4, {
    1: Body(FILES_DS_ADDR4, "files device address"), 4: Body(FF_DEVICE_ADDR4, "flexfiles device address")},
    opaque("nfs.devinfo", "dev info"))
DEVICE_NOTIFY: Final = Bits(field("nfs.notify_mask", "notify_mask", "hex"),
                            field("nfs.notify_type", "notify_type", names=DEVICE_NOTIFY_TYPES))
FILES_LAYOUT4: Final = struct(
    "nfsv4_1_file_layout4", ("deviceid", DEVICEID4), ("util", NflUtil()),
    ("first_stripe_index", uint32("nfs.nfl_first_stripe_index", "first stripe index")),
    ("pattern_offset", OFFSET4),
    ("fh_list", Array(tree(fhandle(128), "nfs.fh", "lo_filehandle"),
                      count=field("nfs.nfl_fhs", "file handles", "hex"))))
FF_DATA_SERVER4: Final = struct(
    "ff_data_server4", ("deviceid", DEVICEID4), ("efficiency", uint32("nfs.nff_mirror_eff", "efficiency", "hex")),
    ("stateid", STATEID4), ("fh_vers", array(tree(fhandle(128), "nfs.fh", "fh"))),
    ("user", string("nfs.ff.synthetic_owner", "synthetic owner")),
    ("group", string("nfs.ff.synthetic_owner_group", "synthetic group")))
FF_LAYOUT4: Final = struct(
    "ff_layout4", ("stripe_unit", uint64("nfs.stripeunit", "stripe unit")),
    ("mirrors", array(array(FF_DATA_SERVER4, count="nfs.nfl_mirrors", label="data servers"))),
    ("flags", uint32("nfs.ff.layout_flags", "layout flags", "hex", flags=[
        ("nfs.ff.layout_flags.no_layoutcommit", "FLAG_NO_LAYOUTCOMMIT", 0x1),
        ("nfs.ff.layout_flags.no_io_thru_mds", "FLAG_NO_IO_THRU_MDS", 0x2),
        ("nfs.ff.layout_flags.no_read_io", "FLAG_NO_READ_IO", 0x4)])),
    ("stats_collect_hint", uint32("nfs.ff.stats_collect_hint", "stats collect hint")))
LAYOUT4: Final = struct(
    "layout4", ("offset", OFFSET4), ("length", LENGTH4), ("iomode", IOMODE4),
    ("content", union("layout_content4", LAYOUTTYPE4, {
        1: Body(FILES_LAYOUT4, "files layout"), 4: Body(FF_LAYOUT4, "flexfiles layout")},
        opaque("nfs.layout", "layout"))))
IO_INFO4: Final = struct("io_info4", ("count", uint64("nfs.io_count", "count")),
                         ("bytes", uint64("nfs.io_bytes", "bytes")))
READ_INFO: Final = tree(IO_INFO4, "nfs.io_info", "Read Info")
WRITE_INFO: Final = tree(IO_INFO4, "nfs.io_info", "Write Info")


def _latency(label: str) -> XdrType:
    return tree(struct("ff_io_latency4", ("ops_requested", uint64("nfs.ff.ops_requested", "ops requested")),
                       ("bytes_requested", uint64("nfs.ff.bytes_requested", "bytes requested")),
                       ("ops_completed", uint64("nfs.ff.ops_completed", "ops completed")),
                       ("bytes_completed", uint64("nfs.ff.bytes_completed", "bytes completed")),
                       ("bytes_not_delivered", uint64("nfs.ff.bytes_not_delivered", "bytes not delivered")),
                       ("total_busy_time", tree(NFSTIME4, "nfs.ff.busy_time", "Busy time")),
                       ("aggregate_completion_time", tree(NFSTIME4, "nfs.ff.completion_time", "Completion time"))),
                "nfs.ff.latency", label)


FF_LAYOUTUPDATE4: Final = struct(
    "ff_layoutupdate4", ("addr", NETADDR4_READ), ("fhandle", tree(fhandle(128), "nfs.fh", "Filehandle")),
    ("read", _latency("Read Latency")), ("write", _latency("Write Latency")),
    ("duration", tree(NFSTIME4, "nfs.ff.duration", "Duration")),
    ("local", boolean("nfs.ff.local", "client used cache?")))
FF_IOSTATS4: Final = struct(
    "ff_iostats4", ("offset", OFFSET4), ("length", LENGTH4), ("stateid", STATEID4),
    ("read", READ_INFO), ("write", WRITE_INFO), ("deviceid", DEVICEID4), ("layoutupdate", FF_LAYOUTUPDATE4))
FF_LAYOUTRETURN4: Final = struct(
    "ff_layoutreturn4",
    ("ioerr_report", Indexed(struct("ff_ioerr4", ("offset", uint64("nfs.ff.ioerrs_offset", "offset")),
                                    ("length", uint64("nfs.ff.ioerrs_length", "length")), ("stateid", STATEID4),
                                    ("errors", DEVICE_ERRORS)),
                             field("nfs.ff.ioerrs_count", "IO Errors count"),
                             field("nfs.ff.ioerrs_index", "IO Errors index"))),
    ("iostats_report", Indexed(FF_IOSTATS4, field("nfs.ff.iostats_count", "IO Stats count"),
                               field("nfs.ff.iostats_index", "IO Stats index"))))


def _layoutreturn(body: XdrType) -> XdrType:
    """``layoutreturn4`` (iomode first) with the body of a file's return as its layout type has it."""
    return struct("layoutreturn4", ("iomode", IOMODE4), ("return", union(
        "layoutreturn4_by_type", enum("nfs.returntype", "return type", RETURN_TYPES), {
            1: struct("layoutreturn_file4", ("offset", OFFSET4), ("length", LENGTH4), ("stateid", STATEID4),
                      ("body", body))}, None)))


# LAYOUTRETURN4args: the return's body is decoded by the layout type before it (flexfiles, as tshark does)
LAYOUTRETURN4ARGS: Final = struct(
    "LAYOUTRETURN4args", ("reclaim", RECLAIM4),
    ("layout", union("layoutreturn_layout", LAYOUTTYPE4, {4: _layoutreturn(Body(FF_LAYOUTRETURN4, "flexfiles return"))},
                     _layoutreturn(opaque("nfs.lrf_body_content", "lrf_body_content")))))
LAYOUTUPDATE_STATS: Final = union("layoutupdate4", LAYOUTTYPE4, {4: Body(FF_LAYOUTUPDATE4, "flexfiles layout update")},
                                  opaque("nfs.layoutstats", "Layout Stats"))

# --- directory delegations and notifications (not decoded by tshark 4.0: names of rdmaspy's) -------------
DIR_NOTIFY: Final = Bits(field("nfs.dir_notify.mask", "directory notification mask", "hex"),
                         field("nfs.dir_notify.type", "directory notification type", names=DIR_NOTIFY_TYPES))
NOTIFY_ENTRY4: Final = struct("notify_entry4", ("file", string("nfs.dir_notify.name", "name")), ("attrs", FATTR4))
NOTIFY_REMOVE4: Final = struct("notify_remove4", ("old_entry", NOTIFY_ENTRY4), ("old_entry_cookie", COOKIE4))
NOTIFY_ADD4: Final = struct(
    "notify_add4", ("old_entry", array(NOTIFY_REMOVE4, bound=1)), ("new_entry", NOTIFY_ENTRY4),
    ("new_entry_cookie", array(COOKIE4, bound=1)),
    ("prev_entry", array(struct("prev_entry4", ("prev_entry", NOTIFY_ENTRY4), ("prev_entry_cookie", COOKIE4)),
                         bound=1)),
    ("last_entry", boolean("nfs.dir_notify.last_entry", "last entry")))
DIR_NOTIFY4: Final = NotifyList(DIR_NOTIFY, {
    0: tree(NOTIFY_ENTRY4, "nfs.dir_notify.child_attrs", "NOTIFY4_CHANGE_CHILD_ATTRS"),
    1: tree(NOTIFY_ENTRY4, "nfs.dir_notify.dir_attrs", "NOTIFY4_CHANGE_DIR_ATTRS"),
    2: tree(NOTIFY_REMOVE4, "nfs.dir_notify.remove", "NOTIFY4_REMOVE_ENTRY"),
    3: tree(NOTIFY_ADD4, "nfs.dir_notify.add", "NOTIFY4_ADD_ENTRY"),
    4: tree(struct("notify_rename4", ("old_entry", NOTIFY_REMOVE4), ("new_entry", NOTIFY_ADD4)),
            "nfs.dir_notify.rename", "NOTIFY4_RENAME_ENTRY"),
    5: tree(struct("notify_verifier4",
                   ("old_cookieverf", uint64("nfs.dir_notify.old_cookieverf", "old cookie verifier", "hex")),
                   ("new_cookieverf", uint64("nfs.dir_notify.new_cookieverf", "new cookie verifier", "hex"))),
            "nfs.dir_notify.verifier", "NOTIFY4_CHANGE_COOKIE_VERIFIER")})
DEVICE_NOTIFY4: Final = NotifyList(
    Bits(field("nfs.cb.notify_deviceid.mask", "device notification mask", "hex"),
         field("nfs.cb.notify_deviceid.type", "device notification type", names=DEVICE_NOTIFY_TYPES)), {
        1: struct("notify_deviceid_change4", ("layouttype", LAYOUTTYPE4), ("deviceid", DEVICEID4),
                  ("immediate", boolean("nfs.cb.notify_deviceid.immediate", "immediate"))),
        2: struct("notify_deviceid_delete4", ("layouttype", LAYOUTTYPE4), ("deviceid", DEVICEID4))})
RECALL_ANY4ARGS: Final = struct(
    "CB_RECALL_ANY4args", ("objects_to_keep", uint32("nfs.cb.recall_any.objects_to_keep", "objects to keep")),
    ("type_mask", Bits(field("nfs.cb.recall_any.mask", "type mask", "hex"),
                       field("nfs.cb.recall_any.type", "type", names=RECALL_ANY_TYPES))))


HINTS: Final = Bits(field("nfs.hint.mask", "Hint mask", "hex"), field("nfs.hint.hint", "Hint", names=IO_ADVISE_HINTS),
                    field("nfs.hint.count", "Hint count"))


def _attr_delay(name: str, label: str) -> XdrType:
    return tree(NFSTIME4, name, label)


# --- the operations ---------------------------------------------------------------------------------------
ARGS: Final[dict[int, XdrType]] = {
    40: struct("BACKCHANNEL_CTL4args", ("cb_program", CB_PROGRAM), ("sec_parms", SEC_PARMS)),
    41: struct("BIND_CONN_TO_SESSION4args", ("sessid", SESSIONID4),
               ("dir", uint32("nfs.bctsa_dir", "bctsa_dir", "hex", names=DIR_FROM_CLIENT)),
               ("use_conn_in_rdma_mode", boolean("nfs.bctsa_use_conn_in_rdma_mode", "bctsa_use_conn_in_rdma_mode"))),
    42: EXCHANGE_ID4ARGS,
    43: struct("CREATE_SESSION4args", ("clientid", CLIENTID4), ("sequence", SEQID), ("flags", CREATE_SESSION_FLAGS),
               ("fore_chan_attrs", tree(CHANNEL_ATTRS4, "nfs.chan_attrs", "csa_fore_chan_attrs")),
               ("back_chan_attrs", tree(CHANNEL_ATTRS4, "nfs.chan_attrs", "csa_back_chan_attrs")),
               ("cb_program", CB_PROGRAM), ("sec_parms", SEC_PARMS)),
    45: struct("FREE_STATEID4args", ("stateid", STATEID4)),
    46: struct("GET_DIR_DELEGATION4args",
               ("signal_deleg_avail", boolean("nfs.gdd.signal_deleg_avail", "signal delegation available")),
               ("notification_types", DIR_NOTIFY),
               ("child_attr_delay", _attr_delay("nfs.gdd.child_attr_delay", "child attribute delay")),
               ("dir_attr_delay", _attr_delay("nfs.gdd.dir_attr_delay", "directory attribute delay")),
               ("child_attributes", tree(BITMAP4, "nfs.gdd.child_attributes", "child attributes")),
               ("dir_attributes", tree(BITMAP4, "nfs.gdd.dir_attributes", "directory attributes"))),
    47: struct("GETDEVICEINFO4args", ("device_id", DEVICEID4), ("layout_type", LAYOUTTYPE4), ("maxcount", MAXCOUNT),
               ("notify_types", DEVICE_NOTIFY)),
    48: struct("GETDEVICELIST4args", ("layout_type", LAYOUTTYPE4), ("maxdevices", MAXCOUNT), ("cookie", COOKIE4),
               ("cookieverf", COOKIEVERF4)),
    49: struct("LAYOUTCOMMIT4args", ("offset", OFFSET4), ("length", LENGTH4), ("reclaim", RECLAIM4),
               ("stateid", STATEID4),
               ("last_write_offset", union("newoffset4", boolean("nfs.newoffset", "new offset?"),
                                           {0: None, 1: OFFSET4})),
               ("time_modify", union("newtime4", boolean("nfs.newtime", "new time?"), {0: None, 1: NFSTIME4})),
               ("layoutupdate", struct("layoutupdate4", ("type", LAYOUTTYPE4),
                                       ("body", opaque("nfs.layoutupdate", "layout update"))))),
    50: struct("LAYOUTGET4args", ("signal_layout_avail", boolean("nfs.layoutavail", "layout available?")),
               ("layout_type", LAYOUTTYPE4), ("iomode", IOMODE4), ("offset", OFFSET4), ("length", LENGTH4),
               ("minlength", uint64("nfs.minlength4", "min length")), ("stateid", STATEID4), ("maxcount", MAXCOUNT)),
    51: LAYOUTRETURN4ARGS,
    52: enum("nfs.secinfo.style", "Secinfo Style", SECINFO_STYLES),
    54: struct("SET_SSV4args", ("ssv", opaque("nfs.set_ssv.ssv", "ssv")),
               ("digest", opaque("nfs.set_ssv.digest", "digest"))),
    55: struct("TEST_STATEID4args", ("stateids", tree(array(STATEID4), "nfs.test_stateid.stateids", "StateID List"))),
    56: struct("WANT_DELEGATION4args",
               ("want", uint32("nfs.deleg_want", "wants", "hex", flags=[
                   ("nfs.deleg_want.signal_deleg_when_resrc_avail", "want signal delegation when resource available",
                    0x10000),
                   ("nfs.deleg_want.push_deleg_when_uncontended", "want push delegation when uncontended", 0x20000)])),
               ("claim", union("deleg_claim4", enum("nfs.open.claim_type", "Claim Type", CLAIM_TYPES), {
                   1: enum("nfs.delegate_type", "delegate_type", DELEGATION_TYPES), 4: None, 6: None}))),
    57: struct("DESTROY_CLIENTID4args", ("clientid", CLIENTID4)),
    58: struct("RECLAIM_COMPLETE4args", ("one_fs", boolean("nfs.reclaim_one_fs4", "reclaim one fs?"))),
    59: struct("ALLOCATE4args", ("stateid", STATEID4), ("offset", OFFSET4), ("length", LENGTH4)),
    60: struct("COPY4args", ("src_stateid", STATEID4), ("dst_stateid", STATEID4), ("src_offset", OFFSET4),
               ("dst_offset", OFFSET4), ("count", LENGTH4),
               ("consecutive", CONSECUTIVE), ("synchronous", SYNCHRONOUS), ("source_server", SOURCE_SERVERS)),
    61: struct("COPY_NOTIFY4args", ("src_stateid", STATEID4), ("destination_server", NETLOC4)),
    62: struct("DEALLOCATE4args", ("stateid", STATEID4), ("offset", OFFSET4), ("length", LENGTH4)),
    63: struct("IO_ADVISE4args", ("stateid", STATEID4), ("offset", OFFSET4), ("count", LENGTH4), ("hints", HINTS)),
    64: struct("LAYOUTERROR4args", ("offset", OFFSET4), ("length", LENGTH4), ("stateid", STATEID4),
               ("errors", DEVICE_ERRORS)),
    65: struct("LAYOUTSTATS4args", ("offset", OFFSET4), ("length", LENGTH4), ("stateid", STATEID4),
               ("read", READ_INFO), ("write", WRITE_INFO), ("deviceid", DEVICEID4),
               ("layoutupdate", LAYOUTUPDATE_STATS)),
    66: struct("OFFLOAD_CANCEL4args", ("stateid", STATEID4)),
    67: struct("OFFLOAD_STATUS4args", ("stateid", STATEID4)),
    68: struct("READ_PLUS4args", ("stateid", STATEID4), ("offset", OFFSET4), ("count", COUNT4)),
    69: struct("SEEK4args", ("stateid", STATEID4), ("offset", OFFSET4),
               ("what", enum("nfs.data_content", "data content", DATA_CONTENT))),
    70: struct("WRITE_SAME4args", ("stateid", STATEID4), ("stable", STABLE4), ("adb", struct(
        "app_data_block4", ("offset", OFFSET4), ("block_size", uint64("nfs.adb.block_size", "Block Size")),
        ("block_count", uint64("nfs.adb.block.count", "Number of Blocks")),
        ("reloff_blocknum", uint64("nfs.adb.block.reloff_num", "Relative Offset Block Number")),
        ("block_num", uint32("nfs.adb.block.num", "Block Number")),
        ("reloff_pattern", uint64("nfs.adb.pattern.reloff", "Relative Offset Pattern")),
        ("pattern", opaque("nfs.adb.pattern", "pattern", derived=[
            (field("nfs.adb.pattern_hash", "hash (CRC-32)", "hex"), zlib.crc32)]))))),
    71: struct("CLONE4args", ("src_stateid", STATEID4), ("dst_stateid", STATEID4), ("src_offset", OFFSET4),
               ("dst_offset", OFFSET4), ("count", LENGTH4)),
    72: struct("GETXATTR4args", ("name", XATTRKEY4)),
    73: struct("SETXATTR4args", ("option", enum("nfs.setxattr.options", "setxattr options", SETXATTR_OPTIONS)),
               ("key", XATTRKEY4), ("value", opaque("nfs.data", "Data"))),
    74: struct("LISTXATTRS4args", ("cookie", uint64("nfs.lisxtattr.cookie", "cookie")),
               ("maxcount", uint32("nfs.lisxtattr.maxcount", "maxcount"))),
    75: struct("REMOVEXATTR4args", ("name", XATTRKEY4)),
    10044: VOID,
}
RES: Final[dict[int, XdrType]] = {
    40: VOID,
    41: struct("BIND_CONN_TO_SESSION4resok", ("sessid", SESSIONID4),
               ("dir", uint32("nfs.bctsr_dir", "bctsr_dir", "hex", names=DIR_FROM_SERVER)),
               ("use_conn_in_rdma_mode", boolean("nfs.bctsr_use_conn_in_rdma_mode", "bctsr_use_conn_in_rdma_mode"))),
    42: EXCHANGE_ID4RESOK,
    43: struct("CREATE_SESSION4resok", ("sessionid", SESSIONID4), ("sequence", SEQID), ("flags", CREATE_SESSION_FLAGS),
               ("fore_chan_attrs", tree(CHANNEL_ATTRS4, "nfs.chan_attrs", "csr_fore_chan_attrs")),
               ("back_chan_attrs", tree(CHANNEL_ATTRS4, "nfs.chan_attrs", "csr_back_chan_attrs"))),
    45: VOID,
    46: union("GET_DIR_DELEGATION4res_non_fatal", enum("nfs.gdd.status", "status", GDD_STATUS), {
        0: struct("GET_DIR_DELEGATION4resok", ("cookieverf", COOKIEVERF4), ("stateid", STATEID4),
                  ("notification", DIR_NOTIFY),
                  ("child_attributes", tree(BITMAP4, "nfs.gdd.child_attributes", "child attributes")),
                  ("dir_attributes", tree(BITMAP4, "nfs.gdd.dir_attributes", "directory attributes"))),
        1: boolean("nfs.gdd.will_signal_deleg_avail", "will signal delegation available")}),
    47: struct("GETDEVICEINFO4resok", ("device_addr", DEVICE_ADDR4), ("notification", DEVICE_NOTIFY)),
    48: struct("GETDEVICELIST4resok", ("cookie", COOKIE4), ("cookieverf", COOKIEVERF4),
               ("deviceid_list", array(DEVICEID4, count="nfs.devicenum4", label="num devices")), ("eof", EOF4)),
    49: union("newsize4", boolean("nfs.newsize", "new size?"), {0: None, 1: LENGTH4}),
    50: struct("LAYOUTGET4resok", ("return_on_close", boolean("nfs.retclose4", "return on close?")),
               ("stateid", STATEID4), ("layout", tree(array(LAYOUT4), "nfs.layout_segments", "Layout Segments"))),
    51: union("layoutreturn_stateid", boolean("nfs.lrs_present", "StateID present?"), {0: None, 1: STATEID4}),
    52: SECINFO4RES,
    54: struct("SET_SSV4resok", ("digest", opaque("nfs.set_ssv.digest", "digest"))),
    55: struct("TEST_STATEID4resok", ("status_codes", tree(array(STATUS_ITEM), "nfs.test_stateid.results",
                                                         "StateID Result List"))),
    56: OPEN_DELEGATION4,
    57: VOID,
    58: VOID,
    59: VOID,
    60: struct("COPY4resok", ("response", WRITE_RESPONSE4), ("requirements", COPY_REQUIREMENTS4)),
    61: struct("COPY_NOTIFY4resok", ("lease_time", NFSTIME4), ("stateid", STATEID4), ("source_server", SOURCE_SERVERS)),
    62: VOID,
    63: struct("IO_ADVISE4resok", ("hints", HINTS)),
    64: VOID,
    65: VOID,
    66: VOID,
    67: struct("OFFLOAD_STATUS4resok", ("count", LENGTH4), ("complete", array(
        enum("nfs.offload_status", "nfsstat4", NFS4_STATUS, also=["nfs.nfsstat4"]), bound=1,
        count="nfs.num_offload_status", label="Number of offload status"))),
    68: struct("READ_PLUS4resok", ("eof", EOF4), ("contents", tree(array(union(
        "read_plus_content", enum("nfs.content.type", "Content Type", DATA_CONTENT), {
            0: struct("data4", ("offset", OFFSET4),
                      ("data", opaque("nfs.data", "Data", length="nfs.read.data_length"))),
            1: struct("data_info4", ("offset", OFFSET4), ("length", LENGTH4))})), "nfs.contents", "Contents"))),
    69: struct("SEEK4resok", ("eof", EOF4), ("offset", OFFSET4)),
    70: WRITE_RESPONSE4,
    71: VOID,
    72: struct("GETXATTR4resok", ("value", opaque("nfs.data", "Data"))),
    73: struct("SETXATTR4resok", ("info", CHANGE_INFO4)),
    74: struct("LISTXATTRS4resok", ("cookie", uint64("nfs.lisxtattr.cookie", "cookie")),
               ("names", array(XATTRKEY4, count="nfs.listxattr.names.count", label="xattr names count")),
               ("eof", uint32("nfs.lisxtattr.eof", "eof"))),
    75: struct("REMOVEXATTR4resok", ("info", CHANGE_INFO4)),
    10044: VOID,
}
FAILED: Final[dict[int, dict[int, XdrType]]] = {
    50: {NFS4ERR_LAYOUTTRYLATER: boolean("nfs.layoutget.will_signal_layout_avail", "will signal layout available")},
    60: {NFS4ERR_OFFLOAD_NO_REQS: COPY_REQUIREMENTS4},
}

# --- the callback program: CB_COMPOUND's operations -------------------------------------------------------
CB_OP_NAMES: Final[dict[int, str]] = {3: "CB_GETATTR", 4: "CB_RECALL", 5: "CB_LAYOUTRECALL", 6: "CB_NOTIFY", 7: "CB_PUSH_DELEG",
                      8: "CB_RECALL_ANY", 9: "CB_RECALLABLE_OBJ_AVAIL", 10: "CB_RECALL_SLOT", 11: "CB_SEQUENCE",
                      12: "CB_WANTS_CANCELLED", 13: "CB_NOTIFY_LOCK", 14: "CB_NOTIFY_DEVICEID", 15: "CB_OFFLOAD",
                      10044: "CB_ILLEGAL"}
CB_ARGS: Final[dict[int, XdrType]] = {
    3: struct("CB_GETATTR4args", ("fh", FH4), ("attr_request", BITMAP4)),
    4: struct("CB_RECALL4args", ("stateid", STATEID4), ("truncate", boolean("nfs.truncate", "Truncate?")), ("fh", FH4)),
    5: struct("CB_LAYOUTRECALL4args", ("type", LAYOUTTYPE4), ("iomode", IOMODE4),
              ("changed", boolean("nfs.clorachanged", "clora_changed")),
              ("recall", union("layoutrecall4", enum("nfs.recalltype", "recall type", RECALL_TYPES), {
                  1: struct("layoutrecall_file4", ("fh", FH4), ("offset", OFFSET4), ("length", LENGTH4),
                            ("stateid", STATEID4)),
                  2: FSID4, 3: None}))),
    6: struct("CB_NOTIFY4args", ("stateid", STATEID4), ("fh", FH4),
              ("changes", array(tree(DIR_NOTIFY4, "nfs.dir_notify", "notify4")))),
    7: struct("CB_PUSH_DELEG4args", ("fh", FH4), ("delegation", OPEN_DELEGATION4)),
    8: RECALL_ANY4ARGS,
    9: RECALL_ANY4ARGS,
    10: struct("CB_RECALL_SLOT4args", ("target_highest_slotid",
                                       uint32("nfs.target_high_slotid", "target high slot id"))),
    11: struct("CB_SEQUENCE4args", ("sessionid", SESSIONID4), ("sequenceid", SEQID), ("slotid", SLOTID),
               ("highest_slotid", HIGH_SLOTID), ("cachethis", boolean("nfs.cachethis4", "cache this?")),
               ("referring_call_lists", tree(array(struct(
                   "referring_call_list4", ("sessionid", SESSIONID4),
                   ("referring_calls", tree(array(struct("referring_call4", ("sequenceid", SEQID), ("slotid", SLOTID))),
                                            "nfs.cb.referring_calls", "referring calls")))),
                   "nfs.cb.referring_call_lists", "referring call lists"))),
    12: struct("CB_WANTS_CANCELLED4args",
               ("contended_wants_cancelled", boolean("nfs.cb.wants_cancelled.contended", "contended wants cancelled")),
               ("resourced_wants_cancelled", boolean("nfs.cb.wants_cancelled.resourced", "resourced wants cancelled"))),
    13: struct("CB_NOTIFY_LOCK4args", ("fh", FH4), ("lock_owner", LOCK_OWNER4)),
    14: struct("CB_NOTIFY_DEVICEID4args",
               ("changes", array(tree(DEVICE_NOTIFY4, "nfs.cb.notify_deviceid", "notify4")))),
    15: struct("CB_OFFLOAD4args", ("fh", FH4), ("stateid", STATEID4), ("offload_info", union(
        "offload_info4", STATUS_ITEM, {0: WRITE_RESPONSE4}, uint64("nfs.bytes_copied", "bytes copied")))),
    10044: VOID,
}
CB_RES: Final[dict[int, XdrType]] = {
    3: struct("CB_GETATTR4resok", ("obj_attributes", FATTR4)),
    4: VOID, 5: VOID, 6: VOID, 7: VOID, 8: VOID, 9: VOID, 10: VOID,
    11: struct("CB_SEQUENCE4resok", ("sessionid", SESSIONID4), ("sequenceid", SEQID), ("slotid", SLOTID),
               ("highest_slotid", HIGH_SLOTID),
               ("target_highest_slotid", uint32("nfs.target_high_slotid", "target high slot id"))),
    12: VOID, 13: VOID, 14: VOID, 15: VOID, 10044: VOID,
}
# Callback results declared but not yet shown in full (tshark shows more): the operations' numbers
CB_PARTIAL: Final[frozenset[int]] = frozenset()
# No callback operation returns anything with an error status
CB_FAILED: Final[dict[int, dict[int, XdrType]]] = {}

nfs4.ARGS.update(ARGS)
nfs4.RES.update(RES)
nfs4.FAILED.update(FAILED)
