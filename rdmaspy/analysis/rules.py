"""Expert rules, declared once, and the findings that cite them.

A rule is declared like a Wireshark expert item (``ei_register_info``): an id, a severity, a group,
a message template and the source of the rule (the RFC or draft section, the seed, the IBTA
chapter).  Analysis reports a ``Finding``: the rule, the frames, the connection, the XID and the
values that broke it.  Findings are data; their message is rendered from the rule's template only
when a presentation asks for ``text``.  A Finding can stand in a packet's expert list beside the
dissectors' ``Expert`` items (same ``severity``/``group``/``text``/``rule`` attributes).
"""
from __future__ import annotations

from .model import Finding, Rule, Severity

__all__ = ["Finding", "Rule", "Severity", "RULES", "SEVERITIES", "declare"]

SEVERITIES = tuple(s.value for s in Severity)   # most severe first


RULES: dict[str, Rule] = {}


def declare(id: str, severity: str, group: str, message: str, source: str) -> Rule:
    """Declare a rule (at import time of the analysis module that checks it)."""
    if severity not in SEVERITIES:
        raise ValueError(f"{id}: severity {severity!r}")
    if id in RULES:
        raise ValueError(f"rule {id} is declared twice")
    r = RULES[id] = Rule(id, Severity(severity), group, message, source)
    return r
