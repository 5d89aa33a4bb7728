"""JSON Lines: one object per packet, every decoded field under its dotted name.

Whether a name holds one value or an array is decided by its declaration (``fields.Catalog.repeats``): a
name that can occur more than once in a packet (segments of a chunk list, the IP header an ICMP error
quotes, the FPDUs of a TCP segment) always holds an array of its values in packet order, even of one;
any other name always holds its value.
"""
from __future__ import annotations

import orjson

from ..fields import CATALOG, Field, Header
from ..fieldview import EVERY_FIELD, Plan, Sink, frame_object, packet_items, presence_field
from ..packet import Item, Layer, Packet
from ..typenames import Any, Final, Sequence
from .values import json_value

# Displays whose integer values JSON takes as they are: no conversion call per value.
_PLAIN: Final = frozenset({"dec", "hex", "float", "time"})
# Per header, computed once: its field names, the (index, field) of the values that need converting, and
# whether its fields repeat (1: all, 0: none, -1: some).
_PLANS: Final[dict[int, tuple[tuple[str, ...], tuple[tuple[int, Field], ...], int]]] = {}
# name -> whether its values are written as an array (the catalog's declaration), looked up once
# (Final: compiled, a static; a plain module global is looked up in the module's dict at each use)
_REPEATS: Final[dict[str, bool]] = {}


def _repeats(name: str) -> bool:
    r = _REPEATS.get(name)
    if r is None:
        r = _REPEATS[name] = CATALOG.repeats(name)
    return r


def _plan(hdr: Header) -> tuple[tuple[str, ...], tuple[tuple[int, Field], ...], int]:
    p = _PLANS.get(id(hdr))
    if p is None:
        conv = tuple((i, f) for i, f in enumerate(hdr.fields) if f.display not in _PLAIN or f.bits > 64)
        names = tuple(f.name for f in hdr.fields)
        rep = [_repeats(n) for n in names]
        p = _PLANS[id(hdr)] = (names, conv, 1 if all(rep) else 0 if not any(rep) else -1)
    return p


class _JsonSink(Sink):
    """Fills one packet's object: an array for a name that repeats, the value for any other."""

    __slots__ = ("obj", "extra")

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj
        self.extra: set[str] | None = None     # names declared single that came again (kept, as arrays)

    def put(self, name: str, value: Any) -> None:
        obj = self.obj
        r = _REPEATS.get(name)
        if r is None:
            r = _repeats(name)
        if r:
            got = obj.get(name)
            if got is None:
                obj[name] = [value]
            else:
                xs: list[Any] = got
                xs.append(value)
        elif name in obj:
            self.again(name, value)
        else:
            obj[name] = value

    def again(self, name: str, value: Any) -> None:
        """A declaration says once, the packet says twice: keep every value (tests/test_json_output.py fails
        on any shipped capture where this happens)."""
        extra = self.extra
        if extra is None:
            extra = self.extra = set()
        if name in extra:
            self.obj[name].append(value)
        else:
            self.obj[name] = [self.obj[name], value]
            extra.add(name)

    def layer(self, lay: Layer, present: bool, plan: Plan, items: list[Item] | None, depth: int) -> None:
        obj = self.obj
        if present:
            name = lay.proto
            if name in obj or _REPEATS.get(name) is not False:
                self.put(name, True)
            else:
                obj[name] = True
        hdr = lay.header
        if plan and hdr is not None:
            names, conv, repeating = _plan(hdr)
            vals: Sequence[Any] = lay.values
            if conv:
                conv_vals = list(vals)
                for i, f in conv:
                    conv_vals[i] = json_value(f, conv_vals[i])
                vals = conv_vals
            if repeating >= 0 and obj.keys().isdisjoint(names):
                obj.update(zip(names, vals) if repeating == 0 else zip(names, [[v] for v in vals]))
            else:
                for name, v in zip(names, vals):
                    self.put(name, v)
        if items:
            for f, v, _o, _l in items:
                # json_value's result, with no call for the values it leaves as they are: an integer of a
                # plain display, a boolean, a text (unless its field shows a boolean)
                cls = type(v)
                if cls is int:
                    if f.display not in _PLAIN:
                        v = json_value(f, v)
                    elif f.bits > 64:
                        v = json_value(f, v)
                elif cls is str:
                    if f.display == "bool":
                        v = json_value(f, v)
                elif cls is not bool:
                    v = json_value(f, v)
                name = f.name
                r = _REPEATS.get(name)
                if r is None:
                    r = _repeats(name)
                if r:
                    got = obj.get(name)
                    if got is None:
                        obj[name] = [v]
                    else:
                        xs: list[Any] = got     # typed: compiled, append is a list's, not a method looked up
                        xs.append(v)
                elif name in obj:
                    self.again(name, v)
                else:
                    obj[name] = v


def packet_object(pkt: Packet, t0: int) -> dict[str, Any]:
    obj = frame_object(pkt, t0)
    sink = _JsonSink(obj)
    EVERY_FIELD.layers(pkt, sink)
    if pkt.malformed or pkt.expert:
        for field, v in packet_items(pkt):
            sink.put(field.name, v)
    obj["_summary"] = {"src": pkt.src, "dst": pkt.dst, "protocol": pkt.proto, "info": pkt.info_text}
    return obj


def packet_json(pkt: Packet, t0: int) -> bytes:
    return dumps(packet_object(pkt, t0))


# Bytes the allocator must be able to give just before orjson runs (0.15 µs for 16 KiB, 0.5 for 32).
_HEADROOM: Final = 32 << 10
# Whether an allocation can fail in this process ([] until the first dumps looks; Final: a static).
_CAN_FAIL: Final[list[bool]] = []


def dumps(obj: Any, default: Any = None) -> bytes:
    """``orjson.dumps(obj)``, out of memory as a MemoryError: orjson crashes (a segmentation fault) when
    an allocation fails inside it, which a capture too big for the memory left made happen to one run in
    three of ``decode -T json`` under a 64 MiB limit.  Where an allocation can fail, a probe of the room
    its output needs, given back at once, fails first and raises where the command reports it in one
    line; where none can (no limit: the kernel gives the memory or ends the process), no probe."""
    can_fail = _CAN_FAIL
    if not can_fail:
        can_fail.append(allocations_can_fail())
    if can_fail[0]:
        bytearray(_HEADROOM)
    return orjson.dumps(obj, default=default)


def allocations_can_fail() -> bool:
    """Whether an allocation in this process can come back empty: under a limit of its address space
    or data (``ulimit -v``/``-d``), or with the kernel's strict accounting (``vm.overcommit_memory`` 2).
    Otherwise Linux gives every allocation of a packet's size and its out-of-memory killer, not a
    failed allocation, ends a process that runs out.  Not knowing (no ``resource``, no /proc): it can."""
    try:
        import resource
    except ImportError:
        return True
    for limit in (resource.RLIMIT_AS, resource.RLIMIT_DATA):
        if resource.getrlimit(limit)[0] != resource.RLIM_INFINITY:
            return True
    try:
        with open("/proc/sys/vm/overcommit_memory", encoding="ascii") as f:
            return f.read().strip() not in ("0", "1")
    except (OSError, ValueError):
        return True


__all__ = ["packet_object", "packet_json", "presence_field", "dumps", "allocations_can_fail"]
