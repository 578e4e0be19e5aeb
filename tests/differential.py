"""Differential testing against pylance: random filters, and random sequences of row
changes, run in lance_core and in pylance on the same datasets and compared.

Filters. A generator builds random predicates over a table holding every scalar type
(nulls in every column, NaN, ±0.0, ±inf, the extremes of every integer type) from the
constructs both libraries accept. Each filter runs in both libraries (rows, row ids,
count_rows, limit/offset, whole rows through late materialization, and takes of the
matching row ids). Where the rows differ, the filter runs once more in pylance, written
out with every implicit conversion made explicit (`arrow_cast`) as lance_core's typing
rules (docs/expressions.md, "Expression types") give it. When pylance then returns lance_core's
rows, and the filter holds one of the places where pylance types a literal by the
column it meets at the top of a filter (a rule it does not apply inside), the
difference is one of those deliberate ones, counted by kind; anything else is a bug.

Row changes. Random sequences of delete / update / merge_insert / compaction run on two
copies of a dataset, one changed by each library, compared after every step (rows,
counts, stable row ids), and each library reads the other's result.

`python tests/differential.py --filters 10000 --sequences 1000 [--seed N]` is the long
mode; `tests/test_differential.py` runs a few hundred cases with a new seed each run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import os
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional

import numpy as np
import pyarrow as pa

# ---------------------------------------------------------------------------------------
# The table

INT_TYPES = {
    pa.int8(): (8, True), pa.int16(): (16, True), pa.int32(): (32, True), pa.int64(): (64, True),
    pa.uint8(): (8, False), pa.uint16(): (16, False), pa.uint32(): (32, False), pa.uint64(): (64, False),
}
FLOAT_TYPES = {pa.float16(): 16, pa.float32(): 32, pa.float64(): 64}


def int_range(t: pa.DataType):
    bits, signed = INT_TYPES[t]
    return (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2 ** bits - 1)


def _ints(rng: random.Random, t: pa.DataType, n: int) -> list:
    lo, hi = int_range(t)
    special = [lo, hi, lo + 1, hi - 1, 0, 1, 2, 7, 100]
    if lo < 0:
        special += [-1, -2, -100]
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.1:
            out.append(None)
        elif r < 0.5:
            out.append(rng.choice(special))
        elif r < 0.8:
            out.append(max(lo, min(hi, rng.randint(-20, 200))))
        else:
            out.append(rng.randint(lo, hi))
    return out


FLOAT_SPECIAL = [float("nan"), -0.0, 0.0, float("inf"), float("-inf"), 1.0, -1.0, 0.1, 0.5, 1.5, 2.0, 100.0,
                 -2.5, 1e-40, 3.4e38, -3.4e38, 1e308, -1e308, 16777217.0, 65504.0, 1e5]


def _floats(rng: random.Random, t: pa.DataType, n: int) -> pa.Array:
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.1:
            out.append(None)
        elif r < 0.6:
            out.append(rng.choice(FLOAT_SPECIAL))
        elif r < 0.8:
            out.append(float(rng.randint(-10, 10)))
        else:
            out.append(rng.uniform(-1000, 1000))
    dtype = {16: np.float16, 32: np.float32, 64: np.float64}[FLOAT_TYPES[t]]
    with np.errstate(over="ignore"):
        values = np.array([0.0 if v is None else v for v in out], dtype=np.float64).astype(dtype)
    return pa.array(values, t, mask=np.array([v is None for v in out]))


STRINGS = ["", "a", "A", "abc", "ABC", "ab", "b", "ab%", "a_c", "it's", "ñandú", "ΣΑΣ", " pad ", "zz", "15",
           "1.5", "2020-01-01", "a\\b", "%", "_", "x" * 40, "Z"]


def _strings(rng: random.Random, n: int) -> list:
    return [None if rng.random() < 0.1 else rng.choice(STRINGS) if rng.random() < 0.7
            else "".join(rng.choice("abcAB_% ") for _ in range(rng.randint(0, 6))) for _ in range(n)]


DATES = [dt.date(1970, 1, 1), dt.date(2000, 2, 29), dt.date(1900, 1, 1), dt.date(2020, 1, 1), dt.date(2024, 12, 31),
         dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1969, 12, 31)]


def build_table(n: int, seed: int) -> pa.Table:
    rng = random.Random(seed)
    cols = {"id": pa.array(range(n), pa.int64())}
    cols["b"] = pa.array([None if rng.random() < 0.15 else rng.random() < 0.5 for _ in range(n)], pa.bool_())
    for t, name in [(pa.int8(), "i8"), (pa.int16(), "i16"), (pa.int32(), "i32"), (pa.int64(), "i64"),
                    (pa.uint8(), "u8"), (pa.uint16(), "u16"), (pa.uint32(), "u32"), (pa.uint64(), "u64")]:
        cols[name] = pa.array(_ints(rng, t, n), t)
    cols["f16"] = _floats(rng, pa.float16(), n)
    cols["f32"] = _floats(rng, pa.float32(), n)
    cols["f64"] = _floats(rng, pa.float64(), n)
    cols["f64b"] = _floats(rng, pa.float64(), n)
    decs = [decimal.Decimal("99999999.99"), decimal.Decimal("-99999999.99"), decimal.Decimal("0"),
            decimal.Decimal("1.50"), decimal.Decimal("-0.01"), decimal.Decimal("2.25"), decimal.Decimal("100")]
    cols["dec"] = pa.array([None if rng.random() < 0.1 else rng.choice(decs) if rng.random() < 0.5
                            else decimal.Decimal(rng.randint(-100000, 100000)) / 100 for _ in range(n)],
                           pa.decimal128(10, 2))
    cols["s"] = pa.array(_strings(rng, n), pa.string())
    cols["ls"] = pa.array(_strings(rng, n), pa.large_string())
    cols["bin"] = pa.array([None if v is None else v.encode() for v in _strings(rng, n)], pa.binary())
    cols["d"] = pa.array([None if rng.random() < 0.1 else rng.choice(DATES) if rng.random() < 0.5
                          else dt.date(1970, 1, 1) + dt.timedelta(days=rng.randint(-30000, 30000)) for _ in range(n)],
                         pa.date32())
    cols["ts"] = pa.array([None if rng.random() < 0.1 else
                           dt.datetime.combine(rng.choice(DATES), dt.time(rng.randint(0, 23), rng.randint(0, 59)))
                           for _ in range(n)], pa.timestamp("us"))
    cols["tsz"] = pa.array([None if rng.random() < 0.1 else
                            dt.datetime.combine(rng.choice(DATES), dt.time(rng.randint(0, 23), 0))
                            for _ in range(n)], pa.timestamp("us", tz="UTC"))
    cols["ds"] = pa.array(_strings(rng, n), pa.string()).dictionary_encode().cast(
        pa.dictionary(pa.int16(), pa.string()))
    cols["li"] = pa.array([None if rng.random() < 0.1 else
                           [rng.choice([None, 0, 1, -1, 7, 2 ** 31 - 1]) for _ in range(rng.randint(0, 3))]
                           for _ in range(n)], pa.list_(pa.int32()))
    cols["lst"] = pa.array([None if rng.random() < 0.1 else
                            [rng.choice(STRINGS[:8] + [None]) for _ in range(rng.randint(0, 3))]
                            for _ in range(n)], pa.list_(pa.string()))
    cols["st"] = pa.array([None if rng.random() < 0.1 else
                           {"x": rng.choice([None, 0, 1, -5, 2 ** 31 - 1]), "y": rng.choice(STRINGS + [None])}
                           for _ in range(n)], pa.struct([("x", pa.int32()), ("y", pa.string())]))
    return pa.table(cols)


# ---------------------------------------------------------------------------------------
# The typing rules (docs/expressions.md, "Expression types"), as the model the oracle writes out.

def is_int(t): return t in INT_TYPES
def is_float(t): return t in FLOAT_TYPES
def is_dec(t): return pa.types.is_decimal(t)
def is_num(t): return is_int(t) or is_float(t) or is_dec(t)
def is_str(t): return t in (pa.string(), pa.large_string())
def is_temporal(t): return pa.types.is_date(t) or pa.types.is_timestamp(t)


def as_decimal(t):
    """The decimal a number meets a decimal as (in a comparison)."""
    if is_dec(t):
        return t
    if is_int(t):
        return pa.decimal128({8: 3, 16: 5, 32: 10, 64: 20}[INT_TYPES[t][0]], 0)
    return pa.decimal128(*{16: (6, 3), 32: (14, 7), 64: (30, 15)}[FLOAT_TYPES[t]])


def wider_decimal(a, b):
    a, b = as_decimal(a), as_decimal(b)
    s = max(a.scale, b.scale)
    return pa.decimal128(min(38, max(a.precision - a.scale, b.precision - b.scale) + s), s)


def numbers(a, b):
    """Two numbers, not decimals, in one type (pylance's query engine's table)."""
    for f in (pa.float64(), pa.float32(), pa.float16()):
        if f in (a, b):
            return f
    signed = {pa.int8(), pa.int16(), pa.int32(), pa.int64()}

    def signed_with(u, widths):
        return (a == u and b in widths) or (b == u and a in widths)

    if signed_with(pa.uint64(), signed):
        return pa.decimal128(20, 0)
    if pa.uint64() in (a, b):
        return pa.uint64()
    if pa.int64() in (a, b) or signed_with(pa.uint32(), signed):
        return pa.int64()
    if pa.uint32() in (a, b):
        return pa.uint32()
    if pa.int32() in (a, b) or signed_with(pa.uint16(), signed):
        return pa.int32()
    if pa.uint16() in (a, b):
        return pa.uint16()
    if pa.int16() in (a, b) or signed_with(pa.uint8(), signed):
        return pa.int16()
    return a


def cmp_common(a, b):
    """The type two values are compared in (None: they are not)."""
    if a == b:
        return a
    if a == pa.null():
        return b
    if b == pa.null():
        return a
    if is_num(a) and is_num(b):
        return wider_decimal(a, b) if is_dec(a) or is_dec(b) else numbers(a, b)
    if is_str(a) and is_str(b):
        return pa.large_string()
    if is_str(a) and is_temporal(b):
        return b
    if is_str(b) and is_temporal(a):
        return a
    if is_temporal(a) and is_temporal(b):
        stamps = [t for t in (a, b) if pa.types.is_timestamp(t)]
        if not stamps:
            return pa.date64()
        # (both here are microseconds) the zone of either
        return next((t for t in stamps if t.tz is not None), stamps[0])
    return None


def arith_inputs(a, b):
    """The types the two sides of `a op b` are converted to."""
    if a == b:
        return a, b
    if is_dec(a) and is_dec(b):
        return a, b
    if is_dec(a) and is_int(b):
        return a, as_decimal(b)
    if is_int(a) and is_dec(b):
        return as_decimal(a), b
    if is_dec(a) or is_dec(b):
        f = a if is_float(a) else b
        return f, f
    c = numbers(a, b)
    return c, c


def arith_result(op, a, b):
    """arrow's result type of `a op b` (both already converted)."""
    if not is_dec(a):
        return a
    p1, s1, p2, s2 = a.precision, a.scale, b.precision, b.scale
    if op in "+-":
        s = max(s1, s2)
        p = s + max(p1 - s1, p2 - s2) + 1
    elif op == "*":
        p, s = p1 + p2 + 1, s1 + s2
    elif op == "/":
        s = min(s1 + 4, 38)
        p = p1 + (s - s1 + s2)
    else:
        s = max(s1, s2)
        p = s + min(p1 - s1, p2 - s2)
    return pa.decimal128(min(p, 38), s)


@dataclass
class Lit:
    kind: str  # int, float, str, bool, null, date, ts, bytes
    value: object
    text: str
    typed: Optional[pa.DataType] = None  # DECIMAL(p, s) '...'

    @property
    def digits(self) -> str:
        """The number as written, for a decimal."""
        return self.text.split("'")[1] if self.typed is not None else self.text

    def natural(self):
        if self.typed is not None:
            return self.typed
        if self.kind == "bytes":
            return pa.binary()
        if self.kind == "int":
            return pa.int64() if -2 ** 63 <= self.value < 2 ** 63 else pa.uint64()
        return {"float": pa.float64(), "str": pa.string(), "bool": pa.bool_(), "null": pa.null(),
                "date": pa.date32(), "ts": pa.timestamp("us")}[self.kind]


def converts_exactly(lit: Lit, t) -> bool:
    """Whether the literal is the same value in type `t`."""
    v = lit.value
    if is_int(t):
        if lit.kind == "float" and (v != v or v in (float("inf"), float("-inf")) or v != int(v)):
            return False
        lo, hi = int_range(t)
        return lo <= int(v) <= hi
    if is_float(t):
        dtype = {16: np.float16, 32: np.float32, 64: np.float64}[FLOAT_TYPES[t]]
        with np.errstate(over="ignore"):
            there = dtype(v)
        return float(there) == float(v) if lit.kind == "float" else int(there) == v if np.isfinite(there) else False
    if is_dec(t):
        d = decimal.Decimal(lit.digits)
        if abs(d) >= decimal.Decimal(10) ** (t.precision - t.scale):
            return False
        return d == d.quantize(decimal.Decimal(1).scaleb(-t.scale), rounding=decimal.ROUND_DOWN)
    return False


BITS = {pa.int8(): 7, pa.uint8(): 8, pa.int16(): 15, pa.uint16(): 16, pa.int32(): 31, pa.uint32(): 32,
        pa.int64(): 63, pa.uint64(): 64}


def embeds(t, c) -> bool:
    """Every value of type `t` is a value of type `c`."""
    if t == c:
        return True
    if is_int(t) and is_int(c):
        (lo, hi), (clo, chi) = int_range(t), int_range(c)
        return clo <= lo and hi <= chi
    if is_int(t) and is_float(c):
        return BITS[t] <= {16: 11, 32: 24, 64: 53}[FLOAT_TYPES[c]]
    if is_float(t) and is_float(c):
        return FLOAT_TYPES[t] <= FLOAT_TYPES[c]
    if (is_int(t) or is_dec(t)) and is_dec(c):
        d = as_decimal(t)
        return d.scale <= c.scale and d.precision - d.scale <= c.precision - c.scale
    if is_str(t) and is_str(c):
        return True
    return pa.types.is_date(t) and is_temporal(c)


def compared_type(x_type, others: list):
    """The type a value and the values it is compared with meet in (None: refused): the
    fold of the pairwise rule, or the value's own type when every other is a literal that
    is the same value there and the value's type fits in the fold."""
    common = x_type
    for o in others:
        common = cmp_common(common, o.lit.natural() if isinstance(o, LitNode) else o.type)
        if common is None:
            return None
    exact_numbers = all(is_int(t) or is_dec(t) for t in (x_type, common))
    # Every other must be the same value in the value's type (16777217 is not a float32),
    # as lance_core's binder checks; else the fold decides.
    if (embeds(x_type, common) or exact_numbers) and all(
            isinstance(o, LitNode) and lit_meets(o.lit, x_type) == x_type
            and (o.lit.kind in ("null", "str", "date", "ts", "bool", "bytes") or converts_exactly(o.lit, x_type))
            for o in others):
        return x_type
    return common


def lit_meets(lit: Lit, t):
    """The type a literal and a value of type `t` are compared in (None: refused)."""
    k = lit.kind
    if k == "null":
        return t
    if k == "str":
        return t if is_str(t) or is_temporal(t) else None
    if k in ("date", "ts"):
        if not is_temporal(t):
            return None
        return t if (k == "date" or pa.types.is_timestamp(t)) else lit.natural()
    if k == "bool":
        return t if t == pa.bool_() else None
    if k == "bytes":
        return t if t == pa.binary() else None
    if not is_num(t):
        return None
    common = cmp_common(t, lit.natural())
    exact_numbers = common is not None and all(is_int(u) or is_dec(u) for u in (t, common))
    if common is not None and converts_exactly(lit, t) and (embeds(t, common) or exact_numbers):
        return t
    return common


# ---------------------------------------------------------------------------------------
# Expressions: each node prints itself as written (`sql`) and with every conversion
# written out (`typed`), and knows its type (`type`).

def cast_name(t) -> str:
    names = {pa.int8(): "Int8", pa.int16(): "Int16", pa.int32(): "Int32", pa.int64(): "Int64",
             pa.uint8(): "UInt8", pa.uint16(): "UInt16", pa.uint32(): "UInt32", pa.uint64(): "UInt64",
             pa.float16(): "Float16", pa.float32(): "Float32", pa.float64(): "Float64",
             pa.string(): "Utf8", pa.large_string(): "LargeUtf8", pa.bool_(): "Boolean",
             pa.date32(): "Date32", pa.binary(): "Binary", pa.null(): "Null"}
    if t in names:
        return names[t]
    if is_dec(t):
        return f"Decimal128({t.precision}, {t.scale})"
    if pa.types.is_timestamp(t):
        unit = {"s": "Second", "ms": "Millisecond", "us": "Microsecond", "ns": "Nanosecond"}[t.unit]
        return f"Timestamp({unit}, None)" if t.tz is None else f'Timestamp({unit}, Some("{t.tz}"))'
    raise ValueError(f"no cast name for {t}")


class Node:
    type: pa.DataType

    def sql(self) -> str: ...
    def typed(self) -> str: ...

    def as_type(self, t) -> str:
        """This value converted to `t`, written out."""
        if self.type == t:
            return self.typed()
        return f"arrow_cast({self.typed()}, '{cast_name(t)}')"


def lit_as(lit: Lit, t) -> str:
    if lit.kind == "null":
        return f"arrow_cast(NULL, '{cast_name(t)}')"
    if lit.kind == "float" and lit.typed is None and is_dec(t) and "e" not in lit.text.lower():
        # As written: a decimal parsed from the text, not through the nearest double.
        return f"arrow_cast('{lit.text}', '{cast_name(t)}')"
    text = lit.text
    if lit.kind in ("date", "ts"):
        text = "'" + str(lit.value) + "'"
    return f"arrow_cast({text}, '{cast_name(t)}')"


def paren(s: str) -> str:
    return f"({s})"


def zero_free(text: str, t) -> str:
    """A value compared in type `t`, made so that pylance compares floats as lance_core
    does: -0.0 made 0.0 (adding 0.0 does that and changes nothing else) and every NaN the
    NaN without a sign (nanvl; float16 goes through float32, which holds it exactly)."""
    if is_float(t):
        wide = "Float64" if t == pa.float64() else "Float32"
        return (f"nanvl(arrow_cast({text}, '{wide}') + arrow_cast(0, '{wide}'), "
                f"arrow_cast('NaN', '{wide}'))")
    return paren(text)


@dataclass
class Col(Node):
    name: str
    type: pa.DataType

    def sql(self):
        return self.name

    def typed(self):
        return self.name


@dataclass
class LitNode(Node):
    lit: Lit

    @property
    def type(self):
        return self.lit.natural()

    def sql(self):
        return self.lit.text

    def typed(self):
        return lit_as(self.lit, self.type)

    def as_type(self, t):
        return lit_as(self.lit, t)


@dataclass
class Arith(Node):
    op: str
    left: Node
    right: Node

    def __post_init__(self):
        self.lt, self.rt = arith_inputs(self.left.type, self.right.type)
        self.type = arith_result(self.op, self.lt, self.rt)

    def sql(self):
        return f"{paren(self.left.sql())} {self.op} {paren(self.right.sql())}"

    def typed(self):
        return f"{paren(self.left.as_type(self.lt))} {self.op} {paren(self.right.as_type(self.rt))}"


@dataclass
class Neg(Node):
    x: Node

    def __post_init__(self):
        self.type = self.x.type

    def sql(self):
        return f"-{paren(self.x.sql())}"

    def typed(self):
        return f"-{paren(self.x.typed())}"


@dataclass
class Call(Node):
    """A function whose argument and result types the model knows (`typing`)."""
    name: str
    args: List[Node]
    arg_types: list
    type: pa.DataType

    def sql(self):
        return f"{self.name}({', '.join(a.sql() for a in self.args)})"

    def typed(self):
        args = [a.as_type(t) for a, t in zip(self.args, self.arg_types)]
        if self.name == "nullif":
            # The equality of comparisons (-0.0 = 0.0, one NaN), as in `Cmp`.
            args = [zero_free(a, t) for a, t in zip(args, self.arg_types)]
        call = f"{self.name}({', '.join(args)})"
        if self.name == "round" and is_float(self.type) and len(self.args) == 2 and self.args[1].lit.value > 0:
            # A float too large to have digits after the point stays as it is (pylance: inf);
            # CASE is taken inside a function.
            x = args[0]
            top = "3.4028234663852886e38" if self.type == pa.float32() else "1.7976931348623157e308"
            return (f"coalesce(CASE WHEN abs(arrow_cast({x}, 'Float64') * 1e{self.args[1].lit.value}) "
                    f"> {top} THEN {x} ELSE {call} END)")
        return call


SQL_TYPES = {"TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(), "BIGINT": pa.int64(),
             "TINYINT UNSIGNED": pa.uint8(), "INT UNSIGNED": pa.uint32(), "BIGINT UNSIGNED": pa.uint64(),
             "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "DECIMAL(10, 2)": pa.decimal128(10, 2),
             "DECIMAL(20, 4)": pa.decimal128(20, 4), "STRING": pa.string()}


@dataclass
class Cast(Node):
    """`CAST(x AS t)` (`TRY_CAST` with `safe`)."""
    x: Node
    name: str
    safe: bool

    def __post_init__(self):
        self.type = SQL_TYPES[self.name]

    def text(self, inner):
        return f"{'TRY_CAST' if self.safe else 'CAST'}({inner} AS {self.name})"

    def sql(self):
        return self.text(self.x.sql())

    def typed(self):
        # Wrapped, so that pylance does not drop the cast where it meets a constant
        # (`TRY_CAST(u64 AS DECIMAL(10, 2)) >= 2` compares u64 with 2 there).
        inner = self.text(self.x.typed())
        if is_str(self.type):
            return f"({inner} || '')"
        return f"({inner} + arrow_cast(0, '{cast_name(self.type)}'))"


@dataclass
class Concat(Node):
    """`a || b`: a string, NULL when either is."""
    left: Node
    right: Node
    type: pa.DataType = pa.string()

    def sql(self):
        return f"{paren(self.left.sql())} || {paren(self.right.sql())}"

    def typed(self):
        return f"{paren(self.left.typed())} || {paren(self.right.typed())}"


@dataclass
class Field(Node):
    """`st['y']`: a struct's field by subscript."""
    struct: str
    name: str
    type: pa.DataType

    def sql(self):
        return f"{self.struct}['{self.name}']"

    def typed(self):
        return self.sql()


@dataclass
class Element(Node):
    """`li[k]`: a list's element, from 1 (from the end when negative)."""
    name: str
    index: int
    type: pa.DataType

    def sql(self):
        return f"{self.name}[{self.index}]"

    def typed(self):
        return self.sql()


def compared(x: Node, y: Node):
    """The type two sides of a comparison meet in (None: refused)."""
    if isinstance(y, LitNode):
        return compared_type(x.type, [y])
    if isinstance(x, LitNode):
        return compared_type(y.type, [x])
    return cmp_common(x.type, y.type)


@dataclass
class Cmp(Node):
    op: str
    left: Node
    right: Node
    type: pa.DataType = pa.bool_()

    def __post_init__(self):
        self.common = compared(self.left, self.right)

    def sql(self):
        return f"{paren(self.left.sql())} {self.op} {paren(self.right.sql())}"

    def typed(self):
        t = self.common
        return f"{zero_free(self.left.as_type(t), t)} {self.op} {zero_free(self.right.as_type(t), t)}"


@dataclass
class Between(Node):
    x: Node
    lo: LitNode
    hi: LitNode
    negated: bool
    type: pa.DataType = pa.bool_()

    def sql(self):
        n = "NOT " if self.negated else ""
        return f"{paren(self.x.sql())} {n}BETWEEN {self.lo.sql()} AND {self.hi.sql()}"

    def typed(self):
        t = compared_type(self.x.type, [self.lo, self.hi])
        x = zero_free(self.x.as_type(t), t)
        both = (f"({x} >= {zero_free(self.lo.as_type(t), t)}) AND "
                f"({x} <= {zero_free(self.hi.as_type(t), t)})")
        return f"NOT ({both})" if self.negated else both


@dataclass
class InList(Node):
    x: Node
    items: List[LitNode]
    negated: bool
    type: pa.DataType = pa.bool_()

    def __post_init__(self):
        self.common = compared_type(self.x.type, self.items)

    def sql(self):
        n = "NOT " if self.negated else ""
        return f"{paren(self.x.sql())} {n}IN ({', '.join(i.sql() for i in self.items)})"

    def typed(self):
        n = "NOT " if self.negated else ""
        t = self.common
        items = ", ".join(zero_free(i.as_type(t), t) for i in self.items)
        return f"{zero_free(self.x.as_type(t), t)} {n}IN ({items})"


@dataclass
class IsNull(Node):
    x: Node
    negated: bool
    type: pa.DataType = pa.bool_()

    def sql(self):
        return f"{paren(self.x.sql())} IS {'NOT ' if self.negated else ''}NULL"

    def typed(self):
        return f"{paren(self.x.typed())} IS {'NOT ' if self.negated else ''}NULL"


@dataclass
class IsBool(Node):
    """`x IS [NOT] TRUE|FALSE|UNKNOWN`; pylance has no UNKNOWN, so it gets IS NULL."""
    x: Node
    which: str
    negated: bool
    type: pa.DataType = pa.bool_()

    def sql(self):
        return f"{paren(self.x.sql())} IS {'NOT ' if self.negated else ''}{self.which}"

    def for_pylance(self, inner: str):
        which = "NULL" if self.which == "UNKNOWN" else self.which
        return f"{paren(inner)} IS {'NOT ' if self.negated else ''}{which}"

    def typed(self):
        return self.for_pylance(self.x.typed())


@dataclass
class Like(Node):
    x: Node
    pattern: str
    negated: bool
    ilike: bool
    type: pa.DataType = pa.bool_()

    def text(self, inner):
        op = ("NOT " if self.negated else "") + ("ILIKE" if self.ilike else "LIKE")
        return f"{paren(inner)} {op} '{self.pattern}'"

    def sql(self):
        return self.text(self.x.sql())

    def typed(self):
        return self.text(self.x.typed())


@dataclass
class Not(Node):
    x: Node
    type: pa.DataType = pa.bool_()

    def sql(self):
        return f"NOT {paren(self.x.sql())}"

    def typed(self):
        return f"NOT {paren(self.x.typed())}"


@dataclass
class Logic(Node):
    op: str
    left: Node
    right: Node
    type: pa.DataType = pa.bool_()

    def sql(self):
        return f"{paren(self.left.sql())} {self.op} {paren(self.right.sql())}"

    def typed(self):
        return f"{paren(self.left.typed())} {self.op} {paren(self.right.typed())}"


@dataclass
class ListHas(Node):
    """`array_has_any(li, [..])`, `array_has_all`, `array_has(li, x)` and their other names."""
    function: str
    name: str
    items: List[str]
    type: pa.DataType = pa.bool_()

    def sql(self):
        if self.function in ("array_has", "array_contains", "list_has", "list_contains"):
            return f"{self.function}({self.name}, {self.items[0]})"
        return f"{self.function}({self.name}, [{', '.join(self.items)}])"

    def typed(self):
        return self.sql()


def has_strict_cast(n: Node) -> bool:
    if isinstance(n, Cast) and not n.safe:
        return True
    return any(has_strict_cast(c) for c in children(n))


def children(n: Node) -> List[Node]:
    out = []
    for v in vars(n).values():
        if isinstance(v, Node):
            out.append(v)
        elif isinstance(v, list):
            out += [c for c in v if isinstance(c, Node)]
    return out


def pylance_text(n: Node) -> str:
    """The filter as pylance is given it: as written, but for IS UNKNOWN (IS NULL there)."""
    if isinstance(n, IsBool):
        return n.for_pylance(pylance_text(n.x))
    if isinstance(n, Not):
        return f"NOT {paren(pylance_text(n.x))}"
    if isinstance(n, Logic):
        return f"{paren(pylance_text(n.left))} {n.op} {paren(pylance_text(n.right))}"
    return n.sql()


# ---------------------------------------------------------------------------------------
# Where pylance types differently: at the top of a filter (and of each AND/OR side
# there), pylance converts a literal compared with a column to the column's type —
# also every literal inside arithmetic compared with a column — and inside anything
# else uses its query engine's rules. Each kind names one such place where lance_core's
# single rule gives other values.

def explanations(n: Node) -> List[str]:
    """The documented differences the filter holds: pylance's top-level typing, and
    comparisons of two float values (pylance tells -0.0 from 0.0 there, though not when a
    float is compared with a constant)."""
    return top_level_quirks(n) + zero_sign_sites(n) + decimal_literal_sites(n) + dropped_casts(n)


def dropped_casts(n: Node) -> List[str]:
    """CASTs compared with a constant, which pylance drops (comparing the value before the
    cast, whether the cast would fail or give NULL)."""
    out = []
    if isinstance(n, (Cmp, InList, Between)):
        kids = children(n)
        if any(isinstance(c, Cast) for c in kids) and any(isinstance(c, LitNode) for c in kids):
            out.append("a CAST compared with a constant is a CAST")
    for c in children(n):
        out += dropped_casts(c)
    return out


def decimal_literal_sites(n: Node) -> List[str]:
    """Numbers with a fraction compared with decimals: exact as written here, through the
    nearest double in pylance."""
    out = []
    if isinstance(n, (Cmp, InList, Between)):
        t = n.common if not isinstance(n, Between) else compared_type(n.x.type, [n.lo, n.hi])
        lits = [c for c in children(n) if isinstance(c, LitNode)]
        if t is not None and is_dec(t) and any(x.lit.kind == "float" and x.lit.typed is None for x in lits):
            out.append("a number with a fraction meets a decimal as written")
    for c in children(n):
        out += decimal_literal_sites(c)
    return out


def zero_sign_sites(n: Node) -> List[str]:
    out = []
    if isinstance(n, Cmp) and n.common is not None and is_float(n.common) and not (
            isinstance(n.left, LitNode) or isinstance(n.right, LitNode)):
        out.append("two float values compared: -0.0 equals 0.0")
    if isinstance(n, (Arith, Neg)) and is_float(n.type):
        out.append("float arithmetic: a NaN is NaN whatever its sign")
    if isinstance(n, Call) and n.name == "nullif" and is_float(n.type):
        out.append("nullif of floats: -0.0 equals 0.0")
    if isinstance(n, Call) and n.name == "round" and is_float(n.type) and len(n.args) == 2:
        out.append("round of a float too large to have digits after the point")
    for child in children(n):
        out += zero_sign_sites(child)
    return out


def top_level_quirks(n: Node) -> List[str]:
    if isinstance(n, Logic):
        return top_level_quirks(n.left) + top_level_quirks(n.right)
    kinds = []

    def literal_into(col: Node, lit: LitNode):
        t = col.type
        if lit.lit.kind == "float" and t in (pa.float32(), pa.float16()):
            kinds.append("float literal rounded to the column's float32/float16")

    if isinstance(n, Cmp):
        for col, other in ((n.left, n.right), (n.right, n.left)):
            if isinstance(col, Col):
                if isinstance(other, LitNode):
                    literal_into(col, other)
                elif isinstance(other, Arith) and col is n.left:
                    kinds.append("arithmetic compared with a column computed in that column's type")
    elif isinstance(n, Between) and isinstance(n.x, Col):
        for lit in (n.lo, n.hi):
            literal_into(n.x, lit)
    elif isinstance(n, InList) and isinstance(n.x, Col):
        for lit in n.items:
            literal_into(n.x, lit)
    return kinds


# ---------------------------------------------------------------------------------------
# The generator

NUMERIC_COLS = ["id", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64", "f64b", "dec"]
STRING_COLS = ["s", "ls", "ds"]


class Generator:
    def __init__(self, rng: random.Random, schema: pa.Schema):
        self.rng = rng
        # A dictionary column is typed as its values (as both libraries compare it).
        self.types = {f.name: f.type.value_type if pa.types.is_dictionary(f.type) else f.type for f in schema}
        self.numeric = [c for c in NUMERIC_COLS if c in self.types]
        self.strings = [c for c in STRING_COLS if c in self.types]

    def col(self, name):
        return Col(name, self.types[name])

    # literals
    def int_lit(self, near=None) -> LitNode:
        r = self.rng
        pool = [0, 1, -1, 2, 7, 100, -100, 127, 128, -128, 255, 256, 32767, -32768, 65535, 2 ** 31 - 1, -2 ** 31,
                2 ** 32 - 1, 2 ** 63 - 1, -2 ** 63 + 1, 16777217, 100000]
        if near is not None and is_int(near) and r.random() < 0.5:
            lo, hi = int_range(near)
            v = r.choice([lo, hi, lo + 1, hi - 1, 0, 1])
        else:
            v = r.choice(pool) if r.random() < 0.7 else r.randint(-300, 300)
        if v == -2 ** 63:
            # pylance reads this one integer as a double (docs/expressions.md: deliberate differences).
            v += 1
        return LitNode(Lit("int", v, str(v)))

    def float_lit(self) -> LitNode:
        text = self.rng.choice(["0.0", "-0.0", "0.1", "0.5", "1.5", "-2.5", "1.0", "100.0", "1e308", "-1e308",
                                "3.4e38", "1e-40", "16777217.0", "65504.0", "2.25", "1.50", "0.01", "99999999.99",
                                "1e5", "-0.01", "3.0"])
        return LitNode(Lit("float", float(text), text))

    def str_lit(self) -> LitNode:
        s = self.rng.choice(STRINGS)
        if self.rng.random() < 0.1 and '"' not in s and "\\" not in s:
            return LitNode(Lit("str", s, '"' + s + '"'))  # a string, as in pylance
        return LitNode(Lit("str", s, "'" + s.replace("'", "''") + "'"))

    def lit_for(self, t) -> LitNode:
        r = self.rng
        if r.random() < 0.04:
            return LitNode(Lit("null", None, "NULL"))
        if is_dec(t) and r.random() < 0.2:
            v = r.choice(["1.50", "-0.01", "99999999.99", "0", "2.25"])
            return LitNode(Lit("float", float(v), f"DECIMAL(10, 2) '{v}'", typed=pa.decimal128(10, 2)))
        if is_int(t) or is_dec(t):
            return self.int_lit(t) if r.random() < 0.7 else self.float_lit()
        if is_float(t):
            return self.float_lit() if r.random() < 0.6 else self.int_lit()
        if is_str(t):
            return self.str_lit()
        if t == pa.bool_():
            b = r.random() < 0.5
            return LitNode(Lit("bool", b, "true" if b else "false"))
        if pa.types.is_date(t):
            d = r.choice(DATES)
            if r.random() < 0.5:
                return LitNode(Lit("date", d, f"DATE '{d}'"))
            return LitNode(Lit("str", str(d), f"'{d}'"))
        if pa.types.is_timestamp(t):
            d = dt.datetime.combine(r.choice(DATES), dt.time(r.randint(0, 23), 0))
            return LitNode(Lit("ts", d, f"TIMESTAMP '{d}'"))
        if t == pa.binary():
            b = r.choice([b"", b"a", b"ab", b"abc", b"\xff", b"z"])
            return LitNode(Lit("bytes", b, "X'" + b.hex().upper() + "'"))
        raise ValueError(t)

    # values
    def number(self, depth: int) -> Node:
        r = self.rng.random()
        if depth <= 0 or r < 0.5:
            return self.col(self.rng.choice(self.numeric))
        if r < 0.8:
            op = self.rng.choice("+-*+-*/%")
            left = self.number(depth - 1)
            if self.rng.random() < 0.6:
                right = self.int_lit() if self.rng.random() < 0.7 else self.float_lit()
            else:
                right = self.number(depth - 1)
            if not self.arith_ok(op, left.type, right.type):
                return left
            return Arith(op, left, right)
        if r < 0.85:
            x = self.number(depth - 1)
            if is_int(x.type) and not INT_TYPES[x.type][1]:
                return x
            return Neg(x)
        if r < 0.88:
            x = self.number(depth - 1)
            return Call("abs", [x], [x.type], x.type)
        if r < 0.91:
            x = self.number(depth - 1)
            if x.type == pa.float16() or is_dec(x.type):
                return x
            return Cast(x, self.rng.choice(list(SQL_TYPES)[:-1]), self.rng.random() < 0.3)
        if r < 0.94:
            return self.round(depth)
        if r < 0.97:
            return self.choice_of(depth)
        return self.length()

    def round(self, depth) -> Node:
        x = self.number(depth - 1)
        t = x.type if x.type == pa.float32() or is_dec(x.type) else pa.float64()
        args, types = [x], [t if not is_dec(x.type) else x.type]
        if self.rng.random() < 0.5:
            d = self.rng.choice([0, 1, 2, -1, 5])
            args.append(LitNode(Lit("int", d, str(d))))
            types.append(pa.int64())
        return Call("round", args, types, t)

    def choice_of(self, depth) -> Node:
        """coalesce or nullif of a number and a literal or another number."""
        x = self.number(depth - 1)
        y = self.lit_for(x.type) if self.rng.random() < 0.7 else self.number(depth - 1)
        if not self.arith_ok("+", x.type, y.type):
            return x
        yt = y.lit.natural() if isinstance(y, LitNode) else y.type
        t = cmp_common(x.type, yt)
        if t is None or yt == pa.null():
            return x
        name = self.rng.choice(["coalesce", "nullif"])
        return Call(name, [x, y], [t, t], t)

    @staticmethod
    def arith_ok(op, a, b) -> bool:
        # Float16 does not meet decimals in either library.
        if (is_dec(a) and b == pa.float16()) or (is_dec(b) and a == pa.float16()):
            return False
        return True

    def length(self) -> Node:
        s = self.string(0)
        t = pa.int64() if s.type == pa.large_string() else pa.int32()
        return Call("length", [s], [s.type], t)

    def string(self, depth: int) -> Node:
        r = self.rng.random()
        c = self.col(self.rng.choice(self.strings))
        if depth <= 0 or r < 0.5:
            return c
        if r < 0.6 and "st" in self.types:
            return Field("st", "y", pa.string())
        if r < 0.7:
            lit = self.str_lit()
            if self.rng.random() < 0.5:
                return Concat(c, lit)
            return Call("concat", [c, lit], [c.type, pa.string()], pa.large_string()
                        if c.type == pa.large_string() else pa.string())
        # (pylance takes neither substr(s, ...) nor TRIM(s), which its parser reads as SQL's
        # SUBSTRING and TRIM syntax)
        f = self.rng.choice(["lower", "upper", "ltrim", "rtrim"])
        return Call(f, [c], [c.type], c.type)

    def value_and_literal(self, depth):
        kind = self.rng.random()
        if kind < 0.55:
            return self.number(depth)
        if kind < 0.75:
            return self.string(depth)
        if kind < 0.85:
            return self.col("d")
        if kind < 0.92:
            return self.col("tsz" if "tsz" in self.types and self.rng.random() < 0.3 else "ts")
        if kind < 0.94 or "st" not in self.types:
            return self.col("b")
        if kind < 0.96 and "bin" in self.types:
            return self.col("bin")
        if kind < 0.98 and "li" in self.types:
            return Element("li", self.rng.choice([1, 2, -1, 5]), pa.int32())
        return Col("st.x", pa.int32())

    def comparison(self, depth) -> Node:
        x = self.value_and_literal(depth)
        op = self.rng.choice(["=", "<>", "<", "<=", ">", ">=", "!=", "IS DISTINCT FROM", "IS NOT DISTINCT FROM"])
        r = self.rng.random()
        if r < 0.7:
            y = self.lit_for(x.type)
        elif is_num(x.type):
            y = self.number(depth)
            if not self.arith_ok("+", x.type, y.type):
                y = self.lit_for(x.type)
        elif is_str(x.type):
            y = self.string(depth)
        else:
            y = Col(x.name, x.type) if isinstance(x, Col) else self.lit_for(x.type)
            if isinstance(x, Col) and x.name in ("d", "ts", "tsz"):
                y = self.col(self.rng.choice([c for c in ("d", "ts", "tsz") if c in self.types]))
        if self.rng.random() < 0.2 and isinstance(y, LitNode):
            x, y = y, x
        node = Cmp(op, x, y)
        return node if node.common is not None else Cmp(op, x, self.lit_for(x.type))

    def list_has(self) -> Node:
        rng = self.rng
        if rng.random() < 0.5 and "li" in self.types:
            name, pool = "li", ["NULL", "0", "1", "-1", "7", "2147483647", "2.5", "3000000000", "1.0"]
        else:
            name, pool = "lst", ["NULL", "''", "'a'", "'A'", "'abc'", "'ab%'", "'zz'"]
        function = rng.choice(["array_has_any", "array_has_all", "array_has", "array_contains", "list_has_any",
                               "arrays_overlap", "list_has_all"])
        single = function in ("array_has", "array_contains")
        items = [rng.choice(pool) for _ in range(1 if single else rng.randint(0 if rng.random() < 0.1 else 1, 3))]
        return ListHas(function, name, items)

    def predicate(self, depth: int) -> Node:
        r = self.rng.random()
        if depth <= 0 or r < 0.4:
            return self.comparison(depth)
        if r < 0.48:
            x = self.value_and_literal(depth - 1)
            return Between(x, self.lit_for(x.type), self.lit_for(x.type), self.rng.random() < 0.3)
        if r < 0.56:
            x = self.value_and_literal(depth - 1)
            items = [self.lit_for(x.type) for _ in range(self.rng.randint(1, 4))]
            return InList(x, items, self.rng.random() < 0.3)
        if r < 0.62:
            return IsNull(self.value_and_literal(depth - 1), self.rng.random() < 0.5)
        if r < 0.70:
            x = self.col("b") if self.rng.random() < 0.4 else self.predicate(depth - 1)
            return IsBool(x, self.rng.choice(["TRUE", "FALSE", "UNKNOWN"]), self.rng.random() < 0.5)
        if r < 0.76:
            pattern = self.rng.choice(["a%", "%b%", "_", "%", "A%", "ab\\%", "%'%", "Σ%", "a_c", "", "a\\_c", "%\\\\%",
                                       "_b%", "%c", "%abc%", "xxx%", "%ABC", "%ñan%", "a%xxx%b", "%pad %", "%20_0-01%"])
            return Like(self.string(depth - 1), pattern.replace("'", "''"), self.rng.random() < 0.3,
                        self.rng.random() < 0.3)
        if r < 0.80:
            return self.list_has()
        if r < 0.86:
            return Not(self.predicate(depth - 1))
        if r < 0.90:
            return self.col("b")
        return Logic(self.rng.choice(["AND", "OR"]), self.predicate(depth - 1), self.predicate(depth - 1))


# ---------------------------------------------------------------------------------------
# Running filters in both libraries

def _error(fn: Callable, *args, **kwargs):
    """(fn(*args, **kwargs), None), or (None, the error's class and first line)."""
    try:
        return fn(*args, **kwargs), None
    except Exception as e:  # noqa: BLE001 - any failure is an outcome to compare
        return None, f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"


def same_rows(a: pa.Table, b: pa.Table) -> bool:
    """Equal values, NaN equal to NaN and -0.0 told from 0.0."""
    if a.num_rows != b.num_rows or a.column_names != b.column_names:
        return False
    return repr(a.to_pylist()) == repr(b.to_pylist())


@dataclass
class Report:
    filters: int = 0
    agreed: int = 0
    pylance_refused: int = 0
    both_refused: int = 0
    we_refused: List[str] = field(default_factory=list)
    typing: dict = field(default_factory=dict)
    bugs: List[str] = field(default_factory=list)
    cast_failures: int = 0

    def summary(self) -> str:
        accepted = self.filters - self.pylance_refused - self.both_refused
        lines = [f"{self.filters} filters, {accepted} of them accepted by pylance: lance_core gave pylance's rows "
                 f"for {self.agreed}, other rows where docs/expressions.md says it does for "
                 f"{sum(len(v) for v in self.typing.values())}, other rows otherwise for {len(self.bugs)}, "
                 f"and refused {len(self.we_refused)}; pylance refused {self.pylance_refused + self.both_refused} "
                 f"(lance_core too: {self.both_refused})"]
        for kind, examples in self.typing.items():
            lines.append(f"  deliberate, {kind}: {len(examples)}, e.g. {examples[0]}")
        lines += [f"  BUG {b}" for b in self.bugs[:20]]
        lines += [f"  REFUSED {w}" for w in self.we_refused[:20]]
        return "\n".join(lines)


INDEXED = {"BTREE": ["i32", "i64", "u64", "f64", "dec", "s", "d", "b"],
           "ZONEMAP": ["id", "f32", "tsz", "bin"],
           "BLOOMFILTER": ["i16", "ts"],
           "BITMAP": ["i8", "u8", "u16", "f64b", "ls", "u32"],
           "LABEL_LIST": ["li", "lst"],
           # A second index on "s": LIKE with no fixed prefix reaches it (the BTREE cannot answer).
           "NGRAM": ["s"]}


def build_indices(ds) -> None:
    """BTREE indices with small pages (so that pages are chosen), BITMAP and LABEL_LIST
    indices, ZONEMAP and BLOOMFILTER indices with small zones, and NGRAM indices."""
    from lance.indices import IndexConfig
    for column in INDEXED["BTREE"]:
        ds.create_scalar_index(column, IndexConfig(index_type="btree", parameters={"zone_size": 16}))
    for column in INDEXED["BITMAP"]:
        ds.create_scalar_index(column, "BITMAP")
    for column in INDEXED["LABEL_LIST"]:
        ds.create_scalar_index(column, "LABEL_LIST")
    for column in INDEXED["ZONEMAP"]:
        ds.create_scalar_index(column, IndexConfig(index_type="zonemap", parameters={"rows_per_zone": 40}))
    for column in INDEXED["BLOOMFILTER"]:
        ds.create_scalar_index(column, IndexConfig(index_type="bloomfilter", parameters={"number_of_items": 40}))
    for column in INDEXED["NGRAM"]:
        ds.create_scalar_index(column, "NGRAM", name=f"{column}_ngram")


class FilterCheck:
    """Datasets written by pylance, open in both libraries."""

    def __init__(self, root: str, rows: int = 400, seed: int = 0):
        import lance
        import lance_core
        self.lance, self.lance_core = lance, lance_core
        self.table = build_table(rows, seed)
        self.paths = []
        for version, stable in (("2.1", False), ("2.2", True)):
            path = os.path.join(root, f"filters_{version}.lance")
            lance.write_dataset(self.table, path, data_storage_version=version, max_rows_per_file=150,
                                enable_stable_row_ids=stable)
            lance.dataset(path).delete("id % 7 = 3 OR id = 5")
            self.paths.append(path)
        self.pairs = [(lance_core.dataset(p), lance.dataset(p)) for p in self.paths]
        # The same table with scalar indices on most columns, which lance_core answers
        # filters from, against pylance scanning an unindexed copy (same row addresses).
        indexed, plain = (os.path.join(root, f"filters_{name}.lance") for name in ("indexed", "plain"))
        for path in (indexed, plain):
            lance.write_dataset(self.table, path, data_storage_version="2.2", max_rows_per_file=150)
            lance.dataset(path).delete("id % 7 = 3 OR id = 5")
        build_indices(lance.dataset(indexed))
        self.pairs.append((lance_core.dataset(indexed), lance.dataset(plain)))
        self.all_columns = self.table.column_names

    def run(self, node: Node, report: Report, rng: random.Random, thorough: bool):
        report.filters += 1
        ours_text, theirs_text = node.sql(), pylance_text(node)
        deliberate = None
        for k, (ours, ref) in enumerate(self.pairs):
            q = dict(columns=["id"], with_row_id=True)
            mine, my_err = _error(ours.to_table, filter=ours_text, **q)
            theirs, their_err = _error(ref.to_table, filter=theirs_text, **q)
            if their_err:
                if my_err:
                    report.both_refused += 1
                else:
                    report.pylance_refused += 1
                return
            if my_err:
                if ("Cast error" in my_err or "too large to store" in my_err) and has_strict_cast(node):
                    # SQL's answer: a CAST of a value that does not fit fails. pylance drops
                    # a CAST compared with a constant instead (docs/expressions.md).
                    report.typing.setdefault("CAST of a value that does not fit fails", []).append(ours_text)
                    report.cast_failures += 1
                    return
                report.we_refused.append(f"{ours_text}  ->  {my_err}")
                return
            text_for_ref = theirs_text
            if not same_rows(mine, theirs):
                typed = node.typed()
                explained, typed_err = _error(ref.to_table, filter=typed, **q)
                kinds = explanations(node)
                if typed_err is None and same_rows(mine, explained) and kinds:
                    deliberate = deliberate or kinds[0]
                    text_for_ref = typed
                else:
                    ids = lambda t: t["id"].to_pylist()[:12]  # noqa: E731
                    report.bugs.append(f"{ours_text}  [dataset {k}] ours {ids(mine)}... pylance {ids(theirs)}... "
                                       f"typed: {typed_err or ids(explained)}  ({typed})")
                    return
            problem = self.compare_more(ours, ref, ours_text, text_for_ref, mine, rng, thorough)
            if problem:
                report.bugs.append(f"{ours_text}  [dataset {k}] {problem}")
                return
        if deliberate:
            report.typing.setdefault(deliberate, []).append(ours_text)
        else:
            report.agreed += 1

    def compare_more(self, ours, ref, ours_text, ref_text, rows: pa.Table, rng, thorough) -> Optional[str]:
        n, theirs = ours.count_rows(filter=ours_text), ref.count_rows(filter=ref_text)
        if n != theirs:
            return f"count_rows {n} vs {theirs}"
        limit, offset = rng.randint(0, 12), rng.randint(0, 8)
        q = dict(columns=["id"], filter=None, limit=limit, offset=offset)
        a = ours.to_table(**{**q, "filter": ours_text})
        b = ref.to_table(**{**q, "filter": ref_text})
        if not same_rows(a, b):
            return f"limit {limit} offset {offset}: {a['id'].to_pylist()} vs {b['id'].to_pylist()}"
        if thorough:
            a = ours.to_table(filter=ours_text)
            b = ref.to_table(filter=ref_text)
            if not same_rows(a, b):
                return "whole rows differ"
            ids = rows["_rowid"].to_pylist()
            pick = rng.sample(ids, min(len(ids), 5))
            a, b = ours.take_rows(pick), ref._take_rows(pick)
            if not same_rows(a, b):
                return f"take_rows({pick}) differs"
        return None


def run_filters(root: str, count: int, seed: int, log=print) -> Report:
    rng = random.Random(seed)
    check = FilterCheck(root, seed=seed)
    gen = Generator(rng, check.table.schema)
    report = Report()
    started = time.time()
    for i in range(count):
        node = gen.predicate(rng.randint(0, 3))
        check.run(node, report, rng, thorough=(i % 5 == 0))
        if log and (i + 1) % 1000 == 0:
            log(f"{i + 1} filters, {time.time() - started:.0f} s: {len(report.bugs)} disagree")
    return report


# ---------------------------------------------------------------------------------------
# Random sequences of row changes

SEQUENCE_COLUMNS = ["id", "b", "i8", "i32", "u8", "i64", "u64", "f32", "f64", "dec", "s", "ls", "d", "ts"]


def sorted_rows(t: pa.Table) -> pa.Table:
    return t.sort_by("id")


@dataclass
class SequenceReport:
    sequences: int = 0
    steps: int = 0
    refused_by_both: int = 0
    bugs: List[str] = field(default_factory=list)
    pylance_failed: List[str] = field(default_factory=list)

    def summary(self) -> str:
        lines = [f"{self.sequences} change sequences, {self.steps} steps: {len(self.bugs)} disagree "
                 f"({self.refused_by_both} steps refused by both libraries, {len(self.pylance_failed)} "
                 f"sequences ended where pylance failed a step lance_core did)"]
        lines += [f"  PYLANCE FAILED {b}" for b in self.pylance_failed[:10]]
        return "\n".join(lines + [f"  BUG {b}" for b in self.bugs[:20]])


class Sequences:
    """Two copies of a table, one changed by each library, step by step."""

    def __init__(self, root: str, seed: int):
        import lance
        import lance_core
        self.lance, self.lance_core = lance, lance_core
        self.root, self.rng = root, random.Random(seed)
        self.full = build_table(600, seed).select(SEQUENCE_COLUMNS)
        self.gen = Generator(self.rng, self.full.schema)
        self.gen.numeric = [c for c in NUMERIC_COLS if c in SEQUENCE_COLUMNS]

    def value_for(self, column: str) -> str:
        """An update's new value for `column`, in SQL."""
        t = self.full.schema.field(column).type
        r = self.rng.random()
        if is_int(t) or is_float(t) or is_dec(t):
            if r < 0.5:
                return f"{column} {self.rng.choice('+-*')} {self.rng.choice([1, 2, 3, 7])}"
            return self.gen.lit_for(t).sql() if r < 0.8 else f"abs({column})"
        if is_str(t):
            return self.rng.choice([f"upper({column})", f"lower({column})", "'changed'", f"concat({column}, 'x')"])
        if t == pa.bool_():
            return self.rng.choice([f"NOT {column}", "true", "NULL"])
        return column

    def source(self, ours: pa.Table) -> pa.Table:
        """Rows to merge: some of the table's keys with new values, some new keys."""
        ids = ours["id"].to_pylist()
        keep = self.rng.sample(ids, min(len(ids), self.rng.randint(0, 20)))
        fresh = [10_000 + self.rng.randint(0, 10_000) for _ in range(self.rng.randint(0, 10))]
        pick = self.full.take(pa.array(self.rng.sample(range(self.full.num_rows), len(keep) + len(fresh)), pa.int64()))
        keys = pa.array(list(dict.fromkeys(keep + fresh)), pa.int64())
        pick = pick.slice(0, len(keys))
        return pick.set_column(0, "id", keys)

    def run(self, report: SequenceReport, index: int):
        lance, rng = self.lance, self.rng
        report.sequences += 1
        version = rng.choice(["2.1", "2.2"])
        stable = rng.random() < 0.5
        start = self.full.slice(0, rng.randint(20, 200))
        a = os.path.join(self.root, f"seq{index}_ours.lance")
        b = os.path.join(self.root, f"seq{index}_ref.lance")
        for p in (a, b):
            lance.write_dataset(start, p, data_storage_version=version, max_rows_per_file=rng.choice([17, 64, 1000]),
                                enable_stable_row_ids=stable)
        done = []
        for _ in range(rng.randint(1, 5)):
            step, ours_fn, ref_fn = self.step(a, b)
            done.append(step)
            my, my_err = _error(ours_fn)
            theirs, their_err = _error(ref_fn)
            report.steps += 1
            if my_err and their_err:
                report.refused_by_both += 1
                continue
            if their_err and not my_err:
                # pylance failed where lance_core did not: its own differences between a
                # filter and the same predicate in a change (docs/expressions.md); the copies now differ.
                report.pylance_failed.append(f"{' ; '.join(done)} -> pylance: {their_err}")
                return
            if my_err:
                report.bugs.append(f"{' ; '.join(done)} -> lance_core: {my_err}, pylance: {theirs}")
                return
            problem = self.compare(a, b, stable)
            if problem:
                report.bugs.append(f"[{version}, stable ids {stable}] {' ; '.join(done)} -> {problem}")
                return

    def step(self, a: str, b: str):
        """(description, change through lance_core, the same through pylance)."""
        lance, lance_core, rng = self.lance, self.lance_core, self.rng
        kind = rng.choice(["delete", "delete", "update", "update", "merge", "merge", "compact"])
        # A predicate pylance evaluates on this table (it refuses some at the top; the
        # filter test counts those), given to pylance with its conversions written out.
        for _ in range(20):
            pred = self.gen.predicate(rng.randint(0, 2))
            ours_text, ref_text = pred.sql(), pred.typed()
            if _error(lance.dataset(b).count_rows, filter=ref_text)[1] is None:
                break
        if kind == "delete":
            return (f"delete({ours_text!r})", lambda: lance_core.dataset(a).delete(ours_text),
                    lambda: lance.dataset(b).delete(ref_text))
        if kind == "update":
            cols = rng.sample([c for c in SEQUENCE_COLUMNS if c != "id"], rng.randint(1, 2))
            values = {c: self.value_for(c) for c in cols}
            where = ours_text if rng.random() < 0.8 else None
            ref_where = ref_text if where else None
            return (f"update({values}, where={where!r})",
                    lambda: lance_core.dataset(a).update(values, where=where)["num_rows_updated"],
                    lambda: lance.dataset(b).update(values, where=ref_where)["num_rows_updated"])
        if kind == "merge":
            src = self.source(lance.dataset(b).to_table())
            by_source = rng.random() < 0.3
            matched = rng.choice(["update", "update_if", "delete", None])

            def run(ds, by_source_pred):
                m = ds.merge_insert("id")
                if matched == "update":
                    m = m.when_matched_update_all()
                elif matched == "update_if":
                    m = m.when_matched_update_all("target.i32 < source.i32")
                elif matched == "delete":
                    m = m.when_matched_delete()
                m = m.when_not_matched_insert_all()
                if by_source:
                    m = m.when_not_matched_by_source_delete(by_source_pred)
                out = m.execute(src)
                return (out["num_inserted_rows"], out["num_updated_rows"], out["num_deleted_rows"])

            what = f"merge_insert(when_matched={matched}, by_source={ours_text if by_source else None!r}, " \
                   f"{src.num_rows} source rows)"
            return (what, lambda: run(lance_core.dataset(a), ours_text), lambda: run(lance.dataset(b), ref_text))
        target = rng.choice([10, 50, 1000])
        return (f"compact_files(target_rows_per_fragment={target})",
                lambda: lance_core.dataset(a).optimize.compact_files(target_rows_per_fragment=target) and None,
                lambda: lance.dataset(b).optimize.compact_files(target_rows_per_fragment=target) and None)

    def compare(self, a: str, b: str, stable: bool) -> Optional[str]:
        lance, lance_core = self.lance, self.lance_core
        ours_a, ref_b = lance_core.dataset(a), lance.dataset(b)
        mine, theirs = ours_a.to_table(with_row_id=stable), ref_b.to_table(with_row_id=stable)
        if not same_rows(sorted_rows(mine.drop_columns(["_rowid"]) if stable else mine),
                         sorted_rows(theirs.drop_columns(["_rowid"]) if stable else theirs)):
            return "the tables differ"
        if ours_a.count_rows() != ref_b.count_rows():
            return "count_rows differs"
        if stable:
            ids = lambda t: dict(zip(t["id"].to_pylist(), t["_rowid"].to_pylist()))  # noqa: E731
            if ids(mine) != ids(theirs):
                return "stable row ids differ"
        # Each library reads the other's table as its writer does.
        if not same_rows(lance.dataset(a).to_table(), ours_a.to_table()):
            return "pylance reads lance_core's table otherwise"
        if not same_rows(lance_core.dataset(b).to_table(), ref_b.to_table()):
            return "lance_core reads pylance's table otherwise"
        return None


def run_sequences(root: str, count: int, seed: int, log=print) -> SequenceReport:
    seqs = Sequences(root, seed)
    report = SequenceReport()
    started = time.time()
    for i in range(count):
        seqs.run(report, i)
        if log and (i + 1) % 100 == 0:
            log(f"{i + 1} sequences, {time.time() - started:.0f} s: {len(report.bugs)} disagree")
    return report


# ---------------------------------------------------------------------------------------
# Spark: filters pushed into the lance data source against Spark evaluating them itself

SPARK_COLUMNS = ["id", "b", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "f32", "f64", "dec", "s", "ls", "d",
                 "ts"]


def spark_literal(rng: random.Random, t) -> str:
    """A Spark SQL literal of (or near) type `t`: values Spark pushes, and some it does not."""
    if is_int(t):
        lo, hi = int_range(t)
        v = rng.choice([lo, hi, 0, 1, -1, 7, 100, 255, 256, 2 ** 31 - 1, -2 ** 31])
        return str(v) if abs(v) < 2 ** 31 else f"{v}L"
    if t == pa.float32():
        v = rng.choice(["0.0", "-0.0", "0.5", "1.0", "-1.0", "100.0", "3.4E38", "16777217"])
        return f"CAST({v} AS FLOAT)"
    if is_float(t):
        v = rng.choice(["0.0D", "-0.0D", "0.1D", "0.5D", "1.0D", "-2.5D", "1.0E308D", "CAST('NaN' AS DOUBLE)",
                        "CAST('Infinity' AS DOUBLE)"])
        return v
    if is_dec(t):
        return rng.choice(["1.50BD", "0BD", "-0.01BD", "99999999.99BD", "2.25BD", "100BD"])
    if is_str(t):
        v = rng.choice(STRINGS)
        return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if t == pa.bool_():
        return rng.choice(["true", "false"])
    if pa.types.is_date(t):
        return f"DATE '{rng.choice(DATES)}'"
    d = dt.datetime.combine(rng.choice(DATES), dt.time(rng.randint(0, 23), 0))
    return f"TIMESTAMP_NTZ '{d}'"


def spark_condition(rng: random.Random, types: dict, depth: int) -> str:
    """A random Spark SQL condition of the shapes Spark pushes into a data source
    (comparisons, <=>, IN, IS [NOT] NULL, LIKE prefix/suffix/infix, NOT, AND, OR)."""
    r = rng.random()
    if depth > 0 and r < 0.15:
        return f"NOT ({spark_condition(rng, types, depth - 1)})"
    if depth > 0 and r < 0.35:
        op = rng.choice(["AND", "OR"])
        return f"({spark_condition(rng, types, depth - 1)}) {op} ({spark_condition(rng, types, depth - 1)})"
    col = rng.choice([c for c in types if c != "id"])
    t = types[col]
    k = rng.random()
    if k < 0.1:
        return f"{col} IS {'NOT ' if rng.random() < 0.5 else ''}NULL"
    if is_str(t) and k < 0.35:
        v = rng.choice(["a", "ab", "b", "", "%", "_", "Σ", "it's"]).replace("'", "\\'")
        return rng.choice([f"{col} LIKE '{v}%'", f"{col} LIKE '%{v}'", f"{col} LIKE '%{v}%'",
                           f"startswith({col}, '{v}')", f"endswith({col}, '{v}')", f"contains({col}, '{v}')"])
    if k < 0.5:
        items = ", ".join(spark_literal(rng, t) for _ in range(rng.randint(1, 4)))
        return f"{col} {'NOT ' if rng.random() < 0.3 else ''}IN ({items})"
    op = rng.choice(["=", "<>", "<", "<=", ">", ">=", "<=>"])
    return f"{col} {op} {spark_literal(rng, t)}"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--filters", type=int, default=10000)
    p.add_argument("--sequences", type=int, default=1000)
    p.add_argument("--seed", type=int, default=int(time.time()))
    args = p.parse_args(argv)
    print(f"seed {args.seed}")
    root = tempfile.mkdtemp(prefix="lance_core_differential_")
    try:
        report = run_filters(root, args.filters, args.seed)
        print(report.summary())
        changes = run_sequences(root, args.sequences, args.seed)
        print(changes.summary())
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0 if not report.bugs and not changes.bugs else 1


if __name__ == "__main__":
    sys.exit(main())
