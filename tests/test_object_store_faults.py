"""Object-store faults (moto on 127.0.0.1 behind `s3_proxy.Faults`): every writer applies
its operation exactly once when the store loses the answer to its commit, resets the
connection after or before taking the write, or throttles; reads and writes survive
faults at random on every request; a fault that outlasts the retries says whether the
operation was applied. Each case runs the same operation on a local copy of the table
without faults and compares: the same versions, the same rows, readable by pylance."""

from __future__ import annotations

import datetime
import itertools
from contextlib import contextmanager

import lance
import pyarrow as pa
import pytest

import lance_core
from s3_proxy import (DROPPED, ERROR, KINDS, LOST, RESET, SLOW, THROTTLE, TRUNCATED, Faults, S3Server, every_kind)

# Retries start small here (the default waits 100 ms first) to keep the tests quick.
FAST_RETRIES = {"client_backoff_initial_ms": "5", "client_backoff_max_ms": "100"}


@pytest.fixture(scope="module")
def server():
    srv = S3Server()
    yield srv
    srv.stop()


_names = itertools.count()


@contextmanager
def _through(server, faults, **client):
    """Storage options that reach moto through a proxy injecting `faults` (closed after),
    with quick retries and the `client` settings given."""
    proxy = server.proxy(faults=faults)
    try:
        yield {**proxy.options(), **FAST_RETRIES, **client}
    finally:
        proxy.close()


def _rows(start, n):
    ids = list(range(start, start + n))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "s": pa.array([f"value-{i}" for i in ids]),
        "x": pa.array([i * 0.5 for i in ids]),
        "vec": pa.FixedSizeListArray.from_arrays(
            pa.array([float((i * 7 + d) % 13) for i in ids for d in range(4)], pa.float32()), 4),
    })


def _fragments(uri, opts, start, n):
    return lance_core.write_fragments(_rows(start, n), uri, storage_options=opts)


def _commit_fragments(uri, opts):
    """A distributed append: fragments written first, committed by a second call."""
    ds = lance_core.dataset(uri, storage_options=opts)
    frags = _fragments(uri, opts, 5000, 100)
    lance_core.LanceDataset.commit(uri, lance_core.LanceOperation.Append(frags), read_version=ds.version,
                                   storage_options=opts)


def _open(uri, opts):
    return lance_core.dataset(uri, storage_options=opts)


# Each writer: (preparation, run without faults on both copies; the operation).
WRITERS = {
    "create": (None, lambda uri, o: lance_core.write_dataset(_rows(0, 300), uri, storage_options=o)),
    "append": (None, lambda uri, o: lance_core.write_dataset(_rows(1000, 100), uri, mode="append",
                                                             storage_options=o)),
    "overwrite": (None, lambda uri, o: lance_core.write_dataset(_rows(2000, 50), uri, mode="overwrite",
                                                                storage_options=o)),
    "delete": (None, lambda uri, o: _open(uri, o).delete("id < 10 or id = 700")),
    "update": (None, lambda uri, o: _open(uri, o).update({"s": "'changed'"}, where="id % 100 = 3")),
    "merge_insert": (None, lambda uri, o: _open(uri, o).merge_insert("id").when_matched_update_all()
                     .when_not_matched_insert_all().execute(_rows(950, 100))),
    "add_columns": (None, lambda uri, o: _open(uri, o).add_columns({"twice": "id * 2"})),
    "drop_columns": (None, lambda uri, o: _open(uri, o).drop_columns(["x"])),
    "alter_columns": (None, lambda uri, o: _open(uri, o).alter_columns({"path": "s", "name": "label"})),
    "compaction": (None, lambda uri, o: _open(uri, o).optimize.compact_files()),
    "scalar index": (None, lambda uri, o: _open(uri, o).create_scalar_index("id", "BTREE")),
    "vector index": (None, lambda uri, o: _open(uri, o).create_index("vec", "IVF_FLAT", num_partitions=2)),
    "optimize indices": (
        lambda uri, o: (_open(uri, o).create_scalar_index("id", "BTREE"),
                        lance_core.write_dataset(_rows(1000, 100), uri, mode="append", storage_options=o)),
        lambda uri, o: _open(uri, o).optimize.optimize_indices()),
    "config": (None, lambda uri, o: _open(uri, o).update_config({"team": "faults"})),
    "restore": (
        lambda uri, o: lance_core.write_dataset(_rows(1000, 100), uri, mode="append", storage_options=o),
        lambda uri, o: _open(uri, o).checkout_version(1).restore()),
    "distributed commit": (None, _commit_fragments),
}

# Faults on the commit's manifest write that leave its outcome open to the writer.
COMMIT_FAULTS = [LOST, RESET, DROPPED]


def _state(uri, opts):
    ds = lance_core.dataset(uri, storage_options=opts)
    return ds.version, ds.to_table().sort_by("id")


def _check_same(uri, opts, local):
    """The table at `uri` holds what the fault-free copy at `local` holds, read by both
    libraries, with every file its versions name present."""
    version, table = _state(uri, opts)
    want_version, want = _state(local, None)
    assert version == want_version, f"{uri}: version {version}, the fault-free copy has {want_version}"
    assert table.equals(want), f"{uri}: rows differ from the fault-free copy"
    ref = lance.dataset(uri, storage_options=opts)
    assert ref.version == version
    assert ref.to_table().sort_by("id").equals(want), f"{uri}: pylance reads other rows"
    assert len(lance.dataset(uri, storage_options=opts).versions()) == len(lance_core.dataset(local).versions())


def _prepare_both(server, tmp_path, name):
    """The same starting table in S3 (written without the proxy) and on local disk."""
    n = next(_names)
    uri, local = f"s3://bucket/faults-{n}.lance", str(tmp_path / f"faults-{n}.lance")
    prep, op = WRITERS[name]
    for u, o in ((uri, server.options()), (local, None)):
        if name != "create":
            lance_core.write_dataset(_rows(0, 1000), u, storage_options=o, max_rows_per_file=500)
        if prep:
            prep(u, o)
    return uri, local, op


@pytest.mark.parametrize("kind", COMMIT_FAULTS)
@pytest.mark.parametrize("name", list(WRITERS))
def test_a_commit_whose_answer_is_lost_is_applied_once(server, tmp_path, name, kind):
    uri, local, op = _prepare_both(server, tmp_path, name)
    faults = Faults().add(kind, "PUT", "/_versions/")
    with _through(server, faults) as opts:
        op(uri, opts)
    assert faults.count(kind) == 1, faults.injected
    op(local, None)
    _check_same(uri, server.options(), local)


@pytest.mark.parametrize("name", list(WRITERS))
def test_every_writer_survives_every_fault_kind(server, tmp_path, name):
    """Each kind of fault on a request every writer makes, and faults at random on every
    request (reads, data files, transactions, manifests)."""
    uri, local, op = _prepare_both(server, tmp_path, name)
    faults = every_kind(seed=sum(map(ord, name)))
    with _through(server, faults) as opts:
        op(uri, opts)
    assert faults.kinds() >= set(KINDS) - ({TRUNCATED, DROPPED} if name == "create" else set()), faults.injected
    op(local, None)
    _check_same(uri, server.options(), local)


def test_a_commit_that_cannot_read_its_manifest_back_finds_it_on_the_next_try(server, tmp_path):
    """The manifest's write happens but its answer is lost, and so are the answers to
    reading it back: the commit tries again, finds that version holds its transaction,
    and stops there."""
    uri, local, op = _prepare_both(server, tmp_path, "append")
    second = "/_versions/18446744073709551613.manifest"  # version 2, as v2 manifest paths name it
    faults = Faults().add(RESET, "PUT", second).add(DROPPED, "GET", second, times=2)
    with _through(server, faults, client_max_retries="1") as opts:
        op(uri, opts)
    assert [k for k, _, _ in faults.injected] == [RESET, DROPPED, DROPPED], faults.injected
    op(local, None)
    _check_same(uri, server.options(), local)


def test_reads_survive_faults(server, tmp_path):
    uri = "s3://bucket/faults-reads.lance"
    lance.write_dataset(_rows(0, 20_000), uri, storage_options=server.options(), max_rows_per_file=5000)
    want = _rows(0, 20_000)
    rates = {THROTTLE: 0.1, ERROR: 0.05, RESET: 0.05, DROPPED: 0.05, SLOW: 0.02, TRUNCATED: 0.1}
    faults = Faults(seed=7, rates=rates, slow_delay=0.05)
    with _through(server, faults) as opts:
        for _ in range(5):
            ds = lance_core.dataset(uri, storage_options=opts)
            assert ds.to_table().sort_by("id").equals(want)
            assert ds.to_table(filter="id >= 19990")["id"].to_pylist() == list(range(19990, 20000))
            assert ds.take([0, 7000, 19999])["id"].to_pylist() == [0, 7000, 19999]
            assert ds.count_rows("x < 10") == 20
    assert faults.count(TRUNCATED) and faults.count(THROTTLE), faults.injected


def test_a_tag_whose_answer_is_lost_counts_as_created(server):
    uri = f"s3://bucket/faults-tag-{next(_names)}.lance"
    lance_core.write_dataset(_rows(0, 100), uri, storage_options=server.options())
    faults = Faults().add(LOST, "PUT", "/_refs/tags/")
    with _through(server, faults) as opts:
        _open(uri, opts).tags.create("first", 1)
    assert faults.count(LOST) == 1
    assert lance.dataset(uri, storage_options=server.options()).tags.list()["first"]["version"] == 1
    # Another writer's tag of the same name is still refused.
    with pytest.raises(lance_core.InvalidInputError, match="already exists"):
        _open(uri, server.options()).tags.create("first", 1)


def test_cleanup_takes_a_lost_answer_to_a_delete_as_done(server):
    uri = f"s3://bucket/faults-cleanup-{next(_names)}.lance"
    opts = server.options()
    for i in range(4):
        lance_core.write_dataset(_rows(i * 100, 100), uri, storage_options=opts, mode="append" if i else "create")
    faults = Faults().add(LOST, "DELETE", "", times=3).add(LOST, "POST", "", times=3)
    with _through(server, faults) as faulty:
        _open(uri, faulty).cleanup_old_versions(older_than=datetime.timedelta(0))
    assert faults.count(LOST) >= 1, faults.injected
    ds = lance.dataset(uri, storage_options=opts)
    assert [v["version"] for v in ds.versions()] == [4]
    assert ds.to_table().sort_by("id")["id"].to_pylist() == list(range(400))


def test_a_fault_that_outlasts_the_retries_says_whether_the_write_was_applied(server):
    uri = f"s3://bucket/faults-outlast-{next(_names)}.lance"
    opts = server.options()
    lance_core.write_dataset(_rows(0, 100), uri, storage_options=opts)

    # Data files cannot be written: nothing was committed, nothing is left behind.
    before = set(_objects(server, uri))
    faults = Faults().add(THROTTLE, "PUT", "/data/", times=100)
    with _through(server, faults, client_max_retries="1") as faulty:
        with pytest.raises(lance_core.LanceIOError) as err:
            lance_core.write_dataset(_rows(100, 100), uri, mode="append", storage_options=faulty)
    assert not isinstance(err.value, lance_core.OutcomeUnknownError)
    assert "safe to retry" in str(err.value), err.value
    assert set(_objects(server, uri)) == before
    assert lance.dataset(uri, storage_options=opts).version == 1

    # The manifest's write never answers: the outcome is unknown, the files stay.
    faults = Faults().add(DROPPED, "PUT", "/_versions/", times=100)
    with _through(server, faults, client_max_retries="1") as faulty:
        with pytest.raises(lance_core.OutcomeUnknownError) as err:
            lance_core.write_dataset(_rows(100, 100), uri, mode="append", storage_options=faulty)
    assert "_versions/" in str(err.value) and "may or may not" in str(err.value), err.value
    new = set(_objects(server, uri)) - before
    assert any(k.startswith("data/") for k in new), new
    ds = lance.dataset(uri, storage_options=opts)
    assert ds.version == 1 and ds.count_rows() == 100


def _objects(server, uri):
    import boto3

    prefix = uri.removeprefix("s3://bucket/") + "/"
    client = boto3.client("s3", endpoint_url=server.endpoint, aws_access_key_id="key",
                          aws_secret_access_key="secret", region_name="us-east-1")
    pages = client.get_paginator("list_objects_v2").paginate(Bucket="bucket", Prefix=prefix)
    return [o["Key"][len(prefix):] for page in pages for o in page.get("Contents", [])]

