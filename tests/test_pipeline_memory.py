"""What the pipeline frees on a long run: garbage that reached the collector's oldest generation.

The pipeline raises the cycle collector's thresholds while it pulls its source (packets are freed by
their reference counts); with them the oldest generation would hardly ever be collected, and the
analysis makes cycles that live long (a transaction and its segments).  So it collects every
generation each ``FULL_COLLECT_EVERY`` frames."""
from __future__ import annotations

import gc
import weakref

from conftest import capture
from rdmaspy import pipeline
from rdmaspy.pipeline import Options, Pipeline
from rdmaspy.readers import open_capture


class _Cycle:
    def __init__(self) -> None:
        self.me = self


class _OldGarbageSink:
    """Makes a cycle at the first packet, lets it age into the oldest generation, then drops it."""

    def __init__(self) -> None:
        self.held: _Cycle | None = None
        self.ref: weakref.ref[_Cycle] | None = None
        self.seen = 0

    def packet(self, pkt: object) -> None:
        self.seen += 1
        if self.seen == 1:
            self.held = _Cycle()
            self.ref = weakref.ref(self.held)
            gc.collect(1)            # it survives the young generations: now it is in the oldest
        elif self.seen == 2:
            self.held = None         # garbage, in the oldest generation

    def finish(self) -> None:
        pass


def test_garbage_in_the_oldest_generation_is_collected_during_a_long_run(monkeypatch):
    monkeypatch.setattr(pipeline, "FULL_COLLECT_EVERY", 200)
    sink = _OldGarbageSink()
    with open_capture(str(capture("rxe-nfsv3-rdma.pcap"))) as cap:
        pipe = Pipeline(cap, Options(analyze=True), [sink])
        for _pkt in pipe.packets():
            if sink.seen == 1000:
                break
    assert sink.seen == 1000 and sink.ref is not None
    assert sink.ref() is None


def test_garbage_left_before_a_run_is_not_frozen_with_the_modules():
    """A worker runs one task after another: what the last one left (its pipeline's state, in cycles)
    is garbage when the next run freezes what exists; it must be collected first, or it stays."""
    held = _Cycle()
    ref = weakref.ref(held)
    gc.collect()                     # it survives into the oldest generation ...
    del held                         # ... and is garbage there when the run begins
    alive = []
    with open_capture(str(capture("rxe-rc-pingpong.pcap"))) as cap:
        for _pkt in Pipeline(cap, Options()).packets():
            alive.append(ref() is not None)
    assert alive and not any(alive)
