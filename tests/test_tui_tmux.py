"""``rdmaspy tui`` in a real terminal: run under tmux, keys typed with send-keys, the screen read with
capture-pane.  The status bar's counts, and a filter's Displayed count, must be what ``rdmaspy decode``
(``-Y``) prints."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

from conftest import capture
from tui_helpers import ROOT, decode

NFS_ROCE = capture("rxe-nfsv3-rdma.pcap")
NVME_ROCE = capture("rxe-nvme-rdma.pcap.gz")


def _tmux() -> str:
    path = shutil.which("tmux")
    if path is None:
        pytest.fail("tmux is not installed: scripts/test installs it")
    return path


class Terminal:
    """One tmux session of a given size running one command."""

    def __init__(self, command: list[str], width: int = 140, height: int = 40) -> None:
        self.tmux = _tmux()
        self.name = f"rdmaspy-test-{uuid.uuid4().hex[:8]}"
        # a socket of its own, removed on close (tmux leaves its socket file behind when killed)
        self._dir = tempfile.mkdtemp(prefix="rdmaspy-tmux-")
        self.socket = os.path.join(self._dir, "socket")
        # COLUMNS/LINES inherited from the caller would override the terminal's own size
        env = f"-u COLUMNS -u LINES PYTHONPATH={shlex.quote(str(ROOT))} TERM=xterm-256color"
        # the shell stays after the command ends, so that what it printed last can be read
        line = f"cd {shlex.quote(str(ROOT))} && env {env} {shlex.join(command)}; echo EXITED $?; sleep 600"
        subprocess.run([self.tmux, "-S", self.socket, "-f", os.devnull, "new-session", "-d", "-s", self.name,
                        "-x", str(width), "-y", str(height), line, ";", "set-option", "-g", "window-size", "manual",
                        ";", "resize-window", "-t", self.name, "-x", str(width), "-y", str(height)],
                       check=True, stdin=subprocess.DEVNULL)

    def keys(self, *keys: str) -> None:
        subprocess.run([self.tmux, "-S", self.socket, "send-keys", "-t", self.name, *keys], check=True,
                       stdin=subprocess.DEVNULL)

    def text(self) -> str:
        return subprocess.run([self.tmux, "-S", self.socket, "capture-pane", "-p", "-t", self.name],
                              capture_output=True, text=True, check=True, stdin=subprocess.DEVNULL).stdout

    def wait_for(self, pattern: str, timeout: float = 60.0) -> re.Match:
        end = time.monotonic() + timeout
        text = ""
        while time.monotonic() < end:
            text = self.text()
            m = re.search(pattern, text)
            if m:
                return m
            time.sleep(0.2)
        raise AssertionError(f"{pattern!r} never showed; the screen:\n{text}")

    def close(self) -> None:
        subprocess.run([self.tmux, "-S", self.socket, "kill-server"], capture_output=True, stdin=subprocess.DEVNULL)
        shutil.rmtree(self._dir, ignore_errors=True)


@pytest.fixture
def terminal():
    made: list[Terminal] = []

    def open_terminal(*args: str, **kw) -> Terminal:
        t = Terminal([sys.executable, "-m", "rdmaspy", *args], **kw)
        made.append(t)
        return t

    yield open_terminal
    for t in made:
        t.close()


def test_tui_in_tmux_counts_filter_and_quit(terminal):
    total = len(decode(NFS_ROCE))
    expr = "rpcrdma.xid == 0x7efff5fc"
    shown = len(decode(NFS_ROCE, "-Y", expr))
    term = terminal("tui", str(NFS_ROCE))
    term.wait_for(rf"Packets: {total}\s+Displayed: {total}(?!.*Loading)")
    assert "CM ConnectRequest" in term.text()
    term.keys("Down", "Down", "Down")
    term.wait_for(r"Frame 4: 126 bytes on wire")
    term.keys("/")
    time.sleep(0.3)
    term.keys("-l", expr)
    term.keys("Enter")
    term.wait_for(rf"Packets: {total}\s+Displayed: {shown}\b")
    term.keys("/", "Home", "C-k", "Enter")
    term.wait_for(rf"Packets: {total}\s+Displayed: {total}\b")
    # the transactions view: the first call of the capture (frame 4, answered by frame 6)
    term.keys("2")
    term.wait_for(r"XID\s+Conn\s+Dir\s+Procedure\s+Latency\s+State\s+Call\s+Reply")
    term.wait_for(r"0x7efff5fc\s+1\s+fwd\s+NFSv3 NULL\s+7\.917 ms\s+complete\s+4\s+6\b")
    term.keys("1")
    term.wait_for(r"No\.\s+Time\s+Source")
    term.keys("q")
    term.wait_for(r"EXITED 0")


def test_tui_in_tmux_80x24_and_a_bad_filter(terminal):
    total = len(decode(NFS_ROCE))
    term = terminal("tui", str(NFS_ROCE), width=80, height=24)
    term.wait_for(rf"Packets: {total}")
    term.keys("/")
    time.sleep(0.3)
    term.keys("-l", "bth.opcode ==")
    term.wait_for(r"\^ .*column")
    term.keys("Escape")
    time.sleep(0.5)         # a terminal's Escape waits to see whether a sequence follows
    term.keys("G")
    term.wait_for(r"\b2238\b.*192\.0\.2")
    term.keys("q")
    term.wait_for(r"EXITED 0")


def test_tui_in_tmux_80x24_shows_nvme_transactions_in_nvme_words(terminal):
    """At 80x24 an NVMe/RDMA capture's transactions view titles its columns with the declaration's words
    (CID, Operation, Command), shows a command's latency and state, and under the list the facts of the
    command selected; no RPC word on the screen."""
    term = terminal("tui", str(NVME_ROCE), width=80, height=24)
    term.wait_for(r"Packets: 3590\s+Displayed: 3590")
    term.keys("2")
    term.wait_for(r"CID\s+Conn\s+Dir\s+Operation\s+Latency\s+State\s+Command")
    term.wait_for(r"0x0000\s+1\s+fwd\s+Connect\s+5\.393 ms\s+complete\s+6\b")
    term.wait_for(r"NVMe/RDMA CID 0x0000 Connect\s+Queue 0\s+Controller 1")
    term.wait_for(r"command Send[^\n]*\n[^\n]*RDMA READ[^\n]*SGL 0\.0[^\n]*\n[^\n]*completion SendInv")
    for rpc_word in ("XID", "Procedure", "Call", "Reply", "RDMA_DONE"):
        assert rpc_word not in term.text()
    term.keys("5")
    term.wait_for(r"CID\s+Conn\s+List\s+Length\s+Moved\s+State")
    term.wait_for(r"0x1019\s+1\s+SGL\s+4096\s+4096\s+full")
    term.keys("q")
    term.wait_for(r"EXITED 0")


def test_tui_refuses_a_pipe_with_one_line():
    out = subprocess.run([sys.executable, "-m", "rdmaspy", "tui", str(NFS_ROCE)], capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 1
    assert out.stderr.startswith("rdmaspy: error: rdmaspy tui needs a terminal")
    missing = subprocess.run([sys.executable, "-m", "rdmaspy", "tui", "no-such.pcap"], capture_output=True,
                             text=True, stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert missing.returncode == 1 and "no such file" in missing.stderr
