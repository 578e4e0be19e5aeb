"""cleanup_old_versions against pylance: the same versions and files remain, tagged
versions stay, files no version references are removed only when allowed, and a writer
running meanwhile loses nothing."""

from __future__ import annotations

import os
import threading
from datetime import timedelta

import pyarrow as pa
import pytest

import lance_core
from conftest import assert_same, lance


def _history(uri: str) -> None:
    """Appends, an overwrite, deletes (both deletion kinds), new columns: files that only
    old versions need, and files the latest still needs."""
    def t(n, s):
        return pa.table({"a": pa.array(range(s, s + n)), "b": [f"v{i}" for i in range(s, s + n)]})
    lance.write_dataset(t(100, 0), uri)
    lance.write_dataset(t(50, 100), uri, mode="append")
    lance.write_dataset(t(200, 1000), uri, mode="overwrite", max_rows_per_file=100)
    lance.write_dataset(t(6000, 5000), uri, mode="append")
    ds = lance.dataset(uri)
    ds.delete("a % 10 = 1")
    ds.delete("a % 10 = 2")
    ds.add_columns({"c": "a * 2"})
    lance.write_dataset(t(10, 20000), uri, mode="append")


def _files(uri: str):
    out = []
    for root, _, names in os.walk(uri):
        for n in names:
            rel = os.path.relpath(os.path.join(root, n), uri)
            if not rel.startswith("_versions/") or rel.endswith(".manifest"):
                out.append(rel)
    return sorted(out)


@pytest.mark.parametrize("kwargs", [dict(older_than=timedelta(0)), dict(retain_versions=3),
                                    dict(older_than=timedelta(0), error_if_tagged_old_versions=False),
                                    dict()])
def test_cleanup_matches_pylance(tmp_path, kwargs):
    results = {}
    for lib in (lance, lance_core):
        uri = str(tmp_path / f"{lib.__name__}.lance")
        _history(uri)
        if "error_if_tagged_old_versions" in kwargs:
            lance.dataset(uri).tags.create("keep", 3)
        before = lance.dataset(uri).to_table()
        stats = lib.dataset(uri).cleanup_old_versions(**kwargs)
        ref = lance.dataset(uri)
        assert_same(ref.to_table(), before, "latest after cleanup")
        assert_same(lance_core.dataset(uri).to_table(), before, "ours after cleanup")
        for v in ref.versions():
            assert_same(lance_core.dataset(uri, version=v["version"]).to_table(),
                        lance.dataset(uri, version=v["version"]).to_table(), f"kept version {v['version']}")
        results[lib.__name__] = ([v["version"] for v in ref.versions()], len(_files(uri)),
                                 stats.old_versions, stats.data_files_removed, stats.deletion_files_removed,
                                 stats.transaction_files_removed)
    assert results["lance_core"] == results["lance"], results


def test_tagged_old_versions_are_an_error_unless_asked(tmp_uri):
    _history(tmp_uri)
    ds = lance_core.dataset(tmp_uri)
    ds.tags.create("old", 2)
    with pytest.raises(lance_core.LanceError, match=r"tagged versions: old \(version 2\)"):
        ds.cleanup_old_versions(older_than=timedelta(0))
    assert len(ds.versions()) == 8      # nothing removed
    stats = ds.cleanup_old_versions(older_than=timedelta(0), error_if_tagged_old_versions=False)
    assert stats.old_versions == 6
    assert [v["version"] for v in lance.dataset(tmp_uri).versions()] == [2, 8]
    assert lance.dataset(tmp_uri, version="old").count_rows() == 150


def test_unreferenced_files_need_age_or_permission(tmp_uri):
    _history(tmp_uri)
    orphan = os.path.join(tmp_uri, "data", "left-by-a-killed-writer.lance")
    with open(orphan, "wb") as f:
        f.write(b"x" * 1000)
    ds = lance_core.dataset(tmp_uri)
    ds.cleanup_old_versions(older_than=timedelta(0))
    assert os.path.exists(orphan)           # young: a writer may be about to commit it
    old = 8 * 24 * 3600
    st = os.stat(orphan)
    os.utime(orphan, (st.st_atime - old, st.st_mtime - old))
    stats = ds.cleanup_old_versions(older_than=timedelta(0))
    assert not os.path.exists(orphan) and stats.data_files_removed == 1 and stats.bytes_removed == 1000
    with open(orphan, "wb") as f:
        f.write(b"x" * 10)
    ds.cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
    assert not os.path.exists(orphan)


def test_a_concurrent_appender_loses_nothing(tmp_uri):
    _history(tmp_uri)
    stop = threading.Event()
    appended = []

    def append():
        i = 0
        while not stop.is_set() and i < 15:
            lance_core.write_dataset(pa.table({"a": [100000 + i], "b": ["x"], "c": [0]}), tmp_uri, mode="append")
            appended.append(100000 + i)
            i += 1

    t = threading.Thread(target=append)
    t.start()
    try:
        for _ in range(5):
            lance_core.dataset(tmp_uri).cleanup_old_versions(older_than=timedelta(0))
    finally:
        stop.set()
        t.join()
    got = set(lance.dataset(tmp_uri).to_table(columns=["a"])["a"].to_pylist())
    assert set(appended) <= got
    assert_same(lance_core.dataset(tmp_uri).to_table(), lance.dataset(tmp_uri).to_table(), "after concurrent cleanup")


def test_delete_rate_limit_paces_the_deletes(tmp_path):
    """cleanup_old_versions(delete_rate_limit=n): at most n deletes start per second (for
    stores that throttle deletes); everything is still removed."""
    import time

    uri = str(tmp_path / "t")
    for mode in ("create", "overwrite", "overwrite", "overwrite"):
        lance_core.write_dataset(pa.table({"a": range(10)}), uri, mode=mode)
    ds = lance_core.dataset(uri)
    start = time.monotonic()
    stats = ds.cleanup_old_versions(older_than=timedelta(0), delete_rate_limit=10)
    took = time.monotonic() - start
    # Three manifests, three data files, three transactions: the ninth starts 0.8 s in.
    assert (stats.old_versions, stats.data_files_removed, stats.transaction_files_removed) == (3, 3, 3)
    assert took >= 0.8
    assert lance.dataset(uri).to_table() == pa.table({"a": range(10)})
    with pytest.raises(ValueError, match="delete_rate_limit must be positive"):
        ds.cleanup_old_versions(older_than=timedelta(0), delete_rate_limit=0)
