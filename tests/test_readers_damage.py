"""Damaged and non-capture files: the frames before the damage, one problem with its byte offset, no traceback.

Readers end the iteration at the first damage and say where it is in ``Capture.problems``;
``rdmaspy decode`` prints the frames it could read, one warning line, and exits 2.  A file
that is no capture at all (empty, text, a directory, missing) is one error line and exit 1.
"""
from __future__ import annotations

import gzip
import subprocess
import sys

import pytest

from conftest import FIXTURES, require_tshark
from rdmaspy.cli import main
from rdmaspy.errors import CaptureError
from rdmaspy.readers import open_capture

sys.path.insert(0, str(FIXTURES))
import readers_build as rb  # noqa: E402

ETH = rb.eth_frames(4)
T = 1_700_000_000_000_000_000


def read_all(path) -> tuple[list, list[str]]:
    with open_capture(str(path)) as cap:
        frames = list(cap)
    return frames, cap.problems


def good_pcap(order: str = "<") -> bytes:
    return rb.pcap_file([(T + i, f) for i, f in enumerate(ETH)], 1, order)


def good_ng(order: str = "<") -> tuple[bytes, list[int]]:
    """A section, one interface, four EPBs; also the offsets of the EPBs."""
    out = rb.shb(order) + rb.idb(1, order)
    offs = []
    for i, f in enumerate(ETH):
        offs.append(len(out))
        out += rb.epb(0, T // 1000 + i, f, order)
    return out, offs


# --- pcap ----------------------------------------------------------------------------------------------
def test_pcap_truncated_last_record(tmp_path):
    data = good_pcap()
    last = len(data) - 16 - len(ETH[-1])
    p = tmp_path / "cut.pcap"
    p.write_bytes(data[:-5])
    frames, problems = read_all(p)
    assert [f.data for f in frames] == ETH[:-1]
    assert problems == [f"truncated record: {len(ETH[-1]) - 5} of {len(ETH[-1])} bytes at byte offset {last}"]


def test_pcap_truncated_record_header(tmp_path):
    p = tmp_path / "cut.pcap"
    data = good_pcap(">")
    p.write_bytes(data + data[24:34])
    frames, problems = read_all(p)
    assert len(frames) == 4
    assert problems == [f"truncated record header (10 of 16 bytes) at byte offset {len(data)}"]


def test_pcap_impossible_length(tmp_path):
    data = bytearray(good_pcap())
    second = 24 + 16 + len(ETH[0])
    data[second + 8:second + 12] = (5 << 20).to_bytes(4, "little")
    p = tmp_path / "bad.pcap"
    p.write_bytes(bytes(data))
    frames, problems = read_all(p)
    assert [f.data for f in frames] == ETH[:1]
    assert problems == [f"bad record: captured length {5 << 20} is larger than the maximum 262144 at byte offset "
                        f"{second}"]


def test_pcap_header_only_is_an_empty_capture(tmp_path):
    p = tmp_path / "hdr.pcap"
    p.write_bytes(rb.pcap_header(1))
    assert read_all(p) == ([], [])


def test_pcap_short_file_header(tmp_path):
    p = tmp_path / "short.pcap"
    p.write_bytes(rb.pcap_header(1)[:20])
    with pytest.raises(CaptureError, match=r"pcap file header truncated \(20 of 24 bytes\)"):
        open_capture(str(p))


# --- pcapng --------------------------------------------------------------------------------------------
def damaged_ng(kind: str) -> tuple[bytes, int, int, str]:
    """(file, frames before the damage, offset, problem text without the offset) for each damage."""
    data, offs = good_ng()
    at = offs[2]
    head = data[:at]
    epb = rb.epb(0, 1, ETH[2])
    n = len(epb)
    if kind == "truncated":
        return data[:-6], 3, offs[3], f"truncated enhanced packet block: {len(rb.epb(0, 1, ETH[3])) - 6} of " \
                                      f"{len(rb.epb(0, 1, ETH[3]))} bytes"
    if kind == "not4":
        return head + rb.block(6, epb[8:-4], length=n + 2) + data[at + n:], 2, at, \
            f"enhanced packet block: bad block length {n + 2} (not a multiple of 4)"
    if kind == "short":
        return head + epb[:4] + (8).to_bytes(4, "little") + epb[8:], 2, at, \
            "enhanced packet block: bad block length 8 (shorter than 12)"
    if kind == "huge":
        return head + epb[:4] + (1 << 30).to_bytes(4, "little") + epb[8:], 2, at, \
            f"enhanced packet block: bad block length {1 << 30} (larger than {16 << 20})"
    if kind == "trailer":
        return head + rb.block(6, epb[8:-4], trailer=n + 4) + data[at + n:], 2, at, \
            f"enhanced packet block: trailing block length {n + 4} does not match the leading {n}"
    if kind == "iface":
        return head + rb.epb(3, 1, ETH[2]) + data[at + n:], 2, at, \
            "enhanced packet block for interface 3, which no interface description block of this section declared"
    if kind == "caplen":
        bad = bytearray(epb)
        bad[20:24] = (n).to_bytes(4, "little")
        return head + bytes(bad) + data[at + n:], 2, at, \
            f"enhanced packet block: captured length {n} does not fit the block of {n} bytes"
    if kind == "epb28":
        return head + rb.block(6, bytes(16)) + data[at:], 2, at, \
            "enhanced packet block: length 28 is shorter than 32"
    if kind == "option":
        body = bytearray(epb[8:-4])
        body += (1).to_bytes(2, "little") + (200).to_bytes(2, "little") + b"abcd"
        opt_at = at + 8 + len(epb[8:-4])
        return head + rb.block(6, bytes(body)) + data[at + n:], 2, opt_at, \
            "enhanced packet block: option 1 of 200 bytes runs past the end of the block"
    if kind == "bom":
        return head + rb.block(0x0A0D0D0A, b"\x01\x02\x03\x04" + bytes(12)) + data[at:], 2, at, \
            "section header block: bad byte-order magic 01020304"
    if kind == "version":
        shb2 = bytearray(rb.shb())
        shb2[12:14] = (2).to_bytes(2, "little")
        return head + bytes(shb2) + data[at:], 2, at, "section header block: unsupported pcapng version 2.0"
    if kind == "spb_no_iface":
        return rb.shb() + rb.spb(ETH[0]), 0, len(rb.shb()), "simple packet block before any interface description block"
    if kind == "spb_short":
        return head + rb.spb(ETH[2], wirelen=len(ETH[2]) + 8) + data[at + n:], 2, at, \
            f"simple packet block: {len(ETH[2]) + 8} bytes of packet data do not fit the block of " \
            f"{len(rb.spb(ETH[2]))} bytes"
    if kind == "new_section_forgets":
        return head + rb.shb() + data[at:], 2, at + len(rb.shb()), \
            "enhanced packet block for interface 0, which no interface description block of this section declared"
    raise AssertionError(kind)


DAMAGE = ["truncated", "not4", "short", "huge", "trailer", "iface", "caplen", "epb28", "option", "bom", "version",
          "spb_no_iface", "spb_short", "new_section_forgets"]


@pytest.mark.parametrize("kind", DAMAGE)
def test_pcapng_damage(kind, tmp_path):
    data, before, offset, text = damaged_ng(kind)
    p = tmp_path / f"{kind}.pcapng"
    p.write_bytes(data)
    frames, problems = read_all(p)
    assert [f.data for f in frames] == ETH[:before]
    assert problems == [f"{text} at byte offset {offset}"]


@pytest.mark.parametrize("kind", DAMAGE)
def test_pcapng_damage_frames_before_it_as_tshark(kind, tmp_path):
    """tshark reads the same frames before the damage and calls the file damaged."""
    data, before, _offset, _text = damaged_ng(kind)
    p = tmp_path / f"{kind}.pcapng"
    p.write_bytes(data)
    r = subprocess.run([require_tshark(), "-n", "-r", str(p), "-T", "fields", "-e", "frame.number"],
                       capture_output=True, text=True)
    assert r.stdout.split() == [str(i + 1) for i in range(before)]
    assert r.returncode != 0 and any(w in r.stderr for w in ("damaged", "cut short", "doesn't support"))


@pytest.mark.parametrize("kind", ["truncated", "trailer", "iface"])
def test_pcapng_damage_gzip(kind, tmp_path):
    data, before, offset, text = damaged_ng(kind)
    p = tmp_path / f"{kind}.pcapng.gz"
    p.write_bytes(gzip.compress(data))
    frames, problems = read_all(p)
    assert [f.data for f in frames] == ETH[:before]
    assert problems == [f"{text} at byte offset {offset}"]


def test_cut_gzip_keeps_what_inflated(tmp_path):
    """A gzip file cut short: every frame that decompressed is read, the damage is named."""
    frames = [(T + i, bytes([i & 255]) * 1000) for i in range(3000)]
    raw = rb.pcap_file(frames, 1)
    packed = gzip.compress(raw, 1)
    p = tmp_path / "cut.pcap.gz"
    p.write_bytes(packed[:len(packed) * 2 // 3])
    got, problems = read_all(p)
    assert 0 < len(got) < 3000
    assert [f.data for f in got] == [d for _t, d in frames[:len(got)]]
    assert len(problems) == 1 and problems[0].startswith("damaged gzip data (")
    assert problems[0].endswith(f"at byte offset {24 + len(got) * 1016}")


def test_pcapng_first_block_not_a_section(tmp_path):
    p = tmp_path / "bad.pcapng"
    p.write_bytes(b"\x0a\x0d\x0d\x0a" + bytes(4) + b"abcd" + bytes(20))
    with pytest.raises(CaptureError, match=r"not a pcapng file \(byte-order magic 61626364\)"):
        open_capture(str(p))


@pytest.mark.parametrize("content,message", [
    (b"", "the file is empty"),
    (b"hello, world\n", "not a pcap or pcapng file (magic 68656c6c)"),
    (b"\xd4\xc3", "not a capture file (only 2 bytes)"),
    (gzip.compress(b""), "the file is empty"),
    (gzip.compress(b"#!/bin/sh\n"), "not a pcap or pcapng file (magic 2321"),
    (b"\x1f\x8b\x08\x00garbage", "damaged gzip data"),
])
def test_not_a_capture(content, message, tmp_path):
    p = tmp_path / "file"
    p.write_bytes(content)
    with pytest.raises(CaptureError) as exc:
        open_capture(str(p))
    assert message in str(exc.value)


def test_directory_and_missing_file(tmp_path):
    with pytest.raises(CaptureError, match="is a directory"):
        open_capture(str(tmp_path))
    with pytest.raises(CaptureError, match="no such file"):
        open_capture(str(tmp_path / "nope.pcap"))


# --- the command line ----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["truncated", "trailer", "iface", "huge"])
def test_decode_prints_frames_before_damage_and_warns(kind, tmp_path, capsys):
    data, before, offset, text = damaged_ng(kind)
    p = tmp_path / f"{kind}.pcapng"
    p.write_bytes(data)
    assert main(["decode", str(p)]) == 2
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == before
    assert err.splitlines() == [f"rdmaspy: warning: {p}: {text} at byte offset {offset}; "
                                f"the frames before it were decoded"]


def test_decode_damaged_pcap_exit_2_without_traceback(tmp_path):
    p = tmp_path / "cut.pcap"
    p.write_bytes(good_pcap()[:-5])
    r = subprocess.run([sys.executable, "-m", "rdmaspy", "decode", str(p)], capture_output=True, text=True)
    assert r.returncode == 2
    assert len(r.stdout.splitlines()) == 3
    assert len(r.stderr.splitlines()) == 1 and "truncated record" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("what", ["empty", "text", "directory", "missing"])
def test_decode_not_a_capture_exit_1(what, tmp_path, capsys):
    p = tmp_path / what
    if what == "empty":
        p.write_bytes(b"")
    elif what == "text":
        p.write_text("not a capture\n")
    elif what == "directory":
        p.mkdir()
    assert main(["decode", str(p)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.splitlines()) == 1 and err.startswith("rdmaspy: error: ")


def test_pcap_linktype_word_with_fcs_bits(tmp_path):
    """The FCS bits of the link-type word are not part of the link type."""
    p = tmp_path / "fcs.pcap"
    p.write_bytes(rb.pcap_file([(T, ETH[0])], 1 | 0x04000000 | (2 << 28)))
    with open_capture(str(p)) as cap:
        (f,) = list(cap)
    assert f.linktype == 1 and cap.linktypes == {0: 1}
    assert cap.interfaces[0]["fcs_len"] == 4
