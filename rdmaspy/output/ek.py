"""``decode -T ek``: newline-delimited JSON for Elasticsearch's bulk API, as ``tshark -T ek`` writes it.

Each packet is two lines: the bulk action (``{"index": {"_index": "packets-YYYY-MM-DD", "_type": "doc"}}``,
the day of the packet in UTC) and the document (``{"timestamp": "<milliseconds since the epoch>",
"layers": ...}``).  With ``-e NAME`` the layers are the named fields, each a list of its values as text
(``"frame_number": ["1"]``), as tshark gives them; without, every field grouped by its protocol, under
the key ``PROTO_NAME`` with dots as underscores (``"bth": {"bth_bth_opcode": "12"}``), booleans as JSON
booleans, a field that repeats as a list.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable

from ..fields import Field
from ..fieldview import packet_fields
from ..packet import Packet
from .field_columns import field_text, field_texts
from .jsonout import dumps
from .lines import LineWriter

if TYPE_CHECKING:
    from ..pipeline import Pipeline


def _index_line(ts: int) -> bytes:
    try:
        day = time.strftime("%Y-%m-%d", time.gmtime(ts // 1_000_000_000))
    except (OverflowError, OSError, ValueError):
        day = "1970-01-01"
    return b'{"index":{"_index":"packets-%s","_type":"doc"}}' % day.encode()


def _full_layers(pkt: Packet, t0: int) -> dict[str, dict[str, Any]]:
    layers: dict[str, dict[str, Any]] = {}
    for name, (field, values) in packet_fields(pkt, t0).items():
        proto, dot, _rest = name.partition(".")
        if not dot:
            layers.setdefault(proto, {})          # a protocol's presence: its group
            continue
        key = f"{proto}_{name.replace('.', '_')}"
        if field.display == "bool":
            out: list[Any] = [bool(v) for v in values]
        else:
            out = field_texts(name, field, values, pkt, t0) if name.startswith("frame.time") else \
                [field_text(field, v) for v in values]
        layers.setdefault(proto, {})[key] = out[0] if len(out) == 1 else out
    return layers


class EkSink:
    """The pipeline's sink for ``-T ek``: two lines per shown packet."""

    __slots__ = ("out", "names", "_fields", "_extract", "_pipe")

    def __init__(self, out: LineWriter, names: list[str], fields: dict[str, Field],
                 extract: Callable[[Packet, int], dict[str, list[Any]]] | None) -> None:
        self.out = out
        self.names = names                 # -e NAME ...; empty: every field
        self._fields = fields
        self._extract = extract
        self._pipe: Pipeline | None = None

    def attach(self, pipe: Pipeline) -> None:
        self._pipe = pipe

    def packet(self, pkt: Packet) -> None:
        pipe = self._pipe
        ts = pkt.frame.ts
        t0 = pipe.t0 if pipe is not None else ts
        layers: dict[str, Any]
        if self.names and self._extract is not None:
            values = self._extract(pkt, t0)
            layers = {}
            for name in self.names:
                texts = field_texts(name, self._fields[name], values.get(name), pkt, t0)
                if texts:
                    layers[name.replace(".", "_")] = texts
        else:
            layers = _full_layers(pkt, t0)
        self.out.line(_index_line(ts))
        self.out.line(dumps({"timestamp": str(ts // 1_000_000), "layers": layers}))

    def flush(self) -> None:
        self.out.flush()

    def finish(self) -> None:
        self.out.flush()
