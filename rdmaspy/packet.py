"""What a dissection produces: frames in, packets of layers out.

A ``Layer`` is one header (or one sub-structure, such as a chunk segment) found in
a packet.  Fixed-layout headers keep only their ``Header`` and an offset; their
values are unpacked on first use, so a summary line touches only what it needs.
Variable parts (lists, computed values such as ``icrc.valid``) are ``items``:
(field, value, offset, length) tuples, with fields declared at module level by
the dissector that produces them.
"""
from __future__ import annotations

from .fields import Field, Header
from .records import record_eq, record_repr
from .rules import Rule
from .typenames import Any, Callable, ClassVar, Final, Generic, TypeVar, cast, mypyc_attr

T = TypeVar("T")


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Frame:
    """One captured record, as a reader yields it."""

    __slots__ = ("num", "ts", "linktype", "data", "wirelen", "iface", "comment", "offset")

    def __init__(self, num: int, ts: int, linktype: int, data: bytes, wirelen: int,
                 iface: int = 0, comment: str | None = None, offset: int = 0) -> None:
        self.num = num            # 1-based frame number
        self.ts = ts              # nanoseconds since the epoch
        self.linktype = linktype  # pcap LINKTYPE_* value
        self.data = data
        self.wirelen = wirelen    # original length on the wire
        self.iface = iface        # pcapng interface index
        self.comment = comment    # pcapng packet comment(s)
        self.offset = offset      # byte offset of the record in the file

    def __repr__(self) -> str:
        return f"<Frame {self.num} lt={self.linktype} {len(self.data)}B>"


# An item of a layer's variable part: the field, its value, where it stands in the layer's buffer.
Item = tuple  # (Field, value, offset, length)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Layer:
    """One protocol layer or sub-tree of a packet.

    A layer is made for every header of every packet, so it holds little: the variable part
    (``items``) and the children are None until used, and ``_fill`` (a function of the layer) can
    supply the items on first use, so a summary line never pays for them.  For a layer without a
    header, ``_vals`` may hold values computed during dissection for its fill to spell out.
    """

    __slots__ = ("proto", "header", "buf", "off", "length", "_vals", "_items", "_children", "_label", "_fill")

    def __init__(self, proto: str, header: Header | None, buf: bytes, off: int, length: int = 0) -> None:
        self.proto = proto
        self.header = header
        self.buf = buf
        self.off = off
        self.length = length or (header.size if header is not None else 0)
        self._vals: Any = None        # a tuple: header values, or what a fill spells out
        self._items: list[Item] | None = None
        self._children: list[Layer] | None = None
        self._fill: Callable[[Layer], None] | None = None
        self._label: str | None = None   # None: the header's label (an unset attribute would cost an exception)

    # -- values -------------------------------------------------------------------------------
    @property
    def values(self) -> tuple:
        v = self._vals
        if v is None:
            hdr = self.header
            v = self._vals = hdr.decode(self.buf, self.off) if hdr is not None else ()
        return v

    @property
    def label(self) -> str:
        label = self._label
        if label is not None:
            return label
        return self.header.label if self.header is not None else self.proto

    @label.setter
    def label(self, text: str) -> None:
        self._label = text

    @property
    def items(self) -> list[Item] | None:
        items = self._items
        if items is None:
            fill = self._fill
            if fill is None:
                return None
            self._fill = None
            items = self._items = []
            fill(self)
        return items

    @property
    def children(self) -> list["Layer"] | None:
        return self._children

    def lazy(self, fill: Callable[["Layer"], None]) -> "Layer":
        """Let ``fill(layer)`` add the variable items when somebody first asks for them."""
        self._fill = fill
        return self

    def __getitem__(self, name: str) -> Any:
        hdr = self.header
        if hdr is not None:
            i = hdr.index.get(name)
            if i is not None:
                return self.values[i]
        items = self.items
        if items:
            for f, v, _o, _l in items:
                if f.name == name or f.name.rsplit(".", 1)[-1] == name:
                    return v
        raise KeyError(name)

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default

    # -- building the variable part -------------------------------------------------------------
    def add(self, field: Field, value: Any, off: int = -1, length: int = 0) -> None:
        """Append a variable item; ``off`` is absolute in ``self.buf`` (-1: not in the bytes)."""
        items = self._items
        if items is None:
            if self._fill is not None:
                items = self.items      # runs the pending fill first, so items keep their order
            if items is None:
                items = self._items = []
        items.append((field, value, off, length))

    def child(self, proto: str, header: Header | None, off: int, length: int = 0,
              label: str | None = None, buf: bytes | None = None) -> "Layer":
        lay = Layer(proto, header, self.buf if buf is None else buf, off, length)
        if label is not None:
            lay._label = label
        children = self._children
        if children is None:
            self._children = [lay]
        else:
            children.append(lay)
        return lay

    def adopt(self, lay: "Layer") -> None:
        """Make a layer made elsewhere one of this layer's children (an ICMP error's quoted packet)."""
        children = self._children
        if children is None:
            self._children = [lay]
        else:
            children.append(lay)

    def __repr__(self) -> str:
        return f"<Layer {self.proto} @{self.off}+{self.length}>"


def add_parts(lay: Layer) -> None:
    """The named bits of the words of ``lay``'s header (``Header.parts``), as its items, each over its
    word's bytes: a layer's fill (``Layer.lazy``), so that a summary never decodes them."""
    hdr = lay.header
    if hdr is None:
        return
    buf = lay.buf
    base = lay.off
    for _i, at, bits in hdr.parts:
        off = base + at
        if off + bits.size > len(buf):
            continue
        for f, v in zip(bits.fields, bits.decode(buf, off)):
            lay.add(f, v, off, bits.size)


# Its ``__init__`` spelled out: mypyc 2.4 runs the standard ``@dataclass`` decorator on a compiled class at
# import (some 3 M instructions) and leaves it that decorator's ``__init__``, a Python function.
class Expert:
    """A finding attached to a packet by a dissector (analysis adds its own later).  Equal by its values."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("severity", "group", "text", "source", "rule")
    __slots__ = _FIELDS

    def __init__(self, severity: str, group: str, text: str, source: str = "", rule: str = "") -> None:
        self.severity = severity    # "error" | "warning" | "note" | "chat"
        self.group = group          # "malformed" | "checksum" | "protocol" | "sequence" | ...
        self.text = text
        self.source = source        # the specification it cites, e.g. "RFC 8166 §4.2"
        self.rule = rule            # the id of a declared rule, when the item stands for one

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)

    def __eq__(self, other: object) -> bool:
        return record_eq(self, other, self._FIELDS)


class Note(Generic[T]):
    """The key of one kind of fact a dissector leaves on a packet for the layers above it and for
    the analysis (``Packet.note`` / ``Packet.noted``): declared once, by the module that produces
    the fact, with the type of its value.  ``NOTES`` lists them all by name."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        if name in NOTES:
            raise ValueError(f"packet note {name!r} is declared twice")
        NOTES[name] = self
        self.name = name

    def __repr__(self) -> str:
        return f"<Note {self.name}>"


NOTES: dict[str, Note[Any]] = {}


# The Info of a packet no dissector has written to: one list for all of them (add_info and set_info give a
# packet its own), not a list made and freed a packet.
_NO_INFO: Final[list[str]] = []
# The layers of a packet that has none made yet (the fast paths leave their fixed headers unmade): one list
# for all of them, never changed (whatever adds a layer or reads the list gives a packet its own).
_NO_LAYERS: Final[list[Layer]] = []


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Packet:
    """A frame and everything the dissectors found in it."""

    __slots__ = ("frame", "_layers", "_lazy", "src", "dst", "proto", "info", "malformed", "expert", "conv", "extra",
                 "ib", "fields_wanted")

    def __init__(self, frame: Frame) -> None:
        self.frame = frame
        self._layers: list[Layer] = _NO_LAYERS
        # Makes the layers a dissector left unmade (fixed headers it describes by offsets: most packets
        # are only summarised, and a summary line reads none of them); run once, by the first reader of
        # ``layers``, it puts them in their places among the others.
        self._lazy: Callable[[Packet], None] | None = None
        self.src = ""
        self.dst = ""
        self.proto = ""
        self.info: list[str] = _NO_INFO     # shared and never changed: a packet's own list comes with its first text
        self.malformed: str | None = None
        self.expert: list[Any] | None = None      # Expert items of dissectors, and Findings of the analysis
        self.conv: Any = None     # the connection this packet belongs to (set by the CM/IB dissectors)
        self.extra: dict[str, object] | None = None   # facts for upper layers and analysis, by Note name
        self.ib: Any = None       # InfiniBand transport facts (dissectors.infiniband.IBInfo)
        # whether the analysis adds its fields to it: not in a process that leaves it to another to print
        # (rdmaspy.output.turns), as its findings are made all the same
        self.fields_wanted = True

    @property
    def layers(self) -> list[Layer]:
        """Every layer of the packet, in order."""
        if self._lazy is not None:
            self._make_deferred()
        return self._own_layers()

    def _own_layers(self) -> list[Layer]:
        layers = self._layers
        if layers is _NO_LAYERS:
            layers = self._layers = []
        return layers

    def _make_deferred(self) -> None:
        lazy = self._lazy
        if lazy is not None:
            self._lazy = None
            lazy(self)

    # -- used by dissectors ----------------------------------------------------------------------
    def add_layer(self, proto: str, header: Header | None, buf: bytes, off: int,
                  length: int = 0, label: str | None = None) -> Layer:
        lay = Layer(proto, header, buf, off, length)
        if label is not None:
            lay._label = label
        self._own_layers().append(lay)
        return lay

    def push(self, lay: Layer) -> None:
        """Append a layer made by the caller (leaving the unmade ones unmade, unlike ``layers.append``)."""
        self._own_layers().append(lay)

    def made_layers(self) -> list[Layer]:
        """The layers made so far, without making the others: for a dissector looking for a layer that an
        upper protocol added (never one of the fixed headers a dissector leaves unmade)."""
        return self._own_layers()

    def made_count(self) -> int:
        """How many layers are made so far (``len(made_layers())`` without a list of its own)."""
        return len(self._layers)

    def defer(self, make: Callable[[Packet], None]) -> None:
        """Leave layers to ``make(packet)``, run when ``layers`` is first read.  One maker at a time: a
        second one has the first's layers made first, so a maker may note where its layers go, by the
        length of ``made_layers()``, once it has called this."""
        self._make_deferred()
        self._lazy = make

    def set_malformed(self, reason: str) -> None:
        """Mark the packet malformed; the first reason wins, later ones are kept as expert items."""
        if self.malformed is None:
            self.malformed = reason
        self.add_expert("error", "malformed", reason)

    def truncated(self, what: str, have: int, need: int) -> None:
        self.set_malformed(f"{what}: truncated ({max(have, 0)} of {need} bytes)")

    def add_expert(self, severity: str, group: str, text: str, source: str = "", rule: str = "") -> None:
        if self.expert is None:
            self.expert = []
        self.expert.append(Expert(severity, group, text, source, rule))

    def add_finding(self, rule: Rule, **args: object) -> None:
        """A breach of a declared rule, seen in this packet alone."""
        if self.expert is None:
            self.expert = []
        self.expert.append(Expert(rule.severity.value, rule.group, rule.text(args), rule.source, rule.id))

    def set_info(self, text: str) -> None:
        self.info = [text]

    def clear_info(self) -> None:
        """No Info text (yet): the shared empty list, which add_info and set_info replace."""
        self.info = _NO_INFO

    def add_info(self, text: str) -> None:
        info = self.info
        if info is _NO_INFO:
            self.info = [text]
        else:
            info.append(text)

    def note(self, key: Note[T], value: T) -> None:
        extra = self.extra
        if extra is None:
            self.extra = {key.name: value}
        else:
            extra[key.name] = value

    def noted(self, key: Note[T]) -> T | None:
        """The fact noted under ``key``, if any."""
        extra = self.extra
        if extra is None:
            return None
        return cast("T | None", extra.get(key.name))

    def forget(self, key: Note[T]) -> None:
        extra = self.extra
        if extra is not None:
            extra.pop(key.name, None)

    # -- used by outputs and filters -------------------------------------------------------------
    def layer(self, proto: str) -> Layer | None:
        for lay in self.layers:
            if lay.proto == proto:
                return lay
        return None

    def has(self, proto: str) -> bool:
        return any(lay.proto == proto for lay in self.layers)

    @property
    def info_text(self) -> str:
        text = " ".join(self.info)
        if self.malformed:
            text = f"{text} [Malformed: {self.malformed}]" if text else f"[Malformed: {self.malformed}]"
        return text

    def __repr__(self) -> str:
        return f"<Packet {self.frame.num} {self.proto} {' '.join(self.info)!r}>"
