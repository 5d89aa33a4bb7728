"""The line writer's check in C (rdmaspy/output/_scan.c, built with the compiled decoder) finds what
rdmaspy/output/safe.py finds: a C0 control other than the newline, DEL, or a C1 control (0xC2 0x80-0x9F)
anywhere in a block, across the steps it takes (32 bytes with AVX2, then 16 with SSE2), and counts the
newlines otherwise.  Run on
the compiled build too (tests/test_compiled.py), where the writer uses it."""
from __future__ import annotations

import io
import re

import pytest
from hypothesis import example, given, strategies as st

from rdmaspy.output.lines import LineWriter
from rdmaspy.output.safe import safe_lines

UNSAFE = re.compile(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")
# Bytes that matter to the check, often: the newline, controls, DEL, 0xC2 before a C1 second byte and
# before harmless ones ("µ" is 0xC2 0xB5), and plain text.
_BYTE = st.sampled_from([b"a", b" ", b"\n", b"\r", b"\x1b", b"\x00", b"\x1f", b"\x7f", b"\xc2", b"\x80",
                         b"\x85", b"\x9f", b"\xa0", b"\xb5", b"\xff", b"~"])


def _reference(data: bytes) -> int:
    return -1 if UNSAFE.search(data) else data.count(b"\n")


@given(st.lists(_BYTE, max_size=90).map(b"".join), st.integers(0, 40))
@example(b"a" * 15 + b"\xc2" + b"\x85", 0)        # a C1 control split between two steps
@example(b"a" * 15 + b"\xc2" + b"\xb5", 0)        # "µ" split the same way
@example(b"a" * 31 + b"\x1b", 0)                  # the last byte of a step
@example(b"\n" * 16 + b"\x7f", 0)
@example(b"a" * 31 + b"\xc2" + b"\x85", 0)        # split between two AVX2 steps
@example(b"a" * 31 + b"\xc2" + b"\xb5", 0)
@example(b"a" * 63 + b"\x1b", 0)
@example(b"\n" * 40 + b"a" * 24 + b"\x7f", 0)      # newlines counted over a 32-byte step, then one unsafe
def test_the_c_scan_counts_newlines_or_finds_what_a_terminal_obeys(data, start):
    scan = pytest.importorskip("rdmaspy.output._scan").newlines_if_safe
    padded = b"x" * start + data            # every position of a byte within a step
    assert scan(padded) == _reference(padded)
    assert scan(memoryview(padded)) == _reference(padded)


def test_the_c_scan_refuses_what_is_not_bytes():
    scan = pytest.importorskip("rdmaspy.output._scan").newlines_if_safe
    with pytest.raises(TypeError):
        scan("text")


_LINE = st.lists(_BYTE, max_size=40).map(b"".join)


@given(st.lists(_LINE, min_size=1, max_size=30), st.integers(1, 400))
@example([b"clean", b"RFC 8166 \xc2\xa74.1", b"Time: 1 \xc2\xb5s"], 1000)
@example([b"a\nFAKE LINE", b"next"], 1000)
def test_a_writer_of_lines_writes_each_line_as_the_safe_pass_makes_it(lines, limit):
    """Whatever the writer's blocks hold, its output is the lines made safe one by one, in order, each
    ending in one newline: a newline inside a line shows escaped, never as a second line."""
    out = io.BytesIO()
    writer = LineWriter(out, False, limit, safe=True)
    for line in lines:
        writer.line(line)
    writer.flush()
    assert out.getvalue() == b"".join(line + b"\n" for line in safe_lines(list(lines)))
