"""TCP stream reassembly (rdmaspy.dissectors.tcp_stream): order, retransmissions, holes, wraparound."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from rdmaspy.dissectors import tcp_stream
from rdmaspy.dissectors.tcp_stream import HalfStream, seq_delta


def test_seq_delta_wraps() -> None:
    assert seq_delta(5, 0xFFFFFFFB) == 10
    assert seq_delta(0xFFFFFFFB, 5) == -10
    assert seq_delta(7, 7) == 0


def test_in_order_segment_is_the_frame_buffer_itself() -> None:
    hs = HalfStream()
    frame = b"HEADER" + b"payload"
    v = hs.feed(100, frame, 6, len(frame), 1)
    assert v.buf is frame and (v.off, v.end, v.stream_off, v.status, v.in_frame) == (6, 13, 0, "new", True)
    assert v.frames(6, 13) == [1]


def test_unconsumed_bytes_join_the_next_segment() -> None:
    hs = HalfStream()
    v = hs.feed(0, b"abcdef", 0, 6, 1)
    hs.keep(v, 4)                       # "ef" waits
    v = hs.feed(6, b"ghij", 0, 4, 2)
    assert bytes(v.buf[v.off:v.end]) == b"efghij" and v.stream_off == 4 and not v.in_frame
    assert v.frames(0, 2) == [1] and v.frames(2, 6) == [2] and v.frames(0, 6) == [1, 2]
    assert v.stream_pos(3) == 7


def test_retransmission_and_overlap() -> None:
    hs = HalfStream()
    hs.keep(hs.feed(1000, b"abcd", 0, 4, 1), 4)
    v = hs.feed(1000, b"abcd", 0, 4, 2)
    assert v.status == "retransmission" and v.end == v.off and v.dropped == 4
    v = hs.feed(1002, b"cdef", 0, 4, 3)
    assert v.status == "overlap" and bytes(v.buf[v.off:v.end]) == b"ef" and v.dropped == 2 and v.stream_off == 4
    assert hs.retransmissions == 2


def test_out_of_order_segments_are_held_then_delivered_in_order() -> None:
    hs = HalfStream()
    hs.keep(hs.feed(0, b"aa", 0, 2, 1), 2)
    assert hs.feed(6, b"dd", 0, 2, 2).status == "held"
    assert hs.feed(4, b"cc", 0, 2, 3).status == "held"
    v = hs.feed(2, b"bb", 0, 2, 4)
    assert bytes(v.buf[v.off:v.end]) == b"bbccdd" and v.frames(0, 6) == [4, 3, 2]
    assert hs.held == {} and hs.held_bytes == 0


def test_sequence_numbers_wrap() -> None:
    hs = HalfStream()
    hs.keep(hs.feed(0xFFFFFFFE, b"xy", 0, 2, 1), 2)
    v = hs.feed(0, b"z", 0, 1, 2)
    assert v.status == "new" and v.stream_off == 2 and hs.next_seq == 1


def test_a_hole_never_filled_is_given_up_as_a_gap(monkeypatch) -> None:
    monkeypatch.setattr(tcp_stream, "HOLD_MAX_SEGMENTS", 2)
    hs = HalfStream()
    v = hs.feed(0, b"0123", 0, 4, 1)
    hs.keep(v, 2)                       # "23" is an unfinished record
    assert hs.feed(10, b"AB", 0, 2, 2).status == "held"
    assert hs.feed(12, b"CD", 0, 2, 3).status == "held"
    v = hs.feed(14, b"EF", 0, 2, 4)     # a third segment behind the hole: give up on bytes 4..9
    assert v.status == "after-gap" and (v.gap, v.abandoned) == (6, 2) and v.stream_off == 10
    assert bytes(v.buf[v.off:v.end]) == b"ABCDEF" and v.frames(0, 6) == [2, 3, 4]
    assert hs.gaps == [(4, 6)]


@settings(max_examples=60, deadline=None)
@given(data=st.binary(min_size=1, max_size=600), cuts=st.lists(st.integers(1, 80), min_size=1, max_size=40),
       isn=st.integers(0, 0xFFFFFFFF), ops=st.lists(st.sampled_from("ndskm"), max_size=40),
       keeps=st.lists(st.integers(0, 50), max_size=40))
def test_any_segmentation_reordering_and_duplication_yields_the_stream(data, cuts, isn, ops, keeps) -> None:
    """Cut a stream into segments, duplicate some, swap neighbours, resend some merged with the one before:
    the consumer reads the stream exactly."""
    segs = []
    i = 0
    k = 0
    while i < len(data):
        n = cuts[k % len(cuts)]
        segs.append((i, data[i:i + n]))
        i += n
        k += 1
    order = []
    j = 0
    while j < len(segs):
        op = ops[j % len(ops)] if ops else "n"
        # the next segment overtakes this one (not the first: without the SYN, the first segment seen
        # starts the stream)
        if op == "s" and 0 < j and j + 1 < len(segs):
            order += [segs[j + 1], segs[j]]
            j += 2
            continue
        if op == "m" and j:                        # resent together with the previous one (overlap)
            order.append((segs[j - 1][0], segs[j - 1][1] + segs[j][1]))
        else:
            order.append(segs[j])
        if op == "d":                              # captured twice
            order.append(segs[j])
        if op == "k" and j:                        # an old segment comes again later
            order.append(segs[j - 1])
        j += 1
    hs = HalfStream()
    out = bytearray()
    for num, (pos, chunk) in enumerate(order, 1):
        frame = b"hdr" + chunk
        v = hs.feed((isn + pos) & 0xFFFFFFFF, frame, 3, len(frame), num)
        if v.status in ("retransmission", "held"):
            assert v.end == v.off
            hs.keep(v, v.off)                      # no bytes: what was pending stays pending
            continue
        assert v.stream_off == len(out)
        keep = keeps[num % len(keeps)] if keeps else 0
        upto = max(v.off, v.end - keep)
        out += v.buf[v.off:upto]
        hs.keep(v, upto)
    out += hs.pending
    assert bytes(out) == data and hs.gaps == []
