"""What every namespace implementation here shares: requests as dicts, the errors with
their messages' prefixes, table ids joined into object ids, call counters. (The
directory catalog's rules, pages of names among them, are the core's.)"""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Type
from urllib.parse import urlparse

from lance_namespace import errors as ns_errors

# The separator of an id's parts in an object id (`["a", "b"]` is `a$b`), as pylance's.
DELIMITER = "$"

# What pylance puts before a namespace error's message (its Rust error's display), by
# code: `str(error)` reads "Table not found: table id 'a$b'". A REST client adds it to
# the bare message a server sends.
PREFIXES: Dict[int, str] = {
    0: "Unsupported", 1: "Namespace not found", 2: "Namespace already exists", 3: "Namespace not empty",
    4: "Table not found", 5: "Table already exists", 6: "Table index not found",
    7: "Table index already exists", 8: "Table tag not found", 9: "Table tag already exists",
    10: "Transaction not found", 11: "Table version not found", 12: "Table column not found",
    13: "Invalid input", 14: "Concurrent modification", 15: "Permission denied", 16: "Unauthenticated",
    17: "Service unavailable", 18: "Internal error", 19: "Invalid table state",
    20: "Table schema validation error", 21: "Throttled", 22: "Table branch not found",
    23: "Table branch already exists",
}


def error(kind: Type[ns_errors.LanceNamespaceError], message: str) -> ns_errors.LanceNamespaceError:
    """A namespace error of class `kind`, its message prefixed as pylance's are."""
    return kind(f"{PREFIXES.get(int(kind.code), 'Internal error')}: {message}")


def bare_message(exc: ns_errors.LanceNamespaceError) -> str:
    """The message of a namespace error without its prefix (what a REST server sends)."""
    text = str(exc)
    prefix = PREFIXES.get(int(exc.code), "") + ": "
    return text[len(prefix):] if text.startswith(prefix) else text


def as_dict(request: Any) -> Dict[str, Any]:
    """A request (a lance_namespace model, a dict, or pylance's dict with `model_dump`)
    as a plain dict of its fields."""
    if request is None:
        return {}
    if isinstance(request, dict):
        return dict(request)
    if hasattr(request, "model_dump"):
        return request.model_dump()
    raise error(ns_errors.InvalidInputError, f"a request must be a lance_namespace model or a dict, "
                                              f"got {type(request).__name__}")


def is_true(value: Any, default: bool) -> bool:
    """A boolean property ("true"/"false" in any case; anything else is the default)."""
    if value is None:
        return default
    text = str(value).strip().lower()
    return {"true": True, "false": False}.get(text, default)


def object_id(parts: List[str]) -> str:
    return DELIMITER.join(parts)


def is_local(root: str) -> bool:
    return "://" not in root or urlparse(root).scheme == "file"


class OpsMetrics:
    """How many times each operation was called (pylance's `ops_metrics_enabled`):
    counted as a call starts, failed calls too."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._counts: Dict[str, int] = {}
        self._lock = threading.Lock()

    def count(self, operation: str) -> None:
        if self.enabled:
            with self._lock:
                self._counts[operation] = self._counts.get(operation, 0) + 1

    def snapshot(self) -> Dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()
