"""Distributed writes (write_fragments + commit) and the commit protocol under concurrent
writers and crashes."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time

import lance
import pyarrow as pa
import pytest

import lance_core
from conftest import assert_same


def _t(start, n):
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "v": pa.array([f"r{i}" for i in range(start, start + n)])})


def test_write_fragments_then_commit(tmp_uri):
    lance_core.write_dataset(_t(0, 100), tmp_uri)
    frags = lance_core.write_fragments(_t(100, 250), tmp_uri, max_rows_per_file=100)
    frags += lance_core.write_fragments(_t(350, 50), tmp_uri)
    assert [f.physical_rows for f in frags] == [100, 100, 50, 50]
    # They travel: pickle and JSON.
    frags = [pickle.loads(pickle.dumps(f)) for f in frags]
    frags = [lance_core.FragmentMetadata.from_json(json.dumps(f.to_json())) for f in frags]
    # pylance reads the same JSON (and gives it back unchanged).
    assert [lance.fragment.FragmentMetadata.from_json(json.dumps(f.to_json())).to_json() for f in frags] == \
        [f.to_json() for f in frags]
    assert lance.dataset(tmp_uri).version == 1  # nothing committed yet
    ds = lance_core.commit(tmp_uri, lance_core.LanceOperation.Append(frags), read_version=1)
    assert ds.version == 2
    assert_same(lance.dataset(tmp_uri).to_table(), _t(0, 400), "committed")
    assert [f.fragment_id for f in lance.dataset(tmp_uri).get_fragments()] == [0, 1, 2, 3, 4]


def test_overwrite_operation(tmp_uri):
    lance_core.write_dataset(_t(0, 10), tmp_uri)
    new = pa.table({"x": pa.array([1.5, 2.5])})
    frags = lance_core.write_fragments(new, tmp_uri, mode="overwrite")
    ds = lance_core.commit(tmp_uri, lance_core.LanceOperation.Overwrite(new.schema, frags))
    assert ds.version == 2
    assert_same(lance.dataset(tmp_uri).to_table(), new, "overwrite")
    # A new dataset from fragments.
    fresh = tmp_uri + "_fresh"
    frags = lance_core.write_fragments(new, fresh, mode="create")
    lance_core.commit(fresh, lance_core.LanceOperation.Overwrite(new.schema, frags))
    assert_same(lance.dataset(fresh).to_table(), new, "fresh")


APPENDER = textwrap.dedent("""
    import sys, pyarrow as pa, lance_core
    uri, k, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    for r in range(rounds):
        start = k * 1000 + r * 10
        lance_core.write_dataset(pa.table({"id": pa.array(range(start, start + 10), pa.int64()),
                                           "v": pa.array([f"w{k}" for _ in range(10)])}), uri, mode="append")
""")


def test_eight_concurrent_appenders(tmp_uri):
    lance_core.write_dataset(_t(0, 10), tmp_uri)
    rounds = 3
    procs = [subprocess.Popen([sys.executable, "-c", APPENDER, tmp_uri, str(k + 1), str(rounds)]) for k in range(8)]
    assert [p.wait(timeout=300) for p in procs] == [0] * 8
    ds = lance.dataset(tmp_uri)
    assert [v["version"] for v in ds.versions()] == list(range(1, 2 + 8 * rounds))
    ids = ds.to_table().column("id").to_pylist()
    expected = list(range(10)) + [k * 1000 + r * 10 + i for k in range(1, 9) for r in range(rounds) for i in range(10)]
    assert sorted(ids) == sorted(expected) and len(ids) == len(set(ids))
    assert lance_core.dataset(tmp_uri).count_rows() == len(expected)


BIG_WRITER = textwrap.dedent("""
    import sys, numpy as np, pyarrow as pa, lance_core
    uri = sys.argv[1]
    def batches():
        for i in range(200):
            yield pa.record_batch([pa.array(np.arange(i * 50000, (i + 1) * 50000)), pa.array(np.random.rand(50000))], names=["id", "v"])
    reader = pa.RecordBatchReader.from_batches(pa.schema([("id", pa.int64()), ("v", pa.float64())]), batches())
    lance_core.write_dataset(reader, uri, mode="append", max_rows_per_file=200000)
""")


def test_killed_writer_leaves_previous_version(tmp_uri):
    base = pa.table({"id": pa.array(range(5), pa.int64()), "v": pa.array([0.5] * 5)})
    lance_core.write_dataset(base, tmp_uri)
    p = subprocess.Popen([sys.executable, "-c", BIG_WRITER, tmp_uri])
    # Wait until data files appear, then kill the writer before it can commit.
    deadline = time.time() + 60
    while time.time() < deadline and len(os.listdir(os.path.join(tmp_uri, "data"))) < 3:
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert len(os.listdir(os.path.join(tmp_uri, "data"))) >= 3
    for reader in (lance.dataset(tmp_uri), lance_core.dataset(tmp_uri)):
        assert reader.version == 1
        assert reader.count_rows() == 5
    assert_same(lance_core.dataset(tmp_uri).to_table(), base, "after kill")
    # And the dataset still takes writes.
    lance_core.write_dataset(base, tmp_uri, mode="append")
    assert lance.dataset(tmp_uri).count_rows() == 10


def test_conflicting_commit_is_refused(tmp_uri):
    lance_core.write_dataset(_t(0, 10), tmp_uri)
    frags = lance_core.write_fragments(_t(10, 10), tmp_uri)
    lance_core.write_dataset(_t(100, 5), tmp_uri, mode="overwrite")  # version 2 replaces the table
    with pytest.raises(lance_core.IncompatibleTransactionError, match="version 2.*overwrite replaced the table"):
        lance_core.commit(tmp_uri, lance_core.LanceOperation.Append(frags), read_version=1)
    assert lance.dataset(tmp_uri).version == 2


def test_append_to_unwritable_version_is_refused(tmp_uri):
    lance.write_dataset(_t(0, 10), tmp_uri, data_storage_version="legacy")
    files = sorted(os.listdir(os.path.join(tmp_uri, "data")))
    with pytest.raises(lance_core.UnsupportedFeatureError, match="writing data storage version '0.1'"):
        lance_core.write_dataset(_t(10, 10), tmp_uri, mode="append")
    assert sorted(os.listdir(os.path.join(tmp_uri, "data"))) == files  # nothing written
    assert lance.dataset(tmp_uri).version == 1


def test_v1_manifest_names_are_kept(tmp_uri):
    lance.write_dataset(_t(0, 10), tmp_uri, enable_v2_manifest_paths=False)
    lance_core.write_dataset(_t(10, 10), tmp_uri, mode="append")
    names = [n for n in os.listdir(os.path.join(tmp_uri, "_versions")) if n.endswith(".manifest")]
    assert sorted(names) == ["1.manifest", "2.manifest"]
    assert lance.dataset(tmp_uri).count_rows() == 20
    txns = os.listdir(os.path.join(tmp_uri, "_transactions"))
    assert len(txns) == 2  # one transaction file per commit


def test_concurrent_deletes_rebase_or_conflict(tmp_uri):
    lance_core.write_dataset(_t(0, 300), tmp_uri, max_rows_per_file=100)
    v1 = lance_core.dataset(tmp_uri)
    a, b = lance_core.dataset(tmp_uri), lance_core.dataset(tmp_uri, version=1)
    a.delete("id < 10")              # fragment 0
    b.delete("id >= 200 AND id < 210")  # fragment 2, prepared from version 1: rebases
    ds = lance.dataset(tmp_uri)
    assert ds.version == 3 and ds.count_rows() == 280
    c = lance_core.dataset(tmp_uri, version=1)
    with pytest.raises(lance_core.CommitConflictError, match="commit conflict.*same fragments"):
        c.delete("id = 5", conflict_retries=0)  # fragment 0 again, from version 1
    assert lance.dataset(tmp_uri).version == 3
    # With retries (the default, as pylance), it re-runs on version 3, where row 5 is gone.
    c.delete("id = 5 OR id = 20")
    ds = lance.dataset(tmp_uri)
    assert ds.version == 4 and ds.count_rows() == 279 and c.version == 4
    assert v1.version == 1


def test_transaction_properties_both_ways(tmp_path):
    """Properties lance_core records are read by pylance, and the reverse; each version's
    operation is named."""
    uri = str(tmp_path / "t.lance")
    lance_core.write_dataset(pa.table({"x": [1, 2]}), uri)
    frags = lance_core.write_fragments(pa.table({"x": [3]}), uri, mode="append")
    ds = lance_core.commit(uri, lance_core.LanceOperation.Append(frags), read_version=1,
                           transaction_properties={"job": "j1", "n": 7})
    t = ds.read_transaction()
    assert (t.read_version, t.transaction_properties) == (1, {"job": "j1", "n": "7"})
    assert isinstance(t.operation, lance_core.LanceOperation.Append) and len(t.operation.fragments) == 1
    assert lance.dataset(uri).read_transaction(2).transaction_properties == {"job": "j1", "n": "7"}
    assert isinstance(ds.read_transaction(1).operation, lance_core.LanceOperation.Overwrite)
    lance.write_dataset(pa.table({"x": [4]}), uri, mode="append", transaction_properties={"by": "pylance"})
    lance.dataset(uri).delete("x = 1")
    ours = lance_core.dataset(uri)
    assert ours.read_transaction(3).transaction_properties == {"by": "pylance"}
    assert ours.read_transaction().operation.predicate == "x = 1"
    assert ours.read_transaction(3).uuid == lance.dataset(uri).read_transaction(3).uuid


def test_conflicts_say_whether_a_retry_can_succeed(tmp_uri):
    """A change prepared from data another writer changed meanwhile is retryable; one whose
    table another writer replaced is not. Both are pylance's `OSError` with `retryable`."""
    lance_core.write_dataset(_t(0, 100), tmp_uri)
    stale = lance_core.dataset(tmp_uri)
    lance.dataset(tmp_uri).delete("id = 5")                       # the same (only) fragment
    with pytest.raises(lance_core.CommitConflictError, match="same fragments") as e:
        stale.update({"v": "'x'"}, where="id < 10", conflict_retries=0)
    assert e.value.retryable and isinstance(e.value, OSError)
    assert not isinstance(e.value, lance_core.IncompatibleTransactionError)
    # Re-run against the new version, it succeeds.
    assert stale.update({"v": "'x'"}, where="id < 10")["num_rows_updated"] == 9

    lance_core.write_dataset(_t(0, 10), tmp_uri, mode="overwrite")
    with pytest.raises(lance_core.IncompatibleTransactionError, match="replaced the table") as e:
        lance_core.dataset(tmp_uri, version=stale.version).delete("id = 7")
    assert not e.value.retryable and isinstance(e.value, lance_core.CommitConflictError)
    # Nothing changed: the overwrite stands.
    assert lance.dataset(tmp_uri).count_rows() == 10


def test_rows_appended_while_columns_are_added_stay(tmp_uri):
    """An append meets a concurrent add_columns as compatible, as in pylance: the appended
    rows' new column reads as null."""
    lance_core.write_dataset(_t(0, 10), tmp_uri)
    appended_from = lance_core.dataset(tmp_uri)
    frags = lance_core.write_fragments(_t(100, 2), tmp_uri)
    lance.dataset(tmp_uri).add_columns({"w": "id * 2"})
    lance_core.commit(tmp_uri, lance_core.LanceOperation.Append(frags), read_version=appended_from.version)
    t = lance.dataset(tmp_uri).to_table().sort_by("id")
    assert t.num_rows == 12 and t["w"].to_pylist()[-2:] == [None, None]
    assert_same(lance_core.dataset(tmp_uri).to_table().sort_by("id"), t, "appended after add_columns")


def test_a_change_whose_read_version_a_cleanup_removed_retries_on_the_latest(tmp_uri):
    """A cleanup removed the version a delete, an update and a merge were prepared from
    (and the versions after it but the latest): they run again on the latest version
    instead of failing with "not found"."""
    from datetime import timedelta

    lance_core.write_dataset(_t(0, 100), tmp_uri)
    stale = {name: lance_core.dataset(tmp_uri) for name in ("delete", "update", "merge")}
    for i in range(3):
        lance_core.write_dataset(_t(100 + i, 1), tmp_uri, mode="append")
    lance_core.dataset(tmp_uri).delete("id = 0")  # rewrites the first fragment's deletions
    stats = lance_core.dataset(tmp_uri).cleanup_old_versions(older_than=timedelta(0))
    assert stats.old_versions == 4
    stale["delete"].delete("id = 5")
    assert stale["update"].update({"v": "'u'"}, where="id = 6")["num_rows_updated"] == 1
    src = pa.table({"id": pa.array([7, 500], pa.int64()), "v": ["m7", "m500"]})
    stale["merge"].merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)
    t = lance.dataset(tmp_uri).to_table().sort_by("id")
    ids = t["id"].to_pylist()
    assert 0 not in ids and 5 not in ids and ids[-1] == 500 and len(ids) == 103 - 2 + 1
    assert dict(zip(ids, t["v"].to_pylist()))[6] == "u"


def test_detached_commits_as_pylance(tmp_path):
    """A detached version (pylance's `commit(..., detached=True)`): numbered at random with
    the top bit set, off the table's line of versions, opened by its number, and a base for
    further detached commits; each library opens the other's."""
    uri = str(tmp_path / "t")
    ds = lance_core.write_dataset(pa.table({"x": [0]}), uri)

    def append(lib, base, value, read_version):
        frag = lib.LanceFragment.create(uri, pa.table({"x": [value]}))
        return lib.LanceDataset.commit(base, lib.LanceOperation.Append([frag]), read_version=read_version,
                                       detached=True)

    detached = append(lance_core, uri, 1, ds.version)
    assert detached.version & (1 << 63)
    assert detached.to_table() == pa.table({"x": [0, 1]})
    names = os.listdir(os.path.join(uri, "_versions"))
    assert f"d{detached.version}.manifest" in names
    # Nobody's latest: neither library sees it unless asked for by number.
    for lib in (lance_core, lance):
        latest = lib.dataset(uri)
        assert latest.version == 1 and latest.to_table() == pa.table({"x": [0]})
        assert [v["version"] for v in latest.versions()] == [1]
        assert lib.dataset(uri, version=detached.version).to_table() == pa.table({"x": [0, 1]})
    # The line goes on without it; the detached version stays where it is.
    ds = lance_core.write_dataset(pa.table({"x": [2]}), uri, mode="append")
    assert ds.version == 2 and ds.to_table() == pa.table({"x": [0, 2]})
    assert ds.checkout_version(detached.version).to_table() == pa.table({"x": [0, 1]})
    # Detached on detached, by either library, read by the other.
    ours = append(lance_core, uri, 3, detached.version)
    theirs = append(lance, uri, 4, detached.version)
    assert lance.dataset(uri, version=ours.version).to_table() == pa.table({"x": [0, 1, 3]})
    assert lance_core.dataset(uri, version=theirs.version).to_table() == pa.table({"x": [0, 1, 4]})
    assert len({detached.version, ours.version, theirs.version}) == 3
    assert lance_core.dataset(uri).version == lance.dataset(uri).version == 2
    # A number nobody committed, and a table named the v1 way, are refused.
    with pytest.raises(lance_core.DatasetNotFoundError, match="detached version"):
        lance_core.dataset(uri, version=(1 << 63) | 12345)
    v1 = str(tmp_path / "v1")
    lance.write_dataset(pa.table({"x": [0]}), v1, enable_v2_manifest_paths=False)
    frag = lance_core.LanceFragment.create(v1, pa.table({"x": [1]}))
    with pytest.raises(lance_core.InvalidInputError, match="v2 manifest paths"):
        lance_core.LanceDataset.commit(v1, lance_core.LanceOperation.Append([frag]), read_version=1, detached=True)
