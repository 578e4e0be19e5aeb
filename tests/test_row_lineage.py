"""System columns and row lineage (issue 27 point 5): `_rowid`, `_rowaddr`, `_rowoffset`,
`_row_created_at_version` and `_row_last_updated_at_version` in projections, filters, takes
and fragment scans; the lineage every writer keeps on tables with stable row ids; and
`ds.delta()`; each checked against pylance 14 on the same table."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_core

_LIBS = {"ours": lance_core, "pylance": lance}
SYSTEM = ["_rowid", "_rowaddr", "_rowoffset", "_row_created_at_version", "_row_last_updated_at_version"]
LINEAGE = ["a", "b", "_rowid", "_row_created_at_version", "_row_last_updated_at_version"]


def _table(n=10):
    return pa.table({"a": list(range(n)), "b": [str(i) for i in range(n)]})


@pytest.fixture(params=[False, True], ids=["addresses", "stable"])
def with_deletions(request, tmp_path):
    """Three fragments written by pylance, rows deleted from two of them."""
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(_table(), uri, max_rows_per_file=4, enable_stable_row_ids=request.param)
    lance.dataset(uri).delete("a = 1 or a = 5")
    return uri


@pytest.mark.parametrize("columns,filter", [
    (["_rowid", "a"], None),
    (["a", "_rowaddr", "_rowoffset"], None),
    (["a"], "_rowid > 5"),
    (["a"], "_rowaddr >= 4294967296 AND _rowaddr < 8589934592"),
    (["a", "_rowoffset"], "a > 3"),
    (["b"] + SYSTEM, None),
    (["a", "_rowid"], "_row_created_at_version = 1"),
])
def test_system_columns_scan_as_pylance(with_deletions, columns, filter):
    got = {name: lib.dataset(with_deletions).to_table(columns=columns, filter=filter)
           for name, lib in _LIBS.items()}
    assert got["ours"].schema == got["pylance"].schema
    assert got["ours"].to_pydict() == got["pylance"].to_pydict()


def test_system_columns_in_takes_fragments_and_limits(with_deletions):
    cols = ["a", "_rowid", "_rowaddr", "_rowoffset"]
    for call in (lambda ds: ds.take([0, 3, 5], columns=cols),
                 lambda ds: ds.get_fragments()[1].to_table(columns=cols),
                 lambda ds: ds.to_table(columns=cols, limit=3, offset=2),
                 lambda ds: ds.to_table(columns=["a", "_rowid"], with_row_id=True),
                 lambda ds: ds.to_table(columns=["a"], with_row_id=True, with_row_address=True)):
        ours, theirs = (call(lib.dataset(with_deletions)) for lib in (lance_core, lance))
        assert ours.to_pydict() == theirs.to_pydict()
        assert ours.schema.names == theirs.schema.names


def test_system_columns_in_expressions_and_count(with_deletions):
    """We also take them in projected expressions and in `_rowoffset` filters (pylance
    refuses both), and counts filter on them."""
    ds = lance_core.dataset(with_deletions)
    t = ds.to_table(columns={"next": "_rowoffset + 1", "a": "a"}, filter="_rowoffset >= 6")
    assert t.to_pydict() == {"next": [7, 8], "a": [8, 9]}
    assert ds.count_rows("_rowaddr < 4294967296") == 3


def _history(lib, uri, stable):
    """The same writes through `lib`; the rows with their lineage after each."""
    seen = []
    ds = lib.write_dataset(_table(6), uri, max_rows_per_file=4, enable_stable_row_ids=stable)
    lib.write_dataset(pa.table({"a": [10, 11], "b": ["x", "y"]}), uri, mode="append")
    lib.dataset(uri).update({"b": "'u'"}, where="a = 1 or a = 10")
    (lib.dataset(uri).merge_insert("a").when_matched_update_all().when_not_matched_insert_all()
     .execute(pa.table({"a": [2, 20], "b": ["m", "n"]})))
    lib.dataset(uri).delete("a = 3")
    for step in ("compact", "update"):
        ds = lib.dataset(uri)
        seen.append((ds.version, ds.to_table(columns=LINEAGE).sort_by("a").to_pydict()))
        if step == "compact":
            ds.optimize.compact_files()
        else:
            ds.update({"b": "'w'"}, where="a = 0")
    ds = lib.dataset(uri)
    seen.append((ds.version, ds.to_table(columns=LINEAGE).sort_by("a").to_pydict()))
    return seen


def test_writers_keep_lineage_as_pylance(tmp_path):
    """Append, update, merge_insert, delete and compaction on a table with stable row ids:
    the same versions, row ids and lineage as pylance's; each reads the other's."""
    ours = _history(lance_core, str(tmp_path / "ours"), True)
    theirs = _history(lance, str(tmp_path / "theirs"), True)
    assert ours == theirs
    # Created in 1 and 2, updated in 3 (update), 4 (merge), 8 (last update); compaction
    # (versions 6 and 7, reserving ids first as pylance does) changes none of it.
    assert ours[-1][1]["_row_last_updated_at_version"] == [8, 3, 4, 1, 1, 3, 2, 4]
    for name, lib in _LIBS.items():
        for other in ("ours", "theirs"):
            t = lib.dataset(str(tmp_path / other)).to_table(columns=LINEAGE).sort_by("a").to_pydict()
            assert t == ours[-1][1], (name, other)
    # Every fragment we wrote carries both sequences, as pylance's do.
    for f in lance.dataset(str(tmp_path / "ours")).get_fragments():
        assert f.metadata.created_at_version_meta is not None
        assert f.metadata.last_updated_at_version_meta is not None


def test_tables_without_stable_row_ids_read_version_one(tmp_path):
    uri = str(tmp_path / "t.lance")
    lance_core.write_dataset(_table(4), uri)
    lance_core.write_dataset(_table(2), uri, mode="append")
    for lib in _LIBS.values():
        t = lib.dataset(uri).to_table(columns=["_row_created_at_version", "_row_last_updated_at_version"])
        assert set(t.column(0).to_pylist()) == {1} and set(t.column(1).to_pylist()) == {1}
    assert all(f.metadata.created_at_version_meta is None for f in lance_core.dataset(uri).get_fragments())


def _delta_view(lib, uri, **kw):
    d = lib.dataset(uri).delta(**kw)
    out = {"inserted": d.get_inserted_rows().read_all().to_pydict(),
           "updated": d.get_updated_rows().read_all().to_pydict(),
           "transactions": [type(t.operation).__name__ for t in d.list_transactions()]}
    try:
        out["deleted"] = d.get_deleted_row_ids().read_all().to_pydict()
    except ValueError as e:
        out["deleted"] = "needs stable row ids" if "stable row ids" in str(e) else (
            "begin is newer" if "is newer than" in str(e) else str(e))
    return out


@pytest.mark.parametrize("stable", [False, True])
def test_delta_as_pylance(tmp_path, stable):
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(_table(6), uri, max_rows_per_file=4, enable_stable_row_ids=stable)
    lance.write_dataset(pa.table({"a": [10, 11], "b": ["x", "y"]}), uri, mode="append")
    lance.dataset(uri).update({"b": "'u'"}, where="a = 1 or a = 10")
    lance.dataset(uri).delete("a = 3")
    for kw in ({"compared_against": 1}, {"begin_version": 2, "end_version": 3},
               {"begin_version": 2, "end_version": 4}, {"begin_version": 3, "end_version": 1}):
        assert _delta_view(lance_core, uri, **kw) == _delta_view(lance, uri, **kw), kw
    for kw in ({}, {"begin_version": 1}):
        for lib in _LIBS.values():
            with pytest.raises(ValueError):
                lib.dataset(uri).delta(**kw)
