"""What a Spark task does with a Lance table, shared by the batch data source
(`datasource.py`) and the streaming one (`streaming.py`): partitions planned over
fragments and read as Spark's batches (`ColumnReading`), Spark's batches written as
uncommitted fragments (`write_task`), and the options these read."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

import pyarrow as pa
from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import StructType

from .. import _lance_core
from ..dataset import LanceDataset
from ..errors import InvalidInputError
from ..fragment_metadata import file_paths, write_fragments
from . import types as _types
from .jobs import JobFiles, dataset_at

ROW_ID = "_rowid"
# A partition has at most this many rows, fewer when that gives every core two partitions;
# a fragment is never cut into ranges smaller than MIN_SPLIT_ROWS.
MAX_ROWS_PER_PARTITION = 1 << 20
MIN_SPLIT_ROWS = 128 * 1024


def default_rows_per_partition(total_rows: int) -> int:
    cores = os.cpu_count() or 2
    return max(MIN_SPLIT_ROWS, min(MAX_ROWS_PER_PARTITION, -(-total_rows // (2 * cores))))


def _storage_options(options: Dict[str, str]) -> Optional[Dict[str, str]]:
    """Options named "storage.<key>" are passed to object_store as <key>."""
    out = {k[len("storage."):]: v for k, v in options.items() if k.lower().startswith("storage.")}
    return out or None


def _blob_handling(options: Dict[str, str]) -> Optional[str]:
    value = options.get("blob_handling")
    if value not in (None, "all_binary", "blobs_descriptions", "all_descriptions"):
        raise InvalidInputError(f"option blob_handling is 'blobs_descriptions' or 'all_binary', not {value!r}")
    return value


def _flag(options: Dict[str, str], key: str) -> bool:
    return str(options.get(key, "false")).strip().lower() in ("true", "1", "yes")


class LancePartition(InputPartition):
    """Physical rows `start..end` of one fragment."""

    def __init__(self, fragment_id: int, start: int, end: int):
        super().__init__((fragment_id, start, end))
        self.fragment_id, self.start, self.end = fragment_id, start, end


def plan_partitions(fragments: List[Tuple[int, int]], rows_per_partition: int) -> List[LancePartition]:
    """Partitions over `fragments` ((id, physical rows) pairs): whole fragments, and the
    fragments larger than `rows_per_partition` cut into equal row ranges."""
    out = []
    for fid, rows in fragments:
        parts = max(1, -(-rows // max(rows_per_partition, MIN_SPLIT_ROWS)))
        step = -(-rows // parts) if rows else 0
        for p in range(parts):
            start, end = p * step, min(rows, (p + 1) * step)
            if end > start or rows == 0:
                out.append(LancePartition(fid, start, end))
    return out


class ColumnReading:
    """How a reader turns a fragment's rows into Spark's batches: the columns (and whether
    the row id is one), the Arrow schema Spark expects, and the read options. Shared by the
    batch and the stream reader."""

    def __init__(self, ds: LanceDataset, schema: StructType, options: Dict[str, str]):
        self.uri = ds.uri
        self.storage_options = _storage_options(options)
        names = [n for n in schema.fieldNames() if n != ROW_ID]
        for n in names:
            if n not in ds.schema.names:
                raise InvalidInputError(f"{self.uri}: the schema names '{n}', which is not a column of version "
                                        f"{ds.version}")
        self._set_schema(schema)
        self.batch_size = int(options.get("batch_size", 64 * 1024))
        nanos = str(options.get("timestamp_nanos", "truncate")).strip().lower()
        if nanos not in ("truncate", "error"):
            raise InvalidInputError(f"option timestamp_nanos is 'truncate' or 'error', not {nanos!r}")
        self.exact = nanos == "error"
        self.blob_handling = _blob_handling(options)

    def _set_schema(self, schema: StructType) -> None:
        self.schema = schema
        self.with_row_id = ROW_ID in schema.fieldNames()
        self.columns = [n for n in schema.fieldNames() if n != ROW_ID]
        self.target = _types.spark_arrow_schema(schema)

    def read_rows(self, version: int, fragment_id: int, start: int, end: int, predicate: Optional[str] = None,
                  limit: Optional[int] = None) -> Iterator[pa.RecordBatch]:
        """Physical rows `start..end` of a fragment at `version`, as Spark's batches (in a task)."""
        ds = dataset_at(self.uri, version, self.storage_options)
        frag = ds.get_fragment(fragment_id)
        if frag is None:
            raise InvalidInputError(f"{self.uri}: version {version} has no fragment {fragment_id}")
        batches = frag.to_batches(self.columns, batch_size=self.batch_size, filter=predicate, limit=limit,
                                  with_row_id=self.with_row_id, row_range=(start, end),
                                  blob_handling=self.blob_handling)
        return (_types.to_spark(b, self.target, self.exact) for b in batches)


@dataclass
class WriteSettings:
    """The write options a task needs."""

    max_rows_per_file: int
    data_storage_version: Optional[str]
    storage_options: Optional[Dict[str, str]]

    @staticmethod
    def of(options: Dict[str, str]) -> "WriteSettings":
        return WriteSettings(int(options.get("max_rows_per_file", 1024 * 1024)), options.get("data_storage_version"),
                             _storage_options(options))


def write_task(iterator: Iterator[pa.RecordBatch], uri: str, target: pa.Schema, create: bool, files: JobFiles,
               settings: WriteSettings) -> List[bytes]:
    """In a task: write Spark's Arrow batches, converted to `target`, as uncommitted
    fragments (numbered for a new table when `create`); their metadata, or none when the
    job was aborted meanwhile."""
    batches = (_types.from_spark(b, target) for b in iterator)
    reader = pa.RecordBatchReader.from_batches(target, batches)
    frags = write_fragments(reader, uri, schema=None, mode="overwrite" if create else "append",
                            max_rows_per_file=settings.max_rows_per_file,
                            data_storage_version=settings.data_storage_version,
                            storage_options=settings.storage_options, file_prefix=files.prefix)
    if not files.keep(file_paths(frags)):
        return []
    return [f.data for f in frags]


def _check_append(existing: pa.Schema, incoming: pa.Schema, uri: str) -> None:
    """Same column names as the dataset (types are converted per batch, and a value that
    does not fit raises then): the core's rule."""
    _lance_core._check_append_columns(existing, incoming, uri)
