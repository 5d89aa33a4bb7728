"""The PSN ring of the transport analysis grows on use and always holds what a full ring holds."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

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
        ring.put(psn, frame, frame * 10)
        for probe in seq[:frame]:
            slot = ring.find(probe)
            full = full_frame[probe & (_RING - 1)] if full_psn[probe & (_RING - 1)] == probe else None
            assert (ring.frame[slot] if slot >= 0 else None) == full


def test_a_queue_pair_of_one_packet_keeps_a_small_ring() -> None:
    ring = PsnRing()
    ring.put(0x123456, 1, 0)
    assert ring.size == 8


def test_consecutive_psns_grow_the_ring_to_what_they_need() -> None:
    ring = PsnRing()
    for i in range(100):
        ring.put(1000 + i, i, 0)
    assert ring.size == 128
    assert all(ring.find(1000 + i) >= 0 for i in range(100))


def test_a_full_ring_costs_machine_integers_not_python_objects() -> None:
    """4,096 slots of PSN, frame and time: some 100 KB as machine integers; as Python ints they took
    some 470 KB a requester (60 MiB for the 128 requesters of 64 NFS mounts)."""
    import tracemalloc
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        ring = PsnRing()
        for i in range(_RING):
            ring.put(0x100000 + i, 5_000_000 + i, 1_795_243_893_764_061_000 + i * 1000)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert ring.size == _RING and ring.find(0x100000 + 17) >= 0
    assert held < 150_000, held
