"""Indices pylance builds, as lance_core lists them (issue 24 begins here): every scalar
and vector kind, segments from incremental index updates, fragments appended after the
index and fragments deleted whole."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa

import lance_core


def _table(start: int, n: int) -> pa.Table:
    rng = np.random.default_rng(start)
    ids = range(start, start + n)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "cat": pa.array([["red", "green", "blue", None][i % 4] for i in ids]),
        "text": pa.array([f"hello world number {i}" for i in ids]),
        "labels": pa.array([[f"l{i % 5}", f"l{i % 7}"] for i in ids]),
        "point": pa.array([{"x": float(i), "y": float(-i)} for i in ids]),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 8, dtype=np.float32)), 8),
    })


def _pylance_listing(ds) -> list:
    return [{**d, "fragment_ids": set(d["fragment_ids"])} for d in ds.list_indices()]


def test_list_indices_of_every_kind_as_pylance(tmp_path):
    uri = str(tmp_path / "indexed.lance")
    lance.write_dataset(_table(0, 3000), uri, max_rows_per_file=1000)
    ds = lance.dataset(uri)
    for column, kind, name in [("id", "BTREE", None), ("cat", "BITMAP", None), ("labels", "LABEL_LIST", None),
                               ("id", "ZONEMAP", "id_zones"), ("id", "BLOOMFILTER", "id_bloom"),
                               ("text", "NGRAM", None), ("text", "INVERTED", "text_fts")]:
        ds.create_scalar_index(column, kind, name=name)
    for kind, params in [("IVF_PQ", dict(num_sub_vectors=2)), ("IVF_FLAT", {}), ("IVF_SQ", {}),
                         ("IVF_HNSW_SQ", {})]:
        ds.create_index("vec", kind, name=f"vec_{kind.lower()}", num_partitions=2, **params)
    # Fragments appended after the indices, one indexed as a second segment of id_idx, and
    # a fragment deleted whole (it stays in the recorded fragments).
    lance.write_dataset(_table(3000, 500), uri, mode="append")
    ds = lance.dataset(uri)
    ds.optimize.optimize_indices(index_names=["id_idx"], num_indices_to_merge=0)
    lance.write_dataset(_table(3500, 500), uri, mode="append")
    ds = lance.dataset(uri)
    ds.delete("id < 1000")
    ds.delete("id % 10 = 3")

    ref, ours = lance.dataset(uri), lance_core.dataset(uri)
    theirs, mine = _pylance_listing(ref), ours.list_indices()
    assert len([d for d in mine if d["name"] == "id_idx"]) == 2
    key = lambda d: (d["name"], d["uuid"])  # noqa: E731 - pylance's order within a name is its own
    assert sorted(mine, key=key) == sorted(theirs, key=key)
    assert [d["name"] for d in mine] == [d["name"] for d in theirs]
    kinds = {d["name"]: d["type"] for d in mine}
    assert kinds["vec_ivf_hnsw_sq"] == "IVF_HNSW_SQ" and kinds["cat_idx"] == "Bitmap"
    # Older versions list the indices they had.
    assert lance_core.dataset(uri, version=2).list_indices() == _pylance_listing(lance.dataset(uri, version=2))


def test_a_nested_field_index_is_listed_by_its_path(tmp_path):
    uri = str(tmp_path / "nested.lance")
    lance.write_dataset(_table(0, 500), uri)
    ds = lance.dataset(uri)
    ds.create_scalar_index("point.x", "BTREE")
    assert lance_core.dataset(uri).list_indices() == _pylance_listing(lance.dataset(uri))
    assert lance_core.dataset(uri).list_indices()[0]["fields"] == ["point.x"]


def test_index_files_read_as_pylance_reads_them(tmp_path):
    """The files pylance writes under `_indices/` (Lance files of format 2.0, 2.1 or 2.2,
    as the table's) read as tables of one fragment, with the rows pylance's file reader
    gives, whole and by row."""
    import glob
    import os

    from lance.file import LanceFileReader

    from lance_core import _lance_core
    from lance_core.dataset import LanceDataset

    for version in ("2.0", "2.1", "2.2"):
        uri = str(tmp_path / f"files-{version}.lance")
        lance.write_dataset(_table(0, 6000), uri, data_storage_version=version, max_rows_per_file=2500)
        ds = lance.dataset(uri)
        for column, kind in [("id", "BTREE"), ("cat", "BITMAP"), ("labels", "LABEL_LIST"), ("id", "ZONEMAP"),
                             ("text", "NGRAM")]:
            ds.create_scalar_index(column, kind, name=f"{column}_{kind.lower()}")
        paths = sorted(glob.glob(os.path.join(uri, "_indices", "*", "*.lance")))
        assert len(paths) == 6, paths
        for path in paths:
            ours = LanceDataset(_lance_core._Dataset.open_file(os.path.dirname(path), os.path.basename(path)))
            theirs = LanceFileReader(path).read_all().to_table()
            table = ours.to_table()
            assert table.schema.remove_metadata() == theirs.schema.remove_metadata(), path
            assert table.equals(theirs), path
            assert ours.schema.metadata == theirs.schema.metadata, path
            rows = [0, theirs.num_rows - 1, theirs.num_rows // 2]
            assert ours.take(rows).equals(theirs.take(rows)), path
