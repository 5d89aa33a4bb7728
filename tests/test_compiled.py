"""The compiled decoder (``pip install .`` compiles the per-packet path with mypyc) says exactly what
the Python source says.

The rest of the suite runs on the editable, pure-Python install.  Here the working tree is built
as a wheel builds it (scripts/compiled_tree.py), every shipped capture and fixture is decoded by
both, and the outputs must be the same bytes: summary lines, the ``-V`` tree, JSON, the expert
list, the flows, the conversations and the statistics.  mypyc checks annotations at run time, so a value of another type than its
annotation says (a None where the code promised a class) fails in the compiled build only: the
fuzz tests run there too.  The build is the session's ``compiled`` fixture (conftest.py).
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest


from conftest import ROOT

from digests import MODES, digests as _digests


def test_the_per_packet_modules_are_really_compiled(compiled):
    probe = "import rdmaspy.packet, rdmaspy.dissectors.infiniband as ib, rdmaspy.pipeline as p, " \
            "rdmaspy.dissectors._icrc as c, rdmaspy.output._scan as s, rdmaspy.output._line as l, " \
            "rdmaspy.analysis._ring as r, rdmaspy._heap as h, rdmaspy.dissectors._hex as x, " \
            "rdmaspy.dissectors.ib_cm as cm; " \
            "print(ib.__file__); print(p.__file__); print(c.__file__); print(s.__file__); print(l.__file__); " \
            "print(r.__file__); print(h.__file__); print(x.__file__); print(cm.__file__)"
    res = subprocess.run([sys.executable, "-c", probe], cwd=compiled, capture_output=True, text=True, check=True)
    paths = res.stdout.split()
    assert paths and all(p.startswith(str(compiled)) and not p.endswith(".py") for p in paths), paths


def test_every_capture_decodes_to_the_same_bytes_compiled_and_pure(compiled):
    pure, comp = _digests(ROOT), _digests(compiled)
    assert set(pure) == set(comp) and len(pure) >= 40
    differ = [(Path(f).name, mode) for f in pure for mode in MODES if pure[f][mode] != comp[f][mode]]
    assert not differ, differ


def test_fuzz_and_reader_tests_pass_on_the_compiled_build(compiled):
    for d in ("tests", "captures"):
        if not (compiled / d).exists():
            shutil.copytree(ROOT / d, compiled / d, ignore=shutil.ignore_patterns("__pycache__"))
    suites = ["tests/test_dissectors_no_exception.py", "tests/test_rpcrdma_fuzz.py", "tests/test_iwarp_fuzz.py",
              "tests/test_readers_fuzz.py", "tests/test_readers_damage.py", "tests/test_engine_fast_path.py",
              "tests/test_icrc.py", "tests/test_line_scan.py", "tests/test_deferred_layers.py",
              "tests/test_summary_line.py", "tests/test_analysis_transport_ring.py",
              # records and texts of the analysis and the hot path, made and read by interpreted code too
              "tests/test_analysis_model.py", "tests/test_hot_path_texts.py", "tests/test_analysis_recent_frames.py",
              # the fast paths' word reads against the careful walks; the tables' direct dissectors
              "tests/test_rpc_fast_paths.py", "tests/test_registry.py",
              # the C library's heap kept between the readers' chunks
              "tests/test_heap.py", "tests/test_infiniband_plans.py",
              # hexadecimal digits in C; the request of a Middle or Last packet
              "tests/test_hexfmt.py", "tests/test_reassembly_requests.py",
              # NVMe/RDMA: little-endian declarations, built and hostile capsules, the lab captures
              "tests/test_fields_little_endian.py", "tests/test_nvme_rdma.py", "tests/test_nvme_lab_captures.py"]
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *suites],
                         cwd=compiled, capture_output=True, text=True, timeout=1200)
    assert res.returncode == 0, res.stdout[-4000:]


def test_checkpoints_of_the_compiled_pipeline_decode_on_as_decoding_straight_through(compiled):
    # The TUI's checkpoints pickle the pipeline's state (compiled classes: @mypyc_attr(serializable=True))
    # every 50 frames of every shipped capture; a frame's tree decoded on from the unpickled copy must be
    # the tree ``decode -V`` prints decoding straight through (tests/test_tui.py, run on the compiled tree).
    for d in ("tests", "captures"):
        if not (compiled / d).exists():
            shutil.copytree(ROOT / d, compiled / d, ignore=shutil.ignore_patterns("__pycache__"))
    probe = "from rdmaspy.fields import Header; import rdmaspy.analysis.transport as t; " \
            "print(Header.__module__, t.__file__)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}        # the compiled tree, not the source
    res = subprocess.run([sys.executable, "-c", probe], cwd=compiled, env=env, capture_output=True, text=True,
                         check=True)
    assert not res.stdout.split()[1].endswith(".py"), res.stdout          # the analysis really is compiled
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_tui.py",
                          "-k", "checkpoint"], cwd=compiled, env=env, capture_output=True, text=True, timeout=1200)
    assert res.returncode == 0, res.stdout[-4000:]
    assert " passed" in res.stdout and "deselected" in res.stdout, res.stdout[-2000:]


@pytest.mark.parametrize("how, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_compiled_run_stopped_by_a_signal_exits_with_its_status(compiled, how, code):
    """Ctrl-C or SIGTERM while the compiled decoder runs (blocked on a full pipe, in the middle of
    frames): the command's status and nothing on stderr.  Raised inside compiled code, the signal's
    exception could land in an operation mypyc holds infallible (a multiplication of big integers checks
    for signals) and abort the process ("fatal: out of memory", status -6): six runs in six did so."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}        # the compiled tree, not the source
    big = ROOT / "captures" / "rxe-nfsv3-concurrent.pcap"
    for _ in range(3):
        p = subprocess.Popen([sys.executable, "-m", "rdmaspy", "decode", str(big), "-V"], cwd=compiled, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert p.stdout.readline().startswith(b"Frame 1:")
        p.send_signal(how)
        _out, err = p.communicate(timeout=60)
        assert (p.returncode, err) == (code, b"")
