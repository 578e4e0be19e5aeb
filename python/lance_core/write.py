"""Writing datasets, with pylance's `write_dataset` signature, and committing operations
written elsewhere (`commit`)."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Union

import pyarrow as pa

from . import _lance_core
from ._inputs import as_stream
from .bases import DatasetBasePath, bases_arg, targets_arg
from .commit_lock import run_under_lock, under_commit_lock  # noqa: F401
from .dataset import LanceDataset
from .table_config import auto_cleanup_keys
from .fragment_metadata import _properties
from .errors import InvalidInputError
from .table_target import check_target, table_location
from .fragment_metadata import _commit_native


def write_dataset(
    data: Any,
    uri: Optional[Union[str, os.PathLike, LanceDataset]] = None,
    schema: Optional[pa.Schema] = None,
    mode: str = "create",
    *,
    max_rows_per_file: int = 1024 * 1024,
    max_bytes_per_file: Optional[int] = None,
    data_storage_version: Optional[str] = None,
    enable_stable_row_ids: bool = False,
    storage_options: Optional[Dict[str, str]] = None,
    external_blob_mode: str = "reference",
    allow_external_blob_outside_bases: bool = False,
    blob_pack_file_size_threshold: Optional[int] = None,
    commit_message: Optional[str] = None,
    transaction_properties: Optional[Dict[str, str]] = None,
    progress: Any = None,
    max_rows_per_group: Optional[int] = None,
    auto_cleanup_options: Optional[Dict[str, int]] = None,
    enable_v2_manifest_paths: bool = True,
    commit_lock: Any = None,
    namespace_client: Any = None,
    table_id: Optional[List[str]] = None,
    initial_bases: Optional[List[DatasetBasePath]] = None,
    target_bases: Optional[List[str]] = None,
    session: Optional["_lance_core.Session"] = None,
) -> LanceDataset:
    """Write Arrow data as a Lance dataset (mode "create", "append" or "overwrite"), at
    `uri` or as the table `table_id` of the catalog `namespace_client` (declared there
    on create, as pylance does).

    Multi-base tables: a new table registers `initial_bases` (`DatasetBasePath`s; ids
    are assigned from 1); `target_bases` (names or paths of registered bases, or the
    table's own URI) are where the new data files go, in turn.

    Append creates the dataset when it does not exist; its data must have the dataset's
    columns and types. New datasets use file format 2.2 unless `data_storage_version`
    says "2.1".

    Blob columns (`lance_core.blob.blob_field`, or binary fields marked
    `lance-encoding:blob`) keep small values in the data file and larger ones in `.blob`
    files beside it. A blob given by URI is stored as a reference
    (`external_blob_mode="reference"`: below one of the table's base paths, or anywhere
    with `allow_external_blob_outside_bases`) or copied in (`"ingest"`).
    `blob_pack_file_size_threshold` caps the shared `.blob` files (1 GiB).

    `transaction_properties` (and `commit_message`, under pylance's key
    `LANCE_COMMIT_MESSAGE_KEY`) are recorded in the version's transaction. `progress` (a
    `lance_core.progress.FragmentWriteProgress`) hears of each fragment begun and
    completed. `max_rows_per_group` is taken for pylance's sake: 2.x files cut pages by size.
    `auto_cleanup_options` (an `AutoCleanupConfig`, on create and overwrite) makes every
    `interval`-th commit remove the versions older than `older_than_seconds`.
    `session` (a `lance_core.Session`): the caches the returned dataset uses.
    `commit_lock` (pylance's): a context manager factory called with the version about to
    be committed, held while the write commits (our commits need no lock: it serves
    callers who coordinate with other writers through it).
    """
    if check_target(uri, namespace_client, table_id):
        uri, storage_options = table_location(namespace_client, table_id, mode, storage_options)
    if isinstance(uri, LanceDataset):
        if storage_options is None:
            storage_options = uri._ds.storage_options() or None
        uri = uri.uri
    if not enable_v2_manifest_paths:
        raise InvalidInputError("lance_core names manifests the V2 way (pylance's default): "
                                "enable_v2_manifest_paths=False is not supported")
    if max_rows_per_file <= 0:
        raise InvalidInputError("max_rows_per_file must be positive")
    if blob_pack_file_size_threshold is not None and blob_pack_file_size_threshold <= 0:
        raise InvalidInputError("blob_pack_file_size_threshold must be positive")
    stream = as_stream(data, schema)
    written = under_commit_lock(commit_lock, uri, storage_options, lambda: LanceDataset(_lance_core._write_dataset(
        stream, os.fspath(uri), mode, max_rows_per_file, max_bytes_per_file,
        data_storage_version, enable_stable_row_ids, storage_options, external_blob_mode,
        allow_external_blob_outside_bases, blob_pack_file_size_threshold,
        _properties(transaction_properties, commit_message), progress,
        None if auto_cleanup_options is None else auto_cleanup_keys(auto_cleanup_options),
        bases_arg(initial_bases), targets_arg(target_bases),
    )))
    return written if session is None else LanceDataset(written._ds.with_session(session))


def commit(
    uri: Union[str, os.PathLike],
    operation,
    read_version: Optional[int] = None,
    storage_options: Optional[Dict[str, str]] = None,
    transaction_properties: Optional[Dict[str, str]] = None,
) -> LanceDataset:
    """Commit `operation` (a `LanceOperation`) as one new version; `read_version` is the
    version it was prepared against (the latest when None). Concurrent commits are checked
    against it. `transaction_properties` are recorded in the version's transaction
    (`LanceDataset.read_transaction`). When the commit fails, the operation's files stay:
    they can be committed again."""
    return LanceDataset(_commit_native(uri, operation, read_version, storage_options, transaction_properties))
