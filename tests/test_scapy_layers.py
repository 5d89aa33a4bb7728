"""rdmaspy.scapy: scapy layers generated from the header declarations, checked against rdmaspy's decoder.

- scapy dissects every frame of every shipped capture, and every generated layer it finds holds the values
  rdmaspy decodes at the same offset of the same frame (and RPC-over-RDMA the same chunk lists); NVMe/RDMA
  as a scapy user reads it, told what the bytes do not say (the QPs of its connections, a command's queue,
  the command a completion answers, that a CM REP answers an NVMe/RDMA REQ);
- every header rdmaspy decodes in a RoCE frame, scapy finds too (iWARP: in segments that start an FPDU);
- a frame rebuilt by scapy with its ICRC left to compute is the captured frame, byte for byte;
- packets built with scapy (RoCEv2, RoCEv1, native InfiniBand, CM with IP CM and RFC 8797 data,
  RPC-over-RDMA v1/v2 with chunk lists, iWARP) decode with rdmaspy to the same values, ICRC and VCRC valid.
"""
from __future__ import annotations

import traceback
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from scapy.config import conf
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import NoPayload, Packet as ScapyPacket
from scapy.utils import rdpcap

import rdmaspy.scapy as rs
from rdmaspy import stacking
from rdmaspy.dissectors import (ib_cm, infiniband, iwarp_ddp, iwarp_mpa, mad, nvme, nvme_rdma, rpcrdma, rpcrdma2,
                                rpcrdma_pdata)
from rdmaspy.engine import Engine
from rdmaspy.packet import Frame, Packet
from rdmaspy.readers import open_capture

from conftest import CAPTURES, FIXTURES

# The shipped captures, and the fixtures with what they lack: native InfiniBand (LINKTYPE_INFINIBAND), RoCEv1,
# every opcode, every CM message and MAD class, every RPC-over-RDMA shape of both versions.
SAMPLES = sorted(p.name for p in [*CAPTURES.glob("*.pcap"), *CAPTURES.glob("*.pcap.gz")]) + [
    "ib_native_247.pcap", "ib_rocev1_opcodes.pcap", "ib_rocev2_all_opcodes.pcap", "cm_all_messages.pcap",
    "rpcrdma_v1_shapes.pcap", "rpcrdma_v2_all.pcap"]
# Layers that overlap the header before them, which scapy cannot stack: the RDMAP control byte is the DDP
# header's ULP byte, the directed-route SMP words are the common MAD header's, an SMP attribute lies in
# the SMP's data field.
OVERLAPPING = {id(iwarp_ddp.RDMAP_CTRL), id(mad.SMP_DR_HEAD), *map(id, mad.SMP_ATTRIBUTE_HEADERS.values())}


# Addresses given, so that scapy does not resolve them on the network (ARP) while building.
SMAC, DMAC = "02:00:00:00:00:01", "02:00:00:00:00:02"


def sample(name: str) -> Path:
    return CAPTURES / name if (CAPTURES / name).exists() else FIXTURES / name
# ICMP errors quote the packet they answer: rdmaspy dissects the quote as the ICMP layer's sub-tree, scapy as
# the ICMP layer's payload (IPerror, UDPerror, then the RoCEv2 headers), both compared.


def scapy_layers(pkt: ScapyPacket) -> dict[tuple[int, object], ScapyPacket]:
    """Every layer of a dissected packet by (byte offset, declaration or class name)."""
    out: dict[tuple[int, object], ScapyPacket] = {}
    off = 0
    lay = pkt
    while not isinstance(lay, NoPayload):
        decl = getattr(lay, "declaration", None)
        key: object = id(decl) if decl is not None else type(lay).__name__
        out[(off, key)] = lay
        if lay.raw_packet_cache is not None:
            off += len(lay.raw_packet_cache)
        elif decl is not None:                  # a trailer (ICRC, VCRC) clears the cache of its layer
            off += decl.size
        else:
            off += len(lay.self_build())
        lay = lay.payload
    return out


def rdmaspy_layers(pkt: Packet) -> dict[tuple[int, int], object]:
    """rdmaspy's header layers in the frame's own bytes (not in buffers rebuilt from several frames)."""
    out: dict[tuple[int, int], object] = {}
    data = pkt.frame.data

    def walk(layers: list) -> None:
        for lay in layers:
            if lay.buf is data and lay.header is not None and id(lay.header) in rs.LAYER_OF:
                out[(lay.off, id(lay.header))] = lay
            if lay.children:
                walk(lay.children)
    walk(pkt.layers)
    return out


def _first_fpdu(ours: dict[tuple[int, int], object], stop: int) -> tuple[dict[tuple[int, int], object], int]:
    """rdmaspy's layers up to the end of a segment's first FPDU, and that end: scapy reads one FPDU
    per segment (docs/scapy.md, Limits), rdmaspy's stream reader every FPDU the segment holds."""
    fpdus = sorted(off for off, key in ours if key == id(iwarp_mpa.FPDU))
    if len(fpdus) < 2:
        return ours, stop
    return {(off, key): lay for (off, key), lay in ours.items() if off < fpdus[1]}, fpdus[1]


def _iwarp_ports(path: Path) -> None:
    """iWARP has no port of its own: bind the ports whose MPA Request frames the capture holds."""
    for p in rdpcap(str(path)):
        if TCP in p and bytes(p[TCP].payload)[:16] == iwarp_mpa.KEY_REQ:
            rs.bind_iwarp(p[TCP].dport)


def _chunks(msg: rpcrdma.RpcRdmaMessage) -> tuple:
    return ([(s.position, s.handle, s.length, s.offset) for s in msg.reads],
            [[(s.handle, s.length, s.offset) for s in c] for c in msg.writes],
            None if msg.reply is None else [(s.handle, s.length, s.offset) for s in msg.reply])


def _compare_rpcrdma(where: str, pkt: Packet, sc: dict, stop: int) -> int:
    msg = pkt.noted(rpcrdma.RPCRDMA)
    lay = next((x for x in pkt.layers if x.proto in ("rpcrdma", "rpcrdma2")), None)
    if msg is None or lay is None or lay.buf is not pkt.frame.data or msg.malformed is not None \
            or msg.version not in (1, 2) or lay.off >= stop:
        return 0        # rdmaspy shows an unknown version by the connection's port: scapy has no state
    cls = "RPCRDMA" if msg.version == 1 else "RPCRDMA2"
    got = sc.get((lay.off, cls))
    assert got is not None, f"{where}: scapy finds no {cls} at {lay.off}"
    assert (got.xid, got.version) == (msg.xid, msg.version), where
    if msg.version == 1:
        assert (got.credits, got.proc) == (msg.credits, msg.proc), where
    else:
        assert (got.max_credits, got.granted, got.htype, got.flags) == (msg.max_credits, msg.granted, msg.proc,
                                                                       msg.flags), where
    if msg.proc in (0, 1, 2):
        assert got.chunks == _chunks(msg), where
    return 1


NVME_HEADS = tuple(rs.layer_of(h) for h in (
    nvme.ADMIN_SQE, nvme.IO_SQE, nvme.FABRICS_SQE, nvme.CQE, *nvme.PROPERTY_VALUES.values(), nvme.PROPERTY_DATA,
    nvme.PROPERTY_DATA8, nvme.CONNECT_CQE, nvme.PROPERTY_SET_CQE, nvme.FABRICS_CQE, nvme.AER_DWORD0,
    nvme.SET_NQ_DWORD0, *nvme.GET_FEATURES_DWORD0.values()))


def with_nvme_context(top: ScapyPacket, pkt: Packet) -> ScapyPacket:
    """``top`` with its NVMe/RDMA capsules and CM records read again as a scapy user does who knows the
    connection: what rdmaspy knows of the frame's commands (their queue) and completions (their command)."""
    cmds = {c.cid: c for c in pkt.noted(nvme.NVME_COMMANDS) or ()}
    cqes = {c.cid: c for c in pkt.noted(nvme.NVME_COMPLETIONS) or ()}
    lay = top
    while not isinstance(lay, NoPayload):
        if pkt.noted(nvme_rdma.NVME_RDMA_CM) is not None and isinstance(lay, (rs.CM_REP, rs.CM_REJ)):
            rs.nvme_rdma_cm(lay)
        below = lay.payload
        if isinstance(below, NVME_HEADS):
            raw = bytes(below)
            if len(raw) == nvme.CQE_SIZE:
                cqe = cqes.get(int.from_bytes(raw[12:14], "little"))
                again = rs.nvme_capsule(raw, cqe.qid, cqe.command) if cqe is not None else None
            else:
                cmd = cmds.get(int.from_bytes(raw[2:4], "little"))
                again = rs.nvme_capsule(raw, cmd.qid) if cmd is not None else None
            if again is not None:
                lay.remove_payload()
                lay.add_payload(again)
            break
        lay = below
    return top


@pytest.fixture
def nvme_qps() -> Iterator[set[int]]:
    """rdmaspy.scapy's NVMe/RDMA queue pairs, as they were after the test."""
    saved = set(rs.NVME_RDMA_QPS)
    yield rs.NVME_RDMA_QPS
    rs.NVME_RDMA_QPS.clear()
    rs.NVME_RDMA_QPS.update(saved)


@pytest.mark.parametrize("name", SAMPLES)
def test_scapy_dissects_every_shipped_frame_as_rdmaspy_decodes_it(name: str, nvme_qps: set[int]) -> None:
    path = sample(name)
    _iwarp_ports(path)
    engine = Engine()
    compared = 0
    packets = [engine.dissect(frame) for frame in open_capture(str(path))]
    # the QPs of NVMe/RDMA connections on RoCE, which a scapy user names (the CM exchange, or the capture's owner)
    nvme_qps.update(p.ib.destqp for p in packets
                    if p.ib is not None and (p.noted(nvme.NVME_COMMANDS) or p.noted(nvme.NVME_COMPLETIONS)))
    for pkt, raw in zip(packets, rdpcap(str(path))):
        frame = pkt.frame
        where = f"{name} frame {frame.num}"
        ours = rdmaspy_layers(pkt)
        theirs = scapy_layers(with_nvme_context(raw.__class__(bytes(raw)), pkt))
        iwarp = any(isinstance(lay, TCP) for lay in theirs.values())
        starts_fpdu = any(off == key[0] and key[1] in (id(iwarp_mpa.FPDU), id(iwarp_mpa.REQREP))
                          for key in ours for off in [key[0]])
        if iwarp and not starts_fpdu:
            continue        # a segment that continues an FPDU: only a stream reassembler knows where it is
        stop = len(pkt.frame.data)
        if iwarp:
            ours, stop = _first_fpdu(ours, stop)
        for (off, key), lay in theirs.items():
            if not isinstance(key, int):
                continue
            assert (off, key) in ours, f"{where}: scapy finds {type(lay).__name__} at {off}, rdmaspy does not"
            assert lay.values() == tuple(ours[(off, key)].values), f"{where}: {type(lay).__name__} at {off}"
            compared += 1
        for (off, key), lay in ours.items():
            if key in OVERLAPPING:
                continue
            assert (off, key) in theirs, f"{where}: rdmaspy decodes {lay.header.name} at {off}, scapy does not"
        compared += _compare_rpcrdma(where, pkt, theirs, stop)
    assert compared > 0


@pytest.mark.parametrize("name", SAMPLES)
def test_scapy_rebuilds_each_roce_frame_with_the_icrc_it_computes(name: str) -> None:
    """Every RoCE and InfiniBand frame whose ICRC rdmaspy finds valid, rebuilt by scapy with the ICRC (and
    the VCRC, pad count and lengths) left to compute."""
    path = sample(name)
    engine = Engine()
    rebuilt = 0
    for frame, raw in zip(open_capture(str(path)), rdpcap(str(path))):
        pkt = engine.dissect(frame)
        if pkt.ib is None or pkt.ib.icrc_ok is not True:
            continue
        p = raw.__class__(bytes(raw))
        bth = p[rs.BTH]
        bth.icrc = bth.padcnt = None
        if rs.LRH in p:
            p[rs.LRH].vcrc = p[rs.LRH].pktlen = p[rs.LRH].lnh = None
        if rs.GRH in p:
            p[rs.GRH].paylen = None
        assert bytes(p) == frame.data, f"{name} frame {frame.num}"
        rebuilt += 1
    if any(n in name for n in ("rxe", "rocev", "ib_native", "cm_all", "rpcrdma_v")):
        assert rebuilt > 0


def _decode(data: bytes, linktype: int = 1) -> Packet:
    return Engine(strict=True).dissect(Frame(1, 0, linktype, data, len(data)))


def _same(pkt: Packet, built: ScapyPacket) -> None:
    """Every generated layer of ``built`` (dissected again by scapy) is decoded by rdmaspy to its values."""
    ours = rdmaspy_layers(pkt)
    theirs = scapy_layers(built)
    declared = [(k, v) for k, v in theirs.items() if isinstance(k[1], int)]
    assert declared
    for key, lay in declared:
        assert key in ours, f"rdmaspy does not find {type(lay).__name__} at {key[0]}"
        assert lay.values() == tuple(ours[key].values), type(lay).__name__


@pytest.mark.parametrize("carrier", ["ipv4", "ipv6", "rocev1", "ib-local", "ib-global"])
def test_scapy_builds_valid_icrc_on_every_carrier(carrier: str) -> None:
    transport = rs.BTH(opcode=0x0B, destqp=0x12, psn=7, se=1, ackreq=1) / rs.RETH(va=0x7F0000001000, r_key=0x1234,
                                                                                   dma_length=5) \
        / rs.IMMDT(imm=0xCAFEF00D) / b"hello"
    linktype = 1
    if carrier == "ipv4":
        p = Ether(src=SMAC, dst=DMAC) / IP(src="192.0.2.1", dst="192.0.2.2", tos=0x02) / UDP(sport=49152) / transport
    elif carrier == "ipv6":
        p = Ether(src=SMAC, dst=DMAC) / IPv6(src="2001:db8::1", dst="2001:db8::2", fl=0x12345) / UDP(sport=49152) / transport
    elif carrier == "rocev1":
        p = Ether(src=SMAC, dst=DMAC) / rs.GRH(sgid="::ffff:192.0.2.1", dgid="::ffff:192.0.2.2") / transport
    elif carrier == "ib-local":
        p, linktype = rs.LRH(dlid=3, slid=4, sl=2) / transport, 247
    else:
        p, linktype = rs.LRH(dlid=3, slid=4) / rs.GRH(sgid="fe80::1", dgid="fe80::2") / transport, 247
    data = bytes(p)
    pkt = _decode(data, linktype)
    assert pkt.malformed is None, pkt.malformed
    assert pkt.ib.icrc_ok is True
    assert pkt.ib.reth == (0x7F0000001000, 0x1234, 5) and pkt.ib.imm == 0xCAFEF00D
    assert data[pkt.ib.payload_off:pkt.ib.payload_end] == b"hello"
    assert pkt.layers[-1 if linktype == 1 else -2].proto == "icrc"
    if linktype == 247:
        assert pkt.layers[-1]["vcrc.valid"] is True
        built = rs.LRH(data)
    else:
        built = Ether(data)
    _same(pkt, built)
    assert built[rs.BTH].padcnt == 3 and built[rs.Pad].pad == b"\0\0\0"


def test_scapy_builds_a_cm_request_with_ip_cm_and_rfc8797_data() -> None:
    pdata = rs.RPCRDMA_PDATA(remote_invalidate=1, send_size_raw=3, recv_size_raw=3)
    ip_cm = rs.CM_REQ_IP_CM(ipv=4, sport=43924, addresses=bytes(12) + bytes([192, 0, 2, 2]) + bytes(12)
                            + bytes([192, 0, 2, 1]))
    req = rs.CM_REQ(localcommid=0x1234, serviceid=0x0000000001064E51, localqpn=0x11, startpsn=5)
    cm = rs.MAD(mgmtclass=0x07, classversion=2, method=0x03, transactionid=9, attributeid=0x0010) / req / ip_cm \
        / pdata / bytes(232 - ib_cm.REQ.size - 36 - 8)
    p = Ether(src=SMAC, dst=DMAC) / IP(src="192.0.2.2", dst="192.0.2.1") / UDP() / rs.BTH(opcode=0x64, destqp=1) \
        / rs.DETH(q_key=0x80010000, src_qp=1) / cm
    data = bytes(p)
    pkt = _decode(data)
    assert pkt.malformed is None and pkt.ib.icrc_ok is True
    note = pkt.noted(rpcrdma_pdata.RPCRDMA_PDATA)
    assert note is not None and note.valid and note.remote_invalidate and note.send_size == 4096
    built = Ether(data)
    assert isinstance(built[rs.CM_REQ].payload, rs.CM_REQ_IP_CM)
    assert built[rs.RPCRDMA_PDATA].format_id == rpcrdma_pdata.FORMAT_ID
    _same(pkt, built)


@pytest.mark.parametrize("version", [1, 2])
def test_scapy_builds_rpc_over_rdma_with_chunk_lists(version: int) -> None:
    chunks = ([(0, 0x10, 100, 0x1000), (0, 0x11, 50, 0x2000)], [[(0x20, 4096, 0x3000)]], [(0x30, 512, 0x4000)])
    if version == 1:
        rpc = rs.RPCRDMA(xid=0x7EFFF5FC, credits=128, proc=1, chunks=chunks)
        expected = rpcrdma.encode_v1(0x7EFFF5FC, 1, 128, reads=chunks[0], writes=chunks[1], reply=chunks[2])
    else:
        rpc = rs.RPCRDMA2(xid=0x7EFFF5FC, max_credits=64, granted=32, htype=1, inv_handle=7, chunks=chunks)
        expected = rpcrdma2.encode(0x7EFFF5FC, 1, max_credits=64, granted=32, inv_handle=7, reads=chunks[0],
                                   writes=chunks[1], reply=chunks[2])
    assert bytes(rpc) == expected
    p = Ether(src=SMAC, dst=DMAC) / IP(src="192.0.2.2", dst="192.0.2.1") / UDP() / rs.BTH(opcode=0x04, destqp=0x11) / rpc
    data = bytes(p)
    pkt = _decode(data)
    assert pkt.ib.icrc_ok is True
    msg = pkt.noted(rpcrdma.RPCRDMA)
    assert msg is not None and msg.version == version and _chunks(msg) == chunks
    again = Ether(data)
    assert type(again[rs.BTH].payload).__name__ == ("RPCRDMA" if version == 1 else "RPCRDMA2")
    assert again[rs.BTH].payload.chunks == chunks


def test_scapy_builds_an_rdma_error_and_v2_properties() -> None:
    err = rs.RPCRDMA(xid=5, proc=4, errcode=1, vers_low=1, vers_high=1)
    assert bytes(err) == rpcrdma.encode_v1(5, 4, 0, errcode=1, vers_low=1, vers_high=1)
    prop = rs.RPCRDMA2(xid=6, htype=5, props=[(1, (8192).to_bytes(4, "big"))])
    assert bytes(prop) == rpcrdma2.encode(6, 5, max_credits=0, granted=0, props=[(1, 8192)])
    again = rs.RPCRDMA2(bytes(prop))
    assert again.props == [(1, (8192).to_bytes(4, "big"))]
    bad = rs.RPCRDMA2(xid=6, htype=4, errcode=1, error_args=[1, 2])
    assert rs.RPCRDMA2(bytes(bad)).error_args == [1, 2]


def _tcp_exchange(client: list[ScapyPacket], server: list[ScapyPacket]) -> list[bytes]:
    """A TCP connection from 192.0.2.2:46371 to 192.0.2.1:20049 whose segments carry ``client[i]`` then
    ``server[i]`` in turn, as frames."""
    c, s, cport, sport = "192.0.2.2", "192.0.2.1", 46371, 20049
    cseq, sseq = 1000, 5000

    def seg(src: str, dst: str, sp: int, dp: int, seq: int, ack: int, flags: str, pay: bytes = b"") -> bytes:
        return bytes(Ether(src=SMAC, dst=DMAC) / IP(src=src, dst=dst) / TCP(sport=sp, dport=dp, seq=seq, ack=ack, flags=flags) / pay)
    out = [seg(c, s, cport, sport, cseq, 0, "S"), seg(s, c, sport, cport, sseq, cseq + 1, "SA")]
    cseq, sseq = cseq + 1, sseq + 1
    out.append(seg(c, s, cport, sport, cseq, sseq, "A"))
    for mine, theirs in zip(client, server):
        b = bytes(mine)
        out.append(seg(c, s, cport, sport, cseq, sseq, "PA", b))
        cseq += len(b)
        if theirs is not None:
            b = bytes(theirs)
            out.append(seg(s, c, sport, cport, sseq, cseq, "PA", b))
            sseq += len(b)
    return out


def test_scapy_builds_iwarp_that_rdmaspy_decodes() -> None:
    """MPA v2 Request/Reply with IRD/ORD and RFC 8797 data negotiating CRCs, then an FPDU carrying an
    RPC-over-RDMA message in a DDP untagged Send: rdmaspy decodes it all, the MPA CRC scapy computed valid."""
    rs.bind_iwarp(20049)
    req = rs.MPA_REQREP(crc_flag=1, rev=2, res=0x10, pdlength=12) / rs.MPA_IRD_ORD(ird=128, ord=128) \
        / rs.RPCRDMA_PDATA(remote_invalidate=1, send_size_raw=3, recv_size_raw=3)
    rep = rs.MPA_REQREP(key=iwarp_mpa.KEY_REP, crc_flag=1, rev=2, res=0x10, pdlength=12) \
        / rs.MPA_IRD_ORD(ird=64, ord=64) / rs.RPCRDMA_PDATA(send_size_raw=3, recv_size_raw=1)
    chunks = ([], [], [(0x30, 512, 0x4000)])
    send = rs.MPA_FPDU() / rs.DDP_UNTAGGED(last_flag=1, rsvdulp=bytes([0x43, 0, 0, 0, 0]), qn=0, msn=1) \
        / rs.RPCRDMA(xid=9, credits=32, proc=1, chunks=chunks) / b"xyz"
    frames = _tcp_exchange([req, send], [rep, None])
    engine = Engine(strict=True)
    pkts = [engine.dissect(Frame(i, i * 1000, 1, d, len(d))) for i, d in enumerate(frames, 1)]
    request, reply, message = pkts[3], pkts[4], pkts[5]
    assert request.noted(rpcrdma_pdata.RPCRDMA_PDATA).remote_invalidate is True
    assert reply.noted(rpcrdma_pdata.RPCRDMA_PDATA).recv_size == 2048
    fpdu = next(x for x in message.layers if x.proto == "mpa")
    assert fpdu["iwarp.crc.checked"] is True and fpdu["iwarp.crc.valid"] is True
    msg = message.noted(rpcrdma.RPCRDMA)
    assert msg is not None and msg.xid == 9 and _chunks(msg) == chunks
    for pkt, data in zip(pkts[3:], frames[3:]):
        _same(pkt, Ether(data))
    again = Ether(frames[5])
    assert isinstance(again[rs.MPA_FPDU].payload, rs.DDP_UNTAGGED)
    assert again[rs.RPCRDMA].chunks == chunks and again[rs.Pad].pad == b"\0"


@pytest.mark.parametrize("opcode", sorted(iwarp_ddp.HEADER_OF_OPCODE))
def test_the_rdmap_header_of_each_opcode_is_where_rdmaspy_decodes_it(opcode: int) -> None:
    """iwarp_ddp.HEADER_OF_OPCODE, which scapy follows, agrees with the dissector: built by scapy after a
    DDP untagged header with that opcode, rdmaspy decodes the same header with the same values."""
    rs.bind_iwarp(20049)
    hdr = iwarp_ddp.HEADER_OF_OPCODE[opcode]
    values = {rs.short_name(f, hdr): (0x5A5A5A5A5A5A5A5A + i) & ((1 << f.bits) - 1) for i, f in enumerate(hdr.fields)}
    if hdr is iwarp_ddp.TERMINATE:
        values.update(layer=0, etype=1, errcode=0, hdrct_m=0, hdrct_d=0, hdrct_r=0)
    req = rs.MPA_REQREP(crc_flag=1, rev=1)
    rep = rs.MPA_REQREP(key=iwarp_mpa.KEY_REP, crc_flag=1, rev=1)
    queue = {1: 1, 7: 2}.get(opcode, 0)
    segment = rs.MPA_FPDU() / rs.DDP_UNTAGGED(last_flag=1, rsvdulp=bytes([0x40 | opcode, 0, 0, 0, 0]), qn=queue,
                                              msn=1) / rs.layer_of(hdr)(**values)
    frames = _tcp_exchange([req, segment], [rep, None])
    engine = Engine(strict=True)
    pkts = [engine.dissect(Frame(i, i * 1000, 1, d, len(d))) for i, d in enumerate(frames, 1)]
    _same(pkts[-1], Ether(frames[-1]))
    ours = rdmaspy_layers(pkts[-1])
    assert any(key[1] == id(hdr) for key in ours), f"rdmaspy decodes no {hdr.name}"


def test_scapy_builds_an_rdma_read_request_over_iwarp() -> None:
    rr = rs.DDP_UNTAGGED(last_flag=1, rsvdulp=bytes([0x41, 0, 0, 0, 0]), qn=1, msn=1) \
        / rs.RDMAP_RR(sinkstag=0x10, sinkto=0x2000, rdmardsz=4096, srcstag=0x20, srcto=0x3000)
    built = rs.MPA_FPDU(bytes(rs.MPA_FPDU() / rr))
    assert built.ulpdulength == iwarp_ddp.DDP_UNTAGGED.size + iwarp_ddp.READ_REQUEST.size
    assert isinstance(built.payload, rs.DDP_UNTAGGED) and isinstance(built.payload.payload, rs.RDMAP_RR)
    assert built[rs.RDMAP_RR].rdmardsz == 4096


def test_every_declared_header_has_a_generated_layer() -> None:
    from rdmaspy.fields import Header
    for module in (infiniband, mad, ib_cm, iwarp_mpa, iwarp_ddp, rpcrdma_pdata, nvme, nvme_rdma):
        for value in vars(module).values():
            if isinstance(value, Header) and value.name not in ("eth", "ip", "udp"):
                cls = rs.layer_of(value)
                assert issubclass(cls, rs.DeclaredLayer) and cls.declaration is value
                names = [f.name for f in cls.fields_desc][:len(value.fields)]
                declared = [rs.short_name(f, value) for f in value.fields]
                # a little-endian group's fields are written most significant first (scapy's low-endian bits)
                assert (sorted(names) if value.little else names) == (sorted(declared) if value.little else declared)
                trailer = {id(infiniband.BTH): 4, id(infiniband.LRH): 2, id(iwarp_mpa.FPDU): 2 + 4}.get(id(value), 0)
                assert len(bytes(cls())) == value.size + trailer + (32 if cls.__name__ == "CM_REQ_IP_CM" else 0)


# Layers with a trailer or lengths that follow from what they carry: their own tests build them whole.
_CARRIERS = ("BTH", "LRH", "GRH", "MPA_FPDU", "MPA_REQREP")


def _scapy_values(cls: type, data: st.DataObject) -> dict[str, object]:
    """Values for every declared field of ``cls``, as its scapy fields take them (addresses as text)."""
    header = cls.declaration
    values = {}
    for f, as_bytes in zip(header.fields, stacking.byte_fields(header)):
        name = rs.short_name(f, header)
        values[name] = data.draw(st.binary(min_size=f.bits // 8, max_size=f.bits // 8) if as_bytes
                                 else st.integers(0, (1 << f.bits) - 1), label=name)
    return values


@pytest.mark.parametrize("name", sorted(n for n, c in rs.LAYERS.items()
                                        if getattr(c, "declaration", None) is not None and n not in _CARRIERS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_generated_layer_builds_as_the_declaration_encodes_and_dissects_the_same(name: str,
                                                                                       data: st.DataObject) -> None:
    cls = rs.LAYERS[name]
    header = cls.declaration
    values = _scapy_values(cls, data)
    if header in (iwarp_ddp.DDP_TAGGED, iwarp_ddp.DDP_UNTAGGED):     # scapy picks the DDP layer by this flag
        values["tagged_flag"] = int(header is iwarp_ddp.DDP_TAGGED)
    fields = {f.name: f for f in cls.fields_desc}
    built = cls(**{n: fields[n].m2i(None, v) for n, v in values.items()})
    raw = bytes(built)
    assert raw[:header.size] == header.encode({f.name: v for f, v in zip(header.fields, values.values())})
    again = cls(raw)
    assert again.values() == tuple(values.values())
    assert bytes(again) == raw


@settings(max_examples=300, deadline=None)
@given(size=st.sampled_from([16, 64, 80, 128]), noise=st.binary(min_size=128, max_size=128),
       qid=st.none() | st.integers(0, 3), command=st.none() | st.binary(min_size=64, max_size=64))
def test_any_capsule_dissects_and_rebuilds_the_same(size: int, noise: bytes, qid: int | None,
                                                    command: bytes | None) -> None:
    """Any bytes read as an NVMe/RDMA capsule (any opcode, SGL, descriptor list, range count) dissect with
    the layers rdmaspy's plan names, and rebuild to the same bytes."""
    payload = noise[:size]
    got = rs.nvme_capsule(payload, qid, command)
    assert bytes(got) == payload
    plan = stacking.nvme_plan(payload, qid, command)
    layer, at = got, 0
    for hdr in plan:
        assert isinstance(layer, rs.layer_of(hdr)) and layer.values() == hdr.decode(payload, at)
        layer, at = layer.payload, at + hdr.size


_MUTABLE = [bytes(f.data) for name in ("rxe-nfsv3-rdma.pcap", "siw-nfsv3-rdma.pcap", "rxe-pyverbs-rc-verbs.pcap")
            for f in open_capture(str(CAPTURES / name))]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(_MUTABLE) - 1), st.lists(st.tuples(st.integers(14, 1 << 16), st.integers(0, 255)),
                                                    min_size=1, max_size=8), st.integers(14, 1 << 16))
def test_hostile_frames_dissect_rebuild_and_show_without_an_exception(which: int, changes: list, cut: int) -> None:
    """Real frames with bytes changed and cut short: the generated layers (and the dissectors' parsers they
    call) never raise out of scapy's dissection, rebuilding or display."""
    frame = bytearray(_MUTABLE[which])
    for at, value in changes:
        frame[at % len(frame)] = value
    data = bytes(frame[:max(14, cut % (len(frame) + 1))])
    debug = conf.debug_dissector
    conf.debug_dissector = True           # scapy would otherwise turn any exception into a Raw layer
    try:
        Ether(data)
    except Exception as exc:              # scapy's own fields on short input may raise; rdmaspy's code may not
        where = traceback.extract_tb(exc.__traceback__)[-1]
        assert "rdmaspy" not in Path(where.filename).parts, f"{type(exc).__name__}: {exc} at {where.filename}:" \
                                                            f"{where.lineno}"
    finally:
        conf.debug_dissector = debug
    p = Ether(data)
    bytes(p)
    p.show(dump=True)
