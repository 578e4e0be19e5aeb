"""The nested `Name { field: value, ... }` layout of pylance's debug dumps, and the
dump of a schema in it: `LanceSchema`'s repr and `lance_core.debug` (which dumps the rest
of a table's internals) both print through here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Sequence, Tuple

if TYPE_CHECKING:
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
