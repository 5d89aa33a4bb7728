"""Display filters: the language, Wireshark 4.0's semantics for repeated fields, errors that point at the column."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from conftest import capture
from rdmaspy.engine import Engine
from rdmaspy.fields import CATALOG, Field, declaring, protocol
from rdmaspy.fieldview import packet_fields
from rdmaspy.filter import FilterError, compile_filter, known_fields, make_extractor
from rdmaspy.packet import Frame, Packet
from rdmaspy.readers import open_capture

# Fields of a made-up protocol, declared by the fixture below as a dissector module declares them.
N = Field("probe.n", 16, "Number", catalogued=False)
K = Field("probe.kind", 8, "Kind", names={1: "Request", 2: "Reply", 3: "Reply"}, catalogued=False)
S = Field("probe.s", 0, "Text", "str", catalogued=False)
B = Field("probe.b", 0, "Bytes", "bytes", catalogued=False)
A4 = Field("probe.a4", 32, "IPv4", "ipv4", catalogued=False)
A6 = Field("probe.a6", 128, "IPv6", "ipv6", catalogued=False)
G = Field("probe.g", 128, "GID", "gid", catalogued=False)
MAC = Field("probe.mac", 48, "MAC", "mac", catalogued=False)
FLAG = Field("probe.flag", 1, "Flag", "bool", catalogued=False)
FL = Field("probe.f", 0, "Float", "float", catalogued=False)
M = Field("probe.m", 16, "Other number", catalogued=False)
T0 = 1_000_000_000


@pytest.fixture(scope="module", autouse=True)
def probe_module():
    """A dissector module loaded after start-up: its fields become filterable by being declared."""
    name = "rdmaspy.dissectors.zz_filter_probe"
    known_fields()       # load the real dissectors first
    declaring(name)
    for f in (N, K, S, B, A4, A6, G, MAC, FLAG, FL, M):
        CATALOG.add_field(f, standalone=True)
    protocol("probe.extra", "A layer whose name the module computes")
    declaring("")
    yield name
    CATALOG.forget_module(name)
    assert "probe.n" not in known_fields().fields


def probe(*items, ts: int = T0 + 2_500_000, num: int = 7, proto: str = "probe") -> Packet:
    pkt = Packet(Frame(num, ts, 1, b"\0" * 60, 64))
    lay = pkt.add_layer(proto, None, b"", 0, 0)
    for f, v in items:
        lay.add(f, v)
    return pkt


def m(expr: str, pkt: Packet) -> bool:
    return compile_filter(expr)(pkt, T0)


def test_new_module_fields_are_known_and_unknown_names_are_errors():
    assert "probe.n" in known_fields().fields and "probe.m" in known_fields().fields
    assert "probe" in known_fields().protocols
    assert known_fields().protocols["probe.extra"] == "A layer whose name the module computes"
    assert m("probe.extra", probe(proto="probe.extra")) and not m("probe.extra", probe())
    with pytest.raises(FilterError, match=r"unknown field 'probe.nn' \(did you mean 'probe.n'\?\) at column 1"):
        compile_filter("probe.nn == 1")


def test_integer_literals_decimal_hex_octal_and_names():
    p = probe((N, 10), (K, 2))
    for expr in ("probe.n == 10", "probe.n == 0xa", "probe.n == 0XA", "probe.n == 012", "probe.n eq 10",
                 "probe.n > 9", "probe.n >= 10", "probe.n < 11", "probe.n <= 10", "probe.n gt 9 and probe.n lt 11",
                 'probe.kind == "Reply"', "probe.kind == reply", 'probe.kind != "Request"', "probe.kind in {1 2}",
                 "probe.n in {1, 2, 8..12}", "probe.n not in {1 2}", "probe.n == -0 or probe.n == 10"):
        assert m(expr, p), expr
    for expr in ("probe.n == 11", "probe.n != 10", "probe.n > 10", 'probe.kind == "Request"', "probe.n in {1..9}",
                 "probe.n not in {10}", "probe.n ne 10"):
        assert not m(expr, p), expr
    # one name for two values: "Reply" is 2 or 3
    assert m('probe.kind == "Reply"', probe((K, 3)))


def test_repeated_fields_any_equal_all_not_equal_as_wireshark_4():
    p = probe((N, 1), (N, 2))
    assert m("probe.n == 1", p) and m("probe.n == 2", p)
    assert not m("probe.n != 1", p)          # != is "every occurrence differs" (not (a == b))
    assert m("probe.n != 3", p)
    assert m("probe.n ~= 1", p) and m("probe.n any_ne 1", p)   # ~= is "some occurrence differs"
    assert not m("probe.n ~= 1", probe((N, 1), (N, 1)))
    assert not m("probe.n === 1", p) and m("probe.n all_eq 1", probe((N, 1), (N, 1)))
    assert m("probe.n > 1", p) and not m("probe.n > 2", p)
    assert m("probe.n !== 3", p) and not m("probe.n all_ne 2", p)


def test_absent_fields_make_every_comparison_false_and_not_in_true():
    p = probe((S, "x"))
    for expr in ("probe.n == 1", "probe.n != 1", "probe.n ~= 1", "probe.n === 1", "probe.n < 1", "probe.n in {1}",
                 "probe.n", "reth", "probe.b contains 01"):
        assert not m(expr, p), expr
    assert m("probe.n not in {1}", p)          # Wireshark: 'a not in S' is 'not (a in S)'
    assert m("not probe.n == 1", p) and m("!probe.n", p)


def test_presence_of_protocols_and_fields():
    p = probe((FLAG, False))
    assert m("probe", p) and m("probe.flag", p) and m("frame", p)
    assert not m("expert", p) and not m("probe.n", p)
    p.add_expert("warning", "sequence", "PSN gap", "IBTA 9.7")
    assert m("expert", p) and m('expert.severity == "warning"', p) and m('expert.source contains "IBTA"', p)
    assert m('expert.message matches "^psn"', p)      # matches is case-insensitive, as in Wireshark


def test_booleans_accept_true_false_1_0():
    p = probe((FLAG, True))
    for expr in ("probe.flag == true", "probe.flag == True", "probe.flag == 1", "probe.flag != 0",
                 "probe.flag != false", "probe.flag > 0"):
        assert m(expr, p), expr
    assert not m("probe.flag == 0", p) and m("probe.flag == 0", probe((FLAG, 0)))


def test_strings_contains_matches_and_escapes():
    p = probe((S, 'say "hi"\there'))
    assert m('probe.s contains "hi"', p)
    assert m(r'probe.s == "say \"hi\"\there"', p)
    assert m('probe.s matches "h[i]"', p) and m('probe.s ~ "SAY"', p)
    assert not m('probe.s contains "bye"', p)
    assert m('probe.s == "x"', probe((S, b"x")))          # str fields may carry bytes


def test_byte_strings_with_colons_dashes_dots_and_quoted_text():
    p = probe((B, b"\x01\x02\x03abc"))
    for expr in ("probe.b contains 01:02:03", "probe.b contains 02-03", "probe.b contains 02.03", "probe.b contains 61",
                 'probe.b contains "abc"', "probe.b == 01:02:03:61:62:63", "probe.b > 01:02", 'probe.b matches "\\x03a"'):
        assert m(expr, p), expr
    assert not m("probe.b contains 03:02", p)
    assert m("probe.b contains 01", probe((B, memoryview(b"\x00\x01"))))


def test_addresses_prefixes_gids_and_macs():
    p = probe((A4, bytes([192, 0, 2, 1])), (A6, bytes.fromhex("fe80" + "00" * 13 + "01")),
              (G, b"\0" * 10 + b"\xff\xff" + bytes([10, 1, 2, 3])), (MAC, bytes.fromhex("525400000002")))
    for expr in ("probe.a4 == 192.0.2.1", "probe.a4 == 192.0.2.0/24", "probe.a4 != 192.0.2.2", "probe.a4 > 192.0.2.0",
                 "probe.a4 in {10.0.0.1 192.0.2.1}", "probe.a6 == fe80::1", "probe.a6 == fe80::/10",
                 "probe.g == 10.1.2.3", "probe.g == ::ffff:10.1.2.3", "probe.g == 10.1.0.0/16",
                 "probe.mac == 52:54:00:00:00:02", "probe.mac == 52-54-00-00-00-02"):
        assert m(expr, p), expr
    for expr in ("probe.a4 == 192.0.3.0/24", "probe.a6 == fe80::2", "probe.g == 10.1.2.4", "probe.mac == 52:54:00:00:00:03"):
        assert not m(expr, p), expr


def test_floats_and_frame_fields_with_relative_time():
    p = probe((FL, 0.5), ts=T0 + 2_500_000, num=7)
    assert m("probe.f == 0.5 and probe.f > 0.25 and probe.f < 1", p)
    assert m("frame.time_relative > 0.002 and frame.time_relative < 0.003", p)
    assert m("frame.number == 7 and frame.len == 64 and frame.cap_len == 60", p)
    assert m('frame.protocols == "probe"', p)


def test_slices_follow_wireshark_ranges():
    p = probe((B, bytes(range(10))), (S, "hello"))
    for expr in ("probe.b[0:2] == 00:01", "probe.b[2:3] == 02:03:04", "probe.b[1-3] == 01:02:03", "probe.b[4] == 04",
                 "probe.b[8:] == 08:09", "probe.b[-2:] == 08:09", "probe.b[-1] == 09", "probe.b[:3] == 00:01:02",
                 "probe.b[9]", 'probe.s[1:3] == "ell"', "probe.b[0:4] contains 02:03", "probe.b[0:2] < 00:02"):
        assert m(expr, p), expr
    for expr in ("probe.b[10]", "probe.b[8:5] == 08:09", "probe.b[0:2] == 00:02", "probe.b[5:1] == 04"):
        assert not m(expr, p), expr
    assert m("probe.a4[0:2] == c0:00", probe((A4, bytes([192, 0, 2, 1]))))


def test_frame_compared_or_sliced_is_the_frame_bytes():
    pkt = Packet(Frame(1, T0, 1, b"RT\x00\x01hello", 9))
    assert m('frame contains "hell" and frame[0:2] == 52:54 and frame matches "^rt" and len(frame) == 9', pkt)
    assert m("frame", pkt) and not m("frame contains 99", pkt)


def test_len_of_bytes_and_strings():
    p = probe((B, bytes(range(10))), (S, "hello"), (B, b"ab"))
    assert m("len(probe.b) == 10", p) and m("len(probe.b) == 2", p) and not m("len(probe.b) != 2", p)
    assert m("len(probe.s) == 5 and len(probe.s) > 4", p) and m("len(probe.b) in {3..10}", p)
    assert not m("len(probe.b) > 0", probe())
    assert m("LEN(probe.b[2:]) == 8", p)


def test_field_against_field():
    assert m("probe.n == probe.m", probe((N, 5), (M, 5)))
    assert not m("probe.n == probe.m", probe((N, 5), (M, 6)))
    assert m("probe.n < probe.m", probe((N, 5), (M, 6)))
    assert not m("probe.n == probe.m", probe((N, 5)))


def test_long_flat_chains_and_deep_but_sane_nesting_compile():
    assert m(" or ".join(["reth"] * 5000 + ["probe"]), probe())
    assert not m(" and ".join(["probe"] * 5000 + ["reth"]), probe())
    assert m(" xor ".join(["probe"] * 3), probe()) and not m(" xor ".join(["probe"] * 4000), probe())
    assert m("(" * 100 + "probe" + ")" * 100, probe())


def test_logic_precedence_and_symbols():
    p = probe((N, 1))
    assert m("probe.n == 2 or probe.n == 1 and probe", p)        # and binds tighter than or
    assert not m("(probe.n == 2 or probe.n == 1) and reth", p)
    assert m("probe.n == 1 && !reth", p) and m("reth || probe", p)
    assert m("probe xor reth", p) and not m("probe ^^ probe", p)
    assert m("not not probe", p) and m("NOT reth AND probe", p)


@pytest.mark.parametrize("expr, column, reason", [
    ("bth.opcode == ", 15, "expected a value after '=='"),
    ("bth.opcode ==", 14, "expected a value after '=='"),
    ("", 1, "empty filter"),
    ("(reth", 6, "missing ')' for the '(' of column 1"),
    ("reth)", 5, "unbalanced ')'"),
    ("reth and", 9, "expected a field name at the end of the filter"),
    ("reth reth", 6, "expected 'and', 'or' or the end of the filter"),
    ("bth.opcode == \"RC SEND Sometimes\"", 15, "neither an integer nor a value name of bth.opcode"),
    ("ip.src == 192.0.2", 11, "not a valid value for ip.src: expected an IPv4 address"),
    ("data.data contains 0102", 20, "not a byte string"),
    ("bth.opcode contains 01", 21, "'contains' needs a string or bytes field"),
    ("reth == 1", 6, "'reth' is a protocol: it can only be tested for presence (only 'frame' compares as bytes)"),
    ('expert.message matches "("', 24, "bad regular expression"),
    ("bth.opcode in {1", 17, "expected '}' to close the set"),
    ("bth.opcode in 1", 15, "expected '{' after 'in'"),
    ("bth.opcode == 1 $", 17, "unexpected character '$'"),
    ('expert.message == "open', 19, "unterminated string"),
    ("bth.opcode >", 13, "expected a value after '>'"),
    ("== 1", 1, "expected a field name, found '=='"),
    ("(" * 101 + "reth" + ")" * 101, 101, "nested more than 100 deep"),
    ("bth.opcode[0] == 1", 11, "slices need a bytes, address or string field"),
    ("data.data[0:2 == 01", 15, "expected ']' after the range"),
    ("data.data[x] == 01", 11, "'x' is not a range"),
    ("data.data[] == 01", 11, "expected a range"),
    ("len(bth.opcode) > 1", 5, "len() needs a bytes, address or string field"),
    ("len(data.data > 1", 15, "expected ')' after the field of len(...)"),
    ("len() > 1", 5, "expected a field name in len(...)"),
    ("not " * 101 + "reth", 401, "nested more than 100 deep"),
])
def test_errors_name_the_problem_and_its_column(expr, column, reason):
    with pytest.raises(FilterError) as ei:
        compile_filter(expr)
    err = ei.value
    assert err.column == column, str(err)
    assert reason in str(err)
    assert str(err).startswith("bad filter: ") and str(err).endswith(f"at column {column}: {expr}")
    text, mark = err.caret().splitlines()
    assert text == "    " + expr and mark == "    " + " " * (column - 1) + "^"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list(" ()!=<>~&|{}\",.:-/0123456789abx\\") +
                                ["bth.opcode", "reth", " and ", " or ", " in ", "not ", "ip.src", "0x", "..",
                                 "contains", "matches", "\"RC SEND Only\"", "192.0.2.1", "true", "data.data",
                                 "[", "]", "len(", "[0:2]", "[-1]"]),
                max_size=12).map("".join))
def test_any_text_either_compiles_or_raises_filter_error(text):
    try:
        fn = compile_filter(text)
    except FilterError:
        return
    assert fn(probe((N, 1), (B, b"\x01\x02")), T0) in (True, False)


def _packets(name: str):
    eng = Engine(strict=True)
    with open_capture(str(capture(name))) as cap:
        frames = list(cap)
    t0 = frames[0].ts
    return [eng.dissect(f) for f in frames], t0


@pytest.mark.parametrize("name", ["rxe-ib_read_bw.pcap", "rxe-pyverbs-rc-verbs.pcap", "rxe-ucmatose.pcap",
                                  "rocev2_cnp_cx4lx.pcap", "siw-rping.pcap", "synth_rocev2_cm_rpcrdma.pcap",
                                  "synth_rocev2_rpcrdma_write.pcap", "rxe-rdma_server-client.pcap"])
def test_extractor_gives_the_same_values_as_packet_fields(name):
    """The filter's shortcut (only the names used) must see exactly what JSON sees."""
    pkts, t0 = _packets(name)
    cat = known_fields()
    names = list(cat.fields) + list(cat.protocols)
    extract = make_extractor(names)
    for pkt in pkts:
        full = {k: vals for k, (_f, vals) in packet_fields(pkt, t0).items()}
        got = extract(pkt, t0)
        assert {k: v for k, v in got.items() if k in full} == full, pkt
        assert set(got) - set(full) <= {"frame", "expert"}, pkt   # always-true presences JSON leaves out


def test_compiled_filter_reads_only_the_names_it_uses():
    fn = compile_filter("bth.opcode == 12 or (reth.dma_length > 10 and frame.number < 5)")
    assert fn.names == {"bth.opcode", "reth.dma_length", "frame.number"}


_ETH_IP_UDP_ROCE = bytes.fromhex(
    "525400000001525400000002080045000040000040004011f6a3c0000202c0000201c271 12b7002c0000".replace(" ", ""))
_MANY = [compile_filter(e) for e in (
    "bth.opcode == 4 or bth.opcode in {1 2 3 12..20}", "reth.dma_length > 0 and reth.va != 0",
    'bth.opcode == "RC SEND Only"', "icrc.valid == false", "icrc.value == icrc.expected", "ip.src == 192.0.2.0/24",
    "eth.src == 52:54:00:00:00:02", "data.data contains 00:01", 'data.data matches "\\x00"', "aeth.type == NAK",
    "grh.sgid == ::ffff:192.0.2.2", 'expert.message contains "truncated"', "_malformed", "bth.se ~= 1",
    "bth.psn === 0", "frame.time_relative >= 0", "ip.src < ip.dst", "not (udp.length <= 8)",
    'frame.protocols matches "bth"')]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=120))
def test_compiled_filters_never_raise_on_any_packet(tail):
    """Whatever the dissectors make of the bytes, every kind of comparison answers True or False."""
    eng = Engine()
    for data in (tail, _ETH_IP_UDP_ROCE + tail):
        pkt = eng.dissect(Frame(1, T0, 1, data, len(data)))
        for fn in _MANY:
            assert fn(pkt, T0) in (True, False)
