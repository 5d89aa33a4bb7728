"""Declarative header fields.

A header is declared once, as an ordered list of fields with bit widths.  The
declaration is compiled at its first decode (or first look at its layout) into
one precompiled ``struct.Struct`` plus a generated decode function (shifts and
masks only) and an encoder, so the same description serves decoding, building,
the verbose tree, JSON, display filters and hex highlighting.

Declaring is registering (as Wireshark's ``proto_register_field_array``): every
``Header``, every ``Field`` with a full name and every ``protocol()`` goes into
``CATALOG``, the one list of names that filters, JSON, the tree, ``rdmaspy
fields`` and docs/fields.md read.  A module calls ``declaring(__name__)`` before
its declarations, so each name knows the module that declares it.
"""
from __future__ import annotations

import struct
from struct import Struct

from .records import record_eq, record_hash, record_repr
from .typenames import Any, Callable, ClassVar, Final, Literal, Mapping, mypyc_attr

# How a value is shown.  Presentation code interprets these; dissectors only declare them.
DISPLAYS: Final = frozenset({
    "dec", "hex", "bool", "ipv4", "ipv6", "mac", "bytes", "gid", "str", "time", "float",
})


# The classes declared many times at start (a Field for each field of every header: some 4,000) spell
# their ``__init__`` out: mypyc 2.4 runs the standard ``@dataclass`` decorator on a compiled class (some
# 3 M instructions a class) and leaves it the ``__init__`` that generates, a Python function (some 6,000
# instructions an object).  They allow interpreted subclasses: a class mypyc 2.4 makes serializable
# without it, made by interpreted code, runs no ``__init__``.
@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Field:
    """One named value.  ``name`` is the full dotted filter name (``bth.opcode``)."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("name", "bits", "label", "display", "names", "unit", "doc", "catalogued")
    __slots__ = _FIELDS

    def __init__(self, name: str, bits: int = 0, label: str = "", display: str = "dec",
                 names: Mapping[int, str] | None = None, unit: str = "", doc: str = "",
                 catalogued: bool = True) -> None:
        self.name = name
        self.bits = bits                  # width on the wire; 0 for values of variable size
        self.label = label
        self.display = display
        self.names = names                # value -> name (enumerations)
        self.unit = unit                  # shown after the value ("bytes", "words")
        self.doc = doc
        self.catalogued = catalogued      # False: a part of a Header (registered with it) or a value derived
        self.__post_init__()              # by a filter

    def __post_init__(self) -> None:
        if self.display not in DISPLAYS:
            raise ValueError(f"{self.name}: unknown display {self.display!r}")
        if not self.label:
            self.label = self.name.rsplit(".", 1)[-1]
        if self.catalogued:
            CATALOG.add_field(self, standalone=True)

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)

    def name_of(self, value: Any) -> str | None:
        names = self.names
        if names is None:
            return None
        return names.get(value)


def F(name: str, bits: int, label: str = "", display: str = "dec",
      names: Mapping[int, str] | None = None, unit: str = "", doc: str = "") -> Field:
    """Shorthand used in header declarations (``name`` is relative to the header)."""
    return Field(name, bits, label, display, names, unit, doc, catalogued=False)


# How a value of whole bytes at a byte boundary is shown when it is kept as bytes (not an integer).
_BYTE_DISPLAYS: Final = ("bytes", "gid", "ipv4", "ipv6", "mac", "str")

# Byte lengths that struct can unpack directly as unsigned integers.
_INT_CODES: Final = {1: "B", 2: "H", 4: "I", 8: "Q"}


class BitSpot:
    """Where one field of a Header sits in the header read as words (``Header.words``): the value is
    ``(words[word] >> shift) & mask``.  Hot paths take these at import time and keep one unpack.
    Equal, and hashed, by its values (as the frozen dataclass it was)."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("word", "shift", "mask")
    __slots__ = _FIELDS

    def __init__(self, word: int, shift: int, mask: int) -> None:
        self.word = word    # index in ``header.words(width).unpack_from(buf, off)``
        self.shift = shift
        self.mask = mask

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)

    def __eq__(self, other: object) -> bool:
        return record_eq(self, other, self._FIELDS)

    def __hash__(self) -> int:
        return record_hash(self, self._FIELDS)

    def of(self, words: tuple[int, ...]) -> int:
        return (words[self.word] >> self.shift) & self.mask


class _Group:
    """A run of fields that together fill whole bytes."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("byte_off", "nbytes", "members")
    __slots__ = _FIELDS

    def __init__(self, byte_off: int, nbytes: int, members: list[tuple[int, int, int]] | None = None) -> None:
        self.byte_off = byte_off
        self.nbytes = nbytes
        self.members: list[tuple[int, int, int]] = [] if members is None else members  # (field index, shift, width)

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)


def _whole(g: _Group) -> bool:
    """Whether a group is one field read as it is unpacked (bytes, or an integer of the whole group)."""
    if len(g.members) != 1:
        return False
    _idx, shift, width = g.members[0]
    return shift == -1 or (shift == 0 and width == g.nbytes * 8 and g.nbytes in _INT_CODES)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Header:
    """A fixed-layout header compiled from field declarations.

    Fields are declared with names relative to the header (``opcode``); their full
    names become ``<name>.<field>`` (``bth.opcode``).  Consecutive fields are
    packed into groups of whole bytes; groups of 1, 2, 4 or 8 bytes unpack as
    integers, others as byte strings converted with ``int.from_bytes`` (only
    where a value is wider than 64 bits or the group width is odd, as for
    24-bit QPNs standing alone) or kept as bytes (addresses, GIDs).

    ``little``: a little-endian layout (NVMe): each group is a little-endian integer and its fields are
    declared from its least significant bit up, as the specifications draw them (bit 0 first), so a
    field of whole bytes is where the declaration puts it and a flag byte reads as written.

    ``parts``: the named bits of some of its words (the word's name relative to the header -> its bits,
    named relative to the header too, in the header's bit order), shown besides the whole word as tshark
    shows a word and its bits: each word's parts are a header of their own over the word's bytes
    (``parts_of``), whose values a layer adds as items (``packet.add_parts``).
    """

    __slots__ = ("name", "label", "fields", "size", "index", "_spans", "decode",
                 "_struct", "_groups", "every_field", "little", "parts")

    def __init__(self, name: str, label: str, fields: list[Field], little: bool = False,
                 parts: Mapping[str, list[Field]] | None = None) -> None:
        self.name = name
        self.label = label
        self.little = little
        named: list[Field] = []
        index: dict[str, int] = {}
        for i, f in enumerate(fields):
            relative = f.name                           # as declared: relative to the header ("sgl1.addr")
            full = Field(f"{name}.{relative}", f.bits, f.label, f.display, f.names, f.unit, f.doc, catalogued=False)
            named.append(full)
            index[full.name] = i
            index[relative] = i
            index[relative.rsplit(".", 1)[-1] if "." in relative else relative] = i
        self.fields: tuple[Field, ...] = tuple(named)
        self.every_field: tuple[tuple[int, Field], ...] = tuple(enumerate(self.fields))   # (index, field)
        self.index = index
        self.size = self._checked_size()
        # The layout (groups, struct, decoder) is compiled at the first decode or look at it: most
        # declarations are never decoded in a run, and each compiled at import cost every start.
        self._struct: Struct | None = None
        self._spans: tuple[tuple[int, int, int], ...] = ()
        self._groups: list[_Group] = []
        self.decode: Callable[..., tuple] = self._decode_first
        # (field index, byte offset, the word's parts as a header) for each word with parts
        self.parts: tuple[tuple[int, int, Header], ...] = ()
        if parts:
            self.parts = tuple(self._compile_parts(word, fields) for word, fields in parts.items())
        CATALOG.add_header(self)

    def _checked_size(self) -> int:
        """The header's size in bytes; ValueError for a field without a width or fields that do not end
        on a byte boundary (what ``_compile`` would find, found at the declaration)."""
        bits = 0
        for f in self.fields:
            if f.bits <= 0:
                raise ValueError(f"{f.name}: fixed headers need a width")
            bits += f.bits
        if bits % 8:
            raise ValueError(f"{self.name}: fields do not end on a byte boundary")
        return bits // 8

    def _bit_start(self, i: int) -> int:
        """Where field ``i`` starts, in bits from the header's start: the widths declared before it (in
        either byte order: a little-endian group's fields are declared from its least significant bit)."""
        start = 0
        for f in self.fields[:i]:
            start += f.bits
        return start

    def _compile_parts(self, word: str, parts: list[Field]) -> tuple[int, int, Header]:
        i = self.index[f"{self.name}.{word}"]
        f = self.fields[i]
        start = self._bit_start(i)
        byte_off, bit = divmod(start, 8)
        # a field of bytes (not an integer) when whole bytes at a byte boundary show as bytes
        if bit or f.bits % 8 or f.display in _BYTE_DISPLAYS:
            raise ValueError(f"{f.name}: only a word of whole bytes has parts")
        if sum(p.bits for p in parts) != f.bits:
            raise ValueError(f"{f.name}: its parts are {sum(p.bits for p in parts)} bits, the word {f.bits}")
        hdr = Header(self.name, self.label, parts, self.little)
        # a layer holds them as items (packet.add_parts): what filters look for in a layer's variable part
        CATALOG.standalone.update(p.name for p in hdr.fields)
        return i, byte_off, hdr

    def prefix(self, nbytes: int) -> Header:
        """A header of this one's leading fields that fill whole bytes within its first ``nbytes``: what a
        header cut short still shows (an ICMP error quotes 8 bytes of a TCP header; tshark shows its ports
        and sequence number).  Declared at import, as every header is (a pickled header is named by its
        place among the headers of its name)."""
        keep: list[Field] = []
        bits = 0
        for i, f in enumerate(self.fields):
            if bits + f.bits > nbytes * 8:
                break
            bits += f.bits
            if bits % 8 == 0:
                keep = list(self.fields[:i + 1])
        if not keep:
            raise ValueError(f"{self.name}: no whole field within {nbytes} bytes")
        cut = len(self.name) + 1
        return Header(self.name, self.label, [
            Field(f.name[cut:], f.bits, f.label, f.display, f.names, f.unit, f.doc, catalogued=False) for f in keep
        ], self.little)

    def parts_of(self, word: str) -> Header:
        """The header of the parts of ``word`` (its name relative to the header, or full)."""
        i = self.index.get(f"{self.name}.{word}", self.index.get(word, -1))
        for idx, _off, hdr in self.parts:
            if idx == i:
                return hdr
        raise KeyError(f"{self.name}: {word} has no parts")

    @property
    def byteorder(self) -> Literal["little", "big"]:
        """"big" or "little": how the header's multi-byte integers are laid out."""
        return "little" if self.little else "big"

    def __reduce__(self) -> tuple[Callable[[str, int], Header], tuple[str, int]]:
        """Pickled as a reference to the declaration (the pipeline's checkpoints): its decoder is
        generated code, and packets are compared with the declaration itself, not a copy."""
        return header_declared, (self.name, [h for h in CATALOG.headers if h.name == self.name].index(self))

    # -- compilation ---------------------------------------------------------------------------
    @property
    def struct(self) -> Struct:
        """The header's groups as one ``struct.Struct`` (compiled at the first look)."""
        got = self._struct
        if got is None:
            self._compile()
            got = self._struct
            assert got is not None
        return got

    @property
    def spans(self) -> tuple[tuple[int, int, int], ...]:
        """Per field: its byte offset, its length in bytes, its bit offset in its first byte."""
        if self._struct is None:
            self._compile()
        return self._spans

    @property
    def groups(self) -> list[_Group]:
        """The runs of fields that fill whole bytes, in order: what the struct unpacks, one item each."""
        if self._struct is None:
            self._compile()
        return self._groups

    def _compile(self) -> None:
        little = self.little
        groups: list[_Group] = []
        spans: list[tuple[int, int, int]] = []  # per field: byte offset, byte length, bit offset in first byte
        bitpos = 0
        current: _Group | None = None
        pending: list[tuple[int, int]] = []     # (field index, width) of the open group
        # the widths and the byte boundary were checked at the declaration (``_checked_size``)
        for i, f in enumerate(self.fields):
            start = bitpos
            spans.append((start // 8, (start % 8 + f.bits + 7) // 8, start % 8))
            if f.display in _BYTE_DISPLAYS and f.bits % 8 == 0 and bitpos % 8 == 0 and not pending:
                groups.append(_Group(bitpos // 8, f.bits // 8, [(i, -1, f.bits)]))
                bitpos += f.bits
                continue
            if not pending:
                current = _Group(bitpos // 8, 0)
            pending.append((i, f.bits))
            bitpos += f.bits
            width = sum(w for _, w in pending)
            if width % 8 == 0:
                assert current is not None
                current.nbytes = width // 8
                if little:
                    # least significant bit first: a field's shift is the width declared before it
                    shift = 0
                    for idx, w in pending:
                        current.members.append((idx, shift, w))
                        lo = current.byte_off * 8 + shift
                        spans[idx] = (lo // 8, (lo % 8 + w + 7) // 8, lo % 8)
                        shift += w
                else:
                    shift = width
                    for idx, w in pending:
                        shift -= w
                        current.members.append((idx, shift, w))
                groups.append(current)
                pending = []
        self._spans = tuple(spans)
        self._groups = groups

        fmt = "<" if little else ">"
        for g in groups:
            fmt += _INT_CODES.get(g.nbytes, f"{g.nbytes}s") if not (
                len(g.members) == 1 and g.members[0][1] == -1) else f"{g.nbytes}s"
        compiled = struct.Struct(fmt)
        if all(_whole(g) for g in groups):
            # Every field is a whole group (no shift, mask or conversion): the unpack is the decoder,
            # a call in C rather than a Python function around it.
            self.decode = compiled.unpack_from
        else:
            self.decode = self._decode_generated
        self._struct = compiled

    def _decoder_source(self) -> str:
        """The generated decoder: one unpack_from, then shifts/masks per field."""
        if self._struct is None:
            self._compile()
        order = "little" if self.little else "big"
        groups = self._groups
        lines = ["def decode(buf, off=0, _u=_unpack):", f"    {', '.join(f'g{k}' for k in range(len(groups)))}, = _u(buf, off)"]
        exprs: list[str] = [""] * len(self.fields)
        for k, g in enumerate(groups):
            gv = f"g{k}"
            if len(g.members) == 1 and g.members[0][1] == -1:
                exprs[g.members[0][0]] = gv
                continue
            if g.nbytes not in _INT_CODES:
                lines.append(f"    {gv} = _fb({gv}, '{order}')")
            for idx, shift, w in g.members:
                mask = (1 << w) - 1
                e = gv
                if shift:
                    e = f"({e} >> {shift})"
                if shift + w < g.nbytes * 8:
                    e = f"({e} & {mask:#x})"
                exprs[idx] = e
        lines.append(f"    return ({', '.join(exprs)},)")
        return "\n".join(lines)

    def _decode_first(self, buf: bytes, off: int = 0) -> tuple:
        """The header's layout compiled now, then decoded; its decoder takes this one's place."""
        if self._struct is None:
            self._compile()
        return self.decode(buf, off)

    def _decode_generated(self, buf: bytes, off: int = 0) -> tuple:
        """The generated decoder, written and made now, called; it takes this one's place."""
        ns: dict[str, Any] = {"_unpack": self.struct.unpack_from, "_fb": int.from_bytes}
        exec(self._decoder_source(), ns)
        self.decode = ns["decode"]
        return self.decode(buf, off)

    def words(self, width: int = 32) -> Struct:
        """The header read as unsigned integers of ``width`` bits (8, 16, 32 or 64) in its byte order, the
        unpack that ``spot`` positions refer to; ValueError if the header is not a whole number of them."""
        code = _INT_CODES.get(width // 8) if width % 8 == 0 else None
        if code is None or (self.size * 8) % width:
            raise ValueError(f"{self.name}: {self.size} bytes are not {width}-bit words")
        return struct.Struct(f"{'<' if self.little else '>'}{self.size * 8 // width}{code}")

    def spot(self, name: str, width: int = 32) -> BitSpot:
        """Where field ``name`` (short or full) sits in what ``words(width)`` unpacks, from the bit widths
        declared before it; ValueError for a field that straddles two words."""
        i = self.index[name]
        bits = self.fields[i].bits
        if self.little:
            # bit b of a little-endian run of bytes is bit b % width of its word b // width
            start = self._bit_start(i)
            word, first = divmod(start, width)
            if first + bits > width:
                raise ValueError(f"{self.fields[i].name}: bits {start}..{start + bits - 1} straddle {width}-bit "
                                 f"words")
            return BitSpot(word, first, (1 << bits) - 1)
        start = sum(f.bits for f in self.fields[:i])
        word, first = divmod(start, width)
        if first + bits > width:
            raise ValueError(f"{self.fields[i].name}: bits {start}..{start + bits - 1} straddle {width}-bit words")
        return BitSpot(word, width - first - bits, (1 << bits) - 1)

    # -- building --------------------------------------------------------------------------------
    def encode(self, values: Mapping[str, Any] | None = None, **kw: Any) -> bytes:
        """Build the header from field values (missing fields are 0 / zero bytes)."""
        pack = self.struct.pack         # the layout compiled first
        given = dict(values or {})
        given.update(kw)
        vals: dict[int, Any] = {}        # field index -> value (a field named in full, relative or short)
        for key, value in given.items():
            i = self.index.get(key)
            if i is None:
                raise KeyError(f"{self.name} has no field {key!r}")
            vals[i] = value
        args: list[Any] = []
        for g in self._groups:
            if len(g.members) == 1 and g.members[0][1] == -1:
                idx = g.members[0][0]
                v = vals.get(idx, b"")
                if isinstance(v, int):
                    v = v.to_bytes(g.nbytes, self.byteorder)
                v = bytes(v)
                args.append(v.ljust(g.nbytes, b"\0")[:g.nbytes])
                continue
            acc = 0
            for idx, shift, w in g.members:
                v = vals.get(idx, 0)
                if isinstance(v, (bytes, bytearray)):
                    v = int.from_bytes(v, self.byteorder)
                acc |= (int(v) & ((1 << w) - 1)) << shift
            if g.nbytes in _INT_CODES:
                args.append(acc)
            else:
                args.append(acc.to_bytes(g.nbytes, self.byteorder))
        return pack(*args)

    def as_dict(self, values: tuple) -> dict[str, Any]:
        return {f.name: v for f, v in zip(self.fields, values)}

    def __repr__(self) -> str:
        return f"<Header {self.name} {self.size} bytes>"


class Catalog:
    """Every name a packet can carry: fields, and protocols (layers or sub-trees whose presence can be
    tested).  Filled by declarations as modules load; the first declaration of a name wins."""

    __slots__ = ("fields", "headers", "declared", "origin", "standalone", "module", "repeating", "_protocols",
                 "_repeats")

    def __init__(self) -> None:
        self.fields: dict[str, Field] = {}
        self.headers: list["Header"] = []       # every Header, in the order declared (scapy layers, craft)
        self.declared: dict[str, str] = {}      # protocol name -> label, as declared
        self.origin: dict[str, str] = {}        # name -> module that declares it
        # fields declared outside a Header (a layer's variable items) or shown by a fill (``filled``)
        self.standalone: set[str] = set()
        self.module = ""                        # the module declaring now (``declaring``)
        # name -> whether what it names can occur more than once in one packet (see ``repeats``)
        self.repeating: dict[str, bool] = {}
        self._protocols: dict[str, str] | None = None
        self._repeats: dict[str, bool] = {}

    def add_field(self, f: Field, standalone: bool = False) -> None:
        if standalone:
            self.standalone.add(f.name)
        if f.name not in self.fields:
            self.fields[f.name] = f
            self.origin[f.name] = self.module
            self._protocols = None

    def add_protocol(self, name: str, label: str, repeats: bool | None = None) -> None:
        if name not in self.declared:
            self.declared[name] = label
            self.origin.setdefault(name, self.module)
            self._protocols = None
        if repeats is not None:
            self.set_repeats(name, repeats)

    def set_repeats(self, name: str, repeats: bool) -> None:
        self.repeating.setdefault(name, repeats)
        self._repeats.clear()

    def repeats(self, name: str) -> bool:
        """Whether a field or protocol can occur more than once in one packet: as declared for the name, else
        for its longest dotted prefix declared either way (a sub-tree of a layer that repeats repeats too);
        nothing declared: no.  JSON writes the values of such a name as an array, always."""
        got = self._repeats.get(name)
        if got is None:
            n = name
            while True:
                r = self.repeating.get(n)
                if r is not None:
                    got = r
                    break
                cut = n.rfind(".")
                if cut < 0:
                    got = False
                    break
                n = n[:cut]
            self._repeats[name] = got
        return got

    def add_header(self, hdr: "Header") -> None:
        self.headers.append(hdr)
        self.add_protocol(hdr.name, hdr.label)
        for f in hdr.fields:
            self.add_field(f)

    @property
    def protocols(self) -> dict[str, str]:
        """Protocol name -> label: the declared ones, then every proper prefix of a field name (a sub-tree
        such as ``nfs.ddp`` is known by its fields)."""
        got = self._protocols
        if got is None:
            got = dict(self.declared)
            for fname in self.fields:
                parts = fname.split(".")
                for i in range(1, len(parts)):
                    p = ".".join(parts[:i])
                    if p not in got and p not in self.fields:
                        got[p] = p
                        self.origin.setdefault(p, self.origin[fname])
            self._protocols = got
        return got

    def forget_module(self, module: str) -> None:
        """Withdraw every name a module declared (a module loaded for a test and gone again)."""
        self.headers = [h for h in self.headers if self.origin.get(h.fields[0].name if h.fields else h.name) != module]
        for name in [n for n, m in self.origin.items() if m == module]:
            del self.origin[name]
            self.fields.pop(name, None)
            self.declared.pop(name, None)
            self.standalone.discard(name)
            self.repeating.pop(name, None)
        self._protocols = None
        self._repeats.clear()


CATALOG: Final = Catalog()


def declaring(module: str) -> None:
    """The names declared from now on are declared by ``module`` (``declaring(__name__)``)."""
    CATALOG.module = module


def protocol(name: str, label: str, repeats: bool | None = None) -> str:
    """Declare a layer or sub-tree made without a Header (``icrc``, ``nfs.op``); returns its name.
    ``repeats``: whether it can occur more than once in one packet (None: as the layer it is named under)."""
    CATALOG.add_protocol(name, label, repeats)
    return name


def repeatable(*names: str) -> None:
    """Declare that these protocols (or fields), and what is named under them, can occur more than once in
    one packet: an IP header inside an ICMP error, several MPA FPDUs in one TCP segment."""
    for name in names:
        CATALOG.set_repeats(name, True)


def filled(*headers: Header) -> None:
    """Declare that these headers are shown only in sub-trees a layer's fill makes (``Layer.lazy``): a
    filter looks for their fields in the variable part, as for fields declared outside a Header."""
    for hdr in headers:
        CATALOG.standalone.update(f.name for f in hdr.fields)


def single(*names: str) -> None:
    """Declare that these, though named under a layer that repeats, occur at most once in one packet."""
    for name in names:
        CATALOG.set_repeats(name, False)


def header_declared(name: str, nth: int) -> Header:
    """The ``nth`` header declared with ``name`` (what a pickled Header stands for): by name, not by
    place in the catalog, so that another process that imported its modules in another order agrees."""
    return [h for h in CATALOG.headers if h.name == name][nth]


# --- XDR lists (RFC 4506) ------------------------------------------------------------------------------
XDR_UNIT: Final = 4             # every XDR item fills whole 4-byte units: a discriminator, a count
_XDR_CODES: Final = {32: "I", 64: "Q"}


class XdrStruct:
    """A fixed XDR struct of unsigned integers (``unsigned int``, ``unsigned hyper``), declared once for
    decoding, building and the tree.  Its fields are named ``<prefix>.<field>`` and registered as a
    layer's variable items; ``tree`` is the sub-tree (label ``label``) one instance fills, ``what`` its
    name in error messages.  ``keys`` are the fields' short names, ``spans`` their (offset, size)."""

    __slots__ = ("tree", "label", "what", "fields", "keys", "spans", "masks", "size", "struct")

    def __init__(self, tree: str, label: str, what: str, prefix: str, fields: list[Field]) -> None:
        self.tree = tree
        self.label = label
        self.what = what
        protocol(tree, label)
        self.fields: tuple[Field, ...] = tuple(
            Field(f"{prefix}.{f.name}", f.bits, f.label, f.display, f.names, f.unit, f.doc) for f in fields)
        self.keys: tuple[str, ...] = tuple(f.name for f in fields)
        spans = []
        at = 0
        for f in fields:
            if f.bits not in _XDR_CODES:
                raise ValueError(f"{prefix}.{f.name}: XDR integers are 32 or 64 bits, not {f.bits}")
            spans.append((at, f.bits // 8))
            at += f.bits // 8
        self.spans: tuple[tuple[int, int], ...] = tuple(spans)
        self.masks: tuple[int, ...] = tuple((1 << f.bits) - 1 for f in fields)
        self.size = at
        self.struct = struct.Struct(">" + "".join(_XDR_CODES[f.bits] for f in fields))

    def __repr__(self) -> str:
        return f"<XdrStruct {self.tree} {self.size} bytes>"


class XdrList:
    """A list of ``item`` structs, in one of the shapes XDR gives lists: ``chained``, entries each after
    a TRUE discriminator and ended by FALSE (an optional-data linked list, ``struct x *next``); else at
    most one entry (optional-data, ``x *``).  An entry is one item, or with ``count`` (the field that
    shows it) a counted array of items (``item<>``: a uint32 count, then the items).  ``what`` and
    ``count_what`` name the list and its count in error messages."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("what", "item", "chained", "count", "count_what")
    __slots__ = _FIELDS

    def __init__(self, what: str, item: XdrStruct, chained: bool = True, count: Field | None = None,
                 count_what: str = "") -> None:
        self.what = what
        self.item = item
        self.chained = chained
        self.count = count
        self.count_what = count_what

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)
