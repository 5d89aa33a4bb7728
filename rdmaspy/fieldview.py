"""The one packet visitor: every field of a dissected packet, in tree order, to whoever asks.

JSON, display filters, the verbose tree, the TUI's tree and hex pane and field lists all read a
packet through ``visit``: the frame.* and expert.* pseudo-fields (declared here, once), then each
layer, its header's fields, its variable items and its sub-trees, depth first.  A visit may be told
the names it wants; it then reads only those (and fills a layer's variable part only when a wanted
name may be in it).  What is kept of each visited node is the sink's business.
"""
from __future__ import annotations

from typing import Any, Callable, Final, Iterable, Protocol

from .fields import CATALOG, Field, Header, declaring, protocol
from .packet import Layer, Packet

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


# The frame's pseudo-fields, in the order JSON shows them: (field, value of a packet; None when absent).
FRAME_FIELDS: Final[tuple[tuple[Field, Callable[[Packet, int], Any]], ...]] = (
    (FRAME_NUMBER, lambda p, t0: p.frame.num),
    (FRAME_TIME, lambda p, t0: p.frame.ts / 1e9),
    (FRAME_RELATIVE, lambda p, t0: (p.frame.ts - t0) / 1e9),
    (FRAME_LEN, lambda p, t0: p.frame.wirelen),
    (FRAME_CAPLEN, lambda p, t0: len(p.frame.data)),
    (FRAME_INTERFACE, lambda p, t0: p.frame.iface),
    (FRAME_LINKTYPE, lambda p, t0: p.frame.linktype),
    (FRAME_PROTOCOLS, lambda p, t0: protocols_text(p)),
    (FRAME_COMMENT, lambda p, t0: p.frame.comment or None),
)

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


class Sink(Protocol):
    """What a visit calls for each node; a sink keeps what it needs.  ``start`` is the node's offset in
    its layer's buffer (``lay.buf``: the frame's bytes, or a message rebuilt from several frames); -1
    when the value stands in no bytes."""

    def layer(self, lay: Layer, depth: int) -> None:
        """A layer or sub-tree begins (its presence)."""

    def header(self, lay: Layer, plan: Plan, depth: int) -> None:
        """The wanted fields of the layer's header (values in ``lay.values``, spans in ``header.spans``)."""

    def item(self, lay: Layer, field: Field, value: Any, start: int, length: int, depth: int) -> None:
        """One variable item of a layer."""


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


class Visitor:
    """Visits packets for one set of wanted names (None: every name)."""

    __slots__ = ("wanted", "need_items", "_plans", "frame_fields", "packet_fields")

    def __init__(self, wanted: Iterable[str] | None = None) -> None:
        self.wanted: frozenset[str] | None = None if wanted is None else frozenset(wanted)
        w = self.wanted
        self._plans: dict[Header, Plan] = {}
        self.frame_fields = FRAME_FIELDS if w is None else tuple(x for x in FRAME_FIELDS if x[0].name in w)
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
        for lay in pkt.layers:
            self.visit_layer(lay, sink, 0)

    def visit_layer(self, lay: Layer, sink: Sink, depth: int) -> None:
        w = self.wanted
        if w is None or lay.proto in w:
            sink.layer(lay, depth)
        hdr = lay.header
        if hdr is not None:
            plan = self.plan(hdr)
            if plan:
                sink.header(lay, plan, depth)
        if self.need_items:
            items = _items_of(lay)
            if items:
                if w is None:
                    for f, v, o, ln in items:
                        sink.item(lay, f, v, o, ln, depth)
                else:
                    for f, v, o, ln in items:
                        if f.name in w:
                            sink.item(lay, f, v, o, ln, depth)
        children = lay._children if _LAZY_SLOTS else lay.children
        if children:
            for c in children:
                self.visit_layer(c, sink, depth + 1)


def _needs_items(name: str) -> bool:
    """Whether a name may come from a layer's variable part: a field declared outside a Header, a
    sub-tree made by a fill, or a name the catalog does not know."""
    if name in CATALOG.standalone:
        return True
    if name in CATALOG.fields:
        return False
    hdr_declared = CATALOG.declared.get(name)
    return hdr_declared is None or "." in name


class _Values:
    """name -> values in packet order."""
    __slots__ = ("out",)

    def __init__(self, out: dict[str, list]) -> None:
        self.out = out

    def layer(self, lay: Layer, depth: int) -> None:
        xs = self.out.get(lay.proto)
        if xs is None:
            self.out[lay.proto] = [True]
        else:
            xs.append(True)

    def header(self, lay: Layer, plan: Plan, depth: int) -> None:
        vals = lay.values
        out = self.out
        for i, f in plan:
            xs = out.get(f.name)
            if xs is None:
                out[f.name] = [vals[i]]
            else:
                xs.append(vals[i])

    def item(self, lay: Layer, field: Field, value: Any, start: int, length: int, depth: int) -> None:
        xs = self.out.get(field.name)
        if xs is None:
            self.out[field.name] = [value]
        else:
            xs.append(value)


def field_values(visitor: Visitor, pkt: Packet, t0: int) -> dict[str, list]:
    """``name -> values in packet order`` for the names the visitor wants."""
    out: dict[str, list] = {}
    w = visitor.wanted
    for f, get in visitor.frame_fields:
        v = get(pkt, t0)
        if v is not None:
            out[f.name] = [v]
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


# (depth, field or sub-layer, value or None, offset in the layer's buffer, length)
Node = tuple[int, "Field | Layer", Any, int, int]


class _Nodes:
    """A layer's fields and sub-trees in tree order: its own fields at depth 0, a sub-layer at the depth of
    its parent's fields and its fields one deeper."""

    __slots__ = ("out",)

    def __init__(self) -> None:
        self.out: list[Node] = []

    def layer(self, lay: Layer, depth: int) -> None:
        if depth:
            self.out.append((depth - 1, lay, None, lay.off, lay.length))

    def header(self, lay: Layer, plan: Plan, depth: int) -> None:
        hdr = lay.header
        assert hdr is not None
        vals = lay.values
        spans = hdr.spans
        base = lay.off
        for i, f in plan:
            bo, bl, _bit = spans[i]
            self.out.append((depth, f, vals[i], base + bo, bl))

    def item(self, lay: Layer, field: Field, value: Any, start: int, length: int, depth: int) -> None:
        self.out.append((depth, field, value, start, length))


def layer_nodes(lay: Layer) -> list[Node]:
    """Every field and sub-tree of one layer, with where each stands in the layer's buffer."""
    nodes = _Nodes()
    EVERY_FIELD.visit_layer(lay, nodes, 0)
    return nodes.out
