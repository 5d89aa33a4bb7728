"""A reader takes its file a chunk at a time; a record cut by a chunk's end is read whole all the same.
From a regular file the reader reads the unconsumed end of a chunk again with the next one (a seek back:
no copy of the new chunk), from a pipe it joins the two: both give the same frames, offsets and
reports, whatever the chunk size and wherever the file ends (tests/test_readers_damage.py has the
damaged files themselves)."""
from __future__ import annotations

import os
import sys
import threading

import pytest
from hypothesis import given, settings, strategies as st

from conftest import FIXTURES
from rdmaspy.readers import base, open_capture, pcap, pcapng

sys.path.insert(0, str(FIXTURES))
import readers_build as rb  # noqa: E402

_PACKETS = st.lists(st.binary(max_size=300), min_size=1, max_size=25)


def _pcap(payloads: list[bytes]) -> bytes:
    return rb.pcap_file([(1_000_000_000 + i * 1000, p) for i, p in enumerate(payloads)], 1)


def _pcapng(payloads: list[bytes]) -> bytes:
    return rb.shb() + rb.idb(1) + b"".join(rb.epb(0, 1000 + i, p) for i, p in enumerate(payloads))


def _read(path: str) -> tuple[list[tuple], list[str]]:
    """The frames, and the problems (a cut record is one, with its offset)."""
    with open_capture(path) as cap:
        frames = [(f.num, f.ts, f.data, f.wirelen, f.offset) for f in cap]
    return frames, list(cap.problems)


def _read_through_a_pipe(path: str, data: bytes) -> tuple[list[tuple], list[str]]:
    fifo = path + ".fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as out:
            try:
                out.write(data)
            except BrokenPipeError:
                pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        return _read(fifo)
    finally:
        writer.join(10)
        os.unlink(fifo)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["pcap", "pcapng"]), _PACKETS, st.sampled_from([16, 61, 200, 1 << 20]), st.floats(0.3, 1.0))
def test_a_file_and_a_pipe_read_the_same_whatever_the_chunks(tmp_path_factory, kind, payloads, chunk, keep):
    data = (_pcap if kind == "pcap" else _pcapng)(payloads)
    data = data[:max(40, int(len(data) * keep))]         # often cut inside a record
    path = str(tmp_path_factory.mktemp("chunks") / f"c.{kind}")
    with open(path, "wb") as out:
        out.write(data)
    module = pcap if kind == "pcap" else pcapng
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(module, "CHUNK", chunk)
        from_file = _read(path)
        from_pipe = _read_through_a_pipe(path, data)
        with open(path, "rb") as f:
            assert base.chunk_seeker(f) is not None       # a regular file is read again, not joined
    assert from_file == from_pipe
    if keep == 1.0:
        assert [f[2] for f in from_file[0]] == payloads and from_file[1] == []


def test_next_chunk_starts_at_the_unconsumed_bytes_both_ways(tmp_path):
    path = tmp_path / "bytes"
    path.write_bytes(bytes(range(100)))
    with open(path, "rb") as f:
        buf = f.read(30)
        seek = base.chunk_seeker(f)
        assert seek is not None
        assert base.next_chunk(f.read, seek, buf, 25, 25, 10) == bytes(range(25, 40))
        assert f.tell() == 40
    with open(path, "rb") as f:
        buf = f.read(30)
        assert base.next_chunk(f.read, None, buf, 25, 25, 10) == bytes(range(25, 40))
        assert base.next_chunk(f.read, None, b"", 0, 40, 200) == bytes(range(40, 100))
        assert base.next_chunk(f.read, None, b"xy", 0, 100, 10) == b"xy"      # the end: the rest alone
