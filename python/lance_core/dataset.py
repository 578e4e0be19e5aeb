"""Datasets, scanners and fragments with pylance's names, over the Rust core."""

from __future__ import annotations

import functools
import inspect
import os
import random
from datetime import datetime
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import pyarrow as pa
import pyarrow.dataset as pa_ds

from . import _lance_core, _nearest
from ._inputs import as_stream
from .bases import DatasetBasePath, bases_arg, targets_arg
from .columns import TableColumns
from .indices import TableIndices, ivf_params, scalar_index_params  # noqa: F401
from .table_config import AutoCleanupConfig, TableConfig, auto_cleanup_keys  # noqa: F401
from .table_target import check_target, table_location
from .errors import DatasetNotFoundError, InvalidInputError
from .fragment_metadata import (LANCE_COMMIT_MESSAGE_KEY, DataFile, FragmentMetadata, LanceOperation,  # noqa: F401
                                UpdateBases, _commit_native, _operation_from, _properties)
from .merge import MergeInsertBuilder
from .optimize import DatasetOptimizer
from .fragment import (_ROW_KEYS, FragmentSession, LanceFragment, _conform, _merge_matcher,  # noqa: F401
                       _sql_columns, _uri)
from .scanner import (_HINTS, ColumnOrdering, LanceScanner, _blob_columns, _check_hints,  # noqa: F401
                      _cut_by_bytes, _filter, _indices, _orderings, _predicate)
from .results import (CleanupCandidateFile, CleanupExplanation, CleanupReferencedBranch,  # noqa: F401
                      CleanupStats, CompactionMetrics, DataStatistics, FieldStatistics, IndexDescription,
                      IndexSegmentDescription, IOStats, Transaction)
from .refs import Branches, Tags  # noqa: F401
from .udf import BatchUDF  # noqa: F401
from .versions import TableVersions

from .blob import BlobFile
from .commit_lock import run_under_lock, under_commit_lock
from .delta import DatasetDelta, delta
from .schema import LanceSchema
from .sql import SqlQueryBuilder


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


class LanceDataset(TableConfig, TableIndices, TableColumns, TableVersions, pa_ds.Dataset):
    """A Lance dataset at one version: `LanceDataset(uri, version=None,
    storage_options=None)` opens one, as pylance's (`lance_core.dataset(...)` does the
    same). Picklable: a pickle reopens the same version with the same storage options.

    A `pyarrow.dataset.Dataset`, as pylance's is, so that engines that query pyarrow
    datasets (duckdb, polars' `scan_pyarrow_dataset`) query it, pushing their column
    selections and filters into `scanner()`. Every method pyarrow's class defines is
    answered here: pyarrow's own would reach a C++ dataset this object does not have.

    The methods of whole concerns come from their modules, as the binding's `dataset/`
    files split them: config and metadata (`table_config`), indices (`indices`), column
    changes (`columns`), versions, tags, branches and cleanup (`versions`)."""

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
        where = _predicate(expression, "filter")
        earlier = _filter(defaults.get("filter"))
        view = LanceDataset(self._ds)
        view._default_scan_options = {**defaults, "filter": where if earlier is None else earlier & where}
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
    def stats(self) -> "DatasetStats":
        return DatasetStats(self)

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

    @property
    def optimize(self) -> "DatasetOptimizer":
        """Table maintenance, as pylance's `ds.optimize` (`compact_files`)."""
        return DatasetOptimizer(self)

    def count_rows(self, filter: Optional[str] = None, **kwargs: Any) -> int:
        """Rows of this version (matching `filter`). Without a filter, deleted rows are
        subtracted without reading any data page. `kwargs` are the scanner's (as in
        pylance: `use_scalar_index=False`, `fragments`, ...)."""
        if kwargs:
            return self.scanner(filter=filter, **kwargs).count_rows()
        if filter is None:
            filter = (self._default_scan_options or {}).get("filter")
        return self._ds.count_rows(None, _filter(filter))

    def delete(self, predicate: str, *, conflict_retries: int = 10, **kwargs: Any) -> Dict[str, int]:
        """Delete the rows matching `predicate` (SQL, e.g. "id > 10 AND name LIKE 'a%'"),
        committing a new version; this object moves to it, as in pylance. A commit that
        loses to another writer's change of the same fragments is re-run against the new
        version, up to `conflict_retries` times (`CommitConflictError` after that).
        Returns `{"num_deleted_rows": n}`, as pylance does."""
        self._ds, count = self._ds.delete(_predicate(predicate, "delete"), conflict_retries)
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
        self._ds, n = self._ds.update(list(updates.items()), _filter(where), int(conflict_retries))
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

    def insert(self, data: Any, *, mode: str = "append", **kwargs: Any) -> None:
        """Write `data` into this table (`mode` "append" or "overwrite"), as pylance's
        `insert`: `write_dataset` with this table's storage options; this object moves to
        the new version."""
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
                                         not hints.get("disable_scoring_autoprojection"), limit,
                                         fast_search=bool(hints.get("fast_search")))
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
        total = self.count_rows()
        picked = random.sample(range(total), min(num_rows, total))
        if not randomize_order:
            picked.sort()
        return self.take(picked, columns, **kwargs)

    def __len__(self) -> int:
        return self.count_rows()

    def __repr__(self) -> str:
        return f"LanceDataset(uri={self.uri!r}, version={self.version})"


def _under_dataset_lock(method: Callable) -> Callable:
    """A write method of `LanceDataset` run inside the dataset's `commit_lock` (from
    `dataset(commit_lock=...)`), given the version it is about to commit."""
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


def write_dataset(
    data: Any,
    uri: Optional[Union[str, os.PathLike, LanceDataset]] = None,
    schema: Optional[pa.Schema] = None,
    mode: str = "create",
    *,
    max_rows_per_file: int = 1024 * 1024,
    max_bytes_per_file: Optional[int] = None,
    data_storage_version: Optional[str] = None,
    enable_stable_row_ids: bool = False,
    storage_options: Optional[Dict[str, str]] = None,
    external_blob_mode: str = "reference",
    allow_external_blob_outside_bases: bool = False,
    blob_pack_file_size_threshold: Optional[int] = None,
    commit_message: Optional[str] = None,
    transaction_properties: Optional[Dict[str, str]] = None,
    progress: Any = None,
    max_rows_per_group: Optional[int] = None,
    auto_cleanup_options: Optional[Dict[str, int]] = None,
    enable_v2_manifest_paths: bool = True,
    commit_lock: Any = None,
    namespace_client: Any = None,
    table_id: Optional[List[str]] = None,
    initial_bases: Optional[List[DatasetBasePath]] = None,
    target_bases: Optional[List[str]] = None,
    session: Optional["_lance_core.Session"] = None,
) -> LanceDataset:
    """Write Arrow data as a Lance dataset (mode "create", "append" or "overwrite"), at
    `uri` or as the table `table_id` of the catalog `namespace_client` (declared there
    on create, as pylance does).

    Multi-base tables: a new table registers `initial_bases` (`DatasetBasePath`s; ids
    are assigned from 1); `target_bases` (names or paths of registered bases, or the
    table's own URI) are where the new data files go, in turn.

    Append creates the dataset when it does not exist; its data must have the dataset's
    columns and types. New datasets use file format 2.2 unless `data_storage_version`
    says "2.1".

    Blob columns (`lance_core.blob.blob_field`, or binary fields marked
    `lance-encoding:blob`) keep small values in the data file and larger ones in `.blob`
    files beside it. A blob given by URI is stored as a reference
    (`external_blob_mode="reference"`: below one of the table's base paths, or anywhere
    with `allow_external_blob_outside_bases`) or copied in (`"ingest"`).
    `blob_pack_file_size_threshold` caps the shared `.blob` files (1 GiB).

    `transaction_properties` (and `commit_message`, under pylance's key
    `LANCE_COMMIT_MESSAGE_KEY`) are recorded in the version's transaction. `progress` (a
    `lance_core.progress.FragmentWriteProgress`) hears of each fragment begun and
    completed. `max_rows_per_group` is taken for pylance's sake: 2.x files cut pages by size.
    `auto_cleanup_options` (an `AutoCleanupConfig`, on create and overwrite) makes every
    `interval`-th commit remove the versions older than `older_than_seconds`.
    `session` (a `lance_core.Session`): the caches the returned dataset uses.
    `commit_lock` (pylance's): a context manager factory called with the version about to
    be committed, held while the write commits (our commits need no lock: it serves
    callers who coordinate with other writers through it).
    """
    if check_target(uri, namespace_client, table_id):
        uri, storage_options = table_location(namespace_client, table_id, mode, storage_options)
    if isinstance(uri, LanceDataset):
        if storage_options is None:
            storage_options = uri._ds.storage_options() or None
        uri = uri.uri
    if not enable_v2_manifest_paths:
        raise InvalidInputError("lance_core names manifests the V2 way (pylance's default): "
                                "enable_v2_manifest_paths=False is not supported")
    if max_rows_per_file <= 0:
        raise InvalidInputError("max_rows_per_file must be positive")
    if blob_pack_file_size_threshold is not None and blob_pack_file_size_threshold <= 0:
        raise InvalidInputError("blob_pack_file_size_threshold must be positive")
    stream = as_stream(data, schema)
    written = under_commit_lock(commit_lock, uri, storage_options, lambda: LanceDataset(_lance_core._write_dataset(
        stream, os.fspath(uri), mode, max_rows_per_file, max_bytes_per_file,
        data_storage_version, enable_stable_row_ids, storage_options, external_blob_mode,
        allow_external_blob_outside_bases, blob_pack_file_size_threshold,
        _properties(transaction_properties, commit_message), progress,
        None if auto_cleanup_options is None else auto_cleanup_keys(auto_cleanup_options),
        bases_arg(initial_bases), targets_arg(target_bases),
    )))
    return written if session is None else LanceDataset(written._ds.with_session(session))
