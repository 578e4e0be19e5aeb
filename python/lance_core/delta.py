"""Change feed between two versions, as pylance's `LanceDataset.delta()`: the rows inserted
and updated in between (from the row lineage columns every writer keeps on tables with
stable row ids), the stable row ids deleted, and the transactions committed."""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional

import pyarrow as pa
import pyarrow.compute as pc

from .errors import InvalidInputError

if TYPE_CHECKING:
    from .dataset import LanceDataset, Transaction

LINEAGE_COLUMNS = ["_rowid", "_row_created_at_version", "_row_last_updated_at_version"]


class DatasetDelta:
    """What changed after `begin_version` up to `end_version` (inclusive). Rows are read
    from `end_version`, in scan order, with the dataset's columns and `_rowid`,
    `_row_created_at_version`, `_row_last_updated_at_version`."""

    def __init__(self, dataset: "LanceDataset", begin_version: int, end_version: int):
        self._ds = dataset
        self.begin_version, self.end_version = int(begin_version), int(end_version)

    def _rows(self, where: str) -> pa.RecordBatchReader:
        end = self._ds.checkout_version(self.end_version)
        columns = [f.name for f in end.schema] + LINEAGE_COLUMNS
        scanner = end.scanner(columns=columns, filter=where)
        return pa.RecordBatchReader.from_batches(scanner.projected_schema, scanner.to_batches())

    def get_inserted_rows(self) -> pa.RecordBatchReader:
        """Rows created after the begin version, up to the end version."""
        b, e = self.begin_version, self.end_version
        return self._rows(f"_row_created_at_version > {b} AND _row_created_at_version <= {e}")

    def get_updated_rows(self) -> pa.RecordBatchReader:
        """Rows that existed at the begin version and were updated after it."""
        b, e = self.begin_version, self.end_version
        return self._rows(f"_row_created_at_version <= {b} AND _row_last_updated_at_version > {b}"
                          f" AND _row_last_updated_at_version <= {e}")

    def get_deleted_row_ids(self) -> pa.RecordBatchReader:
        """The stable row ids live at the begin version and gone at the end version, in
        ascending order, as batches of one `_rowid` column."""
        schema = pa.schema([pa.field("_rowid", pa.uint64())])
        if self.begin_version > self.end_version:
            raise InvalidInputError(f"{self._ds.uri}: delta: begin version {self.begin_version} is newer than "
                                    f"end version {self.end_version}")
        if self.begin_version == self.end_version:
            return pa.RecordBatchReader.from_batches(schema, [])
        ids = {}
        for v in (self.begin_version, self.end_version):
            ds = self._ds.checkout_version(v)
            if not ds.has_stable_row_ids:
                raise InvalidInputError(f"{ds.uri}: deleted row ids need stable row ids; version {v} does "
                                        "not use them")
            ids[v] = ds.to_table(columns=["_rowid"])["_rowid"]
        before, after = ids[self.begin_version], ids[self.end_version]
        gone = pc.filter(before, pc.invert(pc.is_in(before, after)))
        table = pa.table({"_rowid": pc.take(gone, pc.sort_indices(gone))}, schema=schema)
        return pa.RecordBatchReader.from_batches(schema, table.to_batches())

    def list_transactions(self) -> List[Optional["Transaction"]]:
        """The transactions of the versions after the begin version up to the end version,
        oldest first (None for a version whose transaction is gone)."""
        if self.end_version <= self.begin_version:
            return []
        end = self._ds.checkout_version(self.end_version)
        return list(reversed(end.get_transactions(self.end_version - self.begin_version)))


def delta(dataset: "LanceDataset", compared_against: Optional[int] = None, *,
          begin_version: Optional[int] = None, end_version: Optional[int] = None) -> DatasetDelta:
    """`compared_against` (this version against an older one), or `begin_version` and
    `end_version` both."""
    if compared_against is not None:
        return DatasetDelta(dataset, compared_against, dataset.version)
    if begin_version is None and end_version is None:
        raise InvalidInputError("delta: Must specify either compared_against or both begin_version and end_version")
    if begin_version is None or end_version is None:
        raise InvalidInputError("delta: Must specify both begin_version and end_version")
    return DatasetDelta(dataset, begin_version, end_version)
