"""Sessions: the caches of file metadata and index data that datasets share (pylance's
`lance.Session`). What a session keeps is keyed by files that never change, so a shared
session must never make a dataset see stale rows: after deletes, compactions, or a table
deleted and written again at the same place."""

from __future__ import annotations

import pickle
import shutil

import lance
import pyarrow as pa
import pytest

import lance_core


def _table(n: int = 1000) -> pa.Table:
    return pa.table({"id": pa.array(range(n), pa.int64()), "s": [f"v{i % 7}" for i in range(n)]})


def test_scans_fill_the_session_and_opens_share_it(tmp_path):
    uri = str(tmp_path / "t")
    lance_core.write_dataset(_table(), uri, max_rows_per_file=250)
    session = lance_core.Session()
    assert session.size_bytes() == 0 and session.approx_num_items() == 0
    ds = lance_core.dataset(uri, session=session)
    assert ds.session().is_same_as(session)
    ds.to_table()
    filled = session.size_bytes()
    # Four data files' metadata, at least.
    assert filled > 0 and session.approx_num_items() >= 4
    assert session.metadata_cache_size_bytes() == filled
    assert repr(session) == f"Session(index_cache_size_bytes=0, metadata_cache_size_bytes={filled})"

    again = lance_core.dataset(uri, session=ds.session())
    assert again.session().is_same_as(session)
    assert again.to_table() == ds.to_table()
    assert session.size_bytes() == filled  # nothing read twice

    # Versions reached from the dataset keep its session: checkouts and commits.
    assert ds.checkout_version(1).session().is_same_as(session)
    ds.delete("id < 10")
    latest = lance_core.dataset(uri, session=session)
    appended = lance_core.write_dataset(_table(5), latest, mode="append", session=session)
    assert appended.session().is_same_as(session)
    # A dataset opened without a session shares the process's, not this one.
    other = lance_core.dataset(uri)
    assert not other.session().is_same_as(session)
    assert other.session().is_same_as(lance_core.dataset(uri).session())
    # Pickled datasets reopen (with the process's session).
    assert pickle.loads(pickle.dumps(ds)).to_table() == ds.to_table()


def test_a_zero_sized_session_keeps_nothing_and_reads_the_same(tmp_path):
    uri = str(tmp_path / "t")
    lance_core.write_dataset(_table(), uri, max_rows_per_file=250)
    full = lance_core.dataset(uri, session=lance_core.Session())
    empty = lance_core.dataset(uri, metadata_cache_size_bytes=0, index_cache_size_bytes=0)
    assert empty.session().capacity_bytes() == (0, 0)
    assert full.to_table() == empty.to_table()
    assert full.take([3, 600]) == empty.take([3, 600])
    assert full.session().size_bytes() > 0
    assert empty.session().size_bytes() == 0


def test_a_shared_session_sees_every_change(tmp_path):
    """Other writers (pylance here) delete, compact and rewrite the table; datasets opened
    again with the same long-lived session read exactly what pylance reads."""
    uri = str(tmp_path / "t")
    lance.write_dataset(_table(), uri, max_rows_per_file=250)
    session = lance_core.Session()

    def check():
        ours = lance_core.dataset(uri, session=session)
        theirs = lance.dataset(uri)
        assert ours.to_table().sort_by("id") == theirs.to_table().sort_by("id")
        assert ours.count_rows("id < 500") == theirs.count_rows("id < 500")
        return ours

    check()
    lance.dataset(uri).delete("id % 3 = 0")  # deletion files
    check()
    lance.dataset(uri).delete("id % 5 = 0")  # a second deletion file per fragment
    check()
    lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=10_000)
    check()
    # The table deleted and written again at the same place: its version 1 has the same
    # manifest name as before, with other contents.
    shutil.rmtree(uri)
    lance.write_dataset(pa.table({"id": pa.array([7, 8, 9], pa.int64()), "s": ["a", "b", "c"]}), uri)
    assert check().to_table()["id"].to_pylist() == [7, 8, 9]


def test_index_data_is_kept_in_the_session(tmp_path):
    uri = str(tmp_path / "t")
    lance.write_dataset(_table(5000), uri)
    lance.dataset(uri).create_scalar_index("id", "BTREE")
    session = lance_core.Session()
    ds = lance_core.dataset(uri, session=session)
    assert ds.to_table(filter="id = 4321")["id"].to_pylist() == [4321]
    assert session.index_cache_size_bytes() > 0
    kept = session.size_bytes()
    assert ds.to_table(filter="id = 17")["id"].to_pylist() == [17]
    no_index_cache = lance_core.dataset(uri, index_cache_size_bytes=0)
    assert no_index_cache.to_table(filter="id = 4321")["id"].to_pylist() == [4321]
    assert no_index_cache.session().index_cache_size_bytes() == 0
    assert no_index_cache.session().metadata_cache_size_bytes() > 0
    assert session.size_bytes() >= kept


def test_session_argument_is_checked(tmp_path):
    uri = str(tmp_path / "t")
    lance_core.write_dataset(_table(10), uri)
    with pytest.raises(lance_core.InvalidInputError, match="session must be a lance_core.Session"):
        lance_core.dataset(uri, session="not a session")


def test_io_stats_count_a_datasets_requests(tmp_path):
    """io_stats_snapshot / io_stats_incremental, as pylance's: the requests made through a
    dataset's store, its versions reached from it counting with it."""
    import os

    uri = str(tmp_path / "t")
    ds = lance_core.write_dataset(_table(), uri, max_rows_per_file=250)
    written = ds.io_stats_snapshot()
    files = [os.path.join(d, f) for d, _, names in os.walk(uri) for f in names if f != "latest_version_hint.json"]
    # Four data files, a transaction and a manifest: one request each, every byte counted.
    assert (written.write_iops, written.write_bytes) == (len(files), sum(os.path.getsize(f) for f in files)) \
        and len(files) == 6
    assert written.read_iops == 0 and ds.io_stats_snapshot() == written
    assert ds.io_stats_incremental() == written
    assert ds.io_stats_incremental() == lance_core.dataset(uri).io_stats_incremental().__class__(0, 0, 0, 0)

    again = lance_core.dataset(uri)
    opened = again.io_stats_snapshot()
    assert (opened.read_iops, opened.write_iops) == (1, 0)  # the manifest
    again.to_table()
    scanned = again.io_stats_snapshot()
    assert scanned.read_iops >= opened.read_iops + 4 and scanned.read_bytes > opened.read_bytes
    # A checkout shares the counts; a delete's writes are counted in the dataset it returns.
    old = again.checkout_version(1)
    old.to_table(columns=["id"])
    assert again.io_stats_snapshot().read_iops > scanned.read_iops
    again.delete("id < 3")
    assert again.io_stats_snapshot().write_iops >= 3  # deletion file, transaction, manifest
