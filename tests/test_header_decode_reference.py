"""Every declared header decodes any bytes to the values a plain reading of its declaration gives: the header
read as one integer (big-endian: fields from the most significant bit down; little-endian: from bit 0 up), each
field its bits of it, and fields of whole bytes shown as bytes kept as bytes."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from rdmaspy.engine import load_dissectors
from rdmaspy.fields import CATALOG, F, Header, declaring

load_dissectors()

declaring(__name__)
# shapes the dissectors may not all have: odd widths, values wider than 64 bits, a group of 3 bytes of bits
ODD = [
    Header("test.odd", "Odd big-endian", [
        F("a", 24), F("b", 4), F("c", 20), F("wide", 72), F("mac", 48, display="mac"), F("q", 64),
        F("gid", 128, display="gid"), F("big", 128, display="hex"), F("flag", 1), F("rest", 7),
    ]),
    Header("test.odd_le", "Odd little-endian", [
        F("a", 24), F("b", 4), F("c", 20), F("wide", 72), F("addr", 32, display="ipv4"), F("q", 64),
        F("big", 128, display="hex"), F("flag", 1), F("rest", 7),
    ], little=True),
]
CATALOG.forget_module(__name__)      # a test's declaration stays out of the catalog the other tests read

KEPT_AS_BYTES = {"bytes", "gid", "ipv4", "ipv6", "mac", "str"}


def reference(hdr: Header, data: bytes, off: int) -> tuple:
    raw = data[off:off + hdr.size]
    whole = int.from_bytes(raw, "little" if hdr.little else "big")
    total = hdr.size * 8
    values: list[object] = []
    start = 0
    for f in hdr.fields:
        if f.display in KEPT_AS_BYTES and f.bits % 8 == 0 and start % 8 == 0:
            values.append(raw[start // 8:(start + f.bits) // 8])
        else:
            shift = start if hdr.little else total - start - f.bits
            values.append((whole >> shift) & ((1 << f.bits) - 1))
        start += f.bits
    return tuple(values)


def check(hdr: Header, data: bytes, off: int) -> None:
    want = reference(hdr, data, off)
    got = hdr.decode(data, off)
    assert got == want, hdr
    assert [type(v) for v in got] == [type(v) for v in want], hdr


@settings(max_examples=60, deadline=None)
@given(st.binary(min_size=600, max_size=600), st.integers(0, 7))
def test_every_declared_header_decodes_as_its_declaration_reads(data, off):
    checked = 0
    for hdr in CATALOG.headers + ODD:
        if hdr.size + off <= len(data):
            check(hdr, data, off)
            checked += 1
    assert checked > len(ODD)


def test_odd_shapes_decode_all_ones_and_single_bits():
    for hdr in ODD:
        check(hdr, b"\xff" * (hdr.size + 1), 1)
        for bit in range(hdr.size * 8):
            data = (1 << bit).to_bytes(hdr.size, "big")
            check(hdr, data, 0)
