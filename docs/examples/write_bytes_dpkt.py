"""RDMA WRITE payload bytes per destination QP of a RoCEv2 capture: dpkt with rdmaspy.dpkt."""
import sys
from collections import Counter

import dpkt
import rdmaspy.dpkt  # binds UDP port 4791: a RoCEv2 datagram's payload unpacks as a BTH

WRITES = range(6, 12)           # RDMA WRITE First, Middle, Last, Last with Immediate, Only, Only with Immediate
CONNECTED = (0, 1, 2, 5)        # the transports that have them: RC, UC, RD, XRC (the opcode's top 3 bits)

written = Counter()
with open(sys.argv[1], "rb") as f:
    for ts, buf in dpkt.pcap.Reader(f):
        bth = getattr(getattr(dpkt.ethernet.Ethernet(buf).data, "data", None), "data", None)   # IP, UDP, BTH
        if isinstance(bth, rdmaspy.dpkt.BTH) and bth.opcode & 31 in WRITES and bth.opcode >> 5 in CONNECTED:
            payload = bth.data
            while isinstance(payload, dpkt.Packet):     # RETH, ImmDt: down to the payload's bytes
                payload = payload.data
            written[bth.destqp] += len(payload)
for qp, n in sorted(written.items()):
    print(f"QP 0x{qp:06x} {n} bytes")
