"""The table's versions, with pylance's `LanceDataset` methods: the history and each
version's transaction, the files versions reference, tags and branches, checkouts,
restore, clones, and the cleanup of old versions. `LanceDataset` takes these methods from
here."""

from __future__ import annotations

import os
import time
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

import pyarrow as pa

from . import _lance_core
from .errors import InvalidInputError
from .fragment_metadata import _operation_from
from .refs import Branches, Tags
from .results import CleanupCandidateFile, CleanupExplanation, CleanupReferencedBranch, CleanupStats, Transaction

if TYPE_CHECKING:
    from .dataset import LanceDataset


def _version_row(version: int, nanos: int, metadata: Dict[str, str]) -> Dict[str, Any]:
    """A row of `versions()`: the commit time local and naive, computed with the same
    (float) arithmetic as pylance, so both give the very same datetime."""
    ts = datetime.fromtimestamp(nanos // 1e9) + timedelta(microseconds=(nanos % 1e9) // 1e3)
    return {"version": version, "timestamp": ts, "metadata": metadata}


def _transaction_from(row: Any) -> Optional[Transaction]:
    """A transaction as the core reads it, as a `Transaction`."""
    if row is None:
        return None
    read_version, uuid, kind, properties, fields = row
    return Transaction(read_version, _operation_from(kind, fields), uuid, properties)


def _cleanup_args(older_than: Optional[timedelta], retain_versions: Optional[int], versions: Optional[List[int]],
                  delete_unverified: bool, error_if_tagged_old_versions: bool,
                  delete_rate_limit: Optional[int] = None) -> Tuple[Any, ...]:
    """A cleanup's arguments as the binding takes them: (before, in ns since the epoch;
    how many newest stay; delete_unverified; error_if_tagged_old_versions; the versions
    that may go; deletes per second at most). Two weeks when no choice of versions is
    given, as in pylance."""
    if retain_versions is not None and retain_versions < 1:
        raise InvalidInputError("retain_versions must be positive")
    if delete_rate_limit is not None and int(delete_rate_limit) < 1:
        raise InvalidInputError("delete_rate_limit must be positive (deletes per second)")
    if older_than is None and retain_versions is None and versions is None:
        older_than = timedelta(days=14)
    before = None if older_than is None else time.time_ns() - int(older_than.total_seconds() * 1e9)
    return (before, retain_versions, bool(delete_unverified), bool(error_if_tagged_old_versions),
            None if versions is None else [int(v) for v in versions],
            None if delete_rate_limit is None else int(delete_rate_limit))


class TableVersions:
    """Mixed into `LanceDataset` (which holds the native dataset as `_ds`); the versions
    it opens are of `type(self)`."""

    _ds: Any

    def versions(self) -> List[Dict[str, Any]]:
        """Every version: its number, commit time (local, naive, like pylance) and summary."""
        return [_version_row(*row) for row in self._ds.versions()]

    def version_refs(self) -> List[Dict[str, int]]:
        """`{"version": n}` for every version of this dataset's branch, oldest first, from a
        listing of the versions directory alone (no manifest is read; `versions()` reads
        them all)."""
        return [{"version": v} for v in self._ds.version_numbers()]

    def get_version(self) -> Dict[str, Any]:
        """This version as `versions()` lists it (number, commit time, summary), from the
        manifest already loaded: nothing is read."""
        return _version_row(*self._ds.current_version())

    def tracked_files(self, *, min_version: Optional[int] = None,
                      progress: Optional[Callable[[int, Optional[int]], Any]] = None) -> pa.RecordBatchReader:
        """The files every version of this branch references (from `min_version` on when
        given): one row per (version, file) with `version`, `base_uri` (the table's root or
        the base path holding the file), `path` (relative to it) and `type` ("manifest",
        "transaction file", "data file", "deletion file", "index file"), as pylance's.
        `progress(manifests_processed, manifests_total)` is called as each manifest is
        read (one listing of the versions, then the manifests, many at a time). The rows
        stream, a batch per version: a long history is never held whole."""
        total, walk = _lance_core._tracked_files(self._ds, min_version or 0)
        stream = pa.RecordBatchReader.from_stream(walk)

        def batches() -> Iterator[pa.RecordBatch]:
            for read, batch in enumerate(stream, 1):  # one batch per manifest
                if progress is not None:
                    progress(read, total)
                yield batch
        return pa.RecordBatchReader.from_batches(stream.schema, batches())

    def all_files(self) -> pa.RecordBatchReader:
        """Every file present under the table's root (files of other base paths are not
        listed), as pylance's: `base_uri`, `path` (relative), `size_bytes`,
        `last_modified` (UTC)."""
        rows = _lance_core._all_files(self._ds)
        schema = pa.schema([pa.field("base_uri", pa.dictionary(pa.int32(), pa.string()), nullable=False),
                            pa.field("path", pa.string(), nullable=False),
                            pa.field("size_bytes", pa.int64(), nullable=False),
                            pa.field("last_modified", pa.timestamp("us", tz="UTC"), nullable=False)])
        paths = [r[0] for r in rows]
        base = pa.DictionaryArray.from_arrays(pa.array([0] * len(rows), pa.int32()), pa.array([self.uri]))
        batch = pa.record_batch([base, pa.array(paths, pa.string()), pa.array([r[1] for r in rows], pa.int64()),
                                 pa.array([r[2] for r in rows], pa.timestamp("us", tz="UTC"))], schema=schema)
        return pa.RecordBatchReader.from_batches(schema, [batch])

    def read_transaction(self, version: Optional[int] = None) -> Optional["Transaction"]:
        """The transaction that committed `version` (this dataset's version when None), or
        None when its writer recorded none."""
        ds = self if version is None or version == self.version else self.checkout_version(version)
        return _transaction_from(_lance_core._transactions(ds._ds, 1)[0])

    def get_transactions(self, recent_transactions: int = 10) -> List[Optional["Transaction"]]:
        """The transactions of this version and the ones before it, newest first, at most
        `recent_transactions` (None for a version whose writer recorded none or that a
        cleanup removed)."""
        return [_transaction_from(row) for row in _lance_core._transactions(self._ds, int(recent_transactions))]

    @property
    def tags(self) -> "Tags":
        """The dataset's tags (names for versions), as pylance's `ds.tags`."""
        return Tags(self)

    def cleanup_old_versions(self, older_than: Optional[timedelta] = None, retain_versions: Optional[int] = None,
                             *, delete_unverified: bool = False, error_if_tagged_old_versions: bool = True,
                             versions: Optional[List[int]] = None, **kwargs: Any) -> "CleanupStats":
        """Remove versions older than `older_than`, outside the newest `retain_versions`
        and among `versions` (each when given; two weeks old when none is), and every file
        only they reference, as pylance does. The latest version, tagged versions and the
        versions branches start from stay (a tagged old version is an error unless
        `error_if_tagged_old_versions=False`). Files no version references are removed
        only when 7 days old, or with `delete_unverified=True` (only when no writer is
        running). `delete_rate_limit` caps the deletes started per second (for stores that
        throttle them); `delete_concurrency` (pylance's) is accepted, deletes run 64 at a
        time."""
        unknown = set(kwargs) - {"delete_rate_limit", "delete_concurrency"}
        if unknown:
            raise TypeError(f"cleanup_old_versions() got unexpected arguments {sorted(unknown)}")
        return CleanupStats(*self._ds.cleanup_old_versions(_cleanup_args(
            older_than, retain_versions, versions, delete_unverified, error_if_tagged_old_versions,
            kwargs.get("delete_rate_limit"))))

    def explain_cleanup_old_versions(self, older_than: Optional[timedelta] = None,
                                     retain_versions: Optional[int] = None, *, delete_unverified: bool = False,
                                     error_if_tagged_old_versions: bool = True,
                                     delete_rate_limit: Optional[int] = None, versions: Optional[List[int]] = None,
                                     include_files: bool = False, max_files: int = 1000) -> "CleanupExplanation":
        """What `cleanup_old_versions` with these arguments would remove, without removing
        anything: the statistics, the branches whose starting versions stay, and (with
        `include_files`) up to `max_files` of the files."""
        if max_files <= 0:
            raise ValueError("max_files must be positive")
        read_version, stats, files, branches = self._ds.explain_cleanup(_cleanup_args(
            older_than, retain_versions, versions, delete_unverified, error_if_tagged_old_versions))
        shown = [CleanupCandidateFile(path, kind, unverified, size)
                 for path, kind, unverified, size in files[:max_files]] if include_files else []
        return CleanupExplanation(
            read_version=read_version, stats=CleanupStats(*stats), candidate_files=shown,
            candidate_files_truncated=include_files and len(files) > max_files, candidate_file_limit=max_files,
            referenced_branches=[CleanupReferencedBranch(name, version, False) for name, version in branches],
            warnings=[])

    def restore(self) -> None:
        """Commit this (checked-out) version as the newest, as pylance's `restore()`; this
        object moves to the new version. A commit made since the latest version was read is
        a conflict, not something restore undoes silently."""
        self._ds = self._ds.restore()

    def checkout_version(self, version: Union[int, str, Tuple[Optional[str], Optional[int]]]) -> "LanceDataset":
        """Another version of this table, opened with the same storage options: a number
        (on this dataset's branch), a tag, or `(branch, version)` (branch None or "main":
        the main line; version None: the branch's latest)."""
        return type(self)(self._ds.checkout(version))

    @property
    def branches(self) -> "Branches":
        """The table's branches, as pylance's `ds.branches` (`list()`, `list_ordered()`,
        `delete(name)`)."""
        return Branches(self)

    @property
    def branch(self) -> Optional[str]:
        """The branch this version is on (None: the main line)."""
        return self._ds.branch

    def create_branch(self, branch: str, reference: Union[int, str, Tuple[Optional[str], Optional[int]], None] = None,
                      storage_options: Optional[Dict[str, str]] = None) -> "LanceDataset":
        """Create branch `branch` starting at `reference` (a version of this dataset's
        branch, a tag, `(branch, version)`, or None for this version) and open it. As in
        pylance, a branch is a shallow clone kept in `<root>/tree/<branch>` plus its
        description in `_refs/branches/`; commits to the returned dataset (or to its
        `uri`) go on the branch, and either library reads the other's branches. The branch
        lives in the table's store, reached with this dataset's storage options
        (`storage_options` is taken for pylance's signature)."""
        return type(self)(self._ds.create_branch(branch, reference))

    def shallow_clone(self, target_path: Union[str, os.PathLike], reference: Union[int, str, None] = None,
                      storage_options: Optional[Dict[str, str]] = None, **kwargs: Any) -> "LanceDataset":
        """A new table at `target_path` made from a version of this one (`reference`: a
        version number, a tag, or None for this version) without copying anything: its
        manifest refers to this table's files through a base path (pylance's
        `shallow_clone`). Later writes to the clone go to its own directory. The source's
        files must outlive the clone: cleaning up the versions the clone refers to breaks it."""
        return self._clone(target_path, reference, storage_options, True)

    def deep_clone(self, target_path: Union[str, os.PathLike], reference: Union[int, str, None] = None,
                   storage_options: Optional[Dict[str, str]] = None, **kwargs: Any) -> "LanceDataset":
        """A new table at `target_path` with copies of every file a version of this one
        uses (data, deletion and index files), standing alone (pylance's `deep_clone`)."""
        return self._clone(target_path, reference, storage_options, False)

    def _clone(self, target: Any, reference: Union[int, str, None], storage_options: Optional[Dict[str, str]],
               shallow: bool) -> "LanceDataset":
        source = self if reference is None else self.checkout_version(reference)
        return type(self)(source._ds.clone_to(os.fspath(target), shallow, storage_options))

    def checkout_latest(self) -> None:
        """Move this object to the table's latest version."""
        self._ds = self._ds.checkout(self._ds.latest_version())
