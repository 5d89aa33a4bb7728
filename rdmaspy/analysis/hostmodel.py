"""The records of a host trace joined to the wire (``hostjoin``): per trace file its clock, per transaction
what its hosts traced of it (``HostView``: the events, each registration's life, the latency's shares).
Like ``model``, these are data: presentations (flows, export, -V, stats, the TUI) format them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..hosttrace.parse import HostEvent


@dataclass(slots=True)
class HostClock:
    """One trace file: the offset that puts its times on the capture's clock, measured over the XIDs both
    saw (``offset_ns``: the lower envelope of wire time minus host time over the events the host traced
    before the wire carried them), and how well it is known: ``low_ns``..``high_ns`` is the range the
    offset must lie in (the events traced after the wire carried them give the low end), ``spread_ns`` how
    far the typical pair lies above the envelope."""
    path: str
    number: int
    form: str = "text"
    offset_ns: int | None = None
    spread_ns: int | None = None
    low_ns: int | None = None
    high_ns: int | None = None
    matched: int = 0                    # XIDs the offset was measured over
    lines: int = 0
    events: int = 0
    kept: int = 0
    unknown: int = 0                    # events of kinds not declared, counted
    skipped: int = 0                    # lines that are no event line
    too_long: int = 0
    lost: int = 0                       # events the tracer said it lost
    first_ts: int | None = None         # the trace's span, on the capture's clock
    last_ts: int | None = None
    joined: int = 0                     # transactions that got events from this file
    host_only: int = 0                  # RPCs it traced that the capture does not show
    wire_only: int = 0                  # transactions in its span it has no event of


@dataclass(slots=True)
class Registration:
    """One memory registration the client traced for a transaction, and its life: registered (FastReg),
    used by the wire's RDMA operations, invalidated (by the server's Send With Invalidate, or locally)."""
    handle: int
    offset: int
    length: int
    chunk: str                          # read, write, reply, wp (the write pad), or "" (an MR event only)
    mr_id: int | None = None
    registered_ts: int | None = None    # xprtrdma_mr_fastreg (capture clock)
    invalidated_ts: int | None = None
    invalidation: str | None = None     # "remote" (Send With Invalidate) or "local" (LocalInv)
    unmapped_ts: int | None = None
    advertised: bool = False            # the wire's chunk lists carry it
    operations: int = 0                 # the wire's RDMA READs and WRITEs on it
    frames: list[int] = field(default_factory=list)   # their first frames
    bytes: int = 0


@dataclass(slots=True)
class HostView:
    """What the hosts traced of one transaction: its events (on the capture's clock, in time order), the
    client's registrations, the shares of its latency, and the credits the client took from its reply."""
    events: list[HostEvent] = field(default_factory=list)
    registrations: list[Registration] = field(default_factory=list)
    latency: dict[str, int] = field(default_factory=dict)   # ns: client_send, wire, server, client_reply, total
    credits_host: int | None = None     # xprtrdma_reply credits (as the client took the grant)
    credits_server: int | None = None   # svcrdma_decode_rqst credits (as the server read the call)
    cwnd: int | None = None             # the client's congestion window when the call took its slot, in credits
    credit_waits: int = 0               # times the call waited for the window (xprt_get_cong ... wait): credit-bound
    dropped: int = 0                    # events past the cap

    @property
    def host_share(self) -> float | None:
        lat = self.latency
        total = lat.get("total")
        if not total or "wire" not in lat:
            return None
        return max(0.0, min(1.0, 1.0 - lat["wire"] / total))
