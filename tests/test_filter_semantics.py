"""Filters whose rows once differed from pylance's (issue 21), each against pylance, and
the places where lance_core deliberately answers otherwise (docs/expressions.md, "Expression types"),
against the answer those docs give."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_core


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    p = str(tmp_path_factory.mktemp("semantics") / "t.lance")
    nan = float("nan")
    t = pa.table({
        "f": pa.array([-0.0, 0.0, 1.0, nan, None, float("inf"), float("-inf")], pa.float64()),
        "g": pa.array([0.0, -0.0, -0.0, 1.0, 2.0, nan, None], pa.float64()),
        "f32": pa.array([-0.0, 0.0, 0.1, nan, None, float("inf"), 3e38], pa.float32()),
        "u8": pa.array([255, 0, 1, 2, None, 128, 7], pa.uint8()),
        "i16": pa.array([300, -1, 0, 32767, None, -32768, 7], pa.int16()),
        "i32": pa.array([30000, -1, 0, 2147483647, None, -2147483648, 7], pa.int32()),
        "u64": pa.array([2 ** 64 - 1, 0, 1, 5, None, 2 ** 63, 7], pa.uint64()),
        "i64": pa.array([-1, 0, 1, 5, None, -2 ** 63, 7], pa.int64()),
        "b": pa.array([True, False, None, True, False, None, True]),
        "s": pa.array(["a", "b", None, "", "x", "yy", "a"]),
    })
    lance.write_dataset(t, p)
    return p


def rows(ds, f):
    return ds.to_table(filter=f, with_row_id=True)["_rowid"].to_pylist()


# The table and its neighbours: each gives pylance's rows.
SAME_AS_PYLANCE = [
    "f = 0.0", "f = -0.0", "f < 0.0", "f <= -0.0", "f >= 0", "f > -0.0", "f IN (0.0)", "f IN (-0.0, 5)",
    "f NOT IN (0.0)", "f BETWEEN 0.0 AND 0.0", "f BETWEEN -0.0 AND -0.0", "NOT (f = 0.0)", "f = f",
    "f > 1e308", "f32 = 0.5", "f32 >= 0", "f32 IN (0.0, 1)",
    "u8 + 1 = 0", "u8 + 1 > 255", "u8 - 1 > 200", "i32 * 100000 < 0", "i16 * 127 < 0", "i16 * 127 > 32767",
    "i64 + 1 < 0", "i64 * 2 = -2", "u64 + i64 > 0", "u64 - 1 < u64", "(f32 - 2) > 1e308", "f32 * 2 > 3e38",
    "NOT (b IS FALSE)", "b IS NOT TRUE", "b IS NOT FALSE", "b IS TRUE", "(f = 0.0) IS NOT FALSE",
    "NOT ((f = 0.0) IS TRUE)", "(b AND f > 0) IS NOT TRUE", "b IS TRUE OR b IS FALSE",
    "s = \"a\"", "s IN ('a', \"b\")", "s || 'x' = 'ax'", "s || s = 'aa'", "(s || 'x') IS NULL",
    "abs(f) = 0.0", "abs(u8) = 1", "abs(i16 + 0) = 1", "coalesce(i32, 0) > 0", "nullif(i32, 0) IS NULL", "round(f32) = 0",
    "i32 + 1 BETWEEN 0 AND 2147483648", "(i32 + 1) IN (2147483648, 1)",
    "i32 IN (i64, 7)", "i32 NOT IN (i64, 7)", "i32 IN (i64, NULL)", "i32 IS DISTINCT FROM 0",
    "i32 IS NOT DISTINCT FROM NULL", "f IS DISTINCT FROM 0.0", "f IS NOT DISTINCT FROM -0.0",
    "u64 > 18446744073709551614", "u64 = 9223372036854775808",
    # Found by the differential test: BETWEEN and IN meet in one type for all their values;
    # a comparison with NULL does not compute the other side.
    "f32 + u64 BETWEEN -2147483648 AND 0.0", "f32 IN (1, 16777217, 2.25)", "NOT (f32 IN (16777217, 0.5))",
    "abs(i64) = NULL",
    # Also: an IN list of NULLs alone, and arithmetic with NULL, do not compute the rest.
    "(i64 / coalesce(u8, 0)) IN (NULL)", "(i64 / coalesce(u8, 0)) NOT IN (NULL)",
    "(i64 / coalesce(u8, 0)) + NULL > 1", "NULL * abs(i64) < 0",
]


def test_both_refuse_what_fails(path):
    # abs of the smallest int64 overflows in both libraries.
    with pytest.raises(lance_core.InvalidInputError, match="overflow"):
        lance_core.dataset(path).to_table(filter="abs(i64) = 1")
    with pytest.raises(Exception):  # noqa: B017 - pylance's class varies
        lance.dataset(path).to_table(filter="abs(i64) = 1")


@pytest.mark.parametrize("f", SAME_AS_PYLANCE)
def test_filter_gives_pylances_rows(path, f):
    ours, ref = lance_core.dataset(path), lance.dataset(path)
    assert rows(ours, f) == rows(ref, f), f
    assert ours.count_rows(filter=f) == ref.count_rows(filter=f), f


# Deliberate differences: pylance answers these otherwise (it types a literal by the
# column it meets at the top of a filter only, tells -0.0 from 0.0 when two columns are
# compared, and orders a NaN by its sign); lance_core gives one answer everywhere.
DELIBERATE = [
    # A float literal compared with float32 compares in float64 (pylance: only inside).
    ("f32 = 0.1", []),
    ("NOT (f32 = 0.1)", [0, 1, 2, 3, 5, 6]),
    ("f32 > 1e308", [3, 5]),
    # Arithmetic compared with a column computes as anywhere else (pylance: in u8).
    ("u8 = 255 + 1", []),
    ("i32 > i32 + 1", []),
    # Two columns: -0.0 equals 0.0, as it does against a constant.
    ("f = g", [0, 1]),
    ("f < g", [5]),
    # NaN is NaN, whatever sign arithmetic gave it.
    ("f / 0 > 1", [0, 1, 2, 3, 5]),
    ("-f > 1", [3, 6]),
    # NULLIF uses the comparison's equality.
    ("nullif(f, 0.0) IS NULL", [0, 1, 4]),
    # AND / OR compute their right side only where the left does not decide, so these do
    # not divide by zero (pylance fails on them unless a whole batch is decided).
    ("i32 <> 0 AND 100 / i32 > 1", [6]),
    ("i32 = 0 OR 100 / i32 > 1", [2, 6]),
    ("NOT (i32 = 0 OR 100 / i32 <= 1)", [6]),
    # IS UNKNOWN, which pylance does not parse.
    ("b IS UNKNOWN", [2, 5]),
    ("(f > 0) IS NOT UNKNOWN", [0, 1, 2, 3, 5, 6]),
]


@pytest.mark.parametrize("f,expected", DELIBERATE)
def test_deliberate_differences_give_the_documented_rows(path, f, expected):
    ds = lance_core.dataset(path)
    assert rows(ds, f) == expected, f
    assert ds.count_rows(filter=f) == len(expected)


def test_filters_run_on_live_rows_only(tmp_path):
    """A deleted row's value never makes a filter fail (abs of int8's minimum would)."""
    p = str(tmp_path / "live.lance")
    lance.write_dataset(pa.table({"i8": pa.array([-128, 1, 2, 3], pa.int8()), "id": [0, 1, 2, 3]}), p)
    lance.dataset(p).delete("id = 0")
    ds = lance_core.dataset(p)
    assert ds.to_table(filter="abs(i8) > 1")["id"].to_pylist() == [2, 3]
    assert ds.count_rows(filter="abs(i8) > 1") == 2
    ds.delete("abs(i8) > 1")
    assert lance.dataset(p).to_table()["id"].to_pylist() == [1]


def test_update_constants_the_column_cannot_store_fail_up_front(tmp_path):
    p = str(tmp_path / "u.lance")
    lance.write_dataset(pa.table({"u8": pa.array([1, 2], pa.uint8())}), p)
    with pytest.raises(lance_core.InvalidInputError, match="u8"):
        lance_core.dataset(p).update({"u8": "65535"}, where="u8 > 100")   # no row matches
    assert lance.dataset(p).version == 1


def test_decimals_meet_fractional_literals_as_written(tmp_path):
    import decimal
    p = str(tmp_path / "dec.lance")
    lance.write_dataset(pa.table({"d": pa.array([decimal.Decimal("99999999.99"), decimal.Decimal("0.10")],
                                                pa.decimal128(10, 2)), "u": pa.array([0, 0], pa.uint32())}), p)
    ds = lance_core.dataset(p)
    assert ds.count_rows(filter="d - u = 99999999.99") == 1
    assert ds.count_rows(filter="d = DECIMAL(10, 2) '0.10'") == 1
    assert ds.count_rows(filter="d IS NOT DISTINCT FROM 0.1") == 1


def test_deletes_use_the_same_rules(tmp_path):
    p = str(tmp_path / "d.lance")
    t = pa.table({"f": pa.array([-0.0, 0.0, 1.0, None]), "u8": pa.array([255, 0, 1, 2], pa.uint8()),
                  "b": pa.array([True, False, None, True])})
    lance.write_dataset(t, p)
    other = str(tmp_path / "e.lance")
    lance.write_dataset(t, other)
    for f in ["f = 0.0", "u8 + 1 = 0", "NOT (b IS FALSE)"]:
        ours, ref = lance_core.dataset(p), lance.dataset(other)
        ours.delete(f)
        ref.delete(f)
        assert lance.dataset(p).to_table() == ref.to_table(), f
        assert lance_core.dataset(other).to_table() == lance_core.dataset(p).to_table(), f


def test_merge_keys_treat_zeros_and_nans_as_one_value(tmp_path):
    p = str(tmp_path / "m.lance")
    lance.write_dataset(pa.table({"k": pa.array([0.0, float("nan"), 1.0]), "v": [1, 2, 3]}), p)
    source = pa.table({"k": pa.array([-0.0, float("nan"), 2.0]), "v": [10, 20, 30]})
    out = (lance_core.dataset(p).merge_insert("k").when_matched_update_all().when_not_matched_insert_all()
           .execute(source))
    assert (out["num_updated_rows"], out["num_inserted_rows"]) == (2, 1)
    assert sorted(lance.dataset(p).to_table()["v"].to_pylist()) == [3, 10, 20, 30]
