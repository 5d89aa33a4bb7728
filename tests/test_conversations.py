"""Connections tracked from their setup (or their traffic), and ``rdmaspy conversations``."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from cm_build import ERF_FIXTURE, FIXTURE
from conftest import capture
from rdmaspy.conversation import Connection, ConnectionTable, connections
from rdmaspy.engine import Engine
from rdmaspy.readers import open_capture


def run(path):
    eng = Engine(strict=True)
    with open_capture(str(path)) as cap:
        pkts = [eng.dissect(f) for f in cap]
    return pkts, list(connections(eng.session))


@pytest.mark.parametrize("name,qpns,req_psn,rep_psn,port,rc", [
    ("rxe-ucmatose.pcap", (0x1F, 0x1F), 0xC354BA, 0x298767, 7471, (4, 4)),
    ("rxe-rdma_server-client.pcap", (0x21, 0x21), 0x0DBCBE, 0x55E9DF, 7471, (2, 2)),
    ("rxe-nfsv3-rdma.pcap", (0x11, 0x11), 0xA4DA68, 0x7E3C4B, 20049, (1093, 1140)),
])
def test_real_softroce_connections(name, qpns, req_psn, rep_psn, port, rc):
    pkts, conns = run(capture(name))
    [c] = conns
    assert c.conn_id == 1 and c.setup_known and c.state == "closed"
    assert (c.client_addr, c.server_addr) == ("192.0.2.2", "192.0.2.1")
    assert (c.client_qpn, c.server_qpn) == qpns and c.port == port and c.port_space == 6
    assert (c.req_psn, c.rep_psn, c.path_mtu, c.service_type) == (req_psn, rep_psn, 1024, 0)
    assert (c.packets_c2s, c.packets_s2c) == rc
    # Linux starts client -> server traffic at the REP's PSN and server -> client at the REQ's.
    first_c2s = next(p for p in pkts if p.ib and p.ib.plan.transport == "RC" and c.direction(p) == "c2s"
                     and p.ib.plan.kind == "send")
    first_s2c = next(p for p in pkts if p.ib and p.ib.plan.transport == "RC" and c.direction(p) == "s2c"
                     and p.ib.plan.kind == "send")
    assert (first_c2s.ib.psn, first_s2c.ib.psn) == (c.start_psn_c2s, c.start_psn_s2c)
    assert c.t_requested == pkts[0].frame.ts and c.t_established == pkts[2].frame.ts
    assert (c.client_gid, c.server_gid, c.server_port) == ("192.0.2.2", "192.0.2.1", port)
    assert c.client_port == pkts[0].layer("cm.req").children[1]["sport"]
    assert c.t_closed in (pkts[-2].frame.ts, pkts[-1].frame.ts)
    assert all(p.conv is c for p in pkts if p.ib is not None and p.ib.plan.transport == "RC")
    assert all(p.conv is c for p in pkts if p.has("mad"))


def test_who_closed():
    _, [c] = run(capture("rxe-ucmatose.pcap"))
    assert c.closed_by == "server"           # ucmatose: the passive side sends the DREQ
    _, [c] = run(capture("rxe-rdma_server-client.pcap"))
    assert c.closed_by == "client"


def test_fixture_connections_states_and_thresholds():
    pkts, conns = run(FIXTURE)
    c1, c2, c3 = conns
    assert c1.state == "closed" and (c1.inline_c2s, c1.inline_s2c, c1.remote_invalidate) == (262144, 1024, True)
    assert (c1.packets_c2s, c1.packets_s2c) == (2, 2) and c1.path_mtu == 4096
    assert c2.state == "rejected" and c2.reject_reason == 28 and c2.server_qpn is None
    assert (c2.inline_c2s, c2.inline_s2c) == (1024, 1024) and c2.pdata_client.version == 2
    assert c3.state == "established" and c3.client_addr == "2001:db8::10" and c3.port == 9999
    assert c3.pdata_client.problem == "overrun" and (c3.inline_c2s, c3.inline_s2c) == (1024, 1024)
    assert [p.frame.num for p in pkts if p.conv is c1] == list(range(1, 13))


def test_native_infiniband_connection_by_lids():
    pkts, [c] = run(ERF_FIXTURE)
    assert (c.client_addr, c.server_addr, c.client_qpn, c.server_qpn) == ("LID 4", "LID 1", 0x870408, 0xFC0407)
    assert c.state == "closed" and (c.packets_c2s, c.packets_s2c) == (1, 1)
    assert (c.inline_c2s, c.inline_s2c) == (1024, 1024)       # only the server sent RFC 8797 data
    assert c.pdata_server.send_size == 32768 and c.remote_invalidate is False


def test_traffic_without_setup_is_known_by_qpn_pair():
    pkts, [c] = run(capture("rxe-rc-pingpong.pcap"))
    assert not c.setup_known and c.state == "unknown-setup" and c.service_id is None
    assert (c.client_qpn, c.server_qpn) == (0x11, 0x13)
    assert c.packets_c2s + c.packets_s2c == 50
    assert (c.inline_c2s, c.inline_s2c) == (1024, 1024)


def test_several_qp_pairs_between_two_hosts():
    _, conns = run(capture("rxe-ibv_srq_pingpong.pcap"))
    assert [(c.client_qpn, c.server_qpn) for c in conns] == [(0x14, 0x14), (0x15, 0x15)]
    assert [c.conn_id for c in conns] == [1, 2]


def test_iwarp_connections_from_mpa():
    _, [c] = run(capture("siw-nfsv3-rdma.pcap"))
    assert c.transport == "iwarp" and c.server_port == 20049 and c.port == 20049
    assert c.t_established is not None
    # the capture ends with the client's FIN (frame 1709) and the server's (frame 1710)
    assert (c.state, c.closed_by) == ("closed", "client")
    assert (c.inline_c2s, c.inline_s2c) == (4096, 4096)


def test_open_from_mpa_api():
    from rdmaspy.dissectors.rpcrdma_pdata import RpcRdmaPdata
    tab = ConnectionTable()
    c = tab.open_from_mpa(("10.0.0.1", 40000), ("10.0.0.2", 20049), 5,
                          pdata_client=RpcRdmaPdata(1, True, 8192, 4096, 4, True))
    assert c.state == "requested" and c.transport == "iwarp" and c.port == 20049
    c2 = tab.open_from_mpa(("10.0.0.1", 40000), ("10.0.0.2", 20049), 9, replied=True,
                           pdata_server=RpcRdmaPdata(1, True, 2048, 16384, 4, True))
    assert c2 is c and c.state == "established" and c.t_established == 9
    assert (c.inline_c2s, c.inline_s2c, c.remote_invalidate) == (8192, 2048, True)
    assert tab.tcp_lookup("10.0.0.2", 20049, "10.0.0.1", 40000) == (c, False)
    tab.close(c, 20, "client")
    assert c.state == "closed" and c.t_end == 20 and c.closed_by == "client"


def test_direction_and_record():
    from rdmaspy.analysis import model
    from rdmaspy.output.flows import connection_record

    pkts, [c] = run(capture("rxe-ucmatose.pcap"))
    assert [c.direction(p) for p in pkts[3:7]] == ["s2c", "c2s", "s2c", "c2s"]
    rec = connection_record(model.Connection.of(c))
    json.dumps(rec)
    assert rec["client"]["qpn"] == 0x1F and rec["state"] == "closed" and rec["inline_c2s"] == 1024


def test_observer_does_no_work_for_unconnected_transports():
    tab = ConnectionTable()
    assert isinstance(Connection(1, "a", "b", 0), Connection) and len(tab) == 0
    _, conns = run(capture("rocev2_cnp_cx4lx.pcap"))
    assert conns == []


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "rdmaspy", *args], capture_output=True, text=True, timeout=120)


def test_cli_text_table():
    r = _cli("conversations", str(capture("rxe-nfsv3-rdma.pcap")))
    assert r.returncode == 0, r.stderr
    head, row = r.stdout.splitlines()
    assert head.split()[:3] == ["#", "Client", "QPN"]
    cols = row.split()
    assert cols[:6] == ["1", "192.0.2.2:43924", "0x000011", "192.0.2.1:20049", "0x000011", "NFS/RDMA(20049)"]
    assert cols[6] == "closed" and cols[-3:] == ["4096", "4096", "0"]


def test_cli_json():
    r = _cli("conversations", "-T", "json", str(FIXTURE))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    states = [c["state"] for c in doc["connections"]]
    assert states == ["closed", "rejected", "established"]
    c = doc["connections"][0]
    assert c["pdata_server"]["offset"] == 3 and c["inline_c2s"] == 262144 and c["remote_invalidate"] is True


def test_cli_rich_table_on_a_terminal(monkeypatch, capsys):
    from rdmaspy.cli import main
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["conversations", str(capture("rxe-ucmatose.pcap"))]) == 0
    out = capsys.readouterr().out
    assert "RDMA connections" in out and "RDMA-CM TCP(7471)" in out and "│" in out


def test_cli_bad_file(tmp_path):
    p = tmp_path / "x.pcap"
    p.write_bytes(b"nope")
    r = _cli("conversations", str(p))
    assert r.returncode == 1 and r.stderr.startswith("rdmaspy: error:") and "Traceback" not in r.stderr


def test_missing_rep_learns_the_server_qpn_from_traffic():
    """A capture that lost the REP: the client's packets carry the server's QPN."""
    eng = Engine(strict=True)
    with open_capture(str(capture("rxe-rdma_server-client.pcap"))) as cap:
        frames = [f for f in cap if f.num != 2]
    pkts = [eng.dissect(f) for f in frames]
    [c] = list(connections(eng.session))
    assert c.setup_known and (c.client_qpn, c.server_qpn) == (0x21, 0x21) and c.rep_psn is None
    assert all(p.conv is c for p in pkts)
    assert (c.packets_c2s, c.packets_s2c) == (2, 2)


def _random_exchange(steps):
    """Frames for a random mix of CM messages and RC packets between two hosts."""
    from cm_build import cm_mad, rep, req, sid
    from rdmaspy import craft
    from rdmaspy.dissectors import ib_cm
    hosts = ("192.0.2.1", "192.0.2.2")
    out = []
    for kind, fwd, a, b, qpn in steps:
        src, dst = hosts if fwd else hosts[::-1]
        if kind == "req":
            m = cm_mad(0x10, req(a, sid(20049), qpn, 1, b""), a)
        elif kind == "rep":
            m = cm_mad(0x13, rep(a, b, qpn, 2, b""), b)
        elif kind == "rc":
            out.append(craft.rocev2(0x04, qpn, 0, b"x" * 8, src=src, dst=dst))
            continue
        else:
            hdr = {"rtu": ib_cm.RTU, "rej": ib_cm.REJ, "dreq": ib_cm.DREQ, "drep": ib_cm.DREP, "mra": ib_cm.MRA}[kind]
            attr = {"rtu": 0x14, "rej": 0x12, "dreq": 0x15, "drep": 0x16, "mra": 0x11}[kind]
            m = cm_mad(attr, hdr.encode(localcommid=a, remotecommid=b), a)
        out.append(craft.rocev2_mad(m, src=src, dst=dst))
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["req", "rep", "rtu", "rej", "dreq", "drep", "mra", "rc", "rc"]),
                          st.booleans(), st.integers(1, 3), st.integers(1, 3), st.integers(0x10, 0x13)),
                max_size=14))
def test_any_sequence_of_cm_and_rc_packets(steps):
    from rdmaspy.packet import Frame
    eng = Engine(strict=True)
    pkts = [eng.dissect(Frame(i + 1, i, 1, f, len(f))) for i, f in enumerate(_random_exchange(steps))]
    conns = list(connections(eng.session))
    assert [c.conn_id for c in conns] == list(range(1, len(conns) + 1))
    for p in pkts:
        if p.ib is not None and p.ib.plan.transport == "RC":
            assert p.conv in conns and p.conv.direction(p) in ("c2s", "s2c")
    assert sum(c.packets_c2s + c.packets_s2c for c in conns) == sum(1 for s in steps if s[0] == "rc")
    for c in conns:
        assert c.state in ("requested", "established", "rejected", "closed", "unknown-setup")
        assert c.setup_known == (c.state != "unknown-setup")
