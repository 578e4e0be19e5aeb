"""Scalar indices built on Spark (`lance_core.spark.create_scalar_index` and
`optimize_indices`): one segment per task, committed once; pylance and lance_core answer
filters from them with a full scan's rows; a failed job leaves nothing behind."""

from __future__ import annotations

import os
import time

import lance
import pyarrow as pa
import pytest

import lance_core
from lance_core.spark import create_scalar_index, indices, optimize_indices

# (column, index type, parameters, filters it answers)
KINDS = [
    ("id", "BTREE", {"zone_size": 64}, ["id = 777", "id < 30", "id IN (5, 1234, 2999)", "id IS NULL"]),
    ("cat", "BITMAP", {}, ["cat = 'c3'", "cat IS NULL", "cat IN ('c1', 'c7')"]),
    ("x", "ZONEMAP", {"rows_per_zone": 128}, ["x = 300.0", "x < 50", "x BETWEEN 3100 AND 3200"]),
    ("t", "NGRAM", {}, ["contains(t, 'word12')", "t LIKE '%item3%'", "t LIKE 'word1%'"]),
]


def _table(start: int, n: int) -> pa.Table:
    return pa.table({
        "id": pa.array([None if i % 97 == 0 else (i * 7919) % 4000 for i in range(start, start + n)], pa.int64()),
        "cat": pa.array([None if i % 51 == 0 else f"c{i % 8}" for i in range(start, start + n)]),
        "x": pa.array([float(i) for i in range(start, start + n)]),
        "s": pa.array([{"a": i} for i in range(start, start + n)]),
        "t": pa.array([None if i % 89 == 0 else f"word{i % 13} item{i % 7}" for i in range(start, start + n)]),
    })


def _dataset(tmp_path, fragments: int = 4) -> str:
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(_table(0, 1000 * fragments), uri, max_rows_per_file=1000)
    lance.dataset(uri).delete("id % 10 = 7")
    return uri


def _segments(uri: str, name: str) -> list:
    return [i for i in lance.dataset(uri).list_indices() if i["name"] == name]


def _index_files(uri: str) -> list:
    root = os.path.join(uri, "_indices")
    return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs] if os.path.isdir(root) else []


def _used_by_both(uri: str, name: str, filters: list) -> None:
    """Both libraries plan the filters on index `name` and return a full scan's rows."""
    ref, ours = lance.dataset(uri), lance_core.dataset(uri)
    for f in filters:
        want = ref.to_table(filter=f, with_row_id=True, use_scalar_index=False).sort_by("_rowid")
        assert ref.to_table(filter=f, with_row_id=True).sort_by("_rowid").equals(want), f
        assert ours.to_table(filter=f, with_row_id=True).equals(want), f
        plan = ref.scanner(filter=f).explain_plan()
        assert "ScalarIndexQuery" in plan and f"@{name}(" in plan, plan
        assert f"@{name}(" in ours.scanner(filter=f).explain_plan(), f
    described = {d.name: d for d in ref.describe_indices()}
    assert described[name].num_rows_indexed == ref.count_rows()
    stats = ref.stats.index_stats(name)
    assert (stats["num_indexed_rows"], stats["num_unindexed_rows"]) == (ref.count_rows(), 0), stats


@pytest.mark.parametrize("column,kind,params,filters", KINDS, ids=[k[1] for k in KINDS])
def test_spark_built_index_is_used_by_pylance_and_lance_core(spark, tmp_path, column, kind, params, filters):
    uri = _dataset(tmp_path)
    version = lance.dataset(uri).version
    ds = create_scalar_index(spark, uri, column, kind, **params)
    assert ds.version == version + 1 == lance.dataset(uri).version
    # One segment per task: local[2] runs two, over fragments of equal rows.
    segments = _segments(uri, f"{column}_idx")
    assert sorted(map(sorted, (s["fragment_ids"] for s in segments))) == [[0, 2], [1, 3]], segments
    _used_by_both(uri, f"{column}_idx", filters)


def test_optimize_indices_indexes_only_new_fragments(spark, tmp_path):
    uri = _dataset(tmp_path)
    create_scalar_index(spark, uri, "id", "BTREE", zone_size=64)
    create_scalar_index(spark, uri, "cat", "BITMAP", name="by_cat")
    old = {n: {s["uuid"] for s in _segments(uri, n)} for n in ("id_idx", "by_cat")}
    lance.write_dataset(_table(4000, 700), uri, mode="append")
    version = lance.dataset(uri).version
    ds = optimize_indices(spark, uri)
    assert ds.version == version + 1 == lance.dataset(uri).version
    for name in ("id_idx", "by_cat"):
        segments = _segments(uri, name)
        new = [s for s in segments if s["uuid"] not in old[name]]
        assert old[name] <= {s["uuid"] for s in segments}
        assert [s["fragment_ids"] for s in new] == [{4}], segments
    _used_by_both(uri, "id_idx", ["id = 4321", "id > 3990"])
    _used_by_both(uri, "by_cat", ["cat = 'c2'"])
    # Up to date: nothing to build, no new version.
    assert optimize_indices(spark, uri, index_names=["id_idx"]).version == version + 1
    assert lance.dataset(uri).version == version + 1


def _wait_for_tasks(spark) -> None:
    """Tasks of a failed job may still be finishing after the job's error is raised."""
    tracker = spark.sparkContext.statusTracker()
    for _ in range(200):
        if not tracker.getActiveStageIds():
            return
        time.sleep(0.05)


def _no_task(*args, **kwargs):
    raise AssertionError("a Spark task ran")


@pytest.mark.parametrize("args,kwargs,message", [
    (("nope", "BTREE"), {}, "cannot index 'nope': there is no such column"),
    (("s", "BTREE"), {}, "cannot be built on column 's'"),
    (("id", "LABEL_LIST"), {}, "needs a list column"),
    (("id", "NO_SUCH_KIND"), {}, "'NO_SUCH_KIND' is not built by lance_core"),
    (("id", "BTREE"), {"zone_size": 0}, "zone_size must be a positive integer"),
])
def test_bad_requests_fail_before_any_task(spark, tmp_path, monkeypatch, args, kwargs, message):
    uri = _dataset(tmp_path, fragments=2)
    monkeypatch.setattr(indices, "_run_segments", _no_task)
    with pytest.raises(lance_core.errors.InvalidInputError, match=message) as e:
        create_scalar_index(spark, uri, *args, **kwargs)
    assert str(e.value).startswith(f"{uri}: ")
    assert lance.dataset(uri).version == 2 and not _index_files(uri)


def test_existing_index_and_unknown_names_fail_before_any_task(spark, tmp_path, monkeypatch):
    uri = _dataset(tmp_path, fragments=2)
    create_scalar_index(spark, uri, "id", "BTREE")
    monkeypatch.setattr(indices, "_run_segments", _no_task)
    with pytest.raises(lance_core.errors.InvalidInputError, match="an index named 'id_idx' already exists"):
        create_scalar_index(spark, uri, "id", "BITMAP", replace=False)
    with pytest.raises(lance_core.errors.InvalidInputError, match="no index named 'missing_idx'"):
        optimize_indices(spark, uri, index_names=["missing_idx"])


def test_a_failed_task_leaves_no_index_files_and_no_version(spark, tmp_path, monkeypatch):
    """One task fails after writing its segment's files: the job fails, and neither its
    files nor those of the tasks that succeeded stay; no version is committed."""
    uri = _dataset(tmp_path)
    real = indices._run_segments

    def failing(spark, ds, tasks, files, build):
        doomed = tasks[-1][2]

        def build_then_fail(local, i, task):
            segment = build(local, i, task)
            if task[2] == doomed:
                raise ValueError("segment task failed on purpose")
            return segment

        return real(spark, ds, tasks, files, build_then_fail)

    monkeypatch.setattr(indices, "_run_segments", failing)
    with pytest.raises(Exception, match="failed on purpose"):
        create_scalar_index(spark, uri, "id", "BTREE")
    _wait_for_tasks(spark)
    assert lance.dataset(uri).version == 2
    assert _index_files(uri) == [] and os.listdir(os.path.join(uri, "_indices")) == []


def test_commit_checks_the_segments(tmp_path):
    """The core's commit of segments built elsewhere: segments over the same fragment, a
    version other than theirs, and a compaction since they were built are refused, each
    naming the index."""
    uri = _dataset(tmp_path)
    ds = lance_core.dataset(uri)
    a = ds._ds.build_index_segment("id", "BTREE", None, [0, 1])
    b = ds._ds.build_index_segment("id", "BTREE", None, [1, 2, 3])
    with pytest.raises(lance_core.errors.InvalidInputError,
                       match="fragment 1 would be indexed by two segments of index 'id_idx'"):
        ds._ds.commit_index_segments([a, b], "id_idx")
    with pytest.raises(lance_core.errors.InvalidInputError, match="no such index"):
        ds._ds.commit_index_segments([a])
    c = ds._ds.build_index_segment("id", "BTREE", None, [2, 3])
    lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=2000)
    with pytest.raises(lance_core.errors.CommitConflictError, match="index id_idx not committed.*rewrote fragments"):
        ds._ds.commit_index_segments([a, c], "id_idx")
    later = lance_core.dataset(uri)
    with pytest.raises(lance_core.errors.InvalidInputError, match="index 'id_idx' was built at version 2"):
        later._ds.commit_index_segments([a, c], "id_idx")
    with pytest.raises(lance_core.errors.InvalidInputError, match=f"version {later.version} has no such fragment"):
        later._ds.build_index_segment("id", "BTREE", None, [0])
    assert lance_core.dataset(uri).version == later.version
    # The refused segments' files are the caller's to remove (a Spark job does).
    assert len(os.listdir(os.path.join(uri, "_indices"))) == 3
