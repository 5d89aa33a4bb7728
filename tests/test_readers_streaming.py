"""Readers stream: peak memory does not grow with the number of frames (pcap, pcapng, gzip)."""
from __future__ import annotations

import gzip
import struct
import sys
import tracemalloc

import pytest

from conftest import FIXTURES
from rdmaspy.readers import open_capture

sys.path.insert(0, str(FIXTURES))
import readers_build as rb  # noqa: E402

FRAME = rb.eth_frames(1)[0] + bytes(462)      # 600 bytes: 10k frames already span several read chunks


def write_pcap(path, n: int) -> None:
    rec = struct.Struct("<IIII")
    with open(path, "wb") as out:
        out.write(rb.pcap_header(1))
        chunk = []
        for i in range(n):
            chunk.append(rec.pack(1_700_000_000 + i // 1_000_000, i % 1_000_000, len(FRAME), len(FRAME)))
            chunk.append(FRAME)
            if len(chunk) >= 20000:
                out.write(b"".join(chunk))
                chunk.clear()
        out.write(b"".join(chunk))


def write_pcapng(path, n: int) -> None:
    one = rb.epb(0, 0, FRAME)
    with open(path, "wb") as out:
        out.write(rb.shb() + rb.idb(1, tsresol=9))
        for _ in range(n // 10000):
            out.write(one * 10000)
        out.write(one * (n % 10000))


def peak_reading(path) -> tuple[int, int]:
    tracemalloc.start()
    try:
        count = 0
        with open_capture(str(path)) as cap:
            for _f in cap:
                count += 1
        _cur, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert cap.problems == []
    return count, peak


@pytest.mark.parametrize("fmt,small,large", [("pcap", 10_000, 100_000), ("pcapng", 10_000, 50_000),
                                             ("pcapng.gz", 5_000, 30_000)])
def test_memory_does_not_grow_with_the_file(fmt, small, large, tmp_path):
    peaks = {}
    for n in (small, large):
        p = tmp_path / f"f{n}.{fmt}"
        if fmt == "pcap":
            write_pcap(p, n)
        else:
            write_pcapng(tmp_path / "plain", n)
            data = (tmp_path / "plain").read_bytes()
            p.write_bytes(gzip.compress(data, 1) if fmt.endswith(".gz") else data)
        count, peaks[n] = peak_reading(p)
        assert count == n
    # 100k frames of 600 bytes are 62 MB: the reader holds a few chunks of 1 MiB (gzip: its
    # inflated pieces and their join too), not the file.
    assert peaks[large] < 6 << 20
    assert peaks[large] < peaks[small] * 1.25 + (256 << 10)
