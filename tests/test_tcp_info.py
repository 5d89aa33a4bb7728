"""TCP's own Info line is made after the protocol above has had the segment: first, before what that
protocol adds to the Info column, or not at all when that protocol writes the column itself (take_line)."""
from __future__ import annotations

import pytest

from rdmaspy.dissectors import transport
from rdmaspy.engine import Engine
from rdmaspy.packet import Frame
from rdmaspy.readers import open_capture
from rdmaspy.registry import table

from conftest import CAPTURES

PORT = 47111


def _segment(payload: bytes, dport: int = PORT) -> bytes:
    """A real TCP/IPv4 frame of the soft-iWARP capture with its ports and payload replaced."""
    with open_capture(str(CAPTURES / "siw-rping.pcap")) as cap:
        data = next(f.data for f in cap if f.data[12:14] == b"\x08\x00" and f.data[23] == 6)
    head = bytearray(data[:54])
    head[16:18] = (40 + len(payload)).to_bytes(2, "big")
    head[34:36] = (5000).to_bytes(2, "big")
    head[36:38] = dport.to_bytes(2, "big")
    head[46] = 0x50                      # 20-byte header, no options
    head[47] = 0x18                      # PSH, ACK
    return bytes(head) + payload


def _upper(pkt, buf, off, end, ctx) -> bool:
    if buf[off:end] == b"note":
        pkt.add_info("[a note]")
    elif buf[off:end] == b"mine":
        pkt.set_info("My protocol")
        tcp = next(lay for lay in pkt.made_layers() if isinstance(lay, transport.TcpLayer))
        transport.take_line(tcp)
    return buf[off:end] in (b"note", b"mine", b"none")


@pytest.fixture
def upper():
    tab = table("tcp.port")
    tab.add_heuristic("test.upper", _upper, first=True)
    try:
        yield
    finally:
        tab.heuristics[:] = [h for h in tab.heuristics if h[0] != "test.upper"]


@pytest.mark.parametrize("fast", [True, False], ids=["fast-path", "chain"])
def test_tcp_line_comes_first_unless_the_protocol_above_writes_its_own(upper, fast):
    engine = Engine(strict=True, fast_paths=fast)
    infos = {}
    for num, payload in enumerate([b"none", b"note", b"mine", b"other bytes"], 1):
        pkt = engine.dissect(Frame(num, 0, 1, _segment(payload), 54 + len(payload)))
        infos[payload] = pkt.info_text
    line = "5000 → 47111 [PSH, ACK] Seq="
    assert infos[b"none"].startswith(line) and infos[b"none"].endswith(" Len=4")
    assert infos[b"note"].startswith(line) and infos[b"note"].endswith(" Len=4 [a note]")
    assert infos[b"mine"] == "My protocol"
    assert infos[b"other bytes"].startswith(line) and infos[b"other bytes"].endswith(" Len=11")
