"""rdmaspy.craft builds what the dissectors read back, field for field.

- every header: ``Header.encode`` then ``decode`` gives the values back, and craft's compiled
  packers build the same bytes as ``Header.encode`` (hypothesis);
- every opcode of every transport, over RoCEv2 (IPv4, IPv6), RoCEv1 and native IB (local and
  global): craft then dissect gives the same BTH and extended-header fields, payload and pad;
- the ICRC craft computes agrees with scapy's independent RoCEv2 implementation;
- pcap files written by craft read back unchanged, in micro- and nanoseconds.
"""
from __future__ import annotations

import time

import pytest
from hypothesis import given, settings, strategies as st

from rdmaspy import craft
from rdmaspy.dissectors import ethernet, infiniband as ib, ip as ipmod, transport as tr
from rdmaspy.engine import Engine
from rdmaspy.packet import Frame
from rdmaspy.readers import open_capture

IB_HEADERS = [ib.LRH, ib.GRH, ib.BTH, ib.RDETH, ib.DETH, ib.XRCETH, ib.RETH, ib.ATOMICETH, ib.AETH,
              ib.ATOMICACKETH, ib.IMMDT, ib.IETH, ib.FETH, ib.CNP_RESERVED]
ALL_HEADERS = IB_HEADERS + [ethernet.ETH, ethernet.VLAN, ipmod.IPV4, ipmod.IPV6, tr.UDP]
VALID = [op for op in range(256) if ib.PLANS[op].valid]


def _values(header, draw) -> dict:
    vals = {}
    for f in header.fields:
        short = f.name.rsplit(".", 1)[-1]
        if f.display in ("bytes", "gid", "ipv4", "ipv6", "mac", "str"):
            vals[short] = draw(st.binary(min_size=f.bits // 8, max_size=f.bits // 8))
        else:
            vals[short] = draw(st.integers(0, (1 << f.bits) - 1))
    return vals


@pytest.mark.parametrize("header", ALL_HEADERS, ids=lambda h: h.name)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_header_round_trip_and_packer(header, data) -> None:
    vals = _values(header, data.draw)
    raw = header.encode(vals)
    assert len(raw) == header.size
    decoded = header.decode(raw)
    for f, v in zip(header.fields, decoded):
        assert v == vals[f.name.rsplit(".", 1)[-1]], f.name
    assert craft.packer(header)(**vals) == raw


def _dissect(data: bytes, linktype: int = 1):
    return Engine(strict=True).dissect(Frame(1, 0, linktype, data, len(data)))


def _ext_args(opcode: int, seed: int) -> dict:
    out = {}
    for h in ib.PLANS[opcode].exts:
        vals = {}
        for k, f in enumerate(h.fields):
            short = f.name.rsplit(".", 1)[-1]
            if f.display == "bytes":
                vals[short] = bytes(((seed + k + i) * 37) & 0xFF for i in range(f.bits // 8))
            else:
                vals[short] = ((seed + 1) * 0x9E3779B97F4A7C15 >> (k * 3)) & ((1 << f.bits) - 1)
        out[h.name] = vals
    return out


CARRIERS = {
    "rocev2-ipv4": (lambda **a: craft.rocev2(ip="4", **a), 1),
    "rocev2-ipv6": (lambda **a: craft.rocev2(ip="6", src="2001:db8::1", dst="2001:db8::2", **a), 1),
    "rocev1": (lambda **a: craft.rocev1(**a), 1),
    "native-local": (lambda **a: craft.native_ib(dlid=3, slid=4, **a), 247),
    "native-global": (lambda **a: craft.native_ib(dlid=3, slid=4, grh=True, **a), 247),
}


@pytest.mark.parametrize("carrier", sorted(CARRIERS))
def test_every_opcode_round_trips(carrier: str) -> None:
    build, linktype = CARRIERS[carrier]
    for i, op in enumerate(VALID):
        ext = _ext_args(op, i)
        payload = bytes(range(i % 11)) if ib.PLANS[op].kind not in ("ack", "cnp") else b""
        bth = dict(se=i & 1, m=(i >> 1) & 1, tver=0, p_key=0x8000 | i, ackreq=(i >> 2) & 1, reserved7=i & 0x7F)
        data = build(opcode=op, destqp=0x1000 + i, psn=0xFFFFF0 + (i % 16), payload=payload, **bth, **ext)
        pkt = _dissect(data, linktype)
        where = f"{carrier} opcode 0x{op:02x}"
        assert pkt.malformed is None, f"{where}: {pkt.malformed}"
        assert pkt.ib.icrc_ok is True, where
        lay = pkt.layer("bth")
        assert lay["opcode"] == op and lay["destqp"] == 0x1000 + i and lay["psn"] == 0xFFFFF0 + (i % 16), where
        for k, v in bth.items():
            assert lay[k] == v, f"{where}: bth.{k}"
        assert lay["padcnt"] == -len(payload) & 3, where
        names = [x.proto for x in pkt.layers]
        assert [n for n in names if n in ext] == [h.name for h in ib.PLANS[op].exts], where
        for hname, vals in ext.items():
            got = pkt.layer(hname)
            for k, v in vals.items():
                assert got[k] == v, f"{where}: {hname}.{k}"
        assert data[pkt.ib.payload_off:pkt.ib.payload_end] == payload, where
        assert pkt.ib.payload_len == len(payload), where
        if linktype == 247:
            assert pkt.layer("vcrc")["vcrc.valid"] is True, where
            assert pkt.layer("lrh")["pktlen"] * 4 == len(data) - 2, where


def test_flat_field_names_go_to_the_first_header_that_has_them() -> None:
    data = craft.rocev2(0x1C, 0x11, 1, sel=1, plt=2, va=0xABC, r_key=7, dma_length=64)   # FLUSH: FETH, RETH
    pkt = _dissect(data)
    assert [x.proto for x in pkt.layers][3:6] == ["bth", "feth", "reth"]
    assert pkt.layer("feth")["sel"] == 1 and pkt.layer("feth")["plt"] == 2
    assert pkt.layer("reth")["va"] == 0xABC
    with pytest.raises(KeyError):
        craft.rocev2(0x04, 0x11, 1, va=1)            # SEND Only has no RETH
    with pytest.raises(KeyError):
        craft.rocev2(0x04, 0x11, 1, reth={"va": 1})


def test_explicit_padcnt_and_bad_crcs() -> None:
    pkt = _dissect(craft.rocev2(0x04, 0x11, 1, b"abcdef", padcnt=2))
    assert pkt.ib.padcnt == 2 and pkt.ib.payload_len == 6 and pkt.ib.icrc_ok
    assert _dissect(craft.rocev1(0x04, 0x11, 1, b"x", icrc="bad")).ib.icrc_ok is False
    assert _dissect(craft.native_ib(0x04, 0x11, 1, b"x", icrc=0x12345678), 247).ib.icrc_ok is False


def test_rocev2_mad_is_a_ud_send_to_qp1() -> None:
    mad = bytes([1, 7, 2, 3]) + bytes(252)
    pkt = _dissect(craft.rocev2_mad(mad, src="192.0.2.9", dst="192.0.2.10", src_qp=1, psn=42))
    assert pkt.ib.opcode == 0x64 and pkt.ib.destqp == 1 and pkt.ib.psn == 42 and pkt.ib.icrc_ok
    deth = pkt.layer("deth")
    assert deth["q_key"] == 0x80010000 and deth["src_qp"] == 1
    assert pkt.ib.payload_len == 256


@pytest.mark.parametrize("version", ["4", "6"])
def test_icrc_agrees_with_scapy(version: str) -> None:
    from scapy.contrib.roce import BTH
    from scapy.layers.inet import UDP
    from scapy.layers.l2 import Ether
    for op, kw, payload in ((0x04, {}, b"hello"), (0x0A, dict(va=0x1234, r_key=9, dma_length=3), b"abc"),
                            (0x11, dict(syndrome=0x60, msn=5), b""), (0x81, {}, b"")):
        data = craft.rocev2(op, 0x33, 99, payload, ip=version, src="10.0.0.1" if version == "4" else "fd00::1",
                            dst="10.0.0.2" if version == "4" else "fd00::2", dscp=3, ecn=2, **kw)
        # scapy's own RoCE layer on the UDP payload, whichever layer UDP port 4791 is bound to (rdmaspy.scapy
        # binds its own when a test has imported it)
        p = Ether(data)
        bth = 14 + ((data[14] & 15) * 4 if version == "4" else 40) + 8
        p[UDP].remove_payload()
        p = p / BTH(data[bth:])
        p[BTH].icrc = None
        assert bytes(p)[-4:] == data[-4:], hex(op)


@pytest.mark.parametrize("nanosecond", [True, False])
def test_write_pcap_reads_back(tmp_path, nanosecond: bool) -> None:
    frames = [craft.rocev2(0x04, 0x11, i, bytes([i]) * i) for i in range(20)]
    path = tmp_path / "x.pcap"
    t0 = 1_700_000_000_123_456_000
    n = craft.write_pcap(str(path), [(t0 + i * 1_000_000, f) for i, f in enumerate(frames)], 1,
                         nanosecond=nanosecond)
    assert n == 20
    with open_capture(str(path)) as cap:
        got = list(cap)
    assert [f.data for f in got] == frames
    assert [f.ts for f in got] == [t0 + i * 1_000_000 for i in range(20)]
    assert all(f.linktype == 1 and f.wirelen == len(f.data) for f in got)


def test_erf_record_layout() -> None:
    pkt = craft.native_ib(0x04, 0x11, 1, b"abcd")
    rec = craft.erf_record(pkt, 1_700_000_000_500_000_000)
    assert len(rec) == 16 + len(pkt) and rec[16:] == pkt
    assert rec[8] == 21 and rec[9] & 0x04
    assert int.from_bytes(rec[10:12], "big") == len(rec) and int.from_bytes(rec[14:16], "big") == len(pkt)
    ts = int.from_bytes(rec[:8], "little")
    assert ts >> 32 == 1_700_000_000 and abs((ts & 0xFFFFFFFF) - (1 << 31)) <= 1


def test_building_is_fast() -> None:
    """The benchmark builds a million frames; 20,000 must take well under a second of work."""
    t = time.process_time()
    for i in range(20_000):
        craft.rocev2(0x0A, 0x11, i, b"x" * 64, va=0x1000 + i, r_key=5, dma_length=64)
    assert time.process_time() - t < 2.0
