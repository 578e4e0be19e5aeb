"""`merge_insert` (upsert), with pylance's builder: choose what happens to matched rows,
unmatched source rows and unmatched table rows, then `execute(data)`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Union

import pyarrow as pa

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

    def _clauses(self) -> tuple:
        """(on, when_matched, condition, insert, by_source) as the native calls take them."""
        return self._on, self._when_matched, self._condition, self._insert, self._by_source


class MergeInsertBuilder(MergeClauses):
    """Built by `LanceDataset.merge_insert(on)`; `execute(data)` runs the merge."""

    def __init__(self, dataset: "LanceDataset", on: Union[str, Iterable[str]]):
        super().__init__(on)
        self._ds = dataset

    def execute(self, data: Any, *, schema: Optional[pa.Schema] = None) -> Dict[str, int]:
        """Run the merge with `data` (a pyarrow Table, RecordBatchReader, list of batches,
        pandas DataFrame, or anything with `__arrow_c_stream__`) as the source, in one new
        version; the dataset object moves to it. Returns the inserted, updated and deleted
        row counts."""
        new, (inserted, updated, deleted) = self._ds._ds.merge_insert(
            as_stream(data, schema), *self._clauses(), self._retries)
        self._ds._ds = new
        return {"num_inserted_rows": inserted, "num_updated_rows": updated, "num_deleted_rows": deleted}
