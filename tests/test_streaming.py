"""Every build streams: output leaves as it is made, memory does not grow with the capture, and an
interrupt leaves every line made so far.

The compiled build (``pip install .``, mypyc) once held all of ``decode -T json`` until the end,
because mypyc turned the generator comprehensions of the output loop into lists.  Here both builds
decode captures made of the shipped real captures, cycled (tests/cycled.py): peak memory at N and
at 4N frames, and a capture fed through a FIFO a piece at a time.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import ROOT
from cycled import build as build_cycled

N = 10_000


@pytest.fixture(scope="module")
def cycled(tmp_path_factory) -> dict[int, Path]:
    d = tmp_path_factory.mktemp("cycled")
    return {n: build_cycled(d / f"real-{n}.pcapng", n) for n in (N, 4 * N)}


@pytest.fixture(params=["pure", "compiled"])
def tree(request) -> Path:
    """The directory whose ``python -m rdmaspy`` runs: the source, or the compiled build."""
    return ROOT if request.param == "pure" else request.getfixturevalue("compiled")


# Runs a command in a fresh process and prints the peak resident memory of it (KiB, Linux).
_PEAK = r"""
import resource, subprocess, sys
with open(sys.argv[1], "wb") as out:
    rc = subprocess.run(sys.argv[2:], stdout=out).returncode
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def peak_kib(tree: Path, args: list[str], tmp_path: Path) -> tuple[int, int, Path]:
    """(exit code, peak RSS in KiB, output file) of ``rdmaspy ARGS`` run from ``tree``."""
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, "-c", _PEAK, str(out), sys.executable, "-m", "rdmaspy", *args],
                         cwd=tree, capture_output=True, text=True, timeout=900, check=True)
    rc, kib = map(int, res.stdout.split())
    return rc, kib, out


def test_the_compiled_build_compiles_the_streaming_output(compiled):
    probe = "import rdmaspy.pipeline as p, rdmaspy.output.lines as l, rdmaspy.output.sinks as s, " \
            "rdmaspy.output.jsonlines as j; print(p.__file__, l.__file__, s.__file__, j.__file__)"
    res = subprocess.run([sys.executable, "-c", probe], cwd=compiled, capture_output=True, text=True, check=True)
    paths = res.stdout.split()
    assert len(paths) == 4 and not any(p.endswith(".py") for p in paths), paths


@pytest.mark.parametrize("mode", [["decode"], ["decode", "-T", "json"]], ids=["summary", "json"])
def test_peak_memory_of_the_compiled_build_does_not_grow_with_the_capture(compiled, cycled, mode, tmp_path):
    peaks = {}
    for n, path in cycled.items():
        rc, kib, out = peak_kib(compiled, [*mode, str(path)], tmp_path)
        assert rc == 0
        with open(out, "rb") as f:
            assert sum(1 for _ in f) == n         # every frame decoded: the run really was 4 times longer
        peaks[n] = kib
    # Held output costs kilobytes per frame (JSON: about 6), so 3N more frames would add 100 MB or more;
    # a decoder that streams needs the same memory for both, give or take its caches.
    assert peaks[4 * N] <= peaks[N] * 1.15 + 4096, peaks


def _complete_frames(data: bytes, tmp_path: Path) -> int:
    """How many whole frames the first bytes of a capture hold."""
    from rdmaspy.readers import open_capture
    part = tmp_path / "part.pcapng"
    part.write_bytes(data)
    with open_capture(str(part)) as cap:
        return sum(1 for _ in cap)


def open_writer(fifo: Path, proc: subprocess.Popen):
    """The FIFO's writing end, once the command has opened its reading end (not forever if it fails)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError:                 # ENXIO: no reader yet
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the command did not open the FIFO: {proc.communicate()[1][-2000:]!r}")
            time.sleep(0.02)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "wb", buffering=0)


def _write_quietly(feed, data: bytes) -> None:
    try:
        feed.write(data)
    except BrokenPipeError:            # the command ended early: the test says why
        pass


def _close_quietly(feed) -> None:
    try:
        feed.close()
    except BrokenPipeError:
        pass


@pytest.mark.parametrize("mode", [["decode"], ["decode", "-T", "json"]], ids=["summary", "json"])
def test_lines_come_out_before_the_capture_ends_and_stay_after_ctrl_c(tree, cycled, mode, tmp_path):
    data = cycled[N].read_bytes()
    first = data[:len(data) // 4]
    shown = _complete_frames(first, tmp_path)
    assert 100 < shown < N
    fifo = tmp_path / "capture.fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen([sys.executable, "-m", "rdmaspy", *mode, str(fifo)], cwd=tree,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    feed = None
    try:
        feed = open_writer(fifo, proc)
        # The first quarter is written (from a thread: the command's output must be read meanwhile);
        # the rest is held back, and every frame written so far must come out now.
        writer = threading.Thread(target=_write_quietly, args=(feed, first), daemon=True)
        writer.start()
        got = b""
        deadline = time.monotonic() + 120
        while got.count(b"\n") < shown and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 1)
            if ready:
                chunk = os.read(proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    break
                got += chunk
        assert got.count(b"\n") == shown, "the lines of the frames written so far did not come out"
        writer.join(timeout=60)
        assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if feed is not None:
            _close_quietly(feed)
    assert proc.returncode == 130 and err == b"", err
    lines = (got + rest).split(b"\n")
    assert lines[-1] == b"" and len(lines) - 1 == shown      # whole lines, none lost, none made up
    if "json" in mode:
        assert [json.loads(line)["frame.number"] for line in lines[:-1]] == list(range(1, shown + 1))
