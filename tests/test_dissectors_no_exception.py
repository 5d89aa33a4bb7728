"""No bytes make a dissector raise, and a cut packet says it is cut.

Every dissector registered in table("linktype") gets random bytes and mutations of real frames
(bit flips, byte overwrites, truncation, extension) through ``Engine(strict=True)``, which lets
any dissector exception through.  Seeds are the frames of every shipped capture and fixture;
link types no capture holds get seeds derived from Ethernet frames (raw IP, Linux SLL/SLL2).
"""
from __future__ import annotations

import struct
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import CAPTURES, FIXTURES
from rdmaspy import craft
from rdmaspy.engine import Engine, load_dissectors
from rdmaspy.packet import Frame
from rdmaspy.readers import open_capture
from rdmaspy.registry import table

load_dissectors()
LINKTYPES = sorted(table("linktype").by_key)
PER_FILE = 40          # frames taken from each capture: the first ones (handshakes) and a spread of the rest


def _sample(frames: list[Frame]) -> list[Frame]:
    if len(frames) <= PER_FILE:
        return frames
    step = len(frames) // (PER_FILE // 2)
    return frames[:PER_FILE // 2] + frames[PER_FILE // 2::step]


@lru_cache(maxsize=1)
def seeds() -> dict[int, list[bytes]]:
    by_lt: dict[int, list[bytes]] = {}
    paths = sorted(CAPTURES.glob("*.pcap*")) + sorted(FIXTURES.glob("*.pcap*"))
    for p in paths:
        try:
            with open_capture(str(p)) as cap:
                frames = list(cap)
        except Exception:     # a fixture that is deliberately not a capture
            continue
        for fr in _sample(frames):
            by_lt.setdefault(fr.linktype, []).append(fr.data)
    eth = by_lt.get(1, [])
    ip4 = [d[14:] for d in eth if d[12:14] == b"\x08\x00"]
    ip6 = [d[14:] for d in eth if d[12:14] == b"\x86\xdd"]
    derived = {
        101: ip4[:20] + ip6[:20], 12: ip4[:10] + ip6[:10], 14: ip4[:10], 228: ip4[:20], 229: ip6[:20],
        113: [struct.pack(">HHH8sH", 0, 1, 6, d[6:12] + b"\0\0", int.from_bytes(d[12:14], "big")) + d[14:]
              for d in eth[:30]],
        276: [struct.pack(">HHIHBB8s", int.from_bytes(d[12:14], "big"), 0, 2, 1, 0, 6, d[6:12] + b"\0\0") + d[14:]
              for d in eth[:30]],
    }
    for lt, extra in derived.items():
        if not by_lt.get(lt):
            by_lt[lt] = extra
    return by_lt


def _dissect(engine: Engine, linktype: int, data: bytes):
    return engine.dissect(Frame(1, 0, linktype, data, len(data)))


def test_every_linktype_has_seeds() -> None:
    s = seeds()
    assert {1, 247, 197} <= set(LINKTYPES)
    for lt in LINKTYPES:
        assert s.get(lt), f"no seed frames for link type {lt}"


@pytest.mark.parametrize("linktype", LINKTYPES)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=400))
def test_random_bytes(linktype: int, data: bytes) -> None:
    _dissect(Engine(strict=True), linktype, data)


@st.composite
def mutated(draw, linktype: int) -> bytes:
    base = bytearray(draw(st.sampled_from(seeds()[linktype])))
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(("flip", "byte", "cut", "extend", "zero")))
        if not base and kind != "extend":
            kind = "extend"
        if kind == "flip":
            pos = draw(st.integers(0, len(base) * 8 - 1))
            base[pos // 8] ^= 0x80 >> (pos % 8)
        elif kind == "byte":
            base[draw(st.integers(0, len(base) - 1))] = draw(st.integers(0, 255))
        elif kind == "zero":
            pos = draw(st.integers(0, len(base) - 1))
            base[pos:pos + 4] = b"\0" * len(base[pos:pos + 4])
        elif kind == "cut":
            del base[draw(st.integers(0, len(base))):]
        else:
            base += draw(st.binary(min_size=1, max_size=64))
    return bytes(base)


@pytest.mark.parametrize("linktype", LINKTYPES)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_real_frames(linktype: int, data) -> None:
    _dissect(Engine(strict=True), linktype, data.draw(mutated(linktype)))


# --- truncation ---------------------------------------------------------------------------------------------
TRUNCATION_CASES = {
    "rocev2-ipv4-write": (lambda: craft.rocev2(0x06, 0x11, 1, b"x" * 33, va=1, r_key=2, dma_length=33), 1),
    "rocev2-ipv6-atomic": (lambda: craft.rocev2(0x13, 0x11, 1, ip="6", src="::1", dst="::2", va=8, r_key=2,
                                                swap_or_add_data=3, compare_data=4), 1),
    "rocev2-cnp": (lambda: craft.rocev2(0x81, 0x11, 0, becn=1), 1),
    "rocev2-ud-mad": (lambda: craft.rocev2_mad(bytes([1, 7, 2, 3]) + bytes(252)), 1),
    "rocev1-ack": (lambda: craft.rocev1(0x11, 0x11, 5, syndrome=0x60, msn=9), 1),
    "native-local": (lambda: craft.native_ib(0x0A, 0x11, 1, b"abcdefg", va=1, r_key=2, dma_length=7), 247),
    "native-global": (lambda: craft.native_ib(0x64, 0xFFFFFF, 1, bytes(60), grh=True, q_key=0xB, src_qp=3), 247),
}


@pytest.mark.parametrize("name", sorted(TRUNCATION_CASES))
def test_every_cut_is_malformed_with_a_reason(name: str) -> None:
    build, linktype = TRUNCATION_CASES[name]
    data = build()
    engine = Engine(strict=True)
    full = _dissect(engine, linktype, data)
    assert full.malformed is None and full.ib is not None and full.ib.icrc_ok is True
    for cut in range(len(data)):
        pkt = _dissect(engine, linktype, data[:cut])
        assert pkt.malformed, f"{name}: cut at {cut} of {len(data)} bytes is not marked malformed"
        assert "truncated" in pkt.malformed or "does not fit" in pkt.malformed, f"{name} @{cut}: {pkt.malformed}"
