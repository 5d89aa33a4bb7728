"""Expert rules, declared once, and the findings that cite them.

A rule is declared like a Wireshark expert item (``ei_register_info``): an id, a severity, a group,
a message template and the source of the rule (the RFC or draft section, the seed, the IBTA
chapter).  Analysis reports a ``Finding``: the rule, the frames, the connection, the XID and the
values that broke it.  Findings are data; their message is rendered from the rule's template only
when a presentation asks for ``text``.  A Finding can stand in a packet's expert list beside the
dissectors' ``Expert`` items (same ``severity``/``group``/``text``/``rule`` attributes).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SEVERITIES = ("error", "warning", "note", "chat")


@dataclass(frozen=True, slots=True)
class Rule:
    id: str            # stable identifier, e.g. "rpcrdma.xid_mismatch"
    severity: str      # error | warning | note | chat
    group: str         # protocol | sequence | credits | chunk | transaction | checksum | congestion | ...
    message: str       # template over the finding's args, e.g. "rdma_xid {rdma_xid:#x} != RPC xid {rpc_xid:#x}"
    source: str        # where the rule comes from, e.g. "RFC 8166 §4.2"
    receiver_checkable: bool = True   # a MUST an analyzer can check from the wire


RULES: dict[str, Rule] = {}


def declare(id: str, severity: str, group: str, message: str, source: str) -> Rule:
    """Declare a rule (at import time of the analysis module that checks it)."""
    if severity not in SEVERITIES:
        raise ValueError(f"{id}: severity {severity!r}")
    if id in RULES:
        raise ValueError(f"rule {id} is declared twice")
    r = RULES[id] = Rule(id, severity, group, message, source)
    return r


class Finding:
    """One breach of a rule, with the frames and values that show it."""

    __slots__ = ("rule_def", "frames", "conn", "xid", "args", "ts")

    def __init__(self, rule: Rule, frames: tuple[int, ...], conn: int | None, xid: int | None,
                 args: dict[str, Any], ts: int) -> None:
        self.rule_def = rule
        self.frames = frames      # the frame that shows it first, then related frames
        self.conn = conn          # connection id (rdmaspy.conversation.Connection.conn_id)
        self.xid = xid
        self.args = args
        self.ts = ts              # timestamp (ns) of the first frame

    # The attributes a packet's expert item has, so findings sit in pkt.expert beside them.
    @property
    def severity(self) -> str:
        return self.rule_def.severity

    @property
    def group(self) -> str:
        return self.rule_def.group

    @property
    def text(self) -> str:
        try:
            return self.rule_def.message.format(**self.args)
        except (KeyError, IndexError, ValueError):
            return f"{self.rule_def.message} {self.args}"

    @property
    def rule(self) -> str:
        return f"{self.rule_def.id} ({self.rule_def.source})"

    def record(self) -> dict[str, Any]:
        """The finding as plain data (JSON-ready)."""
        return {"rule": self.rule_def.id, "severity": self.severity, "group": self.group,
                "source": self.rule_def.source, "message": self.text, "frames": list(self.frames),
                "conn": self.conn, "xid": self.xid, "args": self.args}

    def __repr__(self) -> str:
        return f"<Finding {self.rule_def.id} frames={self.frames}>"
