"""Blob columns, with pylance's names (`lance.blob`).

Writing: a blob column is `blob_field(name)`, of type `BlobType` (pyarrow extension
`lance.blob.v2`, stored as `struct<data, uri, position, size>`); `blob_array` builds its
values from bytes, URIs, `Blob`s and None. Format 2.2 writes them as blob v2.

Reading: a `BlobFile` reads byte ranges of one blob from wherever it is stored (the data
file, a sidecar `.blob` file, an external object) only when asked, so a video can be
seeked into without loading it. Get them from `LanceDataset.take_blobs`; `BlobColumn`
wraps a column of bytes already read as file objects."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any, Iterator, List, Optional, Tuple, Union

import pyarrow as pa

#: Bytes read ahead by sequential reads (`read`, `readinto`) of a `BlobFile`.
DEFAULT_BLOB_BUFFER_SIZE = 512 * 1024


_INLINE_KEY = b"lance-encoding:blob-inline-size-threshold"
_DEDICATED_KEY = b"lance-encoding:blob-dedicated-size-threshold"
_PACK_KEY = b"lance-encoding:blob-pack-file-size-threshold"
_EXTENSION = "lance.blob.v2"
#: The children a blob value is given by, in order (the first two are required).
_STORAGE = [("data", pa.large_binary()), ("uri", pa.utf8()), ("position", pa.uint64()),
            ("size", pa.uint64())]


@dataclass(frozen=True)
class Blob:
    """One blob to write: its bytes (`data`), or the URI of an object holding it, with
    an optional byte range (`position` and a positive `size`). Use None for a NULL blob
    and `Blob.empty()` for one of no bytes."""

    data: Optional[bytes] = None
    uri: Optional[str] = None
    position: Optional[int] = None
    size: Optional[int] = None

    def __post_init__(self) -> None:
        if (self.data is None) == (self.uri is None):
            raise ValueError("a Blob needs exactly one of data and uri (None is a NULL blob)")
        if self.uri == "":
            raise ValueError("a Blob's uri cannot be empty")
        if (self.position is None) != (self.size is None):
            raise ValueError("a Blob's range needs both position and size")
        if self.position is not None and self.uri is None:
            raise ValueError("only a Blob given by uri can have a range")
        if self.size is not None and self.size <= 0:
            raise ValueError("a Blob's range size must be positive")
        if self.position is not None and self.position < 0:
            raise ValueError("a Blob's range position must not be negative")

    @staticmethod
    def from_bytes(data: Union[bytes, bytearray, memoryview]) -> "Blob":
        return Blob(data=bytes(data))

    @staticmethod
    def from_uri(uri: str, position: Optional[int] = None, size: Optional[int] = None) -> "Blob":
        if position is not None and position < 0 or size is not None and size < 0:
            raise ValueError("a Blob's position and size must not be negative")
        return Blob(uri=uri, position=position, size=size)

    @staticmethod
    def empty() -> "Blob":
        return Blob(data=b"")


def _check_storage(storage: pa.DataType) -> None:
    if not pa.types.is_struct(storage):
        raise TypeError(f"BlobType is stored as a struct, not {storage}")
    fields = list(storage)
    if len(fields) not in (2, 4):
        raise TypeError("BlobType is stored as struct<data, uri> or "
                        "struct<data, uri, position, size>")
    for f, (name, typ) in zip(fields, _STORAGE):
        if f.name != name or f.type != typ:
            raise TypeError(f"BlobType storage field {name!r} must be {typ}, got "
                            f"{f.name}: {f.type}")


class BlobType(pa.ExtensionType):
    """The type of a blob column to write (`lance.blob.v2`). Reading a table returns
    the column's descriptors (where each blob is), or its bytes with
    `blob_handling="all_binary"`."""

    def __init__(self, storage_type: Optional[pa.DataType] = None) -> None:
        if storage_type is None:
            storage_type = pa.struct([pa.field(n, t) for n, t in _STORAGE])
        _check_storage(storage_type)
        super().__init__(storage_type, _EXTENSION)

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> "BlobType":
        return cls(storage_type)

    def __arrow_ext_class__(self):
        return BlobArray

    def __reduce__(self):
        return BlobType, (self.storage_type,)


class BlobArray(pa.ExtensionArray):
    """An array of blobs to write; build one with `blob_array`."""

    @classmethod
    def from_pylist(cls, values: List[Any]) -> "BlobArray":
        data: List[Optional[bytes]] = []
        uri: List[Optional[str]] = []
        position: List[Optional[int]] = []
        size: List[Optional[int]] = []
        null: List[bool] = []
        for v in values:
            if v is None:
                b = None
            elif isinstance(v, Blob):
                b = v
            elif isinstance(v, str):
                b = Blob.from_uri(v)
            elif isinstance(v, (bytes, bytearray, memoryview)):
                b = Blob.from_bytes(v)
            else:
                raise TypeError(f"a blob is bytes, a URI (str), a Blob or None, not {type(v)}")
            null.append(b is None)
            data.append(b.data if b else None)
            uri.append(b.uri if b else None)
            position.append(b.position if b else None)
            size.append(b.size if b else None)
        children = [pa.array(col, type=t) for col, (_, t) in zip((data, uri, position, size), _STORAGE)]
        storage = pa.StructArray.from_arrays(children, names=[n for n, _ in _STORAGE],
                                             mask=pa.array(null, type=pa.bool_()))
        return pa.ExtensionArray.from_storage(BlobType(), storage)  # type: ignore[return-value]


def blob_array(values: List[Any]) -> BlobArray:
    """Blobs from Python values: bytes (the blob's bytes), str (a URI), `Blob`, None."""
    return BlobArray.from_pylist(values)


def _threshold(name: str, value: Optional[int], zero_ok: bool) -> Optional[bytes]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 0 or (value == 0 and not zero_ok):
        raise ValueError(f"{name} must be {'non-negative' if zero_ok else 'positive'}")
    if value >= 1 << 64:
        raise OverflowError(f"{name} must fit in 64 bits")
    return str(value).encode()


def blob_field(name: str, *, nullable: bool = True, inline_size_threshold: Optional[int] = None,
               dedicated_size_threshold: Optional[int] = None,
               pack_file_size_threshold: Optional[int] = None) -> pa.Field:
    """A blob column's field. Values up to `inline_size_threshold` bytes (64 KiB) stay in
    the data file, those above `dedicated_size_threshold` (4 MiB) get a `.blob` file
    each, the others share `.blob` files of up to `pack_file_size_threshold` (1 GiB)."""
    metadata = {}
    for key, value in ((_INLINE_KEY, _threshold("inline_size_threshold", inline_size_threshold, True)),
                       (_DEDICATED_KEY, _threshold("dedicated_size_threshold", dedicated_size_threshold, False)),
                       (_PACK_KEY, _threshold("pack_file_size_threshold", pack_file_size_threshold, False))):
        if value is not None:
            metadata[key] = value
    return pa.field(name, BlobType(), nullable=nullable, metadata=metadata or None)


class BlobColumn:
    """A column of bytes (binary or large_binary, read with `blob_handling="all_binary"`
    say) iterated as file objects (None for NULL)."""

    def __init__(self, blob_column: Union[pa.Array, pa.ChunkedArray]):
        if not isinstance(blob_column, (pa.Array, pa.ChunkedArray)):
            raise ValueError(f"expected a pyarrow Array or ChunkedArray, got {type(blob_column)}")
        if not (pa.types.is_binary(blob_column.type) or pa.types.is_large_binary(blob_column.type)):
            raise ValueError(f"expected a binary array, got {blob_column.type}")
        self.blob_column = blob_column

    def __iter__(self) -> "BlobIterator":
        return BlobIterator(iter(self.blob_column))


class BlobIterator:
    """The rows of a `BlobColumn` as file objects (None for NULL), in order."""

    def __init__(self, binary_iter: Iterator[pa.Scalar]):
        self.binary_iter = binary_iter

    def __iter__(self) -> "BlobIterator":
        return self

    def __next__(self) -> Optional[io.BytesIO]:
        data = next(self.binary_iter).as_py()
        return None if data is None else io.BytesIO(data)


try:
    pa.register_extension_type(BlobType())
except pa.ArrowKeyError:
    pass  # registered already (by pylance, in the same interpreter): the same wire type


class BlobFile(io.RawIOBase):
    """One blob as a read-only, seekable binary file (`read`, `readinto`, `readall`,
    `seek`, `tell`, `size`, `close`, a context manager): PIL, zipfile, tarfile and the
    like can open it. Sequential reads fetch `buffer_size` bytes at a time;
    `read_range` and `read_ranges` read exactly what they are asked, leaving the cursor."""

    def __init__(self, reader: Any, buffer_size: int = DEFAULT_BLOB_BUFFER_SIZE):
        super().__init__()
        if not isinstance(buffer_size, int) or buffer_size < 0:
            raise ValueError(f"buffer_size must be a non-negative integer, got {buffer_size!r}")
        self._reader = reader
        self._buffer_size = buffer_size
        self._pos = 0
        self._buf = b""
        self._buf_start = 0

    def __repr__(self) -> str:
        return f"<BlobFile size={self.size()}>"

    def size(self) -> int:
        """The blob's length in bytes."""
        return self._reader.size

    @property
    def kind(self) -> str:
        """How the blob is stored: "inline", "packed", "dedicated", "external" or "managed"."""
        return self._reader.kind

    @property
    def uri(self) -> Optional[str]:
        """The URI of an external blob (None for the others)."""
        return self._reader.uri

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def _check(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on closed blob file")

    def tell(self) -> int:
        self._check()
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._check()
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self.size() + offset
        else:
            raise ValueError(f"invalid whence ({whence}, should be 0, 1 or 2)")
        if pos < 0:
            raise ValueError(f"negative seek position {pos}")
        self._pos = pos
        return pos

    def readinto(self, b: Any) -> int:
        self._check()
        view = memoryview(b).cast("B")
        if view.readonly:
            raise TypeError("readinto() needs a writable buffer")
        n = max(0, min(len(view), self.size() - self._pos))
        if n == 0:
            return 0
        end = self._pos + n
        in_buffer = self._buf_start <= self._pos and end <= self._buf_start + len(self._buf)
        if not in_buffer:
            if n >= self._buffer_size:
                data = self._reader.read(self._pos, n)
                view[:n] = data
                self._pos = end
                return n
            ahead = min(self._buffer_size, self.size() - self._pos)
            self._buf, self._buf_start = self._reader.read(self._pos, ahead), self._pos
        at = self._pos - self._buf_start
        view[:n] = self._buf[at:at + n]
        self._pos = end
        return n

    def readall(self) -> bytes:
        self._check()
        n = max(0, self.size() - self._pos)
        data = self._reader.read(self._pos, n) if n else b""
        self._pos += n
        return data

    def read1(self, size: int = -1) -> bytes:
        """At most `size` bytes with at most one fetch (pylance's `BufferedIOBase` name)."""
        self._check()
        return self.read(io.DEFAULT_BUFFER_SIZE if size is None or size < 0 else size)

    def readinto1(self, b: Any) -> int:
        return self.readinto(b)

    def detach(self) -> None:
        raise io.UnsupportedOperation("a blob file has no raw stream to detach")

    def read_range(self, offset: int, length: int) -> bytes:
        """Bytes `offset..offset + length` of the blob (the cursor stays)."""
        self._check()
        return self._reader.read(offset, length)

    def read_ranges(self, ranges: List[Tuple[int, int]]) -> List[bytes]:
        """Several `(offset, length)` ranges, read together, in the order given."""
        self._check()
        return self._reader.read_many([(int(o), int(n)) for o, n in ranges])

    def close(self) -> None:
        self._buf = b""
        super().close()


from .prepared_blobs import (BlobDescriptor, BlobDescriptorArrayBuilder, DedicatedBlobWriter,  # noqa: E402
                             PackedBlobWriter)

__all__ = ["Blob", "BlobArray", "BlobColumn", "BlobDescriptor", "BlobDescriptorArrayBuilder", "BlobFile",
           "BlobIterator",
           "BlobType", "DEFAULT_BLOB_BUFFER_SIZE", "DedicatedBlobWriter", "PackedBlobWriter", "blob_array",
           "blob_field"]
