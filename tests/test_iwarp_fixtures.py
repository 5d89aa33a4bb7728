"""iWARP on built captures (tests/fixtures/iwarp_build.py): markers, CRC32c, stream reassembly cases,
Terminate, atomics, untagged reassembly, a connection found without its MPA exchange."""
from __future__ import annotations

import importlib.util
import struct

import pytest

from conftest import FIXTURES, capture
from rdmaspy.dissectors import iwarp_mpa
from rdmaspy.engine import Engine
from rdmaspy.readers import open_capture


def _load_builder():
    spec = importlib.util.spec_from_file_location("iwarp_build", FIXTURES / "iwarp_build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


BUILD = _load_builder()


def decode(name: str):
    eng = Engine(strict=True)
    with open_capture(str(capture(name))) as cap:
        return [eng.dissect(f) for f in cap], eng.session


def infos(pkt):
    return (pkt.extra or {}).get("iwarp", [])


@pytest.mark.parametrize("name", sorted(BUILD.FIXTURES))
def test_committed_fixture_is_what_the_builder_builds(name: str, tmp_path) -> None:
    out = tmp_path / name
    BUILD.build(name, out)
    assert out.read_bytes() == (FIXTURES / name).read_bytes()


def test_crc32c_matches_the_iscsi_test_vectors() -> None:
    # RFC 3720 B.4: 32 bytes of zeros, of ones, ascending and descending bytes.
    assert iwarp_mpa.crc32c(bytes(32)) == 0x8A9136AA
    assert iwarp_mpa.crc32c(b"\xff" * 32) == 0x62A8AB43
    assert iwarp_mpa.crc32c(bytes(range(32))) == 0x46DD794E
    assert iwarp_mpa.crc32c(bytes(range(31, -1, -1))) == 0x113FDB5C
    # on the wire least significant byte first: 32 zero bytes give "aa 36 91 8a"
    assert iwarp_mpa.crc_field_value(0x8A9136AA) == 0xAA36918A


# --- markers and CRC ------------------------------------------------------------------------------
def test_markers_are_removed_and_crc_checked() -> None:
    pkts, _ = decode("iwarp_markers_crc.pcap")
    assert not [p.frame.num for p in pkts if p.malformed]
    req, rep = pkts[0].layer("mpa"), pkts[1].layer("mpa")
    assert (req["marker_flag"], req["crc_flag"], rep["marker_flag"], rep["crc_flag"]) == (True, True, True, True)
    write = pkts[4]
    fp = write.layer("mpa")
    assert fp.get("frames") == "4, 5"
    assert fp["markers"] == 3 and fp["fpdu_len"] == fp.length + 12
    assert [m["marker_fpduptr"] for m in fp.children] == [384, 896, 1408]
    (w,) = infos(write)
    assert (w.opcode, w.stag, w.to, w.payload_len, w.crc_ok) == (0, 0x1234, 0x10000, 1500, True)
    # the payload, markers removed, is the bytes the builder wrote
    assert bytes(w.buf[w.payload_off:w.payload_end]) == bytes(i & 0xFF for i in range(1500))
    # the first FPDU of each direction starts with a marker pointing at itself
    assert [m["marker_fpduptr"] for m in pkts[2].layer("mpa").children] == [0]
    assert [m["marker_fpduptr"] for m in pkts[5].layer("mpa").children] == [0]
    assert pkts[6].extra["iwarp"][0].payload_len == 700
    valid = [p.layer("mpa").get("iwarp.crc.valid") for p in pkts[2:] if p.layer("mpa").header is iwarp_mpa.FPDU]
    assert valid == [True, True, True, True, True, True, False]


def test_flipped_crc_is_reported_with_the_expected_value() -> None:
    pkts, _ = decode("iwarp_markers_crc.pcap")
    bad = pkts[9]
    lay = bad.layer("mpa")
    assert lay["iwarp.crc.valid"] is False
    assert lay["crc"] ^ lay["iwarp.crc.expected"] == 0x00000100     # the builder flipped bit 16 of the CRC
    assert any(e.group == "checksum" and e.severity == "error" for e in bad.expert)
    assert "[Bad MPA CRC" in bad.info_text
    assert infos(bad)[0].crc_ok is False
    assert bad.malformed is None


def test_crc_not_checked_when_not_negotiated() -> None:
    pkts, _ = decode("iwarp_stream_cases.pcap")
    for p in pkts:
        for lay in p.layers:
            if lay.proto == "mpa" and lay.header is iwarp_mpa.FPDU:
                assert lay.get("iwarp.crc.valid") is None and lay["crc"] == 0


# --- stream cases ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cases():
    return decode("iwarp_stream_cases.pcap")


def test_rev2_exchange_ird_ord_and_private_data(cases) -> None:
    pkts, session = cases
    req = pkts[0]
    v2 = req.layer("mpa").children[0]
    assert (v2["p2p"], v2["ird"], v2["ord"], v2["rtr_write"], v2["rtr_send"], v2["rtr_read"]) == \
        (True, 16, 8, True, False, False)
    assert req.info_text.startswith("MPA Request Rev 2 IRD=16 ORD=8 P2P PD=12 | ")
    conn = iwarp_mpa.mpa_connections(session)
    c = next(c for c in conn if c.responder[1] == 7174)
    assert (c.req.ird, c.req.ord, c.rep.ird, c.rep.ord, c.crc, c.full_operation) == (16, 8, 8, 16, False, True)


def test_several_fpdus_in_one_segment(cases) -> None:
    pkts, _ = cases
    assert [(i.name, i.last) for i in infos(pkts[2])] == [("Send", True), ("Write", True), ("Send with SE", True)]
    assert pkts[2].info_text.count(" | ") == 2


def test_fpdu_split_over_three_segments(cases) -> None:
    pkts, _ = cases
    assert infos(pkts[3]) == [] and infos(pkts[4]) == []
    assert "[MPA FPDU continues: 1000 of 2920 bytes]" in pkts[3].info_text
    assert "[MPA FPDU continues: 2000 of 2920 bytes]" in pkts[4].info_text
    (w,) = infos(pkts[5])
    assert w.frames == [4, 5, 6] and w.payload_len == 2900 and w.stag == 0x88
    assert bytes(w.buf[w.payload_off:w.payload_end]) == bytes(i % 251 for i in range(2900))


def test_retransmissions_are_dropped(cases) -> None:
    pkts, _ = cases
    assert infos(pkts[6]) == [] and "retransmitted" in pkts[6].info_text
    st = pkts[6].layer("tcp_stream")
    assert (st["status"], st["retransmitted"]) == ("retransmission", 920)
    assert [(i.name, i.msn) for i in infos(pkts[7])] == [("Send", 3)]    # 8 old bytes, then a new FPDU
    st = pkts[7].layer("tcp_stream")
    assert (st["status"], st["retransmitted"]) == ("overlap", 8)
    assert pkts[5].layer("tcp_stream") is None          # in-order segments carry no reassembly layer
    assert any("8 bytes" in e.text for e in pkts[7].expert)


def test_out_of_order_segment_is_held_until_the_hole_fills(cases) -> None:
    pkts, _ = cases
    assert infos(pkts[8]) == [] and "held" in pkts[8].info_text
    assert pkts[8].layer("tcp_stream")["status"] == "held"
    (w,) = infos(pkts[9])
    assert w.frames == [10, 9] and w.payload_len == 600 and w.stag == 0x99


def test_send_in_three_ddp_segments_is_reassembled(cases) -> None:
    pkts, _ = cases
    segs = [infos(pkts[i])[0] for i in (10, 11, 12)]
    assert [(s.mo, s.last) for s in segs] == [(0, False), (100, False), (200, True)]
    assert segs[2].message_len == 300 and segs[2].message == b"A" * 100 + b"B" * 100 + b"C" * 100
    assert pkts[12].layer("ddp")["rdmap.send.fragment_count"] == 3
    assert "[reassembled 300 bytes]" in pkts[12].info_text


def test_every_untagged_opcode_and_its_fields(cases) -> None:
    pkts, _ = cases
    inv = infos(pkts[13])[0]
    assert (inv.name, inv.inv_stag) == ("Send with SE and Invalidate", 0xCAFE)
    rr = infos(pkts[14])[0]
    assert rr.read_request == (0x11, 0x1000, 64, 0x22, 0x2000)
    assert infos(pkts[15])[0].name == "Read Response"
    at = infos(pkts[16])[0]
    assert at.name == "Atomic Request" and at.atomic[1:5] == (0, 7, 0x33, 0x40)
    assert infos(pkts[17])[0].atomic == (7, 41)
    assert infos(pkts[18])[0].immediate == 0x0102030405060708


def test_terminate_names_its_layer_type_and_code(cases) -> None:
    pkts, _ = cases
    term = pkts[19]
    (t,) = infos(term)
    assert t.terminate == (1, 2, 1)
    assert "Terminate" in term.info_text and "DDP: Untagged Buffer Error: Invalid QN" in term.info_text
    lay = term.layer("rdmap").children[0]
    assert (lay["hdrct_m"], lay["hdrct_d"], lay["hdrct_r"]) == (True, True, True)
    assert lay["rdmap.term.ddp_seg_len"] == 18
    assert lay["rdmap.term.ddp_h"] == BUILD.untagged(3, 9, 6, 0)
    assert lay["rdmap.term.rdma_h"] == bytes(28)
    assert any(e.severity == "error" and "Invalid QN" in e.text for e in term.expert)


def test_nothing_malformed_in_the_stream_cases(cases) -> None:
    pkts, _ = cases
    assert [p.frame.num for p in pkts if p.malformed] == []


def test_midstream_connection_found_by_the_strict_heuristic() -> None:
    pkts, session = decode("iwarp_midstream.pcap")
    assert [[i.name for i in infos(p)] for p in pkts] == [["Send"], ["Write"]]
    (c,) = iwarp_mpa.mpa_connections(session)
    assert c.midstream and c.server_port == 6000


def test_plain_tcp_is_not_taken_for_iwarp() -> None:
    from rdmaspy.packet import Frame
    eng = Engine(strict=True)
    payloads = [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", bytes(100), b"\x00\x10" + bytes(18)]
    for k, data in enumerate(payloads):
        frame = BUILD.tcp_frame("192.0.2.9", "192.0.2.8", 1234 + k, 80, 1, data)
        pkt = eng.dissect(Frame(k + 1, 0, 1, frame, len(frame)))
        assert not pkt.has("mpa") and not pkt.has("ddp")
    assert eng.session.state.get("iwarp.streams") in (None, {})


def test_reply_without_its_request_still_frames_both_directions() -> None:
    from rdmaspy.packet import Frame
    c = BUILD.Direction(BUILD.CLIENT, 40100, BUILD.SERVER, 7174, 10)
    s = BUILD.Direction(BUILD.SERVER, 7174, BUILD.CLIENT, 40100, 20)
    c.advance(BUILD.reqrep(True, 0, 1, b""))              # the Request is not in the capture
    frames = s.segments(BUILD.reqrep(False, 0, 1, b""))
    frames += c.segments(c.fpdu(BUILD.untagged(3, 0, 1, 0, b"hi")))
    frames += s.segments(s.fpdu(BUILD.untagged(3, 0, 1, 0, b"ho")))
    eng = Engine(strict=True)
    pkts = [eng.dissect(Frame(i + 1, 0, 1, f, len(f))) for i, f in enumerate(frames)]
    assert pkts[0].info_text.startswith("MPA Reply Rev 1")
    assert [[i.name for i in infos(p)] for p in pkts[1:]] == [["Send"], ["Send"]]
    assert all(p.malformed is None for p in pkts)


def test_same_ports_again_is_a_new_connection() -> None:
    from rdmaspy.packet import Frame
    frames = []
    for isn in (1000, 500000):
        c = BUILD.Direction(BUILD.CLIENT, 40200, BUILD.SERVER, 7174, isn)
        s = BUILD.Direction(BUILD.SERVER, 7174, BUILD.CLIENT, 40200, isn * 3)
        frames += c.segments(BUILD.reqrep(True, 0, 1, b""))
        frames += s.segments(BUILD.reqrep(False, 0, 1, b""))
        frames += c.segments(c.fpdu(BUILD.untagged(3, 0, 1, 0, b"hi")))
    eng = Engine(strict=True)
    pkts = [eng.dissect(Frame(i + 1, 0, 1, f, len(f))) for i, f in enumerate(frames)]
    assert [p.info_text.split(" Rev")[0] if p.layer("mpa").header is iwarp_mpa.REQREP else infos(p)[0].name
            for p in pkts] == ["MPA Request", "MPA Reply", "Send"] * 2
    # the MPA state keeps only the second, the first being over
    (live,) = iwarp_mpa.mpa_connections(eng.session)
    second_request = [p.frame.num for p in pkts if p.info_text.startswith("MPA Request")][1]
    assert live.req_frame == second_request
    assert all(p.malformed is None for p in pkts)


def _exchange(sport: int) -> tuple[object, object, list[bytes]]:
    """An MPA exchange and one Send each way on a new pair of ports: (client, server, frames)."""
    c = BUILD.Direction(BUILD.CLIENT, sport, BUILD.SERVER, 7174, 1000)
    s = BUILD.Direction(BUILD.SERVER, 7174, BUILD.CLIENT, sport, 9000)
    frames = c.segments(BUILD.reqrep(True, 0, 1, b"")) + s.segments(BUILD.reqrep(False, 0, 1, b""))
    frames += c.segments(c.fpdu(BUILD.untagged(3, 0, 1, 0, b"hi")))
    frames += s.segments(s.fpdu(BUILD.untagged(3, 0, 1, 0, b"ho")))
    return c, s, frames


def _fin(d, flags: int = 0x11) -> bytes:
    return BUILD.tcp_frame(d.src, d.dst, d.sport, d.dport, d.seq, b"", flags=flags)


def _dissect(frames: list[bytes]):
    from rdmaspy.packet import Frame
    eng = Engine(strict=True)
    return [eng.dissect(Frame(i + 1, 0, 1, f, len(f))) for i, f in enumerate(frames)], eng


def test_a_connection_closed_by_both_fins_is_let_go() -> None:
    frames = []
    for port in range(40300, 40310):           # ten connections, one after the other, each closed
        c, s, more = _exchange(port)
        frames += more + [_fin(c), _fin(s)]
    c, s, more = _exchange(40999)              # and one still open
    pkts, eng = _dissect(frames + more + [_fin(c)])
    assert all(p.malformed is None for p in pkts)
    assert [conn.initiator[1] for conn in iwarp_mpa.mpa_connections(eng.session)] == [40999]
    assert len(eng.session.state["iwarp.streams"]) == 2


def test_a_reset_lets_the_connection_go() -> None:
    c, _s, frames = _exchange(40400)
    _pkts, eng = _dissect(frames + [_fin(c, flags=0x14)])
    assert iwarp_mpa.mpa_connections(eng.session) == []
    assert eng.session.state["iwarp.streams"] == {}


def test_a_fin_ahead_of_missing_bytes_keeps_the_stream_for_their_retransmission() -> None:
    c, s, frames = _exchange(40500)
    lost = c.segments(c.fpdu(BUILD.untagged(3, 0, 2, 0, b"late")))      # not seen until after the FINs
    frames += [_fin(c), _fin(s)] + lost
    pkts, eng = _dissect(frames)
    assert [i.name for i in infos(pkts[-1])] == ["Send"]
    assert len(iwarp_mpa.mpa_connections(eng.session)) == 1


def _timed(frames: list[bytes]):
    """The frames dissected at 1 ms apart (frame n at n ms); the packets and the connection table."""
    from rdmaspy.conversation import connections
    from rdmaspy.packet import Frame
    eng = Engine(strict=True)
    pkts = [eng.dissect(Frame(i + 1, (i + 1) * 1_000_000, 1, f, len(f))) for i, f in enumerate(frames)]
    return pkts, list(connections(eng.session))


def test_both_fins_close_the_connection_by_the_side_whose_fin_came_first() -> None:
    c, s, frames = _exchange(40600)
    pkts, (conn,) = _timed(frames + [_fin(s), _fin(c)])
    assert (conn.state, conn.closed_by, conn.t_closed) == ("closed", "server", pkts[-1].frame.ts)
    assert conn.t_end == pkts[-1].frame.ts


def test_one_fin_leaves_the_connection_established() -> None:
    c, _s, frames = _exchange(40601)
    _pkts, (conn,) = _timed(frames + [_fin(c)])
    assert (conn.state, conn.closed_by, conn.t_closed) == ("established", None, None)


def test_a_reset_closes_the_connection_by_its_sender() -> None:
    c, _s, frames = _exchange(40602)
    pkts, (conn,) = _timed(frames + [_fin(c, flags=0x14)])
    assert (conn.state, conn.closed_by, conn.t_closed) == ("closed", "client", pkts[-1].frame.ts)


def test_the_same_ports_again_are_a_second_connection_and_the_first_ends_at_its_last_packet() -> None:
    _c, _s, first = _exchange(40603)
    _c, _s, second = _exchange(40603)
    pkts, conns = _timed(first + second)
    assert [(c.state, c.client_port) for c in conns] == [("closed", 40603), ("established", 40603)]
    assert conns[0].t_closed == pkts[len(first) - 1].frame.ts and conns[0].closed_by is None
    assert conns[1].t_start == pkts[len(first)].frame.ts
    assert [p.conv.conn_id for p in pkts] == [conns[0].conn_id] * len(first) + [conns[1].conn_id] * len(second)
    assert (conns[0].packets_c2s, conns[0].packets_s2c) == (2, 2)     # the Request and a Send each way


def test_a_rejected_connection_stays_rejected_when_its_tcp_connection_ends() -> None:
    c = BUILD.Direction(BUILD.CLIENT, 40604, BUILD.SERVER, 7174, 1000)
    s = BUILD.Direction(BUILD.SERVER, 7174, BUILD.CLIENT, 40604, 9000)
    frames = c.segments(BUILD.reqrep(True, 0, 1, b"")) + s.segments(BUILD.reqrep(False, 0x20, 1, b""))
    _pkts, (conn,) = _timed(frames + [_fin(s), _fin(c)])
    assert conn.state == "rejected"


def test_the_shipped_soft_iwarp_connections_close_at_their_fins() -> None:
    """siw-ib_write_bw-rdmacm.pcap: tshark shows each connection's FINs, the server's first (frames 91/92
    and 94/95, -Y "tcp.flags.fin == 1"); each connection closes at the second, by the server."""
    from rdmaspy.conversation import connections
    eng = Engine()
    fins = {}
    with open_capture(str(capture("siw-ib_write_bw-rdmacm.pcap"))) as cap:
        for f in cap:
            pkt = eng.dissect(f)
            if f.num in (92, 95):
                fins[f.num] = pkt.frame.ts
    by_port = {c.client_port: c for c in connections(eng.session)}
    assert [(by_port[p].state, by_port[p].closed_by, by_port[p].t_closed) for p in (33955, 37154)] == [
        ("closed", "server", fins[92]), ("closed", "server", fins[95])]


def _siw_nfs_again(times: int):
    """siw-nfsv3-rdma.pcap ``times`` over, each copy after the one before: the same endpoints, one NFS
    mount after another (each copy ends with both FINs)."""
    from rdmaspy.packet import Frame
    with open_capture(str(capture("siw-nfsv3-rdma.pcap"))) as cap:
        frames = [(f.ts, f.data, f.wirelen, f.linktype) for f in cap]
    span = frames[-1][0] - frames[0][0] + 1_000_000
    n = 0
    for k in range(times):
        for ts, data, wirelen, linktype in frames:
            n += 1
            yield Frame(n, ts + k * span, linktype, data, wirelen)


def test_connections_that_ended_leave_no_analysis_state_and_report_as_one_alone():
    """Each ended connection's open calls and summary go out when it ends; the analysis keeps only the
    live connections (it kept every one to the end, some 60 KB each), and reports the same per copy."""
    from rdmaspy.analysis.model import Transaction, UlpSummary
    from rdmaspy.pipeline import Options, Pipeline

    class Keep:
        def __init__(self) -> None:
            self.records: list[object] = []

        def record(self, r: object) -> None:
            self.records.append(r)

    per_run = []
    for times in (1, 3):
        keep = Keep()
        pipe = Pipeline(_siw_nfs_again(times), Options(analyze=True), [])
        pipe.analyzer.on_record = keep.record
        live = []
        for pkt in pipe.packets():
            live.append(len(pipe.analyzer.modules["rpcrdma.transactions"].conns))
        summaries = [r for r in keep.records if isinstance(r, UlpSummary)]
        txns = {(r.conn, r.key, r.request_frame) for r in keep.records if isinstance(r, Transaction)}
        per_run.append((len(summaries), len(txns), max(live)))
    (one_summaries, one_txns, one_live), (three_summaries, three_txns, three_live) = per_run
    assert (one_summaries, three_summaries) == (1, 3) and one_live == three_live == 1
    assert one_txns and three_txns == 3 * one_txns
