"""Schema changes without rewriting data (drop_columns, alter_columns) against pylance:
the same schema, rows, data files and versions either way, and either library reads the
other's result."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lance_core
from conftest import assert_same, lance


def _make(uri: str, version: str = "2.1"):
    t = pa.table({"a": pa.array([1, 2, 3, 4]), "b": ["x", "y", None, "w"],
                  "s": pa.array([{"p": i, "q": float(i)} for i in range(4)]),
                  "l": pa.array([[1], [], None, [2, 3]])})
    lance.write_dataset(t, uri, data_storage_version=version, max_rows_per_file=2)
    ds = lance.dataset(uri)
    ds.add_columns({"c": "a * 2"})           # a second data file per fragment
    lance.dataset(uri).delete("a = 2")


def _state(uri: str):
    ref = lance.dataset(uri)
    return (ref.version, ref.schema, ref.to_table().to_pydict(),
            [[sorted(df.fields) for df in f.data_files()] for f in ref.get_fragments()])


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize("change", [
    ("drop", [["c"]]),
    ("drop", [["s.p", "b"]]),
    ("drop", [["s"], ["l"]]),
    ("alter", [{"path": "b", "name": "bb"}, {"path": "s.q", "name": "qq"}]),
    ("alter", [{"path": "a", "nullable": False}, {"path": "c", "name": "doubled", "nullable": True}]),
])
def test_schema_changes_match_pylance(tmp_path, version, change):
    kind, steps = change
    states = {}
    for lib in (lance, lance_core):
        uri = str(tmp_path / f"{lib.__name__}.lance")
        _make(uri, version)
        ds = lib.dataset(uri)
        for step in steps:
            if kind == "drop":
                ds.drop_columns(step)
            else:
                ds.alter_columns(step)
        assert ds.version == lance.dataset(uri).version
        states[lib.__name__] = _state(uri)
        assert_same(lance_core.dataset(uri).to_table(), lance.dataset(uri).to_table(), f"{kind} {lib.__name__}")
        # earlier versions keep their schema
        assert lance_core.dataset(uri, version=1).schema == lance.dataset(uri, version=1).schema
    assert states["lance_core"] == states["lance"]


def test_schema_change_errors(tmp_uri):
    _make(tmp_uri)
    ds = lance_core.dataset(tmp_uri)
    for call, match in [
        (lambda: ds.drop_columns(["zz"]), "Column \"zz\" does not exist"),
        (lambda: ds.drop_columns(["s.zz"]), "Column \"s.zz\" does not exist"),
        (lambda: ds.drop_columns(["a", "b", "s", "l", "c"]), "cannot drop all columns"),
        (lambda: ds.alter_columns({"path": "b", "name": "a"}), "a column of that name exists"),
        (lambda: ds.alter_columns({"path": "b", "nullable": False}), "holds nulls"),
        (lambda: ds.alter_columns({"path": "zz", "name": "y"}), "Column \"zz\" does not exist"),
        (lambda: ds.alter_columns({"path": "b", "data_type": pa.int64()}), "Cannot cast column \"b\" from Utf8 to Int64"),
        (lambda: ds.alter_columns({"path": "s", "data_type": pa.struct([("p", pa.int32())])}), "Cannot cast column \"s\""),
        (lambda: ds.alter_columns({"path": "a", "data_type": pa.int8()},
                                  {"path": "b", "name": "a"}), "a column of that name exists"),
        (lambda: ds.alter_columns({"path": "s.zz", "data_type": pa.int8()}), "Column \"s.zz\" does not exist"),
    ]:
        with pytest.raises(lance_core.LanceError, match=match):
            call()
    assert lance_core.dataset(tmp_uri).version == ds.version   # nothing was committed


def test_append_after_drop_and_rename_reads_in_both(tmp_uri):
    _make(tmp_uri)
    ds = lance_core.dataset(tmp_uri)
    ds.drop_columns(["l"])
    ds.alter_columns({"path": "b", "name": "name"})
    more = pa.table({"a": [9], "name": ["n"], "s": [{"p": 9, "q": 9.0}], "c": [18]})
    lance_core.write_dataset(more, tmp_uri, mode="append")
    assert_same(lance_core.dataset(tmp_uri).to_table(), lance.dataset(tmp_uri).to_table(), "append after project")
    assert lance.dataset(tmp_uri).count_rows() == 4


@pytest.mark.parametrize("transform", [
    {"y": "a * 2", "z": "CAST(a AS STRING)"},
    {"first_l": "l[1]", "sq": "s.q + 1.5"},
    pa.field("n", pa.string()),
    [pa.field("m", pa.int32()), pa.field("st", pa.struct([("x", pa.int8())]))],
    pa.schema([pa.field("v", pa.list_(pa.float32()))]),
])
def test_add_columns_from_sql_and_null_fields_match_pylance(tmp_path, transform):
    states = {}
    for lib in (lance, lance_core):
        uri = str(tmp_path / f"{lib.__name__}.lance")
        _make(uri)
        lib.dataset(uri).add_columns(transform)
        st = _state(uri)
        states[lib.__name__] = st[:3] + ([[len(files) for files in frag] for frag in st[3]],)
        assert_same(lance_core.dataset(uri).to_table(), lance.dataset(uri).to_table(), f"add {lib.__name__}")
    assert states["lance_core"] == states["lance"]


def test_dropped_ids_are_not_reused_by_new_columns(tmp_uri):
    _make(tmp_uri)
    ds = lance_core.dataset(tmp_uri)
    ds.drop_columns(["b"])                     # its values stay in the data files
    ds.add_columns(pa.field("b", pa.string()))  # a new, all-null column of the same name
    assert lance_core.dataset(tmp_uri).to_table()["b"].null_count == 3
    assert_same(lance_core.dataset(tmp_uri).to_table(), lance.dataset(tmp_uri).to_table(), "new b")
    with pytest.raises(lance_core.LanceError, match="not nullable"):
        ds.add_columns(pa.field("k", pa.int8(), nullable=False))


@pytest.mark.parametrize("alteration", [
    {"path": "a", "data_type": pa.int32()},
    {"path": "c", "data_type": pa.int32(), "name": "c32"},
    {"path": "b", "data_type": pa.large_string()},
])
def test_changing_a_column_type_matches_pylance(tmp_path, alteration):
    """Only the cast column's data is rewritten: a new file per fragment, the old files keep
    their bytes with the field id as a tombstone; pylance reads the result and ours equals
    pylance's own alteration."""
    tables = {}
    for lib in (lance, lance_core):
        uri = str(tmp_path / f"{lib.__name__}.lance")
        _make(uri)
        old_files = {f.fragment_id: [d.path for d in f.data_files()] for f in lance.dataset(uri).get_fragments()}
        lib.dataset(uri).alter_columns(dict(alteration))
        ref = lance.dataset(uri)
        tables[lib.__name__] = (ref.schema, ref.to_table())
        assert_same(lance_core.dataset(uri).to_table(), ref.to_table(), f"{lib.__name__} after the cast")
        if lib is lance_core:
            for f in ref.get_fragments():
                paths = [d.path for d in f.data_files()]
                # the first file (a, b, s, l) is kept as it was; a new one holds the cast column
                assert paths[0] == old_files[f.fragment_id][0] and paths[-1] not in old_files[f.fragment_id]
        # the version before keeps the old type
        assert lance_core.dataset(uri, version=1).schema == lance.dataset(uri, version=1).schema
    assert tables["lance_core"][0] == tables["lance"][0]
    assert_same(tables["lance_core"][1], tables["lance"][1], "same data")


def _make_nested(uri: str, version: str):
    n = 6
    t = pa.table({
        "id": pa.array(range(n)),
        "s": pa.array([{"t": {"u": i, "w": str(i)}, "p": float(i)} if i % 3 else None for i in range(n)]),
        "ls": pa.array([[{"a": i, "b": "x"}] * (i % 3) if i != 4 else None for i in range(n)]),
        "l": pa.array([[i, None] if i % 2 else [] for i in range(n)]),
        "ts": pa.array([i * 1000 for i in range(n)], pa.timestamp("ms")),
    })
    lance.write_dataset(t, uri, data_storage_version=version, max_rows_per_file=4)
    lance.dataset(uri).delete("id = 1")


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("alterations", [
    [{"path": "s.t.u", "data_type": pa.int32()}],
    [{"path": "s.t.u", "data_type": pa.int8(), "name": "v"}, {"path": "s", "name": "s2"}],
    [{"path": "ls.item.a", "data_type": pa.int16()}, {"path": "s.p", "data_type": pa.float32()}],
    [{"path": "l", "data_type": pa.list_(pa.int32())}],
    [{"path": "l", "data_type": pa.large_list(pa.int64())}, {"path": "ts", "data_type": pa.timestamp("us")}],
    [{"path": "s.t.w", "data_type": pa.large_string(), "nullable": True}],
])
def test_changing_a_nested_type_matches_pylance(tmp_path, version, alterations):
    """Casts inside structs and lists, with renames in the same call: one version, the same
    schema and rows as pylance's own alteration, readable by pylance; the other columns'
    files are not rewritten."""
    states = {}
    for lib in (lance, lance_core):
        uri = str(tmp_path / f"{lib.__name__}.lance")
        _make_nested(uri, version)
        before = {d.path for f in lance.dataset(uri).get_fragments() for d in f.data_files()}
        lib.dataset(uri).alter_columns(*[dict(a) for a in alterations])
        ref = lance.dataset(uri)
        states[lib.__name__] = (ref.version, ref.schema, ref.to_table().to_pydict())
        assert_same(lance_core.dataset(uri).to_table(), ref.to_table(), f"{lib.__name__} after the cast")
        after = [[d.path for d in f.data_files()] for f in ref.get_fragments()]
        if lib is lance_core:
            # each fragment keeps its file and gains one per cast column
            assert all(files[0] in before and len(files) == 1 + len([a for a in alterations if "data_type" in a])
                       for files in after)
        # a take through pylance sees the cast values too
        assert ref.take([0, 3]).to_pydict() == lance_core.dataset(uri).take([0, 3]).to_pydict()
    assert states["lance_core"] == states["lance"]


def test_a_cast_that_does_not_fit_commits_nothing_and_leaves_no_file(tmp_uri):
    _make_nested(tmp_uri, "2.1")
    lance_core.write_dataset(pa.table({"id": [300], "s": pa.array([{"t": {"u": 1, "w": "w"}, "p": 1.0}]),
                                       "ls": pa.array([[{"a": 1000, "b": "y"}]]), "l": pa.array([[1]]),
                                       "ts": pa.array([0], pa.timestamp("ms"))}), tmp_uri, mode="append")
    import os
    files = sorted(os.listdir(os.path.join(tmp_uri, "data")))
    ds = lance_core.dataset(tmp_uri)
    with pytest.raises(lance_core.LanceError, match=r"column ls.item.a: its values cannot all be cast to Int8"):
        # the first cast fits and is written before the second fails
        ds.alter_columns({"path": "s.t.u", "data_type": pa.int8()}, {"path": "ls.item.a", "data_type": pa.int8()})
    assert sorted(os.listdir(os.path.join(tmp_uri, "data"))) == files
    assert lance_core.dataset(tmp_uri).version == ds.version


def test_cast_then_append_and_compact_read_alike(tmp_uri):
    """After a nested cast, an append writes the new type and compaction folds the cast
    file back in; pylance and lance_core read the same table at each step."""
    _make_nested(tmp_uri, "2.1")
    ds = lance_core.dataset(tmp_uri)
    ds.alter_columns({"path": "s.t.u", "data_type": pa.int32()})
    more = lance_core.dataset(tmp_uri).to_table().slice(0, 2)
    lance_core.write_dataset(more, tmp_uri, mode="append")
    assert_same(lance_core.dataset(tmp_uri).to_table(), lance.dataset(tmp_uri).to_table(), "append after cast")
    lance_core.dataset(tmp_uri).optimize.compact_files()
    assert_same(lance_core.dataset(tmp_uri).to_table(), lance.dataset(tmp_uri).to_table(), "compacted after cast")
    assert lance.dataset(tmp_uri).schema.field("s").type.field("t").type.field("u").type == pa.int32()
