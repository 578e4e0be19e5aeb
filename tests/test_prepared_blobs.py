"""Blob v2 columns placed by their writer (pylance's prepared blobs): the packed and
dedicated sidecar writers of `LanceFileSession`, `BlobDescriptorArrayBuilder`, and a data
file of such descriptors written by `LanceFileWriter`. Each step is checked against
pylance doing the same, and the file either library writes, committed into a table with
pylance's `DataReplacement`, reads byte for byte in both."""

from __future__ import annotations

import uuid

import lance
import lance.file as ref_file
import pyarrow as pa
import pytest

import lance_core
import lance_core.file as our_file


def _sidecar(root, data_file: str, blob_id: int):
    """Where sidecar `blob_id` of `data_file` is: its id's 32 bits reversed."""
    return root / data_file.removesuffix(".lance") / (f"{blob_id:032b}"[::-1] + ".blob")


def _libs(name):
    return (our_file, lance_core) if name == "ours" else (ref_file, lance)


@pytest.mark.parametrize("writer", ["ours", "pylance"])
def test_prepared_blob_file_committed_reads_in_both(tmp_path, writer):
    files_mod, blob_mod = _libs(writer)
    uri = tmp_path / "t"
    logical = pa.schema([pa.field("id", pa.uint32(), nullable=False), lance.blob_field("blob")])
    ds = lance.write_dataset(pa.table([pa.array(range(8), pa.uint32()), lance.blob_array([b"old"] * 8)],
                                      schema=logical), uri, data_storage_version="2.2")
    (uri / "managed").mkdir()
    (uri / "managed" / "obj.bin").write_bytes(b"0123456789")
    name = f"{uuid.uuid4()}.lance"
    files = files_mod.LanceFileSession(str(uri / "data"))
    builder = blob_mod.BlobDescriptorArrayBuilder("blob")
    packed = files.open_packed_blob_writer(name, 1)
    assert packed.path.endswith(f"data/{name[:-6]}/{'1'.ljust(32, '0')}.blob")
    packed.write_blob(b"packed-one")
    packed.write_blobs(pa.array([b"two", None, b""], pa.binary()))
    builder.extend(packed.finish())
    dedicated = files.open_dedicated_blob_writer(name, 2)
    dedicated.write(b"dedi")
    dedicated.write(bytearray(b"cated"))
    builder.append(dedicated.finish())
    builder.append_inline(b"inline bytes")
    builder.append_managed("managed/obj.bin", 2, 5)
    builder.append_null()
    physical = pa.schema([pa.field("id", pa.uint32(), nullable=False), builder.field])
    batch = pa.record_batch([pa.array(range(10, 18), pa.uint32()), builder.finish()], schema=physical)
    with files.open_writer(name, schema=physical, version="2.2") as w:
        w.write_batch(batch)

    data_file = lance.fragment.DataFile.create(ds, name)
    assert (data_file.fields, data_file.column_indices) == ([0, 1], [0, 1])
    lance.LanceDataset.commit(ds, lance.LanceOperation.DataReplacement(
        [lance.LanceOperation.DataReplacementGroup(0, data_file)]), read_version=ds.version)
    want = [b"packed-one", b"two", None, b"", b"dedicated", b"inline bytes", b"23456", None]
    for reader in (lance.dataset(uri), lance_core.dataset(str(uri))):
        assert reader.to_table(columns=["id"])["id"].to_pylist() == list(range(10, 18))
        got = reader.take_blobs("blob", indices=range(8))
        assert [None if f is None else f.readall() for f in got] == want, reader


def _same_calls(lib_files, blob_mod, root):
    """The same writer calls on one library; what each returns, and the sidecars' bytes."""
    files = lib_files.LanceFileSession(str(root))
    out = []
    packed = files.open_packed_blob_writer("f.lance", 7)
    with pytest.raises(ValueError, match="available after finish_array"):
        _ = packed.field
    for payload in (b"s", bytearray(b"ab"), memoryview(b"xyz"), list(b"ints")):
        packed.write_blob(payload)
    # NULLs of binary and large_binary arrays (their bytes left out), slices, chunks,
    # views and fixed-size binaries.
    physical_null = pa.Array.from_buffers(pa.binary(), 4, [pa.py_buffer(bytes([0b00001101])),
                                                          pa.array([0, 1, 5, 5, 7], pa.int32()).buffers()[1],
                                                          pa.py_buffer(b"aJUNKbc")])
    packed.write_blobs(physical_null)
    packed.write_blobs(pa.array([b"pre", b"a", None, b"", b"bc", b"post"], pa.large_binary()).slice(1, 4))
    packed.write_blobs(pa.chunked_array([[b"c1"], [None, b"c2"]], pa.binary()))
    packed.write_blobs(pa.array([b"v1", b"view two"], pa.binary_view()))
    packed.write_blobs(pa.array([b"fx", None, b"fy"], pa.binary(2)))
    out.append(packed.finish_array("image"))
    out.append(packed.field)
    with pytest.raises(ValueError, match="already finished"):
        packed.write_blob(b"late")
    with pytest.raises(ValueError, match="already finished"):
        _ = packed.path
    dedicated = files.open_dedicated_blob_writer("f.lance", 9)
    for part in (b"one ", b"two ", b"three"):
        dedicated.write(part)
    out.append(repr(dedicated.finish()))
    builder = blob_mod.BlobDescriptorArrayBuilder("col")
    builder.append_inline(b"inl")
    builder.append_null()
    builder.append_dedicated(9, 13)
    builder.extend_packed(7, [0, 1], [1, 2])
    builder.append_managed("data/x.bin", 3, 4)
    builder.append_managed("y.bin", 1, 2, base_id=3)
    out.append(builder.field)
    out.append(builder.finish())
    sidecars = {p.name: p.read_bytes() for p in (root / "f").iterdir()}
    return out, sidecars


def test_writers_and_builder_as_pylance(tmp_path):
    ours, our_sidecars = _same_calls(our_file, lance_core, tmp_path / "ours")
    theirs, their_sidecars = _same_calls(ref_file, lance, tmp_path / "theirs")
    assert our_sidecars == their_sidecars
    assert our_sidecars[_sidecar(tmp_path, "f.lance", 7).name] == b"sabxyzintsabcabcc1c2v1view twofxfy"
    assert ours[0].type == theirs[0].type and ours[0].to_pylist() == theirs[0].to_pylist()
    assert ours[1] == theirs[1] and ours[1].metadata == theirs[1].metadata
    assert ours[2] == theirs[2] == "Dedicated { blob_id: 9, size: 13 }"
    assert ours[3] == theirs[3] and ours[3].metadata == theirs[3].metadata
    assert ours[4].type == theirs[4].type and ours[4].to_pylist() == theirs[4].to_pylist()
    session = our_file.LanceFileSession(str(tmp_path / "s"))
    w = session.open_packed_blob_writer("g.lance", 1)
    w.write_blob(b"one")
    w.write_blobs(pa.array([None, b"two"], pa.large_binary()))
    assert [repr(d) for d in w.finish()] == ["Packed { blob_id: 1, offset: 0, size: 3 }", "Null",
                                             "Packed { blob_id: 1, offset: 3, size: 3 }"]


def test_bad_writer_input_is_refused_and_the_writer_stays_usable(tmp_path):
    session = our_file.LanceFileSession(str(tmp_path))
    packed = session.open_packed_blob_writer("f.lance", 3)
    bad_offsets = pa.array([0, 2, 1, 2], pa.int32()).buffers()[1]
    malformed = pa.Array.from_buffers(pa.binary(), 3, [None, bad_offsets, pa.py_buffer(b"ab")])
    with pytest.raises(ValueError, match="Packed blob payload array is invalid Arrow data.*non-monotonic offset"):
        packed.write_blobs(malformed)
    with pytest.raises(ValueError, match="Packed blob payload chunk 1 is invalid"):
        packed.write_blobs(pa.chunked_array([pa.array([b"valid"]), malformed]))
    for not_binary in (pa.array([1, 2], pa.int32()), pa.chunked_array([[1], [2]], pa.int32()), [b"a list"]):
        with pytest.raises(ValueError, match="Binary"):
            packed.write_blobs(not_binary)
    with pytest.raises(ValueError, match="not str"):
        packed.write_blob("text")
    packed.write_blob(b"still usable")
    assert len(packed.finish_array("blob")) == 1
    assert _sidecar(tmp_path, "f.lance", 3).read_bytes() == b"still usable"
    with pytest.raises(ValueError, match="blob_id must be between 1"):
        session.open_dedicated_blob_writer("f.lance", 0)
    with pytest.raises(ValueError, match="2 offsets but 1 sizes"):
        lance_core.BlobDescriptorArrayBuilder("b").extend_packed(1, [0, 1], [1])
    # A prepared row that says too little is an error naming the column and row.
    schema = pa.schema([lance_core.BlobDescriptorArrayBuilder("b").field])
    bad = pa.array([{"kind": 1, "blob_id": 1, "blob_size": 3}], schema.field("b").type)
    with pytest.raises(lance_core.errors.InvalidInputError, match="blob column 'b': row 0 has no position"):
        with our_file.LanceFileWriter(str(tmp_path / "bad.lance"), schema, version="2.2") as w:
            w.write_batch(pa.table([bad], schema=schema))
