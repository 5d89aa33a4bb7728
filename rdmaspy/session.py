"""The state of one capture's dissection, kept across its packets (connections, pending calls, messages
being rebuilt), and the memory budget every holder of state charges.  Below the dissectors: they and the
connection tracker receive it as ``ctx``; the engine makes one per capture."""
from __future__ import annotations

from .budget import Budget
from .typenames import Any, Callable, mypyc_attr


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Session:
    """State kept across the packets of one capture."""

    __slots__ = ("state", "options", "budget", "info", "facts", "names", "connections", "reassembly")

    def __init__(self, options: dict[str, Any] | None = None, budget: Budget | None = None) -> None:
        self.state: dict[str, Any] = {}
        self.options: dict[str, Any] = options or {}
        self.budget = budget if budget is not None else Budget()   # shared by every holder of state
        # Dissectors write the Info column; False when nothing shows a packet (stats, expert, flows): the
        # busiest skip the text, which is all they would make of it.
        self.info = True
        # Dissectors leave the facts only the analysis reads (RpcInfo.nfs: the NFS binding's); False when no
        # analysis runs (summary lines): the busiest skip them.
        self.facts = True
        # NFS learns file names from the replies that give them (nfs_names), for the trees, JSON and filters
        # that show nfs.name; False when no sink fills a packet's layers and no filter runs (summary lines).
        self.names = True
        # The connection table (conversation.connections), also in ``state``: every connected packet finds
        # it here, without a look-up in the dict.
        self.connections: Any = None
        # The RDMA reassembly's state (dissectors.rdma_reassembly), also in ``state`` and made there alone:
        # every READ response and WRITE asks for it, here without a look-up in the dict.
        self.reassembly: Any = None

    def get(self, key: str, factory: Callable[[], Any]) -> Any:
        v = self.state.get(key)
        if v is None:
            v = self.state[key] = factory()
        return v


def wants_facts(ctx: object) -> bool:
    """Whether a dissector given ``ctx`` leaves the facts only the analysis reads."""
    return not isinstance(ctx, Session) or ctx.facts


def wants_info(ctx: object) -> bool:
    """Whether a dissector given ``ctx`` writes the Info column (anything but a Session that says no)."""
    return not isinstance(ctx, Session) or ctx.info
