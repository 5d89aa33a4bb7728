"""The one pipeline of every command: frames → dissection → analysis → display filter → sinks.

``Pipeline(source, options, sinks)`` is what ``decode``, ``flows``, ``stats``, ``expert``,
``conversations``, ``annotate``, live capture and the TUI run.  A frame source (a capture reader)
is pulled with ``run()`` or ``packets()``; without one, frames are pushed with ``feed(frame)``
(live capture, a background indexer).  ``finish()`` ends the analysis, then the sinks.

A sink is a small object with ``packet(pkt)`` (each packet the display filter shows, in order) and
``finish()``; it may also have ``attach(pipeline)`` (called once, before any frame: the sink reads
``t0``, ``frames``, ``session`` from the pipeline), the analyzer's hooks ``on_finding(finding)`` and
``on_record(kind, record)`` (a sink with one turns the analysis on), and ``flush()``, called when the
source has to wait for input (``idle()``), so that output never waits for input.

The analysis may hold a finding until the capture shows whether it stands (a gap in the PSNs that a
delayed packet may fill: rdmaspy.analysis.transport); while it does (``Analyzer.hold_from``), the
packets from the one it is about on wait here, and reach the sinks in order once it is decided, with
their findings final.  Only where a sink shows packets with their analysis (``Options.packet_fields``):
a command of records and findings alone gets each finding once it is decided.  The wait is bounded (the
analysis decides within a window of frames); when the source has to wait for input, what waits is shown
as it is (its findings then come later).

Kept apart from the command line so that it can be compiled with the dissectors (setup.py): the
loop runs once per packet, and at a few hundred thousand packets a second its own overhead counts.
"""
from __future__ import annotations

import gc
from abc import abstractmethod

from .budget import out_of_memory
from .engine import Engine, Session
from .packet import Frame, Packet
from .readers.base import PENDING_SIGNALS, deliver_signals
from .typenames import TYPE_CHECKING, Any, Callable, Final, Iterable, Iterator, Protocol, Sequence, mypyc_attr

if TYPE_CHECKING:
    from .analysis.analyzer import Analyzer

# Frames between two collections of every generation when the pipeline pulls its source.
FULL_COLLECT_EVERY = 65_536
# Frames between two collections of the young generations, made between frames: a packet's layers and
# items are freed by their reference counts and form no cycle, so a collection made while a packet is
# being built (as the collector's own threshold makes them) would walk them for nothing.
YOUNG_COLLECT_EVERY = 1_024
# The young objects alive that still start a collection on their own (a frame of huge trees).
YOUNG_THRESHOLD = 100_000

# A compiled display filter: does the packet match (t0: the first frame's time)?
Matcher = Callable[[Packet, int], bool]


class Sink(Protocol):
    """What a presentation gives the pipeline: every shown packet, then the end.  A sink of the
    analysis' records alone says so with a class attribute ``reads_packets = False``: its ``packet`` is
    then not called (a call a frame for nothing).  A sink with ``on_record`` that reads no ``PsnEvent``
    says ``wants_psn_events = False``: when no sink wants them, the analysis makes none; the same with
    ``wants_credit_series = False`` for the credit ledgers' ``CreditSeries``.  One that keeps no
    ``Transaction`` past its ``on_record`` says ``keeps_transactions = False``: when none keeps them, a closed
    transaction's segments no longer point back at it (``Segment.transaction`` is None once handed on)."""

    def packet(self, pkt: Packet) -> None: ...

    def finish(self) -> None: ...


@mypyc_attr(allow_interpreted_subclasses=True)
class PacketSink:
    """A base for the sinks on the per-packet path (summary lines, trees, JSON): compiled, the pipeline
    calls ``packet`` of a subclass directly, where a bound method kept in a list is a generic call a
    packet.  Any other object with the ``Sink`` methods is a sink too."""

    @abstractmethod
    def packet(self, pkt: Packet) -> None:
        """Every packet the display filter shows, in order."""

    @abstractmethod
    def finish(self) -> None:
        """After the last packet."""

    def prints(self, index: int) -> bool:
        """Whether this sink prints the shown packet of that index (from 0): a sink that says so with
        ``deals_turns = True`` prints some only (rdmaspy.output.turns), and the analysis adds its fields
        to those alone, where no display filter reads them."""
        return True


class Options:
    """What the pipeline does besides dissecting: analysis, display filter, how many packets to show."""

    __slots__ = ("analyze", "matcher", "count", "packet_fields")

    def __init__(self, analyze: bool = False, matcher: Matcher | None = None, count: int = 0,
                 packet_fields: bool = True) -> None:
        self.analyze = analyze        # run the analysis (on by itself when a sink takes its findings or records)
        self.matcher = matcher        # show only the packets it matches
        self.count = count            # stop after this many shown packets; 0: all
        # the analysis adds its fields to the packets; False: no sink shows a packet and no filter reads
        # them (a command of records or findings only)
        self.packet_fields = packet_fields or matcher is not None


def _any_wants(sinks: list[Sink], flag: str) -> bool:
    """Whether one of ``sinks`` wants what ``flag`` names (a sink that does not say wants it)."""
    return any(getattr(s, flag, True) for s in sinks)


class Pipeline:
    """Dissects (and analyses) frames in capture order and hands the shown packets to the sinks."""

    def __init__(self, source: Iterable[Frame] | None, options: Options | None = None,
                 sinks: Sequence[Sink] = (), engine: Engine | None = None) -> None:
        opts = options if options is not None else Options()
        self.source = source
        self.options = opts
        self.sinks: list[Sink] = list(sinks)
        self.engine = engine if engine is not None else Engine()
        if not opts.packet_fields:
            self.engine.session.info = False     # no sink shows a packet: the dissectors skip its Info text
        self.t0 = -1                  # timestamp (ns) of the first frame; -1 before it
        self.t_last = -1              # timestamp of the last frame seen
        self.t_prev = -1              # timestamp of the frame before it (-1: none)
        self.frames = 0               # frames seen
        self.shown = 0                # packets the display filter let through
        self.matched = False          # whether the last packet handed to the sinks was shown
        self.done = False             # the count of packets to show is reached
        # Packets analysed but not shown yet (from ``waiting[first_waiting]`` on: a list, whose appends are
        # compiled, emptied when they are all shown): a finding about the first of them is still held.
        self.waiting: list[Packet] = []
        self.first_waiting = 0
        self.waits = 0                # how many (a machine integer: tested at every packet)
        # The packets shown since the caller last took them (``packets()``, the TUI's detail), or None.
        self.shown_now: list[Packet] | None = None
        self._finished = False
        self._matcher = opts.matcher
        self._count = opts.count
        # Packets wait for their held findings only where a sink shows them with their analysis (not for a
        # command of records and findings alone: stats, flows, expert get each finding once it is decided),
        # or where a sink colours packets by their findings (the TUI's analysis pass, which adds no fields).
        self._holds = opts.packet_fields or any(getattr(s, "colours_by_findings", False) for s in self.sinks)
        readers = [s for s in self.sinks if getattr(s, "reads_packets", True)]
        self._packet_sinks: list[PacketSink] = [s for s in readers if isinstance(s, PacketSink)]
        self._packet_hooks: list[Callable[[Packet], None]] = [s.packet for s in readers
                                                              if not isinstance(s, PacketSink)]
        # The one sink, printing some of the packets only, and nothing filtered: a packet's index among
        # those shown is known as it comes (the packets before it are shown or waiting).
        self._dealer: PacketSink | None = None
        if (opts.matcher is None and len(self.sinks) == 1 and len(self._packet_sinks) == 1
                and getattr(self._packet_sinks[0], "deals_turns", False)):
            self._dealer = self._packet_sinks[0]
        findings: list[Any] = []
        records: list[Any] = []
        for s in self.sinks:
            on_finding = getattr(s, "on_finding", None)
            if on_finding is not None:
                findings.append(on_finding)
            on_record = getattr(s, "on_record", None)
            if on_record is not None:
                records.append(on_record)
        self.analyzer: Analyzer | None = None
        if opts.analyze or findings or records:
            import_analysis_modules()
            from .analysis.analyzer import Analyzer
            self.analyzer = Analyzer(on_finding=_fan_out(findings), on_record=_fan_out(records), keep_findings=False,
                                     budget=self.engine.session.budget, packet_fields=opts.packet_fields)
            self.analyzer.engine = self.engine
            # A sink of records says what it does not read: no PsnEvent (wants_psn_events = False), no
            # CreditSeries (wants_credit_series = False: the ledgers keep no samples), no transaction kept
            # past its on_record (keeps_transactions = False). The analysis makes what one of them reads.
            record_sinks = [s for s in self.sinks if getattr(s, "on_record", None) is not None]
            self.analyzer.psn_events = _any_wants(record_sinks, "wants_psn_events")
            self.analyzer.credit_series = _any_wants(record_sinks, "wants_credit_series")
            self.analyzer.transactions_kept = _any_wants(record_sinks, "keeps_transactions")
        if self.analyzer is None:
            self.engine.session.facts = False    # no analysis: the dissectors skip the facts only it reads
        if opts.matcher is None and self.sinks and not any(getattr(s, "fills_layers", True)
                                                           or getattr(s, "wants_names", False) for s in self.sinks):
            self.engine.session.names = False    # nothing shows nfs.name nor a file: NFS learns no file names
        self._flushes: list[Callable[[], None]] = []
        for s in self.sinks:
            attach = getattr(s, "attach", None)
            if attach is not None:
                attach(self)
            flush = getattr(s, "flush", None)
            if flush is not None:
                self._flushes.append(flush)
        if source is not None and hasattr(source, "on_wait"):
            # a reader about to wait for input (a pipe) lets the output made so far go out first
            setattr(source, "on_wait", self.idle)

    @property
    def session(self) -> Session:
        """The state kept across packets: the connection table, reassembly."""
        return self.engine.session

    def feed(self, frame: Frame) -> Packet:
        """Dissect and analyse one frame; the sinks get it when the filter shows it (``matched``), once no
        finding about it or a packet before it is held (``waiting``)."""
        if self.t0 < 0:
            self.t0 = frame.ts
        self.t_prev = self.t_last
        self.t_last = frame.ts
        self.frames += 1
        pkt = self.engine.dissect(frame)    # compiled: a method call on the class, not through a bound method
        an = self.analyzer
        if an is not None:
            dealer = self._dealer
            if dealer is not None:
                pkt.fields_wanted = dealer.prints(self.shown + self.waits)
            an.feed(pkt)
            if an.hold_from and self._holds or self.waits:
                self.waiting.append(pkt)
                self.waits += 1
                self._release(an.hold_from)
                return pkt
        # _show, written out: compiled, a call a packet saved on the way of every packet
        matcher = self._matcher
        if self.done or (matcher is not None and not matcher(pkt, self.t0)):
            self.matched = False
            return pkt
        self.matched = True
        for sink in self._packet_sinks:
            sink.packet(pkt)
        for hook in self._packet_hooks:
            hook(pkt)
        self.shown += 1
        shown_now = self.shown_now
        if shown_now is not None:
            shown_now.append(pkt)
        if self.shown == self._count:
            self.done = True
        return pkt

    def _release(self, until: int) -> None:
        """Show the packets waiting before frame ``until`` (0: all of them)."""
        waiting = self.waiting
        while self.waits and (until == 0 or waiting[self.first_waiting].frame.num < until):
            pkt = waiting[self.first_waiting]
            self.first_waiting += 1
            self.waits -= 1
            if not self.waits:
                waiting.clear()
                self.first_waiting = 0
            elif self.first_waiting >= 1024 and self.first_waiting * 2 >= len(waiting):
                del waiting[:self.first_waiting]        # the packets shown are let go while others wait
                self.first_waiting = 0
            self._show(pkt)

    def _show(self, pkt: Packet) -> None:
        matcher = self._matcher
        if self.done or (matcher is not None and not matcher(pkt, self.t0)):
            self.matched = False
            return
        self.matched = True
        for sink in self._packet_sinks:
            sink.packet(pkt)
        for hook in self._packet_hooks:
            hook(pkt)
        self.shown += 1
        shown_now = self.shown_now
        if shown_now is not None:
            shown_now.append(pkt)
        if self.shown == self._count:
            self.done = True

    def packets(self) -> Iterator[Packet]:
        """Pull every frame from the source; yields each shown packet after the sinks have had it.
        The pipeline is finished when the source ends or the count is reached (the packets still waiting
        are shown then, and yielded after it)."""
        frames = iter(self._pulled_source())      # held here, not on the loop's stack: see run()
        thresholds = _collect_rarely()
        shown: list[Packet] = []
        self.shown_now = shown
        try:
            left = FULL_COLLECT_EVERY
            young = YOUNG_COLLECT_EVERY
            for frame in frames:
                if _PENDING_SIGNALS:
                    deliver_signals()
                self.feed(frame)            # compiled: a direct call (a bound method in a local is a generic one)
                young -= 1
                if young == 0:
                    gc.collect(1)
                    young = YOUNG_COLLECT_EVERY
                left -= 1
                if left == 0:
                    gc.collect()
                    left = FULL_COLLECT_EVERY
                if shown:
                    yield from shown
                    shown.clear()
                    if self.done:
                        break
            self.finish()                   # with the run's collector: see run()
        except MemoryError:
            out_of_memory()
            raise
        finally:
            _collect_as_before(thresholds)
        self.shown_now = None
        yield from shown

    def run(self, hook: Callable[[int], int] | None = None, at: int = -1, young_every: int = 0,
            full_every: int = 0) -> None:
        """Pull every frame from the source through the sinks, then finish: the loop of ``packets``
        without its generator (compiled, a generator's step costs its resumption and its locals kept
        in an object, a frame at a time).  ``hook(n)``, if given, is called once ``at`` frames are fed,
        and again once as many as it returns (a long pass's checkpoints and progress); an exception it
        raises ends the run without finishing.  ``young_every``: the frames between two collections of
        the young generations, if not ``YOUNG_COLLECT_EVERY`` (a pass whose sinks keep next to nothing
        alive collects them more rarely: each collection walks what the analysis keeps alive, whatever
        the garbage).  ``full_every``: the frames between two collections of every generation, if not
        ``FULL_COLLECT_EVERY`` (a pass whose sinks break the analysis' cycles leaves little for them)."""
        # The reader's generator held by a name: out of memory, the loop's own reference goes as the
        # exception leaves it, and a generator let go of is closed then, which needs memory (CPython
        # prints that failure itself). Held, it is closed after the reserve is given back (below).
        frames = iter(self._pulled_source())
        every = young_every if young_every > 0 else YOUNG_COLLECT_EVERY
        full = full_every if full_every > 0 else FULL_COLLECT_EVERY
        thresholds = _collect_rarely()
        try:
            left = full
            young = every
            for frame in frames:
                if _PENDING_SIGNALS:
                    deliver_signals()
                self.feed(frame)
                young -= 1
                left -= 1
                if left == 0:
                    gc.collect()            # the young generations with the rest
                    left = full
                    young = every
                elif young == 0:
                    gc.collect(1)
                    young = every
                if self.frames == at and hook is not None:
                    at = hook(at)
                if self.done:
                    break
            # Still with the run's collector: the collector's own thresholds, once back, would start
            # collections of the oldest generation as the analysis' last records are made, each walking
            # all that the sinks hold by now (a TUI's store at the end of a large file).
            self.finish()
        except MemoryError:
            out_of_memory()
            raise
        finally:
            _collect_as_before(thresholds)

    def _pulled_source(self) -> Iterable[Frame]:
        source = self.source
        if source is None:
            raise ValueError("this pipeline has no frame source: push frames with feed()")
        return source

    def idle(self) -> None:
        """No frame is at hand (the source waits for input): the packets waiting are shown as they are
        (output never waits for input), and the sinks send out what they hold."""
        if self.waits:
            self._release(0)
        for flush in self._flushes:
            flush()

    def finish(self) -> None:
        """End the analysis (its last records and findings reach the sinks), then the sinks; once."""
        if self._finished:
            return
        self._finished = True
        if self.analyzer is not None:
            self.analyzer.finish()
        self._release(0)
        for s in self.sinks:
            s.finish()


# The signals deferred while a run pulls frames (readers.base.defer_signal): delivered between two frames.
_PENDING_SIGNALS: Final = PENDING_SIGNALS


def _collect_rarely() -> tuple[int, int, int]:
    """Before a pull of the whole source: what is loaded by now (modules, declarations, tables)
    outlives the run, so the cycle collector is kept off it, and runs less often, since packets are
    freed by their reference counts: the young generations between frames (``YOUNG_COLLECT_EVERY``),
    on its own only when a frame leaves ``YOUNG_THRESHOLD`` young objects alive.  With these thresholds
    the oldest generation would hardly ever be collected, and the analysis makes cycles that live long
    (a transaction and its segments): the puller collects them every FULL_COLLECT_EVERY frames, or
    their garbage would grow with the capture.  Returns the thresholds to put back (a command may run
    inside another program).

    The whole heap is collected first only after an earlier run, not to freeze what it left (a
    worker's previous task: its state); before a process's first run the loading leaves next to no cycles
    (none before ``decode``'s), and a full collection would walk every object loaded to find them (some
    12 M instructions, 4 % of a thousand NFS packets' ``-V``).  What is frozen is collectable
    again once the run ends."""
    thresholds = gc.get_threshold()
    if _RUNS_ENDED:
        gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, 20, 100)
    return thresholds


def _collect_as_before(thresholds: tuple[int, int, int]) -> None:
    gc.set_threshold(*thresholds)
    gc.unfreeze()
    if not _RUNS_ENDED:
        _RUNS_ENDED.append(True)


# Whether a run (``_collect_rarely`` .. ``_collect_as_before``) has ended in this process (Final: a static).
_RUNS_ENDED: Final[list[bool]] = []


def import_analysis_modules() -> None:
    """Every analysis module the analyzer imports (``analysis.analyzer.load_modules``: importing is
    registering), in its order, named here so that a compiled build imports its compiled ones natively:
    through importlib each cost some 300,000 instructions (the finder, in Python, and the module's own shared
    object).  ``load_modules`` then finds them imported, and imports any the list does not name
    (tests/test_registry.py keeps it whole).  Not in the analyzer: these modules import it."""
    from .analysis import (  # noqa: F401
        chunks, connections, correlation, credits, ledger, model, nfs_binding, nfs_facts, nvme_facts,
        nvme_transactions, rpcrdma_facts, rpcrdma_fields, rpcrdma_rules, rpcrdma_state, transactions, transport, ulp)


def _fan_out(hooks: list[Any]) -> Any:
    """One callable for the analyzer from the sinks' hooks (None when there are none)."""
    if not hooks:
        return None
    if len(hooks) == 1:
        return hooks[0]

    def every(*args: Any) -> None:
        for h in hooks:
            h(*args)
    return every
