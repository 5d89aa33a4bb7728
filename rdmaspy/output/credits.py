"""A connection's credit summary (``model.CreditSummary``) as plain data: one direction's credits, as the
flows export and ``stats`` both give them.  Apart from output.flows so that ``stats`` takes it without the
export's writers (and JSON's encoder) loaded."""
from __future__ import annotations

from ..analysis.model import CreditSummary


def credit_summary_record(c: CreditSummary) -> dict[str, object]:
    return {"direction": c.direction.value, "requested": c.requested, "granted": c.granted,
            "granted_min": c.granted_min, "granted_max": c.granted_max, "max_outstanding": c.max_outstanding,
            "calls": c.calls, "grants": c.grants, "peak_outstanding": c.peak_outstanding,
            "outstanding_at_end": c.outstanding_at_end, "zero_grants": c.zero_grants, "exceeded": c.exceeded,
            "refreshes": c.refreshes}
