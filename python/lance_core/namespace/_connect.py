"""`connect`: a namespace by its implementation's name (the package's function, and how
`RestAdapter` makes the namespace it serves)."""

from __future__ import annotations

from typing import Dict

import lance_namespace
from lance_namespace import LanceNamespace

from .directory import DirectoryNamespace
from .rest import RestNamespace

_NATIVE = {"dir": DirectoryNamespace, "rest": RestNamespace}


def connect(impl: str, properties: Dict[str, str]) -> LanceNamespace:
    """A namespace: "dir" and "rest" are lance_core's; any other name goes to
    `lance_namespace.connect` (implementations registered there, or a class path)."""
    native = _NATIVE.get(impl)
    if native is None:
        return lance_namespace.connect(impl, properties)
    return native(**{k: str(v) for k, v in (properties or {}).items()})
