"""Multi-base tables and clones (issue 27 point 1): data files in other locations
registered as base paths, written and read by either library; shallow and deep clones."""

import os

import lance
import pyarrow as pa
import pytest

import lance_core

ROWS = pa.table({"id": range(10), "s": [f"v{i}" for i in range(10)]})


def layout(root):
    """The data files below `root`, by directory (relative), without the table's own
    version and transaction records."""
    out = {}
    for d, _, files in os.walk(root):
        rel = os.path.relpath(d, root)
        if "_versions" in rel or "_transactions" in rel:
            continue
        names = [f for f in files if f.endswith((".lance", ".arrow", ".bin"))]
        if names:
            out[rel] = len(names)
    return out


@pytest.mark.parametrize("writer,reader", [(lance_core, lance), (lance, lance_core)])
def test_multi_base_table_written_by_one_read_by_the_other(tmp_path, writer, reader):
    primary, b1, b2, b3 = (str(tmp_path / n) for n in ("primary", "b1", "b2", "b3"))
    ds = writer.write_dataset(ROWS, primary, max_rows_per_file=3, target_bases=["b1", "b2"],
                              initial_bases=[writer.DatasetBasePath(b1, name="b1", is_dataset_root=True),
                                             writer.DatasetBasePath(b2, name="b2")])
    ds = writer.write_dataset(ROWS, ds, mode="append", target_bases=[b2], max_rows_per_file=5)
    ds.delete("id = 4")
    ds.add_bases([writer.DatasetBasePath(b3, name="b3")], transaction_properties={"who": "test"})
    ds = writer.write_dataset(ROWS.slice(0, 2), primary, mode="append", target_bases=["b3"])
    ds = writer.write_dataset(ROWS.slice(0, 1), primary, mode="append")

    other = reader.dataset(primary)
    ids = sorted(other.to_table().column("id").to_pylist())
    assert ids == sorted([i for i in range(10) if i != 4] * 2 + [0, 1, 0])
    assert other.to_table(filter="id > 7").num_rows == 4
    bases = {k: (v.name, v.is_dataset_root, v.path) for k, v in other._ds.base_paths().items()}
    assert bases == {1: ("b1", True, b1), 2: ("b2", False, b2), 3: ("b3", False, b3)}
    assert [[f.base_id for f in fr.data_files()] for fr in other.get_fragments()] == \
        [[1], [2], [1], [2], [2], [2], [3], [None]]
    # Files round-robin over the targets; a plain base holds them directly, a root base
    # in data/; deletion files stay with the table.
    assert layout(b1) == {"data": 2} and layout(b2) == {".": 4} and layout(b3) == {".": 1}
    assert layout(primary) == {"data": 1, "_deletions": 2}
    assert other.read_transaction(4).transaction_properties["who"] == "test"


def test_base_rules_and_errors(tmp_path):
    primary = str(tmp_path / "p")
    base = lance_core.DatasetBasePath(str(tmp_path / "b"), name="b")
    with pytest.raises(ValueError, match="Base reference 'zz' not found in available bases"):
        lance_core.write_dataset(ROWS, primary, initial_bases=[base], target_bases=["zz"])
    assert not os.path.exists(os.path.join(primary, "_versions"))   # nothing was written
    ds = lance_core.write_dataset(ROWS, primary, initial_bases=[base], target_bases=["b"])
    with pytest.raises(ValueError, match="Cannot register new bases in Append mode"):
        lance_core.write_dataset(ROWS, primary, mode="append",
                                 initial_bases=[lance_core.DatasetBasePath(str(tmp_path / "c"), name="c")])
    with pytest.raises(ValueError, match="already exists"):
        ds.add_bases([lance_core.DatasetBasePath(str(tmp_path / "other"), name="b")])
    assert ds.add_bases([]) is ds and ds.version == 2
    # Overwrite keeps the bases; its files go where asked.
    ds = lance_core.write_dataset(ROWS, primary, mode="overwrite", target_bases=["b"])
    assert [b.name for b in ds.base_paths().values()] == ["b"]
    assert {f.base_id for fr in ds.get_fragments() for f in fr.data_files()} == {1}
    # Cleanup never removes files of other bases, even those no version uses any more.
    before = layout(tmp_path / "b")
    ds.cleanup_old_versions(older_than=__import__("datetime").timedelta(0), delete_unverified=True)
    assert layout(tmp_path / "b") == before
    assert lance.dataset(primary).to_table().num_rows == 10


def test_write_fragments_to_bases_then_commit(tmp_path):
    primary = str(tmp_path / "p")
    bases = [lance_core.DatasetBasePath(str(tmp_path / "b1"), name="b1"),
             lance_core.DatasetBasePath(str(tmp_path / "b2"), name="b2")]
    txn = lance_core.write_fragments(ROWS, primary, mode="create", initial_bases=bases, target_bases=["b2"],
                                     return_transaction=True, max_rows_per_file=5)
    assert [b.id for b in txn.operation.initial_bases] == [1, 2]
    assert {f.base_id for fr in txn.operation.fragments for f in fr.files} == {2}
    ds = lance_core.LanceDataset.commit(primary, txn)
    frags = lance_core.write_fragments(ROWS, ds, target_bases=["b1"])
    ds = lance_core.LanceDataset.commit(primary, lance_core.LanceOperation.Append(frags), read_version=ds.version)
    read = lance.dataset(primary)
    assert read.count_rows() == 20
    assert sorted(b.name for b in read._ds.base_paths().values()) == ["b1", "b2"]
    assert isinstance(read.read_transaction(1).operation, lance.LanceOperation.Overwrite)


@pytest.mark.parametrize("shallow", [True, False])
def test_clones_as_pylance_makes_them(tmp_path, shallow):
    src = str(tmp_path / "src")
    lance_core.write_dataset(ROWS.slice(0, 3), src)
    ds = lance_core.write_dataset(ROWS, src, mode="overwrite", max_rows_per_file=4)
    ds.delete("id = 5")
    ds.create_scalar_index("id", "BTREE")
    ds.tags.create("first", 1)
    clone = ds.shallow_clone if shallow else ds.deep_clone
    by_version = clone(str(tmp_path / "c_latest"), ds.version)
    by_tag = clone(str(tmp_path / "c_tag"), "first")
    assert by_version.version == ds.version and by_tag.version == 1
    for reader in (lance_core, lance):
        got = reader.dataset(str(tmp_path / "c_latest"))
        assert got.to_table() == ds.to_table()
        assert got.to_table(filter="id = 6").column("id").to_pylist() == [6]
        assert [i.name for i in got.describe_indices()] == ["id_idx"]
        assert reader.dataset(str(tmp_path / "c_tag")).to_table() == ROWS.slice(0, 3)
        bases = got._ds.base_paths()
        assert [(k, v.is_dataset_root) for k, v in bases.items()] == ([(0, True)] if shallow else [])
    # The clone's own writes stay in its directory; the source is untouched.
    lance_core.write_dataset(ROWS.slice(0, 1), str(tmp_path / "c_latest"), mode="append")
    assert lance.dataset(str(tmp_path / "c_latest")).count_rows() == 10
    assert lance.dataset(src).count_rows() == 9
    if not shallow:
        assert layout(tmp_path / "c_latest")["data"] == 4   # 3 copied + 1 appended
    with pytest.raises(ValueError, match="Dataset already exists"):
        clone(str(tmp_path / "c_tag"), 1)
    # pylance's clone of our table, and ours of its.
    theirs = lance.dataset(src)
    (theirs.shallow_clone if shallow else theirs.deep_clone)(str(tmp_path / "p_clone"), 1)
    assert lance_core.dataset(str(tmp_path / "p_clone")).to_table() == ROWS.slice(0, 3)


def test_row_changes_on_multi_base_tables_and_clones(tmp_path):
    """Delete, update, merge_insert, compaction and take read files through their bases
    (in a multi-base table and in a shallow clone of it): the same rows as pylance's."""
    t = pa.table({"id": range(20), "v": [float(i) for i in range(20)]})
    results = {}
    for lib in (lance_core, lance):
        d = tmp_path / lib.__name__
        ds = lib.write_dataset(t, str(d / "p"), initial_bases=[lib.DatasetBasePath(str(d / "b"), name="b")],
                               target_bases=["b"], max_rows_per_file=5)
        ds.delete("id = 3")
        ds.update({"v": "v * 10"}, where="id < 6")
        new = pa.table({"id": [7, 100], "v": [-1.0, -2.0]})
        ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(new)
        taken = ds.take([0, 5, 17]).to_pydict()
        ds.optimize.compact_files()
        clone = ds.shallow_clone(str(d / "c"), ds.version)
        clone.delete("id = 100")
        clone.update({"v": "0"}, where="id = 19")
        clone.optimize.compact_files()
        results[lib.__name__] = [taken] + [
            sorted(reader.dataset(str(d / name)).to_table().to_pylist(), key=lambda r: r["id"])
            for name in ("p", "c") for reader in (lance_core, lance)]
    assert results["lance_core"] == results["lance"]
    assert results["lance_core"][1] == results["lance_core"][2]
    assert {"id": 19, "v": 0.0} in results["lance_core"][3]
