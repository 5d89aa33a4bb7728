"""Files the commands write: whole or not at all (a temporary name beside the output, renamed on
success), never over the capture being read, errors that name the path, spools named for rdmaspy
and removed when the run is stopped by SIGTERM or Ctrl-C."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, capture
from rdmaspy.cli import main

NFS = capture("rxe-nfsv3-rdma.pcap")

# command line (OUT stands for the output path, IN for the capture)
WRITERS = {
    "flows": ["flows", "IN", "-o", "OUT"],
    "flows-jsonl": ["flows", "IN", "-T", "jsonl", "-o", "OUT"],
    "annotate": ["annotate", "IN", "-o", "OUT"],
    "decode-w": ["decode", "IN", "-w", "OUT"],
}


def line(args: list[str], src: str, out: str) -> list[str]:
    return [src if a == "IN" else out if a == "OUT" else a for a in args]


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_a_command_refuses_to_write_over_the_capture_it_reads(name, tmp_path, capsys):
    src = tmp_path / "v.pcap"
    src.write_bytes(NFS.read_bytes())
    for out in (src, tmp_path / "link.pcap"):
        if out != src:
            out.symlink_to(src)
        assert main(line(WRITERS[name], str(src), str(out))) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "capture being read" in err and str(out) in err
        assert src.read_bytes() == NFS.read_bytes()


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_a_full_disk_is_one_line_naming_the_path(name, capsys):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    assert main(line(WRITERS[name], str(NFS), "/dev/full")) == 1
    err = capsys.readouterr().err
    assert err == "rdmaspy: error: /dev/full: No space left on device\n"


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_success_replaces_the_output_and_leaves_no_temporary_file(name, tmp_path, capsys):
    out = tmp_path / "out"
    out.write_bytes(b"old")
    assert main(line(WRITERS[name], str(NFS), str(out))) == 0
    assert out.read_bytes() != b"old" and out.stat().st_size > 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_failed_run_leaves_the_previous_output_as_it_was(tmp_path, capsys):
    damaged = tmp_path / "not-a-capture.pcap"
    damaged.write_bytes(b"\x00" * 64)
    for name in sorted(WRITERS):
        out = tmp_path / f"{name}.out"
        out.write_bytes(b"previous")
        assert main(line(WRITERS[name], str(damaged), str(out))) == 1
        assert out.read_bytes() == b"previous"
    assert len(list(tmp_path.iterdir())) == 1 + len(WRITERS)


def _pcap_head() -> bytes:
    return NFS.read_bytes()[:24 + 16 + 322]         # the file header and the first record


@pytest.mark.parametrize("name, how", [(n, s) for n in ("flows", "decode-w", "annotate")
                                       for s in (signal.SIGTERM, signal.SIGINT)])
def test_a_run_stopped_by_a_signal_leaves_no_output_spool_or_temporary_file(name, how, tmp_path):
    """The capture is a FIFO that never ends: the run is stopped while it reads, spool and output open."""
    work = tmp_path / "out"
    tmp = tmp_path / "tmp"
    work.mkdir()
    tmp.mkdir()
    fifo = tmp_path / "live.pcap"
    os.mkfifo(fifo)
    out = work / "result"
    p = subprocess.Popen([sys.executable, "-m", "rdmaspy", *line(WRITERS[name], str(fifo), str(out))],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp)})
    with open(fifo, "wb") as feed:
        feed.write(_pcap_head())
        feed.flush()
        deadline = time.monotonic() + 60
        # wait until the run is under way: for flows, its spool exists
        while name == "flows" and not any(work.iterdir()) and not any(tmp.iterdir()):
            assert time.monotonic() < deadline and p.poll() is None
            time.sleep(0.05)
        time.sleep(1.0)
        p.send_signal(how)
        _out, err = p.communicate(timeout=60)
    assert p.returncode == (143 if how == signal.SIGTERM else 130), err
    assert b"Traceback" not in err
    assert list(work.iterdir()) == [] and list(tmp.iterdir()) == []


def test_the_flows_spool_is_named_for_rdmaspy_and_its_process(tmp_path, monkeypatch):
    from rdmaspy.output.flows import FlowBuilder
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    with FlowBuilder() as b:
        (spool,) = tmp_path.iterdir()
        assert spool.name.startswith(f"rdmaspy-flows-{os.getpid()}-")
        assert b is not None
    assert list(tmp_path.iterdir()) == []


def test_flows_spools_beside_its_output(tmp_path, monkeypatch):
    from rdmaspy.commands.flows import spool_dir
    assert spool_dir(str(tmp_path / "f.json")) == str(tmp_path)
    assert spool_dir("-") is None and spool_dir(None) is None
    assert spool_dir(os.devnull) is None
