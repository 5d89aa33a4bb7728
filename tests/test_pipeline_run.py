"""The pipeline's pull of a whole source: ``run`` (its own loop) and ``packets`` (a generator) show the
same packets, stop at the count, finish the sinks once, and leave the cycle collector as they found it."""
from __future__ import annotations

import gc

from conftest import ROOT, young_collections

from rdmaspy import pipeline
from rdmaspy.pipeline import Options, Pipeline
from rdmaspy.readers import open_capture

CAPTURE = ROOT / "captures" / "rxe-nfsv3-rdma.pcap"


class _Kept:
    def __init__(self) -> None:
        self.nums: list[int] = []
        self.finished = 0

    def packet(self, pkt) -> None:
        self.nums.append(pkt.frame.num)

    def finish(self) -> None:
        self.finished += 1


def _pipeline(sink: _Kept, count: int = 0) -> Pipeline:
    return Pipeline(open_capture(str(CAPTURE)), Options(count=count), [sink])


def test_run_and_packets_show_the_same_packets_and_finish_once() -> None:
    ran, pulled = _Kept(), _Kept()
    _pipeline(ran).run()
    yielded = [p.frame.num for p in _pipeline(pulled).packets()]
    assert ran.nums == pulled.nums == yielded and len(ran.nums) > 1000
    assert ran.finished == pulled.finished == 1


def test_run_stops_at_the_count() -> None:
    sink = _Kept()
    pipe = _pipeline(sink, count=25)
    pipe.run()
    assert sink.nums == list(range(1, 26)) and sink.finished == 1 and pipe.frames == 25


def test_the_cycle_collector_is_left_as_it_was_found() -> None:
    before = gc.get_threshold()
    frozen = gc.get_freeze_count()
    _pipeline(_Kept()).run()
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen
    for _ in _pipeline(_Kept()).packets():
        pass
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen


class _CollectorAtFinish(_Kept):
    """A sink that notes the collector's settings as it finishes."""

    def __init__(self) -> None:
        super().__init__()
        self.threshold: tuple[int, int, int] | None = None
        self.frozen = 0

    def finish(self) -> None:
        self.threshold = gc.get_threshold()
        self.frozen = gc.get_freeze_count()
        super().finish()


def test_the_sinks_finish_under_the_runs_collector() -> None:
    """The analysis' last records are made as the sinks finish: with the collector's own thresholds
    back and the heap thawed, their allocations would start collections walking all the sinks hold."""
    for pull in ("run", "packets"):
        sink = _CollectorAtFinish()
        pipe = _pipeline(sink)
        if pull == "run":
            pipe.run()
        else:
            for _ in pipe.packets():
                pass
        assert sink.finished == 1
        assert sink.threshold is not None and sink.threshold[0] == pipeline.YOUNG_THRESHOLD, pull
        assert sink.frozen > 0, pull


def test_run_collects_the_young_generations_as_often_as_asked() -> None:
    frames = _pipeline(_Kept()).packets()
    total = sum(1 for _ in frames)
    assert total > 1024
    assert young_collections(lambda: _pipeline(_Kept()).run()) == total // pipeline.YOUNG_COLLECT_EVERY
    assert young_collections(lambda: _pipeline(_Kept()).run(young_every=100)) == total // 100


class _Cycle:
    def __init__(self) -> None:
        self.me = self


class _Watch(_Kept):
    """A sink that notes, at the first packet, whether a cycle dropped before the run is still there."""

    def __init__(self, ref) -> None:
        super().__init__()
        self.ref = ref
        self.alive_at_first: bool | None = None

    def packet(self, pkt) -> None:
        if self.alive_at_first is None:
            self.alive_at_first = self.ref() is not None
        super().packet(pkt)


def test_what_an_earlier_run_left_is_collected_before_the_next_run_freezes() -> None:
    """A worker's previous task leaves cycles behind: a run after another collects them before it freezes
    the heap (frozen, they would outlive the whole run)."""
    import weakref

    _pipeline(_Kept(), count=5).run()               # a run has ended in this process
    gc.disable()                                    # nothing but the run's own collection frees it
    try:
        left = _Cycle()
        ref = weakref.ref(left)
        del left
        watch = _Watch(ref)
        _pipeline(watch, count=5).run()
    finally:
        gc.enable()
    assert watch.alive_at_first is False
