"""JSON Lines: one object per packet, every decoded field under its dotted name.

A name that occurs once maps to its value; a name that occurs several times (segments of a
chunk list, IP options) maps to the list of its values in packet order.
"""
from __future__ import annotations

from typing import Any, Sequence

import orjson

from ..fields import Field, Header
from ..fieldview import presence_field
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


def packet_object(pkt: Packet, t0: int) -> dict[str, Any]:
    f = pkt.frame
    obj: dict[str, Any] = {
        "frame.number": f.num, "frame.time_epoch": f.ts / 1e9, "frame.time_relative": (f.ts - t0) / 1e9,
        "frame.len": f.wirelen, "frame.cap_len": len(f.data), "frame.interface_id": f.iface,
        "frame.linktype": f.linktype, "frame.protocols": ":".join([lay.proto for lay in pkt.layers]),
    }
    if f.comment:
        obj["frame.comment"] = f.comment
    multi: set[str] = set()
    for lay in pkt.layers:
        _layer(lay, obj, multi)
    if pkt.malformed:
        _put(obj, multi, "_malformed", pkt.malformed)
    if pkt.expert:
        for e in pkt.expert:
            _put(obj, multi, "expert.severity", e.severity)
            _put(obj, multi, "expert.group", e.group)
            _put(obj, multi, "expert.message", e.text)
            _put(obj, multi, "expert.rule", e.rule)
            _put(obj, multi, "expert.source", e.source)
    obj["_summary"] = {"src": pkt.src, "dst": pkt.dst, "protocol": pkt.proto, "info": pkt.info_text}
    return obj


def _put(obj: dict[str, Any], multi: set[str], name: str, value: Any) -> None:
    """A name seen again: its values become a list, in packet order."""
    if name in obj:
        if name in multi:
            obj[name].append(value)
        else:
            obj[name] = [obj[name], value]
            multi.add(name)
    else:
        obj[name] = value


def _layer(lay: Layer, obj: dict[str, Any], multi: set[str]) -> None:
    name = lay.proto
    if name in obj:
        _put(obj, multi, name, True)
    else:
        obj[name] = True
    hdr = lay.header
    if hdr is not None:
        names, conv = _plan(hdr)
        vals: Sequence[Any] = lay.values
        if conv:
            conv_vals = list(vals)
            for i, f in conv:
                conv_vals[i] = json_value(f, conv_vals[i])
            vals = conv_vals
        if obj.keys().isdisjoint(names):
            obj.update(zip(names, vals))
        else:                      # the same header again in this packet: its values join lists
            for name, v in zip(names, vals):
                _put(obj, multi, name, v)
    items = lay.items
    if items:
        for f, v, _o, _l in items:
            if v.__class__ is not int or f.display not in _PLAIN or f.bits > 64:
                v = json_value(f, v)
            name = f.name
            if name in obj:
                _put(obj, multi, name, v)
            else:
                obj[name] = v
    children = lay.children
    if children:
        for c in children:
            _layer(c, obj, multi)


def packet_json(pkt: Packet, t0: int) -> bytes:
    return orjson.dumps(packet_object(pkt, t0))


__all__ = ["packet_object", "packet_json", "presence_field"]
