"""Spark's pushed filters as lance_core predicates (SQL text, evaluated in Rust).

A filter is taken only when the predicate means exactly what Spark means by it, on the
column as Lance stores it; the others are left for Spark to evaluate.
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Dict, Optional, Sequence

import pyarrow as pa

_COMPARISONS = {
    "EqualTo": "=",
    "GreaterThan": ">",
    "GreaterThanOrEqual": ">=",
    "LessThan": "<",
    "LessThanOrEqual": "<=",
}


def _quote_name(part: str) -> str:
    # Backticks: in lance_core's SQL, as in pylance's, "x" is a string.
    return "`" + part.replace("`", "``") + "`"


def _column(path: Sequence[str], types: Dict[str, pa.DataType]) -> Optional[str]:
    """The predicate's name for a column path, or None when the column cannot be filtered
    on in Lance (not a plain scalar, or a type whose values Spark sees differently)."""
    dotted = ".".join(path)
    t = types.get(dotted)
    if t is None or not _filterable(t):
        return None
    return ".".join(_quote_name(p) for p in path)


def _filterable(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        t = t.value_type
    return (pa.types.is_integer(t) or pa.types.is_floating(t) and t != pa.float16()
            or pa.types.is_boolean(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
            or pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_decimal(t))


def _literal(value, t: pa.DataType) -> Optional[str]:
    """SQL text of a literal Spark passed, or None when it has no exact text form."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        return repr(value)
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, dt.datetime):
        # Only wall-clock timestamps: how Spark renders an instant in Python depends on
        # time zone settings the data source cannot see.
        if value.tzinfo is not None or not pa.types.is_timestamp(t) or t.tz is not None:
            return None
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    return None


def _like_escape(s: str) -> str:
    """A LIKE pattern matching `s` literally (lance_core's LIKE escapes with a backslash)."""
    return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_").replace("'", "''")


def to_predicate(f, types: Dict[str, pa.DataType]) -> Optional[str]:
    """The lance_core predicate for one Spark filter, or None if it cannot be taken."""
    name = type(f).__name__
    if name == "Not":
        inner = to_predicate(f.child, types)
        return None if inner is None else f"NOT ({inner})"
    if name in ("And", "Or"):  # not sent by Spark 4.1-4.3, but cheap to take when they come
        left, right = to_predicate(f.left, types), to_predicate(f.right, types)
        return None if left is None or right is None else f"(({left}) {name.upper()} ({right}))"
    col = _column(f.attribute, types)
    if col is None:
        return None
    t = types[".".join(f.attribute)]
    if name == "IsNull":
        return f"{col} IS NULL"
    if name == "IsNotNull":
        return f"{col} IS NOT NULL"
    if name in _COMPARISONS:
        lit = _literal(f.value, t)
        return None if lit is None else f"{col} {_COMPARISONS[name]} {lit}"
    if name == "EqualNullSafe":
        if f.value is None:
            return f"{col} IS NULL"
        lit = _literal(f.value, t)
        # Null-safe equality with a non-null value: null rows are simply false.
        return None if lit is None else f"({col} IS NOT NULL AND {col} = {lit})"
    if name == "In":
        lits = [_literal(v, t) for v in f.value if v is not None]
        if not lits or any(lit is None for lit in lits) or len(lits) != len(f.value):
            return None
        return f"{col} IN ({', '.join(lits)})"
    if name in ("StringStartsWith", "StringEndsWith", "StringContains"):
        if not isinstance(f.value, str):
            return None
        v = _like_escape(f.value)
        pattern = {"StringStartsWith": f"{v}%", "StringEndsWith": f"%{v}", "StringContains": f"%{v}%"}[name]
        return f"{col} LIKE '{pattern}'"
    return None


def column_types(schema: pa.Schema) -> Dict[str, pa.DataType]:
    """Dotted path → Arrow type for every field reachable through structs."""
    out: Dict[str, pa.DataType] = {}

    def walk(prefix: str, field: pa.Field):
        path = f"{prefix}.{field.name}" if prefix else field.name
        out[path] = field.type
        if pa.types.is_struct(field.type):
            for child in field.type:
                walk(path, child)

    for f in schema:
        walk("", f)
    return out
