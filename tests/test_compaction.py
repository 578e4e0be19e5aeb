"""compact_files against pylance: the same fragments (rows per fragment), rows, order and
stable row ids; pylance reads our result and takes rows by id after it; appends made
meanwhile survive, deletes of the same fragments conflict."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lance_core
from conftest import assert_same, lance


def _build(uri: str, stable: bool, version: str = "2.1") -> None:
    for i in range(30):
        t = pa.table({"id": pa.array(range(i * 1000, (i + 1) * 1000)),
                      "s": [f"v{j}" for j in range(1000)],
                      "l": pa.array([[j, j + 1] if j % 5 else None for j in range(1000)])})
        lance.write_dataset(t, uri, mode="append" if i else "create", enable_stable_row_ids=stable,
                            data_storage_version=version)
    ds = lance.dataset(uri)
    ds.delete("id % 10 = 7")
    ds.delete("id >= 25000 AND id < 25500")
    ds.add_columns({"twice": "id * 2"})      # two data files per fragment


@pytest.mark.parametrize("stable", [False, True])
@pytest.mark.parametrize("kwargs", [dict(target_rows_per_fragment=5000), dict(),
                                    dict(target_rows_per_fragment=500, materialize_deletions_threshold=0.2)])
def test_compaction_matches_pylance(tmp_path, stable, kwargs):
    out = {}
    for lib in (lance, lance_core):
        uri = str(tmp_path / f"{lib.__name__}.lance")
        _build(uri, stable)
        before = lance.dataset(uri).to_table(with_row_id=stable)
        start = lance.dataset(uri).version
        m = lib.dataset(uri).optimize.compact_files(**kwargs)
        ref = lance.dataset(uri)
        after = ref.to_table(with_row_id=stable)
        if lib is lance_core:
            assert_same(after, before, "rows, their order and row ids kept")
        else:
            # pylance 14 moves a fragment rewritten on its own to the end (its reference code
            # replaces in place, as we do); the rows and their ids are the same.
            assert_same(after.sort_by("id"), before.sort_by("id"), "pylance: rows and row ids kept")
        assert_same(lance_core.dataset(uri).to_table(with_row_id=stable), after, "lance_core reads it")
        frags = sorted((f.physical_rows, f.count_rows(), len(f.data_files())) for f in ref.get_fragments())
        out[lib.__name__] = (frags, (m.fragments_removed, m.fragments_added, m.files_removed, m.files_added))
        # Two versions, as pylance: the new fragments' ids are reserved first.
        assert ref.version == start + 2
        if stable:
            ids = before["_rowid"].to_pylist()[::97]
            assert_same(ref._take_rows(ids), lance_core.dataset(uri)._take_rows(ids), "take_rows after compaction")
    assert out["lance_core"] == out["lance"]


def test_nothing_to_compact_commits_nothing(tmp_uri):
    lance.write_dataset(pa.table({"id": range(100)}), tmp_uri)
    ds = lance_core.dataset(tmp_uri)
    m = ds.optimize.compact_files()
    assert (m.fragments_removed, m.fragments_added) == (0, 0) and ds.version == 1


def test_compaction_rebases_over_appends_and_conflicts_with_deletes(tmp_uri):
    _build(tmp_uri, True)
    stale = lance_core.dataset(tmp_uri)
    lance.write_dataset(pa.table({"id": [999_999], "s": ["new"], "l": [[1]], "twice": [0]}), tmp_uri, mode="append")
    stale.optimize.compact_files(target_rows_per_fragment=5000)          # an append meanwhile: fine
    assert 999_999 in lance.dataset(tmp_uri).to_table(columns=["id"])["id"].to_pylist()
    stale = lance_core.dataset(tmp_uri)
    lance.dataset(tmp_uri).delete("id = 3")
    with pytest.raises(lance_core.LanceError, match="commit conflict"):
        stale.optimize.compact_files(target_rows_per_fragment=100_000)
    files_before = sorted(f.data_files()[0].path for f in lance.dataset(tmp_uri).get_fragments())
    lance_core.dataset(tmp_uri).optimize.compact_files(target_rows_per_fragment=100_000)    # a retry works
    assert lance.dataset(tmp_uri).count_rows() == lance_core.dataset(tmp_uri).count_rows()
    assert files_before


def test_distributed_compaction_plans_pickled_tasks_and_commits_once(tmp_path):
    import pickle

    from lance.optimize import Compaction as PylanceCompaction

    from lance_core.optimize import Compaction, CompactionTask, RewriteResult

    a, b = str(tmp_path / "a.lance"), str(tmp_path / "b.lance")
    _build(a, True)
    _build(b, True)
    ds = lance_core.dataset(a)
    plan = Compaction.plan(ds, {"target_rows_per_fragment": 5000})
    assert plan.num_tasks() == 4 and plan.read_version == ds.version
    # The tasks pylance plans, each with the fragments' committed metadata.
    theirs = PylanceCompaction.plan(lance.dataset(a), {"target_rows_per_fragment": 5000})
    assert [t.fragment_ids for t in plan.tasks] == [[f.id for f in t.fragments] for t in theirs.tasks]
    assert plan.tasks[1].fragments == [ds.get_fragment(i).metadata for i in plan.tasks[1].fragment_ids]
    assert repr(plan) == f"CompactionPlan(read_version={ds.version}, tasks=<4 compaction tasks>)"
    tasks = [pickle.loads(pickle.dumps(t)) for t in plan.tasks]              # as sent to workers
    assert tasks == plan.tasks and pickle.loads(pickle.dumps(plan)) == plan
    assert CompactionTask.from_json(tasks[2].json()) == tasks[2] and tasks[2] != tasks[3]
    results = [pickle.loads(pickle.dumps(t.execute(lance_core.dataset(a)))) for t in reversed(tasks)]
    assert RewriteResult.from_json(results[0].json()) == results[0]
    assert results[0].original_fragments == tasks[-1].fragments and len(results[0].new_fragments) >= 1
    m = Compaction.commit(ds, results)
    assert (m.fragments_removed, m.fragments_added, m.files_removed, m.files_added) == tuple(
        sum(getattr(r.metrics, k) for r in results)
        for k in ("fragments_removed", "fragments_added", "files_removed", "files_added"))
    assert ds.version == plan.read_version + 2   # fragment ids reserved first, as pylance does
    lance_core.dataset(b).optimize.compact_files(target_rows_per_fragment=5000)
    assert_same(lance.dataset(a).to_table(with_row_id=True), lance.dataset(b).to_table(with_row_id=True), "same rows")
    assert [f.physical_rows for f in lance.dataset(a).get_fragments()] == \
        [f.physical_rows for f in lance.dataset(b).get_fragments()]
    assert (m.fragments_removed, m.fragments_added) == (30, 5)


def test_compaction_with_a_scalar_index_keeps_queries_right(tmp_path):
    """Rewritten fragments' rows are remapped in the index (the same coverage as pylance's
    compaction leaves); fragments covered by different indices are not merged together
    (the same groups as pylance's); indexed queries stay right in both libraries."""
    queries = ["id = 1234", "id >= 24990 AND id < 25600", "id > 91990", "id < 0"]
    out = {}
    for lib in (lance, lance_core):
        uri = str(tmp_path / f"{lib.__name__}.lance")
        _build(uri, False)
        lance.dataset(uri).create_scalar_index("id", "BTREE")
        for start in (90_000, 91_000):   # two small fragments the index does not cover
            lance.write_dataset(pa.table({"id": pa.array(range(start, start + 1000)), "s": ["x"] * 1000,
                                          "l": pa.array([[1]] * 1000), "twice": pa.array([0] * 1000)}), uri,
                                mode="append")
        expected = {q: lance.dataset(uri).to_table(filter=q).sort_by("id") for q in queries}
        m = lib.dataset(uri).optimize.compact_files(target_rows_per_fragment=5000)
        after = lance.dataset(uri)
        for q in queries:
            assert_same(after.to_table(filter=q).sort_by("id"), expected[q], q)
            assert_same(lance_core.dataset(uri).to_table(filter=q).sort_by("id"), expected[q], q)
        # The index is remapped onto the new fragments (new files), as pylance remaps it.
        d = after.describe_indices()[0]
        covered = set(d.segments[0].fragment_ids)
        assert covered <= {f.fragment_id for f in after.get_fragments()}
        assert d.num_rows_indexed == after.count_rows("id < 90000")
        out[lib.__name__] = (m.fragments_removed, m.fragments_added, sorted(covered))
    assert out["lance_core"] == out["lance"]
    assert out["lance"][:2] == (32, 6)


def test_each_library_maintains_what_the_other_wrote(tmp_path):
    """pylance compacts and cleans up a dataset lance_core wrote and compacted; lance_core
    compacts and cleans up one pylance wrote; both read every result the same."""
    from datetime import timedelta

    ours = str(tmp_path / "ours.lance")
    for i in range(12):
        t = pa.table({"id": pa.array(range(i * 300, (i + 1) * 300)), "s": [f"r{i}"] * 300})
        lance_core.write_dataset(t, ours, mode="append" if i else "create", enable_stable_row_ids=True)
    lance_core.dataset(ours).delete("id % 6 = 0")
    lance_core.dataset(ours).optimize.compact_files(target_rows_per_fragment=1000)
    lance_core.write_dataset(pa.table({"id": [10_000], "s": ["x"]}), ours, mode="append")
    lance.dataset(ours).optimize.compact_files(target_rows_per_fragment=2000)
    lance.dataset(ours).cleanup_old_versions(older_than=timedelta(0))
    assert_same(lance_core.dataset(ours).to_table(with_row_id=True), lance.dataset(ours).to_table(with_row_id=True),
                "pylance maintained ours")

    theirs = str(tmp_path / "theirs.lance")
    _build(theirs, True)
    lance.dataset(theirs).optimize.compact_files(target_rows_per_fragment=4000)
    lance_core.dataset(theirs).optimize.compact_files(target_rows_per_fragment=9000)
    lance_core.dataset(theirs).cleanup_old_versions(older_than=timedelta(0))
    assert len(lance.dataset(theirs).versions()) == 1
    assert_same(lance.dataset(theirs).to_table(with_row_id=True), lance_core.dataset(theirs).to_table(with_row_id=True),
                "we maintained theirs")
