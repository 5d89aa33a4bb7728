"""RPC-over-RDMA's chunks in the data ledger: the rules its segments are held to.

RPC-over-RDMA messages advertise segments (handle, offset, length) of the sender's memory: a call's
Read list, Write list and Reply chunk, and (seeds/001) a reply's Position Zero Read chunk.  The data
ledger (analysis.ledger) accounts the RDMA READs and WRITEs against them; these are the rules of RFC 8166
(and seeds/001) it reports breaches by, and the rules of the lengths a reply gives back.  A segment
(``model.Segment``) ends as full, partial, unused or overrun when its transaction closes.
"""
from __future__ import annotations

from ..typenames import Final
from .ledger import LedgerRules
from .rpcrdma_facts import ChunkList
from .rules import Rule, declare

WRITE_OVERRUN: Final = declare(
    "chunk.write_overrun", "error", "chunk",
    "RDMA WRITE of {length} bytes at 0x{offset:x} (R_Key 0x{handle:x}) runs {outside} bytes past the advertised "
    "Write chunk segment",
    "RFC 8166 §3.4.6 (a responder writes no more than the segment length)")
REPLY_OVERRUN: Final = declare(
    "chunk.reply_overrun", "error", "chunk",
    "RDMA WRITE of {length} bytes at 0x{offset:x} (R_Key 0x{handle:x}) runs {outside} bytes past the Reply chunk: "
    "a memory protection error that loses the connection",
    "seeds/001 (Reply chunk overrun); RFC 8166 §3.5.3")
READ_OVERRUN: Final = declare(
    "chunk.read_overrun", "error", "chunk",
    "RDMA READ of {length} bytes at 0x{offset:x} (R_Key 0x{handle:x}) reaches {outside} bytes past the advertised "
    "Read chunk segment",
    "RFC 8166 §3.4.5 (a Read chunk is read within its segments)")
UNADVERTISED: Final = declare(
    "chunk.unadvertised", "error", "chunk",
    "RDMA {op} of {length} bytes at 0x{offset:x} with R_Key 0x{handle:x}, which no open RPC-over-RDMA message "
    "advertised",
    "RFC 8166 §3.4.3 (RDMA segments are advertised before use); seeds/001 (memory protection error)")
WRITE_LENGTH: Final = declare(
    "chunk.write_length_mismatch", "error", "chunk",
    "the reply's Write list gives {reported} bytes for segment {segment} of Write chunk {chunk} (R_Key 0x{handle:x}), "
    "RDMA WRITE put {written} bytes there",
    "RFC 8166 §3.4.6 (the reply's Write list carries the lengths actually written)")
REPLY_LENGTH: Final = declare(
    "chunk.reply_length_mismatch", "error", "chunk",
    "the reply's Reply chunk gives {reported} bytes for segment {segment} (R_Key 0x{handle:x}), RDMA WRITE put "
    "{written} bytes there",
    "RFC 8166 §3.5.3 (the reply's Reply chunk carries the lengths actually written)")

# Which rule an overrun breaks, by the list the segment came from.
OVERRUN_RULES: dict[str, Rule] = {ChunkList.WRITE: WRITE_OVERRUN, ChunkList.REPLY: REPLY_OVERRUN,
                                   ChunkList.READ: READ_OVERRUN, ChunkList.RESPONDER_READ: READ_OVERRUN}

# RPC-over-RDMA's rules of the data ledger.
LEDGER_RULES: Final = LedgerRules(UNADVERTISED, OVERRUN_RULES)
