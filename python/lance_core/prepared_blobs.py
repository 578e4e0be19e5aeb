"""Blob v2 columns placed by their writer (pylance's "prepared" blobs), for pipelines that
write a data file themselves: the `.blob` sidecars beside it are written first
(`PackedBlobWriter`: many blobs back to back in one object; `DedicatedBlobWriter`: one
blob, in parts), then a column of descriptors saying where each row's bytes are
(`BlobDescriptorArrayBuilder`), which `LanceFileWriter` writes in format 2.2 as pylance
does. The file is then committed into a table (pylance's `DataFile.create` and a
`DataReplacement`, say).

Get the writers from `lance_core.file.LanceFileSession.open_packed_blob_writer` and
`open_dedicated_blob_writer`; a sidecar of the data file `<dir>/<stem>.lance` is
`<dir>/<stem>/<blob id, bits reversed>.blob`, where the table's readers look for it."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Union

import pyarrow as pa
import pyarrow.compute as pc

from . import _lance_core

#: The prepared layout: the descriptor of a row, as pylance's builder makes it.
PREPARED_TYPE = pa.struct([("kind", pa.uint8()), ("data", pa.large_binary()), ("uri", pa.utf8()),
                           ("blob_id", pa.uint32()), ("blob_size", pa.uint64()), ("position", pa.uint64())])


class BlobDescriptor:
    """Where a blob written by a prepared writer is: `Packed` (a range of a pack
    sidecar), `Dedicated` (a whole sidecar) or `Null` (a NULL row), as pylance prints it."""

    __slots__ = ("kind", "blob_id", "offset", "size")

    def __init__(self, kind: str, blob_id: Optional[int] = None, offset: Optional[int] = None,
                 size: Optional[int] = None):
        self.kind, self.blob_id, self.offset, self.size = kind, blob_id, offset, size

    def __repr__(self) -> str:
        if self.kind == "packed":
            return f"Packed {{ blob_id: {self.blob_id}, offset: {self.offset}, size: {self.size} }}"
        if self.kind == "dedicated":
            return f"Dedicated {{ blob_id: {self.blob_id}, size: {self.size} }}"
        return "Null"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BlobDescriptor) and repr(self) == repr(other)

    def __hash__(self) -> int:
        return hash(repr(self))


def _payload(data: Any) -> bytes:
    """Bytes of one blob given as bytes, bytearray, a memoryview or a sequence of ints."""
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview, pa.Buffer)):
        return bytes(memoryview(data))
    if isinstance(data, str):
        raise ValueError("a blob is bytes, not str (encode the text first)")
    try:
        return bytes(data)
    except (TypeError, ValueError) as e:
        raise ValueError(f"a blob is bytes-like or a sequence of ints 0..255, not {type(data).__name__}") from e


class _Sidecar:
    """A sidecar being written; unusable once finished."""

    _what = "blob writer"

    def __init__(self, base: str, data_file: str, blob_id: int, storage_options: Optional[Dict[str, str]]):
        if not 0 < blob_id < 2 ** 32:
            raise ValueError(f"{self._what}: blob_id must be between 1 and 2^32 - 1, got {blob_id}")
        self._blob_id = blob_id
        self._writer = _lance_core._SidecarWriter(base, data_file, blob_id, storage_options)
        self._finished = False

    def _open(self) -> None:
        if self._finished:
            raise ValueError(f"{self._what} is already finished")

    @property
    def blob_id(self) -> int:
        self._open()
        return self._blob_id

    @property
    def path(self) -> str:
        """The sidecar's path in its object store."""
        self._open()
        return self._writer.path

    def _finish(self) -> int:
        self._open()
        self._finished = True
        return self._writer.finish()


class PackedBlobWriter(_Sidecar):
    """Blobs written back to back into one pack sidecar; `finish` gives a descriptor per
    blob written (and per NULL of `write_blobs`), in order."""

    _what = "PackedBlobWriter"

    def __init__(self, base: str, data_file: str, blob_id: int, storage_options: Optional[Dict[str, str]] = None):
        super().__init__(base, data_file, blob_id, storage_options)
        self._descriptors: List[BlobDescriptor] = []
        self._field: Optional[pa.Field] = None

    def _append(self, data: bytes) -> None:
        at = self._writer.write(data)
        self._descriptors.append(BlobDescriptor("packed", self._blob_id, at, len(data)))

    def write_blob(self, data: Any) -> None:
        """Append one blob (bytes-like, or a sequence of ints)."""
        self._open()
        self._append(_payload(data))

    def write_blobs(self, payloads: Union[pa.Array, pa.ChunkedArray]) -> None:
        """Append every value of a binary Arrow array (binary, large_binary, binary_view,
        fixed_size_binary, or a chunked array of one of those); a NULL gets a `Null`
        descriptor and no bytes. Each chunk is checked before any of its bytes is written."""
        self._open()
        if isinstance(payloads, pa.ChunkedArray):
            chunks = [(c, f"Packed blob payload chunk {i}") for i, c in enumerate(payloads.chunks)]
            dtype = payloads.type
        elif isinstance(payloads, pa.Array):
            chunks, dtype = [(payloads, "Packed blob payload array")], payloads.type
        else:
            raise ValueError(f"write_blobs takes a Binary, LargeBinary, BinaryView or FixedSizeBinary "
                             f"Arrow array, not {type(payloads).__name__}")
        if not (pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype) or pa.types.is_binary_view(dtype)
                or pa.types.is_fixed_size_binary(dtype)):
            raise ValueError(f"write_blobs takes a Binary, LargeBinary, BinaryView or FixedSizeBinary "
                             f"Arrow array, not {dtype}")
        for chunk, what in chunks:
            try:
                chunk.validate(full=True)
            except pa.ArrowInvalid as e:
                raise ValueError(f"{what} is invalid Arrow data: {e}") from e
        for chunk, _ in chunks:
            self._write_chunk(chunk.cast(pa.large_binary()))

    def _write_chunk(self, chunk: pa.LargeBinaryArray) -> None:
        if len(chunk) == 0:
            return
        valid = chunk.is_valid()
        values = chunk if chunk.null_count == 0 else pc.filter(chunk, valid)
        sizes = pc.binary_length(values).to_pylist()
        # The valid values' bytes are contiguous in their buffer: one write for all.
        _, offsets, data = values.buffers()
        start = int.from_bytes(offsets[values.offset * 8:values.offset * 8 + 8].to_pybytes(), "little")
        total = sum(sizes)
        at = self._writer.write(data[start:start + total].to_pybytes() if total else b"")
        it = iter(sizes)
        for ok in valid.to_pylist():
            if not ok:
                self._descriptors.append(BlobDescriptor("null"))
                continue
            size = next(it)
            self._descriptors.append(BlobDescriptor("packed", self._blob_id, at, size))
            at += size

    def finish(self) -> List[BlobDescriptor]:
        """Publish the sidecar; the descriptors of what was written, in order."""
        self._finish()
        return list(self._descriptors)

    def finish_array(self, field_name: str) -> pa.StructArray:
        """`finish`, the descriptors as a column of the prepared layout (its field is then
        `self.field`)."""
        builder = BlobDescriptorArrayBuilder(field_name)
        builder.extend(self.finish())
        self._field = builder.field
        return builder.finish()

    @property
    def field(self) -> pa.Field:
        if self._field is None:
            raise ValueError("PackedBlobWriter field is available after finish_array")
        return self._field


class DedicatedBlobWriter(_Sidecar):
    """One blob as a sidecar of its own, written in as many parts as it comes in."""

    _what = "DedicatedBlobWriter"

    def __init__(self, base: str, data_file: str, blob_id: int, storage_options: Optional[Dict[str, str]] = None):
        super().__init__(base, data_file, blob_id, storage_options)

    def write(self, data: Any) -> None:
        """Append the next part of the blob."""
        self._open()
        self._writer.write(_payload(data))

    def finish(self) -> BlobDescriptor:
        """Publish the sidecar; the blob's descriptor."""
        return BlobDescriptor("dedicated", self._blob_id, None, self._finish())


class BlobDescriptorArrayBuilder:
    """A blob v2 column in the prepared layout, row by row: bytes kept inline in the data
    file, blobs in sidecars (from the writers above), ranges of objects the table
    manages, and NULLs. `LanceFileWriter` writes such a column (format 2.2) under `field`."""

    def __init__(self, column: str):
        self._column = column
        self._rows: List[Optional[Dict[str, Any]]] = []

    @property
    def field(self) -> pa.Field:
        return pa.field(self._column, PREPARED_TYPE, metadata={"ARROW:extension:name": "lance.blob.v2"})

    def append_inline(self, data: Any) -> None:
        """A blob stored in the data file itself."""
        self._rows.append({"kind": 0, "data": _payload(data)})

    def append_null(self) -> None:
        self._rows.append(None)

    def append_dedicated(self, blob_id: int, size: int) -> None:
        """A whole dedicated sidecar of the data file."""
        self._rows.append({"kind": 2, "blob_id": blob_id, "blob_size": size})

    def extend_packed(self, blob_id: int, offsets: Sequence[int], sizes: Sequence[int]) -> None:
        """Ranges of pack sidecar `blob_id`: one row per (offset, size)."""
        if len(offsets) != len(sizes):
            raise ValueError(f"extend_packed: {len(offsets)} offsets but {len(sizes)} sizes")
        for o, n in zip(offsets, sizes):
            self._rows.append({"kind": 1, "blob_id": blob_id, "blob_size": n, "position": o})

    def append_managed(self, uri: str, offset: int, size: int, *, base_id: Optional[int] = None) -> None:
        """A range of an object the table manages: `uri` relative to the table's root, or
        to its base path `base_id`."""
        row: Dict[str, Any] = {"kind": 4 if base_id is None else 5, "uri": uri, "blob_size": size,
                               "position": offset}
        if base_id is not None:
            row["blob_id"] = base_id
        self._rows.append(row)

    def append(self, value: BlobDescriptor) -> None:
        """A descriptor a writer returned."""
        if not isinstance(value, BlobDescriptor):
            raise ValueError(f"append takes a BlobDescriptor, not {type(value).__name__}")
        if value.kind == "packed":
            self.extend_packed(value.blob_id, [value.offset], [value.size])
        elif value.kind == "dedicated":
            self.append_dedicated(value.blob_id, value.size)
        else:
            self.append_null()

    def extend(self, values: Sequence[BlobDescriptor]) -> None:
        for v in values:
            self.append(v)

    def finish(self) -> pa.StructArray:
        """The column built so far (the builder starts again empty)."""
        rows, self._rows = self._rows, []
        return pa.array(rows, PREPARED_TYPE)


__all__ = ["BlobDescriptor", "BlobDescriptorArrayBuilder", "DedicatedBlobWriter", "PackedBlobWriter",
           "PREPARED_TYPE"]
