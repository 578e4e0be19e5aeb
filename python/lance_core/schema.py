"""Schemas with Lance field ids (pylance's `lance.schema`): what `LanceOperation.Project`
takes, and what `LanceDataset.lance_schema` gives."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

import pyarrow as pa

from . import _lance_core
from ._pretty import _schema_debug


class LanceField:
    """One field of a `LanceSchema`: its name, id and children."""

    def __init__(self, row: tuple, children: List["LanceField"]):
        (self._id, self._parent, self._name, self._pk, self._position, self._logical_type, self._nullable,
         self._metadata) = row
        self._children = children

    def name(self) -> str:
        return self._name

    def id(self) -> int:
        return self._id

    def children(self) -> List["LanceField"]:
        return list(self._children)

    @property
    def metadata(self) -> Dict[str, str]:
        return dict(self._metadata)

    def is_unenforced_clustering_key(self) -> bool:
        return False  # clustering keys are not written by lance_core

    def is_unenforced_primary_key(self) -> bool:
        return self._pk

    def unenforced_primary_key_position(self) -> Optional[int]:
        return self._position if self._pk and self._position > 0 else None

    def __repr__(self) -> str:
        return f"LanceField(name={self._name!r}, id={self._id})"


class LanceSchema:
    """A schema whose fields carry Lance field ids."""

    def __init__(self, data: bytes):
        self._data = bytes(data)

    @staticmethod
    def from_pyarrow(schema: pa.Schema) -> "LanceSchema":
        """`schema` with field ids numbered from 0, depth first, as a new table's."""
        return LanceSchema(_lance_core._lance_schema_from_arrow(schema))

    def to_pyarrow(self) -> pa.Schema:
        return pa.schema(_lance_core._lance_schema_to_arrow(self._data))

    def fields(self) -> List[LanceField]:
        """The top-level fields (each with its children)."""
        rows = _lance_core._lance_schema_fields(self._data)
        children: Dict[int, List[LanceField]] = {}
        # Parents come before their children: build bottom-up.
        for row in reversed(rows):
            field = LanceField(row, list(reversed(children.pop(row[0], []))))
            children.setdefault(row[1], []).append(field)
        return list(reversed(children.get(-1, [])))

    def __eq__(self, other: Any) -> bool:
        # The same fields (ids, names, places, key) and Arrow schema; what the manifest
        # stores besides (encodings, statistics) does not count.
        return (isinstance(other, LanceSchema)
                and _lance_core._lance_schema_fields(self._data) == _lance_core._lance_schema_fields(other._data)
                and self.to_pyarrow() == other.to_pyarrow())

    def __reduce__(self):
        return LanceSchema, (self._data,)

    def __repr__(self) -> str:
        return _schema_debug(self)



def schema_to_json(schema: pa.Schema) -> Dict[str, Any]:
    """A pyarrow schema as JSON (a dict), in the shape of pylance's `schema_to_json`: leaf
    types by their Lance logical type names ("int64", "timestamp:us:UTC",
    "decimal:128:10:2"), nested types with their child fields, metadata when there is
    some."""
    return json.loads(_lance_core._schema_to_json(schema))


def json_to_schema(schema_json: Dict[str, Any]) -> pa.Schema:
    """The pyarrow schema of `schema_to_json`'s JSON."""
    return pa.schema(_lance_core._json_to_schema(json.dumps(schema_json)))
