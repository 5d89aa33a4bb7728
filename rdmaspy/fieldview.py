"""The one packet visitor: every field of a dissected packet, in tree order, to whoever asks.

JSON, display filters, the verbose tree, the TUI's tree and hex pane and field lists all read a
packet through ``visit``: the frame.* and expert.* pseudo-fields (declared here, once), then each
layer, its header's fields, its variable items and its sub-trees, depth first.  A visit may be told
the names it wants; it then reads only those (and fills a layer's variable part only when a wanted
name may be in it).  What is kept of each visited node is the sink's business.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

from .fields import CATALOG, Field, Header, declaring, protocol
from .packet import Item, Layer, Packet
from .typenames import Any, Callable, Final, Iterable, Iterator, mypyc_attr

declaring(__name__)

FRAME: Final = protocol("frame", "Frame", repeats=False)
EXPERT: Final = protocol("expert", "Expert Info", repeats=True)   # one of each per finding
FRAME_NUMBER: Final = Field("frame.number", 0, "Frame Number")
FRAME_TIME: Final = Field("frame.time_epoch", 0, "Epoch Time", "float", unit="seconds")
FRAME_RELATIVE: Final = Field("frame.time_relative", 0, "Time since first frame", "float", unit="seconds")
FRAME_LEN: Final = Field("frame.len", 0, "Frame Length", unit="bytes")
FRAME_CAPLEN: Final = Field("frame.cap_len", 0, "Capture Length", unit="bytes")
FRAME_PROTOCOLS: Final = Field("frame.protocols", 0, "Protocols in frame", "str")
FRAME_COMMENT: Final = Field("frame.comment", 0, "Comment", "str")
FRAME_INTERFACE: Final = Field("frame.interface_id", 0, "Interface id")
FRAME_LINKTYPE: Final = Field("frame.linktype", 0, "Link type")
MALFORMED: Final = Field("_malformed", 0, "Malformed", "str")
EXPERT_SEVERITY: Final = Field("expert.severity", 0, "Severity", "str")
EXPERT_GROUP: Final = Field("expert.group", 0, "Group", "str")
EXPERT_MESSAGE: Final = Field("expert.message", 0, "Message", "str")
EXPERT_RULE: Final = Field("expert.rule", 0, "Rule", "str")
EXPERT_SOURCE: Final = Field("expert.source", 0, "Source (specification)", "str")


def protocols_text(pkt: Packet) -> str:
    return ":".join([lay.proto for lay in pkt.layers])


_NUMBER: Final = FRAME_NUMBER.name
_TIME: Final = FRAME_TIME.name
_RELATIVE: Final = FRAME_RELATIVE.name
_LEN: Final = FRAME_LEN.name
_CAPLEN: Final = FRAME_CAPLEN.name
_INTERFACE: Final = FRAME_INTERFACE.name
_LINKTYPE: Final = FRAME_LINKTYPE.name
_PROTOCOLS: Final = FRAME_PROTOCOLS.name
_COMMENT: Final = FRAME_COMMENT.name
FRAME_NAMES: Final = frozenset([_NUMBER, _TIME, _RELATIVE, _LEN, _CAPLEN, _INTERFACE, _LINKTYPE, _PROTOCOLS, _COMMENT])


def frame_object(pkt: Packet, t0: int) -> dict[str, Any]:
    """The frame's pseudo-fields and their values, in the order JSON shows them (``frame.comment`` only
    when there is one)."""
    f = pkt.frame
    obj: dict[str, Any] = {
        _NUMBER: f.num, _TIME: f.ts / 1e9, _RELATIVE: (f.ts - t0) / 1e9, _LEN: f.wirelen, _CAPLEN: len(f.data),
        _INTERFACE: f.iface, _LINKTYPE: f.linktype, _PROTOCOLS: protocols_text(pkt),
    }
    if f.comment:
        obj[_COMMENT] = f.comment
    return obj


# What follows the layers: the malformed reason, then per finding its severity, group, message, rule and source.
EXPERT_FIELDS: Final[tuple[tuple[Field, Callable[[Any], Any]], ...]] = (
    (EXPERT_SEVERITY, lambda e: e.severity),
    (EXPERT_GROUP, lambda e: e.group),
    (EXPERT_MESSAGE, lambda e: e.text),
    (EXPERT_RULE, lambda e: e.rule),
    (EXPERT_SOURCE, lambda e: e.source),
)


_PACKET_NAMES: Final = frozenset([MALFORMED.name] + [f.name for f, _ in EXPERT_FIELDS])


def packet_items(pkt: Packet) -> list[tuple[Field, Any]]:
    """The pseudo-fields after the layers: ``_malformed`` and expert.*, in JSON's order."""
    out: list[tuple[Field, Any]] = []
    if pkt.malformed:
        out.append((MALFORMED, pkt.malformed))
    if pkt.expert:
        for e in pkt.expert:
            for f, get in EXPERT_FIELDS:
                out.append((f, get(e)))
    return out


_PRESENCE: dict[str, Field] = {}


def presence_field(proto: str) -> Field:
    """A protocol's presence is itself a field (``reth`` alone matches packets with a RETH)."""
    f = _PRESENCE.get(proto)
    if f is None:
        f = _PRESENCE[proto] = Field(proto, 0, proto, "bool", catalogued=False)
    return f


# --- the visit --------------------------------------------------------------------------------------
# Per header: the (index, field) of the fields a visit wants.
Plan = tuple[tuple[int, Field], ...]


@mypyc_attr(allow_interpreted_subclasses=True)      # the TUI's tree (tui/detail.py)
class Sink(ABC):
    """What a visit calls, once for each layer or sub-tree, in tree order; a sink keeps what it needs.

    ``present``: the layer's presence is wanted; ``plan``: the wanted fields of its header (values in
    ``lay.values``, spans in ``lay.header.spans``); ``items``: its wanted variable items, (field, value,
    start, length) each, or None.  ``start`` is an offset in the layer's buffer (``lay.buf``: the frame's
    bytes, or a message rebuilt from several frames); -1 when the value stands in no bytes.

    A class rather than a protocol: compiled, the visit calls ``layer`` through the class's method table,
    where a protocol's method is looked up by name and its arguments boxed, once per layer and sub-tree."""

    __slots__ = ()

    @abstractmethod
    def layer(self, lay: Layer, present: bool, plan: Plan, items: list[Item] | None, depth: int) -> None:
        """One layer or sub-tree of the visit, ``depth`` levels under the packet's layers."""


# Layer keeps its variable part in slots that stay unset until used (see packet.Layer); read them
# directly when they are there (pure Python), through the public properties otherwise.
_LAZY_SLOTS: Final = {"_items", "_children", "_fill"} <= set(getattr(Layer, "__slots__", ()))


def _items_of(lay: Layer) -> list | None:
    if not _LAZY_SLOTS:
        return lay.items
    items = lay._items
    if items is None and lay._fill is not None:
        items = lay.items
    return items


_NO_PLAN: Final[Plan] = ()


class Visitor:
    """Visits packets for one set of wanted names (None: every name)."""

    __slots__ = ("wanted", "need_items", "_plans", "frame_names", "packet_fields")

    def __init__(self, wanted: Iterable[str] | None = None) -> None:
        self.wanted: frozenset[str] | None = None if wanted is None else frozenset(wanted)
        w = self.wanted
        self._plans: dict[Header, Plan] = {}
        self.frame_names = FRAME_NAMES if w is None else FRAME_NAMES & w
        self.packet_fields = w is None or not w.isdisjoint(_PACKET_NAMES)
        # A layer's variable part (possibly filled on first use) matters only for names that are not
        # fields of a Header: ``bth.opcode == 4`` never makes a layer fill in its items.  Sub-trees
        # (``nfs.op``) are made by those fills too.
        self.need_items = w is None or any(_needs_items(n) for n in w)

    def plan(self, hdr: Header) -> Plan:
        p = self._plans.get(hdr)
        if p is None:
            w = self.wanted
            p = self._plans[hdr] = tuple((i, f) for i, f in enumerate(hdr.fields) if w is None or f.name in w)
        return p

    def layers(self, pkt: Packet, sink: Sink) -> None:
        if self.wanted is None:
            for lay in pkt.layers:
                self._visit_all(lay, sink, 0)
        else:
            for lay in pkt.layers:
                self._visit_wanted(lay, sink, 0)

    def visit_layer(self, lay: Layer, sink: Sink, depth: int) -> None:
        if self.wanted is None:
            self._visit_all(lay, sink, depth)
        else:
            self._visit_wanted(lay, sink, depth)

    def _visit_all(self, lay: Layer, sink: Sink, depth: int) -> None:
        hdr = lay.header
        if _LAZY_SLOTS:
            items = lay._items
            if items is None and lay._fill is not None:
                items = lay.items
            sink.layer(lay, True, _NO_PLAN if hdr is None else hdr.every_field, items, depth)
            children = lay._children
        else:
            sink.layer(lay, True, _NO_PLAN if hdr is None else hdr.every_field, lay.items, depth)
            children = lay.children
        if children:
            for c in children:
                self._visit_all(c, sink, depth + 1)

    def _visit_wanted(self, lay: Layer, sink: Sink, depth: int) -> None:
        w = self.wanted
        assert w is not None
        hdr = lay.header
        if hdr is None:
            plan = _NO_PLAN
        else:
            got = self._plans.get(hdr)
            plan = self.plan(hdr) if got is None else got
        items: list[Item] | None = None
        if self.need_items:
            items = _items_of(lay)
            if items:
                items = [it for it in items if it[0].name in w]
        present = lay.proto in w
        if present or plan or items:
            sink.layer(lay, present, plan, items, depth)
        children = lay._children if _LAZY_SLOTS else lay.children
        if children:
            for c in children:
                self._visit_wanted(c, sink, depth + 1)


def _needs_items(name: str) -> bool:
    """Whether a name may come from a layer's variable part: a field declared outside a Header, a
    sub-tree made by a fill, or a name the catalog does not know."""
    if name in CATALOG.standalone:
        return True
    if name in CATALOG.fields:
        return False
    hdr_declared = CATALOG.declared.get(name)
    return hdr_declared is None or "." in name


class _Values(Sink):
    """name -> values in packet order."""
    __slots__ = ("out",)

    def __init__(self, out: dict[str, list]) -> None:
        self.out = out

    def layer(self, lay: Layer, present: bool, plan: Plan, items: list[Item] | None, depth: int) -> None:
        out = self.out
        if present:
            xs = out.get(lay.proto)
            if xs is None:
                out[lay.proto] = [True]
            else:
                xs.append(True)
        if plan:
            vals = lay.values
            for i, f in plan:
                xs = out.get(f.name)
                if xs is None:
                    out[f.name] = [vals[i]]
                else:
                    xs.append(vals[i])
        if items:
            for f, v, _o, _l in items:
                xs = out.get(f.name)
                if xs is None:
                    out[f.name] = [v]
                else:
                    xs.append(v)


def field_values(visitor: Visitor, pkt: Packet, t0: int) -> dict[str, list]:
    """``name -> values in packet order`` for the names the visitor wants."""
    out: dict[str, list] = {}
    w = visitor.wanted
    if visitor.frame_names:
        for name, v in frame_object(pkt, t0).items():
            if name in visitor.frame_names:
                out[name] = [v]
    if w is not None and FRAME in w:
        out[FRAME] = [True]
    visitor.layers(pkt, _Values(out))
    if visitor.packet_fields:
        for f, v in packet_items(pkt):
            if w is None or f.name in w:
                xs = out.get(f.name)
                if xs is None:
                    out[f.name] = [v]
                else:
                    xs.append(v)
    if pkt.expert and w is not None and EXPERT in w:
        out[EXPERT] = [True]
    return out


EVERY_FIELD: Final = Visitor()     # a visit of every name


def packet_fields(pkt: Packet, t0: int) -> dict[str, tuple[Field, list[Any]]]:
    """name -> (field, values in packet order), for every name of the packet."""
    values = field_values(EVERY_FIELD, pkt, t0)
    return {name: (CATALOG.fields.get(name) or presence_field(name), vals) for name, vals in values.items()}


def own_fields(lay: Layer, plan: Plan, items: list[Item] | None) -> Iterator[Item]:
    """A layer's own fields in tree order, as a sink's ``layer`` gets them: (field, value, offset in the
    layer's buffer, length), the planned ones of its header first, then its added items."""
    if plan:
        hdr = lay.header
        assert hdr is not None
        vals = lay.values
        spans = hdr.spans
        base = lay.off
        for i, f in plan:
            bo, bl, _bit = spans[i]
            yield f, vals[i], base + bo, bl
    if items:
        yield from items


# (depth, field or sub-layer, value or None, offset in the layer's buffer, length)
Node = tuple[int, "Field | Layer", Any, int, int]


class _Nodes(Sink):
    """A layer's fields and sub-trees in tree order: its own fields at depth 0, a sub-layer at the depth of
    its parent's fields and its fields one deeper."""

    __slots__ = ("out",)

    def __init__(self) -> None:
        self.out: list[Node] = []

    def layer(self, lay: Layer, present: bool, plan: Plan, items: list[Item] | None, depth: int) -> None:
        out = self.out
        if depth:
            out.append((depth - 1, lay, None, lay.off, lay.length))
        for f, v, o, ln in own_fields(lay, plan, items):
            out.append((depth, f, v, o, ln))


def layer_nodes(lay: Layer) -> list[Node]:
    """Every field and sub-tree of one layer, with where each stands in the layer's buffer."""
    nodes = _Nodes()
    EVERY_FIELD.visit_layer(lay, nodes, 0)
    return nodes.out
