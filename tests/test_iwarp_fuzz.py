"""iWARP and TCP stream dissection never raise (Engine(strict=True)) and never trust a length from the wire:
random TCP payloads, random bytes inside known iWARP connections (with and without markers and CRC),
mutated FPDUs, lost segments."""
from __future__ import annotations

import contextlib
import importlib.util

from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import FIXTURES
from rdmaspy.dissectors import iwarp_ddp, iwarp_mpa, tcp_stream
from rdmaspy.engine import Engine, load_dissectors
from rdmaspy.packet import Frame
from rdmaspy.readers import open_capture

_spec = importlib.util.spec_from_file_location("iwarp_build", FIXTURES / "iwarp_build.py")
BUILD = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(BUILD)

FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@contextlib.contextmanager
def only_iwarp():
    """Upper layers (RPC-over-RDMA, RFC 8797 private data) are other modules with their own fuzz tests:
    keep them out so that a failure here is iWARP's."""
    load_dissectors()         # every module registered before the tables are emptied, and in place
    saved = []
    for tab in (iwarp_ddp.rdmacm_port, iwarp_mpa.cm_private_data):
        saved.append((tab, dict(tab.by_key), list(tab.heuristics)))
        tab.by_key.clear()
        tab.heuristics.clear()
    try:
        yield
    finally:
        for tab, keys, heur in saved:
            tab.by_key.clear()
            tab.by_key.update(keys)
            tab.heuristics[:] = heur


def run(frames: list[bytes]) -> tuple[list, Engine]:
    eng = Engine(strict=True)
    out = [eng.dissect(Frame(i + 1, i * 1000, 1, f, len(f))) for i, f in enumerate(frames)]
    return out, eng


def fixture_frames(name: str) -> list[bytes]:
    with open_capture(str(FIXTURES / name)) as cap:
        return [bytes(f.data) for f in cap]


def handshake(markers_crc: bool):
    c = BUILD.Direction(BUILD.CLIENT, 41000, BUILD.SERVER, 7000, 100)
    s = BUILD.Direction(BUILD.SERVER, 7000, BUILD.CLIENT, 41000, 900)
    flags = 0xC0 if markers_crc else 0x10
    rev = 1 if markers_crc else 2
    pd = b"" if markers_crc else BUILD.ird_ord(4, 4)
    frames = c.segments(BUILD.reqrep(True, flags, rev, pd)) + s.segments(BUILD.reqrep(False, flags, rev, pd))
    for d in (c, s):
        d.markers = d.crc = markers_crc
        d.mstart = d.pos
    return frames, c, s


@FUZZ
@given(payload=st.binary(min_size=1, max_size=300), sport=st.integers(1, 65535), dport=st.integers(1, 65535))
def test_random_tcp_payloads_never_raise(payload: bytes, sport: int, dport: int) -> None:
    with only_iwarp():
        run([BUILD.tcp_frame("192.0.2.7", "192.0.2.8", sport, dport, 1, payload)])


@FUZZ
@given(key=st.sampled_from([iwarp_mpa.KEY_REQ, iwarp_mpa.KEY_REP]), flags=st.integers(0, 255),
       rev=st.integers(0, 255), pdlen=st.integers(0, 65535), pd=st.binary(max_size=64))
def test_random_mpa_frames_never_raise(key: bytes, flags: int, rev: int, pdlen: int, pd: bytes) -> None:
    frame = key + bytes([flags, rev]) + pdlen.to_bytes(2, "big") + pd
    with only_iwarp():
        pkts, eng = run([BUILD.tcp_frame("192.0.2.2", "192.0.2.1", 40000, 7000, 1, frame)])
    (d,) = [v for k, v in eng.session.state["iwarp.streams"].items() if k[0][1] == 40000]
    # an incomplete frame waits with only the bytes that came, whatever PD_Length says
    assert len(d.stream.pending) <= len(frame)
    if pdlen > 512:
        assert pkts[0].malformed and len(d.stream.pending) == 0


@FUZZ
@given(chunks=st.lists(st.binary(min_size=1, max_size=200), min_size=1, max_size=8), markers_crc=st.booleans(),
       server_side=st.booleans())
def test_random_bytes_in_a_known_connection_never_raise(chunks, markers_crc: bool, server_side: bool) -> None:
    frames, c, s = handshake(markers_crc)
    d = s if server_side else c
    for ch in chunks:
        frames += d.segments(ch)
    with only_iwarp():
        pkts, eng = run(frames)
    for half in (v.stream for v in eng.session.state["iwarp.streams"].values()):
        assert len(half.pending) <= sum(map(len, chunks))


@FUZZ
@given(ulpdus=st.lists(st.binary(min_size=0, max_size=120), min_size=1, max_size=5), markers_crc=st.booleans(),
       cut=st.integers(1, 200))
def test_fpdus_of_random_ulpdus_never_raise(ulpdus, markers_crc: bool, cut: int) -> None:
    """Well-framed FPDUs whose DDP/RDMAP content is anything, sent in segments of ``cut`` bytes."""
    frames, c, _s = handshake(markers_crc)
    stream = b""
    for u in ulpdus:
        f = c.fpdu(u)
        c.pos += len(f)
        stream += f
    c.pos -= len(stream)
    frames += c.segments(stream, [cut] * (len(stream) // cut + 1))
    with only_iwarp():
        pkts, _ = run(frames)
    fpdus = [lay for p in pkts for lay in p.layers if lay.proto == "mpa" and lay.header is iwarp_mpa.FPDU]
    assert len(fpdus) == len(ulpdus)
    if markers_crc:
        assert all(lay["iwarp.crc.valid"] for lay in fpdus)


MUTABLE = {name: fixture_frames(name) for name in ("iwarp_markers_crc.pcap", "iwarp_stream_cases.pcap")}


@FUZZ
@given(name=st.sampled_from(sorted(MUTABLE)), edits=st.lists(
    st.tuples(st.integers(0, 40), st.integers(54, 1600), st.integers(0, 255)), min_size=1, max_size=12),
    trunc=st.lists(st.tuples(st.integers(0, 40), st.integers(54, 1600)), max_size=3))
def test_mutated_fpdus_never_raise(name: str, edits, trunc) -> None:
    frames = [bytearray(f) for f in MUTABLE[name]]
    for k, pos, val in edits:           # bytes of the TCP payload (after 54 bytes of headers)
        f = frames[k % len(frames)]
        if pos < len(f):
            f[pos] = val
    for k, pos in trunc:
        f = frames[k % len(frames)]
        del f[min(pos, len(f)):]
    with only_iwarp():
        run([bytes(f) for f in frames])


def test_a_huge_ulpdu_length_allocates_nothing() -> None:
    frames, c, _s = handshake(False)
    frames += c.segments(b"\xff\xff\x41\x43" + bytes(20))     # says 65535 bytes follow; 24 came
    with only_iwarp():
        pkts, eng = run(frames)
    d = eng.session.state["iwarp.streams"][((BUILD.CLIENT, 41000), (BUILD.SERVER, 7000))]
    assert len(d.stream.pending) == 24
    assert "continues: 24 of 65544 bytes" in pkts[-1].info_text


def test_untagged_reassembly_is_bounded() -> None:
    asm = iwarp_ddp.UntaggedAssembly()
    for msn in range(1000):
        assert asm.add(0, msn, 0, b"x", False) is None
    assert len(asm.partial) == iwarp_ddp.MAX_PARTIAL_MESSAGES
    assert asm.add(0, 5000, 0xFFFFFFF0, b"y" * 100, False) is None and (0, 5000) not in asm.partial
    assert asm.add(0, 7, 0, b"ab", False) is None
    assert asm.add(0, 7, 3, b"cd", True) is None           # a hole at offset 2: not a message
    for _ in range(100):                                   # the same segment over and over
        asm.add(1, 1, 0, b"z" * 60000, False)
    assert sum(len(d) for _mo, d in asm.partial[(1, 1)]) <= iwarp_ddp.MAX_MESSAGE_BYTES


def test_lost_segment_then_resync_on_the_next_fpdu(monkeypatch) -> None:
    """A segment the capture never had: after the hold limit the gap is reported, the FPDU it cut is
    given up, and the next segment that starts with a plausible FPDU is decoded again."""
    monkeypatch.setattr(tcp_stream, "HOLD_MAX_SEGMENTS", 2)
    frames, c, _s = handshake(False)
    big = c.fpdu(BUILD.tagged(0, 0x10, 0, b"z" * 1000))
    segs = c.segments(big, [400, 400, len(big) - 800])
    frames += [segs[0], segs[2]]                   # the middle one is lost
    for msn in range(1, 4):
        frames += c.segments(c.fpdu(BUILD.untagged(3, 0, msn, 0, b"hello")))
    with only_iwarp():
        pkts, eng = run(frames)
    tail = pkts[2:]
    msns = [i.msn for p in tail for i in (p.extra or {}).get("iwarp", [])]
    assert msns == [1, 2, 3]
    assert any(e.text.endswith("missing from the capture") for p in tail for e in (p.expert or []))
    gaps = [p.layer("tcp_stream")["gap"] for p in tail if p.layer("tcp_stream") and p.layer("tcp_stream").get("gap")]
    assert gaps == [400]
    d = eng.session.state["iwarp.streams"][((BUILD.CLIENT, 41000), (BUILD.SERVER, 7000))]
    assert d.stream.gaps == [(24 + 400, 400)]       # after the 24-byte MPA Request and the first 400 bytes


def test_lost_segment_with_markers_resyncs_by_the_marker_pointer(monkeypatch) -> None:
    """With markers the FPDU pointer of the first marker after the hole locates the FPDU holding it."""
    monkeypatch.setattr(tcp_stream, "HOLD_MAX_SEGMENTS", 2)
    frames, c, _s = handshake(True)
    big = c.fpdu(BUILD.tagged(0, 0x10, 0, b"z" * 1000))
    segs = c.segments(big, [400, 400, len(big) - 800])
    frames += [segs[0], segs[2]]                   # the middle one is lost
    for msn in range(1, 5):
        frames += c.segments(c.fpdu(BUILD.untagged(3, 0, msn, 0, bytes([msn]) * 600)))
    with only_iwarp():
        pkts, _ = run(frames)
    got = [(i.msn, i.crc_ok) for p in pkts[2:] for i in (p.extra or {}).get("iwarp", [])]
    # MSN 1 starts before the first marker after the hole; the marker inside it points at its start
    assert got == [(1, True), (2, True), (3, True), (4, True)]
