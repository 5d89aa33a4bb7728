"""Any bytes into the readers and the engine: CaptureError or frames and problems, never another exception.

Random bytes behind each magic, and real captures flipped, truncated and spliced, are opened,
iterated and dissected with ``Engine(strict=True)`` (a dissector exception fails the test).
"""
from __future__ import annotations

import gzip
import os
import tempfile

from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import capture
from rdmaspy.engine import Engine
from rdmaspy.errors import CaptureError
from rdmaspy.readers import open_capture

SEEDS = [capture(n).read_bytes() for n in (
    "readers_multi_le.pcapng", "readers_multi_be.pcapng", "readers_be_ns.pcap", "linktype_erf.pcap",
    "linktype_sll.pcap", "linktype_sll2.pcap")]
MAGICS = [b"", b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\x3c\x4d", b"\x0a\x0d\x0d\x0a\x1c\x00\x00\x00\x4d\x3c\x2b\x1a",
          b"\x0a\x0d\x0d\x0a\x00\x00\x00\x1c\x1a\x2b\x3c\x4d"]
ENGINE = Engine(strict=True)
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def read_everything(data: bytes, compress: bool = False) -> None:
    fd, path = tempfile.mkstemp(suffix=".cap")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(gzip.compress(data, 1) if compress else data)
        try:
            cap = open_capture(path)
        except CaptureError:
            return
        with cap:
            for frame in cap:
                assert isinstance(frame.data, bytes)
                assert frame.offset >= 0
                ENGINE.dissect(frame)
        for p in cap.problems:
            assert "at byte offset" in p
    finally:
        os.unlink(path)


@FUZZ
@given(st.sampled_from(MAGICS), st.binary(max_size=600), st.booleans())
def test_random_bytes(magic, tail, compress):
    read_everything(magic + tail, compress)


@st.composite
def mutated(draw):
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["flip", "truncate", "splice", "set32"]))
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        if op == "flip":
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "truncate":
            del data[i:]
        elif op == "splice":
            other = draw(st.sampled_from(SEEDS))
            j = draw(st.integers(0, len(other) - 1))
            data[i:i + draw(st.integers(0, 64))] = other[j:j + draw(st.integers(0, 200))]
        else:   # a length-like word: 0, tiny, huge, unaligned
            data[i:i + 4] = draw(st.sampled_from([0, 1, 12, 13, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF])).to_bytes(4, "little")
    return bytes(data)


@FUZZ
@given(mutated(), st.booleans())
def test_mutated_captures(data, compress):
    read_everything(data, compress)


@settings(max_examples=60, deadline=None)
@given(st.binary(min_size=0, max_size=400))
def test_gzip_garbage(tail):
    read_everything(b"\x1f\x8b" + tail)
