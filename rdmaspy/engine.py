"""The dissection engine: frames in, packets out.

``Engine.dissect`` starts at the frame's link type and lets each dissector hand
its payload to the next through the registry.  A ``Session`` carries the state
that spans packets (reassembly, connections learnt from the CM), one namespace
per dissector module.  Nothing a dissector does with bad bytes escapes as an
exception: it becomes a malformed packet with the reason.
"""
from __future__ import annotations

from .budget import RULE as BUDGET_RULE
from .budget import SOURCE as BUDGET_SOURCE
from .budget import out_of_memory
from .packet import Frame, Packet
from .registry import Dissector, import_all, table
from .session import Session
from .typenames import Iterable, Iterator, mypyc_attr

_LOADED = False


def load_dissectors() -> None:
    """Import every module of ``rdmaspy.dissectors``: importing is registering.  They are named here, in
    ``import_all``'s order (the directory's, by name), so that a compiled build imports its compiled ones
    natively: through importlib each cost some 300,000 instructions (the finder, in Python, and the module's
    own shared object).  ``import_all`` then finds them imported, and imports any the list does not name
    (tests/test_registry.py keeps it whole)."""
    global _LOADED
    if _LOADED:
        return
    from . import dissectors
    # erf, interpreted, imports these two first thing: imported here before it, natively (the same order of
    # declarations: theirs, then erf's)
    import rdmaspy.dissectors.ethernet  # noqa: F401
    import rdmaspy.dissectors.infiniband  # noqa: F401
    from .dissectors import (  # noqa: F401
        data, erf, ethernet, hexfmt, hostpair, ib_cm, icmp, infiniband, ip, iwarp_ddp, iwarp_mpa, mad, nfs, nfs2,
        nfs3, nfs4, nfs41, nfs4_attrs, nfs_names, nfs_side, nvme, nvme_data, nvme_names, nvme_rdma, onc_rpc, rdma_cm,
        rdma_reassembly, rpcrdma, rpcrdma2, rpcrdma_message, rpcrdma_pdata, sll, tcp_stream, transport, xdr, xdrlang)
    import_all(dissectors)
    _LOADED = True


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Engine:
    """Dissects frames.  ``fast_paths=False`` turns the fused fast paths off (tests compare both ways)."""

    def __init__(self, session: Session | None = None, strict: bool = False, fast_paths: bool = True) -> None:
        load_dissectors()
        self.session = session or Session()
        self.strict = strict          # tests: let dissector exceptions through
        self._linktypes = table("linktype")
        # A fast path takes the most common stack of a link type in one step and returns True, or
        # returns False before touching the packet when the frame is anything else.
        self._fast = table("linktype.fast").by_key if fast_paths else {}
        # The link type of the last frame and its fast path (None: none): a capture has one link type, and
        # compiled, each look-up in the table boxed the number and hashed it.
        self._fast_linktype = -1
        self._fast_last: Dissector | None = None

    def dissect(self, frame: Frame) -> Packet:
        pkt = self._dissect(frame)
        budget = self.session.budget
        if budget.notices and not budget.analysis_reports:
            for n in budget.take_notices():
                pkt.add_expert("warning", "memory", n.text, BUDGET_SOURCE, BUDGET_RULE)
        return pkt

    def _dissect(self, frame: Frame) -> Packet:
        pkt = Packet(frame)
        data = frame.data
        linktype = frame.linktype
        if linktype == self._fast_linktype:
            fast = self._fast_last
        else:
            fast = self._fast_last = self._fast.get(linktype)
            self._fast_linktype = linktype
        if fast is not None:
            try:
                if fast.dissect(pkt, data, 0, len(data), self.session):
                    return pkt
            except MemoryError:
                out_of_memory()       # out of memory ends the run with one line (cli.main), not a packet
                raise
            except Exception as exc:
                if self.strict:
                    raise
                last = pkt.layers[-1].proto if pkt.layers else "frame"
                pkt.set_malformed(f"{last}: dissector error: {type(exc).__name__}: {exc}")
                return pkt
        fn = self._linktypes.by_key.get(frame.linktype)
        if fn is None:
            # said once per capture by the command (a warning), not on every packet
            pkt.proto = "UNKNOWN"
            from .registry import add_data
            add_data(pkt, data, 0, len(data))
            return pkt
        if self.strict:
            fn.dissect(pkt, data, 0, len(data), self.session)
            return pkt
        try:
            fn.dissect(pkt, data, 0, len(data), self.session)
        except MemoryError:
            out_of_memory()
            raise
        except Exception as exc:  # a dissector bug must not stop the capture: report it on the packet
            last = pkt.layers[-1].proto if pkt.layers else "frame"
            pkt.set_malformed(f"{last}: dissector error: {type(exc).__name__}: {exc}")
        return pkt

    def run(self, frames: Iterable[Frame]) -> Iterator[Packet]:
        dissect = self.dissect
        for frame in frames:
            yield dissect(frame)
