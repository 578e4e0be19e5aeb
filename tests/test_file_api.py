"""`lance_core.file`: single Lance files read and written with pylance's `lance.file`
names. Files pylance writes (formats 2.0, 2.1, 2.2) read as pylance reads them, with the
same metadata; files we write (2.0, 2.1, 2.2) read equal in pylance, global buffers and schema
metadata included; bad input is a clear error naming the file; the session's object
operations work locally and on an S3-compatible server."""

from __future__ import annotations

import os

import lance.file as ref
import pyarrow as pa
import pytest

import lance_core.file as lf
from lance_core.errors import (CorruptFileError, DatasetNotFoundError, InvalidInputError,
                               UnsupportedFeatureError)


def _table(n: int = 5000) -> pa.Table:
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "maybe": pa.array([None if i % 7 == 0 else i * 0.5 for i in range(n)], pa.float64()),
        "s": pa.array([f"row-{i}" if i % 11 else None for i in range(n)]),
        "tags": pa.array([[f"t{i % 5}"] * (i % 3) for i in range(n)], pa.list_(pa.string())),
        "point": pa.array([{"x": i, "y": float(-i)} for i in range(n)],
                          pa.struct([("x", pa.int32()), ("y", pa.float64())])),
        "vec": pa.array([[float(i), float(i + 1), 0.0, 1.0] for i in range(n)], pa.list_(pa.float32(), 4)),
        "cat": pa.array([["a", "b", "c"][i % 3] for i in range(n)]).dictionary_encode(),
    })


def _layout(m):
    """A file's metadata, encodings aside (the text of an encoding is each library's own
    rendering of the same protobuf)."""
    return (m.num_rows, m.num_data_bytes, m.num_column_metadata_bytes, m.num_global_buffer_bytes,
            m.major_version, m.minor_version, [(b.position, b.size) for b in m.global_buffers],
            [[[(b.position, b.size) for b in p.buffers] for p in c.pages] for c in m.columns])


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_pylance_files_read_as_pylance_reads_them(tmp_path, version):
    path = str(tmp_path / "f.lance")
    t = _table()
    with ref.LanceFileWriter(path, t.schema, version=version) as w:
        w.write_batch(t.slice(0, 3000))
        w.write_batch(t.slice(3000))
        assert w.add_global_buffer(b"side data") == 1
        w.add_schema_metadata("origin", "pylance")
    theirs, ours = ref.LanceFileReader(path), lf.LanceFileReader(path)
    assert ours.num_rows() == theirs.num_rows() == len(t)
    assert ours.read_all().to_table().equals(theirs.read_all().to_table())
    assert [b.num_rows for b in ours.read_all(batch_size=1000).to_batches()] == [1000] * 5
    assert ours.read_range(1234, 777).to_table().equals(theirs.read_range(1234, 777).to_table())
    rows = [0, 1, 13, 2999, 3000, 4999]
    assert ours.take_rows(rows).to_table().equals(theirs.take_rows(rows).to_table())
    assert [b.num_rows for b in ours.take_rows(rows, batch_size=4).to_batches()] == [4, 2]
    narrow = lf.LanceFileReader(path, columns=["s", "point"]).read_all().to_table()
    assert narrow.equals(ref.LanceFileReader(path, columns=["s", "point"]).read_all().to_table())
    assert _layout(ours.metadata()) == _layout(theirs.metadata())
    assert ours.metadata().schema == theirs.metadata().schema
    assert ours.metadata().schema.metadata[b"origin"] == b"pylance"
    assert repr(ours.file_statistics().columns) == repr(theirs.file_statistics().columns)
    assert ours.read_global_buffer(1) == theirs.read_global_buffer(1) == b"side data"
    assert ours.read_global_buffer(0) == theirs.read_global_buffer(0)


@pytest.mark.parametrize("version", [None, "2.0", "2.1", "2.2", "stable"])
def test_our_files_read_equal_in_pylance(tmp_path, version):
    path = str(tmp_path / "ours.lance")
    t = _table()
    w = lf.LanceFileWriter(path, version=version)  # the schema comes from the first batch
    assert w.add_global_buffer(b"before any row") == 1
    w.write_batch(t.slice(0, 100))
    w.write_batch(t.slice(100).to_batches()[0])
    assert w.add_global_buffer(b"\x00" * 1000) == 2
    w.add_schema_metadata("k", "v")
    assert w.close() == len(t)
    assert w.size_bytes == os.path.getsize(path)
    assert w.close() is None  # a second close does nothing
    theirs = ref.LanceFileReader(path)
    assert theirs.read_all().to_table().equals(t)
    m = theirs.metadata()
    # 2.0 files say 0.3 in their footer (pylance's metadata shows that too)
    assert (m.major_version, m.minor_version) == {"2.0": (0, 3), "2.1": (2, 1)}.get(version, (2, 2))
    assert m.schema.metadata[b"k"] == b"v"
    assert theirs.read_global_buffer(1) == b"before any row"
    assert theirs.read_global_buffer(2) == b"\x00" * 1000
    assert _layout(lf.LanceFileReader(path).metadata()) == _layout(m)
    assert theirs.take_rows([5, 4321]).to_table().equals(lf.LanceFileReader(path).take_rows([5, 4321]).to_table())


def test_field_metadata_and_page_sizes_are_honoured(tmp_path):
    n = 200_000
    schema = pa.schema([pa.field("z", pa.string(), metadata={"lance-encoding:compression": "zstd"}),
                        pa.field("n", pa.int64())])
    t = pa.table({"z": pa.array([f"text {i % 1000} " * 4 for i in range(n)]),
                  "n": pa.array(range(n), pa.int64())}, schema=schema)
    path = str(tmp_path / "z.lance")
    with lf.LanceFileWriter(path, schema, max_page_bytes=256 * 1024) as w:
        w.write_batch(t)
    m = ref.LanceFileReader(path).metadata()
    assert "Zstd" in m.columns[0].pages[0].encoding
    assert len(m.columns[0].pages) > 4 and len(m.columns[1].pages) > 4
    assert ref.LanceFileReader(path).read_all().to_table().equals(t)
    # data_cache_bytes: pages gather that much (shared by the columns) before encoding
    small = str(tmp_path / "small.lance")
    w = lf.LanceFileWriter(small, schema, data_cache_bytes=64 * 1024)
    for b in t.to_batches(max_chunksize=1000):
        w.write_batch(b)
    w.close()
    assert len(ref.LanceFileReader(small).metadata().columns[1].pages) > 10
    assert lf.LanceFileReader(small).read_all().to_table().equals(t)


def test_empty_files(tmp_path):
    schema = pa.schema([("a", pa.int64()), ("s", pa.string())])
    path = str(tmp_path / "empty.lance")
    with lf.LanceFileWriter(path, schema) as w:
        pass
    assert w.size_bytes > 0
    for reader in (ref.LanceFileReader(path), lf.LanceFileReader(path)):
        assert reader.num_rows() == 0
        assert reader.read_all().to_table().schema == schema


def test_bad_input_names_the_file(tmp_path):
    t = pa.table({"a": pa.array([1, 2, 3], pa.int64())})
    no_schema = lf.LanceFileWriter(str(tmp_path / "none.lance"))
    with pytest.raises(InvalidInputError, match="none.lance.*schema is unknown"):
        no_schema.close()
    w = lf.LanceFileWriter(str(tmp_path / "m.lance"))
    w.write_batch(t)
    with pytest.raises(InvalidInputError, match="m.lance.*no column 'a'"):
        w.write_batch(pa.table({"b": pa.array([1.0])}))
    with pytest.raises(InvalidInputError, match="'a' is Float64 in the batch but Int64"):
        w.write_batch(pa.table({"a": pa.array([1.0])}))
    assert w.close() == 3
    with pytest.raises(InvalidInputError, match="closed"):
        w.write_batch(t)
    with pytest.raises(InvalidInputError, match="closed"):
        w.add_schema_metadata("k", "v")
    for version, error in (("legacy", UnsupportedFeatureError),
                           ("next", UnsupportedFeatureError), ("bogus", InvalidInputError)):
        with pytest.raises(error, match=f"v.lance.*'{version}'"):
            lf.LanceFileWriter(str(tmp_path / "v.lance"), t.schema, version=version)
    path = str(tmp_path / "m.lance")
    r = lf.LanceFileReader(path)
    with pytest.raises(InvalidInputError, match="rows 2..7 of a file of 3 rows"):
        r.read_range(2, 5)
    with pytest.raises(InvalidInputError, match="no row 7"):
        r.take_rows([0, 7])
    with pytest.raises(InvalidInputError, match="strictly increasing"):
        r.take_rows([2, 0])
    with pytest.raises(InvalidInputError, match="no global buffer 3"):
        r.read_global_buffer(3)
    with pytest.raises(InvalidInputError, match="no column 'zz'"):
        lf.LanceFileReader(path, columns=["zz"])
    with pytest.raises(DatasetNotFoundError, match="nope.lance"):
        lf.LanceFileReader(str(tmp_path / "nope.lance"))
    data = open(path, "rb").read()
    for name, content in (("junk.lance", b"x" * 100), ("cut.lance", data[:-7]), ("short.lance", data[-20:])):
        open(tmp_path / name, "wb").write(content)
        with pytest.raises(CorruptFileError, match=name):
            lf.LanceFileReader(str(tmp_path / name))


def _session_round_trip(session: lf.LanceFileSession, local_dir: str):
    t = pa.table({"a": pa.array(range(100), pa.int64()), "s": pa.array([str(i) for i in range(100)])})
    w = session.open_writer("sub/f.lance", schema=t.schema)
    w.write_batch(t)
    assert w.close() == 100
    assert session.open_reader("sub/f.lance").read_all().to_table().equals(t)
    assert session.open_reader("sub/f.lance", columns=["s"]).read_all().to_table().column_names == ["s"]
    assert session.contains("sub/f.lance") and not session.contains("sub/g.lance")
    local = os.path.join(local_dir, "up.bin")
    payload = os.urandom(50_000)
    open(local, "wb").write(payload)
    session.upload_file(local, "blobs/up.bin")
    assert session.read_range("blobs/up.bin", 1000, 10) == payload[1000:1010]
    session.download_file("blobs/up.bin", os.path.join(local_dir, "down.bin"))
    assert open(os.path.join(local_dir, "down.bin"), "rb").read() == payload
    assert sorted(session.list()) == ["blobs/up.bin", "sub/f.lance"]
    assert session.list("sub") == ["sub/f.lance"]
    top = session.list_with_delimiter()
    assert (top.common_prefixes, top.objects) == (["blobs", "sub"], [])
    assert session.list_with_delimiter("blobs").objects == ["blobs/up.bin"]
    session.delete_file("blobs/up.bin")
    assert not session.contains("blobs/up.bin")
    with pytest.raises(DatasetNotFoundError, match="up.bin"):
        session.delete_file("blobs/up.bin")
    with pytest.raises(DatasetNotFoundError, match="missing.bin"):
        session.read_range("missing.bin", 0, 1)
    with pytest.raises(DatasetNotFoundError, match="missing.bin"):
        session.download_file("missing.bin", os.path.join(local_dir, "x"))


def test_session_local(tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    _session_round_trip(lf.LanceFileSession(str(base)), str(work))
    # pylance's session sees the same files
    assert ref.LanceFileSession(str(base)).open_reader("sub/f.lance").read_all().to_table().num_rows == 100


def test_session_and_files_on_s3(tmp_path):
    from s3_proxy import S3Server

    server = S3Server()
    try:
        opts = server.options()
        _session_round_trip(lf.LanceFileSession("s3://bucket/files", storage_options=opts), str(tmp_path))
        t = _table(2000)
        uri = "s3://bucket/files/direct.lance"
        with lf.LanceFileWriter(uri, t.schema, storage_options=opts) as w:
            w.write_batch(t)
        assert ref.LanceFileReader(uri, storage_options=opts).read_all().to_table().equals(t)
        ours = lf.LanceFileReader(uri, storage_options=opts)
        assert ours.take_rows([3, 1999]).to_table().equals(t.take([3, 1999]))
        assert _layout(ours.metadata()) == _layout(ref.LanceFileReader(uri, storage_options=opts).metadata())
    finally:
        server.stop()


def _every_type_table(n: int) -> pa.Table:
    item = pa.struct([("k", pa.string()), ("v", pa.list_(pa.int32()))])
    return pa.table({
        "b": pa.array([None if i % 5 == 0 else i % 2 == 0 for i in range(n)]),
        "i8": pa.array([i % 100 - 50 for i in range(n)], pa.int8()),
        "u64": pa.array([None if i % 3 == 0 else 2 ** 63 + i for i in range(n)], pa.uint64()),
        "f16": pa.array([None if i % 4 == 0 else i / 8 for i in range(n)], pa.float64()).cast(pa.float16()),
        "ts": pa.array([i * 1_000_003 for i in range(n)], pa.timestamp("us", tz="UTC")),
        "d": pa.array([i for i in range(n)], pa.date32()),
        "dec": pa.array([None if i % 9 == 0 else i for i in range(n)], pa.int64()).cast(pa.decimal128(25, 3)),
        "fsb": pa.array([None if i % 6 == 0 else i.to_bytes(4, "little") for i in range(n)], pa.binary(4)),
        "ls": pa.array([None if i % 8 == 0 else "x" * (i % 40) for i in range(n)], pa.large_string()),
        "bin": pa.array([bytes(range(i % 7)) for i in range(n)], pa.binary()),
        "all_null": pa.array([None] * n, pa.int32()),
        "ll": pa.array([None if i % 10 == 0 else list(range(i % 4)) for i in range(n)], pa.large_list(pa.int16())),
        "nested": pa.array([None if i % 7 == 0 else [{"k": f"k{j}", "v": [j] * j} for j in range(i % 3)]
                            for i in range(n)], pa.list_(item)),
        "deep": pa.array([{"a": {"b": None if i % 2 else i, "c": [f"s{i}"]}} for i in range(n)],
                         pa.struct([("a", pa.struct([("b", pa.int64()), ("c", pa.list_(pa.string()))]))])),
        "fsl": pa.array([None if i % 11 == 0 else [float(i), None if i % 2 else 1.0] for i in range(n)],
                        pa.list_(pa.float64(), 2)),
        "dict": pa.array([None if i % 13 == 0 else ["red", "green", "blue"][i % 3] for i in range(n)]).dictionary_encode(),
    })


def _undictionary(t: pa.Table) -> pa.Table:
    """`t` with dictionary columns as their values (a NULL row may come back as a key to
    a NULL entry, the same rows)."""
    for i, f in enumerate(t.schema):
        if pa.types.is_dictionary(f.type):
            t = t.set_column(i, f.name, t[f.name].cast(f.type.value_type))
    return t


def test_format_20_files_we_write_read_equal_in_pylance(tmp_path):
    """Every type format 2.0 stores, NULLs in each, sliced inputs and several pages per
    column: pylance reads our 2.0 file equal to the input, with the encodings pylance
    itself writes for it; a NULL struct row, a blob and a packed struct are refused."""
    t = _every_type_table(30_000)
    ours, theirs = str(tmp_path / "ours.lance"), str(tmp_path / "theirs.lance")
    with lf.LanceFileWriter(ours, t.schema, version="2.0", max_page_bytes=64 * 1024) as w:
        for start in range(0, len(t), 7000):
            w.write_batch(t.slice(start, 7000))  # slices with offsets into shared buffers
    expected = _undictionary(t)
    assert _undictionary(ref.LanceFileReader(ours).read_all().to_table()).equals(expected)
    assert _undictionary(lf.LanceFileReader(ours).read_all().to_table()).equals(expected)
    rows = [0, 1, 6999, 7000, 29_999]
    assert _undictionary(ref.LanceFileReader(ours).take_rows(rows).to_table()).equals(expected.take(rows))
    with ref.LanceFileWriter(theirs, t.schema, version="2.0", max_page_bytes=64 * 1024) as w:
        w.write_batch(t)
    assert _undictionary(lf.LanceFileReader(theirs).read_all().to_table()).equals(expected)
    m = ref.LanceFileReader(ours).metadata()
    assert len(m.columns) == len(ref.LanceFileReader(ours).metadata().columns)
    assert max(len(c.pages) for c in m.columns) > 4
    # Page for page, the encodings pylance writes for one batch of the same rows.
    small = t.slice(0, 500)
    for path, lib in ((ours, lf), (theirs, ref)):
        with lib.LanceFileWriter(path, small.schema, version="2.0") as w:
            w.write_batch(small)
    mine, pylance = ref.LanceFileReader(ours).metadata(), ref.LanceFileReader(theirs).metadata()
    differ = [i for i, (a, b) in enumerate(zip(mine.columns, pylance.columns))
              if [p.encoding for p in a.pages] != [p.encoding for p in b.pages]]
    # pylance alone dictionary-encodes a plain string column of few distinct values
    # (nested.item.k: "k0", "k1"); we write such a page as plain strings.
    assert [(i, "Binary" in mine.columns[i].pages[0].encoding,
             pylance.columns[i].pages[0].encoding.split("(")[1].strip()) for i in differ] == [(15, True, "Dictionary")]

    null_struct = pa.table({"s": pa.array([{"x": 1}, None], pa.struct([("x", pa.int32())]))})
    with pytest.raises(InvalidInputError, match="'s' holds 1 NULL.*2.0"):
        with lf.LanceFileWriter(str(tmp_path / "n.lance"), null_struct.schema, version="2.0") as w:
            w.write_batch(null_struct)
    blob = pa.schema([pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])
    with pytest.raises(UnsupportedFeatureError, match="blob field 'b' in file format 2.0"):
        with lf.LanceFileWriter(str(tmp_path / "b.lance"), blob, version="2.0") as w:
            w.write_batch(pa.table({"b": pa.array([b"x"], pa.large_binary())}, schema=blob))
