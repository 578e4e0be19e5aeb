"""Writing datasets, with pylance's `write_dataset` signature."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Union

import pyarrow as pa

from . import _lance_core
from .dataset import LanceDataset
from .errors import InvalidInputError


def _as_stream(data: Any, schema: Optional[pa.Schema]) -> Any:
    """Anything Arrow-shaped, as an object exporting an Arrow C stream."""
    if isinstance(data, LanceDataset):
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


def write_dataset(
    data: Any,
    uri: Union[str, os.PathLike],
    schema: Optional[pa.Schema] = None,
    mode: str = "create",
    *,
    max_rows_per_file: int = 1024 * 1024,
    max_bytes_per_file: Optional[int] = None,
    data_storage_version: Optional[str] = None,
    enable_stable_row_ids: bool = False,
    storage_options: Optional[Dict[str, str]] = None,
) -> LanceDataset:
    """Write Arrow data as a Lance dataset (mode "create", "append" or "overwrite").

    Append creates the dataset when it does not exist; its data must have the dataset's
    columns and types. New datasets use file format 2.2 unless `data_storage_version`
    says "2.1".
    """
    if max_rows_per_file <= 0:
        raise InvalidInputError("max_rows_per_file must be positive")
    native = _lance_core._write_dataset(
        _as_stream(data, schema), os.fspath(uri), mode, max_rows_per_file, max_bytes_per_file,
        data_storage_version, enable_stable_row_ids, storage_options,
    )
    return LanceDataset(native)
