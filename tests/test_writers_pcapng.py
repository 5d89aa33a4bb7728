"""pcapng writer: what tshark, capinfos and rdmaspy's reader see in the files it writes."""
from __future__ import annotations

import io
import struct
import subprocess

from hypothesis import given, settings, strategies as st

from conftest import capture, require_tshark, tshark_fields
from rdmaspy.readers import open_capture
from rdmaspy.writers import PcapngWriter


def _frames(name: str):
    with open_capture(str(capture(name))) as cap:
        return list(cap)


def _capinfos(path) -> str:
    require_tshark()
    return subprocess.run(["capinfos", str(path)], capture_output=True, text=True, check=True).stdout


def _blocks(data: bytes):
    """Walk blocks by the spec (independent of the writer): (type, body) in file order."""
    pos = 0
    out = []
    while pos < len(data):
        btype, total = struct.unpack_from("=II", data, pos)
        assert total % 4 == 0 and total >= 12
        assert struct.unpack_from("=I", data, pos + total - 4)[0] == total, "trailing length differs"
        out.append((btype, data[pos + 8:pos + total - 4]))
        pos += total
    assert pos == len(data)
    return out


def _opts(body: bytes) -> dict[int, list[bytes]]:
    res: dict[int, list[bytes]] = {}
    pos = 0
    while pos + 4 <= len(body):
        code, ln = struct.unpack_from("=HH", body, pos)
        if code == 0:
            break
        res.setdefault(code, []).append(body[pos + 4:pos + 4 + ln])
        pos += 4 + ln + (-ln & 3)
    return res


def test_real_capture_rewritten_is_identical_for_tshark_and_the_reader(tmp_path):
    src = _frames("rxe-nfsv3-rdma.pcap")
    out = tmp_path / "copy.pcapng"
    with PcapngWriter(out) as w:
        i = w.add_interface(1, 262144, name="veth7", description="RDMA device rxe0", filter="udp port 4791")
        for f in src:
            w.write_packet(i, f.ts, f.data, f.wirelen)
    back = list(open_capture(str(out)))
    assert [(f.ts, bytes(f.data), f.wirelen) for f in back] == [(f.ts, bytes(f.data), f.wirelen) for f in src]
    rows = tshark_fields(out, ["frame.len", "frame.time_epoch", "frame.interface_name", "infiniband.bth.psn"])
    assert len(rows) == len(src) == 2238
    ref = tshark_fields(capture("rxe-nfsv3-rdma.pcap"), ["frame.len", "frame.time_epoch", "infiniband.bth.psn"])
    assert [(r["frame.len"], r["frame.time_epoch"], r["infiniband.bth.psn"]) for r in rows] == \
           [(r["frame.len"], r["frame.time_epoch"], r["infiniband.bth.psn"]) for r in ref]
    assert {tuple(r["frame.interface_name"]) for r in rows} == {("veth7",)}
    info = _capinfos(out)
    assert "Filter string = udp port 4791" in info
    assert "Description = RDMA device rxe0" in info
    assert "Time precision = nanoseconds (9)" in info


def test_packet_comments_reach_tshark(tmp_path):
    out = tmp_path / "c.pcapng"
    src = _frames("rxe-ucmatose.pcap")
    with PcapngWriter(out) as w:
        w.add_interface(1)
        for f in src:
            c = None if f.num % 3 else [f"finding {f.num}", "second ünïcode note"]
            w.write_packet(0, f.ts, f.data, comment=c)
    rows = tshark_fields(out, ["frame.comment"])
    for n, r in enumerate(rows, 1):
        if n % 3:
            assert r["frame.comment"] == []
        else:
            assert r["frame.comment"] == [f"finding {n}", "second ünïcode note"]
    back = list(open_capture(str(out)))
    assert [bytes(f.data) for f in back] == [bytes(f.data) for f in src]


def test_statistics_block_carries_the_counters(tmp_path):
    out = tmp_path / "s.pcapng"
    with PcapngWriter(out) as w:
        w.add_interface(1, 1500, name="eth9")
        w.write_packet(0, 1_700_000_000_123_456_789, b"\x00" * 60)
        w.write_stats(0, 1_700_000_001_000_000_000, ifrecv=12, ifdrop=3, filteraccept=12, osdrop=4, usrdeliv=8,
                      starttime_ns=1_700_000_000_000_000_001, endtime_ns=1_700_000_001_000_000_000)
    assert "Number of stat entries = 1" in _capinfos(out)
    blocks = _blocks(out.read_bytes())
    assert [b[0] for b in blocks] == [0x0A0D0D0A, 1, 6, 5]
    body = blocks[3][1]
    iface, hi, lo = struct.unpack_from("=III", body)
    assert iface == 0 and (hi << 32 | lo) == 1_700_000_001_000_000_000
    o = _opts(body[12:])
    assert {c: struct.unpack("=Q", v[0])[0] for c, v in o.items() if c >= 4} == \
        {4: 12, 5: 3, 6: 12, 7: 4, 8: 8}
    start = struct.unpack("=II", o[2][0])
    assert (start[0] << 32 | start[1]) == 1_700_000_000_000_000_001


def test_microsecond_interfaces_scale_timestamps(tmp_path):
    out = tmp_path / "us.pcapng"
    with PcapngWriter(out) as w:
        w.add_interface(1, tsresol=6)
        w.write_packet(0, 1_600_000_000_987_654_321, b"\xff" * 42)
    assert tshark_fields(out, ["frame.time_epoch"])[0]["frame.time_epoch"] == ["1600000000.987654000"]
    assert "Time precision = microseconds (6)" in _capinfos(out)


def test_write_to_a_stream_and_block_lengths_are_consistent():
    buf = io.BytesIO()
    w = PcapngWriter(buf, application="unit test")
    w.add_interface(147, 9000, name="x")
    for n in range(9):
        w.write_packet(0, n, bytes(range(n)), 100 + n, flags=1 if n % 2 else None)
    w.close()
    data = buf.getvalue()
    assert len(data) == w.bytes_written
    blocks = _blocks(data)
    assert [b[0] for b in blocks] == [0x0A0D0D0A, 1] + [6] * 9
    shb = _opts(blocks[0][1][16:])
    assert shb[4] == [b"unit test"]
    for n, (_t, body) in enumerate(blocks[2:]):
        _i, _h, _l, cap, orig = struct.unpack_from("=IIIII", body)
        assert (cap, orig) == (n, 100 + n)
        assert body[20:20 + n] == bytes(range(n))
        flags = _opts(body[20 + n + (-n & 3):]).get(2)
        assert flags == ([struct.pack("=I", 1)] if n % 2 else None)


def test_unwritable_path_is_a_clear_error(tmp_path):
    from rdmaspy.errors import RdmaspyError
    try:
        PcapngWriter(tmp_path / "missing" / "x.pcapng")
    except RdmaspyError as exc:
        assert "cannot write" in str(exc)
    else:
        raise AssertionError("no error")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.binary(max_size=300), st.integers(0, 2**63 - 1),
                          st.one_of(st.none(), st.text(max_size=40))), max_size=12))
def test_round_trip_any_packets(packets):
    buf = io.BytesIO()
    w = PcapngWriter(buf)
    w.add_interface(1)
    for data, ts, comment in packets:
        w.write_packet(0, ts, data, comment=comment)
    w.flush()
    path_data = buf.getvalue()
    blocks = _blocks(path_data)
    assert len(blocks) == 2 + len(packets)
    import tempfile
    with tempfile.NamedTemporaryFile(suffix=".pcapng") as f:
        f.write(path_data)
        f.flush()
        cap = open_capture(f.name)
        back = list(cap)
        assert not cap.problems
    assert [(bytes(b.data), b.ts) for b in back] == [(d, t) for d, t, _c in packets]
    assert [b.comment or None for b in back] == [c or None for _d, _t, c in packets]
