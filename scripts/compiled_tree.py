#!/usr/bin/env python3
"""Build the compiled decoder (setup.py, mypyc) of this working tree into DIR, in place.

    python3 scripts/compiled_tree.py DIR

DIR gets a copy of rdmaspy/, setup.py and pyproject.toml with the compiled modules beside their
sources, so that ``python -m rdmaspy`` run in DIR is what ``pip install .`` installs.  The build
is kept while the sources are unchanged (a hash of them is stored in DIR).  The test of the
compiled build (tests/test_compiled.py) and the decode benchmark use it.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def sources() -> list[Path]:
    files = sorted(p for p in (ROOT / "rdmaspy").rglob("*") if p.is_file() and "__pycache__" not in p.parts
                   and not p.name.endswith((".so", ".pyc")))
    return files + [ROOT / "setup.py", ROOT / "pyproject.toml"]


def digest(files: list[Path]) -> str:
    h = hashlib.sha256()
    for p in files:
        h.update(str(p.relative_to(ROOT)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def build(dest: Path) -> Path:
    files = sources()
    want = digest(files)
    stamp = dest / ".source-hash"
    if stamp.exists() and stamp.read_text() == want:
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for p in files:
        target = dest / p.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(p, target)
    env = {**os.environ, "RDMASPY_COMPILE": "1", "RDMASPY_NATIVE": "0"}
    res = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=dest, env=env,
                         capture_output=True, text=True)
    if res.returncode != 0:
        tail = "\n".join((res.stdout + res.stderr).splitlines()[-30:])
        raise SystemExit(f"compiled build failed in {dest}:\n{tail}")
    # pip byte-compiles what it installs: so does this tree (the modules that stay Python)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(dest / "rdmaspy")], check=True)
    stamp.write_text(want)
    return dest


def main() -> int:
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    print(build(Path(sys.argv[1]).resolve()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
