"""The analysis adds its fields to the packets only when a packet can be shown or filtered on.

``stats``, ``flows`` and ``expert`` read the analysis' records and findings, never a packet's
``rpcrdma.analysis.*`` or ``ib.analysis.*`` fields: they run without the module that makes the first (a
twentieth of ``stats``) and with the transport analysis adding none of the second, and their records and
findings must not change for it.
"""
from __future__ import annotations

from conftest import capture

from rdmaspy.analysis.model import Transaction, transaction_record
from rdmaspy.analysis.transport import _UNSHOWN
from rdmaspy.commands.common import display_filter
from rdmaspy.pipeline import Options, Pipeline
from rdmaspy.readers import open_capture


class _Records:
    """Every record and finding, as text, and whether a packet carried an analysis field."""

    def __init__(self) -> None:
        self.records: list[str] = []
        self.findings: list[str] = []
        self.fields = 0
        self.transport_fields = 0
        self.info_lines = 0

    def packet(self, pkt) -> None:
        self.info_lines += bool(pkt.info)
        todo = list(pkt.layers)
        while todo:
            lay = todo.pop()
            todo.extend(lay.children or ())
            for f, *_rest in lay.items or ():
                if f.name.startswith("rpcrdma.analysis."):
                    self.fields += 1
                elif f.name.startswith("ib.analysis."):
                    self.transport_fields += 1

    def finish(self) -> None:
        pass

    def on_record(self, record) -> None:
        self.records.append(repr(record))

    def on_finding(self, finding) -> None:
        self.findings.append(f"{finding.rule} {finding.frames} {finding.text}")


def _run(name: str, options: Options) -> _Records:
    sink = _Records()
    with open_capture(str(capture(name))) as cap:
        Pipeline(cap, options, [sink]).run()
    return sink


class _Kept:
    """A sink that keeps every record it is handed; the pipeline reads what it says of itself
    (``wants_psn_events``, ``keeps_transactions``) from its class."""

    def __init__(self) -> None:
        self.records: list[object] = []

    def packet(self, pkt) -> None:
        pass

    def on_record(self, record) -> None:
        self.records.append(record)

    def finish(self) -> None:
        pass


def _kept(**says: bool) -> _Kept:
    """A ``_Kept`` sink whose class says ``says`` (``keeps_transactions=False``)."""
    return type("_Says", (_Kept,), says)()


def _analyze(name: str, *sinks) -> None:
    with open_capture(str(capture(name))) as cap:
        Pipeline(cap, Options(analyze=True, packet_fields=False), list(sinks)).run()


def test_records_and_findings_are_the_same_without_the_packet_fields():
    for name in ("rxe-nfsv3-rdma.pcap", "siw-nfsv3-loss.pcap", "rxe-nfsv3-loss.pcap"):
        with_fields = _run(name, Options(analyze=True))
        without = _run(name, Options(analyze=True, packet_fields=False))
        assert with_fields.fields > 0, name           # the capture has transactions: fields are made
        assert without.fields == 0, name
        # RoCE's acknowledgements and losses make InfiniBand transport fields (iWARP has none)
        assert with_fields.transport_fields > 0 or name.startswith("siw-"), name
        assert without.transport_fields == 0, name
        # nor the Info column's text, which the busy dissectors (InfiniBand, TCP, DDP, RPC-over-RDMA, RPC)
        # skip then: what is left is the odd packet of the others (the CM's, ARP, a segment held)
        assert without.info_lines < 0.1 * with_fields.info_lines, (name, without.info_lines)
        assert without.records == with_fields.records, name
        assert without.findings == with_fields.findings, name
        assert any(r.startswith("Transaction(") for r in without.records), name
    assert not _UNSHOWN.items, "the fields nobody shows are not kept anywhere either"


def test_a_display_filter_keeps_the_packet_fields():
    options = Options(analyze=True, matcher=display_filter("rpcrdma.analysis.latency"), packet_fields=False)
    assert options.packet_fields
    assert _run("rxe-nfsv3-rdma.pcap", options).fields > 0


def test_a_sink_of_records_alone_is_not_handed_the_packets_but_gets_every_record_and_finding():
    """A sink that says ``reads_packets = False`` (stats, flows) is not called for each packet; its
    records and findings are those a sink that reads the packets gets."""

    class Records:
        reads_packets = False

        def __init__(self):
            self.records, self.findings = [], []

        def packet(self, pkt):
            raise AssertionError("a sink of records alone was handed a packet")

        def on_record(self, rec):
            self.records.append(type(rec).__name__)

        def on_finding(self, f):
            self.findings.append(f.rule_def.id)

        def finish(self):
            pass

    class Reader(Records):
        reads_packets = True

        def __init__(self):
            super().__init__()
            self.packets = 0

        def packet(self, pkt):
            self.packets += 1

    alone, reader = Records(), Reader()
    for sink in (alone, reader):
        _analyze("rxe-nfsv3-loss.pcap", sink)
    assert reader.packets > 1000
    assert alone.records == reader.records and alone.findings == reader.findings and alone.findings


def test_psn_events_are_made_only_for_a_sink_that_reads_them():
    """A sink with ``wants_psn_events = False`` (stats, flows, the TUI, parquet) gets every other record;
    with no sink wanting them the analysis makes none, and a sink that wants them beside it still gets them."""

    def kinds(sink: _Kept) -> list[str]:
        return [type(r).__name__ for r in sink.records]

    wants, alone = _kept(), _kept(wants_psn_events=False)
    _analyze("rxe-ib_write_bw-loss.pcap", wants)
    _analyze("rxe-ib_write_bw-loss.pcap", alone)
    assert "PsnEvent" in kinds(wants) and "PsnEvent" not in kinds(alone)
    assert kinds(alone) == [k for k in kinds(wants) if k != "PsnEvent"]
    both, beside = _kept(), _kept(wants_psn_events=False)
    _analyze("rxe-ib_write_bw-loss.pcap", both, beside)
    assert kinds(both) == kinds(wants) and kinds(beside) == kinds(wants)     # made for one, handed to all


def test_a_closed_transactions_segments_point_back_at_it_unless_no_sink_keeps_it():
    """A sink that keeps the transactions it is handed (the default: it may read ``Segment.transaction`` later)
    finds each segment pointing back at its transaction; when every sink says ``keeps_transactions = False``
    (stats) the analysis clears that pointer once the transaction is handed on, and the records are the same."""

    def transactions(sink: _Kept) -> list[Transaction]:
        return [r for r in sink.records if isinstance(r, Transaction)]

    keeps, counts = _kept(), _kept(keeps_transactions=False)
    _analyze("rxe-nfsv3-loss.pcap", keeps)
    _analyze("rxe-nfsv3-loss.pcap", counts)
    kept, counted = transactions(keeps), transactions(counts)
    assert any(t.segments for t in kept) and all(s.transaction is t for t in kept for s in t.segments)
    assert all(s.transaction is None for t in counted for s in t.segments)
    assert [transaction_record(t)[:8] for t in counted] == [transaction_record(t)[:8] for t in kept]
    both, beside = _kept(), _kept(keeps_transactions=False)
    _analyze("rxe-nfsv3-loss.pcap", both, beside)         # one sink keeps them: the pointers stay for all
    assert all(s.transaction is t for t in transactions(beside) for s in t.segments)
