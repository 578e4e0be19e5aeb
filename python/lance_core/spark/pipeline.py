"""Pipeline helpers over `mapInArrow`: reading fragments into a DataFrame, adding
computed columns to a dataset and compacting it, with the work spread over the executors.

Both fix the dataset version on the driver and send executors only small descriptions of
their work (fragment ids and row ranges); executors open the dataset themselves.
"""

from __future__ import annotations

from typing import Callable, Dict, Iterator, List, Optional, Union

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from ..dataset import LanceDataset, dataset
from ..errors import InvalidInputError
from ..fragment_metadata import FragmentMetadata, LanceOperation, file_paths
from ..optimize import Compaction, RewriteResult
from ..write import commit
from . import types as _types
from .tasks import default_rows_per_partition, plan_partitions
from .jobs import JobFiles, dataset_at, run_tasks, work_frame


def read_fragments(
    spark: SparkSession,
    uri: str,
    columns: Optional[List[str]] = None,
    filter: Optional[str] = None,
    version: Optional[Union[int, str]] = None,
    storage_options: Optional[Dict[str, str]] = None,
    batch_size: int = 64 * 1024,
    rows_per_partition: Optional[int] = None,
    timestamp_nanos: str = "truncate",
) -> DataFrame:
    """A DataFrame of the dataset at `version` (the latest when None): `columns` projected,
    rows matching `filter` (lance_core's SQL predicate), read by `mapInArrow` tasks, one per
    fragment or range of a large fragment. Nanoseconds Spark cannot hold are dropped, or
    refused with `timestamp_nanos="error"`."""
    if timestamp_nanos not in ("truncate", "error"):
        raise InvalidInputError(f"timestamp_nanos is 'truncate' or 'error', not {timestamp_nanos!r}")
    exact = timestamp_nanos == "error"
    ds = dataset(uri, version=version, storage_options=storage_options)
    projected = ds.schema if columns is None else pa.schema([ds.schema.field(c) for c in columns])
    spark_schema = _types.spark_schema(projected)
    target = _types.spark_arrow_schema(spark_schema)
    frags = [(f.fragment_id, f.physical_rows) for f in ds.get_fragments()]
    parts = plan_partitions(frags, rows_per_partition or default_rows_per_partition(sum(r for _, r in frags)))
    uri, pinned, names = ds.uri, ds.version, projected.names
    if filter is not None:
        ds.scanner(columns=[], filter=filter, limit=0).to_table()  # a bad filter fails here, not in a task

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        local = dataset_at(uri, pinned, storage_options)
        for work in batches:
            for fid, start, end in zip(*(work.column(i).to_pylist() for i in range(3))):
                frag = local.get_fragment(fid)
                for b in frag.to_batches(names, batch_size=batch_size, filter=filter, row_range=(start, end)):
                    yield _types.to_spark(b, target, exact)

    work = work_frame(spark, [(p.fragment_id, p.start, p.end) for p in parts],
                       "fragment_id long, start long, end long")
    return work.mapInArrow(read, spark_schema)


def count(
    spark: Optional[SparkSession],
    uri: str,
    filter: Optional[str] = None,
    version: Optional[Union[int, str]] = None,
    storage_options: Optional[Dict[str, str]] = None,
) -> int:
    """The number of rows of the dataset (matching `filter`, lance_core's SQL predicate),
    counted on the driver: from the manifest and deletion files alone without a filter,
    reading only the filter's columns with one. `spark` is not used (there for symmetry
    with the other helpers; None is fine)."""
    return dataset(uri, version=version, storage_options=storage_options).count_rows(filter)


def add_columns(
    spark: SparkSession,
    uri: str,
    fn: Callable[[pa.RecordBatch], pa.RecordBatch],
    output_schema: Union[pa.Schema, StructType],
    input_columns: Optional[List[str]] = None,
    storage_options: Optional[Dict[str, str]] = None,
    batch_size: Optional[int] = None,
) -> LanceDataset:
    """Data evolution on Spark: each task reads one fragment's `input_columns` (every
    physical row, deleted ones included, so the new file lines up with the old ones),
    applies `fn` (Arrow batch → Arrow batch of the new columns, `output_schema`) and writes
    the new data file; the driver commits every fragment in one new version. No existing
    data file is rewritten. Returns the dataset at the new version."""
    if isinstance(output_schema, StructType):
        output_schema = _types.spark_arrow_schema(output_schema)
    if not isinstance(output_schema, pa.Schema):
        raise InvalidInputError("output_schema must be a pyarrow.Schema or a Spark StructType")
    ds = dataset(uri, storage_options=storage_options)
    clash = [n for n in output_schema.names if n in ds.schema.names]
    if clash:
        raise InvalidInputError(f"{ds.uri}: cannot add column '{clash[0]}': the dataset already has one")
    missing = [c for c in input_columns or [] if c not in ds.schema.names]
    if missing:
        raise InvalidInputError(f"{ds.uri}: input column '{missing[0]}' is not a column")
    uri, read_version = ds.uri, ds.version
    fragment_ids = [f.fragment_id for f in ds.get_fragments()]
    files = JobFiles(uri, storage_options)

    def compute(local: LanceDataset, fid: int) -> Optional[bytes]:
        meta, _ = local.get_fragment(fid).merge_columns(fn, input_columns, batch_size, output_schema=output_schema,
                                                        file_prefix=files.prefix)
        return meta.data if files.keep([str(meta.files[-1].path)]) else None

    with files.removed_on_error():  # nothing committed: no file the job wrote stays
        done = run_tasks(spark, ds, storage_options, fragment_ids, compute, "new columns of fragments")
        written = {fid: FragmentMetadata._from_bytes(data) for fid, data in done.items()}
        schema = pa.schema(list(ds.schema) + list(output_schema), metadata=ds.schema.metadata)
        return commit(uri, LanceOperation.Merge([written[f] for f in fragment_ids], schema),
                      read_version=read_version, storage_options=storage_options)


def compact(
    spark: SparkSession,
    uri: str,
    storage_options: Optional[Dict[str, str]] = None,
    **options,
):
    """Compaction on Spark: the driver plans (pylance's rules; `options` as
    `optimize.compact_files` takes them), each task rewrites one group of fragments on an
    executor, and the driver commits every group in one new version. Appends committed
    meanwhile are kept. A failed or conflicting job leaves no files. Returns the metrics."""
    ds = dataset(uri, storage_options=storage_options)
    plan = Compaction.plan(ds, options)
    if not plan.tasks:
        return Compaction.commit(ds, [])
    uri, read_version = ds.uri, ds.version
    files = JobFiles(uri, storage_options)
    tasks = {i: t for i, t in enumerate(plan.tasks)}

    def run(local: LanceDataset, i: int) -> Optional[List[bytes]]:
        result = tasks[i].execute(local, file_prefix=files.prefix)
        return [f.data for f in result.new_fragments] if files.keep(file_paths(result.new_fragments)) else None

    with files.removed_on_error():  # nothing committed: no file the job wrote stays
        done = run_tasks(spark, ds, storage_options, sorted(tasks), run, "compaction tasks")
        results = [RewriteResult(read_version, tasks[i].fragments, [FragmentMetadata._from_bytes(b) for b in done[i]])
                   for i in sorted(tasks)]
        return Compaction.commit(ds, results)
