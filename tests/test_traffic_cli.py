"""`rdmaspy serve` / `rdmaspy load` outside the lab: one-line refusals, option parsing, the summary."""
from __future__ import annotations

import subprocess
import sys

import pytest

from rdmaspy.commands import traffic as T
from rdmaspy.traffic import protocol as P
from rdmaspy.traffic import verbs
from rdmaspy.traffic.session import Result


@pytest.mark.parametrize("argv", [["serve", "--addr", "192.0.2.2"],
                                  ["load", "--src", "192.0.2.1", "--dst", "192.0.2.2"]])
def test_without_rdma_one_line_pointing_to_the_lab(argv):
    if verbs.rdma_devices() and verbs.native_available():
        pytest.skip("this machine has RDMA and the native path")
    r = subprocess.run([sys.executable, "-m", "rdmaspy", *argv], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rdmaspy: error: ") and "lab/run test" in lines[0]


def test_bad_mix_is_a_usage_error():
    r = subprocess.run([sys.executable, "-m", "rdmaspy", "load", "--src", "a", "--dst", "b", "--mix", "nope"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "unknown operation 'nope'" in r.stderr and "Traceback" not in r.stderr


def test_mix_weights_and_pull_reply_only_in_v1():
    assert T._parse_mix("null=3,read", 1) == [P.PROC_NULL] * 3 + [P.PROC_READ]
    assert T._parse_mix("null,pullreply", 2) == [P.PROC_NULL]
    with pytest.raises(T.TrafficUsage):
        T._parse_mix("pullreply", 2)


def test_sizes_with_units():
    sizes = T._parse_sizes("read=64k,echo=100", 8192)
    assert (sizes[P.PROC_READ], sizes[P.PROC_ECHO], sizes[P.PROC_WRITE], sizes[P.PROC_NULL]) == (65536, 100, 8192, 0)


def test_summary_rates_and_percentiles():
    res = [Result(i, P.PROC_READ, 1000, True, (i + 1) / 1000, "write-chunk") for i in range(100)]
    res.append(Result(999, P.PROC_NULL, 0, False, 0.5, "inline", "bad"))
    s = T.summarize(res, 2.0)
    assert (s["calls"], s["ok"], s["failed"], s["bytes"]) == (101, 100, 1, 100_000)
    assert s["ops_per_s"] == pytest.approx(50.5) and s["mb_per_s"] == pytest.approx(0.05)
    assert s["latency_us"]["p50"] == pytest.approx(51_000) and s["latency_us"]["max"] == pytest.approx(500_000)
    assert s["by_op"] == {"read": {"ok": 100, "failed": 0}, "null": {"ok": 0, "failed": 1}}
    assert s["failures"] == ["0x3e7 null: bad"]


class _SilentConn:
    """A connection whose peer took the calls and then went quiet (a wedged QP, a dead server)."""

    def __init__(self, link):
        self.link = link

    def __getattr__(self, name):
        return getattr(self.link, name)


def test_load_gives_up_when_calls_wait_with_nothing_arriving(monkeypatch):
    from argparse import Namespace

    from rdmaspy.traffic.session import Client, LoopLink

    a, _b, _log = LoopLink.pair()
    a.recv = lambda timeout=0.0: None          # nothing ever comes back
    cli = Client(a, version=1, credits=4, inline=P.Inline(1024, 1024), slots=2, slot_size=1 << 16)
    cli.ready = True
    monkeypatch.setattr(T, "STALL_SECONDS", 0.3)
    args = Namespace(duration=0, rate=0, count=3, quiet=True, fault=[], concurrency=2)
    with pytest.raises(ConnectionError, match=r"no reply in 0.3 s with 1 call\(s\) waiting"):
        T._run(args, cli, _SilentConn(a), [P.PROC_NULL], {P.PROC_NULL: 0})
