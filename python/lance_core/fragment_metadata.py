"""Fragments written but not yet committed, and the operations that commit them (as
data: `write.commit` commits one)."""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union

import pyarrow as pa

from . import _lance_core
from .errors import InvalidInputError
from ._inputs import as_stream


@dataclass(frozen=True)
class FragmentMetadata:
    """A fragment's metadata (its data files and row count), as written by
    `write_fragments`. Picklable, and convertible to and from JSON, so Spark tasks can
    send it to the driver."""

    data: bytes = field(repr=False)

    @property
    def id(self) -> int:
        return _lance_core._fragment_info(self.data)[0]

    @property
    def physical_rows(self) -> int:
        return _lance_core._fragment_info(self.data)[1]

    @property
    def files(self) -> List[str]:
        return _lance_core._fragment_info(self.data)[2]

    def to_json(self) -> str:
        return json.dumps({"fragment": base64.b64encode(self.data).decode("ascii"),
                           "physical_rows": self.physical_rows, "files": self.files})

    @classmethod
    def from_json(cls, text: Union[str, Dict]) -> "FragmentMetadata":
        obj = json.loads(text) if isinstance(text, str) else text
        return cls(base64.b64decode(obj["fragment"]))

    def __repr__(self) -> str:
        return f"FragmentMetadata(physical_rows={self.physical_rows}, files={self.files})"


class LanceOperation:
    """Operations `commit` applies, with pylance's names."""

    @dataclass
    class Append:
        fragments: List[FragmentMetadata]

    @dataclass
    class Overwrite:
        new_schema: pa.Schema
        fragments: List[FragmentMetadata]

    @dataclass
    class Delete:
        updated_fragments: List[FragmentMetadata]
        deleted_fragment_ids: List[int]
        predicate: str

    @dataclass
    class Merge:
        """New columns: every fragment of the read version (those given new data files by
        `LanceFragment.merge_columns`) and the schema with the new columns. Commit it with
        the `read_version` the columns were computed from."""

        fragments: List[FragmentMetadata]
        schema: pa.Schema


def write_fragments(
    data,
    uri: Union[str, os.PathLike],
    schema: Optional[pa.Schema] = None,
    mode: str = "append",
    *,
    max_rows_per_file: int = 1024 * 1024,
    max_bytes_per_file: Optional[int] = None,
    data_storage_version: Optional[str] = None,
    storage_options: Optional[Dict[str, str]] = None,
    file_prefix: Optional[str] = None,
) -> List[FragmentMetadata]:
    """Write data files for the dataset at `uri` without committing them.

    With mode "append" (the default) the files follow the existing dataset's schema and
    file version; with "overwrite" (or for a new dataset) they get `schema`'s.
    Commit the fragments with `commit(uri, LanceOperation.Append(fragments))`.
    `file_prefix` starts every data file name (letters, digits, - and _): a distributed
    job's token, so that an aborted job's files can be found.
    """
    raw = _lance_core._write_fragments(as_stream(data, schema), os.fspath(uri), mode, max_rows_per_file,
                                       max_bytes_per_file, data_storage_version, storage_options, file_prefix)
    return [FragmentMetadata(b) for b in raw]


def _commit_native(
    uri: Union[str, os.PathLike],
    operation,
    read_version: Optional[int] = None,
    storage_options: Optional[Dict[str, str]] = None,
    transaction_properties: Optional[Dict[str, str]] = None,
) -> Any:
    """`commit` (in `write`), returning the native dataset: the operation's fields handed
    to the core, which builds and commits it."""
    uri = os.fspath(uri)
    props = {str(k): str(v) for k, v in (transaction_properties or {}).items()}
    if isinstance(operation, LanceOperation.Append):
        native = _lance_core._commit(uri, "append", [f.data for f in operation.fragments], None, None, None,
                                     read_version, storage_options, props)
    elif isinstance(operation, LanceOperation.Overwrite):
        native = _lance_core._commit(uri, "overwrite", [f.data for f in operation.fragments], operation.new_schema,
                                     None, None, read_version, storage_options, props)
    elif isinstance(operation, LanceOperation.Delete):
        native = _lance_core._commit(uri, "delete", [f.data for f in operation.updated_fragments], None,
                                     list(operation.deleted_fragment_ids), operation.predicate, read_version,
                                     storage_options, props)
    elif isinstance(operation, LanceOperation.Merge):
        if read_version is None:
            raise InvalidInputError("a Merge must be committed with the read_version its columns were computed from")
        native = _lance_core._commit(uri, "merge", [f.data for f in operation.fragments], operation.schema, None,
                                     None, read_version, storage_options, props)
    else:
        raise InvalidInputError(f"cannot commit {type(operation).__name__}")
    return native
