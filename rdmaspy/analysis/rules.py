"""Expert rules, declared once, and the findings that cite them.

The registry itself (``rdmaspy.rules``) lies below the dissectors, which declare rules too; this
module gives the analysis its names.  A rule is declared like a Wireshark expert item
(``ei_register_info``): an id, a severity, a group, a message template and the source of the rule
(the RFC or draft section, the seed, the IBTA chapter).  Analysis reports a ``Finding``: the rule,
the frames, the connection, the XID and the values that broke it.  Findings are data; their message
is rendered from the rule's template only when a presentation asks for ``text``.  A Finding can
stand in a packet's expert list beside the dissectors' ``Expert`` items (same
``severity``/``group``/``text``/``rule`` attributes).
"""
from __future__ import annotations

from ..rules import RULES, SEVERITIES, Rule, Severity, declare
from .model import Finding

__all__ = ["Finding", "Rule", "Severity", "RULES", "SEVERITIES", "declare"]
