"""Data evolution without Spark: new columns as new data files (merge_columns, add_columns,
LanceOperation.Merge), and the physical row ranges the Spark partitions use."""

from __future__ import annotations

import uuid

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
    assert schema.to_pyarrow().names == ["id", "s", "flag"]
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


def test_batch_udf_checks_its_outputs_as_pylance(tmp_path):
    """lance_core.batch_udf: outputs checked against the declared schema (or the first
    output's), pandas frames taken; the same columns as pylance's batch_udf gives."""
    import pandas as pd

    results = {}
    for lib in (lance_core, lance):
        ds = lib.write_dataset(pa.table({"a": range(10), "b": range(10)}), tmp_path / lib.__name__,
                               max_rows_per_file=4)

        @lib.batch_udf(output_schema=pa.schema([pa.field("twice", pa.int64())]))
        def twice(batch):
            return pa.record_batch([pc.multiply(batch["a"], 2)], ["twice"])

        @lib.batch_udf()
        def thrice(batch):
            return pd.DataFrame({"thrice": [3 * x.as_py() for x in batch["a"]]})

        ds.add_columns(twice, read_columns=["a"])
        ds.add_columns(thrice, read_columns=["a"])
        results[lib.__name__] = ds.to_table()
        @lib.batch_udf()
        def drifting(batch):
            return pa.record_batch([batch["a"]], [uuid.uuid4().hex])

        with pytest.raises(ValueError, match="Output schema of function does not match the expected schema"):
            ds.get_fragments()[0].merge_columns(drifting, ["a"])
    assert results["lance_core"] == results["lance"]
    assert results["lance_core"].column("thrice").to_pylist() == [3 * i for i in range(10)]


def test_add_columns_from_rows(tmp_path):
    """New columns given as rows (an iterator of batches with reader_schema, or a reader),
    re-cut at fragment boundaries; a stream of the wrong length commits nothing."""
    ds = lance_core.write_dataset(pa.table({"a": range(10)}), tmp_path / "t", max_rows_per_file=4)
    schema = pa.schema([pa.field("c", pa.int64())])
    batches = [pa.record_batch([pa.array(range(i, min(i + 3, 10)))], ["c"]) for i in range(0, 10, 3)]
    ds.add_columns(iter(batches), reader_schema=schema)
    assert ds.to_table().column("c").to_pylist() == list(range(10))
    assert lance.dataset(ds.uri).to_table().column("c").to_pylist() == list(range(10))
    version = ds.version
    with pytest.raises(ValueError, match="ran out 0 rows into fragment 2, which has 2"):
        ds.add_columns(pa.table({"d": range(8)}).to_reader())
    with pytest.raises(ValueError, match="more rows than the table"):
        ds.add_columns(pa.table({"d": range(11)}).to_reader())
    assert lance_core.dataset(ds.uri).version == version
    # One fragment's new columns from a reader, as pylance's merge_columns takes them.
    frag = ds.get_fragments()[0]
    meta, full = frag.merge_columns(iter([pa.record_batch([pa.array([5, 6, 7, 8])], ["e"])]),
                                    reader_schema=pa.schema([pa.field("e", pa.int64())]))
    assert full.to_pyarrow().names == ["a", "c", "e"] and len(meta.files) == 3
    ds.delete("a = 0")
    with pytest.raises(ValueError, match="without deleted rows"):
        ds.add_columns(pa.table({"d": range(10)}).to_reader())


def test_a_checkpointed_udf_resumes_a_failed_add_columns(tmp_path):
    """batch_udf(checkpoint_file=...): each batch's output and each written fragment are
    kept in the SQLite file (pylance's tables) until the columns are committed, so a run
    that failed computes only what is missing; the file goes once they are."""
    import os
    import sqlite3

    uri = str(tmp_path / "t")
    lance_core.write_dataset(pa.table({"a": range(100), "b": range(100)}), uri, max_rows_per_file=20)
    ds = lance_core.dataset(uri)
    cache = str(tmp_path / "cache.sqlite")
    seen = []

    @lance_core.batch_udf(checkpoint_file=cache)
    def failing(batch):
        seen.append(batch["a"][0].as_py())
        if batch["a"][0].as_py() >= 50:
            raise RuntimeError("I failed")
        return pa.record_batch([pc.multiply(batch["a"], 2)], ["a2"])

    with pytest.raises(RuntimeError, match="I failed"):
        ds.add_columns(failing, read_columns=["a"], batch_size=10)
    assert ds.version == 1 and lance_core.dataset(uri).version == 1
    with sqlite3.connect(cache) as conn:
        kept_fragments = [r[0] for r in conn.execute("SELECT fragment_id FROM fragments ORDER BY 1")]
        kept_batches = sorted(conn.execute("SELECT fragment_id, batch_index FROM batches"))
    # Fragments 0-1 written; of fragment 2 (rows 40-59) the batch of 40-49 was computed.
    assert kept_fragments == [0, 1] and kept_batches == [(2, 0)]

    calls = []

    @lance_core.batch_udf(checkpoint_file=cache)
    def resumed(batch):
        calls.append(batch["a"][0].as_py())
        return pa.record_batch([pc.multiply(batch["a"], 2)], ["a2"])

    ds.add_columns(resumed, read_columns=["a"], batch_size=10)
    # One call infers the schema (row 0); the rest compute only what was not kept.
    assert calls == [0, 50, 60, 70, 80, 90]
    assert not os.path.exists(cache)
    for lib in (lance_core, lance):
        t = lib.dataset(uri).to_table()
        assert t.schema.names == ["a", "b", "a2"] and t["a2"].to_pylist() == [2 * i for i in range(100)]
    # merge_columns commits nothing itself: a checkpoint has no run to serve there.
    with pytest.raises(lance_core.InvalidInputError, match="A checkpoint file cannot be used"):
        ds.get_fragments()[0].merge_columns(resumed, columns=["a"])


def test_fragment_merge_columns_takes_sql_and_alterations_must_change_something(tmp_path):
    """LanceFragment.merge_columns({"b": "a + 1"}), as pylance: SQL computed per fragment,
    committed as one Merge; an alteration naming no change is refused in pylance's words."""
    uri = str(tmp_path / "t")
    ds = lance_core.write_dataset(pa.table({"a": range(100)}), uri, max_rows_per_file=30)
    metas = []
    for frag in ds.get_fragments():
        meta, schema = frag.merge_columns({"b": "a + 1"})
        metas.append(meta)
    done = lance_core.LanceDataset.commit(uri, lance_core.LanceOperation.Merge(metas, schema), read_version=ds.version)
    want = pa.table({"a": range(100), "b": range(1, 101)})
    assert done.to_table() == want and lance.dataset(uri).to_table() == want
    with pytest.raises(lance_core.InvalidInputError, match="read_columns goes with a function"):
        ds.get_fragments()[0].merge_columns({"c": "a"}, columns=["a"])
    with pytest.raises(ValueError, match="At least one of name, nullable, or data_type must be specified"):
        done.alter_columns({"path": "a"})
    with pytest.raises(ValueError, match="Unknown key: type"):
        done.alter_columns({"path": "a", "type": "string"})
