"""Spark's pushed filters as lance_core predicates (SQL text, evaluated in Rust).

The rules are the core's (`lance_core::spark::filters`), shared with the JVM reader: a
filter is taken only when the predicate means exactly what Spark means by it, on the column
as Lance stores it; the others are left for Spark to evaluate. Here the filters Spark hands
a Python data source are only written in the JSON those rules read.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from typing import List, Optional, Sequence

import pyarrow as pa

from .. import _lance_core


def _value(v) -> object:
    """A literal as the core reads it: its kind, and its exact text where JSON has none."""
    if v is None:
        return None
    if isinstance(v, bool):
        return {"bool": v}
    if isinstance(v, int):
        return {"int": str(v)}
    if isinstance(v, float):
        return {"float": repr(v)}
    if isinstance(v, decimal.Decimal):
        return {"decimal": format(v, "f")}
    if isinstance(v, str):
        return {"string": v}
    if isinstance(v, dt.datetime):
        # Only wall-clock timestamps: how Spark renders an instant in Python depends on
        # time zone settings the data source cannot see.
        if v.tzinfo is not None:
            return {"other": "timestamp with a time zone"}
        return {"timestamp_ntz": v.isoformat(sep=" ")}
    if isinstance(v, dt.date):
        return {"date": v.isoformat()}
    return {"other": type(v).__name__}


def _json(f) -> dict:
    """One of pyspark's data source filters in the core's JSON."""
    op = type(f).__name__
    if op == "Not":
        return {"op": op, "child": _json(f.child)}
    if op in ("And", "Or"):  # not sent by Spark 4.1-4.3, but cheap to take when they come
        return {"op": op, "left": _json(f.left), "right": _json(f.right)}
    out = {"op": op, "column": list(getattr(f, "attribute", ()))}
    if op == "In":
        out["values"] = [_value(v) for v in f.value]
    elif hasattr(f, "value"):
        out["value"] = _value(f.value)
    return out


def to_predicates(filters: Sequence, schema: pa.Schema) -> List[Optional[str]]:
    """The lance_core predicate for each Spark filter on a table of `schema`, or None for
    those Spark must evaluate itself."""
    return _lance_core._spark_predicates([json.dumps(_json(f)) for f in filters], schema)
