"""NFSv3 over soft-iWARP (captures/siw-nfsv3-rdma.pcap): MPA v2 setup, every FPDU, sane RDMAP traffic."""
from __future__ import annotations

from collections import Counter

import pytest

from conftest import capture
from rdmaspy.engine import Engine
from rdmaspy.readers import open_capture


@pytest.fixture(scope="module")
def packets():
    eng = Engine(strict=True)
    with open_capture(str(capture("siw-nfsv3-rdma.pcap"))) as cap:
        return [eng.dissect(f) for f in cap], eng.session


def test_mpa_private_data_is_ird_ord_then_rfc8797(packets) -> None:
    pkts, _ = packets
    req, rep = pkts[3], pkts[5]
    for pkt, word, ird, ord_, rbit in ((req, "00800000", 128, 0, True), (rep, "00000080", 0, 128, False)):
        mpa = pkt.layer("mpa")
        assert mpa["privatedata"][:4] == bytes.fromhex(word)
        assert mpa["rev"] == 2 and mpa["pdlength"] == 12 and mpa["enhanced"] is True
        v2 = mpa.children[0]
        assert (v2["ird"], v2["ord"], v2["p2p"]) == (ird, ord_, False)
        pdata = pkt.layer("rpcrdma.pdata")
        assert pdata is not None and pdata["format_id"] == 0xF6AB0E18
        assert pdata["remote_invalidate"] == rbit
        assert pdata.off == mpa.off + 24        # right after the IRD/ORD word
    assert req.layer("mpa")["privatedata"] == bytes.fromhex("00800000f6ab0e1801010303")
    assert req.info_text == "MPA Request Rev 2 IRD=128 ORD=0 PD=12 | RPC-over-RDMA pdata v1 send=4096 recv=4096 R=1"
    assert rep.layer("mpa")["privatedata"] == bytes.fromhex("00000080f6ab0e1801000303")


def test_every_fpdu_found_including_those_spanning_segments(packets) -> None:
    pkts, _ = packets
    fpdus = [lay for p in pkts for lay in p.layers if lay.proto == "mpa" and lay.label == "MPA FPDU"]
    # tshark counts 1193 iwarp_mpa.ulpdulength in this capture (see test_iwarp_tshark).
    assert len(fpdus) == 1193
    spanning = [lay for lay in fpdus if lay.get("frames")]
    assert len(spanning) == 58
    # Nothing is left over: every TCP payload byte is in an MPA frame (2 x 32 bytes), an FPDU, or the
    # one retransmitted segment (frame 550, 204 bytes the server sent twice).
    retrans = [p.frame.num for p in pkts if p.expert and any(e.group == "sequence" for e in p.expert)]
    assert retrans == [550] and pkts[549].layer("tcp")["len"] == 204
    sizes = sum(lay.length for lay in fpdus)
    payload = sum(p.layer("tcp")["len"] for p in pkts if p.layer("tcp"))
    assert payload == sizes + 2 * 32 + 204


def test_rdmap_opcode_counts_are_sane(packets) -> None:
    pkts, _ = packets
    ops = Counter((i.name, i.last) for p in pkts for i in (p.extra or {}).get("iwarp", []))
    assert ops == Counter({("Send", True): 646, ("Send", False): 2, ("Send with Invalidate", True): 10,
                           ("Write", True): 284, ("Write", False): 139, ("Read Request", True): 3,
                           ("Read Response", True): 3, ("Read Response", False): 106})
    infos = [i for p in pkts for i in (p.extra or {}).get("iwarp", [])]
    assert all(i.qn == 0 for i in infos if i.kind == "send")
    assert all(i.qn == 1 for i in infos if i.opcode == 1)
    # Each Read Request is answered by Read Responses into its sink STag, the last with L set.
    for rr in (i for i in infos if i.opcode == 1):
        sink = rr.read_request[0]
        resp = [i for i in infos if i.opcode == 2 and i.stag == sink]
        assert resp and resp[-1].last
        assert sum(i.payload_len for i in resp) >= rr.read_request[2]


def test_no_malformed_packets_and_sends_reach_rpc_over_rdma(packets) -> None:
    pkts, _ = packets
    assert [p.frame.num for p in pkts if p.malformed] == []
    sends = [p for p in pkts if any(i.kind == "send" and i.last for i in (p.extra or {}).get("iwarp", []))]
    assert len(sends) == 656
    assert all(p.has("rpcrdma") for p in sends)


def test_send_in_two_ddp_segments_is_reassembled(packets) -> None:
    pkts, _ = packets
    first = [p for p in pkts if any(i.kind == "send" and not i.last for i in (p.extra or {}).get("iwarp", []))]
    assert [p.frame.num for p in first] == [56, 57]
    last = pkts[58]
    info = last.extra["iwarp"][0]
    assert (info.msn, info.mo, info.last, info.message_len) == (20, 2848, True, 2848 + info.payload_len)
    assert last.has("rpcrdma") and "WRITE Call" in last.info_text


def test_connection_table_lists_the_iwarp_connection(packets) -> None:
    _, session = packets
    from rdmaspy import conversation
    conns = list(conversation.connections(session))
    assert len(conns) == 1
    c = conns[0]
    assert (c.transport, c.client_addr, c.client_port, c.server_addr, c.server_port) == \
        ("iwarp", "192.0.2.2", 46371, "192.0.2.1", 20049)
    # established at the MPA Reply, closed by the FINs that end the capture (the client's first)
    assert c.t_established is not None
    assert (c.inline_c2s, c.inline_s2c, c.state, c.closed_by) == (4096, 4096, "closed", "client")
