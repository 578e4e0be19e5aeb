"""Structured Streaming in and out of Lance tables.

Sink (`df.writeStream.format("lance").option("checkpointLocation", c).start(uri)`): each
micro-batch's tasks write fragments; the driver commits them as one version whose
transaction records the query id and batch id. Spark replays a batch whose end it did not
record in its checkpoint (the driver died, or the commit failed); before committing, the
sink looks for the newest version this query committed, and a batch it has already
committed is not committed again: every row lands exactly once.

Source (`spark.readStream.format("lance").load(uri)`): offsets are positions in the
table's history, {"version": v, "row": r, "snapshot": s}: everything before version v
has been read, and the first r rows (as stored) of what version v added. Without
`startingVersion`, the stream starts with the whole table at the version current when
the query starts (version s, read as a snapshot), then follows the versions after it. A
version that changed existing rows (delete, update, overwrite, restore, column changes)
stops the stream with an error naming it, unless `skipChangeCommits` is set; compaction,
index and config commits change no rows and pass silently.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Tuple

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, DataSourceStreamReader, InputPartition
from pyspark.sql.datasource import WriterCommitMessage
from pyspark.sql.types import StructType

try:  # pyspark >= 4.2: read limits and Trigger.AvailableNow for Python sources
    from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadLimit, ReadMaxRows,
                                                  SupportsTriggerAvailableNow)
except ImportError:  # pragma: no cover - pyspark 4.1
    ReadLimit = ReadAllAvailable = ReadMaxRows = None
    SupportsTriggerAvailableNow = object

from .. import _lance_core
from ..dataset import LanceDataset, dataset
from ..errors import CommitConflictError, DatasetNotFoundError, InvalidInputError
from ..fragment_metadata import FragmentMetadata, LanceOperation, file_paths
from ..write import commit
from . import types as _types
from .jobs import is_connect
from .tasks import (ColumnReading, JobFiles, WriteSettings, _check_append, _flag, default_rows_per_partition, write_task)

# Transaction properties of a version a streaming query committed.
QUERY_ID = "spark.streaming.query_id"
BATCH_ID = "spark.streaming.batch_id"


def _open_or_none(uri: str, storage_options) -> Optional[LanceDataset]:
    try:
        return dataset(uri, storage_options=storage_options)
    except DatasetNotFoundError:
        return None


def last_committed_batch(ds: LanceDataset, query_id: str) -> Optional[int]:
    """The newest batch id that streaming query `query_id` committed to `ds`'s table (up
    to `ds`'s version), or None."""
    found = _lance_core._find_transaction(ds._ds, QUERY_ID, query_id, ds.version)
    if found is None:
        return None
    _, (_, _, _, props) = found
    return int(props.get(BATCH_ID, -1))


def commit_batch(uri: str, storage_options, existing: Optional[LanceDataset], fragments: List[FragmentMetadata],
                 schema: pa.Schema, overwrite: bool, query_id: str, batch_id: int) -> None:
    """Commit one micro-batch's fragments as one version whose transaction records the
    query and batch: an overwrite with `schema` when the table is new or `overwrite` (the
    complete output mode), an append on top of `existing` otherwise."""
    if existing is None or overwrite:
        op = LanceOperation.Overwrite(schema, fragments)
    else:
        op = LanceOperation.Append(fragments)
    commit(uri, op, read_version=existing.version if existing is not None else None,
           storage_options=storage_options, transaction_properties={QUERY_ID: query_id, BATCH_ID: str(batch_id)})


@dataclass
class LanceStreamCommitMessage(WriterCommitMessage):
    """What one task of a micro-batch wrote: its fragments, and the query it ran for."""

    fragments: List[bytes] = field(default_factory=list)
    query_id: Optional[str] = None
    created: bool = False  # written for a new table (field ids of the stream's schema)


def _task_property(key: str) -> Optional[str]:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return ctx.getLocalProperty(key) if ctx is not None else None


class LanceStreamWriter(DataSourceStreamArrowWriter):
    """The streaming sink. `overwrite` (Spark's complete output mode) replaces the table's
    rows with each batch's; otherwise batches are appended."""

    def __init__(self, uri: str, schema: StructType, overwrite: bool, options: Dict[str, str]):
        self.uri = uri
        self.overwrite = overwrite
        self.settings = WriteSettings.of(options)
        self.storage_options = self.settings.storage_options
        self.spark_arrow = _types.spark_arrow_schema(schema)
        # Each run of the query writes files under its own token, and each batch under
        # the token and its id, so aborting a batch touches no other batch's files.
        self.token = f"spark-stream-{uuid.uuid4().hex[:12]}"
        existing = _open_or_none(uri, self.storage_options)
        if existing is not None and not overwrite:
            _check_append(existing.schema, self.spark_arrow, uri)

    def _files(self, batch_id) -> JobFiles:
        return JobFiles(self.uri, self.storage_options, prefix=f"{self.token}-b{batch_id}-")

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LanceStreamCommitMessage:
        query_id = _task_property("sql.streaming.queryId")
        batch_id = _task_property("streaming.sql.batchId")
        existing = _open_or_none(self.uri, self.storage_options)
        # A table this query has not created yet gets the stream's schema (as a batch
        # write creating it would); an existing one keeps its own.
        create = existing is None or self.overwrite
        target = self.spark_arrow if create else existing.schema
        frags = write_task(iterator, self.uri, target, create, self._files(batch_id), self.settings)
        return LanceStreamCommitMessage(frags, query_id, create)

    @staticmethod
    def _messages(messages) -> List[LanceStreamCommitMessage]:
        return [m for m in messages if isinstance(m, LanceStreamCommitMessage)]

    def commit(self, messages, batchId: int) -> None:
        ours = self._messages(messages)
        fragments = [FragmentMetadata._from_bytes(b) for m in ours for b in m.fragments]
        query_id = next((m.query_id for m in ours if m.query_id), None)
        if query_id is None:
            return  # no task ran: nothing was written, nothing to commit
        existing = _open_or_none(self.uri, self.storage_options)
        if existing is not None:
            done = last_committed_batch(existing, query_id)
            if done is not None and done >= batchId:
                # A replay of a batch committed before the driver died: its rows are in
                # the table already, and this run's copies are dropped.
                self._files(batchId).delete(file_paths(fragments))
                return
        if not fragments and existing is not None and not self.overwrite:
            return  # an empty batch adds no version
        try:
            if existing is not None and not self.overwrite and any(m.created for m in ours if m.fragments):
                # The tasks found no table and numbered the fields themselves; another
                # writer created it since. The query fails; restarted, it replays the
                # batch, which then appends.
                raise CommitConflictError(f"{self.uri}: the table was created by another writer while batch "
                                          f"{batchId} was being written")
            commit_batch(self.uri, self.storage_options, existing, fragments, self.spark_arrow, self.overwrite,
                         query_id, batchId)
        except Exception:
            self.abort(messages, batchId)
            raise

    def abort(self, messages, batchId: int) -> None:
        """Delete every file the batch's tasks wrote; nothing of it was committed."""
        known = file_paths(b for m in self._messages(messages) for b in m.fragments)
        self._files(batchId).abort(known)


class LanceBatchWriter:
    """`df.writeStream.foreachBatch(LanceBatchWriter(uri)).option("checkpointLocation", c)
    .start()`: each micro-batch is collected on the driver as Arrow (`df.toArrow()`) and
    written and committed there as one version, exactly once like the `lance` sink (the
    same query and batch ids in the transaction; a replayed batch is not written again).

    No Python worker sees the rows, which saves Spark's hand-over of rows to Python
    workers; in exchange each micro-batch must fit in the driver's memory, and on a
    cluster all rows pass through the driver. `mode="overwrite"` replaces the table's rows
    with each batch's (for the complete output mode)."""

    def __init__(self, uri: str, mode: str = "append", storage_options: Optional[Dict[str, str]] = None,
                 max_rows_per_file: int = 1024 * 1024, data_storage_version: Optional[str] = None):
        if mode not in ("append", "overwrite"):
            raise InvalidInputError(f"mode must be 'append' or 'overwrite', not {mode!r}")
        self.uri, self.overwrite, self.storage_options = uri, mode == "overwrite", storage_options
        self.settings = WriteSettings(max_rows_per_file, data_storage_version, storage_options)

    def __call__(self, df, batch_id: int) -> None:
        if is_connect(df.sparkSession):
            raise InvalidInputError(f"{self.uri}: LanceBatchWriter needs a classic Spark session (it reads the "
                                    "streaming query's id from the SparkContext), and this one is Spark Connect's: "
                                    "use writeStream.format(\"lance\") instead")
        query_id = df.sparkSession.sparkContext.getLocalProperty("sql.streaming.queryId")
        if not query_id:
            raise InvalidInputError(f"{self.uri}: LanceBatchWriter is for writeStream.foreachBatch, and no "
                                    "streaming query is running here")
        existing = _open_or_none(self.uri, self.storage_options)
        if existing is not None:
            done = last_committed_batch(existing, query_id)
            if done is not None and done >= batch_id:
                return  # a replay of a batch committed before the driver died
        spark_arrow = _types.spark_arrow_schema(df.schema)
        create = existing is None or self.overwrite
        if not create:
            _check_append(existing.schema, spark_arrow, self.uri)
        table = df.toArrow()
        if table.num_rows == 0 and not create:
            return  # an empty batch adds no version
        # The same write as a sink task's, on the driver.
        files = JobFiles(self.uri, self.storage_options, prefix=f"spark-batch-{batch_id}-")
        target = spark_arrow if create else existing.schema
        frags = [FragmentMetadata._from_bytes(b) for b in write_task(iter(table.to_batches()), self.uri, target, create, files,
                                                         self.settings)]
        try:
            commit_batch(self.uri, self.storage_options, existing, frags, spark_arrow, self.overwrite,
                         query_id, batch_id)
        except Exception:
            files.abort(file_paths(frags))
            raise


class LanceStreamPartition(InputPartition):
    """Physical rows `start..end` of a fragment, read at `version`."""

    def __init__(self, version: int, fragment_id: int, start: int, end: int):
        super().__init__((version, fragment_id, start, end))
        self.version, self.fragment_id, self.start, self.end = version, fragment_id, start, end


Offset = Dict[str, int]


class LanceStreamReader(ColumnReading, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Options: `startingVersion` (a version number: read what it and later versions
    added; "latest": only what versions after the current one add; unset: the current
    table, then what later versions add), `maxRowsPerTrigger`, `skipChangeCommits`, and the
    batch reader's `columns`, `batch_size`, `with_row_id`, `timestamp_nanos`,
    `rows_per_partition`, `storage.<key>`."""

    def __init__(self, ds: LanceDataset, schema: StructType, options: Dict[str, str]):
        if ReadLimit is None:
            raise InvalidInputError("reading a Lance table as a stream needs pyspark >= 4.2 (read limits)")
        super().__init__(ds, schema, options)
        self.starting = str(options.get("startingVersion", "")).strip().lower()
        max_rows = options.get("maxRowsPerTrigger")
        self.max_rows = int(max_rows) if max_rows not in (None, "") else None
        if self.max_rows is not None and self.max_rows <= 0:
            raise InvalidInputError(f"option maxRowsPerTrigger must be positive, not {max_rows}")
        self.skip_changes = _flag(options, "skipChangeCommits")
        self.rows_per_partition = int(options.get("rows_per_partition", 0))
        self.available_now: Optional[int] = None
        self._added: Dict[Tuple[int, int], List[Tuple[int, int]]] = {}  # (version, snapshot) -> fragments
        self._operations: Dict[int, str] = {}

    # Offsets -------------------------------------------------------------------------

    def _latest(self) -> LanceDataset:
        return dataset(self.uri, storage_options=self.storage_options)

    def initialOffset(self) -> Offset:
        latest = self._latest().version
        if self.starting in ("", "snapshot"):
            return {"version": latest, "row": 0, "snapshot": latest}
        if self.starting == "latest":
            return {"version": latest + 1, "row": 0, "snapshot": -1}
        if not self.starting.isdigit() or not 1 <= int(self.starting) <= latest + 1:
            raise InvalidInputError(f"{self.uri}: startingVersion must be a version 1..{latest + 1} or 'latest', "
                                    f"not {self.starting!r}")
        return {"version": int(self.starting), "row": 0, "snapshot": -1}

    def getDefaultReadLimit(self) -> "ReadLimit":
        return ReadMaxRows(self.max_rows) if self.max_rows else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.available_now = self._latest().version

    def _added_by(self, version: int, snapshot: int, upto: int) -> Optional[List[Tuple[int, int]]]:
        """(fragment id, physical rows) that `version` added, in order (all of a snapshot's
        fragments); None when it changed existing rows and changes are not skipped."""
        key = (version, snapshot)
        if key not in self._added:
            try:
                self._read_added(version, snapshot, upto)
            except DatasetNotFoundError as e:
                raise DatasetNotFoundError(
                    f"{self.uri}: the stream is at version {version}, and the versions it needs to tell what "
                    f"that version added are gone (removed by cleanup_old_versions?): {e}. Restart the query "
                    f"with a new checkpoint (startingVersion, or none for the table as it is now)") from e
        added = self._added[key]
        if added is None and self.skip_changes:
            return []
        return added

    def _read_added(self, version: int, snapshot: int, upto: int) -> None:
        """Fill `_added` for `version` (and the versions after it, up to `upto`)."""
        if version == snapshot:
            ds = dataset(self.uri, version=version, storage_options=self.storage_options)
            self._added[(version, snapshot)] = [(f.fragment_id, f.physical_rows) for f in ds.get_fragments()]
            return
        # Read a run of versions at once: each needs the one before it.
        base = dataset(self.uri, version=version, storage_options=self.storage_options)
        for v, op, added in _lance_core._changes_since(base._ds, version - 1, max(version, min(upto, version + 63))):
            self._operations[v] = op
            self._added[(v, snapshot)] = added

    def _changed_error(self, version: int) -> InvalidInputError:
        op = self._operations.get(version, "change")
        return InvalidInputError(
            f"{self.uri}: version {version} is a {op}, which changed rows that existed before it; the lance "
            f"stream source follows added rows only. Set option skipChangeCommits=true to pass over such "
            f"versions, or start a new query with startingVersion={version + 1}")

    def latestOffset(self, start: Offset, limit: "ReadLimit") -> Offset:
        latest = self._latest().version
        if self.available_now is not None:
            latest = min(latest, self.available_now)
        budget = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        version, row, snapshot = start["version"], start["row"], start.get("snapshot", -1)
        while version <= latest and (budget is None or budget > 0):
            added = self._added_by(version, snapshot, latest)
            if added is None:
                if (version, row) == (start["version"], start["row"]):
                    raise self._changed_error(version)
                break  # deliver what came before it first
            left = sum(rows for _, rows in added) - row
            if budget is not None and left > budget:
                row += budget
                break
            if budget is not None:
                budget -= left
            version, row = version + 1, 0
        return {"version": version, "row": row, "snapshot": snapshot}

    def reportLatestOffset(self) -> Optional[Offset]:
        latest = self._latest().version
        return {"version": latest + 1, "row": 0}

    # Reading -------------------------------------------------------------------------

    def partitions(self, start: Offset, end: Offset) -> List[InputPartition]:
        out: List[InputPartition] = []
        snapshot = start.get("snapshot", -1)
        for version in range(start["version"], end["version"] + 1):
            first = start["row"] if version == start["version"] else 0
            if version == end["version"] and end["row"] <= first:
                break  # nothing of the end version (which may not exist yet) is read
            added = self._added_by(version, snapshot, end["version"]) or []
            stop = end["row"] if version == end["version"] else sum(rows for _, rows in added)
            out.extend(_ranges(version, added, first, stop, self.rows_per_partition or None))
        return out

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        p = partition
        return self.read_rows(p.version, p.fragment_id, p.start, p.end)

    def commit(self, end: Offset) -> None:
        # Versions read are cached per (version, snapshot); older ones are not needed again.
        for key in [k for k in self._added if k[0] < end["version"]]:
            del self._added[key]


def _ranges(version: int, added: List[Tuple[int, int]], first: int, stop: int,
            split: Optional[int]) -> List[LanceStreamPartition]:
    """Partitions reading rows `first..stop` of the concatenation of `added` fragments,
    no partition longer than `split` rows (a default suited to the total otherwise)."""
    split = split or default_rows_per_partition(max(0, stop - first))
    out, offset = [], 0
    for fid, rows in added:
        lo, hi = max(first - offset, 0), min(stop - offset, rows)
        offset += rows
        while lo < hi:
            step = min(hi - lo, split)
            out.append(LanceStreamPartition(version, fid, lo, lo + step))
            lo += step
    return out
