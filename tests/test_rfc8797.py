"""RFC 8797 private data: the identifier searched at any offset, version, R bit, sizes, negotiation."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from cm_build import FIXTURE, MAGIC, pdata
from conftest import capture
from rdmaspy.conversation import Connection, connections
from rdmaspy.dissectors.rpcrdma_pdata import RPCRDMA_PDATA
from rdmaspy.engine import Engine, Session
from rdmaspy.packet import Frame, Packet
from rdmaspy.readers import open_capture
from rdmaspy.registry import dissect_with, table
from rdmaspy.dissectors import rpcrdma_pdata as rp


def run(buf: bytes, key=None) -> Packet:
    Engine(strict=True)          # loads every dissector
    pkt = Packet(Frame(1, 0, 1, b"", 0))
    dissect_with(table("cm.private_data"), key, pkt, buf, 0, len(buf), Session())
    return pkt


def decoded(path) -> list[Packet]:
    eng = Engine(strict=True)
    with open_capture(str(path)) as cap:
        return [eng.dissect(f) for f in cap], eng.session


def test_identifier_at_offset_zero():
    pkt = run(pdata(1, 1, 4096, 4096) + bytes(40), 20049)
    p = pkt.noted(RPCRDMA_PDATA)
    assert (p.offset, p.version, p.remote_invalidate, p.send_size, p.recv_size, p.valid) == (0, 1, True, 4096, 4096,
                                                                                               True)
    assert "RPC-over-RDMA pdata v1 send=4096 recv=4096 R=1" in pkt.info_text


@pytest.mark.parametrize("at", [1, 3, 5, 7, 13, 48])
def test_identifier_at_unaligned_and_later_offsets(at):
    buf = b"\x11" * at + pdata(1, 0, 2048, 8192) + b"\x22" * 6
    p = run(buf).noted(RPCRDMA_PDATA)     # found by the heuristic: no port given
    assert (p.offset, p.send_size, p.recv_size, p.remote_invalidate) == (at, 2048, 8192, False)
    lay = run(buf).layer("rpcrdma.pdata")
    assert lay.off == at and lay["rpcrdma.pdata.offset"] == at


def test_identifier_after_the_ip_cm_header_of_a_req():
    pkts, _ = decoded(FIXTURE)
    req = pkts[0]
    ip = req.layer("cm.req").children[1]
    assert ip.proto == "cm.req.ip_cm"
    lay = req.layer("rpcrdma.pdata")
    assert lay.off == ip.off + 36                 # consumer data starts right after the 36-byte header
    p = req.noted(RPCRDMA_PDATA)
    assert (p.offset, p.send_size, p.recv_size, p.remote_invalidate) == (0, 262144, 1024, True)


def test_absent_identifier_is_not_an_error():
    pkt = run(bytes(56), 20049)
    assert pkt.extra is None and pkt.layer("rpcrdma.pdata") is None and pkt.malformed is None
    assert not rp.find_pdata(pkt, b"\xf6\xab\x0e\x00" * 4, 0, 16, None)


def test_wrong_version_is_reported_and_ignored():
    pkt = run(b"\0\0" + pdata(2, 1, 8192, 8192), 20049)
    p = pkt.noted(RPCRDMA_PDATA)
    assert p.version == 2 and not p.valid and p.send_size == 1024 and p.recv_size == 1024
    assert any(e.source.startswith("RFC 8797") and "version 2" in e.text for e in pkt.expert)
    assert pkt.layer("rpcrdma.pdata")["rpcrdma.pdata.valid"] is False


@pytest.mark.parametrize("keep", [4, 5, 7])
def test_truncated_content_overrunning_the_buffer(keep):
    buf = bytes(10) + pdata(1, 1, 4096, 4096)[:keep]
    pkt = run(buf, 20049)
    p = pkt.noted(RPCRDMA_PDATA)
    assert not p.valid and p.problem == "overrun" and p.offset == 10
    assert any("overruns" in e.text for e in pkt.expert)


def test_sizes_one_kib_and_256_kib():
    p = run(MAGIC + bytes((1, 0, 0, 255))).noted(RPCRDMA_PDATA)
    assert (p.send_size, p.recv_size) == (1024, 262144)
    p = run(MAGIC + bytes((1, 0, 255, 0))).noted(RPCRDMA_PDATA)
    assert (p.send_size, p.recv_size) == (262144, 1024)


def test_reserved_bits_are_ignored():
    p = run(MAGIC + bytes((1, 0xFE, 3, 3))).noted(RPCRDMA_PDATA)
    assert p.valid and p.remote_invalidate is False
    p = run(MAGIC + bytes((1, 0xFF, 3, 3))).noted(RPCRDMA_PDATA)
    assert p.remote_invalidate is True


def test_mpa_style_private_data_after_ird_ord():
    """The iWARP path: MPA v2's IRD/ORD word first, then the RFC 8797 data (siw's real bytes)."""
    buf = bytes.fromhex("00800000") + bytes.fromhex("f6ab0e1801010303")
    pkt = run(buf, 20049)
    p = pkt.noted(RPCRDMA_PDATA)
    assert (p.offset, p.send_size, p.recv_size, p.remote_invalidate) == (4, 4096, 4096, True)


def _pd(send, recv, r, valid=True, version=1):
    return rp.RpcRdmaPdata(version, r, send, recv, 0, valid)


@pytest.mark.parametrize("client,server,c2s,s2c,rinv", [
    (_pd(4096, 4096, True), _pd(4096, 4096, False), 4096, 4096, False),      # Linux NFS/RDMA
    (_pd(262144, 1024, True), _pd(4096, 262144, True), 262144, 1024, True),  # asymmetric, both ways
    (_pd(1024, 65536, True), _pd(32768, 2048, True), 1024, 32768, True),
    (None, _pd(8192, 8192, True), 1024, 1024, False),                         # client sent nothing
    (_pd(8192, 8192, True), None, 1024, 1024, False),
    (_pd(8192, 8192, True, valid=False, version=2), _pd(8192, 8192, True), 1024, 1024, False),
    (None, None, 1024, 1024, False),
])
def test_threshold_negotiation(client, server, c2s, s2c, rinv):
    c = Connection(1, "a", "b", 0)
    c.pdata_client, c.pdata_server = client, server
    c.negotiate()
    assert (c.inline_c2s, c.inline_s2c, c.remote_invalidate) == (c2s, s2c, rinv)


@pytest.mark.parametrize("name", ["rxe-nfsv3-rdma.pcap", "rxe-nfsv42-rdma.pcap", "rxe-nfsv3-concurrent.pcap"])
def test_linux_negotiated_thresholds(name):
    """Linux: client f6ab0e18 01 01 03 03, server f6ab0e18 01 00 03 03 -> 4096 each way, R off."""
    pkts, session = decoded(capture(name))
    pc, ps = pkts[0].noted(RPCRDMA_PDATA), pkts[1].noted(RPCRDMA_PDATA)
    assert (pc.version, pc.remote_invalidate, pc.send_size, pc.recv_size) == (1, True, 4096, 4096)
    assert (ps.version, ps.remote_invalidate, ps.send_size, ps.recv_size) == (1, False, 4096, 4096)
    [conn] = list(connections(session))
    assert (conn.inline_c2s, conn.inline_s2c, conn.remote_invalidate) == (4096, 4096, False)
    assert conn.pdata_client is pc and conn.pdata_server is ps


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=120), st.integers(0, 120), st.binary(min_size=4, max_size=4))
def test_found_at_the_first_occurrence(noise, at, tail):
    noise = noise.replace(MAGIC, b"")
    at = min(at, len(noise))
    buf = noise[:at] + MAGIC + tail + noise[at:]
    first = buf.find(MAGIC)
    p = run(buf).noted(RPCRDMA_PDATA)
    assert p.offset == first
    if buf[first + 4] == 1 and len(buf) - first >= 8:
        assert p.valid and p.send_size == (buf[first + 6] + 1) * 1024
