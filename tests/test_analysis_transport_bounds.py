"""The transport analysis's state stays bounded on READs retried without end, and pickles (the TUI's
checkpoints pickle the analyzer every few thousand frames: ``rdmaspy/tui/checkpoints.py``)."""
from __future__ import annotations

import copy
import pickle
import sys
from pathlib import Path

import pytest

from rdmaspy.analysis.analyzer import Analyzer
from rdmaspy.analysis.transport import _DONE_READS, _MAX_READS, _READ_COST, Transport
from rdmaspy.craft import write_pcap
from rdmaspy.engine import Engine
from rdmaspy.readers import open_capture

from conftest import ROOT, capture

sys.path.insert(0, str(ROOT / "tests"))
from test_analysis_transport_loss import Hosts  # noqa: E402


def _transport(an: Analyzer) -> Transport:
    return next(m for m in an.modules.values() if isinstance(m, Transport))


def _longest_retries(an: Analyzer) -> int:
    return max((len(r.retries) for cs in _transport(an).conns.values() for st in cs.streams.values()
                for r in st.reads), default=0)


def _retried(tmp_path: Path, numbered: bool, times: int) -> tuple[Analyzer, int]:
    """READ 100 (4 packets) answered in part, then asked again from 102 ``times`` times, each answered with
    102 only (a Middle, as rxe answers it): (the analyzer after the last frame, the pickled size then)."""
    h = Hosts(numbered=numbered)
    frames = h.warm(95) + [h.read(100, 4096)] + h.answer(100, 4)[:2]
    for _ in range(times):
        frames += [h.read(102, 2048, 2048)] + h.answer(102, 2, first=102)[:1]
    path = tmp_path / f"retried-{numbered}-{times}.pcap"
    write_pcap(str(path), frames, step_ns=10_000)
    an = Analyzer(strict=True, keep_findings=False)
    engine = Engine(strict=True)
    with open_capture(str(path)) as cap:
        for frame in cap:
            an.feed(engine.dissect(frame))
    return an, len(pickle.dumps(an, pickle.HIGHEST_PROTOCOL))


@pytest.mark.parametrize("numbered", [True, False], ids=["identifications", "no identifications"])
def test_a_read_asked_again_thousands_of_times_keeps_bounded_state_that_pickles(tmp_path: Path,
                                                                                numbered: bool) -> None:
    # before: each READ sent again named the one before it, a chain as long as the retries: pickling
    # the analyzer hit the recursion limit at a few hundred, and every retry stayed alive
    an_500, size_500 = _retried(tmp_path, numbered, 500)
    an, size_3000 = _retried(tmp_path, numbered, 3000)
    assert size_3000 <= size_500 * 1.1
    # the READs waiting are charged to the memory budget, as many as are kept
    assert _transport(an).held == _transport(an_500).held >= _MAX_READS * _READ_COST
    assert _longest_retries(an) <= _MAX_READS + _DONE_READS + 1
    assert _transport(pickle.loads(pickle.dumps(an))).conns


def test_a_read_asked_again_thousands_of_times_is_said_each_time(tmp_path: Path) -> None:
    an, _size = _retried(tmp_path, False, 2000)
    an.finish()
    (stats,) = [st.stats(cs.mtu) for cs in _transport(an).conns.values() for st in cs.streams.values()
                if st.read_requests]
    assert stats.read_requests == 2001 and stats.retransmissions == 2000


def test_the_real_read_retry_capture_cycled_pickles_and_says_the_same_each_time() -> None:
    """rxe-read-retry-stall.pcap (a READ asked again six times, captures/README.md) over and over, as the
    TUI benchmark's long files cycle it, the connection's QPs and PSNs repeating: each copy's retries
    resume the READs of the copies before (before: a chain 7 READs longer each copy)."""
    with open_capture(str(capture("rxe-read-retry-stall.pcap"))) as cap:
        frames = list(cap)
    span = frames[-1].ts - frames[0].ts + 1_000_000
    an = Analyzer(strict=True)
    engine = Engine(strict=True)
    counts = []
    for n in range(150):
        before = len(an.findings)
        for f in frames:
            g = copy.copy(f)
            g.num, g.ts = f.num + n * len(frames), f.ts + n * span
            an.feed(engine.dissect(g))
        if n in (1, 149):
            counts.append(sorted(x.rule_def.id for x in an.findings[before:]))
    assert _longest_retries(an) <= _MAX_READS + _DONE_READS + 1
    assert _transport(pickle.loads(pickle.dumps(an, pickle.HIGHEST_PROTOCOL))).conns
    assert counts[0] == counts[1] and "ib.read_response_sequence" in counts[0]
