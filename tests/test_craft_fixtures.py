"""The committed ib_* fixtures are exactly what tests/fixtures/ib_make_fixtures.py builds with craft."""
from __future__ import annotations

import importlib.util

from conftest import FIXTURES


def test_fixtures_are_reproducible(tmp_path) -> None:
    spec = importlib.util.spec_from_file_location("ib_make_fixtures", FIXTURES / "ib_make_fixtures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    built = mod.build(tmp_path)
    assert len(built) == len(mod.FIXTURES) >= 4
    for p in built:
        assert p.read_bytes() == (FIXTURES / p.name).read_bytes(), p.name
