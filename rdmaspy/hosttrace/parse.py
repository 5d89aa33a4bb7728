"""One line of a kernel trace as a ``HostEvent``: who, when, which event, its fields.

The line forms read: ``trace-cmd report`` (``comm-pid [cpu] secs.frac: event: body``, with or without
``-t``'s nanoseconds, with ``-R``'s raw ``field=value`` bodies) and the kernel's own text
(``/sys/kernel/tracing/trace``: a flags column after the CPU, ``#`` comments).  A body is read for what the
declarations (``events``) name, tolerant of the differences between kernels: ``task:%08x@%08x`` or
``task:%u@%u``, ``cq.id``/``cq_id``, a segment printed ``length@0xoffset:0xhandle`` or as raw fields, a
completion's status by name or by number.  What does not parse is not an error here: ``parse_line``
returns a reason, the source counts it.
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Final, Union

from .events import ALIASES, EVENTS, WC_STATUS, EventDecl, Side

Value = Union[int, str]

MAX_FIELDS: Final = 48          # fields kept of one event (a hostile line may name thousands)
MAX_VALUE: Final = 256          # characters kept of a text value

_LINE: Final = re.compile(
    r"\s*(?P<comm>.*?)-(?P<pid>\d+)\s+(?:\(\s*[-\d]+\)\s+)?\[(?P<cpu>\d+)\]\s+(?:[.\w]{2,6}\s+)?"
    r"(?P<sec>\d{1,12})\.(?P<frac>\d{1,9}):\s+(?P<event>\w+):\s?(?P<body>.*)")
_TASK: Final = re.compile(r"task:([0-9a-fA-F]+)@([0-9a-fA-F]+)")
_SEGMENT: Final = re.compile(r"(\d+)@0x([0-9a-fA-F]+):0x([0-9a-fA-F]+)")
_PAIR: Final = re.compile(r"([A-Za-z_][\w.\-]*)=(\[[^\]]*\]:\S*|\S*)")
_STATUS_CODE: Final = re.compile(r"status=\w+ \((\d+)/0x([0-9a-fA-F]+)\)")
_SGES: Final = re.compile(r"\((\d+) SGEs?\)")
_RECVS: Final = re.compile(r"(\d+) new recvs, (-?\d+) active")
_CREATED: Final = re.compile(r"created (\d+) MRs")
_ARRAY: Final = re.compile(r"([A-Za-z_]\w*)=ARRAY\[([0-9a-fA-F, ]*)\]")
_SOCKADDRS: Final = {"srcaddr": "src", "dstaddr": "dst"}
_CREDITS: Final = re.compile(r"(\d+) credits")      # 5.x: "xid=0x%08x, %d credits, rep=%p"
_THRESH: Final = re.compile(r"(\S+) -> (\S+) neg send/recv=(\d+)/(\d+), calc send/recv=(\d+)/(\d+)")
_DECIMAL: Final = re.compile(r"-?\d+")
_HEX: Final = re.compile(r"0x[0-9a-fA-F]+")
_NONE_ID: Final = 0xFFFFFFFF
_TASK_FIELDS: Final = frozenset(("task", "client", "snd_task"))


@dataclass(slots=True, eq=False)
class HostEvent:
    """One kernel event: its name, its time (ns on the trace's clock), the thread that traced it, its fields.
    ``xid`` is the RPC it belongs to once ``resolve`` has named it; ``trace`` is the trace file's number;
    ``ts`` its time on the capture's clock once the clocks are aligned; ``joined``: a transaction took it."""
    name: str
    host_ts: int
    pid: int
    fields: dict[str, Value] = field(default_factory=dict)
    xid: int | None = None
    trace: int = 0
    ts: int = 0
    joined: bool = False

    @property
    def decl(self) -> EventDecl:
        return EVENTS[self.name]

    @property
    def side(self) -> Side:
        return EVENTS[self.name].side

    def int_field(self, name: str) -> int | None:
        v = self.fields.get(name)
        return v if isinstance(v, int) else None


@dataclass(slots=True)
class Line:
    """A line's frame: what every event line has, before its body is read."""
    comm: str
    pid: int
    ts: int
    event: str
    body: str


def split_line(text: str) -> Line | None:
    """The frame of an event line, or None for a line that is none (a header, a comment, damage)."""
    m = _LINE.match(text)
    if m is None:
        return None
    frac = m.group("frac")
    ts = int(m.group("sec")) * 1_000_000_000 + int(frac.ljust(9, "0"))
    return Line(m.group("comm"), int(m.group("pid")), ts, m.group("event"), m.group("body"))


def _task_id(text: str) -> int | None:
    """A task or client id: ``%08x`` (6.x, and the raw form) or ``%u`` (5.15 and before); all ones is none."""
    try:
        v = int(text, 16) if len(text) == 8 else int(text, 10)
    except ValueError:
        return None
    return None if v == _NONE_ID else v


def _value(text: str) -> Value:
    text = text.rstrip(",:;")              # 5.x: "xid=0x%08x: hdr=..."
    if _DECIMAL.fullmatch(text):
        return int(text)
    if _HEX.fullmatch(text):
        return int(text, 16)
    return text[:MAX_VALUE]


def sockaddr(raw: str) -> str | None:
    """``address:port`` of a sockaddr the raw form prints as its bytes (``02, 00, d1, 1e, c0, 00, 02, 01, ...``:
    AF_INET little-endian, the port and address in network order; AF_INET6 likewise)."""
    try:
        b = bytes(int(x, 16) for x in raw.replace(" ", "").split(",") if x)
    except ValueError:
        return None
    if len(b) >= 8 and b[0] == 2 and b[1] == 0:
        return f"{b[4]}.{b[5]}.{b[6]}.{b[7]}:{(b[2] << 8) | b[3]}"
    if len(b) >= 24 and b[0] == 10 and b[1] == 0:
        return f"[{ipaddress.IPv6Address(b[8:24])}]:{(b[2] << 8) | b[3]}"
    return None


def parse_body(decl: EventDecl, body: str) -> dict[str, Value]:
    """The fields of an event's body, under their canonical names."""
    out: dict[str, Value] = {}
    body = body.replace("connection status=", "connect_status=")
    if "=ARRAY[" in body:                  # the raw form's sockaddrs: read them, then leave them out
        for key, raw in _ARRAY.findall(body):
            name = _SOCKADDRS.get(key)
            if name is not None:
                addr = sockaddr(raw)
                if addr is not None:
                    out[name] = addr
        body = _ARRAY.sub("", body)
    for key, raw in _PAIR.findall(body):
        if len(out) >= MAX_FIELDS:
            break
        name = ALIASES.get(key, key)
        if name in _TASK_FIELDS:
            tid = _task_id(raw)
            if tid is not None:
                out[name] = tid
            continue
        if raw.startswith("["):             # peer=[192.0.2.2]:20049
            out[name] = raw.replace("[", "").replace("]", "")[:MAX_VALUE]
            continue
        out[name] = _value(raw)
    if "peer" not in out and "addr" in out and "port" in out:      # the raw form's peer
        out["peer"] = f"{out['addr']}:{out['port']}"
    if "task" not in out:
        m = _TASK.search(body)
        if m is not None:
            t, c = _task_id(m.group(1)), _task_id(m.group(2))
            if t is not None:
                out["task"] = t
            if c is not None:
                out["client"] = c
    if "handle" not in out:
        m = _SEGMENT.search(body)
        if m is not None:
            out["length"] = int(m.group(1))
            out["offset"] = int(m.group(2), 16)
            out["handle"] = int(m.group(3), 16)
    if "vendor_err" in decl.fields:
        status = out.get("status")
        if isinstance(status, int):
            out["status"] = WC_STATUS[status] if 0 <= status < len(WC_STATUS) else f"status {status}"
        m = _STATUS_CODE.search(body)
        if m is not None:
            out["vendor_err"] = int(m.group(2), 16)
    if decl.cid_is_mr and "mr_id" not in out and "cid" in out:
        out["mr_id"] = out.pop("cid")
    if "num_sge" in decl.fields:
        m = _SGES.search(body)
        if m is not None:
            out["num_sge"] = int(m.group(1))
        if "signaled" not in out:
            out["signaled"] = 1 if body.rstrip().endswith("signaled") else 0
    if "cwnd" in decl.fields and "wait" not in out:       # TP_printk: " wait" after cwnd when the task waits
        out["wait"] = 1 if body.rstrip().endswith(" wait") else 0
    if "active" in decl.fields and "active" not in out:
        m = _RECVS.search(body)
        if m is not None:
            out["count"], out["active"] = int(m.group(1)), int(m.group(2))
    if "credits" in decl.fields and "credits" not in out:
        m = _CREDITS.search(body)
        if m is not None:
            out["credits"] = int(m.group(1))
    if decl.name == "xprtrdma_inline_thresh" and "inline_send" not in out:
        m = _THRESH.search(body)
        if m is not None:
            out.pop("recv", None)
            out["src"], out["dst"] = m.group(1), m.group(2)
            out["inline_send"], out["inline_recv"] = int(m.group(3)), int(m.group(4))
            out["max_send"], out["max_recv"] = int(m.group(5)), int(m.group(6))
    if decl.name == "xprtrdma_createmrs" and "count" not in out:
        m = _CREATED.search(body)
        if m is not None:
            out["count"] = int(m.group(1))
    return out
