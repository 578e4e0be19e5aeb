"""Single Lance files, outside any table, with pylance's `lance.file` names: a reader
(`LanceFileReader`), a writer (`LanceFileWriter`), and a session that opens both below
one base path and moves whole objects (`LanceFileSession`).

Rows are read through the file's own one-fragment table, so a file reads exactly as a
dataset's data file does (every encoding of formats 2.0, 2.1 and 2.2); files are written
as lance_core writes data files (formats 2.1 and 2.2).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import pyarrow as pa

from . import _lance_core
from .dataset import LanceDataset, LanceScanner, _blob_columns, _with_blob_bytes
from .errors import InvalidInputError
from .prepared_blobs import DedicatedBlobWriter, PackedBlobWriter

#: The file format version written when none is asked for.
_STABLE = "2.2"


def stable_version() -> str:
    """The file format version written by default (pylance's `stable`)."""
    return _STABLE


def _path(path: Union[str, os.PathLike]) -> str:
    return str(path) if isinstance(path, Path) else os.fspath(path)


def _split(path: str) -> "tuple[str, str]":
    trimmed = path.rstrip("/")
    if "/" not in trimmed:
        return ".", trimmed
    parent, name = trimmed.rsplit("/", 1)
    return parent or "/", name


def _join(base: str, path: Optional[str]) -> str:
    if not path:
        return base
    return base.rstrip("/") + "/" + path.lstrip("/")


@dataclass
class LanceBufferDescriptor:
    """Where a buffer lies in the file."""

    position: int
    size: int


@dataclass
class LancePageMetadata:
    """A page of a column: its buffers and its encoding (as text)."""

    buffers: List[LanceBufferDescriptor]
    encoding: str
    num_rows: int = 0


@dataclass
class LanceColumnMetadata:
    """A column of the file: buffers of the whole column, and its pages."""

    column_buffers: List[LanceBufferDescriptor]
    pages: List[LancePageMetadata]


@dataclass
class LanceFileMetadata:
    """What a file's tail says about it."""

    schema: pa.Schema
    num_rows: int
    num_data_bytes: int
    num_column_metadata_bytes: int
    num_global_buffer_bytes: int
    major_version: int
    minor_version: int
    global_buffers: List[LanceBufferDescriptor]
    columns: List[LanceColumnMetadata]


@dataclass
class ColumnStatistics:
    num_pages: int
    size_bytes: int


@dataclass
class LanceFileStatistics:
    """Per column: how many pages, and the bytes of their buffers."""

    columns: List[ColumnStatistics] = field(default_factory=list)


def _buffers(pairs: Sequence[Sequence[int]]) -> List[LanceBufferDescriptor]:
    return [LanceBufferDescriptor(int(p), int(s)) for p, s in pairs]


class ReaderResults:
    """Rows read from a file, as a reader or a table."""

    def __init__(self, reader: pa.RecordBatchReader):
        self.reader = reader

    def to_batches(self) -> pa.RecordBatchReader:
        return self.reader

    def to_table(self) -> pa.Table:
        return self.reader.read_all()


class LanceFileReader:
    """Reads one Lance file (local path or object-store URI): all of it, a range of rows,
    chosen rows, its metadata and its global buffers. `columns` limits what is read."""

    def __init__(self, path: Union[str, os.PathLike], storage_options: Optional[Dict[str, str]] = None,
                 columns: Optional[List[str]] = None, **_namespace: Any):
        self.path = _path(path)
        parent, name = _split(self.path)
        self._file = LanceDataset(_lance_core._Dataset.open_file(parent, name, storage_options))
        if columns is not None:
            if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
                raise InvalidInputError(f"{self.path}: columns must be a list of column names")
            present = set(self._file.schema.names)
            missing = [c for c in columns if c.split(".")[0] not in present]
            if missing:
                raise InvalidInputError(f"{self.path}: no column {missing[0]!r} "
                                        f"(the file's columns: {', '.join(self._file.schema.names)})")
        self._columns = list(columns) if columns is not None else None

    def _scan(self, batch_size: int, row_range: Optional["tuple[int, int]"] = None) -> ReaderResults:
        # Blob columns come back as their bytes, as pylance's file reader returns them.
        scan = LanceScanner(self._file, self._columns, batch_size=batch_size, row_range=row_range,
                            blob_handling="all_binary")
        return ReaderResults(scan.to_reader())

    def read_all(self, *, batch_size: int = 1024, batch_readahead: int = 16) -> ReaderResults:
        """Every row, in batches of `batch_size` (the last may be shorter). Reads ahead
        within the scan's memory budget; `batch_readahead` is accepted as pylance's."""
        return self._scan(batch_size)

    def read_range(self, start: int, num_rows: int, *, batch_size: int = 1024,
                   batch_readahead: int = 16) -> ReaderResults:
        """Rows `start` to `start + num_rows`."""
        total = self.num_rows()
        if start < 0 or num_rows < 0 or start + num_rows > total:
            raise InvalidInputError(f"{self.path}: cannot read rows {start}..{start + num_rows} "
                                    f"of a file of {total} rows")
        return self._scan(batch_size, (start, start + num_rows))

    def take_rows(self, indices: Sequence[int], *, batch_size: int = 1024,
                  batch_readahead: int = 16) -> ReaderResults:
        """Rows `indices` (ascending, each once), in batches of `batch_size`."""
        indices = [int(i) for i in indices]
        for a, b in zip(indices, indices[1:]):
            if a >= b:
                raise InvalidInputError(f"{self.path}: row indices must be strictly increasing, "
                                        f"got {a} then {b}")
        total = self.num_rows()
        if indices and (indices[0] < 0 or indices[-1] >= total):
            bad = indices[0] if indices[0] < 0 else indices[-1]
            raise InvalidInputError(f"{self.path}: no row {bad} in a file of {total} rows")
        blobs = [c for c in (self._columns or self._file.schema.names) if c in _blob_columns(self._file.schema)]
        table = self._file._take_addresses(indices, self._columns, with_row_address=bool(blobs))
        if blobs:
            table = pa.Table.from_batches([_with_blob_bytes(self._file, b, blobs, False)
                                           for b in table.combine_chunks().to_batches()])
        batches = table.combine_chunks().to_batches(max_chunksize=max(1, batch_size))
        return ReaderResults(pa.RecordBatchReader.from_batches(table.schema, batches))

    def metadata(self) -> LanceFileMetadata:
        m = _lance_core._file_layout(self._file._ds)
        columns = [LanceColumnMetadata(_buffers(c["column_buffers"]),
                                       [LancePageMetadata(_buffers(p["buffers"]), p["encoding"], p["num_rows"])
                                        for p in c["pages"]])
                   for c in m["columns"]]
        return LanceFileMetadata(self._file.schema, m["num_rows"], m["num_data_bytes"],
                                 m["num_column_metadata_bytes"], m["num_global_buffer_bytes"],
                                 m["major_version"], m["minor_version"], _buffers(m["global_buffers"]), columns)

    def file_statistics(self) -> LanceFileStatistics:
        cols = []
        for c in self.metadata().columns:
            size = sum(b.size for b in c.column_buffers) + sum(b.size for p in c.pages for b in p.buffers)
            cols.append(ColumnStatistics(len(c.pages), size))
        return LanceFileStatistics(cols)

    def read_global_buffer(self, index: int) -> bytes:
        """Global buffer `index` (0 holds the file's schema; writers add more)."""
        return _lance_core._file_global_buffer(self._file._ds, int(index))

    def num_rows(self) -> int:
        return len(self._file)

    @property
    def schema(self) -> pa.Schema:
        return self._file.schema


class LanceFileWriter:
    """Writes one Lance file. The schema is `schema`, or the first batch's; `version` is
    the file format ("2.0", "2.1", "2.2"/"stable"; not the legacy 0.1 format). In 2.0,
    as in pylance, a struct cannot hold NULL rows, and blobs and packed structs are refused. `data_cache_bytes` (shared by the top-level columns) is how much of a column
    gathers before it is encoded as a page; `max_page_bytes` caps a page.
    ``size_bytes`` holds the file's size once closed."""

    def __init__(self, path: Union[str, os.PathLike], schema: Optional[pa.Schema] = None, *,
                 data_cache_bytes: Optional[int] = None, version: Optional[str] = None,
                 storage_options: Optional[Dict[str, str]] = None, max_page_bytes: Optional[int] = None,
                 keep_original_array: Optional[bool] = None, namespace_client: Any = None,
                 table_id: Optional[List[str]] = None):
        self.path = _path(path)
        self._writer = _lance_core._FileWriter(self.path, schema, version, storage_options,
                                               data_cache_bytes, max_page_bytes)
        self.closed = False
        self.size_bytes: Optional[int] = None

    def write_batch(self, batch: Union[pa.RecordBatch, pa.Table]) -> None:
        """Add `batch`'s rows (its columns matched to the file's by name)."""
        if isinstance(batch, pa.RecordBatch):
            batch = pa.Table.from_batches([batch])
        elif not isinstance(batch, pa.Table):
            raise InvalidInputError(f"{self.path}: write_batch takes a pyarrow RecordBatch or Table, "
                                    f"not {type(batch).__name__}")
        self._writer.write(batch)

    def close(self) -> Optional[int]:
        """Write the metadata and publish the file; the number of rows (None when it was
        closed before)."""
        if self.closed:
            return None
        done = self._writer.finish()
        self.closed = True
        if done is None:
            return None
        rows, self.size_bytes = done
        return rows

    def add_schema_metadata(self, key: str, value: str) -> None:
        """Set `key` in the file's schema metadata (before `close`)."""
        self._writer.add_schema_metadata(key, value)

    def add_global_buffer(self, data: bytes) -> int:
        """Write `data` as a global buffer of the file; its index (1 for the first: 0
        holds the schema)."""
        return self._writer.add_global_buffer(bytes(data))

    def __enter__(self) -> "LanceFileWriter":
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        self.close()


@dataclass
class ListResult:
    """One level of a listing: the directories and the files directly in it."""

    common_prefixes: List[str]
    objects: List[str]


class LanceFileSession:
    """Readers, writers and whole-object operations below one base path (local or an
    object store), sharing its storage options. Paths are relative to the base."""

    def __init__(self, base_path: Union[str, os.PathLike], storage_options: Optional[Dict[str, str]] = None,
                 namespace_client: Any = None, table_id: Optional[List[str]] = None):
        self.base_path = _path(base_path)
        self._options = storage_options

    def open_reader(self, path: str, columns: Optional[List[str]] = None) -> LanceFileReader:
        return LanceFileReader(_join(self.base_path, path), self._options, columns)

    def open_writer(self, path: str, *, schema: Optional[pa.Schema] = None, data_cache_bytes: Optional[int] = None,
                    version: Optional[str] = None, keep_original_array: Optional[bool] = None,
                    max_page_bytes: Optional[int] = None) -> LanceFileWriter:
        return LanceFileWriter(_join(self.base_path, path), schema, data_cache_bytes=data_cache_bytes,
                               version=version, storage_options=self._options, max_page_bytes=max_page_bytes)

    def open_packed_blob_writer(self, path: str, blob_id: int) -> "PackedBlobWriter":
        """A pack sidecar (`blob_id`, from 1) of the data file at `path`, to be written
        next (`lance_core.blob.PackedBlobWriter`)."""
        return PackedBlobWriter(self.base_path, path, blob_id, self._options)

    def open_dedicated_blob_writer(self, path: str, blob_id: int) -> "DedicatedBlobWriter":
        """A dedicated sidecar (`blob_id`, from 1) of the data file at `path`
        (`lance_core.blob.DedicatedBlobWriter`)."""
        return DedicatedBlobWriter(self.base_path, path, blob_id, self._options)

    def contains(self, path: str) -> bool:
        return _lance_core._object_exists(self.base_path, path, self._options)

    def list(self, path: Optional[str] = None) -> List[str]:
        """Every file below `path` (the base when None), recursively."""
        return _lance_core._store_list(self.base_path, path or "", True, self._options)[1]

    def list_with_delimiter(self, path: Optional[str] = None) -> ListResult:
        """The directories and files directly in `path`."""
        prefixes, objects = _lance_core._store_list(self.base_path, path or "", False, self._options)
        return ListResult(sorted(prefixes), sorted(objects))

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        """`length` bytes at `offset` of the file at `path`, in one read."""
        if offset < 0 or length < 0:
            raise InvalidInputError(f"{path}: offset and length must be non-negative")
        return _lance_core._store_read_range(self.base_path, path, offset, length, self._options)

    def delete_file(self, path: str) -> None:
        """Delete the file at `path`; a missing file is an error."""
        _lance_core._store_delete(self.base_path, path, self._options)

    def upload_file(self, local_path: Union[str, os.PathLike], remote_path: str) -> None:
        """Copy a local file to `remote_path`, streamed in parts."""
        _lance_core._store_transfer(self.base_path, _path(local_path), remote_path, True, self._options)

    def download_file(self, remote_path: str, local_path: Union[str, os.PathLike]) -> None:
        """Copy the file at `remote_path` to a local file, streamed."""
        _lance_core._store_transfer(self.base_path, _path(local_path), remote_path, False, self._options)


__all__ = [
    "LanceFileReader",
    "LanceFileWriter",
    "LanceFileSession",
    "LanceFileMetadata",
    "LanceColumnMetadata",
    "LancePageMetadata",
    "LanceBufferDescriptor",
    "LanceFileStatistics",
    "ColumnStatistics",
    "ListResult",
    "ReaderResults",
    "stable_version",
]
