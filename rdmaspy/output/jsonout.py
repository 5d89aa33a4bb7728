"""JSON Lines: one object per packet, every decoded field under its dotted name."""
from __future__ import annotations

from typing import Any

import orjson

from ..fieldview import packet_fields
from ..packet import Packet
from .values import json_value


def packet_object(pkt: Packet, t0: int) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for name, (field, values) in packet_fields(pkt, t0).items():
        if len(values) == 1:
            obj[name] = json_value(field, values[0])
        else:
            obj[name] = [json_value(field, v) for v in values]
    obj["_summary"] = {"src": pkt.src, "dst": pkt.dst, "protocol": pkt.proto, "info": pkt.info_text}
    return obj


def packet_json(pkt: Packet, t0: int) -> bytes:
    return orjson.dumps(packet_object(pkt, t0))
