"""Types between Lance (Arrow) and Spark.

Spark has fewer types than Arrow. Each Arrow type maps to the Spark type that holds all of
its values (uint64 → decimal(20,0), uint32 → bigint, halffloat and bfloat16 → float,
decimals of more than 38 digits → their text, ...), so reading valid data never fails on a
type; the mapping is the core's (`lance_core::spark::types`), shared with the JVM reader. Spark keeps time in microseconds: nanosecond timestamps, times and durations are
truncated to microseconds, as PySpark does with pandas data, unless the reader asks for
`exact` values (then a value that is not a whole microsecond raises, naming the column). Spark also checks that
the batches a Python data source returns have exactly the Arrow schema it derives from the
Spark schema (`string`, not `large_string`; microsecond timestamps in UTC; ...), so
`to_spark` converts the columns whose types differ and leaves the others untouched (no
copy). `from_spark` goes the other way for appends to an existing dataset.
"""

from __future__ import annotations

import json
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from .. import _lance_core
from ..errors import InvalidInputError

_EXTENSION = b"ARROW:extension:name"
_BFLOAT16 = "lance.bfloat16"


def _extension(field: pa.Field) -> Optional[str]:
    """The extension name of a field, registered with pyarrow or only in its metadata."""
    if isinstance(field.type, pa.BaseExtensionType):
        return field.type.extension_name
    if field.metadata and _EXTENSION in field.metadata:
        return field.metadata[_EXTENSION].decode()
    return None


def spark_schema(schema: pa.Schema) -> T.StructType:
    """The Spark schema of a dataset's Arrow schema: the core's mapping
    (`lance_core::spark::types`), the JVM reader's too."""
    return T.StructType.fromJson(json.loads(_lance_core._spark_schema(schema)))


def spark_arrow_schema(schema: T.StructType) -> pa.Schema:
    """The Arrow schema Spark expects batches of `schema` to have."""
    return to_arrow_schema(schema, timezone="UTC")


def to_spark(batch: pa.RecordBatch, target: pa.Schema, exact: bool = False) -> pa.RecordBatch:
    """`batch` (read from Lance) with exactly `target`'s types, columns matched by name;
    nanoseconds truncated to microseconds unless `exact`."""
    if batch.schema.equals(target):
        return batch
    columns = [
        _convert(batch.column(f.name), batch.schema.field(f.name), f.type, f.name, exact=exact) for f in target
    ]
    return pa.RecordBatch.from_arrays(columns, schema=target)


def from_spark(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """`batch` (from Spark, with `target`'s column names) with the types of an existing
    dataset, for appending: the core's conversion (`lance_core::spark::table_types`),
    which the JVM writer uses too."""
    if batch.schema.equals(target):
        return batch
    out = pa.record_batch(_lance_core._to_table_batch(batch, target))
    return pa.RecordBatch.from_arrays(out.columns, schema=target)


_SUB_MICROS = "would lose data"


def _finer_than_micros(t: pa.DataType) -> bool:
    return (pa.types.is_timestamp(t) or pa.types.is_duration(t) or pa.types.is_time64(t)) and t.unit == "ns"


def _convert(arr: pa.Array, src: pa.Field, dst: pa.DataType, path: str, exact: bool = False) -> pa.Array:
    """`arr` (of field `src`) as type `dst`, keeping the buffers when nothing changes."""
    if arr.type == dst:
        return arr
    ext = _extension(src)
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    if ext == _BFLOAT16:
        return _bfloat16_to_float32(arr)
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        return _convert(arr, pa.field(src.name, arr.type, src.nullable), dst, path, exact)
    if pa.types.is_struct(t) and pa.types.is_struct(dst):
        children = [
            _convert(arr.field(i), t.field(i), dst.field(i).type, f"{path}.{t.field(i).name}", exact)
            for i in range(t.num_fields)
        ]
        return pa.StructArray.from_arrays(children, fields=list(dst), mask=_null_mask(arr))
    if pa.types.is_map(t) and pa.types.is_map(dst):
        offsets, entries = _list_parts(arr)
        keys = _convert(entries.field(0), t.key_field, dst.key_type, f"{path}.key", exact)
        items = _convert(entries.field(1), t.item_field, dst.item_type, f"{path}.value", exact)
        return pa.MapArray.from_arrays(offsets, keys, items, type=dst, mask=_null_mask(arr))
    if _is_list(t) and _is_list(dst) and not pa.types.is_fixed_size_list(dst):
        offsets, values = _list_parts(arr)
        values = _convert(values, t.value_field, dst.value_type, f"{path}.item", exact)
        cls = pa.LargeListArray if pa.types.is_large_list(dst) else pa.ListArray
        offsets = offsets.cast(pa.int64() if pa.types.is_large_list(dst) else pa.int32())
        return cls.from_arrays(offsets, values, type=dst, mask=_null_mask(arr))
    if _is_list(t) and pa.types.is_fixed_size_list(dst):
        offsets, values = _list_parts(arr)
        lengths = pc.subtract(offsets.slice(1), offsets.slice(0, len(arr)))
        bad = pc.and_(pc.not_equal(lengths, dst.list_size), arr.is_valid())
        if pc.any(bad).as_py():
            raise InvalidInputError(f"column '{path}': every list must have {dst.list_size} items")
        values = _convert(values, t.value_field, dst.value_type, f"{path}.item", exact)
        if len(values) != len(arr) * dst.list_size or not pc.all(pc.equal(lengths, dst.list_size)).as_py():
            # Null lists may hold any number of items: take each list's first list_size items.
            starts = offsets.slice(0, len(arr)).to_numpy(zero_copy_only=False)
            idx = (starts[:, None] + np.arange(dst.list_size)[None, :]).reshape(-1)
            values = values.take(pa.array(np.minimum(idx, max(len(values) - 1, 0)))) if len(values) else values
        return pa.FixedSizeListArray.from_arrays(values, type=dst, mask=_null_mask(arr))
    try:
        return pc.cast(arr, dst, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        if not exact and _finer_than_micros(t) and _SUB_MICROS in str(e):
            return pc.cast(arr, dst, safe=False)  # drop the nanoseconds, as PySpark does
        hint = " (read with option timestamp_nanos='truncate' to drop the nanoseconds)" if _finer_than_micros(t) else ""
        raise InvalidInputError(f"column '{path}': cannot convert {t} to {dst}: {e}{hint}") from None


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def _null_mask(arr: pa.Array) -> Optional[pa.Array]:
    return arr.is_null() if arr.null_count else None


def _list_parts(arr: pa.Array):
    """(offsets, values) of a list-like or map array, list i being
    values[offsets[i]:offsets[i+1]], with fresh offsets from 0 (pyarrow rebuilds lists with
    a null mask only from unsliced offsets)."""
    if pa.types.is_fixed_size_list(arr.type):
        n = arr.type.list_size
        values = arr.values.slice(arr.offset * n, len(arr) * n)
        return pa.array(np.arange(0, (len(arr) + 1) * n, n, dtype=np.int64)), values
    offsets = arr.offsets.to_numpy()
    start = int(offsets[0])
    values = arr.values.slice(start, int(offsets[-1]) - start)
    return pa.array(offsets - start, type=arr.offsets.type), values


def _bfloat16_to_float32(arr: pa.Array) -> pa.Array:
    """bfloat16 (2 bytes each, little endian) to float32: the same bits, 16 more of mantissa."""
    raw = np.frombuffer(arr.buffers()[1], dtype=np.uint16)[arr.offset:arr.offset + len(arr)]
    floats = (raw.astype(np.uint32) << 16).view(np.float32)
    return pa.array(floats, pa.float32(), mask=arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else None)

