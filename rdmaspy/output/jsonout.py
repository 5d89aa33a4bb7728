"""JSON Lines: one object per packet, every decoded field under its dotted name.

A name that occurs once maps to its value; a name that occurs several times (segments of a
chunk list, IP options) maps to the list of its values in packet order.
"""
from __future__ import annotations

from typing import Any, Sequence

import orjson

from ..fields import Field, Header
from ..fieldview import EVERY_FIELD, FRAME_FIELDS, Plan, packet_items, presence_field
from ..packet import Layer, Packet
from .values import json_value

# Displays whose integer values JSON takes as they are: no conversion call per value.
_PLAIN = frozenset({"dec", "hex", "float", "time"})
# Per header, computed once: its field names, and the (index, field) of the values that need converting.
_PLANS: dict[int, tuple[tuple[str, ...], tuple[tuple[int, Field], ...]]] = {}


def _plan(hdr: Header) -> tuple[tuple[str, ...], tuple[tuple[int, Field], ...]]:
    p = _PLANS.get(id(hdr))
    if p is None:
        conv = tuple((i, f) for i, f in enumerate(hdr.fields) if f.display not in _PLAIN or f.bits > 64)
        p = _PLANS[id(hdr)] = (tuple(f.name for f in hdr.fields), conv)
    return p


class _JsonSink:
    """Fills one packet's object: a name seen again has its values made a list, in packet order."""

    __slots__ = ("obj", "multi")

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj
        self.multi: set[str] = set()

    def put(self, name: str, value: Any) -> None:
        obj = self.obj
        if name in obj:
            if name in self.multi:
                obj[name].append(value)
            else:
                obj[name] = [obj[name], value]
                self.multi.add(name)
        else:
            obj[name] = value

    def layer(self, lay: Layer, depth: int) -> None:
        name = lay.proto
        if name in self.obj:
            self.put(name, True)
        else:
            self.obj[name] = True

    def header(self, lay: Layer, plan: Plan, depth: int) -> None:
        hdr = lay.header
        assert hdr is not None
        names, conv = _plan(hdr)
        vals: Sequence[Any] = lay.values
        if conv:
            conv_vals = list(vals)
            for i, f in conv:
                conv_vals[i] = json_value(f, conv_vals[i])
            vals = conv_vals
        obj = self.obj
        if obj.keys().isdisjoint(names):
            obj.update(zip(names, vals))
        else:                      # the same header again in this packet: its values join lists
            for name, v in zip(names, vals):
                self.put(name, v)

    def item(self, lay: Layer, field: Field, value: Any, start: int, length: int, depth: int) -> None:
        if value.__class__ is not int or field.display not in _PLAIN or field.bits > 64:
            value = json_value(field, value)
        name = field.name
        if name in self.obj:
            self.put(name, value)
        else:
            self.obj[name] = value



def packet_object(pkt: Packet, t0: int) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for field, get in FRAME_FIELDS:
        v = get(pkt, t0)
        if v is not None:
            obj[field.name] = v
    sink = _JsonSink(obj)
    EVERY_FIELD.layers(pkt, sink)
    if pkt.malformed or pkt.expert:
        for field, v in packet_items(pkt):
            sink.put(field.name, v)
    obj["_summary"] = {"src": pkt.src, "dst": pkt.dst, "protocol": pkt.proto, "info": pkt.info_text}
    return obj


def packet_json(pkt: Packet, t0: int) -> bytes:
    return orjson.dumps(packet_object(pkt, t0))


__all__ = ["packet_object", "packet_json", "presence_field"]
