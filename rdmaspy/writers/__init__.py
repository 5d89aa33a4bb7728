"""Capture file writers: pcapng (interfaces with options, packet comments, statistics) and classic pcap."""
from __future__ import annotations

from .pcap import PcapWriter
from .pcapng import PcapngWriter

__all__ = ["PcapWriter", "PcapngWriter"]
