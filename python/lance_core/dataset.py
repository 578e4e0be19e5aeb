"""Datasets, scanners and fragments with pylance's names, over the Rust core."""

from __future__ import annotations

import inspect
import json
import os
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import pyarrow as pa
import pyarrow.dataset as pa_ds

from . import _lance_core, _nearest
from .udf import BatchUDF, RowRuns, is_row_stream, row_runs
from .bases import DatasetBasePath
from .table_config import AutoCleanupConfig, TableConfig, auto_cleanup_keys  # noqa: F401
from .table_target import check_target, table_location
from .errors import (ColumnNotFoundError, DatasetNotFoundError, InvalidInputError)
from .fragment_metadata import (LANCE_COMMIT_MESSAGE_KEY, DataFile, FragmentMetadata, LanceOperation,  # noqa: F401
                                UpdateBases, _commit_native, _operation_from, _properties)
from .merge import MergeInsertBuilder
from .optimize import DatasetOptimizer
from .fragment import (_ROW_KEYS, FragmentSession, LanceFragment, _conform, _merge_matcher,  # noqa: F401
                       _sql_columns, _uri)
from .refs import Branches, Tags
from .scanner import (_HINTS, ColumnOrdering, LanceScanner, _blob_columns, _check_hints,  # noqa: F401
                      _cut_by_bytes, _filter_text, _indices, _orderings)
from .results import (CleanupCandidateFile, CleanupExplanation, CleanupReferencedBranch,  # noqa: F401
                      CleanupStats, CompactionMetrics, DataStatistics, FieldStatistics, IndexDescription,
                      IndexSegmentDescription, IOStats, Transaction)

from .blob import BlobFile
from .commit_lock import run_under_lock, under_commit_lock  # noqa: F401
from .delta import DatasetDelta, delta
from .schema import LanceSchema
from .sql import SqlQueryBuilder


# pylance's scan arguments that only tune how it runs: taken and ignored.
def _with_blob_bytes(dataset: "LanceDataset", batch: pa.RecordBatch, names: List[str],
                     keep_address: bool) -> pa.RecordBatch:
    """`batch` with blob columns `names` holding the blobs' bytes instead of their
    descriptors, located by its `_rowaddr` column (dropped unless `keep_address`)."""
    for name in names:
        part = pa.RecordBatch.from_arrays([batch.column(name), batch.column("_rowaddr")], [name, "_rowaddr"])
        reader = pa.RecordBatchReader.from_batches(part.schema, [part])
        values = pa.record_batch(_lance_core._blob_bytes(dataset._ds, name, reader)).column(0)
        i = batch.schema.get_field_index(name)
        batch = batch.set_column(i, pa.field(name, pa.large_binary()), values)
    if not keep_address:
        batch = batch.drop_columns(["_rowaddr"])
    return batch


def _blob_rows(what: str, ids: Any, addresses: Any, indices: Any) -> Tuple[List[int], str]:
    """The one row selection of a blob read (ids, addresses or indices) as numbers, and how
    the core takes them."""
    given = [(name, v) for name, v in (("ids", ids), ("addresses", addresses), ("indices", indices))
             if v is not None]
    if len(given) != 1:
        raise InvalidInputError(f"{what} needs exactly one of ids, addresses or indices")
    name, values = given[0]
    return _indices(values, name), {"ids": "row_id", "addresses": "address", "indices": "index"}[name]


def _take_columns(columns: Any) -> Tuple[Optional[List[str]], Optional[List[Tuple[str, str]]]]:
    """`columns` of a take: names, or a dict of names to SQL expressions."""
    if columns is None:
        return None, None
    if isinstance(columns, str):
        raise InvalidInputError("columns must be a list of column names, not a string")
    if isinstance(columns, dict):
        for name, expr in columns.items():
            if not isinstance(name, str) or not isinstance(expr, str):
                raise InvalidInputError(f"columns given as a dict map output names to SQL expressions "
                                        f"(str → str), got {name!r}: {expr!r}")
        return None, list(columns.items())
    return list(columns), None


def scalar_index_params(uri: str, index_type: Any, kwargs: Dict[str, Any]) -> Tuple[str, Optional[int], Optional[float]]:
    """The index type named by `index_type` (a string or pylance's `IndexConfig`) and the
    rows per page or zone and false-match probability that it and `kwargs` (as
    `create_scalar_index` takes them) ask for, checked (errors name the table `uri`)."""
    params = dict(kwargs)
    if not isinstance(index_type, str):
        # pylance's IndexConfig(index_type, parameters)
        params.update(getattr(index_type, "parameters", None) or {})
        index_type = getattr(index_type, "index_type", None)
        if not isinstance(index_type, str):
            raise InvalidInputError(f"{uri}: index_type must be a string such as 'BTREE' or an IndexConfig")
    # Rows per BTREE page, ZONEMAP zone or BLOOMFILTER zone.
    size_name = {"ZONEMAP": "rows_per_zone", "BLOOMFILTER": "number_of_items"}.get(index_type.upper(), "zone_size")
    probability = params.pop("probability", None)
    if probability is not None and not (isinstance(probability, (int, float)) and 0 <= probability < 1):
        raise InvalidInputError(f"{uri}: probability must be a number in [0, 1), got {probability!r}")
    zone_size = params.pop(size_name, None)
    if zone_size is not None and (not isinstance(zone_size, int) or zone_size <= 0):
        raise InvalidInputError(f"{uri}: {size_name} must be a positive integer, got {zone_size!r}")
    for ignored in ("train", "index_uuid", "use_seeds"):
        params.pop(ignored, None)
    if params.get("fragment_ids") is not None:
        raise InvalidInputError(f"{uri}: create_scalar_index builds over every fragment; fragment_ids is not supported")
    params.pop("fragment_ids", None)
    return index_type, zone_size, probability


def ivf_params(index_type: str, metric: str = "L2", num_partitions: Optional[int] = None,
               num_sub_vectors: Optional[int] = None, *, num_bits: int = 8, sample_rate: int = 256,
               max_iters: int = 50, target_partition_size: Optional[int] = None,
               seed: Optional[int] = None) -> Dict[str, Any]:
    """pylance's `create_index` arguments for an IVF build, checked, as the core takes them
    (shared by `LanceDataset.create_index` and the Spark build)."""
    kind = str(index_type).upper()
    if kind == "IVF_PQ" and num_sub_vectors is None:
        raise InvalidInputError("num_partitions and num_sub_vectors are required for IVF_PQ")
    for arg, value in (("num_partitions", num_partitions), ("num_sub_vectors", num_sub_vectors),
                       ("target_partition_size", target_partition_size)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise InvalidInputError(f"{arg} must be a positive integer, got {value!r}")
    for arg, value in (("num_bits", num_bits), ("sample_rate", sample_rate), ("max_iters", max_iters)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise InvalidInputError(f"{arg} must be a positive integer, got {value!r}")
    return {"index_type": kind, "metric": str(metric), "num_partitions": num_partitions,
            "target_partition_size": target_partition_size, "num_sub_vectors": num_sub_vectors,
            "num_bits": num_bits, "sample_rate": sample_rate, "max_iters": max_iters, "seed": seed}


class LanceDataset(TableConfig, pa_ds.Dataset):
    """A Lance dataset at one version: `LanceDataset(uri, version=None,
    storage_options=None)` opens one, as pylance's (`lance_core.dataset(...)` does the
    same). Picklable: a pickle reopens the same version with the same storage options.

    A `pyarrow.dataset.Dataset`, as pylance's is, so that engines that query pyarrow
    datasets (duckdb, polars' `scan_pyarrow_dataset`) query it, pushing their column
    selections and filters into `scanner()`. Every method pyarrow's class defines is
    answered here: pyarrow's own would reach a C++ dataset this object does not have."""

    # `LanceScanner.from_dataset` asks it for its own scanner.
    _builds_lance_scanners = True

    # Set by `dataset(default_scan_options=..., commit_lock=...)` (pylance's attribute names).
    _default_scan_options: Optional[Dict[str, Any]] = None
    _commit_lock: Any = None

    def __init__(self, uri: Union[str, os.PathLike, "_lance_core._Dataset"], version: Optional[Union[int, str]] = None,
                 storage_options: Optional[Dict[str, str]] = None, **kwargs: Any):
        if isinstance(uri, _lance_core._Dataset):
            self._ds = uri
        else:
            self._ds = dataset(uri, version, storage_options)._ds

    def __reduce__(self):
        return LanceDataset, (self.uri, self.version, self._ds.storage_options() or None)

    def io_stats_snapshot(self) -> "IOStats":
        """The requests made through this dataset's store so far (reads and writes, with
        their bytes), as pylance's: the versions reached from this dataset (checkouts,
        commits) and its base paths count with it; a dataset opened again counts anew."""
        return IOStats(*self._ds.io_stats(False))

    def io_stats_incremental(self) -> "IOStats":
        """The requests made since the last call (or the open), starting the counts again."""
        return IOStats(*self._ds.io_stats(True))

    def session(self) -> "_lance_core.Session":
        """The session whose caches (file metadata, index data) this dataset uses: pass
        it to `lance_core.dataset(..., session=)` to share them."""
        return self._ds.session()

    # pyarrow.dataset.Dataset's methods (see the class's note).

    @property
    def partition_expression(self) -> Any:
        raise NotImplementedError("a Lance dataset is not partitioned")

    def replace_schema(self, schema: Any) -> Any:
        raise NotImplementedError("a Lance dataset's schema is not replaced: use replace_schema_metadata, "
                                  "replace_field_metadata, alter_columns or add_columns")

    def _get_fragments(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("pyarrow fragments of a Lance dataset: use get_fragments()")

    def _scanner_options(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("pyarrow scan options of a Lance dataset: use scanner()")

    _scan_options = _scanner_options

    def filter(self, expression: Any) -> "LanceDataset":
        """This version seen through `expression` (SQL or a pyarrow compute expression):
        its scans keep only the matching rows, as pyarrow's `Dataset.filter`."""
        defaults = dict(self._default_scan_options or {})
        sql = _filter_text(expression)
        if not isinstance(sql, str):
            raise InvalidInputError(f"filter takes SQL text or a pyarrow compute expression, got {expression!r}")
        if defaults.get("filter") is not None:
            sql = f"({_filter_text(defaults['filter'])}) AND ({sql})"
        view = LanceDataset(self._ds)
        view._default_scan_options = {**defaults, "filter": sql}
        view._commit_lock = self._commit_lock
        return view

    def _in_memory(self) -> pa_ds.Dataset:
        return pa_ds.dataset(self.to_table())

    def sort_by(self, sorting: Any, **kwargs: Any) -> pa_ds.Dataset:
        """The rows sorted (pyarrow's `Dataset.sort_by`, on the rows read into memory)."""
        return self._in_memory().sort_by(sorting, **kwargs)

    def join(self, right_dataset: Any, keys: Any, right_keys: Any = None, join_type: str = "left outer",
             left_suffix: Optional[str] = None, right_suffix: Optional[str] = None, coalesce_keys: bool = True,
             use_threads: bool = True) -> pa_ds.Dataset:
        """pyarrow's `Dataset.join`, on the rows read into memory (either side may be a
        Lance dataset)."""
        if isinstance(right_dataset, LanceDataset):
            right_dataset = right_dataset._in_memory()
        return self._in_memory().join(right_dataset, keys, right_keys, join_type, left_suffix, right_suffix,
                                      coalesce_keys, use_threads)

    def join_asof(self, right_dataset: Any, on: str, by: Any, tolerance: int, right_on: Any = None,
                  right_by: Any = None) -> pa_ds.Dataset:
        """pyarrow's `Dataset.join_asof`, on the rows read into memory."""
        if isinstance(right_dataset, LanceDataset):
            right_dataset = right_dataset._in_memory()
        return self._in_memory().join_asof(right_dataset, on, by, tolerance, right_on, right_by)

    @property
    def uri(self) -> str:
        return self._ds.uri

    @property
    def version(self) -> int:
        return self._ds.version

    @property
    def latest_version(self) -> int:
        return self._ds.latest_version()

    @property
    def schema(self) -> pa.Schema:
        """The table's schema, with `_rowid` / `_rowaddr` when the default scan options
        (`dataset(default_scan_options=...)`) return them."""
        schema = pa.schema(self._ds.schema)
        defaults = self._default_scan_options or {}
        for flag, name in (("with_row_id", "_rowid"), ("with_row_address", "_rowaddr")):
            if defaults.get(flag):
                schema = schema.append(pa.field(name, pa.uint64()))
        return schema

    @property
    def data_storage_version(self) -> str:
        return self._ds.data_storage_version

    @property
    def lance_schema(self) -> "LanceSchema":
        """The schema with Lance field ids (`lance_core.schema.LanceSchema`)."""
        return LanceSchema(self._ds.lance_schema())

    def field_ids(self) -> Dict[str, int]:
        """The Lance field id of every field, keyed by dotted path ("s.x")."""
        return dict(self._ds.field_ids())

    @property
    def has_index(self) -> bool:
        """Whether this version has any index (pylance's property)."""
        return bool(self._ds.index_segments())

    def list_indices(self) -> List[Dict[str, Any]]:
        """The index segments of this version, as pylance lists them, sorted by name: name,
        type ("BTree", "Bitmap", "LabelList", "NGram", "ZoneMap", "BloomFilter", "Inverted",
        "IVF_PQ", ...), uuid, fields (column names), version (the dataset version the
        segment was built from), fragment_ids (the fragments it was built over, as
        recorded) and base_id. Several segments with one name make up one index."""
        out = [{"name": s["name"], "type": s["type"], "uuid": s["uuid"], "fields": s["field_names"],
                "version": s["dataset_version"], "fragment_ids": set(s["fragment_ids"] or ()),
                "base_id": s["base_id"]} for s in self._ds.index_segments()]
        return sorted(out, key=lambda d: d["name"])

    def describe_indices(self) -> List["IndexDescription"]:
        """Every index of this version, as pylance describes it: one `IndexDescription`
        per name (its segments, the rows they cover, the files' total size)."""
        segments = self._ds.index_segments()
        rows = self._ds.index_rows_covered()
        by_name: Dict[str, List[Tuple[Dict[str, Any], int]]] = {}
        for s, n in zip(segments, rows):
            by_name.setdefault(s["name"], []).append((s, n))
        out = []
        for name, parts in by_name.items():
            first = parts[0][0]
            segs = [IndexSegmentDescription(
                uuid=s["uuid"], fragment_ids=set(s["fragment_ids"] or ()), index_version=s["index_version"],
                created_at=(datetime.fromtimestamp(s["created_at_ms"] / 1000, timezone.utc)
                            if s["created_at_ms"] is not None else None),
                dataset_version_at_last_update=s["dataset_version"], size_bytes=sum(sz for _, sz in s["files"]),
                base_id=s["base_id"], covering_fields=[]) for s, _ in parts]
            out.append(IndexDescription(
                name=name, type_url=first["type_url"], index_type=first["type"],
                num_rows_indexed=sum(n for _, n in parts), fields=list(first["fields"]),
                field_names=list(first["field_names"]), segments=segs,
                total_size_bytes=sum(x.size_bytes for x in segs), details={}))
        return sorted(out, key=lambda d: d.name)

    def index_statistics(self, name: str) -> Dict[str, Any]:
        """pylance's statistics of index `name`: its kind, segments, what each segment's
        files say (a BTREE's value range and pages, a BITMAP's keys) and the rows and
        fragments it covers and does not."""
        return json.loads(self._ds.index_statistics(name))

    @property
    def stats(self) -> "DatasetStats":
        return DatasetStats(self)

    def create_scalar_index(self, column: str, index_type: Any, name: Optional[str] = None, *,
                            replace: bool = True, conflict_retries: int = 10, **kwargs: Any) -> "LanceDataset":
        """Build a scalar index on `column` and commit it, as pylance does: `index_type`
        "BTREE", "BITMAP", "LABEL_LIST" (on a list column, for `array_has_any`,
        `array_has_all` and `array_has`), "ZONEMAP" (value ranges per `rows_per_zone`
        rows, 8192) or "BLOOMFILTER" (a Bloom filter per `number_of_items` rows, 8192, with
        false-match `probability` 0.00057), "NGRAM" (the rows holding each trigram of a
        string column, for LIKE and `contains`), or pylance's `IndexConfig`; the index is named `name`
        (`<column>_idx` by default) and replaces one of that name unless `replace=False`.
        A BTREE's rows per page are `zone_size` (4096), given as a keyword or in an
        `IndexConfig`'s parameters. pylance reads and uses the index built. A concurrent
        commit that moved the indexed rows (a compaction) or changed the same index makes
        it build again from the new version, up to `conflict_retries` times."""
        index_type, zone_size, probability = scalar_index_params(self.uri, index_type, kwargs)
        self._ds = self._ds.create_scalar_index(column, index_type, name, bool(replace), zone_size,
                                                int(conflict_retries),
                                                None if probability is None else float(probability))
        return self

    def create_index(self, column: str, index_type: str, name: Optional[str] = None, metric: str = "L2",
                     replace: bool = True, num_partitions: Optional[int] = None, num_sub_vectors: Optional[int] = None,
                     *, num_bits: int = 8, sample_rate: int = 256, max_iters: int = 50,
                     target_partition_size: Optional[int] = None, seed: Optional[int] = None,
                     conflict_retries: int = 10, **kwargs: Any) -> "LanceDataset":
        """Build a vector index on `column` and commit it, as pylance does: `index_type`
        "IVF_FLAT", "IVF_PQ" (needs `num_sub_vectors` dividing the dimension; `num_bits` 8
        or 4) or "IVF_SQ"; `metric` "l2", "cosine" or "dot"; `num_partitions` (else one per
        4096 (FLAT) or 8192 rows); k-means on `num_partitions x sample_rate` rows for at
        most `max_iters` rounds (`seed` makes it reproducible). Scalar index types go to
        `create_scalar_index`. pylance reads and uses the index built."""
        if column not in self.field_ids():
            raise ColumnNotFoundError(f"{self.uri}: no column {column!r} to index (columns: "
                                      f"{', '.join(self.schema.names)})")
        kind = str(index_type).upper()
        if kind in ("BTREE", "BITMAP", "LABEL_LIST", "ZONEMAP", "BLOOMFILTER", "NGRAM", "INVERTED", "FTS"):
            return self.create_scalar_index(column, kind, name, replace=replace, **kwargs)
        ignored = {"accelerator", "index_file_version", "shuffle_partition_batches", "shuffle_partition_concurrency",
                   "one_pass_ivfpq", "storage_options", "train", "kmeans_redos"}
        unknown = sorted(set(kwargs) - ignored)
        if unknown:
            raise TypeError(f"create_index() got an unexpected keyword argument '{unknown[0]}'")
        params = ivf_params(kind, metric, num_partitions, num_sub_vectors, num_bits=num_bits,
                            sample_rate=sample_rate, max_iters=max_iters,
                            target_partition_size=target_partition_size, seed=seed)
        self._ds = self._ds.create_vector_index(column, name, bool(replace), params, int(conflict_retries))
        return self

    def base_paths(self) -> Dict[int, DatasetBasePath]:
        """The table's base paths by id (pylance's `base_paths`)."""
        return self._ds.base_paths()

    def add_bases(self, new_bases: List[DatasetBasePath],
                  transaction_properties: Optional[Dict[str, str]] = None) -> "LanceDataset":
        """Register base paths on the table (one new version; pylance's `add_bases`):
        those without an id get the smallest unused one; a name or path already
        registered is refused. Returns this dataset, moved to the new version."""

        bases = list(new_bases)
        for b in bases:
            if not isinstance(b, DatasetBasePath):
                raise TypeError(f"add_bases takes DatasetBasePath objects, not {type(b).__name__}")
        self._ds = _commit_native(self.uri, UpdateBases(bases), read_version=self.version,
                                  storage_options=self._ds.storage_options(),
                                  transaction_properties=transaction_properties)
        return self

    def drop_index(self, name: str) -> None:
        """Remove index `name` from the table (a new version; its files stay until cleanup
        removes the versions that list it)."""
        self._ds = self._ds.drop_index(name)

    def versions(self) -> List[Dict[str, Any]]:
        """Every version: its number, commit time (local, naive, like pylance) and summary."""
        return [_version_row(*row) for row in self._ds.versions()]

    def version_refs(self) -> List[Dict[str, int]]:
        """`{"version": n}` for every version of this dataset's branch, oldest first, from a
        listing of the versions directory alone (no manifest is read; `versions()` reads
        them all)."""
        return [{"version": v} for v in self._ds.version_numbers()]

    def get_version(self) -> Dict[str, Any]:
        """This version as `versions()` lists it (number, commit time, summary), from the
        manifest already loaded: nothing is read."""
        return _version_row(*self._ds.current_version())

    def tracked_files(self, *, min_version: Optional[int] = None,
                      progress: Optional[Callable[[int, Optional[int]], Any]] = None) -> pa.RecordBatchReader:
        """The files every version of this branch references (from `min_version` on when
        given): one row per (version, file) with `version`, `base_uri` (the table's root or
        the base path holding the file), `path` (relative to it) and `type` ("manifest",
        "transaction file", "data file", "deletion file", "index file"), as pylance's.
        `progress(manifests_processed, manifests_total)` is called as each manifest is
        read (one listing of the versions, then the manifests, many at a time). The rows
        stream, a batch per version: a long history is never held whole."""
        total, walk = _lance_core._tracked_files(self._ds, min_version or 0)
        stream = pa.RecordBatchReader.from_stream(walk)

        def batches() -> Iterator[pa.RecordBatch]:
            for read, batch in enumerate(stream, 1):  # one batch per manifest
                if progress is not None:
                    progress(read, total)
                yield batch
        return pa.RecordBatchReader.from_batches(stream.schema, batches())

    def all_files(self) -> pa.RecordBatchReader:
        """Every file present under the table's root (files of other base paths are not
        listed), as pylance's: `base_uri`, `path` (relative), `size_bytes`,
        `last_modified` (UTC)."""
        rows = _lance_core._all_files(self._ds)
        schema = pa.schema([pa.field("base_uri", pa.dictionary(pa.int32(), pa.string()), nullable=False),
                            pa.field("path", pa.string(), nullable=False),
                            pa.field("size_bytes", pa.int64(), nullable=False),
                            pa.field("last_modified", pa.timestamp("us", tz="UTC"), nullable=False)])
        paths = [r[0] for r in rows]
        base = pa.DictionaryArray.from_arrays(pa.array([0] * len(rows), pa.int32()), pa.array([self.uri]))
        batch = pa.record_batch([base, pa.array(paths, pa.string()), pa.array([r[1] for r in rows], pa.int64()),
                                 pa.array([r[2] for r in rows], pa.timestamp("us", tz="UTC"))], schema=schema)
        return pa.RecordBatchReader.from_batches(schema, [batch])

    @property
    def initial_storage_options(self) -> Optional[Dict[str, str]]:
        """The storage options this dataset was opened with (None when none)."""
        return self._ds.storage_options() or None

    def latest_storage_options(self) -> Optional[Dict[str, str]]:
        """The storage options in use: those given at open (there is no credentials
        provider to refresh them)."""
        return self._ds.storage_options() or None

    def slice(self, start: int, end: int, columns: Optional[Union[List[str], Dict[str, str]]] = None) -> pa.Table:
        """Rows `start` to `end` (exclusive) by position among the visible rows, read as an
        offset and limit scan."""
        if start < 0:
            raise ValueError(f"start must be non-negative, got {start}")
        if end < start:
            raise ValueError(f"end ({end}) must be >= start ({start})")
        return self.scanner(offset=start, limit=end - start, columns=columns).to_table()

    def read_transaction(self, version: Optional[int] = None) -> Optional["Transaction"]:
        """The transaction that committed `version` (this dataset's version when None), or
        None when its writer recorded none."""
        ds = self if version is None or version == self.version else self.checkout_version(version)
        return _transaction_from(_lance_core._transactions(ds._ds, 1)[0])

    @staticmethod
    def commit(
        base_uri: Union[str, os.PathLike, "LanceDataset"],
        operation: Any,
        read_version: Optional[int] = None,
        commit_lock: Any = None,
        storage_options: Optional[Dict[str, str]] = None,
        enable_v2_manifest_paths: Optional[bool] = None,
        detached: Optional[bool] = False,
        max_retries: int = 20,
        *,
        commit_message: Optional[str] = None,
        enable_stable_row_ids: Optional[bool] = None,
    ) -> "LanceDataset":
        """Commit `operation` (a `LanceOperation`, or a `Transaction` carrying one with its
        read version and properties) to the table at `base_uri` as one new version, as
        pylance's `LanceDataset.commit`. Every operation but Overwrite and Restore needs
        the `read_version` it was prepared against; concurrent commits are checked against
        it. `commit_message` is recorded in the transaction's properties, as pylance does.

        `detached=True` commits a detached version: built on `read_version` (which may be
        detached itself), numbered at random with the top bit set, and left off the
        table's line of versions (the latest version and `versions()` do not change);
        `checkout_version(number)` opens it."""
        if isinstance(base_uri, LanceDataset):
            if storage_options is None:
                storage_options = base_uri._ds.storage_options()
            base_uri = base_uri.uri
        properties: Dict[str, str] = {}
        if isinstance(operation, Transaction):
            if commit_message is not None:
                raise ValueError("commit_message is not supported when committing a Transaction: set it "
                                 "in the transaction's properties")
            # A transaction for a table not yet created was read at no version (0).
            read_version = operation.read_version or None
            properties = dict(operation.transaction_properties or {})
            operation = operation.operation
        elif not isinstance(operation, LanceOperation.BaseOperation):
            raise TypeError(f"operation must be a LanceOperation or a Transaction, got {type(operation)}")
        elif read_version is None and not isinstance(operation, (LanceOperation.Overwrite, LanceOperation.Restore)):
            raise ValueError("read_version is required for all operations except Overwrite and Restore")
        if enable_stable_row_ids and not isinstance(operation, LanceOperation.Overwrite):
            raise InvalidInputError("enable_stable_row_ids applies to an Overwrite (a new table) only")
        return under_commit_lock(commit_lock, base_uri, storage_options, lambda: LanceDataset(_commit_native(
            base_uri, operation, read_version, storage_options, _properties(properties, commit_message),
            enable_stable_row_ids=bool(enable_stable_row_ids), detached=bool(detached))))

    @staticmethod
    def commit_batch(dest: Union[str, os.PathLike, "LanceDataset"], transactions: List["Transaction"],
                     commit_lock: Any = None, storage_options: Optional[Dict[str, str]] = None,
                     enable_v2_manifest_paths: Optional[bool] = None, detached: Optional[bool] = False,
                     max_retries: int = 20) -> Dict[str, Any]:
        """Commit several transactions as one version, as pylance's `commit_batch`: Append
        transactions merge into one Append (their fragments in order), read at the first's
        read version. Returns {"dataset": ..., "merged": the Transaction committed}."""
        if not transactions:
            raise InvalidInputError("commit_batch needs at least one transaction")
        if not all(isinstance(t.operation, LanceOperation.Append) for t in transactions):
            kinds = sorted({type(t.operation).__name__ for t in transactions})
            raise InvalidInputError(f"commit_batch merges Append transactions only, got {kinds}")
        merged = Transaction(transactions[0].read_version,
                             LanceOperation.Append([f for t in transactions for f in t.operation.fragments]))
        ds = LanceDataset.commit(dest, merged, commit_lock=commit_lock, storage_options=storage_options,
                                 detached=detached, max_retries=max_retries)
        return {"dataset": ds, "merged": merged}

    @staticmethod
    def drop(base_uri: Union[str, os.PathLike], storage_options: Optional[Dict[str, str]] = None,
             ignore_not_found: Optional[bool] = None) -> None:
        """Delete the dataset at `base_uri` and everything under it, as pylance's `drop`:
        only a dataset root (a readable manifest is there) is deleted; a missing one is an
        error unless `ignore_not_found`."""
        uri = _uri(base_uri)
        try:
            _lance_core._Dataset.open(uri, None, storage_options)
        except DatasetNotFoundError:
            if ignore_not_found:
                return
            raise
        _lance_core._drop_dataset(uri, storage_options)

    def delta(self, compared_against: Optional[int] = None, *, begin_version: Optional[int] = None,
              end_version: Optional[int] = None) -> "DatasetDelta":
        """What changed between two versions (pylance's change feed): `compared_against`
        compares this version with an older one; or give `begin_version` (exclusive) and
        `end_version` (inclusive). Inserted and updated rows need stable row ids (other
        tables keep no row lineage: none are found)."""
        return delta(self, compared_against, begin_version=begin_version, end_version=end_version)

    def sql(self, sql: str) -> "SqlQueryBuilder":
        """A SQL query over this version, as pylance's `ds.sql(...)`: `SELECT` columns or
        expressions `FROM dataset` (or the name `table_name` sets)
        with WHERE, ORDER BY columns, LIMIT and OFFSET, run as a scan
        (`.build().to_batch_records()` / `.to_stream_reader()`)."""
        return SqlQueryBuilder(self, sql)

    def get_transactions(self, recent_transactions: int = 10) -> List[Optional["Transaction"]]:
        """The transactions of this version and the ones before it, newest first, at most
        `recent_transactions` (None for a version whose writer recorded none or that a
        cleanup removed)."""
        return [_transaction_from(row) for row in _lance_core._transactions(self._ds, int(recent_transactions))]

    @property
    def tags(self) -> "Tags":
        """The dataset's tags (names for versions), as pylance's `ds.tags`."""
        return Tags(self)

    def drop_columns(self, columns: List[str]) -> None:
        """Drop columns (nested fields by dotted path, e.g. "s.x") without rewriting data:
        one new version (a `Project` transaction); this object moves to it. Files that held
        only dropped columns leave the fragments; `cleanup_old_versions` frees their space."""
        if isinstance(columns, str):
            raise InvalidInputError("columns must be a list of column names, not a string")
        self._ds = self._ds.drop_columns(list(columns))

    def alter_columns(self, *alterations: Dict[str, Any]) -> None:
        """Change columns, as pylance's `alter_columns`: each alteration is a dict with
        `path` (nested with dots, through lists by their child's name: `tags.item.x`) and any
        of `name` (rename), `nullable` and `data_type`. Renames and nullability rewrite no
        data; a column is made non-nullable only if it holds no nulls. A `data_type` casts
        (within a type family, as pylance allows) and rewrites only that column's data."""
        changes = []
        for a in alterations:
            if not isinstance(a, dict) or not isinstance(a.get("path"), str):
                raise InvalidInputError(f"an alteration is a dict with a 'path', got {a!r}")
            unknown = set(a) - {"path", "name", "nullable", "data_type"}
            if unknown:
                raise InvalidInputError(f"Unknown key: {', '.join(sorted(unknown))} (an alteration takes path, "
                                        "name, nullable and data_type)")
            if all(a.get(k) is None for k in ("name", "nullable", "data_type")):
                raise InvalidInputError(f"At least one of name, nullable, or data_type must be specified "
                                        f"(alteration of {a['path']!r})")
            nullable = a.get("nullable")
            if nullable is False and self.count_rows(filter=f"{a['path']} IS NULL") > 0:
                raise InvalidInputError(f"{self.uri}: column {a['path']} holds nulls; it cannot be made "
                                        "non-nullable")
            to = a.get("data_type")
            if to is not None and not isinstance(to, pa.DataType):
                raise InvalidInputError(f"data_type must be a pyarrow.DataType, got {to!r}")
            changes.append((a["path"], a.get("name"), None if nullable is None else bool(nullable),
                            None if to is None else pa.schema([pa.field("x", to)])))
        # One version: renames and nullability rewrite no data, a cast only its column's.
        if any(c[1] is not None or c[2] is not None or c[3] is not None for c in changes):
            self._ds = self._ds.alter_columns(changes)

    def cleanup_old_versions(self, older_than: Optional[timedelta] = None, retain_versions: Optional[int] = None,
                             *, delete_unverified: bool = False, error_if_tagged_old_versions: bool = True,
                             versions: Optional[List[int]] = None, **kwargs: Any) -> "CleanupStats":
        """Remove versions older than `older_than`, outside the newest `retain_versions`
        and among `versions` (each when given; two weeks old when none is), and every file
        only they reference, as pylance does. The latest version, tagged versions and the
        versions branches start from stay (a tagged old version is an error unless
        `error_if_tagged_old_versions=False`). Files no version references are removed
        only when 7 days old, or with `delete_unverified=True` (only when no writer is
        running). `delete_rate_limit` caps the deletes started per second (for stores that
        throttle them); `delete_concurrency` (pylance's) is accepted, deletes run 64 at a
        time."""
        unknown = set(kwargs) - {"delete_rate_limit", "delete_concurrency"}
        if unknown:
            raise TypeError(f"cleanup_old_versions() got unexpected arguments {sorted(unknown)}")
        return CleanupStats(*self._ds.cleanup_old_versions(_cleanup_args(
            older_than, retain_versions, versions, delete_unverified, error_if_tagged_old_versions,
            kwargs.get("delete_rate_limit"))))

    def explain_cleanup_old_versions(self, older_than: Optional[timedelta] = None,
                                     retain_versions: Optional[int] = None, *, delete_unverified: bool = False,
                                     error_if_tagged_old_versions: bool = True,
                                     delete_rate_limit: Optional[int] = None, versions: Optional[List[int]] = None,
                                     include_files: bool = False, max_files: int = 1000) -> "CleanupExplanation":
        """What `cleanup_old_versions` with these arguments would remove, without removing
        anything: the statistics, the branches whose starting versions stay, and (with
        `include_files`) up to `max_files` of the files."""
        if max_files <= 0:
            raise ValueError("max_files must be positive")
        read_version, stats, files, branches = self._ds.explain_cleanup(_cleanup_args(
            older_than, retain_versions, versions, delete_unverified, error_if_tagged_old_versions))
        shown = [CleanupCandidateFile(path, kind, unverified, size)
                 for path, kind, unverified, size in files[:max_files]] if include_files else []
        return CleanupExplanation(
            read_version=read_version, stats=CleanupStats(*stats), candidate_files=shown,
            candidate_files_truncated=include_files and len(files) > max_files, candidate_file_limit=max_files,
            referenced_branches=[CleanupReferencedBranch(name, version, False) for name, version in branches],
            warnings=[])

    @property
    def optimize(self) -> "DatasetOptimizer":
        """Table maintenance, as pylance's `ds.optimize` (`compact_files`)."""
        return DatasetOptimizer(self)

    def restore(self) -> None:
        """Commit this (checked-out) version as the newest, as pylance's `restore()`; this
        object moves to the new version. A commit made since the latest version was read is
        a conflict, not something restore undoes silently."""
        self._ds = self._ds.restore()

    def checkout_version(self, version: Union[int, str, Tuple[Optional[str], Optional[int]]]) -> "LanceDataset":
        """Another version of this table, opened with the same storage options: a number
        (on this dataset's branch), a tag, or `(branch, version)` (branch None or "main":
        the main line; version None: the branch's latest)."""
        return LanceDataset(self._ds.checkout(version))

    @property
    def branches(self) -> "Branches":
        """The table's branches, as pylance's `ds.branches` (`list()`, `list_ordered()`,
        `delete(name)`)."""
        return Branches(self)

    @property
    def branch(self) -> Optional[str]:
        """The branch this version is on (None: the main line)."""
        return self._ds.branch

    def create_branch(self, branch: str, reference: Union[int, str, Tuple[Optional[str], Optional[int]], None] = None,
                      storage_options: Optional[Dict[str, str]] = None) -> "LanceDataset":
        """Create branch `branch` starting at `reference` (a version of this dataset's
        branch, a tag, `(branch, version)`, or None for this version) and open it. As in
        pylance, a branch is a shallow clone kept in `<root>/tree/<branch>` plus its
        description in `_refs/branches/`; commits to the returned dataset (or to its
        `uri`) go on the branch, and either library reads the other's branches. The branch
        lives in the table's store, reached with this dataset's storage options
        (`storage_options` is taken for pylance's signature)."""
        return LanceDataset(self._ds.create_branch(branch, reference))

    def shallow_clone(self, target_path: Union[str, os.PathLike], reference: Union[int, str, None] = None,
                      storage_options: Optional[Dict[str, str]] = None, **kwargs: Any) -> "LanceDataset":
        """A new table at `target_path` made from a version of this one (`reference`: a
        version number, a tag, or None for this version) without copying anything: its
        manifest refers to this table's files through a base path (pylance's
        `shallow_clone`). Later writes to the clone go to its own directory. The source's
        files must outlive the clone: cleaning up the versions the clone refers to breaks it."""
        return self._clone(target_path, reference, storage_options, True)

    def deep_clone(self, target_path: Union[str, os.PathLike], reference: Union[int, str, None] = None,
                   storage_options: Optional[Dict[str, str]] = None, **kwargs: Any) -> "LanceDataset":
        """A new table at `target_path` with copies of every file a version of this one
        uses (data, deletion and index files), standing alone (pylance's `deep_clone`)."""
        return self._clone(target_path, reference, storage_options, False)

    def _clone(self, target: Any, reference: Union[int, str, None], storage_options: Optional[Dict[str, str]],
               shallow: bool) -> "LanceDataset":
        source = self if reference is None else self.checkout_version(reference)
        return LanceDataset(source._ds.clone_to(os.fspath(target), shallow, storage_options))

    def count_rows(self, filter: Optional[str] = None, **kwargs: Any) -> int:
        """Rows of this version (matching `filter`). Without a filter, deleted rows are
        subtracted without reading any data page. `kwargs` are the scanner's (as in
        pylance: `use_scalar_index=False`, `fragments`, ...)."""
        if kwargs:
            return self.scanner(filter=filter, **kwargs).count_rows()
        if filter is None:
            filter = (self._default_scan_options or {}).get("filter")
        return self._ds.count_rows(None, _filter_text(filter))

    def delete(self, predicate: str, *, conflict_retries: int = 10, **kwargs: Any) -> Dict[str, int]:
        """Delete the rows matching `predicate` (SQL, e.g. "id > 10 AND name LIKE 'a%'"),
        committing a new version; this object moves to it, as in pylance. A commit that
        loses to another writer's change of the same fragments is re-run against the new
        version, up to `conflict_retries` times (`CommitConflictError` after that).
        Returns `{"num_deleted_rows": n}`, as pylance does."""
        self._ds, count = self._ds.delete(_filter_text(predicate), conflict_retries)
        return {"num_deleted_rows": count}

    def update(self, updates: Dict[str, str], where: Optional[str] = None, *, conflict_retries: int = 10,
               **kwargs: Any) -> Dict[str, int]:
        """Set columns on the rows matching `where` (all rows when None), as pylance's
        `update`: `updates` maps column names (nested fields with dots) to SQL value
        expressions over the old row ("x * 2", "upper(name)", "CASE WHEN ... END"). The
        rows are rewritten into new fragments and deleted where they were, in one version;
        this object moves to it. A concurrent commit to the same fragments makes it re-run
        against the new version, up to `conflict_retries` times. Returns
        `{"num_rows_updated": n}`."""
        unknown = set(kwargs) - {"retry_timeout", "data_storage_version"}
        if unknown:
            raise TypeError(f"update() got unexpected arguments {sorted(unknown)}")
        if not isinstance(updates, dict) or not updates:
            raise InvalidInputError("updates must be a non-empty dict of column name -> SQL expression")
        for k, v in updates.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise InvalidInputError(f"updates maps column names to SQL expressions (strings), got {k!r}: {v!r}")
        where = _filter_text(where)
        if where is not None and not isinstance(where, str):
            raise InvalidInputError("where must be a SQL string or a pyarrow compute expression")
        self._ds, n = self._ds.update(list(updates.items()), where, int(conflict_retries))
        return {"num_rows_updated": n}

    def merge_insert(self, on: Optional[Union[str, List[str]]] = None) -> "MergeInsertBuilder":
        """Upsert, as pylance's `merge_insert`: match source rows to this table's rows on
        the key column(s) `on` (the table's unenforced primary key when None), then say
        what to do with the builder's clauses and `execute(data)`, e.g.
        `ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
        .execute(table)`."""
        if on is None:
            on = self._ds.primary_key()
            if not on:
                raise InvalidInputError("A merge insert operation requires join keys: specify `on` columns "
                                        "explicitly or configure a primary key in the dataset schema")
        return MergeInsertBuilder(self, on)

    @property
    def has_stable_row_ids(self) -> bool:
        """Whether the table keeps stable row ids (its manifest's feature flag)."""
        return self._ds.has_stable_row_ids

    @property
    def max_field_id(self) -> int:
        """The largest field id of the schema (-1 for none)."""
        return max(self.field_ids().values(), default=-1)

    def fragment_ids(self) -> List[int]:
        """The ids of this version's fragments, ascending, without opening them."""
        return sorted(f.fragment_id for f in self.get_fragments())

    def validate(self) -> None:
        """Check, as pylance's `validate()`, that this version holds together: fragment ids
        unique and ascending, every data file present with its fragment's row count, field
        ids not repeated, deletions within the fragments, index segments unique. Raises
        `CorruptFileError` naming the file and what is wrong."""
        self._ds.validate()

    def checkout_latest(self) -> None:
        """Move this object to the table's latest version."""
        self._ds = self._ds.checkout(self._ds.latest_version())

    def insert(self, data: Any, *, mode: str = "append", **kwargs: Any) -> None:
        """Write `data` into this table (`mode` "append" or "overwrite"), as pylance's
        `insert`: `write_dataset` with this table's storage options; this object moves to
        the new version."""
        from .write import write_dataset

        if mode not in ("append", "overwrite"):
            raise InvalidInputError(f"insert's mode must be 'append' or 'overwrite', got {mode!r}")
        kwargs.setdefault("storage_options", self._ds.storage_options())
        self._ds = write_dataset(data, self.uri, mode=mode, **kwargs)._ds

    def truncate_table(self) -> None:
        """Remove every row, keeping the schema: one new version (a Delete of every
        fragment, as pylance records it)."""
        self.delete("true")

    @property
    def primary_key(self) -> List[str]:
        """The columns of the table's unenforced primary key (field metadata
        `lance-schema:unenforced-primary-key`), in key order; empty when it has none."""
        return self._ds.primary_key()

    def get_fragments(self) -> List[LanceFragment]:
        return [LanceFragment(self, fragment=f) for f in self._ds.fragments()]

    def get_fragment(self, fragment_id: int) -> Optional[LanceFragment]:
        for f in self._ds.fragments():
            if f["id"] == fragment_id:
                return LanceFragment(self, fragment=f)
        return None

    def scanner(
        self,
        columns: Optional[Union[List[str], Dict[str, str]]] = None,
        filter: Optional[str] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        nearest: Optional[Dict[str, Any]] = None,
        batch_size: Optional[int] = None,
        batch_size_bytes: Optional[int] = None,
        batch_readahead: Optional[int] = None,
        fragment_readahead: Optional[int] = None,
        scan_in_order: Optional[bool] = None,
        fragments: Optional[List[LanceFragment]] = None,
        *,
        with_row_id: Optional[bool] = None,
        with_row_address: Optional[bool] = None,
        io_buffer_size: Optional[int] = None,
        include_deleted_rows: Optional[bool] = None,
        **hints: Any,
    ) -> LanceScanner:
        """A scan of this version, with pylance's arguments. `columns` is a list of names
        (dotted for fields of structs) or a dict of output names to SQL expressions;
        `filter` is SQL (comparisons, AND/OR/NOT, IN, BETWEEN, IS [NOT] NULL, LIKE,
        arithmetic, CAST); ``io_buffer_size`` bounds the bytes read ahead (64 MiB).
        Filters on columns with a BTREE, BITMAP or LABEL_LIST index are answered from the index
        (``use_scalar_index=False`` scans instead).
        `nearest={"column", "q", "k", "metric", "distance_range", ...}` finds the k rows
        nearest to `q` (several at once when `q` is 2-D), with `_distance`; a filter
        applies to the k nearest unless ``prefilter=True`` (then the k nearest that pass).
        Tuning hints pylance takes (`batch_readahead`, `use_stats`, ...) are accepted and
        have no effect; full-text search is not supported."""
        defaults = self._default_scan_options
        if defaults and not hints.pop("_with_defaults", False):
            # The dataset's default scan options, where the call leaves an argument unset.
            given = dict(columns=columns, filter=filter, limit=limit, offset=offset, nearest=nearest,
                         batch_size=batch_size, batch_size_bytes=batch_size_bytes, batch_readahead=batch_readahead,
                         fragment_readahead=fragment_readahead, scan_in_order=scan_in_order, fragments=fragments,
                         with_row_id=with_row_id, with_row_address=with_row_address, io_buffer_size=io_buffer_size,
                         include_deleted_rows=include_deleted_rows)
            merged = {**defaults, **{k: v for k, v in given.items() if v is not None}, **hints}
            return self.scanner(**merged, _with_defaults=True)
        _check_hints(hints)
        if include_deleted_rows and not with_row_id:
            # As pylance: deleted rows are told apart by their NULL _rowid.
            raise InvalidInputError("include_deleted_rows is set but with_row_id is false")
        if nearest is not None:
            nearest = _nearest.normalize(nearest, hints.get("prefilter"),
                                         not hints.get("disable_scoring_autoprojection"), limit)
        ids = [f.fragment_id for f in fragments] if fragments is not None else None
        # pylance's late_materialization: a bool, or the columns to read late (any: on).
        late = hints.get("late_materialization")
        use_index = hints.get("use_scalar_index")
        return LanceScanner(self, columns, limit, offset, batch_size, bool(with_row_id), bool(with_row_address), ids,
                            io_buffer_size, filter, include_deleted=bool(include_deleted_rows),
                            late_materialization=late is None or bool(late),
                            use_scalar_index=use_index is None or bool(use_index), nearest=nearest,
                            blob_handling=hints.get("blob_handling"), order_by=hints.get("order_by"),
                            strict_batch_size=bool(hints.get("strict_batch_size")), batch_size_bytes=batch_size_bytes)

    def to_table(self, columns: Optional[Union[List[str], Dict[str, str]]] = None, filter: Optional[str] = None,
                 limit: Optional[int] = None, offset: Optional[int] = None, nearest: Optional[Dict[str, Any]] = None,
                 batch_size: Optional[int] = None, *args: Any, **kwargs: Any) -> pa.Table:
        """The rows of this version (see `scanner` for the arguments)."""
        return self.scanner(columns, filter, limit, offset, nearest, batch_size, *args, **kwargs).to_table()

    def to_batches(self, columns: Optional[Union[List[str], Dict[str, str]]] = None, filter: Optional[str] = None,
                   limit: Optional[int] = None, offset: Optional[int] = None, nearest: Optional[Dict[str, Any]] = None,
                   batch_size: Optional[int] = None, *args: Any, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        """Stream the rows of this version (see `scanner` for the arguments)."""
        return self.scanner(columns, filter, limit, offset, nearest, batch_size, *args, **kwargs).to_batches()

    def to_pandas(self, columns: Optional[Union[List[str], Dict[str, str]]] = None, filter: Optional[str] = None,
                  limit: Optional[int] = None, offset: Optional[int] = None, nearest: Optional[Dict[str, Any]] = None,
                  batch_size: Optional[int] = None, *args: Any, **kwargs: Any) -> "Any":
        """The rows as a pandas DataFrame; an index written from pandas comes back as the
        index, as in pylance. `blob_mode` ("lazy", "bytes", "descriptions") says what blob
        columns hold (see `LanceScanner.to_pandas`); keyword arguments `scanner` does not
        take go to `pyarrow.Table.to_pandas`."""
        names = set(inspect.signature(LanceDataset.scanner).parameters)
        scan = {k: v for k, v in kwargs.items() if k in names}
        convert = {k: v for k, v in kwargs.items() if k not in names}
        return self.scanner(columns, filter, limit, offset, nearest, batch_size, *args, **scan).to_pandas(**convert)

    def _take_addresses(self, addresses: List[int], columns: Any, with_row_id: bool = False,
                        with_row_address: bool = False, by: str = "address") -> pa.Table:
        names, projection = _take_columns(columns)
        batch = pa.record_batch(self._ds.take(addresses, names, projection, bool(with_row_id),
                                              bool(with_row_address), by))
        return pa.Table.from_batches([batch])

    def take(self, indices: Any, columns: Optional[Union[List[str], Dict[str, str]]] = None,
             with_row_id: bool = False, with_row_address: bool = False) -> pa.Table:
        """Rows `indices` of this version (counted over the dataset's rows as they are now,
        deleted rows not counted), in the order given, repeats included. `indices` is a
        list, a numpy array or a pyarrow array; an index past the last row is an error.
        `columns` as in `to_table` (names, or a dict of SQL expressions)."""
        return self._take_addresses(_indices(indices, "indices"), columns, with_row_id, with_row_address, "index")

    def take_rows(self, row_ids: Any, columns: Optional[Union[List[str], Dict[str, str]]] = None,
                  with_row_id: bool = False, with_row_address: bool = False) -> pa.Table:
        """Rows by row id (`_rowid`: stable row ids when the dataset has them, else row
        addresses), in the order given. Ids no visible row has (deleted, or never
        written) are left out, as pylance does."""
        return self._take_addresses(_indices(row_ids, "row ids"), columns, with_row_id, with_row_address, "row_id")

    def _take_rows(self, row_ids: Any, columns: Optional[Union[List[str], Dict[str, str]]] = None,
                   **kwargs: Any) -> pa.Table:
        """pylance's name for `take_rows`."""
        return self.take_rows(row_ids, columns, **kwargs)

    def take_blobs(self, blob_column: str, ids: Any = None, addresses: Any = None, indices: Any = None, *,
                   buffer_size: int = 512 * 1024) -> List[Optional["BlobFile"]]:
        """The blobs of `blob_column` as file objects (`lance_core.blob.BlobFile`), one per
        row asked for, in that order (None for a NULL blob). Exactly one of `ids` (row
        ids), `addresses` (row addresses) or `indices` (offsets among the visible rows).
        Nothing is read until a file is read; `buffer_size` bytes are read ahead by
        sequential reads."""

        rows, by = _blob_rows("take_blobs", ids, addresses, indices)
        readers = _lance_core._take_blobs(self._ds, blob_column, rows, by)
        return [BlobFile(r, buffer_size) if r is not None else None for r in readers]

    def read_blobs(self, blob_column: str, ids: Any = None, addresses: Any = None, indices: Any = None, *,
                   io_buffer_size: Optional[int] = None,
                   preserve_order: Optional[bool] = None) -> List[Tuple[int, Optional[bytes]]]:
        """The whole bytes of the blobs of `blob_column` for the rows asked for (exactly one
        of `ids`, `addresses`, `indices`, as in `take_blobs`): `(row_address, bytes)` per
        row, in the order asked (None for a NULL blob, b"" for an empty one). The reads of
        one object are made together. `io_buffer_size` and `preserve_order` are accepted
        for pylance's signature; the order is always kept."""
        rows, by = _blob_rows("read_blobs", ids, addresses, indices)
        return _lance_core._read_blobs(self._ds, blob_column, rows, by)

    def read_blob_ranges(self, blob_column: str, requests: Sequence[Tuple[int, int, int]], *, selector: str,
                         io_buffer_size: Optional[int] = None,
                         preserve_order: Optional[bool] = None) -> List[Tuple[int, int, Optional[bytes]]]:
        """Byte ranges of blobs: each request is `(row, offset, length)`, the row a row id,
        address or index as `selector` ("ids", "addresses", "indices") says. One
        `(request_index, row_address, bytes)` per request, in request order (None for a
        NULL blob); a range past the blob's end is an error."""
        by = {"ids": "row_id", "addresses": "address", "indices": "index"}.get(selector)
        if by is None:
            raise InvalidInputError(f"selector must be 'ids', 'addresses' or 'indices', not {selector!r}")
        checked = []
        for r in requests:
            if len(r) != 3 or any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in r):
                raise InvalidInputError(f"a blob range request is (row, offset, length) of non-negative "
                                        f"integers, not {r!r}")
            checked.append(tuple(r))
        return _lance_core._read_blob_ranges(self._ds, blob_column, checked, by)

    def head(self, num_rows: int, **kwargs: Any) -> pa.Table:
        """The first `num_rows` rows (`kwargs` as in `to_table`)."""
        return self.to_table(limit=num_rows, **kwargs)

    def sample(self, num_rows: int, columns: Optional[Union[List[str], Dict[str, str]]] = None,
               randomize_order: bool = True, **kwargs: Any) -> pa.Table:
        """`num_rows` rows picked at random without repeats (all of them when the dataset
        has fewer), in random order unless `randomize_order=False`."""
        import random

        total = self.count_rows()
        picked = random.sample(range(total), min(num_rows, total))
        if not randomize_order:
            picked.sort()
        return self.take(picked, columns, **kwargs)

    def merge(self, data_obj: Any, left_on: str, right_on: Optional[str] = None,
              schema: Optional[pa.Schema] = None) -> None:
        """Add the other columns of `data_obj` (anything `write_dataset` takes), matched to
        this dataset's rows by `left_on` = `right_on` (the same name when None), as
        pylance's `merge`: rows without a match get nulls; each key may appear once in
        `data_obj`. One new version (new data files beside the old ones), which this
        object moves to."""
        matched, schema = _merge_matcher(self, data_obj, left_on, right_on, schema)
        self.add_columns(matched, read_columns=[left_on], output_schema=schema)

    def add_columns(
        self,
        value_func: Any,
        read_columns: Optional[List[str]] = None,
        reader_schema: Optional[pa.Schema] = None,
        batch_size: Optional[int] = None,
        *,
        output_schema: Optional[pa.Schema] = None,
    ) -> None:
        """Add columns to every row, as pylance's `add_columns`; one new version is
        committed and this object moves to it. `value_func` is one of:

        - a function from a batch of `read_columns` to a batch (or table, or dict of
          arrays) of the new columns, written as new data files (no file is rewritten);
        - a dict of new column names to SQL expressions over the existing columns
          (`{"total": "price * qty"}`), computed in Rust, also as new data files;
        - a `pyarrow.Field`, a list of them or a `pyarrow.Schema`: all-null columns, added
          to the schema only (no data is written);
        - the new columns' rows: a reader, a table, or an iterator of batches with
          `reader_schema`, one row per row of the dataset in order (a table with deleted
          rows is refused: its physical rows have no place in such a stream).
        """
        if isinstance(value_func, (pa.Field, pa.Schema)) or (
                isinstance(value_func, list) and value_func and all(isinstance(f, pa.Field) for f in value_func)):
            fields = [value_func] if isinstance(value_func, pa.Field) else list(value_func)
            self._ds = self._ds.add_null_columns(pa.schema(fields))
            return
        if isinstance(value_func, dict):
            value_func, read_columns, output_schema = _sql_columns(self, value_func, read_columns, output_schema)
        elif is_row_stream(value_func):
            return self._add_column_rows(row_runs(value_func, reader_schema))
        elif not callable(value_func):
            raise InvalidInputError("add_columns takes a function, a dict of SQL expressions, or pyarrow "
                                    f"fields / a schema; got {type(value_func).__name__}")

        fragments, schema = [], None
        checkpoint = value_func.cache if isinstance(value_func, BatchUDF) else None
        if checkpoint is not None and output_schema is None:
            # A fragment kept from an earlier run is not computed again: the new columns'
            # schema comes from a first call, as pylance infers it.
            output_schema = value_func.output_schema or _first_output(self, value_func, read_columns)
        # The new files are removed unless the commit happens (the function raised, a
        # concurrent writer won); with a checkpoint they stay, for the next run.
        with _lance_core._StagedFiles(self.uri, self._ds.storage_options()) as staged:
            for frag in self.get_fragments():
                meta = None if checkpoint is None else _written_before(checkpoint, frag)
                if meta is not None:
                    merged = frag._merged_schema(output_schema)
                else:
                    meta, merged = frag.merge_columns(value_func, read_columns, batch_size, output_schema=output_schema,
                                                      _checkpointed=checkpoint is not None)
                    if checkpoint is None:
                        staged.add_fragments([meta.data], last_file_only=True)
                    else:
                        checkpoint.insert_fragment(frag.fragment_id, json.dumps(meta.to_json()))
                schema = merged.to_pyarrow()
                fragments.append(meta)
                if output_schema is None:
                    output_schema = pa.schema(list(schema)[len(self.schema):])
            if schema is None:
                if output_schema is None:
                    raise InvalidInputError("adding columns to a dataset without rows needs output_schema")
                schema = pa.schema(list(self.schema) + list(output_schema))
            self._ds = _commit_native(self.uri, LanceOperation.Merge(fragments, schema), read_version=self.version,
                                      storage_options=self._ds.storage_options())
        if checkpoint is not None:
            checkpoint.cleanup()

    def _add_column_rows(self, runs: RowRuns) -> None:
        """`add_columns` of a stream of rows: each fragment's run as its new data file."""
        fragments = self.get_fragments()
        if any(f.count_rows() != f.physical_rows for f in fragments):
            raise InvalidInputError(f"{self.uri}: new columns given as rows need a table without deleted rows "
                                    f"(compact it first, or give a function of the existing columns)")
        metas, schema = [], pa.schema(list(self.schema) + list(runs.schema))
        with _lance_core._StagedFiles(self.uri, self._ds.storage_options()) as staged:
            for frag in fragments:
                meta, _ = frag._write_new_columns(runs, None, finish=False)
                staged.add_fragments([meta.data], last_file_only=True)
                metas.append(meta)
            runs.finish(f"the table {self.uri}")
            self._ds = _commit_native(self.uri, LanceOperation.Merge(metas, schema), read_version=self.version,
                                      storage_options=self._ds.storage_options())

    def __len__(self) -> int:
        return self.count_rows()

    def __repr__(self) -> str:
        return f"LanceDataset(uri={self.uri!r}, version={self.version})"


def _version_row(version: int, nanos: int, metadata: Dict[str, str]) -> Dict[str, Any]:
    """A row of `versions()`: the commit time local and naive, computed with the same
    (float) arithmetic as pylance, so both give the very same datetime."""
    ts = datetime.fromtimestamp(nanos // 1e9) + timedelta(microseconds=(nanos % 1e9) // 1e3)
    return {"version": version, "timestamp": ts, "metadata": metadata}


def _first_output(ds: "LanceDataset", udf: BatchUDF, columns: Optional[List[str]]) -> Optional[pa.Schema]:
    """The schema of `udf`'s output for the first row of `ds` (None: no rows)."""
    first = next(iter(ds.to_batches(columns=columns, limit=1)), None)
    return None if first is None else udf(first).schema


def _written_before(checkpoint: Any, frag: LanceFragment) -> Optional[FragmentMetadata]:
    """The metadata a checkpointed add_columns run kept for `frag` (its files and one new
    one), if it was written for the fragment as it is now."""
    kept = checkpoint.get_fragment(frag.fragment_id)
    if kept is None:
        return None
    meta = FragmentMetadata.from_json(kept)
    now = frag.metadata
    if meta.files[:-1] != now.files or meta.physical_rows != now.physical_rows:
        return None
    return meta


def _under_dataset_lock(method: Callable) -> Callable:
    """A write method of `LanceDataset` run inside the dataset's `commit_lock` (from
    `dataset(commit_lock=...)`), given the version it is about to commit."""
    import functools

    @functools.wraps(method)
    def run(self: "LanceDataset", *args: Any, **kwargs: Any) -> Any:
        if self._commit_lock is None:
            return method(self, *args, **kwargs)
        return run_under_lock(self._commit_lock, self.latest_version + 1, self.uri,
                              lambda: method(self, *args, **kwargs))
    return run


for _name in ("delete", "update", "insert", "add_columns", "drop_columns", "alter_columns", "merge", "restore",
              "create_index", "create_scalar_index", "add_bases", "update_config", "delete_config_keys", "update_metadata",
              "update_schema_metadata", "update_field_metadata", "truncate_table"):
    if hasattr(LanceDataset, _name):
        setattr(LanceDataset, _name, _under_dataset_lock(getattr(LanceDataset, _name)))


def _transaction_from(row: Any) -> Optional[Transaction]:
    """A transaction as the core reads it, as a `Transaction`."""
    if row is None:
        return None
    read_version, uuid, kind, properties, fields = row
    return Transaction(read_version, _operation_from(kind, fields), uuid, properties)


class DatasetStats:
    """`ds.stats`, as in pylance."""

    def __init__(self, dataset: "LanceDataset"):
        self._dataset = dataset

    def index_stats(self, name: str) -> Dict[str, Any]:
        return self._dataset.index_statistics(name)

    def data_stats(self) -> "DataStatistics":
        """Bytes each field takes in the data files (its columns' page buffers; a struct
        stored through its children holds none itself), every field depth-first, as
        pylance's `data_stats`."""
        return DataStatistics([FieldStatistics(fid, n) for fid, n in self._dataset._ds.field_bytes_on_disk()])

    def dataset_stats(self, max_rows_per_group: int = 1024) -> Dict[str, int]:
        """Deleted rows, fragments, and fragments too small to fill one group of
        `max_rows_per_group` rows (worth compacting), as pylance counts them."""
        fragments = self._dataset._ds.fragments()
        return {"num_deleted_rows": sum(f["num_deletions"] for f in fragments),
                "num_fragments": len(fragments),
                "num_small_files": sum(f["physical_rows"] < max_rows_per_group for f in fragments)}


def _cleanup_args(older_than: Optional[timedelta], retain_versions: Optional[int], versions: Optional[List[int]],
                  delete_unverified: bool, error_if_tagged_old_versions: bool,
                  delete_rate_limit: Optional[int] = None) -> Tuple[Any, ...]:
    """A cleanup's arguments as the binding takes them: (before, in ns since the epoch;
    how many newest stay; delete_unverified; error_if_tagged_old_versions; the versions
    that may go; deletes per second at most). Two weeks when no choice of versions is
    given, as in pylance."""
    if retain_versions is not None and retain_versions < 1:
        raise InvalidInputError("retain_versions must be positive")
    if delete_rate_limit is not None and int(delete_rate_limit) < 1:
        raise InvalidInputError("delete_rate_limit must be positive (deletes per second)")
    if older_than is None and retain_versions is None and versions is None:
        older_than = timedelta(days=14)
    before = None if older_than is None else time.time_ns() - int(older_than.total_seconds() * 1e9)
    return (before, retain_versions, bool(delete_unverified), bool(error_if_tagged_old_versions),
            None if versions is None else [int(v) for v in versions],
            None if delete_rate_limit is None else int(delete_rate_limit))


def dataset(
    uri: Optional[Union[str, os.PathLike]] = None,
    version: Optional[Union[int, str]] = None,
    storage_options: Optional[Dict[str, str]] = None,
    asof: Optional[Union[datetime, str]] = None,
    *,
    namespace_client: Any = None,
    table_id: Optional[List[str]] = None,
    **kwargs: Any,
) -> LanceDataset:
    """Open a Lance dataset: the latest version, a version number, or a tag name; with
    `asof` (a datetime, naive ones local as in pylance, or an ISO string), the newest
    version committed at or before it. Instead of `uri`, a catalog's table:
    `namespace_client` (a `lance_core.namespace` namespace) and its `table_id`.

    `session` (a `lance_core.Session`) holds the caches of file metadata and index data
    the dataset reads; datasets opened with the same session share them. Without one,
    `index_cache_size_bytes` or `metadata_cache_size_bytes` make a session of those sizes;
    with neither, the dataset shares the process's session (unlike pylance, which gives
    each open fresh caches: reopening a table, as each Spark task does, then reads no
    file footer twice). `index_cache_size` (pylance's entry count) is taken and ignored."""
    if check_target(uri, namespace_client, table_id):
        uri, storage_options = table_location(namespace_client, table_id, "open", storage_options)
    session = kwargs.get("session")
    if session is None and (kwargs.get("index_cache_size_bytes") is not None
                            or kwargs.get("metadata_cache_size_bytes") is not None):
        session = _lance_core.Session(kwargs.get("index_cache_size_bytes"), kwargs.get("metadata_cache_size_bytes"))
    elif session is not None and not isinstance(session, _lance_core.Session):
        raise InvalidInputError(f"session must be a lance_core.Session, got {type(session).__name__}")
    if version is not None and not isinstance(version, (int, str)):
        raise InvalidInputError(f"version must be an int or a tag name, got {type(version).__name__}")
    if asof is not None:
        if version is not None:
            raise InvalidInputError("give version or asof, not both")
        when = datetime.fromisoformat(asof) if isinstance(asof, str) else asof
        latest = LanceDataset(_lance_core._Dataset.open(_uri(uri), None, storage_options))
        # versions() gives naive local times (as pylance); compare in the same terms.
        when = when.astimezone().replace(tzinfo=None) if when.tzinfo else when
        older = [v["version"] for v in latest.versions() if v["timestamp"] <= when]
        if not older:
            raise InvalidInputError(f"{_uri(uri)}: no version was committed at or before {asof}")
        version = max(older)
    ds = LanceDataset(_lance_core._Dataset.open(_uri(uri), version, storage_options, session))
    ds._default_scan_options = kwargs.get("default_scan_options") or None
    ds._commit_lock = kwargs.get("commit_lock")
    return ds
