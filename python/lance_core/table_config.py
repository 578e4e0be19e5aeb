"""The table's config and metadata maps, with pylance's `LanceDataset` methods: the config,
the table's metadata, the schema's metadata and each field's metadata. Every change is one
new version (an `UpdateConfig` transaction); a value of None removes its key, and
`replace=True` clears the map first. `LanceDataset` takes these methods from here."""

from __future__ import annotations

import warnings
from typing import Any, Dict, List, Optional, Tuple, TypedDict

import pyarrow as pa

from .errors import InvalidInputError

_Values = Dict[str, Optional[str]]


def _entries(values: Any, what: str) -> List[Tuple[str, Optional[str]]]:
    if not isinstance(values, dict):
        raise InvalidInputError(f"{what} takes a dict of keys to values (None removes a key), "
                                f"not {type(values).__name__}")
    for k, v in values.items():
        if not isinstance(k, str) or not (v is None or isinstance(v, str)):
            raise InvalidInputError(f"{what}: keys and values are strings (None removes a key), "
                                    f"got {k!r}: {v!r}")
    return list(values.items())


class TableConfig:
    """Mixed into `LanceDataset` (which holds the native dataset as `_ds`)."""

    _ds: Any

    def config(self) -> Dict[str, str]:
        """The table's config (string keys and values stored in its manifest)."""
        return dict(self._ds.config())

    def update_config(self, values: _Values, *, replace: bool = False) -> Dict[str, str]:
        """Set config keys (None: remove the key; `replace`: drop every other key); the
        config after the change."""
        self._ds = self._ds.update_config(config=(_entries(values, "update_config"), replace))
        return self.config()

    def delete_config_keys(self, keys: List[str]) -> None:
        """Remove config keys (a missing key is no error)."""
        if isinstance(keys, str):
            raise InvalidInputError("delete_config_keys takes a list of keys, not a string")
        self._ds = self._ds.update_config(config=([(k, None) for k in keys], False))

    @property
    def metadata(self) -> Dict[str, str]:
        """The table's metadata (the manifest's `table_metadata`)."""
        return dict(self._ds.table_metadata())

    def update_metadata(self, values: _Values, *, replace: bool = False) -> Dict[str, str]:
        """Set keys of the table's metadata; the metadata after the change."""
        self._ds = self._ds.update_config(table_metadata=(_entries(values, "update_metadata"), replace))
        return self.metadata

    @property
    def schema_metadata(self) -> Dict[str, str]:
        """The schema's metadata, as strings."""
        md = pa.schema(self._ds.schema).metadata or {}
        return {k.decode(): v.decode() for k, v in md.items()}

    def update_schema_metadata(self, values: _Values, *, replace: bool = False) -> Dict[str, str]:
        """Set keys of the schema's metadata; the metadata after the change."""
        self._ds = self._ds.update_config(schema_metadata=(_entries(values, "update_schema_metadata"), replace))
        return self.schema_metadata

    def update_field_metadata(self, field_updates: Dict[str, _Values], *, replace: bool = False) -> None:
        """Set metadata keys of fields, named by dotted path ("a", "s.x"), all in one
        version."""
        if not isinstance(field_updates, dict):
            raise InvalidInputError("update_field_metadata takes a dict of field paths to dicts of values")
        fields = [(path, _entries(v, f"update_field_metadata['{path}']"), replace)
                  for path, v in field_updates.items()]
        self._ds = self._ds.update_config(fields=fields)

    def replace_schema_metadata(self, new_metadata: Dict[str, str]) -> None:
        """Deprecated in pylance: `update_schema_metadata(new_metadata, replace=True)`."""
        warnings.warn("replace_schema_metadata is deprecated; use update_schema_metadata(metadata, "
                      "replace=True)", DeprecationWarning, stacklevel=2)
        self.update_schema_metadata(new_metadata, replace=True)

    def replace_field_metadata(self, field_name: str, new_metadata: Dict[str, str]) -> None:
        """Deprecated in pylance: `update_field_metadata({field: metadata}, replace=True)`."""
        warnings.warn("replace_field_metadata is deprecated; use update_field_metadata with "
                      "replace=True", DeprecationWarning, stacklevel=2)
        self.update_field_metadata({field_name: new_metadata}, replace=True)


class AutoCleanupConfig(TypedDict):
    """When commits clean up old versions by themselves: every `interval`-th version,
    those older than `older_than_seconds`."""

    interval: int
    older_than_seconds: int


def auto_cleanup_keys(options: AutoCleanupConfig) -> Dict[str, str]:
    """The table config keys (pylance's) that ask for `options`."""
    return {"lance.auto_cleanup.interval": str(int(options["interval"])),
            "lance.auto_cleanup.older_than": f"{int(options['older_than_seconds'])}s"}
