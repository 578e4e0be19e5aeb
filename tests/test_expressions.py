"""Projections given as SQL expressions (`columns={"x": "..."}`) and the type rules of
filters: results and types equal pylance's; what pylance refuses we refuse too, naming
the column and both types."""

from __future__ import annotations

import datetime
import decimal
import re

import lance
import pyarrow as pa
import pytest

import lance_core
from conftest import assert_same


@pytest.fixture(scope="module")
def table_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("expr") / "t.lance")
    t = pa.table({
        "a": pa.array([1, 2, 3, None] * 50, pa.int32()),
        "b": pa.array([1.5, 2.5, None, 4.0] * 50),
        "f": pa.array([1.5, 2.5, None, 4.0] * 50, pa.float32()),
        "s": pa.array(["x", "15", "abc", None] * 50),
        "u8": pa.array([1, 2, 3, 250] * 50, pa.uint8()),
        "d": pa.array([datetime.date(2020, 1, 1), datetime.date(2021, 1, 1), None, datetime.date(2022, 5, 5)] * 50),
        "ts": pa.array([datetime.datetime(2020, 1, 1), datetime.datetime(2021, 1, 1), None,
                        datetime.datetime(2022, 5, 5)] * 50, pa.timestamp("us")),
        "dec": pa.array([decimal.Decimal("1.50"), decimal.Decimal("2.25"), None, decimal.Decimal("3.00")] * 50,
                        pa.decimal128(10, 2)),
        "st": pa.array([{"x": 1, "y": "q"}, {"x": 2, "y": "r"}, None, {"x": None, "y": "t"}] * 50),
        "ls": pa.array([[{"x": 1}, {"x": 2}], [{"x": 3}], [], None] * 50, pa.list_(pa.struct([("x", pa.int64())]))),
        "li": pa.array([[1, 2, 3], [4], [], None] * 50, pa.list_(pa.int16())),
        "fsl": pa.array([[1.0, 2.0], [3.0, 4.0], None, [5.0, 6.0]] * 50, pa.list_(pa.float32(), 2)),
    })
    lance.write_dataset(t, path, max_rows_per_file=120)
    return path


PROJECTIONS = [
    {"x": "ls[1]['x']"},
    {"x": "ls[1].x", "y": "li[2]", "z": "li[5]", "w": "fsl[2]"},
    {"x": "st['x']", "y": "st.y"},
    {"x": "a + 1", "y": "a * 2", "z": "a - 1", "q": "a / 2", "r": "a % 2"},
    {"x": "b * 2", "y": "f + 1", "z": "f * 2.5", "w": "a + b", "v": "u8 + 1", "t": "a + u8"},
    {"x": "dec + 1", "y": "dec * 2"},
    {"x": "CAST(a AS DOUBLE)", "y": "CAST(a AS STRING)", "z": "CAST(b AS INT)", "w": "CAST(b AS BIGINT)",
     "v": "CAST(a AS TINYINT)", "u": "CAST(a AS INT UNSIGNED)", "t": "CAST(a as decimal(10,3))",
     "s": "CAST(s AS BINARY)", "r": "CAST(d AS TIMESTAMP)", "q": "CAST(ts AS DATE)", "p": "a::double"},
    {"x": "TRY_CAST(s AS INT)", "y": "a > 1 AND b > 2", "z": "a IN (1,2)", "w": "s LIKE 'a%'", "v": "-b"},
    {"x": "a > 1", "y": "s = 'x'", "neg": "-a", "lit": "1"},
    {"a": "a", "renamed": "s"},
    {"x": "ts > TIMESTAMP '2020-01-01 00:00:00'", "y": "NOT (a > 1)", "z": "a BETWEEN 1 AND 2"},
    {"x": "array_has_any(li, [1, 4])", "y": "array_has_all(li, [1, 2])", "z": "array_has(li, 4)",
     "w": "array_contains(fsl, 2.0)", "v": "array_has_all(li, [])", "u": "array_has_any(li, [])",
     "t": "array_has(li, NULL)", "r": "list_has_any(li, make_array(3, 9))"},
    {"x": "contains(s, 'b')", "y": "starts_with(s, '1')", "z": "ends_with(s, 'c')", "w": "contains(s, '%')"},
]


@pytest.mark.parametrize("columns", PROJECTIONS, ids=[",".join(p.values()) for p in PROJECTIONS])
def test_projection_expressions_match_pylance(table_path, columns):
    ours = lance_core.dataset(table_path).to_table(columns=columns)
    ref = lance.dataset(table_path).to_table(columns=columns)
    assert_same(ours, ref, str(columns))


def test_projection_with_filter_limit_row_ids_and_batches(table_path):
    ds, ref = lance_core.dataset(table_path), lance.dataset(table_path)
    cols = {"x": "a * 10", "y": "st.y"}
    for kw in (dict(filter="a > 1"), dict(filter="b IS NULL", limit=7, offset=3), dict(with_row_id=True),
               dict(with_row_address=True, filter="s = 'abc'")):
        assert_same(ds.to_table(columns=cols, **kw), ref.to_table(columns=cols, **kw), str(kw))
    batches = list(ds.to_batches(columns=cols, batch_size=50))
    assert sum(b.num_rows for b in batches) == 200
    assert ds.scanner(columns=cols).projected_schema.names == ["x", "y"]
    assert ds.scanner(columns=cols, filter="a = 2").count_rows() == 50


def test_projection_errors_name_the_problem(table_path):
    ds = lance_core.dataset(table_path)
    with pytest.raises(lance_core.InvalidInputError, match="refers to 'nope', which is not a column"):
        ds.to_table(columns={"x": "nope + 1"})
    with pytest.raises(lance_core.InvalidInputError, match="cannot use expression 'a \\+'"):
        ds.to_table(columns={"x": "a +"})
    with pytest.raises(lance_core.InvalidInputError, match="'st' is struct.*not a list|not a list"):
        ds.to_table(columns={"x": "st[1]"})
    with pytest.raises(lance_core.InvalidInputError, match="no field 'zz'"):
        ds.to_table(columns={"x": "st['zz']"})
    with pytest.raises(lance_core.InvalidInputError, match="cannot evaluate"):
        ds.to_table(columns={"x": "CAST(s AS INT)"})
    with pytest.raises(lance_core.InvalidInputError, match="output names to SQL expressions"):
        ds.to_table(columns={"x": 1})


# What pylance refuses because the literal cannot meet the column's type.
REFUSED = ["s > 10", "s BETWEEN 10 AND 20", "s = 1", "s IN (1, 2)", "a > '1'", "a = '2'", "a IN ('1', '2')",
           "b > 'x'", "a LIKE '1%'", "s LIKE 1", "a", "NOT a"]


@pytest.mark.parametrize("predicate", REFUSED)
def test_filters_refuse_literals_of_another_kind(table_path, predicate):
    with pytest.raises(ValueError):
        lance.dataset(table_path).to_table(filter=predicate)
    with pytest.raises(lance_core.InvalidInputError) as e:
        lance_core.dataset(table_path).to_table(filter=predicate)
    assert "cannot" in str(e.value)


def test_refusal_names_the_column_and_both_types(table_path):
    ds = lance_core.dataset(table_path)
    with pytest.raises(lance_core.InvalidInputError) as e:
        ds.to_table(filter="s > 10")
    assert "column 's'" in str(e.value) and "Utf8" in str(e.value) and "integer 10" in str(e.value)
    with pytest.raises(lance_core.InvalidInputError) as e:
        ds.count_rows(filter="s BETWEEN 10 AND 20")
    assert "column 's'" in str(e.value)
    with pytest.raises(lance_core.InvalidInputError):
        ds.delete("s > 10")
    assert lance_core.dataset(table_path).version == ds.version


ACCEPTED = ["b > 1", "f > 1.5", "i > 127" if False else "u8 > 2", "d > DATE '2020-06-01'",
            "ts > TIMESTAMP '2020-06-01 00:00:00'", "dec > 2", "a + 1 > 2", "b + 1 > 2", "a + b > 2", "a = b",
            "1 = 1", "s = 'x'", "a = NULL", "st.x = 2", "ls[1].x = 3", "li[1] > 1", "CAST(a AS STRING) = '2'"]


@pytest.mark.parametrize("predicate", ACCEPTED)
def test_filters_pylance_accepts(table_path, predicate):
    ours = lance_core.dataset(table_path).to_table(filter=predicate)
    assert_same(ours, lance.dataset(table_path).to_table(filter=predicate), predicate)


def test_numbers_meet_exactly_where_pylance_refuses(table_path):
    """A fraction against integers, or a literal beyond a column's type, compares exactly
    (pylance refuses these; SQL engines answer them)."""
    ds = lance_core.dataset(table_path)
    ref = lance.dataset(table_path).to_table()
    assert ds.count_rows(filter="a > 1.5") == sum(1 for v in ref["a"].to_pylist() if v is not None and v > 1.5)
    assert ds.count_rows(filter="u8 > 1000") == 0
    assert ds.count_rows(filter="u8 > -1") == 200
    assert ds.count_rows(filter="dec > 2.1") == 100
    assert ds.count_rows(filter="dec = 2.25") == 50


def test_list_searches_refuse_what_cannot_be_looked_for(table_path):
    ds = lance_core.dataset(table_path)
    for text, message in [
        ("array_has_any(a, [1])", "array_has_any needs a list, but column 'a' is Int32"),
        ("array_has(li, 'x')", "cannot look for the string 'x' among the Int16 items of column 'li'"),
        ("array_has_any(li, [a])", "array_has_any looks for constant values, and column 'a' is not one"),
        ("array_has_any(li, a)", "array_has_any needs a list of constant values"),
        ("array_has_all(li)", "array_has_all takes 2 arguments, not 1"),
        ("contains(s, a)", "contains needs a string literal to look for"),
    ]:
        with pytest.raises(lance_core.InvalidInputError, match=re.escape(message)):
            ds.to_table(filter=text)
