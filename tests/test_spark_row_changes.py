"""`lance_core.spark.merge_insert` and `lance_core.spark.update` on local[2]: the same
result as the Python versions (themselves checked against pylance) on twin datasets,
pylance reading the result; errors raised on the driver with no version and no file left;
commits that race other writers."""

from __future__ import annotations

import os

import lance
import pyarrow as pa
import pytest

import lance_core
from conftest import assert_same
from test_merge_insert import CLAUSES, _apply, _make, _table

import pyspark  # noqa: F401

from lance_core.spark import merge_insert, update  # noqa: E402
from lance_core.spark import row_changes  # noqa: E402


def _source_df(spark, tmp_path, table: pa.Table, partitions: int = 2):
    """`table` as a DataFrame of `partitions` partitions (through the lance data source, so
    every type comes as lance_core maps it)."""
    uri = str(tmp_path / f"src-{len(os.listdir(tmp_path))}.lance")
    lance.write_dataset(table, uri)
    return spark.read.format("lance").load(uri).repartition(partitions)


def _files(uri: str):
    return {d: sorted(os.listdir(os.path.join(uri, d))) for d in ("data", "_deletions", "_versions")
            if os.path.isdir(os.path.join(uri, d))}


def _rows_and_ids(uri: str, key):
    ref = lance.dataset(uri)
    t = ref.to_table().sort_by([(k, "ascending") for k in key] + [("name", "ascending")])
    assert_same(lance_core.dataset(uri).to_table().sort_by(
        [(k, "ascending") for k in key] + [("name", "ascending")]), t, "both libraries read alike")
    r = ref.to_table(columns=["name"], with_row_id=True)
    return ref.version, t, sorted(zip(r["name"].to_pylist(), r["_rowid"].to_pylist()), key=lambda p: (p[0] or "", p[1]))


def _twins(tmp_path, version="2.2", stable=True):
    py, sp = str(tmp_path / "python.lance"), str(tmp_path / "spark.lance")
    for uri in (py, sp):
        _make(uri, version, stable)
    return py, sp


def _same_as_python(py: str, sp: str, key, counts_py, counts_sp, stable: bool):
    assert counts_sp == counts_py, "counts"
    v_py, t_py, ids_py = _rows_and_ids(py, key)
    v_sp, t_sp, ids_sp = _rows_and_ids(sp, key)
    assert v_sp == v_py, "one version each"
    assert_same(t_sp, t_py, "same rows as the Python merge")
    if stable:
        # Rows that were in the table keep their ids; inserted rows get the same new ids.
        assert {n: i for n, i in ids_sp if n and n.startswith("t")} == \
            {n: i for n, i in ids_py if n and n.startswith("t")}
        assert sorted(i for _, i in ids_sp) == sorted(i for _, i in ids_py)


@pytest.mark.parametrize("clause", [CLAUSES[0], CLAUSES[4], CLAUSES[5], CLAUSES[7], CLAUSES[8]],
                         ids=lambda c: f"{c[0]}-{c[1] is not None}-{c[2]}-{c[3]}")
def test_spark_merge_equals_python_merge(spark, tmp_path, clause):
    py, sp = _twins(tmp_path)
    src = _table(list(range(20, 40, 2)) + [3, 5], "s")
    counts_py = _apply(lance_core.dataset(py).merge_insert("id"), clause).execute(src)
    counts_sp = _apply(merge_insert(_source_df(spark, tmp_path, src), sp, "id"), clause).execute()
    _same_as_python(py, sp, ["id"], counts_py, counts_sp, stable=True)
    assert not any(n.startswith("spark-") and "aborted" in n for n in os.listdir(sp))


def test_spark_merge_composite_null_keys_and_partial_source(spark, tmp_path):
    py, sp = _twins(tmp_path, "2.1", stable=False)
    src = _table([20, 21, None, 50], "s")  # a null key never matches: it is inserted
    counts_py = lance_core.dataset(py).merge_insert(["id", "k"]).when_matched_update_all() \
        .when_not_matched_insert_all().execute(src)
    counts_sp = merge_insert(_source_df(spark, tmp_path, src), sp, ["id", "k"]).when_matched_update_all() \
        .when_not_matched_insert_all().execute()
    _same_as_python(py, sp, ["id", "k"], counts_py, counts_sp, stable=False)

    partial = pa.table({"id": pa.array([1, 2, 99], pa.int64()), "x": pa.array([-1.0, -2.0, -99.0])})
    counts_py = lance_core.dataset(py).merge_insert("id").when_matched_update_all() \
        .when_not_matched_insert_all().execute(partial)
    counts_sp = merge_insert(_source_df(spark, tmp_path, partial), sp, "id").when_matched_update_all() \
        .when_not_matched_insert_all().execute()
    _same_as_python(py, sp, ["id"], counts_py, counts_sp, stable=False)


def test_spark_merge_errors_leave_nothing(spark, tmp_path):
    _, sp = _twins(tmp_path, "2.1", stable=False)
    before, version = _files(sp), lance.dataset(sp).version
    dup = _source_df(spark, tmp_path, _table([1, 1, 2, 100], "d"))
    with pytest.raises(lance_core.InvalidInputError, match="several source rows have the key of one table row"):
        merge_insert(dup, sp, "id").when_matched_update_all().when_not_matched_insert_all().execute()
    with pytest.raises(lance_core.InvalidInputError, match="when_matched_fail"):
        merge_insert(dup, sp, "id").when_matched_fail().when_not_matched_insert_all().execute()
    with pytest.raises(lance_core.InvalidInputError, match="the source has column 'zz'"):
        merge_insert(dup.withColumn("zz", dup["id"]), sp, "id").when_matched_update_all().execute()
    with pytest.raises(lance_core.InvalidInputError, match="no clause that changes the table"):
        merge_insert(dup, sp, "id").execute()
    with pytest.raises(lance_core.LanceError, match="nope"):
        merge_insert(dup, sp, "id").when_not_matched_by_source_delete("nope > 1").execute()
    assert lance.dataset(sp).version == version
    assert _files(sp) == before, "a failed merge leaves no data, deletion or version file"
    # Duplicates that match nothing are all inserted, as pylance does.
    res = merge_insert(_source_df(spark, tmp_path, _table([100, 100], "d")), sp, "id") \
        .when_not_matched_insert_all().execute()
    assert res == {"num_inserted_rows": 2, "num_updated_rows": 0, "num_deleted_rows": 0}


def test_spark_update_equals_python_update(spark, tmp_path):
    py, sp = _twins(tmp_path)
    updates = {"x": "x * 2 + 1", "name": "concat(name, '!')", "s.q": "upper(s.q)"}
    n_py = lance_core.dataset(py).update(updates, where="id > 4 AND id < 25")
    n_sp = update(spark, sp, updates, where="id > 4 AND id < 25")
    assert n_sp == n_py and n_sp["num_rows_updated"] > 0
    _same_as_python(py, sp, ["id"], None, None, stable=True)
    # Every row, with no predicate.
    assert update(spark, sp, {"x": "0"}) == lance_core.dataset(py).update({"x": "0"})
    _same_as_python(py, sp, ["id"], None, None, stable=True)
    before = _files(sp)
    with pytest.raises(lance_core.LanceError, match="nope"):
        update(spark, sp, {"nope": "1"})
    with pytest.raises(lance_core.LanceError, match="cannot all be stored"):
        update(spark, sp, {"id": "name"}, where="id > 20")  # a task fails: nothing is left behind
    assert _files(sp) == before


def test_spark_merge_racing_other_writers(spark, tmp_path, monkeypatch):
    """An append committed while the job runs is kept; a delete of a matched row makes the
    job run again on the new version."""
    _, sp = _twins(tmp_path, "2.1", stable=False)
    src = _source_df(spark, tmp_path, _table([1, 2, 50], "s"))
    commit = row_changes._lance_core._commit_merge_parts
    raced = []

    def racing(ds, *args, **kwargs):
        if not raced:
            raced.append(ds.version)
            lance.write_dataset(_table([200, 201], "a"), sp, mode="append")
            lance.dataset(sp).delete("id = 2")
        return commit(ds, *args, **kwargs)

    monkeypatch.setattr(row_changes._lance_core, "_commit_merge_parts", racing)
    res = merge_insert(src, sp, "id").when_matched_update_all().when_not_matched_insert_all().execute()
    # The re-run sees id 2 deleted: it is inserted, not updated.
    assert res == {"num_inserted_rows": 2, "num_updated_rows": 1, "num_deleted_rows": 0}
    t = lance.dataset(sp).to_table(columns=["id", "name"]).sort_by("id")
    names = dict(zip(t["id"].to_pylist(), t["name"].to_pylist()))
    assert (names[1], names[2], names[50], names[200], names[201]) == ("s1", "s2", "s50", "a200", "a201")
    assert t.num_rows == len(set(t["id"].to_pylist()))


def test_spark_merge_racing_a_merge_that_inserts_its_key(spark, tmp_path, monkeypatch):
    """A merge that inserted key 60 while the job ran makes the job run again (its commit
    records the keys its tasks inserted): 60 is then updated, not inserted twice."""
    _, sp = _twins(tmp_path, "2.2", stable=False)
    src = _source_df(spark, tmp_path, _table([1, 60], "s"))
    commit = row_changes._lance_core._commit_merge_parts
    raced = []

    def racing(ds, *args, **kwargs):
        if not raced:
            raced.append(ds.version)
            lance_core.dataset(sp).merge_insert("id").when_not_matched_insert_all().execute(_table([60], "r"))
        return commit(ds, *args, **kwargs)

    monkeypatch.setattr(row_changes._lance_core, "_commit_merge_parts", racing)
    res = merge_insert(src, sp, "id").when_matched_update_all().when_not_matched_insert_all().execute()
    assert res == {"num_inserted_rows": 0, "num_updated_rows": 2, "num_deleted_rows": 0}
    t = lance.dataset(sp).to_table(filter="id = 60")
    assert t["name"].to_pylist() == ["s60"]


def test_commit_of_row_changes_checks_the_addresses(tmp_path):
    """The driver's commit refuses a row changed twice or a row that is not there, and
    removes the fragments the tasks wrote."""
    import struct

    from lance_core import _lance_core

    _, uri = _twins(tmp_path, "2.1", stable=False)
    before = _files(uri)
    ds = lance_core.dataset(uri)
    frags, removed, count = _lance_core._update_part(ds._ds, [("x", "1")], "id < 3", [0], "spark-test-")
    assert count == 3 and len(removed) == 24 and _files(uri)["data"] != before["data"]
    for addresses, match in [(removed + removed[:8], "changed twice"),
                             (struct.pack("<Q", (99 << 32) | 1), "no fragment 99"),
                             (struct.pack("<Q", 5000), "fragment 0 has no row 5000"),
                             (removed[:7], "whole little-endian u64")]:
        with pytest.raises(lance_core.InvalidInputError, match=match):
            _lance_core._commit_update_parts(ds._ds, frags, addresses, ["x"])
        if match != "whole little-endian u64":
            assert _files(uri) == before
            frags, removed, _ = _lance_core._update_part(ds._ds, [("x", "1")], "id < 3", [0], "spark-test-")
    # A table row two tasks' source rows matched: the error names its key.
    first = struct.pack("<Q", 1)
    key = lance_core.dataset(uri).take([1], columns=["id"])["id"][0].as_py()
    with pytest.raises(lance_core.InvalidInputError, match=f"several source rows .*id = {key}"):
        _lance_core._commit_merge_parts(ds._ds, frags, b"", first + first, ["id"])
    assert _files(uri) == before
    assert lance_core.dataset(uri).version == ds.version
