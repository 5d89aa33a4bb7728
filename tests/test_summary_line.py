"""The summary line's columns: the time column is computed in integers where that gives the same
text as tshark-style ``%12.6f`` of seconds, and as a float elsewhere."""
from __future__ import annotations

import pytest
from hypothesis import example, given, settings, strategies as st

from rdmaspy.output.text import summary_line
from rdmaspy.packet import Frame, Packet


def _line(ts: int, t0: int = 0) -> str:
    p = Packet(Frame(7, ts, 1, b"\0" * 60, 60))
    p.src, p.dst, p.proto, p.info = "192.0.2.1", "192.0.2.2", "RoCEv2", ["RC Acknowledge"]
    return summary_line(p, t0)


@settings(max_examples=3000, deadline=None)
@given(st.one_of(st.integers(0, 10**13), st.integers(0, 10**9).map(lambda us: us * 1000 + 500),
                 st.integers(-10**9, -1)))
def test_time_column_is_what_a_float_format_prints(d):
    want = "%7d %12.6f %15s → %-15s %-9s %5d %s" % (7, d / 1e9, "192.0.2.1", "192.0.2.2", "RoCEv2", 60,
                                                     "RC Acknowledge")
    assert _line(d) == want


def test_columns_line_up_as_tshark_prints_them():
    assert _line(1_500_000_123, 0) == "      7     1.500000       192.0.2.1 → 192.0.2.2       RoCEv2       60 RC Acknowledge"


def test_a_segment_with_two_rpc_messages_shows_both():
    """siw_two_calls.pcap (tests/fixtures/lossy_build.py): real frames 566 and 568 of the soft-iWARP NFSv3
    capture, an ACCESS call and a READ call, sent in one TCP segment.  Before, the line showed the READ
    call alone; now both, in stream order, ``; ``-separated, and the analysis has both calls."""
    from conftest import capture
    from rdmaspy.analysis.analyzer import Analyzer
    from rdmaspy.analysis.model import Transaction
    from rdmaspy.engine import Engine
    from rdmaspy.readers import open_capture

    calls: dict[int, int] = {}
    an = Analyzer(strict=True, on_record=lambda r: calls.update({r.key: r.request_frame})
                  if isinstance(r, Transaction) else None)
    eng = Engine()
    lines = {}
    with open_capture(str(capture("siw_two_calls.pcap"))) as cap:
        for f in cap:
            pkt = eng.dissect(f)
            an.feed(pkt)
            lines[f.num] = pkt.info_text
    an.finish()
    assert lines[566] == ("RPC-over-RDMA v1 RDMA_MSG xid=0x1d6ee814 credits=128 | NFSv3 ACCESS Call; "
                          "RPC-over-RDMA v1 RDMA_MSG xid=0x1e6ee814 credits=128 writes=1 chunk(1 seg 8192B) | "
                          "NFSv3 READ Call")
    assert calls[0x1d6ee814] == calls[0x1e6ee814] == 566
    # a segment with one message keeps its line as it was
    assert lines[567] == "RPC-over-RDMA v1 RDMA_MSG xid=0x1d6ee814 credits=64 | NFSv3 ACCESS Reply"


@settings(max_examples=2000, deadline=None)
@given(st.integers(0, 2**63 - 1), st.integers(0, 2**63 - 1), st.binary(max_size=60), st.integers(0, 2**63 - 1),
       st.text(max_size=40))
@example(7, 1_500_000, b"   192.0.2.1 \xe2\x86\x92 192.0.2.2  RoCEv2   ", 60, "RC Acknowledge")
@example(10_000_000, 999_999, b"", 100_000, "NFSv3 READ Call \u2192 \U0001f600")
@example(10**18 - 1, 10**18, b"", 99, "")                  # a digit more at each power of ten
@example(2**63 - 1, 2**63 - 1, b"x", 2**63 - 1, "")
@example(9, 10, b"", 100, "")
def test_the_c_line_is_the_format_it_stands_for(num, us, middle, length, text):
    """rdmaspy/output/_line.c (the compiled build's summary line) against the format summary_bytes
    spells out in Python: every width overflowed, multi-byte text, the largest numbers."""
    native = pytest.importorskip("rdmaspy.output._line")
    want = b"%7d %5d.%06d %s %5d %s" % (num, us // 10**6, us % 10**6, middle, length, text.encode())
    assert native.line(num, us, middle, length, text) == want


@settings(max_examples=500, deadline=None)
@given(st.integers(0, 2**40), st.binary(max_size=70), st.lists(st.text(max_size=12), max_size=20))
@example(1, b"", [])
@example(1, b"x" * 1500, ["RC Send Only QP=0x000011 PSN=5", "NFSv3 READ Call \u2192", ""])
def test_the_c_line_takes_the_frame_bytes_and_the_info_pieces(us, data, pieces):
    """The summary path hands the C line the frame's bytes for their length and the Info column's pieces
    to join by spaces (past 16 of them, joined as str.join would): the same bytes as the length and the
    joined text."""
    native = pytest.importorskip("rdmaspy.output._line")
    want = native.line(3, us, b"mid", len(data), " ".join(pieces))
    assert native.line(3, us, b"mid", data, pieces) == want
    assert native.line(3, us, b"mid", bytearray(data), pieces) == want
    with pytest.raises(TypeError):
        native.line(3, us, b"mid", data, [*pieces, b"not text"])


def test_the_c_line_refuses_what_it_cannot_format():
    native = pytest.importorskip("rdmaspy.output._line")
    for args in [(-1, 0, b"", 0, ""), (1, -5, b"", 0, ""), (1, 0, b"", -1, ""), (2**63, 0, b"", 0, "")]:
        with pytest.raises((ValueError, OverflowError)):
            native.line(*args)
    with pytest.raises(TypeError):
        native.line(1, 0, "not bytes", 0, "")
    with pytest.raises(TypeError):
        native.line(1, 0, b"", 0, b"not text")
    with pytest.raises(UnicodeEncodeError):
        native.line(1, 0, b"", 0, "\ud800")       # as str.encode refuses a lone surrogate


def test_the_address_columns_stay_right_past_the_bound_of_their_table():
    # more (source, destination, protocol) combinations than the table keeps: each line still its own
    from rdmaspy.output import text
    for i in range(5000):
        src, dst, proto = f"10.0.{i // 256}.{i % 256}", f"10.1.{i % 7}.1", ("RoCEv2", "TCP", "NFS")[i % 3]
        want = ("%15s → %-15s %-9s" % (src, dst, proto)).encode()
        assert text._middle(src, dst, proto) == want
        assert text._middle(src, dst, proto) == want          # the second time, from the table
    assert text._RECENT.made <= 4096
    assert sum(len(by_proto) for by_dst in text._columns.values() for by_proto in by_dst.values()) <= 4096
