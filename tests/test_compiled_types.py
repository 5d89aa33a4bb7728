"""The modules ``pip install .`` compiles type-check under mypy, as mypyc needs.

When one does not, the wheel build prints one line and installs the pure package: users lose the
compiled speed without an error.  This check takes seconds, so it runs in every suite, long before
tests/test_compiled.py builds the compiled tree.
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys

from conftest import ROOT


def compiled_modules() -> list[str]:
    text = (ROOT / "setup.py").read_text()
    match = re.search(r"^COMPILED = (\[.*?\])", text, re.S | re.M)
    assert match, "setup.py has no COMPILED list"
    return list(ast.literal_eval(match.group(1)))


def test_every_compiled_module_type_checks_as_mypyc_needs():
    modules = compiled_modules()
    assert len(modules) >= 30
    res = subprocess.run([sys.executable, "-m", "mypy", "--ignore-missing-imports", "--follow-imports=silent",
                          "--no-incremental", *modules], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]


def test_the_interpreted_modules_type_check_too():
    """The TUI, the commands, the traffic tools: a hint that lies (a Textual property overridden, a
    peer that may be None) is caught here rather than by a user's traceback."""
    res = subprocess.run([sys.executable, "-m", "mypy", "--ignore-missing-imports", "--follow-imports=silent",
                          "--no-incremental", "rdmaspy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
