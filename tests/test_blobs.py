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


def test_blob_v1_column_in_format_22_becomes_v2_as_in_pylance(tmp_path):
    """A large_binary column marked `lance-encoding:blob` written in format 2.2 is a blob
    v2 column `{data, uri}`, as pylance 14 makes it; appending bytes to it works."""
    schema = pa.schema([pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])
    values = [b"a" * 10, None, b"", os.urandom(300_000)]
    table = pa.table({"b": pa.array(values, pa.large_binary())}, schema=schema)
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    lance_core.write_dataset(table, ours)
    lance.write_dataset(table, theirs)
    assert _layout(ours) == _layout(theirs)
    lance_core.write_dataset(table, ours, mode="append")
    rows = list(range(2 * len(values)))
    got = [None if b is None else b.readall() for b in lance.dataset(ours).take_blobs("b", indices=rows)]
    assert got == values * 2
    _same_blobs(lance_core.dataset(ours).take_blobs("b", indices=rows), lance.dataset(ours).take_blobs("b", indices=rows))


def _layout(path: str):
    """The table's schema (with field metadata) and its data files' field ids, as pylance
    reads them."""
    ds = lance.dataset(path)
    return ds.schema, [(f.fields, f.column_indices) for fr in ds.get_fragments() for f in fr.data_files()]


def _descriptors(path: str) -> list:
    """Each row's blob descriptor as pylance reads it, positions of inline blobs left out
    (they depend on the other columns' pages)."""
    out = []
    for d in lance.dataset(path).to_table(columns=["b"])["b"].to_pylist():
        if d is not None and d["kind"] == 0:
            d = dict(d, position=None)
        out.append(d)
    return out


def _sidecars(path: str) -> list:
    """(sidecar file name, size) of every `.blob` file under data/, sorted."""
    return sorted((f, os.path.getsize(os.path.join(d, f)))
                  for d, _, fs in os.walk(os.path.join(path, "data")) for f in fs if f.endswith(".blob"))


def test_blob_v2_written_as_pylance_writes_it(tmp_path):
    """lance_core writes blob v2 (format 2.2) as pylance 14 does: the same descriptors
    (inline, packed, dedicated, external with and without a range; NULL and empty), the
    same sidecar files, and bytes both libraries read back equal."""
    table, values = _v2_table(tmp_path)
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    lance_core.write_dataset(table, ours, allow_external_blob_outside_bases=True)
    lance.write_dataset(table, theirs, data_storage_version="2.2", allow_external_blob_outside_bases=True)
    assert _descriptors(ours) == _descriptors(theirs)
    assert _sidecars(ours) == _sidecars(theirs)
    assert _layout(ours) == _layout(theirs)
    rows = list(range(len(values)))
    _same_blobs(lance.dataset(ours).take_blobs("b", indices=rows), lance.dataset(theirs).take_blobs("b", indices=rows))
    _same_blobs(lance_core.dataset(ours).take_blobs("b", indices=rows), lance.dataset(ours).take_blobs("b", indices=rows))
    # lance_core's own blob helpers build the same column as pylance's
    from lance_core.blob import Blob as OurBlob, blob_array as our_array, blob_field as our_field
    ext = (tmp_path / "external.bin").resolve().as_uri()
    mine = [OurBlob.from_uri(ext, position=10, size=500) if isinstance(v, Blob) else v for v in values]
    assert our_array(mine).storage.equals(table["b"].combine_chunks().storage)
    assert our_field("b").type.storage_type == blob_field("b").type.storage_type
    ours2 = str(tmp_path / "ours2")
    lance_core.write_dataset(pa.table({"id": table["id"], "b": our_array(mine)}), ours2,
                             allow_external_blob_outside_bases=True)
    assert _descriptors(ours2) == _descriptors(theirs)
    assert lance.dataset(ours2).to_table(blob_handling="all_binary")["b"].to_pylist() == \
        lance.dataset(theirs).to_table(blob_handling="all_binary")["b"].to_pylist()


def test_blob_v2_thresholds_and_pack_files(tmp_path):
    """The field's thresholds (pylance's blob_field arguments) and the write's pack file
    size decide where each value goes, as in pylance."""
    sizes = [50, 150, 900, 4_000, 9_000, 20_000, 7_000, 8_000, 30]
    values = [os.urandom(n) for n in sizes]
    field = blob_field("b", inline_size_threshold=100, dedicated_size_threshold=10_000,
                       pack_file_size_threshold=12_000)
    table = pa.table({"b": blob_array(values)}, schema=pa.schema([field]))
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    lance_core.write_dataset(table, ours)
    lance.write_dataset(table, theirs, data_storage_version="2.2")
    assert _descriptors(ours) == _descriptors(theirs)
    assert _sidecars(ours) == _sidecars(theirs)
    # packs of at most 12 kB: [150, 900, 4000], [9000], [7000], [8000]; 20000 dedicated
    assert sorted(n for _, n in _sidecars(ours)) == [5050, 7000, 8000, 9000, 20000]
    rows = list(range(len(values)))
    assert [b.readall() for b in lance.dataset(ours).take_blobs("b", indices=rows)] == values
    # the write's pack size when the field sets none
    plain = pa.table({"b": blob_array(values)}, schema=pa.schema([blob_field("b", inline_size_threshold=100)]))
    ours, theirs = str(tmp_path / "ours2"), str(tmp_path / "theirs2")
    lance_core.write_dataset(plain, ours, blob_pack_file_size_threshold=10_000)
    lance.write_dataset(plain, theirs, data_storage_version="2.2", blob_pack_file_size_threshold=10_000)
    assert _descriptors(ours) == _descriptors(theirs) and _sidecars(ours) == _sidecars(theirs)


def test_blob_v2_external_uris_and_bad_input(tmp_path):
    """External URIs are refused outside the table's base paths unless allowed, as in
    pylance; ingest copies their bytes in. Bad blobs and settings name what is wrong, and
    leave no table behind."""
    source = tmp_path / "photo.bin"
    payload = os.urandom(80_000)
    source.write_bytes(payload)
    uri = source.resolve().as_uri()
    table = pa.table({"b": blob_array([uri, Blob.from_uri(uri, position=5, size=20), b"inline"])})
    path = str(tmp_path / "t")
    with pytest.raises(InvalidInputError, match="outside the table's base paths"):
        lance_core.write_dataset(table, path)
    assert not os.path.exists(os.path.join(path, "_versions"))
    lance_core.write_dataset(table, path, external_blob_mode="ingest")
    got = lance_core.dataset(path).take_blobs("b", indices=[0, 1, 2])
    assert [b.kind for b in got] == ["packed", "inline", "inline"]
    assert [b.readall() for b in got] == [payload, payload[5:25], b"inline"]
    assert [b.readall() for b in lance.dataset(path).take_blobs("b", indices=[0, 1, 2])] == \
        [payload, payload[5:25], b"inline"]
    with pytest.raises(InvalidInputError, match="'ingest'"):
        lance_core.write_dataset(table, str(tmp_path / "u"), external_blob_mode="ingest",
                                 allow_external_blob_outside_bases=True)
    with pytest.raises(InvalidInputError, match="external_blob_mode"):
        lance_core.write_dataset(table, str(tmp_path / "u"), external_blob_mode="copy")
    bad_field = pa.field("b", blob_field("b").type, metadata={"lance-encoding:blob-dedicated-size-threshold": "-3"})
    with pytest.raises(InvalidInputError, match="field 'b'.*blob-dedicated-size-threshold"):
        lance_core.write_dataset(pa.table({"b": blob_array([b"x"])}, schema=pa.schema([bad_field])),
                                 str(tmp_path / "u"))
    both = pa.StructArray.from_arrays(
        [pa.array([b"x"], pa.large_binary()), pa.array([uri]), pa.array([None], pa.uint64()),
         pa.array([None], pa.uint64())], names=["data", "uri", "position", "size"])
    both = pa.ExtensionArray.from_storage(blob_field("b").type, both)
    with pytest.raises(InvalidInputError, match="blob column 'b': row 0 sets both data and uri"):
        lance_core.write_dataset(pa.table({"b": both}), str(tmp_path / "u"))
    with pytest.raises(lance_core.errors.UnsupportedFeatureError, match="blob v2 field 'b' in format 2.1"):
        lance_core.write_dataset(pa.table({"b": blob_array([b"x"])}), str(tmp_path / "u"),
                                 data_storage_version="2.1")
    assert not os.path.exists(tmp_path / "u" / "_versions")
    from lance_core.blob import Blob as OurBlob, blob_field as our_field
    for bad in (lambda: OurBlob(), lambda: OurBlob(data=b"x", uri="s3://b/k"),
                lambda: OurBlob.from_uri("s3://b/k", position=1), lambda: OurBlob.from_uri("s3://b/k", 0, 0)):
        with pytest.raises(ValueError):
            bad()
    with pytest.raises(ValueError, match="dedicated_size_threshold must be positive"):
        our_field("b", dedicated_size_threshold=0)


def test_rewrites_keep_every_blob(tmp_path):
    """Update, delete, merge_insert and compaction copy blob v1 values' bytes (not their
    descriptors) into the new files."""
    path = str(tmp_path / "t")
    lance_core.write_dataset(_v1_table(), path, data_storage_version="2.1", max_rows_per_file=3)
    expected = {r["id"]: r["b"] for r in lance.dataset(path).to_table(blob_handling="all_binary").to_pylist()}
    ds = lance_core.dataset(path)
    ds.update({"id": "id + 100"}, where="id = 3 OR id = 6")
    expected[103], expected[106] = expected.pop(3), expected.pop(6)
    ds = lance_core.dataset(path)
    ds.delete("id = 1")
    del expected[1]
    source = pa.table({"id": pa.array([7, 50], pa.int64()), "b": pa.array([b"seven", b"fifty"], pa.large_binary())},
                      schema=_v1_table().schema)
    lance_core.dataset(path).merge_insert("id").when_matched_update_all().when_not_matched_insert_all() \
        .execute(source)
    expected.update({7: b"seven", 50: b"fifty"})
    lance_core.dataset(path).optimize.compact_files()
    assert len(lance_core.dataset(path).get_fragments()) == 1
    for lib in (lance, lance_core):
        got = {r["id"]: r["b"] for r in lib.dataset(path).to_table(blob_handling="all_binary").to_pylist()}
        assert got == expected, lib.__name__
    rows = list(range(len(expected)))
    _same_blobs(lance_core.dataset(path).take_blobs("b", indices=rows), lance.dataset(path).take_blobs("b", indices=rows))


def test_rewrites_keep_every_blob_v2(tmp_path):
    """On a blob v2 table pylance wrote (every kind), update, delete, merge_insert and
    compaction keep each blob's bytes, an external blob stays a reference, and cleanup
    then removes the sidecars nothing refers to."""
    from datetime import timedelta

    table, values = _v2_table(tmp_path)
    path = str(tmp_path / "t")
    lance.write_dataset(table, path, data_storage_version="2.2", allow_external_blob_outside_bases=True,
                        max_rows_per_file=3)
    expected = dict(zip(range(len(values)), [None if b is None else b.readall() for b in
                                             lance.dataset(path).take_blobs("b", indices=list(range(len(values))))]))
    kinds = {i: (b.kind if b is not None else None) for i, b in
             zip(range(len(values)), lance_core.dataset(path).take_blobs("b", indices=list(range(len(values)))))}
    ds = lance_core.dataset(path)
    ds.update({"id": "id + 100"}, where="id IN (0, 3, 4, 5)")
    for i in (0, 3, 4, 5):
        expected[i + 100], kinds[i + 100] = expected.pop(i), kinds.pop(i)
    lance_core.dataset(path).delete("id = 1")
    del expected[1], kinds[1]
    source = pa.table({"id": pa.array([7, 50], pa.int64()), "b": blob_array([b"seven", os.urandom(90_000)])},
                      schema=table.schema)
    lance_core.dataset(path).merge_insert("id").when_matched_update_all().when_not_matched_insert_all() \
        .execute(source)
    expected[7], expected[50] = b"seven", source["b"].combine_chunks().storage.field("data")[1].as_py()
    kinds[7], kinds[50] = "inline", "packed"
    lance_core.dataset(path).optimize.compact_files()
    assert len(lance_core.dataset(path).get_fragments()) == 1
    lance_core.dataset(path).cleanup_old_versions(older_than=timedelta(0))
    for lib in (lance, lance_core):
        ds = lib.dataset(path)
        ids = ds.to_table(columns=["id"])["id"].to_pylist()
        got = ds.take_blobs("b", indices=list(range(len(ids))))
        assert {i: (None if b is None else b.readall()) for i, b in zip(ids, got)} == expected, lib.__name__
        if lib is lance_core:  # pylance's BlobFile does not say where a blob is
            assert {i: (None if b is None else b.kind) for i, b in zip(ids, got)} == kinds
    # only the sidecars of the one data file left remain
    files = [f for f in os.listdir(os.path.join(path, "data")) if f.endswith(".lance")]
    dirs = [d for d in os.listdir(os.path.join(path, "data")) if os.path.isdir(os.path.join(path, "data", d))]
    assert len(files) == 1 and dirs == [files[0][:-len(".lance")]]


def test_cleanup_removes_blob_sidecars_with_their_data_files(tmp_path):
    """pylance's blob v2 sidecar files (`data/<file>/<id>.blob`) stay while their data file
    is in a kept version, and go with it."""
    from datetime import timedelta

    path = str(tmp_path / "t")
    schema = pa.schema([pa.field("id", pa.int64()), blob_field("b")])
    big, mid = os.urandom(5 << 20), os.urandom(200_000)
    lance.write_dataset(pa.table({"id": [0, 1], "b": blob_array([mid, big])}, schema=schema), path,
                        data_storage_version="2.2")
    lance.write_dataset(pa.table({"id": [2], "b": blob_array([big])}, schema=schema), path, mode="append")

    def sidecars():
        return sorted(os.path.relpath(os.path.join(d, f), path)
                      for d, _, fs in os.walk(os.path.join(path, "data")) for f in fs if f.endswith(".blob"))

    before = sidecars()
    assert len(before) == 3
    lance_core.dataset(path).cleanup_old_versions(older_than=timedelta(0))
    assert sidecars() == before  # every data file is still in the latest version
    lance.write_dataset(pa.table({"id": [9], "b": blob_array([mid])}, schema=schema), path, mode="overwrite")
    lance_core.dataset(path).cleanup_old_versions(older_than=timedelta(0))
    after = sidecars()
    assert len(after) == 1 and not set(after) & set(before)
    assert lance.dataset(path).to_table(blob_handling="all_binary")["b"].to_pylist() == [mid]


def test_blobs_through_overwrite_restore_and_cleanup(tmp_path):
    """Overwrite, restore and cleanup keep every blob of the versions kept readable, in
    both libraries (blob v1 written by lance_core)."""
    from datetime import timedelta

    path = str(tmp_path / "t")
    first = _v1_table()
    lance_core.write_dataset(first, path, data_storage_version="2.1", max_rows_per_file=5)
    second = pa.table({"id": pa.array([100], pa.int64()), "b": pa.array([b"second"], pa.large_binary())},
                      schema=first.schema)
    lance_core.write_dataset(second, path, mode="overwrite")
    assert lance.dataset(path).to_table(blob_handling="all_binary")["b"].to_pylist() == [b"second"]
    lance_core.dataset(path, version=1).restore()
    lance_core.dataset(path).cleanup_old_versions(older_than=timedelta(0))
    for lib in (lance, lance_core):
        got = lib.dataset(path).to_table(blob_handling="all_binary")
        assert got["b"].to_pylist() == first["b"].to_pylist(), lib.__name__
    rows = list(range(len(first)))
    _same_blobs(lance_core.dataset(path).take_blobs("b", indices=rows), lance.dataset(path).take_blobs("b", indices=rows))


def test_blob_v2_in_a_single_file_is_refused(tmp_path):
    """As pylance's LanceFileWriter, ours writes blob v2 only to tables: refused, naming
    the column, with nothing left behind."""
    import lance_core.file as our_file
    table = pa.table({"b": blob_array([b"x" * 10, None])}, schema=pa.schema([blob_field("b")]))
    path = str(tmp_path / "f.lance")
    with pytest.raises(lance_core.errors.UnsupportedFeatureError, match="blob v2 column 'b' in a single file"):
        with our_file.LanceFileWriter(path, table.schema, version="2.2") as w:
            w.write_batch(table)
    assert os.listdir(tmp_path) == []


def test_read_blobs_and_ranges_as_pylance(tmp_path):
    """`read_blobs` returns whole blobs and `read_blob_ranges` byte ranges of them, with
    pylance's signatures and results, for every kind of blob v2 (and v1)."""
    table, values = _v2_table(tmp_path)
    path = str(tmp_path / "t")
    lance_core.write_dataset(table, path, allow_external_blob_outside_bases=True, max_rows_per_file=3)
    ours, ref = lance_core.dataset(path), lance.dataset(path)
    rows = [7, 0, 1, 2, 3, 4, 5, 6]
    assert ours.read_blobs("b", indices=rows) == ref.read_blobs("b", indices=rows, preserve_order=True)
    ids = ref.to_table(with_row_id=True)["_rowid"].to_pylist()
    assert ours.read_blobs("b", ids=ids[:3]) == ref.read_blobs("b", ids=ids[:3], preserve_order=True)
    requests = [(4, 0, 10), (4, 150_000, 7), (5, 1 << 20, 3), (0, 2, 4), (1, 0, 0), (3, 100, 0), (7, 0, 4)]
    got = ours.read_blob_ranges("b", requests, selector="indices")
    assert got == ref.read_blob_ranges("b", requests, selector="indices", preserve_order=True)
    assert got[2][2] == values[5][1 << 20:(1 << 20) + 3] and got[4][2] is None and got[6][2] == b"PK\x03\x04"
    with pytest.raises(InvalidInputError, match="past the end"):
        ours.read_blob_ranges("b", [(0, 5, 100)], selector="indices")
    with pytest.raises(InvalidInputError, match="selector"):
        ours.read_blob_ranges("b", [(0, 0, 1)], selector="rows")
    with pytest.raises(InvalidInputError, match="exactly one of"):
        ours.read_blobs("b", ids=[0], indices=[0])
    v1 = str(tmp_path / "v1")
    lance_core.write_dataset(_v1_table(), v1, data_storage_version="2.1")
    assert lance_core.dataset(v1).read_blobs("b", indices=[1, 2, 5]) == \
        lance.dataset(v1).read_blobs("b", indices=[1, 2, 5], preserve_order=True)


def test_to_pandas_blob_modes_as_pylance(tmp_path):
    """`to_pandas(blob_mode=...)`: BlobFile objects ("lazy", the default), bytes, or the
    descriptors, as pylance returns them; other columns as `to_table().to_pandas()`."""
    table, values = _v2_table(tmp_path)
    path = str(tmp_path / "t")
    lance_core.write_dataset(table, path, allow_external_blob_outside_bases=True)
    ours, ref = lance_core.dataset(path), lance.dataset(path)
    lazy = ours.to_pandas()
    assert list(lazy.columns) == ["id", "b"] and lazy["id"].tolist() == list(range(len(values)))
    theirs = ref.to_pandas()
    for a, b in zip(lazy["b"], theirs["b"]):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.readall() == b.readall()
    assert ours.to_pandas(blob_mode="bytes")["b"].tolist() == ref.to_pandas(blob_mode="bytes")["b"].tolist()
    assert ours.to_pandas(blob_mode="descriptions")["b"].tolist() == \
        ref.to_pandas(blob_mode="descriptions")["b"].tolist()
    only = ours.to_pandas(columns=["b"], filter="id >= 6")
    external = (tmp_path / "external.bin").read_bytes()  # row 6 is that whole file, by URI
    assert list(only.columns) == ["b"] and [f.readall() for f in only["b"]] == [external, values[7]]
    with pytest.raises(ValueError, match="blob_mode"):
        ours.to_pandas(blob_mode="eager")


def test_blob_handling_modes_match_pylance(tmp_path):
    """Each `blob_handling` returns what pylance's does, for a plain binary column beside
    a blob column, in blob v1 (2.1) and v2 (2.2) tables."""
    plain = pa.array([b"plain", None], pa.large_binary())
    v2 = pa.table({"p": plain, "b": blob_array([b"x" * 10, b"y"])},
                  schema=pa.schema([pa.field("p", pa.large_binary()), blob_field("b")]))
    v1 = pa.table({"p": plain, "b": pa.array([b"x" * 10, b"y"], pa.large_binary())},
                  schema=pa.schema([pa.field("p", pa.large_binary()),
                                    pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})]))
    for table, version in ((v2, "2.2"), (v1, "2.1")):
        path = str(tmp_path / version)
        lance_core.write_dataset(table, path, data_storage_version=version)
        for mode in ("blobs_descriptions", "all_descriptions", "all_binary"):
            assert lance_core.dataset(path).to_table(blob_handling=mode).equals(
                lance.dataset(path).to_table(blob_handling=mode)), (version, mode)


def test_managed_blobs_pylance_commits_are_read(tmp_path):
    """pylance 14's prepared blobs (`BlobDescriptorArrayBuilder.append_managed`: a range of
    an object below the table's root, kind 4) written with its file writer and committed:
    read as pylance reads them."""
    from lance.blob import BlobDescriptorArrayBuilder
    from lance.file import LanceFileWriter
    from lance.fragment import DataFile, FragmentMetadata

    root = tmp_path / "t"
    (root / "media").mkdir(parents=True)
    (root / "media" / "clip.bin").write_bytes(b"0123456789")
    builder = BlobDescriptorArrayBuilder("b")
    builder.append_inline(b"inline")
    builder.append_managed("media/clip.bin", 2, 4)
    builder.append_null()
    table = pa.table({"b": builder.finish()}, schema=pa.schema([builder.field]))
    (root / "data").mkdir()
    with LanceFileWriter(str(root / "data" / "f.lance"), table.schema, version="2.2") as w:
        w.write_batch(table)
    size = os.path.getsize(root / "data" / "f.lance")
    fragment = FragmentMetadata(0, [DataFile("f.lance", [0], [0], 2, 2, size)], 3)
    lance.LanceDataset.commit(str(root), lance.LanceOperation.Overwrite(pa.schema([blob_field("b")]), [fragment]))
    ours = lance_core.dataset(str(root))
    got = ours.take_blobs("b", indices=[0, 1, 2])
    assert [g.kind if g else None for g in got] == ["inline", "managed", None]
    assert [g.readall() if g else None for g in got] == [b"inline", b"2345", None]
    assert ours.read_blobs("b", indices=[1]) == lance.dataset(str(root)).read_blobs("b", indices=[1])
    assert ours.to_table(blob_handling="all_binary")["b"].to_pylist() == [b"inline", b"2345", None]


def test_fragments_written_then_committed_keep_blobs(tmp_path):
    """Fragments written on their own in 2.2 from a schema marking a binary column as a
    blob, then committed as an overwrite with that schema, make the table pylance would:
    the column is blob v2 in the schema as in the files."""
    schema = pa.schema([pa.field("id", pa.int64()),
                        pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])
    values = [b"small", None, os.urandom(300_000)]
    table = pa.table({"id": pa.array([0, 1, 2], pa.int64()), "b": pa.array(values, pa.large_binary())}, schema=schema)
    path = str(tmp_path / "t")
    fragments = lance_core.write_fragments(table, path, data_storage_version="2.2")
    lance_core.commit(path, lance_core.LanceOperation.Overwrite(schema, fragments))
    assert [b.readall() if b else None for b in lance.dataset(path).take_blobs("b", indices=[0, 1, 2])] == values
    assert lance_core.dataset(path).to_table(blob_handling="all_binary")["b"].to_pylist() == values


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_huge_blob_and_many_small_ones_both_ways(tmp_path, version):
    """A blob past 64 MiB (one page of its own, a dedicated sidecar in 2.2) beside 10,000
    small ones, NULLs and empties: each library reads what the other wrote, byte for byte."""
    huge = os.urandom(65 << 20) + b"end"
    small = [i.to_bytes(4, "little") * (1 + i % 50) for i in range(10_000)]
    values = small[:5000] + [huge, None, b""] + [None if i % 97 == 0 else v for i, v in enumerate(small[5000:])]
    field = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    table = pa.table({"id": pa.array(range(len(values)), pa.int64()), "b": pa.array(values, pa.large_binary())},
                     schema=pa.schema([pa.field("id", pa.int64()), field]))
    ours_path, theirs_path = str(tmp_path / "ours"), str(tmp_path / "theirs")
    lance_core.write_dataset(table, ours_path, data_storage_version=version, max_rows_per_file=6000)
    lance.write_dataset(table, theirs_path, data_storage_version=version, max_rows_per_file=6000)
    rows = list(range(len(values)))
    for reader in (lance.dataset(ours_path), lance_core.dataset(theirs_path)):
        got = reader.take_blobs("b", indices=rows)
        nulls = [i for i, f in enumerate(got) if f is None]
        assert nulls == [i for i, v in enumerate(values) if v is None]
        with got[5000] as f:  # the huge one, read in part, then whole
            f.seek(-3, io.SEEK_END)
            assert f.read() == b"end"
            f.seek(0)
            assert f.readall() == huge
        assert [None if f is None else f.readall() for f in got[:5000] + got[5001:]] == values[:5000] + values[5001:]
    # Our scan's bytes equal the input (the huge value in a batch of its own size bound).
    got = lance_core.dataset(theirs_path).to_table(columns=["b"], blob_handling="all_binary")["b"].to_pylist()
    assert got == values


def test_merge_source_uris_outside_the_bases_are_refused_as_in_pylance(tmp_path):
    """merge_insert has no allow_external_blob_outside_bases: as in pylance, a source row
    giving a blob by a URI outside the table's base paths is refused and nothing is
    committed; the same source with bytes merges."""
    external = tmp_path / "ext.bin"
    external.write_bytes(b"external bytes")
    schema = pa.schema([pa.field("id", pa.int64()), blob_field("b")])
    table = pa.table({"id": pa.array([1, 2], pa.int64()), "b": blob_array([b"x", b"y"])}, schema=schema)
    source = pa.table({"id": pa.array([2, 3], pa.int64()), "b": blob_array([external.as_uri(), b"new"])},
                      schema=schema)
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    lance_core.write_dataset(table, ours, data_storage_version="2.2")
    lance.write_dataset(table, theirs, data_storage_version="2.2")
    with pytest.raises(OSError, match="outside registered external bases"):
        lance.dataset(theirs).merge_insert("id").when_matched_update_all().when_not_matched_insert_all() \
            .execute(source)
    with pytest.raises(InvalidInputError, match="blob column 'b': external blob URI .* outside the table's base"):
        lance_core.dataset(ours).merge_insert("id").when_matched_update_all().when_not_matched_insert_all() \
            .execute(source)
    assert lance_core.dataset(ours).version == 1
    with_bytes = source.set_column(1, schema.field("b"), blob_array([b"external bytes", b"new"]))
    lance_core.dataset(ours).merge_insert("id").when_matched_update_all().when_not_matched_insert_all() \
        .execute(with_bytes)
    ds = lance_core.dataset(ours)
    assert sorted(f.readall() for f in ds.take_blobs("b", indices=range(ds.count_rows()))) == \
        [b"external bytes", b"new", b"x"]


def test_blob_column_and_buffered_file_names_as_pylance(tmp_path):
    """`BlobColumn` iterates a binary column as file objects through `BlobIterator`, as
    pylance's does (a NULL is None); `BlobFile` also answers pylance's `BufferedIOBase`
    calls."""
    from lance.blob import BlobColumn as RefBlobColumn

    column = pa.chunked_array([[b"one", None], [b"", b"four"]], pa.large_binary())
    ours = lance_core.blob.BlobColumn(column)
    it = iter(ours)
    assert isinstance(it, lance_core.blob.BlobIterator)
    got = [None if f is None else f.read() for f in it]
    assert got == [b"one", None, b"", b"four"]
    # pylance gives an empty file for a NULL (its BlobIterator tests a scalar for None);
    # lance_core gives None, as both document.
    assert [f.read() for f in RefBlobColumn(column)] == [b"one", b"", b"", b"four"]
    with pytest.raises(ValueError, match="binary"):
        lance_core.blob.BlobColumn(pa.array([1, 2]))
    path = str(tmp_path / "t")
    lance_core.write_dataset(_v1_table(), path, data_storage_version="2.1")
    ours_file = lance_core.dataset(path).take_blobs("b", indices=[3])[0]
    theirs_file = lance.dataset(path).take_blobs("b", indices=[3])[0]
    assert ours_file.read1(10) == theirs_file.read1(10)
    a, b = bytearray(7), bytearray(7)
    assert ours_file.readinto1(a) == theirs_file.readinto1(b) == 7 and a == b
    assert ours_file.read1() == theirs_file.read1()
    with pytest.raises(io.UnsupportedOperation):
        ours_file.detach()
