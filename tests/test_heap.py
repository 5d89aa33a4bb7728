"""The C library's heap kept between the readers' chunks (rdmaspy/_heap.c, built with the compiled decoder):
a decode frees a chunk a mebibyte, and glibc gave its pages back to the kernel only to fault them in again."""
from __future__ import annotations

import platform

import pytest

from rdmaspy import cli
from rdmaspy.readers import base


def _heap_c():
    return pytest.importorskip("rdmaspy._heap")


def test_glibc_takes_both_settings_and_other_sizes_are_refused() -> None:
    heap = _heap_c()
    assert heap.keep_freed(base.HEAP_KEEPS_UP_TO, base.HEAP_SERVES_BELOW) is (platform.libc_ver()[0] == "glibc")
    for bad in [(-1, 0), (0, -1), (1 << 31, 0), (0, 1 << 31)]:
        with pytest.raises(ValueError):
            heap.keep_freed(*bad)


def test_a_chunk_is_served_by_the_heap_and_freed_chunks_are_kept_for_the_next() -> None:
    # the reader asks for a mebibyte and a bit more (what was left of the last chunk): under the threshold
    from rdmaspy.readers.pcapng import CHUNK
    assert CHUNK + 64 * 1024 < base.HEAP_SERVES_BELOW <= base.HEAP_KEEPS_UP_TO // 2


def test_the_command_line_asks_for_the_heap_before_reading(monkeypatch, tmp_path) -> None:
    asked: list[bool] = []
    monkeypatch.setattr(base, "keep_chunks_in_heap", lambda: asked.append(True) or True)
    missing = tmp_path / "missing.pcap"
    assert cli.main(["decode", str(missing)]) != 0      # a one-line error, after the heap was asked for
    assert asked == [True]


def test_without_the_c_helper_nothing_is_asked(monkeypatch) -> None:
    monkeypatch.setattr(base, "_keep_freed", None)
    assert base.keep_chunks_in_heap() is False
