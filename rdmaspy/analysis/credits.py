"""Credits: requested, granted and outstanding calls, per direction of calls on a connection.

RPC-over-RDMA v1 (RFC 8166 §3.3.1): a requester asks for credits in each call's rdma_credit and
the responder grants them in each reply's; the requester keeps no more calls outstanding than it
was granted.  Version 2 (draft-01 §4.2.1): every message carries the sender's grant to its peer in
the low 16 bits (never zero) and its own maximum in the high 16; an RDMA2_NOMSG without chunks
and XID 0 refreshes the grant alone (§4.2.1.2), and a client sends a single message until the
server's first grant (§4.2.3); in version 1 too the grant is one until the first reply (RFC 8166
§3.3.3).

A ``CreditLedger`` follows one direction of calls (forward: client to server; backchannel: the
reverse).  Its time series of ``CreditSample``s goes out in pieces (``CreditSeries``) through the
analyzer's record sink so that memory does not grow with the capture; the flows document, the TUI
and plots read the same records.  At the end its ``summary`` is a ``CreditSummary``.
"""
from __future__ import annotations

from ..typenames import Callable, Final, mypyc_attr
from .model import CallDirection, CreditSample, CreditSeries, CreditSummary, Record
from .rules import declare

EXCEEDED: Final = declare(
    "credits.exceeded", "error", "credits",
    "{outstanding} calls outstanding {direction}, more than the {granted} credits granted",
    "RFC 8166 §3.3.1 (a requester keeps no more calls outstanding than granted); draft-01 §4.2.1.1")
ZERO_GRANT: Final = declare(
    "credits.zero_grant", "error", "credits",
    "a grant of zero credits: the peer can send nothing more (deadlock)",
    "RFC 8166 §3.3.1; draft-01 §4.2.1.1 (the granted credit value MUST NOT be zero)")
INITIAL_SINGLE: Final = declare(
    "credits.initial_single", "error", "credits",
    "the client has {outstanding} calls outstanding before the server granted any credits",
    "RFC 8166 §3.3.3 (the credit grant starts at one); draft-01 §4.2.3 (a single message until the first grant)")
REFRESH: Final = declare(
    "credits.refresh", "note", "credits",
    "credit refresh: {granted} credits granted without a message (maximum outstanding {max_outstanding})",
    "draft-01 §4.2.1.2 / §6.3.2 (asynchronous credit grant)")

SERIES_CHUNK: Final = 1024      # points kept before they go to the record sink


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class CreditLedger:
    """Credits of one direction of calls on one connection."""

    __slots__ = ("conn_id", "direction", "requested", "granted", "max_outstanding", "outstanding", "peak",
                 "calls", "grants", "zero_grants", "exceeded", "refreshes", "samples", "emit", "first_grant",
                 "initial_limit", "min_granted", "max_granted")

    def __init__(self, conn_id: int, direction: CallDirection, emit: Callable[[Record], None] | None,
                 initial_limit: int | None = None) -> None:
        self.conn_id = conn_id
        self.direction = direction
        self.requested: int | None = None    # last credit value in a call (v1)
        self.granted: int | None = None      # the limit in force
        self.max_outstanding: int | None = None   # v2: the grantor's maximum
        self.outstanding = 0
        self.peak = 0
        self.calls = 0
        self.grants = 0
        self.zero_grants = 0
        self.exceeded = 0
        self.refreshes = 0
        self.samples: list[CreditSample] = []
        self.emit = emit                     # the analyzer's record sink; None: no sink reads a series, none kept
        self.first_grant: int | None = None  # frame of the first grant
        self.initial_limit = initial_limit   # limit before the first grant (v2: 1), None: unknown
        self.min_granted: int | None = None
        self.max_granted: int | None = None

    @property
    def limit(self) -> int | None:
        return self.granted if self.granted is not None else self.initial_limit

    def _sample(self, ts: int, frame: int) -> None:
        if self.emit is None:
            return
        samples = self.samples
        if samples:
            last = samples[-1]
            if last.ts == ts:            # one sample per instant: the state after everything at ts
                last.frame = frame
                last.outstanding = self.outstanding
                last.granted = self.granted
                last.requested = self.requested
                return
        if len(samples) >= SERIES_CHUNK:  # the full piece goes out only now: its last instant is over
            self.flush()
            samples = self.samples
        samples.append(CreditSample(self.conn_id, self.direction, ts, frame, self.granted, self.requested,
                                    self.outstanding))

    def flush(self) -> None:
        emit = self.emit
        if self.samples and emit is not None:
            emit(CreditSeries(self.conn_id, self.direction, self.samples))
            self.samples = []

    def call(self, ts: int, frame: int, requested: int | None) -> bool:
        """A call went out; True when it exceeds the limit in force."""
        self.calls += 1
        if requested is not None:
            self.requested = requested
        self.outstanding += 1
        if self.outstanding > self.peak:
            self.peak = self.outstanding
        self._sample(ts, frame)
        lim = self.limit
        if lim is not None and self.outstanding > lim:
            self.exceeded += 1
            return True
        return False

    def answered(self, ts: int, frame: int) -> None:
        """A call of this direction got its reply (or was abandoned)."""
        if self.outstanding:
            self.outstanding -= 1
        self._sample(ts, frame)

    def grant(self, ts: int, frame: int, granted: int, max_outstanding: int | None = None) -> bool:
        """The peer granted credits; True when the grant is zero."""
        self.grants += 1
        self.granted = granted
        if max_outstanding is not None:
            self.max_outstanding = max_outstanding
        if self.first_grant is None:
            self.first_grant = frame
        if self.min_granted is None or granted < self.min_granted:
            self.min_granted = granted
        if self.max_granted is None or granted > self.max_granted:
            self.max_granted = granted
        self._sample(ts, frame)
        if granted == 0:
            self.zero_grants += 1
            return True
        return False

    def summary(self) -> CreditSummary:
        return CreditSummary(self.direction, self.requested, self.granted, self.min_granted, self.max_granted,
                             self.max_outstanding, self.calls, self.grants, self.peak, self.outstanding,
                             self.zero_grants, self.exceeded, self.refreshes)
