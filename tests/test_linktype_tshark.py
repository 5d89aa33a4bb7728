"""Linux cooked captures (SLL, SLL2) and ERF records against tshark, field by field.

Fixtures: tests/fixtures/linktype_build.py (SLL/SLL2 made from the rdma_server/client capture,
ERF records around InfiniBand packets built with the header encoders and valid ICRC/VCRC,
an ERF Ethernet record with its pad, IPv4, an InfiniBand link packet, a RAW_LINK record).
"""
from __future__ import annotations

import sys

import pytest

from conftest import FIXTURES, capture, tshark_fields, tshark_int
from rdmaspy.engine import Engine
from rdmaspy.fieldview import packet_fields
from rdmaspy.output.values import json_value
from rdmaspy.readers import open_capture

sys.path.insert(0, str(FIXTURES))
import linktype_build as lb  # noqa: E402
import readers_build as rb  # noqa: E402

# tshark field -> rdmaspy field (same name unless listed)
SLL_FIELDS = {"sll.pkttype": None, "sll.hatype": None, "sll.halen": None, "sll.src.eth": None, "sll.etype": None,
              "sll.ltype": None, "sll.ifindex": None, "ip.src": None, "udp.dstport": None,
              "infiniband.bth.opcode": "bth.opcode", "infiniband.bth.destqp": "bth.destqp"}
ERF_FIELDS = {"erf.ts": None, "erf.types.type": None, "erf.types.ext_header": None, "erf.flags.cap": None,
              "erf.flags.vlen": None, "erf.flags.trunc": None, "erf.rlen": None, "erf.lctr": None, "erf.wlen": None,
              "erf.ehdr.types": None, "erf.eth.off": None, "erf.eth.pad": None,
              "infiniband.lrh.dlid": "lrh.dlid", "infiniband.lrh.slid": "lrh.slid", "infiniband.lrh.lnh": "lrh.lnh",
              "infiniband.lrh.pktlen": "lrh.pktlen", "infiniband.bth.opcode": "bth.opcode",
              "infiniband.bth.psn": "bth.psn", "infiniband.deth.srcqp": "deth.src_qp",
              "eth.src": None, "ip.src": None, "ip.dst": None}


def norm(field, v) -> str:
    v = json_value(field, v)
    return str(int(v)) if isinstance(v, bool) else str(v)


def tnorm(s: str) -> str:
    if s.lower().startswith("0x"):
        return str(tshark_int(s))
    return s.lower() if ":" in s else s


def packets(name: str):
    eng = Engine(strict=True)
    with open_capture(str(capture(name))) as cap:
        return [eng.dissect(f) for f in cap]


def compare(name: str, mapping: dict) -> list:
    want = tshark_fields(capture(name), list(mapping))
    pkts = packets(name)
    assert len(pkts) == len(want)
    for pkt, w in zip(pkts, want):
        got = packet_fields(pkt, 0)
        for tf, ours in mapping.items():
            if not w[tf]:
                continue
            values = got.get(ours or tf)
            assert values is not None, (pkt.frame.num, tf)
            assert [norm(values[0], v) for v in values[1]] == [tnorm(x) for x in w[tf]], (pkt.frame.num, tf)
    return pkts


def test_fixtures_are_what_the_builder_writes():
    recs = lb.erf_records()
    assert capture("linktype_erf.pcap").read_bytes() == rb.pcap_file(
        [(lb.T0 + 1000 * i + (i == 1), r) for i, r in enumerate(recs)], 197, "<", True)
    assert capture("linktype_sll.pcap").read_bytes() == rb.pcap_file(
        [(lb.T0 + 1000 * i, f) for i, f in enumerate(lb.sll_frames())], 113)


@pytest.mark.parametrize("name", ["linktype_sll.pcap", "linktype_sll2.pcap"])
def test_sll_matches_tshark(name):
    pkts = compare(name, SLL_FIELDS)
    assert all(p.layers[0].proto == "sll" for p in pkts)
    assert pkts[0].proto == "IB CM" or pkts[0].has("bth")
    assert (pkts[0].src, pkts[0].dst) == ("192.0.2.2", "192.0.2.1")


def test_sll_linux_protocols_and_link_address():
    pkts = packets("linktype_sll.pcap")
    netlink, llc = pkts[-2], pkts[-1]
    assert netlink.proto == "Netlink" and netlink.layers[-1].proto == "data"
    assert netlink.layers[0]["sll.netlink_family"] == 0
    assert llc.layers[0]["sll.ltype"] == 4 and llc.info_text == "Linux cooked capture, 802.2 LLC"
    # nothing above named an address: the source is the link address
    assert llc.src == "02:00:00:00:00:01"


def test_sll2_interface_index_and_direction():
    pkts = packets("linktype_sll2.pcap")
    assert [p.layers[0]["sll.ifindex"] for p in pkts] == list(range(3, 3 + len(pkts)))
    assert [p.layers[0]["sll.pkttype"] for p in pkts] == [i % 5 for i in range(len(pkts))]


def test_erf_matches_tshark():
    pkts = compare("linktype_erf.pcap", ERF_FIELDS)
    assert [p.layers[1].proto for p in pkts] == ["lrh", "lrh", "lrh", "eth", "infiniband_link", "ip", "data"]


def test_erf_time_is_the_records_own_clock():
    want = tshark_fields(capture("linktype_erf.pcap"), ["frame.time_epoch"])
    for pkt, w in zip(packets("linktype_erf.pcap"), want):
        sec, frac = w["frame.time_epoch"][0].split(".")
        assert pkt.frame.ts == int(sec) * 1_000_000_000 + int(frac)
    assert pkts_ts("linktype_erf.pcap")[1] == lb.T0 + 1_001


def pkts_ts(name):
    return [p.frame.ts for p in packets(name)]


def test_erf_infiniband_crcs_valid_and_types_named():
    pkts = packets("linktype_erf.pcap")
    for p in pkts[:3]:
        assert p.layer("icrc")["icrc.valid"] is True
        assert p.layer("vcrc")["vcrc.valid"] is True
        assert p.malformed is None
    link = pkts[4].layer("infiniband_link")
    assert (link["op"], link["fctbs"], link["vl"], link["fccl"], link["lpcrc"]) == (0, 0x123, 4, 0x567, 0x89AB)
    assert pkts[6].info_text == "ERF RAW_LINK record, 20 bytes"
    ext = pkts[1].layers[0].children[0].children
    assert [c["erf.ehdr.types"] for c in ext] == [17, 3] and [c["erf.ehdr.more"] for c in ext] == [1, 0]


@pytest.mark.parametrize("cut", [3, 15, 17, 20, 30])
def test_erf_truncated_records_are_malformed_not_errors(cut, tmp_path):
    rec = lb.erf_records()[1]          # with two extension headers
    p = tmp_path / "cut.pcap"
    p.write_bytes(rb.pcap_file([(lb.T0, rec[:cut])], 197))
    (pkt,) = packets_at(p)
    assert pkt.malformed


def packets_at(path):
    eng = Engine(strict=True)
    with open_capture(str(path)) as cap:
        return [eng.dissect(f) for f in cap]
