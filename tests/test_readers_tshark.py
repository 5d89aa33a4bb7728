"""pcap and pcapng readers against tshark: frames, nanosecond timestamps, lengths, comments, interfaces.

The fixtures are built by tests/fixtures/readers_build.py: pcap in both byte orders and both
resolutions, and pcapng with two sections of opposite byte order, interfaces of four link types
and four clocks (microseconds, nanoseconds, 2^-20 s with an offset, milliseconds), Enhanced,
Simple and obsolete Packet Blocks, one and two comments.  Each is also read gzip-compressed.
"""
from __future__ import annotations

import gzip
import sys

import pytest

from conftest import FIXTURES, capture, tshark_fields
from rdmaspy.readers import open_capture

sys.path.insert(0, str(FIXTURES))
import readers_build as rb  # noqa: E402

PCAPS = ["readers_le_us.pcap", "readers_be_us.pcap", "readers_le_ns.pcap", "readers_be_ns.pcap"]
PCAPNGS = ["readers_multi_le.pcapng", "readers_multi_be.pcapng"]
FIELDS = ["frame.time_epoch", "frame.comment", "frame.interface_id", "frame.len", "frame.cap_len"]


def epoch_ns(text: str) -> int:
    sec, _, frac = text.partition(".")
    return int(sec) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])


def gz_copy(name: str, tmp_path) -> str:
    out = tmp_path / (name + ".gz")
    out.write_bytes(gzip.compress(capture(name).read_bytes()))
    return str(out)


def test_fixtures_are_what_the_builder_writes(tmp_path):
    for order, tag in (("<", "le"), (">", "be")):
        assert capture(f"readers_multi_{tag}.pcapng").read_bytes() == rb.multi_interface(order)


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("name", PCAPS + PCAPNGS)
def test_frames_match_tshark(name, gz, tmp_path):
    path = gz_copy(name, tmp_path) if gz else str(capture(name))
    want = tshark_fields(path, FIELDS)
    with open_capture(path) as cap:
        frames = list(cap)
        assert cap.problems == []
    assert len(frames) == len(want) == 6
    first_section = len([i for i in cap.interfaces if i.get("section", 0) == 0])
    for f, w in zip(frames, want):
        if w["frame.time_epoch"]:
            assert f.ts == epoch_ns(w["frame.time_epoch"][0]), f.num
        else:
            assert f.ts == 0      # a Simple Packet Block has no timestamp
        assert f.wirelen == int(w["frame.len"][0])
        assert len(f.data) == int(w["frame.cap_len"][0])
        assert f.comment == ("; ".join(w["frame.comment"]) if w["frame.comment"] else None)
        if w["frame.interface_id"]:
            iface = int(w["frame.interface_id"][0])
            # tshark 4.0 restarts the numbering in a new section (and then names the wrong
            # interface); rdmaspy numbers interfaces over the whole file.
            if cap.interfaces[f.iface].get("section", 0) > 0:
                iface += first_section
            assert f.iface == iface


@pytest.mark.parametrize("name", PCAPNGS)
def test_pcapng_interfaces_and_linktypes(name):
    with open_capture(str(capture(name))) as cap:
        frames = list(cap)
    assert [f.linktype for f in frames] == [1, 228, 113, 1, 228, 276]
    assert [f.iface for f in frames] == [0, 1, 2, 0, 1, 3]
    assert cap.linktypes == {0: 1, 1: 228, 2: 113, 3: 276}
    names = [(i["name"], i["description"], i["linktype"], i["snaplen"], i["ns_per_tick"], i["filter"])
             for i in cap.interfaces]
    assert names == [("veth0", "first veth", 1, 262144, 1000, "udp port 4791"),
                     ("ip0", "", 228, 0, 1, None),
                     ("any", "", 113, 128, 1e9 / 2 ** 20, None),
                     ("sll2", "", 276, 0, 1_000_000, None)]
    assert cap.interfaces[2]["tsoffset"] == 1_600_000_000
    assert [s["byte_order"] for s in cap.sections] == (["little", "big"] if name.endswith("le.pcapng")
                                                       else ["big", "little"])
    assert cap.sections[0]["application"] == "rdmaspy tests"
    # the Simple Packet Block: interface 0, no time, cut to nothing (snaplen 262144 is above its length)
    assert frames[3].ts == 0 and frames[3].wirelen == len(frames[3].data) == 62
    assert frames[2].comment == "two; comments"
    assert frames[4].comment == "old block"


def test_interfaces_known_at_open():
    cap = open_capture(str(capture("readers_multi_le.pcapng")))
    assert cap.linktypes == {0: 1, 1: 228, 2: 113}
    assert len(list(cap)) == 6
    assert cap.linktypes[3] == 276
    cap.close()


def test_simple_packet_block_cut_to_snaplen(tmp_path):
    data = bytes(range(100))
    p = tmp_path / "spb.pcapng"
    p.write_bytes(rb.shb() + rb.idb(1, snaplen=64) + rb.spb(data[:64], wirelen=100))
    want = tshark_fields(p, ["frame.len", "frame.cap_len"])
    with open_capture(str(p)) as cap:
        (f,) = list(cap)
    assert (f.wirelen, len(f.data)) == (100, 64) == (int(want[0]["frame.len"][0]), int(want[0]["frame.cap_len"][0]))
    assert f.data == data[:64]


@pytest.mark.parametrize("tsresol,ticks,expect_ns,oracle", [
    (9, 1_700_000_000_123_456_789, 1_700_000_000_123_456_789, True),
    (3, 1_700_000_000_123, 1_700_000_000_123_000_000, True),
    (0x80 | 10, (1_700_000_000 << 10) + 3, 1_700_000_000_002_929_687, True),   # 2^-10 s, floored like tshark
    (0x80 | 30, (1_700_000_000 << 30) + 5, 1_700_000_000_000_000_004, True),
    # picoseconds: tshark 4.0 multiplies the sub-second ticks by 1e9 in 64 bits and overflows
    # (it prints 1700000.012776324); the exact value is ours.
    (12, 1_700_000_123_456_789_012, 1_700_000_123_456_789, False),
])
def test_timestamp_resolutions_match_tshark(tsresol, ticks, expect_ns, oracle, tmp_path):
    p = tmp_path / "res.pcapng"
    p.write_bytes(rb.shb() + rb.idb(1, tsresol=tsresol) + rb.epb(0, ticks, rb.eth_frames(1)[0]))
    (w,) = tshark_fields(p, ["frame.time_epoch"])
    with open_capture(str(p)) as cap:
        (f,) = list(cap)
    assert f.ts == expect_ns
    assert (f.ts == epoch_ns(w["frame.time_epoch"][0])) == oracle
