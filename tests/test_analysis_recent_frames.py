"""The frames the transactions' analysis remembers as delivered: the last ``limit`` first added, as the
ordered dict they replace kept them (a key set again stays where it was first added)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rdmaspy.analysis.transactions import RecentFrames


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 8), st.lists(st.integers(0, 20), max_size=200))
def test_recent_frames_answer_as_an_ordered_dict_cut_at_its_oldest_key(limit: int, frames: list[int]) -> None:
    model: dict[int, None] = {}
    recent = RecentFrames(limit)
    for frame in frames:
        model[frame] = None
        if len(model) > limit:
            del model[next(iter(model))]
        recent.add(frame)
        assert len(recent) == len(model)
        assert all((probe in recent) == (probe in model) for probe in range(21))


def test_the_oldest_frame_goes_first_and_a_repeat_keeps_its_place() -> None:
    recent = RecentFrames(3)
    for frame in (1, 2, 3, 1, 4):
        recent.add(frame)
    assert 1 not in recent and {2, 3, 4} == {f for f in range(6) if f in recent}
