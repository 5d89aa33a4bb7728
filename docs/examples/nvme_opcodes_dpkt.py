"""NVMe/RDMA commands per name in a capture, with dpkt and rdmaspy.dpkt. A command reads by its queue (opcode
0x09 is Set Features on the admin queue, Dataset Management on an I/O queue): the queue is the one the
NVMe/RDMA record of its connection's CM REQ (RoCE) or MPA Request (iWARP) asks for."""
import collections
import gzip
import sys

import dpkt
import rdmaspy.dpkt as rd

HEADS = (rd.NVME_ADMIN_SQE, rd.NVME_IO_SQE, rd.NVME_FABRICS_SQE)
asked = {}              # RoCE: a CM REQ's local communication ID -> the QID its record asks for
iwarp_qid = {}          # iWARP: the host's (address, TCP port) -> the QID its MPA Request's record asks for
counts = collections.Counter()
opened = gzip.open if sys.argv[1].endswith(".gz") else open
with opened(sys.argv[1], "rb") as f:
    for ts, buf in dpkt.pcap.Reader(f):
        eth = dpkt.ethernet.Ethernet(buf)
        tcp = getattr(eth.data, "data", None)
        host = (eth.data.src, tcp.sport) if isinstance(tcp, dpkt.tcp.TCP) else None
        layer = eth
        while isinstance(layer, dpkt.Packet):
            below = layer.data
            if isinstance(layer, rd.CM_REQ) and isinstance(below.data, rd.NVME_RDMA_CM_REQ):
                asked[layer.localcommid] = below.data.qid       # a REQ to port 4420: its record is read
                rd.bind_nvme_rdma(qp=layer.localqpn)             # the host's QP: its SENDs are completions
            elif isinstance(layer, rd.CM_REP) and layer.remotecommid in asked:
                rd.bind_nvme_rdma(qp=layer.localqpn, qid=asked[layer.remotecommid])  # the controller's: commands
            elif isinstance(below, rd.NVME_RDMA_CM_REQ) and host:
                iwarp_qid[host] = below.qid                      # TCP port 4420: an MPA Request's record
            elif isinstance(below, HEADS) and host in iwarp_qid:
                below = layer.data = rd.nvme_capsule(bytes(below), iwarp_qid[host])   # read for its queue
            if isinstance(below, HEADS):
                field = "fctype" if isinstance(below, rd.NVME_FABRICS_SQE) else "opc"
                counts[below.__pprint_funcs__[field](getattr(below, field))] += 1
            layer = below
for name, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
    print(f"{n:5} {name}")
