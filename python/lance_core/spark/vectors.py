"""Vector indices and vector search on Spark.

`create_index` builds one IVF_FLAT, IVF_PQ or IVF_SQ index over the whole table: the driver
trains the model (k-means, PQ codebooks, SQ bounds) on a sample and stages it under
`_indices/<uuid>/`, each task encodes the vectors of a fragment or a row range of one
with it (their partitions and codes written beside the model), and the driver joins them
into one segment and commits once. pylance and lance_core search it as any index.

`nearest` answers many query vectors at once (a batch k-NN): through the column's index,
each task searches the index for a share of the queries; without one (or with
`use_index=False`), each task searches its fragments exhaustively for every query and the
k nearest of each query are kept across tasks.

    from lance_core.spark import create_index, nearest
    create_index(spark, uri, "vec", "IVF_PQ", num_partitions=256, num_sub_vectors=16)
    nearest(spark, uri, queries_df, "vec", k=10).show()   # queries_df: (query_id, vector)
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..dataset import LanceDataset, dataset
from ..indices import is_vector_kind, ivf_params
from ..errors import InvalidInputError
from . import types as _types
from .tasks import plan_partitions
from .indices import _run_segments, balanced_groups, create_scalar_index
from .jobs import JobFiles, dataset_at, parallelism, work_frame

def create_index(spark: SparkSession, uri: str, column: str, index_type: str, name: Optional[str] = None,
                 metric: str = "L2", replace: bool = True, num_partitions: Optional[int] = None,
                 num_sub_vectors: Optional[int] = None, storage_options: Optional[Dict[str, str]] = None,
                 **params: Any) -> LanceDataset:
    """Build a vector index on `column` on Spark and commit it, as
    `LanceDataset.create_index` would (same arguments: `num_bits`, `sample_rate`,
    `max_iters`, `target_partition_size`, `seed`). Scalar index types go to
    `create_scalar_index`. The driver trains the model; tasks of about equal rows (whole fragments, row ranges of large
    ones; twice `parallelism(spark)` of them) encode the vectors; one
    commit. A failed
    job leaves no index file and no new version. Returns the dataset at the new version."""
    kind = str(index_type).upper()
    if not is_vector_kind(kind):
        return create_scalar_index(spark, uri, column, kind, name, replace, storage_options, **params)
    unknown = sorted(set(params) - {"num_bits", "sample_rate", "max_iters", "target_partition_size", "seed"})
    if unknown:
        raise TypeError(f"create_index() got an unexpected keyword argument '{unknown[0]}'")
    settings = ivf_params(kind, metric, num_partitions, num_sub_vectors, **params)
    ds = dataset(uri, storage_options=storage_options)
    name = name or f"{column}_idx"
    if not replace and any(i["name"] == name for i in ds.list_indices()):
        raise InvalidInputError(f"{ds.uri}: an index named '{name}' already exists (replace=True replaces it)")
    files = JobFiles(ds.uri, storage_options)
    model = files.new_index_uuid()
    with files.removed_on_error():  # nothing committed: no staged file stays
        ds._ds.stage_vector_model(column, settings, model)
        # Tasks of about equal rows (twice the cores, for balance): whole fragments, and
        # row ranges of large ones.
        frags = [(f.fragment_id, f.physical_rows) for f in ds.get_fragments()]
        per_task = -(-sum(r for _, r in frags) // (2 * parallelism(spark)))
        parts = plan_partitions(frags, per_task)
        tasks = [(name, [p.fragment_id], model) for p in parts]

        def encode(local: LanceDataset, i: int, task) -> bytes:
            local._ds.encode_vector_part(column, model, task[1], (parts[i].start, parts[i].end), i)
            return b""

        _run_segments(spark, ds, tasks, files, encode)
        return LanceDataset(ds._ds.commit_vector_index(column, name, bool(replace), settings, model, len(tasks)))


def _indexed(ds: LanceDataset, column: str) -> bool:
    return any(i["type"].startswith("IVF_") and i["fields"] == [column] for i in ds.list_indices())


def nearest(spark: SparkSession, uri: str, queries: DataFrame, column: str, k: int = 10, *,
            query_id: str = "query_id", query_vector: Optional[str] = None, columns: Optional[List[str]] = None,
            filter: Optional[str] = None, prefilter: bool = False, metric: Optional[str] = None,
            nprobes: Optional[int] = None, refine_factor: Optional[int] = None, use_index: bool = True,
            version: Optional[int] = None, storage_options: Optional[Dict[str, str]] = None) -> DataFrame:
    """The `k` rows of the table nearest to each query vector of `queries` (a DataFrame
    with columns `query_id` and `query_vector`, the latter named as `column` by default):
    a DataFrame of (query id, `_rowid`, `_distance`, `columns` (all when None)), the rows
    of one query nearest first. `filter`, `prefilter`, `metric`, `nprobes`,
    `refine_factor` and `use_index` as in `to_table(nearest=...)`."""
    query_vector = query_vector or column
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise InvalidInputError(f"nearest: k must be an integer greater than 0, got {k!r}")
    for c in (query_id, query_vector):
        if c not in queries.columns:
            raise InvalidInputError(f"nearest: the queries have no column '{c}' (they have {queries.columns})")
    ds = dataset(uri, version=version, storage_options=storage_options)
    names = [f.name for f in ds.schema if f.name != column] if columns is None else list(columns)
    projected = pa.schema([ds.schema.field(c) for c in names])
    id_field = queries.schema[query_id]
    out_schema = T.StructType([T.StructField(query_id, id_field.dataType, id_field.nullable),
                               T.StructField("_rowid", T.LongType(), False),
                               T.StructField("_distance", T.FloatType(), True),
                               *_types.spark_schema(projected).fields])
    target = _types.spark_arrow_schema(out_schema)
    search = {"column": column, "k": k, "metric": metric, "nprobes": nprobes, "refine_factor": refine_factor,
              "use_index": use_index}
    search = {key: v for key, v in search.items() if v is not None}
    # A bad column, filter or parameter fails here, before any task.
    probe = queries.select(query_vector).limit(1).collect()
    if probe:
        ds.to_table(nearest={**search, "q": list(probe[0][0])}, columns=names, filter=filter, prefilter=prefilter)
    uri, pinned = ds.uri, ds.version

    def answer(local: LanceDataset, ids: list, vectors: list, fragments=None) -> Iterator[pa.RecordBatch]:
        if not ids:
            return
        q = np.asarray(vectors, dtype=np.float64).reshape(len(ids), -1)
        found = local.to_table(nearest={**search, "q": q}, columns=names, filter=filter, prefilter=prefilter,
                               with_row_id=True, fragments=fragments)
        which = found.column("query_index").to_numpy()
        rows = {query_id: pa.array(np.asarray(ids, dtype=object)[which].tolist(), target.field(query_id).type),
                "_rowid": found.column("_rowid").cast(pa.int64()), "_distance": found.column("_distance")}
        for b in pa.table({**rows, **{n: found.column(n) for n in names}}).to_batches():
            yield _types.to_spark(b, target)

    if use_index and _indexed(ds, column):
        # Through the index: each task answers its share of the queries.
        def by_queries(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            local = dataset_at(uri, pinned, storage_options)
            for b in batches:
                yield from answer(local, b.column(0).to_pylist(), b.column(1).to_pylist())

        return queries.select(query_id, query_vector).mapInArrow(by_queries, out_schema)

    # Exhaustive: each task searches its fragments for every query; the k nearest of each
    # query kept across tasks (ties by row id, as one search orders them).
    wanted = queries.select(query_id, query_vector).collect()
    ids, vectors = [r[0] for r in wanted], [list(r[1]) for r in wanted]
    groups = balanced_groups([(f.fragment_id, f.physical_rows) for f in ds.get_fragments()],
                             parallelism(spark))

    def by_fragments(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        local = dataset_at(uri, pinned, storage_options)
        for b in batches:
            for i in b.column(0).to_pylist():
                frags = [local.get_fragment(f) for f in groups[i]]
                yield from answer(local, ids, vectors, frags)

    work = work_frame(spark, [(i,) for i in range(len(groups))], "task long")
    found = work.mapInArrow(by_fragments, out_schema)
    rank = Window.partitionBy(query_id).orderBy(F.col("_distance").asc_nulls_last(), F.col("_rowid"))
    return found.withColumn("_rank", F.row_number().over(rank)).where(F.col("_rank") <= k).drop("_rank")
