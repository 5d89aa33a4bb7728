"""XDR declarations (RFC 4506): a small type language whose one declaration decodes, builds and names.

A protocol's structures are written once, as the RFCs write them in XDR::

    FH3 = opaque("nfs.fhandle", "FileHandle", bound=64, length="nfs.fh.length", derived=[(FH_HASH, crc32)])
    READ3args = struct("READ3args", ("file", tree(FH3, "nfs.fh", "file")),
                       ("offset", uint64("nfs.offset3", "offset")), ("count", uint32("nfs.count3", "count")))

and that declaration

- **decodes** (``decode``/``XdrType.read``): a walk bounded by the bytes, where every count and length is
  a claim checked against the bytes left and its declared bound before anything is built from it; bad
  input raises ``XdrError`` (``XdrInvalid`` for a value out of its bounds) naming the item;
- **fills the tree**: given a ``Layer``, each named item is added with its offset and length (the ``-V``
  tree, JSON, display filters and the TUI's hex spans read them through ``fieldview``); ``tree(...)``
  makes a sub-tree; given None, only the value is computed (facts for the summary's slow path);
- **names**: every named item is a catalogued ``Field`` (``rdmaspy fields``, docs/fields.md), made once per
  name (a second declaration of a name reuses the first's field);
- **builds** (``encode``/``XdrType.write``) the bytes from the same values ``decode`` returns.

Values: integers and enumerations ``int``, ``bool``, ``opaque`` ``bytes``, ``string`` ``str``, a
``struct`` a dict by member name, a ``union`` a ``(discriminant, arm value)`` pair (None for a void
arm), an ``optional`` None or its value, arrays and ``chain`` lists a list.  ``ddp(...)`` marks an
opaque as DDP-eligible (RFC 8267): the ``Walk`` decides whether its bytes were reduced out of the
message into an RDMA chunk (value None) or are inline (value bytes).
"""
from __future__ import annotations

import struct as _struct
from abc import ABC, abstractmethod

from ..fields import CATALOG, Field, protocol
from ..packet import Layer
from ..typenames import Any, Callable, Final, Iterator, Mapping, Protocol, Sequence, mypyc_attr
from .xdr import Cursor, XdrError, XdrInvalid, bytes_at, u32

_U64: Final = _struct.Struct(">Q")
_I32: Final = _struct.Struct(">i")
_I64: Final = _struct.Struct(">q")
_TRUE: Final = b"\0\0\0\1"
_FALSE: Final = b"\0\0\0\0"

# Every named structure and union declared, by name (round-trip tests take each of them).
DECLARED: Final[dict[str, "XdrType"]] = {}


class Walk(Protocol):
    """What a decode walk carries beside the bytes: ``call``, what was kept of a reply's call (tshark
    decodes a reply with its call in hand: NFSv3 ACCESS shows the rights asked for), and ``ddp``, which
    places a DDP-eligible item: reduced out of the message into a chunk, or inline.  A protocol's walk
    (NFS over RPC-over-RDMA: nfs._Walk) is any object of this shape; ``PlainWalk`` finds every item inline."""

    call: object

    def ddp(self, cur: Cursor, kind: str, lay: Layer | None) -> tuple[int, int, bool]:
        """At a DDP-eligible item's length word: step over the item; return (where its bytes start,
        its length, whether they are in the message)."""


class PlainWalk:
    """A walk with every DDP-eligible item inline (bytes decoded or built alone, a side program)."""

    __slots__ = ("call",)

    def __init__(self, call: object = None) -> None:
        self.call = call

    def ddp(self, cur: Cursor, kind: str, lay: Layer | None) -> tuple[int, int, bool]:
        n = cur.u32(kind)
        p = cur.need((n + 3) & ~3, kind)
        cur.pos = p + ((n + 3) & ~3)
        return p, n, True


PLAIN: Final = PlainWalk()


class Out:
    """Bytes being built; ``reduce``: leave DDP-eligible data out (it travels in a chunk), its length in."""

    __slots__ = ("parts", "reduce")

    def __init__(self, reduce: bool = False) -> None:
        self.parts: list[bytes] = []
        self.reduce = reduce


def field(name: str, label: str = "", display: str = "dec", names: Mapping[int, str] | None = None,
          unit: str = "", doc: str = "") -> Field:
    """The catalogued field of ``name``: the one already declared, else a new one."""
    got = CATALOG.fields.get(name)
    if got is not None:
        return got
    return Field(name, 0, label, display, names, unit, doc)


def _field_of(f: Field | str | None, label: str = "", display: str = "dec",
              names: Mapping[int, str] | None = None) -> Field | None:
    if f is None or isinstance(f, Field):
        return f
    return field(f, label, display, names)


@mypyc_attr(allow_interpreted_subclasses=True)      # a protocol's own kinds (nfs4.Bitmap4)
class XdrType(ABC):
    """One XDR type.  ``size``: its encoded size when fixed, else -1; ``min_size``: the least bytes
    one instance takes (what a counted array's claim is checked against)."""

    __slots__ = ("size", "min_size")

    def __init__(self, size: int, min_size: int) -> None:
        self.size = size
        self.min_size = min_size

    @abstractmethod
    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        """The value at ``cur`` (which moves past it); its named items added to ``lay`` unless None."""

    def skip(self, cur: Cursor, w: Walk) -> None:
        """Step over one value, checking what a summary needs (counts and lengths against their bounds
        and the bytes left, DDP-eligible items placed by the walk), building nothing: the summary path's
        walk, derived from the same declaration.  A kind with a cheaper way overrides this."""
        self.read(cur, w, None)

    def pick(self, cur: Cursor, w: Walk, keys: frozenset[str]) -> Any:
        """The value at ``cur`` with only the members named in ``keys`` read, at every depth, the others
        stepped over (``skip``): what a reader of a few values (nfs_names) needs, without the objects of
        the rest.  A member it reads has the value ``read`` gives it; a member it does not name is absent.
        A leaf, and a kind with no members, is read whole."""
        return self.read(cur, w, None)

    @abstractmethod
    def write(self, value: Any, out: Out) -> None:
        """Append the encoding of ``value`` to ``out``."""

    @abstractmethod
    def fields(self) -> Iterator[Field]:
        """Every field named under this type, in declaration order (repeats included)."""


class Void(XdrType):
    """Nothing (a void union arm, a procedure with no arguments)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(0, 0)

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        return None

    def skip(self, cur: Cursor, w: Walk) -> None:
        return None

    def write(self, value: Any, out: Out) -> None:
        if value is not None:
            raise ValueError(f"void takes None, not {value!r}")

    def fields(self) -> Iterator[Field]:
        return iter(())


VOID: Final = Void()


# (size, signed) -> how an integer of that kind is written: one struct for every declaration of its kind
_INT_PACKS: Final[dict[tuple[int, bool], Callable[[int], bytes]]] = {
    (4, False): _struct.Struct(">I").pack, (4, True): _struct.Struct(">i").pack,
    (8, False): _struct.Struct(">Q").pack, (8, True): _struct.Struct(">q").pack}


@mypyc_attr(allow_interpreted_subclasses=True)      # nfs3.AccessMask
class Int(XdrType):
    """``[unsigned] int`` (32 bits) or ``[unsigned] hyper`` (64 bits); an ``enum`` is one with value names
    (its field's ``names``).  ``also``: further fields showing the same value (tshark shows an NFSv3
    status as both ``nfs.status3`` and ``nfs.status``); ``flags``: (field, mask) pairs, each shown as a
    boolean of the value's bits (a field displayed "bool") or as the value of the bits under the mask."""

    __slots__ = ("field", "bits", "signed", "also", "flags", "_pack", "_plain", "_flag_plan")

    def __init__(self, f: Field | None, bits: int = 32, signed: bool = False, also: Sequence[Field] = (),
                 flags: Sequence[tuple[Field, int]] = ()) -> None:
        if bits not in (32, 64):
            raise ValueError(f"XDR integers are 32 or 64 bits, not {bits}")
        super().__init__(bits // 8, bits // 8)
        self.field = f
        self.bits = bits
        self.signed = signed
        self.also = tuple(also)
        self.flags = tuple(flags)
        # each flag's field, mask, the shift down of its bits, and whether it shows as a boolean
        self._flag_plan: tuple[tuple[Field, int, int, bool], ...] = tuple(
            (flag, mask, (mask & -mask).bit_length() - 1, flag.display == "bool") for flag, mask in flags)
        # nearly every integer is one word or hyper shown as one field: read in words and added with no
        # detour (a subclass shows its own way: never)
        self._plain = f if type(self) is Int and not also and not flags else None
        self._pack = _INT_PACKS[(bits // 8, signed)]

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        p = cur.pos
        n = self.size
        if cur.end - p < n:
            raise XdrError(self.what, cur.end - p, n)
        cur.pos = p + n
        buf = cur.buf
        plain = self._plain
        if plain is not None:
            v = u32(buf, p)                 # the (high) word: machine integers, no struct or tuple
            if self.signed and v > 0x7FFF_FFFF:
                v -= 0x1_0000_0000
            if n == 8:
                v = (v << 32) + u32(buf, p + 4)
            if lay is not None:
                items = lay._items
                if items is not None:       # nothing left to fill first: Layer.add's append, with no call
                    items.append((plain, v, p, n))
                else:
                    lay.add(plain, v, p, n)
            return v
        if n == 4:
            v = _I32.unpack_from(buf, p)[0] if self.signed else u32(buf, p)
        else:
            v = (_I64 if self.signed else _U64).unpack_from(buf, p)[0]
        if lay is not None:
            self.show(lay, v, p)
        return v

    def skip(self, cur: Cursor, w: Walk) -> None:
        cur.skip(self.size, self.what)

    def show(self, lay: Layer, v: int, p: int) -> None:
        n = self.size
        f = self.field
        if f is not None:
            lay.add(f, v, p, n)
        for a in self.also:
            lay.add(a, v, p, n)
        items = lay._items              # once the layer has its list, each flag is appended with no call
        for flag, mask, shift, as_bool in self._flag_plan:
            # a boolean of the bits, or a field of several bits: its value, shifted down
            bits: int | bool = bool(v & mask) if as_bool else (v & mask) >> shift
            if items is None:
                lay.add(flag, bits, p, n)
                items = lay._items
            else:
                items.append((flag, bits, p, n))

    @property
    def what(self) -> str:
        return self.field.name if self.field is not None else f"{'' if self.signed else 'u'}int{self.bits}"

    def write(self, value: Any, out: Out) -> None:
        out.parts.append(self._pack(value))

    def fields(self) -> Iterator[Field]:
        if self.field is not None:
            yield self.field
        yield from self.also
        for flag, _m in self.flags:
            yield flag


class Bool(XdrType):
    """``bool``: 0 (FALSE) or 1 (TRUE); any other word is invalid."""

    __slots__ = ("field",)

    def __init__(self, f: Field | None) -> None:
        super().__init__(4, 4)
        self.field = f

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        p = cur.pos
        name = self.field.name if self.field is not None else "bool"
        v = cur.u32(name)
        if v > 1:
            raise XdrInvalid(f"{name}: boolean {v} is not 0 or 1")
        if lay is not None and self.field is not None:
            lay.add(self.field, v == 1, p, 4)
        return v == 1

    def write(self, value: Any, out: Out) -> None:
        out.parts.append(_TRUE if value else _FALSE)

    def fields(self) -> Iterator[Field]:
        if self.field is not None:
            yield self.field


# A field computed from an item's bytes; the function's None: nothing to show for these bytes
Derived = tuple[Field, Callable[[bytes], Any]]


@mypyc_attr(allow_interpreted_subclasses=True)      # nfs3.FileHandle
class Opaque(XdrType):
    """``opaque x[n]`` (``fixed``), ``opaque x<bound>`` or ``string x<bound>`` (``text``: the value is the
    UTF-8 text, undecodable bytes replaced).  ``length``: the field showing a variable item's length
    word; ``derived``: fields computed from the bytes (``nfs.fh.hash``, the handle's CRC-32)."""

    __slots__ = ("field", "fixed", "bound", "length", "text", "derived")

    def __init__(self, f: Field | None, fixed: int | None = None, bound: int | None = None,
                 length: Field | None = None, text: bool = False, derived: Sequence[Derived] = ()) -> None:
        if fixed is not None:
            super().__init__((fixed + 3) & ~3, (fixed + 3) & ~3)
        else:
            super().__init__(-1, 4)
        self.field = f
        self.fixed = fixed
        self.bound = bound
        self.length = length
        self.text = text
        self.derived = tuple(derived)

    @property
    def what(self) -> str:
        return self.field.name if self.field is not None else "string" if self.text else "opaque"

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        n = self.fixed
        if n is None:
            q = cur.pos
            n = cur.u32(self.what)
            bound = self.bound
            if bound is not None and n > bound:
                raise XdrInvalid(f"{self.what}: length {n} over its bound {bound}")
            if lay is not None and self.length is not None:
                lay.add(self.length, n, q, 4)
        p = cur.need((n + 3) & ~3, self.what)
        cur.pos = p + ((n + 3) & ~3)
        raw = bytes_at(cur.buf, p, p + n)
        v: Any = raw.decode("utf-8", "replace") if self.text else raw
        if lay is not None:
            for f, compute in self.derived:
                d = compute(raw)
                if d is not None:
                    lay.add(f, d, p, n)
            if self.field is not None:
                lay.add(self.field, v, p, n)
        return v

    def skip(self, cur: Cursor, w: Walk) -> None:
        n = self.fixed
        if n is None:
            n = cur.u32(self.what)
            if self.bound is not None and n > self.bound:
                raise XdrInvalid(f"{self.what}: length {n} over its bound {self.bound}")
        cur.skip((n + 3) & ~3, self.what)

    def write(self, value: Any, out: Out) -> None:
        raw = value.encode() if isinstance(value, str) else bytes(value)
        n = len(raw)
        if self.fixed is not None:
            if n != self.fixed:
                raise ValueError(f"{self.what}: {n} bytes, not {self.fixed}")
        else:
            if self.bound is not None and n > self.bound:
                raise ValueError(f"{self.what}: {n} bytes over its bound {self.bound}")
            out.parts.append(_struct.pack(">I", n))
        out.parts.append(raw + b"\0" * (-n % 4))

    def fields(self) -> Iterator[Field]:
        if self.length is not None:
            yield self.length
        for f, _c in self.derived:
            yield f
        if self.field is not None:
            yield self.field


class Ddp(XdrType):
    """A DDP-eligible ``opaque<>`` or ``string<>`` (RFC 8267): over RPC-over-RDMA its bytes may have been
    reduced out of the message into a chunk, its length word staying.  The walk (``Walk.ddp``) says
    which; the value is the bytes (or text) when inline, None when reduced."""

    __slots__ = ("kind", "field", "length", "text", "bound")

    def __init__(self, kind: str, f: Field | None, length: Field | None = None, text: bool = False,
                 bound: int | None = None) -> None:
        super().__init__(-1, 4)
        self.kind = kind
        self.field = f
        self.length = length
        self.text = text
        self.bound = bound

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        p, n, inline = w.ddp(cur, self.kind, lay)
        if self.bound is not None and n > self.bound:
            raise XdrInvalid(f"{self.kind}: length {n} over its bound {self.bound}")
        if lay is not None and self.length is not None:
            lay.add(self.length, n, p - 4, 4)
        if not inline:
            return None
        raw = bytes_at(cur.buf, p, p + n)
        v: Any = raw.decode("utf-8", "replace") if self.text else raw
        if lay is not None and self.field is not None:
            lay.add(self.field, v, p, n)
        return v

    def skip(self, cur: Cursor, w: Walk) -> None:
        # as ``read`` with no layer, without copying the bytes out (a WRITE's data, inline)
        _p, n, _inline = w.ddp(cur, self.kind, None)
        if self.bound is not None and n > self.bound:
            raise XdrInvalid(f"{self.kind}: length {n} over its bound {self.bound}")

    def write(self, value: Any, out: Out) -> None:
        raw = value.encode() if isinstance(value, str) else bytes(value)
        out.parts.append(_struct.pack(">I", len(raw)))
        if not out.reduce:
            out.parts.append(raw + b"\0" * (-len(raw) % 4))

    def fields(self) -> Iterator[Field]:
        if self.length is not None:
            yield self.length
        if self.field is not None:
            yield self.field


Member = tuple[str, XdrType]


class Struct(XdrType):
    """``struct { ... }``: members in order; the value is a dict by member name.  ``derived``: fields
    computed from the whole struct's bytes (tshark's ``nfs.stateid`` and its hash over a stateid4)."""

    __slots__ = ("name", "members", "derived")

    def __init__(self, name: str, members: Sequence[Member], derived: Sequence[Derived] = ()) -> None:
        sizes = [t.size for _k, t in members]
        super().__init__(sum(sizes) if all(s >= 0 for s in sizes) else -1, sum(t.min_size for _k, t in members))
        self.name = name
        self.members = tuple(members)
        self.derived = tuple(derived)
        if name:
            DECLARED.setdefault(name, self)

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        out: dict[str, Any] = {}
        p = cur.pos
        for key, t in self.members:
            out[key] = t.read(cur, w, lay)
        if lay is not None and self.derived:
            raw = bytes_at(cur.buf, p, cur.pos)
            for f, compute in self.derived:
                d = compute(raw)
                if d is not None:
                    lay.add(f, d, p, cur.pos - p)
        return out

    def skip(self, cur: Cursor, w: Walk) -> None:
        if self.size >= 0:
            cur.skip(self.size, self.name)
            return
        for _k, t in self.members:
            t.skip(cur, w)

    def pick(self, cur: Cursor, w: Walk, keys: frozenset[str]) -> Any:
        if self.size >= 0:
            cur.need(self.size, self.name)        # short: what skip says
        out: dict[str, Any] = {}
        for key, t in self.members:
            if key in keys:
                out[key] = t.pick(cur, w, keys)
            else:
                t.skip(cur, w)
        return out

    def write(self, value: Any, out: Out) -> None:
        for key, t in self.members:
            if key not in value:
                raise ValueError(f"{self.name}: no value for {key!r}")
            t.write(value[key], out)

    def fields(self) -> Iterator[Field]:
        for _k, t in self.members:
            yield from t.fields()
        for f, _c in self.derived:
            yield f


NO_DEFAULT: Final = object()


class Union(XdrType):
    """``union switch (disc) { case v: arm; ... default: arm; }``: the arm by the discriminant's value (None
    for a void arm); a value with no case and no default arm is invalid.  The value is (discriminant,
    arm value)."""

    __slots__ = ("name", "disc", "arms", "default")

    def __init__(self, name: str, disc: Int | Bool, arms: Mapping[int, XdrType | None],
                 default: Any = NO_DEFAULT) -> None:
        super().__init__(-1, disc.size)
        self.name = name
        self.disc = disc
        self.arms: dict[int, XdrType] = {k: (VOID if t is None else t) for k, t in arms.items()}
        self.default: XdrType | None = None if default is NO_DEFAULT else (VOID if default is None else default)
        if name:
            DECLARED.setdefault(name, self)

    def arm(self, d: int) -> XdrType:
        t = self.arms.get(d)
        if t is None:
            t = self.default
            if t is None:
                raise XdrInvalid(f"{self.name or 'union'}: no arm for discriminant {d}")
        return t

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        d = int(self.disc.read(cur, w, lay))
        return d, self.arm(d).read(cur, w, lay)

    def skip(self, cur: Cursor, w: Walk) -> None:
        self.arm(int(self.disc.read(cur, w, None))).skip(cur, w)

    def pick(self, cur: Cursor, w: Walk, keys: frozenset[str]) -> Any:
        d = int(self.disc.read(cur, w, None))
        return d, self.arm(d).pick(cur, w, keys)

    def write(self, value: Any, out: Out) -> None:
        d, v = value
        arm = self.arm(int(d))
        self.disc.write(d, out)
        arm.write(v, out)

    def fields(self) -> Iterator[Field]:
        yield from self.disc.fields()
        seen: set[int] = set()
        for t in [*self.arms.values(), *([self.default] if self.default is not None else [])]:
            if id(t) not in seen:
                seen.add(id(t))
                yield from t.fields()


class Optional(XdrType):
    """``type *x``: a boolean (shown as ``follows``), then the item when TRUE; the value is None or the item's."""

    __slots__ = ("item", "follows")

    def __init__(self, item: XdrType, follows: Field | None = None) -> None:
        super().__init__(-1, 4)
        self.item = item
        self.follows = follows

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        p = cur.pos
        follows = self._follows(cur)
        if lay is not None and self.follows is not None:
            lay.add(self.follows, int(follows), p, 4)
        return self.item.read(cur, w, lay) if follows else None

    def skip(self, cur: Cursor, w: Walk) -> None:
        if self._follows(cur):
            self.item.skip(cur, w)

    def pick(self, cur: Cursor, w: Walk, keys: frozenset[str]) -> Any:
        return self.item.pick(cur, w, keys) if self._follows(cur) else None

    def _follows(self, cur: Cursor) -> bool:
        name = self.follows.name if self.follows is not None else "optional"
        v = cur.u32(name)
        if v > 1:
            raise XdrInvalid(f"{name}: discriminant {v} is not 0 or 1")
        return v == 1

    def write(self, value: Any, out: Out) -> None:
        if value is None:
            out.parts.append(_FALSE)
        else:
            out.parts.append(_TRUE)
            self.item.write(value, out)

    def fields(self) -> Iterator[Field]:
        if self.follows is not None:
            yield self.follows
        yield from self.item.fields()


class Array(XdrType):
    """``type x<bound>`` (a count word, shown as ``count``, then the items) or ``type x[fixed]``.  The count
    is a claim: checked against its bound and against the bytes its items need before any is read."""

    __slots__ = ("item", "fixed", "bound", "count")

    def __init__(self, item: XdrType, fixed: int | None = None, bound: int | None = None,
                 count: Field | None = None) -> None:
        if fixed is not None:
            super().__init__(item.size * fixed if item.size >= 0 else -1, item.min_size * fixed)
        else:
            super().__init__(-1, 4)
        self.item = item
        self.fixed = fixed
        self.bound = bound
        self.count = count

    @property
    def what(self) -> str:
        return self.count.name if self.count is not None else "array"

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        n = self.fixed
        if n is None:
            p = cur.pos
            n = cur.u32(self.what)
            if self.bound is not None and n > self.bound:
                raise XdrInvalid(f"{self.what}: count {n} over its bound {self.bound}")
            if lay is not None and self.count is not None:
                lay.add(self.count, n, p, 4)
        need = n * max(self.item.min_size, 1)
        if need > cur.end - cur.pos:
            raise XdrError(self.what, cur.end - cur.pos, need)
        item = self.item
        return [item.read(cur, w, lay) for _ in range(n)]

    def skip(self, cur: Cursor, w: Walk) -> None:
        n = self.fixed
        if n is None:
            n = cur.u32(self.what)
            if self.bound is not None and n > self.bound:
                raise XdrInvalid(f"{self.what}: count {n} over its bound {self.bound}")
        item = self.item
        if item.size >= 0:
            cur.skip(n * item.size, self.what)
            return
        need = n * max(item.min_size, 1)
        if need > cur.end - cur.pos:
            raise XdrError(self.what, cur.end - cur.pos, need)
        for _ in range(n):
            item.skip(cur, w)

    def pick(self, cur: Cursor, w: Walk, keys: frozenset[str]) -> Any:
        n = self.fixed
        if n is None:
            n = cur.u32(self.what)
            if self.bound is not None and n > self.bound:
                raise XdrInvalid(f"{self.what}: count {n} over its bound {self.bound}")
        need = n * max(self.item.min_size, 1)
        if need > cur.end - cur.pos:
            raise XdrError(self.what, cur.end - cur.pos, need)
        item = self.item
        return [item.pick(cur, w, keys) for _ in range(n)]

    def write(self, value: Any, out: Out) -> None:
        n = len(value)
        if self.fixed is not None:
            if n != self.fixed:
                raise ValueError(f"{self.what}: {n} items, not {self.fixed}")
        else:
            if self.bound is not None and n > self.bound:
                raise ValueError(f"{self.what}: {n} items over its bound {self.bound}")
            out.parts.append(_struct.pack(">I", n))
        for v in value:
            self.item.write(v, out)

    def fields(self) -> Iterator[Field]:
        if self.count is not None:
            yield self.count
        yield from self.item.fields()


class Chain(XdrType):
    """A linked list as XDR writes one (``struct entry { ...; entry *next; }`` from an ``entry *first``):
    each item after a TRUE (shown as ``follows``), ended by FALSE.  Bounded by the bytes: every item
    takes at least its discriminator."""

    __slots__ = ("item", "follows")

    def __init__(self, item: XdrType, follows: Field | None = None) -> None:
        super().__init__(-1, 4)
        self.item = item
        self.follows = follows

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        out: list[Any] = []
        name = self.follows.name if self.follows is not None else "value_follows"
        item = self.item
        while True:
            p = cur.pos
            v = cur.u32(name)
            if v > 1:
                raise XdrInvalid(f"{name}: discriminant {v} is not 0 or 1")
            if lay is not None and self.follows is not None:
                lay.add(self.follows, v, p, 4)
            if not v:
                return out
            out.append(item.read(cur, w, lay))

    def skip(self, cur: Cursor, w: Walk) -> None:
        name = self.follows.name if self.follows is not None else "value_follows"
        while True:
            v = cur.u32(name)
            if v > 1:
                raise XdrInvalid(f"{name}: discriminant {v} is not 0 or 1")
            if not v:
                return
            self.item.skip(cur, w)

    def pick(self, cur: Cursor, w: Walk, keys: frozenset[str]) -> Any:
        out: list[Any] = []
        name = self.follows.name if self.follows is not None else "value_follows"
        item = self.item
        while True:
            v = cur.u32(name)
            if v > 1:
                raise XdrInvalid(f"{name}: discriminant {v} is not 0 or 1")
            if not v:
                return out
            out.append(item.pick(cur, w, keys))

    def write(self, value: Any, out: Out) -> None:
        for v in value:
            out.parts.append(_TRUE)
            self.item.write(v, out)
        out.parts.append(_FALSE)

    def fields(self) -> Iterator[Field]:
        if self.follows is not None:
            yield self.follows
        yield from self.item.fields()


class Tree(XdrType):
    """A type shown as a sub-tree of its own (``proto``, declared with ``label``): in ``-V`` a node, in
    filters a name whose presence can be tested."""

    __slots__ = ("item", "proto", "label")

    def __init__(self, item: XdrType, proto: str, label: str) -> None:
        super().__init__(item.size, item.min_size)
        self.item = item
        self.proto = protocol(proto, label)
        self.label = label

    def read(self, cur: Cursor, w: Walk, lay: Layer | None) -> Any:
        if lay is None:
            return self.item.read(cur, w, None)
        p = cur.pos
        sub = lay.child(self.proto, None, p, 0, self.label)
        try:
            return self.item.read(cur, w, sub)
        finally:
            sub.length = cur.pos - p

    def skip(self, cur: Cursor, w: Walk) -> None:
        self.item.skip(cur, w)

    def pick(self, cur: Cursor, w: Walk, keys: frozenset[str]) -> Any:
        return self.item.pick(cur, w, keys)

    def write(self, value: Any, out: Out) -> None:
        self.item.write(value, out)

    def fields(self) -> Iterator[Field]:
        return self.item.fields()


# --- declaring: short constructors ------------------------------------------------------------------
def uint32(name: str | None, label: str = "", display: str = "dec", names: Mapping[int, str] | None = None,
           also: Sequence[str | Field] = (), flags: Sequence[tuple[Any, ...]] = ()) -> Int:
    """``unsigned int`` shown as field ``name`` (None: read, not shown); ``flags``: (name, label, mask) for
    a boolean of the value's bits, (name, label, mask, display) for the value of several bits."""
    return Int(_field_of(name, label, display, names), 32, False, _fields(also),
               [(field(f[0], f[1], f[3] if len(f) > 3 else "bool"), f[2]) for f in flags])


def int32(name: str | None, label: str = "", display: str = "dec") -> Int:
    return Int(_field_of(name, label, display), 32, True)


def uint64(name: str | None, label: str = "", display: str = "dec") -> Int:
    return Int(_field_of(name, label, display), 64, False)


def int64(name: str | None, label: str = "", display: str = "dec") -> Int:
    return Int(_field_of(name, label, display), 64, True)


def enum(name: str | None, label: str, names: Mapping[int, str], also: Sequence[str | Field] = ()) -> Int:
    """An ``enum``: a 32-bit value shown by name (values without a name are shown as numbers)."""
    return Int(_field_of(name, label, "dec", names), 32, False, _fields(also))


def boolean(name: str | None, label: str = "") -> Bool:
    return Bool(_field_of(name, label, "bool"))


def opaque(name: str | None, label: str = "", fixed: int | None = None, bound: int | None = None,
           length: str | None = None, derived: Sequence[Derived] = ()) -> Opaque:
    return Opaque(_field_of(name, label, "bytes"), fixed, bound, _field_of(length, "length"), False, derived)


def string(name: str | None, label: str = "", bound: int | None = None, length: str | None = None) -> Opaque:
    return Opaque(_field_of(name, label, "str"), None, bound, _field_of(length, "length"), True)


def ddp(kind: str, name: str | None, label: str = "", length: str | None = None, text: bool = False,
        bound: int | None = None) -> Ddp:
    return Ddp(kind, _field_of(name, label, "str" if text else "bytes"), _field_of(length, "length"), text, bound)


def struct(name: str, *members: Member, derived: Sequence[Derived] = ()) -> Struct:
    return Struct(name, members, derived)


def union(name: str, disc: Int | Bool, arms: Mapping[int, XdrType | None], default: Any = NO_DEFAULT) -> Union:
    return Union(name, disc, arms, default)


def optional(item: XdrType, follows: str | None = None, label: str = "") -> Optional:
    return Optional(item, _field_of(follows, label))


def array(item: XdrType, bound: int | None = None, count: str | None = None, label: str = "") -> Array:
    return Array(item, None, bound, _field_of(count, label))


def fixed_array(item: XdrType, n: int) -> Array:
    return Array(item, n)


def chain(item: XdrType, follows: str | None = None, label: str = "") -> Chain:
    return Chain(item, _field_of(follows, label))


def tree(item: XdrType, proto: str, label: str) -> Tree:
    return Tree(item, proto, label)


def _fields(names: Sequence[str | Field]) -> list[Field]:
    return [n if isinstance(n, Field) else field(n) for n in names]


# --- using a declaration ----------------------------------------------------------------------------
def decode(t: XdrType, buf: bytes, off: int = 0, end: int | None = None, w: Walk = PLAIN,
           lay: Layer | None = None) -> tuple[Any, int]:
    """The value of ``t`` at ``buf[off:end]`` and where it ends; XdrError for short or invalid input."""
    cur = Cursor(buf, off, len(buf) if end is None else end)
    v = t.read(cur, w, lay)
    return v, cur.pos


def skip(t: XdrType, buf: bytes, off: int = 0, end: int | None = None, w: Walk = PLAIN) -> int:
    """Where the value of ``t`` at ``buf[off:end]`` ends, nothing built; XdrError for short or invalid input."""
    cur = Cursor(buf, off, len(buf) if end is None else end)
    t.skip(cur, w)
    return cur.pos


def encode(t: XdrType, value: Any, reduce: bool = False) -> bytes:
    """The bytes of ``value`` as ``t``; ``reduce``: DDP-eligible data left out (sent in a chunk)."""
    out = Out(reduce)
    t.write(value, out)
    return b"".join(out.parts)
