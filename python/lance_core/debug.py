"""Readable dumps of a table's internals (pylance's `lance.debug`), in the nested
`Name { field: value, ... }` layout pylance prints. For people, not for parsing: the
fields shown are the ones lance_core keeps."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, List, Sequence, Tuple

if TYPE_CHECKING:
    from .dataset import LanceDataset
    from .fragment_metadata import FragmentMetadata
    from .schema import LanceField, LanceSchema


class _Struct:
    """`Name { key: value, ... }`."""

    def __init__(self, name: str, fields: Sequence[Tuple[str, Any]]):
        self.name, self.fields = name, list(fields)


class _Tuple:
    """`Name(value)` (`Some(3)`, `LogicalType("int64")`)."""

    def __init__(self, name: str, value: Any):
        self.name, self.value = name, value


class _Token(str):
    """Printed as is (`None`, `Plain`)."""


NONE = _Token("None")


def _some(value: Any) -> Any:
    return NONE if value is None else _Tuple("Some", value)


def _render(value: Any, indent: int) -> str:
    pad, inner = "    " * indent, "    " * (indent + 1)
    if isinstance(value, _Token):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, _Tuple):
        return f"{value.name}(\n{inner}{_render(value.value, indent + 1)},\n{pad})"
    if isinstance(value, _Struct):
        if not value.fields:
            return value.name
        body = "".join(f"{inner}{k}: {_render(v, indent + 1)},\n" for k, v in value.fields)
        return f"{value.name} {{\n{body}{pad}}}"
    if isinstance(value, dict):
        if not value:
            return "{}"
        body = "".join(f"{inner}{_render(k, indent + 1)}: {_render(v, indent + 1)},\n" for k, v in value.items())
        return f"{{\n{body}{pad}}}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        body = "".join(f"{inner}{_render(v, indent + 1)},\n" for v in value)
        return f"[\n{body}{pad}]"
    return repr(value)


def _field(f: "LanceField") -> _Struct:
    return _Struct("Field", [
        ("name", f._name), ("id", f._id), ("parent_id", f._parent),
        ("logical_type", _Tuple("LogicalType", f._logical_type)), ("metadata", dict(f._metadata)),
        ("nullable", f._nullable), ("children", [_field(c) for c in f._children]),
        ("unenforced_primary_key_position", _some(f.unenforced_primary_key_position())),
    ])


def _schema(schema: "LanceSchema", field_ids: Any = None) -> _Struct:
    def keep(f: "LanceField") -> List[_Struct]:
        if field_ids is not None and f._id not in field_ids:
            return []
        out = _field(f)
        out.fields[6] = ("children", [c for child in f._children for c in keep(child)])
        return [out]
    return _Struct("Schema", [("fields", [s for f in schema.fields() for s in keep(f)]), ("metadata", {})])


def _schema_debug(schema: "LanceSchema") -> str:
    return _render(_schema(schema), 0)


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
    from .fragment_metadata import FragmentMetadata
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
