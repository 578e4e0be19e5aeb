"""Arrow ↔ Spark conversions on their own (no Spark session): nested, sliced and empty
arrays convert exactly as pyarrow's cast would, including the cases cast alone cannot do."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import pyspark  # noqa: F401
from lance_core.spark.types import _convert, from_spark, spark_arrow_schema, spark_schema  # noqa: E402

ARRAYS = [
    pa.array([{"x": i, "y": f"s{i}"} if i % 3 else None for i in range(10)],
             pa.struct([("x", pa.uint64()), ("y", pa.large_string())])),
    pa.array([[(f"k{i}", i), (f"j{i}", None)] if i % 4 else None for i in range(10)],
             pa.map_(pa.large_string(), pa.uint32())),
    pa.array([[i, i + 1] if i % 5 else None for i in range(10)], pa.large_list(pa.uint16())),
    pa.array([[i, i + 1] if i % 5 else None for i in range(10)], pa.list_(pa.uint16(), 2)),
    pa.array([[{"a": [1, None]}, None] if i % 2 else None for i in range(10)],
             pa.list_(pa.struct([("a", pa.large_list(pa.uint8()))]))),
]


@pytest.mark.parametrize("array", ARRAYS, ids=lambda a: str(a.type))
@pytest.mark.parametrize("piece", [slice(0, 10), slice(3, 8), slice(0, 0)], ids=["whole", "slice", "empty"])
def test_to_spark_matches_cast(array, piece):
    field = pa.field("c", array.type)
    target = spark_arrow_schema(spark_schema(pa.schema([field]))).field(0).type
    part = array[piece]
    got = _convert(part, field, target, "c")
    assert got.type == target
    assert got.equals(pc.cast(part, target))


def test_spark_lists_back_to_fixed_size_lists():
    fsl = pa.array([[i, i + 1] if i % 5 else None for i in range(10)], pa.list_(pa.uint16(), 2))
    spark_side = pc.cast(fsl, pa.list_(pa.int32())).slice(2, 6)
    target = pa.schema([pa.field("c", fsl.type)])
    back = from_spark(pa.record_batch([spark_side], names=["c"]), target).column(0)
    assert back.equals(fsl.slice(2, 6))
    # A null list may hold any number of items; it stays null.
    ragged = pa.ListArray.from_arrays(pa.array([0, 2, 5, 7], pa.int32()), pa.array(range(7), pa.int32()),
                                      mask=pa.array([False, True, False]))
    back = from_spark(pa.record_batch([ragged], names=["c"]), target).column(0)
    assert back.to_pylist() == [[0, 1], None, [5, 6]]
    wrong = pa.array([[1, 2, 3]], pa.list_(pa.int32()))
    with pytest.raises(ValueError, match="column 'c': every list must have 2 items"):
        from_spark(pa.record_batch([wrong], names=["c"]), target)
