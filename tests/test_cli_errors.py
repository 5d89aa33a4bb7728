"""User mistakes and damaged input: one ``rdmaspy: error:`` line and exit 1, a warning and exit 2 for a
damaged capture, silence on a closed pipe and on Ctrl-C; never a traceback."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import mypy_extensions
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import ROOT, capture
from rdmaspy.readers import base as readers_base, open_capture
from rdmaspy.cli import main

READ_BW = capture("rxe-ib_read_bw.pcap")
BIG = capture("rxe-nfsv3-concurrent.pcap")


def via_subprocess(args: list[str], **kw) -> tuple[int, str, str]:
    p = subprocess.run(["rdmaspy", *args], capture_output=True, text=True, **kw)
    return p.returncode, p.stdout, p.stderr


def via_main(args: list[str], capsys) -> tuple[int, str, str]:
    rc = main(args)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def check_error(result: tuple[int, str, str], *needles: str) -> None:
    rc, out, err = result
    assert rc == 1, err
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("rdmaspy: error: "), err
    assert "Traceback" not in err
    for n in needles:
        assert n in err, (n, err)


@pytest.fixture
def bad_files(tmp_path):
    empty = tmp_path / "empty.pcap"
    empty.write_bytes(b"")
    text = tmp_path / "notes.txt"
    text.write_text("this is not a capture at all\n")
    short = tmp_path / "short.pcap"
    short.write_bytes(b"\xd4\xc3")
    return {"empty": empty, "text": text, "short": short, "dir": tmp_path, "missing": tmp_path / "nope.pcap"}


CASES = [
    (["decode", "{missing}"], ["no such file"]),
    (["decode", "{dir}"], ["is a directory"]),
    (["decode", "{text}"], ["not a pcap or pcapng file"]),
    (["decode", "{empty}"], ["empty"]),
    (["decode", "{short}"], ["not a capture file"]),
    (["decode", str(READ_BW), "-Y", "bth.opcode == "], ["bad filter: expected a value after '==' at column 15"]),
    (["decode", str(READ_BW), "-Y", "bth.opcod == 1"], ["unknown field 'bth.opcod'", "did you mean 'bth.opcode'"]),
    (["decode", "{missing}", "-Y", "(("], ["bad filter"]),        # the filter is checked before the file
    (["decode", str(READ_BW), "-c", "0"], ["argument -c: '0' must be at least 1"]),
    (["decode", str(READ_BW), "-c", "-3"], ["argument -c"]),
    (["decode", str(READ_BW), "-c", "many"], ["'many' is not a whole number"]),
    (["decode", str(READ_BW), "-T", "xml"], ["argument -T: invalid choice: 'xml'"]),
    (["decode"], ["give the capture to read: FILE or -r FILE"]),
    (["decode", str(READ_BW), "--bogus"], ["unrecognized arguments: --bogus"]),
    (["frobnicate"], ["invalid choice: 'frobnicate'"]),
    (["fields", "-T", "yaml"], ["invalid choice: 'yaml'"]),
]


@pytest.mark.parametrize("args, needles", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_errors_are_one_line_and_exit_1_in_process(args, needles, bad_files, capsys):
    check_error(via_main([a.format(**bad_files) for a in args], capsys), *needles)


@pytest.mark.parametrize("args, needles", CASES[:9], ids=[" ".join(c[0]) for c in CASES[:9]])
def test_errors_are_one_line_and_exit_1_as_a_command(args, needles, bad_files):
    check_error(via_subprocess([a.format(**bad_files) for a in args]), *needles)


def test_unreadable_file_in_process(tmp_path, capsys, monkeypatch):
    def denied(path, mode="r", *a, **kw):
        raise PermissionError(13, "Permission denied", path)
    monkeypatch.setattr(readers_base, "open", denied, raising=False)   # where the capture is opened
    check_error(via_main(["decode", str(READ_BW)], capsys), "permission denied")


def test_unreadable_file_as_a_command(tmp_path):
    if os.geteuid() != 0:
        path = tmp_path / "secret.pcap"
        shutil.copy(READ_BW, path)
        path.chmod(0)
        p = subprocess.run(["rdmaspy", "decode", str(path)], capture_output=True, text=True)
        check_error((p.returncode, p.stdout, p.stderr), "permission denied")
        return
    # Root reads anything: the command runs as nobody.  Nobody may not be able to enter the checkout
    # (a fresh clone under ``mktemp -d``) nor pytest's directory, so the package and the capture are
    # copied to a directory of their own that nobody can enter, where only the capture is unreadable.
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("setpriv (util-linux) is needed to test permissions as root")
    place = Path(tempfile.mkdtemp(prefix="rdmaspy-perm-", dir="/tmp"))
    try:
        place.chmod(0o755)
        shutil.copytree(ROOT / "rdmaspy", place / "rdmaspy", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
        # Nobody cannot read root's interpreter prefix either (pyenv under /root): that python falls
        # back to the system's library, so the one pure-Python dependency the decoder imports comes along.
        shutil.copy(mypy_extensions.__file__, place / "mypy_extensions.py")
        for d in (place / "rdmaspy").rglob("*"):
            d.chmod(0o755 if d.is_dir() else 0o644)
        path = place / "secret.pcap"
        shutil.copy(READ_BW, path)
        path.chmod(0)
        cmd = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m", "rdmaspy",
               "decode", str(path)]
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=place,
                           env={**os.environ, "PYTHONPATH": str(place), "PYTHONDONTWRITEBYTECODE": "1"})
        assert "No module named" not in p.stderr, p.stderr
        check_error((p.returncode, p.stdout, p.stderr), "permission denied")
    finally:
        shutil.rmtree(place, ignore_errors=True)


def test_no_command_prints_help_and_exits_1(capsys):
    rc, out, err = via_main([], capsys)
    assert rc == 1 and "usage: rdmaspy" in err and "decode" in err


def test_help_and_version_exit_0(capsys):
    assert main(["--version"]) == 0 and "rdmaspy " in capsys.readouterr().out
    assert main(["decode", "--help"]) == 0 and "-Y EXPR" in capsys.readouterr().out


def damaged(tmp_path):
    data = READ_BW.read_bytes()
    path = tmp_path / "damaged.pcap"
    path.write_bytes(data[:-30])        # the last record loses its end
    return path


def test_damaged_capture_decodes_what_is_there_warns_and_exits_2(tmp_path, capsys):
    path = damaged(tmp_path)
    for rc, out, err in (via_main(["decode", str(path)], capsys), via_subprocess(["decode", str(path)])):
        assert rc == 2
        nums = [int(x.split()[0]) for x in out.splitlines()]
        assert nums[:39] == list(range(1, 40)) and len(nums) <= 40   # the whole frames (and maybe the cut one)
        assert err.count("\n") == 1 and err.startswith("rdmaspy: warning: ") and "truncated" in err
        assert "Traceback" not in err


def test_damaged_capture_with_json_still_exits_2(tmp_path, capsys):
    rc, out, err = via_main(["decode", str(damaged(tmp_path)), "-T", "json"], capsys)
    assert rc == 2 and len(out.splitlines()) in (39, 40) and "warning" in err


def test_closed_pipe_is_quiet():
    p = subprocess.Popen(["rdmaspy", "decode", str(BIG), "-V"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    rc = p.wait(timeout=60)
    assert first.startswith(b"Frame 1:")
    assert err == "", err
    assert rc in (0, -signal.SIGPIPE)


def test_closed_pipe_in_a_shell_pipeline():
    p = subprocess.run(f"rdmaspy decode '{BIG}' | head -1", shell=True, capture_output=True, text=True, timeout=60)
    assert p.stdout.startswith("      1 ") and p.stdout.count("\n") == 1
    assert p.stderr == ""


def test_ctrl_c_exits_130_without_traceback():
    p = subprocess.Popen(["rdmaspy", "decode", str(BIG), "-V"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline().startswith(b"Frame 1:")   # it is running, blocked on the full pipe
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert b"Traceback" not in err and err == b""


def _run_signalled_at(frame_no: int, signals: int) -> tuple[int, BaseException | None]:
    """A run of READ_BW under ``signals_between_frames`` whose source sends the process SIGINT
    ``signals`` times as it reads frame ``frame_no``: how many frames were fed, and what ended it."""
    from rdmaspy.commands.common import signals_between_frames
    from rdmaspy.pipeline import Options, Pipeline
    from rdmaspy.readers import open_capture

    with open_capture(str(READ_BW)) as cap:
        def source():
            for fr in cap:
                if fr.num == frame_no:
                    for _ in range(signals):
                        os.kill(os.getpid(), signal.SIGINT)
                yield fr
        pipe = Pipeline(source(), Options())
        try:
            with signals_between_frames():
                pipe.run()
        except KeyboardInterrupt as exc:
            return pipe.frames, exc
    return pipe.frames, None


def test_ctrl_c_during_a_run_ends_it_between_two_frames():
    """The signal lands while the source reads frame 5 (in compiled code it could land inside an
    operation mypyc aborts the process on): its KeyboardInterrupt comes before frame 5 is fed, and the
    handler is Python's own again afterwards."""
    fed, exc = _run_signalled_at(5, 1)
    assert isinstance(exc, KeyboardInterrupt) and fed == 4
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_second_ctrl_c_before_the_next_frame_interrupts_at_once():
    fed, exc = _run_signalled_at(5, 2)      # the second lands inside the source: no frame fed after it
    assert isinstance(exc, KeyboardInterrupt) and fed == 4


def test_a_run_without_a_signal_ends_as_usual_and_leaves_the_handlers():
    fed, exc = _run_signalled_at(5, 0)
    with open_capture(str(READ_BW)) as cap:
        assert exc is None and fed == sum(1 for _ in cap)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_ctrl_c_in_process_returns_130(monkeypatch, capsys):
    import rdmaspy.commands.decode as decode

    def interrupted(args):
        raise KeyboardInterrupt
    monkeypatch.setattr(decode, "cmd_decode", interrupted)
    assert main(["decode", str(READ_BW)]) == 130


def test_main_restores_sigpipe_handling(capsys):
    before = signal.getsignal(signal.SIGPIPE)
    main(["decode", str(READ_BW), "-c", "1"])
    assert signal.getsignal(signal.SIGPIPE) == before


def test_bad_filter_on_a_terminal_gets_a_caret_under_the_column():
    import pty
    master, slave = pty.openpty()
    p = subprocess.Popen(["rdmaspy", "decode", str(READ_BW), "-Y", "reth and bth.opcode =="],
                         stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    rc = p.wait(timeout=30)
    text = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        text += chunk
    os.close(master)
    lines = text.decode().replace("\r", "").splitlines()
    assert rc == 1 and p.stdout.read() == b""
    assert lines[0] == "rdmaspy: error: bad filter: expected a value after '==' at column 23: reth and bth.opcode =="
    assert lines[1:] == ["    reth and bth.opcode ==", "    " + " " * 22 + "^"]


_PCAP_HEAD = bytes.fromhex("d4c3b2a1020004000000000000000000ffff000001000000")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.binary(max_size=300), with_header=st.booleans())
def test_any_file_contents_end_in_0_1_or_2_without_a_traceback(tmp_path, capsys, body, with_header):
    path = tmp_path / "fuzz.pcap"
    path.write_bytes((_PCAP_HEAD if with_header else b"") + body)
    for args in (["decode", str(path)], ["decode", str(path), "-V", "-x"], ["decode", str(path), "-T", "json"]):
        rc = main(args)
        out, err = capsys.readouterr()
        assert rc in (0, 1, 2), err
        assert "Traceback" not in err and err.count("\n") <= 1


def test_a_signal_deferred_before_a_wait_for_input_ends_the_run_before_the_wait():
    """Ctrl-C while the run was busy is deferred; if the source then waits for input that may never come
    (a FIFO whose writer is silent), the signal ends the run before the wait, not after a second Ctrl-C."""
    import threading
    from rdmaspy.readers.base import defer_signal, drop_signals
    from rdmaspy.readers.base import chunk_reader

    class Source:
        on_wait = None
    r, w = os.pipe()
    late = threading.Timer(10, os.write, (w, b"x"))     # without the fix the read would wait for this
    late.start()
    try:
        with open(r, "rb") as stream:
            read = chunk_reader(stream, Source())
            defer_signal(signal.default_int_handler, signal.SIGINT, None)
            with pytest.raises(KeyboardInterrupt):
                read(4096)
    finally:
        late.cancel()
        drop_signals()
        os.close(w)
