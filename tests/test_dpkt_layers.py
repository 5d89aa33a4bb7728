"""rdmaspy.dpkt: dpkt classes generated from the header declarations, checked against rdmaspy's decoder.

- dpkt, with rdmaspy.dpkt imported, dissects every frame of every shipped capture read with dpkt.pcap.Reader,
  and every generated layer it finds holds the values rdmaspy decodes at the same offset of the same frame
  (RPC-over-RDMA the same chunk lists); every header rdmaspy decodes in a frame's own bytes, dpkt finds too
  (iWARP: in segments that start with an MPA frame, the FPDUs whole in them); NVMe/RDMA as a dpkt user reads
  it, told what the bytes do not say: the QPs of its connections, a command's queue, the command a
  completion answers, that a CM REP or REJ answers an NVMe/RDMA REQ;
- a frame whose ICRC rdmaspy finds valid, rebuilt by dpkt with its ICRC, VCRC, pad count and lengths left
  to compute, is the captured frame byte for byte;
- every generated class round trips (hypothesis): built from values of the declared widths, packed to the
  bytes the declaration's own encoder makes, unpacked to the same values; whole packets built on every
  carrier are the bytes rdmaspy's craft builds; RPC-over-RDMA v1 and v2 the bytes of rpcrdma's encoders;
- rdmaspy and its commands neither import nor need dpkt, rdmaspy.dpkt without dpkt says what to install,
  and dpkt without rdmaspy.dpkt imported is dpkt unchanged.
"""
from __future__ import annotations

import gzip
import os
import struct
import subprocess
import sys
import textwrap
import traceback
from typing import Iterator
from pathlib import Path

import dpkt
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import rdmaspy.dpkt as rd
from rdmaspy import craft, stacking
from rdmaspy.dissectors import infiniband, iwarp_ddp, iwarp_mpa, nvme, nvme_rdma, rpcrdma, rpcrdma2
from rdmaspy.engine import Engine
from rdmaspy.fields import Header
from rdmaspy.packet import Frame, Packet
from rdmaspy.readers import open_capture

from conftest import CAPTURES, FIXTURES, ROOT

# The shipped captures, and the fixtures with what they lack: native InfiniBand (LINKTYPE_INFINIBAND), RoCEv1,
# every opcode, every CM message and MAD class, every RPC-over-RDMA shape of both versions.
SAMPLES = sorted(p.name for p in [*CAPTURES.glob("*.pcap"), *CAPTURES.glob("*.pcap.gz")]) + [
    "ib_native_247.pcap", "ib_rocev1_opcodes.pcap", "ib_rocev2_all_opcodes.pcap", "cm_all_messages.pcap",
    "rpcrdma_v1_shapes.pcap", "rpcrdma_v2_all.pcap"]
LINKTYPES = {dpkt.pcap.DLT_EN10MB: dpkt.ethernet.Ethernet, stacking.LINKTYPE_INFINIBAND: rd.LRH}
# Where dpkt's own layers stop being compared: ICMP errors quote the packet they answer (rdmaspy dissects the
# quote as the ICMP layer's sub-tree; dpkt's ICMP classes read its IP header, not the RoCEv2 headers above).
QUOTING = (dpkt.icmp.ICMP, dpkt.icmp6.ICMP6)


def sample(name: str) -> Path:
    return CAPTURES / name if (CAPTURES / name).exists() else FIXTURES / name


def dpkt_frames(path: Path) -> list[tuple[int, bytes]]:
    # As a dpkt user reads either format: by the file's magic, whatever its name says (the lossy captures
    # are pcapng files named .pcap, as editcap leaves them)
    with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as f:
        magic = f.read(4)
        f.seek(0)
        reader = dpkt.pcapng.Reader(f) if magic == b"\x0a\x0d\x0d\x0a" else dpkt.pcap.Reader(f)
        return [(reader.datalink(), buf) for _ts, buf in reader]


def header_len(layer: dpkt.Packet) -> int:
    """The bytes a layer has before its payload (its trailer, if any, comes after the payload)."""
    if isinstance(layer, rd.DeclaredPacket):
        return layer.__hdr_len__
    if isinstance(layer, (rd.RPCRDMA, rd.RPCRDMA2)):
        return len(layer) - len(layer.data)
    if isinstance(layer, rd.PrivateDataPrefix):
        return len(layer.skipped)
    return len(layer) - len(layer.data)      # dpkt's own layers: no trailer


# The first class of an NVMe/RDMA capsule: what a dpkt user reads again with what the connection says
NVME_HEADS = (nvme.ADMIN_SQE, nvme.IO_SQE, nvme.FABRICS_SQE, nvme.CQE, *nvme.PROPERTY_VALUES.values(),
              nvme.PROPERTY_DATA, nvme.PROPERTY_DATA8, nvme.CONNECT_CQE, nvme.PROPERTY_SET_CQE, nvme.FABRICS_CQE,
              nvme.AER_DWORD0, nvme.SET_NQ_DWORD0, *nvme.GET_FEATURES_DWORD0.values())
NVME_HEAD_CLASSES = tuple(rd.layer_of(h) for h in NVME_HEADS)
CM_MESSAGES = (rd.CM_REP, rd.CM_REJ)


def _nvme_context(pkt: Packet) -> tuple[dict[int, nvme.NvmeCommand], dict[int, nvme.NvmeCompletion], bool]:
    """What rdmaspy knows from the connection about the capsules of a frame: its commands and completions
    by CID, and whether the frame's CM private data is NVMe/RDMA's."""
    cmds = {c.cid: c for c in pkt.noted(nvme.NVME_COMMANDS) or ()}
    cqes = {c.cid: c for c in pkt.noted(nvme.NVME_COMPLETIONS) or ()}
    return cmds, cqes, pkt.noted(nvme_rdma.NVME_RDMA_CM) is not None


def _with_nvme_context(layer: dpkt.Packet, context: tuple) -> None:
    """``layer``'s payload read again as a dpkt user does who knows the connection (``context``)."""
    cmds, cqes, cm = context
    if cm and isinstance(layer, CM_MESSAGES):
        rd.nvme_rdma_cm(layer)
    if id(getattr(layer, "declaration", None)) in _NVME_DECLARED:
        return      # inside a capsule: its classes were read with it (a Property Set's value is no CQE)
    data = layer.data
    if not isinstance(data, NVME_HEAD_CLASSES):
        return
    raw = bytes(data)
    if len(raw) == nvme.CQE_SIZE:
        cqe = cqes.get(int.from_bytes(raw[12:14], "little"))
        if cqe is not None:
            layer.data = rd.nvme_capsule(raw, cqe.qid, cqe.command)
    else:
        cmd = cmds.get(int.from_bytes(raw[2:4], "little"))
        if cmd is not None:
            layer.data = rd.nvme_capsule(raw, cmd.qid)


def dpkt_layers(top: dpkt.Packet, context: tuple | None = None) -> dict[tuple[int, object], dpkt.Packet]:
    """Every layer of a dissected frame by (byte offset, declaration or class name), the FPDUs that follow
    a segment's first one included; NVMe/RDMA capsules read with ``context`` (``_nvme_context``)."""
    out: dict[tuple[int, object], dpkt.Packet] = {}

    def walk(layer: object, off: int) -> None:
        while isinstance(layer, dpkt.Packet):
            if context is not None:
                _with_nvme_context(layer, context)
            decl = getattr(layer, "declaration", None)
            out[(off, id(decl) if decl is not None else type(layer).__name__)] = layer
            if isinstance(layer, QUOTING):
                return
            if decl is iwarp_mpa.FPDU and layer.rest:          # the FPDUs after it (each walks its own rest)
                following, _left = rd.fpdus(layer.rest, layer.nvme_rdma)
                if following:
                    walk(following[0], off + len(layer) - len(layer.rest))
            off += header_len(layer)
            layer = layer.data
    walk(top, 0)
    return out


def rdmaspy_layers(pkt: Packet) -> dict[tuple[int, int], object]:
    """rdmaspy's header layers in the frame's own bytes (not in buffers rebuilt from several frames)."""
    out: dict[tuple[int, int], object] = {}
    data = pkt.frame.data

    def walk(layers: list) -> None:
        for lay in layers:
            if lay.buf is data and lay.header is not None and id(lay.header) in rd.LAYER_OF:
                out[(lay.off, id(lay.header))] = lay
            if lay.children and lay.proto not in ("icmp", "icmpv6"):      # not the quote (QUOTING)
                walk(lay.children)
    walk(pkt.layers)
    return out


def _iwarp_ports(frames: list[tuple[int, bytes]]) -> None:
    """iWARP has no port of its own: bind the ports whose MPA Request frames the capture holds."""
    for linktype, buf in frames:
        tcp = LINKTYPES[linktype](buf).data.data if linktype == dpkt.pcap.DLT_EN10MB else None
        if isinstance(tcp, dpkt.tcp.TCP) and bytes(tcp.data)[:16] == iwarp_mpa.KEY_REQ:
            rd.bind_iwarp(tcp.dport)


def _chunks(msg: rpcrdma.RpcRdmaMessage) -> tuple:
    return ([(s.position, s.handle, s.length, s.offset) for s in msg.reads],
            [[(s.handle, s.length, s.offset) for s in c] for c in msg.writes],
            None if msg.reply is None else [(s.handle, s.length, s.offset) for s in msg.reply])


def _compare_rpcrdma(where: str, pkt: Packet, theirs: dict) -> int:
    msg = pkt.noted(rpcrdma.RPCRDMA)
    lay = next((x for x in pkt.layers if x.proto in ("rpcrdma", "rpcrdma2")), None)
    if msg is None or lay is None or lay.buf is not pkt.frame.data or msg.malformed is not None \
            or msg.version not in (1, 2):
        return 0        # rdmaspy shows an unknown version by the connection's port: dpkt has no state
    cls = "RPCRDMA" if msg.version == 1 else "RPCRDMA2"
    got = theirs.get((lay.off, cls))
    assert got is not None, f"{where}: dpkt finds no {cls} at {lay.off}"
    assert (got.xid, got.version) == (msg.xid, msg.version), where
    if msg.version == 1:
        assert (got.credits, got.proc) == (msg.credits, msg.proc), where
    else:
        assert (got.max_credits, got.granted, got.htype, got.flags) == (msg.max_credits, msg.granted, msg.proc,
                                                                       msg.flags), where
    if msg.proc in (0, 1, 2):
        assert got.chunks == _chunks(msg), where
    assert len(got) - len(got.data) == msg.header_len, where
    return 1


def _starts_with_mpa(ours: dict, theirs: dict) -> bool:
    """Whether rdmaspy finds an MPA frame where the TCP payload starts (dpkt reads a segment from there)."""
    tcp = next(((off, lay) for (off, key), lay in theirs.items() if isinstance(lay, dpkt.tcp.TCP)), None)
    if tcp is None:
        return False
    start = tcp[0] + header_len(tcp[1])
    return any(off == start and key in (id(iwarp_mpa.FPDU), id(iwarp_mpa.REQREP)) for off, key in ours)


@pytest.fixture
def nvme_qps() -> Iterator[set[int]]:
    """rdmaspy.dpkt's NVMe/RDMA queue pairs, as they were after the test."""
    saved = set(rd.NVME_RDMA_QPS)
    yield rd.NVME_RDMA_QPS
    rd.NVME_RDMA_QPS.clear()
    rd.NVME_RDMA_QPS.update(saved)


@pytest.mark.parametrize("name", SAMPLES)
def test_dpkt_dissects_every_shipped_frame_as_rdmaspy_decodes_it(name: str, nvme_qps: set[int]) -> None:
    path = sample(name)
    frames = dpkt_frames(path)
    _iwarp_ports(frames)
    engine = Engine()
    compared = 0
    rdmaspy_frames = list(open_capture(str(path)))
    assert [f.data for f in rdmaspy_frames] == [buf for _lt, buf in frames]
    packets = [engine.dissect(frame) for frame in rdmaspy_frames]
    # the QPs of NVMe/RDMA connections on RoCE, which a dpkt user names (the CM exchange, or the capture's owner)
    nvme_qps.update(p.ib.destqp for p in packets
                    if p.ib is not None and (p.noted(nvme.NVME_COMMANDS) or p.noted(nvme.NVME_COMPLETIONS)))
    for frame, pkt, (linktype, buf) in zip(rdmaspy_frames, packets, frames):
        where = f"{name} frame {frame.num}"
        ours = rdmaspy_layers(pkt)
        theirs = dpkt_layers(LINKTYPES[linktype](buf), _nvme_context(pkt))
        iwarp = any(isinstance(lay, dpkt.tcp.TCP) for lay in theirs.values())
        if iwarp and not _starts_with_mpa(ours, theirs):
            continue        # a segment that continues an FPDU: only a stream reassembler knows where it is
        for (off, key), lay in theirs.items():
            if not isinstance(key, int):
                continue
            assert (off, key) in ours, f"{where}: dpkt finds {type(lay).__name__} at {off}, rdmaspy does not"
            assert lay.values() == tuple(ours[(off, key)].values), f"{where}: {type(lay).__name__} at {off}"
            compared += 1
        for (off, key), lay in ours.items():
            if key in stacking.OVERLAPPING:
                continue
            assert (off, key) in theirs, f"{where}: rdmaspy decodes {lay.header.name} at {off}, dpkt does not"
        compared += _compare_rpcrdma(where, pkt, theirs)
    assert compared > 0


def _computing(top: dpkt.Packet) -> dpkt.Packet:
    """The frame's RoCE or InfiniBand layers set to compute their ICRC, VCRC, pad count and lengths on bytes()."""
    layer, below = top, None
    while isinstance(layer, dpkt.Packet):
        if isinstance(layer, rd.DeclaredPacket) and layer.computed:
            layer.compute()
        if isinstance(layer, rd.BTH):
            layer.icrc = None         # the pad bytes stay as captured (not all senders send zeros)
            if isinstance(below, (dpkt.ip.IP, dpkt.ip6.IP6)):
                layer.carrier = below
            return top
        if isinstance(layer, rd.LRH):
            layer.vcrc = None
        if not isinstance(layer, dpkt.udp.UDP):
            below = layer
        layer = layer.data
    raise AssertionError("no BTH")


def _with_udp_checksum(buf: bytes, top: dpkt.ethernet.Ethernet) -> bytes:
    """The frame with the UDP checksum dpkt's IPv6 computes where the sender left it 0 (the ICRC leaves it out)."""
    ip6 = top.data
    at = len(buf) - len(ip6) + ip6.__hdr_len__ + 6
    body = bytes(ip6.data)
    pseudo = struct.pack(">16s16sxBH", ip6.src, ip6.dst, 17, len(body))
    total = dpkt.in_cksum_done(dpkt.in_cksum_add(dpkt.in_cksum_add(0, pseudo), body[:6] + b"\0\0" + body[8:]))
    return buf[:at] + struct.pack(">H", total or 0xFFFF) + buf[at + 2:]


@pytest.mark.parametrize("name", SAMPLES)
def test_dpkt_rebuilds_each_roce_frame_with_the_icrc_it_computes(name: str) -> None:
    """Every RoCE and InfiniBand frame whose ICRC rdmaspy finds valid, rebuilt by dpkt with the ICRC (and the
    VCRC, pad count and lengths) left to compute: the ICRC over the carrier the BTH is given (IPv4, IPv6) or finds
    (GRH, LRH)."""
    engine = Engine()
    rebuilt = 0
    for frame, (linktype, buf) in zip(open_capture(str(sample(name))), dpkt_frames(sample(name))):
        pkt = engine.dissect(frame)
        if pkt.ib is None or pkt.ib.icrc_ok is not True:
            continue
        top = _computing(LINKTYPES[linktype](buf))
        udp = top.data.data if isinstance(top.data, dpkt.ip6.IP6) else None
        if udp is not None and udp.sum == 0:
            buf = _with_udp_checksum(buf, top)
        got = bytes(top)
        assert got == buf[:len(got)], f"{name} frame {frame.num}"
        assert not buf[len(got):].strip(b"\0"), f"{name} frame {frame.num}: only Ethernet padding is left out"
        rebuilt += 1
    if any(n in name for n in ("rxe", "rocev", "ib_native", "cm_all", "rpcrdma_v")):
        assert rebuilt > 0


# --- round trips ----------------------------------------------------------------------------------------
def _value(field: object, as_bytes: bool) -> st.SearchStrategy:
    bits = field.bits       # type: ignore[attr-defined]
    return st.binary(min_size=bits // 8, max_size=bits // 8) if as_bytes else st.integers(0, (1 << bits) - 1)


def _draw(data: st.DataObject, header: Header) -> dict[str, object]:
    """Values for every declared field of ``header``, by the generated class's names."""
    cls = rd.layer_of(header)
    return {name: data.draw(_value(f, b), label=name)
            for name, f, b in zip(cls.field_names, header.fields, stacking.byte_fields(header))}


@pytest.mark.parametrize("name", sorted(n for n in rd.LAYERS if n not in ("RPCRDMA", "RPCRDMA2")))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_generated_class_packs_as_the_declaration_encodes_and_unpacks_the_same(name: str,
                                                                                      data: st.DataObject) -> None:
    cls = rd.LAYERS[name]
    header = cls.declaration
    values = _draw(data, header)
    kwargs = dict(values)
    if header is iwarp_mpa.FPDU:        # an FPDU unpacks only when whole: its ULPDU as long as it says
        kwargs["ulpdulength"] = values["ulpdulength"] = data.draw(st.integers(0, 600), label="ulpdulength")
        kwargs["data"] = bytes(values["ulpdulength"])
    packet = cls(**kwargs)
    raw = bytes(packet)
    assert len(raw) == len(packet)
    assert raw[:header.size] == header.encode({f.name: v for f, v in zip(header.fields, values.values())})
    again = cls(raw)
    assert again.values() == tuple(values.values())
    assert bytes(again) == raw


@settings(max_examples=300, deadline=None)
@given(size=st.sampled_from([15, 16, 64, 80, 128]), noise=st.binary(min_size=128, max_size=128),
       qid=st.none() | st.integers(0, 3), command=st.none() | st.binary(min_size=64, max_size=64))
def test_any_capsule_unpacks_as_the_plan_says_and_packs_the_same(size: int, noise: bytes, qid: int | None,
                                                                 command: bytes | None) -> None:
    """Any bytes read as an NVMe/RDMA capsule (any opcode, SGL, descriptor list, range count; any queue and
    command answered): the classes rdmaspy's plan names, each with the values the declaration decodes, and
    bytes() the same bytes."""
    payload = noise[:size]
    got = rd.nvme_capsule(payload, qid, command)
    assert bytes(got) == payload
    plan = stacking.nvme_plan(payload, qid, command)
    assert bool(plan) == (size == 16 or size >= 64)
    layer, at = got, 0
    for hdr in plan:
        assert isinstance(layer, rd.layer_of(hdr)) and layer.values() == hdr.decode(payload, at)
        layer, at = layer.data, at + hdr.size
    assert bytes(layer) == payload[at:]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_a_bth_unpacks_the_extended_headers_of_its_opcode_as_craft_builds_them(data: st.DataObject) -> None:
    """Any valid opcode: the BTH, its extended headers and payload built by dpkt are the bytes of
    craft.transport; unpacked, each extended header of the opcode's plan is there with its values."""
    opcode = data.draw(st.sampled_from([p.opcode for p in infiniband.PLANS if p.valid]), label="opcode")
    plan = infiniband.PLANS[opcode]
    bth = _draw(data, infiniband.BTH)
    bth.update(opcode=opcode)
    del bth["padcnt"]
    exts = [_draw(data, h) for h in plan.exts]
    payload = data.draw(st.binary(max_size=40), label="payload")
    packet = rd.BTH(**bth)
    below = packet
    for h, values in zip(plan.exts, exts):
        below.data = rd.layer_of(h)(**values)
        below = below.data
    below.data = payload
    per_header = {h.name: {f.name.rsplit(".", 1)[1]: v for f, v in zip(h.fields, values.values())}
                  for h, values in zip(plan.exts, exts)}
    expected = craft.transport(payload=payload, **bth, **per_header)
    raw = bytes(packet)
    assert raw == expected + bytes(4)       # no carrier: the ICRC is 0
    again = rd.BTH(raw)
    layer = again.data
    for h, values in zip(plan.exts, exts):
        assert isinstance(layer, rd.layer_of(h)) and layer.values() == tuple(values.values())
        layer = layer.data
    assert again.padcnt == -len(payload) & 3 and len(again.pad) == again.padcnt


def _transport(opcode: int = 0x0B) -> rd.BTH:
    immdt = rd.IMMDT(imm=0xCAFEF00D, data=b"hello")
    return rd.BTH(opcode=opcode, destqp=0x12, psn=7, se=1, ackreq=1,
                  data=rd.RETH(va=0x7F0000001000, r_key=0x1234, dma_length=5, data=immdt))


def _ext_args() -> dict:
    return {"se": 1, "ackreq": 1, "va": 0x7F0000001000, "r_key": 0x1234, "dma_length": 5, "imm": 0xCAFEF00D}


def _decode(data: bytes, linktype: int = 1) -> Packet:
    return Engine(strict=True).dissect(Frame(1, 0, linktype, data, len(data)))


def test_dpkt_builds_rocev1_as_craft_does() -> None:
    frame = dpkt.ethernet.Ethernet(src=craft.mac_bytes("02:00:00:00:00:01"), dst=craft.mac_bytes("02:00:00:00:00:02"),
                                   data=rd.GRH(sgid=craft.gid_bytes("192.0.2.1"), dgid=craft.gid_bytes("192.0.2.2"),
                                               data=_transport()))
    raw = bytes(frame)
    assert raw == craft.rocev1(0x0B, destqp=0x12, psn=7, payload=b"hello", **_ext_args())
    pkt = _decode(raw)
    assert pkt.malformed is None and pkt.ib.icrc_ok is True
    assert isinstance(dpkt.ethernet.Ethernet(raw).data, rd.GRH)


@pytest.mark.parametrize("grh", [False, True])
def test_dpkt_builds_native_infiniband_as_craft_does(grh: bool) -> None:
    transport = _transport()
    carried = rd.GRH(sgid=craft.gid_bytes("fe80::1"), dgid=craft.gid_bytes("fe80::2"), hoplmt=255, data=transport) \
        if grh else transport
    raw = bytes(rd.LRH(dlid=0xFFFF, slid=0xFFFF, data=carried))
    assert raw == craft.native_ib(0x0B, destqp=0x12, psn=7, payload=b"hello", grh=grh, **_ext_args())
    pkt = _decode(raw, 247)
    assert pkt.malformed is None and pkt.ib.icrc_ok is True and pkt.layers[-1]["vcrc.valid"] is True


@pytest.mark.parametrize("version", [4, 6])
def test_dpkt_builds_rocev2_with_the_icrc_of_its_ip_carrier(version: int) -> None:
    """dpkt's IP and UDP around a BTH whose carrier is that IP packet: the frame of craft.rocev2 (but for
    the UDP checksum, which dpkt computes and the ICRC leaves out)."""
    transport = _transport()
    udp = dpkt.udp.UDP(sport=49152, dport=4791, data=transport)
    udp.ulen = len(udp)
    if version == 4:
        ip = dpkt.ip.IP(src=craft.ip_bytes("192.0.2.1", 4), dst=craft.ip_bytes("192.0.2.2", 4), p=17, df=1, data=udp)
        etype = dpkt.ethernet.ETH_TYPE_IP
    else:
        ip = dpkt.ip6.IP6(src=craft.ip_bytes("2001:db8::1", 6), dst=craft.ip_bytes("2001:db8::2", 6), nxt=17,
                          hlim=64, plen=len(udp), data=udp)
        etype = dpkt.ethernet.ETH_TYPE_IP6
    transport.carrier = ip
    frame = dpkt.ethernet.Ethernet(src=craft.mac_bytes("02:00:00:00:00:01"), dst=craft.mac_bytes("02:00:00:00:00:02"),
                                   type=etype, data=ip)
    raw = bytes(frame)
    expected = craft.rocev2(0x0B, destqp=0x12, psn=7, payload=b"hello", ip=version, **_ext_args())
    udp_sum = 14 + (20 if version == 4 else 40) + 6
    assert raw[:udp_sum] + raw[udp_sum + 2:] == expected[:udp_sum] + expected[udp_sum + 2:]
    pkt = _decode(raw)
    assert pkt.malformed is None and pkt.ib.icrc_ok is True
    assert transport.expected_icrc() == pkt.ib.icrc_expected
    again = dpkt.ethernet.Ethernet(raw)
    assert isinstance(again.data.data.data, rd.BTH) and again.data.udp.bth.reth.immdt.imm == 0xCAFEF00D


_CHUNKS = st.tuples(
    st.lists(st.tuples(*[st.integers(0, 2**32 - 1)] * 3, st.integers(0, 2**64 - 1)), max_size=3),
    st.lists(st.lists(st.tuples(*[st.integers(0, 2**32 - 1)] * 2, st.integers(0, 2**64 - 1)), max_size=3), max_size=2),
    st.none() | st.lists(st.tuples(*[st.integers(0, 2**32 - 1)] * 2, st.integers(0, 2**64 - 1)), max_size=3))
_U32 = st.integers(0, 2**32 - 1)


@settings(max_examples=150, deadline=None)
@given(xid=_U32, credits=_U32, proc=st.sampled_from([0, 1, 2, 3, 4]), chunks=_CHUNKS, align=_U32, thresh=_U32,
       errcode=st.sampled_from([1, 2]), low=_U32, high=_U32, payload=st.binary(max_size=32))
def test_rpcrdma_v1_packs_as_its_encoder_and_unpacks_the_same(xid: int, credits: int, proc: int, chunks: tuple,
                                                              align: int, thresh: int, errcode: int, low: int,
                                                              high: int, payload: bytes) -> None:
    reads, writes, reply = chunks
    packet = rd.RPCRDMA(xid=xid, credits=credits, proc=proc, chunks=chunks, align=align, thresh=thresh,
                        errcode=errcode, vers_low=low, vers_high=high, data=payload)
    raw = bytes(packet)
    assert raw == rpcrdma.encode_v1(xid, proc, credits, reads=reads, writes=writes, reply=reply, payload=payload,
                                    align=align, thresh=thresh, errcode=errcode, vers_low=low, vers_high=high)
    again = rd.RPCRDMA(raw)
    assert (again.xid, again.version, again.credits, again.proc, again.data) == (xid, 1, credits, proc, payload)
    if proc in (0, 1, 2):
        assert again.chunks == (list(reads), [list(c) for c in writes], None if reply is None else list(reply))
    if proc == 2:
        assert (again.align, again.thresh) == (align, thresh)
    if proc == 4:
        assert again.errcode == errcode and (errcode != 1 or (again.vers_low, again.vers_high) == (low, high))
    assert bytes(again) == raw and len(again) == len(raw)


@settings(max_examples=150, deadline=None)
@given(xid=_U32, htype=st.sampled_from([0, 1, 4, 5]), max_credits=st.integers(0, 0xFFFF),
       granted=st.integers(0, 0xFFFF), flags=_U32, inv=_U32, chunks=_CHUNKS,
       errcode=st.sampled_from(sorted(rpcrdma2.ERRCODES)), args=st.lists(_U32, min_size=2, max_size=2),
       props=st.lists(st.tuples(st.integers(1, 5), _U32), max_size=4), payload=st.binary(max_size=32))
def test_rpcrdma_v2_packs_as_its_encoder_and_unpacks_the_same(xid: int, htype: int, max_credits: int, granted: int,
                                                              flags: int, inv: int, chunks: tuple, errcode: int,
                                                              args: list, props: list, payload: bytes) -> None:
    reads, writes, reply = chunks
    error_args = dict(zip(rpcrdma2.ERROR_ARMS.get(errcode, ()), args))
    packet = rd.RPCRDMA2(xid=xid, htype=htype, max_credits=max_credits, granted=granted, flags=flags, inv_handle=inv,
                         chunks=chunks, errcode=errcode, error_args=error_args,
                         props=[(w, v.to_bytes(4, "big")) for w, v in props], data=payload)
    raw = bytes(packet)
    assert raw == rpcrdma2.encode(xid, htype, max_credits=max_credits, granted=granted, flags=flags, inv_handle=inv,
                                  reads=reads, writes=writes, reply=reply, errcode=errcode, error_args=error_args,
                                  props=props, payload=payload)
    again = rd.RPCRDMA2(raw)
    assert (again.xid, again.version, again.max_credits, again.granted, again.htype, again.flags, again.data) == \
        (xid, 2, max_credits, granted, htype, flags, payload)
    if htype in (0, 1):
        assert again.inv_handle == inv
        assert again.chunks == (list(reads), [list(c) for c in writes], None if reply is None else list(reply))
    elif htype == 4:
        assert (again.errcode, again.error_args) == (errcode, error_args)
    else:
        assert again.props == [(w, v.to_bytes(4, "big")) for w, v in props]
    assert bytes(again) == raw and len(again) == len(raw)


def test_a_cm_request_unpacks_to_its_ip_cm_header_and_rfc8797_data() -> None:
    """MAD / CM_REQ to an RDMA-CM service ID / IP CM with its addresses / consumer data with RFC 8797 data
    after a prefix: built by dpkt, decoded by rdmaspy with the same values, unpacked by dpkt again."""
    pdata = rd.RPCRDMA_PDATA(remote_invalidate=1, send_size_raw=3, recv_size_raw=3, data=bytes(12))
    consumer = rd.PrivateDataPrefix(skipped=b"\x01\x02\x03\x04", data=pdata)
    ip_cm = rd.CM_REQ_IP_CM(ipv=4, sport=43924, addresses=bytes(12) + bytes([192, 0, 2, 2]) + bytes(12)
                            + bytes([192, 0, 2, 1]), data=consumer)
    req = rd.CM_REQ(localcommid=0x1234, serviceid=0x0000000001064E51, localqpn=0x11, startpsn=5, data=ip_cm)
    cm = rd.MAD(mgmtclass=0x07, classversion=2, method=0x03, transactionid=9, attributeid=0x0010, data=req)
    raw = craft.rocev2_mad(bytes(cm) + bytes(256 - len(cm)))
    frame = dpkt.ethernet.Ethernet(raw)
    got = frame.ip.udp.bth
    assert got.deth.mad.cm_req.cm_req_ip_cm.privatedataprefix.skipped == b"\x01\x02\x03\x04"
    assert got.deth.mad.cm_req.cm_req_ip_cm.privatedataprefix.rpcrdma_pdata.values() == pdata.values()
    pkt = _decode(raw)
    assert pkt.malformed is None and pkt.ib.icrc_ok is True
    ours = rdmaspy_layers(pkt)
    for (off, key), lay in dpkt_layers(frame).items():
        if isinstance(key, int):
            assert lay.values() == tuple(ours[(off, key)].values), type(lay).__name__
    assert bytes(got) == raw[14 + 20 + 8:]


def _tcp_frames(payloads: list[bytes], port: int = 20049) -> list[bytes]:
    """Ethernet frames of one TCP connection (192.0.2.2:46371 -> 192.0.2.1:port) whose segments carry
    ``payloads`` in turn, client first, after a handshake."""
    c, s = craft.ip_bytes("192.0.2.2", 4), craft.ip_bytes("192.0.2.1", 4)
    seq = {c: 1000, s: 5000}

    def seg(src: bytes, dst: bytes, flags: int, pay: bytes = b"") -> bytes:
        sport, dport = (46371, port) if src == c else (port, 46371)
        tcp = dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq[src], ack=seq[dst], flags=flags, data=pay)
        seq[src] += len(pay) + (1 if flags & dpkt.tcp.TH_SYN else 0)
        ip = dpkt.ip.IP(src=src, dst=dst, p=6, data=tcp)
        return bytes(dpkt.ethernet.Ethernet(src=craft.mac_bytes("02:00:00:00:00:01"),
                                            dst=craft.mac_bytes("02:00:00:00:00:02"), data=ip))
    out = [seg(c, s, dpkt.tcp.TH_SYN), seg(s, c, dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK), seg(c, s, dpkt.tcp.TH_ACK)]
    for i, pay in enumerate(payloads):
        out.append(seg(c, s, dpkt.tcp.TH_PUSH | dpkt.tcp.TH_ACK, pay) if i % 2 == 0 else
                   seg(s, c, dpkt.tcp.TH_PUSH | dpkt.tcp.TH_ACK, pay))
    return out


def test_dpkt_builds_iwarp_that_rdmaspy_decodes() -> None:
    """MPA v2 Request/Reply with IRD/ORD and RFC 8797 data negotiating CRCs, then a segment of two FPDUs: an
    RPC-over-RDMA call in a DDP untagged Send and an RDMA Read Request. rdmaspy decodes it all with the CRCs
    dpkt computed valid; dpkt unpacks the first FPDU from TCP and the second with ``fpdus``."""
    req = rd.MPA_REQREP(crc_flag=1, rev=2, res=0x10, pdlength=12,
                        data=rd.MPA_IRD_ORD(ird=128, ord=128, data=rd.RPCRDMA_PDATA(remote_invalidate=1,
                                                                                    send_size_raw=3, recv_size_raw=3)))
    rep = rd.MPA_REQREP(key=iwarp_mpa.KEY_REP, crc_flag=1, rev=2, res=0x10, pdlength=12,
                        data=rd.MPA_IRD_ORD(ird=64, ord=64, data=rd.RPCRDMA_PDATA(send_size_raw=3, recv_size_raw=1)))
    chunks = ([], [], [(0x30, 512, 0x4000)])
    send = rd.MPA_FPDU(data=rd.DDP_UNTAGGED(last_flag=1, rsvdulp=bytes([0x43, 0, 0, 0, 0]), qn=0, msn=1,
                                             data=rd.RPCRDMA(xid=9, credits=32, proc=1, chunks=chunks, data=b"xyz")))
    read = rd.MPA_FPDU(data=rd.DDP_UNTAGGED(last_flag=1, rsvdulp=bytes([0x41, 0, 0, 0, 0]), qn=1, msn=1,
                                             data=rd.RDMAP_RR(sinkstag=0x10, sinkto=0x2000, rdmardsz=4096,
                                                              srcstag=0x20, srcto=0x3000)))
    frames = _tcp_frames([bytes(req), bytes(rep), bytes(send) + bytes(read)])
    engine = Engine(strict=True)
    pkts = [engine.dissect(Frame(i, i * 1000, 1, d, len(d))) for i, d in enumerate(frames, 1)]
    message = pkts[5]
    assert message.malformed is None
    crcs = [x for x in message.layers if x.proto == "mpa"]
    assert len(crcs) == 2 and all(x["iwarp.crc.checked"] is True and x["iwarp.crc.valid"] is True for x in crcs)
    assert _chunks(message.noted(rpcrdma.RPCRDMA)) == chunks
    for pkt, data in zip(pkts[3:], frames[3:]):
        ours = rdmaspy_layers(pkt)
        theirs = dpkt_layers(dpkt.ethernet.Ethernet(data))
        assert {k for k in ours if k[1] not in stacking.OVERLAPPING} == {k for k in theirs if isinstance(k[1], int)}
        for key, lay in theirs.items():
            if isinstance(key[1], int):
                assert lay.values() == tuple(ours[key].values), type(lay).__name__
    tcp = dpkt.ethernet.Ethernet(frames[5]).ip.tcp
    first, rest = tcp.mpa_fpdu, rd.fpdus(tcp.mpa_fpdu.rest)
    assert first.ddp_untagged.rpcrdma.chunks == chunks and first.pad == b"\0"
    assert rest[1] == b"" and rest[0][0].ddp_untagged.rdmap_rr.rdmardsz == 4096


@pytest.mark.parametrize("opcode", sorted(iwarp_ddp.HEADER_OF_OPCODE))
def test_the_rdmap_header_of_each_untagged_opcode_follows_its_ddp_header(opcode: int) -> None:
    hdr = iwarp_ddp.HEADER_OF_OPCODE[opcode]
    cls = rd.layer_of(hdr)
    values = {n: (0x5A5A5A5A5A5A5A5A + i) & ((1 << f.bits) - 1)
              for i, (n, f) in enumerate(zip(cls.field_names, hdr.fields))}
    ddp = rd.DDP_UNTAGGED(last_flag=1, rsvdulp=bytes([0x40 | opcode, 0, 0, 0, 0]), data=cls(**values))
    again = rd.MPA_FPDU(bytes(rd.MPA_FPDU(crc=0, data=ddp)))
    assert isinstance(again.data, rd.DDP_UNTAGGED) and type(again.data.data) is cls
    assert again.data.data.values() == tuple(values.values())


def test_every_declared_header_has_a_generated_class() -> None:
    for name, header in stacking.class_names():
        cls = rd.LAYERS[name]
        assert issubclass(cls, rd.DeclaredPacket) and cls.declaration is header and getattr(rd, name) is cls
        assert len(cls.field_names) == len(header.fields)
        assert cls.__hdr_len__ == header.size + (stacking.IP_CM_ADDRESSES if name == "CM_REQ_IP_CM" else 0)
        assert cls().values() == tuple(stacking.DEFAULTS.get(f.name, bytes(f.bits // 8) if b else 0)
                                       for f, b in zip(header.fields, stacking.byte_fields(header)))


def test_value_names_show_in_pprint(capsys: pytest.CaptureFixture[str]) -> None:
    rd.BTH(opcode=0x0A, destqp=0x11).pprint()
    shown = capsys.readouterr().out
    assert "opcode=10,  # RC RDMA WRITE Only" in shown and "destqp=17,  # 0x11" in shown


def test_integer_fields_that_fill_no_word_are_read_and_written_inside_their_bytes() -> None:
    """A run of integer fields no 1, 2, 4 or 8-byte words hold (none is declared so today) shares one
    bytes entry, read and written through properties, and round trips."""
    from rdmaspy.fields import CATALOG, F, declaring
    before = CATALOG.module
    declaring("tests.test_dpkt_layers")
    try:
        odd = Header("dpkt_test.odd", "Odd", [F("a", 4), F("b", 20), F("blob", 16, display="bytes")])
        cls = rd.make_class("ODD", odd)
        assert [h[:2] for h in cls.__hdr__] == [("_a_b", "3s"), ("blob", "2s")]
        packet = cls(a=5, b=0xABCDE, blob=b"xy")
        assert bytes(packet) == odd.encode(a=5, b=0xABCDE, blob=b"xy")
        assert cls(bytes(packet)).values() == (5, 0xABCDE, b"xy")
        with pytest.raises(ValueError):
            packet.a = 16
    finally:
        CATALOG.forget_module("tests.test_dpkt_layers")
        declaring(before)


# --- hostile input ------------------------------------------------------------------------------------
_MUTABLE = [(lt, buf) for name in ("rxe-nfsv3-rdma.pcap", "siw-nfsv3-rdma.pcap", "rxe-pyverbs-rc-verbs.pcap",
                                   "cm_all_messages.pcap", "ib_native_247.pcap", "rpcrdma_v2_all.pcap")
            for lt, buf in dpkt_frames(sample(name))[:60]]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(_MUTABLE) - 1), st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)),
                                                    min_size=1, max_size=8), st.integers(0, 1 << 16))
def test_hostile_frames_unpack_pack_and_print_without_an_exception_from_rdmaspy(which: int, changes: list,
                                                                                 cut: int) -> None:
    """Real frames with bytes changed and cut short: the generated classes (and the dissectors' parsers they
    call) raise nothing but dpkt's UnpackError, which dpkt's own layers take as 'leave it as bytes'."""
    linktype, buf = _MUTABLE[which]
    frame = bytearray(buf)
    for at, value in changes:
        frame[at % len(frame)] = value
    data = bytes(frame[:cut % (len(frame) + 1)])
    try:
        top = LINKTYPES[linktype](data)
        bytes(top)
        repr(top)
    except dpkt.UnpackError:
        pass
    except Exception as exc:    # dpkt's own classes may raise on such bytes; rdmaspy's code may not
        where = traceback.extract_tb(exc.__traceback__)[-1]
        assert "rdmaspy" not in Path(where.filename).parts, f"{type(exc).__name__}: {exc} at {where.filename}:" \
                                                            f"{where.lineno}"


# --- installs and bindings ----------------------------------------------------------------------------
def _run(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, cwd=ROOT, stdin=subprocess.DEVNULL, timeout=300)


def test_rdmaspy_and_its_commands_never_import_dpkt() -> None:
    done = _run("""
        import importlib, pkgutil, sys
        import rdmaspy, rdmaspy.cli, rdmaspy.commands
        for m in pkgutil.iter_modules(rdmaspy.commands.__path__):
            importlib.import_module("rdmaspy.commands." + m.name)
        rdmaspy.cli.main(["decode", "captures/rxe-nfsv3-rdma.pcap", "-c", "3"])
        sys.stdout.flush()
        assert "dpkt" not in sys.modules, "dpkt imported"
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 3


def test_without_dpkt_rdmaspy_works_and_rdmaspy_dpkt_says_what_to_install() -> None:
    done = _run("""
        import sys
        sys.modules["dpkt"] = None          # as if dpkt were not installed: importing it fails
        import rdmaspy.cli
        rdmaspy.cli.main(["stats", "captures/rxe-nfsv3-rdma.pcap"])
        try:
            import rdmaspy.dpkt
        except ImportError as exc:
            print("ImportError:", exc)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "ImportError: rdmaspy.dpkt needs dpkt: pip install 'rdmaspy[dpkt]'"


def test_dpkt_is_unchanged_until_rdmaspy_dpkt_is_imported() -> None:
    done = _run("""
        import dpkt
        _ts, buf = next(iter(dpkt.pcap.Reader(open("captures/rxe-nfsv3-rdma.pcap", "rb"))))
        before = dpkt.ethernet.Ethernet(buf)
        assert type(before.ip.data) is dpkt.udp.UDP and type(before.ip.data.data) is bytes
        assert dpkt.ip.IP.get_proto(17) is dpkt.udp.UDP and 0x8915 not in dpkt.ethernet.Ethernet._typesw
        import rdmaspy.dpkt
        after = dpkt.ethernet.Ethernet(bytes(before))
        assert type(after.ip.data) is dpkt.udp.UDP and type(after.ip.data.data).__name__ == "BTH"
        assert after.ip.udp is after.ip.data and after[dpkt.udp.UDP] is after.ip.data
        with rdmaspy.dpkt.unbound():
            assert type(dpkt.ethernet.Ethernet(bytes(before)).ip.data.data) is bytes
            assert 0x8915 not in dpkt.ethernet.Ethernet._typesw
        print("ok")
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


# --- docs/dpkt.md ---------------------------------------------------------------------------------------
EXAMPLES = ROOT / "docs" / "examples"


@pytest.mark.parametrize("capture", ["rxe-ib_write_bw.pcap", "rxe-nfsv3-rdma.pcap", "rxe-pyverbs-rc-verbs.pcap"])
def test_the_three_write_byte_scripts_of_docs_dpkt_md_print_the_same_sums(capture: str, tmp_path: Path) -> None:
    """dpkt with rdmaspy.dpkt, scapy with rdmaspy.scapy and rdmaspy's own command sum the same RDMA WRITE
    bytes per QP, and each script is in the doc as it is in docs/examples."""
    doc = (ROOT / "docs" / "dpkt.md").read_text()
    shim = tmp_path / "rdmaspy"                 # the rdmaspy command of this tree, for the shell script
    shim.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m rdmaspy "$@"\n')
    shim.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    outputs = []
    for script, command in (("write_bytes_dpkt.py", [sys.executable]), ("write_bytes_scapy.py", [sys.executable]),
                            ("write_bytes_rdmaspy.sh", ["sh"])):
        text = (EXAMPLES / script).read_text()
        assert text.strip() in doc, f"docs/dpkt.md does not hold docs/examples/{script} as it is"
        done = subprocess.run([*command, str(EXAMPLES / script), str(CAPTURES / capture)], capture_output=True,
                              text=True, env=env, stdin=subprocess.DEVNULL, timeout=600)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] and outputs[0].startswith("QP 0x") and outputs[0] == outputs[1] == outputs[2]


def test_dpkt_builds_nvme_capsules_as_nvme_build_does_and_reads_them_on_a_bound_qp(nvme_qps: set[int]) -> None:
    """An Identify and a Connect built with dpkt are nvme_build's SQEs, a completion its CQE; a SEND Only to
    a QP bound for NVMe/RDMA unpacks to the same classes (the Connect's completion read for its command), and
    to a QP not bound stays bytes."""
    import nvme_build as nb
    identify = rd.NVME_ADMIN_SQE(opc=0x06, psdt=1, cid=5, data=rd.NVME_SGL_KEYED(
        sgl1_addr=0x1000, sgl1_len=4096, sgl1_key=0x1234, sgl_type=4, sgl_subtype=0xF,
        data=rd.NVME_IDENTIFY(identify_dword10=1)))
    assert bytes(identify) == nb.sqe(0x06, 5, sgl=nb.keyed_sgl(0x1000, 4096, 0x1234), dwords=(1,))
    sgl = rd.NVME_SGL_KEYED(sgl1_addr=0x2000, sgl1_len=1024, sgl1_key=0x99, sgl_type=4, sgl_subtype=0xF,
                            data=rd.NVME_CONNECT(qid=1, sqsize=31, kato=5000))
    connect = rd.NVME_FABRICS_SQE(opc=0x7F, rsvd=0x40, cid=1, fctype=nvme.FCTYPE_CONNECT,
                                  data=rd.NVME_CONNECT_HEAD(data=sgl))
    assert bytes(connect) == nb.connect(1, 1, 31, nb.keyed_sgl(0x2000, 1024, 0x99), kato=5000)
    done = rd.NVME_CQE(cid=5, sqid=0, sqhd=1, status=nb.status(0x02))
    assert bytes(done) == nb.cqe(5, status=nb.status(0x02))
    nvme_qps.add(nb.CTRL_QP)
    for capsule, cls in ((identify, rd.NVME_ADMIN_SQE), (connect, rd.NVME_FABRICS_SQE)):
        bth = rd.BTH(rd.BTH(opcode=nb.SEND_ONLY, destqp=nb.CTRL_QP, data=capsule).pack())
        assert isinstance(bth.data, cls) and bytes(bth.data) == bytes(capsule)
        other = rd.BTH(rd.BTH(opcode=nb.SEND_ONLY, destqp=nb.HOST_QP + 7, data=capsule).pack())
        assert not isinstance(other.data, cls)
    answer = rd.nvme_capsule(nb.cqe(1, dw0=0x0002), command=connect)
    assert isinstance(answer, rd.NVME_CONNECT_CQE) and answer.cntrlid == 2 and isinstance(answer.data,
                                                                                            rd.NVME_FABRICS_CQE_TAIL)


_NVME_DECLARED = frozenset(id(h) for name, h in stacking.class_names() if name.startswith("NVME_"))
_OPCODES = sorted({*nvme.N.ADMIN_OPCODES, *nvme.N.IO_OPCODES})


@settings(max_examples=150, deadline=None,      # the QPs the fixture restores are the same in every example
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(qid=st.sampled_from([0, 1]), opcode=st.sampled_from(_OPCODES), fctype=st.sampled_from([0, 1, 4, 5, 6, 8, 9]),
       body=st.binary(min_size=63, max_size=63), icd=st.binary(max_size=96), dw0=st.integers(0, 2**32 - 1),
       sgl=st.sampled_from([None, (0x0, 0x1), (0x3, 0x1), (0x4, 0xF)]))
def test_dpkt_reads_any_command_and_its_completion_as_rdmaspy_decodes_them(
        nvme_qps: set[int], qid: int, opcode: int, fctype: int, body: bytes, icd: bytes, dw0: int,
        sgl: tuple[int, int] | None) -> None:
    """A command of any opcode (or Fabrics type) with any dwords, SGL1 and in-capsule data, sent on an
    NVMe/RDMA connection's admin or I/O queue, and a completion with its CID: the NVMe classes dpkt reads on
    the QPs bound with the queue (the completion read for its command) are the headers rdmaspy decodes, at
    the same offsets, with the same values."""
    import nvme_build as nb
    capsule = bytearray(bytes([opcode]) + body[:3] + (bytes([fctype]) if opcode == 0x7F else body[3:4]) + body[4:])
    if sgl is not None:
        capsule[nvme.SGL_AT:nvme.SGL_AT + 16] = nb.offset_sgl(0, len(icd), sgl[0]) if sgl[1] == 1 else \
            nb.keyed_sgl(0x1000, 512, 0x77)
    capsule = bytes(capsule) + icd
    assert len(capsule) == nvme.SQE_SIZE + len(icd)
    talk = nb.Conversation(Engine())
    talk.setup(qid=qid)
    rd.bind_nvme_rdma(qp=nb.CTRL_QP, qid=qid)
    nvme_qps.update({nb.CTRL_QP, nb.HOST_QP})
    try:
        sent = talk.host_send(capsule)
        done = talk.ctrl_send(nb.cqe(int.from_bytes(capsule[2:4], "little"), sqid=qid, dw0=dw0))
    finally:
        rd.NVME_RDMA_QIDS.pop(nb.CTRL_QP, None)
    compared = 0
    for pkt in [*sent, done]:
        ours = {k: v for k, v in rdmaspy_layers(pkt).items() if k[1] in _NVME_DECLARED}
        theirs = {k: v for k, v in dpkt_layers(dpkt.ethernet.Ethernet(pkt.frame.data), _nvme_context(pkt)).items()
                  if k[1] in _NVME_DECLARED}
        assert ours.keys() == theirs.keys()
        for key, lay in theirs.items():
            assert lay.values() == tuple(ours[key].values), type(lay).__name__
            compared += 1
    assert compared >= 4        # the SQE's head, SGL1 or a Fabrics part, ...; the completion


NVME_CAPTURES = sorted(p.name for p in CAPTURES.glob("*nvme*.pcap.gz"))


@pytest.mark.parametrize("capture", NVME_CAPTURES)
def test_the_nvme_command_count_of_docs_dpkt_md_is_rdmaspys(capture: str) -> None:
    """The NVMe/RDMA script of docs/dpkt.md (as in docs/examples) counts the commands rdmaspy decodes in
    frame bytes, by name: the queue pairs and queues it learns from the CM exchange read each command for
    its queue."""
    script = EXAMPLES / "nvme_opcodes_dpkt.py"
    assert script.read_text().strip() in (ROOT / "docs" / "dpkt.md").read_text()
    done = subprocess.run([sys.executable, str(script), str(CAPTURES / capture)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, stdin=subprocess.DEVNULL, timeout=600)
    assert done.returncode == 0, done.stderr
    theirs = {line[5:].strip(): int(line[:5]) for line in done.stdout.splitlines()}
    ours: dict[str, int] = {}
    engine = Engine()
    heads = {id(nvme.ADMIN_SQE), id(nvme.IO_SQE), id(nvme.FABRICS_SQE)}
    for frame in open_capture(str(CAPTURES / capture)):
        pkt = engine.dissect(frame)
        names = {c.cid: c.name for c in pkt.noted(nvme.NVME_COMMANDS) or ()}
        for lay in pkt.layers:
            if lay.buf is frame.data and id(lay.header) in heads:
                name = names[int.from_bytes(frame.data[lay.off + 2:lay.off + 4], "little")]
                ours[name] = ours.get(name, 0) + 1
    assert sum(ours.values()) > 50 and theirs == ours
