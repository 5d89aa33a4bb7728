"""``rdmaspy decode FILE``: the summary lines, -V, -x, -c, -T json, -Y, and colours on a terminal."""
from __future__ import annotations

import os
import pty
import select
import struct
import subprocess
import sys

import pytest

from conftest import capture, tshark_fields
from rdmaspy.cli import main
from rdmaspy.readers import open_capture

READ_BW = capture("rxe-ib_read_bw.pcap")


def frames_of(path) -> list:
    with open_capture(str(path)) as cap:
        return list(cap)


def write_pcap(path, records: list[tuple[int, bytes]], linktype: int = 1) -> None:
    """records: (timestamp in ns, frame bytes)."""
    out = [struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, linktype)]
    for ts, data in records:
        out.append(struct.pack("<IIII", ts // 1_000_000_000, ts % 1_000_000_000, len(data), len(data)) + data)
    path.write_bytes(b"".join(out))


def run(*args: str, capsys=None) -> tuple[int, str, str]:
    if capsys is None:
        p = subprocess.run(["rdmaspy", *args], capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr
    rc = main(list(args))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_summary_lines_give_number_time_addresses_protocol_length_info(capsys):
    rc, out, err = run("decode", str(READ_BW), capsys=capsys)
    assert rc == 0 and err == ""
    lines = out.splitlines()
    frames = frames_of(READ_BW)
    assert len(lines) == len(frames) == 40
    want = tshark_fields(READ_BW, ["frame.number", "frame.time_relative", "ip.src", "ip.dst", "frame.len"])
    for line, frame, row in zip(lines, frames, want):
        num, rel, src, arrow, dst, proto, length, *info = line.split()
        assert int(num) == frame.num == int(row["frame.number"][0])
        assert abs(float(rel) - float(row["frame.time_relative"][0])) < 1e-6
        assert (src, arrow, dst) == (row["ip.src"][0], "→", row["ip.dst"][0])
        assert proto == "RoCEv2" and int(length) == len(frame.data) == int(row["frame.len"][0])
        assert info
    assert "RC RDMA READ Request" in lines[0] and "Len=4096" in lines[0]


def test_count_stops_after_n_shown_packets(capsys):
    rc, out, _ = run("decode", str(READ_BW), "-c", "3", capsys=capsys)
    assert rc == 0 and [int(x.split()[0]) for x in out.splitlines()] == [1, 2, 3]
    rc, out, _ = run("decode", str(READ_BW), "-c", "2", "-Y", "reth", capsys=capsys)
    assert rc == 0 and [int(x.split()[0]) for x in out.splitlines()] == [1, 6]


def test_verbose_prints_every_layer_and_field(capsys):
    rc, out, _ = run("decode", str(READ_BW), "-V", "-c", "2", capsys=capsys)
    assert rc == 0
    blocks = out.rstrip("\n").split("\n\n")
    assert len(blocks) == 2
    first = blocks[0].splitlines()
    assert first[0] == "Frame 1: 74 bytes on wire, 74 bytes captured (link type 1, interface 0)"
    for text in ("Base Transport Header", "    Opcode: RC RDMA READ Request (12)", "RDMA Extended Transport Header",
                 "    DMA Length: 4096 bytes", "    Source Address: 192.0.2.2", "    ICRC valid: True"):
        assert text in first, text
    assert "ACK Extended Transport Header" in blocks[1]


def test_hex_dump_shows_every_byte_and_its_ascii(capsys):
    rc, out, _ = run("decode", str(READ_BW), "-x", "-c", "1", capsys=capsys)
    assert rc == 0
    summary, blank, *dump = out.rstrip("\n").split("\n")
    assert summary.split()[0] == "1" and blank == ""
    data = frames_of(READ_BW)[0].data
    got = bytearray()
    for i, line in enumerate(dump):
        assert line[:4] == f"{i * 16:04x}"
        got += bytes.fromhex(line[6:55].replace("  ", " "))
        ascii_part = line[56:]
        assert ascii_part == "".join(chr(b) if 32 <= b < 127 else "." for b in data[i * 16:i * 16 + 16])
    assert bytes(got) == data


def test_verbose_and_hex_together(capsys):
    rc, out, _ = run("decode", str(READ_BW), "-V", "-x", "-c", "1", capsys=capsys)
    assert rc == 0
    lines = out.splitlines()
    assert lines[0].startswith("Frame 1:") and any(x.startswith("0000  52 54 00 00 00 01") for x in lines)
    assert lines.index("Invariant CRC") < next(i for i, x in enumerate(lines) if x.startswith("0000  "))


def test_json_lines_one_object_per_packet(capsys):
    import json
    rc, out, _ = run("decode", str(READ_BW), "-T", "json", capsys=capsys)
    objs = [json.loads(x) for x in out.splitlines()]
    assert rc == 0 and len(objs) == 40 and objs[39]["frame.number"] == 40


def test_display_filter_through_the_command(capsys):
    rc, out, _ = run("decode", str(READ_BW), "-Y", 'bth.opcode == "RC RDMA READ Request" && reth.dma_length == 4096',
                     capsys=capsys)
    assert rc == 0 and [int(x.split()[0]) for x in out.splitlines()] == [1, 6, 11, 16, 21, 26, 31, 36]
    rc, out, _ = run("decode", str(READ_BW), "-Y", "frame.number > 100", capsys=capsys)
    assert rc == 0 and out == ""


def _pty_output(args: list[str], **extra_env: str) -> str:
    """Run the command with a terminal as its stdout and collect what it prints."""
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "200"}
    env.pop("NO_COLOR", None)
    env.update(extra_env)
    p = subprocess.Popen(["rdmaspy", *args], stdout=slave, stderr=subprocess.PIPE, env=env)
    os.close(slave)
    chunks = []
    while True:
        r, _, _ = select.select([master], [], [], 20)
        if not r:
            break
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert p.wait(timeout=20) == 0, p.stderr.read()
    return b"".join(chunks).decode("utf-8", "replace")


def test_terminal_output_is_coloured_bad_icrc_red(tmp_path):
    frames = frames_of(READ_BW)[:3]
    bad = bytearray(frames[1].data)
    bad[60] ^= 0xFF                 # payload byte of a READ response: the ICRC no longer matches
    path = tmp_path / "bad_icrc.pcap"
    write_pcap(path, [(frames[0].ts, frames[0].data), (frames[1].ts, bytes(bad)), (frames[2].ts, frames[2].data)])
    text = _pty_output(["decode", str(path)])
    lines = [x for x in text.replace("\r", "").split("\n") if x.strip()]
    assert len(lines) == 3
    red = "\x1b[31m"
    assert red in lines[1] and "Bad ICRC" in lines[1]
    assert red not in lines[0] and red not in lines[2]
    verbose = _pty_output(["decode", str(path), "-V"])
    assert "\x1b[1m" in verbose                      # layer titles in bold
    assert any(red in x and "[Error/checksum]" in x for x in verbose.split("\n"))


def test_terminal_output_respects_no_color():
    text = _pty_output(["decode", str(READ_BW), "-V", "-c", "2"], NO_COLOR="1")
    assert "\x1b[" not in text and "Base Transport Header" in text


def test_piped_output_has_no_escape_codes():
    rc, out, err = run("decode", str(READ_BW), "-V", "-c", "3")
    assert rc == 0 and "\x1b[" not in out and err == ""


def test_decode_as_a_module():
    p = subprocess.run([sys.executable, "-m", "rdmaspy", "decode", str(READ_BW), "-c", "1"],
                       capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.startswith("      1 ")


@pytest.mark.parametrize("name", ["rxe-ucmatose.pcap", "siw-rping.pcap", "rocev2_cnp_cx4lx.pcap",
                                  "rocev2_uc_send_only_scapy.pcap"])
def test_every_mode_runs_on_real_captures(name, capsys):
    n = len(frames_of(capture(name)))
    for extra in ([], ["-V"], ["-x"], ["-T", "json"]):
        rc, out, err = run("decode", str(capture(name)), *extra, capsys=capsys)
        assert rc == 0 and err == "" and out, extra
    rc, out, _ = run("decode", str(capture(name)), capsys=capsys)
    assert len(out.splitlines()) == n
