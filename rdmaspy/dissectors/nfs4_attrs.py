"""NFSv4 attributes declared in XDR: ``bitmap4`` and ``fattr4`` decoded attribute by attribute.

Every attribute of RFC 7530 §5 (NFSv4.0), RFC 8881 §5 (4.1), RFC 7862 §12.2 (4.2), RFC 8275 (mode_umask)
and RFC 8276 (xattr_support), and the three tshark 4.0 also decodes (83 offline, 84 and 85 the delegated
timestamps), is declared once in ``ATTRS`` (number -> name and the declaration of its value) under
tshark's names.  ``FATTR4`` is a kind of the engine: its walk reads the mask, then each attribute whose
bit is set, in ascending order, from ``attr_vals`` by the table, bounded by ``attr_vals``' length (a value
can never read past it).  An attribute with no declaration ends that walk with a reason, as tshark's does,
the bytes left shown as ``nfs.bitmap_data``; a value that is malformed ends it with ``nfs.malformed``; in
both cases the decoding goes on after ``attr_vals``.  The summary path steps over a fattr4 by its opaque
length and reads none of it.

The value of a fattr4 is a dict by attribute name in attribute order (``{"type": 2, "size": 120}``);
``encode`` builds the mask and ``attr_vals`` from such a dict.  ``BITMAP4`` is a bare mask (GETATTR's and
READDIR's requested attributes...), shown as tshark shows one: each word that asks for something, how
many attributes it asks for and each attribute's number, named.
"""
from __future__ import annotations

from ..fields import Field, declaring, protocol
from ..packet import Layer
from ..records import record_eq, record_hash, record_repr
from ..typenames import Any, ClassVar, Final, Iterable, Iterator, Mapping
from .nfs2 import MODE
from .nfs3 import STATUS, fhandle
from .xdr import Cursor, XdrError, XdrInvalid, u32
from .xdrlang import (DECLARED, Int, Out, Walk, XdrType, array, boolean, enum, field, int32, int64, opaque,
                      string, struct, tree, uint32, uint64, union)

declaring(__name__)

NFS4_STATUS: Final = {
    0: "NFS4_OK", 1: "NFS4ERR_PERM", 2: "NFS4ERR_NOENT", 5: "NFS4ERR_IO", 6: "NFS4ERR_NXIO", 13: "NFS4ERR_ACCESS",
    17: "NFS4ERR_EXIST", 18: "NFS4ERR_XDEV", 20: "NFS4ERR_NOTDIR", 21: "NFS4ERR_ISDIR", 22: "NFS4ERR_INVAL",
    27: "NFS4ERR_FBIG", 28: "NFS4ERR_NOSPC", 30: "NFS4ERR_ROFS", 31: "NFS4ERR_MLINK", 63: "NFS4ERR_NAMETOOLONG",
    66: "NFS4ERR_NOTEMPTY", 69: "NFS4ERR_DQUOT", 70: "NFS4ERR_STALE", 10001: "NFS4ERR_BADHANDLE",
    10003: "NFS4ERR_BAD_COOKIE", 10004: "NFS4ERR_NOTSUPP", 10005: "NFS4ERR_TOOSMALL",
    10006: "NFS4ERR_SERVERFAULT", 10007: "NFS4ERR_BADTYPE", 10008: "NFS4ERR_DELAY", 10009: "NFS4ERR_SAME",
    10010: "NFS4ERR_DENIED", 10011: "NFS4ERR_EXPIRED", 10012: "NFS4ERR_LOCKED", 10013: "NFS4ERR_GRACE",
    10014: "NFS4ERR_FHEXPIRED", 10015: "NFS4ERR_SHARE_DENIED", 10016: "NFS4ERR_WRONGSEC",
    10017: "NFS4ERR_CLID_INUSE", 10018: "NFS4ERR_RESOURCE", 10019: "NFS4ERR_MOVED", 10020: "NFS4ERR_NOFILEHANDLE",
    10021: "NFS4ERR_MINOR_VERS_MISMATCH", 10022: "NFS4ERR_STALE_CLIENTID", 10023: "NFS4ERR_STALE_STATEID",
    10024: "NFS4ERR_OLD_STATEID", 10025: "NFS4ERR_BAD_STATEID", 10026: "NFS4ERR_BAD_SEQID",
    10027: "NFS4ERR_NOT_SAME", 10028: "NFS4ERR_LOCK_RANGE", 10029: "NFS4ERR_SYMLINK", 10030: "NFS4ERR_RESTOREFH",
    10031: "NFS4ERR_LEASE_MOVED", 10032: "NFS4ERR_ATTRNOTSUPP", 10033: "NFS4ERR_NO_GRACE",
    10034: "NFS4ERR_RECLAIM_BAD", 10035: "NFS4ERR_RECLAIM_CONFLICT", 10036: "NFS4ERR_BADXDR",
    10037: "NFS4ERR_LOCKS_HELD", 10038: "NFS4ERR_OPENMODE", 10039: "NFS4ERR_BADOWNER", 10040: "NFS4ERR_BADCHAR",
    10041: "NFS4ERR_BADNAME", 10042: "NFS4ERR_BAD_RANGE", 10043: "NFS4ERR_LOCK_NOTSUPP", 10044: "NFS4ERR_OP_ILLEGAL",
    10045: "NFS4ERR_DEADLOCK", 10046: "NFS4ERR_FILE_OPEN", 10047: "NFS4ERR_ADMIN_REVOKED",
    10048: "NFS4ERR_CB_PATH_DOWN", 10049: "NFS4ERR_BADIOMODE", 10050: "NFS4ERR_BADLAYOUT",
    10051: "NFS4ERR_BAD_SESSION_DIGEST", 10052: "NFS4ERR_BADSESSION", 10053: "NFS4ERR_BADSLOT",
    10054: "NFS4ERR_COMPLETE_ALREADY", 10055: "NFS4ERR_CONN_NOT_BOUND_TO_SESSION", 10056: "NFS4ERR_DELEG_ALREADY_WANTED",
    10057: "NFS4ERR_BACK_CHAN_BUSY", 10058: "NFS4ERR_LAYOUTTRYLATER", 10059: "NFS4ERR_LAYOUTUNAVAILABLE",
    10060: "NFS4ERR_NOMATCHING_LAYOUT", 10061: "NFS4ERR_RECALLCONFLICT", 10062: "NFS4ERR_UNKNOWN_LAYOUTTYPE",
    10063: "NFS4ERR_SEQ_MISORDERED", 10064: "NFS4ERR_SEQUENCE_POS", 10065: "NFS4ERR_REQ_TOO_BIG",
    10066: "NFS4ERR_REP_TOO_BIG", 10067: "NFS4ERR_REP_TOO_BIG_TO_CACHE", 10068: "NFS4ERR_RETRY_UNCACHED_REP",
    10069: "NFS4ERR_UNSAFE_COMPOUND", 10070: "NFS4ERR_TOO_MANY_OPS", 10071: "NFS4ERR_OP_NOT_IN_SESSION",
    10072: "NFS4ERR_HASH_ALG_UNSUPP", 10074: "NFS4ERR_CLIENTID_BUSY", 10075: "NFS4ERR_PNFS_IO_HOLE",
    10076: "NFS4ERR_SEQ_FALSE_RETRY", 10077: "NFS4ERR_BAD_HIGH_SLOT", 10078: "NFS4ERR_DEADSESSION",
    10079: "NFS4ERR_ENCR_ALG_UNSUPP", 10080: "NFS4ERR_PNFS_NO_LAYOUT", 10081: "NFS4ERR_NOT_ONLY_OP",
    10082: "NFS4ERR_WRONG_CRED", 10083: "NFS4ERR_WRONG_TYPE", 10084: "NFS4ERR_DIRDELEG_UNAVAIL",
    10085: "NFS4ERR_REJECT_DELEG", 10086: "NFS4ERR_RETURNCONFLICT", 10087: "NFS4ERR_DELEG_REVOKED",
    10088: "NFS4ERR_PARTNER_NOTSUPP", 10089: "NFS4ERR_PARTNER_NO_AUTH", 10090: "NFS4ERR_UNION_NOTSUPP",
    10091: "NFS4ERR_OFFLOAD_DENIED", 10092: "NFS4ERR_WRONG_LFS", 10093: "NFS4ERR_BADLABEL",
    10094: "NFS4ERR_OFFLOAD_NO_REQS", 10095: "NFS4ERR_NOXATTR", 10096: "NFS4ERR_XATTR2BIG"}
# A COMPOUND's status, each operation's and rdattr_error, as tshark shows them: nfs.nfsstat4 and nfs.status.
STATUS4: Final[Int] = enum("nfs.nfsstat4", "Status", NFS4_STATUS, also=[STATUS])

# The attributes' names as tshark shows them in ``nfs.attr`` (57, dirent_notif_delay, has none there).
ATTR_NAMES: Final = {
    0: "Supported_Attrs", 1: "Type", 2: "FH_Expire_Type", 3: "Change", 4: "Size", 5: "Link_Support",
    6: "Symlink_Support", 7: "Named_Attr", 8: "FSID", 9: "Unique_Handles", 10: "Lease_Time", 11: "RDAttr_Error",
    12: "ACL", 13: "ACLSupport", 14: "Archive", 15: "CanSetTime", 16: "Case_Insensitive", 17: "Case_Preserving",
    18: "Chown_Restricted", 19: "Filehandle", 20: "FileId", 21: "Files_Avail", 22: "Files_Free",
    23: "Files_Total", 24: "FS_Locations", 25: "Hidden", 26: "Homogeneous", 27: "MaxFileSize", 28: "MaxLink",
    29: "MaxName", 30: "MaxRead", 31: "MaxWrite", 32: "MimeType", 33: "Mode", 34: "No_Trunc", 35: "NumLinks",
    36: "Owner", 37: "Owner_Group", 38: "Quota_Avail_Hard", 39: "Quota_Avail_Soft", 40: "Quota_Used",
    41: "RawDev", 42: "Space_Avail", 43: "Space_Free", 44: "Space_Total", 45: "Space_Used", 46: "System",
    47: "Time_Access", 48: "Time_Access_Set", 49: "Time_Backup", 50: "Time_Create", 51: "Time_Delta",
    52: "Time_Metadata", 53: "Time_Modify", 54: "Time_Modify_Set", 55: "Mounted_on_FileId",
    56: "Dir_Notif_Delay", 58: "DACL", 59: "SACL", 60: "Change_Policy", 61: "FS_Status", 62: "FS_Layout_Type",
    63: "Layout_hint", 64: "Layout_type", 65: "Layout_blksize", 66: "Layout_alignment", 67: "FS_Locations_info",
    68: "MDS_Threshold", 69: "Retention_Get", 70: "Retention_Set", 71: "RetentEvt_Get", 72: "RetentEvt_Set",
    73: "Retention_Hold", 74: "Mode_Set_Masked", 75: "Suppattr_ExclCreat", 76: "FS_Charset_Cap",
    77: "Clone_Block_Size", 78: "Space_Freed", 79: "Change_Attr_Type", 80: "Security_Label", 81: "Mode_Umask",
    82: "Xattr_Support", 83: "Offline", 84: "Time_Deleg_Access", 85: "Time_Deleg_Modify"}

# More words than this in one bitmap4 are refused, as tshark refuses them (3,200 attributes; 86 are defined).
BITMAP4_MAX_WORDS: Final = 100

MALFORMED: Final = field("nfs.malformed", "Malformed: the walk stopped here", "str")
UNDECODED: Final = field("nfs.fattr4.undecoded", "Not decoded", "str")
REST: Final = field("nfs.bitmap_data", "Undissected bitmap data", "bytes")
protocol("nfs.fattr4.attr", "attribute")
# An attribute mask's fields: each word that asks for something, its count of attributes, each attribute
ATTR_MASK: Final = field("nfs.attr_mask", "Attr mask", "hex")
ATTR_COUNT: Final = field("nfs.attr_count", "Attr count")
ATTR_NUMBER: Final = field("nfs.attr", "reqd_attr", names=ATTR_NAMES)


def _words(cur: Cursor, what: str) -> tuple[int, list[int]]:
    """A bitmap4's words (the count a claim, checked against the bytes and BITMAP4_MAX_WORDS); where the
    first word is."""
    n = cur.u32(what)
    if n > BITMAP4_MAX_WORDS:
        raise XdrInvalid(f"{what}: {n} words over its bound {BITMAP4_MAX_WORDS}")
    p = cur.need(4 * n, what)
    cur.pos = p + 4 * n
    buf = cur.buf
    return p, [u32(buf, p + 4 * i) for i in range(n)]


def _set_bits(words: list[int]) -> list[int]:
    """The numbers of the bits set, in ascending order: a list, not a generator (compiled, a generator's
    step is a call and its locals an object), each word's bits from ``_word_bits``."""
    out: list[int] = []
    for i, word in enumerate(words):
        if word:
            bits = _word_bits(word)
            if i == 0:
                out.extend(bits)
            else:
                n = 32 * i
                for b in bits:
                    out.append(n + b)
    return out


# A word's set bits by its value: a capture's masks are few and repeat (a GETATTR's, its reply's), and
# the walk bit by bit costs one step per bit up to the highest set (some 2,600 instructions a fattr4).
_WORD_BITS: Final[dict[int, tuple[int, ...]]] = {}


def _word_bits(word: int) -> tuple[int, ...]:
    """The numbers of the bits set in one word, in ascending order."""
    got = _WORD_BITS.get(word)
    if got is None:
        out: list[int] = []
        n = 0
        w = word
        while w:
            if w & 1:
                out.append(n)
            w >>= 1
            n += 1
        got = tuple(out)
        if len(_WORD_BITS) < 1024:          # bounded: the words are the capture's
            _WORD_BITS[word] = got
    return got


# Each attribute's sub-tree label by its number, made once up to the highest declared (the numbers a capture
# can claim are many: those above made when met): an index, not a hash, for every attribute of a -V tree.
_ATTR_LABELS: Final[tuple[str, ...]] = tuple(
    f"{ATTR_NAMES[num]} ({num})" if num in ATTR_NAMES else f"Unknown ({num})" for num in range(max(ATTR_NAMES) + 1))


def _attr_label(num: int) -> str:
    return _ATTR_LABELS[num] if num < len(_ATTR_LABELS) else f"Unknown ({num})"


def _mask(numbers: Iterable[int]) -> list[int]:
    """The fewest words with these bits set."""
    words: list[int] = []
    for n in numbers:
        i = n // 32
        if i >= len(words):
            words.extend([0] * (i + 1 - len(words)))
        words[i] |= 1 << (n % 32)
    return words


def _pack_words(words: list[int]) -> bytes:
    return len(words).to_bytes(4, "big") + b"".join([w.to_bytes(4, "big") for w in words])


class Bitmap4(XdrType):
    """``bitmap4`` (``uint32 words<>``), as tshark shows one: each non-zero word as ``nfs.attr_mask`` with
    the number of attributes it asks for (``nfs.attr_count``) and each attribute's number, named
    (``nfs.attr``).  The value is the list of words.  Another bitmap4 names its own fields (``count`` and
    ``number`` None: not shown; ``nwords``: the words' count, shown)."""

    __slots__ = ("mask", "count", "attr", "nwords")

    def __init__(self, mask: Field | None = None, count: Field | None = None, number: Field | None = None,
                 nwords: Field | None = None) -> None:
        super().__init__(-1, 4)
        if mask is None:
            mask, count, number = ATTR_MASK, ATTR_COUNT, ATTR_NUMBER
        self.mask = mask
        self.count = count
        self.attr = number
        self.nwords = nwords

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        q = cur.pos
        p, words = _words(cur, "bitmap4")
        if lay is not None:
            if self.nwords is not None:
                lay.add(self.nwords, len(words), q, 4)
            show_words(lay, words, p, self.mask, self.count)
            if self.attr is not None:
                for n in _set_bits(words):
                    lay.add(self.attr, n, -1, 0)
        return words

    def skip(self, cur: Cursor, w: Walk) -> None:
        if cur.skip_u32s("bitmap4") > BITMAP4_MAX_WORDS:
            raise XdrInvalid(f"bitmap4: over its bound {BITMAP4_MAX_WORDS} words")

    def write(self, value: Any, out: Out) -> None:
        out.parts.append(_pack_words(list(value)))

    def fields(self) -> Iterator[Field]:
        for f in (self.nwords, self.mask, self.count, self.attr):
            if f is not None:
                yield f


def show_words(lay: Layer, words: list[int], p: int, mask: Field, count: Field | None) -> None:
    """Each word that asks for something (a zero word is not shown, as tshark does) and how many bits it has."""
    for i, word in enumerate(words):
        if word:
            lay.add(mask, word, p + 4 * i, 4)
            if count is not None:
                lay.add(count, bin(word).count("1"), p + 4 * i, 4)


# Its ``__init__`` spelled out: mypyc 2.4 runs the standard ``@dataclass`` decorator on a compiled class at
# import (some 3 M instructions) and leaves it that decorator's ``__init__``, a Python function.
class Attr:
    """One attribute (or hint) of a table: its number, its name in values, its declaration.  Equal, and
    hashed, by its values."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("number", "name", "decl")
    __slots__ = _FIELDS

    def __init__(self, number: int, name: str, decl: XdrType) -> None:
        self.number = number
        self.name = name
        self.decl = decl

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)

    def __eq__(self, other: object) -> bool:
        return record_eq(self, other, self._FIELDS)

    def __hash__(self) -> int:
        return record_hash(self, self._FIELDS)


class AttrSet(XdrType):
    """A ``bitmap4`` choosing values out of an ``opaque<>`` that follows it, each by a table (number ->
    ``Attr``): fattr4 (``attrmask``, ``attr_vals``) and an mdsthreshold hint set (``thi_hintset``,
    ``thi_hintlist``).  The values are read in ascending number from the opaque alone (a cursor ending with
    it); a number with no entry, or a malformed value, ends the walk with its reason and the bytes left,
    and the walk of what holds it goes on after the opaque.  The value is a dict by name.

    ``item``: what a number stands for (in reasons); ``mask``/``count``/``number``: the fields of a mask
    word, of its count of bits and of each number; ``nwords``: the field of the words' count, when shown;
    ``subtree``: each attribute in a sub-tree of its own."""

    __slots__ = ("name", "item", "table", "by_number", "by_name", "mask", "count", "number", "nwords", "subtree",
                 "last_of", "values_what")

    def __init__(self, name: str, item: str, table: Mapping[int, Attr], mask: Field, count: Field,
                 number: Field, nwords: Field | None = None, subtree: bool = False) -> None:
        super().__init__(-1, 8)
        self.name = name
        self.item = item
        self.table = dict(table)
        # the table as a tuple by number (None: not declared): the walk indexes it for each attribute
        self.by_number: tuple[Attr | None, ...] = tuple(
            [self.table.get(num) for num in range(max(self.table, default=-1) + 1)])
        self.by_name = {a.name: a for a in table.values()}
        self.mask = mask
        self.count = count
        self.number = number
        self.nwords = nwords
        self.subtree = subtree
        self.last_of: dict[frozenset[str], int] = {}     # pick: the last attribute each set of keys names
        self.values_what = f"{name} values"
        DECLARED.setdefault(name, self)

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        q = cur.pos
        p, words = _words(cur, self.name)
        n = cur.u32(self.values_what)
        start = cur.need((n + 3) & ~3, self.values_what)
        cur.pos = start + ((n + 3) & ~3)
        if lay is not None:
            if self.nwords is not None:
                lay.add(self.nwords, len(words), q, 4)
            show_words(lay, words, p, self.mask, self.count)
        return self._values(cur.buf, start, start + n, words, w, lay)

    def _values(self, buf: bytes, start: int, end: int, words: list[int], w: Walk,
                lay: Layer | None) -> dict[str, Any]:
        vals = Cursor(buf, start, end)
        out: dict[str, Any] = {}
        stopped = False
        by_number = self.by_number
        for num in _set_bits(words):
            p = vals.pos
            sub = lay
            fresh = False                   # sub is the attribute's own sub-tree, its items a new list
            if lay is not None and self.subtree:
                sub = lay.child("nfs.fattr4.attr", None, p, 0, _attr_label(num))
                sub._items = []             # the value's words appended to it with no call
                fresh = True
            attr = None if stopped or num >= len(by_number) else by_number[num]
            if attr is None:                # not read: shown, as tshark shows it, with no value
                if sub is not None:
                    sub.add(self.number, num, -1, 0)
                if not stopped and lay is not None:
                    lay.add(UNDECODED, f"{self.item} {num} is not declared: {end - p} bytes not decoded")
                    _rest(lay, buf, p, end)
                stopped = True
                continue
            at = -1
            if sub is not None and not fresh:   # the number first, over the value's bytes (known once read)
                sub.add(self.number, num, p, 0)
                at = len(sub.items or ()) - 1
            try:
                out[attr.name] = attr.decl.read(vals, w, sub)
            except XdrError as e:
                stopped = True
                if sub is not None and lay is not None:
                    sub.add(MALFORMED, f"{attr.name}: {e}", vals.pos, 0)
                    _rest(lay, buf, p, end)
            if sub is not None:
                items = sub._items
                if items is not None:
                    if fresh:
                        items.insert(0, (self.number, num, p, vals.pos - p))
                    else:
                        items[at] = (self.number, num, p, vals.pos - p)
                if fresh:
                    sub.length = vals.pos - p
        if not stopped and vals.pos < end and lay is not None:
            lay.add(UNDECODED, f"{end - vals.pos} bytes after the last {self.item}")
            _rest(lay, buf, vals.pos, end)
        return out

    def skip(self, cur: Cursor, w: Walk) -> None:
        if cur.skip_u32s(self.name) > BITMAP4_MAX_WORDS:
            raise XdrInvalid(f"{self.name}: over its bound {BITMAP4_MAX_WORDS} words")
        cur.skip_opaque(self.values_what)       # made once: the summary's walk steps over many

    def pick(self, cur: Cursor, w: Walk, keys: frozenset[str]) -> Any:
        """The attributes named in ``keys`` (a READDIR entry's filehandle): those before them stepped over
        by their declarations, those after them not looked at; absent where ``read`` leaves them out (an
        undeclared or malformed attribute before them ends the walk).  The mask and the opaque are
        checked as ``skip`` checks them (the walk for the names steps over what it does not pick)."""
        buf = cur.buf
        q = cur.pos
        nwords = cur.skip_u32s(self.name)
        if nwords > BITMAP4_MAX_WORDS:
            raise XdrInvalid(f"{self.name}: over its bound {BITMAP4_MAX_WORDS} words")
        start, n = cur.opaque_span(self.values_what)
        last = self._last(keys)
        vals = Cursor(buf, start, start + n)
        out: dict[str, Any] = {}
        table = self.table
        for i in range(nwords):
            word = u32(buf, q + 4 + 4 * i)
            num = 32 * i
            while word:
                if word & 1:
                    if num > last:
                        return out
                    attr = table.get(num)
                    if attr is None:
                        return out
                    try:
                        if attr.name in keys:
                            out[attr.name] = attr.decl.pick(vals, w, keys)
                        else:
                            attr.decl.skip(vals, w)
                    except XdrError:
                        return out
                word >>= 1
                num += 1
        return out

    def _last(self, keys: frozenset[str]) -> int:
        """The highest number of an attribute named in ``keys`` (-1: none)."""
        last = self.last_of.get(keys)
        if last is None:
            last = max([a.number for a in self.table.values() if a.name in keys], default=-1)
            if len(self.last_of) < 64:
                self.last_of[keys] = last
        return last

    def write(self, value: Any, out: Out) -> None:
        attrs = []
        for key in value:
            attr = self.by_name.get(key)
            if attr is None:
                raise ValueError(f"{self.name}: no attribute {key!r}")
            attrs.append(attr)
        attrs.sort(key=lambda a: a.number)
        vals = Out(out.reduce)
        for a in attrs:
            a.decl.write(value[a.name], vals)
        raw = b"".join(vals.parts)
        out.parts.append(_pack_words(_mask([a.number for a in attrs])) + len(raw).to_bytes(4, "big") + raw
                         + b"\0" * (-len(raw) % 4))

    def fields(self) -> Iterator[Field]:
        if self.nwords is not None:
            yield self.nwords
        yield self.mask
        yield self.count
        yield self.number
        for a in self.table.values():
            yield from a.decl.fields()
        yield UNDECODED
        yield REST
        yield MALFORMED


def _rest(lay: Layer, buf: bytes, p: int, end: int) -> None:
    """The bytes of the opaque a walk did not decode, as tshark shows them."""
    if end > p:
        lay.add(REST, bytes(buf[p:end]), p, end - p)


# --- the attributes' value types ----------------------------------------------------------------------
ACE_PERMS: Final = {
    0x1: "Read_Data / List_Dir", 0x2: "Write_Data / Add_File", 0x4: "Append_Data / Add_SubDir",
    0x8: "Read_Named_Attrs", 0x10: "Write_Named_Attrs", 0x20: "Execute", 0x40: "Delete_Child",
    0x80: "Read_Attributes", 0x100: "Write_Attributes", 0x200: "Write_Retention", 0x400: "Write_Retention_Hold",
    0x10000: "Delete", 0x20000: "Read_ACL", 0x40000: "Write_ACL", 0x80000: "Write_Owner", 0x100000: "Synchronize"}
ACE_PERM_BITS: Final = 21          # tshark shows nfs.ace_perm4 for each set bit of these (ACE4_SYNCHRONIZE the last)


class AceMask(Int):
    """``acemask4``: the mask (``nfs.acemask4``) and each permission it grants or denies among the defined
    bits, as tshark shows them: ``nfs.ace_perm4`` once per set bit, its value the bit."""

    __slots__ = ("perm",)

    def __init__(self) -> None:
        super().__init__(field("nfs.acemask4", "ACE mask", "hex"))
        self.perm = field("nfs.ace_perm4", "perm", "hex", names=ACE_PERMS)

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        p = cur.pos
        v = cur.u32(self.what)
        if lay is not None:
            assert self.field is not None
            lay.add(self.field, v, p, 4)
            for bit in range(ACE_PERM_BITS):
                if v >> bit & 1:
                    lay.add(self.perm, 1 << bit, p, 4)
        return v

    def fields(self) -> Iterator[Field]:
        yield from super().fields()
        yield self.perm


class FhExpireType(Int):
    """``fh_expire_type``: FH4_PERSISTENT (0), or flags of how a volatile handle may expire, shown (as tshark
    shows them) only when there are some.  tshark 4.0 shows each of the four as the value's bit 0; here
    each is its own bit (RFC 7530 §4.2.3)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(field("nfs.fattr4_fh_expire_type", "fattr4_fh_expire_type", "hex", {0: "FH4_PERSISTENT"}),
                         flags=[(field(f"nfs.fattr4_fh_expire_type.{name}", name, "bool"), mask) for name, mask in (
                             ("noexpire_with_open", 0x1), ("volatile_any", 0x2), ("vol_migration", 0x4),
                             ("vol_rename", 0x8))])

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        p = cur.pos
        v = cur.u32(self.what)
        if lay is not None:
            assert self.field is not None
            lay.add(self.field, v, p, 4)
            if v:
                for flag, mask in self.flags:
                    lay.add(flag, bool(v & mask), p, 4)
        return v


def _flags(prefix: str, *bits: tuple[str, str, int]) -> list[tuple[str, str, int]]:
    return [(f"{prefix}.{name}", label, mask) for name, label, mask in bits]


FTYPE4: Final = {1: "NF4REG", 2: "NF4DIR", 3: "NF4BLK", 4: "NF4CHR", 5: "NF4LNK", 6: "NF4SOCK", 7: "NF4FIFO",
                 8: "NF4ATTRDIR", 9: "NF4NAMEDATTR"}
ACETYPE4: Final = {0: "Access_Allowed", 1: "access_denied", 2: "system_audit", 3: "system_alarm"}
LAYOUTTYPE4: Final = {1: "LAYOUT4_NFSV4_1_FILES", 2: "LAYOUT4_OSD2_OBJECTS", 3: "LAYOUT4_BLOCK_VOLUME",
                      4: "LAYOUT4_FLEX_FILES", 5: "LAYOUT4_SCSI"}
SETTIME_HOW4: Final = {0: "SET_TO_SERVER_TIME4", 1: "SET_TO_CLIENT_TIME4"}
FS4_STATUS_TYPE: Final = {1: "STATUS4_FIXED", 2: "STATUS4_UPDATED", 3: "STATUS4_VERSIONED", 4: "STATUS4_WRITABLE",
                          5: "STATUS4_REFERRAL"}
CHANGE_ATTR_TYPE4: Final = {0: "CHANGE_TYPE_IS_MONOTONIC_INCR", 1: "CHANGE_TYPE_IS_VERSION_COUNTER",
                            2: "CHANGE_TYPE_IS_VERSION_COUNTER_NOPNFS", 3: "CHANGE_TYPE_IS_TIME_METADATA",
                            4: "CHANGE_TYPE_IS_UNDEFINED"}
THRESHOLD_HINTS: Final = {0: "Read_Size", 1: "Write_Size", 2: "Read_IO_Size", 3: "Write_IO_Size"}
NFSTIME4: Final = struct("nfstime4", ("seconds", int64("nfs.nfstime4.seconds", "seconds")),
                         ("nseconds", uint32("nfs.nfstime4.nseconds", "nseconds")))
SETTIME4: Final = union("settime4", Int(Field("nfs.set_it", 0, "set_it", "dec", SETTIME_HOW4)),
                        {1: NFSTIME4}, None)
MODE4: Final = MODE          # mode4 is NFSv2's mode: the same field, bits and names
FSID4: Final = tree(struct("fsid4", ("major", uint64("nfs.fsid4.major", "fsid4.major")),
                           ("minor", uint64("nfs.fsid4.minor", "fsid4.minor"))), "nfs.fsid4", "fattr4_fsid")
SPECDATA4: Final = struct("specdata4", ("specdata1", uint32("nfs.specdata1", "specdata1")),
                          ("specdata2", uint32("nfs.specdata2", "specdata2")))
LAYOUTTYPE: Final = enum("nfs.layouttype", "layout type", LAYOUTTYPE4)
LENGTH4: Final = uint64("nfs.length4", "length")
PATHNAME4: Final = array(string("nfs.pathname.component", "Name"), count="nfs.pathname.component.count",
                         label="pathname components")
NFSACE4: Final = tree(struct(
    "nfsace4",
    ("type", enum("nfs.acetype4", "acetype", ACETYPE4)),
    ("flag", uint32("nfs.aceflags4", "ACE flags", "hex", flags=_flags(
        "nfs.aceflag4", ("file_inherit", "File_Inherit", 0x1), ("dir_inherit", "Directory_Inherit", 0x2),
        ("no_prop_inherit", "No_Propagate_Inherit", 0x4), ("inherit_only", "Inherit_Only", 0x8),
        ("successful_access", "Successful_Access", 0x10), ("failed_access", "Failed_access", 0x20),
        ("id_group", "Identifier_Group", 0x40), ("inherited_ace", "Inherited_ACE", 0x80)))),
    ("access_mask", AceMask()),
    ("who", string("nfs.who", "Who"))), "nfs.ace", "ACE")
ACL4: Final = array(NFSACE4, count="nfs.num_aces", label="ACE count")
NFSACL41: Final = struct("nfsacl41", ("na41_flag", uint32("nfs.acl.flags", "ACL flags", flags=_flags(
    "nfs.acl.flags", ("auto_inherit", "AUTO_INHERIT", 0x1), ("protected", "PROTECTED", 0x2),
    ("defaulted", "DEFAULTED", 0x4)))), ("na41_aces", ACL4))
FS_LOCATIONS4: Final = tree(struct(
    "fs_locations4", ("fs_root", PATHNAME4),
    ("locations", tree(array(tree(struct(
        "fs_location4", ("server", tree(array(string("nfs.server", "server")), "nfs.servers", "servers")),
        ("rootpath", PATHNAME4)), "nfs.fs_location4", "fs_location4")), "nfs.fattr4.fs_location", "fs_location4"))),
    "nfs.fs_locations4", "fattr4_fs_locations")
FS4_STATUS: Final = struct(
    "fs4_status", ("fss_absent", boolean("nfs.fattr4.fs_status.absent", "absent")),
    ("fss_type", enum("nfs.fattr4.fs_status.type", "type", FS4_STATUS_TYPE)),
    ("fss_source", string("nfs.fattr4.fs_status.source", "source")),
    ("fss_current", string("nfs.fattr4.fs_status.current", "current")),
    ("fss_age", int32("nfs.fattr4.fs_status.age", "age")), ("fss_version", NFSTIME4))
FS_LOCATIONS_INFO4: Final = struct(
    "fs_locations_info4", ("fli_flags", uint32("nfs.fattr4.fs_locations_info.flags", "flags", "hex", flags=[
        ("nfs.fattr4.fs_locations_info.flags.var_sub", "FSLI4IF_VAR_SUB", 0x1)])),
    ("fli_valid_for", int32("nfs.fattr4.fs_locations_info.valid_for", "valid for")),
    ("fli_fs_root", PATHNAME4),
    ("fli_items", array(tree(struct(
        "fs_locations_item4",
        ("fli_entries", array(tree(struct(
            "fs_locations_server4", ("fls_currency", int32("nfs.fattr4.fs_locations_info.currency", "currency")),
            ("fls_info", opaque("nfs.fattr4.fs_locations_info.info", "info")),
            ("fls_server", string("nfs.server", "server"))), "nfs.fs_locations_server4", "server"))),
        ("fli_rootpath", PATHNAME4)), "nfs.fs_locations_item4", "fs_locations_item4"))))
# The hints of a threshold_item4 are those of its layout type: RFC 8881 defines the file layout's (four length4
# thresholds: read_size, write_size, read_iosize, write_iosize); for another layout type the hint list stays
# opaque, as tshark shows it (the hint masks, then the list as nfs.bitmap_data).
_HINT_MASK: Final = field("nfs.fattr4.threshold_item.hint_mask", "hint mask", "hex")
_MASK_COUNT: Final = field("nfs.fattr4.threshold_item.mask_count", "number of masks")
THRESHOLD_ITEM4: Final = tree(union(
    "threshold_item4", LAYOUTTYPE,
    {1: AttrSet("file_layout_hints4", "hint",
                {n: Attr(n, name, LENGTH4) for n, name in enumerate(("read_size", "write_size", "read_iosize",
                                                                      "write_iosize"))},
                _HINT_MASK, field("nfs.fattr4.threshold_item.hint_count", "hint"),
                field("nfs.fattr4.threshold_item.hint", "hint", names=THRESHOLD_HINTS), nwords=_MASK_COUNT)},
    struct("threshold_hints4", ("thi_hintset", Bitmap4(_HINT_MASK, nwords=_MASK_COUNT)),
           ("thi_hintlist", opaque("nfs.bitmap_data", "Undissected bitmap data")))),
    "nfs.threshold_item4", "threshold_item4")
RETENTION_GET4: Final = struct(
    "retention_get4", ("rg_duration", uint64("nfs.fattr4.retention.duration", "duration")),
    ("rg_begin_time", array(tree(NFSTIME4, "nfs.fattr4.retention.begin_time", "begin time"), bound=1)))
RETENTION_SET4: Final = struct(
    "retention_set4", ("rs_enable", boolean("nfs.fattr4.retention.enable", "enable")),
    ("rs_duration", array(uint64("nfs.fattr4.retention.duration", "duration"), bound=1)))
MODE_MASKED4: Final = struct("mode_masked4", ("mm_value_to_set", MODE4),
                             ("mm_mask_bits", uint32("nfs.fattr4.mode_set_masked.mask", "mask bits")))
SEC_LABEL4: Final = struct(
    "sec_label4", ("lfs", uint32("nfs.fattr4.security_label.lfs", "label_format")),
    ("pi", uint32("nfs.fattr4.security_label.pi", "policy_id")),
    ("data", string("nfs.fattr4.security_label.context", "context")))
MODE_UMASK4: Final = struct("mode_umask4", ("mu_mode", MODE4), ("mu_umask", uint32("nfs.fattr4.umask", "umask")))


def _bool(name: str) -> XdrType:
    return boolean(f"nfs.fattr4_{name}", f"fattr4_{name}")


def _u64(name: str, label: str = "") -> XdrType:
    return uint64(f"nfs.fattr4.{name}", label or name)


def _u32(name: str, label: str = "") -> XdrType:
    return uint32(f"nfs.fattr4.{name}", label or name)


def _utf8(name: str) -> XdrType:
    return string(f"nfs.fattr4_{name}", f"fattr4_{name}")


BITMAP4: Final = Bitmap4()

# number -> (name, declaration of the value): RFC 7530 §5.8, RFC 8881 §5.8 and §5.11-5.13, RFC 7862 §12.2,
# RFC 8275, RFC 8276.
_TABLE: Final[list[tuple[int, str, XdrType]]] = [
    (0, "supported_attrs", BITMAP4),
    (1, "type", enum("nfs.nfs_ftype4", "ftype4", FTYPE4)),
    (2, "fh_expire_type", FhExpireType()),
    (3, "change", uint64("nfs.changeid4", "changeid")),
    (4, "size", _u64("size")),
    (5, "link_support", _bool("link_support")),
    (6, "symlink_support", _bool("symlink_support")),
    (7, "named_attr", _bool("named_attr")),
    (8, "fsid", FSID4),
    (9, "unique_handles", _bool("unique_handles")),
    (10, "lease_time", _u32("lease_time")),
    (11, "rdattr_error", STATUS4),
    (12, "acl", ACL4),
    (13, "aclsupport", uint32("nfs.fattr4.aclsupport", "aclsupport", flags=_flags(
        "nfs.fattr4.aclsupport", ("allow_acl", "ALLOW", 0x1), ("deny_acl", "DENY", 0x2),
        ("audit_acl", "AUDIT", 0x4), ("alarm_acl", "ALARM", 0x8)))),
    (14, "archive", _bool("archive")),
    (15, "cansettime", _bool("cansettime")),
    (16, "case_insensitive", _bool("case_insensitive")),
    (17, "case_preserving", _bool("case_preserving")),
    (18, "chown_restricted", _bool("chown_restricted")),
    (19, "filehandle", tree(fhandle(128), "nfs.fh", "fattr4_filehandle")),
    (20, "fileid", _u64("fileid")),
    (21, "files_avail", _u64("files_avail")),
    (22, "files_free", _u64("files_free")),
    (23, "files_total", _u64("files_total")),
    (24, "fs_locations", FS_LOCATIONS4),
    (25, "hidden", _bool("hidden")),
    (26, "homogeneous", _bool("homogeneous")),
    (27, "maxfilesize", _u64("maxfilesize")),
    (28, "maxlink", _u32("maxlink")),
    (29, "maxname", _u32("maxname")),
    (30, "maxread", _u64("maxread")),
    (31, "maxwrite", _u64("maxwrite")),
    (32, "mimetype", _utf8("mimetype")),
    (33, "mode", MODE4),
    (34, "no_trunc", _bool("no_trunc")),
    (35, "numlinks", _u32("numlinks")),
    (36, "owner", _utf8("owner")),
    (37, "owner_group", _utf8("owner_group")),
    (38, "quota_avail_hard", _u64("quota_hard")),
    (39, "quota_avail_soft", _u64("quota_soft")),
    (40, "quota_used", _u64("quota_used")),
    (41, "rawdev", SPECDATA4),
    (42, "space_avail", _u64("space_avail")),
    (43, "space_free", _u64("space_free")),
    (44, "space_total", _u64("space_total")),
    (45, "space_used", _u64("space_used")),
    (46, "system", _bool("system")),
    (47, "time_access", NFSTIME4),
    (48, "time_access_set", SETTIME4),
    (49, "time_backup", NFSTIME4),
    (50, "time_create", NFSTIME4),
    (51, "time_delta", NFSTIME4),
    (52, "time_metadata", NFSTIME4),
    (53, "time_modify", NFSTIME4),
    (54, "time_modify_set", SETTIME4),
    (55, "mounted_on_fileid", uint64("nfs.fattr4.mounted_on_fileid", "fileid", "hex")),
    # NFSv4.1
    (56, "dir_notif_delay", NFSTIME4),
    (57, "dirent_notif_delay", NFSTIME4),
    (58, "dacl", NFSACL41),
    (59, "sacl", NFSACL41),
    (60, "change_policy", struct("change_policy4", ("cp_major", _u64("change_policy.major", "major")),
                                 ("cp_minor", _u64("change_policy.minor", "minor")))),
    (61, "fs_status", FS4_STATUS),
    (62, "fs_layout_type", array(LAYOUTTYPE)),
    (63, "layout_hint", struct("layouthint4", ("loh_type", LAYOUTTYPE),
                               ("loh_body", opaque("nfs.fattr4.layout_hint.body", "body")))),
    (64, "layout_type", array(LAYOUTTYPE)),
    (65, "layout_blksize", uint32("nfs.fattr4.layout_blksize", "blksize")),
    (66, "layout_alignment", _u32("layout_alignment")),
    (67, "fs_locations_info", FS_LOCATIONS_INFO4),
    (68, "mdsthreshold", tree(array(THRESHOLD_ITEM4), "nfs.fattr4.threshold_item", "mdsthreshold4")),
    (69, "retention_get", RETENTION_GET4),
    (70, "retention_set", RETENTION_SET4),
    (71, "retentevt_get", RETENTION_GET4),
    (72, "retentevt_set", RETENTION_SET4),
    (73, "retention_hold", _u64("retention_hold")),
    (74, "mode_set_masked", MODE_MASKED4),
    (75, "suppattr_exclcreat", BITMAP4),
    (76, "fs_charset_cap", uint32("nfs.fattr4.fs_charset_cap", "fs_charset_cap", "hex", flags=_flags(
        "nfs.fattr4.fs_charset_cap", ("nonutf8", "CONTAINS_NON_UTF8", 0x1), ("utf8", "ALLOWS_ONLY_UTF8", 0x2)))),
    # NFSv4.2
    (77, "clone_blksize", _u32("clone_block_size", "clone block size")),
    (78, "space_freed", _u64("space_freed", "space freed")),
    (79, "change_attr_type", enum("nfs.fattr4.change_attr_type", "change attr type", CHANGE_ATTR_TYPE4)),
    (80, "sec_label", SEC_LABEL4),
    (81, "mode_umask", MODE_UMASK4),
    (82, "xattr_support", _bool("xattr_support")),
    # as tshark 4.0 decodes them
    (83, "offline", _bool("offline")),
    (84, "time_deleg_access", NFSTIME4),
    (85, "time_deleg_modify", NFSTIME4),
]
ATTRS: Final = {n: Attr(n, name, decl) for n, name, decl in _TABLE}

FATTR4_BODY: Final = AttrSet("fattr4", "attribute", ATTRS, ATTR_MASK, ATTR_COUNT, ATTR_NUMBER, subtree=True)


def fattr4(label: str) -> XdrType:
    """A fattr4 shown as a sub-tree named by its role (obj_attributes, createattrs...)."""
    return tree(FATTR4_BODY, "nfs.fattr4", label)


FATTR4: Final = fattr4("obj_attributes")
