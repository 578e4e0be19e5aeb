"""Deterministic Arrow tables covering every logical type, for the tests to write with
pylance (the reference) and read back with lance_core."""

from __future__ import annotations

import datetime as dt
import decimal
import json

import numpy as np
import pyarrow as pa


def _nulls(rng, n, frac=0.15):
    return rng.random(n) < frac


def _with_nulls(values, mask):
    return [None if m else v for v, m in zip(values, mask)]


def primitive_columns(n: int, seed: int = 0) -> dict:
    """Name -> array for every non-nested logical type, each with nulls."""
    rng = np.random.default_rng(seed)
    m = lambda: _nulls(rng, n)  # noqa: E731
    cols = {}
    cols["bool"] = pa.array(_with_nulls(list(rng.random(n) < 0.5), m()), pa.bool_())
    for t, lo, hi in [
        (pa.int8(), -128, 127), (pa.uint8(), 0, 255), (pa.int16(), -30000, 30000), (pa.uint16(), 0, 65535),
        (pa.int32(), -2**31, 2**31 - 1), (pa.uint32(), 0, 2**32 - 1), (pa.int64(), -2**62, 2**62), (pa.uint64(), 0, 2**63),
    ]:
        vals = rng.integers(lo, hi, n, dtype=np.int64 if t != pa.uint64() else np.uint64, endpoint=False)
        cols[str(t)] = pa.array(_with_nulls(vals.tolist(), m()), t)
    cols["small_int32"] = pa.array(_with_nulls((rng.integers(0, 100, n)).tolist(), m()), pa.int32())
    cols["seq_int64"] = pa.array(np.arange(n, dtype=np.int64))
    cols["runs_int32"] = pa.array((np.arange(n) // 300).astype(np.int32))
    cols["halffloat"] = pa.array(_with_nulls(rng.random(n).astype(np.float16).tolist(), m()), pa.float16())
    cols["float"] = pa.array(_with_nulls(rng.standard_normal(n).astype(np.float32).tolist(), m()), pa.float32())
    cols["double"] = pa.array(_with_nulls(rng.standard_normal(n).tolist(), m()), pa.float64())
    words = ["alpha", "beta", "gamma", "delta", "", "épsilon", "zeta-ζ"]
    strs = [f"{words[i % 7]}-{i}-{int(rng.integers(0, 1000))}" for i in range(n)]
    cols["string"] = pa.array(_with_nulls(strs, m()), pa.string())
    cols["large_string"] = pa.array(_with_nulls(strs, m()), pa.large_string())
    cols["lowcard_string"] = pa.array(_with_nulls([words[int(i)] for i in rng.integers(0, 7, n)], m()), pa.string())
    cols["binary"] = pa.array(_with_nulls([s.encode() * (i % 3) for i, s in enumerate(strs)], m()), pa.binary())
    cols["large_binary"] = pa.array(_with_nulls([s.encode() for s in strs], m()), pa.large_binary())
    cols["fixed_size_binary"] = pa.array(_with_nulls([bytes(rng.integers(0, 256, 16, dtype=np.uint8)) for _ in range(n)], m()), pa.binary(16))
    d128 = [decimal.Decimal(int(x)) / 100 for x in rng.integers(-10**9, 10**9, n)]
    cols["decimal128"] = pa.array(_with_nulls(d128, m()), pa.decimal128(12, 2))
    d256 = [decimal.Decimal(int(x)) * 10**20 / 10**5 for x in rng.integers(-10**9, 10**9, n)]
    cols["decimal256"] = pa.array(_with_nulls(d256, m()), pa.decimal256(40, 5))
    days = rng.integers(-20000, 20000, n)
    cols["date32"] = pa.array(_with_nulls([dt.date(1970, 1, 1) + dt.timedelta(days=int(d)) for d in days], m()), pa.date32())
    cols["date64"] = pa.array(_with_nulls((days * 86_400_000).tolist(), m()), pa.date64())
    secs = rng.integers(0, 86400, n)
    cols["time32_s"] = pa.array(_with_nulls(secs.tolist(), m()), pa.time32("s"))
    cols["time32_ms"] = pa.array(_with_nulls((secs * 1000).tolist(), m()), pa.time32("ms"))
    cols["time64_us"] = pa.array(_with_nulls((secs * 10**6).tolist(), m()), pa.time64("us"))
    cols["time64_ns"] = pa.array(_with_nulls((secs * 10**9).tolist(), m()), pa.time64("ns"))
    ts = rng.integers(0, 2 * 10**9, n)
    for unit, mul in [("s", 1), ("ms", 1000), ("us", 10**6), ("ns", 10**9)]:
        cols[f"timestamp_{unit}"] = pa.array(_with_nulls((ts * mul).tolist(), m()), pa.timestamp(unit))
        cols[f"duration_{unit}"] = pa.array(_with_nulls((ts * mul // 7).tolist(), m()), pa.duration(unit))
    cols["timestamp_us_utc"] = pa.array(_with_nulls((ts * 10**6).tolist(), m()), pa.timestamp("us", tz="UTC"))
    cols["timestamp_ms_ny"] = pa.array(_with_nulls((ts * 1000).tolist(), m()), pa.timestamp("ms", tz="America/New_York"))
    cols["dict_string"] = pa.array(_with_nulls([words[int(i)] for i in rng.integers(0, 7, n)], m())).dictionary_encode().cast(
        pa.dictionary(pa.int16(), pa.string()))
    vec = rng.standard_normal((n, 4)).astype(np.float32)
    cols["fsl_float"] = pa.array(_with_nulls([list(map(float, v)) for v in vec], m()), pa.list_(pa.float32(), 4))
    cols["fsl_int32_nullitems"] = pa.array(
        _with_nulls([[None if (i + j) % 5 == 0 else i + j for j in range(3)] for i in range(n)], m()), pa.list_(pa.int32(), 3))
    return cols


def nested_columns(n: int, seed: int = 1, with_map: bool = True) -> dict:
    rng = np.random.default_rng(seed)
    m = lambda frac=0.15: _nulls(rng, n, frac)  # noqa: E731
    cols = {}
    ints = rng.integers(0, 1000, n).tolist()
    strs = [f"s{i}" for i in range(n)]
    struct_vals = [{"x": (None if i % 11 == 0 else ints[i]), "y": (None if i % 13 == 0 else strs[i])} for i in range(n)]
    cols["struct"] = pa.array(_with_nulls(struct_vals, m()), pa.struct([("x", pa.int32()), ("y", pa.string())]))
    cols["struct_nonnull"] = pa.array(
        [{"x": ints[i], "z": float(i)} for i in range(n)],
        pa.struct([pa.field("x", pa.int64(), nullable=False), pa.field("z", pa.float64(), nullable=False)]))
    lists = []
    for i in range(n):
        k = int(rng.integers(0, 5))
        lists.append(None if i % 9 == 0 else [None if (i + j) % 7 == 0 else ints[(i + j) % n] for j in range(k)])
    cols["list_int"] = pa.array(lists, pa.list_(pa.int64()))
    cols["large_list_str"] = pa.array(
        [None if lst is None else [None if v is None else str(v) for v in lst] for lst in lists], pa.large_list(pa.string()))
    cols["list_struct"] = pa.array(
        [None if lst is None else [None if v is None else {"a": v, "b": str(v)} for v in lst] for lst in lists],
        pa.list_(pa.struct([("a", pa.int64()), ("b", pa.string())])))
    cols["struct_list"] = pa.array(
        _with_nulls([{"l": lists[i], "k": ints[i]} for i in range(n)], m()),
        pa.struct([("l", pa.list_(pa.int64())), ("k", pa.int32())]))
    cols["list_list"] = pa.array(
        [None if lst is None else [lst, [], None][: (i % 3) + 1] for i, lst in enumerate(lists)], pa.list_(pa.list_(pa.int64())))
    cols["list_fsl"] = pa.array(
        [None if lst is None else [[float(v or 0), 1.0] for v in lst] for lst in lists], pa.list_(pa.list_(pa.float32(), 2)))
    cols["nested_struct"] = pa.array(
        _with_nulls([{"inner": (None if i % 5 == 0 else {"v": ints[i]})} for i in range(n)], m()),
        pa.struct([("inner", pa.struct([("v", pa.int32())]))]))
    if with_map:
        maps = [None if i % 10 == 0 else [(f"k{j}", None if j == 1 else i + j) for j in range(i % 4)] for i in range(n)]
        cols["map"] = pa.array(maps, pa.map_(pa.string(), pa.int32()))
    return cols


def table_of(cols: dict) -> pa.Table:
    return pa.table(cols)


def json_column(n: int) -> pa.Array:
    docs = [None if i % 6 == 0 else json.dumps({"i": i, "tags": ["a", "b"][: i % 3], "v": i / 4}) for i in range(n)]
    return pa.array(docs, pa.json_(pa.string()))
