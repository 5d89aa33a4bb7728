"""Refactoring never changes what a user sees: every shipped capture and fixture gives the same
summary, -V tree, JSON, expert list, flows (JSON Lines and document), conversations, stats and
annotated pcapng as recorded in tests/golden/outputs.json.

When an output changes on purpose (a fix), regenerate the record with
``python3 tests/golden/update.py`` and say in the commit which output changed and why.
"""
from __future__ import annotations

import json
from pathlib import Path

from conftest import ROOT
from digests import digests

GOLDEN = Path(__file__).parent / "golden" / "outputs.json"


def test_every_command_gives_the_recorded_output_on_every_capture():
    want = json.loads(GOLDEN.read_text())
    have = digests(ROOT)
    assert set(have) == set(want), sorted(set(have) ^ set(want))
    differ = [f"{name} {mode}" for name in sorted(want) for mode in want[name]
              if have[name].get(mode) != want[name][mode]]
    assert not differ, "outputs changed (regenerate with tests/golden/update.py if intended):\n" + "\n".join(differ)
