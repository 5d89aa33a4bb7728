"""pcapng files of random shape read back exactly: sections, interfaces, clocks, block kinds, comments."""
from __future__ import annotations

import os
import sys
import tempfile

from hypothesis import given, settings, strategies as st

from conftest import FIXTURES
from rdmaspy.readers import open_capture

sys.path.insert(0, str(FIXTURES))
import readers_build as rb  # noqa: E402

tsresols = st.one_of(st.integers(0, 12), st.integers(0, 40).map(lambda e: 0x80 | e))
interface = st.tuples(st.sampled_from([1, 101, 113, 197, 228, 247, 276]), tsresols,
                      st.integers(-2_000_000_000, 2_000_000_000),
                      st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=12))
packet = st.tuples(st.sampled_from(["epb", "opb", "spb"]), st.integers(0, 5), st.integers(0, (1 << 64) - 1),
                   st.binary(max_size=70), st.lists(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20), max_size=3))
section = st.tuples(st.sampled_from("<>"), st.lists(interface, min_size=1, max_size=4), st.lists(packet, max_size=8))


def ns(ticks: int, tsresol: int, offset: int) -> int:
    """The time in nanoseconds, exact within signed 64 bits and clamped to them beyond (as the reader does)."""
    per_second = (1 << (tsresol & 0x7F)) if tsresol & 0x80 else 10 ** tsresol
    exact = ticks * 1_000_000_000 // per_second + offset * 1_000_000_000
    return max(-(1 << 63), min((1 << 63) - 1, exact))


@settings(max_examples=120, deadline=None)
@given(st.lists(section, min_size=1, max_size=3))
def test_random_pcapng_reads_back(sections):
    data = b""
    expect = []
    base = 0
    for order, ifaces, pkts in sections:
        data += rb.shb(order)
        for lt, res, off, name in ifaces:
            data += rb.idb(lt, order, name=name, tsresol=res, tsoffset=off)
        for kind, i, ticks, payload, comments in pkts:
            i %= len(ifaces)
            lt, res, off, _name = ifaces[i]
            if kind == "spb":
                data += rb.spb(payload, order)
                expect.append((base, ifaces[0][0], 0, payload, None))
                continue
            block = rb.epb if kind == "epb" else rb.opb
            data += block(i, ticks, payload, order, comments=comments)
            expect.append((base + i, lt, ns(ticks, res, off), payload, "; ".join(comments) or None))
        base += len(ifaces)
    fd, path = tempfile.mkstemp(suffix=".pcapng")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        with open_capture(path) as cap:
            got = [(f.iface, f.linktype, f.ts, f.data, f.comment) for f in cap]
        assert cap.problems == []
        assert got == expect
        assert [i["name"] for i in cap.interfaces] == [n for _o, ifs, _p in sections for *_x, n in ifs]
        assert len(cap.sections) == len(sections)
    finally:
        os.unlink(path)
