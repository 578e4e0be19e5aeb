"""Two merge_inserts that insert the same new key never both commit: each records the
keys it inserted in its transaction (`Update.inserted_rows`, pylance's Bloom filter, bit
for bit), and a merge committing after one that inserted one of its keys runs again, so
it updates the row instead. lance_core does this on any ON columns; pylance 14 only when
they are the table's declared (unenforced) primary key, which both libraries keep in
the manifest."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_core
from conftest import assert_same

PK = {"lance-schema:unenforced-primary-key": "true"}


def _table(pk: bool, n=10):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False, metadata=PK if pk else None),
                        pa.field("v", pa.string())])
    return pa.table({"id": pa.array(range(n), pa.int64()), "v": [f"r{i}" for i in range(n)]}, schema=schema)


def _source(key, value):
    return pa.table({"id": pa.array([key], pa.int64()), "v": [value]})


def _upsert(ds, key, value, retries=None):
    b = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
    if retries is not None:
        b = b.conflict_retries(retries)
    return b.execute(_source(key, value))


def _rows_with(uri, key):
    t = lance.dataset(uri).to_table(filter=f"id = {key}")
    return sorted(t["v"].to_pylist())


@pytest.mark.parametrize("pk", [True, False], ids=["primary key", "plain key"])
def test_two_merges_inserting_one_key(tmp_uri, pk):
    lance_core.write_dataset(_table(pk), tmp_uri)
    first, second = lance_core.dataset(tmp_uri), lance_core.dataset(tmp_uri)
    assert _upsert(first, 5000, "first")["num_inserted_rows"] == 1
    # The second read the version before the first's insert; it runs again and updates.
    stats = _upsert(second, 5000, "second")
    assert (stats["num_inserted_rows"], stats["num_updated_rows"]) == (0, 1)
    assert _rows_with(tmp_uri, 5000) == ["second"]
    assert lance.dataset(tmp_uri).count_rows() == 11
    assert_same(lance_core.dataset(tmp_uri).to_table(), lance.dataset(tmp_uri).to_table(), "after the merges")


def test_without_retries_the_loser_says_it_can_retry(tmp_uri):
    lance_core.write_dataset(_table(False), tmp_uri)
    first, second = lance_core.dataset(tmp_uri), lance_core.dataset(tmp_uri)
    _upsert(first, 5000, "first")
    with pytest.raises(lance_core.CommitConflictError, match="inserted a key this merge inserts") as e:
        _upsert(second, 5000, "second", retries=0)
    assert e.value.retryable
    assert _rows_with(tmp_uri, 5000) == ["first"]


def test_merges_inserting_other_keys_both_commit_without_rerunning(tmp_uri):
    lance_core.write_dataset(_table(True), tmp_uri)
    first, second = lance_core.dataset(tmp_uri), lance_core.dataset(tmp_uri)
    _upsert(first, 5000, "a")
    # No retry allowed: a key the first did not insert is no conflict.
    assert _upsert(second, 6000, "b", retries=0)["num_inserted_rows"] == 1
    assert lance.dataset(tmp_uri).count_rows() == 12


@pytest.mark.parametrize("pk", [True, False], ids=["primary key", "plain key"])
def test_after_a_pylance_merge(tmp_uri, pk):
    """pylance inserted the key first: with a primary key its transaction records the key;
    without one it records none, and lance_core re-runs anyway (an update that recorded no
    keys may have inserted any)."""
    lance.write_dataset(_table(pk), tmp_uri)
    ours = lance_core.dataset(tmp_uri)
    _upsert(lance.dataset(tmp_uri), 5000, "pylance")
    stats = _upsert(ours, 5000, "lance_core")
    assert stats["num_updated_rows"] == 1
    assert _rows_with(tmp_uri, 5000) == ["lance_core"]


def test_pylance_after_a_lance_core_merge_reads_our_keys(tmp_uri):
    """pylance, merging on its primary key after lance_core inserted the key, finds the key
    in lance_core's filter, runs again and updates (what it does after its own merges)."""
    lance_core.write_dataset(_table(True), tmp_uri)
    theirs = lance.dataset(tmp_uri)
    assert theirs.schema.field("id").metadata == {k.encode(): v.encode() for k, v in PK.items()}
    _upsert(lance_core.dataset(tmp_uri), 5000, "lance_core")
    _upsert(theirs, 5000, "pylance")
    assert _rows_with(tmp_uri, 5000) == ["pylance"]
    assert lance.dataset(tmp_uri).count_rows() == 11


def test_primary_key_survives_our_schema_changes(tmp_uri):
    """A primary key pylance declared is still one after lance_core adds and alters columns:
    pylance's own concurrent merges on it then still see each other."""
    lance.write_dataset(_table(True), tmp_uri)
    ds = lance_core.dataset(tmp_uri)
    ds.add_columns({"w": "id * 2"})
    ds.alter_columns({"path": "v", "name": "value"})
    a, b = lance.dataset(tmp_uri), lance.dataset(tmp_uri)
    src = pa.table({"id": pa.array([7000], pa.int64()), "value": ["x"], "w": pa.array([1], pa.int64())})
    a.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)
    b.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)
    assert lance.dataset(tmp_uri).to_table(filter="id = 7000").num_rows == 1


def test_a_nullable_primary_key_is_refused(tmp_uri):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=True, metadata=PK)])
    with pytest.raises(lance_core.InvalidInputError, match="primary key column 'id' and all its ancestors must not be nullable"):
        lance_core.write_dataset(pa.table({"id": [1]}, schema=schema), tmp_uri)
    with pytest.raises(Exception):  # noqa: B017 - pylance refuses it too (its class varies)
        lance.write_dataset(pa.table({"id": [1]}, schema=schema), tmp_uri)


def test_two_processes_inserting_the_same_keys(tmp_uri):
    """Two processes upsert the same new keys at the same time, fifteen merges each: every
    key ends up in the table once, and no file is left that no version refers to."""
    import os
    import subprocess
    import sys
    import textwrap

    lance_core.write_dataset(_table(False), tmp_uri)
    script = textwrap.dedent(f"""
        import sys, time, pyarrow as pa, lance_core
        who = sys.argv[1]
        while not __import__("os").path.exists({tmp_uri!r} + ".go"):
            time.sleep(0.01)
        for i in range(15):
            ids = [1000 + 3 * i + j for j in range(3)]
            src = pa.table({{"id": pa.array(ids, pa.int64()), "v": [who] * 3}})
            ds = lance_core.dataset({tmp_uri!r})
            ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all() \\
                .conflict_retries(100).execute(src)
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, who]) for who in ("p1", "p2")]
    open(tmp_uri + ".go", "w").close()
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    ids = lance.dataset(tmp_uri).to_table()["id"].to_pylist()
    assert sorted(ids) == list(range(10)) + list(range(1000, 1045)), "a key twice, or one lost"
    assert_same(lance_core.dataset(tmp_uri).to_table(), lance.dataset(tmp_uri).to_table(), "after the race")
    referenced = set()
    for v in lance.dataset(tmp_uri).versions():
        for frag in lance.dataset(tmp_uri, version=v["version"]).get_fragments():
            referenced.update(f.path for f in frag.metadata.files)
    assert set(os.listdir(os.path.join(tmp_uri, "data"))) == referenced
