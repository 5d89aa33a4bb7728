"""Live mode (``rdmaspy capture -i IFACE --tui``): the packet list grows as packets arrive.

The capture runs as it does without ``--tui`` (``LiveCapture``: the ring, the pcapng files, the
limits), on a thread of its own; its display side, instead of printing lines, hands each packet to
``LiveModel.show``, which writes it to a frame spool (a temporary pcapng, so that details, filters and
export read frames back as they do from a file), runs it through the pipeline and adds its row to the
index.  When the display falls behind, the capture leaves packets out of the display, never out of
the file, and counts them: the status bar shows that count as drops.
"""
from __future__ import annotations

import os
import tempfile
import threading
import time

from ..capture.live import LiveCapture, Summary
from ..errors import RdmaspyError
from ..packet import Frame
from ..writers.pcapng import PcapngWriter
from .model import CaptureModel


class LiveModel(CaptureModel):
    def __init__(self, iface: str, linktype: int, snaplen: int) -> None:
        fd, spool = tempfile.mkstemp(prefix="rdmaspy-live-", suffix=".pcapng")
        os.close(fd)
        super().__init__(spool, name=f"live: {iface}")
        self.live = True
        self.linktype = linktype
        self._writer = PcapngWriter(spool, application="rdmaspy (tui live spool)", buffering=1 << 16)
        self._iface = self._writer.add_interface(linktype, snaplen, name=iface)
        self._pipe = self.pipeline()
        self.index.before_publish = self._writer.flush
        self._num = 0
        self.capture: LiveCapture | None = None
        self.summary: Summary | None = None
        self.error = ""
        self._capture_thread: threading.Thread | None = None
        self._rate_mark = (time.monotonic(), 0)
        self._rate = 0.0
        self._closed = False

    # -- the capture's display side (its display thread) ---------------------------------------
    def show(self, _num: int, ts: int, data: bytes, wirelen: int) -> None:
        self._num += 1
        self._writer.write_packet(self._iface, ts, data, wirelen)
        pkt = self._pipe.feed(Frame(self._num, ts, self.linktype, bytes(data), wirelen))
        if self._num == self.checkpoints.next_at:
            self.checkpoints.take(self._pipe, self._num)
        run = self.live_filter
        if run is not None:
            run.offer(self._num - 1, pkt, self._pipe.t0)

    def flush(self) -> None:
        """The capture has nothing more for the display just now: let the UI see what came."""
        self.index.publish()

    # -- running ---------------------------------------------------------------------------------
    def start(self) -> None:
        assert self.capture is not None, "LiveModel.capture is set before start()"
        self._capture_thread = threading.Thread(target=self._run, name="rdmaspy-capture", daemon=True)
        self._capture_thread.start()

    def _run(self) -> None:
        assert self.capture is not None
        try:
            self.summary = self.capture.run()
            if self.summary.error:
                self.error = self.summary.error
        except (RdmaspyError, OSError) as exc:
            self.error = str(exc)
        finally:
            self._pipe.finish()
            self.index.finish()

    def stop(self) -> Summary | None:
        """Stop the capture (every packet the kernel took in goes into the file) and wait for it."""
        if self.capture is not None:
            self.capture.request_stop()
        if self._capture_thread is not None:
            self._capture_thread.join()
        return self.summary

    def wait(self, timeout: float | None = None) -> bool:
        if self._capture_thread is not None:
            self._capture_thread.join(timeout)
        return self.index.done

    def live_status(self) -> str:
        cap = self.capture
        if cap is None:
            return ""
        s = cap.summary
        now = time.monotonic()
        then, count = self._rate_mark
        if now - then >= 1.0:
            self._rate = (s.captured - count) / (now - then)
            self._rate_mark = (now, s.captured)
        dropped = s.rdmaspy_dropped + s.display_dropped + s.kernel_dropped
        state = "stopped" if self.index.done else "capturing"
        text = f"{state}: {s.captured} captured, Dropped: {dropped}, {self._rate:.0f}/s"
        if self.error:
            text += f" ({self.error})"
        return text

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.stop()
        super().close()
        try:
            self._writer.close()
        except RdmaspyError:
            pass
        try:
            os.unlink(self.path)
        except OSError:
            pass
