"""Scans as pylance users write them (issue 27 point 6): `order_by` with `ColumnOrdering`,
`regexp_match` / `regexp_like`, `current_date()`, a keyword column before a dot
(`struct.y`), and `vec_to_table`; each gives pylance's rows on the same data."""

from __future__ import annotations

import datetime
import sys

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_core
import lance_core.vector
from lance_core.dataset import ColumnOrdering

# (`lance.dataset` is a function; its module holds the class.)
_PYLANCE_ORDERING = sys.modules["lance.dataset"].ColumnOrdering

_DATA = pa.table({
    "i": [2, 1, 3, 3, None, 4, 3, None],
    "s": ["a", None, "d", None, "b", "c", "e", "a"],
    "str": ["aaa", "bbb", "bca", "cab", "cba", None, "Cx", "abc"],
    "d": pa.array([datetime.date(2020, 1, i + 1) for i in range(7)] + [datetime.date(2999, 1, 1)]),
    "struct": [{"x": i, "y": i} for i in range(8)],
})


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    root = tmp_path_factory.mktemp("scan")
    return (lance_core.write_dataset(_DATA, str(root / "ours")), lance.write_dataset(_DATA, str(root / "theirs")))


@pytest.mark.parametrize("order", [
    [("i", True, False)], [("i", True, True)], [("i", False, False)], [("i", False, True)],
    [("i", True, False), ("s", False, True)], [("s", True, True), ("i", False, False)],
])
@pytest.mark.parametrize("cut", [{}, {"limit": 3}, {"limit": 2, "offset": 3}, {"columns": ["str", "s", "i"]}])
def test_order_by_gives_pylances_rows(both, order, cut):
    """(A last key on unique values: rows that tie come in no set order in pylance.)"""
    ours, theirs = both
    order = order + [("str", True, False)]
    mine = [ColumnOrdering(c, ascending=a, nulls_first=n) for c, a, n in order]
    pylances = [_PYLANCE_ORDERING(c, ascending=a, nulls_first=n) for c, a, n in order]
    got = ours.scanner(order_by=mine, **cut).to_table()
    want = theirs.scanner(order_by=pylances, **cut).to_table()
    assert got == want
    assert pa.Table.from_batches(list(ours.scanner(order_by=mine, **cut).to_batches())) == want


def test_order_by_names_and_errors(both):
    ours, theirs = both
    assert ours.to_table(order_by=["str"], columns=["str"]) == theirs.to_table(order_by=["str"], columns=["str"])
    # Keys left out of the projection are read along (pylance 14 fails to plan this).
    assert ours.to_table(order_by=["d"], columns=["str"], limit=4) == \
        theirs.to_table(order_by=["d"], limit=4).select(["str"])
    with pytest.raises(lance_core.InvalidInputError, match="no such column"):
        ours.to_table(order_by=["nope"])


@pytest.mark.parametrize("f", [
    "regexp_match(str, 'c.+')", "NOT regexp_match(str, 'a')", "regexp_like(str, '^B', 'i')",
    "NOT regexp_like(str, 'a')", "regexp_match(str, s)", "d <= current_date()", "d > current_date()",
    "struct.y > 5", "struct.x = 1 OR str = 'Cx'",
])
def test_filters_give_pylances_rows(both, f):
    ours, theirs = both
    assert ours.to_table(filter=f) == theirs.to_table(filter=f), f


def test_vec_to_table_as_pylance():
    """The tables pylance's `lance.vector.vec_to_table` gives (checked against it by hand:
    importing it needs tqdm, which the test environment does not install)."""
    rng = np.random.default_rng(0)
    a, b = rng.random(4), rng.random(4)
    t = lance_core.vector.vec_to_table({"a": a, "b": b})
    assert t.schema == pa.schema([("id", pa.string()), ("vector", pa.list_(pa.float32(), 4))])
    assert t["id"].to_pylist() == ["a", "b"]
    np.testing.assert_allclose(np.stack(t["vector"].to_numpy(zero_copy_only=False)), [a, b], rtol=1e-6)
    t = lance_core.vector.vec_to_table([[1, 2], [3, 4]], "v")
    assert t == pa.table({"v": pa.array([[1, 2], [3, 4]], pa.list_(pa.float32(), 2))})
    m = rng.random((5, 3))
    assert lance_core.vector.vec_to_table(m).column_names == ["vector"]
    with pytest.raises(ValueError, match="Expected 2 dimensions"):
        lance_core.vector.vec_to_table([[1, 2], [3]])


_PC = pc


@pytest.mark.parametrize("make", [
    lambda f: f("i") >= 2, lambda f: f("i") != 3, lambda f: f("str") == "bca", lambda f: (f("i") >= 2) & (f("i") < 4),
    lambda f: _PC.invert(f("i") >= 3), lambda f: _PC.is_null(f("i")), lambda f: _PC.is_valid(f("s")),
    lambda f: f("i") + 3 >= 6, lambda f: f("i") * 2 - 1 > 3, lambda f: f("str").isin(["aaa", "Cx", "zz"]),
    lambda f: f("i").is_null() | (f("i") == 1),
    lambda f: f("d") < pa.scalar(datetime.date(2020, 1, 3)), lambda f: f("s") == "it's",
])
def test_pyarrow_expression_filters_give_pylances_rows(both, make):
    """A pyarrow compute expression is a filter, as in pylance (scans, counts, deletes)."""
    ours, theirs = both
    expr = make(_PC.field)
    assert ours.to_table(filter=expr) == theirs.to_table(filter=expr), str(expr)
    assert ours.count_rows(filter=expr) == theirs.count_rows(filter=expr)


def test_pyarrow_expression_delete_and_errors(both, tmp_path):
    # A nested field (pylance 14 refuses those in pyarrow expressions; its SQL takes them).
    assert both[0].to_table(filter=_PC.field("struct", "y") > 5) == both[1].to_table(filter="struct.y > 5")
    ds = lance_core.write_dataset(_DATA, str(tmp_path / "t"))
    ds.delete(_PC.field("i") > 2)
    assert ds.to_table(columns=["i"])["i"].to_pylist() == [2, 1, None, None]
    with pytest.raises(lance_core.InvalidInputError, match="'utf8_length' is not supported"):
        ds.to_table(filter=_PC.utf8_length(_PC.field("str")) > 2)


def test_json_functions_as_pylance(tmp_path):
    """pylance's json_* functions on a JSON column give the same rows as in pylance, in
    filters and projections; a value of the wrong kind is an error in both."""
    import json

    docs = [{"name": "Alice", "age": 30, "score": 35.5, "ok": True, "items": ["apple", "pear"], "user": {"name": "A"}},
            {"name": "Bob", "age": 25, "score": 40, "ok": False, "items": ["kiwi"], "user": {"name": "B"}},
            {"name": None, "items": [], "user": {}}, None]
    uri = str(tmp_path / "j.lance")
    lance.write_dataset(pa.table({"id": range(4), "data": pa.array([None if d is None else json.dumps(d) for d in docs],
                                                                 pa.json_())}), uri)
    filters = ["json_get_string(data, 'name') = 'Alice'", "json_get_int(data, 'age') >= 26",
               "json_get_float(data, 'score') > 36", "json_get_bool(data, 'ok')", "json_get(data, 'user') IS NOT NULL",
               "json_extract(data, '$.user.name') = '\"B\"'", "json_exists(data, '$.items')",
               "json_array_contains(data, '$.items', 'apple')", "json_array_length(data, '$.items') = 1",
               "json_get_string(json_get(data, 'user'), 'name') = 'A'", "json_get_string(data, 'age') = '25'",
               "json_get(data, '0') IS NULL"]
    for f in filters:
        assert lance_core.dataset(uri).to_table(filter=f)["id"].to_pylist() == \
            lance.dataset(uri).to_table(filter=f)["id"].to_pylist(), f
    columns = {"n": "json_get_string(data, 'name')", "k": "json_array_length(data, '$.items')"}
    assert lance_core.dataset(uri).to_table(columns=columns).to_pydict() == \
        {"n": ["Alice", "Bob", None, None], "k": [2, 1, 0, None]}
    with pytest.raises(lance_core.InvalidInputError, match="json_get_string"):
        lance_core.dataset(uri).to_table(filter="json_get_string(data, 'items') IS NOT NULL")


def test_list_literals_as_pylance(tmp_path):
    """`[a, b]` list literals: compared with list columns (row by row, as SQL orders
    lists), projected, and assigned by update (to a vector column too), as pylance."""
    t = pa.table({"a": [1, 2, 3], "v": pa.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], pa.list_(pa.float32(), 2)),
                  "l": [[1], [2, 3], None]})
    out = {}
    for name, lib in (("ours", lance_core), ("pylance", lance)):
        uri = str(tmp_path / name)
        ds = lib.write_dataset(t, uri)
        got = [ds.to_table(columns=["a"], filter=f).to_pydict()
               for f in ("l = [2, 3]", "l != [2, 3]", "l > [1]", "l = [7] OR a = 1")]
        got.append(ds.to_table(columns={"x": "make_array(a, NULL)"}).to_pydict())
        ds.update({"v": "[42.0, 43.0]"}, where="a = 2")
        lib.dataset(uri).update({"l": "[7, 8, 9]"}, where="a = 3")
        got.append(lib.dataset(uri).to_table().sort_by("a").to_pydict())
        out[name] = got
    assert out["ours"] == out["pylance"]
    # Lists of columns (pylance takes only constants there).
    ds = lance_core.dataset(str(tmp_path / "ours"))
    assert ds.to_table(columns={"x": "[a, a * 2]"}).to_pydict() == {"x": [[1, 2], [2, 4], [3, 6]]}
