"""Where a catalog's table lives, for `lance_core.dataset` and `write_dataset` given a
`namespace_client` and a `table_id` instead of a URI: as pylance asks the catalog
(declare the table to create it, describe it to open, append to or overwrite it)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .errors import InvalidInputError


def check_target(uri: Any, namespace_client: Any, table_id: Optional[List[str]]) -> bool:
    """Whether the caller named a catalog table (else a URI); refuses both or half."""
    named = namespace_client is not None or table_id is not None
    if named and uri is not None:
        raise InvalidInputError("Cannot specify both 'uri' and 'namespace_client/table_id'. "
                                "Please provide either 'uri' or both 'namespace_client' and 'table_id'.")
    if named and (namespace_client is None or table_id is None):
        raise InvalidInputError("Both 'namespace_client' and 'table_id' must be provided together.")
    if not named and uri is None:
        raise InvalidInputError("Must specify either 'uri' or both 'namespace_client' and 'table_id'.")
    return named


def table_location(namespace_client: Any, table_id: List[str], mode: str,
                   storage_options: Optional[Dict[str, str]]) -> Tuple[str, Optional[Dict[str, str]]]:
    """The table's URI and the storage options to use (the catalog's over the caller's),
    for `mode` "create" (the table is declared first), "open", "append" or "overwrite"."""
    from lance_namespace import DeclareTableRequest, DescribeTableRequest

    if mode == "create":
        response = namespace_client.declare_table(DeclareTableRequest(id=list(table_id)))
    elif mode in ("open", "append", "overwrite"):
        response = namespace_client.describe_table(DescribeTableRequest(id=list(table_id)))
    else:
        raise InvalidInputError(f"Invalid mode: {mode}")
    location = getattr(response, "location", None)
    if not location:
        raise InvalidInputError(f"Namespace did not return a table location in {mode} response")
    vended = getattr(response, "storage_options", None)
    if vended:
        storage_options = {**(storage_options or {}), **vended}
    return location, storage_options
