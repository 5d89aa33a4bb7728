"""The typed analysis model: its enumerations, a segment's accounting and the collecting sink."""
from __future__ import annotations

from rdmaspy.analysis import model as m
from rdmaspy.analysis.rpcrdma_facts import ChunkList, RpcRdmaFacts


def test_directions_know_their_peers_and_their_calls():
    assert m.Direction.C2S.other is m.Direction.S2C and m.Direction.S2C.other is m.Direction.C2S
    assert (m.Direction.C2S.sender, m.Direction.C2S.receiver) == (m.Side.CLIENT, m.Side.SERVER)
    assert m.Direction.S2C.calls is m.CallDirection.BACKCHANNEL
    assert m.Direction("c2s") is m.Direction.C2S and m.Direction.C2S == "c2s" and f"{m.Direction.S2C}" == "s2c"


def _segment(length: int = 100) -> m.Segment:
    return m.Segment(ChunkList.WRITE, 0, 0, None, 0x10, 0x1000, length, m.Side.CLIENT)


def test_a_segment_counts_each_byte_once_and_says_what_became_of_it():
    seg = _segment()
    assert seg.state is m.SegmentState.UNUSED
    seg.add(0, 40, 7)
    seg.add(40, 60, 8)          # the next packet of the same operation
    seg.add(20, 50, 9)          # a retransmission inside what was moved
    assert seg.used == 60 and seg.spans == [[0, 60]] and seg.frames == [7, 8, 9]
    assert seg.state is m.SegmentState.PARTIAL
    seg.add(80, 100, 10)
    seg.add(60, 80, 11)         # fills the hole: the ranges merge
    assert seg.spans == [[0, 100]] and seg.state is m.SegmentState.FULL
    seg.overrun = 4
    assert seg.state is m.SegmentState.OVERRUN
    assert _segment(0).state is m.SegmentState.EMPTY


def _transaction() -> m.Transaction:
    call = m.Message([3, 4], 1_000, 120)
    t = m.Transaction("rpcrdma", 1, 0xABC, m.Direction.C2S, call, RpcRdmaFacts(1, "RDMA_MSG", None, 32))
    seg = _segment()
    seg.transaction = t
    t.segments.append(seg)
    t.steps.append(m.Step(m.StepKind.REQUEST, call.frames, call.ts, 120))
    t.steps.append(m.Step(m.StepKind.RDMA_WRITE, [5, 6], 1_500, 100, 0x10, 0x1000, 100, seg))
    t.steps.append(m.Step(m.StepKind.RDMA_READ, [7], 1_600, 10, 0x20, 0, 10, None, response_frames=[8]))
    t.response = m.Message([9], 2_500, 80)
    return t


def test_a_transaction_names_the_part_each_frame_plays():
    t = _transaction()
    assert t.direction is m.CallDirection.FORWARD and t.latency_ns == 1_500 and t.bytes_inline == 200
    assert (t.request_frame, t.response_frame) == (4, 9)
    assert t.role_of(3) == (m.PacketRole.REQUEST, None)
    assert t.role_of(9) == (m.PacketRole.RESPONSE, None)
    role, step = t.role_of(6)
    assert role is m.PacketRole.RDMA_WRITE and step is t.steps[1] and step.segment is t.segments[0]
    assert t.role_of(7)[0] is m.PacketRole.RDMA_READ and t.role_of(8)[0] is m.PacketRole.READ_RESPONSE
    assert t.role_of(99) == (m.PacketRole.RELATED, None)
    assert t.segment_at(ChunkList.WRITE, 0, 0) is t.segments[0] and t.segment_at(ChunkList.REPLY, 0, 0) is None


def test_the_model_keeps_every_record_and_says_when_it_changed():
    seen: list = []
    model = m.AnalysisModel(on_change=seen.append)
    t = _transaction()
    model.on_record(t)
    s1 = m.CreditSample(1, m.CallDirection.FORWARD, 10, 3, None, 32, 1)
    s2 = m.CreditSample(1, m.CallDirection.FORWARD, 20, 9, 32, 32, 0)
    model.on_record(m.CreditSeries(1, m.CallDirection.FORWARD, [s1]))
    model.on_record(m.CreditSeries(1, m.CallDirection.FORWARD, [s2]))
    rule = m.Rule("test.rule", m.Severity.WARNING, "protocol", "value {v}", "here")
    f = m.Finding(rule, (4,), 1, 0xABC, {"v": 5}, 1_000)
    model.on_finding(f)
    assert model.transactions == [t] and model.segments == t.segments
    assert model.credits[(1, m.CallDirection.FORWARD)] == [s1, s2]
    assert model.findings == [f] and f.text == "value 5" and f.severity == "warning" and f.level is m.Severity.WARNING
    assert len(seen) == 4 and seen[0] is t and seen[-1] is f


def test_the_analysis_of_a_real_capture_fills_the_model():
    from conftest import capture

    from rdmaspy.analysis.analyzer import Analyzer
    from rdmaspy.conversation import connections
    from rdmaspy.engine import Engine
    from rdmaspy.readers import open_capture

    model = m.AnalysisModel()
    an = Analyzer(on_record=model.on_record, on_finding=model.on_finding, keep_findings=False)
    engine = Engine()
    with open_capture(str(capture("rxe-nfsv3-rdma.pcap"))) as cap:
        for frame in cap:
            an.feed(engine.dissect(frame))
    an.finish()
    (live,) = list(connections(engine.session))
    conn = model.connections[live.conn_id]
    assert (conn.packets_c2s, conn.packets_s2c, conn.state) == (live.packets_c2s, live.packets_s2c, live.state)
    assert conn.client.qpn == live.client_qpn and conn.inline_c2s == live.inline_c2s
    txns = model.transactions
    assert len(txns) == 328 and all(t.state is m.TransactionState.COMPLETE for t in txns)
    assert model.summaries[conn.id].transactions == 328
    # every RDMA WRITE step names the segment it moved, and that segment names its transaction
    writes = [s for t in txns for s in t.steps if s.kind is m.StepKind.RDMA_WRITE]
    assert writes and all(s.segment is not None and s.segment.transaction is not None
                          and s.segment in s.segment.transaction.segments for s in writes)
    assert all(seg.frames for seg in model.segments if seg.state is m.SegmentState.FULL)
    series = model.credits[(conn.id, m.CallDirection.FORWARD)]
    assert [s.ts for s in series] == sorted({s.ts for s in series})     # one sample per instant, in time order
    assert max(s.outstanding for s in series) == model.summaries[conn.id].credits[0].peak_outstanding
