"""`merge_insert` against pylance's own: twin datasets, the same merge by each library, then
the same rows (sorted by key), counts, versions and stable row ids, each library reading
the other's result; duplicate and null keys as pylance treats them; a merge racing an
append and a delete."""

from __future__ import annotations


import pyarrow as pa
import pytest

import lance_core
from conftest import assert_same, lance


def _table(ids, tag: str) -> pa.Table:
    ids = list(ids)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "k": pa.array([None if i is None else f"k{i % 3}" for i in ids], pa.string()),
        "x": pa.array([None if i is None else i * 1.5 for i in ids], pa.float64()),
        "name": pa.array([f"{tag}{i}" for i in ids], pa.string()),
        "s": pa.array([{"p": i, "q": tag} for i in ids], pa.struct([("p", pa.int64()), ("q", pa.string())])),
        "l": pa.array([[i, i] if i is not None and i % 2 else [] for i in ids], pa.list_(pa.int64())),
    })


def _make(uri: str, version: str, stable: bool):
    lance.write_dataset(_table(range(30), "t"), uri, data_storage_version=version, max_rows_per_file=10,
                        enable_stable_row_ids=stable)
    lance.dataset(uri).delete("id % 7 = 3")


SOURCE = lambda: _table(list(range(20, 40, 2)) + [3, 5], "s")  # noqa: E731  half match, two are deleted rows

CLAUSES = [
    ("update", None, True, None),
    ("update", None, False, None),
    ("nothing", None, True, None),
    ("delete", None, False, None),
    ("delete", None, True, None),
    ("update", "target.x < 25 AND source.name != 'x'", True, None),
    ("update", None, True, ""),
    ("update", None, False, "x > 10"),
    ("nothing", None, False, "id < 5"),
]


def _apply(builder, clause):
    matched, cond, insert, by_source = clause
    if matched == "update":
        builder = builder.when_matched_update_all(cond)
    elif matched == "delete":
        builder = builder.when_matched_delete()
    if insert:
        builder = builder.when_not_matched_insert_all()
    if by_source is not None:
        builder = builder.when_not_matched_by_source_delete(by_source or None)
    return builder


def _run(tmp_path, version, stable, on, clause, source):
    results = {}
    for lib in (lance, lance_core):
        uri = str(tmp_path / f"{lib.__name__}.lance")
        _make(uri, version, stable)
        ds = lib.dataset(uri)
        res = _apply(ds.merge_insert(on), clause).execute(source)
        ref, ours = lance.dataset(uri), lance_core.dataset(uri)
        assert ref.version == ours.version
        key = [(c, "ascending") for c in ([on] if isinstance(on, str) else on)] + [("name", "ascending")]
        t = ref.to_table().sort_by(key)
        assert_same(ours.to_table().sort_by(key), t, f"{lib.__name__}: both read alike")
        ids = None
        if stable:
            r = ref.to_table(columns=["id", "name"], with_row_id=True)
            ids = sorted(zip(r["name"].to_pylist(), r["_rowid"].to_pylist()))
            o = ours.to_table(columns=["id", "name"], with_row_id=True)
            assert sorted(zip(o["name"].to_pylist(), o["_rowid"].to_pylist())) == ids
        results[lib.__name__] = (res, ref.version, t, ids)
    mine, theirs = results["lance_core"], results["lance"]
    assert mine[0] == theirs[0], "counts"
    assert mine[1] == theirs[1], "versions"
    assert_same(mine[2], theirs[2], "same rows as pylance's merge")
    if stable:
        # updated rows keep their row ids; inserted ones get new ones (numbered alike)
        assert {n: i for n, i in mine[3] if n.startswith("t")} == {n: i for n, i in theirs[3] if n.startswith("t")}
        assert sorted(i for _, i in mine[3]) == sorted(i for _, i in theirs[3])


@pytest.mark.parametrize("clause", CLAUSES, ids=lambda c: f"{c[0]}-{c[1] is not None}-{c[2]}-{c[3]}")
@pytest.mark.parametrize("version,stable", [("2.1", False), ("2.2", True)])
def test_merge_insert_matches_pylance(tmp_path, version, stable, clause):
    _run(tmp_path, version, stable, "id", clause, SOURCE())


@pytest.mark.parametrize("clause", [CLAUSES[0], CLAUSES[6]])
def test_composite_keys_and_null_keys(tmp_path, clause):
    src = _table([20, 21, None, 50], "s")      # a null key never matches: it is inserted
    _run(tmp_path, "2.2", False, ["id", "k"], clause, src)


def test_partial_source_keeps_the_other_columns(tmp_path):
    src = pa.table({"id": pa.array([1, 2, 99], pa.int64()), "x": pa.array([-1.0, -2.0, -99.0])})
    _run(tmp_path, "2.1", False, "id", CLAUSES[0], src)


def test_duplicate_source_keys(tmp_uri):
    _make(tmp_uri, "2.1", False)
    ds = lance_core.dataset(tmp_uri)
    dup = _table([1, 1, 100, 100], "d")
    with pytest.raises(lance_core.InvalidInputError, match="several source rows have the key of one table row"):
        ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(dup)
    # duplicates that match nothing are all inserted, as pylance does
    res = ds.merge_insert("id").when_not_matched_insert_all().execute(_table([100, 100], "d"))
    assert res == {"num_inserted_rows": 2, "num_updated_rows": 0, "num_deleted_rows": 0}
    assert lance.dataset(tmp_uri).to_table(filter="id = 100").num_rows == 2


def test_merge_errors(tmp_uri):
    _make(tmp_uri, "2.1", False)
    ds = lance_core.dataset(tmp_uri)
    v = ds.version
    src = SOURCE()
    for call, match in [
        (lambda: ds.merge_insert("id").execute(src), "no clause that changes the table"),
        (lambda: ds.merge_insert("zz").when_matched_update_all().execute(src), "key column 'zz'"),
        (lambda: ds.merge_insert("id").when_matched_update_all().execute(src.append_column("extra", src["x"])),
         "the source has column 'extra'"),
        (lambda: ds.merge_insert("id").when_matched_update_all().execute(src.set_column(2, "x", src["name"])),
         "column 'x' is Float64 in the table but Utf8 in the source"),
        (lambda: ds.merge_insert("id").when_matched_fail().when_not_matched_insert_all().execute(src),
         "when_matched_fail"),
        (lambda: ds.merge_insert("id").when_matched_update_all("target.nope > 1").execute(src), "nope"),
    ]:
        with pytest.raises(lance_core.LanceError, match=match):
            call()
    assert lance_core.dataset(tmp_uri).version == v


def test_merge_racing_an_append_and_a_delete_loses_nothing(tmp_uri):
    _make(tmp_uri, "2.1", True)
    stale = lance_core.dataset(tmp_uri)
    lance_core.write_dataset(_table([1000, 1001], "a"), tmp_uri, mode="append")   # rebases
    lance.dataset(tmp_uri).delete("id = 22")                                       # same fragment: re-run
    res = stale.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(SOURCE())
    t = lance.dataset(tmp_uri).to_table()
    names = dict(zip(t["id"].to_pylist(), t["name"].to_pylist()))
    assert names[1000] == "a1000" and names[1001] == "a1001"        # the append survived
    assert names[22] == "s22"                                        # re-matched: 22 is now an insert
    assert res["num_inserted_rows"] + res["num_updated_rows"] == SOURCE().num_rows
    assert len(names) == t.num_rows                                  # no key twice
    assert_same(lance_core.dataset(tmp_uri).to_table().sort_by("id"), t.sort_by("id"), "after the race")


def test_merge_explain_and_analyze_without_committing(tmp_path):
    uri = str(tmp_path / "t")
    lance.write_dataset(pa.table({"id": [1, 2, 3, 4], "value": ["a", "b", "c", "d"]}), uri, max_rows_per_file=2)
    ds = lance_core.dataset(uri)
    builder = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().use_index(False)
    plan = builder.explain_plan()
    assert plan.splitlines()[0] == ("MergeInsert: on=[id], when_matched=UpdateAll, when_not_matched=InsertAll, "
                                    "when_not_matched_by_source=Keep")
    assert "columns [id, value]" in plan and "Scan: 2 fragments, columns [id]" in plan
    assert "[0, 1]" in builder.explain_plan(verbose=True)
    with pytest.raises(lance_core.InvalidInputError, match="key columns"):
        builder.explain_plan(pa.schema([("value", pa.string())]))
    before = sorted(p.name for p in (tmp_path / "t" / "data").iterdir())
    analysis = builder.analyze_plan(pa.table({"id": [1, 5], "value": ["u", "e"]}))
    first = analysis.splitlines()[0]
    assert "num_inserted_rows=1" in first and "num_updated_rows=1" in first and "num_deleted_rows=0" in first
    written = int(first.split("bytes_written=")[1].split(",")[0])
    assert written > 0 and "num_files_written=" in first
    # Nothing was committed and no file stayed behind; the same merge then commits as usual.
    assert sorted(p.name for p in (tmp_path / "t" / "data").iterdir()) == before
    assert not (tmp_path / "t" / "_deletions").exists() or not any((tmp_path / "t" / "_deletions").iterdir())
    assert ds.version == lance_core.dataset(uri).version == 1
    assert builder.execute(pa.table({"id": [1, 5], "value": ["u", "e"]})) == \
        {"num_inserted_rows": 1, "num_updated_rows": 1, "num_deleted_rows": 0}
    assert sorted(lance.dataset(uri).to_table()["value"].to_pylist()) == ["b", "c", "d", "e", "u"]
    deleting = lance_core.dataset(uri).merge_insert("id").when_not_matched_by_source_delete("id > 3")
    assert "when_not_matched_by_source=DeleteIf(id > 3)" in deleting.explain_plan()
    assert "num_deleted_rows=2" in deleting.analyze_plan(pa.table({"id": [1], "value": ["z"]}))
    assert lance_core.dataset(uri).count_rows() == 5
