"""rich where people expect it: progress on stderr for long work (drawn on a terminal once the work takes more
than a second, never on a pipe or a file, gone when the work ends), tables that fold rather than cut
(conversations), and the folded text of stats."""
from __future__ import annotations

import io
import os
import pty
import re
import select
import subprocess
import sys
import time

from rich.console import Console

from conftest import ROOT, capture
from rdmaspy.commands.stats import folded
from rdmaspy.output.progress import Progress, wanted
from rdmaspy.readers import open_capture

NFS = capture("rxe-nfsv3-rdma.pcap")


def test_the_bar_counts_bytes_and_frames_of_the_capture():
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=120)
    n = 0
    with open_capture(str(NFS)) as cap, Progress("stats", cap, lambda: n, enabled=True, delay=0, console=console):
        for _f in cap:
            n += 1
        time.sleep(0.3)
    text = buf.getvalue()
    assert "stats" in text and f"{n:,} frames" in text and "100%" in text


def test_no_bar_when_stderr_is_not_a_terminal_or_the_work_is_short(capsys):
    assert not wanted(io.StringIO())
    buf = io.StringIO()
    with open_capture(str(NFS)) as cap, Progress("x", cap, lambda: 0, enabled=True, delay=5,
                                                 console=Console(file=buf, force_terminal=True)):
        list(cap)
    assert buf.getvalue() == ""


def _read_all(fd: int, until: float) -> bytes:
    out = b""
    while time.monotonic() < until:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            out += data
    return out


def test_a_slow_capture_shows_progress_on_a_terminal_stderr_and_clean_output(tmp_path):
    """stats reads a FIFO fed slowly: after a second the bar appears on stderr (a terminal); stdout,
    a pipe, gets only the report."""
    fifo = tmp_path / "slow.pcap"
    os.mkfifo(fifo)
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "rdmaspy", "stats", str(fifo)], stdout=subprocess.PIPE,
                         stderr=slave, env={**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm"})
    os.close(slave)
    data = NFS.read_bytes()
    with open(fifo, "wb") as feed:
        feed.write(data[:5000])
        feed.flush()
        shown = _read_all(master, time.monotonic() + 2.5)
        feed.write(data[5000:])
    out, _ = p.communicate(timeout=120)
    os.close(master)
    assert p.returncode == 0
    assert b"frames" in shown and b"stats" in shown
    assert out.startswith(b"Statistics: ") and b"\x1b" not in out


def test_stats_lines_fold_at_spaces_under_their_indent():
    line = "  Findings: " + ", ".join(f"rule.number_{i} {i}" for i in range(30))
    lines = folded([line, "short"], 100)
    assert all(len(x) <= 100 for x in lines) and lines[-1] == "short"
    assert all(x.startswith("      ") for x in lines[1:-1])
    assert " ".join(x.strip() for x in lines[:-1]) == line.strip()


def test_conversations_on_a_narrow_terminal_cut_nothing(monkeypatch, capsys):
    from rdmaspy.cli import main
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    for width in ("100", "250"):
        monkeypatch.setenv("COLUMNS", width)
        assert main(["conversations", str(capture("rxe-nfsv3-concurrent.pcap"))]) == 0
        out = re.sub("\x1b\\[[0-9;]*m", "", capsys.readouterr().out)
        assert "…" not in out and max(len(x) for x in out.splitlines()) <= int(width)
        for whole in ("192.0.2.2:43701", "192.0.2.1:20049", "NFS/RDMA(20049)", "closed", "995550", "1016986"):
            assert whole in out, (width, whole)
