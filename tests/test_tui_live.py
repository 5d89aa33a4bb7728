"""Live mode, ``rdmaspy capture -i IFACE --tui``, in a real terminal (tmux) across a veth pair between two
network namespaces (root only): RoCEv2 frames made by rdmaspy.craft are sent from one namespace while
the TUI captures in the other.  The list grows as they arrive, the status bar counts them, a filter
shows what ``decode -Y`` shows on the written file, quitting stops the capture cleanly, and the file
holds the frames sent, byte for byte, as without ``--tui``."""
from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time

import pytest

from rdmaspy import craft
from rdmaspy.readers import open_capture
from test_tui_tmux import Terminal
from tui_helpers import ROOT, decode

pytestmark = [pytest.mark.netns,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root: network namespaces and raw sockets")]

NETNS = ROOT / "tests" / "netns"


@pytest.fixture
def net():
    tag = "u" + secrets.token_hex(4)
    subprocess.run([str(NETNS / "veth-pair.sh"), "up", tag], check=True, stdin=subprocess.DEVNULL)
    try:
        yield tag
    finally:
        subprocess.run([str(NETNS / "veth-pair.sh"), "down", tag], stdin=subprocess.DEVNULL)


def _frames() -> list[bytes]:
    """40 RC SEND Only to QP 0x11, the 25th with a bad ICRC."""
    return [craft.rocev2(4, destqp=0x11, psn=i, payload=bytes([i]) * 32, icrc=0 if i == 24 else "auto")
            for i in range(40)]


def test_live_capture_in_the_tui(net, tmp_path):
    sent = _frames()
    src = tmp_path / "send.pcap"
    craft.write_pcap(str(src), sent)
    out = tmp_path / "live.pcapng"
    term = Terminal(["ip", "netns", "exec", f"rs-{net}-b", sys.executable, "-m", "rdmaspy", "capture",
                     "-i", f"vb-{net}", "--tui", "-w", str(out)], width=140, height=40)
    try:
        term.wait_for(r"capturing: 0 captured")
        subprocess.run(["ip", "netns", "exec", f"rs-{net}-a", sys.executable, str(NETNS / "replay.py"),
                        "-i", f"va-{net}", "-r", "200", str(src)], check=True, capture_output=True,
                       stdin=subprocess.DEVNULL)
        term.wait_for(r"Packets: 40\s+Displayed: 40\s+capturing: 40 captured, Dropped: 0\b")
        screen = term.text()
        assert "     40 " in screen            # the list followed the tail
        term.keys("/")
        time.sleep(0.3)
        term.keys("-l", "icrc.valid == false")
        term.keys("Enter")
        term.wait_for(r"Packets: 40\s+Displayed: 1\b")
        term.keys("q")
        term.wait_for(r"EXITED 0", timeout=30)
    finally:
        term.close()
    with open_capture(str(out)) as cap:
        got = [bytes(f.data) for f in cap]
    assert got == sent
    assert len(decode(out, "-Y", "icrc.valid == false")) == 1
