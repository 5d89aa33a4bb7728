"""MAD common header and the classes decoded field by field; no exception on any MAD payload."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cm_build import FIXTURE, mad_header
from rdmaspy import craft
from rdmaspy.dissectors import mad
from rdmaspy.engine import Engine
from rdmaspy.packet import Frame
from rdmaspy.readers import open_capture


@pytest.fixture(scope="module")
def pkts():
    eng = Engine(strict=True)
    with open_capture(str(FIXTURE)) as cap:
        return {f.num: eng.dissect(f) for f in cap}


def test_common_header(pkts):
    lay = pkts[1].layer("mad")
    assert (lay["baseversion"], lay["mgmtclass"], lay["classversion"], lay["method"], lay["attributeid"]) == (
        1, 7, 2, 3, 0x10)
    assert lay["transactionid"] == 0x0000000400001001
    assert mad.MAD.fields[1].name_of(7) == "Communication Management"


def test_smp_lid_routed(pkts):
    p = pkts[22]
    assert p.info_text == "SMP SubnGet(NodeInfo)" and p.proto == "MAD"
    lay = p.layer("smplid")
    assert lay["mkey"] == 0x1122334455667788 and lay["smpdata"] == bytes(range(64))


def test_smp_directed_route(pkts):
    p = pkts[23]
    assert p.info_text == "SMP-DR SubnGetResp(SMInfo) SM GUID=0x4041424344454647 priority=5 state=4"
    head = p.layer("smpdirected")
    assert (head["d"], head["smpstatus"], head["hoppointer"], head["hopcount"]) == (1, 0, 1, 2)
    body = head.children[0]
    assert body.label == "Directed Route Data (2 hops)"
    assert (body["drslid"], body["drdlid"]) == (0xFFFF, 0xFFFF)
    assert body["initialpath"][:3] == b"\0\x01\x02" and body["returnpath"][:2] == b"\0\x03"


def test_subnet_administration(pkts):
    p = pkts[24]
    assert p.info_text == "SA SubnAdmGetResp(PathRecord) DLID=0x2829 SLID=0x2a2b MTU=54"
    rmpp, sa = p.layer("rmpp"), p.layer("sa")
    assert (rmpp["rmppversion"], rmpp["rmpptype"], rmpp["rresptime"], rmpp["rmppflags"], rmpp["data2"]) == (
        1, 1, 0x1F, 7, 200)
    assert sa["attributeoffset"] == 8 and sa["componentmask"] == 0xC00
    assert (rmpp["rmpp.segmentnumber"], rmpp["rmpp.payloadlength"]) == (1, 200)
    pr = p.layer("pathrecord")
    assert (pr["dlid"], pr["slid"], pr["flowlabel"], pr["numbpath"], pr["sl"]) == (0x2829, 0x2A2B, 0xC2D2E, 0x31, 5)
    assert sa["sa.subnetadmindata"] == bytes(range(64, 200))        # what follows the first record
    mc = pkts[31].layer("mcmemberrecord")
    assert (mc["mlid"], mc["q_key"], mc["flowlabel"], mc["scope"], mc["joinstate"]) == (0xC001, 0x0B1B, 0xABCDE, 2, 1)


def test_port_counters(pkts):
    p = pkts[25]
    lay = p.layer("portcounters")
    assert (lay["symbolerrorcounter"], lay["locallinkintegrityerrors"], lay["excessivebufferoverrunerrors"],
            lay["vl15dropped"], lay["portxmitdata"], lay["portrcvpkts"], lay["portxmitwait"]) == (
        3, 10, 11, 12, 1000, 40, 5)
    assert p.info_text == "PerfMgt GetResp(PortCounters) port=1 xmit=30pkts rcv=40pkts"
    ext = pkts[26].layer("portcounters_ext")
    assert ext["portxmitdata"] == 10**12 and ext["portrcvpkts"] == 4 * 10**9 and ext["portmulticastrcvpkts"] == 8


def test_perf_classportinfo_and_unknown_class(pkts):
    assert pkts[27].layer("classportinfo")["trapqkey"] == 0x80010000
    p = pkts[32]
    assert p.info_text.startswith("Vendor Specific (0x0a) Get() attr=0x0042")
    assert p.layer("mad")["mad.class_data"] == bytes(range(232))


def test_smp_attributes(pkts):
    assert pkts[22].layer("nodeinfo") is None                 # a Get carries no attribute value
    ni = pkts[28].layer("nodeinfo")
    assert (ni["nodetype"], ni["numports"], ni["nodeguid"], ni["deviceid"], ni["vendorid"]) == (
        1, 2, 0x0002C90300001234, 0x1017, 0x0002C9)
    assert pkts[28].info_text == "SMP SubnGetResp(NodeInfo) Channel Adapter GUID=0x0002c90300001234 ports=2"
    assert pkts[29].info_text == "SMP-DR SubnGetResp(NodeDescription) 'host-a mlx5_0'"
    sm = pkts[23].layer("sminfo")
    assert (sm["guid"], sm["priority"], sm["smstate"]) == (0x4041424344454647, 5, 4)


def test_mad_status_is_reported(pkts):
    p = pkts[30]
    assert p.info_text.endswith("[status 0x000c: method/attribute combination not supported]")
    assert any(e.source == "IBTA 13.4.7" and e.severity == "warning" for e in p.expert)
    assert not any(e.source == "IBTA 13.4.7" for e in pkts[23].expert or ())   # DR: the D bit is not a status


def test_base_version_other_than_one_is_reported():
    m = bytearray(mad_header(0x07, 0x03, 0x10, 1) + bytes(232))
    m[0] = 0x80
    pkt = Engine(strict=True).dissect(Frame(1, 0, 1, craft.rocev2_mad(bytes(m)), 0))
    assert any("base version 128" in e.text for e in pkt.expert)


def test_short_mad_header():
    pkt = Engine(strict=True).dissect(Frame(1, 0, 1, craft.rocev2_mad(b"\x01\x07\x02"), 0))
    assert pkt.malformed == "mad: truncated (3 of 24 bytes)"


CLASSES = [0x01, 0x81, 0x03, 0x04, 0x07, 0x05, 0x0A, 0x21, 0x30, 0x99]
ATTRS = [0x0001, 0x0010, 0x0011, 0x0012, 0x0013, 0x0014, 0x0015, 0x0016, 0x0017, 0x0018, 0x0019, 0x001A, 0x001D, 0x0038,
         0x0020, 0x0035, 0x1234]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(CLASSES), st.sampled_from([0x01, 0x02, 0x03, 0x81, 0x92, 0x07]), st.sampled_from(ATTRS),
       st.binary(max_size=300), st.sampled_from([0, 1]))
def test_no_exception_on_random_mad_payloads(cls, method, attr, body, qp):
    m = mad_header(cls, method, attr, 1) + body
    eng = Engine(strict=True)
    pkt = eng.dissect(Frame(1, 0, 1, craft.rocev2_mad(m, destqp=qp), 0))
    assert pkt.layer("mad") is not None


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_no_exception_on_random_bytes_to_qp1(data):
    Engine(strict=True).dissect(Frame(1, 0, 1, craft.rocev2_mad(data), 0))


def test_portinfo_on_native_infiniband():
    from cm_build import ERF_FIXTURE
    eng = Engine(strict=True)
    with open_capture(str(ERF_FIXTURE)) as cap:
        p = [eng.dissect(f) for f in cap][8]
    pi = p.layer("portinfo")
    data = bytes(range(100, 164))
    assert pi["m_key"] == int.from_bytes(data[:8], "big") and pi["lid"] == int.from_bytes(data[16:18], "big")
    assert pi["portstate"] == data[32] & 15 and pi["linkroundtriplatency"] == int.from_bytes(data[57:60], "big")
    assert p.info_text.startswith("SMP SubnGetResp(PortInfo) port=")
