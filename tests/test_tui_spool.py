"""The TUI's spools: records and arrays kept on disk read back as they were written, and the
private directory they live in goes when the capture is closed."""
from __future__ import annotations

import enum
import os
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rdmaspy.tui.model import CaptureModel
from rdmaspy.tui.spool import RecordSpool, SpooledArray, SpoolDir

from conftest import capture, young_collections


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=300), st.integers(1, 17))
def test_a_spooled_array_reads_back_what_was_appended(values, block):
    d = SpoolDir()
    try:
        arr = SpooledArray(d, "Q", block=block, cached=2)
        for i, v in enumerate(values):
            arr.append(v)
            assert arr[i] == v and len(arr) == i + 1
        assert list(arr) == values
        assert [arr[i] for i in reversed(range(len(values)))] == values[::-1]
        if values:
            assert arr[-1] == values[-1]
        arr.close()
    finally:
        d.remove()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=30), st.integers(1, 17))
def test_a_spooled_array_extended_by_blocks_reads_back_every_byte(blocks, block):
    d = SpoolDir()
    try:
        arr = SpooledArray(d, "B", block=block, cached=2)
        have = b""
        for data in blocks:
            arr.extend_bytes(data)
            have += data
            assert len(arr) == len(have)
            assert bytes(arr[i] for i in range(len(have))) == have
        assert bytes(arr) == have
        arr.close()
    finally:
        d.remove()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=9000), st.lists(st.integers(), max_size=50)), max_size=40),
       st.lists(st.booleans(), min_size=40, max_size=40))
def test_a_record_spool_reads_back_every_record_by_its_offset(records, streamed):
    d = SpoolDir()
    try:
        spool = RecordSpool(d, "test-")
        offsets = [spool.add_streamed(r) if s else spool.add(r) for r, s in zip(records, streamed)]
        assert [spool.get(o) for o in offsets] == records
        spool.close()
    finally:
        d.remove()


class _Kind(enum.Enum):
    A = "a"


_plain_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20)),
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.tuples(inner, inner),
                            st.dictionaries(st.text(max_size=5), inner, max_size=4)), max_leaves=20)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.one_of(_plain_values, st.just({"kind": _Kind.A})), max_size=4), max_size=30))
def test_a_record_of_plain_values_reads_back_as_it_was_added(records):
    """``add_plain`` marshals a record of plain values, pickles one holding anything else (an enumeration);
    ``get`` reads either back, of the same types and values."""
    d = SpoolDir()
    try:
        spool = RecordSpool(d, "test-")
        offsets = [spool.add_plain(r) for r in records]
        back = [spool.get(o) for o in offsets]
        assert back == records and repr(back) == repr(records)
        spool.close()
    finally:
        d.remove()


def test_a_spool_directory_is_private_and_a_capture_leaves_nothing_behind():
    d = SpoolDir()
    assert oct(os.stat(d.path).st_mode & 0o777) == "0o700"
    f = d.file("test-")
    assert os.listdir(d.path) == []             # made unlinked
    f.close()
    d.remove()
    model = CaptureModel(str(capture("rxe-nfsv3-rdma.pcap")))
    assert not os.path.exists(model.spool_dir.path)      # gone once the spools are made
    model.start()
    assert model.wait(60)
    assert len(model.analysis.transactions) > 0 and model.index.row(0)
    model.close()


class _Reported:
    """A sink beside the store: each finding as the analysis reported it, its message made at once."""

    wants_psn_events = False
    reads_packets = False

    def __init__(self) -> None:
        self.findings: list[tuple[str, str, str, int, int | None, str, int]] = []

    def packet(self, pkt) -> None:
        pass

    def on_finding(self, f) -> None:
        self.findings.append((f.severity, f.rule_def.id, f.group, f.frames[0] if f.frames else 0, f.conn, f.text,
                              f.ts))

    def finish(self) -> None:
        pass


@pytest.mark.parametrize("name, reported_least, credits_and_items", [("rxe-nfsv41-loss.pcap", 20, False),
                                                                      ("synth_rocev2_cm_rpcrdma.pcap", 6, True)])
def test_the_stores_findings_read_back_as_the_analysis_reported_them(name, reported_least, credits_and_items):
    """The store keeps a finding's values and makes its message when the expert view reads it back: the
    entries, in order, are the findings with the text ``Finding.text`` gives as they are reported, the
    dissectors' items among them with theirs; the credit findings are indexed again for the credits view."""
    from rdmaspy.pipeline import Options, Pipeline
    from rdmaspy.readers import open_capture
    from rdmaspy.tui.analysis_store import AnalysisStore

    d = SpoolDir()
    store = AnalysisStore(d)
    reported = _Reported()
    with open_capture(str(capture(name))) as cap:
        Pipeline(cap, Options(analyze=True, packet_fields=False), [store.sink(), store, reported]).run()
    store.finish()
    entries = [store.entry(store.finding_offsets[i]) for i in range(len(store.finding_offsets))]
    ours = [(e.severity, e.rule, e.group, e.frame, e.conn, e.text, e.ts) for e in entries
            if e.rule in {r for _s, r, *_rest in reported.findings}]
    assert len(reported.findings) >= reported_least and ours == reported.findings
    assert all(isinstance(e.text, str) and e.text for e in entries)
    credits = [store.entry(o) for o in store.credit_findings(lambda conn: True)]
    assert credits == [e for e in entries if e.group == "credits"]
    assert bool(credits) == credits_and_items and (len(entries) > len(ours)) == credits_and_items
    assert sum(g.count for g in store.groups()) == store.finding_count == len(entries)
    # each finding counted in its group (severity, rule, connection), as the expert view's tree lists them
    by_number = {g.number: g for g in store.groups()}
    of_group = [by_number[store.finding_groups[i]] for i in range(len(entries))]
    assert [(g.severity, g.rule, g.conn, g.group) for g in of_group] == [(e.severity, e.rule, e.conn, e.group)
                                                                         for e in entries]
    assert all(g.count == of_group.count(g) for g in store.groups())
    store.close()
    d.remove()


class _Closed:
    """A sink beside the store: each transaction as the analysis closed it, and each as it was then shown."""

    wants_psn_events = False
    reads_packets = False

    def __init__(self) -> None:
        self.transactions: list[object] = []
        self.shown: list[str] = []

    def packet(self, pkt) -> None:
        pass

    def on_record(self, rec) -> None:
        from rdmaspy.analysis.model import Transaction

        if isinstance(rec, Transaction):
            self.transactions.append(rec)
            self.shown.append(_shown(rec))

    def finish(self) -> None:
        pass


def _shown(t) -> str:
    """All a transaction holds: its fields (nested records too) and its findings' values."""
    return repr(t) + repr([(f.rule_def, f.frames, f.conn, f.xid, f.args, f.ts) for f in t.findings])


@pytest.mark.parametrize("name", ["rxe-nfsv3-rdma.pcap", "siw-nvme-rdma.pcap.gz"])
def test_a_transactions_record_holds_its_facts_as_plain_values(name):
    """A transaction's record holds its upper layer's facts (RPC-over-RDMA's with the RPC's summary and the
    NFS facts inside them, NVMe's) as plain values, which make facts equal to the analysis' again."""
    import pickle

    from rdmaspy.analysis.model import Facts, transaction_from_record, transaction_record
    from rdmaspy.pipeline import Options, Pipeline
    from rdmaspy.readers import open_capture

    closed = _Closed()
    with open_capture(str(capture(name))) as cap:
        Pipeline(cap, Options(analyze=True, packet_fields=False), [closed]).run()
    assert closed.transactions

    def plain(v: object) -> bool:
        return v is None or isinstance(v, (int, str, float)) or (
            isinstance(v, (tuple, list)) and all(plain(x) for x in v))

    for t in closed.transactions:
        record = transaction_record(t)
        maker, values = record[7]
        assert maker == t.protocol and not isinstance(values, Facts) and plain(values)
        back = transaction_from_record(pickle.loads(pickle.dumps(record, pickle.HIGHEST_PROTOCOL)))
        assert type(back.facts) is type(t.facts) and back.facts == t.facts and repr(back.facts) == repr(t.facts)
    if name.startswith("rxe-nfsv3"):
        assert any(t.facts.rpc is not None and t.facts.nfs is not None for t in closed.transactions)


@pytest.mark.parametrize("name", ["rxe-nfsv3-rdma.pcap", "siw-nvme-rdma.pcap.gz", "rxe-read-retry-stall.pcap"])
def test_the_stores_transactions_read_back_as_the_analysis_closed_them(name):
    """The store spools each transaction as its record (plain values) and makes it again when a view reads
    it: every field, the upper layer's facts, the findings' values are as the analysis closed it, its
    segments are its own again and each step points at one of them."""
    from rdmaspy.pipeline import Options, Pipeline
    from rdmaspy.readers import open_capture
    from rdmaspy.tui.analysis_store import AnalysisStore

    d = SpoolDir()
    store = AnalysisStore(d)
    closed = _Closed()
    with open_capture(str(capture(name))) as cap:
        Pipeline(cap, Options(analyze=True, packet_fields=False), [store.sink(), store, closed]).run()
    store.finish()
    txns = store.transactions
    back = [txns.get(i) for i in range(len(txns))]
    assert len(back) == len(closed.shown) > 0
    assert [_shown(t) for t in back] == closed.shown
    assert any(t.segments for t in back) and any(s.segment is not None for t in back for s in t.steps)
    for t in back:
        assert all(s.transaction is t for s in t.segments)
        assert all(any(s.segment is g for g in t.segments) for s in t.steps if s.segment is not None)
    segments = [txns.segment(i) for i in range(txns.segments)]
    assert segments == [s for t in back for s in t.segments]
    store.close()
    d.remove()


def _young_collections_of_a_capture(path: str) -> tuple[int, int]:
    """The collections of the young generations made while a capture is opened and analysed, and its frames."""
    frames: list[int] = []

    def analyse() -> None:
        model = CaptureModel(path)
        model.start()
        assert model.wait(60)
        frames.append(model.index.count)
        model.close()

    return young_collections(analyse), frames[0]


def test_the_analysis_pass_collects_the_young_generations_on_its_own_schedule(monkeypatch):
    """The pass's store keeps next to nothing alive: its young collections are spaced by
    ``ANALYSIS_YOUNG_COLLECT_EVERY``, not by the pipeline's default."""
    from rdmaspy.tui import model
    path = str(capture("rxe-nfsv3-rdma.pcap"))
    monkeypatch.setattr(model, "ANALYSIS_YOUNG_COLLECT_EVERY", 100)
    often, frames = _young_collections_of_a_capture(path)
    monkeypatch.setattr(model, "ANALYSIS_YOUNG_COLLECT_EVERY", 10 ** 9)
    rarely, _ = _young_collections_of_a_capture(path)
    assert frames > 1024
    assert often >= frames // 100 > rarely


def test_the_store_lets_a_transaction_go_once_it_is_spooled():
    """A transaction on the spool is read back from its record: the store breaks the cycle of its segments
    pointing back at it, so that it goes with its last reference and not at the collector's next pass."""
    import gc

    from rdmaspy.analysis.model import Transaction
    from rdmaspy.pipeline import Options, Pipeline
    from rdmaspy.readers import open_capture
    from rdmaspy.tui.analysis_store import AnalysisStore

    d = SpoolDir()
    store = AnalysisStore(d)
    gc.collect()
    gc.disable()
    try:
        with open_capture(str(capture("rxe-nfsv3-rdma.pcap"))) as cap:
            pipe = Pipeline(None, Options(analyze=True, packet_fields=False), [store.sink(), store])
            for frame in cap:           # frame by frame: ``run`` collects on its own schedule
                pipe.feed(frame)
            pipe.finish()
        store.finish()
        alive = sum(1 for o in gc.get_objects() if isinstance(o, Transaction))
    finally:
        gc.enable()
    assert len(store.transactions) > 300
    assert alive <= 2
    assert all(s.transaction is t for i in range(len(store.transactions))
               for t in [store.transactions.get(i)] for s in t.segments)
    store.close()
    d.remove()


def test_a_rules_findings_come_back_by_frame_a_page_at_a_time_though_some_were_reported_late():
    """The analysis reports some findings late (a lost PSN is known once later packets came): the store gives
    a group's findings by frame, then in the order reported, page after page, each once."""
    from rdmaspy.pipeline import Options, Pipeline
    from rdmaspy.readers import open_capture
    from rdmaspy.tui.analysis_store import AnalysisStore

    d = SpoolDir()
    store = AnalysisStore(d)
    with open_capture(str(capture("rxe-nfsv41-loss.pcap"))) as cap:
        Pipeline(cap, Options(analyze=True, packet_fields=False), [store.sink(), store]).run()
    store.finish()
    n = store.finding_count
    reported = [(store.finding_groups[i], store.entry(store.finding_offsets[i]).frame, i) for i in range(n)]
    late = 0
    for group in store.groups():
        mine = [(frame, i) for number, frame, i in reported if number == group.number]
        late += sum(1 for a, b in zip(mine, mine[1:]) if b < a)
        pages, after = [], (-1, -1)
        while True:
            page = store.findings_by_frame({group.number}, after, most=4)
            if not page:
                break
            pages += [(frame, pos) for frame, pos, _offset in page]
            assert [store.entry(offset).frame for frame, _pos, offset in page] == [frame for frame, _p, _o in page]
            after = page[-1][:2]
        assert pages == sorted(mine)
    assert late, "the capture's lost segments are reported out of frame order: the test would show nothing"
    store.close()
    d.remove()


_ALL_CAPTURES = sorted(p.name for p in capture("rxe-nfsv3-rdma.pcap").parent.iterdir()
                       if p.name.endswith((".pcap", ".pcap.gz", ".pcapng", ".pcapng.gz")))


@pytest.mark.parametrize("name", _ALL_CAPTURES)
def test_every_transactions_record_is_marshalled_and_read_back_equal(name):
    """Every kind of transaction the shipped captures hold (RPC-over-RDMA v1 and v2, NVMe) has a record of
    plain values marshal takes (enumerations by value, rules by id, facts by their maker's name), which
    makes it again with the same members, facts and findings: what the views show is the same."""
    import marshal

    from rdmaspy.analysis.model import transaction_from_record, transaction_record
    from rdmaspy.pipeline import Options, Pipeline
    from rdmaspy.readers import open_capture

    closed = _Closed()
    with open_capture(str(capture(name))) as cap:
        Pipeline(cap, Options(analyze=True, packet_fields=False), [closed]).run()
    for t in closed.transactions:
        record = transaction_record(t)
        if t.host is None and all(s.transaction is t for s in t.segments):
            back = transaction_from_record(marshal.loads(marshal.dumps(record)))
        else:
            back = transaction_from_record(pickle.loads(pickle.dumps(record, pickle.HIGHEST_PROTOCOL)))
        assert _shown(back) == _shown(t)
        assert [type(s.kind) for s in back.segments] == [type(s.kind) for s in t.segments]
        assert [(type(x.kind), x.segment is None or any(x.segment is s for s in back.segments)) for x in back.steps] \
            == [(type(x.kind), x.segment is None or any(x.segment is s for s in t.segments)) for x in t.steps]
