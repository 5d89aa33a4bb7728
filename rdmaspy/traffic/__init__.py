"""The built-in traffic generator: RPC-over-RDMA v1/v2 requester and responder.

protocol: messages, RFC 8797 private data, credits and chunk planning (no device);
session: the requester and responder logic over an abstract link (LoopLink joins
two in memory); verbs: pyverbs control path and the link over the native hot path
(_hotpath, built only where libibverbs headers exist). Commands: rdmaspy serve/load.
"""
