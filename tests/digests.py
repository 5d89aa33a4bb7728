"""Every shipped capture and fixture through every command, reduced to one digest per output.

Shared by the test that keeps outputs unchanged across refactors (tests/test_output_unchanged.py,
against tests/golden/outputs.json) and the one that compares the compiled build with the source
(tests/test_compiled.py).  The digests are made in one process per tree (``python -c``), so
hundreds of decodes cost no interpreter start-ups.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import CAPTURES, FIXTURES, ROOT

# mode -> argv before the file; "{out}" stands for a file the command writes (its bytes are digested).
MODES: dict[str, list[str]] = {
    "summary": ["decode"],
    "tree": ["decode", "-V"],
    "json": ["decode", "-T", "json"],
    "expert": ["expert", "-n", "0"],
    "flows": ["flows", "-T", "jsonl"],
    "flows_document": ["flows", "-o", "{out}"],
    "conversations": ["conversations"],
    "stats": ["stats"],
    "annotate": ["annotate", "-o", "{out}"],
}

# Decodes every file in every mode in one process and prints {file name: {mode: [rc, sha256, stderr]}}.
_DIGESTS = r"""
import contextlib, hashlib, io, json, os, sys, tempfile
sys.path.insert(0, os.getcwd())
from rdmaspy.cli import main
import rdmaspy.writers.pcapng as pcapng   # the section header names the OS: the same output on every machine
pcapng.host_names = lambda: ('x86_64', 'Linux any')
modes = json.loads(sys.argv[1])
os.chdir(sys.argv[2])      # the files are named relative to the checkout: outputs do not depend on where it is
out = {}
with tempfile.TemporaryDirectory() as tmp:
    target = os.path.join(tmp, "out")
    for path in sys.argv[3:]:
        for mode, argv in modes.items():
            buf = io.BytesIO()
            text = io.TextIOWrapper(buf, encoding="utf-8", write_through=True)
            err = io.StringIO()
            writes = "{out}" in argv
            args = [target if a == "{out}" else a for a in argv]
            with contextlib.redirect_stdout(text), contextlib.redirect_stderr(err):
                try:
                    rc = main([*args, path])
                except SystemExit as exc:
                    rc = exc.code
            text.flush()
            data = buf.getvalue()
            if writes:
                data = open(target, "rb").read() if os.path.exists(target) else b""
                if os.path.exists(target):
                    os.unlink(target)
            name = os.path.basename(os.path.dirname(path)) + "/" + os.path.basename(path)
            # a message naming the output file names it as the command line does, not its temporary place
            out.setdefault(name, {})[mode] = [rc, hashlib.sha256(data).hexdigest(),
                                              err.getvalue().replace(target, "{out}")]
print(json.dumps(out, sort_keys=True))
"""


def files() -> list[str]:
    """The shipped captures and fixtures, named relative to the checkout (as outputs print them)."""
    found = sorted(str(p.relative_to(ROOT)) for p in CAPTURES.glob("*.pcap*"))
    found += sorted(str(p.relative_to(ROOT)) for p in FIXTURES.glob("*.pcap*"))
    return found


def digests(cwd: Path, modes: dict[str, list[str]] = MODES) -> dict:
    """{"captures/x.pcap": {mode: [rc, sha256, stderr]}} as the tree at ``cwd`` decodes them."""
    res = subprocess.run([sys.executable, "-c", _DIGESTS, json.dumps(modes), str(ROOT), *files()], cwd=cwd,
                         capture_output=True, text=True, timeout=1800)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout)
