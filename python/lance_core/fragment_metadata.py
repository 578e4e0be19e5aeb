"""Fragments written but not yet committed, and the operations that commit them (as
data: `write.commit` commits one)."""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union

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

    class BaseOperation:
        """What every operation is (pylance's base class)."""

    @dataclass
    class Append(BaseOperation):
        fragments: List[FragmentMetadata]

    @dataclass
    class Overwrite(BaseOperation):
        new_schema: pa.Schema
        fragments: List[FragmentMetadata]

    @dataclass
    class Delete(BaseOperation):
        updated_fragments: List[FragmentMetadata]
        deleted_fragment_ids: List[int]
        predicate: str

    @dataclass
    class Merge(BaseOperation):
        """New columns: every fragment of the read version (those given new data files by
        `LanceFragment.merge_columns`) and the schema with the new columns. Commit it with
        the `read_version` the columns were computed from."""

        fragments: List[FragmentMetadata]
        schema: pa.Schema

    @dataclass
    class Restore(BaseOperation):
        """Make `version` the newest again."""

        version: int

    @dataclass
    class UpdateMap:
        """A change of one string map: keys set, or removed where the value is None, after
        clearing the map when `replace`."""

        updates: Dict[str, Optional[str]]
        replace: bool = False

    @dataclass
    class UpdateConfig(BaseOperation):
        """Changes of the table's config, its metadata, the schema's metadata and fields'
        metadata (by field id), in one version."""

        config_updates: Optional["LanceOperation.UpdateMap"] = None
        table_metadata_updates: Optional["LanceOperation.UpdateMap"] = None
        schema_metadata_updates: Optional["LanceOperation.UpdateMap"] = None
        field_metadata_updates: Optional[Dict[int, "LanceOperation.UpdateMap"]] = None


    @dataclass
    class Update(BaseOperation):
        """Rows changed: fragments removed, fragments given new deletion files, and new
        fragments holding the changed rows."""

        removed_fragment_ids: List[int] = field(default_factory=list)
        updated_fragments: List[FragmentMetadata] = field(default_factory=list)
        new_fragments: List[FragmentMetadata] = field(default_factory=list)
        fields_modified: List[int] = field(default_factory=list)
        fields_for_preserving_frag_bitmap: List[int] = field(default_factory=list)
        update_mode: str = ""

    @dataclass
    class Project(BaseOperation):
        """A new schema over the same data (columns dropped or renamed)."""

        schema: pa.Schema

    @dataclass
    class RewriteGroup:
        """Fragments a compaction replaced, and the fragments holding their rows now."""

        old_fragments: List[FragmentMetadata]
        new_fragments: List[FragmentMetadata]

    @dataclass
    class Rewrite(BaseOperation):
        """Compaction: groups of fragments rewritten (and indices remapped)."""

        groups: List["LanceOperation.RewriteGroup"]
        rewritten_indices: List[Any] = field(default_factory=list)

    @dataclass
    class CreateIndex(BaseOperation):
        """Indices added and removed (by name, as read back from a transaction)."""

        new_indices: List[Any]
        removed_indices: List[Any]

    @dataclass
    class DataReplacementGroup:
        """A fragment's data file replaced by `new_file` (its path)."""

        fragment_id: int
        new_file: Any

    @dataclass
    class DataReplacement(BaseOperation):
        replacements: List["LanceOperation.DataReplacementGroup"]

    @dataclass
    class ReserveFragments(BaseOperation):
        """Fragment ids set aside for a later commit (compaction)."""

        num_fragments: int

    @dataclass
    class Clone(BaseOperation):
        """A clone or branch made from another version (its details are not recorded by
        this library's reader)."""

        is_shallow: bool = True
        ref_name: Optional[str] = None
        ref_version: int = 0
        ref_path: str = ""
        branch_name: Optional[str] = None


def _operation_from(kind: str, fields: Dict[str, Any]) -> Any:
    """A transaction's operation, as the core describes it (`kind` and its fields), as the
    `LanceOperation` object pylance gives for it; None for one it has no class for."""
    def frags(key: str) -> List[FragmentMetadata]:
        return [FragmentMetadata(b) for b in fields.get(key, [])]

    def update_map(arg: Any) -> Optional[LanceOperation.UpdateMap]:
        return None if arg is None else LanceOperation.UpdateMap(dict(arg[0]), arg[1])

    if kind == "append":
        return LanceOperation.Append(frags("fragments"))
    if kind == "overwrite":
        return LanceOperation.Overwrite(pa.schema(fields["new_schema"]), frags("fragments"))
    if kind == "delete":
        return LanceOperation.Delete(frags("updated_fragments"), list(fields["deleted_fragment_ids"]),
                                     fields["predicate"])
    if kind == "merge":
        return LanceOperation.Merge(frags("fragments"), pa.schema(fields["schema"]))
    if kind == "project":
        return LanceOperation.Project(pa.schema(fields["schema"]))
    if kind == "restore":
        return LanceOperation.Restore(fields["version"])
    if kind == "reserve_fragments":
        return LanceOperation.ReserveFragments(fields["num_fragments"])
    if kind == "update":
        return LanceOperation.Update(list(fields["removed_fragment_ids"]), frags("updated_fragments"),
                                     frags("new_fragments"), list(fields["fields_modified"]),
                                     list(fields["fields_for_preserving_frag_bitmap"]), fields["update_mode"])
    if kind == "rewrite":
        groups = [LanceOperation.RewriteGroup([FragmentMetadata(b) for b in old], [FragmentMetadata(b) for b in new])
                  for old, new in fields["groups"]]
        return LanceOperation.Rewrite(groups)
    if kind == "create_index":
        return LanceOperation.CreateIndex(list(fields["new_indices"]), list(fields["removed_indices"]))
    if kind == "update_config":
        by_field = {k: update_map(v) for k, v in fields["field_metadata_updates"].items()}
        return LanceOperation.UpdateConfig(update_map(fields["config_updates"]),
                                           update_map(fields["table_metadata_updates"]),
                                           update_map(fields["schema_metadata_updates"]), by_field or None)
    if kind == "data_replacement":
        return LanceOperation.DataReplacement([LanceOperation.DataReplacementGroup(i, f)
                                               for i, f in fields["replacements"]])
    if kind == "clone":
        return LanceOperation.Clone()
    return None


# The transaction property pylance records a commit message under.
LANCE_COMMIT_MESSAGE_KEY = "__lance_commit_message"


def _properties(properties: Optional[Dict[str, Any]], commit_message: Optional[str] = None) -> Dict[str, str]:
    """A commit's transaction properties, as strings, with its message."""
    out = {str(k): str(v) for k, v in (properties or {}).items()}
    if commit_message is not None:
        out[LANCE_COMMIT_MESSAGE_KEY] = commit_message
    return out


def _map_arg(change: Optional[LanceOperation.UpdateMap]) -> Optional[Tuple[List[Tuple[str, Optional[str]]], bool]]:
    """An `UpdateMap` as the core takes it."""
    if change is None:
        return None
    pairs = [(str(k), None if v is None else str(v)) for k, v in change.updates.items()]
    return pairs, bool(change.replace)


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
    props = _properties(transaction_properties)
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
    elif isinstance(operation, LanceOperation.UpdateConfig):
        fields = {int(k): _map_arg(v) for k, v in (operation.field_metadata_updates or {}).items()}
        config = (_map_arg(operation.config_updates), _map_arg(operation.table_metadata_updates),
                  _map_arg(operation.schema_metadata_updates), fields)
        native = _lance_core._commit(uri, "update_config", [], read_version=read_version,
                                     storage_options=storage_options, transaction_properties=props, config=config)
    elif isinstance(operation, LanceOperation.Restore):
        native = _lance_core._commit(uri, "restore", [], read_version=read_version, storage_options=storage_options,
                                     transaction_properties=props, version=int(operation.version))
    else:
        raise InvalidInputError(f"cannot commit {type(operation).__name__}")
    return native
