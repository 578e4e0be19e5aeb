"""`LanceDataset.sql(...)`, as pylance's: a SELECT over the dataset (called `dataset`,
or the name given to `table_name`) run as a scan: its columns and
expressions, WHERE, ORDER BY columns, LIMIT and OFFSET. Aggregates, joins and DISTINCT
are refused with an error saying so."""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional

import pyarrow as pa

from . import _lance_core
from .errors import InvalidInputError
from .scanner import ColumnOrdering

if TYPE_CHECKING:
    from .dataset import LanceDataset


class SqlQuery:
    """A parsed query, ready to run."""

    def __init__(self, dataset: "LanceDataset", sql: str, table_name: Optional[str], with_row_id: bool,
                 with_row_addr: bool, blob_handling: Optional[str]):
        outputs, table, where, order, limit, offset = _lance_core._parse_select(sql)
        expected = table_name or "dataset"
        if table != expected:
            raise InvalidInputError(f"SQL '{sql}': table {table!r} not found: the dataset is called {expected!r} "
                                    "(another name can be set with table_name)")
        columns: Optional[dict] = {}
        for out in outputs:
            if out is None:
                columns.update({name: _quoted(name) for name in dataset.schema.names})
            else:
                columns[out[0]] = out[1]
        if outputs == [None]:
            columns = None   # SELECT *: the columns as stored, blobs too
        self._scanner = dataset.scanner(
            columns=columns, filter=where, limit=limit, offset=offset, with_row_id=with_row_id or None,
            with_row_address=with_row_addr or None, blob_handling=blob_handling,
            order_by=[ColumnOrdering(c, asc, nulls_first) for c, asc, nulls_first in order] or None)

    def to_batch_records(self) -> List[pa.RecordBatch]:
        return self._scanner.to_table().to_batches()

    def to_stream_reader(self) -> pa.RecordBatchReader:
        return self._scanner.to_reader()


class SqlQueryBuilder:
    """What `LanceDataset.sql` returns: options, then `build()`."""

    def __init__(self, dataset: "LanceDataset", sql: str):
        self._dataset, self._sql = dataset, sql
        self._table: Optional[str] = None
        self._row_id = self._row_addr = False
        self._blobs: Optional[str] = None

    def table_name(self, table_name: str) -> "SqlQueryBuilder":
        self._table = table_name
        return self

    def with_row_id(self, with_row_id: bool = True) -> "SqlQueryBuilder":
        self._row_id = bool(with_row_id)
        return self

    def with_row_addr(self, with_row_addr: bool = True) -> "SqlQueryBuilder":
        self._row_addr = bool(with_row_addr)
        return self

    def blob_handling(self, blob_handling: str) -> "SqlQueryBuilder":
        self._blobs = blob_handling
        return self

    def build(self) -> SqlQuery:
        return SqlQuery(self._dataset, self._sql, self._table, self._row_id, self._row_addr, self._blobs)


def _quoted(name: str) -> str:
    """A column name as SQL (quoted when it is not a plain identifier)."""
    return name if name.isidentifier() else '"' + name.replace('"', '""') + '"'
