"""Strings from a capture never reach a terminal as control characters: a pcapng comment and an RPC
machine name holding escape sequences, a bell, a carriage return and a newline are shown escaped in
decode (summary, -V, coloured or not, -T fields), and in the text of stats, expert and conversations."""
from __future__ import annotations

import re

from hypothesis import example, given, strategies as st

from conftest import capture
from rdmaspy.cli import main
from rdmaspy.commands.common import print_text
import io

from rdmaspy.output.lines import LineWriter
from rdmaspy.output.safe import safe_block, safe_lines, safe_text
from rdmaspy.readers import open_capture
from rdmaspy.writers.pcapng import PcapngWriter

NFS = capture("rxe-nfsv3-rdma.pcap")
HOSTILE = "\x1b]0;owned\x07\x1b[2J\r\nFAKE LINE\x9b31m"
# Everything a terminal obeys, except the newline between lines: C0 controls, DEL, C1 controls.
OBEYED = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def hostile_capture(tmp_path):
    """Frames 1-60 of the NFSv3 capture; frame 50's RPC machine name "one" becomes ESC BEL CR, and
    frame 50 carries a comment full of escape sequences."""
    path = tmp_path / "hostile.pcapng"
    with PcapngWriter(str(path)) as w, open_capture(str(NFS)) as cap:
        w.add_interface(1)
        for f in cap:
            if f.num > 60:
                break
            data = f.data
            if f.num == 50:
                assert data[0x7a:0x7d] == b"one"
                data = data[:0x7a] + b"\x1b\x07\r" + data[0x7d:]
            w.write_packet(0, f.ts, data, f.wirelen, comment=HOSTILE if f.num == 50 else None)
    return path


def test_decode_shows_the_capture_strings_escaped(tmp_path, capsys):
    path = str(hostile_capture(tmp_path))
    for args in (["decode", path], ["decode", "-V", path], ["decode", "-V", "-x", path], ["decode", "-A", path],
                 ["decode", "-T", "fields", "-e", "frame.comment", "-e", "rpc.auth.machinename", path]):
        assert main(args) == 0
        out = capsys.readouterr().out
        assert not OBEYED.search(out.replace("\t", "")), args
        assert "FAKE LINE" not in out or "\\nFAKE LINE" in out
    assert main(["decode", "-V", "-Y", "frame.number == 50", path]) == 0
    tree = capsys.readouterr().out
    assert "Comment: \\x1b]0;owned\\x07\\x1b[2J\\r\\nFAKE LINE\\x9b31m" in tree
    assert "Machine Name: \\x1b\\x07\\r" in tree


def test_coloured_output_escapes_the_strings_before_painting(tmp_path, capsys):
    path = str(hostile_capture(tmp_path))
    assert main(["decode", "-V", "--color", "always", "-Y", "frame.number == 50", path]) == 0
    out = capsys.readouterr().out
    assert "\x1b[" in out                                # painted
    unpainted = re.sub("\x1b\\[[0-9;]*m", "", out)      # only the painter's own sequences are raw
    assert not OBEYED.search(unpainted)
    assert "\\x1b]0;owned" in unpainted


def test_reports_escape_what_they_print(capsys):
    print_text(["Findings: a\x1b[31m b\x07", "plain"])
    assert capsys.readouterr().out == "Findings: a\\x1b[31m b\\x07\nplain\n"


def test_stats_expert_and_conversations_print_nothing_a_terminal_obeys(tmp_path, capsys):
    path = str(hostile_capture(tmp_path))
    for cmd in ("stats", "expert", "conversations"):
        assert main([cmd, path]) == 0
        assert not OBEYED.search(capsys.readouterr().out), cmd


@given(st.lists(st.text(), max_size=5))
def test_safe_lines_leave_nothing_a_terminal_obeys_and_change_clean_lines_not(texts):
    lines = [t.encode("utf-8", "surrogatepass") for t in texts]
    safe = safe_lines(list(lines))
    for before, after in zip(lines, safe):
        text = after.decode("utf-8", "surrogatepass")
        assert not re.search("[\x00-\x1f\x7f-\x9f]", text)
        if not re.search("[\x00-\x1f\x7f-\x9f]", before.decode("utf-8", "surrogatepass")):
            assert after == before


def test_safe_lines_find_a_c1_control_among_harmless_characters_of_the_same_lead_byte():
    # "§" (0xC2 0xA7) and "\x85" (0xC2 0x85) share their first byte: a block of "§" lines stays as it is,
    # one C1 control among them is escaped, and the clean lines beside it are left alone.
    clean = ["RFC 8166 §4.1".encode(), "Time: 1 µs".encode()]
    assert safe_lines(list(clean)) == clean
    assert safe_lines([*clean, "next\x85line".encode()]) == [*clean, b"next\\x85line"]


@given(st.text())
def test_safe_text_escapes_every_control_and_only_them(text):
    out = safe_text(text)
    assert not re.search("[\x00-\x1f\x7f-\x9f]", out)
    if not re.search("[\x00-\x1f\x7f-\x9f]", text):
        assert out == text


# Lines of any text, often holding what a safe pass must catch: a newline, a CR, ESC, a C1 control and its
# harmless neighbours of the same lead byte.
_LINE = st.text(st.one_of(st.sampled_from("a\n\r\x1b\x85§é"), st.characters(blacklist_categories=("Cs",))),
                max_size=12)


@given(st.lists(_LINE, min_size=1, max_size=6))
@example(["Name: a\nFAKE LINE", "next"])
def test_a_block_is_made_safe_as_its_lines_are_one_by_one(lines):
    """A tree's lines are joined and checked at once; a newline inside one of them (from the capture)
    shows escaped as it does line by line, and is never taken for the join between two lines."""
    by_line = b"\n".join(safe_lines([line.encode() for line in lines]))
    assert safe_block("\n".join(lines).encode(), lines) == by_line


@given(st.lists(st.tuples(st.booleans(), st.lists(_LINE, min_size=1, max_size=4)), max_size=6),
       st.integers(1, 200))
def test_a_writer_mixing_lines_and_blocks_writes_them_in_order_and_safe(calls, limit):
    got, want = io.BytesIO(), io.BytesIO()
    mixed = LineWriter(got, False, limit, safe=True)
    one_by_one = LineWriter(want, False, limit, safe=True)
    for as_block, lines in calls:
        if as_block:
            mixed.block(lines)
        else:
            for line in lines:
                mixed.text(line)
        for line in lines:
            one_by_one.text(line)
    mixed.flush()
    one_by_one.flush()
    assert got.getvalue() == want.getvalue()
    assert not OBEYED.search(got.getvalue().decode())


# --- the verbose tree is safe as it is made (its block is not checked again) -------------------------
_HOSTILE_TEXT = st.text(st.one_of(st.sampled_from("a\n\r\x1b\x85\x7f§é…"), st.characters(blacklist_categories=("Cs",))),
                        max_size=16)


def _hostile_packet(label: str, value: object, comment: str, expert_text: str):
    from rdmaspy.fields import Field
    from rdmaspy.packet import Expert, Frame, Packet

    pkt = Packet(Frame(7, 1_000, 1, b"\0" * 20, 20, comment=comment))
    lay = pkt.add_layer("data", None, pkt.frame.data, 0, 20, label=label)
    for display in ("str", "dec", "bytes"):
        lay.add(Field(f"test.{display}", 0, f"As {display}", display, catalogued=False), value)
    lay.child("data", None, 0, 4, label=label)
    pkt.expert = [Expert("warning", "sequence", expert_text, "RFC 0000 §1", "test.rule")]
    return pkt


@given(_HOSTILE_TEXT, st.one_of(_HOSTILE_TEXT, st.binary(max_size=60)), _HOSTILE_TEXT, _HOSTILE_TEXT)
@example("Data\x1b[2J", b"\x1b]0;owned\x07", "\r\nFAKE LINE", "bell\x07")
def test_tree_lines_hold_no_control_a_terminal_obeys_whatever_the_capture_says(label, value, comment, text):
    """A layer label, a value shown as text, a comment and an expert item's text from the capture:
    every line of the tree comes out escaped, so the writer need not check the block again."""
    from rdmaspy.output.text import tree_lines

    for line in tree_lines(_hostile_packet(label, value, comment, text), 0):
        assert not OBEYED.search(line) and "\n" not in line, line


@given(_HOSTILE_TEXT, st.one_of(_HOSTILE_TEXT, st.binary(max_size=60)), _HOSTILE_TEXT, _HOSTILE_TEXT, st.booleans())
@example("Data", b"\xab" * 60, "", "RFC 8166 §4.1", False)       # a value cut short with "…", a "§"
def test_the_tree_in_utf8_is_its_text_encoded_whatever_pieces_are_wide(label, value, comment, text, hexdump):
    """``decode -V`` encodes the tree a run of ASCII pieces at a time: the bytes are those of the whole
    text encoded at once, with the hex dump and the blank line after it."""
    from rdmaspy.output.text import hex_lines, tree_text, tree_utf8

    pkt = _hostile_packet(label, value, comment, text)
    whole = tree_text(pkt, 0) + ("\n" + "\n".join(hex_lines(pkt.frame.data)) if hexdump else "") + "\n"
    assert tree_utf8(pkt, 0, hexdump) == whole.encode()


def test_the_tree_written_without_a_second_check_matches_the_checked_one(tmp_path):
    """``decode -V`` hands its blocks over as safe already: the bytes equal those of the same lines
    checked one by one, on the hostile capture."""
    from rdmaspy.output.text import tree_lines, tree_text
    from rdmaspy.pipeline import Pipeline

    trusted, checked = io.BytesIO(), io.BytesIO()
    as_blocks, by_line = LineWriter(trusted, False, safe=True), LineWriter(checked, False, safe=True)
    with open_capture(str(hostile_capture(tmp_path))) as cap:
        for pkt in Pipeline(cap).packets():
            lines = tree_lines(pkt, 0)
            as_blocks.safe_block(tree_text(pkt, 0).encode())
            for line in lines:
                by_line.text(line)
    as_blocks.flush()
    by_line.flush()
    assert b"Comment: \\x1b]0;owned" in trusted.getvalue()
    assert trusted.getvalue() == checked.getvalue()
