"""Transactions: every call meets its reply, with its steps in order and the latency of the timestamps."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))

import analysis_build as ab  # noqa: E402
from analysis_run import analyse, analyse_frames  # noqa: E402
from conftest import capture, tshark_fields, tshark_int  # noqa: E402

NFS_CAPTURES = ("rxe-nfsv3-rdma.pcap", "rxe-nfsv42-rdma.pcap", "rxe-nfsv3-concurrent.pcap", "siw-nfsv3-rdma.pcap")


@pytest.mark.parametrize("name", NFS_CAPTURES)
def test_every_call_of_a_real_capture_has_its_reply(name):
    res = analyse(name)
    txns = res.transactions
    assert txns, name
    assert all(t["state"] == "complete" and t["reply"] is not None for t in txns)
    assert not [f for f in res.own if f.rule_def.id.startswith("transaction.")]
    summary = res.records["rpcrdma.connection"]
    assert sum(s["transactions"] for s in summary) == len(txns)
    assert all(s["unanswered"] == 0 for s in summary)


@pytest.mark.parametrize("name", NFS_CAPTURES)
def test_latency_is_the_difference_of_the_call_and_reply_timestamps(name):
    res = analyse(name)
    for t in res.transactions:
        call, reply = t["call"], t["reply"]
        assert call["ts"] == res.ts[call["frame"]] and reply["ts"] == res.ts[reply["frame"]]
        assert t["latency_ns"] == res.ts[reply["frame"]] - res.ts[call["frame"]] >= 0
        assert t["latency"] == t["latency_ns"] / 1e9


def test_calls_and_replies_are_those_tshark_sees():
    path = capture("rxe-nfsv3-rdma.pcap")
    rows = tshark_fields(path, ["frame.number", "rpc.xid", "rpc.msgtyp", "rpc.time"])
    calls = {(int(r["frame.number"][0]), tshark_int(x)) for r in rows for x, m in zip(r["rpc.xid"], r["rpc.msgtyp"])
             if m == "0"}
    replies = {}
    for r in rows:
        for x, m in zip(r["rpc.xid"], r["rpc.msgtyp"]):
            if m == "1":
                replies[int(r["frame.number"][0])] = (tshark_int(x), float(r["rpc.time"][0]))
    res = analyse("rxe-nfsv3-rdma.pcap")
    txns = res.transactions
    assert len(txns) == len(calls) == len(replies) == 328
    assert {t["xid"] for t in txns} == {x for _f, x in calls}
    mine = {t["reply"]["frame"]: t for t in txns}
    assert set(mine) == set(replies)
    tshark_call = {x: f for f, x in calls}
    rebuilt = 0
    for frame, (xid, rpc_time) in replies.items():
        t = mine[frame]
        assert t["xid"] == xid
        if tshark_call[xid] == t["call"]["frame"]:
            assert t["latency"] == pytest.approx(rpc_time, abs=1e-9)
        else:
            # tshark sees a reduced call where it rebuilt it (the last RDMA READ response) and times the
            # reply from there; rdmaspy times it from the call's SEND.
            rebuilt += 1
            read_frames = [fr for s in t["steps"] if s["op"] == "read" for fr in s["response_frames"]]
            assert tshark_call[xid] == read_frames[-1]
            assert rpc_time == pytest.approx((res.ts[frame] - res.ts[tshark_call[xid]]) / 1e9, abs=1e-9)
    assert rebuilt == sum(1 for t in txns if any(s["op"] == "read" for s in t["steps"]))


@pytest.mark.parametrize("name", NFS_CAPTURES)
def test_steps_are_in_capture_order_and_name_their_frames(name):
    res = analyse(name)
    for t in res.transactions:
        steps = t["steps"]
        assert steps[0]["op"] == "send" and steps[0]["role"] == "call"
        assert any(s["op"] == "send" and s.get("role") == "reply" for s in steps)
        firsts = [s["frames"][0] for s in steps]
        assert firsts == sorted(firsts)
        assert [s["ts"] for s in steps] == sorted(s["ts"] for s in steps)
        for s in steps:
            for fr in s["frames"] + s.get("response_frames", []):
                assert 1 <= fr <= max(res.ts)


def test_write_data_pulled_by_rdma_read_is_a_step_of_its_call():
    """rxe NFSv3 WRITE of frame 104: the server reads the Read chunk (frames 105-111), replies by
    Send With Invalidate (frame 112) of the chunk's handle 0xca6."""
    res = analyse("rxe-nfsv3-rdma.pcap")
    t = next(t for t in res.transactions if t["xid"] == 0x95FFF5FC)
    ops = [(s["op"], s.get("role")) for s in t["steps"]]
    assert ops == [("send", "call"), ("read", None), ("send", "reply")]
    read = t["steps"][1]
    assert read["frames"] == [105] and read["response_frames"] == list(range(106, 112))
    assert read["handle"] == 0xCA6 and read["length"] == read["bytes"] == 6000
    assert t["steps"][2]["invalidate"] == 0xCA6 == t["reply"]["invalidated"]
    assert t["rpc"]["name"] == "WRITE" and t["rpc"]["label"] == "NFSv3"
    assert t["bytes"]["rdma_read"] == 6000


def test_every_rdma_read_and_write_of_a_real_capture_belongs_to_a_transaction():
    for name in ("rxe-nfsv3-rdma.pcap", "rxe-nfsv42-rdma.pcap", "rxe-nfsv3-concurrent.pcap"):
        res = analyse(name)
        rdma = {f for f, op in res.opcodes.items() if 0x06 <= op <= 0x10}
        seen = set()
        for t in res.transactions:
            for s in t["steps"]:
                if s["op"] in ("read", "write"):
                    seen.update(s["frames"])
                    seen.update(s.get("response_frames", ()))
        assert seen == rdma, name


def test_clean_conversation_has_no_transaction_findings():
    res = analyse_frames(ab.scenario_v1())
    assert res.rules() == []
    assert [t["state"] for t in res.transactions] == ["complete"] * 7


def test_a_dropped_reply_leaves_its_call_unanswered():
    # The reply lost is that of the WRITE, after the first grant: the calls after it stay within the grant.
    res = analyse_frames(ab.scenario_v1(drop_reply=True))
    assert res.rules() == ["transaction.no_reply"]
    t = next(t for t in res.transactions if t["xid"] == 0x1003)
    assert t["state"] == "unanswered" and t["reply"] is None and t["latency_ns"] is None
    assert [s["op"] for s in t["steps"]] == ["send", "read"]


def _reconnect(answered: bool) -> list[tuple[int, bytes]]:
    """The client's GETATTR (XID 0x2001) on a first connection gets no reply; the client connects again (other
    queue pairs) and sends it again there, where it is answered (or not)."""
    from rdmaspy.dissectors import onc_rpc, rpcrdma
    from rdmaspy.dissectors.xdr import p32, popaque
    x = 0x2001
    call = rpcrdma.encode_v1(x, 0, 32, payload=ab._call(x, 1, popaque(ab.FH)))
    first = ab.Wire()
    first.cm()
    first.send(ab.CLIENT, call)
    second = ab.Wire(cqp=0x51, sqp=0x62, comm=0x5101, t0=first.t + 2_000_000_000)
    second.cm()
    second.send(ab.CLIENT, call)
    if answered:
        second.send(ab.SERVER, rpcrdma.encode_v1(x, 0, 8, payload=onc_rpc.encode_reply(x, p32(0) + bytes(84))))
    return first.out() + second.out()


def test_a_call_sent_again_on_a_new_connection_and_answered_there_has_its_reply():
    """Before: the call left on the first connection was a call without reply at the end."""
    res = analyse_frames(_reconnect(answered=True))
    assert res.rules() == ["transaction.answered_after_reconnect"]
    (note,) = [f for f in res.own if f.rule_def.id == "transaction.answered_after_reconnect"]
    first, again = sorted((t for t in res.transactions if t["xid"] == 0x2001), key=lambda t: t["call"]["frame"])
    assert first["state"] == "unanswered" and again["state"] == "complete"
    assert note.frames == (first["call"]["frame"], again["call"]["frame"], again["reply"]["frame"])
    assert note.conn == first["conn"] and note.args["conn2"] == again["conn"] != first["conn"]
    assert note.severity == "note"
    assert note.text == (f"call XID 0x00002001 was left unanswered on connection {first['conn']}: sent again on "
                         f"connection {again['conn']} (frame {again['call']['frame']}) and answered there "
                         f"(frame {again['reply']['frame']})")


def test_a_call_sent_again_after_a_connection_the_capture_began_inside_is_found_by_its_hosts():
    """The first connection was up before the capture, which opens with a server's reply: its roles are guessed
    the other way round (client: the server's address).  The call sent again on the new one is still the one
    left there (rxe-nfsv3-blackout: its trace says the client sent XID 0x07516c28 again after reconnecting)."""
    from rdmaspy.dissectors import onc_rpc, rpcrdma
    from rdmaspy.dissectors.xdr import p32, popaque
    x = 0x2001
    call = rpcrdma.encode_v1(x, 0, 32, payload=ab._call(x, 1, popaque(ab.FH)))
    reply = rpcrdma.encode_v1(x, 0, 8, payload=onc_rpc.encode_reply(x, p32(0) + bytes(84)))
    first = ab.Wire()
    first.send(ab.SERVER, rpcrdma.encode_v1(0x1FFF, 0, 8, payload=onc_rpc.encode_reply(0x1FFF, p32(0) + bytes(84))))
    first.send(ab.CLIENT, call)
    second = ab.Wire(cqp=0x51, sqp=0x62, comm=0x5101, t0=first.t + 2_000_000_000)
    second.cm()
    second.send(ab.CLIENT, call)
    second.send(ab.SERVER, reply)
    res = analyse_frames(first.out() + second.out())
    assert sorted(res.rules()) == ["transaction.answered_after_reconnect", "transaction.reply_without_call"]
    first_t, again = sorted((t for t in res.transactions if t["xid"] == x), key=lambda t: t["call"]["frame"])
    assert first_t["state"] == "unanswered" and again["state"] == "complete"


def test_a_call_sent_again_on_a_new_connection_and_never_answered_has_no_reply_twice():
    res = analyse_frames(_reconnect(answered=False))
    assert res.rules() == ["transaction.no_reply", "transaction.no_reply"]


def test_a_dropped_call_leaves_its_reply_alone():
    res = analyse_frames(ab.scenario_v1(drop_call=True))
    assert res.rules() == ["transaction.reply_without_call"]
    assert 0x1001 not in {t["xid"] for t in res.transactions}


def test_a_duplicated_call_is_a_retransmission_of_the_same_transaction():
    res = analyse_frames(ab.scenario_v1(dup_call=True))
    assert res.rules() == ["transaction.retransmitted_call"]
    t = next(t for t in res.transactions if t["xid"] == 0x1001)
    assert t["call"]["retransmissions"] == [[6]] and t["call"]["frame"] == 4
    assert t["state"] == "complete"


def test_a_call_the_infiniband_layer_sends_twice_is_one_call():
    """The same packet (same PSN) again is the transport's duplicate, said once as ib.duplicate: no
    RPC retransmission, and the reply still closes the call."""
    res = analyse_frames(ab.scenario_v1(ib_dup_call=True))
    assert res.rules() == []
    assert [f.rule_def.id for f in res.findings if f.frames[0] == 5] == ["ib.duplicate"]
    t = next(t for t in res.transactions if t["xid"] == 0x1001)
    assert t["call"]["retransmissions"] == [] and t["state"] == "complete"


def test_responder_provided_read_chunk_ends_with_rdma_done():
    res = analyse_frames(ab.scenario_v1(responder_read=True))
    assert res.rules() == ["rpcrdma.responder_read_chunk"]
    t = next(t for t in res.transactions if t["xid"] == 0x1009)
    assert [s["op"] for s in t["steps"]] == ["send", "send", "read", "done"]
    assert t["reply"]["done_frame"] == t["steps"][-1]["frames"][0]
    assert t["chunks"][0]["list"] == "responder_read" and t["chunks"][0]["status"] == "full"
    assert t["chunks"][0]["memory_of"] == "server"


def test_backchannel_calls_are_matched_in_the_reverse_direction():
    frames = ab.scenario_v1()
    w = ab.Wire()
    w.t = frames[-1][0]
    w.psn = {ab.CLIENT: 0x2000, ab.SERVER: 0x9000}
    from rdmaspy.dissectors import onc_rpc, rpcrdma
    from rdmaspy.dissectors.xdr import p32
    call = onc_rpc.encode_call(0x7001, 0x40000000, 1, 1, p32(0), (0, b""))
    w.send(ab.SERVER, rpcrdma.encode_v1(0x7001, 0, 2, payload=call))
    w.send(ab.CLIENT, rpcrdma.encode_v1(0x7001, 0, 2, payload=onc_rpc.encode_reply(0x7001, p32(0))))
    res = analyse_frames(frames + w.out())
    t = next(t for t in res.transactions if t["xid"] == 0x7001)
    assert t["direction"] == "backchannel" and t["state"] == "complete"
    assert res.rules() == []


def test_open_transactions_are_bounded(monkeypatch):
    """Past the limit of open transactions, the oldest is given up as unanswered at once."""
    from analysis_build import CLIENT, Wire

    from rdmaspy.analysis import transactions
    from rdmaspy.dissectors import onc_rpc, rpcrdma
    from rdmaspy.dissectors.xdr import popaque
    monkeypatch.setattr(transactions, "_OPEN_LIMIT", 2)
    w = Wire()
    for x in (0x1, 0x2, 0x3):
        w.send(CLIENT, rpcrdma.encode_v1(x, 0, 32, payload=onc_rpc.encode_call(x, 100003, 3, 1, popaque(ab.FH))))
    from rdmaspy.analysis.analyzer import Analyzer
    from rdmaspy.analysis.model import Transaction
    from rdmaspy.engine import Engine
    from rdmaspy.packet import Frame
    done = []
    an = Analyzer(strict=True, on_record=lambda r: done.append(r.key) if isinstance(r, Transaction) else None)
    eng = Engine(strict=True)
    for i, (ts, data) in enumerate(w.out(), 1):
        an.feed(eng.dissect(Frame(i, ts, 1, data, len(data))))
    assert done == [0x1]                      # given up when the third call opened, not at the end
    assert [f.rule_def.id for f in an.findings if f.xid == 0x1] == ["transaction.no_reply"]
    an.finish()
    assert done == [0x1, 0x2, 0x3]


def test_cm_path_mtu_above_what_the_wire_shows_does_not_invent_losses_after_reads():
    """The CM offers a larger Path MTU than the QP uses (as rxe does: 1024 on a 1500-byte netdev);
    the READ responses after a READ request take ceil(length / 1024) PSNs, which the PSN analysis
    must expect: the clean scenarios have no transport finding."""
    for responder_read in (False, True):
        res = analyse_frames(ab.scenario_v1(responder_read=responder_read))
        assert [f.rule_def.id for f in res.findings if f.rule_def.id.startswith("ib.")] == []


def test_two_rpcrdma_sends_in_one_iwarp_segment_are_two_transactions():
    """iWARP packs FPDUs into TCP segments as the stream goes: one segment may carry two Sends, each an
    RPC-over-RDMA message.  Both calls and both replies count, and each reply keeps its own Send With
    Invalidate STag."""
    import iwarp_build as iw
    from rdmaspy.dissectors import onc_rpc, rpcrdma
    from rdmaspy.dissectors.xdr import p32

    c = iw.Direction(iw.CLIENT, 40001, iw.SERVER, 20049, 5000)
    s = iw.Direction(iw.SERVER, 20049, iw.CLIENT, 40001, 9000)
    frames = c.segments(iw.reqrep(True, 0x10, 2, iw.ird_ord(16, 8) + bytes.fromhex("f6ab0e1801010303")))
    frames += s.segments(iw.reqrep(False, 0x10, 2, iw.ird_ord(8, 16) + bytes.fromhex("f6ab0e1801010303")))

    def call(xid: int, **chunks) -> bytes:
        return rpcrdma.encode_v1(xid, 0, 32, payload=onc_rpc.encode_call(xid, 100003, 3, 0, b"", (0, b"")),
                                 **chunks)

    def reply(xid: int) -> bytes:
        return rpcrdma.encode_v1(xid, 0, 32, payload=onc_rpc.encode_reply(xid, p32(0)))

    # a first call alone (no second one before the server grants credits), then two in one segment
    frames += c.segments(c.fpdu(iw.untagged(3, 0, 1, 0, call(0x10))))
    frames += s.segments(s.fpdu(iw.untagged(3, 0, 1, 0, reply(0x10))))
    calls = c.fpdu(iw.untagged(3, 0, 2, 0, call(0x11))) + \
        c.fpdu(iw.untagged(3, 0, 3, 0, call(0x12, reply=[(0xBEEF, 1024, 0x1000)])))
    frames += c.segments(calls, [len(calls)])
    replies = s.fpdu(iw.untagged(3, 0, 2, 0, reply(0x11))) + s.fpdu(iw.untagged(6, 0, 3, 0, reply(0x12), word=0xBEEF))
    frames += s.segments(replies, [len(replies)])
    res = analyse_frames([(i * 1000, f) for i, f in enumerate(frames)])
    assert res.rules() == []
    txns = {t["xid"]: t for t in res.transactions}
    assert set(txns) == {0x10, 0x11, 0x12}
    assert all(t["state"] == "complete" for t in txns.values())
    assert txns[0x12]["reply"]["invalidated"] == 0xBEEF and txns[0x11]["reply"]["invalidated"] is None


@pytest.mark.parametrize("answered", [True, False])
def test_a_reconnect_costs_its_connection_and_the_call_sent_again_nothing_more(answered: bool) -> None:
    """The call left on the first connection is found when it is sent again on the new one (one look-up in
    the hosts' unanswered calls, no list per connection): the new connection costs its state, the call sent
    again an open call, whether or not it is answered."""
    from rdmaspy.analysis import transactions
    from rdmaspy.analysis.analyzer import Analyzer
    from rdmaspy.engine import Engine
    from rdmaspy.packet import Frame
    frames = _reconnect(answered)
    an, eng = Analyzer(strict=True), Engine(strict=True)
    txns = an.modules["rpcrdma.transactions"]
    held = []
    for i, (ts, data) in enumerate(frames, 1):
        an.feed(eng.dissect(Frame(i, ts, 1, data, len(data))))
        held.append((len(txns.conns) + len(txns.left), txns.held))
    made = next(i for i, (conns, _) in enumerate(held) if conns == 2)
    assert held[made][1] - held[made - 1][1] == transactions.CONN_COST
    # then the call sent again on it: an open call
    again = next(i for i in range(made, len(held)) if held[i][1] != held[made][1])
    assert held[again][1] - held[made][1] == transactions.TXN_COST
    assert [f.rule_def.id for f in an.findings].count("transaction.answered_after_reconnect") == answered


def test_many_connections_between_two_hosts_cost_linear_time(tmp_path) -> None:
    """Each new connection between the same two hosts used to list the calls open on all the others:
    20,000 queue pairs took minutes.  4x the connections cost about 4x (quadratic: 16x)."""
    import gc
    import time

    from fixtures import hostile_build
    from rdmaspy.analysis.analyzer import Analyzer
    from rdmaspy.engine import Engine
    from rdmaspy.packet import Frame

    def once(n: int) -> float:
        frames = [bytes(f) for f in hostile_build.qps(n)]
        an, eng = Analyzer(keep_findings=False), Engine()
        gc.disable()                    # the collector's passes grow in steps with the heap: not the cost asked
        try:
            t = time.process_time()     # this process's CPU: other work on a shared machine does not count
            for i, data in enumerate(frames, 1):
                an.feed(eng.dissect(Frame(i, i * 1000, 1, data, len(data))))
            an.finish()
            return time.process_time() - t
        finally:
            gc.enable()

    once(500)                           # warm: imports and tables are made once
    small, large = min(once(2000) for _ in range(3)), min(once(8000) for _ in range(3))
    assert large < 8 * small, (small, large)
