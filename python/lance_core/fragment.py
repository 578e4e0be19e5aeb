"""Fragments: `LanceFragment` (a set of rows stored in one or more data files, as
`dataset.get_fragment(i)` returns it), repeated takes from one (`FragmentSession`), and
what writing new columns for a fragment shares with the dataset's (columns from SQL, rows
matched by a key)."""

from __future__ import annotations

import itertools
import os
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pa_ds

from ._inputs import as_stream
from .errors import InvalidInputError, LanceError
from .fragment_metadata import DataFile, FragmentMetadata, write_fragments
from .scanner import LanceScanner, _filter, _indices, _predicate
from .schema import LanceSchema
from .udf import BatchUDF, ProducerErrors, RowRuns, as_batch, is_row_stream, row_runs

if TYPE_CHECKING:
    from .dataset import LanceDataset


def _uri(uri: Union[str, os.PathLike]) -> str:
    return os.fspath(uri)


class LanceFragment(pa_ds.Fragment):
    """One fragment of a dataset: a set of rows stored in one or more data files.
    `LanceFragment(dataset, fragment_id)` as in pylance; picklable. A
    `pyarrow.dataset.Fragment`, as pylance's is, with every method of pyarrow's answered
    here."""

    # `LanceScanner.from_fragment` asks it for its own scanner.
    _builds_lance_scanners = True

    def __init__(self, dataset: "LanceDataset", fragment_id: Optional[int] = None, *,
                 fragment: Optional[Dict[str, Any]] = None):
        if fragment is None:
            if fragment_id is None:
                raise ValueError("Either fragment or fragment_id must be specified")
            found = dataset.get_fragment(fragment_id)
            if found is None:
                raise ValueError(f"Fragment id does not exist: {fragment_id}")
            fragment = found._info
        self._dataset = dataset
        self._info = fragment

    def __reduce__(self):
        return LanceFragment, (self._dataset, self.fragment_id)

    @staticmethod
    def create(
        dataset_uri: Union[str, os.PathLike, "LanceDataset"],
        data: Any,
        fragment_id: Optional[int] = None,
        schema: Optional[pa.Schema] = None,
        max_rows_per_group: Optional[int] = None,
        progress: Any = None,
        mode: str = "append",
        *,
        data_storage_version: Optional[str] = None,
        storage_options: Optional[Dict[str, str]] = None,
    ) -> FragmentMetadata:
        """Write `data` as one fragment of the dataset at `dataset_uri`, without committing
        it (commit with `LanceOperation.Append` or `Overwrite`). It carries `fragment_id`
        (0 when None) until the commit numbers it; `progress` hears of it."""
        frags = write_fragments(data, dataset_uri, schema, mode, max_rows_per_file=2 ** 63 - 1,
                                max_bytes_per_file=2 ** 63 - 1, progress=progress,
                                data_storage_version=data_storage_version, storage_options=storage_options,
                                fragment_id=fragment_id or 0)
        if not frags:
            raise InvalidInputError(f"{_uri(getattr(dataset_uri, 'uri', dataset_uri))}: "
                                    "no rows to write a fragment from")
        return frags[0]

    @staticmethod
    def create_from_file(filename: str, dataset: "LanceDataset", fragment_id: int) -> FragmentMetadata:
        """A fragment made of one Lance file already written under the dataset's `data/`
        directory with some of its columns (matched by name), without committing. It
        carries `fragment_id` until a commit numbers it."""
        file, rows = DataFile._described(dataset, filename)
        return FragmentMetadata(fragment_id, [file], rows)

    @property
    def fragment_id(self) -> int:
        return self._info["id"]

    @property
    def physical_rows(self) -> int:
        return self._info["physical_rows"]

    @property
    def num_deletions(self) -> int:
        return self._info["num_deletions"]

    @property
    def metadata(self) -> FragmentMetadata:
        """This fragment's metadata as it is committed (to pass to a `LanceOperation`)."""
        return FragmentMetadata._from_bytes(self._dataset._ds.fragment_metadata(self.fragment_id))

    @property
    def schema(self) -> pa.Schema:
        """The dataset's schema (every fragment has all its columns)."""
        return self._dataset.schema

    def data_files(self) -> List[DataFile]:
        return self.metadata.files

    def deletion_file(self) -> Optional[str]:
        """The path of this fragment's deletion file (relative to the table), if it has one."""
        deletion = self.metadata.deletion_file
        return None if deletion is None else deletion.path(self.fragment_id)

    def delete(self, predicate: Any) -> Optional[FragmentMetadata]:
        """Delete this fragment's rows matching `predicate` without committing: its new
        metadata (commit it with `LanceOperation.Delete`/`Update`), or None when no row is
        left."""
        data = self._dataset._ds.delete_in_fragment(self.fragment_id, _predicate(predicate, "delete"))
        return None if data is None else FragmentMetadata._from_bytes(data)

    def head(self, num_rows: int) -> pa.Table:
        return self.scanner(limit=num_rows).to_table()

    def delete_rows(self, offsets: Any) -> Optional[FragmentMetadata]:
        """Delete the rows at physical `offsets` of this fragment without committing (as
        `delete`, but the rows are named): the new metadata, or None when no row is left."""
        data = self._dataset._ds.delete_in_fragment(self.fragment_id, offsets=_indices(offsets, "offsets"))
        return None if data is None else FragmentMetadata._from_bytes(data)

    def validate(self) -> None:
        """Check this fragment's files: present, field ids in order, its row count
        (`LanceDataset.validate` checks every fragment and the rest)."""
        self._dataset._ds.validate(self.fragment_id)

    def merge(self, data_obj: Any, left_on: str, right_on: Optional[str] = None,
              schema: Optional[pa.Schema] = None) -> Tuple[FragmentMetadata, pa.Schema]:
        """Left-join `data_obj`'s other columns onto this fragment's rows by `left_on` =
        `right_on`, written as a new data file without committing: the fragment's new
        metadata and the dataset's new schema, to commit with `LanceOperation.Merge`."""
        matched, out_schema = _merge_matcher(self._dataset, data_obj, left_on, right_on, schema)
        # Every physical row's key (deleted rows too: a data file covers them all).
        keys = self.to_table(columns=[] if left_on in _ROW_KEYS else [left_on], include_deleted=True,
                             with_row_id=left_on == "_rowid", with_row_address=left_on == "_rowaddr")
        return self.merge_columns(matched(keys), output_schema=out_schema)

    def open_session(self, columns: Optional[Union[List[str], Dict[str, str]]] = None,
                     with_row_address: Optional[bool] = None) -> "FragmentSession":
        """A session for repeated takes of `columns` from this fragment (pylance's
        `FragmentSession`): `session.take(indices)`."""
        return FragmentSession(self, columns, bool(with_row_address))

    @property
    def physical_schema(self) -> pa.Schema:
        """The dataset's schema (pyarrow's name; every fragment has every column)."""
        return self._dataset.schema

    @property
    def partition_expression(self) -> pa_ds.Expression:
        """Always true: Lance fragments are not partitions."""
        return pa_ds.scalar(True)

    def to_pandas(self, columns: Optional[Union[List[str], Dict[str, str]]] = None, **kwargs) -> Any:
        return self.to_table(columns, **kwargs).to_pandas()

    def count_rows(self, filter: Any = None) -> int:
        return self._dataset._ds.count_rows(self.fragment_id, _filter(filter))

    def scanner(self, columns: Optional[List[str]] = None, **kwargs) -> LanceScanner:
        return LanceScanner(self._dataset, columns=columns, fragment_ids=[self.fragment_id], **kwargs)

    def to_table(self, columns: Optional[List[str]] = None, **kwargs) -> pa.Table:
        return self.scanner(columns, **kwargs).to_table()

    def to_batches(self, columns: Optional[List[str]] = None, **kwargs) -> Iterator[pa.RecordBatch]:
        return self.scanner(columns, **kwargs).to_batches()

    def take(self, indices: Any, columns: Optional[Union[List[str], Dict[str, str]]] = None,
             with_row_id: bool = False, with_row_address: bool = False) -> pa.Table:
        """Rows `indices` of this fragment (counted over its rows as they are now, deleted
        rows not counted), in the order given, repeats included."""
        addresses = self._dataset._ds.fragment_addresses(self.fragment_id, _indices(indices, "indices"))
        return self._dataset._take_addresses(addresses, columns, with_row_id, with_row_address)

    def merge_columns(
        self,
        value_func: Any,
        columns: Optional[List[str]] = None,
        batch_size: Optional[int] = None,
        reader_schema: Optional[pa.Schema] = None,
        *,
        output_schema: Optional[pa.Schema] = None,
        file_prefix: Optional[str] = None,
        _checkpointed: bool = False,
    ) -> Tuple["FragmentMetadata", "LanceSchema"]:
        """Compute new columns for this fragment and write them as a new data file.

        `value_func` gets batches of `columns` (all when None) covering every physical
        row, deleted ones included, and returns a batch (or table, or dict of arrays) of
        the new columns with as many rows (`lance_core.batch_udf` checks its outputs'
        schema). Or `value_func` is the new columns' rows themselves: a reader, a table,
        or an iterator of batches with `reader_schema`, one row per physical row. Returns
        the fragment's new metadata and the dataset's schema with the new columns; commit
        every fragment's metadata at once with
        `commit(uri, LanceOperation.Merge(fragments, schema), read_version=version)`.
        `file_prefix` starts the new file's name (a distributed job's token).
        """
        if is_row_stream(value_func):
            runs = row_runs(value_func, reader_schema)
            return self._write_new_columns(runs, file_prefix, finish=True)
        if isinstance(value_func, dict):
            value_func, columns, output_schema = _sql_columns(self._dataset, value_func, columns, output_schema)
        if isinstance(value_func, BatchUDF) and value_func.cache is not None and not _checkpointed:
            raise InvalidInputError("A checkpoint file cannot be used with merge_columns: it serves add_columns, "
                                    "which commits every fragment's new columns at once")
        batches = self.to_batches(columns if columns is not None else None, batch_size=batch_size,
                                  include_deleted=True)
        if output_schema is None and isinstance(value_func, BatchUDF) and value_func.output_schema is None:
            # The schema comes from a first call on the first batch (as pylance infers it).
            first_in = next(batches, None)
            if first_in is not None:
                value_func(first_in)
                batches = itertools.chain([first_in], batches)
        if _checkpointed:
            outputs = self._checkpointed_outputs(value_func, batches)
        else:
            outputs = (as_batch(value_func(b)) for b in batches)
        if output_schema is None:
            first = next(outputs, None)
            if first is None:
                raise InvalidInputError(f"fragment {self.fragment_id} has no rows to compute columns from")
            output_schema = first.schema
            outputs = itertools.chain([first], outputs)
        outputs = (b if b.schema == output_schema else _conform(b, output_schema) for b in outputs)
        producer = ProducerErrors()  # the column function's own exception, if it raises
        reader = pa.RecordBatchReader.from_batches(output_schema, producer.watch(outputs))
        try:
            data = self._dataset._ds.write_columns(reader, self.fragment_id, file_prefix)
        except LanceError:
            producer.reraise()
            raise
        return FragmentMetadata._from_bytes(data), self._merged_schema(output_schema)

    def _checkpointed_outputs(self, udf: BatchUDF, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """`udf`'s outputs for `batches`, each taken from its checkpoint when an earlier run
        kept it there (for a batch of as many rows), else computed and kept."""
        for index, batch in enumerate(batches):
            kept = udf.cache.get_batch(self.fragment_id, index)
            if kept is not None and kept.num_rows == batch.num_rows:
                yield kept
                continue
            out = as_batch(udf(batch))
            udf.cache.insert_batch(self.fragment_id, index, out)
            yield out

    def _merged_schema(self, new: pa.Schema) -> "LanceSchema":
        """The dataset's schema with the columns of `new` added, with the field ids a Merge
        commit gives them."""
        return LanceSchema(self._dataset._ds.merged_schema(pa.schema(list(self._dataset.schema) + list(new))))

    def _write_new_columns(self, runs: RowRuns, file_prefix: Optional[str],
                           finish: bool) -> Tuple["FragmentMetadata", "LanceSchema"]:
        """This fragment's run of new columns' rows, as its new data file; with `finish`,
        the stream must end there."""
        what = f"fragment {self.fragment_id}"
        reader = pa.RecordBatchReader.from_batches(runs.schema, runs.take(self.physical_rows, what))
        try:
            data = self._dataset._ds.write_columns(reader, self.fragment_id, file_prefix)
        except InvalidInputError:
            if runs.failure is not None:
                raise runs.failure from None
            raise
        if finish:
            runs.finish(what)
        return FragmentMetadata._from_bytes(data), self._merged_schema(runs.schema)

    def update_columns(self, data_obj: Any, left_on: str = "_rowid", right_on: Optional[str] = None,
                       schema: Optional[pa.Schema] = None) -> Tuple[FragmentMetadata, List[int]]:
        """New values for existing columns of this fragment, as pylance's `update_columns`:
        rows of `data_obj` whose `right_on` (default `left_on`) equals a row's `left_on`
        (a column, or `_rowid` by default) give it their other columns' values; other rows
        keep theirs. The updated columns are written whole as a new data file of this
        fragment. Returns the new fragment metadata and the updated field ids, to commit
        as `LanceOperation.Update(updated_fragments=[...], fields_modified=...)`."""
        stream = as_stream(data_obj, schema)
        data, fields = self._dataset._ds.update_columns(stream, self.fragment_id, left_on, right_on or left_on)
        return FragmentMetadata._from_bytes(data), list(fields)

    def __repr__(self) -> str:
        return f"LanceFragment(id={self.fragment_id}, physical_rows={self.physical_rows})"


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """`batch` with `schema`'s columns, in its order and types."""
    missing = [n for n in schema.names if n not in batch.schema.names]
    if missing:
        raise InvalidInputError(f"the column function's output has no column {missing[0]!r}")
    return batch.select(schema.names).cast(schema)


# The row columns a merge may join on besides the table's own.
_ROW_KEYS = ("_rowid", "_rowaddr")


class FragmentSession:
    """Repeated takes from one fragment (`LanceFragment.open_session`): the fragment's
    files stay open in the dataset's cache between takes."""

    def __init__(self, fragment: "LanceFragment", columns: Any, with_row_address: bool) -> None:
        self._fragment, self._columns, self._with_row_address = fragment, columns, with_row_address

    def take(self, indices: Any) -> pa.Table:
        """Rows `indices` of the fragment (as `LanceFragment.take`)."""
        return self._fragment.take(indices, self._columns, with_row_address=self._with_row_address)


def _merge_matcher(ds: "LanceDataset", data_obj: Any, left_on: str, right_on: Optional[str],
                   schema: Optional[pa.Schema]) -> Tuple[Callable[[pa.RecordBatch], pa.Table], pa.Schema]:
    """For pylance's `merge` (a left join adding `data_obj`'s other columns): a function
    from a batch holding `left_on` to the matched rows of the new columns (nulls where no
    key matches; a null key never matches), and their schema. Keys must be unique and the
    new columns new."""
    right_on = right_on or left_on
    right = pa.RecordBatchReader.from_stream(as_stream(data_obj, schema)).read_all()
    if right_on not in right.column_names:
        raise InvalidInputError(f"{ds.uri}: the data to merge has no column {right_on!r}")
    if left_on not in ds.schema.names and left_on not in _ROW_KEYS:
        raise InvalidInputError(f"{ds.uri}: no column {left_on!r} to merge on")
    keys = right.column(right_on).combine_chunks()
    if len(pc.unique(keys)) != len(keys):
        raise InvalidInputError(f"{ds.uri}: the data to merge has a key of {right_on!r} more than once")
    values = right.drop_columns([right_on]).combine_chunks()
    clash = sorted(set(values.column_names) & set(ds.schema.names))
    if clash:
        raise InvalidInputError(f"{ds.uri}: cannot merge columns that exist already: {clash}")

    def matched(batch: pa.RecordBatch) -> pa.Table:
        return values.take(pc.index_in(batch.column(left_on), value_set=keys))
    return matched, values.schema


def _sql_columns(ds: "LanceDataset", exprs: Dict[Any, Any], read_columns: Any,
                 output_schema: Optional[pa.Schema]) -> Tuple[Callable, Dict[str, str], pa.Schema]:
    """New columns given as SQL (`{"total": "price * qty"}`), as a column function: the
    expressions are the columns read (computed in Rust), passed through as they are."""
    for name, expr in exprs.items():
        if not isinstance(name, str) or not isinstance(expr, str):
            raise InvalidInputError(f"SQL columns map names to expressions (str → str), got {name!r}: {expr!r}")
    if read_columns is not None:
        raise InvalidInputError("read_columns goes with a function, not with SQL expressions")
    if output_schema is None:
        output_schema = ds.to_table(columns=exprs, limit=1).schema
    return (lambda batch: batch), exprs, output_schema
