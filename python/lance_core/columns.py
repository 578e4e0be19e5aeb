"""Column changes, with pylance's `LanceDataset` methods: new columns (computed by a
function or SQL, given as rows, matched from other data by a key, or all-null), dropped
and altered columns. Each change is one new version. `LanceDataset` takes these methods
from here."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, List, Optional

import pyarrow as pa

from . import _lance_core
from .errors import InvalidInputError
from .fragment import LanceFragment, _merge_matcher, _sql_columns
from .fragment_metadata import FragmentMetadata, LanceOperation, _commit_native
from .udf import BatchUDF, RowRuns, is_row_stream, row_runs

if TYPE_CHECKING:
    from .dataset import LanceDataset


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


class TableColumns:
    """Mixed into `LanceDataset` (which holds the native dataset as `_ds`)."""

    _ds: Any

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
