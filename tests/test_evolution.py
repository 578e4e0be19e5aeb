"""Data evolution without Spark: new columns as new data files (merge_columns, add_columns,
LanceOperation.Merge), and the physical row ranges the Spark partitions use."""

from __future__ import annotations

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_core
from conftest import assert_same


@pytest.fixture
def with_deletions(tmp_uri):
    t = pa.table({"id": pa.array(range(10_000), pa.int64()), "s": [f"x{i % 7}" for i in range(10_000)]})
    lance.write_dataset(t, tmp_uri, max_rows_per_file=4000)
    lance.dataset(tmp_uri).delete("id % 10 = 3")
    lance.dataset(tmp_uri).delete("id < 1000")  # fragment 0: more than half deleted
    return tmp_uri


def test_row_range_and_include_deleted(with_deletions):
    frag = lance_core.dataset(with_deletions).get_fragment(1)
    ids = frag.to_table(row_range=(100, 110)).column("id").to_pylist()
    assert ids == [4100, 4101, 4102, 4104, 4105, 4106, 4107, 4108, 4109]
    assert frag.to_table(row_range=(100, 110), include_deleted=True).column("id").to_pylist() == list(range(4100, 4110))
    assert frag.to_table(row_range=(3990, 5000), include_deleted=True).num_rows == 10
    # ranges cover the fragment exactly, whatever the batch size
    parts = [frag.to_table(row_range=(a, a + 777), batch_size=100) for a in range(0, 4000, 777)]
    assert pa.concat_tables(parts).equals(frag.to_table())
    assert frag.to_table(row_range=(0, 4000), filter="s = 'x1'").equals(frag.to_table(filter="s = 'x1'"))
    with pytest.raises(lance_core.InvalidInputError, match="row_range"):
        frag.to_table(row_range=(5, 2))


def test_add_columns_read_by_pylance(with_deletions):
    ds = lance_core.dataset(with_deletions)
    files_before = [f.data_files() for f in ds.get_fragments()]
    ds.add_columns(lambda b: {"twice": pc.multiply(b.column("id"), 2)}, read_columns=["id"])
    assert ds.version == 4
    ref = lance.dataset(with_deletions)
    t = ref.to_table()
    assert t.column_names == ["id", "s", "twice"]
    assert pc.all(pc.equal(t.column("twice"), pc.multiply(t.column("id"), 2))).as_py()
    assert_same(ds.to_table(), t, "after add_columns")
    assert [f.data_files()[:-1] for f in ds.get_fragments()] == files_before


def test_column_ids_are_never_reused(with_deletions):
    """A dropped column's id stays in its old data file: a new column must get a new id,
    or it would read the old column's values."""
    ref = lance.dataset(with_deletions)
    ref.drop_columns(["s"])  # "s" (id 1) shares its data file with "id": the file stays
    assert any(1 in d.fields for f in ref.get_fragments() for d in f.data_files())
    ds = lance_core.dataset(with_deletions)
    ds.add_columns(lambda b: {"n": pc.add(b.column("id"), 100)}, read_columns=["id"])
    assert ds.field_ids()["n"] == 2
    t = lance.dataset(with_deletions).to_table()
    assert pc.all(pc.equal(t.column("n"), pc.add(t.column("id"), 100))).as_py()
    assert_same(ds.to_table(), t, "new column after a drop")


def test_merge_by_hand_and_errors(with_deletions):
    ds = lance_core.dataset(with_deletions)
    out = pa.schema([("flag", pa.bool_())])
    metas = []
    for frag in ds.get_fragments():
        meta, schema = frag.merge_columns(lambda b: {"flag": pc.equal(pc.bit_wise_and(b.column("id"), 1), 0)},
                                          columns=["id"], output_schema=out)
        metas.append(meta)
    assert schema.names == ["id", "s", "flag"]
    with pytest.raises(lance_core.InvalidInputError, match="read_version"):
        lance_core.commit(with_deletions, lance_core.LanceOperation.Merge(metas, schema))
    with pytest.raises(lance_core.InvalidInputError, match="every fragment"):
        lance_core.commit(with_deletions, lance_core.LanceOperation.Merge(metas[:1], schema), read_version=ds.version)
    # a commit in between (here an append) makes the merge conflict: its rows lack the column
    lance.write_dataset(pa.table({"id": pa.array([1], pa.int64()), "s": ["y"]}), with_deletions, mode="append")
    with pytest.raises(lance_core.CommitConflictError, match="conflict"):
        lance_core.commit(with_deletions, lance_core.LanceOperation.Merge(metas, schema), read_version=ds.version)
    assert lance.dataset(with_deletions).schema.names == ["id", "s"]


def test_column_function_errors(with_deletions):
    ds = lance_core.dataset(with_deletions)
    with pytest.raises(lance_core.InvalidInputError, match="one value per row"):
        ds.add_columns(lambda b: {"z": pa.array([1])}, read_columns=["id"])
    with pytest.raises(lance_core.InvalidInputError, match="already has one"):
        ds.add_columns(lambda b: {"s": b.column("id")}, read_columns=["id"])
    with pytest.raises(ValueError, match="boom"):
        ds.add_columns(lambda b: (_ for _ in ()).throw(ValueError("boom")), read_columns=["id"])
    assert lance.dataset(with_deletions).version == ds.version == 3
