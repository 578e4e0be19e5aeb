"""Stores other than the local disk: file:// URIs, memory://, and s3:// (against a local
moto server) with storage_options passed through."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_core
from conftest import assert_same
from lance_core import _lance_core


def _table(n=3000):
    return pa.table({"id": pa.array(range(n), pa.int64()), "s": pa.array([f"v{i}" for i in range(n)])})


def test_file_uri(tmp_uri):
    lance.write_dataset(_table(), tmp_uri)
    assert_same(lance_core.dataset("file://" + tmp_uri).to_table(), lance.dataset(tmp_uri).to_table(), "file://")


def test_memory_store(tmp_uri):
    lance.write_dataset(_table(), tmp_uri, max_rows_per_file=1000)
    lance.dataset(tmp_uri).delete("id % 5 = 0")
    copied = _lance_core._copy_tree(tmp_uri, "memory://bucket/ds")
    assert copied >= 5
    ours = lance_core.dataset("memory://bucket/ds")
    assert ours.uri == "memory://bucket/ds"
    assert_same(ours.to_table(), lance.dataset(tmp_uri).to_table(), "memory://")
    with pytest.raises(lance_core.DatasetNotFoundError):
        lance_core.dataset("memory://bucket/missing")


@pytest.fixture(scope="module")
def s3():
    from s3_proxy import S3Server

    srv = S3Server()
    yield srv.options()
    srv.stop()


def test_s3_with_storage_options(s3):
    uri = "s3://bucket/table.lance"
    lance.write_dataset(_table(), uri, storage_options=s3, max_rows_per_file=1000)
    lance.write_dataset(_table(500), uri, storage_options=s3, mode="append")
    ref = lance.dataset(uri, storage_options=s3)
    ours = lance_core.dataset(uri, storage_options=s3)
    assert ours.version == 2
    assert_same(ours.to_table(), ref.to_table(), "s3")
    assert ours.count_rows() == 3500
    with pytest.raises(lance_core.DatasetNotFoundError):
        lance_core.dataset("s3://bucket/none.lance", storage_options=s3)


def test_s3_all_null_pages(s3):
    """All-null columns (pages with empty buffers) read from an object store, which refuses
    empty byte ranges: written by pylance and by lance_core, in both file versions."""
    t = pa.table({"id": pa.array(range(50), pa.int64()),
                  "s": pa.array([None] * 50, pa.struct([("a", pa.int8()), ("b", pa.string())])),
                  "l": pa.array([None] * 50, pa.list_(pa.int32()))})
    for version in ("2.1", "2.2"):
        theirs, ours = f"s3://bucket/nulls-ref-{version}.lance", f"s3://bucket/nulls-ours-{version}.lance"
        lance.write_dataset(t, theirs, storage_options=s3, data_storage_version=version)
        lance_core.write_dataset(t, ours, storage_options=s3, data_storage_version=version)
        for uri in (theirs, ours):
            assert_same(lance_core.dataset(uri, storage_options=s3).to_table(), t, uri)
            assert_same(lance.dataset(uri, storage_options=s3).to_table(), t, uri)
