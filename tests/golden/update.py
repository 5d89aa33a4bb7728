#!/usr/bin/env python3
"""Rewrite tests/golden/outputs.json from the working tree (after an intended output change)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from conftest import ROOT  # noqa: E402
from digests import digests  # noqa: E402

if __name__ == "__main__":
    (HERE / "outputs.json").write_text(json.dumps(digests(ROOT), indent=1, sort_keys=True) + "\n")
    print(f"wrote {HERE / 'outputs.json'}")
