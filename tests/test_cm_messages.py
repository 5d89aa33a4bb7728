"""Every CM message, including those Wireshark 4.0 leaves undecoded (MRA, LAP, APR, SIDR, ClassPortInfo)."""
from __future__ import annotations

import pytest

from cm_build import FIXTURE, cm_mad, rep, req, sid
from rdmaspy import craft
from rdmaspy.dissectors import ib_cm
from rdmaspy.engine import Engine
from rdmaspy.output.text import summary_line
from rdmaspy.packet import Frame
from rdmaspy.readers import open_capture


@pytest.fixture(scope="module")
def pkts():
    eng = Engine(strict=True)
    with open_capture(str(FIXTURE)) as cap:
        return [eng.dissect(f) for f in cap]


def test_decode_line_of_a_req(pkts):
    assert pkts[0].info_text == ("CM ConnectRequest QPN=0x101 PSN=1048576 SID=NFS/RDMA(20049) "
                                 "RPC-over-RDMA pdata v1 send=262144 recv=1024 R=1")
    assert pkts[0].proto == "IB CM"
    assert "CM ConnectRequest" in summary_line(pkts[0], pkts[0].frame.ts)


def test_req_fields(pkts):
    lay = pkts[0].layer("cm.req")
    assert lay["localcommid"] == 0x1001 and lay["serviceid"] == 0x0000000001064E51
    assert lay["localqpn"] == 0x101 and lay["startpsn"] == 0x100000 and lay["pppmtu"] == 5
    assert lay["prim_flowlabel"] == 0x12345 and lay["prim_pktrate"] == 0x2D and lay["prim_sl"] == 3
    assert lay["alt_flowlabel"] == 0xABCDE and lay["alt_locallid"] == 0x0102 and lay["sap_supported"] == 1
    assert lay["srq"] == 1 and lay["retrcount"] == 7 and lay["maxcmretr"] == 15 and lay["e2eflowctrl"] == 1


def test_mra(pkts):
    lay = pkts[1].layer("cm.mra")
    assert (lay["localcommid"], lay["remotecommid"], lay["msgmraed"], lay["servicetimeout"]) == (0x2001, 0x1001,
                                                                                                 0, 17)
    assert lay["cm.mra.private"].startswith(b"mra-private") and len(lay["cm.mra.private"]) == 222
    assert pkts[1].info_text == "CM MsgRcptAck REQ timeout=536871us"


def test_rep_and_rtu(pkts):
    lay = pkts[2].layer("cm.rep")
    assert (lay["localqpn"], lay["startpsn"], lay["tgtackdelay"], lay["failoveracc"], lay["rnrretrcount"]) == (
        0x202, 0x200000, 15, 1, 7)
    assert lay["localqkey"] == 0x11223344 and lay["localcaguid"] == 0x0002C90300002222
    assert pkts[3].layer("cm.rtu")["cm.rtu.private"][:3] == b"rtu"


def test_lap_and_apr(pkts):
    lap = pkts[8].layer("cm.lap")
    assert lap["remoteqpneecn"] == 0x202 and lap["remoteresptout"] == 20
    assert (lap["alt_locallid"], lap["alt_remotelid"], lap["alt_flowlabel"], lap["alt_tfcclass"]) == (7, 8, 0x54321,
                                                                                                      0x20)
    assert (lap["alt_hoplim"], lap["alt_pktrate"], lap["alt_sl"], lap["alt_subnetlocal"], lap["alt_localacktout"]) \
        == (3, 6, 2, 1, 14)
    assert lap["alt_localgid"] == bytes.fromhex("fe800000000000000000000000000007")
    assert len(lap["cm.lap.private"]) == 168
    apr = pkts[9].layer("cm.apr")
    assert apr["apstatus"] == 2 and "Option not supported" in pkts[9].info_text


def test_dreq_drep(pkts):
    assert pkts[10].layer("cm.dreq")["remoteqpneecn"] == 0x101 and pkts[10].info_text.endswith("QPN=0x101")
    assert pkts[11].layer("cm.drsp")["remotecommid"] == 0x2001


def test_rej_reason_names(pkts):
    lay = pkts[13].layer("cm.rej")
    assert lay["reason"] == 28 and lay["rejinfolen"] == 72 and lay["ari"] == bytes(range(1, 73))
    assert "reason=Consumer Reject (28) rejecting REQ" in pkts[13].info_text
    assert ib_cm.REJ_REASONS[1] == "No QP available" and ib_cm.REJ_REASONS[35] == "Vendor Option Not Supported"
    assert len(ib_cm.REJ_REASONS) == 34


def test_sidr(pkts):
    r = pkts[17].layer("cm.sidr_req")
    assert r["requestid"] == 0x77 and r["serviceid"] == sid(5555, 0x11)
    assert "SID=RDMA-CM UDP(5555)" in pkts[17].info_text
    p = pkts[18].layer("cm.sidr_rep")
    assert (p["status"], p["qpn"], p["qkey"]) == (0, 0x606, 0x01234567)
    assert pkts[18].info_text == "CM ServiceIDResReqResp status=Valid QPN QPN=0x606 Q_Key=0x01234567"


def test_cm_classportinfo(pkts):
    assert pkts[19].layer("classportinfo") is None          # the Get carries no attribute
    cpi = pkts[20].layer("classportinfo")
    assert (cpi["capabilitymask2"], cpi["resptimevalue"], cpi["redirectfl"], cpi["traphl"], cpi["trapqkey"]) == (
        0x12345, 18, 0x12345, 64, 0x80010000)


def test_every_attribute_is_registered():
    from rdmaspy.registry import table
    assert set(table("cm.attribute").by_key) == set(ib_cm.ATTRIBUTES)


@pytest.mark.parametrize("cut", [24, 30, 24 + 139, 24 + 200, 255])
def test_short_cm_messages_are_malformed_not_errors(cut):
    mad = cm_mad(0x10, req(1, sid(20049), 0x11, 5, b""), 1)[:cut]
    pkt = Engine(strict=True).dissect(Frame(1, 0, 1, craft.rocev2_mad(mad), 0))
    if cut < 24 + 140:
        assert pkt.malformed and "cm.req" in pkt.malformed
    else:
        assert any("private data" in e.text or "MAD is" in e.text for e in pkt.expert)


def test_rep_without_its_req_still_opens_a_connection():
    eng = Engine(strict=True)
    m = cm_mad(0x13, rep(0x9, 0x8, 0x33, 7, b""), 5)
    pkt = eng.dissect(Frame(1, 0, 1, craft.rocev2_mad(m, src="192.0.2.1", dst="192.0.2.2"), 0))
    assert pkt.conv is not None and pkt.conv.server_qpn == 0x33 and pkt.conv.client_addr == "192.0.2.2"


def test_dreq_naming_the_wrong_qp_is_reported():
    from cm_build import CLIENT, SERVER
    eng = Engine(strict=True)
    with open_capture(str(FIXTURE)) as cap:
        frames = [f for f in cap][:4]
    for f in frames:
        eng.dissect(f)
    bad = cm_mad(0x15, ib_cm.DREQ.encode(localcommid=0x1001, remotecommid=0x2001, remoteqpneecn=0x999), 9)
    pkt = eng.dissect(Frame(5, 0, 1, craft.rocev2_mad(bad, src=CLIENT, dst=SERVER), 0))
    assert any("DREQ names QPN 0x999, but the connection's server QP is 0x202" in e.text for e in pkt.expert)
    good = eng.dissect(Frame(6, 0, 1, craft.rocev2_mad(
        cm_mad(0x15, ib_cm.DREQ.encode(localcommid=0x2001, remotecommid=0x1001, remoteqpneecn=0x101), 9),
        src=SERVER, dst=CLIENT), 0))
    assert not any("DREQ names" in e.text for e in good.expert or ())
