"""Column functions for `add_columns` / `merge_columns`, as pylance's `lance.batch_udf`:
a function from a batch of existing columns to a batch of new ones, with the schema it
must produce (declared, or taken from its first output), and new columns given as a
stream of rows instead of a function."""

from __future__ import annotations

import os
import pickle
import sqlite3
from contextlib import closing
from typing import Any, Callable, Iterable, Iterator, Optional

import pyarrow as pa

from .errors import InvalidInputError, SchemaMismatchError


def as_batch(out: Any) -> pa.RecordBatch:
    """What a column function returned (a record batch, table, dict of arrays or pandas
    frame), as one record batch."""
    if isinstance(out, pa.RecordBatch):
        return out
    if isinstance(out, pa.Table):
        return out.combine_chunks().to_batches()[0] if out.num_rows else pa.RecordBatch.from_pylist([], schema=out.schema)
    if isinstance(out, dict):
        return pa.RecordBatch.from_pydict(out)
    if type(out).__module__.startswith("pandas"):
        return pa.RecordBatch.from_pandas(out, preserve_index=False)
    raise InvalidInputError(f"the column function must return a pyarrow RecordBatch, Table or dict, "
                            f"not {type(out).__name__}")


class BatchUDF:
    """A column function whose every output must have one schema: `output_schema`, or
    the first output's. pandas frames are taken as batches."""

    def __init__(self, func: Callable[[pa.RecordBatch], Any], output_schema: Optional[pa.Schema] = None,
                 checkpoint_file: Any = None):
        self.func = func
        self.output_schema = output_schema
        # Results kept on disk as they are computed, so that a failed add_columns run
        # resumes where it stopped (pylance's checkpoint file, in its layout).
        self.checkpoint_file = checkpoint_file
        self.cache = None if checkpoint_file is None else BatchUDFCheckpoint(checkpoint_file)
        self.__name__ = getattr(func, "__name__", "batch_udf")
        self.__doc__ = getattr(func, "__doc__", None)

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        out = as_batch(self.func(batch))
        if self.output_schema is None:
            self.output_schema = out.schema
        elif out.schema != self.output_schema:
            raise InvalidInputError(f"Output schema of function does not match the expected schema: expected "
                                    f"{self.output_schema}, got {out.schema}")
        return out


class BatchUDFCheckpoint:
    """The results of a `BatchUDF` with a `checkpoint_file`, kept in that SQLite file (the
    tables pylance's keeps: `batches`, each batch's output by fragment and batch number,
    and `fragments`, the metadata of each fragment whose new file is written) until the
    columns are committed; a run that failed resumes from them."""

    def __init__(self, path: Any):
        self.path = os.fspath(path)
        with closing(sqlite3.connect(self.path)) as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS batches (fragment_id INT, batch_index INT, result BLOB)")
            conn.execute("CREATE TABLE IF NOT EXISTS fragments (fragment_id INT, data BLOB)")
            conn.commit()

    def get_batch(self, fragment_id: int, batch_index: int) -> Optional[pa.RecordBatch]:
        with closing(sqlite3.connect(self.path)) as conn:
            row = conn.execute("SELECT result FROM batches WHERE fragment_id = ? AND batch_index = ?",
                               (fragment_id, batch_index)).fetchone()
        return None if row is None else pickle.loads(row[0])

    def insert_batch(self, fragment_id: int, batch_index: int, batch: pa.RecordBatch) -> None:
        with closing(sqlite3.connect(self.path)) as conn:
            conn.execute("INSERT INTO batches (fragment_id, batch_index, result) VALUES (?, ?, ?)",
                         (fragment_id, batch_index, pickle.dumps(batch)))
            conn.commit()

    def get_fragment(self, fragment_id: int) -> Optional[str]:
        """The JSON metadata of the fragment with its new file, if it was written."""
        with closing(sqlite3.connect(self.path)) as conn:
            row = conn.execute("SELECT data FROM fragments WHERE fragment_id = ?", (fragment_id,)).fetchone()
        return None if row is None else row[0]

    def insert_fragment(self, fragment_id: int, data: str) -> None:
        """Keep a fragment's metadata once its new file is written; its batches go."""
        with closing(sqlite3.connect(self.path)) as conn:
            conn.execute("INSERT INTO fragments (fragment_id, data) VALUES (?, ?)", (fragment_id, data))
            conn.execute("DELETE FROM batches WHERE fragment_id = ?", (fragment_id,))
            conn.commit()

    def cleanup(self) -> None:
        """The columns are committed: the file goes."""
        if os.path.exists(self.path):
            os.remove(self.path)


def batch_udf(output_schema: Optional[pa.Schema] = None, checkpoint_file: Any = None) -> Callable[..., BatchUDF]:
    """Decorate a column function for `add_columns`/`merge_columns` (pylance's
    `lance.batch_udf`): its outputs are checked against `output_schema` (or the first
    output's schema) and may be pandas DataFrames. With `checkpoint_file` (a local path),
    `add_columns` keeps each batch's output and each written fragment there until it
    commits, and a run that failed computes only what is missing (the file can grow to a
    data file's worth of results)."""

    def wrap(func: Callable[[pa.RecordBatch], Any]) -> BatchUDF:
        return BatchUDF(func, output_schema, checkpoint_file)

    return wrap


class ProducerErrors:
    """The exception Python code producing batches raised while the core read them: the
    C stream interface hands it over as text only; this keeps it, to raise as it was."""

    def __init__(self) -> None:
        self.error: Optional[BaseException] = None

    def watch(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        try:
            yield from batches
        except Exception as e:
            self.error = e
            raise

    def reraise(self) -> None:
        """Raise the producer's exception, if it raised one."""
        if self.error is not None:
            raise self.error


def is_row_stream(value: Any) -> bool:
    """Whether new columns were given as rows (a reader or an iterator of batches)
    rather than as a function, SQL expressions or fields."""
    if isinstance(value, (pa.RecordBatchReader, pa.Table)) or hasattr(value, "__arrow_c_stream__"):
        return True
    return isinstance(value, Iterator)


class RowRuns:
    """The rows of a stream of batches, handed out in consecutive runs of given lengths
    (a fragment's rows each), re-chunked as needed."""

    def __init__(self, batches: Iterable[pa.RecordBatch], schema: pa.Schema):
        self.schema = schema
        self._batches = iter(batches)
        self._pending: Optional[pa.RecordBatch] = None
        # Why the stream failed, once it has: the writer that consumed it reports the
        # failure through Arrow's stream interface, wrapped; this is what to raise.
        self.failure: Optional[Exception] = None

    def _next(self) -> Optional[pa.RecordBatch]:
        if self._pending is not None:
            batch, self._pending = self._pending, None
            return batch
        for batch in self._batches:
            if batch.num_rows:
                if batch.schema != self.schema:
                    self.failure = InvalidInputError(f"a batch of the new columns has schema {batch.schema}, "
                                                     f"not the reader's {self.schema}")
                    raise self.failure
                return batch
        return None

    def take(self, rows: int, what: str) -> Iterator[pa.RecordBatch]:
        """The next `rows` rows (for `what`, named in the error when the stream ends)."""
        left = rows
        while left > 0:
            batch = self._next()
            if batch is None:
                self.failure = SchemaMismatchError(
                    f"Stream ended before producing values for all rows in dataset: the new columns' rows ran "
                    f"out {rows - left} rows into {what}, which has {rows}")
                raise self.failure
            if batch.num_rows > left:
                self._pending = batch.slice(left)
                batch = batch.slice(0, left)
            left -= batch.num_rows
            yield batch

    def finish(self, what: str) -> None:
        """Refuse rows left over once every fragment had its run."""
        if self._next() is not None:
            raise SchemaMismatchError(f"Stream produced more values than expected for dataset: the new columns "
                                      f"have more rows than {what}")


def row_runs(value: Any, reader_schema: Optional[pa.Schema]) -> RowRuns:
    """A stream of new columns' rows (`reader_schema` required for a plain iterator)."""
    if isinstance(value, pa.Table):
        return RowRuns(value.to_batches(), value.schema)
    if isinstance(value, pa.RecordBatchReader) or hasattr(value, "__arrow_c_stream__"):
        reader = value if isinstance(value, pa.RecordBatchReader) else pa.RecordBatchReader.from_stream(value)
        return RowRuns(reader, reader.schema)
    if reader_schema is None:
        raise InvalidInputError("new columns given as an iterator of batches need reader_schema")
    return RowRuns(value, reader_schema)
