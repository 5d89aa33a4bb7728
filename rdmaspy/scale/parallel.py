"""The export in shards on Dask distributed: a local cluster of worker processes, or a real one by address.

A first read of the capture (one task per input file, side by side) counts the frames of each host pair
(rdmaspy.dissectors.hostpair) and deals the pairs to the shards, the biggest first to the lightest
shard; frames of no host pair (ARP, LLDP, link types without addresses) go to shard 0.  Each shard is
one task: it reads the capture, keeps its own frames in capture order and runs the unchanged pipeline
with the export sink, so every queue pair between two hosts and the CM exchange that set it up are
analysed together, as in one process.

When there are fewer shards than workers (one big connection is one host pair, hence one shard), the
capture is also cut into time slices at frame boundaries and the ``packets`` table of each shard is
written by one task per slice, on the other workers.  A slice decodes from the pipeline's state (the
engine: connection table, reassembly, TCP streams; with the analysis' state, which the memory budget
they share reaches) that its shard's task pickles as it passes the slice's first frame, as the TUI's
checkpoints do, so its packets are those of one process exactly, with no window to guess.  The
slice does not run the analysis: the shard's task, which needs the whole history for it (credits, PSN
sequences, open chunks), writes the other tables and counts the analysis' expert items of each packet,
added to the slice's ``expert`` column when the connections are numbered.  Where the memory budget
gave up state (its shedding depends on what the analysis holds too), the shard is made again without
slices.  A state that cannot be pickled and read back (as the TUI's checkpoints find mypyc's compiled
classes) hands nothing: the shard's task writes the packets itself.

A second round of tasks numbers the connections as one process does (in the order of the frames that
made them known) and writes the final part files ``<table>-<shard>[-<slice>][.<n>].parquet``.  The files must
be at the same path on every worker (a shared file system) when the cluster is a real one.
"""
from __future__ import annotations

import logging
import os
import pickle
import resource
import shutil
import signal
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Callable, Iterator, Optional, Union

from ..analysis.analyzer import Analyzer
from ..dissectors.hostpair import host_pair
from ..engine import Engine
from ..errors import RdmaspyError
from ..packet import Frame
from ..pipeline import Options, Pipeline
from .source import ChainedCapture

# Below this many frames a default run (no --workers) stays in one process: starting the cluster
# costs more than it saves.
MIN_PARALLEL_FRAMES = 200_000
# Time slices: none shorter than this many frames (each costs a pickled state and a second decode of its
# frames), at most this many per worker (a slice's task can start only when its state is kept).
MIN_SLICE_FRAMES = 25_000
SLICES_PER_WORKER = 4
POLL_S = 0.05           # how often a slice's task looks for the state it starts from
CONNECT_TIMEOUT = "15s"      # how long a scheduler given by address may take to answer
# The local cluster's workers: no statistical profiler (see _Engine._connect).
WORKER_CONFIG: dict[str, object] = {"distributed.worker.profile.enabled": False}


@dataclass(slots=True)
class Plan:
    """Which shard decodes the frames of each host pair."""
    shards: int
    assignment: dict[bytes, int]        # host pair -> shard; pairs not in it (and None) go to shard 0
    frames: int
    loads: list[int]                    # frames per shard
    files: list[int] = field(default_factory=list)     # frames in each input file
    cuts: list[int] = field(default_factory=list)      # slice k is frames cuts[k-1] + 1 .. cuts[k]

    def slices(self) -> list[tuple[int, int]]:
        """The time slices as (after frame, up to frame); one slice, the whole capture, without cuts."""
        ends = [0, *self.cuts, self.frames]
        return [(ends[k], ends[k + 1]) for k in range(len(ends) - 1)]


@dataclass(slots=True)
class ShardResult:
    shard: int
    frames: int
    rows: dict[str, int]
    created: dict[int, int]             # the shard's connection id -> the frame that made it known
    problems: list[str]
    peak_rss_kib: int                   # the worker process's peak
    cpu_s: float                        # CPU time the task took
    handed: int = 0                     # time slices whose packets the slices' tasks write
    analysis_items: dict[int, int] = field(default_factory=dict)   # frame -> the analysis' expert items
    shed: bool = False                  # the memory budget gave up state
    files: dict[str, list[str]] = field(default_factory=dict)      # each table's part files, in staging


@dataclass(slots=True)
class SliceResult:
    shard: int
    slice: int
    frames: int
    rows: dict[str, int]                # empty: the shard's task wrote these packets itself
    peak_rss_kib: int
    cpu_s: float
    shed: bool = False                  # the memory budget gave up state
    files: dict[str, list[str]] = field(default_factory=dict)      # each table's part files, in staging


@dataclass(slots=True)
class ExportResult:
    rows: dict[str, int]
    frames: int
    problems: list[str]
    workers: int
    shards: list[ShardResult] = field(default_factory=list)
    slices: list[SliceResult] = field(default_factory=list)


def count_file(path: str) -> tuple[int, dict[bytes, int]]:
    """One task of the first read: the frames of one file, and how many of them each host pair has
    (the key ``b""``: the frames of no host pair)."""
    counts: dict[bytes | None, int] = {}
    frames = 0
    cap = ChainedCapture([path])
    with cap:
        for frame in cap:
            frames += 1
            key = host_pair(frame.linktype, frame.data)
            counts[key] = counts.get(key, 0) + 1
    keyless = counts.pop(None, 0)
    return frames, {b"": keyless, **{k: v for k, v in counts.items() if k is not None}}


def make_plan(paths: list[str], workers: int, counted: list[tuple[int, dict[bytes, int]]] | None = None) -> Plan:
    """Count the frames of each host pair (each file's count, when given) and deal the pairs to at most
    ``workers`` shards."""
    if counted is None:
        counted = [count_file(p) for p in paths]
    counts: dict[bytes, int] = {}
    for _frames, per_file in counted:
        for key, n in per_file.items():
            counts[key] = counts.get(key, 0) + n
    keyless = counts.pop(b"", 0)
    n = max(1, min(workers, len(counts)))
    loads = [0] * n
    loads[0] = keyless
    assignment: dict[bytes, int] = {}
    for key, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        shard = min(range(n), key=lambda i: (loads[i], i))
        assignment[key] = shard
        loads[shard] += count
    files = [f for f, _c in counted]
    return Plan(n, assignment, sum(files), loads, files)


def slice_cuts(plan: Plan, workers: int) -> list[int]:
    """Where the capture is cut into time slices: only when some workers would have no shard."""
    if plan.shards >= workers:
        return []
    n = min(plan.frames // MIN_SLICE_FRAMES, SLICES_PER_WORKER * workers)
    return [plan.frames * k // n for k in range(1, n)] if n >= 2 else []


class ShardSource:
    """The frames of one shard, in capture order, numbered as in the whole capture."""

    def __init__(self, paths: list[str], shard: int, assignment: dict[bytes, int],
                 counts: list[int] | None = None) -> None:
        self.capture = ChainedCapture(paths, counts)
        self.shard = shard
        self.assignment = assignment
        # one shard (one host pair cut into time slices): every frame is its, no need to look
        self.everything = shard == 0 and not any(assignment.values())

    def mine(self, frame: Frame) -> bool:
        key = host_pair(frame.linktype, frame.data)
        return (0 if key is None else self.assignment.get(key, 0)) == self.shard

    def __iter__(self) -> Iterator[Frame]:
        if self.everything:
            yield from self.capture
            return
        mine = self.mine
        for frame in self.capture:
            if mine(frame):
                yield frame

    def between(self, lo: int, hi: int) -> Iterator[Frame]:
        """The shard's frames lo + 1 .. hi."""
        if self.everything:
            yield from self.capture.between(lo, hi)
            return
        mine = self.mine
        for frame in self.capture.between(lo, hi):
            if mine(frame):
                yield frame


def _state_path(staging: str, shard: int, k: int, kind: str) -> str:
    return os.path.join(staging, f"slice-{shard:04d}-{k:04d}.{kind}")


class Handoff:
    """The shard's task hands time slices to their tasks: the pipeline's state as it reaches each slice's
    first frame, pickled (``.state``), or word that the slice has nothing to do (``.none``: the shard's
    task writes those packets itself, or the shard has no frames there)."""

    def __init__(self, staging: str, shard: int, cuts: list[int]) -> None:
        self.staging, self.shard, self.cuts = staging, shard, cuts
        self.next = 1                   # the next slice to hand (slice 0 starts from a new engine)
        self.handed = 1 if cuts else 0  # slices whose packets their tasks write
        self.failed = not cuts

    def due(self, frame: int) -> bool:
        return self.next <= len(self.cuts) and frame > self.cuts[self.next - 1]

    def hand(self, pipe: Pipeline) -> bool:
        """Hand the next slice its state; False when the state cannot be kept (nothing is handed after)."""
        k, self.next = self.next, self.next + 1
        if not self.failed:
            data = _pickled_state(pipe)
            if data is None:
                self.failed = True
            else:
                tmp = _state_path(self.staging, self.shard, k, "part")
                with open(tmp, "wb") as fh:
                    fh.write(data)
                os.replace(tmp, _state_path(self.staging, self.shard, k, "state"))
                self.handed += 1
                return True
        _mark_none(self.staging, self.shard, k)
        return False

    def close(self) -> None:
        """The slices not reached have no frames of this shard (or the task failed): nothing to do."""
        for k in range(self.next, len(self.cuts) + 1):
            _mark_none(self.staging, self.shard, k)
        self.next = len(self.cuts) + 1


def _pickled_state(pipe: Pipeline) -> bytes | None:
    """The pipeline's engine and analysis, pickled without the sinks' hooks; None when they cannot be
    pickled and read back (mypyc's classes pickle, but call ``__init__`` without arguments when read)."""
    an = pipe.analyzer
    hooks = (an.on_record, an.on_finding) if an is not None else None
    try:
        if an is not None:
            an.on_record = an.on_finding = None
        data = pickle.dumps((pipe.engine, an), protocol=pickle.HIGHEST_PROTOCOL)
        pickle.loads(data)
    except (pickle.PicklingError, pickle.UnpicklingError, TypeError, AttributeError, RecursionError,
            ValueError, EOFError) as exc:
        logging.getLogger(__name__).info("time slices not handed: %s", exc)
        return None
    finally:
        if an is not None and hooks is not None:
            an.on_record, an.on_finding = hooks
    return data


def _mark_none(staging: str, shard: int, k: int) -> None:
    with open(_state_path(staging, shard, k, "none"), "wb"):
        pass


def run_shard(paths: list[str], shard: int, assignment: dict[bytes, int], staging: str,
              cuts: list[int] | None = None, counts: list[int] | None = None) -> ShardResult:
    """One task: the shard's frames through the one pipeline into its tables in ``staging``; with
    ``cuts``, the packets of each time slice are left to the slice's task, handed the engine's state."""
    from ..output.parquet import ExportSink
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime
    source = ShardSource(paths, shard, assignment, counts)
    sink = ExportSink(staging, suffix=f"-{shard:04d}", file_of=source.capture.file_of)
    handoff = Handoff(staging, shard, cuts or [])
    sink.packet_rows = handoff.failed
    pipe = Pipeline(None, Options(analyze=True), [sink])

    def frames() -> Iterator[Frame]:
        # the pipeline asks for a frame when it is done with the one before: the state is that of a slice's start
        for frame in source:
            while handoff.due(frame.num):
                cut = handoff.cuts[handoff.next - 1]
                if not handoff.hand(pipe) and not sink.packet_rows:
                    # from here on this task writes the packets; those up to the cut, still held for a
                    # finding, are the slice's before it
                    sink.packet_rows = True
                    sink.rows_after = cut
            yield frame

    pipe.source = frames()
    try:
        with source.capture:
            pipe.run()
    finally:
        handoff.close()
    problems = source.capture.problems if shard == 0 else []
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return ShardResult(shard, pipe.frames, sink.rows, sink.created, problems, usage.ru_maxrss,
                       usage.ru_utime + usage.ru_stime - cpu, handoff.handed, sink.analysis_items,
                       pipe.session.budget.shed_count > 0, sink.files)


def run_slice(paths: list[str], shard: int, assignment: dict[bytes, int], staging: str, k: int,
              lo: int, hi: int, counts: list[int]) -> SliceResult:
    """One task: the packets of the shard's frames lo + 1 .. hi, decoded from the state the shard's task
    kept at frame lo (slice 0: a new pipeline); nothing when that task writes them itself."""
    from ..output.parquet import PacketSink
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime
    engine = Engine() if k == 0 else _wait_for_state(staging, shard, k)
    rows: dict[str, int] = {}
    files: dict[str, list[str]] = {}
    frames = 0
    shed = False
    if engine is not None:
        budget = engine.session.budget
        before = budget.shed_count
        source = ShardSource(paths, shard, assignment, counts)
        sink = PacketSink(staging, f"-{shard:04d}-{k:04d}", source.capture.file_of)
        with source.capture:
            pipe = Pipeline(source.between(lo, hi), Options(), [sink], engine=engine)
            pipe.run()
        rows, files, frames, shed = sink.rows, sink.files, pipe.frames, budget.shed_count > before
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return SliceResult(shard, k, frames, rows, usage.ru_maxrss, usage.ru_utime + usage.ru_stime - cpu, shed,
                       files)


def _wait_for_state(staging: str, shard: int, k: int) -> Engine | None:
    """The engine the shard's task kept for slice k, once it is there; None: nothing to do."""
    path = _state_path(staging, shard, k, "state")
    while True:
        if os.path.exists(path):
            with open(path, "rb") as fh:
                engine, analyzer = pickle.load(fh)
            os.remove(path)
            if not isinstance(engine, Engine) or not (analyzer is None or isinstance(analyzer, Analyzer)):
                raise RdmaspyError(f"{path}: not the state of a slice")
            return engine
        if os.path.exists(_state_path(staging, shard, k, "none")) or not os.path.isdir(staging):
            return None             # nothing to do, or the export ended without it (its shard's task failed)
        time.sleep(POLL_S)


def renumber_part(src: str, dst: str, lookup: list[int | None], items: dict[int, int] | None = None) -> int:
    """One task: copy a part file with its ``connection`` column numbered as in one process (and, for the
    packets of a time slice, the analysis' expert items of each packet added to ``expert``); returns rows."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from ..output.parquet import BATCH
    table = pa.array(lookup, type=pa.uint32())
    pf = pq.ParquetFile(src)
    schema = pf.schema_arrow
    col = schema.get_field_index("connection")
    frames = pa.array(list(items), type=pa.uint64()) if items else None
    added = pa.array(list(items.values()), type=pa.uint16()) if items else None
    rows = 0
    with pq.ParquetWriter(dst, schema, compression="zstd") as out:
        for batch in pf.iter_batches(batch_size=BATCH):
            batch = batch.set_column(col, schema.field(col), pc.take(table, batch.column(col)))
            if frames is not None and added is not None:
                at = schema.get_field_index("expert")
                more = pc.fill_null(pc.take(added, pc.index_in(batch.column("frame"), value_set=frames)), 0)
                batch = batch.set_column(at, schema.field(at), pc.add(batch.column(at), more))
            out.write_batch(batch)
            rows += batch.num_rows
    os.remove(src)
    return rows


def connection_numbers(results: list[ShardResult]) -> dict[int, list[int | None]]:
    """Per shard, its connection id -> the number one process gives it (ids follow the frames that
    made the connections known; one frame making two keeps their order)."""
    order = sorted((frame, r.shard, local) for r in results for local, frame in r.created.items())
    lookups: dict[int, list[int | None]] = {r.shard: [None] * (len(r.created) + 1) for r in results}
    for number, (_frame, shard, local) in enumerate(order, 1):
        lookups[shard][local] = number
    return lookups


SignalHandler = Union[Callable[[int, Optional[FrameType]], object], int]


class _Engine:
    """A Dask client on a local cluster of ``workers`` processes, or on the scheduler at ``address``."""

    def __init__(self, workers: int, address: str | None) -> None:
        from ..scale import need
        need("distributed", "export --workers")
        for name in ("distributed", "distributed.worker", "distributed.scheduler", "distributed.nanny"):
            logging.getLogger(name).setLevel(logging.ERROR)
        self.cluster: Any = None
        # The command line dies quietly on SIGPIPE (``| head``); the engine's sockets must see EPIPE
        # instead, or a worker closing its end while the scheduler writes kills this whole process
        # (exit 141, files half written). The disposition is the process's: restored on close().
        self._old_pipe = _ignore_sigpipe()
        try:
            with warnings.catch_warnings():
                # "port in use" and the like: the engine's notes, not the user's business
                warnings.simplefilter("ignore")
                self._connect(workers, address)
        except (OSError, TimeoutError) as exc:
            self._restore_sigpipe()
            raise RdmaspyError(f"cannot reach the cluster{' at ' + address if address else ''}: {exc}") from None
        except BaseException:
            self._restore_sigpipe()
            raise

    def _connect(self, workers: int, address: str | None) -> None:
        import dask
        from distributed import Client, LocalCluster
        if address is not None:
            self.client = Client(address, timeout=CONNECT_TIMEOUT)
        else:
            # A Dask worker samples its task's stack 100 times a second and keeps a profile of each
            # second for the last 1,000 (distributed.admin.low-level-log-length): memory that grows
            # with a task's length. Nobody reads them here (no dashboard): the workers do not profile.
            with dask.config.set(WORKER_CONFIG):
                self.cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                            dashboard_address=None, memory_limit=0, silence_logs=logging.ERROR)
            self.client = Client(self.cluster)

    @property
    def workers(self) -> int:
        return max(1, sum(self.client.nthreads().values()))

    def map(self, fn: Any, calls: list[tuple]) -> list[Any]:
        return self.run([(fn, args, 0) for args in calls])

    def run(self, tasks: list[tuple[Any, tuple, int]]) -> list[Any]:
        """Each (function, arguments, priority) as a task, the higher priorities first; their results."""
        from distributed import KilledWorker
        futures = [self.client.submit(fn, *args, pure=False, priority=priority) for fn, args, priority in tasks]
        try:
            return self.client.gather(futures)
        except KilledWorker as exc:
            raise RdmaspyError(f"a worker died (out of memory?): {exc}") from None
        finally:
            self.client.cancel([f for f in futures if not f.done()])

    def close(self) -> None:
        try:
            self.client.close()
            if self.cluster is not None:
                self.cluster.close()
        finally:
            self._restore_sigpipe()

    def _restore_sigpipe(self) -> None:
        if self._old_pipe is not None:
            signal.signal(signal.SIGPIPE, self._old_pipe)
            self._old_pipe = None


def _ignore_sigpipe() -> SignalHandler | None:
    """SIGPIPE ignored (writes to a closed socket raise instead); the disposition it had, or None when
    it cannot be changed here (no SIGPIPE on this system, or not the main thread)."""
    if not hasattr(signal, "SIGPIPE"):
        return None
    try:
        old = signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    except ValueError:
        return None
    return signal.SIG_DFL if old is None else old        # None: set outside Python


def _redo_shed(engine: _Engine, results: list[ShardResult], slices: list[SliceResult], paths: list[str],
               plan: Plan, staging: str) -> tuple[list[ShardResult], list[SliceResult]]:
    """Shards cut into slices where the memory budget gave up state, made again without slices: what it
    gives up depends on what the analysis holds, which a slice does not run."""
    redo = {r.shard for r in results if r.handed and r.shed} | {sl.shard for sl in slices if sl.shed}
    if not redo:
        return results, slices
    for name in os.listdir(staging):
        # <table>-<shard>[-<slice>][.<n>].parquet, slice-<shard>-<slice>.state|none
        if int(name.split(".", 1)[0].split("-")[1]) in redo:
            os.remove(os.path.join(staging, name))
    again = engine.map(run_shard, [(paths, s, plan.assignment, staging, [], plan.files) for s in sorted(redo)])
    by_shard = {r.shard: r for r in again}
    return ([by_shard.get(r.shard, r) for r in results], [sl for sl in slices if sl.shard not in redo])


def export_parallel(paths: list[str], directory: str, workers: int | None, address: str | None,
                    plan: Plan | None = None) -> ExportResult:
    """The tables of ``paths`` in ``directory``, decoded in shards (and time slices) on the engine."""
    from ..output.parquet import TABLES
    engine = _Engine(workers or os.cpu_count() or 1, address)
    try:
        n = workers if workers is not None else engine.workers
        if plan is None:
            plan = make_plan(paths, n, engine.map(count_file, [(p,) for p in paths]))
        plan.cuts = slice_cuts(plan, n)
        staging = tempfile.mkdtemp(prefix=".rdmaspy-shards-", dir=directory)
        try:
            # the shards' tasks first: a slice's task waits for the state its shard's task keeps
            tasks: list[tuple[Any, tuple, int]] = [
                (run_shard, (paths, s, plan.assignment, staging, plan.cuts, plan.files), 1)
                for s in range(plan.shards)]
            if plan.cuts:
                tasks += [(run_slice, (paths, s, plan.assignment, staging, k, lo, hi, plan.files), 0)
                          for s in range(plan.shards) for k, (lo, hi) in enumerate(plan.slices())]
            done = engine.run(tasks)
            results: list[ShardResult] = done[:plan.shards]
            slices: list[SliceResult] = done[plan.shards:]
            results, slices = _redo_shed(engine, results, slices, paths, plan, staging)
            lookups = connection_numbers(results)
            calls: list[tuple] = [(os.path.join(staging, name), os.path.join(directory, name), lookups[r.shard])
                                  for r in results for t in TABLES for name in r.files[t]]
            bounds = plan.slices()
            for sl in slices:
                lo, hi = bounds[sl.slice]
                items = {f: c for f, c in results[sl.shard].analysis_items.items() if lo < f <= hi}
                calls += [(os.path.join(staging, name), os.path.join(directory, name), lookups[sl.shard],
                           items if t == "packets" else None) for t in sl.rows for name in sl.files[t]]
            engine.map(renumber_part, calls)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    finally:
        engine.close()
    rows = {t: sum(r.rows[t] for r in results) + sum(sl.rows.get(t, 0) for sl in slices) for t in TABLES}
    problems = [p for r in results for p in r.problems]
    return ExportResult(rows, sum(r.frames for r in results), problems, plan.shards,
                        sorted(results, key=lambda r: r.shard), slices)
