"""ICMP and ICMPv6: what a RoCEv2 peer that went away leaves on the wire, decoded as tshark does.

The real capture is the lab run where rxe wedged a READ retry and the server gave up: the client's
QP kept sending, and the host answered with ICMP Destination Unreachable quoting the RoCEv2
datagram (7 RDMA READ requests, 16 CM DisconnectRequests).  tshark dissects the quote in full (IP,
UDP, BTH and its extended headers, the MAD): so does rdmaspy, as the ICMP layer's sub-tree, with the
same names and values (here, test_infiniband_tshark.py, test_cm_tshark.py, test_filter_tshark.py).
The quote is a copy, not traffic: its BTH must not reach the PSN analysis, its CM message the
connection table, and a quote cut short (as routers cut them) is no malformed packet.
"""
from __future__ import annotations

import json
import os
import struct
import subprocess

from hypothesis import given, settings, strategies as st

from conftest import capture, require_tshark, tshark_fields, tshark_int
from rdmaspy import craft
from rdmaspy.analysis.analyzer import Analyzer
from rdmaspy.dissectors.icmp import dissect_icmp, dissect_icmpv6
from rdmaspy.engine import Engine
from rdmaspy.fieldview import layer_nodes
from rdmaspy.filter import compile_filter
from rdmaspy.output.jsonout import packet_object
from rdmaspy.output.text import tree_lines
from rdmaspy.packet import Frame, Layer, Packet
from rdmaspy.readers import open_capture

STALL = capture("rxe-read-retry-stall.pcap")
READS = [97, 98, 112, 113, 122, 123, 133]      # the ICMP errors quoting an RDMA READ request


def _decode(path, skip: frozenset[int] = frozenset()) -> list[Packet]:
    eng = Engine(strict=True)
    with open_capture(str(path)) as cap:
        return [eng.dissect(fr) for fr in cap if fr.num not in skip]


def _ipv4(proto: int, payload: bytes, src=b"\xc0\x00\x02\x01", dst=b"\xc0\x00\x02\x02") -> bytes:
    hdr = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, 0, 64, proto, 0, src, dst)
    hdr = hdr[:10] + struct.pack(">H", craft.inet_checksum(hdr)) + hdr[12:]
    return hdr + payload


def _eth(etype: int, body: bytes) -> bytes:
    return b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01" + struct.pack(">H", etype) + body


def _icmp(itype: int, code: int, rest: bytes, data: bytes) -> bytes:
    msg = struct.pack(">BBH", itype, code, 0) + rest + data
    return msg[:2] + struct.pack(">H", craft.inet_checksum(msg)) + msg[4:]


def _ipv6(nxt: int, payload: bytes, src: bytes, dst: bytes) -> bytes:
    return struct.pack(">IHBB16s16s", 6 << 28, len(payload), nxt, 255, src, dst) + payload


def _quoted(pkt: Packet) -> list[Layer]:
    """The layers of the datagram the packet's ICMP error quotes."""
    lay = pkt.layer("icmp") or pkt.layer("icmpv6")
    assert lay is not None
    return list(lay.children or ())


def _tshark_json(path, display_filter: str) -> list[dict[str, list]]:
    """tshark -T json's layers, one dict a frame: every field name (at any depth) -> its values in order."""
    out = subprocess.run([require_tshark(), "-n", "-r", str(path), "-Y", display_filter, "-T", "json"],
                         capture_output=True, text=True, check=True, env={**os.environ, "LC_ALL": "C"}).stdout
    frames = []

    def walk(pairs, into):
        for k, v in pairs:
            if isinstance(v, list) and v and isinstance(v[0], tuple):
                walk(v, into)
            else:
                into.setdefault(k, []).append(v)

    for frame in json.loads(out, object_pairs_hook=list):
        layers = dict(frame)["_source"]
        into: dict[str, list] = {}
        walk(dict(layers)["layers"], into)
        frames.append(into)
    return frames


def test_real_port_unreachables_agree_with_tshark():
    pkts = _decode(STALL)
    rows = tshark_fields(STALL, ["icmp.type", "icmp.code", "icmp.checksum", "ip.src", "udp.dstport", "icmpv6.type"])
    icmp = [(p, r) for p, r in zip(pkts, rows) if r["icmp.type"]]
    assert len(icmp) == 23
    for p, r in icmp:
        lay = p.layer("icmp")
        assert lay["icmp.type"] == tshark_int(r["icmp.type"][0])
        assert lay["icmp.code"] == tshark_int(r["icmp.code"][0])
        assert lay["icmp.checksum"] == tshark_int(r["icmp.checksum"][0])
        inner = [c for c in lay.children if c.proto == "ip"]
        # tshark lists the outer and the quoted source address; the quote's is ours too
        assert inner and ".".join(map(str, inner[0]["ip.src"])) == r["ip.src"][1]
        assert p.proto == "ICMP" and p.info_text.startswith("Destination unreachable (Host unreachable) for RoCEv2 ")
        # the quoted BTH is the ICMP layer's, never one of the packet's own layers
        assert p.layer("bth") is None and p.ib is None and p.conv is None and p.extra is None
        assert [c.proto for c in _quoted(p)][:3] == ["ip", "udp", "bth"]
    v6 = [(p, r) for p, r in zip(pkts, rows) if r["icmpv6.type"]]
    assert v6 and all(p.layer("icmpv6")["icmpv6.type"] == tshark_int(r["icmpv6.type"][0]) for p, r in v6)


# The quoted IP and UDP headers' fields, by the name both tools give them (tshark lists the packet's own
# IP header first, then the quote's)
IP_FIELDS = ["ip.version", "ip.dsfield.dscp", "ip.dsfield.ecn", "ip.len", "ip.id", "ip.flags.rb", "ip.flags.df",
             "ip.flags.mf", "ip.frag_offset", "ip.ttl", "ip.proto", "ip.checksum", "ip.src", "ip.dst"]
UDP_FIELDS = ["udp.srcport", "udp.dstport", "udp.length", "udp.checksum"]


def _value(v) -> int | str:
    if isinstance(v, bytes):
        return ".".join(map(str, v))
    return int(v)


def _theirs(v: str) -> int | str:
    return v if v.count(".") == 3 else tshark_int(v)


def test_quoted_ip_and_udp_headers_agree_with_tshark_field_by_field():
    pkts = _decode(STALL)
    rows = tshark_fields(STALL, IP_FIELDS + ["ip.hdr_len"] + UDP_FIELDS + ["icmp.type"])
    compared = 0
    for p, r in zip(pkts, rows):
        if not r["icmp.type"]:
            continue
        ip, udp = _quoted(p)[:2]
        for name in IP_FIELDS:
            assert len(r[name]) == 2, (p.frame.num, name)
            assert _value(ip[name]) == _theirs(r[name][1]), (p.frame.num, name)
        assert ip["ip.hdr_len"] * 4 == int(r["ip.hdr_len"][1])       # tshark gives bytes, we give words
        for name in UDP_FIELDS:
            assert _value(udp[name]) == _theirs(r[name][0]), (p.frame.num, name)
            compared += 1
    assert compared == 23 * len(UDP_FIELDS)


# rdmaspy's name -> tshark's, for what the quote of an RDMA READ request holds
QUOTE_NAMES = {"bth.opcode": "infiniband.bth.opcode", "bth.se": "infiniband.bth.se", "bth.m": "infiniband.bth.m",
               "bth.padcnt": "infiniband.bth.padcnt", "bth.tver": "infiniband.bth.tver",
               "bth.p_key": "infiniband.bth.p_key", "bth.destqp": "infiniband.bth.destqp",
               "bth.ackreq": "infiniband.bth.a", "bth.reserved7": "infiniband.bth.reserved7",
               "bth.psn": "infiniband.bth.psn", "reth.va": "infiniband.reth.va", "reth.r_key": "infiniband.reth.r_key",
               "reth.dma_length": "infiniband.reth.dmalen", "udp.srcport": "udp.srcport",
               "udp.dstport": "udp.dstport", "udp.length": "udp.length", "icmp.type": "icmp.type",
               "icmp.code": "icmp.code"}


def test_json_of_the_quoting_frames_carries_tshark_values():
    pkts = {p.frame.num: p for p in _decode(STALL)}
    theirs = _tshark_json(STALL, "infiniband.bth.opcode == 12 and icmp")
    assert len(theirs) == len(READS)
    t0 = pkts[1].frame.ts
    for num, t in zip(READS, theirs):
        obj = packet_object(pkts[num], t0)
        for ours, name in QUOTE_NAMES.items():
            v = obj[ours]
            v = v[0] if isinstance(v, list) else v      # udp repeats (the quote's beside a packet's own)
            assert [v] == [tshark_int(x) for x in t[name]], (num, ours)
        assert obj["ip.src"] == ["192.0.2.1", "192.0.2.2"] and t["ip.src"] == ["192.0.2.1", "192.0.2.2"]


def test_tree_shows_the_quote_under_the_icmp_layer_with_tshark_values():
    pkts = {p.frame.num: p for p in _decode(STALL)}
    lines = tree_lines(pkts[97], pkts[1].frame.ts)
    at = lines.index("Internet Control Message Protocol")
    quote = lines[at:]
    for text in ("    Base Transport Header (in the ICMP error)", "        Opcode: RC RDMA READ Request (12)",
                 "        Packet Sequence Number: 1431219", "    RDMA Extended Transport Header (in the ICMP error)",
                 "        Virtual Address: 0x00007f5f8ede941c", "        DMA Length: 5164 bytes",
                 "    User Datagram Protocol (in the ICMP error)", "        Destination Port: 4791"):
        assert text in quote, text


def test_filters_match_the_quote_as_tshark_does():
    pkts = _decode(STALL)
    t0 = pkts[0].frame.ts
    match = compile_filter("bth.opcode == 12 and icmp")
    assert [p.frame.num for p in pkts if match(p, t0)] == READS
    # and the frames of the real READ requests are the others bth.opcode == 12 selects, as in tshark
    both = compile_filter("bth.opcode == 12")
    got = [p.frame.num for p in pkts if both(p, t0)]
    want = [int(r["frame.number"][0]) for r in tshark_fields(STALL, ["frame.number"], "-Y", "infiniband.bth.opcode == 12")]
    assert got == want and len(got) == 14


def _facts(pkts: list[Packet]) -> tuple[list, list, list]:
    """What the analysis makes of the packets (findings, records), and the JSON of each one."""
    records: list = []
    an = Analyzer(strict=True, on_record=records.append)
    for p in pkts:
        an.feed(p)
    an.finish()
    t0 = pkts[0].frame.ts
    return ([(f.rule_def.id, f.frames, f.conn, f.args) for f in an.findings], [repr(r) for r in records],
            [packet_object(p, t0) for p in pkts])


def test_quotes_leave_the_session_and_the_analysis_as_if_they_were_not_there():
    """Decoding the capture with its ICMP errors and without them gives every other packet the same
    fields (the quoted CM DisconnectRequests are no CM state), and the analysis the same findings and
    records: a quoted BTH is no PSN, no transaction, no finding."""
    pkts = _decode(STALL)
    errors = frozenset(p.frame.num for p in pkts if p.layer("icmp") is not None)
    assert len(errors) == 23
    with_errors = _facts(pkts)
    without = _facts(_decode(STALL, skip=errors))
    assert with_errors[0] == without[0] and with_errors[0]
    assert with_errors[1] == without[1] and with_errors[1]
    assert [o for o in with_errors[2] if o["frame.number"] not in errors] == without[2]
    assert all(p.layer("ib.analysis") is None and not p.expert for p in pkts if p.frame.num in errors)


def test_built_messages_decode_as_tshark_does(tmp_path):
    roce = craft.rocev2(0x04, destqp=0x12, psn=77, payload=b"x" * 40)[14:]
    frames = [
        _eth(0x0800, _ipv4(1, _icmp(8, 0, struct.pack(">HH", 0x1234, 7), b"ping"))),
        _eth(0x0800, _ipv4(1, _icmp(0, 0, struct.pack(">HH", 0x1234, 7), b"ping"))),
        _eth(0x0800, _ipv4(1, _icmp(3, 4, struct.pack(">HH", 0, 1400), roce[:28]))),
        _eth(0x0800, _ipv4(1, _icmp(11, 0, b"\0" * 4, roce[:28]))),
        _eth(0x86DD, _ipv6(58, _icmp(2, 0, struct.pack(">I", 1280), b"\x60" + b"\0" * 39),
                           b"\xfe\x80" + b"\0" * 13 + b"\1", b"\xfe\x80" + b"\0" * 13 + b"\2")),
        _eth(0x86DD, _ipv6(58, _icmp(135, 0, b"\0" * 4, b"\xfe\x80" + b"\0" * 13 + b"\2"),
                           b"\xfe\x80" + b"\0" * 13 + b"\1", b"\xff\x02" + b"\0" * 13 + b"\1")),
    ]
    path = tmp_path / "icmp.pcap"
    craft.write_pcap(str(path), frames)
    pkts = _decode(path)
    rows = tshark_fields(path, ["icmp.type", "icmp.code", "icmp.ident", "icmp.seq", "icmp.mtu",
                                "icmpv6.type", "icmpv6.mtu", "icmpv6.nd.ns.target_address"])
    assert pkts[0].info_text == "Echo (ping) request id=0x1234, seq=7"
    assert pkts[0].layer("icmp")["icmp.ident"] == tshark_int(rows[0]["icmp.ident"][0])
    assert pkts[1].layer("icmp")["icmp.seq"] == tshark_int(rows[1]["icmp.seq"][0]) == 7
    assert pkts[2].layer("icmp")["icmp.mtu"] == tshark_int(rows[2]["icmp.mtu"][0]) == 1400
    assert pkts[2].info_text == ("Destination unreachable (Fragmentation needed) (next-hop MTU 1400) "
                            "for RoCEv2 192.0.2.1:49152 → 192.0.2.2:4791")
    assert pkts[3].info_text.startswith("Time-to-live exceeded (Time to live exceeded in transit) for RoCEv2")
    assert pkts[4].layer("icmpv6")["icmpv6.mtu"] == tshark_int(rows[4]["icmpv6.mtu"][0]) == 1280
    assert pkts[5].info_text == "Neighbor Solicitation for " + rows[5]["icmpv6.nd.ns.target_address"][0]
    assert all(p.malformed is None for p in pkts)


def test_a_cut_message_is_malformed_with_its_reason(tmp_path):
    path = tmp_path / "cut.pcap"
    craft.write_pcap(str(path), [_eth(0x0800, _ipv4(1, b"\x08\x00\x00"))])
    (p,) = _decode(path)
    assert p.malformed == "icmp: truncated (3 of 8 bytes)"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120), st.sampled_from([dissect_icmp, dissect_icmpv6]))
def test_no_bytes_make_icmp_raise(data, fn):
    pkt = Packet(Frame(1, 0, 1, data, len(data)))
    fn(pkt, data, 0, len(data), None)
    for lay in pkt.layers:
        layer_nodes(lay)            # every field and sub-tree, the quote's included, filled


# --- quotes built with craft.icmp_error ---------------------------------------------------------------------
READ = dict(destqp=0x12, psn=77, va=0x7F0000001000, r_key=0x55, dma_length=4096)


def _quote_of(frame: bytes, cut: int | None = None) -> bytes:
    """A frame's IP datagram (the Ethernet header off), its first ``cut`` bytes."""
    return frame[14:] if cut is None else frame[14:14 + cut]


def test_crafted_quotes_decode_as_tshark_does(tmp_path):
    """A router's quote (the IP header and 8 bytes), whole quotes over IPv4 and IPv6, a quoted SEND with its
    payload, a quote of a quote, quotes cut in the transport headers: the headers tshark dissects, with its
    values; nothing malformed, no expert item, where tshark has none either.  (Cut after the RETH, tshark
    also reads the RETH's last 4 bytes as an ICRC; rdmaspy knows the ICRC is not in the quote.)"""
    read4 = craft.rocev2(0x0C, **READ)
    read6 = craft.rocev2(0x0C, ip=6, **READ)
    send = craft.rocev2(0x04, destqp=0x12, psn=78, payload=b"x" * 40)
    frames = [
        craft.icmp_error(_quote_of(read4, 28), code=1),
        craft.icmp_error(_quote_of(read4)),
        craft.icmp_error(_quote_of(read6), ip=6),
        craft.icmp_error(_quote_of(read6, 48), ip=6),
        craft.icmp_error(_quote_of(send), itype=11, code=0),
        craft.icmp_error(_quote_of(craft.icmp_error(_quote_of(read4)))),
        craft.icmp_error(_quote_of(read4, 40)),         # cut after the BTH
        craft.icmp_error(_quote_of(read4, 44)),         # inside the RETH
        craft.icmp_error(_quote_of(read4, 56)),         # after the RETH, before the ICRC
    ]
    path = tmp_path / "quotes.pcap"
    craft.write_pcap(str(path), frames)
    pkts = _decode(path)
    rows = tshark_fields(path, ["frame.protocols", "_ws.malformed", "_ws.expert", "infiniband.bth.opcode",
                                "infiniband.bth.psn", "infiniband.reth.dmalen", "udp.dstport", "icmp.type"])
    want_quotes = [["ip", "udp"], ["ip", "udp", "bth", "reth", "icrc"], ["ipv6", "udp", "bth", "reth", "icrc"],
                   ["ipv6", "udp"], ["ip", "udp", "bth", "data", "icrc"], ["ip", "icmp"], ["ip", "udp", "bth"],
                   ["ip", "udp", "bth"], ["ip", "udp", "bth", "reth"]]
    for p, r, want in zip(pkts, rows, want_quotes):
        where = f"frame {p.frame.num}"
        assert [c.proto for c in _quoted(p)] == want, where
        assert p.malformed is None and not p.expert and not r["_ws.malformed"] and not r["_ws.expert"], where
        assert p.ib is None and p.conv is None and p.extra is None, where
        protos = r["frame.protocols"][0].split(":")
        values: dict[str, list] = {}
        for lay in p.layers:
            for _d, item, v, _o, _l in layer_nodes(lay):
                if not isinstance(item, Layer):
                    values.setdefault(item.name, []).append(v)
        assert ("infiniband" in protos) == ("bth.opcode" in values), where
        assert protos.count("ip") + protos.count("ipv6") == values.get("ip.version", []).count(4) + \
            values.get("ipv6.version", []).count(6), where
        for ours, theirs in (("bth.opcode", "infiniband.bth.opcode"), ("bth.psn", "infiniband.bth.psn"),
                             ("reth.dma_length", "infiniband.reth.dmalen"), ("udp.dstport", "udp.dstport"),
                             ("icmp.type", "icmp.type")):
            assert values.get(ours, []) == [tshark_int(v) for v in r[theirs]], (where, ours)
    # the quote of a quote: the inner error's own quote is dissected too, as tshark does
    inner = _quoted(pkts[5])[1]
    assert [c.proto for c in inner.children] == ["ip", "udp", "bth", "reth", "icrc"]
    assert rows[5]["frame.protocols"][0].endswith("ip:icmp:ip:icmp:ip:udp:infiniband")


# A TCP segment's header: ports 46371 → 20049, sequence 2998470466, acknowledgement 7, 5 words, SYN.
_TCP_SYN = struct.pack(">HHIIBBHHH", 46371, 20049, 2998470466, 7, 0x50, 0x02, 64240, 0, 0)


def test_a_tcp_header_quoted_short_shows_what_its_bytes_hold_as_tshark_does(tmp_path):
    """Routers quote the IP header and 8 bytes: of a TCP segment, its ports and sequence number, which
    tshark shows (as ``tcp.seq``: a quote has no relative numbering; rdmaspy keeps ``tcp.seq_raw``).
    Cut at 4, 8, 12 and 20 bytes, each word the quote holds is a field with tshark's value."""
    segment = _ipv4(6, _TCP_SYN)
    cuts = [4, 8, 12, 20]
    frames = [_eth(0x0800, _ipv4(1, _icmp(3, 3, bytes(4), segment[:20 + cut]))) for cut in cuts]
    path = tmp_path / "tcp-quotes.pcap"
    craft.write_pcap(str(path), frames)
    pkts = _decode(path)
    rows = tshark_fields(path, ["tcp.srcport", "tcp.dstport", "tcp.seq", "tcp.ack", "_ws.malformed"])
    for p, r, cut in zip(pkts, rows, cuts):
        where = f"cut at {cut}"
        (tcp,) = [c for c in _quoted(p) if c.proto == "tcp"]
        assert p.malformed is None and not r["_ws.malformed"], where
        assert tcp.length == min(cut, 20) and "(in the ICMP error)" in tcp.label, where
        assert tcp["tcp.srcport"] == tshark_int(r["tcp.srcport"][0]) == 46371, where
        assert tcp["tcp.dstport"] == tshark_int(r["tcp.dstport"][0]) == 20049, where
        assert (tcp.get("tcp.seq_raw"), tcp.get("tcp.ack_raw")) == (
            (2998470466 if cut >= 8 else None), (7 if cut >= 12 else None)), where
        assert [tshark_int(v) for v in r["tcp.seq"]] == ([2998470466] if cut >= 8 else []), where
    assert [p.frame.num for p in pkts if compile_filter("tcp.seq_raw == 2998470466")(p, 0)] == [1, 2, 3, 4][1:]
    assert "Sequence Number (raw): 2998470466" in "\n".join(tree_lines(pkts[1], 0))


def test_a_tcp_segment_cut_in_its_header_shows_its_ports_and_is_malformed(tmp_path):
    path = tmp_path / "cut-tcp.pcap"
    craft.write_pcap(str(path), [_eth(0x0800, _ipv4(6, _TCP_SYN[:10]))])
    (p,) = _decode(path)
    assert p.malformed == "tcp: truncated (10 of 20 bytes)"
    tcp = p.layer("tcp")
    assert (tcp["tcp.srcport"], tcp["tcp.dstport"], tcp["tcp.seq_raw"]) == (46371, 20049, 2998470466)
    assert tcp.get("tcp.ack_raw") is None


def _depth(lay: Layer) -> int:
    """How many ICMP layers deep the sub-trees of ``lay`` go."""
    inner = [_depth(c) for c in lay.children or () if c.proto == "icmp"]
    return 1 + max(inner, default=0)


def test_a_quote_nested_without_end_stops_two_levels_down():
    """An ICMP error quoting an error quoting an error ... (a hostile capture): no recursion without end,
    no traceback; a quote of a quote is dissected, anything deeper is data."""
    read4 = craft.rocev2(0x0C, **READ)
    frame = read4
    for _ in range(400):            # far deeper than Python's recursion limit allows one call a level
        frame = craft.icmp_error(_quote_of(frame))
    eng = Engine(strict=True)
    p = eng.dissect(Frame(1, 0, 1, frame, len(frame)))
    assert p.malformed is None and not p.expert
    icmp = p.layer("icmp")
    assert _depth(icmp) == 3          # the packet's ICMP, its quote's, the quote's quote's
    deepest = _quoted(p)[1].children[1]
    assert [c.proto for c in deepest.children or ()] == []
    assert [c.proto for c in _quoted(p)[1].children] == ["ip", "icmp", "data"]
    layer_nodes(icmp)


ROCE_OPCODES = [op for op in range(256) if craft.ib.PLANS[op].valid]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(ROCE_OPCODES), st.binary(max_size=64), st.sampled_from([4, 6]), st.integers(0, 200),
       st.sampled_from([(3, 1), (3, 3), (3, 4), (11, 0), (12, 0), (5, 1), (4, 0)]))
def test_a_quote_of_any_length_is_dissected_without_marks(opcode, payload, version, cut, type_code):
    """Whatever length of a RoCEv2 datagram an error quotes (any opcode and payload): no traceback, no
    malformed mark, no expert item, no transport facts on the packet; the quote's layers lie within it."""
    datagram = _quote_of(craft.rocev2(opcode, destqp=0x12, psn=9, payload=payload, ip=version), cut)
    itype, code = type_code if version == 4 else (1, 4)
    frame = craft.icmp_error(datagram, itype=itype, code=code, ip=version)
    p = Engine(strict=True).dissect(Frame(1, 0, 1, frame, len(frame)))
    assert p.malformed is None and not p.expert and p.ib is None and p.conv is None and p.extra is None
    quote_at = len(frame) - len(datagram)
    for lay in _quoted(p):
        assert quote_at <= lay.off and lay.off + lay.length <= len(frame), lay
        assert "(in the ICMP" in lay.label
        layer_nodes(lay)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.sampled_from([4, 6]))
def test_no_quoted_bytes_make_the_engine_raise(quote, version):
    """Any bytes as the quote, through the whole engine (strict: a dissector's exception would surface)."""
    frame = craft.icmp_error(quote, ip=version)
    p = Engine(strict=True).dissect(Frame(1, 0, 1, frame, len(frame)))
    assert p.malformed is None and p.ib is None and p.conv is None and p.extra is None
    for lay in p.layers:
        layer_nodes(lay)
