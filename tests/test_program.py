"""The program's own process (``python -m rdmaspy``, the ``rdmaspy`` command: ``rdmaspy.__main__.run``) ends
without the interpreter's teardown: what it wrote, to standard output and to files, is all there, its exit
status is main()'s, and the exit functions still run."""
from __future__ import annotations

import os
import subprocess
import sys

from conftest import capture
from rdmaspy.cli import main
from rdmaspy.readers import open_capture

BIG = capture("rxe-nfsv3-concurrent.pcap")


def program(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rdmaspy", *args], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=120)


def test_the_program_writes_every_line_and_the_whole_file(tmp_path, capsys):
    written = tmp_path / "out.pcapng"
    p = program(["decode", str(BIG), "-w", str(written), "-P"])
    assert main(["decode", str(BIG)]) == 0
    assert p.returncode == 0 and p.stderr == ""
    assert p.stdout == capsys.readouterr().out
    with open_capture(str(BIG)) as cap:
        want = [bytes(f.data) for f in cap]
    with open_capture(str(written)) as cap:
        got = [bytes(f.data) for f in cap]
    assert got == want and len(got) > 1000


def test_the_program_exits_with_mains_status():
    assert program(["decode", str(BIG), "-c", "1"]).returncode == 0
    bad = program(["decode", str(BIG), "--no-such-option"])
    assert bad.returncode == 1 and bad.stderr.startswith("rdmaspy: error: ")
    assert program(["--version"]).stdout.startswith("rdmaspy ")


def test_the_program_runs_the_exit_functions(tmp_path):
    ran = tmp_path / "ran"
    (tmp_path / "sitecustomize.py").write_text(
        f"import atexit\natexit.register(lambda: open({str(ran)!r}, 'w').write('ran'))\n")
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    p = program(["decode", str(BIG), "-c", "1"], PYTHONPATH=path)
    assert p.returncode == 0 and p.stdout.startswith("      1 ")
    assert ran.read_text() == "ran"
