"""Every field of a dissected packet under its dotted name: what JSON and display filters see."""
from __future__ import annotations

from typing import Any

from .fields import Field
from .packet import Layer, Packet

FRAME_NUMBER = Field("frame.number", 0, "Frame Number")
FRAME_TIME = Field("frame.time_epoch", 0, "Epoch Time", "float", unit="seconds")
FRAME_RELATIVE = Field("frame.time_relative", 0, "Time since first frame", "float", unit="seconds")
FRAME_LEN = Field("frame.len", 0, "Frame Length", unit="bytes")
FRAME_CAPLEN = Field("frame.cap_len", 0, "Capture Length", unit="bytes")
FRAME_PROTOCOLS = Field("frame.protocols", 0, "Protocols in frame", "str")
FRAME_COMMENT = Field("frame.comment", 0, "Comment", "str")
FRAME_INTERFACE = Field("frame.interface_id", 0, "Interface id")
FRAME_LINKTYPE = Field("frame.linktype", 0, "Link type")
MALFORMED = Field("_malformed", 0, "Malformed", "str")
EXPERT_SEVERITY = Field("expert.severity", 0, "Severity", "str")
EXPERT_GROUP = Field("expert.group", 0, "Group", "str")
EXPERT_MESSAGE = Field("expert.message", 0, "Message", "str")
EXPERT_RULE = Field("expert.rule", 0, "Rule", "str")
EXPERT_SOURCE = Field("expert.source", 0, "Source (specification)", "str")


def packet_fields(pkt: Packet, t0: int) -> dict[str, tuple[Field, list[Any]]]:
    """name -> (field, values in packet order).  A name seen more than once has several values."""
    out: dict[str, tuple[Field, list[Any]]] = {}

    def put(field: Field, value: Any) -> None:
        slot = out.get(field.name)
        if slot is None:
            out[field.name] = (field, [value])
        else:
            slot[1].append(value)

    for field, value in frame_items(pkt, t0):
        put(field, value)
    for lay in pkt.layers:
        _walk(lay, put)
    if pkt.malformed:
        put(MALFORMED, pkt.malformed)
    if pkt.expert:
        for e in pkt.expert:
            put(EXPERT_SEVERITY, e.severity)
            put(EXPERT_GROUP, e.group)
            put(EXPERT_MESSAGE, e.text)
            put(EXPERT_RULE, e.rule)
            put(EXPERT_SOURCE, e.source)
    return out


def frame_items(pkt: Packet, t0: int) -> list[tuple[Field, Any]]:
    """The frame.* pseudo-fields of a packet."""
    f = pkt.frame
    out = [(FRAME_NUMBER, f.num), (FRAME_TIME, f.ts / 1e9), (FRAME_RELATIVE, (f.ts - t0) / 1e9),
           (FRAME_LEN, f.wirelen), (FRAME_CAPLEN, len(f.data)), (FRAME_INTERFACE, f.iface),
           (FRAME_LINKTYPE, f.linktype), (FRAME_PROTOCOLS, ":".join(lay.proto for lay in pkt.layers))]
    if f.comment:
        out.append((FRAME_COMMENT, f.comment))
    return out


_PRESENCE: dict[str, Field] = {}


def presence_field(proto: str) -> Field:
    """A protocol's presence is itself a field (``reth`` alone matches packets with a RETH)."""
    f = _PRESENCE.get(proto)
    if f is None:
        f = _PRESENCE[proto] = Field(proto, 0, proto, "bool")
    return f


def _walk(lay: Layer, put) -> None:
    put(presence_field(lay.proto), True)
    for _depth, item, value, _o, _l in lay.walk():
        if isinstance(item, Field):
            put(item, value)
        else:
            put(presence_field(item.proto), True)
