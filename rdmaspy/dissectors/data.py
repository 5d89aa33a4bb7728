"""Undissected bytes, shown as data (Wireshark's ``data`` protocol)."""
from __future__ import annotations

from ..fields import Field
from ..packet import Packet

DATA = Field("data.data", 0, "Data", "bytes")
DATA_LEN = Field("data.len", 0, "Length", "dec", unit="bytes")


def add_data_layer(pkt: Packet, buf: bytes, off: int, end: int) -> None:
    lay = pkt.add_layer("data", None, buf, off, end - off, f"Data ({end - off} bytes)")
    lay.add(DATA, bytes(buf[off:end]), off, end - off)
    lay.add(DATA_LEN, end - off)
