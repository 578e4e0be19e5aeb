"""Fragments written but not yet committed, and the operations that commit them (as
data: `write.commit` commits one)."""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

import pyarrow as pa

from . import _lance_core
from .errors import DatasetNotFoundError, InvalidInputError, UnsupportedFeatureError
from ._inputs import as_stream
from .bases import DatasetBasePath, bases_arg, targets_arg
from .results import Transaction
from .schema import LanceSchema


class _CallablePath(str):
    """A data file's path that can still be called, as the method it was in pylance."""

    def __call__(self) -> str:
        warnings.warn("DataFile.path() is deprecated, use DataFile.path instead", DeprecationWarning, stacklevel=2)
        return str(self)

    def __reduce__(self):
        return (str, (str(self),))


@dataclass
class DataFile:
    """One data file of a fragment: its path (relative to `data/`, or to its base when
    `base_id` is set), the field ids of its columns and where they are in the file."""

    _path: str
    fields: List[int]
    column_indices: List[int] = field(default_factory=list)
    file_major_version: int = 0
    file_minor_version: int = 0
    file_size_bytes: Optional[int] = None
    base_id: Optional[int] = None

    def __init__(self, path: str, fields: List[int], column_indices: Optional[List[int]] = None,
                 file_major_version: int = 0, file_minor_version: int = 0,
                 file_size_bytes: Optional[int] = None, base_id: Optional[int] = None):
        self._path = path
        self.fields = list(fields)
        self.column_indices = list(column_indices or [])
        self.file_major_version = file_major_version
        self.file_minor_version = file_minor_version
        self.file_size_bytes = file_size_bytes
        self.base_id = base_id

    @staticmethod
    def create(dataset: Any, path: str, base_id: Optional[int] = None) -> "DataFile":
        """The entry for a Lance file already written under the dataset's data directory
        (or base `base_id`'s) with some of its columns, as pylance's `DataFile.create`:
        their field ids, the file's version and size."""
        return DataFile._described(dataset, path, base_id)[0]

    @staticmethod
    def _described(dataset: Any, path: str, base_id: Optional[int] = None) -> Tuple["DataFile", int]:
        """`create`, and the file's row count."""
        path, fields, indices, major, minor, size, base, rows = dataset._ds.describe_data_file(os.fspath(path),
                                                                                             base_id)
        return DataFile(path, fields, indices, major, minor, size, base), rows

    def __repr__(self) -> str:
        return (f"DataFile(path='{self._path}', fields={self.fields}, column_indices={self.column_indices}, "
                f"file_major_version={self.file_major_version}, file_minor_version={self.file_minor_version}, "
                f"file_size_bytes={self.file_size_bytes})")

    @property
    def path(self) -> str:
        return _CallablePath(self._path)

    def field_ids(self) -> List[int]:
        warnings.warn("DataFile.field_ids is deprecated, use DataFile.fields instead", DeprecationWarning,
                      stacklevel=2)
        return self.fields

    def _json(self) -> Dict[str, Any]:
        return {"path": self._path, "fields": list(self.fields), "column_indices": list(self.column_indices),
                "file_major_version": self.file_major_version, "file_minor_version": self.file_minor_version,
                "file_size_bytes": self.file_size_bytes, "base_id": self.base_id}


@dataclass
class DeletionFile:
    """A fragment's deletion file: which rows of its data files are deleted."""

    read_version: int
    id: int
    file_type: str = "array"
    num_deleted_rows: Optional[int] = None
    base_id: Optional[int] = None

    def __repr__(self) -> str:
        return f"DeletionFile(type='{self.file_type}', num_deleted_rows={self.num_deleted_rows})"

    def asdict(self) -> Dict[str, Any]:
        return {"read_version": self.read_version, "id": self.id, "file_type": self.file_type,
                "num_deleted_rows": self.num_deleted_rows, "base_id": self.base_id}

    def json(self) -> str:
        return json.dumps(self.asdict(), separators=(",", ":"))

    @staticmethod
    def from_json(text: str) -> "DeletionFile":
        return DeletionFile(**json.loads(text))

    def path(self, fragment_id: int, base_uri: Optional[str] = None) -> str:
        """The file's path: below `_deletions/` of the table (or of `base_uri`)."""
        suffix = {"array": "arrow", "bitmap": "bin"}[self.file_type]
        name = f"_deletions/{fragment_id}-{self.read_version}-{self.id}.{suffix}"
        return f"{base_uri.strip('/')}/{name}" if base_uri else name


class _SequenceMeta:
    """Where a fragment's per-row sequence is: inline (its bytes) or in an external file."""

    _KEYS: Tuple[str, str] = ("inline", "external")

    def __init__(self, kind: str, value: Any):
        self._kind, self._value = kind, value

    def asdict(self) -> Dict[str, Any]:
        return {self._kind: self._value}

    def json(self) -> str:
        return json.dumps(self.asdict(), separators=(",", ":"))

    @classmethod
    def from_dict(cls, obj: Dict[str, Any]):
        if len(obj) != 1 or next(iter(obj)) not in cls._KEYS:
            raise InvalidInputError(f"{cls.__name__}: expected one of the keys {cls._KEYS}, got {sorted(obj)}")
        (kind, value), = obj.items()
        return cls(kind, value)

    @classmethod
    def from_json(cls, text: str):
        return cls.from_dict(json.loads(text))

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and self.asdict() == other.asdict()

    def __hash__(self) -> int:
        return hash(self.json())

    def __reduce__(self):
        return (type(self).from_json, (self.json(),))


class RowIdMeta(_SequenceMeta):
    """Where a fragment's stable row ids are (pylance's JSON keys: Inline, External)."""

    _KEYS = ("Inline", "External")


class RowDatasetVersionMeta(_SequenceMeta):
    """Where a fragment's per-row created-at or last-updated-at versions are."""


@dataclass
class FragmentMetadata:
    """A fragment's metadata (its data files, row count, deletions and row-id sequences),
    shaped as pylance's: written by `write_fragments`, committed by `LanceOperation`s.
    Picklable, and convertible to and from pylance's JSON (`to_json()` is a dict)."""

    id: int
    files: List[DataFile]
    physical_rows: int
    deletion_file: Optional[DeletionFile] = None
    row_id_meta: Optional[RowIdMeta] = None
    created_at_version_meta: Optional[RowDatasetVersionMeta] = None
    last_updated_at_version_meta: Optional[RowDatasetVersionMeta] = None
    overlays: List[Any] = field(default_factory=list)

    @property
    def num_deletions(self) -> int:
        return 0 if self.deletion_file is None else (self.deletion_file.num_deleted_rows or 0)

    @property
    def num_rows(self) -> int:
        return self.physical_rows - self.num_deletions

    def data_files(self) -> List[DataFile]:
        warnings.warn("FragmentMetadata.data_files is deprecated. Use .files instead.", DeprecationWarning,
                      stacklevel=2)
        return self.files

    def to_json(self) -> Dict[str, Any]:
        if self.overlays:
            raise InvalidInputError("lance_core does not write data overlay files")

        def meta(m):
            return None if m is None else m.asdict()
        return {"id": self.id, "files": [f._json() for f in self.files], "overlays": [],
                "physical_rows": self.physical_rows,
                "deletion_file": None if self.deletion_file is None else self.deletion_file.asdict(),
                "row_id_meta": meta(self.row_id_meta), "created_at_version_meta": meta(self.created_at_version_meta),
                "last_updated_at_version_meta": meta(self.last_updated_at_version_meta)}

    @staticmethod
    def from_json(text: Union[str, Dict[str, Any]]) -> "FragmentMetadata":
        obj = json.loads(text) if isinstance(text, (str, bytes)) else text

        def meta(cls, key):
            value = obj.get(key)
            return None if value is None else cls.from_dict(value)
        deletion = obj.get("deletion_file")
        return FragmentMetadata(
            id=obj["id"],
            files=[DataFile(**f) for f in obj.get("files") or []],
            physical_rows=obj["physical_rows"],
            deletion_file=None if deletion is None else DeletionFile(**deletion),
            row_id_meta=meta(RowIdMeta, "row_id_meta"),
            created_at_version_meta=meta(RowDatasetVersionMeta, "created_at_version_meta"),
            last_updated_at_version_meta=meta(RowDatasetVersionMeta, "last_updated_at_version_meta"),
            overlays=list(obj.get("overlays") or []),
        )

    @property
    def data(self) -> bytes:
        """This metadata as the core takes it (the manifest's protobuf message)."""
        return _lance_core._fragment_from_json(json.dumps(self.to_json()))

    @staticmethod
    def _from_bytes(data: bytes) -> "FragmentMetadata":
        """Metadata the core returned (protobuf bytes)."""
        return FragmentMetadata.from_json(_lance_core._fragment_to_json(bytes(data)))


def file_paths(fragments: Iterable[Union[FragmentMetadata, bytes]]) -> List[str]:
    """The data file paths of `fragments` (metadata, or the bytes the core returns): what a
    distributed write keeps or deletes."""
    metas = (f if isinstance(f, FragmentMetadata) else FragmentMetadata._from_bytes(f) for f in fragments)
    return [str(d.path) for m in metas for d in m.files]


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
        # Base paths a new table registers (`DatasetBasePath`s), as pylance's.
        initial_bases: Optional[List[Any]] = None

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
        schema: Any  # a pyarrow or Lance schema

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
        """A new schema over the same data (columns dropped, renamed or reordered): a
        `lance_core.schema.LanceSchema` whose field ids name the table's fields (a pyarrow
        schema is numbered from 0, as `LanceSchema.from_pyarrow` does)."""

        schema: Any

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
        """A fragment's data file replaced by `new_file` (a `DataFile` holding the same fields)."""

        fragment_id: int
        new_file: Any

    @dataclass
    class DataReplacement(BaseOperation):
        replacements: List["LanceOperation.DataReplacementGroup"]

    @dataclass
    class Clone(BaseOperation):
        """A clone or branch made from another version (its details are not recorded by
        this library's reader)."""

        is_shallow: bool = True
        ref_name: Optional[str] = None
        ref_version: int = 0
        ref_path: str = ""
        branch_name: Optional[str] = None


@dataclass
class UpdateBases(LanceOperation.BaseOperation):
    """Base paths registered on an existing table (`LanceDataset.add_bases` commits it;
    pylance has no public class for it)."""

    new_bases: List[Any]


def _operation_from(kind: str, fields: Dict[str, Any]) -> Any:
    """A transaction's operation, as the core describes it (`kind` and its fields), as the
    `LanceOperation` object pylance gives for it; None for one it has no class for."""
    def frags(key: str) -> List[FragmentMetadata]:
        return [FragmentMetadata._from_bytes(b) for b in fields.get(key, [])]

    def update_map(arg: Any) -> Optional[LanceOperation.UpdateMap]:
        return None if arg is None else LanceOperation.UpdateMap(dict(arg[0]), arg[1])

    if kind == "append":
        return LanceOperation.Append(frags("fragments"))
    if kind == "overwrite":
        bases = fields.get("initial_bases")
        return LanceOperation.Overwrite(pa.schema(fields["new_schema"]), frags("fragments"),
                                        [DatasetBasePath._from_arg(b) for b in bases] if bases else None)
    if kind == "update_bases":   # pylance reads add_bases' transaction as a bare operation too
        return LanceOperation.BaseOperation()
    if kind == "delete":
        return LanceOperation.Delete(frags("updated_fragments"), list(fields["deleted_fragment_ids"]),
                                     fields["predicate"])
    if kind == "merge":
        return LanceOperation.Merge(frags("fragments"), pa.schema(fields["schema"]))
    if kind == "project":
        return LanceOperation.Project(pa.schema(fields["schema"]))
    if kind == "restore":
        return LanceOperation.Restore(fields["version"])
    if kind == "reserve_fragments":   # fragment ids set aside for a compaction: pylance has no class for it
        return LanceOperation.BaseOperation()
    if kind == "update":
        return LanceOperation.Update(list(fields["removed_fragment_ids"]), frags("updated_fragments"),
                                     frags("new_fragments"), list(fields["fields_modified"]),
                                     list(fields["fields_for_preserving_frag_bitmap"]), fields["update_mode"])
    if kind == "rewrite":
        groups = [LanceOperation.RewriteGroup([FragmentMetadata._from_bytes(b) for b in old], [FragmentMetadata._from_bytes(b) for b in new])
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
    uri: Union[str, os.PathLike, Any],
    schema: Optional[pa.Schema] = None,
    mode: str = "append",
    *,
    max_rows_per_file: int = 1024 * 1024,
    max_rows_per_group: Optional[int] = None,
    max_bytes_per_file: Optional[int] = None,
    progress: Any = None,
    data_storage_version: Optional[str] = None,
    storage_options: Optional[Dict[str, str]] = None,
    file_prefix: Optional[str] = None,
    fragment_id: int = 0,
    return_transaction: bool = False,
    initial_bases: Optional[List[DatasetBasePath]] = None,
    target_bases: Optional[List[str]] = None,
) -> Any:
    """Write data files for the dataset at `uri` (or a `LanceDataset`) without committing
    them.

    With mode "append" (the default) the files follow the existing dataset's schema and
    file version; with "overwrite" (or for a new dataset) they get `schema`'s.
    Commit the fragments with `commit(uri, LanceOperation.Append(fragments))`.
    `file_prefix` starts every data file name (letters, digits, - and _): a distributed
    job's token, so that an aborted job's files can be found. `progress` (a
    `lance_core.progress.FragmentWriteProgress`) hears of each fragment begun and
    completed. Every fragment carries `fragment_id` until the commit numbers it.
    `max_rows_per_group` is taken for pylance's sake: 2.x files cut pages by size.
    `target_bases` and a new table's `initial_bases` are `write_dataset`'s. With
    `return_transaction`, the result is the `Transaction` to commit (an Append, or for
    "overwrite"/"create" an Overwrite registering the initial bases with their ids).
    """
    dataset = uri if hasattr(uri, "_ds") else None
    uri = os.fspath(getattr(uri, "uri", uri))
    stream = as_stream(data, schema)
    if return_transaction and not hasattr(stream, "schema"):
        stream = pa.RecordBatchReader.from_stream(stream)
    raw, bases = _lance_core._write_fragments(stream, uri, mode, max_rows_per_file,
                                              max_bytes_per_file, data_storage_version, storage_options,
                                              file_prefix, progress, int(fragment_id),
                                              bases_arg(initial_bases), targets_arg(target_bases))
    fragments = [FragmentMetadata._from_bytes(b) for b in raw]
    if not return_transaction:
        return fragments
    try:
        current = dataset if dataset is not None else _lance_core._Dataset.open(uri, None, storage_options)
        read_version = current.version
    except DatasetNotFoundError:
        read_version = 0
    if mode == "append":
        return Transaction(read_version, LanceOperation.Append(fragments))
    new_schema = schema if schema is not None else stream.schema
    return Transaction(read_version, LanceOperation.Overwrite(
        new_schema, fragments, [DatasetBasePath._from_arg(b) for b in bases] or None))


def _commit_native(
    uri: Union[str, os.PathLike],
    operation,
    read_version: Optional[int] = None,
    storage_options: Optional[Dict[str, str]] = None,
    transaction_properties: Optional[Dict[str, str]] = None,
    enable_stable_row_ids: bool = False,
    detached: bool = False,
) -> Any:
    """`commit` (in `write`), returning the native dataset: the operation's fields handed
    to the core, which builds and commits it (an Overwrite with stable row ids when
    `enable_stable_row_ids`); with `detached`, a detached version (see
    `LanceDataset.commit`)."""
    import functools
    uri = os.fspath(uri)
    native_commit = functools.partial(_lance_core._commit, detached=detached)
    props = _properties(transaction_properties)
    if isinstance(operation, LanceOperation.Append):
        native = native_commit(uri, "append", [f.data for f in operation.fragments], None, None, None,
                                     read_version, storage_options, props)
    elif isinstance(operation, LanceOperation.Overwrite):
        native = native_commit(uri, "overwrite", [f.data for f in operation.fragments], operation.new_schema,
                                     None, None, read_version, storage_options, props,
                                     enable_stable_row_ids=enable_stable_row_ids,
                                     bases=bases_arg(operation.initial_bases))
    elif isinstance(operation, UpdateBases):
        native = native_commit(uri, "update_bases", [], None, None, None, read_version, storage_options,
                                     props, bases=bases_arg(operation.new_bases))
    elif isinstance(operation, LanceOperation.Delete):
        native = native_commit(uri, "delete", [f.data for f in operation.updated_fragments], None,
                                     list(operation.deleted_fragment_ids), operation.predicate, read_version,
                                     storage_options, props)
    elif isinstance(operation, LanceOperation.Merge):
        if read_version is None:
            raise InvalidInputError("a Merge must be committed with the read_version its columns were computed from")
        schema = operation.schema
        if not isinstance(schema, pa.Schema):
            schema = schema.to_pyarrow()  # a LanceSchema, as merge_columns returns
        native = native_commit(uri, "merge", [f.data for f in operation.fragments], schema, None,
                                     None, read_version, storage_options, props)
    elif isinstance(operation, LanceOperation.UpdateConfig):
        fields = {int(k): _map_arg(v) for k, v in (operation.field_metadata_updates or {}).items()}
        config = (_map_arg(operation.config_updates), _map_arg(operation.table_metadata_updates),
                  _map_arg(operation.schema_metadata_updates), fields)
        native = native_commit(uri, "update_config", [], read_version=read_version,
                                     storage_options=storage_options, transaction_properties=props, config=config)
    elif isinstance(operation, LanceOperation.Project):
        schema = operation.schema
        if isinstance(schema, pa.Schema):
            schema = LanceSchema.from_pyarrow(schema)
        native = native_commit(uri, "project", [], read_version=read_version, storage_options=storage_options,
                                     transaction_properties=props, lance_schema=schema._data)
    elif isinstance(operation, LanceOperation.Restore):
        native = native_commit(uri, "restore", [], read_version=read_version, storage_options=storage_options,
                                     transaction_properties=props, version=int(operation.version))
    elif isinstance(operation, LanceOperation.Update):
        native = native_commit(
            uri, "update", [f.data for f in operation.updated_fragments], None,
            [int(i) for i in operation.removed_fragment_ids], None, read_version, storage_options, props,
            new_fragments=[f.data for f in operation.new_fragments],
            fields_modified=[int(i) for i in operation.fields_modified],
            fields_for_preserving_frag_bitmap=[int(i) for i in operation.fields_for_preserving_frag_bitmap])
    elif isinstance(operation, LanceOperation.DataReplacement):
        carriers = [FragmentMetadata(id=int(g.fragment_id), files=[_as_data_file(g.new_file)], physical_rows=0).data
                    for g in operation.replacements]
        native = native_commit(uri, "data_replacement", carriers, read_version=read_version,
                                     storage_options=storage_options, transaction_properties=props)
    elif isinstance(operation, LanceOperation.Rewrite):
        # Committed as a compaction's result (the same checks and conflict rules); the
        # transaction records no properties of its own.
        if operation.rewritten_indices:
            raise UnsupportedFeatureError(f"{uri}: a Rewrite with rewritten_indices is committed by compaction "
                                          "itself (optimize.compact_files or Compaction.commit)")
        if read_version is None:
            raise InvalidInputError("a Rewrite must be committed with the read_version its fragments were read at")
        if detached:
            raise UnsupportedFeatureError(f"{uri}: a Rewrite cannot be committed detached")
        base = _lance_core._Dataset.open(uri, read_version, storage_options)
        native, _ = base.commit_compaction([([int(f.id) for f in g.old_fragments], [f.data for f in g.new_fragments])
                                            for g in operation.groups])
    else:
        raise InvalidInputError(f"cannot commit {type(operation).__name__}")
    return native


def _as_data_file(file: Any) -> "DataFile":
    """A replacement's new file: a `DataFile` (pylance's) or a bare path."""
    if isinstance(file, DataFile):
        return file
    if isinstance(file, str):
        raise InvalidInputError(f"a data replacement needs a DataFile (its fields and file version), not the path "
                                f"{file!r}")
    return DataFile(**{k: getattr(file, k) for k in ("path", "fields", "column_indices", "file_major_version",
                                                      "file_minor_version", "file_size_bytes", "base_id")})
