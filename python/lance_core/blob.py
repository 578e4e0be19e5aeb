"""Blob values read as files (pylance's `lance.blob.BlobFile`): a `BlobFile` reads byte
ranges of one blob from wherever it is stored (the data file, a sidecar `.blob` file, an
external object) only when asked, so a video can be seeked into without loading it.
Get them from `LanceDataset.take_blobs`."""

from __future__ import annotations

import io
from typing import Any, List, Optional, Tuple

#: Bytes read ahead by sequential reads (`read`, `readinto`) of a `BlobFile`.
DEFAULT_BLOB_BUFFER_SIZE = 512 * 1024


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
        """How the blob is stored: "inline", "packed", "dedicated" or "external"."""
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


__all__ = ["BlobFile", "DEFAULT_BLOB_BUFFER_SIZE"]
