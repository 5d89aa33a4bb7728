"""RDMA WRITE payload bytes per destination QP of a RoCEv2 capture: scapy with rdmaspy.scapy."""
import sys
from collections import Counter

from scapy.packet import Raw
from scapy.utils import PcapReader

from rdmaspy.scapy import BTH   # binds UDP port 4791 to rdmaspy's BTH

WRITES = range(6, 12)           # RDMA WRITE First, Middle, Last, Last with Immediate, Only, Only with Immediate
CONNECTED = (0, 1, 2, 5)        # the transports that have them: RC, UC, RD, XRC (the opcode's top 3 bits)

written = Counter()
for pkt in PcapReader(sys.argv[1]):
    bth = pkt.getlayer(BTH)
    if bth is not None and bth.opcode & 31 in WRITES and bth.opcode >> 5 in CONNECTED:
        payload = bth.getlayer(Raw)                     # after RETH, ImmDt; the pad is a layer of its own
        written[bth.destqp] += len(payload.load) if payload is not None else 0
for qp, n in sorted(written.items()):
    print(f"QP 0x{qp:06x} {n} bytes")
