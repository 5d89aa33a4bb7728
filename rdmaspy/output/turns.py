"""A decode's printing shared among processes, by turns.

Every process reads, dissects and analyses every frame (the analysis needs the whole history, and a
packet's tree shows what it found), but prints only the packets of its own turns: the shown packets are
dealt in runs of ``RUN`` to the processes in turn.  The first process (``TurnPrinter``) writes its own runs
and, between them, the others' (``TurnWorker``), each sent whole through a pipe as the length of its bytes
then the bytes, so the output is byte for byte what one process writes.

Printing a packet's tree or JSON object costs several times what dissecting and analysing it does, so with
two processes a ``decode -V`` takes about the dissection plus half the printing.

The analysis adds its fields (``ib.analysis``, ``rpcrdma.analysis``) only to the packets a process prints
(``prints``; its findings it makes all the same): what it leaves out of the others is a part of the
dissection's cost that each process saves.

A run the first process has not been sent yet is kept as its packets: if the process that owes it ends
early (killed, out of memory), the first prints them itself (without those fields) and every later run of
that process (with them), so no packet is lost.
"""
from __future__ import annotations

import queue
import struct
import threading

from ..packet import Packet
from ..pipeline import PacketSink, Pipeline, Sink
from ..typenames import BinaryIO, ClassVar, Final
from .lines import LineWriter

RUN = 128                   # shown packets a turn (a module value, not Final: the tests deal shorter runs)
AHEAD: Final = 8            # runs a process may have made that the first has not read yet (memory)
_LENGTH: Final = struct.Struct("<Q")


class _Turns(PacketSink):
    """Counts the shown packets into runs; the runs of ``turn`` go to ``inner``.  Compiled (setup.py):
    the pipeline calls ``packet`` for every shown packet of every process."""

    def __init__(self, inner: Sink, out: LineWriter, ways: int, turn: int, run: int) -> None:
        self.inner = inner
        self.out = out
        self.ways = ways
        self.turn = turn
        self.run_length = run
        self.left = run             # packets left in the current run
        self.run = 0                # the current run's number
        self.mine = turn == 0       # whether the current run is this process's to print
        # what the pipeline reads of its sinks: those of the sink that prints
        self.fills_layers: bool = getattr(inner, "fills_layers", True)
        self.wants_names: bool = getattr(inner, "wants_names", False)

    def attach(self, pipe: Pipeline) -> None:
        attach = getattr(self.inner, "attach", None)
        if attach is not None:
            attach(pipe)

    def packet(self, pkt: Packet) -> None:
        if not self.left:
            self.end_run(self.run)
            self.run += 1
            self.left = self.run_length
            self.mine = self.owner(self.run) == self.turn
        self.left -= 1
        if self.mine:
            self.inner.packet(pkt)
        else:
            self.passed(pkt)

    # the pipeline asks ``prints`` of each packet as it comes (the analysis adds fields to those printed here)
    deals_turns: ClassVar[bool] = True

    def prints(self, index: int) -> bool:
        return self.owner(index // self.run_length) == self.turn

    def owner(self, run: int) -> int:
        return run % self.ways

    def end_run(self, run: int) -> None:
        """The packets of ``run`` are all shown."""

    def passed(self, pkt: Packet) -> None:
        """A packet another process prints."""

    def started(self) -> bool:
        return self.run > 0 or self.left < self.run_length

    def finish(self) -> None:
        if self.started():
            self.end_run(self.run)


class TurnPrinter(_Turns):
    """The first process's sink: prints its runs, and the others' as their processes send them
    (``sources[t]``: the pipe of turn ``t``; index 0 unused)."""

    def __init__(self, inner: Sink, out: LineWriter, sources: list[BinaryIO | None], run: int = 0) -> None:
        super().__init__(inner, out, len(sources), 0, run or RUN)
        self.sources = sources
        self.waiting: list[Packet] = []     # the packets of the run another process owes
        self.lost: list[int] = []           # the turns whose process ended early

    def owner(self, run: int) -> int:
        turn = run % self.ways
        return turn if self.sources[turn] is not None else 0

    def passed(self, pkt: Packet) -> None:
        self.waiting.append(pkt)

    def end_run(self, run: int) -> None:
        turn = self.owner(run)
        if turn == 0:
            return
        source = self.sources[turn]
        assert source is not None
        data = _read_run(source)
        if data is None:        # that process ended early: its packets printed here, and its later runs
            self.sources[turn] = None
            self.lost.append(turn)
            source.close()
            for pkt in self.waiting:
                self.inner.packet(pkt)
        else:
            self.out.flush()        # this process's own lines before the run
            self.out.stream.write(data)
        self.waiting.clear()

    def flush(self) -> None:
        self.out.flush()            # lines of this process's runs: none come after a run not sent yet

    def finish(self) -> None:
        super().finish()
        self.inner.finish()

    def close(self) -> None:
        for i, source in enumerate(self.sources):
            if source is not None:
                source.close()
                self.sources[i] = None


class TurnWorker(_Turns):
    """Another process's sink: prints the runs of ``turn`` into ``held`` (the stream of its ``out``) and
    sends each to ``sink`` as its run ends.  A thread writes them, so that this process goes on while the
    first has not read its last runs yet (it reads a run when it reaches it); up to ``AHEAD`` runs wait."""

    def __init__(self, inner: Sink, out: LineWriter, held: "HeldLines", sink: BinaryIO, ways: int,
                 turn: int, run: int = 0) -> None:
        super().__init__(inner, out, ways, turn, run or RUN)
        self.held = held
        self.sink = sink
        self.runs: queue.Queue[bytes | None] = queue.Queue(AHEAD)
        self.failed: BaseException | None = None     # how the writing ended early (the first went away)
        self.writer = threading.Thread(target=self._send, name="rdmaspy-turns", daemon=True)
        self.writer.start()

    def end_run(self, run: int) -> None:
        if self.owner(run) != self.turn:
            return
        if self.failed is not None:
            raise self.failed
        self.out.flush()
        self.runs.put(self.held.take())

    def _send(self) -> None:
        sink = self.sink
        try:
            while (data := self.runs.get()) is not None:
                sink.write(_LENGTH.pack(len(data)))
                sink.write(data)
                sink.flush()
        except (OSError, ValueError) as e:
            self.failed = e
            while self.runs.get() is not None:      # let ``end_run`` put, until ``finish``
                pass

    def flush(self) -> None:
        """Nothing: a run goes out whole, when it ends."""

    def finish(self) -> None:
        super().finish()
        self.runs.put(None)
        self.writer.join()
        if self.failed is not None:
            raise self.failed


class HeldLines:
    """A ``LineWriter``'s stream that keeps what it is given until taken (a worker's run)."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def write(self, data: bytes, /) -> int:
        self.parts.append(data)
        return len(data)

    def flush(self) -> None:
        pass

    def take(self) -> bytes:
        data = b"".join(self.parts)
        self.parts.clear()
        return data


def _read_run(source: BinaryIO) -> bytes | None:
    """The next run from a worker's pipe; None if it ended before sending it whole."""
    head = source.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (size,) = _LENGTH.unpack(head)
    data = source.read(size)
    return data if len(data) == size else None
