"""Hexadecimal text of the info lines: the C digits (rdmaspy/dissectors/_hex.c, built with the compiled
decoder) and the Python ones (rdmaspy/dissectors/hexfmt.py) write what "%08x" and "%x" write."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from rdmaspy.dissectors import hexfmt

_ints = st.one_of(st.integers(0, 0xFFFFFFFF), st.integers(0, (1 << 64) - 1), st.integers(-(1 << 70), 1 << 70),
                  st.sampled_from([0, 1, 15, 16, 255, 256, 0xFFFFFFFF, 1 << 32, (1 << 63) - 1, 1 << 63,
                                   (1 << 64) - 1, 1 << 64, -1]))


@settings(max_examples=500, deadline=None)
@given(_ints)
def test_the_digits_are_those_of_the_format_operator(n: int) -> None:
    assert hexfmt.hex8(n) == "%08x" % n
    assert hexfmt.hexn(n) == "%x" % n


def _hex_c():
    return pytest.importorskip("rdmaspy.dissectors._hex")


@settings(max_examples=500, deadline=None)
@given(_ints)
def test_the_c_digits_are_those_of_the_format_operator_or_refused(n: int) -> None:
    c = _hex_c()
    if 0 <= n <= 0xFFFFFFFF:
        assert c.hex8(n) == "%08x" % n
    else:
        with pytest.raises(ValueError):
            c.hex8(n)
    if 0 <= n < 1 << 64:
        assert c.hexn(n) == "%x" % n
    else:
        with pytest.raises(ValueError):
            c.hexn(n)


def test_the_c_digits_take_ints_only() -> None:
    c = _hex_c()
    for bad in ("12", 1.0, None, b"\x01"):
        with pytest.raises(TypeError):
            c.hex8(bad)
        with pytest.raises(TypeError):
            c.hexn(bad)
    assert c.hex8(True) == "00000001"          # a bool is an int, as "%08x" % True says


_heads = st.one_of(st.text(max_size=30), st.sampled_from(["", "RC SEND Only QP=0x000012 PSN=", "µs=", "a\u2192b="]))


@settings(max_examples=500, deadline=None)
@given(_heads, _ints)
def test_a_number_after_a_head_is_its_decimal_text(head: str, n: int) -> None:
    assert hexfmt.with_decimal(head, n) == head + str(n)
    c = _hex_c()
    assert c.with_decimal(head, n) == head + str(n)


@settings(max_examples=500, deadline=None)
@given(_heads, _ints, _heads)
def test_a_tail_follows_the_number(head: str, n: int, tail: str) -> None:
    assert hexfmt.with_decimal(head, n, tail) == head + str(n) + tail
    c = _hex_c()
    assert c.with_decimal(head, n, tail) == head + str(n) + tail


def test_the_c_decimal_takes_a_str_an_int_and_a_str_only() -> None:
    c = _hex_c()
    for args in [("a", "1"), (b"a", 1), ("a",), ("a", 1, 2), ("a", 1, b"b"), ("a", 1, "b", "c"), ("a", 1.0)]:
        with pytest.raises(TypeError):
            c.with_decimal(*args)
