"""Lance namespaces, as pylance's `lance.namespace`: catalogs that name tables by ids
(`["workspace", "events"]`) instead of URIs.

- `DirectoryNamespace`: a catalog kept in a directory (local or on an object store), in
  pylance's layout, so either library reads what the other wrote.
- `RestNamespace`: a client of a namespace REST server; `RestAdapter` serves any
  namespace over that protocol.
- `connect("dir" | "rest" | "module.Class", properties)`.

`lance_core.dataset(namespace_client=..., table_id=[...])` and
`write_dataset(..., namespace_client=..., table_id=[...])` open and write a catalog's
tables. The request and response models and the error classes are those of the
`lance-namespace` package (pylance's too).
"""

from __future__ import annotations

try:
    import lance_namespace  # noqa: F401  (checked here, for the error below)
except ImportError as e:  # pragma: no cover - depends on the install
    raise ImportError("lance_core.namespace needs the lance-namespace package: "
                      "pip install 'lance_core[namespace]'") from e

from lance_namespace import LanceNamespace

from ._connect import connect
from .directory import DirectoryNamespace
from .rest import DynamicContextProvider, RestNamespace
from .rest_adapter import RestAdapter

__all__ = ["LanceNamespace", "DirectoryNamespace", "RestNamespace", "RestAdapter", "DynamicContextProvider",
           "connect"]
