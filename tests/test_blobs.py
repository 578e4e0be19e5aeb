"""Blob columns read as files: `take_blobs` returns a `BlobFile` per row (None for a NULL
blob) whose bytes are pylance's for every layout pylance 14 writes: blob v1 (format 2.1)
and blob v2 (2.2: inline, packed and dedicated sidecar files, external URIs), selected by
index, row id or address, after deletions, with stable row ids, locally and on S3; the
file object reads lazily, seeks, and works where Python expects a binary file."""

from __future__ import annotations

import io
import os
import zipfile

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lance import Blob, blob_array, blob_field

import lance_core
from lance_core.errors import InvalidInputError


def _v1_table(n: int = 12) -> pa.Table:
    schema = pa.schema([pa.field("id", pa.int64()),
                        pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])
    values = [bytes([i % 251]) * (i * 997) if i % 4 else None for i in range(n)]
    values[5] = b""
    return pa.table({"id": pa.array(range(n), pa.int64()), "b": pa.array(values, pa.large_binary())},
                    schema=schema)


def _zip_bytes() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("a.txt", "alpha" * 1000)
        z.writestr("b/c.txt", "charlie")
    return buf.getvalue()


def _v2_table(tmp_path) -> "tuple[pa.Table, list]":
    external = tmp_path / "external.bin"
    external.write_bytes(os.urandom(100_000))
    uri = external.resolve().as_uri()
    values = [b"small inline", None, b"", Blob.from_uri(uri, position=10, size=500),
              os.urandom(200_000), os.urandom(5 << 20), uri, _zip_bytes()]
    schema = pa.schema([pa.field("id", pa.int64()), blob_field("b")])
    table = pa.table({"id": pa.array(range(len(values)), pa.int64()), "b": blob_array(values)}, schema=schema)
    return table, values


def _same_blobs(ours, theirs):
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert (a is None) == (b is None), i
        if a is not None:
            assert a.size() == b.size(), i
            assert a.readall() == b.readall(), i


@pytest.mark.parametrize("stable", [False, True])
def test_blob_v1_as_pylance(tmp_path, stable):
    path = str(tmp_path / "v1")
    ref = lance.write_dataset(_v1_table(), path, data_storage_version="2.1", enable_stable_row_ids=stable,
                              max_rows_per_file=5)
    ref.delete("id = 2")
    ref = lance.dataset(path)
    ours = lance_core.dataset(path)
    rows = list(range(ours.count_rows()))
    _same_blobs(ours.take_blobs("b", indices=rows), ref.take_blobs("b", indices=rows))
    ids = ref.to_table(with_row_id=True)["_rowid"].to_pylist()
    _same_blobs(ours.take_blobs("b", ids=ids[::-1]), ref.take_blobs("b", ids=ids[::-1]))
    addresses = ref.to_table(with_row_address=True)["_rowaddr"].to_pylist()
    _same_blobs(ours.take_blobs("b", addresses=addresses), ref.take_blobs("b", addresses=addresses))
    blob = ours.take_blobs("b", indices=[2])[0]  # id 3 (id 2 is deleted)
    assert blob.kind == "inline" and blob.size() == 3 * 997


def test_blob_v2_every_kind(tmp_path):
    table, values = _v2_table(tmp_path)
    path = str(tmp_path / "v2")
    ref = lance.write_dataset(table, path, data_storage_version="2.2", allow_external_blob_outside_bases=True)
    ours = lance_core.dataset(path)
    rows = list(range(len(values)))
    blobs = ours.take_blobs("b", indices=rows)
    _same_blobs(blobs, ref.take_blobs("b", indices=rows))
    for b in blobs:
        if b is not None:
            b.seek(0)  # _same_blobs read them to the end
    kinds = [b.kind if b is not None else None for b in blobs]
    assert kinds == ["inline", None, "inline", "external", "packed", "dedicated", "external", "inline"]
    assert blobs[3].readall() == (tmp_path / "external.bin").read_bytes()[10:510]
    assert blobs[5].uri is None and blobs[6].uri.startswith("file://")
    assert blobs[4].readall() == values[4] and blobs[5].readall() == values[5]
    # a zip archive stored as a blob opens in place
    with zipfile.ZipFile(ours.take_blobs("b", indices=[7])[0]) as z:
        assert z.read("b/c.txt") == b"charlie" and len(z.read("a.txt")) == 5000


def test_blob_file_reads_lazily_and_seeks(tmp_path):
    table, values = _v2_table(tmp_path)
    path = str(tmp_path / "v2")
    lance.write_dataset(table, path, data_storage_version="2.2", allow_external_blob_outside_bases=True)
    big = values[5]
    with lance_core.dataset(path).take_blobs("b", indices=[5], buffer_size=64 * 1024)[0] as f:
        assert f.seekable() and f.readable() and f.tell() == 0
        assert f.read(10) == big[:10] and f.tell() == 10
        f.seek(-100, io.SEEK_END)
        assert f.read() == big[-100:] and f.read(5) == b""
        f.seek(4096)
        buf = bytearray(1000)
        assert f.readinto(buf) == 1000 and bytes(buf) == big[4096:5096]
        f.seek(10, io.SEEK_CUR)
        assert f.read(3) == big[5106:5109]
        assert f.read_range(123, 4) == big[123:127] and f.tell() == 5109
        assert f.read_ranges([(0, 2), (len(big) - 2, 2)]) == [big[:2], big[-2:]]
        with pytest.raises(InvalidInputError, match="past the end"):
            f.read_range(len(big) - 1, 2)
        with pytest.raises(ValueError):
            f.seek(-1)
    assert f.closed
    with pytest.raises(ValueError):
        f.read(1)
    raw = lance_core.dataset(path).take_blobs("b", indices=[5])[0]
    raw.seek(5109)
    assert io.BufferedReader(raw, buffer_size=4096).read(7) == big[5109:5116]


def test_take_blobs_errors(tmp_path):
    path = str(tmp_path / "v1")
    lance.write_dataset(_v1_table(), path, data_storage_version="2.1")
    ds = lance_core.dataset(path)
    with pytest.raises(InvalidInputError, match="'id' is not a blob column"):
        ds.take_blobs("id", indices=[0])
    with pytest.raises(InvalidInputError, match="no column 'nope'"):
        ds.take_blobs("nope", indices=[0])
    with pytest.raises(InvalidInputError, match="exactly one"):
        ds.take_blobs("b", indices=[0], ids=[0])
    with pytest.raises(InvalidInputError, match="exactly one"):
        ds.take_blobs("b")
    with pytest.raises(InvalidInputError):
        ds.take_blobs("b", indices=[100])


def test_blobs_on_s3(tmp_path):
    from s3_proxy import S3Server

    server = S3Server()
    try:
        opts = server.options()
        uri = "s3://bucket/blobs-v2.lance"
        big = os.urandom(5 << 20)
        table = pa.table({"id": pa.array([0, 1, 2], pa.int64()),
                          "b": blob_array([b"inline bytes", big, None])},
                         schema=pa.schema([pa.field("id", pa.int64()), blob_field("b")]))
        lance.write_dataset(table, uri, data_storage_version="2.2", storage_options=opts)
        v1 = "s3://bucket/blobs-v1.lance"
        lance.write_dataset(_v1_table(), v1, data_storage_version="2.1", storage_options=opts)
        ours = lance_core.dataset(uri, storage_options=opts).take_blobs("b", indices=[0, 1, 2])
        assert ours[0].readall() == b"inline bytes" and ours[2] is None
        assert ours[1].kind == "dedicated"
        ours[1].seek(1 << 20)
        assert ours[1].read(100) == big[(1 << 20):(1 << 20) + 100]
        _same_blobs(lance_core.dataset(v1, storage_options=opts).take_blobs("b", indices=list(range(12))),
                    lance.dataset(v1, storage_options=opts).take_blobs("b", indices=list(range(12))))
    finally:
        server.stop()


def test_scan_blob_handling_all_binary(tmp_path):
    table, values = _v2_table(tmp_path)
    paths = {"v1": str(tmp_path / "v1"), "v2": str(tmp_path / "v2")}
    lance.write_dataset(_v1_table(), paths["v1"], data_storage_version="2.1", max_rows_per_file=5)
    lance.write_dataset(table, paths["v2"], data_storage_version="2.2", allow_external_blob_outside_bases=True)
    for path in paths.values():
        ref, ours = lance.dataset(path), lance_core.dataset(path)
        theirs = ref.to_table(blob_handling="all_binary")
        got = ours.to_table(blob_handling="all_binary")
        assert got.schema == theirs.schema and got.equals(theirs)
        assert got.schema.field("b").type == pa.large_binary()
        # in batches, filtered, with row addresses asked for, and as descriptors (the default)
        reader = ours.scanner(blob_handling="all_binary", batch_size=2, filter="id >= 1",
                              with_row_address=True).to_reader()
        assert reader.schema.names == ["id", "b", "_rowaddr"]
        assert pa.Table.from_batches(list(reader)).select(["id", "b"]).equals(
            ref.to_table(blob_handling="all_binary", filter="id >= 1"))
        for default in (None, "blobs_descriptions"):
            assert ours.to_table(blob_handling=default).schema.field("b").equals(
                ref.to_table(blob_handling=default).schema.field("b"), check_metadata=True)
    assert lance_core.dataset(paths["v2"]).to_table(blob_handling="all_binary")["b"].to_pylist()[5] == values[5]
    with pytest.raises(InvalidInputError, match="blob_handling"):
        lance_core.dataset(paths["v1"]).to_table(blob_handling="bytes")


def test_blob_v1_written_as_pylance_reads_it(tmp_path):
    """lance_core writes blob v1 columns (format 2.1): values out of line in the data file,
    descriptors in the page; pylance reads the bytes back and takes them as files."""
    big = os.urandom(3 << 20)
    values = [b"first", None, b"", big, bytes(range(256)) * 40, None]
    schema = pa.schema([pa.field("id", pa.int64()),
                        pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])
    table = pa.table({"id": pa.array(range(len(values)), pa.int64()), "b": pa.array(values, pa.large_binary())},
                     schema=schema)
    path = str(tmp_path / "ours")
    lance_core.write_dataset(table, path, data_storage_version="2.1", max_rows_per_file=4)
    lance_core.write_dataset(table, path, mode="append")
    ref = lance.dataset(path)
    assert ref.to_table(blob_handling="all_binary")["b"].to_pylist() == values * 2
    assert ref.to_table()["b"].type == pa.struct([("position", pa.uint64()), ("size", pa.uint64())])
    rows = list(range(2 * len(values)))
    _same_blobs(lance_core.dataset(path).take_blobs("b", indices=rows), ref.take_blobs("b", indices=rows))
    blob = ref.take_blobs("b", indices=[3])[0]
    blob.seek(1 << 20)
    assert blob.read(16) == big[(1 << 20):(1 << 20) + 16]
    # pylance's descriptors of ours are its own: nulls, the empty value
    theirs = pa.table({"id": table["id"], "b": table["b"]}, schema=schema)
    lance.write_dataset(theirs, str(tmp_path / "theirs"), data_storage_version="2.1")
    mine = ref.to_table(limit=len(values))["b"]
    assert [v is None for v in mine.to_pylist()] == \
        [v is None for v in lance.dataset(str(tmp_path / "theirs")).to_table()["b"].to_pylist()]
    # a single file with a blob column, through the file API
    import lance.file as ref_file
    import lance_core.file as our_file
    with our_file.LanceFileWriter(str(tmp_path / "f.lance"), schema, version="2.1") as w:
        w.write_batch(table)
    # both file readers return a blob column's bytes
    got = ref_file.LanceFileReader(str(tmp_path / "f.lance")).read_all().to_table()
    assert got["b"].to_pylist() == values
    ours = our_file.LanceFileReader(str(tmp_path / "f.lance"))
    assert ours.read_all().to_table().equals(got)
    assert ours.take_rows([0, 3]).to_table()["b"].to_pylist() == [values[0], values[3]]
    assert ours.read_range(2, 3).to_table()["b"].to_pylist() == values[2:5]


def test_blob_v1_in_format_22_is_refused(tmp_path):
    schema = pa.schema([pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])
    table = pa.table({"b": pa.array([b"x"], pa.large_binary())}, schema=schema)
    with pytest.raises(lance_core.errors.UnsupportedFeatureError, match="'b' in format 2.2"):
        lance_core.write_dataset(table, str(tmp_path / "t"), data_storage_version="2.2")
    assert not os.path.exists(tmp_path / "t" / "_versions")


def test_rewrites_of_blob_tables_are_refused_without_loss(tmp_path):
    """Update and compaction would copy rows' descriptors, not their bytes: until they copy
    blobs, they are refused and the table stays as it was."""
    path = str(tmp_path / "t")
    lance_core.write_dataset(_v1_table(), path, data_storage_version="2.1", max_rows_per_file=3)
    before = lance.dataset(path).to_table(blob_handling="all_binary")
    ds = lance_core.dataset(path)
    with pytest.raises(lance_core.errors.UnsupportedFeatureError, match="update of a table with blob column 'b'"):
        ds.update({"id": "id + 100"}, where="id = 3")
    with pytest.raises(lance_core.errors.UnsupportedFeatureError, match="compaction of a table with blob column"):
        ds.optimize.compact_files()
    ds.delete("id = 1")
    after = lance.dataset(path).to_table(blob_handling="all_binary")
    assert after.equals(before.filter(pc.not_equal(before["id"], 1)))
