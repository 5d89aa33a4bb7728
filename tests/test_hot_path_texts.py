"""The per-packet path makes its texts without format strings (compiled, a format is parsed at each
call): each helper writes exactly what the format it stands for would."""
from __future__ import annotations

import ipaddress

from hypothesis import given, strategies as st

from rdmaspy.analysis import model as m
from rdmaspy.analysis.rpcrdma_facts import ChunkList, RpcRdmaFacts
from rdmaspy.dissectors.hexfmt import hex8, hexn
from rdmaspy.dissectors.ip import fmt_ipv4, ipv4_text, ipv6_text
from rdmaspy.output.text import _length5, _middle, _padded5, summary_bytes
from rdmaspy.packet import Frame, Packet


@given(st.integers(min_value=-(1 << 70), max_value=1 << 70))
def test_hex8_and_hexn_write_what_the_percent_formats_write(n):
    assert hex8(n) == "%08x" % n
    assert hexn(n) == "%x" % n


# words of zeros in runs, so that every placement of the longest run (and ties) comes up
@given(st.lists(st.sampled_from([0, 0, 0, 1, 0xFF, 0x100, 0xFFFF]) | st.integers(0, 0xFFFF), min_size=8, max_size=8))
def test_an_ipv6_text_is_what_ipaddress_writes(words):
    b = b"".join(w.to_bytes(2, "big") for w in words)
    assert ipv6_text(b) == str(ipaddress.IPv6Address(b))


@given(st.lists(st.binary(min_size=4, max_size=4), min_size=1, max_size=40))
def test_an_address_text_is_its_own_whatever_came_before(addresses):
    # the two most recent addresses are kept apart from the cache: a run of them, interleaved,
    # repeated and new, must each come out as their own text
    for a in addresses + addresses[::-1] + addresses:
        buf = b"\xff" + a + b"\xee"
        assert ipv4_text(buf, 1) == fmt_ipv4(a)


@given(st.lists(st.tuples(st.sampled_from(["10.0.0.1", "10.0.0.2", "fe80::1"]),
                          st.sampled_from(["10.0.0.1", "10.0.0.2", "fe80::1"]),
                          st.sampled_from(["RoCEv2", "TCP", "iWARP"])), min_size=1, max_size=30))
def test_the_address_and_protocol_columns_are_those_of_their_line(lines):
    for src, dst, proto in lines:
        # copies, so that a text equal to an earlier one is not the same object
        src, dst, proto = "".join(list(src)), "".join(list(dst)), "".join(list(proto))
        assert _middle(src, dst, proto) == ("%15s → %-15s %-9s" % (src, dst, proto)).encode()


@given(st.integers(min_value=-10, max_value=200_000))
def test_the_padded_columns_are_what_percent_5d_writes(n):
    assert _padded5(n) == "%5d" % n
    assert _length5(n) == b"%5d" % n


def test_a_padded_column_past_the_cached_ones_is_its_own_in_any_order():
    # the one value kept past the cache starts as -1: a -1 asked for first must not find it
    for n in (-1, 16_384, -1, 16_385, 16_384, 70_000, -1, 0):
        assert _padded5(n) == "%5d" % n


@given(st.integers(min_value=1, max_value=99_999_999),
       st.one_of(st.integers(min_value=0, max_value=(1 << 53) + 10**9),
                 st.integers(min_value=0, max_value=1 << 53).map(lambda d: d - d % 1000 + 499),
                 st.integers(min_value=0, max_value=1 << 53).map(lambda d: d - d % 1000 + 501),
                 st.integers(min_value=0, max_value=1 << 53).map(lambda d: d - d % 1000 + 500)),
       st.integers(min_value=0, max_value=70_000))
def test_a_summary_line_starts_as_the_float_format_writes_it(num, delta, length):
    # the time column is made from integers below 2**53 ns: the digits of "%12.6f" % (delta / 1e9),
    # next to the rounding boundaries too (499, 500 and 501 ns past a microsecond)
    pkt = Packet(Frame(num, 1_000_000_000 + delta, 1, b"\0" * length, length))
    pkt.src, pkt.dst, pkt.proto, pkt.info = "a", "b", "P", ["x"]
    line = summary_bytes(pkt, 1_000_000_000)
    head = "%7d %12.6f" % (num, delta / 1e9)
    assert line.startswith(head.encode()), (line, head)
    assert line.endswith(b" %5d x" % length)


def test_the_records_compare_and_show_themselves_as_the_dataclasses_did():
    a = m.Message([1, 2], 5, 100)
    b = m.Message([1, 2], 5, 100)
    assert a == b and a.retransmissions == [] and a.retransmissions is not b.retransmissions
    b.size = 101
    assert a != b
    assert repr(a) == "Message(frames=[1, 2], ts=5, size=100, retransmissions=[], invalidated=None)"
    f = RpcRdmaFacts(1, "RDMA_MSG", "Short Call", 32)
    assert f == RpcRdmaFacts(1, "RDMA_MSG", "Short Call", 32) and f != RpcRdmaFacts(2, "RDMA_MSG", "Short Call", 32)
    assert repr(f).startswith("RpcRdmaFacts(version=1, call_proc='RDMA_MSG', call_shape='Short Call', call_credits=32")
    step = m.Step(m.StepKind.RDMA_WRITE, [3], 7, bytes=10, handle=0x1234)
    assert step.offset is None and step.segment is None
    assert repr(step).startswith("Step(kind=<StepKind.RDMA_WRITE: 'write'>, frames=[3], ts=7, bytes=10, handle=4660,")
    seg = m.Segment(ChunkList.WRITE, 0, 0, None, 1, 0, 100, m.Side.CLIENT)
    assert seg.spans == [] and seg.frames == [] and seg.ops == 0


@given(st.binary(min_size=4, max_size=40), st.data())
def test_the_word_read_byte_by_byte_is_the_big_endian_unpack(buf, data):
    """xdr.u32 (the RPC, RPC-over-RDMA and XDR hot paths read words with it, not with a struct) reads
    what struct's ">I" reads at every offset, the last word included."""
    import struct

    from rdmaspy.dissectors.xdr import u32
    at = data.draw(st.integers(0, len(buf) - 4))
    assert u32(buf, at) == struct.unpack_from(">I", buf, at)[0]


@given(st.binary(min_size=8, max_size=40), st.data())
def test_the_64_bit_word_is_the_big_endian_unpack_on_both_sides_of_2_to_the_63(buf, data):
    """xdr.u64 (RDMA segments' offsets, iWARP's tagged offsets) reads what struct's ">Q" reads: in machine
    integers below 2**63, a kernel address's top bit added as a Python int above."""
    import struct

    from rdmaspy.dissectors.xdr import u64
    at = data.draw(st.integers(0, len(buf) - 8))
    top = data.draw(st.sampled_from([None, 0x00, 0x7F, 0x80, 0xFF]))
    if top is not None:
        buf = buf[:at] + bytes([top]) + buf[at + 1:]
    assert u64(buf, at) == struct.unpack_from(">Q", buf, at)[0]
