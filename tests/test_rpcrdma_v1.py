"""RPC-over-RDMA v1: each sample XDR of seeds/002 built, checked word by word, decoded; the message shapes.

The expected words are written out here from the slides ("X 1 C R 1 PHLOO 0 0 0 | ..."), not
produced by the encoder under test; the encoder must reproduce them, the decoder must read them.
"""
from __future__ import annotations

import importlib.util

import pytest

from conftest import FIXTURES
from rdmaspy import craft
from rdmaspy.dissectors import onc_rpc, rpcrdma
from rdmaspy.dissectors.xdr import p32
from rdmaspy.engine import Engine
from rdmaspy.packet import Frame

X, C = 0x1A2B3C4D, 128
H1, L1, O1 = 0x1001, 8192, 0x7F0000001000
H2, L2, O2 = 0x1002, 4096, 0x7F0000003000


def hloo(h: int, ln: int, o: int) -> list[int]:
    return [h, ln, o >> 32, o & 0xFFFFFFFF]


def words(ws: list[int]) -> bytes:
    return p32(*ws)


CALL = onc_rpc.encode_call(X, 100003, 3, 7, b"\0" * 8)

# seeds/002 "SAMPLE XDR": name -> (the words of the slide, what the encoder is asked for, payload)
SAMPLES = {
    "pure inline": ([X, 1, C, 0, 0, 0, 0], dict(proc=0), CALL),
    "call with a Read list": ([X, 1, C, 0, 1, 132, *hloo(H1, L1, O1), 0, 0, 0],
                              dict(proc=0, reads=[(132, H1, L1, O1)]), CALL),
    "call with a Write list": ([X, 1, C, 0, 0, 1, 2, *hloo(H1, L1, O1), *hloo(H2, L2, O2), 0, 0],
                               dict(proc=0, writes=[[(H1, L1, O1), (H2, L2, O2)]]), CALL),
    "call with Reply chunk": ([X, 1, C, 0, 0, 0, 1, 2, *hloo(H1, L1, O1), *hloo(H2, L2, O2)],
                              dict(proc=0, reply=[(H1, L1, O1), (H2, L2, O2)]), CALL),
    "call with Position Zero Read chunk": ([X, 1, C, 1, 1, 0, *hloo(H1, L1, O1), 1, 0, *hloo(H2, L2, O2), 0, 0, 0],
                                           dict(proc=1, reads=[(0, H1, L1, O1), (0, H2, L2, O2)]), b""),
    "reply with Reply chunk": ([X, 1, C, 1, 0, 0, 1, 2, *hloo(H1, L1, O1), *hloo(H2, L2, O2)],
                               dict(proc=1, reply=[(H1, L1, O1), (H2, L2, O2)]), b""),
    "error: unsupported version": ([X, 1, C, 4, 1, 1, 1], dict(proc=4, errcode=1, vers_low=1, vers_high=1), b""),
    "error: any other": ([X, 1, C, 4, 2], dict(proc=4, errcode=2), b""),
}


def decode(frames: list[bytes]):
    eng = Engine(strict=True)
    return [eng.dissect(Frame(i + 1, 1_000_000 * i, 1, f, len(f))) for i, f in enumerate(frames)]


def send(payload: bytes, src: str = "192.0.2.10", dst: str = "192.0.2.20", psn: int = 1) -> bytes:
    return craft.rocev2(0x04, 0x22, psn, payload, src=src, dst=dst)


@pytest.mark.parametrize("name", list(SAMPLES))
def test_seed_sample_is_encoded_word_for_word(name):
    ws, kw, payload = SAMPLES[name]
    assert rpcrdma.encode_v1(X, credits=C, payload=payload, **kw) == words(ws) + payload


@pytest.mark.parametrize("name", list(SAMPLES))
def test_seed_sample_decodes(name):
    ws, kw, payload = SAMPLES[name]
    (pkt,) = decode([send(words(ws) + payload)])
    assert pkt.malformed is None, pkt.malformed
    msg = pkt.extra["rpcrdma"]
    assert (msg.version, msg.xid, msg.credits, msg.proc) == (1, X, C, kw["proc"])
    lay = pkt.layer("rpcrdma")
    assert lay["rpcrdma.xid"] == X and lay["rpcrdma.proc"] == kw["proc"]
    assert [(s.position, s.handle, s.length, s.offset) for s in msg.reads] == list(kw.get("reads", []))
    assert [[(s.handle, s.length, s.offset) for s in c] for c in msg.writes] == kw.get("writes", [])
    reply = kw.get("reply")
    assert (msg.reply is None) == (reply is None)
    if reply is not None:
        assert [(s.handle, s.length, s.offset) for s in msg.reply] == reply
    if kw["proc"] == 4:
        assert msg.errcode == kw["errcode"]
        if kw["errcode"] == 1:
            assert (msg.vers_low, msg.vers_high) == (1, 1)
    if payload:
        assert msg.rpc is not None and msg.rpc.xid == X and msg.rpc.proc == 7
        assert pkt.layer("rpc")["rpc.xid"] == X


def test_position_zero_segments_form_one_chunk():
    ws, kw, _ = SAMPLES["call with Position Zero Read chunk"]
    (pkt,) = decode([send(words(ws))])
    msg = pkt.extra["rpcrdma"]
    assert [(pos, [s.handle for s in segs]) for pos, segs in msg.read_chunks] == [(0, [H1, H2])]
    assert msg.shape == "Special call (Position Zero Read chunk)"
    assert "reads=1 chunk(pos 0, 2 segs 12288B)" in pkt.info_text


def test_read_segments_group_by_position():
    body = rpcrdma.encode_v1(X, 0, C, reads=[(100, 1, 10, 0), (100, 2, 20, 0), (200, 3, 30, 0)], payload=CALL)
    (pkt,) = decode([send(body)])
    msg = pkt.extra["rpcrdma"]
    assert [(p, len(s)) for p, s in msg.read_chunks] == [(100, 2), (200, 1)]
    assert pkt.layer("rpcrdma")["rpcrdma.read_chunks"] == 2


def test_decode_line_names_the_chunks_and_the_rpc():
    reduced = onc_rpc.encode_call(0x1A2B, 100003, 3, 7, p32(0))
    body = rpcrdma.encode_v1(0x1A2B, 0, 128, reads=[(132, 0xAB, 8192, 0x1000)], payload=reduced)
    (pkt,) = decode([send(body)])
    assert pkt.info_text == ("RPC-over-RDMA v1 RDMA_MSG xid=0x00001a2b credits=128 reads=1 "
                             "chunk(pos 132, 1 seg 8192B) | NFSv3 WRITE Call")


def test_xid_mismatch_is_not_taken_by_the_heuristic():
    other = onc_rpc.encode_call(X + 1, 100003, 3, 0)
    (pkt,) = decode([send(rpcrdma.encode_v1(X, 0, C, payload=other))])
    assert pkt.layer("rpcrdma") is None and pkt.layer("data") is not None


@pytest.mark.parametrize("body", [
    p32(X, 1, C, 5),                        # no procedure 5
    p32(X, 3, C, 0, 0, 0, 0),               # version 3
    p32(X, 1, C, 1, 0, 0, 0),               # NOMSG without any chunk
    p32(X, 1, C, 3, 0),                     # RDMA_DONE with trailing bytes
    p32(X, 1, C, 0, 2, 0, 0) + CALL,        # a list discriminator of 2
    b"\0" * 40,
])
def test_heuristic_rejects(body):
    (pkt,) = decode([send(body)])
    assert pkt.layer("rpcrdma") is None


def test_segment_count_beyond_the_message_is_malformed_not_allocated():
    # a Write chunk claiming 2^32-1 segments in a 60-byte message, handed to the port dissector
    body = p32(X, 1, C, 0, 0, 1, 0xFFFFFFFF) + b"\0" * 32
    msg, err = rpcrdma.parse_v1(body, 0, len(body))
    assert err is not None and "segment count" in err and msg is not None and msg.writes == []


def test_fixture_shapes_and_rebuilt_messages():
    pkts = decode([f for f in _frames("v1_shapes")])
    shapes = {}
    rebuilt = {}
    for p in pkts:
        extra = p.extra or {}
        if "rpcrdma" in extra:
            m = extra["rpcrdma"]
            shapes.setdefault(m.xid, []).append(m.shape)
        if "rpcrdma.rebuilt" in extra:
            m = extra["rpcrdma.rebuilt"]
            rebuilt[m.xid] = (p.frame.num, m.rebuilt_frames, m.rebuilt_rpc)
        assert p.malformed is None, (p.frame.num, p.malformed)
    assert shapes[0x100] == ["pure inline", "pure inline"]
    assert shapes[0x101] == ["reduced call (Read list)", "pure inline"]
    assert shapes[0x102] == ["call with Write list", "reply with Write list"]
    assert shapes[0x103] == ["call with Reply chunk", "Special reply (Reply chunk)"]
    assert shapes[0x104] == ["Special call (Position Zero Read chunk)", "pure inline"]
    assert shapes[0x107] == ["pure inline", "responder-provided Read chunk reply", "pull completion (RDMA_DONE)"]
    # the WRITE call rebuilt from its reduced SEND (frame 3) and three READ responses
    num, frames, rpc = rebuilt[0x101]
    assert (num, frames) == (7, [3, 5, 6, 7]) and rpc.proc == 7 and rpc.msgtype == 0
    assert rpc.length == pkts[2].extra["rpcrdma"].rpc.length + 2500 + (-2500 % 4)
    assert [(d.kind, d.inline, d.length) for d in rpc.ddp] == [("write_data", True, 2500)]
    # the READDIR reply rebuilt from the two WRITEs into its Reply chunk
    num, frames, rpc = rebuilt[0x103]
    assert (num, frames) == (16, [14, 15]) and rpc.msgtype == 1 and rpc.proc == 16 and rpc.call_frame == 13
    # the Special call and the responder-provided reply, both pulled by RDMA READ
    assert rebuilt[0x104][0] == 21 and rebuilt[0x104][2].proc == 10
    assert rebuilt[0x104][2].ddp[0].kind == "symlink" and rebuilt[0x104][2].ddp[0].inline
    assert rebuilt[0x107][0] == 28 and rebuilt[0x107][2].msgtype == 1
    # the reduced WRITE call names its DDP item at the Read chunk's position
    reduced = pkts[2].extra["rpcrdma"]
    assert [(d.kind, d.position, d.inline) for d in reduced.rpc.ddp] == [("write_data", 132, False)]
    assert reduced.read_chunks[0][0] == 132
    # the READ reply's data went into the Write chunk: not inline, the chunk's WRITE frames noted
    rmsg = pkts[11].extra["rpcrdma"]
    assert [(d.kind, d.inline, d.length) for d in rmsg.rpc.ddp] == [("read_data", False, 1500)]
    assert rmsg.rebuilt_frames == [10, 11]
    # ... and the whole reply rebuilt in its own frame with the data put back (padded) at that item
    assert rmsg.rebuilt_frame == 12 and rmsg.rebuilt_rpc.length == rmsg.rpc.length + 1500 + (-1500 % 4)
    assert [(d.kind, d.inline, d.length) for d in rmsg.rebuilt_rpc.ddp] == [("read_data", True, 1500)]
    data = bytes((i * 3) & 0xFF for i in range(1500))
    pos = rmsg.rpc.ddp[0].position
    assert pkts[11].layer("rpcrdma.rebuilt").buf[pos:pos + 1500] == data
    # SEND First/Middle/Last reassembled before the transport header was read
    big = pkts[31].extra["rpcrdma"]
    assert big.frames == [30, 31, 32] and big.rpc.proc == 7 and big.rpc.ddp[0].inline
    # RDMA_MSGP
    assert pkts[33].extra["rpcrdma"].proc == 2 and pkts[33].extra["rpcrdma"].align == 4


def _frames(which: str) -> list[bytes]:
    spec = importlib.util.spec_from_file_location("rpcrdma_build", FIXTURES / "rpcrdma_build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, which)()


def test_committed_fixtures_are_what_the_builder_makes(tmp_path):
    spec = importlib.util.spec_from_file_location("rpcrdma_build", FIXTURES / "rpcrdma_build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for path in mod.build(tmp_path):
        assert path.read_bytes() == (FIXTURES / path.name).read_bytes(), path.name


def test_port_dissector_decodes_other_versions_as_unknown():
    pkt = Frame(1, 0, 1, b"", 0)
    from rdmaspy.packet import Packet
    from rdmaspy.engine import Session
    p = Packet(pkt)
    body = p32(X, 7, C, 0)
    rpcrdma.dissect_rpcrdma(p, body, 0, len(body), Session())
    assert p.extra["rpcrdma"].version == 7 and any("version 7" in e.text for e in p.expert)
