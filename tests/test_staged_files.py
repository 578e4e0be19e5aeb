"""No file is left behind by a writer whose commit does not happen: every writer, on a
version another writer replaced meanwhile (an incompatible conflict), or failing half-way
through writing, leaves the table's directory as it found it (data, deletion and
transaction files), and the table reads as before in both libraries."""

from __future__ import annotations

import os

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_core
from conftest import assert_same


def _files(uri):
    """Every file of the table but its manifests (a failed writer creates none)."""
    out = set()
    for root, _, names in os.walk(uri):
        for n in names:
            rel = os.path.relpath(os.path.join(root, n), uri)
            if not rel.startswith("_versions"):
                out.add(rel)
    return out


def _table(n=400):
    return pa.table({"id": pa.array(range(n), pa.int64()), "v": pa.array([f"r{i}" for i in range(n)]),
                     "x": pa.array([float(i) for i in range(n)])})


@pytest.fixture
def stale(tmp_uri):
    """A table of several small fragments, a handle on its first version, and a concurrent
    overwrite committed after it; returns (handle, files after the overwrite)."""
    lance_core.write_dataset(_table(), tmp_uri, max_rows_per_file=50)
    handle = lance_core.dataset(tmp_uri)
    lance.write_dataset(_table(30), tmp_uri, mode="overwrite")
    return handle, _files(tmp_uri)


WRITERS = {
    "delete": lambda ds: ds.delete("id < 120"),
    "update": lambda ds: ds.update({"v": "'changed'"}, where="id % 3 = 0"),
    "merge_insert": lambda ds: ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
    .execute(pa.table({"id": pa.array([1, 2, 1000], pa.int64()), "v": ["a", "b", "c"], "x": [0.5, 1.5, 2.5]})),
    "add_columns (SQL)": lambda ds: ds.add_columns({"y": "id * 2"}),
    "add_columns (function)": lambda ds: ds.add_columns(
        lambda b: pa.record_batch({"z": pc.multiply(b.column(0), 3)}), read_columns=["id"]),
    "compact_files": lambda ds: ds.optimize.compact_files(target_rows_per_fragment=400),
    "alter_columns (cast)": lambda ds: ds.alter_columns({"path": "x", "data_type": pa.float32()}),
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_loser_of_an_incompatible_conflict_leaves_no_file(stale, tmp_uri, writer):
    handle, before = stale
    with pytest.raises(lance_core.IncompatibleTransactionError):
        WRITERS[writer](handle)
    assert _files(tmp_uri) == before, f"{writer} left {sorted(_files(tmp_uri) - before)}"
    assert_same(lance_core.dataset(tmp_uri).to_table(), lance.dataset(tmp_uri).to_table(), writer)
    assert lance.dataset(tmp_uri).count_rows() == 30


def test_a_write_that_fails_half_way_leaves_no_file(tmp_uri):
    lance_core.write_dataset(_table(10), tmp_uri)
    before = _files(tmp_uri)
    schema = _table(1).schema

    def batches():
        for _ in range(5):
            yield _table(100).to_batches()[0]
        raise ValueError("the source broke")

    reader = pa.RecordBatchReader.from_batches(schema, batches())
    with pytest.raises(Exception, match="the source broke"):
        lance_core.write_dataset(reader, tmp_uri, mode="append", max_rows_per_file=100)
    assert _files(tmp_uri) == before
    assert lance_core.dataset(tmp_uri).count_rows() == 10


def test_a_column_function_that_fails_half_way_leaves_no_file(tmp_uri):
    lance_core.write_dataset(_table(), tmp_uri, max_rows_per_file=50)
    before = _files(tmp_uri)
    calls = []

    def fn(batch):
        calls.append(1)
        if len(calls) == 4:
            raise RuntimeError("udf failed on the fourth fragment")
        return pa.record_batch({"y": batch.column(0)})

    with pytest.raises(Exception, match="udf failed"):
        lance_core.dataset(tmp_uri).add_columns(fn, read_columns=["id"])
    assert len(calls) == 4
    assert _files(tmp_uri) == before
    assert lance_core.dataset(tmp_uri).schema.names == ["id", "v", "x"]


def test_committed_writers_keep_their_files(tmp_uri):
    """The guard removes nothing a version refers to: after each writer commits, both
    libraries read every version."""
    lance_core.write_dataset(_table(), tmp_uri, max_rows_per_file=50)
    for name in WRITERS:  # in order: the merge's source has x as float64, as before the cast
        WRITERS[name](lance_core.dataset(tmp_uri))
    ds = lance_core.dataset(tmp_uri)
    for v in ds.versions():
        n = v["version"]
        assert_same(lance_core.dataset(tmp_uri, version=n).to_table(),
                    lance.dataset(tmp_uri, version=n).to_table(), f"version {n}")


def test_a_failed_write_returns_after_its_source_thread_left_python(tmp_uri):
    """The source of a write is pulled on a thread of its own. When the write fails while
    that thread is inside the caller's generator, the failure is raised only once the
    thread has left Python: a thread still calling into Python as the interpreter exits is
    stopped by pthread_exit, which aborted the process ("FATAL: exception not rethrown")."""
    import time

    lance_core.write_dataset(pa.table({"id": [1, 2, 3]}), tmp_uri)
    events = []

    def source():
        yield pa.record_batch({"id": [1]})  # a match: the merge fails on this batch
        time.sleep(0.3)  # the puller is here when it fails
        events.append("left the generator")
        yield pa.record_batch({"id": [9]})

    reader = pa.RecordBatchReader.from_batches(pa.schema([("id", pa.int64())]), source())
    with pytest.raises(lance_core.InvalidInputError):
        lance_core.dataset(tmp_uri).merge_insert("id").when_matched_fail().execute(reader)
    assert events == ["left the generator"]
