"""JSON Lines: one object per packet, every decoded field under its dotted name.

A name that occurs once maps to its value; a name that occurs several times (segments of a
chunk list, IP options) maps to the list of its values in packet order.
"""
from __future__ import annotations

from typing import Any

import orjson

from ..fields import Field
from ..fieldview import frame_items, presence_field
from ..packet import Layer, Packet
from .values import json_value

# Displays whose values JSON takes as they are (ints stay ints): no conversion call per value.
_PLAIN = frozenset({"dec", "hex", "float", "time"})


def packet_object(pkt: Packet, t0: int) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    multi: set[str] = set()

    def put(name: str, value: Any) -> None:
        if name in obj:
            if name in multi:
                obj[name].append(value)
            else:
                obj[name] = [obj[name], value]
                multi.add(name)
        else:
            obj[name] = value

    for field, value in frame_items(pkt, t0):
        put(field.name, json_value(field, value))
    for lay in pkt.layers:
        _layer(lay, put)
    if pkt.malformed:
        put("_malformed", pkt.malformed)
    if pkt.expert:
        for e in pkt.expert:
            put("expert.severity", e.severity)
            put("expert.group", e.group)
            put("expert.message", e.text)
            put("expert.rule", e.rule)
    obj["_summary"] = {"src": pkt.src, "dst": pkt.dst, "protocol": pkt.proto, "info": pkt.info_text}
    return obj


def _layer(lay: Layer, put) -> None:
    put(lay.proto, True)
    hdr = lay.header
    if hdr is not None:
        for f, v in zip(hdr.fields, lay.values):
            put(f.name, v if f.display in _PLAIN and v.__class__ is int else json_value(f, v))
    items = lay.items
    if items:
        for f, v, _o, _l in items:
            put(f.name, v if f.display in _PLAIN and v.__class__ is int else json_value(f, v))
    children = lay.children
    if children:
        for c in children:
            _layer(c, put)


def packet_json(pkt: Packet, t0: int) -> bytes:
    return orjson.dumps(packet_object(pkt, t0))


__all__ = ["packet_object", "packet_json", "presence_field", "Field"]
