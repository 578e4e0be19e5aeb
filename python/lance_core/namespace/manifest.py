"""The `__manifest` table of a directory namespace: a Lance table at the namespace's root
with one row per namespace and per table, as pylance keeps it (so that either library
reads the catalog the other wrote).

Each change is one commit of the table. Writers in other processes commit too, so every
read opens the latest version, and a commit that lost a race is made again on top of the
winner's (up to the namespace's `commit_retries`). A row is added by a merge on
`object_id`, as pylance adds it, so that two writers racing to add one id conflict.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Callable, Dict, List, Optional

import pyarrow as pa

from ..dataset import dataset
from ..errors import CommitConflictError, DatasetNotFoundError, InvalidInputError
from ..write import write_dataset

# Wire facts of pylance's catalog: the columns and the primary-key marker on object_id.
SCHEMA = pa.schema([
    pa.field("object_id", pa.string(), nullable=False,
             metadata={"lance-schema:unenforced-primary-key:position": "0"}),
    pa.field("object_type", pa.string(), nullable=False),
    pa.field("location", pa.string()),
    pa.field("metadata", pa.string()),
    pa.field("base_objects", pa.list_(pa.field("object_id", pa.string()))),
])

NAMESPACE = "namespace"
TABLE = "table"


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class ManifestTable:
    """The catalog rows of a directory namespace (`<root>/__manifest`)."""

    def __init__(self, uri: str, storage_options: Optional[Dict[str, str]], retries: int):
        self.uri = uri
        self.storage_options = storage_options
        self.retries = retries
        # One writer at a time in this process; other processes are met by commit retries.
        self._lock = threading.Lock()

    def _open(self) -> Any:
        try:
            return dataset(self.uri, storage_options=self.storage_options)
        except DatasetNotFoundError:
            return None

    def exists(self) -> bool:
        return self._open() is not None

    def rows(self, filter: Optional[str] = None) -> List[Dict[str, Any]]:
        """The rows of the latest version (those matching `filter`)."""
        ds = self._open()
        if ds is None:
            return []
        return ds.to_table(columns=["object_id", "object_type", "location", "metadata"],
                           filter=filter).to_pylist()

    def get(self, object_id: str) -> Optional[Dict[str, Any]]:
        found = self.rows(f"object_id = {_quoted(object_id)}")
        return found[0] if found else None

    def insert(self, object_id: str, object_type: str, location: Optional[str],
               properties: Optional[Dict[str, str]], taken: Callable[[Dict[str, Any]], Exception]) -> None:
        """Add a row; `taken(existing row)` is raised when the id is in the catalog."""
        metadata = json.dumps(properties, separators=(",", ":")) if properties else None
        row = pa.Table.from_pylist([{"object_id": object_id, "object_type": object_type, "location": location,
                                     "metadata": metadata, "base_objects": None}], schema=SCHEMA)

        def attempt() -> None:
            ds = self._open()
            if ds is None:
                try:
                    write_dataset(row, self.uri, mode="create", storage_options=self.storage_options)
                    return
                except (CommitConflictError, InvalidInputError):
                    ds = self._open()  # another writer created the catalog first
                    if ds is None:
                        raise
            # A merge on object_id, not a check and an append: two writers that both found
            # the id free would both append. The merge records the key it inserts, so the
            # later of two racing inserts conflicts (pylance's inserts too) and, read again,
            # finds the row.
            try:
                ds.merge_insert("object_id").when_matched_fail().when_not_matched_insert_all() \
                    .conflict_retries(0).execute(row)
            except InvalidInputError:
                existing = self.get(object_id)
                if existing is None:
                    raise
                raise taken(existing) from None

        self._commit(attempt)

    def delete(self, object_id: str) -> None:
        def attempt() -> None:
            ds = self._open()
            if ds is not None:
                ds.delete(f"object_id = {_quoted(object_id)}")

        self._commit(attempt)

    def _commit(self, attempt: Callable[[], None]) -> None:
        """Run `attempt` (read the latest rows, then commit), again from the new latest
        version when another writer committed first."""
        with self._lock:
            for tries_left in range(self.retries, -1, -1):
                try:
                    return attempt()
                except CommitConflictError:
                    if tries_left == 0:
                        raise
