"""Vector indices built on Spark (`lance_core.spark.create_index`: the driver trains, tasks
encode, one segment committed once) and batch vector search (`lance_core.spark.nearest`,
through the index or exhaustively over fragments), against pylance and a numpy brute
force."""

from __future__ import annotations

import os
import time

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_core
from lance_core.errors import InvalidInputError, LanceError
from lance_core.spark import create_index, indices, nearest

DIM = 16


def _clustered(rows: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = np.random.default_rng(0).standard_normal((16, DIM)).astype(np.float32) * 3
    return (centers[rng.integers(0, 16, rows)] + rng.standard_normal((rows, DIM))).astype(np.float32)


@pytest.fixture
def table(tmp_path):
    uri = str(tmp_path / "t.lance")
    v = _clustered(4000, 1)
    lance.write_dataset(pa.table({
        "id": np.arange(4000), "cat": np.arange(4000) % 10,
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), DIM),
    }), uri, max_rows_per_file=1000)
    lance.dataset(uri).delete("id % 9 = 4")
    return uri


def _queries(spark, n: int = 8):
    q = _clustered(n, 42)
    return q, spark.createDataFrame([(i, q[i].tolist()) for i in range(n)], "query_id int, vec array<float>")


@pytest.mark.parametrize("kind,params", [("IVF_PQ", {"num_sub_vectors": 8, "seed": 1}), ("IVF_FLAT", {})])
def test_spark_built_index_is_one_segment_both_libraries_use(spark, table, kind, params):
    create_index(spark, table, "vec", kind, num_partitions=4, **params)
    ref = lance.dataset(table)
    [index] = ref.describe_indices()
    assert (index.name, index.index_type, len(index.segments)) == ("vec_idx", kind, 1)
    assert index.num_rows_indexed == ref.count_rows()
    # Only the committed segment's directory is left (the staged model removed).
    assert os.listdir(os.path.join(table, "_indices")) == [index.segments[0].uuid]
    q, _ = _queries(spark)
    plan = ref.scanner(nearest={"column": "vec", "q": q[0], "k": 5}).explain_plan()
    assert "ANNIvfPartition" in plan and "vec_idx" in plan, plan
    hits = 0
    for x in q:
        ours = lance_core.dataset(table).to_table(nearest={"column": "vec", "q": x, "k": 10, "refine_factor": 5, "nprobes": 4},
                                                  columns=["id"])["id"].to_pylist()
        assert ours == ref.to_table(nearest={"column": "vec", "q": x, "k": 10, "refine_factor": 5, "nprobes": 4},
                                    columns=["id", "_distance"])["id"].to_pylist()
        exact = ref.to_table(nearest={"column": "vec", "q": x, "k": 10, "use_index": False},
                             columns=["id", "_distance"])["id"].to_pylist()
        hits += len(set(ours) & set(exact))
    assert hits / (10 * len(q)) >= 0.9


def test_a_failed_encoding_task_leaves_no_files_and_no_version(spark, table, monkeypatch):
    version = lance.dataset(table).version
    real = indices._run_segments

    def failing(spark_, ds, tasks, files, build):
        def broken(local, i, task):
            build(local, i, task)
            raise LanceError("task lost")
        return real(spark_, ds, tasks, files, broken)

    monkeypatch.setattr("lance_core.spark.vectors._run_segments", failing)
    with pytest.raises(Exception, match="task lost"):
        create_index(spark, table, "vec", "IVF_PQ", num_partitions=4, num_sub_vectors=4)
    tracker = spark.sparkContext.statusTracker()
    for _ in range(200):  # tasks of the failed job may still be finishing
        if not tracker.getActiveStageIds():
            break
        time.sleep(0.05)
    assert lance.dataset(table).version == version
    root = os.path.join(table, "_indices")
    assert not os.path.isdir(root) or os.listdir(root) == []


def test_bad_requests_fail_on_the_driver(spark, table):
    with pytest.raises(InvalidInputError, match="num_sub_vectors"):
        create_index(spark, table, "vec", "IVF_PQ", num_partitions=4)
    with pytest.raises(LanceError, match="'id'"):
        create_index(spark, table, "id", "IVF_FLAT", num_partitions=4)
    create_index(spark, table, "vec", "IVF_FLAT", num_partitions=2)
    with pytest.raises(InvalidInputError, match="already exists"):
        create_index(spark, table, "vec", "IVF_FLAT", num_partitions=2, replace=False)
    _, queries = _queries(spark)
    with pytest.raises(InvalidInputError, match="k must be"):
        nearest(spark, table, queries, "vec", k=0)
    with pytest.raises(InvalidInputError, match="no column 'nope'"):
        nearest(spark, table, queries, "vec", query_vector="nope")


@pytest.mark.parametrize("indexed", [False, True], ids=["exhaustive", "indexed"])
def test_batch_nearest_equals_one_search_per_query(spark, table, indexed):
    if indexed:
        lance_core.dataset(table).create_index("vec", "IVF_FLAT", num_partitions=4)
    q, queries = _queries(spark)
    got = nearest(spark, table, queries, "vec", k=5, columns=["id", "cat"], filter="cat < 5", prefilter=True,
                  nprobes=4).collect()
    assert list(got[0].asDict()) == ["query_id", "_rowid", "_distance", "id", "cat"]
    by_query = {}
    for r in got:
        by_query.setdefault(r["query_id"], []).append(r)
    assert sorted(by_query) == list(range(len(q)))
    ds = lance_core.dataset(table)
    for i, x in enumerate(q):
        want = ds.to_table(nearest={"column": "vec", "q": x, "k": 5, "nprobes": 4}, columns=["id"], filter="cat < 5",
                           prefilter=True, with_row_id=True)
        rows = sorted(by_query[i], key=lambda r: (r["_distance"], r["_rowid"]))
        assert [r["id"] for r in rows] == want["id"].to_pylist()
        assert [r["_rowid"] for r in rows] == want["_rowid"].to_pylist()
        np.testing.assert_allclose([r["_distance"] for r in rows], want["_distance"].to_numpy(), rtol=1e-5)
        assert all(r["cat"] < 5 and r["id"] % 9 != 4 for r in rows)
    # Exhaustive search is exact: a numpy brute force over the live rows.
    if not indexed:
        live = lance.dataset(table).to_table(columns=["id", "vec"], filter="cat < 5")
        v = np.stack(live["vec"].to_numpy(zero_copy_only=False))
        for i, x in enumerate(q):
            d = ((v - x) ** 2).sum(axis=1)
            truth = live["id"].to_numpy()[np.argsort(d, kind="stable")[:5]].tolist()
            assert sorted(r["id"] for r in by_query[i]) == sorted(truth)


def test_spark_optimize_indices_adds_new_fragments_to_a_vector_index(spark, table):
    from lance_core.spark import optimize_indices

    create_index(spark, table, "vec", "IVF_FLAT", num_partitions=4)
    extra = _clustered(500, 9)
    lance.write_dataset(pa.table({"id": np.arange(10_000, 10_500), "cat": np.arange(500) % 10,
                                  "vec": pa.FixedSizeListArray.from_arrays(pa.array(extra.ravel()), DIM)}),
                        table, mode="append")
    optimize_indices(spark, table)
    ref = lance.dataset(table)
    [index] = ref.describe_indices()
    assert len(index.segments) == 2 and index.num_rows_indexed == ref.count_rows()
    top = lance_core.dataset(table).to_table(nearest={"column": "vec", "q": extra[7], "k": 1}, columns=["id"])
    assert top["id"].to_pylist() == [10_007]
