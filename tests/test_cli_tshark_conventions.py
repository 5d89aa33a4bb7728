"""tshark's conventions where a tshark user types them: -r, - for standard input, -w, -T fields with
-e/-E, -t, -l, -n, --color with NO_COLOR/FORCE_COLOR; ``fields`` with no match; one warning for a link
type rdmaspy does not decode.  tshark is the oracle where it prints the same thing."""
from __future__ import annotations

import io
import os
import re
import struct
import subprocess
import sys
import time

import pytest

from conftest import ROOT, capture, require_tshark
from rdmaspy.cli import main
from rdmaspy.output.lines import LineWriter
from rdmaspy.readers import open_capture
from rdmaspy.writers.pcapng import PcapngWriter

READ_BW = capture("rxe-ib_read_bw.pcap")
NFS = capture("rxe-nfsv3-rdma.pcap")


def rdmaspy(*args: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The command as a user runs it (a separate process, standard input and output as pipes)."""
    return subprocess.run([sys.executable, "-m", "rdmaspy", *args], input=stdin, capture_output=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, timeout=300)


def tshark(*args: str) -> str:
    return subprocess.run([require_tshark(), *args], capture_output=True, text=True, check=True,
                          env={**os.environ, "LC_ALL": "C", "TZ": "UTC"}).stdout


def test_dash_r_reads_the_same_capture_as_the_positional_file(capsys):
    assert main(["decode", str(READ_BW)]) == 0
    positional = capsys.readouterr().out
    assert main(["decode", "-r", str(READ_BW)]) == 0
    assert capsys.readouterr().out == positional and positional.count("\n") == 40
    for cmd in ("stats", "expert", "conversations"):
        assert main([cmd, "-r", str(READ_BW)]) == 0
        assert "rxe-ib_read_bw.pcap" in capsys.readouterr().out or cmd == "conversations"


def test_capture_given_twice_or_not_at_all_is_a_usage_error(capsys):
    assert main(["decode", str(READ_BW), "-r", str(READ_BW)]) == 1
    assert "not both" in capsys.readouterr().err
    assert main(["stats"]) == 1
    assert "FILE or -r FILE" in capsys.readouterr().err


def test_dash_reads_standard_input_as_a_stream():
    data = READ_BW.read_bytes()
    from_file = rdmaspy("decode", str(READ_BW))
    for args in (("decode", "-"), ("decode", "-r", "-")):
        p = rdmaspy(*args, stdin=data)
        assert p.returncode == 0 and p.stderr == b""
        assert p.stdout == from_file.stdout
    stats = rdmaspy("stats", "-T", "json", "-", stdin=data)
    assert stats.returncode == 0 and b'"frames": 40' in stats.stdout


def test_annotate_and_tui_refuse_standard_input_in_one_line(capsys):
    assert main(["annotate", "-", "-o", os.devnull]) == 1
    assert "not -" in capsys.readouterr().err
    assert main(["tui", "-"]) == 1
    assert "not -" in capsys.readouterr().err


def test_write_keeps_the_packets_the_filter_and_count_show_with_their_comments(tmp_path, capsys):
    src = tmp_path / "commented.pcapng"
    frames = list(open_capture(str(READ_BW)))
    with PcapngWriter(str(src)) as w:
        w.add_interface(1, name="rxe0", tsresol=9)
        for f in frames:
            w.write_packet(0, f.ts, f.data, f.wirelen, comment=f"note {f.num}" if f.num % 2 else None)
    out = tmp_path / "out.pcapng"
    assert main(["decode", str(src), "-Y", "bth.opcode == 14", "-c", "5", "-w", str(out)]) == 0
    assert capsys.readouterr().out == ""               # as tshark -w: no lines unless -P
    rows = tshark("-r", str(out), "-T", "fields", "-e", "frame.time_epoch", "-e", "frame.comment",
                  "-e", "infiniband.bth.opcode").splitlines()
    wanted = [f for f in frames if f.data[42] == 14][:5]
    assert len(rows) == 5
    for row, f in zip(rows, wanted):
        epoch, comment, opcode = row.split("\t")
        assert opcode == "14"
        assert epoch == f"{f.ts // 10**9}.{f.ts % 10**9:09d}"
        assert comment == (f"note {f.num}" if f.num % 2 else "")
    back = list(open_capture(str(out)))
    assert [b.data for b in back] == [f.data for f in wanted]
    assert main(["decode", str(src), "-c", "2", "-w", str(out), "-P"]) == 0
    assert capsys.readouterr().out.count("\n") == 2


def test_write_to_standard_output_is_a_capture_another_decode_reads():
    p = rdmaspy("decode", str(READ_BW), "-c", "3", "-w", "-")
    assert p.returncode == 0 and p.stdout[:4] == b"\x0a\x0d\x0d\x0a"
    again = rdmaspy("decode", "-", stdin=p.stdout)
    assert again.stdout.decode().count("\n") == 3


SHARED_FIELDS = ["frame.number", "frame.len", "frame.cap_len", "frame.time_relative", "frame.time_epoch",
                 "eth.src", "eth.dst", "ip.src", "ip.dst", "ip.ttl", "udp.srcport", "udp.dstport", "udp.length"]


@pytest.mark.parametrize("layout", [[], ["-E", "header=y", "-E", "separator=,", "-E", "quote=d"],
                                    ["-E", "separator=/s", "-E", "occurrence=f"]])
def test_fields_print_what_tshark_prints_for_the_fields_it_shares(layout, capsys):
    for path in (READ_BW, NFS):
        args = [a for f in SHARED_FIELDS for a in ("-e", f)]
        assert main(["decode", str(path), "-T", "fields", *args, *layout]) == 0
        ours = capsys.readouterr().out
        assert ours == tshark("-n", "-r", str(path), "-T", "fields", *args, *layout)
        assert ours.count("\n") == len(list(open_capture(str(path)))) + ("header=y" in layout)


def test_fields_take_rdmaspy_names_repeated_values_and_unknown_names(capsys):
    assert main(["decode", str(READ_BW), "-c", "1", "-T", "fields", "-e", "bth.opcode", "-e", "bth.destqp",
                 "-e", "reth.va", "-e", "reth", "-e", "aeth"]) == 0
    assert capsys.readouterr().out == "12\t0x000019\t0x000056492e972000\t1\t\n"
    assert main(["decode", str(READ_BW), "-T", "fields", "-e", "bth.opcod"]) == 1
    assert "did you mean 'bth.opcode'" in capsys.readouterr().err
    assert main(["decode", str(READ_BW), "-e", "bth.opcode"]) == 1
    assert "-T fields" in capsys.readouterr().err
    assert main(["decode", str(READ_BW), "-T", "fields", "-e", "bth.psn", "-E", "quote=x"]) == 1


def _time_column(line: str) -> str:
    m = re.match(r"\s*\d+\s+(\d{4}-\d\d-\d\d \S+|\S+)", line)
    assert m is not None, line
    return m.group(1)


def test_time_formats_match_tsharks_time_column(capsys):
    env_tz = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    try:
        for fmt in ("a", "ad", "d", "dd", "e", "r", "u", "ud"):
            assert main(["decode", str(READ_BW), "-t", fmt, "-Y", "frame.number != 2"]) == 0
            ours = [_time_column(line) for line in capsys.readouterr().out.splitlines()]
            theirs = [_time_column(line)
                      for line in tshark("-n", "-r", str(READ_BW), "-t", fmt, "-Y", "frame.number != 2").splitlines()]
            assert len(ours) == 39
            assert ours == theirs, fmt
    finally:
        if env_tz is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = env_tz
        time.tzset()


def test_line_buffered_output_writes_every_line_as_it_is_made():
    stream = io.BytesIO()
    each = LineWriter(stream, False, limit=1)
    each.line(b"one")
    assert stream.getvalue() == b"one\n"
    held = LineWriter(io.BytesIO(), False)
    held.line(b"one")
    assert held.stream.getvalue() == b""


def test_dash_l_and_dash_n_change_nothing_in_the_output(capsys):
    assert main(["decode", str(READ_BW)]) == 0
    plain = capsys.readouterr().out
    assert main(["decode", "-n", "-l", str(READ_BW)]) == 0
    assert capsys.readouterr().out == plain


@pytest.mark.parametrize("args, env, coloured", [
    (["--color", "always"], {}, True), (["--color", "never"], {"FORCE_COLOR": "1"}, False),
    ([], {"FORCE_COLOR": "1"}, True), ([], {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False), ([], {}, False),
    (["--color", "always"], {"NO_COLOR": "1"}, True)])
def test_color_follows_the_option_then_no_color_and_force_color(args, env, coloured):
    clean = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    p = subprocess.run([sys.executable, "-m", "rdmaspy", "decode", "-V", "-c", "1", str(READ_BW), *args],
                       capture_output=True, env={**clean, "PYTHONPATH": str(ROOT), **env}, timeout=120)
    assert p.returncode == 0
    assert (b"\x1b[" in p.stdout) is coloured


def test_fields_with_no_match_say_so_and_fail(capsys):
    assert main(["fields", "nosuch"]) == 1
    assert "no field or protocol matches 'nosuch'" in capsys.readouterr().err
    assert main(["fields", "bth.psn"]) == 0


def test_an_undecoded_link_type_is_one_warning_not_a_line_per_packet(tmp_path, capsys):
    path = tmp_path / "user0.pcap"
    recs = [struct.pack("<IIII", i, 0, 20, 20) + bytes(range(20)) for i in range(50)]
    path.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 147) + b"".join(recs))
    assert main(["decode", str(path)]) == 0
    cap = capsys.readouterr()
    assert cap.err.count("link type 147 is not decoded") == 1 and cap.err.count("\n") == 1
    assert cap.out.count("\n") == 50 and "147" not in cap.out
    for cmd in ("stats", "expert", "flows"):
        args = [cmd, str(path)] + (["-T", "jsonl"] if cmd == "flows" else [])
        assert main(args) == 0
        assert capsys.readouterr().err.count("link type 147") == 1


def test_ek_with_fields_is_what_tshark_writes(capsys):
    import orjson
    for path in (READ_BW, NFS):
        args = [a for f in SHARED_FIELDS for a in ("-e", f)]
        assert main(["decode", str(path), "-T", "ek", *args]) == 0
        ours = [orjson.loads(line) for line in capsys.readouterr().out.splitlines()]
        theirs = [orjson.loads(line) for line in tshark("-n", "-r", str(path), "-T", "ek", *args).splitlines()]
        assert ours == theirs and len(ours) == 2 * len(list(open_capture(str(path))))


def test_ek_without_fields_groups_every_field_by_protocol(capsys):
    import orjson
    assert main(["decode", str(READ_BW), "-c", "2", "-T", "ek"]) == 0
    lines = [orjson.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [list(x) for x in lines[::2]] == [["index"], ["index"]]
    assert lines[0]["index"] == {"_index": "packets-2026-11-21", "_type": "doc"}
    doc = lines[1]
    assert doc["timestamp"] == "1795243000879"
    layers = doc["layers"]
    assert list(layers)[:4] == ["frame", "eth", "ip", "udp"]
    assert layers["bth"]["bth_bth_opcode"] == "12" and layers["bth"]["bth_bth_destqp"] == "0x000019"
    assert layers["bth"]["bth_bth_se"] is False
    assert layers["frame"]["frame_frame_time_epoch"] == "1795243000.879627000"


def test_lines_wait_for_company_only_where_somebody_reads_them_as_they_come(tmp_path):
    # a terminal or a pipe gets each line within INTERVAL; a file and the null device get blocks only
    from rdmaspy.output.lines import is_timed
    read_end, write_end = os.pipe()
    with open(write_end, "wb") as pipe, open(read_end, "rb"):
        assert is_timed(pipe)
    with open(tmp_path / "out.txt", "wb") as regular:
        assert not is_timed(regular)
    with open(os.devnull, "wb") as null:
        assert not is_timed(null)
    assert not is_timed(io.BytesIO())
