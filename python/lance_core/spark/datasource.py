"""`lance`, a PySpark data source (pyspark >= 4.1) reading and writing Lance tables.

    spark.dataSource.register(LanceDataSource)
    df = spark.read.format("lance").option("columns", "id,name").load("/data/t.lance")
    df.write.format("lance").mode("append").save("/data/out.lance")

Reads: the version is fixed when the query is planned; each partition is a fragment, or a
range of physical rows of a large one, so every core has work; Spark's filters are pushed
into lance_core's predicate where they mean the same thing. Writes: each task writes its own
data files and sends their fragment metadata to the driver, which commits them all as one
new version (Append, or Overwrite); an aborted job deletes what its tasks wrote.
Structured Streaming reads and writes live in `streaming.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import LongType, StructField, StructType

from ..blob import BlobType
from ..dataset import LanceDataset, _blob_columns, dataset
from ..errors import DatasetNotFoundError, InvalidInputError
from ..fragment_metadata import FragmentMetadata, LanceOperation, file_paths
from ..write import commit
from . import filters as _filters
from . import types as _types
from .streaming import LanceStreamReader, LanceStreamWriter
from .tasks import (ROW_ID, ColumnReading, JobFiles, LancePartition, WriteSettings, _blob_handling,
                    _check_append, _flag, _storage_options, default_rows_per_partition, plan_partitions,
                    write_task)


def _version(value: Optional[str]):
    if value is None or value == "":
        return None
    return int(value) if value.strip().isdigit() else value


def _blob_types(ds: LanceDataset, arrow: pa.Schema, blob_handling: Optional[str]) -> pa.Schema:
    """`arrow` with each blob column's type as a scan returns it: its descriptors, or its
    bytes (large_binary) with `all_binary`."""
    blobs = [f.name for f in arrow if f.name in _blob_columns(ds.schema)]
    if not blobs:
        return arrow
    read = ds.scanner(columns=blobs, limit=0, blob_handling=blob_handling).projected_schema
    for name in blobs:
        arrow = arrow.set(arrow.get_field_index(name), read.field(name))
    return arrow


class LanceDataSource(DataSource):
    """Options: `path` (the `load`/`save` argument), `version` (number or tag), `columns`
    (comma-separated projection), `batch_size`, `with_row_id`, `rows_per_partition`,
    `pushdown` (take Spark's filters; default true), `timestamp_nanos` ("truncate", the
    default, drops nanoseconds Spark cannot hold; "error" refuses them), and
    `storage.<key>` for object store settings (credentials, endpoint, region),
    `blob_handling` (blob columns as pylance's descriptors, the default, or their bytes
    with "all_binary"). Writes: `blob_columns` (binary columns stored as blobs; with
    `data_storage_version` "2.1"),
    `max_rows_per_file`, `data_storage_version`. Streaming (`readStream`/`writeStream`,
    see `streaming.py`): `startingVersion`, `maxRowsPerTrigger`, `skipChangeCommits`."""

    @classmethod
    def name(cls) -> str:
        # `spark.dataSource.register` calls this on the driver: the moment to turn on
        # Python filter pushdown, which Spark requires of a reader that takes filters.
        _enable_filter_pushdown()
        return "lance"

    def _uri(self) -> str:
        uri = self.options.get("path")
        if not uri:
            raise InvalidInputError("the lance data source needs a path: .load(uri) or .save(uri)")
        return uri

    def _open(self) -> LanceDataset:
        return dataset(self._uri(), version=_version(self.options.get("version")),
                       storage_options=_storage_options(self.options))

    def schema(self) -> StructType:
        ds = self._open()
        arrow = _blob_types(ds, _project(ds.schema, self.options.get("columns"), ds.uri), _blob_handling(self.options))
        schema = _types.spark_schema(arrow)
        if _flag(self.options, "with_row_id"):
            schema = schema.add(StructField(ROW_ID, LongType(), True))
        return schema

    def reader(self, schema: StructType) -> "LanceReader":
        # Spark (4.1-4.3) keeps the reader of a DataFrame's first query that pushed filters
        # and reuses it for later queries on the same DataFrame that push none: those then
        # see the earlier filter. `pushdown=false` avoids this for DataFrames that are reused.
        cls = LanceFilteringReader if _flag({"p": self.options.get("pushdown", "true")}, "p") else LanceReader
        return cls(self._open(), schema, self.options)

    def writer(self, schema: StructType, overwrite: bool) -> "LanceWriter":
        return LanceWriter(self._uri(), schema, overwrite, self.options)

    def streamWriter(self, schema: StructType, overwrite: bool):
        return LanceStreamWriter(self._uri(), schema, overwrite, self.options)

    def streamReader(self, schema: StructType):
        return LanceStreamReader(self._open(), schema, self.options)


class LancePythonDataSource(LanceDataSource):
    """The Python data source under the name `lance_python`: registered so when the JVM
    reader is `lance`, which hands it writes and streams."""

    @classmethod
    def name(cls) -> str:
        _enable_filter_pushdown()
        return "lance_python"


def _enable_filter_pushdown() -> None:
    from pyspark.sql import SparkSession

    try:
        session = SparkSession.getActiveSession()
        if session is not None:
            session.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    except Exception:  # a worker without a session, or Spark Connect without the conf
        pass


def _project(schema: pa.Schema, columns: Optional[str], uri: str) -> pa.Schema:
    if not columns:
        return schema
    names = [c.strip() for c in columns.split(",") if c.strip()]
    for n in names:
        if n not in schema.names:
            raise InvalidInputError(f"{uri}: the columns option names '{n}', which is not a column")
    return pa.schema([schema.field(n) for n in names], metadata=schema.metadata)


class LanceReader(ColumnReading, DataSourceReader):
    def __init__(self, ds: LanceDataset, schema: StructType, options: Dict[str, str]):
        super().__init__(ds, schema, options)
        self.version = ds.version  # every task reads the version the query was planned on
        self.arrow_schema = ds.schema
        self.predicates: List[str] = []
        self.limit: Optional[int] = None
        frags = [(f.fragment_id, f.physical_rows) for f in ds.get_fragments()]
        self._physical_rows = dict(frags)
        self._live_rows = {f.fragment_id: f.physical_rows - f.num_deletions for f in ds.get_fragments()}
        rows_per_partition = int(options.get("rows_per_partition", 0)) or default_rows_per_partition(
            sum(rows for _, rows in frags))
        self._partitions = plan_partitions(frags, rows_per_partition)

    def pruneColumns(self, requiredSchema: StructType) -> StructType:
        """Read only the top-level columns `requiredSchema` names (for engines that call
        this hook: SPARK-51713); returns the schema `read` then yields."""
        wanted = set(requiredSchema.fieldNames())
        self._set_schema(StructType([f for f in self.schema.fields if f.name in wanted]))
        return self.schema

    def pushLimit(self, limit: int) -> bool:
        """Read at most `limit` rows per partition, and without filters only the
        partitions that hold the first `limit` rows (SPARK-58551). Spark still applies the
        limit itself."""
        self.limit = max(0, int(limit))
        return True

    def partitions(self) -> List[InputPartition]:
        if self.predicates:
            # Fragments where the table's indices find no row that passes get no task
            # (the tasks of the others read the rows the index finds).
            predicate = " AND ".join(f"({p})" for p in self.predicates)
            ds = dataset(self.uri, version=self.version, storage_options=self.storage_options)
            empty = set(ds._ds.fragments_without_matches(predicate))
            kept = [p for p in self._partitions if p.fragment_id not in empty]
            return kept or list(self._partitions[:1])
        if self.limit is None:
            return list(self._partitions)
        out, rows = [], 0
        for p in self._partitions:
            if rows >= self.limit and out:
                break
            out.append(p)
            # Rows of the partition that are surely not deleted: exact for a whole
            # fragment, a lower bound for a range of one.
            deleted = self._physical_rows.get(p.fragment_id, 0) - self._live_rows.get(p.fragment_id, 0)
            rows += max(0, (p.end - p.start) - deleted)
        return out

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, LancePartition):
            return iter(())  # a dataset with no fragments
        predicate = " AND ".join(f"({p})" for p in self.predicates) or None
        return self.read_rows(self.version, partition.fragment_id, partition.start, partition.end, predicate,
                              self.limit)


class LanceFilteringReader(LanceReader):
    """A reader that takes Spark's filters it can evaluate exactly."""

    def pushFilters(self, filters):
        filters = list(filters)
        for f, pred in zip(filters, _filters.to_predicates(filters, self.arrow_schema)):
            if pred is None:
                yield f
            else:
                self.predicates.append(pred)


@dataclass
class LanceCommitMessage(WriterCommitMessage):
    """What one task wrote: its fragments (not committed)."""

    fragments: List[bytes] = field(default_factory=list)


class LanceWriter(DataSourceArrowWriter):
    def __init__(self, uri: str, schema: StructType, overwrite: bool, options: Dict[str, str]):
        self.uri = uri
        self.overwrite = overwrite
        self.storage_options = _storage_options(options)
        self.options = WriteSettings.of(options)
        self.files = JobFiles(uri, self.storage_options)
        try:
            existing = dataset(uri, storage_options=self.storage_options)
        except DatasetNotFoundError:
            existing = None
        # Appends are checked against, and committed on top of, the version seen now.
        self.read_version = existing.version if existing is not None else None
        self.create = existing is None or overwrite
        self.spark_arrow = _types.spark_arrow_schema(schema)
        self.target = _as_blobs(self.spark_arrow, options.get("blob_columns"), uri,
                                self.options.data_storage_version) if self.create \
            else existing.schema
        if not self.create:
            _check_append(existing.schema, self.spark_arrow, uri)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LanceCommitMessage:
        return LanceCommitMessage(write_task(iterator, self.uri, self.target, self.create, self.files, self.options))

    def _fragments(self, messages) -> List[FragmentMetadata]:
        return [FragmentMetadata._from_bytes(b) for m in messages if isinstance(m, LanceCommitMessage) for b in m.fragments]

    def commit(self, messages) -> None:
        fragments = self._fragments(messages)
        if self.create:
            op = LanceOperation.Overwrite(self.target, fragments)
        else:
            op = LanceOperation.Append(fragments)
        try:
            commit(self.uri, op, read_version=self.read_version, storage_options=self.storage_options)
        except Exception:
            self.abort(messages)
            raise

    def abort(self, messages) -> None:
        """Delete the data files the job's tasks wrote (see `JobFiles`); nothing was
        committed."""
        self.files.abort(file_paths(self._fragments(messages)))


def _as_blobs(schema: pa.Schema, columns: Optional[str], uri: str, version: Optional[str]) -> pa.Schema:
    """`schema` with the binary columns named in `columns` (comma-separated) as blob
    columns: blob v2 `{data, uri}` in format 2.2 (as pylance makes a binary column marked
    `lance-encoding:blob`), marked `lance-encoding:blob` in 2.1 (blob v1)."""
    for name in [c.strip() for c in (columns or "").split(",") if c.strip()]:
        if name not in schema.names:
            raise InvalidInputError(f"{uri}: option blob_columns names '{name}', which is not a column")
        f = schema.field(name)
        if not (pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)):
            raise InvalidInputError(f"{uri}: blob column '{name}' must be binary, not {f.type}")
        if version in (None, "2.2", "stable"):
            blobs = BlobType(pa.struct([pa.field("data", pa.large_binary()), pa.field("uri", pa.utf8())]))
            schema = schema.set(schema.get_field_index(name), pa.field(name, blobs, f.nullable, f.metadata))
            continue
        meta = {**(f.metadata or {}), b"lance-encoding:blob": b"true"}
        schema = schema.set(schema.get_field_index(name), pa.field(name, pa.large_binary(), f.nullable, meta))
    return schema
