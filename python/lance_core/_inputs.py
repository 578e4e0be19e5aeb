"""What writers accept as data: anything Arrow-shaped, turned into one Arrow C stream."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Iterator, Optional

import pyarrow as pa
import pyarrow.dataset as pa_ds

from .errors import InvalidInputError


def as_stream(data: Any, schema: Optional[pa.Schema]) -> Any:
    """Anything Arrow-shaped, as an object exporting an Arrow C stream."""
    if callable(getattr(data, "scanner", None)) and not hasattr(data, "__arrow_c_stream__"):
        # A dataset (lance_core's or pylance's): its rows.
        data = data.scanner().to_reader()
    elif isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    elif isinstance(data, (pa_ds.Dataset, pa_ds.Scanner)):
        data = (data if isinstance(data, pa_ds.Scanner) else pa_ds.Scanner.from_dataset(data)).to_reader()
    elif isinstance(data, dict):
        data = pa.Table.from_pydict(data, schema=schema)
    elif isinstance(data, list) and data and isinstance(data[0], dict):
        data = pa.Table.from_pylist(data, schema=schema)
    elif isinstance(data, (list, tuple)):
        if not data and schema is None:
            raise InvalidInputError("an empty list of batches needs a schema")
        data = pa.Table.from_batches(list(data), schema=schema)
    elif hasattr(data, "to_arrow") and not hasattr(data, "__arrow_c_stream__"):
        data = data.to_arrow()  # e.g. polars, duckdb relations
    elif type(data).__module__.startswith("pandas"):
        # As pylance: a named or non-default index is kept as a column, and pandas'
        # metadata lets `to_pandas()` restore it.
        data = pa.Table.from_pandas(data, schema=schema)
    elif isinstance(data, Iterable) and not hasattr(data, "__arrow_c_stream__") \
            and not isinstance(data, (str, bytes)):
        # An iterator or generator of batches (read lazily): the schema must be given, as
        # in pylance.
        if schema is None:
            raise InvalidInputError("writing an iterable of RecordBatches needs its schema (schema=...)")
        data = pa.RecordBatchReader.from_batches(schema, _cast_batches(data, schema))
    if not hasattr(data, "__arrow_c_stream__"):
        raise InvalidInputError(f"cannot write {type(data).__name__}: pass a pyarrow Table, RecordBatchReader, "
                                "a list of RecordBatches, or anything with __arrow_c_stream__")
    if schema is not None:
        reader = pa.RecordBatchReader.from_stream(data)
        if reader.schema != schema:
            reader = reader.cast(schema)
        data = reader
    return data


def _cast_batches(batches: Iterable[Any], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        if isinstance(batch, pa.Table):
            yield from (b if b.schema == schema else b.cast(schema) for b in batch.to_batches())
        else:
            yield batch if batch.schema == schema else batch.cast(schema)
