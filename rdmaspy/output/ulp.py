"""How a connection's upper layer is told, when a dissector found one on it (NVMe/RDMA): a short text for
the tables (``conversations``, the TUI) and a record for JSON (``conversations -T json``, flows)."""
from __future__ import annotations

from typing import Any

from ..analysis.model import Connection
from ..dissectors.nvme_rdma import REJ_STATUS, ULP as NVME_RDMA, NvmeRdmaCm

JSON = dict[str, Any]


def _nvme(c: Connection) -> tuple[NvmeRdmaCm | None, NvmeRdmaCm | None]:
    req = c.ulp_client if isinstance(c.ulp_client, NvmeRdmaCm) else None
    rep = c.ulp_server if isinstance(c.ulp_server, NvmeRdmaCm) else None
    return req, rep


def ulp_service(c: Connection, named: bool = False) -> str:
    """What follows the service in a table: " QID 1" (``named``, where the service does not say NVMe/RDMA:
    " NVMe/RDMA QID 1"), or nothing."""
    if c.ulp != NVME_RDMA:
        return ""
    req, _rep = _nvme(c)
    qid = f" QID {req.qid}" if req is not None and req.qid is not None else ""
    return f" NVMe/RDMA{qid}" if named or not qid else qid


def ulp_text(c: Connection) -> str | None:
    """A line on the upper layer's setup, or None when there is no upper layer to tell of."""
    if c.ulp != NVME_RDMA:
        return None
    req, rep = _nvme(c)
    parts = ["NVMe/RDMA"]
    if req is not None and req.qid is not None:
        hsq = f"{req.hsqsize + 1}" if req.hsqsize is not None else "?"
        parts.append(f"queue {req.qid} ({'admin' if req.qid == 0 else 'I/O'}): host send queue {hsq}, "
                     f"host receive queue {req.hrqsize}")
    if rep is not None and rep.kind == "rep":
        parts.append(f"controller receive queue {rep.crqsize}")
    if rep is not None and rep.kind == "rej":
        parts.append(f"rejected: {REJ_STATUS.get(rep.status or 0, 'reserved')} ({rep.status})")
    if req is None and rep is None:
        parts.append("no CM private data in the capture")
    return "; ".join(parts)


def ulp_record(c: Connection) -> JSON | None:
    """The upper layer's setup as plain values, or None."""
    if c.ulp != NVME_RDMA:
        return None
    req, rep = _nvme(c)
    return {"protocol": c.ulp,
            "qid": req.qid if req is not None else None,
            "hrqsize": req.hrqsize if req is not None else None,
            "hsqsize": req.hsqsize if req is not None else None,
            "cntlid": req.cntlid if req is not None else None,
            "crqsize": rep.crqsize if rep is not None and rep.kind == "rep" else None,
            "reject_status": rep.status if rep is not None and rep.kind == "rej" else None}
