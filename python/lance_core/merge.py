"""`merge_insert` (upsert), with pylance's builder: choose what happens to matched rows,
unmatched source rows and unmatched table rows, then `execute(data)`."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Union

import pyarrow as pa

from . import _lance_core
from ._inputs import as_stream
from .errors import InvalidInputError

if TYPE_CHECKING:
    from .dataset import LanceDataset


class MergeClauses:
    """The clauses of a merge, set with pylance's builder methods. By default nothing
    changes: add at least one clause. Matching is by equality of every key column; a null
    key matches nothing."""

    def __init__(self, on: Union[str, Iterable[str]]):
        keys: List[str] = [on] if isinstance(on, str) else list(on)
        if not keys or not all(isinstance(k, str) for k in keys):
            raise InvalidInputError("merge_insert needs the key column name(s) to match on")
        self._on = keys
        self._when_matched = "nothing"
        self._condition: Optional[str] = None
        self._insert = False
        self._by_source: Optional[str] = None
        self._retries = 10

    def when_matched_update_all(self, condition: Optional[str] = None) -> "MergeClauses":
        """Replace matched table rows with their source rows, where `condition` (SQL over
        `source.col` and `target.col`) holds, or always. Columns the source lacks keep the
        table's values."""
        self._when_matched, self._condition = "update", condition
        return self

    def when_matched_delete(self) -> "MergeClauses":
        """Delete table rows that a source row matches."""
        self._when_matched, self._condition = "delete", None
        return self

    def when_matched_fail(self) -> "MergeClauses":
        """Fail (change nothing) if any source row matches a table row."""
        self._when_matched, self._condition = "fail", None
        return self

    def when_not_matched_insert_all(self) -> "MergeClauses":
        """Insert source rows that match no table row."""
        self._insert = True
        return self

    def when_not_matched_by_source_delete(self, expr: Optional[str] = None) -> "MergeClauses":
        """Delete table rows that no source row matches (those where `expr` holds, if given)."""
        if expr is not None and (not isinstance(expr, str) or not expr.strip()):
            raise InvalidInputError("when_not_matched_by_source_delete takes a SQL predicate or None")
        self._by_source = "" if expr is None else expr
        return self

    def conflict_retries(self, max_retries: int) -> "MergeClauses":
        """Re-run the match this many times when a concurrent commit changed the same
        fragments (10 by default)."""
        if int(max_retries) < 0:
            raise InvalidInputError("conflict_retries must not be negative")
        self._retries = int(max_retries)
        return self

    def retry_timeout(self, timeout: Any) -> "MergeClauses":
        """Accepted for pylance compatibility; retries are bounded by `conflict_retries`."""
        return self

    def _clauses(self) -> _lance_core._MergeClauses:
        """The clauses as the native calls take them: conditions read (a bad one fails
        here, naming it), the action checked."""
        return _lance_core._MergeClauses(self._on, self._when_matched, self._condition, self._insert,
                                         self._by_source is not None, self._by_source or None)


class MergeInsertBuilder(MergeClauses):
    """Built by `LanceDataset.merge_insert(on)`; `execute(data)` runs the merge."""

    def __init__(self, dataset: "LanceDataset", on: Union[str, Iterable[str]]):
        super().__init__(on)
        self._ds = dataset

    def use_index(self, use_index: bool) -> "MergeInsertBuilder":
        """Accepted for pylance's builder: lance_core matches keys by one scan of the
        table's key columns, hashed, with or without an index on them."""
        self._use_index = bool(use_index)
        return self

    def _plan_lines(self, source_columns: List[str], verbose: bool) -> List[str]:
        matched = {"update": "UpdateAll" if self._condition is None else f"UpdateIf({self._condition})",
                   "delete": "Delete", "fail": "Fail", "nothing": "DoNothing"}[self._when_matched]
        by_source = ("Keep" if self._by_source is None else "Delete" if self._by_source == ""
                     else f"DeleteIf({self._by_source})")
        ds = self._ds
        frags = ds.get_fragments()
        scanned = list(self._on) + ([] if not self._by_source else ["the by-source predicate's columns"])
        lines = [f"MergeInsert: on=[{', '.join(self._on)}], when_matched={matched}, "
                 f"when_not_matched={'InsertAll' if self._insert else 'DoNothing'}, "
                 f"when_not_matched_by_source={by_source}",
                 f"  HashJoin: source rows (columns [{', '.join(source_columns)}]) to table rows by "
                 f"[{', '.join(self._on)}], each table row changed at most once",
                 f"    Scan: {len(frags)} fragments, columns [{', '.join(scanned)}], row addresses"
                 + (f": {[f.fragment_id for f in frags]}" if verbose else "") + " (the hashed side)",
                 "    Source: the given rows, streamed batch by batch (kept for a retry: a table's as "
                 "they are, a stream's 64 MiB in memory and the rest in a temporary file)"]
        if self._when_matched == "update" or self._insert:
            lines.append("  Write: updated and inserted rows as new fragments; replaced rows deleted")
        return lines

    def explain_plan(self, schema: Optional[pa.Schema] = None, verbose: bool = False) -> str:
        """How the merge runs for a source of `schema` (the dataset's when None): the
        clauses, the join of the source's keys with the table's key columns, the scan and
        what is written."""
        schema = self._ds.schema if schema is None else schema
        missing = [k for k in self._on if k not in schema.names]
        if missing:
            raise InvalidInputError(f"{self._ds.uri}: the source schema lacks the key columns {missing}")
        return "\n".join(self._plan_lines(schema.names, verbose))

    def analyze_plan(self, data_obj: Any, *, schema: Optional[pa.Schema] = None) -> str:
        """Run the merge with `data_obj` without committing it (the files it writes are
        removed), and report its plan with what it did: rows inserted, updated and deleted,
        data files and bytes written."""
        stream = pa.RecordBatchReader.from_stream(as_stream(data_obj, schema))
        started = time.perf_counter()
        (inserted, updated, deleted), files, written, deletions = self._ds._ds.analyze_merge(
            stream, self._clauses())
        elapsed = (time.perf_counter() - started) * 1000
        lines = self._plan_lines(stream.schema.names, True)
        lines[0] = (lines[0].replace("MergeInsert: ", f"MergeInsert: elapsed={elapsed:.3f}ms, ", 1)
                    + f", metrics=[bytes_written={written}, num_deleted_rows={deleted}, "
                      f"num_files_written={files}, num_deletion_files_written={deletions}, "
                      f"num_inserted_rows={inserted}, num_updated_rows={updated}]")
        return "\n".join(lines)

    def execute(self, data: Any, *, schema: Optional[pa.Schema] = None) -> Dict[str, int]:
        """Run the merge with `data` (a pyarrow Table, RecordBatchReader, iterable of
        batches, pandas DataFrame, or anything with `__arrow_c_stream__`) as the source, in
        one new version; the dataset object moves to it. The source is read as a stream,
        batch by batch, with the GIL released: memory is bounded by the table's keys, not
        by the source. Returns the inserted, updated and deleted row counts."""
        source = as_stream(data, schema)
        # An in-memory table's batches are kept for a retry as they are; a stream's are
        # kept up to 64 MiB in memory, then in a temporary file.
        new, (inserted, updated, deleted) = self._ds._ds.merge_insert(
            source, self._clauses(), self._retries, isinstance(source, pa.Table))
        self._ds._ds = new
        return {"num_inserted_rows": inserted, "num_updated_rows": updated, "num_deleted_rows": deleted}
