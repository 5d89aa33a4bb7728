"""Chunk rebuilds key an R_Key with the host whose memory it names and the peer it was given to:
clients of one server use the same R_Key numbers, and the server the same ones towards each."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))

import analysis_build as ab  # noqa: E402
import scale_build as sb  # noqa: E402

from rdmaspy.pipeline import Pipeline  # noqa: E402
from rdmaspy.readers import open_capture  # noqa: E402


def _rebuilt(path: Path, host: str) -> list[str]:
    """The rebuilt messages (summary text) of the packets to or from ``host``, in order."""
    out = []
    with open_capture(str(path)) as cap:
        for pkt in Pipeline(cap).packets():
            text = pkt.info_text
            if host in (pkt.src, pkt.dst) and "[rebuilt XID" in text:
                out.append(text.split("[rebuilt XID ", 1)[1])
    return out


def test_each_client_rebuilds_its_own_messages_among_others_with_the_same_handles(tmp_path):
    together = ab.write(tmp_path / "many.pcap", sb.many_hosts(6))
    for i in range(6):
        alone = ab.write(tmp_path / f"alone{i}.pcap", sb.client_conversation(i))
        host = sb.client_address(i)
        mine = _rebuilt(alone, host)
        assert len(mine) >= 2
        assert _rebuilt(together, host) == mine, i
