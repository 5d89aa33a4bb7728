"""RDMA-CM: the service ID split, the IP CM header, consumer private data and payloads handed on by port."""
from __future__ import annotations

from cm_build import CLIENT6, FIXTURE, SERVER6, cm_mad, ip_cm_header, req, sid
from conftest import capture
from rdmaspy import craft
from rdmaspy.dissectors import rdma_cm
from rdmaspy.engine import Engine
from rdmaspy.packet import Frame
from rdmaspy.readers import open_capture
from rdmaspy.registry import table


def first(path):
    eng = Engine(strict=True)
    with open_capture(str(path)) as cap:
        return [eng.dissect(f) for f in cap]


def test_service_id_split():
    assert rdma_cm.split_service_id(0x0000000001064E51) == (1, 0x06, 20049)
    assert rdma_cm.split_service_id(0x0000000001111D2F) == (1, 0x11, 7471)
    assert rdma_cm.split_service_id(0x0000000002064E51) is None
    assert rdma_cm.split_service_id(0x1000000000000404) is None
    assert rdma_cm.service_text(0x0000000001064E51) == "NFS/RDMA(20049)"
    assert rdma_cm.service_text(0x0000000001061D2F) == "RDMA-CM TCP(7471)"
    assert rdma_cm.service_text(0x0002C90300ABCDEF) == "0x0002c90300abcdef"


def test_ip_cm_header_ipv4_from_linux():
    req_pkt = first(capture("rxe-nfsv3-rdma.pcap"))[0]
    lay = req_pkt.layer("cm.req")
    sidl, ip = lay.children
    assert sidl["rdmacm.port"] == 20049 and sidl["rdmacm.port_space"] == 6 and sidl["rdmacm.service"] == "NFS/RDMA"
    assert sidl["cm.req.serviceid.prefix"] == b"\0\0\0\0\x01"
    assert (ip["majv"], ip["minv"], ip["ipv"]) == (0, 0, 4)
    assert ip["cm.req.ip_cm.sip4"] == bytes((192, 0, 2, 2)) and ip["cm.req.ip_cm.dip4"] == bytes((192, 0, 2, 1))
    assert ip["sport"] == 0xAB94 and len(ip["cm.req.ip_cm.private"]) == 56


def test_ip_cm_header_ipv6():
    p = first(FIXTURE)[14]
    ip = p.layer("cm.req").children[1]
    assert ip["ipv"] == 6 and ip["sport"] == 0x1234
    import ipaddress
    assert ipaddress.ip_address(ip["cm.req.ip_cm.sip6"]) == ipaddress.ip_address(CLIENT6)
    assert ipaddress.ip_address(ip["cm.req.ip_cm.dip6"]) == ipaddress.ip_address(SERVER6)
    assert "SID=RDMA-CM TCP(9999)" in p.info_text


def test_non_rdma_cm_service_id_keeps_whole_private_data():
    p = first(FIXTURE)[12]
    lay = p.layer("cm.req")
    assert not lay.children and len(lay["cm.req.private"]) == 92


def test_short_ip_cm_header_is_malformed():
    m = cm_mad(0x10, req(1, sid(20049), 0x11, 5, ip_cm_header("192.0.2.1", "192.0.2.2", 1)), 1)[:24 + 140 + 20]
    pkt = Engine(strict=True).dissect(Frame(1, 0, 1, craft.rocev2_mad(m), 0))
    assert pkt.malformed == "cm.req.ip_cm: truncated (20 of 36 bytes)"


def test_consumer_private_data_goes_to_the_port_then_heuristics():
    seen = []

    def by_port(pkt, buf, off, end, ctx):
        seen.append(("port", bytes(buf[off:end])))

    tab = table("cm.private_data")
    tab.register(65001, by_port)
    try:
        m = cm_mad(0x10, req(1, sid(65001), 0x11, 5, ip_cm_header("192.0.2.1", "192.0.2.2", 1) + b"hello"), 1)
        Engine(strict=True).dissect(Frame(1, 0, 1, craft.rocev2_mad(m), 0))
    finally:
        del tab.by_key[65001]
    assert seen == [("port", b"hello" + bytes(51))]


def test_rdmacm_port_heuristic_is_first_and_dispatches_by_connection_port():
    heur = table("ib.payload").heuristics
    assert heur[0][0] == "rdmacm.port"
    got = []
    ports = table("rdmacm.port")
    saved = ports.unregister(7471)
    ports.register(7471, lambda pkt, buf, off, end, ctx: got.append((pkt.frame.num, end - off)))
    try:
        pkts = first(capture("rxe-ucmatose.pcap"))
    finally:
        ports.unregister(7471)
        if saved is not None:
            ports.register(7471, saved)
    assert got == [(4, 200), (6, 200), (8, 200), (10, 200)]     # 258-byte frames: 200-byte SENDs
    assert all(p.conv is pkts[0].conv for p in pkts[3:11])


def test_no_port_no_dispatch():
    pkts = first(capture("rxe-rc-pingpong.pcap"))
    assert pkts[0].conv is not None and pkts[0].conv.port is None
    assert rdma_cm.rdmacm_payload(pkts[0], b"", 0, 0, None) is False
