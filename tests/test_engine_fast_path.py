"""The fused fast paths (RoCEv2; TCP over IPv4) must give exactly what the general dissector chain gives."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from rdmaspy.craft import rocev2
from rdmaspy.engine import Engine
from rdmaspy.output.jsonout import packet_object
from rdmaspy.output.text import summary_line
from rdmaspy.packet import Frame
from rdmaspy.readers import open_capture

from conftest import CAPTURES, FIXTURES


def _same(frames) -> int:
    fast, slow = Engine(strict=True), Engine(strict=True, fast_paths=False)
    taken = 0
    for f in frames:
        a, b = fast.dissect(f), slow.dissect(f)
        assert summary_line(a, 0) == summary_line(b, 0), f.num
        assert packet_object(a, 0) == packet_object(b, 0), f.num
        assert (a.ib is None) == (b.ib is None)
        taken += 1
    return taken


@pytest.mark.parametrize("path", sorted(CAPTURES.glob("*.pcap")) + sorted(FIXTURES.glob("*.pcap*")),
                         ids=lambda p: p.name)
def test_fast_path_equals_the_dissector_chain_on_every_capture(path):
    with open_capture(str(path)) as cap:
        assert _same(cap) >= 1


def _frame(data: bytes, num: int = 1) -> Frame:
    return Frame(num, 0, 1, data, len(data))


@pytest.mark.parametrize("mutate", [
    lambda b: b[:14] + bytes([0x46]) + b[15:],                 # IPv4 options announced
    lambda b: b[:20] + bytes([0x20]) + b[21:],                 # more fragments
    lambda b: b[:16] + (9999).to_bytes(2, "big") + b[18:],     # total length beyond the frame
    lambda b: b[:38] + (4).to_bytes(2, "big") + b[40:],        # UDP length below 8
    lambda b: b[:60],                                          # cut short
    lambda b: b + b"\0" * 6,                                   # Ethernet padding after the IP datagram
    lambda b: b[:36] + (4792).to_bytes(2, "big") + b[38:],     # another UDP port
], ids=["options", "fragment", "total-too-long", "udp-short", "cut", "padding", "other-port"])
def test_unusual_frames_give_the_same_result_either_way(mutate):
    base = rocev2(0x0A, destqp=0x11, psn=7, va=0x1000, r_key=0x22, dma_length=8, payload=b"12345678")
    assert _same([_frame(base), _frame(mutate(base), 2)]) == 2


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 0xFF), st.integers(0, 0xFFFFFF), st.integers(0, 0xFFFFFFFF), st.integers(0, 0xFFFFFF))
def test_the_aeth_and_deth_read_by_word_are_what_their_declarations_decode(syndrome, msn, q_key, src_qp):
    """The per-packet path reads AETH and DETH as 32-bit words at the positions their declarations give
    (their declared decoders are Python functions): an ACK's (syndrome, MSN) and a UD packet's source QP
    are what AETH.decode and DETH.decode read from the same bytes (run compiled too)."""
    from rdmaspy.dissectors.infiniband import AETH, DETH
    ack = Engine(strict=True).dissect(_frame(rocev2(0x11, 0x12, 7, syndrome=syndrome, msn=msn)))
    assert ack.ib.aeth == AETH.decode(ack.frame.data, ack.ib.bth_off + 12) == (syndrome, msn)
    ud = Engine(strict=True).dissect(_frame(rocev2(0x64, 0x12, 7, b"x" * 8, q_key=q_key, src_qp=src_qp)))
    deth = DETH.decode(ud.frame.data, ud.ib.bth_off + 12)
    assert ud.ib.deth_srcqp == deth[DETH.index["src_qp"]] == src_qp


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=12, max_size=12))
def test_the_bth_read_as_three_words_is_what_its_declaration_decodes(bth):
    """The per-packet path reads the BTH as three 32-bit words and takes each fact at the position the
    declaration gives; every fact, for any twelve bytes (reserved opcodes and bits included), is what
    BTH.decode reads from the same bytes (run compiled too)."""
    from rdmaspy.dissectors.infiniband import BTH
    base = rocev2(0x04, destqp=0x11, psn=7, payload=bytes(64))
    data = base[:42] + bth + base[54:]
    pkt = Engine(strict=True).dissect(_frame(data))
    ib = pkt.ib
    want = dict(zip([f.name.rsplit(".", 1)[-1] for f in BTH.fields], BTH.decode(data, 42)))
    assert ib.bth_off == 42 and ib.opcode == want["opcode"]
    assert (ib.pkey, ib.destqp, ib.psn) == (want["p_key"], want["destqp"], want["psn"])
    assert (ib.se, ib.migreq, ib.padcnt, ib.tver) == (want["se"], want["m"], want["padcnt"], want["tver"])
    assert (ib.fecn, ib.becn, ib.ackreq) == (want["fecn"], want["becn"], want["ackreq"])
    assert ib.words == BTH.words().unpack_from(data, 42)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**64 - 1), st.integers(0, 0xFFFFFFFF), st.integers(0, 0xFFFFFFFF), st.integers(0, 0xFFFFFFFF))
def test_the_reth_immdt_and_ieth_read_by_word_are_what_their_declarations_decode(va, r_key, dma_length, word):
    """RETH (with a 64-bit VA: kernel addresses are above 2**63), ImmDt and IETH are read as words on the
    per-packet path; they are what RETH.decode, IMMDT.decode and IETH.decode read from the same bytes."""
    from rdmaspy.dissectors.infiniband import IETH, IMMDT, RETH
    wr = Engine(strict=True).dissect(_frame(rocev2(0x0A, 0x12, 7, b"x" * 8, va=va, r_key=r_key, dma_length=dma_length)))
    assert wr.ib.reth == RETH.decode(wr.frame.data, wr.ib.bth_off + 12) == (va, r_key, dma_length)
    imm = Engine(strict=True).dissect(_frame(rocev2(0x05, 0x12, 7, b"x" * 8, imm=word)))
    assert imm.ib.imm == IMMDT.decode(imm.frame.data, imm.ib.bth_off + 12)[0] == word
    inv = Engine(strict=True).dissect(_frame(rocev2(0x17, 0x12, 7, b"x" * 8, ieth={"r_key": word})))
    assert inv.ib.ieth == IETH.decode(inv.frame.data, inv.ib.bth_off + 12)[0] == word


def _tcp_frames(limit: int = 40) -> list[bytes]:
    """Ethernet frames of TCP over IPv4 from a real soft-iWARP capture (MPA, DDP, RDMAP, acknowledgements)."""
    with open_capture(str(CAPTURES / "siw-rping.pcap")) as cap:
        frames = [f.data for f in cap if f.data[12:14] == b"\x08\x00" and f.data[23] == 6]
    assert len(frames) > 10
    return frames[:limit]


@pytest.mark.parametrize("mutate", [
    lambda b: b[:14] + bytes([0x46]) + b[15:],                 # IPv4 options announced
    lambda b: b[:20] + bytes([0x20]) + b[21:],                 # more fragments
    lambda b: b[:16] + (9999).to_bytes(2, "big") + b[18:],     # total length beyond the frame
    lambda b: b[:16] + (39).to_bytes(2, "big") + b[18:],       # total length shorter than two headers
    lambda b: b[:46] + bytes([0x40]) + b[47:],                 # TCP data offset below 20 bytes
    lambda b: b[:46] + bytes([0xF0]) + b[47:],                 # TCP data offset beyond the segment
    lambda b: b[:53],                                          # cut short
    lambda b: b + b"\0" * 6,                                   # Ethernet padding after the IP datagram
    lambda b: b[:12] + b"\x81\x00\x00\x05" + b[12:],           # a VLAN tag
], ids=["options", "fragment", "total-too-long", "total-too-short", "tcp-offset-short", "tcp-offset-long", "cut",
        "padding", "vlan"])
def test_unusual_tcp_frames_give_the_same_result_either_way(mutate):
    frames = _tcp_frames()
    assert _same([_frame(d, i) for i, d in enumerate(frames, 1)] +
                 [_frame(mutate(d), len(frames) + i) for i, d in enumerate(frames, 1)]) == 2 * len(frames)


def test_tcp_frames_take_the_fast_path_and_make_their_lower_layers_when_read():
    engine = Engine(strict=True)
    for num, data in enumerate(_tcp_frames(), 1):
        pkt = engine.dissect(_frame(data, num))
        assert [lay.proto for lay in pkt.made_layers()][:1] == ["tcp"]      # Ethernet and IPv4 left unmade
        assert [lay.proto for lay in pkt.layers][:3] == ["eth", "ip", "tcp"]
