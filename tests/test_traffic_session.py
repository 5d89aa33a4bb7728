"""The generator's requester and responder joined in memory, and what rdmaspy decodes of their traffic.

The sessions run over LoopLink (no device): every Send, RDMA Write and RDMA Read they
make is turned into RoCEv2 frames with craft, written to a pcap and decoded by the
engine in strict mode; each transport header must decode to the values the generator
built, and each transaction must end the way the issue asks (every chunk kind, the
version fallback, each fault's effect).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from rdmaspy import craft
from rdmaspy.engine import Engine
from rdmaspy.fieldview import layer_nodes
from rdmaspy.readers import open_capture
from rdmaspy.traffic import protocol as P
from rdmaspy.traffic.session import OVERRUN_BYTES, Client, LoopLink, Server

MIX = [(P.PROC_NULL, 0), (P.PROC_ECHO, 100), (P.PROC_ECHO, 3000), (P.PROC_READ, 9000), (P.PROC_WRITE, 7000),
       (P.PROC_BIGREPLY, 20000), (P.PROC_PULLREPLY, 30000)]
CLIENT, SERVER = "192.0.2.1", "192.0.2.2"
MTU = 1024


def converse(cv=1, versions=(1, 2), ops=MIX, cfaults=(), sfaults=(), credits=8, concurrency=1,
             inline=P.Inline(1024, 1024)):
    a, b, log = LoopLink.pair()
    srv = Server(b, versions=versions, credits=credits, inline=inline, faults=sfaults)
    cli = Client(a, version=cv, credits=credits, inline=inline, faults=cfaults,
                 slots=concurrency + (1 if "exceed-credits" in cfaults else 0), slot_size=1 << 17)
    results = []

    def pump():
        while a.inbox or b.inbox:
            while b.inbox:
                srv.handle(b.inbox.popleft())
            while a.inbox:
                r = cli.on_message(a.inbox.popleft())
                if r is not None:
                    results.append(r)

    cli.start()
    pump()
    todo = [op for op in ops if not (op[0] == P.PROC_PULLREPLY and cli.vers != 1)]
    while todo:
        while todo and cli.can_call():
            cli.call(*todo.pop(0))
        pump()
    return cli, srv, results, log


def frames(log) -> list[bytes]:
    """RoCEv2 frames of the logged operations, with PSNs per direction."""
    out: list[bytes] = []
    psn = {"client": 100, "server": 9000}
    addr = {"client": (CLIENT, SERVER, 0x22), "server": (SERVER, CLIENT, 0x11)}
    mac = {"client": ("02:00:00:00:00:01", "02:00:00:00:00:02"), "server": ("02:00:00:00:00:02", "02:00:00:00:00:01")}

    def pkt(who, opcode, payload=b"", at=None, **kw):
        src, dst, qp = addr[who]
        if at is None:
            at = psn[who]
            psn[who] = (at + 1) & 0xFFFFFF
        out.append(craft.rocev2(opcode, qp, at, payload, src=src, dst=dst, smac=mac[who][0], dmac=mac[who][1], **kw))

    for who, op in log:
        other = "server" if who == "client" else "client"
        if op.kind == "send":
            parts = [op.data[i:i + MTU] for i in range(0, len(op.data), MTU)]
            for i, part in enumerate(parts):
                code = 0x04 if len(parts) == 1 else 0x00 if i == 0 else 0x02 if i == len(parts) - 1 else 0x01
                pkt(who, code, part)
        elif op.kind == "write":
            o = 0
            for s in op.segs:
                data = op.data[o:o + s.length]
                o += s.length
                parts = [data[i:i + MTU] for i in range(0, len(data), MTU)] or [b""]
                for i, part in enumerate(parts):
                    if i == 0:
                        pkt(who, 0x0A if len(parts) == 1 else 0x06, part, va=s.offset, r_key=s.handle,
                            dma_length=len(data))
                    else:
                        pkt(who, 0x08 if i == len(parts) - 1 else 0x07, part)
        else:
            o = 0
            for s in op.segs:
                data = op.data[o:o + s.length]
                o += s.length
                n = max(1, -(-len(data) // MTU))
                first = psn[who]
                pkt(who, 0x0C, b"", va=s.offset, r_key=s.handle, dma_length=len(data))
                psn[who] = (first + n) & 0xFFFFFF
                for i in range(n):
                    code = 0x10 if n == 1 else 0x0D if i == 0 else 0x0F if i == n - 1 else 0x0E
                    kw = {"syndrome": 0x1F, "msn": 1} if code != 0x0E else {}
                    pkt(other, code, data[i * MTU:(i + 1) * MTU], at=(first + i) & 0xFFFFFF, **kw)
    return out


def decoded(tmp_path: Path, log) -> list:
    path = tmp_path / "gen.pcap"
    craft.write_pcap(str(path), frames(log))
    eng = Engine(strict=True)
    with open_capture(str(path)) as cap:
        return [eng.dissect(f) for f in cap]


def values(layer, name: str) -> list:
    return [v for _d, f, v, _o, _l in layer_nodes(layer) if getattr(f, "name", None) == name]


def headers(pkts) -> list:
    return [lay for p in pkts for lay in [p.layer("rpcrdma") or p.layer("rpcrdma2")] if lay is not None]


def check_against_dissector(tmp_path, log) -> int:
    sent = [P.parse(op.data) for _w, op in log if op.kind == "send"]
    pkts = decoded(tmp_path, log)
    assert not [p for p in pkts if p.malformed or any(e.severity == "error" for e in p.expert or ())]
    lays = headers(pkts)
    assert len(lays) == len(sent)
    for m, lay in zip(sent, lays):
        pre = "rpcrdma." if m.vers == 1 else "rpcrdma2."
        assert lay.get(pre + "xid") == m.xid
        assert lay.get(pre + "version") == m.vers
        assert lay.get(pre + "credits") == m.credit
        if m.vers == 1:
            assert lay.get("rpcrdma.proc") == m.proc
        else:
            assert (lay.get("rpcrdma2.htype"), lay.get("rpcrdma2.flags")) == (m.proc, m.flags)
            assert (lay.get("rpcrdma2.credits.max"), lay.get("rpcrdma2.credits.granted")) == \
                   (m.max_outstanding, m.grant)
            if m.proc == P.RDMA2_CONNPROP:
                got = dict(zip(values(lay, "rpcrdma2.prop.which"),
                               [values(lay, f"rpcrdma2.prop.{n}")[0] for n in ("sbsiz", "rbsiz", "rssiz", "rcsiz", "brs")]))
                assert got == P.props_dict(m.props)
        rd = m.chunks.reads
        # v2 chunk lists are encoded as v1's, and decoded under the same rpcrdma.* names
        assert values(lay, "rpcrdma.read.segment.position") == [r.position for r in rd]
        for kind, segs in (("read", rd), ("write", [s for c in m.chunks.writes for s in c]),
                           ("reply", m.chunks.reply or ())):
            for attr in ("handle", "length", "offset"):
                got = values(lay, f"rpcrdma.{kind}.segment.{attr}")
                assert got == [getattr(s, attr) for s in segs], (kind, attr, m)
        if m.error:
            assert (values(lay, pre + "errcode") or [None])[0] == m.error[0]
    return len(sent)


def test_v1_every_chunk_kind_decodes_to_what_was_built(tmp_path):
    cli, srv, res, log = converse(1)
    assert all(r.ok for r in res), [r.detail for r in res if not r.ok]
    assert {r.how for r in res} == {"inline", "reply-chunk", "write-chunk", "read-chunk", "read-chunk-reply"}
    kinds = {op.kind for _w, op in log}
    assert kinds == {"send", "write", "read"}
    assert srv.stats.dones == 1 and not srv._pull_pending          # RDMA_DONE released the exposure
    n = check_against_dissector(tmp_path, log)
    assert n == 2 * len(MIX) + 1                                     # + the RDMA_DONE


def test_v1_long_call_goes_as_position_zero_read_chunk():
    cli, srv, res, log = converse(1, ops=[(P.PROC_ECHO, 3000)])
    call = P.parse(log[0][1].data)
    assert call.proc == P.RDMA_NOMSG and [r.position for r in call.chunks.reads] == [0] and call.payload == b""
    assert res[0].ok


def test_v2_connprop_exchange_then_every_chunk_kind(tmp_path):
    cli, srv, res, log = converse(2)
    first = P.parse(log[0][1].data)
    assert (first.vers, first.proc) == (2, P.RDMA2_CONNPROP) and len(log[0][1].data) <= P.V1_INLINE_DEFAULT
    assert cli.vers == 2 and not cli.fell_back and srv.vers == 2
    assert all(r.ok for r in res) and len(res) == len(MIX) - 1      # no pull reply in v2
    replies = [P.parse(op.data) for w, op in log if w == "server" and op.kind == "send"]
    assert all(m.flags & P.F_RESPONSE and m.grant == 8 for m in replies)
    check_against_dissector(tmp_path, log)


def test_v2_falls_back_to_v1_on_err_vers(tmp_path):
    cli, srv, res, log = converse(2, versions=(1,))
    err = P.parse(log[1][1].data)
    assert (err.vers, err.proc, err.error) == (1, P.RDMA_ERROR, (P.ERR_VERS, 1, 1))
    assert cli.fell_back and cli.vers == 1 and srv.stats.vers_errors == 1
    assert all(r.ok for r in res) and len(res) == len(MIX)
    check_against_dissector(tmp_path, log)


def test_credits_bound_concurrency_and_the_fault_exceeds_them():
    ops = [(P.PROC_NULL, 0)] * 20
    cli, srv, res, log = converse(1, ops=ops, credits=4, concurrency=8)
    assert cli.credits.high_water == 4 and len(res) == 20
    cli, srv, res, log = converse(1, ops=ops, credits=4, concurrency=4, cfaults=("exceed-credits",))
    assert cli.credits.high_water == 5 > cli.credits.granted == 4
    assert all(r.ok for r in res)


def test_xid_mismatch_fault():
    # (Decoded in the lab, where the CM exchange ties the connection to RPC-over-RDMA:
    # the dissector's heuristic alone rightly declines a call whose two XIDs differ.)
    cli, srv, res, log = converse(1, ops=[(P.PROC_NULL, 0)], cfaults=("xid-mismatch",))
    call = P.parse(log[0][1].data)
    assert P.parse_rpc(call.payload).xid == call.xid ^ 0xFFFF
    assert res[0].ok                       # the responder answered the RPC XID it was given
    assert P.parse_rpc(P.parse(log[1][1].data).payload).xid == call.xid ^ 0xFFFF
    # The responder's fault: its RPC reply carries another XID, and the requester notices.
    cli, srv, res, log = converse(1, ops=[(P.PROC_NULL, 0)], sfaults=("xid-mismatch",))
    assert not res[0].ok and "XID" in res[0].detail


def test_skip_done_leaves_the_exposure_pending():
    cli, srv, res, log = converse(1, ops=[(P.PROC_PULLREPLY, 5000)] * 2, cfaults=("skip-done",))
    assert all(r.ok and r.how == "read-chunk-reply" for r in res)
    assert srv.stats.dones == 0 and len(srv._pull_pending) == 2


def test_overrun_reply_writes_past_the_chunk():
    cli, srv, res, log = converse(1, ops=[(P.PROC_BIGREPLY, 5000)], sfaults=("overrun-reply",))
    call = P.parse(log[0][1].data)
    offered = sum(s.length for s in call.chunks.reply)
    writes = [op for w, op in log if op.kind == "write"]
    assert sum(s.length for s in writes[0].segs) == offered + OVERRUN_BYTES - (offered - (5000 + 28))
    assert len(writes[0].data) > offered
    assert res[0].ok                       # the requester's region had room: only an analyzer sees it


def test_server_answers_garbage_with_an_error():
    a, b, log = LoopLink.pair()
    srv = Server(b)
    srv.handle(bytes.fromhex("00000005 00000001 00000001 00000000 00000007"))
    m = P.parse(a.inbox.popleft())
    assert (m.xid, m.proc, m.error) == (5, P.RDMA_ERROR, (P.ERR_CHUNK,))


@pytest.mark.parametrize("size", [0, 1, 1023, 4097])
def test_echo_sizes_round_trip(size):
    cli, srv, res, log = converse(1, ops=[(P.PROC_ECHO, size)])
    assert res[0].ok


def test_deferred_calls_leave_as_one_burst():
    a, b, log = LoopLink.pair()
    bursts = []
    a.send_many = lambda msgs: (bursts.append(len(msgs)), [a.send(m) for m in msgs])
    srv = Server(b, credits=4)
    cli = Client(a, credits=4, slots=5, faults=("exceed-credits",))
    cli.call(P.PROC_NULL, 0)
    srv.handle(b.inbox.popleft())
    cli.on_message(a.inbox.popleft())
    while cli.can_call():
        cli.call(P.PROC_NULL, 0, defer=True)
    assert not b.inbox and len(cli.pending) == 5
    cli.flush()
    assert bursts == [5] and len(b.inbox) == 5 > cli.credits.granted


def _hostile_read(srv_link_pair, size: int, writes=()):
    a, b = srv_link_pair
    call = P.rpc_call(0x77, P.PROC_READ, P.xdr_u32(size))
    return P.build(P.Message(0x77, 1, 8, P.RDMA_MSG, chunks=P.Chunks(writes=writes), payload=call))


def test_server_refuses_a_huge_read_before_making_its_data():
    """A READ of 4 GiB - 1 is answered with an error at once: nothing the size of it is made."""
    import tracemalloc
    a, b, _log = LoopLink.pair()
    srv = Server(b)
    tracemalloc.start()
    srv.handle(_hostile_read((a, b), 0xFFFFFFFF))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1 << 20
    m = P.parse(a.inbox.popleft())
    assert (m.xid, m.proc, m.error[0]) == (0x77, P.RDMA_ERROR, P.ERR_CHUNK)


def test_server_answers_a_write_chunk_too_small_and_serves_on():
    """A READ of 100 bytes offering a 16-byte Write chunk gets RDMA_ERROR, and the next call is served."""
    a, b, _log = LoopLink.pair()
    srv = Server(b)
    srv.handle(_hostile_read((a, b), 100, writes=((P.Segment(0x1234, 16, 0x1000),),)))
    m = P.parse(a.inbox.popleft())
    assert (m.proc, m.error[0]) == (P.RDMA_ERROR, P.ERR_CHUNK)
    srv.handle(P.build(P.Message(0x78, 1, 8, P.RDMA_MSG, payload=P.rpc_call(0x78, P.PROC_NULL))))
    m = P.parse(a.inbox.popleft())
    assert (m.xid, m.proc) == (0x78, P.RDMA_MSG)


def test_a_reply_chunk_the_call_did_not_offer_fails_the_call_not_the_client():
    """A responder answering an inline NULL call through a Reply chunk names memory the requester
    never registered: the call ends in error and the client goes on."""
    a, b, log = LoopLink.pair()
    srv = Server(b)
    cli = Client(a, version=1)
    cli.start()                         # v1: ready at once, no exchange
    xid = cli.call(P.PROC_NULL)
    b.inbox.clear()
    bogus = P.Message(xid, 1, 8, P.RDMA_NOMSG, chunks=P.Chunks(reply=(P.Segment(0x1234, 64, 0x1000),)))
    result = cli.on_message(P.build(bogus))
    assert result is not None and not result.ok and result.how == "error"
    assert "Reply chunk" in result.detail
    assert cli.can_call()
    cli.call(P.PROC_NULL)
    srv.handle(b.inbox.popleft())
    ok = cli.on_message(a.inbox.popleft())
    assert ok is not None and ok.ok
