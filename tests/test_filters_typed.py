"""Filters cross into the core as typed values: a pyarrow compute expression is read as the
core's expression, never printed to SQL and parsed again, and SQL text is parsed once, where
it is given. Each pyarrow filter here selects what pyarrow itself selects, and what its SQL
form selects, across scans, counts, fragment reads, deletes and updates."""

from __future__ import annotations

from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_core
from lance_core import _lance_core
from lance_core.errors import InvalidInputError

NY = "America/New_York"
N = 40


def _table() -> pa.Table:
    base = datetime(2024, 1, 1, tzinfo=timezone.utc).timestamp()
    return pa.table({
        "id": pa.array(range(N), pa.int64()),
        # Names SQL would misread written bare: with a space, keywords, a clock function.
        "a b": pa.array([i % 7 for i in range(N)], pa.int32()),
        "null": pa.array([i % 5 for i in range(N)], pa.int64()),
        "not": pa.array([None if i % 6 == 0 else i for i in range(N)], pa.int64()),
        "current_date": pa.array([i % 3 for i in range(N)], pa.int64()),
        "f": pa.array([[0.1, 0.2, 0.30000000000000004, 0.3][i % 4] for i in range(N)], pa.float64()),
        "f32": pa.array([[0.1, 0.25][i % 2] for i in range(N)], pa.float32()),
        # An hour apart, from 2024-01-01 00:00 UTC, in New York's zone.
        "ts": pa.array([int((base + 3600 * i) * 1_000_000) for i in range(N)], pa.timestamp("us", NY)),
        "s": pa.array([f"s{i % 4}" for i in range(N)]),
    })


# (pyarrow expression, the same filter in SQL, the ids it selects when pyarrow cannot say)
CASES = [
    (pc.field("a b") > 4, "`a b` > 4", None),
    (pc.field("null") == 3, "`null` = 3", None),
    (pc.field("not").is_null(), "`not` IS NULL", None),
    (~pc.field("not").is_valid() | (pc.field("id") < 2), "`not` IS NULL OR id < 2", None),
    (pc.field("current_date") == 1, "`current_date` = 1", None),
    (pc.field("f") == 0.1, "f = 0.1", None),
    (pc.field("f") == 0.30000000000000004, "f = 0.30000000000000004", None),
    (pc.field("f32") == pa.scalar(0.1, pa.float32()), "f32 = CAST(0.1 AS FLOAT)", None),
    (pc.field("s").isin(["s1", "s3"]) & (pc.field("id") >= 10), "s IN ('s1', 's3') AND id >= 10", None),
    (pc.field("ts") == pa.scalar(datetime(2024, 1, 1, 5, tzinfo=timezone.utc), pa.timestamp("us", NY)),
     "ts = TIMESTAMP '2024-01-01 05:00:00+00:00'", None),
    # A literal in another zone than the column's is the same instant: hours 30 onwards.
    (pc.field("ts") >= pa.scalar(datetime(2024, 1, 2, 6, tzinfo=timezone.utc), pa.timestamp("ms", "UTC")),
     "ts >= TIMESTAMP '2024-01-02 01:00:00-05:00'", list(range(30, N))),
]
IDS = [str(e) for e, _, _ in CASES]


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return _table()


def _write(table: pa.Table, path) -> lance_core.LanceDataset:
    return lance_core.write_dataset(table, str(path), max_rows_per_file=16)


def _expected(table: pa.Table, expr: pc.Expression, ids) -> list:
    return ids if ids is not None else sorted(table.filter(expr)["id"].to_pylist())


def _ids(t: pa.Table) -> list:
    return sorted(t["id"].to_pylist())


@pytest.mark.parametrize("expr,sql,ids", CASES, ids=IDS)
def test_reads_select_what_pyarrow_and_the_sql_form_select(tmp_path, table, expr, sql, ids):
    ds = _write(table, tmp_path / "t")
    want = _expected(table, expr, ids)
    assert _ids(ds.to_table(filter=expr)) == want
    assert _ids(ds.to_table(filter=sql)) == want
    assert _ids(ds.to_table(filter=expr, use_scalar_index=False, late_materialization=False)) == want
    assert ds.count_rows(expr) == len(want) == ds.count_rows(sql)
    assert ds.scanner(filter=expr).count_rows() == len(want)
    assert _ids(ds.filter(expr).to_table()) == want
    # Fragment by fragment: each reads and counts its own share.
    got, counted = [], 0
    for frag in ds.get_fragments():
        got += frag.to_table(filter=expr)["id"].to_pylist()
        counted += frag.count_rows(expr)
    assert sorted(got) == want and counted == len(want)


@pytest.mark.parametrize("expr,sql,ids", CASES, ids=IDS)
def test_deletes_and_updates_take_pyarrow_filters(tmp_path, table, expr, sql, ids):
    want = _expected(table, expr, ids)
    keep = sorted(set(range(N)) - set(want))
    for i, where in enumerate([expr, sql]):
        ds = _write(table, tmp_path / f"d{i}")
        assert ds.delete(where) == {"num_deleted_rows": len(want)}
        assert _ids(ds.to_table()) == keep
        assert _ids(lance_core.dataset(ds.uri).to_table()) == keep

        ds = _write(table, tmp_path / f"u{i}")
        assert ds.update({"s": "'changed'"}, where=where) == {"num_rows_updated": len(want)}
        assert _ids(ds.to_table(filter="s = 'changed'")) == want

    # A fragment's rows deleted without committing, then committed.
    ds = _write(table, tmp_path / "f")
    frag = ds.get_fragment(0)
    in_frag = [i for i in want if i < frag.count_rows()]
    meta = frag.delete(expr)
    left = frag.count_rows() - len(in_frag)
    assert (meta is None) == (left == 0)
    if meta is not None:
        op = lance_core.LanceOperation.Delete([meta], [], "fragment delete")
        ds = lance_core.LanceDataset.commit(ds.uri, op, read_version=ds.version)
        assert ds.get_fragment(0).count_rows() == left


def test_the_binding_receives_a_typed_filter(tmp_path, table):
    ds = _write(table, tmp_path / "t")
    expr = pc.field("null") == 3
    scanner = ds.scanner(filter=expr)
    f = scanner._args["filter"]
    assert isinstance(f, _lance_core._Filter)
    # The expression is read as the core's own: `null` the column, not SQL's NULL.
    assert str(f) == "`null` = 3"
    assert _ids(scanner.to_table()) == list(range(3, N, 5))
    # SQL text is parsed once, where it is given; a filter of either kind is taken as it is.
    sql = _lance_core._Filter.sql("id < 3")
    assert _ids(ds.to_table(filter=sql)) == [0, 1, 2]
    assert ds._ds.count_rows(None, sql & "id > 0") == 2
    assert ds._ds.count_rows(None, sql & f) == 0
    assert ds._ds.count_rows(None, "id < 3") == 3


def test_bad_filters_raise_naming_what_is_wrong(tmp_path, table):
    ds = _write(table, tmp_path / "t")
    with pytest.raises(InvalidInputError, match="cannot use filter 'id >'"):
        ds.scanner(filter="id >")  # raised where it is given, not when the scan runs
    with pytest.raises(InvalidInputError, match="utf8_upper"):
        ds.to_table(filter=pc.utf8_upper(pc.field("s")) == "S1")
    with pytest.raises(InvalidInputError, match="nope"):
        ds.to_table(filter=pc.field("nope") > 1)
    with pytest.raises(InvalidInputError, match="SQL text or a pyarrow compute expression"):
        ds.to_table(filter=5)
    with pytest.raises(InvalidInputError, match="SQL text or a pyarrow compute expression"):
        ds._ds.count_rows(None, 5)
    with pytest.raises(InvalidInputError, match="delete takes a predicate"):
        ds.delete(" ")
    with pytest.raises(InvalidInputError, match="pyarrow expression"):
        _lance_core._Filter.pyarrow(b"ARROW1 not an expression ARROW1")
    # Nothing was deleted by the failed calls.
    assert ds.count_rows() == N


def test_typed_filters_and_merge_clauses_pickle_as_what_they_read(tmp_path, table):
    """Spark ships filters and a merge's clauses to its executors pickled: each comes back
    as the same expression (pickled as its SQL printing, which reads back the same)."""
    import pickle

    ds = _write(table, tmp_path / "t")
    f = ds.scanner(filter=(pc.field("null") == 3) | (pc.field("a b") > 5))._args["filter"]
    back = pickle.loads(pickle.dumps(f))
    assert str(back) == str(f) and _ids(ds.to_table(filter=back)) == _ids(ds.to_table(filter=f))
    by_source = ds.scanner(filter=pc.field("not").is_null())._args["filter"]
    clauses = _lance_core._MergeClauses(["id"], "update", "source.`null` > target.`null`", True, True, by_source)
    assert repr(pickle.loads(pickle.dumps(clauses))) == repr(clauses)
    every = _lance_core._MergeClauses(["id"], "delete", None, False, True, None)
    assert repr(pickle.loads(pickle.dumps(every))) == repr(every)


def test_merge_clauses_are_read_where_they_are_built(tmp_path, table):
    ds = _write(table, tmp_path / "t")
    with pytest.raises(InvalidInputError, match='unknown when_matched action "upsert"'):
        _lance_core._MergeClauses(["id"], "upsert")
    with pytest.raises(InvalidInputError, match="goes with when_matched \"update\""):
        _lance_core._MergeClauses(["id"], "delete", "source.id > 1")
    with pytest.raises(InvalidInputError, match="goes with delete_by_source=True"):
        _lance_core._MergeClauses(["id"], "nothing", None, True, False, "id > 1")
    # A bad condition fails when the merge runs, naming it; nothing is written.
    builder = ds.merge_insert("id").when_matched_update_all("source.id >").when_not_matched_insert_all()
    with pytest.raises(InvalidInputError, match="source.id >"):
        builder.execute(table.slice(0, 3))
    assert ds.count_rows() == N and ds.version == 1
