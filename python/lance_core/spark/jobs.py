"""What every distributed job shares: the dataset a worker opens (`dataset_at`), its files
(`JobFiles`, over the core's guard of a distributed job's files: a job that does not
commit leaves none behind), its errors (a lance_core error raised in a task reaches the driver as
its own class, carried as data, not rebuilt from Spark's traceback text), the way a job of
a few known tasks runs (`run_tasks`, `work_frame`), and what differs on a Spark Connect
session, which has no SparkContext (`is_connect`, `parallelism`)."""

from __future__ import annotations

import json
import os
import pickle
import uuid
from contextlib import contextmanager
from typing import Callable, Dict, Hashable, Iterator, List, Optional, Tuple, TypeVar

import pyarrow as pa
from pyspark.sql import SparkSession

from .. import _lance_core
from .. import errors as _errors
from ..dataset import LanceDataset, dataset
from ..errors import InvalidInputError, LanceError

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

# Datasets opened by this Python worker, by (uri, version): workers are reused across tasks.
_OPEN: Dict[Tuple[str, int], LanceDataset] = {}


def dataset_at(uri: str, version: int, storage_options) -> LanceDataset:
    """The dataset at `version`, in a Spark worker. Spark runs a task per core, so the
    first use in a worker process sizes lance_core's decode and I/O pools to one thread
    each (unless set already): more threads per task only contend with the other tasks
    and with the JVM."""
    if not _OPEN:
        os.environ.setdefault("RAYON_NUM_THREADS", "1")
        os.environ.setdefault("TOKIO_WORKER_THREADS", "1")
    key = (uri, version)
    ds = _OPEN.get(key)
    if ds is None:
        if len(_OPEN) > 16:
            _OPEN.clear()
        ds = _OPEN[key] = dataset(uri, version=version, storage_options=storage_options)
    return ds

# The column a task's output carries a lance_core error in (JSON: its class's name in
# lance_core.errors and its message), beside the task's own columns.
ERROR_COLUMN = "_lance_core_error"


class JobFiles:
    """The data files one distributed job writes, findable by the token their names start
    with, and the index segments it builds, by uuids chosen up front, so that a failed job
    leaves none behind even when some tasks finish late (the core's `JobFiles`)."""

    def __init__(self, uri: str, storage_options: Optional[Dict[str, str]], prefix: Optional[str] = None):
        self.uri, self.storage_options = uri, storage_options
        self.prefix = prefix or f"spark-{uuid.uuid4().hex[:16]}-"
        # Index segments the job builds live in `_indices/<uuid>/`, not in data/: their
        # uuids are chosen on the driver before any task runs, so an abort knows them all.
        self.index_uuids: List[str] = []

    def new_index_uuid(self) -> str:
        """On the driver, before the job starts: the uuid of one index segment a task will
        build (its files under `_indices/<uuid>/`), recorded for `abort`."""
        self.index_uuids.append(str(uuid.uuid4()))
        return self.index_uuids[-1]

    def _call(self, op: str, paths: List[str], index_uuids: List[str]) -> bool:
        return _lance_core._job_files(self.uri, self.prefix, op, sorted(set(paths)), sorted(set(index_uuids)),
                                      self.storage_options)

    def delete(self, paths: List[str], index_uuids: List[str] = ()) -> None:
        self._call("delete", paths, list(index_uuids))

    def keep(self, paths: List[str], index_uuids: List[str] = ()) -> bool:
        """In a task, after writing `paths` (data files) and index segments `index_uuids`:
        False (and the files deleted) if the job was aborted meanwhile."""
        return self._call("keep", paths, list(index_uuids))

    def abort(self, known: List[str] = ()) -> None:
        """Remove the job's files, unless the table's latest version refers to one of them
        or cannot be read: a commit whose answer was lost (`OutcomeUnknownError`, which
        Spark follows with a call here) may have happened, and its version must keep its
        files. Files kept so are orphans at worst, which `cleanup_old_versions` removes.
        The rules are the core's (`lance_core::write::job_files`), the JVM writer's too."""
        self._call("abort", list(known), self.index_uuids)

    @contextmanager
    def removed_on_error(self):
        """The driver's side of a job: anything raised inside (a task's error, a failed
        check, a lost commit) aborts the job's files (see `abort`), then goes on."""
        try:
            yield self
        except BaseException:
            self.abort()
            raise


def carrying_errors(run: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]], schema: pa.Schema):
    """`run` (a `mapInArrow` function whose batches have `schema`) with one more column,
    `ERROR_COLUMN`: a lance_core error the task raises becomes a row holding it, which
    `raise_carried` raises again on the driver with its class and message."""
    out = pa.schema(list(schema) + [pa.field(ERROR_COLUMN, pa.string())])

    def wrapped(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        try:
            for b in run(batches):
                yield pa.RecordBatch.from_arrays(list(b.columns) + [pa.nulls(b.num_rows, pa.string())], schema=out)
        except LanceError as e:
            carried = json.dumps({"class": type(e).__name__, "message": str(e)})
            arrays = [pa.nulls(1, f.type) for f in schema] + [pa.array([carried], pa.string())]
            yield pa.RecordBatch.from_arrays(arrays, schema=out)

    return wrapped


def with_error_column(ddl: str) -> str:
    """A task output's Spark DDL with `ERROR_COLUMN` added (see `carrying_errors`)."""
    return f"{ddl}, {ERROR_COLUMN} string"


def raise_carried(rows: list) -> list:
    """The rows of a job run with `carrying_errors`: raises the first error a task
    carried, else returns the other rows."""
    for r in rows:
        if r[ERROR_COLUMN] is not None:
            carried = json.loads(r[ERROR_COLUMN])
            raise _rebuilt(carried["class"], carried["message"])
    return rows


def _rebuilt(class_name: str, message: str) -> LanceError:
    """The error a task raised, from its class's name in lance_core.errors and message."""
    cls = getattr(_errors, class_name, None)
    return (cls if isinstance(cls, type) and issubclass(cls, LanceError) else LanceError)(message)


def is_connect(spark) -> bool:
    """Whether `spark` is a Spark Connect client session (no SparkContext, no JVM here)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def parallelism(spark) -> int:
    """The cores a job can use at once: the SparkContext's `defaultParallelism`; through
    Spark Connect, `spark.default.parallelism` when set, else what the master says
    (`local[N]`, `local[*]`: the server's cores, taken as this machine's), else 2."""
    if not is_connect(spark):
        return spark.sparkContext.defaultParallelism
    given = spark.conf.get("spark.default.parallelism", None)
    if given:
        return int(given)
    master = spark.conf.get("spark.master", "") or ""
    if master.startswith("local"):
        n = master[len("local["):-1] if master.startswith("local[") else "1"
        n = n.split(",")[0]
        return (os.cpu_count() or 1) if n == "*" else max(1, int(n))
    return 2


def work_frame(spark, rows: List[tuple], ddl: str):
    """A DataFrame with one row per partition, so each task gets one piece of work."""
    n = max(1, len(rows))
    if is_connect(spark):
        # No RDDs through Connect: rows spread round-robin, one to each partition.
        return spark.createDataFrame(rows, ddl).repartition(n)
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, n), ddl)


def run_tasks(spark: SparkSession, ds: LanceDataset, storage_options: Optional[Dict[str, str]], keys: List[K],
              task: Callable[[LanceDataset, K], Optional[V]], what: str) -> Dict[K, V]:
    """Run `task(dataset, key)` for every key, one Spark task each, on the executors, with
    the dataset at `ds`'s version; their results by key. A task returns None when its job
    was aborted meanwhile (`JobFiles.keep`); a lance_core error a task raises is raised
    here with its class (the first one, in key order), and a key without a result is an
    error naming `what` the tasks make. A plain RDD job: it costs Spark about 100 ms less
    than a `mapInArrow` over a DataFrame of the keys, which matters for jobs of seconds;
    through Spark Connect, which has no RDDs, that `mapInArrow`."""
    uri, version = ds.uri, ds.version

    def run(keys_here: Iterator[K]) -> Iterator[tuple]:
        local = dataset_at(uri, version, storage_options)
        for key in keys_here:
            try:
                out = task(local, key)
            except LanceError as e:
                yield key, None, (type(e).__name__, str(e))
                return
            if out is not None:
                yield key, out, None

    if is_connect(spark):
        rows = _run_as_dataframe(spark, keys, run)
    else:
        rows = spark.sparkContext.parallelize(keys, max(1, len(keys))).mapPartitions(run).collect()
    position = {k: i for i, k in enumerate(keys)}
    done: Dict[K, V] = {}
    for key, out, error in sorted(rows, key=lambda r: position[r[0]]):
        if error is not None:
            raise _rebuilt(*error)
        done[key] = out
    if len(done) != len(keys):
        raise InvalidInputError(f"{uri}: {what} {sorted(done)} were made, expected {sorted(keys)}")
    return done


def _run_as_dataframe(spark, keys: List[K], run: Callable[[Iterator[K]], Iterator[tuple]]) -> List[tuple]:
    """`run` over `keys`, a task per key, as a `mapInArrow` over a DataFrame of their
    positions; what it yields, pickled through a binary column and back."""
    out = pa.schema([("result", pa.binary())])

    def tasks(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        mine = [keys[i] for b in batches for i in b.column(0).to_pylist()]
        results = [pickle.dumps(r) for r in run(iter(mine))]
        yield pa.RecordBatch.from_arrays([pa.array(results, pa.binary())], schema=out)

    frame = work_frame(spark, [(i,) for i in range(len(keys))], "position long")
    return [pickle.loads(r[0]) for r in frame.mapInArrow(tasks, "result binary").collect()]
