"""The export in shards on Dask distributed: a local cluster of worker processes, or a real one by address.

A first read of the capture counts the frames of each host pair (rdmaspy.dissectors.hostpair) and deals
the pairs to the shards, the biggest first to the lightest shard; frames of no host pair (ARP, LLDP, link
types without addresses) go to shard 0.  Each shard is one task: it reads the capture, keeps its own
frames in capture order and runs the unchanged pipeline with the export sink, so every queue pair
between two hosts and the CM exchange that set it up are analysed together, as in one process.  Its
tables are written with the shard's own connection numbers; a second round of tasks numbers the
connections as one process does (in the order of the frames that made them known) and writes the
final part files ``<table>-<shard>.parquet``.  The files must be at the same path on every worker
(a shared file system) when the cluster is a real one.
"""
from __future__ import annotations

import logging
import os
import resource
import shutil
import tempfile
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..dissectors.hostpair import host_pair
from ..errors import RdmaspyError
from ..packet import Frame
from .source import ChainedCapture

# Below this many frames a default run (no --workers) stays in one process: starting the cluster
# costs more than it saves.
MIN_PARALLEL_FRAMES = 200_000
CONNECT_TIMEOUT = "15s"      # how long a scheduler given by address may take to answer


@dataclass(slots=True)
class Plan:
    """Which shard decodes the frames of each host pair."""
    shards: int
    assignment: dict[bytes, int]        # host pair -> shard; pairs not in it (and None) go to shard 0
    frames: int
    loads: list[int]                    # frames per shard


@dataclass(slots=True)
class ShardResult:
    shard: int
    frames: int
    rows: dict[str, int]
    created: dict[int, int]             # the shard's connection id -> the frame that made it known
    problems: list[str]
    peak_rss_kib: int                   # the worker process's peak
    cpu_s: float                        # CPU time the task took


@dataclass(slots=True)
class ExportResult:
    rows: dict[str, int]
    frames: int
    problems: list[str]
    workers: int
    shards: list[ShardResult] = field(default_factory=list)


def make_plan(paths: list[str], workers: int) -> Plan:
    """Count the frames of each host pair and deal the pairs to at most ``workers`` shards."""
    counts: dict[bytes, int] = {}
    keyless = 0
    frames = 0
    cap = ChainedCapture(paths)
    with cap:
        for frame in cap:
            frames += 1
            key = host_pair(frame.linktype, frame.data)
            if key is None:
                keyless += 1
            else:
                counts[key] = counts.get(key, 0) + 1
    n = max(1, min(workers, len(counts)))
    loads = [0] * n
    loads[0] = keyless
    assignment: dict[bytes, int] = {}
    for key, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        shard = min(range(n), key=lambda i: (loads[i], i))
        assignment[key] = shard
        loads[shard] += count
    return Plan(n, assignment, frames, loads)


class ShardSource:
    """The frames of one shard, in capture order, numbered as in the whole capture."""

    def __init__(self, paths: list[str], shard: int, assignment: dict[bytes, int]) -> None:
        self.capture = ChainedCapture(paths)
        self.shard = shard
        self.assignment = assignment

    def __iter__(self) -> Iterator[Frame]:
        shard, assignment = self.shard, self.assignment
        for frame in self.capture:
            key = host_pair(frame.linktype, frame.data)
            if (0 if key is None else assignment.get(key, 0)) == shard:
                yield frame


def run_shard(paths: list[str], shard: int, assignment: dict[bytes, int], staging: str) -> ShardResult:
    """One task: the shard's frames through the one pipeline into its tables in ``staging``."""
    from ..output.parquet import ExportSink
    from ..pipeline import Options, Pipeline
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime
    source = ShardSource(paths, shard, assignment)
    sink = ExportSink(staging, suffix=f"-{shard:04d}", file_of=source.capture.file_of)
    with source.capture:
        pipe = Pipeline(source, Options(analyze=True), [sink])
        pipe.run()
    problems = source.capture.problems if shard == 0 else []
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return ShardResult(shard, pipe.frames, sink.rows, sink.created, problems, usage.ru_maxrss,
                       usage.ru_utime + usage.ru_stime - cpu)


def renumber_part(src: str, dst: str, lookup: list[int | None]) -> int:
    """One task: copy a part file with its ``connection`` column numbered as in one process; returns rows."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from ..output.parquet import BATCH
    table = pa.array(lookup, type=pa.uint32())
    pf = pq.ParquetFile(src)
    schema = pf.schema_arrow
    col = schema.get_field_index("connection")
    rows = 0
    with pq.ParquetWriter(dst, schema, compression="zstd") as out:
        for batch in pf.iter_batches(batch_size=BATCH):
            batch = batch.set_column(col, schema.field(col), pc.take(table, batch.column(col)))
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


class _Engine:
    """A Dask client on a local cluster of ``workers`` processes, or on the scheduler at ``address``."""

    def __init__(self, workers: int, address: str | None) -> None:
        from ..scale import need
        need("distributed", "export --workers")
        for name in ("distributed", "distributed.worker", "distributed.scheduler", "distributed.nanny"):
            logging.getLogger(name).setLevel(logging.ERROR)
        self.cluster: Any = None
        try:
            with warnings.catch_warnings():
                # "port in use" and the like: the engine's notes, not the user's business
                warnings.simplefilter("ignore")
                self._connect(workers, address)
        except (OSError, TimeoutError) as exc:
            raise RdmaspyError(f"cannot reach the cluster{' at ' + address if address else ''}: {exc}") from None

    def _connect(self, workers: int, address: str | None) -> None:
        from distributed import Client, LocalCluster
        if address is not None:
            self.client = Client(address, timeout=CONNECT_TIMEOUT)
        else:
            self.cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                        dashboard_address=None, memory_limit=0, silence_logs=logging.ERROR)
            self.client = Client(self.cluster)

    @property
    def workers(self) -> int:
        return max(1, sum(self.client.nthreads().values()))

    def map(self, fn: Any, calls: list[tuple]) -> list[Any]:
        from distributed import KilledWorker
        futures = [self.client.submit(fn, *args, pure=False) for args in calls]
        try:
            return self.client.gather(futures)
        except KilledWorker as exc:
            raise RdmaspyError(f"a worker died running {fn.__name__} (out of memory?): {exc}") from None

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def export_parallel(paths: list[str], directory: str, workers: int | None, address: str | None,
                    plan: Plan | None = None) -> ExportResult:
    """The tables of ``paths`` in ``directory``, decoded in shards on the engine."""
    engine = _Engine(workers or os.cpu_count() or 1, address)
    try:
        n = workers if workers is not None else engine.workers
        if plan is None:
            plan = make_plan(paths, n)
        staging = tempfile.mkdtemp(prefix=".rdmaspy-shards-", dir=directory)
        try:
            results: list[ShardResult] = engine.map(
                run_shard, [(paths, s, plan.assignment, staging) for s in range(plan.shards)])
            lookups = connection_numbers(results)
            from ..output.parquet import TABLES
            calls = [(os.path.join(staging, f"{t}-{r.shard:04d}.parquet"),
                      os.path.join(directory, f"{t}-{r.shard:04d}.parquet"), lookups[r.shard])
                     for r in results for t in TABLES]
            engine.map(renumber_part, calls)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    finally:
        engine.close()
    rows = {t: sum(r.rows[t] for r in results) for t in TABLES}
    problems = [p for r in results for p in r.problems]
    return ExportResult(rows, sum(r.frames for r in results), problems, plan.shards,
                        sorted(results, key=lambda r: r.shard))
