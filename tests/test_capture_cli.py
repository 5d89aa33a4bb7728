"""``rdmaspy capture`` usage errors: one clear line on stderr, exit 1, never a traceback."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from rdmaspy.capture import bpf
from rdmaspy.commands.capture import default_filter
from rdmaspy.errors import RdmaspyError

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: opening a packet socket")
ENSURE_DEPS = os.path.join(os.path.dirname(__file__), "netns", "ensure-deps.sh")


@pytest.fixture(scope="module", autouse=True)
def libpcap():
    """Capture filters are compiled by libpcap: install it where missing (as root), as the netns scripts do."""
    if os.geteuid() == 0:
        subprocess.run([ENSURE_DEPS], check=True)
    try:
        bpf._libpcap()
    except RdmaspyError as exc:
        pytest.skip(f"{exc} (not root: cannot install it)")


def run(*args: str, without_net_raw: bool = False) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "rdmaspy", "capture", *args]
    if without_net_raw:
        # root, but with CAP_NET_RAW out of the bounding set: exactly the capability the capture needs
        cmd = ["setpriv", "--bounding-set=-net_raw", "--inh-caps=-net_raw", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "LC_ALL": "C", "PYTHONPATH": os.getcwd()})


def one_error(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 1, r
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rdmaspy: error: "), r.stderr
    return lines[0][len("rdmaspy: error: "):]


def test_no_such_interface():
    assert one_error(run("-i", "nosuchif0")).startswith("no such interface: nosuchif0")


@ROOT_ONLY
def test_bad_capture_filter():
    msg = one_error(run("-i", "lo", "-f", "udp port forty"))
    assert msg.startswith("bad capture filter 'udp port forty':")


@ROOT_ONLY
@pytest.mark.parametrize("where, says", [("/nonexistent-dir/x.pcapng", "no such directory"),
                                         ("/proc/x.pcapng", "cannot write"),
                                         ("/", "cannot write"),
                                         ("/dev/full", "/dev/full: write failed: No space left on device")])
def test_unwritable_file(where, says):
    msg = one_error(run("-i", "lo", "-w", where, "-c", "1"))
    assert says in msg


@ROOT_ONLY
def test_output_through_a_symbolic_link_is_refused(tmp_path):
    """Run as root, -w must not follow a link planted where the file goes (to /etc/passwd, say)."""
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    link = tmp_path / "out.pcapng"
    link.symlink_to(victim)
    msg = one_error(run("-i", "lo", "-w", str(link), "-c", "1"))
    assert msg == f"{link}: cannot write: it is a symbolic link, which capture does not follow (name the file itself)"
    assert victim.read_bytes() == b"precious" and link.is_symlink()
    # the file itself, named: it is overwritten as before
    r = run("-i", "lo", "-w", str(victim), "-a", "duration:0.2", "-q")
    assert r.returncode == 0, r.stderr
    assert victim.read_bytes()[:4] == b"\x0a\x0d\x0d\x0a"


@ROOT_ONLY
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) is not installed")
def test_no_permission_names_the_capability():
    msg = one_error(run("-i", "lo", without_net_raw=True))
    assert "CAP_NET_RAW" in msg and "no permission to capture on lo" in msg


@pytest.mark.parametrize("args, says", [
    (["-b", "filesize:10"], "-b and -a filesize/files need -w FILE"),
    (["-w", "x.pcapng", "-b", "files:3"], "-b files:N needs -b filesize:KB"),
    (["-w", "x.pcapng", "-a", "files:3"], "-a files:N needs -b filesize:KB"),
    (["-Y", "bth.opcode =="], "bad filter:"),
])
def test_inconsistent_options(args, says):
    assert one_error(run("-i", "lo", *args)).startswith(says)


def test_malformed_option_values_are_usage_errors():
    assert "-a takes duration:N" in one_error(run("-i", "lo", "-a", "minutes:3"))
    assert "is not a port number" in one_error(run("-i", "lo", "--iwarp", "70000"))


def test_default_filter_compiles_for_both_link_types():
    expr = default_filter([20049, 7174], cooked=False)
    assert expr.startswith("udp port 4791 or ether proto 0x8915 or tcp port 20049 or tcp port 7174")
    prog = bpf.kernel_program(expr, False, 262144)
    assert prog[-2:] == [(6, 0, 0, 262144), (6, 0, 0, 0)]      # accept with the snap length, else drop
    cooked = bpf.kernel_program(default_filter([], cooked=True), True, 1500)
    # the cooked header's protocol became the kernel's ancillary protocol load
    assert (0x28, 0, 0, (bpf.SKF_AD_OFF + bpf.SKF_AD_PROTOCOL) & 0xFFFFFFFF) in cooked
    assert all(k < 0x10000 or k >= 0xFFFFF000 - 0x200000 for _c, _t, _f, k in cooked)


def test_cook_refuses_what_the_kernel_cannot_see():
    with pytest.raises(RdmaspyError, match="cooked header"):
        bpf.cook([(0x28, 0, 0, 4), (6, 0, 0, 1)])      # ldh [4]: the address length


def test_empty_filter_keeps_everything_cut_to_the_snap_length():
    assert bpf.kernel_program("  ", False, 96) == [(6, 0, 0, 96)]
