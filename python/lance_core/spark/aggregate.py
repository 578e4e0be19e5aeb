"""`aggregate`: a grouped aggregation whose first half runs inside the read tasks.

Spark gives Python data sources no aggregate pushdown: `df.groupBy(k).agg(sum(x))` ships
every row from the Python workers to the JVM, and that transfer, not the decoding, is most
of a narrow query's time. Here each task reads its part of a fragment (only the columns
named, rows matching `filter`) and aggregates it per group with pyarrow; Spark then only
combines one partial row per group and task. The functions are the decomposable ones:
sum, count, min, max and mean (as a sum and a count).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Sequence, Tuple, Union

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..dataset import dataset
from ..errors import InvalidInputError
from . import types as _types
from .tasks import default_rows_per_partition, plan_partitions
from .jobs import dataset_at, work_frame

FUNCTIONS = ("sum", "count", "min", "max", "mean")


@dataclass(frozen=True)
class Partial:
    """One partial aggregation a task computes: pyarrow function `fn` over `column` (None:
    all rows), read as float64 when `as_double`, giving Spark type `spark_type`."""

    column: Optional[str]
    fn: str
    spark_type: T.DataType
    as_double: bool = False

    @property
    def source(self) -> str:
        """The task table's column it reads ("" for all rows)."""
        if self.column is None:
            return ""
        return _double_name(self.column) if self.as_double else self.column


def _numeric(t: T.DataType) -> bool:
    return isinstance(t, (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType))


def _plan(aggregations: Dict[str, Tuple[str, str]], fields: Dict[str, T.StructField], uri: str):
    """For each output: its partial aggregations as `Partial`s, and how Spark combines
    them (output name, function, indexes of its partials)."""
    partials: List[Partial] = []
    finals: List[Tuple[str, str, List[int]]] = []
    for name, spec in aggregations.items():
        if not (isinstance(spec, (tuple, list)) and len(spec) == 2):
            raise InvalidInputError(f"aggregation '{name}' must be (function, column), not {spec!r}")
        fn, col = str(spec[0]).lower(), spec[1]
        fn = "mean" if fn == "avg" else fn
        if fn not in FUNCTIONS:
            raise InvalidInputError(f"aggregation '{name}': unknown function '{fn}' (one of {', '.join(FUNCTIONS)})")
        if col == "*":
            if fn != "count":
                raise InvalidInputError(f"aggregation '{name}': only count takes '*'")
            partials.append(Partial(None, "count_all", T.LongType()))
            finals.append((name, "count", [len(partials) - 1]))
            continue
        if col not in fields:
            raise InvalidInputError(f"{uri}: aggregation '{name}' names '{col}', which is not a column")
        t = fields[col].dataType
        if fn in ("sum", "mean") and not _numeric(t):
            raise InvalidInputError(f"{uri}: aggregation '{name}': cannot {fn} column '{col}' of type "
                                    f"{t.simpleString()} (integers and floating point only)")
        if fn in ("min", "max") and isinstance(t, (T.ArrayType, T.MapType, T.StructType)):
            raise InvalidInputError(f"{uri}: aggregation '{name}': cannot take the {fn} of '{col}' "
                                    f"({t.simpleString()})")
        floating = isinstance(t, (T.FloatType, T.DoubleType))
        if fn == "sum":
            # Spark sums integers as longs and floats as doubles.
            partials.append(Partial(col, "sum", T.DoubleType() if floating else T.LongType(), as_double=floating))
            finals.append((name, "sum", [len(partials) - 1]))
        elif fn == "count":
            partials.append(Partial(col, "count", T.LongType()))
            finals.append((name, "count", [len(partials) - 1]))
        elif fn == "mean":
            # Spark averages integers through a double sum: no overflow.
            partials += [Partial(col, "sum", T.DoubleType(), as_double=True), Partial(col, "count", T.LongType())]
            finals.append((name, "mean", [len(partials) - 2, len(partials) - 1]))
        else:
            partials.append(Partial(col, fn, t))
            finals.append((name, fn, [len(partials) - 1]))
    return partials, finals


def _double_name(col: str) -> str:
    """The name of a column's float64 copy in a task's table; the leading NUL keeps it
    apart from the names of real columns."""
    return "\x00double:" + col


def _may_overflow(column: pa.ChunkedArray) -> bool:
    """Whether a long sum of `column` could leave the long range (a cheap bound)."""
    bounds = pc.min_max(column)
    lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    if lo is None:
        return False
    return max(abs(lo), abs(hi)) * len(column) >= 1 << 63


def _overflowed(long_sums: pa.ChunkedArray, double_sums: pa.ChunkedArray) -> bool:
    """Whether a wrapped long sum differs from the double one: a wrap moves it by a
    multiple of 2^64, while the double sum's rounding error stays far below 2^62."""
    diff = pc.abs(pc.subtract(pc.cast(long_sums, pa.float64(), safe=False), double_sums))
    return bool(pc.any(pc.greater(diff, float(1 << 62))).as_py())


def _combine(fn: str, cols: List[str]) -> Column:
    if fn == "count":
        return F.coalesce(F.sum(cols[0]), F.lit(0).cast("long"))
    if fn == "mean":
        return F.try_divide(F.sum(cols[0]).cast("double"), F.sum(cols[1]))
    return {"sum": F.sum, "min": F.min, "max": F.max}[fn](cols[0])


def aggregate(
    spark: SparkSession,
    uri: str,
    aggregations: Dict[str, Tuple[str, str]],
    by: Optional[Union[str, Sequence[str]]] = None,
    filter: Optional[str] = None,
    version: Optional[Union[int, str]] = None,
    storage_options: Optional[Dict[str, str]] = None,
    rows_per_partition: Optional[int] = None,
) -> DataFrame:
    """`SELECT by..., fn(column) AS name ... FROM dataset WHERE filter GROUP BY by` as a
    DataFrame, with `aggregations` = {name: (function, column)}: function one of sum,
    count (column "*" counts rows), min, max, mean/avg. Result types are Spark's (sum of
    integers: long; of floats: double; mean: double), and so are overflows: a long sum
    leaving the long range fails in Spark's ANSI mode (its default) and wraps around
    otherwise; means are taken over double sums. Each task aggregates its rows; Spark
    combines the partial rows."""
    if not aggregations:
        raise InvalidInputError("aggregate needs at least one aggregation")
    keys = [by] if isinstance(by, str) else list(by or [])
    ds = dataset(uri, version=version, storage_options=storage_options)
    schema = _types.spark_schema(ds.schema)
    fields = {f.name: f for f in schema.fields}
    for k in keys:
        if k not in fields:
            raise InvalidInputError(f"{ds.uri}: cannot group by '{k}': not a column")
    partials, finals = _plan(aggregations, fields, ds.uri)
    inputs = list(dict.fromkeys(keys + [p.column for p in partials if p.column is not None]))
    read_target = _types.spark_arrow_schema(T.StructType([fields[c] for c in inputs]))
    partial_schema = T.StructType([fields[k] for k in keys]
                                  + [T.StructField(f"_p{i}", p.spark_type, True) for i, p in enumerate(partials)])
    partial_target = _types.spark_arrow_schema(partial_schema)
    if filter is not None:
        ds.scanner(columns=[], filter=filter, limit=0).to_table()  # a bad filter fails here, not in a task
    frags = [(f.fragment_id, f.physical_rows) for f in ds.get_fragments()]
    parts = plan_partitions(frags, rows_per_partition or default_rows_per_partition(sum(r for _, r in frags)))
    uri, pinned = ds.uri, ds.version
    # Spark's ANSI mode (its default) fails a long sum that overflows; otherwise it wraps,
    # as pyarrow's sums do.
    ansi = str(spark.conf.get("spark.sql.ansi.enabled", "true")).strip().lower() == "true"
    # Each distinct (column, function) is computed once; partial i reads result slot[i].
    specs = list(dict.fromkeys((p.source, p.fn) for p in partials))
    slot = [specs.index((p.source, p.fn)) for p in partials]
    doubles = list(dict.fromkeys(p.column for p in partials if p.as_double))
    long_sums = list(dict.fromkeys(p.column for p in partials if p.fn == "sum" and not p.as_double)) if ansi else []

    def partial(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        local = dataset_at(uri, pinned, storage_options)
        for work in batches:
            for fid, start, end in zip(*(work.column(i).to_pylist() for i in range(3))):
                frag = local.get_fragment(fid)
                read = [_types.to_spark(b, read_target) for b in
                        frag.to_batches(inputs, batch_size=1 << 20, filter=filter, row_range=(start, end))]
                table = pa.Table.from_batches(read, read_target)
                # Long sums that might overflow are also taken as doubles, to tell.
                checked = [c for c in long_sums if _may_overflow(table.column(c))]
                for c in dict.fromkeys(doubles + checked):
                    table = table.append_column(_double_name(c), pc.cast(table.column(c), pa.float64(), safe=False))
                checks = [(_double_name(c), "sum") for c in checked]
                task_specs = specs + [s for s in checks if s not in specs]
                out = table.group_by(keys, use_threads=False).aggregate(
                    [([] if col == "" else col, fn) for col, fn in task_specs])
                # pyarrow puts the keys first or last depending on its version.
                n = len(keys)
                if out.column_names[:n] == keys:
                    key_cols, results = out.columns[:n], out.columns[n:]
                else:
                    results, key_cols = out.columns[:len(task_specs)], out.columns[len(task_specs):]
                for c in checked:
                    exact = results[task_specs.index((c, "sum"))]
                    if _overflowed(exact, results[task_specs.index((_double_name(c), "sum"))]):
                        raise ArithmeticError(
                            f"{uri}: aggregate: the sum of column '{c}' overflows a long (Spark's ANSI mode "
                            "fails such sums; with spark.sql.ansi.enabled=false they wrap around, as in Spark)")
                arrays = list(key_cols) + [results[i] for i in slot]
                arrays = [a.cast(f.type) for a, f in zip(arrays, partial_target)]
                yield from pa.Table.from_arrays(arrays, schema=partial_target).to_batches()

    work = work_frame(spark, [(p.fragment_id, p.start, p.end) for p in parts],
                       "fragment_id long, start long, end long")
    grouped = work.mapInArrow(partial, partial_schema)
    combined = [_combine(fn, [f"_p{i}" for i in idx]).alias(name) for name, fn, idx in finals]
    return grouped.groupBy(*keys).agg(*combined) if keys else grouped.agg(*combined)
