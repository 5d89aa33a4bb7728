"""Expert rules, declared once, for the dissectors and the analysis alike.

A rule is declared like a Wireshark expert item (``ei_register_info``): an id, a severity, a group,
a message template and the source of the rule (the RFC or draft section, the seed, the IBTA
chapter).  Its id is unique across rdmaspy: the dissectors declare the rules of what they find in
one packet (``Packet.add_finding``), the analysis those of what it follows across packets
(``rdmaspy.analysis.rules``, which reports ``Finding``s).  Both kinds are grouped and presented by
their rule.
"""
from __future__ import annotations

from enum import StrEnum

from .records import record_eq, record_hash, record_repr
from .typenames import Callable, ClassVar, Final, mypyc_attr


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"
    CHAT = "chat"


# Declared once each at start (a hundred): its ``__init__`` spelled out, as fields.Field's (which says why).
@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Rule:
    """An expert rule, declared once (``declare``), like Wireshark's ``ei_register_info``.  Equal, and hashed,
    by its values (as the frozen dataclass it was)."""

    _FIELDS: ClassVar[tuple[str, ...]] = ("id", "severity", "group", "message", "source", "receiver_checkable")
    __slots__ = _FIELDS

    def __init__(self, id: str, severity: Severity, group: str, message: str, source: str,
                 receiver_checkable: bool = True) -> None:
        self.id = id                    # stable identifier, e.g. "rpcrdma.xid_mismatch"
        self.severity = severity
        self.group = group              # protocol | sequence | credits | chunk | transaction | checksum | ...
        # template over the finding's args, e.g. "rdma_xid {rdma_xid:#x} != RPC xid {rpc_xid:#x}"
        self.message = message
        self.source = source            # where the rule comes from, e.g. "RFC 8166 §4.2"
        self.receiver_checkable = receiver_checkable   # a MUST an analyzer can check from the wire

    def __repr__(self) -> str:
        return record_repr(self, self._FIELDS)

    def __eq__(self, other: object) -> bool:
        return record_eq(self, other, self._FIELDS)

    def __hash__(self) -> int:
        return record_hash(self, self._FIELDS)

    def text(self, args: dict[str, object]) -> str:
        """The message of one breach, from the values that broke the rule."""
        try:
            return self.message.format(**args)
        except (KeyError, IndexError, ValueError):
            return f"{self.message} {args}"

    def __reduce__(self) -> tuple[Callable[[str], Rule], tuple[str]]:
        """Pickled as a reference to the declaration (the pipeline's checkpoints), not a copy."""
        return rule_declared, (self.id,)


SEVERITIES: Final = tuple(s.value for s in Severity)   # most severe first

RULES: dict[str, Rule] = {}


def rule_declared(id: str) -> Rule:
    """The rule declared with ``id`` (what a pickled Rule stands for)."""
    return RULES[id]


def declare(id: str, severity: str, group: str, message: str, source: str) -> Rule:
    """Declare a rule (at import time of the module that checks it)."""
    if severity not in SEVERITIES:
        raise ValueError(f"{id}: severity {severity!r}")
    if id in RULES:
        raise ValueError(f"rule {id} is declared twice")
    r = RULES[id] = Rule(id, Severity(severity), group, message, source)
    return r
