"""Shared test helpers: where the captures are, how to ask tshark (the reference decoder)."""
from __future__ import annotations

import gc
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "captures"
FIXTURES = ROOT / "tests" / "fixtures"


def capture(name: str) -> Path:
    """A capture shipped in captures/ or tests/fixtures/."""
    for d in (CAPTURES, FIXTURES):
        p = d / name
        if p.exists():
            return p
    raise FileNotFoundError(name)


def require_tshark() -> str:
    """tshark is installed by scripts/test; a missing one is a broken test set-up, not a skip."""
    path = shutil.which("tshark")
    if path is None:
        pytest.fail("tshark is not installed: run scripts/test, which installs it")
    return path


def tshark_fields(path: os.PathLike | str, fields: list[str], *extra: str) -> list[dict[str, list[str]]]:
    """One dict per frame: field name -> list of values as tshark prints them (empty list if absent).

    Uses -T fields with every occurrence of a field, separated by a character tshark never prints.
    """
    exe = require_tshark()
    cmd = [exe, "-n", "-r", str(path), "-T", "fields", "-E", "separator=\t", "-E", "occurrence=a",
           "-E", "aggregator=\x1f", *extra]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                         env={**os.environ, "LC_ALL": "C"}).stdout
    rows = []
    # one line a frame, ended by "\n" alone: a value may hold the other characters splitlines() breaks at
    for line in out.split("\n")[:-1]:
        cols = line.split("\t")
        cols += [""] * (len(fields) - len(cols))
        rows.append({f: (c.split("\x1f") if c else []) for f, c in zip(fields, cols)})
    return rows


def tshark_int(value: str) -> int:
    """tshark prints integers in decimal or 0x-hex depending on the field's base."""
    return int(value, 0) if value.lower().startswith("0x") else int(value)


@pytest.fixture(scope="session")
def compiled(tmp_path_factory) -> Path:
    """The working tree built as ``pip install .`` builds it (mypyc), once per session: a directory
    whose ``python -m rdmaspy`` runs the compiled decoder (scripts/compiled_tree.py)."""
    import sys
    if shutil.which("gcc") is None and shutil.which("cc") is None:
        pytest.fail("no C compiler: scripts/test installs gcc")
    dest = tmp_path_factory.mktemp("compiled") / "tree"
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "compiled_tree.py"), str(dest)],
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    return dest


def young_collections(run) -> int:
    """The collections of the young generations (and no older one) made while ``run()`` runs."""
    made: list[int] = []

    def note(phase: str, info: dict) -> None:
        if phase == "start" and info["generation"] == 1:
            made.append(1)

    gc.callbacks.append(note)
    try:
        run()
    finally:
        gc.callbacks.remove(note)
    return len(made)
