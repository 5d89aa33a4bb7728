"""ICMP and ICMPv6: what a RoCEv2 peer that went away leaves on the wire, decoded as tshark does.

The real capture is the lab run where rxe wedged a READ retry and the server gave up: the client's
QP kept sending, and the host answered with ICMP Destination Unreachable quoting the RoCEv2
datagram.  The quote is shown (IP header, UDP ports) but never dissected as RoCE: its BTH must not
reach the PSN analysis.
"""
from __future__ import annotations

import struct

from hypothesis import given, settings, strategies as st

from conftest import capture, tshark_fields, tshark_int
from rdmaspy import craft
from rdmaspy.dissectors.icmp import dissect_icmp, dissect_icmpv6
from rdmaspy.engine import Engine
from rdmaspy.packet import Frame, Packet
from rdmaspy.readers import open_capture

STALL = capture("rxe-read-retry-stall.pcap")


def _decode(path) -> list[Packet]:
    eng = Engine(strict=True)
    with open_capture(str(path)) as cap:
        return [eng.dissect(fr) for fr in cap]


def _ipv4(proto: int, payload: bytes, src=b"\xc0\x00\x02\x01", dst=b"\xc0\x00\x02\x02") -> bytes:
    hdr = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, 0, 64, proto, 0, src, dst)
    hdr = hdr[:10] + struct.pack(">H", craft.inet_checksum(hdr)) + hdr[12:]
    return hdr + payload


def _eth(etype: int, body: bytes) -> bytes:
    return b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01" + struct.pack(">H", etype) + body


def _icmp(itype: int, code: int, rest: bytes, data: bytes) -> bytes:
    msg = struct.pack(">BBH", itype, code, 0) + rest + data
    return msg[:2] + struct.pack(">H", craft.inet_checksum(msg)) + msg[4:]


def _ipv6(nxt: int, payload: bytes, src: bytes, dst: bytes) -> bytes:
    return struct.pack(">IHBB16s16s", 6 << 28, len(payload), nxt, 255, src, dst) + payload


def test_real_port_unreachables_agree_with_tshark():
    pkts = _decode(STALL)
    rows = tshark_fields(STALL, ["icmp.type", "icmp.code", "icmp.checksum", "ip.src", "udp.dstport", "icmpv6.type"])
    icmp = [(p, r) for p, r in zip(pkts, rows) if r["icmp.type"]]
    assert len(icmp) > 10
    for p, r in icmp:
        lay = p.layer("icmp")
        assert lay["icmp.type"] == tshark_int(r["icmp.type"][0])
        assert lay["icmp.code"] == tshark_int(r["icmp.code"][0])
        assert lay["icmp.checksum"] == tshark_int(r["icmp.checksum"][0])
        inner = [c for c in lay.children if c.proto == "ip"]
        # tshark lists the outer and the quoted source address; the quote's is ours too
        assert inner and ".".join(map(str, inner[0]["ip.src"])) == r["ip.src"][1]
        assert p.proto == "ICMP" and p.info_text.startswith("Destination unreachable (Host unreachable) for RoCEv2 ")
        assert p.layer("bth") is None        # the quoted BTH is not traffic
    v6 = [(p, r) for p, r in zip(pkts, rows) if r["icmpv6.type"]]
    assert v6 and all(p.layer("icmpv6")["icmpv6.type"] == tshark_int(r["icmpv6.type"][0]) for p, r in v6)


def test_quoted_rocev2_datagrams_stay_out_of_the_analysis():
    from rdmaspy.analysis.analyzer import Analyzer
    an = Analyzer(strict=True)
    pkts = _decode(STALL)
    for p in pkts:
        an.feed(p)
    an.finish()
    quoted = {p.frame.num for p in pkts if p.layer("icmp") is not None}
    assert len(quoted) > 10
    assert an.findings and not any(f.frames[0] in quoted for f in an.findings)
    assert all(p.layer("ib.analysis") is None for p in pkts if p.frame.num in quoted)


def test_built_messages_decode_as_tshark_does(tmp_path):
    roce = craft.rocev2(0x04, destqp=0x12, psn=77, payload=b"x" * 40)[14:]
    frames = [
        _eth(0x0800, _ipv4(1, _icmp(8, 0, struct.pack(">HH", 0x1234, 7), b"ping"))),
        _eth(0x0800, _ipv4(1, _icmp(0, 0, struct.pack(">HH", 0x1234, 7), b"ping"))),
        _eth(0x0800, _ipv4(1, _icmp(3, 4, struct.pack(">HH", 0, 1400), roce[:28]))),
        _eth(0x0800, _ipv4(1, _icmp(11, 0, b"\0" * 4, roce[:28]))),
        _eth(0x86DD, _ipv6(58, _icmp(2, 0, struct.pack(">I", 1280), b"\x60" + b"\0" * 39),
                           b"\xfe\x80" + b"\0" * 13 + b"\1", b"\xfe\x80" + b"\0" * 13 + b"\2")),
        _eth(0x86DD, _ipv6(58, _icmp(135, 0, b"\0" * 4, b"\xfe\x80" + b"\0" * 13 + b"\2"),
                           b"\xfe\x80" + b"\0" * 13 + b"\1", b"\xff\x02" + b"\0" * 13 + b"\1")),
    ]
    path = tmp_path / "icmp.pcap"
    craft.write_pcap(str(path), frames)
    pkts = _decode(path)
    rows = tshark_fields(path, ["icmp.type", "icmp.code", "icmp.ident", "icmp.seq", "icmp.mtu",
                                "icmpv6.type", "icmpv6.mtu", "icmpv6.nd.ns.target_address"])
    assert pkts[0].info_text == "Echo (ping) request id=0x1234, seq=7"
    assert pkts[0].layer("icmp")["icmp.ident"] == tshark_int(rows[0]["icmp.ident"][0])
    assert pkts[1].layer("icmp")["icmp.seq"] == tshark_int(rows[1]["icmp.seq"][0]) == 7
    assert pkts[2].layer("icmp")["icmp.mtu"] == tshark_int(rows[2]["icmp.mtu"][0]) == 1400
    assert pkts[2].info_text == ("Destination unreachable (Fragmentation needed) (next-hop MTU 1400) "
                            "for RoCEv2 192.0.2.1:49152 → 192.0.2.2:4791")
    assert pkts[3].info_text.startswith("Time-to-live exceeded (Time to live exceeded in transit) for RoCEv2")
    assert pkts[4].layer("icmpv6")["icmpv6.mtu"] == tshark_int(rows[4]["icmpv6.mtu"][0]) == 1280
    assert pkts[5].info_text == "Neighbor Solicitation for " + rows[5]["icmpv6.nd.ns.target_address"][0]
    assert all(p.malformed is None for p in pkts)


def test_a_cut_message_is_malformed_with_its_reason(tmp_path):
    path = tmp_path / "cut.pcap"
    craft.write_pcap(str(path), [_eth(0x0800, _ipv4(1, b"\x08\x00\x00"))])
    (p,) = _decode(path)
    assert p.malformed == "icmp: truncated (3 of 8 bytes)"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120), st.sampled_from([dissect_icmp, dissect_icmpv6]))
def test_no_bytes_make_icmp_raise(data, fn):
    pkt = Packet(Frame(1, 0, 1, data, len(data)))
    fn(pkt, data, 0, len(data), None)
    for lay in pkt.layers:
        lay.items
        for c in lay.children or ():
            c.items
