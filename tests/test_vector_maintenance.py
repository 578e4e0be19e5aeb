"""Vector indices kept up to date by lance_core: `optimize_indices` encodes appended
fragments with the index's own model (a delta segment, or merged into one), and
`compact_files` rewrites the index for the rows' new addresses, for indices we built and
indices pylance built. pylance reads the result as fully indexed and returns the rows it
returns after its own optimize; deleted rows never come back."""

from __future__ import annotations

import shutil

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_core

DIM = 16


def _clustered(rows: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = np.random.default_rng(0).standard_normal((24, DIM)).astype(np.float32) * 3
    return (centers[rng.integers(0, 24, rows)] + rng.standard_normal((rows, DIM))).astype(np.float32)


def _table(v: np.ndarray, first: int = 0) -> pa.Table:
    return pa.table({"id": np.arange(first, first + len(v)),
                     "vec": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), DIM)})


QUERIES = _clustered(12, 99)
CASES = [("IVF_FLAT", {}), ("IVF_PQ", {"num_sub_vectors": 8}), ("IVF_SQ", {})]


def _ids(ds, q, **nearest) -> list:
    t = ds.to_table(nearest={"column": "vec", "q": q, "k": 10, **nearest}, columns=["id", "_distance"])
    return t["id"].to_pylist()


def _fully_indexed(path: str, rows: int, segments: int):
    ref = lance.dataset(path)
    [index] = ref.describe_indices()
    assert len(index.segments) == segments
    assert index.num_rows_indexed == rows
    assert ref.stats.index_stats("vec_idx")["num_unindexed_rows"] == 0


def _overlap(a: list, b: list) -> float:
    return len(set(a) & set(b)) / max(1, len(b))


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    """For each kind, the same table indexed by lance_core and by pylance, then appended to."""
    root = tmp_path_factory.mktemp("vmaint")
    out = {}
    for kind, params in CASES:
        for who, lib in (("ours", lance_core), ("theirs", lance)):
            path = str(root / f"{who}-{kind}.lance")
            lance.write_dataset(_table(_clustered(4000, 1)), path, max_rows_per_file=1000)
            lib.dataset(path).create_index("vec", kind, num_partitions=4, **params)
            lance.write_dataset(_table(_clustered(1000, 2), 10_000), path, mode="append")
            out[(who, kind)] = path
    return out


@pytest.mark.parametrize("who", ["ours", "theirs"])
@pytest.mark.parametrize("kind", [k for k, _ in CASES])
def test_optimize_encodes_new_fragments_with_the_indexs_model(indexed, tmp_path, who, kind):
    mine, ref = str(tmp_path / "mine.lance"), str(tmp_path / "ref.lance")
    shutil.copytree(indexed[(who, kind)], mine)
    shutil.copytree(indexed[(who, kind)], ref)
    before = lance.dataset(mine).describe_indices()[0].segments[0].uuid

    # A delta: the old segment stays, the appended fragments get one of their own.
    lance_core.dataset(mine).optimize.optimize_indices(num_indices_to_merge=0)
    lance.dataset(ref).optimize.optimize_indices(num_indices_to_merge=0)
    _fully_indexed(mine, 5000, 2)
    assert before in [s.uuid for s in lance.dataset(mine).describe_indices()[0].segments]
    plan = lance.dataset(mine).scanner(nearest={"column": "vec", "q": QUERIES[0], "k": 5}).explain_plan()
    assert "ANNIvfPartition" in plan and "KNNVectorDistance" not in plan, plan
    # The same model encodes the same codes as pylance's optimize: the same rows found.
    for q in QUERIES:
        ours, theirs = _ids(lance.dataset(mine), q), _ids(lance.dataset(ref), q)
        assert _overlap(ours, theirs) >= (0.8 if kind == "IVF_PQ" else 1.0), (ours, theirs)
        assert _ids(lance_core.dataset(mine), q) == ours

    # Merged (pylance's default): one segment over every fragment.
    lance.write_dataset(_table(_clustered(500, 3), 20_000), mine, mode="append")
    lance_core.dataset(mine).optimize.optimize_indices()
    _fully_indexed(mine, 5500, 1)
    exact = lance.dataset(mine)
    for q in QUERIES:
        ours = _ids(lance_core.dataset(mine), q, refine_factor=5)
        assert ours == _ids(exact, q, refine_factor=5)
        assert _overlap(ours, _ids(exact, q, use_index=False)) >= 0.7
    # Nothing new to index: no new version.
    version = lance.dataset(mine).version
    lance_core.dataset(mine).optimize.optimize_indices()
    assert lance.dataset(mine).version == version


@pytest.mark.parametrize("stable", [False, True], ids=["addresses", "stable_row_ids"])
@pytest.mark.parametrize("who", ["ours", "theirs"])
@pytest.mark.parametrize("kind", [k for k, _ in CASES])
def test_compaction_keeps_the_index_covering_the_new_fragments(tmp_path, kind, who, stable):
    path = str(tmp_path / "t.lance")
    lance.write_dataset(_table(_clustered(4000, 5)), path, max_rows_per_file=500, enable_stable_row_ids=stable)
    params = dict(CASES)[kind]
    (lance_core if who == "ours" else lance).dataset(path).create_index("vec", kind, num_partitions=4, **params)
    lance_core.dataset(path).delete("id % 5 = 0")
    before = [_ids(lance_core.dataset(path), q, refine_factor=3) for q in QUERIES]

    lance_core.dataset(path).optimize.compact_files(target_rows_per_fragment=100_000)
    assert len(lance.dataset(path).get_fragments()) == 1
    _fully_indexed(path, 3200, 1)
    ref = lance.dataset(path)
    for q, old in zip(QUERIES, before):
        got = _ids(lance_core.dataset(path), q, refine_factor=3)
        # With stable row ids the index keeps the ids of the rows deleted before the
        # compaction; pylance then drops them after taking its candidates (returning
        # fewer rows), lance_core before. Addresses are remapped: both agree.
        if not stable:
            assert got == _ids(ref, q, refine_factor=3)
        assert all(i % 5 for i in got)
        # The same codes under new addresses: the same rows as before the compaction.
        assert got == old


def test_an_hnsw_index_is_left_as_it_is(tmp_path):
    """lance_core does not build HNSW graphs: optimize leaves such an index alone, and a
    compaction makes it stop covering the rewritten fragments (searched exhaustively)."""
    path = str(tmp_path / "t.lance")
    lance.write_dataset(_table(_clustered(3000, 6)), path, max_rows_per_file=500)
    lance.dataset(path).create_index("vec", "IVF_HNSW_SQ", num_partitions=2)
    lance.write_dataset(_table(_clustered(300, 7), 10_000), path, mode="append")
    version = lance.dataset(path).version
    lance_core.dataset(path).optimize.optimize_indices()
    assert lance.dataset(path).version == version
    lance_core.dataset(path).optimize.compact_files(target_rows_per_fragment=100_000)
    ref = lance.dataset(path)
    for q in QUERIES[:4]:
        got = _ids(lance_core.dataset(path), q)
        assert got == _ids(ref, q)
        assert got == _ids(ref, q, use_index=False)
