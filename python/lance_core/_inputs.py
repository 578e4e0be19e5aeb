"""What writers accept as data: anything Arrow-shaped, turned into one Arrow C stream."""

from __future__ import annotations

from typing import Any, Optional

import pyarrow as pa

from .errors import InvalidInputError


def as_stream(data: Any, schema: Optional[pa.Schema]) -> Any:
    """Anything Arrow-shaped, as an object exporting an Arrow C stream."""
    if callable(getattr(data, "scanner", None)) and not hasattr(data, "__arrow_c_stream__"):
        # A dataset (lance_core's or pylance's): its rows.
        data = data.scanner().to_reader()
    elif isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
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
    if not hasattr(data, "__arrow_c_stream__"):
        raise InvalidInputError(f"cannot write {type(data).__name__}: pass a pyarrow Table, RecordBatchReader, "
                                "a list of RecordBatches, or anything with __arrow_c_stream__")
    if schema is not None:
        reader = pa.RecordBatchReader.from_stream(data)
        if reader.schema != schema:
            reader = reader.cast(schema)
        data = reader
    return data
