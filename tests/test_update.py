"""`update` against pylance's own: twin datasets, the same update by each library, then the
same rows (sorted by key), versions, row counts and stable row ids; each library reads the
other's result. Also retries after concurrent commits, and errors."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lance_core
from conftest import assert_same, lance


def _table(n: int = 40) -> pa.Table:
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "name": [f"n{i % 7}" if i % 5 else None for i in range(n)],
        "x": pa.array([i * 0.5 for i in range(n)], pa.float64()),
        "small": pa.array([i % 100 for i in range(n)], pa.int32()),
        "s": pa.array([{"p": i, "q": f"q{i}"} if i % 4 else None for i in range(n)]),
        "tags": pa.array([[f"t{j}" for j in range(i % 3)] if i % 6 else None for i in range(n)]),
        "ts": pa.array([i * 1_000_000 for i in range(n)], pa.timestamp("us")),
    })


def _make(uri: str, version: str, stable: bool):
    lance.write_dataset(_table(), uri, data_storage_version=version, max_rows_per_file=12,
                        enable_stable_row_ids=stable)
    lance.dataset(uri).delete("id % 9 = 4")


def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by("id")


UPDATES = [
    ({"x": "x * 10 + 1"}, "id > 20"),
    ({"name": "'renamed'", "small": "small + id"}, "name IS NULL OR id < 3"),
    ({"x": "NULL", "ts": "ts"}, None),
    ({"small": "CAST(x AS INT)", "id": "id + 1000"}, "x BETWEEN 3 AND 9"),
    ({"name": "concat(name, '_', CAST(id AS STRING))", "small": "abs(small - 50)"}, "id % 2 = 0"),
    ({"name": "upper(name)"}, "name LIKE 'n1%'"),
    ({"x": "-x"}, "id > 1000"),                      # no row matches: still a version
]


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("stable", [False, True])
@pytest.mark.parametrize("updates,where", UPDATES)
def test_update_matches_pylance(tmp_path, version, stable, updates, where):
    results = {}
    for lib in (lance, lance_core):
        uri = str(tmp_path / f"{lib.__name__}.lance")
        _make(uri, version, stable)
        ds = lib.dataset(uri)
        res = ds.update(dict(updates), where=where)
        ref = lance.dataset(uri)
        ours = lance_core.dataset(uri)
        assert ds.version == ref.version == ours.version
        assert_same(_sorted(ours.to_table()), _sorted(ref.to_table()), f"{lib.__name__}: both read alike")
        ids = None
        if stable:
            t = ref.to_table(columns=["id"], with_row_id=True)
            ids = sorted(zip(t["id"].to_pylist(), t["_rowid"].to_pylist()))
            o = ours.to_table(columns=["id"], with_row_id=True)
            assert sorted(zip(o["id"].to_pylist(), o["_rowid"].to_pylist())) == ids
        results[lib.__name__] = (res, ref.version, _sorted(ref.to_table()), ids)
    mine, theirs = results["lance_core"], results["lance"]
    assert mine[0] == theirs[0]
    assert mine[1] == theirs[1]
    assert_same(mine[2], theirs[2], "same rows as pylance's update")
    assert mine[3] == theirs[3], "stable row ids move with their rows"


def test_nested_field_update_and_functions(tmp_uri):
    """pylance refuses nested references in updates; lance_core sets the field inside its
    struct (a null struct stays null)."""
    _make(tmp_uri, "2.1", False)
    ds = lance_core.dataset(tmp_uri)
    before = _sorted(ds.to_table())
    res = ds.update({"s.p": "s.p * 2", "x": "x + 1"}, where="id < 10")
    after = _sorted(lance.dataset(tmp_uri).to_table())
    assert res == {"num_rows_updated": sum(1 for i in before["id"].to_pylist() if i < 10)}
    for b, a in zip(before.to_pylist(), after.to_pylist()):
        if b["id"] < 10:
            assert a["x"] == b["x"] + 1
            assert a["s"] == (None if b["s"] is None else {"p": b["s"]["p"] * 2, "q": b["s"]["q"]})
            assert a["tags"] == b["tags"] and a["name"] == b["name"]
        else:
            assert a == b


def test_update_with_case_coalesce_and_string_functions(tmp_uri):
    """The SQL users reach for in updates (pylance 14 refuses CASE, substr and trim):
    checked against the same values computed in Python."""
    _make(tmp_uri, "2.2", False)
    ds = lance_core.dataset(tmp_uri)
    before = {r["id"]: r for r in ds.to_table().to_pylist()}
    res = ds.update({
        "x": "CASE WHEN x > 10 THEN x * 2 WHEN x > 5 THEN 0 ELSE -x END",
        "name": "coalesce(lower(name), substr(trim(concat('  ', CAST(id AS STRING), 'xyz  ')), 2, 3))",
        "small": "CASE small WHEN 7 THEN 700 ELSE small END",
    }, where="id < 25")
    after = {r["id"]: r for r in lance.dataset(tmp_uri).to_table().to_pylist()}
    assert res == {"num_rows_updated": sum(1 for i in before if i < 25)}
    for i, b in before.items():
        a = after[i]
        if i >= 25:
            assert a == b
            continue
        assert a["x"] == (b["x"] * 2 if b["x"] > 10 else 0 if b["x"] > 5 else -b["x"])
        assert a["name"] == (b["name"].lower() if b["name"] is not None else f"{i}xyz"[1:4])
        assert a["small"] == (700 if b["small"] == 7 else b["small"])


def test_update_errors_name_what_is_wrong(tmp_uri):
    _make(tmp_uri, "2.2", False)
    ds = lance_core.dataset(tmp_uri)
    v = ds.version
    for call, match in [
        (lambda: ds.update({"zz": "1"}), "cannot update column 'zz'"),
        (lambda: ds.update({"s.zz": "1"}), "cannot update column 's.zz'"),
        (lambda: ds.update({"x": "nope + 1"}), "nope"),
        (lambda: ds.update({"x": "x +"}), "cannot use expression 'x \\+'"),
        (lambda: ds.update({"x": "1"}, where="zz > 1"), "zz"),
        (lambda: ds.update({"small": "'abc'"}), "column small"),
        (lambda: ds.update({}), "non-empty dict"),
        (lambda: ds.update({"name": "foo(name)"}), "unknown function 'foo'"),
        (lambda: ds.update({"name": "substr(name)"}), "substr takes 2 or 3 arguments"),
    ]:
        with pytest.raises(lance_core.LanceError, match=match):
            call()
    assert lance_core.dataset(tmp_uri).version == v
    # nothing was left behind in data/ by the failed attempts
    import os
    files = {f for f in os.listdir(os.path.join(tmp_uri, "data"))}
    assert files == {d.path for f in lance.dataset(tmp_uri).get_fragments() for d in f.data_files()}


def test_update_retries_after_a_concurrent_commit_to_the_same_fragments(tmp_uri):
    _make(tmp_uri, "2.1", True)
    stale = lance_core.dataset(tmp_uri)
    lance.dataset(tmp_uri).delete("id = 21")                 # the fragment the update touches
    extra = _table(2).slice(1, 1).set_column(0, "id", pa.array([500], pa.int64()))
    lance_core.write_dataset(extra, tmp_uri, mode="append")
    with pytest.raises(lance_core.CommitConflictError, match="same fragments"):
        lance_core.dataset(tmp_uri, version=stale.version).update({"x": "0"}, where="id BETWEEN 18 AND 21",
                                                                  conflict_retries=0)
    res = stale.update({"x": "-1"}, where="id BETWEEN 18 AND 21")
    # re-run against the new version: row 21 was deleted meanwhile, so three rows change (22 was deleted before)
    assert res == {"num_rows_updated": 3}
    t = _sorted(lance.dataset(tmp_uri).to_table())
    assert t["id"].to_pylist().count(21) == 0 and 500 in t["id"].to_pylist()   # the append survived
    assert [r["x"] for r in t.to_pylist() if 18 <= r["id"] <= 22] == [-1.0] * 3
    assert_same(_sorted(lance_core.dataset(tmp_uri).to_table()), t, "after the retry")
