"""Random access (take, take_rows, fragment take, head, sample) against pylance, on
datasets pylance writes: every file format, every type of the type table, deletions of
both kinds, stable row ids after a compaction, fragments with several data files."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

import lance_core
from conftest import assert_same, lance
from datagen import nested_columns, primitive_columns

# Columns pylance cannot write in a format (nulls in 2.0 structs, maps before 2.2).
UNWRITABLE = {
    "legacy": {"map"},
    "2.0": {"struct", "list_struct", "struct_list", "nested_struct", "map"},
    "2.1": {"map"},
    "2.2": set(),
}


def _table(n: int, version: str) -> pa.Table:
    cols = {**primitive_columns(n), **nested_columns(n)}
    return pa.table({k: v for k, v in cols.items() if k not in UNWRITABLE[version]})


@pytest.fixture(scope="module", params=["legacy", "2.0", "2.1", "2.2"])
def typed(request, tmp_path_factory):
    version = request.param
    path = str(tmp_path_factory.mktemp("take") / f"t{version}.lance")
    extra = {"max_rows_per_group": 256} if version == "legacy" else {}
    lance.write_dataset(_table(3000, version), path, data_storage_version=version, max_rows_per_file=1000, **extra)
    lance.dataset(path).delete("seq_int64 % 7 = 3")
    return path


def _indices(n_rows: int, k: int, seed: int = 0):
    rng = random.Random(seed)
    idx = [rng.randrange(n_rows) for _ in range(k)] + [0, n_rows - 1, 5, 5]
    rng.shuffle(idx)
    return idx


def test_take_every_type_and_format(typed):
    ours, ref = lance_core.dataset(typed), lance.dataset(typed)
    n = ref.count_rows()
    assert ours.count_rows() == n
    idx = _indices(n, 300)
    assert_same(ours.take(idx), ref.take(idx), f"{typed} take")
    # numpy and pyarrow indices, a subset of columns, expressions
    cols = ["string", "double", "list_int"]
    assert_same(ours.take(np.array(idx[:50]), columns=cols), ref.take(idx[:50], columns=cols), "columns")
    assert_same(ours.take(pa.array(idx[:50]), columns={"x": "seq_int64 * 2", "s": "string"}),
                ref.take(idx[:50], columns={"x": "seq_int64 * 2", "s": "string"}), "expressions")
    # each fragment on its own (pylance's legacy fragments return taken rows sorted, so
    # the reference is its fragment's rows, taken)
    for ofrag, rfrag in zip(ours.get_fragments(), ref.get_fragments()):
        k = rfrag.count_rows()
        fidx = [k - 1, 0, k // 2, 3, 3]
        assert_same(ofrag.take(fidx), rfrag.to_table().take(pa.array(fidx)), f"fragment {rfrag.fragment_id}")
    assert ours.take([]).num_rows == 0


def test_take_equals_the_scanned_rows_with_row_ids(typed):
    ds = lance_core.dataset(typed)
    full = ds.to_table(columns=["seq_int64", "string"], with_row_id=True, with_row_address=True)
    idx = _indices(full.num_rows, 100, seed=3)
    got = ds.take(idx, columns=["seq_int64", "string"], with_row_id=True, with_row_address=True)
    assert_same(got, full.take(pa.array(idx)), "take vs scan")


def test_take_errors(typed):
    ds = lance_core.dataset(typed)
    n = ds.count_rows()
    with pytest.raises(lance_core.InvalidInputError, match=f"index {n} is out of range"):
        ds.take([1, n])
    with pytest.raises(lance_core.InvalidInputError, match="must not be negative"):
        ds.take([-1])
    with pytest.raises(lance_core.InvalidInputError, match="must be integers"):
        ds.take([1.5])
    with pytest.raises(lance_core.InvalidInputError, match="not a column"):
        ds.take([1], columns={"x": "nope + 1"})


def test_roaring_deletions_and_multi_file_fragments(tmp_path):
    path = str(tmp_path / "t.lance")
    n = 20_000
    t = pa.table({"id": pa.array(np.arange(n)), "s": pa.array([f"v{i % 977}" for i in range(n)])})
    lance.write_dataset(t, path, max_rows_per_file=12_000)
    ref = lance.dataset(path)
    ref.delete("id < 6000 OR id % 11 = 0")  # more than 5,000 in fragment 0: a roaring bitmap
    ref = lance.dataset(path)
    ref.add_columns({"twice": "id * 2"})  # a second data file per fragment
    ref = lance.dataset(path)
    assert any(len(f.data_files()) == 2 for f in ref.get_fragments())
    ours = lance_core.dataset(path)
    idx = _indices(ref.count_rows(), 500, seed=1)
    assert_same(ours.take(idx), ref.take(idx), "roaring + add_columns")


def test_take_rows_with_stable_row_ids_after_compaction(tmp_path):
    path = str(tmp_path / "t.lance")
    for i in range(6):
        t = pa.table({"id": pa.array(np.arange(i * 500, (i + 1) * 500)), "v": pa.array(np.arange(500) * 0.5)})
        lance.write_dataset(t, path, mode="append", enable_stable_row_ids=True)
    lance.dataset(path).delete("id % 9 = 4")
    ref = lance.dataset(path)
    ref.optimize.compact_files(target_rows_per_fragment=1200)
    ref = lance.dataset(path)
    ours = lance_core.dataset(path)
    assert len(ours.get_fragments()) < 6
    ids = list(range(0, 3000, 7)) + [4, 13, 10_000, 2999, 0, 0]  # deleted, unknown, repeated
    random.Random(2).shuffle(ids)
    assert_same(ours.take_rows(ids), ref._take_rows(ids), "take_rows after compaction")
    assert_same(ours._take_rows(ids, columns=["v"]), ref._take_rows(ids, columns=["v"]), "_take_rows")
    got = ours.take_rows([13, 2999, 14], with_row_id=True)
    assert got.column("_rowid").to_pylist() == [2999, 14]


def test_take_rows_without_stable_row_ids_are_addresses(typed):
    ds, ref = lance_core.dataset(typed), lance.dataset(typed)
    scan = ds.to_table(columns=["seq_int64"], with_row_id=True)
    deleted = [(0 << 32) | 3, (1 << 32) | 3]  # seq_int64 % 7 = 3 was deleted
    ids = scan.column("_rowid").to_pylist()[::37] + deleted
    assert_same(ds.take_rows(ids, columns=["seq_int64"]), ref._take_rows(ids, columns=["seq_int64"]), "addresses")
    # Addresses outside the fragments are errors, as in pylance.
    for bad in ((77 << 32), (1 << 32) | 999_999):
        with pytest.raises(Exception):  # noqa: B017 - pylance's class varies
            ref._take_rows([bad])
        with pytest.raises(lance_core.InvalidInputError, match="row id"):
            ds.take_rows([bad])


def test_head_and_sample(typed):
    ds, ref = lance_core.dataset(typed), lance.dataset(typed)
    assert_same(ds.head(10), ref.head(10), "head")
    s = ds.sample(50, columns=["seq_int64"])
    values = s.column("seq_int64").to_pylist()
    assert len(values) == len(set(values)) == 50
    assert set(values) <= set(ds.to_table(columns=["seq_int64"]).column("seq_int64").to_pylist())
    assert ds.sample(10**6).num_rows == ds.count_rows()


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_take_from_full_zip_pages(tmp_path, version):
    """Values of 256 bytes and more go to full-zip pages: fixed-width rows (vectors),
    rows with a row index (long strings), with and without nulls."""
    path = str(tmp_path / "t.lance")
    n = 5000
    rng = np.random.default_rng(5)
    vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 100).astype(np.float32)), 100)
    long = [None if i % 13 == 0 else ("x" * (250 + i % 300)) + str(i) for i in range(n)]
    t = pa.table({"id": pa.array(np.arange(n)), "vec": vec, "long": pa.array(long),
                  "vec_nulls": pa.array([None if i % 7 == 0 else [float(i)] * 80 for i in range(n)],
                                        pa.list_(pa.float64(), 80)),
                  "list_long": pa.array([None if i % 5 == 0 else [long[i] or "", "y" * 300] for i in range(n)])})
    lance.write_dataset(t, path, data_storage_version=version, max_rows_per_file=2000)
    lance.dataset(path).delete("id % 11 = 4")
    ours, ref = lance_core.dataset(path), lance.dataset(path)
    idx = _indices(ref.count_rows(), 400, seed=9)
    assert_same(ours.take(idx), ref.take(idx), f"full-zip {version}")


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_take_list_rows_that_span_mini_block_chunks(tmp_path, version):
    """Lists of thousands of items cross mini-block chunks, so no chunk ends between rows:
    a take reads each row with the chunks it spans (the repetition index tells which)."""
    path = str(tmp_path / "t.lance")
    n = 600
    rng = np.random.default_rng(3)
    lens = [None if i % 9 == 0 else int(x) for i, x in enumerate(rng.integers(0, 6000, n))]
    ints = [None if ln is None else [None if (i + j) % 17 == 0 else i * 10_000 + j for j in range(ln)]
            for i, ln in enumerate(lens)]
    words = [None if ln is None else [f"w{j % 50}" for j in range(ln // 20)] for ln in lens]
    t = pa.table({"id": pa.array(np.arange(n)), "ints": pa.array(ints, pa.list_(pa.int32())),
                  "words": pa.array(words, pa.list_(pa.string()))})
    lance.write_dataset(t, path, data_storage_version=version)
    lance.dataset(path).delete("id % 10 = 7")
    ours, ref = lance_core.dataset(path), lance.dataset(path)
    idx = _indices(ref.count_rows(), 60, seed=4)
    assert_same(ours.take(idx), ref.take(idx), f"long lists {version}")
    assert_same(ours.take(sorted(set(idx))), ref.take(sorted(set(idx))), f"long lists sorted {version}")


@pytest.mark.parametrize("flt", ["seq_int64 < 40", "seq_int64 % 97 = 1", "small_int32 < 50", "string LIKE 'beta%'",
                                 "seq_int64 > 2990", "int32 IS NULL"])
def test_late_materialization_equals_the_pipeline(typed, flt):
    """Filter-first reads (the filter's columns, then a take of the rest) return what the
    pipeline returns, whatever the selectivity, with offsets, limits and row ids."""
    ds, ref = lance_core.dataset(typed), lance.dataset(typed)
    for kw in ({}, {"limit": 7}, {"offset": 5, "limit": 20}, {"offset": 3},
               {"columns": ["string", "list_int"], "with_row_id": True}):
        late = ds.to_table(filter=flt, **kw)
        whole = ds.scanner(filter=flt, late_materialization=False, **kw).to_table()
        assert_same(late, whole, f"{flt} {kw}")
        if "with_row_id" not in kw:
            assert_same(late, ref.to_table(filter=flt, **kw), f"{flt} {kw} vs pylance")
    batches = list(ds.to_batches(filter=flt, batch_size=16))
    assert all(b.num_rows <= 16 for b in batches)
    assert sum(b.num_rows for b in batches) == ds.count_rows(filter=flt)


def test_small_limits_read_only_their_rows(typed):
    ds, ref = lance_core.dataset(typed), lance.dataset(typed)
    for kw in ({"limit": 10}, {"limit": 5, "offset": 995}, {"limit": 3000, "offset": 10}, {"limit": 0}):
        assert_same(ds.to_table(**kw), ref.to_table(**kw), str(kw))
    frag = ds.get_fragments()[1]
    assert_same(frag.to_table(limit=4, offset=2), ref.get_fragments()[1].to_table(limit=4, offset=2), "fragment")


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_take_single_rows_of_dictionary_and_list_chunks(tmp_path, version):
    """Scattered rows, one per mini-block chunk, of dictionary-encoded strings and
    numbers and of lists of them, null and empty lists among them: only the rows taken
    are looked up in the dictionary (and only their levels become lists); the rows are
    pylance's."""
    rng = random.Random(3)
    n = 60_000
    labels = [f"label-{i:02d}" for i in range(20)]
    t = pa.table({
        "cat": pa.array([None if rng.random() < 0.05 else f"c{rng.randrange(8)}" for _ in range(n)]),
        "small": pa.array([rng.randrange(5) for _ in range(n)], pa.int64()),
        "labels": pa.array([None if rng.random() < 0.05 else [rng.choice(labels + [None]) for _ in range(rng.randrange(4))]
                            for _ in range(n)], pa.list_(pa.string())),
        "nested": pa.array([[[rng.randrange(3)] * rng.randrange(3) for _ in range(rng.randrange(3))]
                            for _ in range(n)], pa.list_(pa.list_(pa.int32()))),
    })
    path = str(tmp_path / "t.lance")
    lance.write_dataset(t, path, data_storage_version=version, max_rows_per_file=25_000)
    lance.dataset(path).delete("small = 4 AND cat = 'c1'")
    ours, ref = lance_core.dataset(path), lance.dataset(path)
    idx = sorted(rng.sample(range(ref.count_rows()), 700))
    assert_same(ours.take(idx), ref.take(idx), "scattered")
    neighbours = [i for j in idx[:50] for i in (j, j + 1) if i < ref.count_rows()]
    assert_same(ours.take(neighbours), ref.take(neighbours), "neighbours")


def test_rows_by_stable_id_after_an_update_that_kept_their_ids(tmp_path):
    """pylance's update keeps an updated row's stable id: the old copy is deleted, the new
    one is in a new fragment. A take by row id finds the new copy."""
    path = str(tmp_path / "t.lance")
    lance.write_dataset(pa.table({"id": list(range(10)), "v": list(range(10))}), path, enable_stable_row_ids=True)
    lance.dataset(path).update({"v": "v + 100"}, where="id < 3")
    ref = lance.dataset(path)
    ours = lance_core.dataset(path)
    want = ref.to_table(with_row_id=True)
    ids = want["_rowid"].to_pylist()
    assert_same(ours._take_rows(ids, columns=["id", "v"]), ref._take_rows(ids, columns=["id", "v"]), "take_rows")
    assert sorted(ours._take_rows([0, 1, 2])["v"].to_pylist()) == [100, 101, 102]
