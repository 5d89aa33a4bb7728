"""The extended headers each opcode carries, and what the summary line says.

The expected plans are written out here from IBTA vol. 1 (9.2, table 38), Linux's
drivers/infiniband/sw/rxe/rxe_opcode.c (XRC, FLUSH: FETH before RETH) and Wireshark's
packet-infiniband.c (RD FLUSH 0x5C and ATOMIC WRITE 0x5D), not derived from the code under test.
"""
from __future__ import annotations

import pytest

from rdmaspy import craft
from rdmaspy.dissectors import infiniband as ib
from rdmaspy.engine import Engine
from rdmaspy.packet import Frame

# operation -> headers after the BTH (connected transports, requests and responses alike)
BASE = {
    0: "", 1: "", 2: "", 3: "immdt", 4: "", 5: "immdt",
    6: "reth", 7: "", 8: "", 9: "immdt", 10: "reth", 11: "reth immdt",
    12: "reth", 13: "aeth", 14: "", 15: "aeth", 16: "aeth", 17: "aeth", 18: "aeth atomicacketh",
    19: "atomiceth", 20: "atomiceth", 22: "ieth", 23: "ieth", 28: "feth reth", 29: "reth",
}
RESPONSES = {13, 14, 15, 16, 17, 18}


def expected_plans() -> dict[int, str]:
    exp: dict[int, str] = {}
    for op in list(range(21)) + [22, 23, 28, 29]:                       # RC
        exp[op] = BASE[op]
    for op in range(12):                                                # UC
        exp[0x20 | op] = BASE[op]
    for op in list(range(21)) + [28, 29]:                               # RD: RDETH always, DETH on requests
        exp[0x40 | op] = ("rdeth " if op in RESPONSES else "rdeth deth ") + BASE[op]
    exp[0x40 | 21] = "rdeth deth"                                       # RD RESYNC
    exp[0x64] = "deth"                                                  # UD SEND Only
    exp[0x65] = "deth immdt"                                            # UD SEND Only with Immediate
    for op in list(range(21)) + [22, 23]:                               # XRC: XRCETH on requests
        exp[0xA0 | op] = ("" if op in RESPONSES else "xrceth ") + BASE[op]
    exp[0x81] = "cnp"
    return {k: " ".join(v.split()) for k, v in exp.items()}


def test_every_opcode_has_the_expected_plan() -> None:
    exp = expected_plans()
    for op in range(256):
        plan = ib.PLANS[op]
        if op in exp:
            assert plan.valid, hex(op)
            assert " ".join(h.name for h in plan.exts) == exp[op], f"0x{op:02x} {plan.name}"
        else:
            assert not plan.valid and plan.exts == (), hex(op)
    assert len(exp) == 25 + 12 + 24 + 2 + 23 + 1


def test_feth_layout() -> None:
    """FETH: 26 reserved bits, SEL (2 bits), PLT (4 bits), as rxe_hdr.h masks them (PLT bits 3-0, SEL 5-4)."""
    raw = ib.FETH.encode(sel=2, plt=1)
    assert int.from_bytes(raw, "big") == (2 << 4) | 1


def _dissect(data: bytes, linktype: int = 1):
    return Engine(strict=True).dissect(Frame(1, 0, linktype, data, len(data)))


@pytest.mark.parametrize("build,info", [
    (lambda: craft.rocev2(0x06, 0x11, 5123, b"x" * 1024, va=0x7F0012345678, r_key=0x1234, dma_length=8192),
     "RC RDMA WRITE First QP=0x000011 PSN=5123 VA=0x7f0012345678 R_Key=0x00001234 Len=8192"),
    (lambda: craft.rocev2(0x11, 0x11, 9, syndrome=0x60, msn=3), "RC Acknowledge QP=0x000011 PSN=9 NAK PSN Sequence Error"),
    (lambda: craft.rocev2(0x11, 0x11, 9, syndrome=0x61), "NAK Invalid Request"),
    (lambda: craft.rocev2(0x11, 0x11, 9, syndrome=0x62), "NAK Remote Access Error"),
    (lambda: craft.rocev2(0x11, 0x11, 9, syndrome=0x63), "NAK Remote Operational Error"),
    (lambda: craft.rocev2(0x51, 0x11, 9, syndrome=0x64), "RD Acknowledge QP=0x000011 PSN=9 NAK Invalid RD Request"),
    (lambda: craft.rocev2(0x11, 0x11, 9, syndrome=0x20 | 14), "RNR NAK timer=1.28ms"),
    (lambda: craft.rocev2(0x11, 0x11, 9, syndrome=0x20), "RNR NAK timer=655.36ms"),
    (lambda: craft.rocev2(0x11, 0x11, 9, syndrome=0x1F), "ACK (credits invalid)"),
    (lambda: craft.rocev2(0x81, 0x11, 0, becn=1), "CNP QP=0x000011 PSN=0 [BECN]"),
    (lambda: craft.rocev2(0x05, 0x11, 1, b"hi", imm=0xDEADBEEF), "RC SEND Only with Immediate QP=0x000011 PSN=1 Imm=0xdeadbeef"),
    (lambda: craft.rocev2(0x17, 0x11, 1, b"hi", r_key=0xCAFE), "RC SEND Only with Invalidate QP=0x000011 PSN=1 Inv R_Key=0x0000cafe"),
    (lambda: craft.rocev2(0xA4, 0x11, 1, b"hi", xrcsrq=5), "XRC SEND Only QP=0x000011 PSN=1"),
    (lambda: craft.rocev2(0x55, 0x11, 1), "RD RESYNC QP=0x000011 PSN=1"),
    (lambda: craft.rocev2(0x1C, 0x11, 1, sel=1, plt=2, va=4096, r_key=1, dma_length=0), "RC FLUSH QP=0x000011 PSN=1"),
    (lambda: craft.rocev2(0x1D, 0x11, 1, b"12345678", va=4096, r_key=1, dma_length=8), "RC ATOMIC WRITE"),
])
def test_summary_lines(build, info: str) -> None:
    pkt = _dissect(build())
    assert info in pkt.info_text
    assert pkt.malformed is None


def test_aeth_items() -> None:
    aeth = _dissect(craft.rocev2(0x11, 0x11, 9, syndrome=0x20 | 14, msn=77)).layer("aeth")
    assert aeth["aeth.type"] == 1 and aeth["aeth.rnr_timer"] == 14 and aeth["aeth.rnr_ms"] == 1.28
    assert aeth["msn"] == 77
    aeth = _dissect(craft.rocev2(0x11, 0x11, 9, syndrome=0x63)).layer("aeth")
    assert aeth["aeth.type"] == 3 and aeth["aeth.nak"] == 3
    aeth = _dissect(craft.rocev2(0x11, 0x11, 9, syndrome=0x0A)).layer("aeth")
    assert aeth["aeth.type"] == 0 and aeth["aeth.credit"] == 10


def test_pad_bytes_are_removed_from_the_payload() -> None:
    for n in range(9):
        payload = bytes(range(1, n + 1))
        pkt = _dissect(craft.rocev2(0x04, 0x11, 1, payload))
        data = pkt.frame.data
        assert data[pkt.ib.payload_off:pkt.ib.payload_end] == payload
        assert pkt.ib.padcnt == -n & 3
        assert pkt.layer("bth")["ib.payload_len"] == n
        if pkt.ib.padcnt:
            assert pkt.layer("bth")["ib.pad"] == bytes(pkt.ib.padcnt)


def test_reserved_opcode_is_malformed() -> None:
    data = bytearray(craft.rocev2(0x04, 0x11, 1, b"abcd"))
    data[42] = 0x15            # RC operation 21 (RESYNC) exists only for RD
    pkt = _dissect(bytes(data))
    assert pkt.malformed and "reserved for RC" in pkt.malformed


@pytest.mark.parametrize("opcode,kw,cut,what", [
    (0x0A, dict(va=1, r_key=2, dma_length=3), 10, "reth"),
    (0x13, dict(va=1), 20, "atomiceth"),
    (0x64, dict(q_key=1), 4, "deth"),
    (0x81, {}, 8, "cnp"),
])
def test_truncated_extended_headers_are_malformed(opcode, kw, cut, what) -> None:
    """A header the opcode promises but the bytes do not hold: malformed, with the header's name."""
    full = craft.transport(opcode, 0x11, 1, **kw)
    short = full[:12 + cut]
    frame = craft.rocev2(0x04, 0x11, 1)     # rebuild around the cut transport part with a fresh ICRC
    ip_udp = frame[:42]
    data = bytearray(ip_udp + short + b"\0\0\0\0")
    data[16:18] = (len(data) - 14).to_bytes(2, "big")
    data[38:40] = (len(data) - 34).to_bytes(2, "big")
    pkt = _dissect(bytes(data))
    assert pkt.malformed is not None and pkt.malformed.startswith(f"{what}: truncated"), pkt.malformed


def test_truncated_bth_and_lrh() -> None:
    pkt = _dissect(craft.native_ib(0x04, 0x11, 1, b"abcd")[:5], 247)
    assert pkt.malformed.startswith("lrh: truncated")
    data = craft.rocev2(0x04, 0x11, 1, b"abcd")
    pkt = _dissect(data[:42 + 10])
    assert pkt.malformed is not None
    g = craft.rocev1(0x04, 0x11, 1)
    pkt = _dissect(g[:14 + 30])
    assert pkt.malformed.startswith("grh: truncated")


def test_heads_of_interleaved_flows_name_each_packets_own_opcode_and_qp() -> None:
    # three (opcode, QP) pairs in turn and back: more than the two the head texts are kept for at hand
    engine = Engine(strict=True)
    order = [(0x04, 0x11), (0x11, 0x12), (0x04, 0x13), (0x11, 0x12), (0x04, 0x11), (0x04, 0x13), (0x04, 0x11)]
    for num, (opcode, qp) in enumerate(order * 2, 1):
        data = craft.rocev2(opcode, qp, num, b"abcd") if opcode == 0x04 else craft.rocev2(opcode, qp, num, syndrome=0)
        info = engine.dissect(Frame(num, 0, 1, data, len(data))).info_text
        name = "RC SEND Only" if opcode == 0x04 else "RC Acknowledge"
        assert info.startswith(f"{name} QP=0x{qp:06x} PSN={num}")


def test_an_observer_of_one_kind_of_operation_sees_that_kind_alone() -> None:
    seen: list[tuple[int, str]] = []

    def observe(pkt, info, ctx) -> None:
        seen.append((pkt.frame.num, info.plan.kind))
    ib.bth_kind_observers.setdefault("ack", []).append(observe)
    try:
        engine = Engine(strict=True)
        for num, data in enumerate([craft.rocev2(0x04, 0x11, 1, b"abcd"), craft.rocev2(0x11, 0x11, 1, syndrome=0),
                                    craft.rocev2(0x0A, 0x11, 2, b"x", va=4096, r_key=1, dma_length=1)], 1):
            engine.dissect(Frame(num, 0, 1, data, len(data)))
    finally:
        ib.bth_kind_observers["ack"].remove(observe)
    assert seen == [(2, "ack")]
