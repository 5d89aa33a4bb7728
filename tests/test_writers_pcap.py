"""Classic pcap writer: nanosecond and microsecond files that tshark and rdmaspy read back unchanged."""
from __future__ import annotations

import io

from conftest import capture, tshark_fields
from rdmaspy.readers import open_capture
from rdmaspy.writers import PcapWriter


def test_nanosecond_copy_of_a_real_capture(tmp_path):
    src = list(open_capture(str(capture("rxe-ib_write_bw-loss.pcap"))))
    out = tmp_path / "ns.pcap"
    with PcapWriter(out, 1) as w:
        for f in src:
            w.write_packet(f.ts, f.data, f.wirelen)
    back = list(open_capture(str(out)))
    assert [(f.ts, bytes(f.data), f.wirelen) for f in back] == [(f.ts, bytes(f.data), f.wirelen) for f in src]
    a = tshark_fields(out, ["frame.time_epoch", "infiniband.bth.opcode", "infiniband.bth.psn"])
    b = tshark_fields(capture("rxe-ib_write_bw-loss.pcap"), ["frame.time_epoch", "infiniband.bth.opcode", "infiniband.bth.psn"])
    assert a == b and len(a) == 575


def test_microseconds_truncate_and_snaplen_cuts(tmp_path):
    out = tmp_path / "us.pcap"
    with PcapWriter(out, 1, snaplen=64, nanosecond=False) as w:
        w.write_packet(1_500_000_000_123_456_789, bytes(range(100)))
        w.write_packet(1_500_000_001_000_000_999, bytes(10), 60)
    rows = tshark_fields(out, ["frame.time_epoch", "frame.len", "frame.cap_len"])
    assert rows[0] == {"frame.time_epoch": ["1500000000.123456000"], "frame.len": ["100"], "frame.cap_len": ["64"]}
    assert rows[1] == {"frame.time_epoch": ["1500000001.000000000"], "frame.len": ["60"], "frame.cap_len": ["10"]}
    back = list(open_capture(str(out)))
    assert bytes(back[0].data) == bytes(range(64)) and back[0].wirelen == 100


def test_stream_target_counts_bytes():
    buf = io.BytesIO()
    w = PcapWriter(buf, 113)
    w.write_packet(0, b"abc")
    w.close()
    assert len(buf.getvalue()) == w.bytes_written == 24 + 16 + 3 and w.packets == 1
    assert buf.getvalue()[20:24] == (113).to_bytes(4, "little")
