"""ICRC and VCRC: real packets verify, every covered bit counts, every masked bit does not.

Covered/masked per IBTA vol. 1 7.8.1 and the RoCEv2 annex: RoCE counts 8 bytes of ones for the
LRH, IPv4 TOS, TTL and header checksum, IPv6 traffic class, flow label and hop limit, the UDP
checksum and the BTH byte with FECN, BECN and Resv6 as ones.  Native IB counts the LRH with VL as
ones on a local packet; on a global packet (GRH) the whole LRH is ones (routers rewrite it) and
the GRH's TClass, FlowLabel and HopLmt are ones.  The VCRC covers every byte before it.
"""
from __future__ import annotations

import random
import zlib

import pytest

from conftest import CAPTURES, FIXTURES
from rdmaspy import craft
from rdmaspy.dissectors import infiniband as ib
from rdmaspy.engine import Engine
from rdmaspy.packet import Frame
from rdmaspy.readers import open_capture

REAL_ROCE = sorted(p.name for p in CAPTURES.glob("rxe-*.pcap")) + ["rocev2_cnp_cx4lx.pcap",
                                                                   "rocev2_uc_send_only_scapy.pcap"]


def _dissect(data: bytes, linktype: int = 1):
    return Engine(strict=True).dissect(Frame(1, 0, linktype, data, len(data)))


@pytest.mark.parametrize("name", REAL_ROCE)
def test_every_softroce_frame_verifies(name: str) -> None:
    engine = Engine()   # upper layers are not under test here; the IB layers must be there and verify
    checked = 0
    with open_capture(str(CAPTURES / name)) as cap:
        for fr in cap:
            pkt = engine.dissect(fr)
            if pkt.ib is None:
                continue
            assert pkt.ib.icrc_ok is True, f"{name} frame {fr.num}: {pkt.info_text}"
            lay = pkt.layer("icrc")
            if lay is not None:   # absent only when an upper layer failed after the ICRC was checked
                assert lay["icrc.valid"] is True and lay["icrc.expected"] == lay["icrc.value"]
            checked += 1
    assert checked > 0


def test_known_vectors() -> None:
    """A ConnectX-4 Lx CNP (ICRC bytes 82 fd 00 2a) and scapy's UC SEND Only (ICRC shown as 0x78f353f3,
    the wire bytes read big-endian)."""
    for name, raw in (("rocev2_cnp_cx4lx.pcap", bytes.fromhex("82fd002a")),
                      ("rocev2_uc_send_only_scapy.pcap", bytes.fromhex("78f353f3"))):
        with open_capture(str(CAPTURES / name)) as cap:
            fr = next(iter(cap))
        pkt = Engine(strict=True).dissect(fr)
        assert fr.data[-4:] == raw
        assert pkt.layer("icrc")["icrc.expected"] == int.from_bytes(raw, "little")


def test_bad_icrc_reports_expected_value() -> None:
    good = craft.rocev2(0x0A, 0x11, 7, b"abcd", va=0x1000, r_key=0x55, dma_length=4)
    bad = craft.rocev2(0x0A, 0x11, 7, b"abcd", va=0x1000, r_key=0x55, dma_length=4, icrc="bad")
    want = int.from_bytes(good[-4:], "little")
    pkt = _dissect(bad)
    assert pkt.ib.icrc_ok is False
    assert pkt.layer("icrc")["icrc.expected"] == want
    assert f"expected 0x{want:08x}" in pkt.info_text
    assert any(e.group == "checksum" for e in pkt.expert)


# --- exhaustive bit flips ---------------------------------------------------------------------------------
def _first_frame(path, pred):
    engine = Engine(strict=True)
    with open_capture(str(path)) as cap:
        for fr in cap:
            pkt = engine.dissect(fr)
            if pkt.ib is not None and pred(pkt):
                return fr.data, pkt
    raise AssertionError(f"no such frame in {path}")


def _roce_cases():
    """(name, frame bytes, ICRC function of a buffer, [masked bit positions], header end) per sample packet."""
    cases = []
    samples = [
        _first_frame(CAPTURES / "rxe-ib_write_bw.pcap", lambda p: p.layer("reth") is not None),
        _first_frame(CAPTURES / "rxe-ib_read_bw.pcap", lambda p: p.layer("aeth") is not None),
        _first_frame(CAPTURES / "rocev2_cnp_cx4lx.pcap", lambda p: True),
        _first_frame(FIXTURES / "ib_rocev2_all_opcodes.pcap",
                     lambda p: p.layer("ipv6") is not None and p.layer("atomiceth") is not None),
    ]
    for data, pkt in samples:
        ipl = pkt.layer("ip") or pkt.layer("ipv6")
        bth = pkt.layer("bth").off
        ip_off, version = ipl.off, (4 if ipl.proto == "ip" else 6)
        icrc_off = len(data) - 4

        def fn(buf, ip_off=ip_off, version=version, bth=bth, icrc_off=icrc_off):
            return ib.icrc_rocev2(buf, ip_off, version, bth, icrc_off)
        masked = set(range(ip_off * 8))                      # Ethernet: not covered at all
        if version == 4:
            masked |= _bits(ip_off + 1, 0, 8) | _bits(ip_off + 8, 0, 8) | _bits(ip_off + 10, 0, 16)
            udp = ip_off + 20
        else:
            masked |= _bits(ip_off, 4, 28) | _bits(ip_off + 7, 0, 8)
            udp = ip_off + 40
        masked |= _bits(udp + 6, 0, 16) | _bits(bth + 4, 0, 8)
        # IPv4 version/IHL say where the header ends: flipping them moves the header, it is not a field to check
        structural = _bits(ip_off, 0, 8) if version == 4 else set()
        cases.append((f"{ipl.proto}/{ib.PLANS[pkt.ib.opcode].name}", data, fn, masked, pkt.ib.payload_off,
                      structural))
    return cases


def _native_cases():
    cases = []
    for grh in (False, True):
        data = craft.native_ib(0x0A, 0x11, 77, b"payload!", grh=grh, dlid=4, slid=9, vl=3, sl=5,
                               tclass=0x12, flowlabel=0x345, hoplmt=9, va=0x7F00, r_key=0x99, dma_length=8)
        icrc_off = len(data) - 6
        if grh:
            def fn(buf, icrc_off=icrc_off):
                return ib.icrc_grh(buf, 0, 8, 48, icrc_off)
            masked = _bits(0, 0, 64) | _bits(8, 4, 28) | _bits(15, 0, 8) | _bits(48 + 4, 0, 8)
            bth = 48
        else:
            def fn(buf, icrc_off=icrc_off):
                return ib.icrc_local(buf, 0, 8, icrc_off)
            masked = _bits(0, 0, 4) | _bits(8 + 4, 0, 8)
            bth = 8
        cases.append((f"native grh={grh}", data, fn, masked, bth + 12 + 16, set()))
    return cases


def _bits(byte_off: int, bit: int, count: int) -> set[int]:
    start = byte_off * 8 + bit
    return set(range(start, start + count))


def _flip(data: bytes, pos: int) -> bytes:
    b = bytearray(data)
    b[pos // 8] ^= 0x80 >> (pos % 8)
    return bytes(b)


@pytest.mark.parametrize("case", _roce_cases() + _native_cases(), ids=lambda c: c[0])
def test_every_covered_bit_counts_and_masked_bits_do_not(case) -> None:
    name, data, fn, masked, hdr_end, structural = case
    icrc_pos = len(data) - (6 if name.startswith("native") else 4)
    stored = int.from_bytes(data[icrc_pos:icrc_pos + 4], "little")
    assert fn(data) & 0xFFFFFFFF == stored
    rng = random.Random(4791)
    payload_bits = list(range(hdr_end * 8, icrc_pos * 8))
    positions = list(range(hdr_end * 8)) + rng.sample(payload_bits, min(64, len(payload_bits)))
    for pos in positions:
        if pos in structural:
            continue
        changed = fn(_flip(data, pos)) & 0xFFFFFFFF != stored
        assert changed == (pos not in masked), f"{name}: bit {pos} (byte {pos // 8})"


def test_masked_fields_keep_the_packet_valid_through_the_dissector() -> None:
    """Rewrite what a router or switch may rewrite; the dissected packet still verifies."""
    for ip in ("4", "6"):
        base = craft.rocev2(0x04, 0x11, 1, b"data", ip=ip, src="192.0.2.1" if ip == "4" else "2001:db8::1",
                            dst="192.0.2.2" if ip == "4" else "2001:db8::2")
        b = bytearray(base)
        ip_off = 14
        if ip == "4":
            b[ip_off + 1] = 0xBB                      # DSCP 46, ECN CE
            b[ip_off + 8] -= 3                        # TTL
            b[ip_off + 10:ip_off + 12] = b"\x12\x34"  # header checksum
            udp = ip_off + 20
        else:
            b[ip_off] = (b[ip_off] & 0xF0) | 0x0B     # traffic class, high nibble
            b[ip_off + 1] = 0xBF                      # traffic class low nibble (ECN CE) + flow label
            b[ip_off + 2:ip_off + 4] = b"\xab\xcd"
            b[ip_off + 7] = 3                         # hop limit
            udp = ip_off + 40
        b[udp + 6:udp + 8] = b"\xbe\xef"              # UDP checksum
        b[udp + 8 + 4] = 0xC0 | 0x15                  # FECN, BECN, Resv6
        pkt = _dissect(bytes(b))
        assert pkt.ib.icrc_ok is True, ip
        assert pkt.ib.becn == 1 and pkt.ib.fecn == 1 and pkt.ib.ecn == 3


def test_vcrc_covers_every_byte() -> None:
    for grh in (False, True):
        data = craft.native_ib(0x04, 0x22, 3, b"xyz", grh=grh, dlid=1, slid=2, vl=1)
        body, v = data[:-2], int.from_bytes(data[-2:], "little")
        assert ib.vcrc(body) == v
        for pos in range(len(body) * 8):
            assert ib.vcrc(_flip(body, pos)) != v, pos
        bad = craft.native_ib(0x04, 0x22, 3, b"xyz", grh=grh, dlid=1, slid=2, vl=1, vcrc="bad")
        pkt = _dissect(bad, 247)
        lay = pkt.layer("vcrc")
        assert lay["vcrc.valid"] is False and lay["vcrc.expected"] == v
        assert f"expected 0x{v:04x}" in pkt.info_text


def test_native_global_packets_count_the_lrh_as_ones() -> None:
    """The IPoIB-multicast structure of ibdump captures: LRH, GRH, UD SEND Only to QP 0xffffff.

    Written out here from the spec text, independently of the dissector: ICRC over 8 bytes of
    ones, the GRH with TClass/FlowLabel/HopLmt as ones, the BTH with byte 4 as ones, the rest.
    """
    engine = Engine(strict=True)
    globals_seen = 0
    with open_capture(str(FIXTURES / "ib_native_247.pcap")) as cap:
        for fr in cap:
            pkt = engine.dissect(fr)
            d = fr.data
            assert pkt.ib.icrc_ok is True, fr.num
            assert pkt.layer("vcrc")["vcrc.valid"] is True, fr.num
            if d[1] & 3 != 3:
                continue
            globals_seen += 1
            g = bytearray(d[8:48])
            g[0] |= 0x0F
            g[1:4] = b"\xff\xff\xff"
            g[7] = 0xFF
            bth = bytearray(d[48:60])
            bth[4] = 0xFF
            end = len(d) - 6
            want = zlib.crc32(b"\xff" * 8 + bytes(g) + bytes(bth) + d[60:end])
            assert want == int.from_bytes(d[end:end + 4], "little")
            # counting the LRH itself (VL as ones), as for a local packet, does not verify
            lrh = bytes([d[0] | 0xF0]) + d[1:8]
            assert zlib.crc32(lrh + bytes(g) + bytes(bth) + d[60:end]) != want
    assert globals_seen >= 3
    # and the ibdump-like multicast packets are there
    with open_capture(str(FIXTURES / "ib_native_247.pcap")) as cap:
        mcast = [engine.dissect(fr) for fr in cap]
    assert sum(1 for p in mcast if p.ib.destqp == 0xFFFFFF and p.layer("grh") is not None) == 2


def _vcrc_bitwise(data: bytes) -> int:
    """The VCRC by its definition: CRC-16, polynomial 0x100B, bit-reflected, initial and final value 0xFFFF."""
    poly = int(f"{0x100B:016b}"[::-1], 2)
    crc = 0xFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
    return crc ^ 0xFFFF


def test_vcrc_matches_its_definition() -> None:
    rng = random.Random(0x100B)
    for n in list(range(0, 24)) + [255, 256, 289, 4101]:
        data = bytes(rng.randrange(256) for _ in range(n))
        assert ib.vcrc(data) == _vcrc_bitwise(data), n


def test_the_c_icrc_equals_the_python_one() -> None:
    """The compiled build computes the RoCEv2 ICRC in C (dissectors/_icrc.c); the Python function is the
    reference.  Runs where the extension is built: test_compiled.py runs this file on that build."""
    native = pytest.importorskip("rdmaspy.dissectors._icrc")
    rnd = random.Random(8)
    for i in range(3000):
        payload = bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 300)))
        ipver = "4" if i % 3 else "6"
        frame = craft.rocev2(rnd.randrange(0, 0x18), rnd.randrange(1 << 24), rnd.randrange(1 << 24), payload,
                             ip=ipver)
        if i % 5 == 0:      # variant fields that the ICRC masks, set to something
            frame = bytearray(frame)
            frame[15] = rnd.getrandbits(8)
            frame = bytes(frame)
        ip = 14
        bth = ip + (20 if ipver == "4" else 40) + 8
        end = len(frame) - 4
        assert native.icrc_rocev2(frame, ip, int(ipver), bth, end) == ib.icrc_rocev2(frame, ip, int(ipver), bth, end)
    with pytest.raises(ValueError):
        native.icrc_rocev2(b"\0" * 20, 0, 4, 28, 40)


def test_the_ipv4_icrc_check_says_whether_the_packet_carries_its_icrc() -> None:
    """The RoCEv2 fast path asks C whether an IPv4 packet's ICRC is the one computed (its end from the UDP
    length, beyond Ethernet's padding), and computes the value only when it is not: C, the Python function
    and the reference agree, intact and with a covered bit flipped."""
    functions = [ib.icrc_rocev2_ipv4_ok]
    try:
        from rdmaspy.dissectors._icrc import icrc_rocev2_ipv4_ok as native
        functions.append(native)
    except ImportError:
        pass
    rnd = random.Random(9)
    for i in range(600):
        payload = bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 300)))
        frame = bytearray(craft.rocev2(rnd.randrange(0, 0x18), rnd.randrange(1 << 24), rnd.randrange(1 << 24),
                                       payload))
        if i % 3 == 0:      # a covered bit of the payload or the ICRC flipped
            at = rnd.randrange(42 + 12, len(frame))
            frame[at] ^= 1 << rnd.randrange(8)
        frame = bytes(frame) + b"\0" * (i % 4)      # Ethernet padding after the ICRC
        end = 14 + 20 + (frame[38] << 8 | frame[39]) - 4
        want = ib.icrc_rocev2(frame, 14, 4, 42, end) == int.from_bytes(frame[end:end + 4], "little")
        assert want is (i % 3 != 0)
        for fn in functions:
            assert fn(frame, 14) is want
    for fn in functions[1:]:
        with pytest.raises(ValueError):
            fn(b"\0" * 20, 0)


def test_the_c_crc32_equals_zlib_at_every_length_and_start() -> None:
    """The extension's CRC-32 folds 64 and 16 bytes at a time with carry-less multiplication where the
    CPU has it and hands the remainder to zlib: every length around the fold sizes, every start
    alignment and running value must give zlib's answer."""
    native = pytest.importorskip("rdmaspy.dissectors._icrc")
    rnd = random.Random(32)
    blob = bytes(rnd.getrandbits(8) for _ in range(5000))
    lengths = list(range(0, 200)) + [255, 256, 257, 1023, 1024, 1025, 1040, 4096, 4999]
    for n in lengths:
        for start in (0, 1, 7):
            data = memoryview(blob)[start:start + n]
            value = rnd.getrandbits(32)
            assert native.crc32(data, value) == zlib.crc32(data, value), (n, start)
        assert native.crc32(blob[:n]) == zlib.crc32(blob[:n]), n
    assert native.crc32(b"\xff" * 64) != native.crc32(b"\xff" * 63 + b"\xfe")


def test_the_c_crc32c_equals_the_python_one() -> None:
    """MPA's CRC-32c in C (SSE4.2's crc32 instruction, eight bytes a step, or a table) against the Python
    reference, which the iSCSI vectors check (tests/test_iwarp_fixtures.py)."""
    native = pytest.importorskip("rdmaspy.dissectors._icrc")
    from rdmaspy.dissectors import iwarp_mpa
    rnd = random.Random(33)
    for n in list(range(0, 70)) + [1000, 1460, 4097]:
        data = bytes(rnd.getrandbits(8) for _ in range(n))
        value = rnd.getrandbits(32)
        assert native.crc32c(data, value) == iwarp_mpa.crc32c(data, value), n
        assert native.crc32c(memoryview(data)) == iwarp_mpa.crc32c(data), n
    assert native.crc32c(bytes(32)) == 0x8A9136AA
    with pytest.raises(TypeError):
        native.crc32c()
