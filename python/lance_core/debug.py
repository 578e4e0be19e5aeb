"""Readable dumps of a table's internals (pylance's `lance.debug`), in the nested
`Name { field: value, ... }` layout pylance prints. For people, not for parsing: the
fields shown are the ones lance_core keeps."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, List

from ._pretty import NONE, _render, _schema, _schema_debug, _some, _Struct, _Token
from .fragment_metadata import FragmentMetadata

if TYPE_CHECKING:
    from .dataset import LanceDataset


def _deletion(fragment: "FragmentMetadata") -> Any:
    d = fragment.deletion_file
    if d is None:
        return NONE
    return _some(_Struct("DeletionFile", [("read_version", d.read_version), ("id", d.id),
                                          ("file_type", _Token(d.file_type.capitalize())),
                                          ("num_deleted_rows", _some(d.num_deleted_rows)),
                                          ("base_id", _some(d.base_id))]))


def _fragment(fragment: "FragmentMetadata") -> _Struct:
    files = [_Struct("DataFile", [("path", str(f.path)), ("fields", f.fields), ("column_indices", f.column_indices),
                                  ("file_major_version", f.file_major_version),
                                  ("file_minor_version", f.file_minor_version),
                                  ("file_size_bytes", _some(f.file_size_bytes)), ("base_id", _some(f.base_id))])
             for f in fragment.files]
    return _Struct("Fragment", [("id", fragment.id), ("files", files), ("deletion_file", _deletion(fragment)),
                                ("physical_rows", _some(fragment.physical_rows))])


def format_schema(dataset: "LanceDataset") -> str:
    """The dataset's schema with field ids and logical types."""
    return _schema_debug(dataset.lance_schema)


def format_fragment(fragment: "FragmentMetadata", dataset: "LanceDataset") -> str:
    """A fragment: each data file with the fields it holds and its format version."""
    schema = dataset.lance_schema
    files = [_Struct("PrettyPrintableDataFile", [
        ("path", str(f.path)), ("fields", f.fields), ("column_indices", f.column_indices),
        ("schema", _schema(schema, set(f.fields))),
        ("major_version", f.file_major_version), ("minor_version", f.file_minor_version)])
        for f in fragment.files]
    return _render(_Struct("PrettyPrintableFragment", [
        ("id", fragment.id), ("files", files), ("deletion_file", _deletion(fragment)),
        ("physical_rows", _some(fragment.physical_rows))]), 0)


def format_manifest(dataset: "LanceDataset") -> str:
    """The dataset version's manifest: schema, version, fragments and config."""
    return _render(_Struct("Manifest", [
        ("schema", _schema(dataset.lance_schema)), ("version", dataset.version),
        ("fragments", [_fragment(f.metadata) for f in dataset.get_fragments()]),
        ("data_storage_format", _Struct("DataStorageFormat", [("file_format", "lance"),
                                                               ("version", dataset.data_storage_version)])),
        ("config", dict(dataset.config())),
    ]), 0)


def _value(v: Any) -> Any:
    if isinstance(v, FragmentMetadata):
        return _fragment(v)
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return _Struct(type(v).__name__, [(f.name, _value(getattr(v, f.name))) for f in dataclasses.fields(v)])
    if isinstance(v, (list, tuple, set)):
        return [_value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _value(x) for k, x in v.items()}
    if v is None:
        return NONE
    if isinstance(v, (str, int, float, bool)):
        return v
    return _Token(repr(v))


def list_transactions(dataset: "LanceDataset", max_transactions: int = 10) -> List[str]:
    """The transactions of the latest versions, newest first (at most `max_transactions`)."""
    out = []
    for t in dataset.get_transactions(max_transactions):
        if t is None:
            continue
        out.append(_render(_Struct("Transaction", [
            ("read_version", t.read_version), ("uuid", t.uuid), ("operation", _value(t.operation)),
            ("transaction_properties", _value(t.transaction_properties or None))]), 0))
    return out
