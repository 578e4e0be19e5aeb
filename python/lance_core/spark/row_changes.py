"""Row-level changes on Spark: `update` and `merge_insert` (upsert) of a Lance table,
spread over the executors, committed by the driver as one new version.

    from lance_core.spark import merge_insert, update
    merge_insert(changes_df, uri, "id").when_matched_update_all().when_not_matched_insert_all().execute()
    update(spark, uri, {"price": "price * 1.1"}, where="region = 'EU'")

Both read the table at one version. Tasks write the changed and inserted rows as new
fragments and return the addresses of the table rows those replace or delete (a merge's
task hands its joined rows to lance_core as a stream, written as they come, so its memory
does not grow with its share of the source); the driver
writes the deletion files and commits everything as one `Update`, as pylance's own update
and merge_insert do. A job that fails, or whose commit fails, leaves no version and no
files. When another writer committed to the same fragments meanwhile, the whole job runs
again on the new version, up to `conflict_retries` times.
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Union

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .. import _lance_core
from ..dataset import LanceDataset, dataset
from ..errors import CommitConflictError, InvalidInputError
from ..fragment_metadata import file_paths
from ..merge import MergeClauses
from . import types as _types
from .jobs import JobFiles, carrying_errors, dataset_at, raise_carried, run_tasks, with_error_column, work_frame

# The columns tasks add to the joined rows, named as lance_core's merge expects them.
ADDRESS = _lance_core.MERGE_JOINED_ADDRESS
ROW_ID = _lance_core.MERGE_JOINED_ROW_ID
FROM_SOURCE = _lance_core.MERGE_JOINED_FROM_SOURCE
BY_SOURCE = _lance_core.MERGE_JOINED_BY_SOURCE
_KEY = "__merge_key_"  # the table's key columns, beside the source's in the join

# What each task returns (the Spark DDL and its Arrow form).
_MERGE_PART = pa.schema([("fragments", pa.list_(pa.binary())), ("removed", pa.binary()), ("matched", pa.binary()),
                         ("keys", pa.binary()), ("inserted", pa.int64()), ("updated", pa.int64()),
                         ("deleted", pa.int64())])
_MERGE_DDL = ("fragments array<binary>, removed binary, matched binary, keys binary, inserted long, updated long, "
              "deleted long")


def _with_retries(uri: str, storage_options, retries: int, attempt):
    """Run `attempt(ds)` on the latest version, again when its commit lost to a concurrent
    one on the same fragments (up to `retries` times)."""
    tries = 0
    while True:
        ds = dataset(uri, storage_options=storage_options)
        try:
            return attempt(ds)
        except CommitConflictError as e:
            if not e.retryable:
                raise
            if tries >= retries:
                raise CommitConflictError(f"{e} (gave up after {tries} retries)") from e
            tries += 1


def update(
    spark: SparkSession,
    uri: str,
    updates: Dict[str, str],
    where: Optional[str] = None,
    *,
    conflict_retries: int = 10,
    storage_options: Optional[Dict[str, str]] = None,
) -> Dict[str, int]:
    """`LanceDataset.update` on Spark: one task per fragment rewrites the rows matching
    `where` (all rows when None) with the values of `updates` (column path → SQL
    expression); the driver commits one version. Returns {"num_rows_updated": n}."""
    if not isinstance(updates, dict) or not updates:
        raise InvalidInputError("update needs a dict of column → SQL expression")
    pairs = [(str(k), str(v)) for k, v in updates.items()]

    def attempt(ds: LanceDataset) -> Dict[str, int]:
        # Bad columns, expressions or predicates fail here, before any task runs.
        _lance_core._update_part(ds._ds, pairs, where, [], None)
        files = JobFiles(ds.uri, storage_options)

        def run(local: LanceDataset, fid: int) -> Optional[tuple]:
            frags, removed, count = _lance_core._update_part(local._ds, pairs, where, [fid], files.prefix)
            return (frags, removed, count) if files.keep(file_paths(frags)) else None

        fragment_ids = [f.fragment_id for f in ds.get_fragments()]
        with files.removed_on_error():
            done = run_tasks(spark, ds, storage_options, fragment_ids, run, "updated fragments")
            parts = [done[f] for f in fragment_ids]
            fragments = [bytes(b) for frags, _, _ in parts for b in frags]
            removed = b"".join(bytes(r) for _, r, _ in parts)
            _lance_core._commit_update_parts(ds._ds, fragments, removed, [k for k, _ in pairs])
        return {"num_rows_updated": sum(count for _, _, count in parts)}

    return _with_retries(uri, storage_options, conflict_retries, attempt)


class SparkMergeInsert(MergeClauses):
    """`merge_insert` of a Spark DataFrame, with pylance's builder methods; `execute()`
    runs it. Spark joins the DataFrame to the table's keys (read with their row
    addresses through lance_core); tasks write the updated and inserted rows; the driver
    commits one version."""

    def __init__(self, df: DataFrame, uri: str, on: Union[str, List[str]],
                 storage_options: Optional[Dict[str, str]] = None):
        super().__init__(on)
        self._df, self._uri, self._storage_options = df, uri, storage_options

    def execute(self) -> Dict[str, int]:
        """Run the merge in one new version; returns the inserted, updated and deleted
        row counts."""
        return _with_retries(self._uri, self._storage_options, self._retries, self._attempt)

    def _check(self, ds: LanceDataset) -> None:
        on, when_matched, insert, by_source = self._on, self._when_matched, self._insert, self._by_source
        if when_matched == "nothing" and not insert and by_source is None:
            raise InvalidInputError(f"{ds.uri}: merge_insert has no clause that changes the table "
                                    "(when_matched_update_all, when_matched_delete, "
                                    "when_not_matched_insert_all, when_not_matched_by_source_delete)")
        names = ds.schema.names
        for c in self._df.columns:
            if c not in names:
                raise InvalidInputError(f"{ds.uri}: merge_insert: the source has column '{c}', which the table "
                                        "does not")
        for k in on:
            if k not in names:
                raise InvalidInputError(f"{ds.uri}: merge_insert key column '{k}' does not exist in the table")
            if k not in self._df.columns:
                raise InvalidInputError(f"{ds.uri}: merge_insert: the source has no key column '{k}'")

    def _table_keys(self, ds: LanceDataset) -> DataFrame:
        """The table's key columns with each row's address (and stable row id, and whether
        the by-source predicate holds), read by one task per fragment."""
        on, by_source = self._on, self._by_source
        uri, version, storage_options = ds.uri, ds.version, self._storage_options
        stable = ds._ds.has_stable_row_ids
        columns = {f"{_KEY}{i}": k for i, k in enumerate(on)}
        if by_source:
            columns[BY_SOURCE] = by_source
            ds.scanner(columns=columns, limit=0).to_table()  # a bad predicate fails here, not in a task
        keys = pa.schema([pa.field(f"{_KEY}{i}", ds.schema.field(k).type) for i, k in enumerate(on)])
        spark_schema = _types.spark_schema(keys)
        target = _types.spark_arrow_schema(spark_schema)
        extra = ([f"{BY_SOURCE} boolean"] if by_source else []) + [f"{ADDRESS} long"] + (
            [f"{ROW_ID} long"] if stable else [])
        ddl = ", ".join([f"`{f.name}` {f.dataType.simpleString()}" for f in spark_schema] + extra)

        def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            local = dataset_at(uri, version, storage_options)
            for work in batches:
                for fid in work.column(0).to_pylist():
                    for b in local.get_fragment(fid).to_batches(columns, batch_size=64 * 1024, with_row_id=stable,
                                                                with_row_address=True):
                        out = _types.to_spark(b.select(keys.names), target)
                        arrays = list(out.columns)
                        names = list(out.schema.names)
                        if by_source:
                            arrays.append(b.column(BY_SOURCE))
                            names.append(BY_SOURCE)
                        arrays.append(b.column("_rowaddr").cast(pa.int64()))
                        names.append(ADDRESS)
                        if stable:
                            arrays.append(b.column("_rowid").cast(pa.int64()))
                            names.append(ROW_ID)
                        yield pa.RecordBatch.from_arrays(arrays, names=names)

        spark = self._df.sparkSession
        work = work_frame(spark, [(f.fragment_id,) for f in ds.get_fragments()], "fragment_id long")
        return work.mapInArrow(read, ddl)

    def _attempt(self, ds: LanceDataset) -> Dict[str, int]:
        self._check(ds)
        on, when_matched, insert, by_source = self._on, self._when_matched, self._insert, self._by_source
        clauses = self._clauses()
        uri, version, storage_options = ds.uri, ds.version, self._storage_options
        source = self._df.withColumn(FROM_SOURCE, F.lit(True))
        table = self._table_keys(ds)
        match = None
        for i, k in enumerate(on):
            eq = source[k] == table[f"{_KEY}{i}"]  # a null key matches nothing
            match = eq if match is None else match & eq
        how = "full" if by_source is not None else ("left" if insert else "inner")
        joined = source.join(table, match, how).drop(*[f"{_KEY}{i}" for i in range(len(on))])

        # What tasks hand to lance_core: the source's columns with the table's types.
        fields = [ds.schema.field(c) for c in self._df.columns]
        extra = [pa.field(FROM_SOURCE, pa.bool_())] + ([pa.field(BY_SOURCE, pa.bool_())] if by_source else []) + [
            pa.field(ADDRESS, pa.int64())] + ([pa.field(ROW_ID, pa.int64())] if ROW_ID in joined.columns else [])
        lance_schema = pa.schema([f.with_nullable(True) for f in fields] + extra)
        files = JobFiles(uri, storage_options)

        def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            local = dataset_at(uri, version, storage_options)
            converted = (_types.from_spark(b, lance_schema) for b in batches)
            reader = pa.RecordBatchReader.from_batches(lance_schema, converted)
            frags, removed, matched, keys, (i, u, d) = _lance_core._merge_part(
                local._ds, reader, clauses, files.prefix)
            if files.keep(file_paths(frags)):
                yield pa.record_batch({
                    "fragments": pa.array([frags], pa.list_(pa.binary())),
                    "removed": pa.array([removed], pa.binary()),
                    "matched": pa.array([matched if when_matched in ("update", "delete") else b""], pa.binary()),
                    "keys": pa.array([keys], pa.binary()),
                    "inserted": pa.array([i], pa.int64()), "updated": pa.array([u], pa.int64()),
                    "deleted": pa.array([d], pa.int64())})

        with files.removed_on_error():
            rows = raise_carried(joined.mapInArrow(carrying_errors(run, _MERGE_PART), with_error_column(_MERGE_DDL))
                                 .collect())
            fragments = [bytes(b) for r in rows for b in r.fragments]
            keys = b"".join(bytes(r["keys"]) for r in rows if r["keys"] is not None) if insert else None
            _lance_core._commit_merge_parts(ds._ds, fragments, b"".join(bytes(r.removed) for r in rows),
                                            b"".join(bytes(r.matched) for r in rows), on, keys)
        return {"num_inserted_rows": sum(r.inserted for r in rows),
                "num_updated_rows": sum(r.updated for r in rows),
                "num_deleted_rows": sum(r.deleted for r in rows)}


def merge_insert(df: DataFrame, uri: str, on: Union[str, List[str]],
                 storage_options: Optional[Dict[str, str]] = None) -> SparkMergeInsert:
    """Merge the rows of `df` into the Lance table at `uri`, matching on the key
    column(s) `on`: set the clauses with pylance's builder methods
    (`when_matched_update_all(condition)`, `when_matched_delete()`, `when_matched_fail()`,
    `when_not_matched_insert_all()`, `when_not_matched_by_source_delete(expr)`,
    `conflict_retries(n)`), then `execute()`."""
    return SparkMergeInsert(df, uri, on, storage_options)
