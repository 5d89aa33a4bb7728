"""The PSN ring of the transport analysis grows on use and always holds what a full ring holds; its slots
in C (rdmaspy/analysis/_ring.c, built with the compiled decoder) answer as the Python ones.  Run on the
compiled build too (tests/test_compiled.py), where the ring uses them."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rdmaspy.analysis import transport
from rdmaspy.analysis.transport import _RING, PsnRing

psns = st.lists(st.one_of(st.integers(0, 0xFFFFFF), st.integers(0, 40)), max_size=300)


@settings(max_examples=300, deadline=None)
@given(psns)
def test_grown_ring_answers_as_the_full_ring(seq: list[int]) -> None:
    full_psn = [-1] * _RING
    full_frame = [0] * _RING
    ring = PsnRing()
    for frame, psn in enumerate(seq, 1):
        full_psn[psn & (_RING - 1)] = psn
        full_frame[psn & (_RING - 1)] = frame
        ring.put(psn, frame, frame * 10, frame * 7)
        for probe in seq[:frame]:
            full = full_frame[probe & (_RING - 1)] if full_psn[probe & (_RING - 1)] == probe else None
            assert ring.lookup(probe) == (None if full is None else (full, full * 10, full * 7))


def test_a_queue_pair_of_one_packet_keeps_a_small_ring() -> None:
    ring = PsnRing()
    ring.put(0x123456, 1, 0)
    assert ring.size == 8


def test_consecutive_psns_grow_the_ring_to_what_they_need() -> None:
    ring = PsnRing()
    for i in range(100):
        ring.put(1000 + i, i, 0)
    assert ring.size == 128
    assert all(ring.lookup(1000 + i) == (i, 0, 0) for i in range(100))


def test_a_full_ring_costs_machine_integers_not_python_objects() -> None:
    """4,096 slots of PSN, frame, time and mark: some 130 KB as machine integers; as Python ints the first
    three took some 470 KB a requester (60 MiB for the 128 requesters of 64 NFS mounts)."""
    import tracemalloc
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        ring = PsnRing()
        for i in range(_RING):
            ring.put(0x100000 + i, 5_000_000 + i, 1_795_243_893_764_061_000 + i * 1000, 0x3abc_d123)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert ring.size == _RING and ring.lookup(0x100000 + 17) is not None
    assert held < 150_000, held


def _ring_c():
    return pytest.importorskip("rdmaspy.analysis._ring")


_values = st.integers(-(1 << 63), (1 << 63) - 1)
_marks = st.integers(0, (1 << (63 - transport._PSN_BITS)) - 1)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 0xFFFFFF), _values, _values, _marks), max_size=200))
def test_the_c_ring_answers_as_the_python_ring(puts: list[tuple[int, int, int, int]]) -> None:
    """put, lookup and grown in C against the struct-based Python code, on the same bytes: the
    slots they leave are equal byte for byte at every step, growth included."""
    c = _ring_c()
    assert c.RING == _RING and c.SLOT_SIZE == transport._SLOT.size and c.PSN_BITS == transport._PSN_BITS
    slots_c, slots_py = bytearray(transport._EMPTY_SLOT * 8), bytearray(transport._EMPTY_SLOT * 8)
    for psn, frame, ts, mark in puts:
        while True:
            psn_mark = mark << transport._PSN_BITS | psn
            done_c = c.put(slots_c, psn_mark, frame, ts)
            assert done_c == transport._put_py(slots_py, psn_mark, frame, ts)
            assert slots_c == slots_py
            if done_c:
                break
            slots_c, slots_py = c.grown(slots_c), transport._grown_py(slots_py)
            assert slots_c == slots_py
        other = (psn + 1) & 0xFFFFFF
        assert c.lookup(slots_c, psn) == transport._lookup_py(slots_py, psn) == (frame, ts, mark)
        assert c.lookup(slots_c, other) == transport._lookup_py(slots_py, other)
        for probe in (psn_mark, (mark ^ 1) << transport._PSN_BITS | psn, mark << transport._PSN_BITS | other):
            assert c.copy_of(slots_c, probe) == transport._copy_of_py(slots_py, probe)
        assert c.copy_of(slots_c, psn_mark) == (frame, ts)


def test_the_c_ring_refuses_slots_that_do_not_match_and_reads_nothing_outside() -> None:
    c = _ring_c()
    slots = bytearray(transport._EMPTY_SLOT * 8)
    with pytest.raises(TypeError):
        c.put(bytes(slots), 1, 1, 1)                    # not writable
    with pytest.raises(ValueError):
        c.lookup(bytearray(transport._EMPTY_SLOT * 6), 1)    # not a power of two of slots
    with pytest.raises(ValueError):
        c.put(slots + b"\0", 1, 1, 1)                   # not whole slots
    with pytest.raises(ValueError):
        c.lookup(bytearray(), 1)                       # no slot
    with pytest.raises(ValueError):
        c.put(bytearray(transport._EMPTY_SLOT * 2 * _RING), 1, 1, 1)        # beyond the full ring
    with pytest.raises(ValueError):
        c.put(slots, -1, 1, 1)                         # a negative PSN or mark
    with pytest.raises(ValueError):
        c.copy_of(slots, -1)
    with pytest.raises(OverflowError):
        c.lookup(slots, 1 << 64)
    with pytest.raises(OverflowError):
        c.put(slots, 1 << 64, 1, 1)
    full = bytearray(transport._EMPTY_SLOT * _RING)
    with pytest.raises(ValueError):
        c.grown(full)                                  # never beyond the full ring
    assert slots == bytearray(transport._EMPTY_SLOT * 8)
