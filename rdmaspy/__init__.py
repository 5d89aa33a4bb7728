"""rdmaspy: a protocol analyzer for RDMA (RoCE, InfiniBand, iWARP) and RPC-over-RDMA."""
__version__ = "0.1.0"
