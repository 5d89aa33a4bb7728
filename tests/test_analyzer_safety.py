"""An analysis module that fails on a packet costs that packet a finding, not the run."""
from __future__ import annotations

import pytest

from rdmaspy.analysis import analyzer as A
from rdmaspy.engine import Engine
from rdmaspy.readers import open_capture

from conftest import capture


class _Boom:
    def __init__(self, an: A.Analyzer) -> None:
        self.seen = 0

    def packet(self, pkt) -> None:
        self.seen += 1
        if pkt.frame.num == 3:
            raise ValueError("no such thing")

    def finish(self) -> None:
        pass


@pytest.fixture
def boom():
    A.load_modules()
    A.MODULES.append(("test.boom", _Boom))
    try:
        yield
    finally:
        A.MODULES.remove(("test.boom", _Boom))


def _packets():
    eng = Engine()
    with open_capture(str(capture("rxe-ib_write_lat.pcap"))) as cap:
        return [eng.dissect(f) for f in cap]


def test_a_failing_module_becomes_a_finding_on_its_packet_and_the_run_goes_on(boom):
    an = A.Analyzer()
    pkts = _packets()
    for p in pkts:
        an.feed(p)
    an.finish()
    errors = [f for f in an.findings if f.rule_def.id == "analysis.error"]
    assert [f.frames for f in errors] == [(3,)]
    assert "test.boom" in errors[0].text and "ValueError: no such thing" in errors[0].text
    assert errors[0] in pkts[2].expert
    assert an.modules["test.boom"].seen == len(pkts)


def test_strict_analysis_lets_the_exception_through(boom):
    an = A.Analyzer(strict=True)
    with pytest.raises(ValueError):
        for p in _packets():
            an.feed(p)
