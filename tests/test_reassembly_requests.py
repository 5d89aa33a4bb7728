"""The request a WRITE's or READ response's Middle or Last packet belongs to: the newest request looked at
first while the requests came in PSN order, the same answer as the nearest of all of them."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from rdmaspy.budget import Budget
from rdmaspy.dissectors import rdma_reassembly as R


def _nearest(items: list, psn: int) -> tuple | None:
    """The rule itself: the request nearest at or before ``psn`` whose length can reach it."""
    best, best_d = None, 0
    for r in items:
        d = (psn - r.base) & 0xFFFFFF
        if d == 0 or d * R._MIN_MTU >= r.length:
            continue
        if best is None or d < best_d:
            best, best_d = r, d
    return None if best is None else (best, best_d)


_psn = st.integers(0, 0xFFFFFF)
_requests = st.lists(st.tuples(st.one_of(st.integers(1, 64), st.integers(0, 0xFFFFFF)),
                               st.one_of(st.integers(1, 1 << 16), st.integers(1, (1 << 32) - 1))),
                     min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(_psn, _requests, st.lists(st.tuples(st.integers(0, 2), st.integers(-4, 300)), min_size=1, max_size=20))
def test_the_request_found_is_the_nearest_that_reaches_the_packet(start, requests, packets) -> None:
    state = R._State(Budget(1 << 30))
    recent: dict = {}
    base = start
    for step, length in requests:
        base = (base + step) & 0xFFFFFF          # mostly forwards in small steps, sometimes anywhere
        R._remember(state, recent, ("a", "b", 1), R._Request(("a", "b", 7), 0x1000 * base, length, base))
    rec = recent[("a", "b", 1)]
    newest = rec.items[-1].base
    for which, ahead in packets:
        psn = (newest + ahead) & 0xFFFFFF if which else (rec.items[0].base + ahead) & 0xFFFFFF
        pos = ("middle", "last", "middle")[which]
        want = _nearest(rec.items, psn)
        got = R._ib_address(rec, psn, pos, 1024)
        if want is None:
            assert got is None
        else:
            assert got is not None and got[0] is want[0]
            assert got == R._address(want[0], want[1], pos, 1024)


def test_requests_out_of_psn_order_are_all_looked_at() -> None:
    state = R._State(Budget(1 << 30))
    recent: dict = {}
    # the newer request has the older PSN: the packet at 105 is the first request's, four PSNs after it
    for base in (100, 0xFFFF00):
        R._remember(state, recent, ("h", "p"), R._Request(("h", "p", base), base, 1 << 20, base))
    rec = recent[("h", "p")]
    assert rec.breaks == 1
    found = R._ib_address(rec, 105, "middle", 1024)
    assert found is not None and found[0].base == 100 and found[1] == 100 + 5 * 1024


def test_a_request_reaching_round_the_psn_space_does_not_hide_a_nearer_one() -> None:
    # a 4 GiB request reaches almost 2**24 PSNs: the packet five PSNs before it is five after the older one
    state = R._State(Budget(1 << 30))
    recent: dict = {}
    R._remember(state, recent, ("h", "p"), R._Request(("h", "p", 1), 0x10000, 1 << 20, 990))
    R._remember(state, recent, ("h", "p"), R._Request(("h", "p", 2), 0x90000, (1 << 32) - 1, 1000))
    rec = recent[("h", "p")]
    assert rec.breaks == 0 and rec.span == 10
    found = R._ib_address(rec, 995, "middle", 256)
    assert found is not None and found[0].base == 990 and found[1] == 0x10000 + 5 * 256


def test_requests_in_order_again_once_the_break_has_gone_by() -> None:
    # a capture replayed: its PSNs start again lower; once the older requests are pushed out, the
    # newest is looked at first again (and the answer is still the nearest)
    state = R._State(Budget(1 << 30))
    recent: dict = {}
    for base in (5000, 5010, 100):
        R._remember(state, recent, ("h", "p"), R._Request(("h", "p", base), base, 1 << 20, base))
    rec = recent[("h", "p")]
    assert rec.breaks == 1
    for base in range(110, 110 + 10 * R._RECENT, 10):
        R._remember(state, recent, ("h", "p"), R._Request(("h", "p", base), base, 1 << 20, base))
    assert rec.breaks == 0 and rec.span == 10 * (R._RECENT - 1)
    found = R._ib_address(rec, rec.items[-1].base + 3, "middle", 1024)
    assert found is not None and found[0] is rec.items[-1]
