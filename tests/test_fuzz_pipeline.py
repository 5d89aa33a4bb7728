"""A short run of the in-process fuzzer (tests/fuzz_pipeline.py): mutated frames of every shipped capture,
in order, through the engine, the analysis, the flows builder, the summary, JSON and tree outputs."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzz_pipeline  # noqa: E402


def test_mutated_captures_raise_nothing_and_stay_within_memory():
    report = fuzz_pipeline.run(seconds=4.0, seed=18)
    assert report.frames > 1000, report.text()
    assert report.clean(), report.text()
    assert report.rss_peak - report.rss_start < 256 << 20, report.text()


def test_mutated_hostile_captures_too():
    paths = sorted(fuzz_pipeline.ROOT.glob("tests/fixtures/hostile_*.pcap"))
    assert paths
    report = fuzz_pipeline.run(seconds=1.5, seed=5, rate=0.6, paths=paths)
    assert report.frames > 100 and report.clean(), report.text()


def test_mutations_change_frames():
    import random
    rnd = random.Random(1)
    data = bytes(range(200))
    assert sum(fuzz_pipeline.mutate(data, rnd) != data for _ in range(50)) > 40
