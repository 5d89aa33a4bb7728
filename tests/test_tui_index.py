"""The packet list's index: rows made by a helper process while the app's pass runs the analysis, read
back from files as they grow, coloured as one pass with the analysis colours them."""
from __future__ import annotations

import os
import signal
import tempfile
from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from rdmaspy.output.sinks import RowSink
from rdmaspy.pipeline import Options, Pipeline
from rdmaspy.readers import open_capture
from rdmaspy.tui.index import FileArray, PacketIndex, RowWriter
from rdmaspy.tui.model import CaptureModel

from conftest import capture
from cycled import build as build_cycled
from tui_helpers import decode


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=40), max_size=12), st.integers(1, 9))
def test_a_file_array_reads_what_another_writer_appends(blocks, block):
    # Items come a block of any size at a time; every item below the count reads back at every step,
    # a partial block read early included.
    with tempfile.TemporaryFile() as f:
        arr = FileArray(f.fileno(), "Q", block, cached=2)
        have: list[int] = []
        for values in blocks:
            os.pwrite(f.fileno(), array("Q", values).tobytes(), len(have) * 8)
            have += values
            assert [arr.get(i, len(have)) for i in range(len(have))] == have
            assert [arr.get(i, len(have)) for i in reversed(range(len(have)))] == have[::-1]


def _one_pass(path) -> tuple[list[bytes], list[tuple[str, int]]]:
    """The rows and colours one pipeline with the analysis makes (the live mode's pass)."""
    lines: list[bytes] = []
    codes: list[int] = []

    def take(block: list[bytes], ends: list[int], colours: bytes) -> None:
        lines.extend(block)
        codes.extend(colours)

    sink = RowSink(take, rows=7)
    with open_capture(str(path)) as cap:
        Pipeline(cap, Options(analyze=True), [sink]).run()
    names = sink.protocols
    return lines, [(names[c & 0x3F] if (c & 0x3F) < len(names) else "", c >> 6) for c in codes]


def test_a_row_sink_hands_out_decode_lines_with_their_ends_in_blocks():
    path = capture("rxe-nfsv3-rdma.pcap")
    got: list[tuple[list[bytes], list[int], bytes]] = []
    sink = RowSink(lambda lines, ends, codes: got.append((lines, ends, codes)), rows=100)
    with open_capture(str(path)) as cap:
        Pipeline(cap, Options(), [sink]).run()
    lines = [line for block, _e, _c in got for line in block]
    assert [line.decode() for line in lines] == decode(path)
    assert all(len(block) <= 100 and len(ends) == len(codes) == len(block) for block, ends, codes in got)
    ends = [e for _b, block_ends, _c in got for e in block_ends]
    assert ends == [sum(len(x) for x in lines[:i + 1]) for i in range(len(lines))]


def test_rows_from_the_helper_are_coloured_as_one_pass_with_the_analysis_colours_them():
    # The helper makes the rows without the analysis; the app's pass adds what the analysis finds
    # (retransmissions, NAKs, overdue replies...) to their colours.
    for name in ("rxe-ib_write_bw-loss.pcap", "rxe-nfsv41-loss.pcap", "siw-nfsv3-loss.pcap",
                 "rxe-ib_send_bw-rnr.pcap"):
        path = capture(name)
        lines, colours = _one_pass(path)
        assert any(sev for _p, sev in colours)
        model = CaptureModel(str(path))
        try:
            model.start()
            assert model.wait(120)
            index = model.index
            assert index.count == len(lines) and index.coloured == index.count
            assert [index.row(i) for i in range(index.count)] == [line.decode() for line in lines]
            codes = [index.code(i) for i in range(index.count)]
            assert [(index.protocol(c), PacketIndex.severity(c)) for c in codes] == colours, name
        finally:
            model.close()


def test_the_rows_are_made_by_a_helper_process_that_goes_with_the_model(tmp_path):
    path = capture("rxe-nfsv3-concurrent.pcap")
    model = CaptureModel(str(path))
    model.start()
    proc = model.index._worker
    assert proc is not None and proc.pid != os.getpid()
    assert model.wait(120) and proc.wait(10) == 0
    model.close()
    # closed while it works (30,000 frames take it a good part of a second): it is killed.  The helper alone
    # is started: the analysis pass beside it, compiled, may hold the interpreter long enough for the
    # helper to finish before close() runs.
    big = build_cycled(tmp_path / "cycled.pcapng", 30_000)
    model = CaptureModel(str(big))
    model.index.start_worker(str(big))
    proc = model.index._worker
    assert proc is not None and proc.poll() is None
    model.close()
    assert proc is not None and proc.returncode == -signal.SIGKILL


def test_a_row_writer_appends_text_ends_and_codes_to_its_files():
    with tempfile.TemporaryFile() as text, tempfile.TemporaryFile() as ends, tempfile.TemporaryFile() as codes:
        w = RowWriter(text.fileno(), ends.fileno(), codes.fileno())
        assert w.write([b"a", b"bc"], [1, 3], b"\x01\x02") == 2
        assert w.write([b"def"], [6], b"\x43") == 3
        assert os.pread(text.fileno(), 100, 0) == b"abcdef"
        assert list(array("Q", os.pread(ends.fileno(), 100, 0))) == [1, 3, 6]
        assert os.pread(codes.fileno(), 100, 0) == b"\x01\x02\x43"
