"""The summary line's columns: the time column is computed in integers where that gives the same
text as tshark-style ``%12.6f`` of seconds, and as a float elsewhere."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

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
