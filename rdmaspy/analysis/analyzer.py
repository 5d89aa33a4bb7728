"""The analysis pipeline: dissected packets in, records and findings out.

``Analyzer.feed(pkt)`` is called for every packet in capture order, after dissection and before
presentation.  Each analysis module (transport PSNs, RPC transactions, credits, chunks, ...) sees
the packet, may attach analysis items to it (so that display filters and outputs reach them) and
may report findings.  Records of finished things (a ``Transaction``, a piece of a credit series, a
connection's summary at the end: the types of ``model``) are passed to the record sink as soon as
they are final, so memory is bounded by what is still open, not by the length of the capture.
"""
from __future__ import annotations

from .. import budget as _budget
from ..budget import Budget, Holder
from ..packet import Packet
from ..typenames import TYPE_CHECKING, Callable, Final, Protocol, mypyc_attr
from .model import Record
from .rules import Finding, Rule, declare

if TYPE_CHECKING:
    from ..engine import Engine

# An analysis module that fails on a packet must not end the run: the packet gets this finding.
ANALYSIS_ERROR: Final = declare("analysis.error", "error", "malformed",
                                "analysis module {module} failed on this packet: {error}",
                                "rdmaspy (a defect of the analyzer, not of the traffic)")
# The state kept across packets reached the memory budget: the oldest of it was given up.
MEMORY_BUDGET: Final = declare(_budget.RULE, "warning", "memory",
                               "memory budget of {limit_mib} MiB reached: {entries} of the oldest {what} given up "
                               "({freed_kib} KiB); raise it with --memory-budget",
                               _budget.SOURCE)


class AnalysisModule(Protocol):
    def packet(self, pkt: Packet) -> None: ...
    def finish(self) -> None: ...


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Module(Holder):
    """The base of the analysis modules rdmaspy ships: compiled, the analyzer calls a subclass's ``packet``
    through its class (a method of a protocol is a generic call, its arguments boxed and parsed again).
    A module that keeps state joins the memory budget as a ``Holder`` (one that keeps none never joins)."""

    def packet(self, pkt: Packet) -> None:
        """See one packet, in capture order (a module that needs none of them keeps this)."""

    def finish(self) -> None:
        """The capture has ended: send what is still open."""


class _Foreign(Module):
    """An analysis module of another shape (a plugin's, a test's), called as it is."""

    def __init__(self, module: AnalysisModule) -> None:
        self.module = module

    def packet(self, pkt: Packet) -> None:
        self.module.packet(pkt)


# Module factories, in the order they see each packet; analysis modules register here on import.
MODULES: list[tuple[str, Callable[["Analyzer"], AnalysisModule]]] = []
# The modules that only add fields to the packets (``rpcrdma.analysis.*``): not run when no packet is shown.
FIELD_MODULES: set[str] = set()


def register(name: str, factory: Callable[["Analyzer"], AnalysisModule], fields_only: bool = False) -> None:
    if any(n == name for n, _ in MODULES):
        raise ValueError(f"analysis module {name} registered twice")
    MODULES.append((name, factory))
    if fields_only:
        FIELD_MODULES.add(name)


@mypyc_attr(serializable=True, allow_interpreted_subclasses=True)
class Analyzer:
    def __init__(self, on_finding: Callable[[Finding], None] | None = None,
                 on_record: Callable[[Record], None] | None = None,
                 keep_findings: bool = True, strict: bool = False, budget: Budget | None = None,
                 packet_fields: bool = True) -> None:
        """``packet_fields``: add the analysis fields to the packets (False: a command that shows no
        packet, only records or findings — ``stats``, ``flows``, ``expert`` — spares their cost)."""
        # One budget with the engine's (``engine.session.budget``) bounds dissection and analysis together.
        self.budget = budget if budget is not None else Budget()
        self.budget.analysis_reports = True
        load_modules()
        self.strict = strict                # tests: let module exceptions through
        self.on_finding = on_finding
        self.on_record = on_record          # gets each record of the model as it becomes final
        # PsnEvent records (each retransmission, loss, NAK ...) are made only for a reader of them: the
        # pipeline clears this when none of its sinks wants them (``wants_psn_events = False``).
        self.psn_events = on_record is not None
        # ... and the credit ledgers' series (CreditSeries) likewise (``wants_credit_series = False``)
        self.credit_series = on_record is not None
        # Whether a sink may keep the transactions it is handed (the pipeline clears this when none does:
        # ``keeps_transactions = False``); else the analysis lets a closed one go (``Correlator.hand_on``).
        self.transactions_kept = on_record is not None
        self.keep_findings = keep_findings
        self.packet_fields = packet_fields  # modules that add fields to packets add none when False
        self.findings: list[Finding] = []
        self.modules: dict[str, AnalysisModule] = {}
        for name, factory in MODULES:
            if packet_fields or name not in FIELD_MODULES:
                self.modules[name] = factory(self)
        self._names: list[str] = []
        self._feeders: list[Module] = []
        self._set_feeders()
        self.packets = 0
        # The frame of the oldest packet a finding is still held on (the capture may refute it: see
        # rdmaspy.analysis.transport); 0: none.  The pipeline shows no packet from it on until it is decided.
        self.hold_from = 0
        self.engine: Engine | None = None   # the Engine whose packets it sees, for commands that need its tables

    def show_fields(self) -> None:
        """Add the analysis fields to the packets from now on: an analyzer made without them
        (``packet_fields=False``) whose state a pipeline that shows packets takes on (the TUI's detail
        from a checkpoint of its pass).  The modules that only add fields keep no state: they are made
        now, in their place; the others hold the same state either way and are told."""
        if self.packet_fields:
            return
        self.packet_fields = True
        modules: dict[str, AnalysisModule] = {}
        for name, factory in MODULES:
            module = self.modules.get(name)
            if module is None:
                module = factory(self)
            elif hasattr(module, "packet_fields"):
                setattr(module, "packet_fields", True)
            modules[name] = module
        self.modules = modules
        self._set_feeders()

    def _set_feeders(self) -> None:
        """The modules that see each packet, in order, and their names: a module that keeps the base's
        ``packet`` (it reads records or the end alone) is not called a packet for nothing."""
        self._names = []
        self._feeders = []
        for name, m in self.modules.items():
            feeder = m if isinstance(m, Module) else _Foreign(m)
            if type(feeder).packet is not Module.packet:
                self._names.append(name)
                self._feeders.append(feeder)

    def feed(self, pkt: Packet) -> None:
        self.packets += 1
        feeders = self._feeders
        if self.strict:
            for m in feeders:
                m.packet(pkt)
        else:
            # one handler around the whole round (compiled, a handler and a pair unpacked a module cost
            # as much as the call); after a failure the round goes on from the next module
            i = 0
            n = len(feeders)
            while i < n:
                try:
                    while i < n:
                        feeders[i].packet(pkt)
                        i += 1
                except MemoryError:
                    _budget.out_of_memory()
                    raise
                except Exception as exc:   # one packet's analysis failed: say so on it and go on
                    self.report(ANALYSIS_ERROR, pkt.frame.num, pkt.frame.ts, pkt=pkt, module=self._names[i],
                                error=f"{type(exc).__name__}: {exc}")
                    i += 1
        if self.budget.notices:
            self._budget_findings(pkt)

    def _budget_findings(self, pkt: Packet) -> None:
        for n in self.budget.take_notices():
            self.report(MEMORY_BUDGET, pkt.frame.num, pkt.frame.ts, pkt=pkt, what=n.what, entries=n.entries,
                        freed_kib=n.freed >> 10, limit_mib=n.limit >> 20)

    def finish(self) -> None:
        for m in self.modules.values():
            m.finish()

    # -- used by analysis modules ---------------------------------------------------------------
    def report(self, rule: Rule, frames: tuple[int, ...] | int, ts: int, conn: int | None = None,
               xid: int | None = None, pkt: Packet | None = None, **args: object) -> Finding:
        """Record a finding; with ``pkt`` it also joins that packet's expert list."""
        return self.report_args(rule, frames, ts, conn, xid, pkt, args)

    def report_args(self, rule: Rule, frames: tuple[int, ...] | int, ts: int, conn: int | None,
                    xid: int | None, pkt: Packet | None, args: dict[str, object]) -> Finding:
        """``report`` with the rule's arguments as one dict: a wrapper passing on ``**args`` would be a
        generic call compiled (some 8,000 instructions a finding)."""
        if isinstance(frames, int):
            frames = (frames,)
        f = Finding(rule, frames, conn, xid, args, ts)
        if self.keep_findings:
            self.findings.append(f)
        if pkt is not None:
            if pkt.expert is None:
                pkt.expert = []
            pkt.expert.append(f)   # type: ignore[arg-type]
        if self.on_finding is not None:
            self.on_finding(f)
        return f

    def emit(self, record: Record) -> None:
        if self.on_record is not None:
            self.on_record(record)


_LOADED = False


# The host traces' join (``hostjoin``, its records ``hostmodel``) registers no analysis module: it is
# imported by ``--host-trace`` alone (its imports were some 65 M instructions of every analysis command).
HOST_TRACE_MODULES: Final = ("hostjoin", "hostmodel")


def load_modules() -> None:
    """Import every analysis module of rdmaspy.analysis: importing is registering."""
    global _LOADED
    if _LOADED:
        return
    from .. import analysis
    from ..registry import import_all
    import_all(analysis, skip=("analyzer", "rules") + HOST_TRACE_MODULES)
    _LOADED = True
